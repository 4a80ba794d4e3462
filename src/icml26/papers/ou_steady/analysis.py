"""Pure functions from the reproduction's raw error arrays to its metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_ou_steady_analysis.py`` and
``tests/papers/test_ou_steady_pooled.py``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["arm_metrics", "crossover_size", "error_ratio", "loglog_slope", "median_errors", "nullity_summary",
           "oracle_choice", "relative_error", "sample_size_tag", "system_bootstrap"]


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
                heldout_cov: np.ndarray, *, slope_sizes: Sequence[int] | None = None) -> dict[str, float]:
    """One arm's metrics row.

    Args:
        errors: ``(1 + len(sizes), n_systems)``: scale-aligned drift errors from exact moments
            (row 0) and at each N of ``sizes``.
        sizes: samples per regime of rows 1….
        heldout_mean, heldout_cov: ``(n_systems,)`` relative errors of the held-out
            intervention's predicted mean and covariance (NaN where the estimate was unstable).

    Returns ``err_exact``, ``err_N…`` (medians), ``slope`` (:func:`loglog_slope` of the medians at
    the sizes in ``slope_sizes``, default every size),
    ``heldout_mean_err`` / ``heldout_cov_err`` (medians ignoring NaN) and ``heldout_unstable``
    (how many systems gave an unstable prediction).
    """
    med = median_errors(errors)
    row = {"err_exact": float(med[0])}
    row.update({f"err_{sample_size_tag(n)}": float(m) for n, m in zip(sizes, med[1:])})
    fit = [(n, float(m)) for n, m in zip(sizes, med[1:]) if slope_sizes is None or n in slope_sizes]
    row["slope"] = loglog_slope([n for n, _ in fit], [m for _, m in fit]) if len(fit) >= 2 else float("nan")
    row["heldout_mean_err"] = _nanmedian(heldout_mean)
    row["heldout_cov_err"] = _nanmedian(heldout_cov)
    row["heldout_unstable"] = float(np.isnan(np.asarray(heldout_cov, dtype=np.float64)).sum())
    return row


def crossover_size(sizes: Sequence[float], method: Sequence[float], baseline: Sequence[float]) -> float:
    """The sample size from which ``method``'s median error stays below ``baseline``'s.

    Both curves are read on the grid ``sizes`` (increasing); between the last grid size where
    the method is not below the baseline and the next one, the crossing is interpolated
    linearly in log N against log(method / baseline), the scale on which both errors fall.
    Returns ``sizes[0]`` when the method is below at every size (the crossing is at or before
    the grid's start) and NaN when it is not below at the largest size (no crossing on the grid)
    or any error is not positive and finite.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    method, baseline = np.asarray(method, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if sizes.ndim != 1 or sizes.size < 1 or method.shape != sizes.shape or baseline.shape != sizes.shape:
        raise ValueError(f"sizes, method and baseline must be 1-D arrays of one length >= 1, got {sizes.shape}, "
                         f"{method.shape} and {baseline.shape}")
    if (np.diff(sizes) <= 0).any() or (sizes <= 0).any():
        raise ValueError(f"sizes={sizes.tolist()} must be positive and increasing")
    if not (np.isfinite(method).all() and np.isfinite(baseline).all()) or (method <= 0).any() or (baseline <= 0).any():
        return float("nan")
    gap = np.log(method) - np.log(baseline)  # < 0: the method is below the baseline
    if gap[-1] >= 0:
        return float("nan")
    not_below = np.flatnonzero(gap >= 0)
    if not_below.size == 0:
        return float(sizes[0])
    k = int(not_below[-1])  # gap[k] >= 0 > gap[k + 1]
    x0, x1 = np.log(sizes[k]), np.log(sizes[k + 1])
    return float(np.exp(x0 + (x1 - x0) * gap[k] / (gap[k] - gap[k + 1])))


def system_bootstrap(columns: np.ndarray, statistic: Callable[[np.ndarray], float], *, reps: int = 2000,
                     confidence: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``statistic`` of a (systems, columns) table and its percentile-bootstrap interval over systems.

    A resample draws ``systems`` rows with replacement and keeps each row whole, so the columns
    (e.g. a method's and a baseline's error on the same system) stay paired. ``statistic``
    takes a (systems, columns) array (NaN entries are the statistic's to handle). Returns
    ``(point, low, high)``: the statistic of the table and the ``(1 ± confidence) / 2``
    percentiles of the resampled statistics.
    """
    table = np.asarray(columns, dtype=np.float64)
    if table.ndim != 2 or 0 in table.shape:
        raise ValueError(f"columns must be a (systems, columns) array with at least one of each, got {table.shape}")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ValueError(f"reps={reps!r} must be a positive int")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} must be in (0, 1)")
    rows = np.random.default_rng(seed).integers(table.shape[0], size=(reps, table.shape[0]))
    values = np.array([statistic(table[r]) for r in rows], dtype=np.float64)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.nanpercentile(values, [tail, 100.0 - tail]) if np.isfinite(values).any() else (np.nan, np.nan)
    return float(statistic(table)), float(low), float(high)
