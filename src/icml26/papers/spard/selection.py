"""Relevance–diversity DPP selection of safety data (SPARD, §"data selection"; authors' ``DPPSelector``).

Steps of :func:`dpp_select`:

1. cosine similarities between the candidate (safety-pool) embeddings ``e_i`` and the
   reference (user fine-tuning set) embeddings ``r_j``;
2. relevance ``q_i = (max_j cos(e_i, r_j))₊^β`` (``β`` = ``power``, authors' default 4;
   negative cosines clipped at 0, ours: the authors' ``cos^β`` is sign-indefinite for odd ``β``);
3. kernel ``L = diag(q) S diag(q) + ε I`` with ``S_ik = cos(e_i, e_k)``;
4. :func:`greedy_map` picks ``k`` items that greedily maximise ``log det L_Y``
   (the fast greedy MAP of Chen, Zhang & Zhou, NeurIPS 2018, with incremental Cholesky).

Baselines at the same ``k``: :func:`random_select` and :func:`topk_relevance`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite

__all__ = [
    "GAIN_FLOOR",
    "TIE_RTOL",
    "Selection",
    "cosine_matrix",
    "dpp_kernel",
    "dpp_select",
    "greedy_map",
    "random_select",
    "relevance",
    "topk_relevance",
]

GAIN_FLOOR = 1e-6
"""Schur-complement gains below this are clamped to it (authors' code: ``gains[gains < eps] = eps``)."""
TIE_RTOL = 1e-12
"""Gains within this relative distance of the largest are ties, and the first index among them wins:
rounding alone separates equal gains (a normalised embedding's self-cosine is 1 or 1 - 2.2e-16), and
``argmax`` would otherwise hand the pick to whichever item rounded up."""


@dataclasses.dataclass(frozen=True)
class Selection:
    """A chosen subset of candidates.

    Attributes:
        order: ``(k,)`` int64 candidate indices in the order they were picked.
        logdet: ``log det L_Y`` of the chosen set under the DPP kernel (``nan`` for selectors
            that build no kernel unless one is given).
        quality: ``(n,)`` float64 relevance ``q`` of every candidate (``None`` for random).
    """

    order: np.ndarray
    logdet: float
    quality: np.ndarray | None = None

    def __len__(self) -> int:
        return int(len(self.order))


def _as_matrix(x: Any, name: str) -> np.ndarray:
    """``x`` as a finite float64 NumPy matrix ``(n, d)``."""
    t = as_tensor(x, name)
    if t.ndim != 2:
        raise ValueError(f"{name} must be a matrix (n, d), got shape {tuple(t.shape)}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)}); pass at least one row and one column")
    arr = t.detach().to("cpu", torch.float64).numpy()
    require_finite(arr, name)
    return arr


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name} has an all-zero row (row {int(np.argmin(norms[:, 0]))}); its cosine is undefined")
    return x / norms


def cosine_matrix(a: Any, b: Any | None = None) -> np.ndarray:
    """Cosine similarities ``S_ij = cos(a_i, b_j)``, float64 ``(n_a, n_b)`` (``b = a`` when omitted).

    ``a``: ``(n_a, d)``, ``b``: ``(n_b, d)`` tensors or arrays; an all-zero row is refused.
    """
    return _cosine(_as_matrix(a, "a"), None if b is None else _as_matrix(b, "b"), "a", "b")


def _cosine(a: np.ndarray, b: np.ndarray | None, name_a: str, name_b: str) -> np.ndarray:
    """:func:`cosine_matrix` of validated matrices; errors name the caller's arguments."""
    ua = _unit_rows(a, name_a)
    ub = ua if b is None else _unit_rows(b, name_b)
    if ua.shape[1] != ub.shape[1]:
        raise ValueError(f"{name_a} has width {ua.shape[1]} but {name_b} has width {ub.shape[1]}; "
                         "embed both with the same model")
    return np.clip(ua @ ub.T, -1.0, 1.0)


