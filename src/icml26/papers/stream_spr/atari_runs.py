"""stream_spr on real Atari: Stream Q(λ), naive SPR and SPR+orth², every (game, arm, seed) kept as it finishes.

A further run beside the MinAtar reproduction (needs the ``atari`` extra). Each run trains one agent
with the Atari network on :func:`~.atari.make_atari`'s game (the authors' Atari preprocessing) for
``steps`` agent steps, ε annealed 1 → 0.01 over the first ``exploration_fraction`` of them (their Atari
launcher: 0.10), and is written to ``<out>/runs/<game>/<arm>/seed<k>.json`` the moment it ends, so an
interrupted sweep resumes where it stopped (a run is redone only if its file is missing; a file
written with other settings is refused). The score of a run is the mean raw game return of the
games that end in the last 10 % of its steps (the authors' "final score"; whole games, not lives).

Step sizes are chosen alike for every arm, never on a scored game: with ``tune_game`` set, each arm
runs each ``lr_preset`` on that held-out game for ``tune_steps`` over ``tune_seeds`` (default: ``seeds``)
and keeps its best mean score, the first preset on a tie (the choice is stored); otherwise every arm
uses ``lr_preset`` (the MinAtar configuration's).

:func:`summarize` reads the runs into ``<out>/summary.json`` and ``summary.md`` (per game and arm: the raw score over
seeds with its t interval; human-normalised scores; per arm the IQM over every (seed, game) with its
stratified-bootstrap interval; IQM differences SPR+orth² − each baseline) and draws a learning
curve per game. Run: ``python -m icml26.papers.stream_spr.atari_runs --games breakout,seaquest,ms_pacman
--seeds 0-2 --steps 100000 --workers 2 --out results/stream_spr/atari_100k``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from icml26.atomic import atomic_write_text
from icml26.common.argcheck import check_int, check_real

from .analysis import last_fraction_return, return_curve
from .atari_bench import ARMS
from .atari_scores import REFERENCE_SCORES

__all__ = ["AtariSweep", "run_atari", "run_sweep", "summarize"]

METHOD = "spr_orth2"
PRESETS = ("elsayed", "official")


@dataclasses.dataclass(frozen=True)
class AtariSweep:
    """The settings every run of one sweep shares (stored in each run's file and checked on resume)."""

    games: tuple[str, ...] = ("breakout", "seaquest", "ms_pacman")
    arms: tuple[str, ...] = ("spr_orth2", "spr_naive", "stream_q")
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 100_000
    exploration_fraction: float = 0.10
    lr_preset: str = "elsayed"
    tune_game: str | None = None
    tune_steps: int = 20_000
    tune_seeds: tuple[int, ...] | None = None
    curve_points: int = 50

    def __post_init__(self) -> None:
        check_int(self.steps, "steps", low=1)
        check_int(self.tune_steps, "tune_steps", low=1)
        check_int(self.curve_points, "curve_points", low=1)
        check_real(self.exploration_fraction, "exploration_fraction", low=0.0, high=1.0)
        if not self.games or any(g not in REFERENCE_SCORES for g in self.games):
            raise ValueError(f"games={self.games} must be Atari-100k games: {', '.join(REFERENCE_SCORES)}")
        if self.tune_game is not None and self.tune_game in self.games:
            raise ValueError(f"tune_game={self.tune_game!r} is scored: choose a game outside games={self.games}")
        if not self.arms or METHOD not in self.arms or any(a not in ARMS for a in self.arms):
            raise ValueError(f"arms={self.arms} must include {METHOD!r} and be among {', '.join(ARMS)}")
        if self.lr_preset not in PRESETS:
            raise ValueError(f"lr_preset={self.lr_preset!r} must be one of {', '.join(PRESETS)}")
        for name in ("seeds", "tune_seeds"):
            seeds = getattr(self, name)
            if seeds is None and name == "tune_seeds":
                continue
            if not seeds or len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
                raise ValueError(f"{name}={seeds} must be distinct non-negative ints")

    def run_settings(self) -> dict[str, Any]:
        """What a run's result depends on besides its (game, arm, seed, preset)."""
        return {"steps": self.steps, "exploration_fraction": self.exploration_fraction,
                "curve_points": self.curve_points}


def run_atari(game: str, arm: str, seed: int, *, steps: int, lr_preset: str = "elsayed",
              exploration_fraction: float = 0.10, curve_points: int = 50, threads: int = 1) -> dict[str, Any]:
    """Train one agent on one game; its whole-game returns, score and cost (one torch thread)."""
    import torch

    from .agents import StreamQ
    from .atari import make_atari
    from .spr_agent import LR_PRESETS, StreamQSPR

    if arm not in ARMS:
        raise ValueError(f"arm={arm!r} must be one of {', '.join(ARMS)}")
    torch.set_num_threads(threads)
    env = make_atari(game, seed=seed)
    common = dict(exploration_steps=max(1, int(exploration_fraction * steps)), seed=seed, architecture="atari")
    options = {k: v for k, v in ARMS[arm].items() if k != "agent"}
    if ARMS[arm]["agent"] == "StreamQ":
        agent = StreamQ(env, lr=LR_PRESETS[lr_preset].rl, **common)
    else:
        agent = StreamQSPR(env, lr_preset=lr_preset, **common, **options)
    start = time.perf_counter()
    record = agent.learn(steps, progress=False)
    wall = time.perf_counter() - start
    ends = [e.end_step for e in record.episodes]
    rets = [e.ret for e in record.episodes]
    edges = np.linspace(0, steps, curve_points + 1).astype(int)[1:]
    return {"game": game, "arm": arm, "seed": seed, "lr_preset": lr_preset,
            "score": last_fraction_return(ends, rets, steps, 0.1), "games_played": len(rets),
            "episode_end_steps": ends, "episode_returns": rets, "curve_edges": edges.tolist(),
            "return_curve": return_curve(ends, rets, edges), "wall_s": round(wall, 2),
            "steps_per_s": round(steps / wall, 2)}


def _job(kwargs: dict[str, Any]) -> dict[str, Any]:
    return run_atari(**kwargs)


def _run_file(out: Path, game: str, arm: str, seed: int) -> Path:
    return out / "runs" / game / arm / f"seed{seed}.json"


def _load_if_done(path: Path, settings: dict[str, Any], preset: str) -> dict[str, Any] | None:
    if not path.exists():
        return None
    run = json.loads(path.read_text())
    if run.get("settings") != settings or run.get("lr_preset") != preset:
        raise ValueError(f"{path} was written with other settings ({run.get('settings')}, lr_preset "
                         f"{run.get('lr_preset')!r}); move it away or use another --out")
    return run


def _execute(jobs: list[tuple[Path, dict[str, Any]]], settings: dict[str, Any], workers: int) -> None:
    """Run the jobs whose files are missing, ``workers`` processes at a time, writing each as it ends."""
    todo = [(p, kw) for p, kw in jobs if _load_if_done(p, settings, kw["lr_preset"]) is None]
    print(f"{len(jobs) - len(todo)} of {len(jobs)} runs already done; {len(todo)} to run", flush=True)
    if not todo:
        return
    import multiprocessing

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_job, kw): path for path, kw in todo}
        for done in as_completed(futures):
            run = done.result()
            run["settings"] = settings
            atomic_write_text(futures[done], json.dumps(run) + "\n")
            print(f"{run['game']} {run['arm']} seed {run['seed']}: score {run['score']:.1f} "
                  f"({run['games_played']} games, {run['steps_per_s']:.0f} steps/s)", flush=True)


