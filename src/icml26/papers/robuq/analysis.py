"""Pure functions from raw arrays to the reproduction's metrics and check values (NumPy / SciPy).

* :func:`frechet_distance`: ``‖μ_a − μ_b‖² + Tr(Σ_a + Σ_b − 2 (Σ_a Σ_b)^{1/2})`` between two
  feature sets (FID's formula, here on a digits classifier's penultimate features);
* :func:`excess_kurtosis`, :func:`mean_excess_kurtosis`: per-token ``m_4 / m_2² − 3`` (SciPy's
  ``kurtosis(fisher=True, bias=True)``), the Gaussianity measure before and after the rotation;
* :func:`mlp_penultimate`: the last hidden layer of a scikit-learn ``MLPClassifier``;
* :func:`class_accuracy`, :func:`ratio`, :func:`gain_points`, :func:`fp_best_ratio`,
  :func:`excess_removed`: the values the checks compare.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from icml26.common.stats import ratio

__all__ = [
    "class_accuracy",
    "excess_kurtosis",
    "excess_removed",
    "fp_best_ratio",
    "frechet_distance",
    "frechet_distance_from_moments",
    "gain_points",
    "mean_excess_kurtosis",
    "mlp_penultimate",
    "ratio",
]


def _matrix(name: str, x: object) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (samples, features), got shape {a.shape}")
    if a.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 samples for a covariance, got {a.shape[0]}")
    return a


def _sqrt_psd(m: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((m + m.T) / 2)
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T


def frechet_distance_from_moments(mu_a: np.ndarray, cov_a: np.ndarray, mu_b: np.ndarray, cov_b: np.ndarray) -> float:
    """``‖μ_a − μ_b‖² + Tr(Σ_a) + Tr(Σ_b) − 2 Tr((Σ_a Σ_b)^{1/2})`` for PSD covariances.

    ``Tr((Σ_a Σ_b)^{1/2}) = Tr((Σ_a^{1/2} Σ_b Σ_a^{1/2})^{1/2})``: the sum of the square roots of the
    eigenvalues of a symmetric PSD matrix (no complex ``sqrtm``).
    """
    mu_a, mu_b = np.asarray(mu_a, np.float64), np.asarray(mu_b, np.float64)
    cov_a, cov_b = np.asarray(cov_a, np.float64), np.asarray(cov_b, np.float64)
    if mu_a.shape != mu_b.shape or cov_a.shape != cov_b.shape or cov_a.shape != (mu_a.size, mu_a.size):
        raise ValueError(f"shapes disagree: mu {mu_a.shape}/{mu_b.shape}, cov {cov_a.shape}/{cov_b.shape}")
    root_a = _sqrt_psd(cov_a)
    middle = root_a @ cov_b @ root_a
    eig = np.linalg.eigvalsh((middle + middle.T) / 2)
    trace_sqrt = float(np.sum(np.sqrt(np.clip(eig, 0.0, None))))
    diff = mu_a - mu_b
    return float(diff @ diff + np.trace(cov_a) + np.trace(cov_b) - 2.0 * trace_sqrt)


def frechet_distance(features_a: np.ndarray, features_b: np.ndarray) -> float:
    """The Fréchet distance between Gaussians fitted to two feature sets ``(n_a, k)``, ``(n_b, k)``.

    Sample covariances with ``n − 1``. NaN in a feature set gives NaN.
    """
    a, b = _matrix("features_a", features_a), _matrix("features_b", features_b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"features_a has {a.shape[1]} features, features_b {b.shape[1]}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("nan")
    return frechet_distance_from_moments(a.mean(0), np.cov(a, rowvar=False), b.mean(0), np.cov(b, rowvar=False))


def excess_kurtosis(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``m_4 / m_2² − 3`` along ``axis`` with central moments ``m_k`` (population, like SciPy's
    ``kurtosis(x, axis, fisher=True, bias=True)``). 0 for a Gaussian, −2 for a ±c vector with
    mean 0, +3 for a Laplace; NaN for a constant vector (``m_2 = 0``)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0 or a.shape[axis] < 2:
        raise ValueError(f"x needs at least 2 entries along axis={axis}, got shape {a.shape}")
    centred = a - a.mean(axis=axis, keepdims=True)
    m2 = np.mean(centred ** 2, axis=axis)
    m4 = np.mean(centred ** 4, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = m4 / m2 ** 2 - 3.0
    return np.where(m2 > 0, out, np.nan)


def mean_excess_kurtosis(tokens: np.ndarray) -> float:
    """The mean over tokens (rows of ``(n, d)``) of :func:`excess_kurtosis`, constant tokens left out."""
    k = excess_kurtosis(_matrix("tokens", tokens), axis=1)
    return float(np.nanmean(k)) if np.isfinite(k).any() else float("nan")


def mlp_penultimate(coefs: Sequence[np.ndarray], intercepts: Sequence[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The last hidden layer ``relu(… relu(x W_0 + b_0) … W_{L-2} + b_{L-2})`` of a ReLU MLP.

    ``coefs`` / ``intercepts`` as scikit-learn's ``MLPClassifier.coefs_`` / ``intercepts_``
    (the output layer is the last entry and is not applied).
    """
    if len(coefs) != len(intercepts) or len(coefs) < 2:
        raise ValueError("coefs and intercepts must list the same layers, at least one hidden and the output")
    h = np.asarray(x, dtype=np.float64)
    for w, b in zip(coefs[:-1], intercepts[:-1]):
        h = np.maximum(h @ np.asarray(w, np.float64) + np.asarray(b, np.float64), 0.0)
    return h


def class_accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    """The share of ``predicted == labels`` (1-D integer arrays of one length)."""
    p, y = np.asarray(predicted), np.asarray(labels)
    if p.shape != y.shape or p.ndim != 1 or p.size == 0:
        raise ValueError(f"predicted {p.shape} and labels {y.shape} must be non-empty 1-D arrays of one length")
    return float(np.mean(p == y))


def gain_points(accuracy: float, reference: float) -> float:
    """``100 · (accuracy − reference)``: percentage points (accuracies in [0, 1])."""
    for name, v in (("accuracy", accuracy), ("reference", reference)):
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{name}={v} must be a share in [0, 1]")
    return 100.0 * (float(accuracy) - float(reference))


def fp_best_ratio(fp: float, quantized: Sequence[float]) -> float:
    """``fp / min(quantized)``: at most 1 when full precision is at least as good as every quantized arm
    (for a lower-is-better metric)."""
    q = [float(v) for v in quantized]
    if not q:
        raise ValueError("quantized must list at least one value")
    return ratio(fp, min(q))


def excess_removed(method: float, method_floor: float, baseline: float, baseline_floor: float) -> float:
    """``1 − (method − method_floor) / (baseline − baseline_floor)``: the share of the baseline's excess over
    its own floor that the method does not have over its floor (1: none left, 0: as much, < 0: more).

    NaN when the baseline has no excess (``baseline ≤ baseline_floor``): there is nothing to remove.
    """
    excess = float(baseline) - float(baseline_floor)
    if not excess > 0:
        return float("nan")
    return 1.0 - (float(method) - float(method_floor)) / excess
