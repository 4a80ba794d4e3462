"""Conflict-aware fusion of opinions (ConfSleepNet, Tian et al., ICML 2026).

Pairwise rule (the authors' ``Conflict_Aware_Combin_two``), for opinions
``(b1, u1)`` and ``(b2, u2)`` over the same ``K`` categories:

1. conflict ``C = 1 - <b1, b2> / (sum b1 * sum b2) = 1 - <p1, p2>`` with the projected
   distributions ``p_i = b_i / (1 - u_i)``: the probability that independent draws from
   them disagree, ``0 <= C <= 1``;
2. ``u = (1 - C) u1 u2 + C * 2 u1 u2 / (u1 + u2)``;
3. ``b = [u1 b2 + u2 b1 + (1 - C) u1 u2 (b1 + b2)] / (u1 + u2)``.

So ``CA = C * RCML + (1 - C) * R0``: agreeing opinions fuse almost like Dempster's rule
(uncertainty shrinks to ``u1 u2``), conflicting ones like the RCML average (uncertainty
stays at the harmonic mean), which is what lets the fused ``u`` flag conflicts.

Multi-view aggregation (``Conflict_Aware_Combin_Plus``), per epoch:

1. sort the views by uncertainty, most uncertain first;
2. fold left, ``CA(CA(CA(v1, v2), v3), v4)``: the most certain view is fused last (the
   rule is not associative, so the order matters);
3. predict ``argmax b``.

Conflict in the common category space (ours, off by default). On lifted opinions the
authors' ``C`` is nearly blind: an EEG opinion sure of N2 and an EOG opinion sure of NREM
(lifted: N1, N2, N3 a third each) agree, yet ``C = 1 - <p1, p2> = 2/3``. With
``aggregate(..., label_maps=...)`` the conflict-aware rule instead uses

    ``C_common = 1 - p1^T M p2``,

where ``M[i, j] = 1`` when stages ``i`` and ``j`` fall in the same category of the *common*
category space of the two operands (the finest partition of the stages that both operands'
categories are unions of: the join of their partitions; for a five-class and a hybrid view,
the hybrid W / NREM / REM), so ``C_common`` is the probability that independent draws from
``p1`` and ``p2`` land in different common categories. ``M = I`` gives the authors' ``C``.
A fused opinion resolves what either operand resolves (the meet of the partitions).

Dempster's rule gets the same conflict (ours): ``kappa_common = sum_{i,j} b1_i (1 - M_ij) b2_j``
replaces ``kappa = sum_{i != j} b1_i b2_j``, and the mass of pairs that agree in the common
space but name different stages is split between the two stages, so

    ``b_k = [(b1_k (M b2)_k + b2_k (M b1)_k) / 2 + b1_k u2 + b2_k u1] / (1 - kappa_common)``,
    ``u = u1 u2 / (1 - kappa_common)``;

the masses still sum to one, and ``M = I`` gives TMC's reduced Dempster rule. Both rules
then see one conflict, so a comparison of them isolates the combination, not the conflict.

Every function is batched over the leading dimensions (epochs) and pure torch.
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Sequence

import torch
from torch import Tensor

from icml26.common.argcheck import require_finite
from icml26.papers.confsleepnet.baselines import fuse_average, fuse_dempster
from icml26.papers.confsleepnet.opinion import Opinion, same_categories

__all__ = ["FUSION_RULES", "aggregate", "common_partition", "conflict", "conflict_in_common_space",
           "fuse_conflict_aware", "partition_matrix", "sort_by_uncertainty"]

FusionRule = Callable[[Opinion, Opinion], Opinion]


def conflict(op1: Opinion, op2: Opinion) -> Tensor:
    """Conflict degree ``C`` in ``[0, 1]``, ``(...)``.

    A vacuous opinion (no belief mass) makes no claim, so it conflicts with nothing:
    ``C = 0`` there, and then ``fuse_conflict_aware(vacuous, op) == op``.
    """
    same_categories(op1, op2)
    mass = op1.belief.sum(-1) * op2.belief.sum(-1)
    agreement = (op1.belief * op2.belief).sum(-1)
    tiny = torch.finfo(mass.dtype).tiny
    # C = 1 - sum_k b1_k b2_k / (sum b1 * sum b2)
    value = 1 - agreement / mass.clamp_min(tiny)
    return torch.where(mass > 0, value, torch.zeros_like(value)).clamp(0.0, 1.0)


def partition_matrix(label_map: Sequence[int], *, dtype: torch.dtype = torch.float32,
                     device: torch.device | str | None = None) -> Tensor:
    """``M (K, K)``: ``M[i, j] = 1`` when a view with ``label_map`` puts stages ``i`` and ``j`` in one
    category (``label_map[s]`` = category of stage ``s``; ``range(K)`` gives the identity)."""
    try:
        labels = torch.as_tensor([int(c) for c in label_map], device=device)
    except (TypeError, ValueError):
        raise TypeError(f"label_map={label_map!r} must be a sequence of category indices") from None
    if labels.numel() == 0 or bool((labels < 0).any()):
        raise ValueError(f"label_map={tuple(label_map)!r} must list a category index >= 0 per stage")
    return (labels[:, None] == labels[None, :]).to(dtype)


def common_partition(m1: Tensor, m2: Tensor) -> Tensor:
    """The join of two partitions given as ``(..., K, K)`` same-category matrices: stages ``i`` and
    ``j`` share a common category when a chain of categories of either partition links them
    (the transitive closure of ``m1 OR m2``). Returns ``(..., K, K)`` 0/1 in ``m1``'s dtype."""
    for name, m in (("m1", m1), ("m2", m2)):
        if not isinstance(m, Tensor):
            raise TypeError(f"{name} must be a (..., K, K) tensor (see partition_matrix), got {type(m).__name__}")
        require_finite(m, name, hint="a partition matrix holds 0/1 (see partition_matrix)")
    if m1.shape[-2:] != m2.shape[-2:] or m1.shape[-1] != m1.shape[-2]:
        raise ValueError(f"partition matrices must be (..., K, K) alike, got {tuple(m1.shape)} and {tuple(m2.shape)}")
    return _join(m1, m2)


