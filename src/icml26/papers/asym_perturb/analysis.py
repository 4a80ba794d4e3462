"""Pure functions from NashConv curves to the reproduction's metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_asym_perturb.py``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["EXACT", "TAIL_END", "TAIL_START", "TARGET", "half_gaps", "iterations_to", "quantile_bands",
           "speedup", "summarize", "tail_fit"]

EXACT = 1e-8      # "reach NashConv < 1e-8" (issue 4)
TARGET = 1e-6     # "iterations to 1e-6" (issue 4)
TAIL_START, TAIL_END = 1e-3, 1e-11  # the tail over which log NashConv is fitted by a line


def tail_fit(curve: np.ndarray) -> tuple[float, float, int]:
    """Least-squares line through log10 NashConv over the tail of one run.

    The tail runs from the first iterate with NashConv ≤ 1e-3 to the first with
    NashConv ≤ 1e-11 (or the end). Returns ``(slope per iteration, R², points)``;
    NaNs when the run never enters the tail or the tail has fewer than 10 points.
    """
    curve = np.asarray(curve, dtype=np.float64)
    hit = np.flatnonzero(curve <= TAIL_START)
    if hit.size == 0:
        return math.nan, math.nan, 0
    start = int(hit[0])
    done = np.flatnonzero(curve[start:] <= TAIL_END)
    end = start + int(done[0]) + 1 if done.size else curve.size
    if end - start < 10:
        return math.nan, math.nan, end - start
    t = np.arange(start, end, dtype=float)
    logs = np.log10(np.clip(curve[start:end], 1e-16, None))
    slope, intercept = np.polyfit(t, logs, 1)
    residual = logs - (slope * t + intercept)
    total = ((logs - logs.mean()) ** 2).sum()
    r2 = 1.0 - (residual ** 2).sum() / total if total > 0 else 1.0
    return float(slope), float(r2), end - start


def iterations_to(nash_conv: np.ndarray, tol: float) -> np.ndarray:
    """(S,) first iteration with NashConv ≤ tol in each (S, T+1) row; T + 1 where it never does."""
    nash_conv = np.asarray(nash_conv)
    hit = nash_conv <= tol
    return np.where(hit.any(-1), hit.argmax(-1), nash_conv.shape[-1])


def summarize(nash_conv: np.ndarray, evaluations_per_iteration: int) -> dict[str, float]:
    """Per-method figures over seeds from (S, T+1) NashConv curves.

    ``frac_below_1e-8`` (final NashConv < :data:`EXACT`), ``median_final_nashconv``,
    ``median_iters_to_1e-6`` (unreached: T + 1), its gradient evaluations,
    ``frac_reaching_1e-6``, ``median_final_over_half`` (NashConv(T) / NashConv(T/2)), and the
    median R² and rate (10^slope) of :func:`tail_fit` over the seeds that have a tail.
    """
    nash_conv = np.asarray(nash_conv, dtype=np.float64)
    horizon = nash_conv.shape[-1] - 1
    iters = iterations_to(nash_conv, TARGET)
    fits = [tail_fit(c) for c in nash_conv]
    slopes = np.array([f[0] for f in fits])
    r2 = np.array([f[1] for f in fits])
    fitted = ~np.isnan(r2)
    final = nash_conv[:, -1]
    half = nash_conv[:, horizon // 2]
    return {
        "frac_below_1e-8": float((final < EXACT).mean()),
        "median_final_nashconv": float(np.median(final)),
        "median_iters_to_1e-6": float(np.median(iters)),
        "median_grad_evals_to_1e-6": float(np.median(iters) * evaluations_per_iteration),
        "frac_reaching_1e-6": float((iters <= horizon).mean()),
        "median_final_over_half": float(np.median(final / np.maximum(half, 1e-300))),
        "median_tail_r2": float(np.median(r2[fitted])) if fitted.any() else 0.0,
        "median_tail_rate": float(10 ** np.median(slopes[fitted])) if fitted.any() else 1.0,
        "frac_with_tail": float(fitted.mean()),
    }


def speedup(baseline_iterations: Sequence[float], method_iterations: float) -> float:
    """min(baseline medians) / the method's median: how many times fewer iterations it needs."""
    return float(min(baseline_iterations)) / float(method_iterations)


def half_gaps(values: np.ndarray, best_y_value: np.ndarray, best_x_value: np.ndarray) -> dict[str, float]:
    """Which half of a strategy pair is exact, over seeds.

    The x-gap max_{y'} xᵀAy' − v* (``best_y_value − values``) and the y-gap v* − min_{x'} x'ᵀAy
    (``values − best_x_value``) sum to NashConv; returns the share of seeds with each below
    :data:`EXACT` and their medians.
    """
    x_gap = np.asarray(best_y_value, dtype=np.float64) - np.asarray(values, dtype=np.float64)
    y_gap = np.asarray(values, dtype=np.float64) - np.asarray(best_x_value, dtype=np.float64)
    return {"frac_x_half_below_1e-8": float((x_gap < EXACT).mean()),
            "frac_y_half_below_1e-8": float((y_gap < EXACT).mean()),
            "median_final_x_gap": float(np.median(x_gap)),
            "median_final_y_gap": float(np.median(y_gap))}


def quantile_bands(nash_conv: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, lower, median, upper)``: the 25/50/75 % quantiles over seeds of (S, T+1) curves
    (clipped at 1e-16 for log axes) at ``points`` evenly spaced iterations."""
    nash_conv = np.asarray(nash_conv, dtype=np.float64)
    horizon = nash_conv.shape[-1] - 1
    idx = np.unique(np.linspace(0, horizon, points).round().astype(int))
    clipped = np.clip(nash_conv[:, idx], 1e-16, None)
    q = np.quantile(clipped, [0.25, 0.5, 0.75], axis=0)
    return idx, q[0], q[1], q[2]
