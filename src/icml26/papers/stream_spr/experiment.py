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
import logging
import math
import multiprocessing
import os
import time
from typing import Any, Literal

import numpy as np
import torch

from icml26.results import Outcome, check, plot_curves

from .games import MINATAR_GAMES

__all__ = ["ARMS", "Config", "plot", "run"]

log = logging.getLogger(__name__)

#: Arm name → (agent, its SPR flags). The method first, then the baselines.
ARMS: dict[str, dict[str, Any]] = {
    "spr_orth2": {"spr": True, "orth": True, "orth2": True},
    "spr_naive": {"spr": True, "orth": False, "orth2": False},
    "stream_q": {"spr": False},
}
LABELS = {"spr_orth2": "Stream Q(λ)+SPR+orth+orth²", "spr_naive": "Stream Q(λ)+SPR (naive)",
          "stream_q": "Stream Q(λ)"}


@dataclasses.dataclass
class Config:
    games: tuple[str, ...] = ("breakout", "space_invaders", "freeway")
    """MinAtar games (issue 9's full mode; the paper runs five MinAtar games, Atari and Octax)."""
    seeds: int = 3
    """Seeds per game and arm (the paper: 1, 42, 999); arms share a seed's initialization."""
    arms: tuple[str, ...] = ("spr_orth2", "spr_naive", "stream_q")
    """Arms among spr_orth2 (the method), spr_naive (SPR, no orth/orth²) and stream_q (baseline)."""
    total_steps: int = 1_000_000
    """Environment steps per run (issue 9: 0.5-1M; the paper: 5M on MinAtar)."""
    exploration_fraction: float = 0.2
    """ε goes 1 → 0.01 linearly over this fraction of the run (Elsayed and stream-rep-rl MinAtar: 0.2)."""
    lr_preset: Literal["elsayed", "official"] = "elsayed"
    """RL/SPR step sizes: elsayed = ObGD α 1.0, SPR 1e-4; official = stream-rep-rl's q_lr 1e-4 for both."""
    gamma: float = 0.99
    """γ (both codes)."""
    lamda: float = 0.8
    """λ of the eligibility traces (both codes)."""
    kappa: float = 2.0
    """κ of ObGD (both codes)."""
    spr_depth: int = 5
    """K, SPR prediction steps (stream-rep-rl and SPR: 5)."""
    spr_weight: float = 2.0
    """w, SPR loss weight (stream-rep-rl and SPR: 2)."""
    spr_tau: float = 0.99
    """τ of the EMA target encoder and projection (stream-rep-rl: 0.99, no augmentation)."""
    orth_beta: float = 0.99
    """β of the orth momentum (stream-rep-rl orth_beta)."""
    action_alignment: Literal["correct", "official"] = "correct"
    """SPR window actions: correct, or stream-rep-rl's off-by-one (official)."""
    target_init: Literal["copy", "independent"] = "copy"
    """SPR targets copied from the online weights (SPR), or independent (stream-rep-rl)."""
    official_architecture: bool = False
    """Give the SPR arms stream-rep-rl's SPR head (ReLU, no LN) while the baseline keeps LN+LeakyReLU."""
    sticky_action_prob: float = 0.1
    """MinAtar's sticky-action probability (its default)."""
    probe_states: int = 2000
    """States in the fixed probe set for the rank metrics (random policy, own seed)."""
    srank_delta: float = 0.01
    """δ of srank (Kumar et al. 2021)."""
    loss_window: int = 20_000
    """The SPR loss must fall below -0.8 within this many steps (issue 9)."""
    curve_points: int = 60
    """Points per learning/loss curve."""
    processes: int = 0
    """Worker processes, one torch thread each (0: one per core; 1: in this process)."""

    def __post_init__(self) -> None:
        if not self.games or any(g not in MINATAR_GAMES for g in self.games):
            raise ValueError(f"games={self.games} must be a non-empty subset of {', '.join(MINATAR_GAMES)}")
        if len(set(self.arms)) != len(self.arms) or any(a not in ARMS for a in self.arms):
            raise ValueError(f"arms={self.arms} must be distinct names among {', '.join(ARMS)}")
        if "spr_orth2" not in self.arms or "stream_q" not in self.arms:
            raise ValueError("arms must include the method spr_orth2 and the baseline stream_q")
        for name in ("seeds", "total_steps", "probe_states", "curve_points", "loss_window", "spr_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1")
        if self.total_steps < self.curve_points:
            raise ValueError(f"total_steps={self.total_steps} must be at least curve_points={self.curve_points}")
        if not 0.0 < self.exploration_fraction <= 1.0:
            raise ValueError(f"exploration_fraction={self.exploration_fraction} must lie in (0, 1]")
        if self.processes < 0:
            raise ValueError(f"processes={self.processes} must be 0 (one per core) or positive")
        if not 0.0 <= self.srank_delta < 1.0:
            raise ValueError(f"srank_delta={self.srank_delta} must lie in [0, 1)")

    @classmethod
    def quick(cls) -> "Config":
        """Breakout, one seed, the method against Stream Q(λ), 60k steps each (issue 9)."""
        return cls(games=("breakout",), seeds=1, arms=("spr_orth2", "stream_q"), total_steps=60_000)

    @classmethod
    def tiny(cls) -> "Config":
        """A few seconds: 600 steps, a small probe set, in this process."""
        return cls(games=("breakout",), seeds=1, arms=("spr_orth2", "stream_q"), total_steps=600,
                   probe_states=64, curve_points=6, loss_window=600, processes=1)


