"""Pure functions from the reproduction's raw results to its metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_lmcleaner.py``.
"""

from __future__ import annotations

import math
from typing import Sequence

from torch import Tensor

from icml26.common.stats import ratio

__all__ = [
    "accuracy_drop_points",
    "decay_ratio",
    "decay_window",
    "draft_composition_epsilon",
    "ga_equal_compute_score",
    "lag_groups",
    "max_abs_gap",
    "max_relative_error",
    "per_request_mu",
    "ratio",
    "relative_residual",
]


def relative_residual(theta: Tensor, theta_ideal: Tensor, theta_now: Tensor) -> float:
    """r = ‖θ − θ_ideal‖ / ‖θ[τ] − θ_ideal‖: 0 is exact unlearning, 1 is doing nothing."""
    # r = ‖θ − θ_ideal‖ / ‖θ[τ] − θ_ideal‖
    return float((theta - theta_ideal).norm()) / float((theta_now - theta_ideal).norm())


def lag_groups(lags: Sequence[int]) -> tuple[int, list[int], int]:
    """``(shortest, middle lags, longest)`` of the lag sweep (middle empty for two lags)."""
    ordered = sorted(lags)
    if not ordered:
        raise ValueError("lags is empty")
    return ordered[0], ordered[1:-1], ordered[-1]


def decay_window(windows: Sequence[int], lag: int) -> int:
    """The largest window K below ``lag`` (0 if none): how far the decay is read."""
    below = [w for w in windows if w < lag]
    return max(below) if below else 0


def decay_ratio(curve: Sequence[float], windows: Sequence[int], lag: int) -> float:
    """r(K_big) / r(0) on a residual-vs-window ``curve`` (one value per window), K_big = :func:`decay_window`."""
    windows = list(windows)
    if len(curve) != len(windows) or 0 not in windows:
        raise ValueError("curve needs one value per window, and the windows must include 0")
    return curve[windows.index(decay_window(windows, lag))] / curve[windows.index(0)]


def max_abs_gap(values: Sequence[float], reference: Sequence[float]) -> float:
    """max_i |values_i − reference_i|."""
    if len(values) != len(reference) or not values:
        raise ValueError("values and reference must be two non-empty sequences of one length")
    return max(abs(a - b) for a, b in zip(values, reference))


def max_relative_error(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """max_i |predicted_i / measured_i − 1| (NaN if a measured value is 0 or a value is not finite)."""
    if len(predicted) != len(measured) or not predicted:
        raise ValueError("predicted and measured must be two non-empty sequences of one length")
    out = 0.0
    for p, m in zip(predicted, measured):
        if not (math.isfinite(p) and math.isfinite(m)) or m == 0:
            return math.nan
        out = max(out, abs(p / m - 1.0))
    return out


def ga_equal_compute_score(residuals: Sequence[float], reference_acc: Sequence[float],
                           acc: Sequence[float]) -> float:
    """min over lags of max(residual / 0.8, accuracy drop in points / 1): ≥ 1 means the arm either
    leaves residual ≥ 0.8 or costs ≥ 1 point of accuracy at every lag."""
    if not (len(residuals) == len(reference_acc) == len(acc)) or not residuals:
        raise ValueError("residuals, reference_acc and acc must be non-empty and of one length")
    return min(max(r / 0.8, 100 * (ref - a) / 1.0) for r, ref, a in zip(residuals, reference_acc, acc))


def accuracy_drop_points(clean: float, noisy: float) -> float:
    """100 × (clean − noisy) accuracy, in points."""
    return 100 * (clean - noisy)


def per_request_mu(epsilon: float, delta: float) -> float:
    """The Gaussian shift of one (ε, δ)-calibrated release: μ = ε / √(4 ln(2.5/δ)) (draft Eq. 14–15)."""
    return epsilon / math.sqrt(4.0 * math.log(2.5 / delta))


def draft_composition_epsilon(requests: int, epsilon: float, delta: float) -> float:
    """The draft's total ε after M requests: Σε_i + √(2 ln(1/δ) Σε_i²) with ε_i = ε."""
    # draft: Σε_i + √(2 ln(1/δ′) Σε_i²) with δ′ = δ
    return requests * epsilon + math.sqrt(2.0 * math.log(1.0 / delta) * requests * epsilon**2)