def _tune(sweep: AtariSweep, out: Path, workers: int) -> dict[str, str]:
    """Each arm's preset: the best score on the held-out game over the tuning seeds (all arms alike)."""
    if sweep.tune_game is None:
        return {arm: sweep.lr_preset for arm in sweep.arms}
    settings = {"steps": sweep.tune_steps, "exploration_fraction": sweep.exploration_fraction,
                "curve_points": sweep.curve_points}
    tune_dir = out / "tuning"
    tune_seeds = sweep.tune_seeds if sweep.tune_seeds is not None else sweep.seeds
    jobs = [(tune_dir / "runs" / sweep.tune_game / arm / preset / f"seed{seed}.json",
             dict(game=sweep.tune_game, arm=arm, seed=seed, steps=sweep.tune_steps, lr_preset=preset,
                  exploration_fraction=sweep.exploration_fraction, curve_points=sweep.curve_points))
            for arm in sweep.arms for preset in PRESETS for seed in tune_seeds]
    _execute(jobs, settings, workers)
    chosen: dict[str, str] = {}
    table: dict[str, dict[str, float]] = {}
    for arm in sweep.arms:
        means = {p: float(np.mean([json.loads((tune_dir / "runs" / sweep.tune_game / arm / p / f"seed{s}.json")
                                               .read_text())["score"] for s in tune_seeds])) for p in PRESETS}
        chosen[arm] = max(PRESETS, key=lambda p: means[p])
        table[arm] = means
    choice = {"game": sweep.tune_game, "steps": sweep.tune_steps, "seeds": list(tune_seeds),
              "mean_score": table, "chosen": chosen}
    atomic_write_text(tune_dir / "choice.json", json.dumps(choice, indent=2) + "\n")
    return chosen


