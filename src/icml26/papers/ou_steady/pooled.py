"""Intervals over the pooled systems of every seed, beside the aggregate's intervals over seeds.

The aggregate's interval treats one master seed (the median over its ``n_systems`` systems) as
the unit. The systems themselves are independent draws (each its own process, interventions
and samples), so the check values can also be read as statistics of all seeds' systems pooled,
with a percentile bootstrap that resamples systems (method and baseline errors of one system
stay paired). Each seed's result holds the per-system errors at ``bar_samples`` in its curve
``per_system_at_bar_n``; :func:`pooled_bootstrap` reads them.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from icml26.papers.ou_steady.analysis import system_bootstrap
from icml26.papers.ou_steady.claims import CHECKS

__all__ = ["POOLED_CHECKS", "per_system_table", "pooled_bootstrap", "pooled_bootstrap_dir"]

#: Check id -> the per-system series it reads: one (a median) or (numerator, denominator) (a ratio of
#: medians, NaN entries left out of each median, as the run's held-out medians do).
POOLED_CHECKS: dict[str, tuple[str, ...]] = {
    "recursive_at_bar_n": ("recursive",),
    "recursive_refined_at_bar_n": ("recursive_refined",),
    "lsq_at_bar_n": ("lsq",),
    "baseline_over_recursive": ("observational_lyapunov", "recursive"),
    "baseline_over_recursive_refined": ("observational_lyapunov", "recursive_refined"),
    "baseline_over_lsq_known_support": ("observational_lyapunov", "lsq_known_support"),
    "baseline_free_over_lsq": ("observational_lyapunov_free", "lsq"),
    "heldout_cov_ratio": ("heldout_cov:observational_lyapunov", "heldout_cov:lsq_known_support"),
}


def per_system_table(seed_results: Sequence[Mapping[str, Any]], series: Sequence[str]) -> np.ndarray:
    """``(systems, len(series))``: the per-system values of ``series`` over every seed's systems."""
    if not seed_results:
        raise ValueError("seed_results is empty: pass at least one seed's result")
    blocks = []
    for result in seed_results:
        curve = result.get("curves", {}).get("per_system_at_bar_n")
        if curve is None:
            raise ValueError(f"seed {result.get('seed')!r} has no curve 'per_system_at_bar_n' (an older result?)")
        blocks.append(np.array([[np.nan if v is None else float(v) for v in curve["series"][name]]
                                for name in series], dtype=np.float64).T)
    return np.concatenate(blocks, axis=0)


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


def _statistic(table: np.ndarray) -> float:
    if table.shape[1] == 1:
        return _median(table[:, 0])
    numerator, denominator = _median(table[:, 0]), _median(table[:, 1])
    return numerator / denominator if denominator > 0 else float("nan")


def _verdict(op: str, target: float, low: float, high: float) -> str:
    """held / not held / unresolved, by where the interval lies against the bar (as the aggregate reads it)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "not held"
    if op == "abs<=":
        low, high = sorted((abs(low), abs(high))) if low * high > 0 else (0.0, max(abs(low), abs(high)))
    holds = {"<": lambda v: v < target, "<=": lambda v: v <= target, ">": lambda v: v > target,
             ">=": lambda v: v >= target, "abs<=": lambda v: v <= target}[op]
    if holds(low) and holds(high):
        return "held"
    if not holds(low) and not holds(high):
        return "not held"
    return "unresolved"


def pooled_bootstrap(seed_results: Sequence[Mapping[str, Any]], *, reps: int = 4000,
                     seed: int = 0) -> dict[str, dict[str, Any]]:
    """``{check id: {"value", "ci", "systems", "verdict"}}`` for each of :data:`POOLED_CHECKS`.

    ``value`` is the statistic over the pooled systems (a median, or a ratio of medians), ``ci``
    its 95 % percentile-bootstrap interval over systems, ``verdict`` where that interval lies
    against the check's declared bar.
    """
    out = {}
    for cid, series in POOLED_CHECKS.items():
        table = per_system_table(seed_results, series)
        point, low, high = system_bootstrap(table, _statistic, reps=reps, seed=seed)
        spec = CHECKS[cid]
        out[cid] = {"value": point, "ci": [low, high], "systems": int(table.shape[0]),
                    "verdict": _verdict(spec.op, spec.target, low, high)}
    return out


def pooled_bootstrap_dir(result_dir: str | pathlib.Path, **kwargs: Any) -> dict[str, dict[str, Any]]:
    """:func:`pooled_bootstrap` of the seeds listed by ``result_dir/result.json`` (from ``result_dir/seeds/``)."""
    root = pathlib.Path(result_dir)
    seeds = json.loads((root / "result.json").read_text())["seeds"]
    return pooled_bootstrap([json.loads((root / "seeds" / str(s) / "result.json").read_text()) for s in seeds],
                            **kwargs)
