"""Heavy-tail exponent of a weight matrix's empirical spectral density (ESD).

Paper: *Heavy-Tail Guided Layerwise Learning Rates* (LLR, ICML 2026, arXiv 2605.22297),
following Heavy-Tailed Self-Regularization (HT-SR) theory and the authors' code
(``olmo/LRUnbalance.py``, ``net_esd_estimator``).

Steps of :func:`esd_alpha`:

1. view the weight as a matrix (a convolution kernel ``(out, in, *k)`` becomes one
   ``(out, in)`` slice per kernel position, scaled by ``sqrt(conv_norm)``);
2. the ESD: eigenvalues ``lambda_i = sigma_i(W)^2`` of ``W^T W`` (no ``1/N``: alpha is
   scale-free), sorted ascending (:func:`esd`);
3. fit a power law ``p(lambda) ~ lambda^(-alpha)`` to the tail ``lambda >= xmin`` with the
   continuous Hill/Clauset maximum-likelihood estimator (:func:`fit_power_law`), where
   ``xmin`` is the median eigenvalue (``"median"``, the authors' default), the candidate
   with the smallest Kolmogorov-Smirnov distance (``"ks"``, as ``powerlaw`` and
   WeightWatcher do), or the KS-best candidate near the peak of the log-ESD histogram
   (``"fix_finger"``).

A smaller alpha means a heavier tail, which HT-SR reads as a better-trained layer.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
import torch

from icml26.common.argcheck import check_int, check_real

__all__ = ["AlphaFit", "FitMethod", "esd", "esd_alpha", "fit_power_law"]

FitMethod = Literal["median", "ks", "fix_finger"]
_METHODS = ("median", "ks", "fix_finger")


@dataclasses.dataclass(frozen=True)
class AlphaFit:
    """A power-law fit of an ESD tail."""

    alpha: float
    """The exponent alpha of ``p(lambda) ~ lambda^(-alpha)`` (``> 1``; smaller = heavier tail)."""
    ks_distance: float
    """Kolmogorov-Smirnov distance ``D`` between the tail's empirical CDF and the fit."""
    n_tail: int
    """Number of eigenvalues in the tail (``lambda >= xmin``)."""
    xmin: float
    """Lower edge of the fitted tail."""


_F32_EPS = float(np.finfo(np.float32).eps)


@torch.no_grad()
def esd(weight: torch.Tensor | np.ndarray, *, conv_norm: float = 0.5, rank_tol: float | None = None) -> torch.Tensor:
    """Eigenvalues of ``W^T W`` (squared singular values), sorted ascending, as float64 on CPU.

    Args:
        weight: ``(rows, cols)`` for linear/embedding layers (either orientation), or a
            convolution kernel ``(out, in, *kernel)``: each kernel position gives one
            ``(out, in)`` slice, scaled by ``sqrt(conv_norm)`` as in the authors' code,
            and the eigenvalues of all slices are pooled. A tensor or a NumPy array;
            NaN or inf is a ``ValueError`` (a diverged layer has no spectrum).
        conv_norm: the authors' scale for convolution slices (does not change alpha).
        rank_tol: relative eigenvalue floor: eigenvalues ``<= rank_tol * lambda_max`` are
            returned as exactly 0 (they are rounding noise of a rank-deficient matrix). The
            default is the numerical-rank tolerance of ``numpy.linalg.matrix_rank`` for
            float32 singular values, squared: ``(max(rows, cols) * eps_float32)^2``.

    Returns:
        ``(min(rows, cols) * n_slices,)`` eigenvalues. The SVD runs in float32 on the
        weight's device.
    """
    if isinstance(weight, np.ndarray):
        weight = torch.from_numpy(weight)
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch.Tensor or a NumPy array, got {type(weight).__name__}")
    if weight.ndim < 2:
        raise ValueError(f"weight has shape {tuple(weight.shape)}; an ESD needs a matrix or a conv kernel")
    if weight.numel() == 0:
        raise ValueError(f"weight has shape {tuple(weight.shape)}: it is empty")
    if weight.is_complex():
        raise TypeError("weight must be real")
    if not bool(torch.isfinite(weight).all()):
        raise ValueError("weight contains NaN or inf (has training diverged?); its ESD is undefined")
    check_real(conv_norm, "conv_norm", low=0.0, low_open=True)
    matrix = weight.detach().to(torch.float32)
    if matrix.ndim > 2:
        # (out, in, k1, k2, ...) -> (k, out, in): one slice per kernel position.
        matrix = matrix.flatten(start_dim=2).permute(2, 0, 1) * math.sqrt(conv_norm)
    # lambda_i = sigma_i(W)^2, the eigenvalues of W^T W.
    eigenvalues = torch.sort(torch.linalg.svdvals(matrix).flatten().square().double().cpu()).values
    if rank_tol is None:
        rank_tol = (max(matrix.shape[-2:]) * _F32_EPS) ** 2
    check_real(rank_tol, "rank_tol", low=0.0)
    # lambda <= rank_tol * lambda_max is indistinguishable from 0 at float32 precision
    floor = rank_tol * float(eigenvalues[-1])
    return torch.where(eigenvalues <= floor, torch.zeros_like(eigenvalues), eigenvalues)