def run_sweep(sweep: AtariSweep, out: str | Path, *, workers: int = 1) -> dict[str, Any]:
    """Every (game, arm, seed) of ``sweep`` not yet in ``out``, then :func:`summarize`."""
    check_int(workers, "workers", low=1)
    out = Path(out)
    presets = _tune(sweep, out, workers)
    settings = sweep.run_settings()
    jobs = [(_run_file(out, game, arm, seed),
             dict(game=game, arm=arm, seed=seed, steps=sweep.steps, lr_preset=presets[arm],
                  exploration_fraction=sweep.exploration_fraction, curve_points=sweep.curve_points))
            for seed in sweep.seeds for game in sweep.games for arm in sweep.arms]
    _execute(jobs, settings, workers)
    return summarize(sweep, out)


def summarize(sweep: AtariSweep, out: str | Path) -> dict[str, Any]:
    """Read the runs of ``sweep`` in ``out`` into ``summary.json``, ``summary.md`` and the figures (see :mod:`.atari_summary`)."""
    from .atari_summary import summarize as _summarize

    return _summarize(sweep, out)


def _seeds(text: str) -> tuple[int, ...]:
    if "-" in text:
        first, last = (int(x) for x in text.split("-"))
        return tuple(range(first, last + 1))
    return tuple(int(x) for x in text.split(","))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="breakout,seaquest,ms_pacman")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--seeds", default="0-2", help="a range (0-2) or a list (0,3,5)")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--exploration-fraction", type=float, default=0.10)
    parser.add_argument("--lr-preset", choices=PRESETS, default="elsayed")
    parser.add_argument("--tune-game", help="a held-out Atari-100k game on which every arm picks its preset")
    parser.add_argument("--tune-steps", type=int, default=20_000)
    parser.add_argument("--tune-seeds", help="the tuning seeds (default: --seeds), a range or a list")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--summarize-only", action="store_true", help="only rebuild the summary from the runs")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sweep = AtariSweep(games=tuple(args.games.split(",")), arms=tuple(args.arms.split(",")),
                       seeds=_seeds(args.seeds), steps=args.steps, exploration_fraction=args.exploration_fraction,
                       lr_preset=args.lr_preset, tune_game=args.tune_game, tune_steps=args.tune_steps,
                       tune_seeds=_seeds(args.tune_seeds) if args.tune_seeds else None)
    result = summarize(sweep, args.out) if args.summarize_only else run_sweep(sweep, args.out, workers=args.workers)
    print(json.dumps(result["overall"], indent=2))


if __name__ == "__main__":
    main()
