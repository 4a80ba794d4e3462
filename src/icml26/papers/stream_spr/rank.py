"""Effective rank of a representation: the measure behind the paper's "richer representations".

For features Φ (N states × D) with singular values σ₁ ≥ … ≥ σ_r:

* srank_δ(Φ) = min{k : Σ_{i≤k} σ_i / Σ_i σ_i ≥ 1 − δ}      (Kumar et al., ICLR 2021; δ = 0.01)
* erank(Φ)   = exp(−Σ_i p_i log p_i),  p_i = σ_i / Σ_j σ_j  (Roy & Vetterli, 2007)

Both are in [1, min(N, D)] for a non-zero Φ; k equal singular values give k for both.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from icml26.common.argcheck import check_real

__all__ = ["EffectiveRank", "effective_rank", "erank", "srank"]


@dataclasses.dataclass(frozen=True)
class EffectiveRank:
    srank: int
    """srank_δ."""
    erank: float
    """exp of the entropy of the normalized singular values."""
    delta: float


def _check_sv(singular_values) -> np.ndarray:
    s = np.asarray(singular_values, dtype=np.float64).reshape(-1)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("singular_values must be a non-empty array of finite, non-negative numbers")
    if s.sum() == 0:
        raise ValueError("all singular values are 0: the features are identically zero, so the rank is undefined")
    return np.sort(s)[::-1]


def srank(singular_values, delta: float = 0.01) -> int:
    """srank_δ from singular values: the fewest that hold a 1 − δ share of their sum."""
    check_real(delta, "delta", low=0.0, high=1.0, high_open=True)
    s = _check_sv(singular_values)
    share = np.cumsum(s) / s.sum()
    # min{k : Σ_{i≤k} σ_i / Σ σ ≥ 1 − δ}; the 1e-12 absorbs round-off in the cumulative sum
    return int(np.searchsorted(share, 1.0 - delta - 1e-12) + 1)


def erank(singular_values) -> float:
    """erank from singular values: exp(H(p)), p = σ/Σσ (0·log 0 = 0)."""
    s = _check_sv(singular_values)
    p = s / s.sum()
    p = p[p > 0]
    return float(math.exp(-(p * np.log(p)).sum()))


def effective_rank(features: torch.Tensor | np.ndarray, delta: float = 0.01) -> EffectiveRank:
    """srank_δ and erank of a feature matrix.

    Args:
        features: (N, D) one row per state (e.g. the encoder's flattened latents on a fixed
            probe set); computed in float64 on the CPU.
        delta: δ of srank.
    """
    if isinstance(features, torch.Tensor):
        features = features.detach().to("cpu", torch.float64).numpy()
    phi = np.asarray(features, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"features must be (N states, D features), got shape {phi.shape}")
    if phi.size == 0:
        raise ValueError(f"features is empty (shape {phi.shape})")
    if not np.isfinite(phi).all():
        raise ValueError("features contain NaN or inf; the singular values are undefined")
    s = np.linalg.svd(phi, compute_uv=False)
    return EffectiveRank(srank=srank(s, delta), erank=erank(s), delta=delta)