# ---------------------------------------------------------------------------
# One run (a game, a seed, an arm), picklable for worker processes
# ---------------------------------------------------------------------------
def _collect_probe_states(game: str, n: int, seed: int, sticky: float) -> np.ndarray:
    """``n`` raw observations visited by a uniformly random policy (resets included)."""
    from .wrappers import make_minatar

    env = make_minatar(game, sticky_action_prob=sticky)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    states = []
    while len(states) < n:
        states.append(np.asarray(obs, dtype=np.float32))
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(states)


def _run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one agent and summarize it (runs in a worker process or in-process)."""
    from .agents import StreamQ, learn_loop
    from .rank import effective_rank
    from .spr_agent import StreamQSPR
    from .wrappers import RunningNorm, find_wrapper, make_minatar, stream_wrappers

    if job["threads"]:
        torch.set_num_threads(job["threads"])
    cfg: Config = job["config"]
    arm = ARMS[job["arm"]]
    total = cfg.total_steps
    env = stream_wrappers(make_minatar(job["game"], sticky_action_prob=cfg.sticky_action_prob), cfg.gamma)
    common = dict(gamma=cfg.gamma, lamda=cfg.lamda, kappa=cfg.kappa,
                  exploration_steps=max(1, int(cfg.exploration_fraction * total)), seed=job["seed"],
                  device=job["device"])
    if arm["spr"]:
        agent = StreamQSPR(env, orth=arm["orth"], orth2=arm["orth2"], lr_preset=cfg.lr_preset,
                           spr_depth=cfg.spr_depth, spr_weight=cfg.spr_weight, spr_tau=cfg.spr_tau,
                           orth_beta=cfg.orth_beta, action_alignment=cfg.action_alignment,
                           target_init=cfg.target_init,
                           head_activation="relu" if cfg.official_architecture else "layernorm_leaky_relu",
                           **common)
    else:
        from .spr_agent import LR_PRESETS

        agent = StreamQ(env, lr=LR_PRESETS[cfg.lr_preset].rl, **common)

    bins = cfg.curve_points
    edges = np.linspace(0, total, bins + 1).astype(int)[1:]
    loss_sum, loss_n = np.zeros(bins), np.zeros(bins)
    cos_before, cos_after = np.zeros(bins), np.zeros(bins)
    cos_n = np.zeros(bins)
    stats = {"max_cos_after": 0.0, "nonfinite": 0}

    def on_step(info) -> None:
        b = min(int(info.step * bins // total), bins - 1)
        if not math.isfinite(info.td_error):
            stats["nonfinite"] += 1
        if info.spr_active:
            if not math.isfinite(info.spr_loss):
                stats["nonfinite"] += 1
            loss_sum[b] += info.spr_loss
            loss_n[b] += 1
            cos_before[b] += abs(info.cos_before)
            cos_after[b] += abs(info.cos_after)
            cos_n[b] += 1
            stats["max_cos_after"] = max(stats["max_cos_after"], abs(info.cos_after))

    record = learn_loop(agent.step, total, progress=job["progress"], desc=f"{job['arm']} {job['game']}",
                        callback=on_step, position=job["position"])

    # Effective rank on the fixed probe set, normalized with this agent's final statistics.
    norm = find_wrapper(env, RunningNorm)
    probe = np.stack([norm.normalize(s, update=False) for s in job["probe"]])
    with torch.no_grad():
        latent, hidden = agent.network.features(torch.as_tensor(probe, device=agent.device))
    rank_latent = effective_rank(latent, cfg.srank_delta)
    rank_hidden = effective_rank(hidden, cfg.srank_delta)
    params = [p for p in agent.network.parameters()]
    if arm["spr"]:
        params += list(agent.spr.parameters())
    stats["nonfinite"] += sum(int((~torch.isfinite(p)).sum()) for p in params)

    ends = np.array([e.end_step for e in record.episodes], dtype=float)
    rets = np.array([e.ret for e in record.episodes], dtype=float)
    last = rets[ends >= 0.9 * total] if len(rets) else rets
    if len(last) == 0 and len(rets):
        last = rets[-1:]
    curve = [float(rets[ends < e][-20:].mean()) if np.any(ends < e) else None for e in edges]
    with np.errstate(invalid="ignore", divide="ignore"):
        loss_curve = np.where(loss_n > 0, loss_sum / np.maximum(loss_n, 1), np.nan)
        cb = np.where(cos_n > 0, cos_before / np.maximum(cos_n, 1), np.nan)
        ca = np.where(cos_n > 0, cos_after / np.maximum(cos_n, 1), np.nan)
    in_window = edges <= max(cfg.loss_window, edges[0])
    early = loss_curve[in_window]
    return {
        "game": job["game"], "seed_index": job["seed_index"], "arm": job["arm"],
        "edges": edges.tolist(),
        "return_last10": float(last.mean()) if len(last) else float("nan"),
        "episodes": len(rets),
        "return_curve": curve,
        "srank_latent": rank_latent.srank, "erank_latent": rank_latent.erank,
        "srank_hidden": rank_hidden.srank, "erank_hidden": rank_hidden.erank,
        "spr_loss_curve": loss_curve.tolist(),
        "spr_loss_early_min": float(np.nanmin(early)) if np.any(np.isfinite(early)) else float("nan"),
        "spr_loss_last10": float(np.nanmean(loss_curve[-max(1, bins // 10):])) if arm["spr"] else float("nan"),
        "spr_steps": int(loss_n.sum()),
        "cos_before_curve": cb.tolist(), "cos_after_curve": ca.tolist(),
        "mean_abs_cos_before": float(cos_before.sum() / max(cos_n.sum(), 1)),
        "max_abs_cos_after": stats["max_cos_after"],
        "nonfinite": stats["nonfinite"],
        "wall_s": record.wall_time_s, "steps_per_s": record.steps_per_s,
    }


# ---------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------
def _seed_for(base: int, *parts: int) -> int:
    return int(np.random.SeedSequence([base, *parts]).generate_state(1)[0] % (2**31 - 1))


def run(config: Config, ctx) -> Outcome:
    probes = {g: _collect_probe_states(g, config.probe_states, _seed_for(ctx.seed, 10_000 + i),
                                       config.sticky_action_prob)
              for i, g in enumerate(config.games)}
    jobs = []
    for gi, game in enumerate(config.games):
        for s in range(config.seeds):
            for arm in config.arms:
                jobs.append({"config": config, "game": game, "seed_index": s, "arm": arm,
                             "seed": _seed_for(ctx.seed, gi, s), "probe": probes[game],
                             "device": str(ctx.device), "progress": ctx.show_progress,
                             "position": len(jobs), "threads": 1})
    processes = config.processes or (os.cpu_count() or 1)
    start = time.perf_counter()
    # One torch thread per run: these networks are too small for intra-op parallelism.
    for job in jobs:
        job["threads"] = 1
    if processes == 1:
        previous = torch.get_num_threads()
        try:
            results = [_run_one(job) for job in jobs]
        finally:
            torch.set_num_threads(previous)
    else:
        order = sorted(jobs, key=lambda j: not ARMS[j["arm"]]["spr"])  # the longest runs first
        mp = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(processes, len(jobs)), mp_context=mp) as pool:
            results = list(pool.map(_run_one, order))
    wall = time.perf_counter() - start
    outcome, speed = _summarize(config, results)
    ctx.provenance["processes"] = processes
    ctx.provenance["experiment_wall_s"] = round(wall, 1)
    ctx.provenance["throughput"] = {arm: {k: round(v, 1) for k, v in values.items()}
                                    for arm, values in speed.items()}
    return outcome


def _mean(values) -> float:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def _summarize(config: Config, results: list[dict[str, Any]]) -> tuple[Outcome, dict[str, dict[str, float]]]:
    arms = [a for a in ARMS if a in config.arms]  # the method first
    multi = len(config.games) > 1 or config.seeds > 1
    metrics: dict[str, dict[str, float]] = {}
    speed: dict[str, dict[str, float]] = {}
    for arm in arms:
        runs = [r for r in results if r["arm"] == arm]
        m = {"return_last10pct": _mean(r["return_last10"] for r in runs)}
        if multi:
            for game in config.games:
                m[f"return_{game}"] = _mean(r["return_last10"] for r in runs if r["game"] == game)
        for key in ("srank_latent", "erank_latent", "srank_hidden", "erank_hidden"):
            m[key] = _mean(r[key] for r in runs)
        if ARMS[arm]["spr"]:
            m["spr_loss_last10pct"] = _mean(r["spr_loss_last10"] for r in runs)
            m["spr_loss_min_by_window"] = _mean(r["spr_loss_early_min"] for r in runs)
            m["mean_abs_cos_before_orth2"] = _mean(r["mean_abs_cos_before"] for r in runs)
            m["max_abs_cos_after_orth2"] = max(r["max_abs_cos_after"] for r in runs)
            m["spr_update_fraction"] = _mean(r["spr_steps"] / config.total_steps for r in runs)
        m["episodes"] = _mean(r["episodes"] for r in runs)
        metrics[arm] = m
        # Timings differ from run to run, so they go to provenance and notes, not metrics.
        speed[arm] = {"steps_per_s": _mean(r["steps_per_s"] for r in runs),
                      "wall_s": _mean(r["wall_s"] for r in runs)}

    method, base = metrics["spr_orth2"], metrics["stream_q"]
    method_runs = [r for r in results if r["arm"] == "spr_orth2"]
    nonfinite = sum(r["nonfinite"] for r in results)
    window = min(config.loss_window, config.total_steps)
    checks = [
        check("non-finite values (parameters, TD errors, SPR losses; all runs)", nonfinite, "==", 0),
        check(f"SPR+orth² loss, lowest {config.total_steps // config.curve_points}-step mean within "
              f"{window} steps (worst run)", max(r["spr_loss_early_min"] for r in method_runs), "<", -0.8),
        check("max abs cos(SPR encoder update, ObGD encoder update) after orth²",
              method["max_abs_cos_after_orth2"], "<", 1e-4),
    ]
    notes = []
    if multi:
        wins = sum(metrics["spr_orth2"][f"return_{g}"] > metrics["stream_q"][f"return_{g}"]
                   for g in config.games)
        checks.append(check(f"games where SPR+orth² beats Stream Q(λ) (of {len(config.games)}, "
                            f"{config.seeds} seeds, last-10% mean)", wins, ">=", 2))
    else:
        ratio = method["return_last10pct"] / base["return_last10pct"] if base["return_last10pct"] else float("nan")
        checks.append(check("return ratio SPR+orth² / Stream Q(λ), last 10% of steps", ratio, ">=", 0.9))
        notes.append("The strict claim (SPR+orth² beats Stream Q(λ) on at least 2 of 3 games over 3 seeds) "
                     "belongs to the full mode (`icml26 run stream_spr`, without `--quick`), which this run is not.")
    loss = _avg_curves(method_runs, "spr_loss_curve")
    crossed = next((x for x, v in zip(method_runs[0]["edges"], loss) if v is not None and v < -0.8), None)
    last = next((v for v in reversed(loss) if v is not None), float("nan"))
    notes.append(f"SPR+orth² loss (bin mean, runs averaged): {last:.3f} at the end; first below -0.8 "
                 + (f"in the bin ending at step {crossed}." if crossed is not None else "nowhere in the run."))
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


def _avg_curves(runs: list[dict[str, Any]], key: str) -> list[float | None]:
    if not runs:
        return []
    columns = zip(*[r[key] for r in runs])
    out = []
    for col in columns:
        vals = [v for v in col if v is not None and math.isfinite(v)]
        out.append(float(np.mean(vals)) if vals else None)
    return out


def _curves(config: Config, results, arms) -> dict[str, Any]:
    edges = results[0]["edges"]
    curves: dict[str, Any] = {}
    for game in config.games:
        suffix = "" if len(config.games) == 1 else f"_{game}"
        curves[f"learning_curve{suffix}"] = {
            "x": edges,
            "series": {LABELS[a]: _avg_curves([r for r in results if r["game"] == game and r["arm"] == a],
                                              "return_curve") for a in arms},
            "xlabel": "environment steps", "ylabel": "mean return, last 20 episodes",
            "title": f"MinAtar {game}: learning curves ({config.seeds} seed(s))",
        }
    spr_arms = [a for a in arms if ARMS[a]["spr"]]
    curves["spr_loss"] = {
        "x": edges,
        "series": {LABELS[a]: _avg_curves([r for r in results if r["arm"] == a], "spr_loss_curve")
                   for a in spr_arms},
        "xlabel": "environment steps", "ylabel": "SPR loss (−cos), bin mean",
        "title": "SPR loss (bar: below −0.8 within the loss window)",
    }
    method_runs = [r for r in results if r["arm"] == "spr_orth2"]
    curves["encoder_cosine"] = {
        "x": edges,
        "series": {"|cos| before orth²": _avg_curves(method_runs, "cos_before_curve"),
                   "|cos| after orth²": [None if v is None else max(v, 1e-12)
                                         for v in _avg_curves(method_runs, "cos_after_curve")]},
        "xlabel": "environment steps", "ylabel": "|cos(SPR encoder update, ObGD encoder update)|",
        "title": "SPR+orth²: alignment of the two encoder updates", "logy": True,
    }
    return curves


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """An overview panel (curves, SPR loss, cosine, ranks) plus one figure per curve."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    figures = plot_curves(data)
    curves = data["curves"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), layout="constrained")
    colors = {LABELS["spr_orth2"]: "tab:red", LABELS["spr_naive"]: "tab:orange", LABELS["stream_q"]: "tab:blue"}

    def draw(ax, curve, **kw):
        x = curve["x"]
        for name, ys in curve["series"].items():
            ys = [np.nan if v is None else v for v in ys]
            ax.plot(x, ys, label=name, color=colors.get(name), **kw)
        ax.set_xlabel(curve.get("xlabel", ""))
        ax.set_ylabel(curve.get("ylabel", ""))
        ax.grid(True, alpha=0.3)

    learning = next(k for k in curves if k.startswith("learning_curve"))
    draw(axes[0, 0], curves[learning])
    axes[0, 0].set_title(curves[learning]["title"], fontsize="medium")
    axes[0, 0].legend(fontsize="small")
    draw(axes[0, 1], curves["spr_loss"])
    axes[0, 1].axhline(-0.8, color="k", ls="--", lw=1, label="bar −0.8")
    axes[0, 1].axvline(data["config"]["loss_window"], color="gray", ls=":", lw=1)
    axes[0, 1].set_title("SPR loss", fontsize="medium")
    axes[0, 1].legend(fontsize="small")
    ax = axes[1, 0]
    for name, ys in curves["encoder_cosine"]["series"].items():
        ax.plot(curves["encoder_cosine"]["x"], [np.nan if v is None else v for v in ys], label=name)
    ax.axhline(1e-4, color="k", ls="--", lw=1, label="bar 1e-4")
    ax.set_yscale("log")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("|cos| (bin mean)")
    ax.set_title("SPR vs ObGD encoder update", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax = axes[1, 1]
    arms = list(data["metrics"])
    keys = ["srank_latent", "erank_latent", "srank_hidden", "erank_hidden"]
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        vals = [data["metrics"][arm][k] for k in keys]
        ax.bar(np.arange(len(keys)) + i * width, vals, width, label=LABELS.get(arm, arm),
               color=colors.get(LABELS.get(arm, arm)))
    ax.set_xticks(np.arange(len(keys)) + width * (len(arms) - 1) / 2, keys, fontsize="small")
    ax.set_title("effective rank on the fixed probe set", fontsize="medium")
    ax.set_ylim(0, 1.25 * max(data["metrics"][a][k] for a in arms for k in keys))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", ncols=len(arms))
    fig.suptitle(f"stream_spr ({data['setting']}, seed {data['seed']})")
    figures["overview.png"] = fig
    return figures
