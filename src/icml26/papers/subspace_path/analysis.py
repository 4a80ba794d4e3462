"""Pure functions from raw measurements to the reproduction's metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_subspace_path.py``.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["fraction_of_dense", "gap_points", "pruned_fraction", "speedup", "split_accuracy"]


def split_accuracy(scenario_accuracy: Sequence[float], splits: Sequence[str]) -> dict[str, float]:
    """Mean accuracy per split: ``{split: mean of the scenarios in it}`` (first-seen order).

    Args:
        scenario_accuracy: ``(S,)`` per-scenario exact-match rates in ``[0, 1]``.
        splits: ``(S,)`` split name of each scenario (``"selected"``, ``"ood"``, ``"cross"``).
    """
    acc = np.asarray(scenario_accuracy, dtype=float)
    if acc.ndim != 1 or len(splits) != acc.shape[0]:
        raise ValueError(f"scenario_accuracy ({acc.shape}) and splits ({len(splits)}) must be equal-length vectors")
    out: dict[str, float] = {}
    for name in dict.fromkeys(splits):
        out[name] = float(acc[[s == name for s in splits]].mean())
    return out


def gap_points(method: float, baseline: float) -> float:
    """``100 · (method − baseline)``: an accuracy difference in percentage points."""
    return 100.0 * (float(method) - float(baseline))


def fraction_of_dense(accuracy: float, dense: float) -> float:
    """``accuracy / dense`` (NaN when the dense model scores 0: the ratio is undefined)."""
    dense = float(dense)
    return float(accuracy) / dense if dense > 0 else math.nan


def speedup(dense_seconds: Sequence[float], pruned_seconds: Sequence[float]) -> float:
    """``median(dense) / median(pruned)``: > 1 means the pruned model is faster."""
    d = np.asarray(dense_seconds, dtype=float)
    p = np.asarray(pruned_seconds, dtype=float)
    if d.size == 0 or p.size == 0 or (d <= 0).any() or (p <= 0).any():
        raise ValueError("timings must be non-empty and positive")
    return float(np.median(d) / np.median(p))


def pruned_fraction(keep: np.ndarray | Sequence | Mapping) -> float:
    """Fraction of heads removed by a boolean keep-mask (``1 − mean(keep)``)."""
    k = np.asarray(keep, dtype=bool)
    if k.size == 0:
        raise ValueError("keep is empty")
    return float(1.0 - k.mean())