def _hill_alpha(log_tail_sum: np.ndarray, log_xmin: np.ndarray, n: np.ndarray) -> np.ndarray:
    # alpha = 1 + n / (sum_{j in tail} ln lambda_j - n ln xmin)   (Clauset et al. 2009, eq. 3.1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 + n / (log_tail_sum - n * log_xmin)


def _ks_distance(tail: np.ndarray, alpha: float) -> float:
    # D = max_k |1 - (lambda_k / xmin)^(1 - alpha) - k / n|,  k = 0 .. n-1 (the tail sorted ascending)
    n = tail.size
    fitted_cdf = 1.0 - (tail / tail[0]) ** (1.0 - alpha)
    return float(np.max(np.abs(fitted_cdf - np.arange(n) / n)))


def _ks_scan(eigenvalues: np.ndarray, candidates: np.ndarray) -> AlphaFit:
    """The KS-best Hill fit over the candidate tail starts ``candidates`` (indices)."""
    logs = np.log(eigenvalues)
    suffix = np.cumsum(logs[::-1])[::-1]  # suffix[i] = sum_{j >= i} ln lambda_j
    n = (eigenvalues.size - candidates).astype(np.float64)
    alphas = _hill_alpha(suffix[candidates], logs[candidates], n)
    best = AlphaFit(alpha=math.nan, ks_distance=math.inf, n_tail=0, xmin=math.nan)
    for index, alpha in zip(candidates, alphas):
        if not alpha > 1.0:  # not a normalisable power law (also NaN)
            continue
        distance = _ks_distance(eigenvalues[index:], float(alpha))
        if distance < best.ks_distance:
            best = AlphaFit(alpha=float(alpha), ks_distance=distance,
                            n_tail=int(eigenvalues.size - index), xmin=float(eigenvalues[index]))
    if not math.isfinite(best.alpha):
        raise ValueError("no candidate xmin gives a power law with alpha > 1; the ESD has no usable tail")
    return best