def relevance(candidates: Any, reference: Any, *, power: float = 4.0) -> np.ndarray:
    """Relevance ``q_i = (max_j cos(e_i, r_j))₊^power`` of each candidate to the reference set.

    Args:
        candidates: ``(n, d)`` embeddings of the pool.
        reference: ``(m, d)`` embeddings of the reference (the user's fine-tuning set).
        power: ``β ≥ 0``; ``0`` gives ``q = 1`` everywhere (pure diversity).
    """
    power = check_real(power, "power", low=0.0)
    cos = _cosine(_as_matrix(candidates, "candidates"), _as_matrix(reference, "reference"), "candidates", "reference")
    best = cos.max(axis=1)
    # q_i = (max_j cos(e_i, r_j))_+^β   (clipped at 0: an odd β would flip the sign of dissimilar items)
    return np.power(np.maximum(best, 0.0), power)


def dpp_kernel(candidates: Any, quality: Any, *, eps: float = 1e-6) -> np.ndarray:
    """The L-ensemble kernel ``L = diag(q) S diag(q) + ε I`` (float64 ``(n, n)``).

    ``candidates``: ``(n, d)``; ``quality``: ``(n,)`` non-negative.
    """
    eps = check_real(eps, "eps", low=0.0)
    sim = _cosine(_as_matrix(candidates, "candidates"), None, "candidates", "candidates")
    q = as_tensor(quality, "quality").detach().to("cpu", torch.float64).numpy().reshape(-1)
    require_finite(q, "quality")
    if q.shape[0] != sim.shape[0]:
        raise ValueError(f"quality has {q.shape[0]} entries for {sim.shape[0]} candidates")
    if np.any(q < 0):
        raise ValueError("quality must be non-negative")
    # L = diag(q) S diag(q) + ε I
    return q[:, None] * sim * q[None, :] + eps * np.eye(len(q))


def _check_kernel(kernel: Any, check_psd: bool) -> np.ndarray:
    t = as_tensor(kernel, "kernel")
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"kernel must be a square matrix (n, n), got shape {tuple(t.shape)}")
    if t.shape[0] == 0:
        raise ValueError("kernel is empty; pass at least one candidate")
    dtype_eps = float(torch.finfo(t.dtype).eps)
    L = t.detach().to("cpu", torch.float64).numpy()
    require_finite(L, "kernel")
    scale = float(np.abs(L).max()) or 1.0
    tol = 10.0 * L.shape[0] * dtype_eps * scale
    if np.abs(L - L.T).max() > tol:
        raise ValueError("kernel is not symmetric; a DPP kernel must be a symmetric PSD matrix (use (L + L.T) / 2)")
    if check_psd:
        lowest = float(np.linalg.eigvalsh((L + L.T) / 2)[0])
        if lowest < -tol:
            raise ValueError(f"kernel is not positive semi-definite (smallest eigenvalue {lowest:.3g}); "
                             "build it as a Gram matrix, e.g. diag(q) S diag(q) + eps*I")
    return (L + L.T) / 2


def greedy_map(kernel: Any, k: int, *, check_psd: bool = True) -> tuple[np.ndarray, float]:
    """Greedy MAP inference for a DPP: ``k`` items that greedily maximise ``log det L_Y``.

    The fast greedy of Chen et al. (2018) with incremental Cholesky, as in the authors'
    ``DPPSelector``: start at ``argmax_i L_ii``; each step adds the item with the largest
    Schur-complement gain ``d_i² = L_ii − ‖c_i‖²`` (``c_i`` solves ``C c_i = L_{Y,i}``,
    ``C`` the Cholesky factor of ``L_Y``), gains clamped at :data:`GAIN_FLOOR`. The first
    index wins ties, where gains within a relative :data:`TIE_RTOL` of the largest tie (equal
    gains differ by rounding, e.g. near-duplicate normalised embeddings). ``O(n k²)`` time,
    ``O(n k)`` memory.

    Args:
        kernel: ``(n, n)`` symmetric PSD matrix (tensor or array; computed in float64).
        k: items to pick, ``1 ≤ k ≤ n``.
        check_psd: verify positive semi-definiteness with an eigendecomposition (``O(n³)``;
            turn off for very large pools you built as Gram matrices).

    Returns:
        ``(order, logdet)``: ``(k,)`` int64 indices in pick order and ``Σ log gains``
        (``= log det L_Y`` while no gain was clamped).
    """
    L = _check_kernel(kernel, check_psd)
    n = L.shape[0]
    k = check_int(k, "k", low=1)
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} candidates; lower k or enlarge the pool")
    gains = np.diag(L).copy()  # d_i² = L_ii before any pick
    cho = np.zeros((k, n))  # row t holds e_t,i: the t-th entry of every c_i
    order = np.empty(k, dtype=np.int64)
    chosen = np.zeros(n, dtype=bool)
    logdet = 0.0
    for t in range(k):
        masked = np.where(chosen, -np.inf, np.maximum(gains, GAIN_FLOOR))
        top = float(masked.max())
        # ties: every gain within a relative TIE_RTOL of the largest; np.argmax returns the first of them
        j = int(np.argmax(masked >= top - TIE_RTOL * abs(top)))
        gain = float(masked[j])
        order[t], chosen[j] = j, True
        logdet += math.log(gain)
        if t + 1 == k:
            break
        # e_t,i = (L_ji − <c_j, c_i>) / d_j ;  d_i² ← d_i² − e_t,i²
        e = (L[j] - cho[:t, j] @ cho[:t]) / math.sqrt(gain)
        cho[t] = e
        gains = gains - e * e
    return order, float(logdet)