def _join(m1: Tensor, m2: Tensor) -> Tensor:
    """:func:`common_partition` of checked partition matrices."""
    joined = ((m1 > 0) | (m2 > 0)).to(m1.dtype)
    # closure by repeated squaring: paths of length <= 2^r after r squarings
    for _ in range(max(1, math.ceil(math.log2(max(2, m1.shape[-1]))))):
        joined = (joined @ joined > 0).to(m1.dtype)
    return joined


def conflict_in_common_space(op1: Opinion, op2: Opinion, partition1: Tensor, partition2: Tensor) -> Tensor:
    """``C_common = 1 - p1^T M p2`` in ``[0, 1]``, ``(...)`` (ours; see the module docstring).

    ``partition1`` / ``partition2``: ``(K, K)`` or ``(..., K, K)`` same-category matrices of the
    operands (:func:`partition_matrix` of each view's ``label_map``); ``M`` is their
    :func:`common_partition`; ``p_i = b_i / sum b_i``. Identity partitions give :func:`conflict`;
    a vacuous opinion conflicts with nothing (``C = 0``).
    """
    same_categories(op1, op2)
    k = op1.num_classes
    for name, m in (("partition1", partition1), ("partition2", partition2)):
        if not isinstance(m, Tensor) or m.shape[-2:] != (k, k):
            raise ValueError(f"{name} must be a (..., {k}, {k}) tensor (see partition_matrix), "
                             f"got {tuple(getattr(m, 'shape', ()))}")
        require_finite(m, name, hint="a partition matrix holds 0/1 (see partition_matrix)")
    return _conflict_in_common_space(op1, op2, partition1, partition2)


def _conflict_in_common_space(op1: Opinion, op2: Opinion, partition1: Tensor, partition2: Tensor) -> Tensor:
    """:func:`conflict_in_common_space` of checked operands (the fold of :func:`aggregate`)."""
    k = op1.num_classes
    b1, b2 = op1.belief, op2.belief
    common = _join(partition1.to(b1), partition2.to(b1))
    mass = b1.sum(-1) * b2.sum(-1)
    # sum_{i,j} b1_i M_ij b2_j
    agreement = torch.einsum("...i,...ij,...j->...", b1, common.expand(*b1.shape[:-1], k, k), b2)
    tiny = torch.finfo(mass.dtype).tiny
    # C_common = 1 - p1^T M p2
    value = 1 - agreement / mass.clamp_min(tiny)
    return torch.where(mass > 0, value, torch.zeros_like(value)).clamp(0.0, 1.0)


