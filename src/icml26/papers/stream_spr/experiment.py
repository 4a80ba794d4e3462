"""Reproduction: Stream Q(λ) vs Stream Q(λ) + SPR + orth + orth² on MinAtar.

Quick (``icml26 run stream_spr --quick``): Breakout, one seed, 60k steps per arm, the two
arms in two processes (one per core), same network and initialization. Reported: the
learning curves, the mean return of the episodes ending in the last 10 % of the steps,
srank/erank of the encoder latents (and the 128-unit hidden layer) on one fixed probe set
of states (a uniformly random policy's, normalized by each agent's own statistics), the
SPR loss curve and |cos(SPR encoder update, ObGD encoder update)| before and after orth².

Full (``icml26 run stream_spr`` without ``--quick``; not run here): Breakout,
SpaceInvaders and Freeway × 3 seeds × {Stream Q(λ), naive SPR, SPR + orth + orth²}, 1M
steps each, all runs in parallel processes; adds the paper's strict claim (the method
beats the baseline on ≥ 2 of 3 games).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import logging
import math
import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.common.cache import config_hash, read_json_entry, source_digest, write_json_entry
from icml26.common.config import config_to_dict
from icml26.contract import ArmSpec, Curve, Outcome, RunContext
from icml26.provenance import cpu_model

from .analysis import average_curves, crossing_ratio, finite_mean, first_crossing, games_won, paired_gaps, return_ratio
from .claims import CHECKS
from .config import Config
from .figures import LABELS, plot
from .games import game_stream_index
from .runs import ARMS, RunSummary, collect_probe_states, run_one

__all__ = ["ARMS", "CHECKS", "Config", "RunSummary", "STREAMS", "plot", "run"]

STREAMS: dict[str, str] = {
    "probe": "the random policy collecting each game's probe states; index = game",
    "agent": "an agent's seed; index = game + (seed index << 32)",
    "tune_agent": "a development seed's agent (tuning α_SPR); index = game + (development seed index << 32)",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------
def run(config: Config, ctx: RunContext) -> Outcome:
    ctx.stage("probe states")
    probes = {g: collect_probe_states(g, config.probe_states,
                                       ctx.seed_for("probe", game_stream_index(g)) % (2**31 - 1),
                                       config.sticky_action_prob)
              for g in config.games}
    # 0: one process per thread the runner was given (ICML26_THREADS; 1 in a --seeds sweep job)
    processes = config.processes or ctx.threads
    start = time.perf_counter()
    cpus: dict[str, int] = {}
    chosen, tuning_notes = _tune_spr_lr(config, ctx, probes, processes, cpus) if config.spr_lr_grid else ({}, [])
    jobs = []
    for game in config.games:
        for s in range(config.seeds):
            for arm in config.arms:
                jobs.append(_job(config, ctx, probes, game, s, arm, "agent", len(jobs)))
                if arm in chosen:
                    jobs[-1]["spr_lr"] = chosen[arm][game]
    ctx.stage(f"{len(jobs)} agent run(s) of {config.total_steps} steps")
    results = _execute(jobs, processes, cache=config.run_cache, cpus=cpus)
    wall = time.perf_counter() - start
    ctx.stage("summaries")
    outcome, speed = _summarize(config, results)
    for arm, per_game in chosen.items():
        if len(set(per_game.values())) == 1:
            outcome.metrics[arm]["alpha_spr"] = next(iter(per_game.values()))
        else:
            outcome.metrics[arm].update({f"alpha_spr_{g}": lr for g, lr in per_game.items()})
    outcome.notes.extend(tuning_notes)
    ctx.provenance["processes"] = processes
    if config.run_cache:
        # runs reused from the cache may come from another session (and CPU); say which
        ctx.provenance["run_cpus"] = cpus
    ctx.provenance["experiment_wall_s"] = round(wall, 1)
    ctx.provenance["throughput"] = {arm: {k: round(v, 1) for k, v in values.items()}
                                    for arm, values in speed.items()}
    return outcome


def _job(config: Config, ctx: RunContext, probes: dict[str, Any], game: str, seed_index: int,
         arm: str, stream: str, position: int) -> dict[str, Any]:
    """One run's job: its agent seed drawn from ``stream`` at index game + (seed index << 32), the game's
    index fixed by :func:`~.games.game_stream_index` (not its place in ``config.games``)."""
    game_index = game_stream_index(game)
    return {"config": config, "game": game, "seed_index": seed_index, "arm": arm,
            "seed": ctx.seed_for(stream, game_index + (seed_index << 32)) % (2**31 - 1), "probe": probes[game],
            "device": str(ctx.device), "progress": ctx.show_progress, "position": position, "threads": 1}


def _execute(jobs: list[dict[str, Any]], processes: int, *, cache: bool = False,
             cpus: dict[str, int] | None = None) -> list[RunSummary]:
    """Run each job (one torch thread each) in this process or on a pool of ``processes`` workers; the
    summaries in the order of ``jobs``. With ``cache``, a job already in the run cache is read from it and
    each finished one is stored as it finishes (see :attr:`Config.run_cache`); ``cpus`` counts the CPU
    model each summary was computed on."""
    keys = [run_key(job) if cache else None for job in jobs]
    results: list[RunSummary | None] = [None] * len(jobs)
    counts = cpus if cpus is not None else {}
    for i, key in enumerate(keys):
        hit = _load_run(key) if key else None
        if hit is not None:
            results[i], cpu = hit
            counts[cpu] = counts.get(cpu, 0) + 1
    todo = [i for i, r in enumerate(results) if r is None]
    if cache:
        log.info("stream_spr: %d of %d run(s) read from the run cache, %d to run", len(jobs) - len(todo),
                 len(jobs), len(todo))

    def finish(i: int, summary: RunSummary) -> None:
        results[i] = summary
        counts[cpu_model()] = counts.get(cpu_model(), 0) + 1
        if keys[i]:
            _store_run(keys[i], summary)

    if processes == 1 or len(todo) <= 1:
        previous = torch.get_num_threads()
        try:
            for i in todo:
                finish(i, run_one(jobs[i]))
        finally:
            torch.set_num_threads(previous)
    elif todo:
        order = sorted(todo, key=lambda i: not ARMS[jobs[i]["arm"]]["spr"])  # the longest runs first
        mp = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(processes, len(todo)), mp_context=mp) as pool:
            futures = {pool.submit(run_one, jobs[i]): i for i in order}
            failed: BaseException | None = None
            for future in concurrent.futures.as_completed(futures):
                # the pool finishes every submitted run anyway: keep the ones that succeed, then raise
                error = future.exception()
                if error is None:
                    finish(futures[future], future.result())
                elif failed is None:
                    failed = error
            if failed is not None:
                raise failed
    return [r for r in results if r is not None]


#: Config fields that do not change what one run computes (they choose which runs exist, or how).
_NOT_IN_A_RUN = ("games", "seeds", "arms", "processes", "spr_lr_grid", "tune_seeds", "tune_steps", "tune_per_game",
                 "run_cache")
#: The modules one run executes: a change to any of them retires every cached run.
_RUN_MODULES = ("agents", "games", "networks", "normalization", "optim", "orth", "probes", "rank", "runs", "spr",
                "spr_agent", "wrappers")
_RUN_CACHE = "stream_spr-runs"


#: The digest of those modules as this process imported them (read once, at import: a file edited while a
#: sweep goes on must not give the running code's runs the edited code's key).
_CODE_DIGEST = source_digest(Path(__file__).parent, _RUN_MODULES)


def _code_digest() -> str:
    return _CODE_DIGEST


def run_key(job: dict[str, Any]) -> str:
    """The cache key of one run: every input of :func:`~.runs.run_one` (the config fields a run reads, the
    game, arm, seed, α_SPR, step budget, probe states and device), the source of the modules it executes,
    and the torch and numpy versions."""
    cfg = job["config"]
    settings = {k: v for k, v in config_to_dict(cfg).items() if k not in _NOT_IN_A_RUN}
    probe = np.ascontiguousarray(job["probe"])
    return config_hash(settings, job["game"], job["seed_index"], job["arm"], job["seed"], job.get("spr_lr"),
                       job.get("total_steps") or cfg.total_steps, hashlib.sha256(probe.tobytes()).hexdigest(),
                       list(probe.shape), str(probe.dtype), job["device"], _code_digest(), torch.__version__,
                       np.__version__, length=24)


def _load_run(key: str) -> tuple[RunSummary, str] | None:
    data = read_json_entry(_RUN_CACHE, key, "run.json")
    return None if data is None else (RunSummary(**data["summary"]), data["cpu"])


def _store_run(key: str, summary: RunSummary) -> None:
    write_json_entry(_RUN_CACHE, key, "run.json", {"summary": dataclasses.asdict(summary), "cpu": cpu_model()},
                     {"game": summary.game, "arm": summary.arm, "seed_index": summary.seed_index})


def _tune_spr_lr(config: Config, ctx: RunContext, probes: dict[str, Any], processes: int,
                 cpus: dict[str, int] | None = None) -> tuple[dict[str, dict[str, float]], list[str]]:
    """α_SPR of each tunable arm by the shared tuner: every grid value on ``tune_seeds`` development
    seeds per game (the ``tune_agent`` stream, disjoint from the scored seeds' ``agent`` stream), scored
    by the mean last-10% return over those runs (over every game, or each game's own with
    ``tune_per_game``); returns ``{arm: {game: α_SPR}}`` and a note per arm (and game)."""
    arms = [a for a in config.arms if ARMS[a].get("tunable")]
    ctx.stage(f"tuning α_SPR of {', '.join(arms)} over {list(config.spr_lr_grid)} on {config.tune_seeds} "
              f"development seed(s) per game")
    jobs = []
    for game in config.games:
        for d in range(config.tune_seeds):
            for arm in arms:
                for lr in config.spr_lr_grid:
                    jobs.append({**_job(config, ctx, probes, game, d, arm, "tune_agent", len(jobs)),
                                 "spr_lr": lr, "total_steps": config.tune_steps or config.total_steps})
    runs = _execute(jobs, processes, cache=config.run_cache, cpus=cpus)
    score = {(j["arm"], j["spr_lr"], j["game"], j["seed_index"]): r.return_last10 for j, r in zip(jobs, runs)}
    scopes = [(g,) for g in config.games] if config.tune_per_game else [tuple(config.games)]
    chosen: dict[str, dict[str, float]] = {}
    notes = []
    for arm in arms:
        for scope in scopes:
            def objective(params: dict[str, Any], arm: str = arm, scope: tuple[str, ...] = scope) -> float:
                return finite_mean(v for (a, lr, g, _), v in score.items()
                                   if a == arm and lr == params["spr_lr"] and g in scope)

            where = f"{scope[0]}, " if config.tune_per_game else ""
            spec = ArmSpec(arm, "method" if arm == "spr_orth2" else "control",
                           space={"spr_lr": tuple(config.spr_lr_grid)}, trials=len(config.spr_lr_grid),
                           select_on=f"{where}{config.tune_seeds} development seed(s) per game, last-10% return")
            lr_best = float(ctx.tune(spec, objective, maximize=True)["spr_lr"])
            chosen.setdefault(arm, {}).update({g: lr_best for g in scope})
            table = ", ".join(f"{lr:g}: {objective({'spr_lr': lr}):.2f}" for lr in config.spr_lr_grid)
            notes.append(f"α_SPR of {LABELS[arm]} tuned on {where}{config.tune_seeds} development seed(s) per game, "
                         f"{config.tune_steps or config.total_steps} steps each (mean last-10% return {table}): "
                         f"{lr_best:g}.")
    return chosen, notes


def _summarize(config: Config, results: list[RunSummary]) -> tuple[Outcome, dict[str, dict[str, float]]]:
    arms = [a for a in ARMS if a in config.arms]  # the method first
    multi = len(config.games) > 1 or config.seeds > 1
    metrics: dict[str, dict[str, float]] = {}
    speed: dict[str, dict[str, float]] = {}
    for arm in arms:
        runs = [r for r in results if r.arm == arm]
        m = {"return_last10pct": finite_mean(r.return_last10 for r in runs)}
        if multi:
            for game in config.games:
                m[f"return_{game}"] = finite_mean(r.return_last10 for r in runs if r.game == game)
        for key in ("srank_latent", "erank_latent", "srank_hidden", "erank_hidden"):
            m[key] = finite_mean(getattr(r, key) for r in runs)
        if ARMS[arm]["spr"]:
            m["spr_loss_last10pct"] = finite_mean(r.spr_loss_last10 for r in runs)
            m["spr_loss_min_by_window"] = finite_mean(r.spr_loss_early_min for r in runs)
            m["mean_abs_cos_before_orth2"] = finite_mean(r.mean_abs_cos_before for r in runs)
            m["max_abs_cos_after_orth2"] = max(r.max_abs_cos_after for r in runs)
            m["spr_update_fraction"] = finite_mean(r.spr_steps / config.total_steps for r in runs)
        m["episodes"] = finite_mean(r.episodes for r in runs)
        metrics[arm] = m
        # Timings differ from run to run, so they go to provenance and notes, not metrics.
        speed[arm] = {"steps_per_s": finite_mean(r.steps_per_s for r in runs),
                      "wall_s": finite_mean(r.wall_s for r in runs)}

    method, base = metrics["spr_orth2"], metrics["stream_q"]
    method_runs = [r for r in results if r.arm == "spr_orth2"]
    window = min(config.loss_window, config.total_steps)
    checks = [
        CHECKS["no_nonfinite"].measure(sum(r.nonfinite for r in results)),
        CHECKS["spr_loss_early"].measure(max(r.spr_loss_early_min for r in method_runs),
                                         note=f"{config.total_steps // config.curve_points}-step bins, "
                                              f"loss window {window} steps"),
        CHECKS["orth2_cosine"].measure(method["max_abs_cos_after_orth2"]),
    ]
    if "spr_naive" in metrics:
        pairs = [(m, n) for m in method_runs for n in results
                 if n.arm == "spr_naive" and (n.game, n.seed_index) == (m.game, m.seed_index)]
        ratios = [crossing_ratio(m.edges, m.spr_loss_curve, n.spr_loss_curve, -0.8) for m, n in pairs]
        checks.append(CHECKS["spr_loss_crossing_ratio"].measure(
            finite_mean(ratios), note=f"{len(pairs)} pair(s): " + ", ".join(f"{r:.2f}" for r in ratios)
            + "; a method run that never crosses counts as crossing at its end (a lower bound)"))
    elif multi:  # the full mode declares it
        checks.append(CHECKS["spr_loss_crossing_ratio"].not_measured("spr_naive is not among the arms"))
    notes = []
    if multi:
        wins = games_won({g: method[f"return_{g}"] for g in config.games},
                         {g: base[f"return_{g}"] for g in config.games})
        checks.append(CHECKS["games_won"].measure(wins, note=f"of {len(config.games)} games, {config.seeds} seed(s)"))
        if "spr_naive" in metrics:
            checks.append(_naive_ratio_over_games(config, method, metrics["spr_naive"]))
        else:
            checks.append(CHECKS["return_ratio_naive"].not_measured("spr_naive is not among the arms"))
        notes.append(_seed_note(config, results))
        for other in ("spr_naive", "spr_authors"):
            if other in metrics:
                notes.append(_seed_note(config, results, other))
    else:
        checks.append(CHECKS["return_ratio"].measure(return_ratio(method["return_last10pct"],
                                                                  base["return_last10pct"])))
        if "spr_naive" in metrics:  # declared for the full mode; measured wherever naive SPR runs on one game
            checks.append(CHECKS["return_ratio_naive"].measure(return_ratio(method["return_last10pct"],
                                                                            metrics["spr_naive"]["return_last10pct"])))
        notes.append("The strict claim (SPR+orth² beats Stream Q(λ) on at least 2 of 3 games over 3 seeds) "
                     "belongs to the full mode (`icml26 run stream_spr`, without `--quick`), which this run is not.")
    loss = average_curves([r.spr_loss_curve for r in method_runs])
    crossed = first_crossing(method_runs[0].edges, loss, -0.8)
    last = next((v for v in reversed(loss) if v is not None), float("nan"))
    notes.append(f"SPR+orth² loss (bin mean, runs averaged): {last:.3f} at the end; first below -0.8 "
                 + (f"in the bin ending at step {crossed}." if crossed is not None else "nowhere in the run.")
                 + f" The bar's window is {window} steps: twice the 20k steps naive SPR needs to reach -0.8; "
                   "add spr_naive to arms to measure naive SPR's curve in the same run.")
    if "spr_naive" in metrics:
        naive = average_curves([r.spr_loss_curve for r in results if r.arm == "spr_naive"])
        naive_crossed = first_crossing(results[0].edges, naive, -0.8)
        notes.append(f"Naive SPR in this run: lowest bin mean within the window "
                     f"{metrics['spr_naive']['spr_loss_min_by_window']:.3f}; first below -0.8 "
                     + (f"in the bin ending at step {naive_crossed}." if naive_crossed is not None
                        else "nowhere in the run."))
    if "spr_authors" in metrics:
        notes.append(f"The authors' configuration (stream-rep-rl: α_RL = α_SPR = 1e-4, off-by-one window actions, "
                     f"independent targets, ReLU head): last-10% return {metrics['spr_authors']['return_last10pct']:.2f} "
                     f"(SPR+orth² {method['return_last10pct']:.2f}, Stream Q(λ) {base['return_last10pct']:.2f}).")
    notes.append(
        f"Effective rank on the fixed probe set (latent srank/erank): SPR+orth² "
        f"{method['srank_latent']:.0f}/{method['erank_latent']:.1f} vs Stream Q(λ) "
        f"{base['srank_latent']:.0f}/{base['erank_latent']:.1f} (reported, not a pass bar at this scale).")
    fast, slow = speed["stream_q"], speed["spr_orth2"]
    notes.append(
        f"Throughput, one torch thread per run, the runs side by side: SPR+orth² {slow['steps_per_s']:.0f} "
        f"steps/s ({slow['wall_s']:.0f} s) vs Stream Q(λ) {fast['steps_per_s']:.0f} steps/s "
        f"({fast['wall_s']:.0f} s), a cost ratio of {fast['steps_per_s'] / slow['steps_per_s']:.2f}x.")

    curves = _curves(config, results, arms)
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes), speed


def _per_seed(results: list[RunSummary], arm: str, game: str) -> list[float]:
    runs = sorted((r for r in results if r.arm == arm and r.game == game), key=lambda r: r.seed_index)
    return [r.return_last10 for r in runs]


def _naive_ratio_over_games(config: Config, method: dict[str, float], naive: dict[str, float]) -> Any:
    """``return_ratio_naive`` over several games: the geometric mean over games of SPR+orth²'s mean return
    (over seeds) over naive SPR's, so that no game's return scale dominates; not measured when a game's
    mean return is not positive on either side."""
    ratios = {g: return_ratio(method[f"return_{g}"], naive[f"return_{g}"]) for g in config.games}
    table = ", ".join(f"{g} {r:.3f}" for g, r in ratios.items())
    if not all(math.isfinite(r) and r > 0 for r in ratios.values()):
        return CHECKS["return_ratio_naive"].not_measured(f"a per-game ratio is not positive and finite ({table})")
    value = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    return CHECKS["return_ratio_naive"].measure(
        value, note=f"geometric mean over {len(ratios)} game(s) of the per-game ratio of mean returns over "
                    f"{config.seeds} seed(s): {table}")


def _seed_note(config: Config, results: list[RunSummary], baseline: str = "stream_q") -> str:
    """Per game, the method's last-10% return minus ``baseline``'s, paired by seed, and the games won per seed."""
    method = {g: _per_seed(results, "spr_orth2", g) for g in config.games}
    base = {g: _per_seed(results, baseline, g) for g in config.games}
    gaps = paired_gaps(method, base)

    def fmt(st: dict[str, Any]) -> str:
        if st["n"] and st["n"] > 1:
            return f"{st['mean']:+.2f} [{st['ci_low']:+.2f}, {st['ci_high']:+.2f}]"
        return "n/a" if st["mean"] is None else f"{st['mean']:+.2f}"

    per_game = "; ".join(
        f"{g} {fmt(gaps[g])} (seeds " + ", ".join(f"{m:.2f} vs {b:.2f}" for m, b in zip(method[g], base[g])) + ")"
        for g in config.games)
    above = sum(1 for g in config.games if gaps[g]["n"] and gaps[g]["n"] > 1 and gaps[g]["ci_low"] > 0)
    below = sum(1 for g in config.games if gaps[g]["n"] and gaps[g]["n"] > 1 and gaps[g]["ci_high"] < 0)
    won = [games_won({g: method[g][i] for g in config.games}, {g: base[g][i] for g in config.games})
           for i in range(config.seeds)]
    return (f"SPR+orth² minus {LABELS[baseline]}, last-10% return paired by seed (mean [95% t interval over "
            f"{config.seeds} seeds]): {per_game}. Games whose interval lies above 0: {above}; below 0: {below}. "
            f"Games won on each seed alone: {won}.")


def _curves(config: Config, results: list[RunSummary], arms: list[str]) -> dict[str, Any]:
    edges = results[0].edges
    curves: dict[str, Any] = {}
    for game in config.games:
        suffix = "" if len(config.games) == 1 else f"_{game}"
        curves[f"learning_curve{suffix}"] = Curve(
            x=edges,
            series={LABELS[a]: average_curves([r.return_curve for r in results if r.game == game and r.arm == a])
                    for a in arms},
            xlabel="environment steps", ylabel="mean return, last 20 episodes",
            title=f"MinAtar {game}: learning curves ({config.seeds} seed(s))",
        )
    spr_arms = [a for a in arms if ARMS[a]["spr"]]
    curves["spr_loss"] = Curve(
        x=edges,
        series={LABELS[a]: average_curves([r.spr_loss_curve for r in results if r.arm == a]) for a in spr_arms},
        xlabel="environment steps", ylabel="SPR loss (−cos), bin mean",
        title="SPR loss (bar: below −0.8 within the loss window)",
    )
    if len(config.games) > 1 or config.seeds > 1:
        curves["returns_by_seed"] = Curve(
            x=list(range(config.seeds)),
            series={f"{a} · {g}": _per_seed(results, a, g) for g in config.games for a in arms},
            xlabel="seed index", ylabel="last-10% return",
            title="last-10% return by game, arm and seed",
        )
    method_runs = [r for r in results if r.arm == "spr_orth2"]
    curves["encoder_cosine"] = Curve(
        x=edges,
        series={"|cos| before orth²": average_curves([r.cos_before_curve for r in method_runs]),
                "|cos| after orth²": [None if v is None else max(v, 1e-12)
                                      for v in average_curves([r.cos_after_curve for r in method_runs])]},
        xlabel="environment steps", ylabel="|cos(SPR encoder update, ObGD encoder update)|",
        title="SPR+orth²: alignment of the two encoder updates", logy=True,
    )
    return curves