def _subset_logdet(kernel: np.ndarray | None, order: np.ndarray) -> float:
    if kernel is None:
        return float("nan")
    sign, value = np.linalg.slogdet(kernel[np.ix_(order, order)])
    return float(value) if sign > 0 else float("-inf")


def _check_k(k: Any, n: int) -> int:
    k = check_int(k, "k", low=1)
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} candidates; lower k or enlarge the pool")
    return k


def dpp_select(candidates: Any, reference: Any, k: int, *, power: float = 4.0, eps: float = 1e-6) -> Selection:
    """SPARD's relevance–diversity selection of ``k`` safety examples.

    Args:
        candidates: ``(n, d)`` embeddings of the safety pool (tensor or array).
        reference: ``(m, d)`` embeddings of the reference set; the authors use the user's
            fine-tuning set *including* any harmful examples in it.
        k: subset size (the authors: ``⌊p · |user set|⌋``), ``1 ≤ k ≤ n``.
        power: relevance exponent ``β ≥ 0`` (authors: 4; README: robust in [4, 10]).
        eps: ridge ``ε`` added to the kernel's diagonal.

    Returns:
        :class:`Selection` with the pick order, ``log det L_Y`` and the relevance ``q``.
    """
    cand = _as_matrix(candidates, "candidates")
    k = _check_k(k, cand.shape[0])
    q = relevance(cand, reference, power=power)
    kernel = dpp_kernel(cand, q, eps=eps)
    order, logdet = greedy_map(kernel, k, check_psd=False)  # a Gram matrix plus a ridge: PSD by construction
    return Selection(order=order, logdet=logdet, quality=q)


def random_select(candidates: Any, reference: Any, k: int, *, seed: int | np.random.Generator = 0,
                  power: float = 4.0, eps: float = 1e-6) -> Selection:
    """Baseline: ``k`` candidates uniformly without replacement (authors' ``RandomSafeDataSelector``).

    ``reference`` is not used for the choice; with it the result also reports the DPP
    kernel's ``log det`` of the random subset and ``q`` (same ``power``, ``eps``), so that
    subsets are comparable. ``seed``: an int or a NumPy generator.
    """
    cand = _as_matrix(candidates, "candidates")
    k = _check_k(k, cand.shape[0])
    if isinstance(seed, np.random.Generator):
        rng = seed
    else:
        rng = np.random.default_rng(check_int(seed, "seed", low=0))
    order = rng.choice(cand.shape[0], size=k, replace=False).astype(np.int64)
    q = relevance(cand, reference, power=power)
    return Selection(order=order, logdet=_subset_logdet(dpp_kernel(cand, q, eps=eps), order), quality=q)


def topk_relevance(candidates: Any, reference: Any, k: int, *, power: float = 4.0, eps: float = 1e-6) -> Selection:
    """Baseline: the ``k`` most relevant candidates (largest ``q``, first index on ties), no diversity."""
    cand = _as_matrix(candidates, "candidates")
    k = _check_k(k, cand.shape[0])
    q = relevance(cand, reference, power=power)
    order = np.argsort(-q, kind="stable")[:k].astype(np.int64)
    return Selection(order=order, logdet=_subset_logdet(dpp_kernel(cand, q, eps=eps), order), quality=q)