def _dempster_in_common_space(op1: Opinion, op2: Opinion, partition1: Tensor, partition2: Tensor) -> Opinion:
    """Dempster's rule with the conflict in the common category space (module docstring)."""
    k = op1.num_classes
    b1, b2 = op1.belief, op2.belief
    u1, u2 = op1.uncertainty.unsqueeze(-1), op2.uncertainty.unsqueeze(-1)
    common = _join(partition1.to(b1), partition2.to(b1)).expand(*b1.shape[:-1], k, k)
    m_b2 = torch.einsum("...ij,...j->...i", common, b2)
    m_b1 = torch.einsum("...ij,...j->...i", common, b1)
    # kappa_common = sum b1 * sum b2 - b1^T M b2
    kappa = (b1.sum(-1) * b2.sum(-1) - (b1 * m_b2).sum(-1)).unsqueeze(-1)
    norm = 1 - kappa
    # b = [(b1 * M b2 + b2 * M b1) / 2 + b1 u2 + b2 u1] / (1 - kappa_common);  u = u1 u2 / (1 - kappa_common)
    b = ((b1 * m_b2 + b2 * m_b1) / 2 + b1 * u2 + b2 * u1) / norm
    u = (u1 * u2 / norm).squeeze(-1)
    return Opinion(b, u)


def fuse_conflict_aware(op1: Opinion, op2: Opinion, *,
                        conflict_fn: Callable[[Opinion, Opinion], Tensor] = conflict) -> Opinion:
    """The conflict-aware rule ``CA(op1, op2)`` (symmetric, not associative).

    ``conflict_fn`` gives ``C`` (default :func:`conflict`, the authors' definition); it is
    pluggable because the paper's theory section may define ``C`` differently.
    """
    same_categories(op1, op2)
    b1, b2 = op1.belief, op2.belief
    u1, u2 = op1.uncertainty, op2.uncertainty
    c = conflict_fn(op1, op2)
    u_sum = u1 + u2
    u_prod = u1 * u2
    # u = (1 - C) u1 u2 + C * 2 u1 u2 / (u1 + u2)
    u = (1 - c) * u_prod + c * 2 * u_prod / u_sum
    # b = [u1 b2 + u2 b1 + (1 - C) u1 u2 (b1 + b2)] / (u1 + u2)
    b = (u1.unsqueeze(-1) * b2 + u2.unsqueeze(-1) * b1
         + ((1 - c) * u_prod).unsqueeze(-1) * (b1 + b2)) / u_sum.unsqueeze(-1)
    return Opinion(b, u)


#: The pairwise rules by name: the paper's and the two baselines of the authors' ``test.py``.
FUSION_RULES: dict[str, FusionRule] = {
    "conflict_aware": fuse_conflict_aware,
    "dempster": fuse_dempster,
    "average": fuse_average,
}


def _check_views(opinions: Sequence[Opinion]) -> None:
    if isinstance(opinions, Opinion) or not isinstance(opinions, (list, tuple)):
        raise TypeError("opinions must be a list of Opinion objects, one per view")
    if len(opinions) == 0:
        raise ValueError("opinions is empty: give at least one view's Opinion")
    for i, op in enumerate(opinions):
        if not isinstance(op, Opinion):
            raise TypeError(f"opinions[{i}] must be an Opinion, got {type(op).__name__}")
    for op in opinions[1:]:
        same_categories(opinions[0], op)
        if op.uncertainty.shape != opinions[0].uncertainty.shape:
            raise ValueError("every view's opinion must have the same batch shape")


def _uncertainty_order(opinions: Sequence[Opinion], descending: bool) -> Tensor:
    uncert = torch.stack([op.uncertainty for op in opinions])  # (V, ...)
    return torch.sort(uncert, dim=0, descending=descending, stable=True).indices


def _gather(stacked: Tensor, order: Tensor) -> Tensor:
    index = order.reshape(order.shape + (1,) * (stacked.ndim - order.ndim)).expand_as(stacked)
    return torch.gather(stacked, 0, index)


