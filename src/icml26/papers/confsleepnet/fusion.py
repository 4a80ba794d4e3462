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

Every function is batched over the leading dimensions (epochs) and pure torch.
"""

from __future__ import annotations

from typing import Callable, Literal, Sequence

import torch
from torch import Tensor

from icml26.papers.confsleepnet.baselines import fuse_average, fuse_dempster
from icml26.papers.confsleepnet.opinion import Opinion, same_categories

__all__ = ["FUSION_RULES", "aggregate", "conflict", "fuse_conflict_aware", "sort_by_uncertainty"]

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


def sort_by_uncertainty(opinions: Sequence[Opinion], descending: bool = True) -> list[Opinion]:
    """The views re-ordered per epoch by uncertainty (most uncertain first by default).

    Ties keep the order the views are given in.
    """
    _check_views(opinions)
    beliefs = torch.stack([op.belief for op in opinions])  # (V, ..., K)
    uncert = torch.stack([op.uncertainty for op in opinions])  # (V, ...)
    order = torch.sort(uncert, dim=0, descending=descending, stable=True).indices
    uncert = torch.gather(uncert, 0, order)
    beliefs = torch.gather(beliefs, 0, order.unsqueeze(-1).expand_as(beliefs))
    return [Opinion(beliefs[v], uncert[v]) for v in range(len(opinions))]


def aggregate(opinions: Sequence[Opinion], rule: str | FusionRule = "conflict_aware",
              order: Literal["uncertainty", "given"] = "uncertainty") -> Opinion:
    """Fuse several views' opinions into one, epoch by epoch.

    Args:
        opinions: one :class:`Opinion` per view, all ``(..., K)`` on the same categories
            (lift coarse views first).
        rule: ``"conflict_aware"`` (the paper's), ``"dempster"`` (TMC's reduced Dempster rule),
            ``"average"`` (RCML), or any callable ``(Opinion, Opinion) -> Opinion``.
        order: ``"uncertainty"``: per epoch, fold from the most to the least uncertain view
            (the authors' ``Conflict_Aware_Combin_Plus``); ``"given"``: fold in list order
            (how ``test.py`` chains the baselines).

    Returns:
        The fused :class:`Opinion`, ``(..., K)``.
    """
    _check_views(opinions)
    if isinstance(rule, str):
        if rule not in FUSION_RULES:
            raise ValueError(f"rule={rule!r} is unknown; use one of {', '.join(FUSION_RULES)} or a callable")
        rule = FUSION_RULES[rule]
    elif not callable(rule):
        raise TypeError(f"rule must be a rule name or a callable (Opinion, Opinion) -> Opinion, got {rule!r}")
    if order == "uncertainty":
        opinions = sort_by_uncertainty(opinions)
    elif order != "given":
        raise ValueError(f"order={order!r} must be 'uncertainty' or 'given'")
    fused = opinions[0]
    for op in opinions[1:]:
        fused = rule(fused, op)
    return fused