def fit_power_law(
    eigenvalues: torch.Tensor | np.ndarray,
    method: FitMethod = "median",
    *,
    xmin_pos: int = 2,
    bins: int = 100,
) -> AlphaFit:
    """Fit a continuous power law to the upper tail of ``eigenvalues``.

    Args:
        eigenvalues: ``(N,)`` positive values (any order; sorted here).
        method: ``"median"``: ``xmin`` is the value at index ``N // xmin_pos`` of the
            sorted values (the authors' default, TempBalance's ``PL_Alpha_Hill``);
            ``"ks"``: every value but the largest is a candidate ``xmin`` and the fit
            with the smallest KS distance wins (Clauset et al.; ``powerlaw.Fit``);
            ``"fix_finger"``: as ``"ks"``, but only candidates in
            ``[0.95, 1.5] x`` the peak of a ``bins``-bin histogram of ``log10(lambda)``.
        xmin_pos: for ``"median"``, the tail starts at index ``N // xmin_pos``.
        bins: histogram bins for ``"fix_finger"``.

    Returns:
        An :class:`AlphaFit`. NaN, inf or negative values are a ``ValueError``; so is a
        spectrum with no tail (a matrix of rank below half its size for ``"median"``).
    """
    if method not in _METHODS:
        raise ValueError(f"method={method!r} must be one of {', '.join(_METHODS)}")
    xmin_pos = check_int(xmin_pos, "xmin_pos", low=1)  # whichever method: a bad value is refused, not ignored
    bins = check_int(bins, "bins", low=2)
    if isinstance(eigenvalues, torch.Tensor):
        values = eigenvalues.detach().double().cpu().numpy()
    else:
        try:
            values = np.asarray(eigenvalues, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"eigenvalues must be numbers (a tensor or array), got {type(eigenvalues).__name__}") from None
    values = np.sort(values.ravel())
    if values.size < 3:
        raise ValueError(f"{values.size} eigenvalues are too few for a power-law fit (need at least 3)")
    if not np.all(np.isfinite(values)) or values[0] < 0.0:
        raise ValueError("eigenvalues must be finite and non-negative (squared singular values)")
    if method == "median":
        if xmin_pos < 1:
            raise ValueError(f"xmin_pos={xmin_pos} must be at least 1")
        start = values.size // xmin_pos
        if start >= values.size - 1:
            raise ValueError(f"xmin_pos={xmin_pos} leaves fewer than 2 eigenvalues in the tail")
        if values[start] <= 0.0:
            raise ValueError(f"the median eigenvalue is {values[start]}: the matrix has rank below "
                             f"half its size, so its ESD has no power-law tail to fit")
        n = float(values.size - start)
        logs = np.log(values[start:])
        alpha = float(_hill_alpha(np.sum(logs), logs[0], n))
        return AlphaFit(alpha=alpha, ks_distance=_ks_distance(values[start:], alpha),
                        n_tail=int(n), xmin=float(values[start]))
    values = values[values > 0.0]  # a zero has no log and cannot start a power-law tail
    if values.size < 3:
        raise ValueError(f"only {values.size} eigenvalues are positive; a fit needs at least 3")
    # Candidate tail starts: the first index of every distinct value but the largest (as powerlaw.Fit).
    candidates = np.unique(values, return_index=True)[1][:-1]
    if candidates.size == 0:
        raise ValueError("all eigenvalues are equal: there is no tail to fit")
    if method == "fix_finger":
        if bins < 2:
            raise ValueError(f"bins={bins} must be at least 2")
        counts, edges = np.histogram(np.log10(values), bins=bins)
        peak = 10.0 ** edges[np.argmax(counts)]
        starts = values[candidates]
        window = candidates[(starts >= 0.95 * peak) & (starts <= 1.5 * peak)]
        # A window without a value falls back to the candidate nearest the peak.
        candidates = window if window.size else candidates[[np.argmin(np.abs(starts - peak))]]
    return _ks_scan(values, candidates)


def esd_alpha(
    weight: torch.Tensor,
    method: FitMethod = "median",
    *,
    xmin_pos: int = 2,
    bins: int = 100,
    conv_norm: float = 0.5,
    rank_tol: float | None = None,
) -> AlphaFit:
    """Power-law exponent alpha of a weight's ESD: :func:`esd` then :func:`fit_power_law`.

    Invariant to the scale and the transpose of ``weight``. See :func:`fit_power_law`
    for ``method``, ``xmin_pos`` and ``bins``, and :func:`esd` for ``conv_norm`` and
    ``rank_tol`` (eigenvalues below the numerical-rank floor count as 0, so a rank-deficient
    matrix is refused rather than fitted on rounding noise).
    """
    return fit_power_law(esd(weight, conv_norm=conv_norm, rank_tol=rank_tol), method, xmin_pos=xmin_pos, bins=bins)