def sort_by_uncertainty(opinions: Sequence[Opinion], descending: bool = True) -> list[Opinion]:
    """The views re-ordered per epoch by uncertainty (most uncertain first by default).

    Ties keep the order the views are given in.
    """
    _check_views(opinions)
    order = _uncertainty_order(opinions, descending)
    beliefs = _gather(torch.stack([op.belief for op in opinions]), order)  # (V, ..., K)
    uncert = _gather(torch.stack([op.uncertainty for op in opinions]), order)  # (V, ...)
    return [Opinion(beliefs[v], uncert[v]) for v in range(len(opinions))]


def aggregate(opinions: Sequence[Opinion], rule: str | FusionRule = "conflict_aware",
              order: Literal["uncertainty", "given"] = "uncertainty", *,
              label_maps: Sequence[Sequence[int]] | None = None) -> Opinion:
    """Fuse several views' opinions into one, epoch by epoch.

    Args:
        opinions: one :class:`Opinion` per view, all ``(..., K)`` on the same categories
            (lift coarse views first).
        rule: ``"conflict_aware"`` (the paper's), ``"dempster"`` (TMC's reduced Dempster rule),
            ``"average"`` (RCML), or any callable ``(Opinion, Opinion) -> Opinion``.
        order: ``"uncertainty"``: per epoch, fold from the most to the least uncertain view
            (the authors' ``Conflict_Aware_Combin_Plus``); ``"given"``: fold in list order
            (how ``test.py`` chains the baselines).
        label_maps: ``None`` (default): the authors' conflict, over the ``K`` stages. One
            ``label_map`` per view (e.g. ``FIVE_TO_THREE`` for a lifted hybrid view,
            ``range(5)`` for a five-class one): the conflict-aware rule computes its conflict
            in the common category space of the two operands
            (:func:`conflict_in_common_space`, ours); with ``rule="dempster"`` Dempster's
            rule uses the same conflict (module docstring); not with other rules.

    Returns:
        The fused :class:`Opinion`, ``(..., K)``.
    """
    _check_views(opinions)
    if label_maps is not None:
        if rule not in ("conflict_aware", fuse_conflict_aware, "dempster", fuse_dempster):
            raise ValueError("label_maps (the conflict in the common category space) applies to "
                             "rule='conflict_aware' or 'dempster' only")
        common_dempster = rule in ("dempster", fuse_dempster)
        if isinstance(label_maps, (str, bytes)) or len(label_maps) != len(opinions):
            raise ValueError(f"label_maps must give one label_map per view ({len(opinions)}), got {label_maps!r}")
    if isinstance(rule, str):
        if rule not in FUSION_RULES:
            raise ValueError(f"rule={rule!r} is unknown; use one of {', '.join(FUSION_RULES)} or a callable")
        rule = FUSION_RULES[rule]
    elif not callable(rule):
        raise TypeError(f"rule must be a rule name or a callable (Opinion, Opinion) -> Opinion, got {rule!r}")
    if order not in ("uncertainty", "given"):
        raise ValueError(f"order={order!r} must be 'uncertainty' or 'given'")
    partitions = None
    if label_maps is not None:
        k = opinions[0].num_classes
        ref = opinions[0].belief
        mats = [partition_matrix(m, dtype=ref.dtype, device=ref.device) for m in label_maps]
        if any(m.shape != (k, k) for m in mats):
            raise ValueError(f"every label_map must cover the opinions' {k} categories (one entry per stage)")
        batch = ref.shape[:-1]
        partitions = torch.stack([m.expand(*batch, k, k) for m in mats])  # (V, ..., K, K)
    if order == "uncertainty":
        if partitions is not None:
            partitions = _gather(partitions, _uncertainty_order(opinions, True))
        opinions = sort_by_uncertainty(opinions)
    fused = opinions[0]
    if partitions is None:
        for op in opinions[1:]:
            fused = rule(fused, op)
        return fused
    part = partitions[0]
    for v, op in enumerate(opinions[1:], start=1):
        other = partitions[v]
        if common_dempster:
            fused = _dempster_in_common_space(fused, op, part, other)
        else:
            fused = fuse_conflict_aware(
                fused, op, conflict_fn=lambda a, b, m1=part, m2=other: _conflict_in_common_space(a, b, m1, m2))
        # the fused opinion resolves what either operand resolves: the meet of the partitions
        part = part * other
    return fused
