"""Stage 3's losses and weights (our interpretation; see :mod:`.synthesis`).

The group-balanced class weights and loss (the mean within each group, then across groups), the
cosine loss to the targets, and the invariance penalty across nuisance interventions with its
closed form for linear maps (:func:`nuisance_covariance`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml26.common.argcheck import require_finite
from icml26.papers.zs_expand.semantics import as_views

__all__ = [
    "cosine_loss",
    "group_balanced_loss",
    "group_balanced_weights",
    "invariance_penalty",
    "nuisance_covariance",
]


def _groups_array(groups: Any, n: int, name: str = "groups") -> np.ndarray:
    g = np.asarray(groups.detach().cpu() if isinstance(groups, torch.Tensor) else groups)
    if g.ndim != 1 or len(g) != n:
        raise ValueError(f"{name} must be a 1-D array with one group per class ({n}), got shape {g.shape}")
    if g.dtype.kind not in "iu":
        if g.dtype.kind == "f" and np.all(np.isfinite(g)) and np.all(g == np.round(g)):
            g = g.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integer group labels, got dtype {g.dtype}")
    return g.astype(np.int64)


def group_balanced_weights(groups: Any) -> np.ndarray:
    """Per-class weights ``a_c = 1 / (G n_g(c))`` (they sum to 1): the mean within each group,
    then the mean across the ``G`` groups present. ``groups``: ``(C,)`` integer labels."""
    g = _groups_array(groups, len(np.asarray(groups)))
    if len(g) == 0:
        raise ValueError("groups is empty")
    labels, counts = np.unique(g, return_inverse=False, return_counts=True)
    size = dict(zip(labels.tolist(), counts.tolist()))
    return np.asarray([1.0 / (len(labels) * size[v]) for v in g.tolist()])


def group_balanced_loss(per_class_loss: torch.Tensor, groups: Any) -> torch.Tensor:
    """``(1/G) Σ_g mean_(c ∈ g) ℓ_c``: average ``per_class_loss`` ``(C,)`` within groups, then across.

    Duplicating every class of one group leaves the loss, and so every gradient, unchanged.
    NaN in ``per_class_loss`` propagates.
    """
    if not isinstance(per_class_loss, torch.Tensor) or per_class_loss.ndim != 1:
        raise TypeError("per_class_loss must be a 1-D torch.Tensor (one loss per class)")
    g = _groups_array(groups, per_class_loss.shape[0])
    weights = torch.as_tensor(group_balanced_weights(g), dtype=per_class_loss.dtype, device=per_class_loss.device)
    return (weights * per_class_loss).sum()


def cosine_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``1 − cos(ŵ_c, w_c)`` per row: ``(C,)`` from ``pred`` and ``target`` ``(C, D)``."""
    if not isinstance(pred, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("pred and target must be torch.Tensors")
    if pred.shape != target.shape or pred.ndim != 2:
        raise ValueError(f"pred {tuple(pred.shape)} and target {tuple(target.shape)} must both be (C, D)")
    return 1.0 - torch.nn.functional.cosine_similarity(pred, target, dim=-1, eps=1e-12)


def invariance_penalty(view_predictions: torch.Tensor, sample_weights: Any = None) -> torch.Tensor:
    """``Σ_c a_c mean_m Σ_k Var_n[ŵ_k(s_c^(m,n))]`` from predictions ``(C, M, N, D)`` (population
    variance over the nuisance axis ``N``; ``a_c`` uniform by default). Zero when ``N = 1``."""
    if not isinstance(view_predictions, torch.Tensor) or view_predictions.ndim != 4:
        raise TypeError("view_predictions must be a (C, M, N, D) torch.Tensor")
    var = view_predictions.var(dim=2, unbiased=False).sum(-1).mean(-1)  # (C,)
    if sample_weights is None:
        return var.mean()
    a = _class_weights(sample_weights, var.shape[0])
    a = torch.as_tensor(a, dtype=var.dtype, device=var.device)
    return (a * var).sum() / a.sum()


def _class_weights(sample_weights: Any, c: int) -> np.ndarray:
    """``sample_weights`` as ``(C,)`` float64: finite, non-negative, with a positive sum."""
    a = np.asarray(sample_weights.detach().cpu() if isinstance(sample_weights, torch.Tensor) else sample_weights)
    if a.shape != (c,) or a.dtype.kind not in "biuf":
        raise ValueError(f"sample_weights must have one weight per class ({c}), got shape {a.shape} dtype {a.dtype}")
    a = a.astype(np.float64)
    require_finite(a, "sample_weights")
    if (a < 0).any() or a.sum() <= 0:
        raise ValueError("sample_weights must be non-negative with a positive sum")
    return a


def nuisance_covariance(views: Any, sample_weights: Any = None) -> torch.Tensor:
    """``P = Σ_c a_c mean_m Cov_n(s_c^(m,·))`` ``(d, d)`` float64, so that for a linear map ``B``
    ``invariance_penalty(views @ B) = tr(Bᵀ P B)`` (population covariance; ``a_c`` uniform by default)."""
    v = as_views(views, "views").double()
    c, m, n, d = v.shape
    a = torch.full((c,), 1.0 / c, dtype=v.dtype, device=v.device) if sample_weights is None else \
        torch.as_tensor(_class_weights(sample_weights, c), device=v.device)
    a = a / a.sum()
    centred = v - v.mean(dim=2, keepdim=True)  # (C, M, N, d)
    scale = (a / (m * n))[:, None, None, None]
    return torch.einsum("cmni,cmnj->ij", centred * scale, centred)


def _class_covariances(views: torch.Tensor) -> torch.Tensor:
    """``C_c = mean_m Cov_n(s_c^(m,·))`` flattened to ``(C, d·d)`` float64 (population covariance over
    nuisances), so that :func:`nuisance_covariance` with weights ``a`` is ``(a @ C).reshape(d, d) / Σ a``."""
    v = views.double()
    centred = v - v.mean(dim=2, keepdim=True)
    covs = torch.einsum("cmni,cmnj->cij", centred, centred) / (v.shape[1] * v.shape[2])
    return covs.reshape(len(covs), -1)
