"""VimRAG reproduction: the functions from raw arrays to the reported figures (each tested by hand).

* :func:`sum_mod_distribution`: the posterior of ``(Σ digits) mod m`` from per-digit posteriors;
* :func:`points_gap`: a method's accuracy minus a baseline's, in percentage points;
* :func:`spread_points`: the largest minus the smallest accuracy, in points;
* :func:`iterations_to_reach`: the first iteration at which a trailing mean reaches a level;
* :func:`median_ratio`: the ratio of medians of two sets of (possibly censored) iteration counts;
* :func:`tail_mean`: the mean of the last share of a curve;
* :func:`area_gain`: a method's area under its success curves minus a baseline's, in points.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

__all__ = ["IterationRatio", "area_gain", "iterations_to_reach", "median_ratio", "points_gap", "spread_points",
           "sum_mod_distribution", "tail_mean"]


def sum_mod_distribution(probs: np.ndarray, modulus: int = 10) -> np.ndarray:
    """``P(Σ_i d_i ≡ s mod m)`` for independent digits with posteriors ``probs`` ``(k, m)``: the cyclic
    convolution of the rows (``(m,)``; ``k = 0`` gives the point mass at 0)."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] != modulus:
        raise ValueError(f"probs must be (k, {modulus}), got {probs.shape}")
    dist = np.zeros(modulus)
    dist[0] = 1.0
    shift = (np.arange(modulus)[:, None] - np.arange(modulus)[None, :]) % modulus  # (s − j) mod m
    for row in probs:
        # new[s] = Σ_j row[(s − j) mod m] · dist[j]
        dist = row[shift] @ dist
    return dist


def points_gap(method: float, baseline: float) -> float:
    """``100 · (method − baseline)`` for accuracies in [0, 1]; NaN if either is NaN."""
    return 100.0 * (float(method) - float(baseline))


def spread_points(accuracies: Sequence[float]) -> float:
    """``100 · (max − min)`` of accuracies in [0, 1] (NaN if any is NaN, or none given)."""
    a = np.asarray(list(accuracies), dtype=np.float64)
    if a.size == 0 or np.isnan(a).any():
        return math.nan
    return float(100.0 * (a.max() - a.min()))


def iterations_to_reach(curve: Sequence[float], level: float, window: int = 10) -> float:
    """The number of iterations after which the mean of the last ``window`` values first reaches
    ``level`` (``window`` at the earliest), or ``inf`` if it never does."""
    c = np.asarray(curve, dtype=np.float64)
    if window < 1:
        raise ValueError(f"window={window} must be at least 1")
    if c.size < window:
        return math.inf
    means = np.convolve(c, np.ones(window) / window, mode="valid")
    hit = np.flatnonzero(means >= level)
    return float(hit[0] + window) if hit.size else math.inf


@dataclasses.dataclass(frozen=True)
class IterationRatio:
    """``median(method) / median(baseline)``; ``censored`` when the baseline's median did not reach the
    level within ``horizon`` iterations and ``horizon + 1`` stood in for it (the ratio is then an upper
    bound)."""

    ratio: float
    method_median: float
    baseline_median: float
    censored: bool


def median_ratio(method: Sequence[float], baseline: Sequence[float], horizon: int) -> IterationRatio:
    """Ratio of the median iterations-to-level of ``method`` and ``baseline`` (``inf`` = never).

    A method median of ``inf`` gives NaN (not reached); a baseline median of ``inf`` is replaced by
    ``horizon + 1``.
    """
    m = float(np.median(np.asarray(method, dtype=np.float64)))
    b = float(np.median(np.asarray(baseline, dtype=np.float64)))
    if not math.isfinite(m):
        return IterationRatio(math.nan, m, b, not math.isfinite(b))
    censored = not math.isfinite(b)
    denom = horizon + 1.0 if censored else b
    return IterationRatio(m / denom, m, b, censored)


def tail_mean(curve: Sequence[float], fraction: float = 0.1) -> float:
    """The mean of the last ``⌈fraction · len⌉`` values of ``curve``."""
    c = np.asarray(curve, dtype=np.float64)
    if c.size == 0 or not 0 < fraction <= 1:
        raise ValueError("curve must be non-empty and fraction in (0, 1]")
    k = max(1, math.ceil(fraction * c.size))
    return float(c[-k:].mean())


def area_gain(method: Sequence[Sequence[float]], baseline: Sequence[Sequence[float]]) -> float:
    """``100 · mean_i (mean(method_i) − mean(baseline_i))``: the area under each success curve (per
    iteration, so 100 = success from the first update) of paired runs ``i`` (same learning rate and
    question stream), method minus baseline, averaged over the pairs."""
    if len(method) != len(baseline) or not len(method):
        raise ValueError(f"need one baseline curve per method curve, got {len(method)} and {len(baseline)}")
    gaps = []
    for m, b in zip(method, baseline):
        m, b = np.asarray(m, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if m.shape != b.shape or m.ndim != 1 or not m.size:
            raise ValueError(f"paired curves must be non-empty and of one length, got {m.shape} and {b.shape}")
        gaps.append(m.mean() - b.mean())
    return float(100.0 * np.mean(gaps))
