"""Domain-Basis Synthesis (DBS, offline; brief §1.2) [paper: the objective; the procedure is ours].

From input-only pools of candidate domains, pick a subset whose axes are quasi-orthogonal
("separation") while still spanning the embedding cloud ("coverage"):

1. axis of candidate ``k``: ``u_k = (μ_k − μ̄) / ‖μ_k − μ̄‖``, where ``μ_k`` is the mean
   embedding of its pool and ``μ̄`` the mean of the ``μ_k`` [inferred];
2. greedy selection maximising
   ``J(S) = min_{j≠k ∈ S} (1 − |cos(u_j, u_k)|) + λ · coverage(S)``, where ``coverage(S)`` is
   the fraction of the pooled (centred) embeddings' variance inside ``span{u_k : k ∈ S}``
   (the first pick maximises coverage alone; ``min`` over an empty set is 1) [ours];
3. optionally refuse a candidate whose separation from the chosen ones falls below
   ``min_separation`` (the paper reports pairwise orthogonality > 0.77 for its 6 domains).

The paper's embedding model is not named; the reproduction uses mean-pooled layer-0
states of the frozen LLM (brief §4.3).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import torch
from torch import Tensor

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite

__all__ = ["Basis", "basis_coverage", "domain_axes", "synthesize_basis"]


@dataclasses.dataclass(frozen=True)
class Basis:
    """The result of :func:`synthesize_basis`."""

    selected: tuple[int, ...]
    """Indices of the chosen candidates, in the order they were picked."""
    names: tuple[str, ...]
    """Their names (the mapping's keys, or ``"0"``, ``"1"`` … for a sequence)."""
    axes: Tensor
    """``(n_axes, d)`` unit axes of the chosen domains, in ``selected`` order."""
    all_axes: Tensor
    """``(C, d)`` unit axes of every candidate."""
    separation: float
    """``min_{j≠k} (1 − |cos(u_j, u_k)|)`` over the chosen axes (1 for a single axis)."""
    coverage: float
    """Fraction of the pooled centred variance inside the span of the chosen axes."""


def _pools(domain_embeddings) -> tuple[list[str], list[Tensor]]:
    if isinstance(domain_embeddings, Mapping):
        names = [str(k) for k in domain_embeddings]
        pools = list(domain_embeddings.values())
    elif isinstance(domain_embeddings, Sequence) and not isinstance(domain_embeddings, (str, bytes)):
        names = [str(i) for i in range(len(domain_embeddings))]
        pools = list(domain_embeddings)
    else:
        raise TypeError("domain_embeddings must be a mapping {name: (n_k, d) array} or a sequence of (n_k, d) arrays")
    if not pools:
        raise ValueError("domain_embeddings is empty; give at least one candidate domain")
    out = []
    for name, pool in zip(names, pools):
        t = torch.as_tensor(pool, dtype=torch.float64)
        if t.dim() != 2 or t.shape[0] < 1:
            raise ValueError(f"domain {name!r}: embeddings must be a non-empty (n_k, d) array, got {tuple(t.shape)}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"domain {name!r}: embeddings contain NaN or inf")
        out.append(t)
    if len({t.shape[1] for t in out}) != 1:
        raise ValueError(f"domain embeddings have different widths {[t.shape[1] for t in out]}")
    return names, out


def domain_axes(domain_embeddings) -> Tensor:
    """``(C, d)``: ``u_k = (μ_k − μ̄)/‖μ_k − μ̄‖`` for every candidate (a zero vector stays zero)."""
    _, pools = _pools(domain_embeddings)
    means = torch.stack([p.mean(dim=0) for p in pools])
    centred = means - means.mean(dim=0)
    # u_k = (μ_k − μ̄) / ‖μ_k − μ̄‖
    return centred / centred.norm(dim=1, keepdim=True).clamp_min(1e-12)


def basis_coverage(embeddings: Tensor, axes: Tensor) -> float:
    """Fraction of the centred variance of ``embeddings`` ``(n, d)`` inside ``span(axes)`` ``(m, d)``."""
    x = as_tensor(embeddings, "embeddings", dtype=torch.float64)
    a = as_tensor(axes, "axes", dtype=torch.float64)
    if x.dim() != 2 or x.shape[0] < 1:
        raise ValueError(f"embeddings must be a non-empty (n, d) array, got shape {tuple(x.shape)}")
    if a.dim() != 2 or a.shape[0] < 1 or a.shape[1] != x.shape[1]:
        raise ValueError(f"axes must be (m, d={x.shape[1]}), got shape {tuple(a.shape)}")
    require_finite(x, "embeddings")
    require_finite(a, "axes")
    x = x - x.mean(dim=0)
    total = float(x.pow(2).sum())
    if total <= 0:
        return 0.0
    q, r = torch.linalg.qr(a.T)  # orthonormal basis of span(axes), (d, m)
    keep = r.diagonal().abs() > 1e-10
    q = q[:, keep]
    return float((x @ q).pow(2).sum()) / total


def _separation(axes: Tensor) -> float:
    if axes.shape[0] < 2:
        return 1.0
    cos = (axes @ axes.T).abs()
    off = cos[~torch.eye(axes.shape[0], dtype=torch.bool)]
    return float(1.0 - off.max())


def synthesize_basis(domain_embeddings, n_axes: int, coverage_weight: float = 0.5, *,
                     min_separation: float | None = None) -> Basis:
    """Greedy DBS: choose ``n_axes`` quasi-orthogonal domain axes that cover the embeddings.

    Args:
        domain_embeddings: ``{name: (n_k, d)}`` or a sequence of ``(n_k, d)`` arrays, one pool
            per candidate domain (e.g. mean-pooled layer-0 states of its inputs).
        n_axes: how many domains to keep (``1 <= n_axes <= C``).
        coverage_weight: ``λ`` in ``J(S) = min(1 − |cos|) + λ·coverage(S)`` (``>= 0``).
        min_separation: if given, candidates whose ``1 − |cos|`` to a chosen axis falls below
            it are never chosen; ``ValueError`` if fewer than ``n_axes`` remain.

    Returns:
        A :class:`Basis`. Ties go to the lower index.
    """
    names, pools = _pools(domain_embeddings)
    n_axes = check_int(n_axes, "n_axes", low=1, high=len(pools))
    coverage_weight = check_real(coverage_weight, "coverage_weight", low=0.0)
    if min_separation is not None:
        min_separation = check_real(min_separation, "min_separation", low=0.0, high=1.0)
    axes = domain_axes(dict(zip(names, pools)))
    pooled = torch.cat(pools)
    chosen: list[int] = []
    while len(chosen) < n_axes:
        best, best_score = None, -float("inf")
        for j in range(len(pools)):
            if j in chosen or float(axes[j].norm()) == 0.0:
                continue
            trial = axes[chosen + [j]]
            sep = _separation(trial)
            if min_separation is not None and len(chosen) > 0 and sep < min_separation:
                continue
            score = (sep if chosen else 1.0) + coverage_weight * basis_coverage(pooled, trial)
            if score > best_score + 1e-12:
                best, best_score = j, score
        if best is None:
            raise ValueError(f"only {len(chosen)} of n_axes={n_axes} candidates satisfy min_separation="
                             f"{min_separation}; lower min_separation or n_axes")
        chosen.append(best)
    chosen_axes = axes[chosen].float()
    return Basis(selected=tuple(chosen), names=tuple(names[i] for i in chosen), axes=chosen_axes,
                 all_axes=axes.float(), separation=_separation(axes[chosen]),
                 coverage=basis_coverage(pooled, axes[chosen]))
