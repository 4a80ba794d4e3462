"""Pure functions from the reproduction's raw checkpoints to its metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_hamu.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from icml26.common.stats import paired_interval as common_paired_interval

__all__ = [
    "MatchedPoint",
    "guarantee_share",
    "matched_point",
    "matched_window",
    "paired_interval",
    "pareto_area",
    "pareto_front",
    "retain_margin_points",
    "share_at_most",
    "smallest_decrease",
    "smallest_increase",
    "target_stop_index",
    "window_front_mean",
]


@dataclasses.dataclass(frozen=True)
class MatchedPoint:
    """The checkpoint chosen at matched forget accuracy.

    Attributes:
        index: its position in the checkpoint arrays.
        hit: whether it lies inside the matched window (else it is among the nearest to it).
        low, high: the window on forget accuracy.
    """

    index: int
    hit: bool
    low: float
    high: float


def matched_window(reference_forget: float, original_forget: float, window: float) -> tuple[float, float]:
    """``(low, high)``: forget accuracy within ``window`` of the reference's and at least
    ``window`` below the original's; collapses to the reference's when those exclude each other."""
    low = reference_forget - window
    high = min(reference_forget + window, original_forget - window)
    if high < low:  # the reference forgets less than the original minus the window
        low = high = reference_forget
    return low, high


def matched_point(forget_acc: Sequence[float], retain_acc: Sequence[float], *, reference_forget: float,
                  original_forget: float, window: float) -> MatchedPoint:
    """The best retain accuracy among checkpoints of matched forget accuracy.

    Matched: inside :func:`matched_window`. When no checkpoint is, the ones nearest the window
    (by distance in forget accuracy) are used. Ties in retain accuracy go to the first checkpoint.
    Pass the accuracy to *select* on (the reproduction passes validation accuracy, and reports the
    chosen checkpoint's test accuracy).
    """
    forget_acc, retain_acc = list(map(float, forget_acc)), list(map(float, retain_acc))
    if not forget_acc or len(forget_acc) != len(retain_acc):
        raise ValueError(f"forget_acc and retain_acc must be two non-empty sequences of one length, "
                         f"got {len(forget_acc)} and {len(retain_acc)}")
    low, high = matched_window(reference_forget, original_forget, window)
    distance = [max(0.0, low - f, f - high) for f in forget_acc]
    nearest = min(distance)
    candidates = [i for i, d in enumerate(distance) if d == nearest]
    best = max(candidates, key=lambda i: retain_acc[i])
    return MatchedPoint(index=best, hit=nearest == 0.0, low=low, high=high)


def pareto_front(forget_acc: Sequence[float], retain_acc: Sequence[float], grid: Sequence[float],
                 report: Sequence[float] | None = None) -> np.ndarray:
    """Best retain accuracy among checkpoints with forget accuracy ≤ x, for every x of ``grid``
    (NaN where no checkpoint forgets that much).

    With ``report``, the checkpoint is chosen by ``retain_acc`` (e.g. validation accuracy; ties to the
    first) and its ``report`` value (e.g. test accuracy) is returned instead.
    """
    forget = np.asarray(forget_acc, dtype=np.float64)
    retain = np.asarray(retain_acc, dtype=np.float64)
    shown = retain if report is None else np.asarray(report, dtype=np.float64)
    if forget.shape != retain.shape or forget.ndim != 1 or shown.shape != forget.shape:
        raise ValueError(f"forget_acc {forget.shape}, retain_acc {retain.shape} and report {shown.shape} must be "
                         "1-D of one length")
    out = []
    for x in np.asarray(grid, dtype=np.float64):
        inside = np.flatnonzero(forget <= x + 1e-9)
        out.append(shown[inside[np.argmax(retain[inside])]] if inside.size else np.nan)
    return np.array(out)


def pareto_area(grid: Sequence[float], front: Sequence[float]) -> float:
    """Area under a retain-vs-forget front (trapezoids over ``grid``; NaN stretches count as 0).

    Larger is better: more retain accuracy at every level of forgetting. A front at 1 over
    the whole of [0, 1] has area 1.
    """
    x = np.asarray(grid, dtype=np.float64)
    y = np.nan_to_num(np.asarray(front, dtype=np.float64), nan=0.0)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"grid {x.shape} and front {y.shape} must be 1-D of one length >= 2")
    if np.any(np.diff(x) <= 0):
        raise ValueError("grid must be strictly increasing")
    # ∫ front dx ≈ Σ (x_{i+1} − x_i)(y_i + y_{i+1})/2
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


def window_front_mean(grid: Sequence[float], front: Sequence[float], low: float, high: float) -> float:
    """Mean height of a front over forget accuracy x ∈ [low, high]: the trapezoid area over the grid
    points inside, divided by their span (NaN stretches count as 0: an arm that cannot forget that
    much has no retain accuracy there). Needs at least two grid points inside."""
    x = np.asarray(grid, dtype=np.float64)
    y = np.nan_to_num(np.asarray(front, dtype=np.float64), nan=0.0)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"grid {x.shape} and front {y.shape} must be 1-D of one length")
    inside = (x >= low - 1e-9) & (x <= high + 1e-9)
    if inside.sum() < 2:
        raise ValueError(f"[{low}, {high}] holds fewer than two grid points")
    return pareto_area(x[inside], y[inside]) / float(x[inside][-1] - x[inside][0])


def share_at_most(values: Sequence[float], level: float) -> float:
    """Share of ``values`` that are ≤ ``level`` (NaN counts as above); NaN when there is none."""
    values = np.asarray(values, dtype=np.float64)
    return float(np.mean(values <= level)) if values.size else float("nan")


def guarantee_share(ratios: np.ndarray, level: float = 0.9) -> float:
    """Share of steps whose realised forget-loss increase reaches ``level``·B (ratios = realised / B);
    NaN when there is no step."""
    ratios = np.asarray(ratios, dtype=np.float64)
    return float(np.mean(ratios >= level)) if ratios.size else float("nan")


def retain_margin_points(method_retain: Sequence[float], baseline_retain: Sequence[float]) -> float:
    """100 × (mean method retain accuracy − mean baseline retain accuracy), in points."""
    return float(100 * (np.mean(method_retain) - np.mean(baseline_retain)))


def paired_interval(method: Sequence[float], baseline: Sequence[float], *, scale: float = 100.0,
                    confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``scale`` × (method − baseline), paired per replicate: Student's t
    interval ``mean ± t_{(1+confidence)/2, n−1}·sd/√n`` (``sd`` with ddof 1). Pairs holding NaN are
    dropped; one pair gives the single value as both ends; none gives NaNs."""
    interval = common_paired_interval(method, baseline, scale=scale, confidence=confidence)
    return interval.mean, interval.low, interval.high


def smallest_increase(values: Sequence[float]) -> float:
    """min_i (v_{i+1} − v_i): positive exactly when ``values`` strictly increases."""
    values = [float(v) for v in values]
    if len(values) < 2:
        raise ValueError("smallest_increase needs at least two values")
    return min(b - a for a, b in zip(values, values[1:]))


def smallest_decrease(values: Sequence[float]) -> float:
    """min_i (v_i − v_{i+1}): positive exactly when ``values`` strictly decreases."""
    return smallest_increase([-v for v in values])


def target_stop_index(forget_acc: Sequence[float], target_acc: Sequence[float]) -> int | None:
    """The first checkpoint whose forget accuracy is at most its target (the validation-forget
    rule: stop once the forget set is classified no better than unseen samples of its label mix,
    the level a model that never saw it would reach); ``None`` when none is (NaN targets never
    stop)."""
    forget, target = np.asarray(forget_acc, dtype=np.float64), np.asarray(target_acc, dtype=np.float64)
    if forget.shape != target.shape or forget.ndim != 1:
        raise ValueError(f"forget_acc {forget.shape} and target_acc {target.shape} must be 1-D of one length")
    reached = np.flatnonzero(forget <= target + 1e-9)
    return int(reached[0]) if reached.size else None
