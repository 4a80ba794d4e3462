"""Pure functions from the reproduction's raw error arrays to its metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_ou_steady.py``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["arm_metrics", "error_ratio", "loglog_slope", "median_errors", "nullity_summary", "oracle_choice",
           "relative_error", "sample_size_tag"]


def median_errors(errors: np.ndarray) -> np.ndarray:
    """Median over systems: ``errors`` ``(..., n_systems)`` → ``(...)`` (NaN if any is NaN)."""
    return np.median(np.asarray(errors, dtype=np.float64), axis=-1)


def loglog_slope(sizes: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(N): −1/2 for an error ∝ N^-1/2.

    Needs at least two sizes; non-positive errors give NaN (no logarithm).
    """
    sizes, errors = np.asarray(sizes, dtype=np.float64), np.asarray(errors, dtype=np.float64)
    if sizes.shape != errors.shape or sizes.ndim != 1 or sizes.size < 2:
        raise ValueError(f"sizes and errors must be two 1-D arrays of one length >= 2, got {sizes.shape} and {errors.shape}")
    if (errors <= 0).any() or not np.isfinite(errors).all():
        return float("nan")
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """‖estimate − truth‖ / ‖truth‖ (Frobenius for matrices)."""
    estimate, truth = np.asarray(estimate, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    if estimate.shape != truth.shape:
        raise ValueError(f"estimate {estimate.shape} and truth {truth.shape} differ in shape")
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def error_ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` (e.g. baseline over method error); ``inf`` for x / 0 with x > 0, NaN for 0 / 0."""
    numerator, denominator = float(numerator), float(denominator)
    if denominator == 0.0:
        return float("inf") if numerator > 0 else float("nan")
    return numerator / denominator


def sample_size_tag(n: int) -> str:
    """The metric suffix of a sample size: 100000 → ``"N1e5"``."""
    return f"N{n:.0e}".replace("+0", "")


def nullity_summary(nullities: Sequence[int]) -> dict[str, float]:
    """``{"min", "median", "max"}`` of the oracle's nullities over systems (1 = identified up to scale)."""
    values = np.asarray(list(nullities), dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("nullities must be a non-empty sequence of integers")
    return {"min": float(values.min()), "median": float(np.median(values)), "max": float(values.max())}


def oracle_choice(errors: Sequence[float]) -> int:
    """Index of the smallest finite error (a grid value picked *with the truth*); ties go to the first.

    All-NaN errors pick index 0."""
    values = np.asarray(list(errors), dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("errors must be a non-empty sequence")
    finite = np.isfinite(values)
    if not finite.any():
        return 0
    return int(np.argmin(np.where(finite, values, np.inf)))


def _nanmedian(values) -> float:
    """Median ignoring NaN; NaN (without numpy's warning) when every value is NaN."""
    values = np.asarray(values, dtype=np.float64)
    return float(np.nanmedian(values)) if np.isfinite(values).any() else float("nan")


def arm_metrics(errors: np.ndarray, sizes: Sequence[int], heldout_mean: np.ndarray,
                heldout_cov: np.ndarray, *, slope_from: int = 0) -> dict[str, float]:
    """One arm's metrics row.

    Args:
        errors: ``(1 + len(sizes), n_systems)``: scale-aligned drift errors from exact moments
            (row 0) and at each N of ``sizes``.
        sizes: samples per regime of rows 1….
        heldout_mean, heldout_cov: ``(n_systems,)`` relative errors of the held-out
            intervention's predicted mean and covariance (NaN where the estimate was unstable).

    Returns ``err_exact``, ``err_N…`` (medians), ``slope`` (:func:`loglog_slope` of the medians at
    the sizes N ≥ ``slope_from``),
    ``heldout_mean_err`` / ``heldout_cov_err`` (medians ignoring NaN) and ``heldout_unstable``
    (how many systems gave an unstable prediction).
    """
    med = median_errors(errors)
    row = {"err_exact": float(med[0])}
    row.update({f"err_{sample_size_tag(n)}": float(m) for n, m in zip(sizes, med[1:])})
    fit = [(n, float(m)) for n, m in zip(sizes, med[1:]) if n >= slope_from]
    row["slope"] = loglog_slope([n for n, _ in fit], [m for _, m in fit]) if len(fit) >= 2 else float("nan")
    row["heldout_mean_err"] = _nanmedian(heldout_mean)
    row["heldout_cov_err"] = _nanmedian(heldout_cov)
    row["heldout_unstable"] = float(np.isnan(np.asarray(heldout_cov, dtype=np.float64)).sum())
    return row
