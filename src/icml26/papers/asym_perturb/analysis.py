"""Pure functions from NashConv curves to the reproduction's metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_asym_perturb.py``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["EXACT", "EFG_TARGET", "TAIL_END", "TAIL_START", "TARGET", "fixed_mu_per_game", "half_gaps",
           "iterations_to", "pick_setting", "quantile_bands", "seconds_to", "speedup", "summarize", "tail_fit",
           "threshold_summary"]

EXACT = 1e-8      # "reach NashConv < 1e-8": exact convergence
TARGET = 1e-6     # the headline count: iterations to NashConv 1e-6
EFG_TARGET = 1e-3  # Leduc: iterations and wall time to NashConv 1e-3
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


def speedup(baseline_iterations: Sequence[float], method_iterations: float, unreached: float | None = None) -> float:
    """min(baseline medians) / the method's median: how many times fewer iterations it needs.

    ``unreached``: the count that stands for "never reached" (T + 1). When neither the method nor
    any baseline reached the target, no ratio is measured: NaN (3001/3001 = 1 would read as parity).
    """
    best = float(min(baseline_iterations))
    if unreached is not None and best >= unreached and float(method_iterations) >= unreached:
        return math.nan
    return best / float(method_iterations)


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


def pick_setting(iterations: np.ndarray, finals: np.ndarray) -> int:
    """The tuning rule shared by every tuned arm: the grid point with the fewest median
    iterations to the target over the held-out games, ties broken by the lower median final
    NashConv, then by the earlier grid point.

    Args:
        iterations: (K, G) iterations to the target (unreached: T + 1) of K grid points on G games.
        finals: (K, G) final NashConv.
    """
    iterations, finals = np.asarray(iterations, dtype=np.float64), np.asarray(finals, dtype=np.float64)
    if iterations.ndim != 2 or iterations.shape != finals.shape or iterations.size == 0:
        raise ValueError(f"iterations and finals must be equal non-empty (K, G) arrays, got {iterations.shape} "
                         f"and {finals.shape}")
    keys = list(zip(np.median(iterations, axis=1), np.median(finals, axis=1), range(len(iterations))))
    return int(min(keys)[2])


def fixed_mu_per_game(mu_x: np.ndarray, mu_y: np.ndarray, fraction: float, cap: float) -> np.ndarray:
    """μ of the fixed-σ pair on each game: ``fraction · min(μ̄_x, μ̄_y)``, at most ``cap``
    (the thresholds may be ``inf``) and at least 1e-4 (a threshold LP that returned 0)."""
    pair = np.minimum(np.asarray(mu_x, dtype=np.float64), np.asarray(mu_y, dtype=np.float64))
    return np.clip(fraction * pair, 1e-4, cap)


def threshold_summary(mu_x: np.ndarray, mu_y: np.ndarray, old_mu: float = 0.3) -> dict[str, float]:
    """Median, minimum and largest finite value of μ̄_x, μ̄_y and min(μ̄_x, μ̄_y) over games, the
    share of games where each is infinite (σ already an equilibrium strategy), and the share
    where both exceed ``old_mu`` (0.3, the fixed μ of the earlier run)."""
    mu_x, mu_y = np.asarray(mu_x, dtype=np.float64), np.asarray(mu_y, dtype=np.float64)
    pair = np.minimum(mu_x, mu_y)
    out = {}
    for name, v in (("mu_bar_x", mu_x), ("mu_bar_y", mu_y), ("mu_bar_pair", pair)):
        out[f"median_{name}"] = float(np.median(v))
        out[f"min_{name}"] = float(v.min())
        finite = v[np.isfinite(v)]
        out[f"max_finite_{name}"] = float(finite.max()) if finite.size else math.nan
        out[f"frac_infinite_{name}"] = float((~np.isfinite(v)).mean())
    out["frac_pair_above_0.3"] = float((pair > old_mu).mean())
    return out


def seconds_to(iterations: float, seconds: float, horizon: int) -> float:
    """Wall time to reach a target at ``iterations``, from a run of ``horizon`` iterations that
    took ``seconds`` (every iteration costs the same); NaN when the target was not reached."""
    if horizon < 1:
        raise ValueError(f"horizon={horizon} must be at least 1")
    if not iterations <= horizon:
        return math.nan
    return float(iterations) * float(seconds) / horizon
