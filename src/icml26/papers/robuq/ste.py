"""Straight-through rounding of scaled tokens onto a uniform grid, as one autograd node.

With ``y_c = clip(x / s, lo − ½, hi + ½)`` and ``q`` the nearest level ``k + off`` in ``[lo, hi]``,

    x̂ = s · (y_c + (q − y_c).detach())

(:func:`quantize_tokens`' training path). Built from tensor operations this is four autograd nodes
(divide, clamp, add, multiply) whose backward passes the gradient through the clip's mask:
``∂x̂/∂x = s · 1[lo − ½ <= x/s <= hi + ½] / s``. :class:`StraightThroughRound` computes the same forward
operations and the same backward ones in the same order, ``where(mask, g·s, 0) / s``, so it returns
the same bits (the tests check outputs and gradients against :func:`straight_through_reference`), with
one node that keeps a byte mask instead of the float ``x / s`` and three backward operations instead of
six (about 8 % of a quantizer's forward and backward time in a profile on one thread). The scale ``s`` gets no gradient here; a learnable clip (a step that requires
one) goes through the reference.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["StraightThroughRound", "straight_through_reference", "straight_through_round"]


def straight_through_reference(x: Tensor, step: Tensor, lo: float, hi: float, off: float) -> Tensor:
    """``x̂ = s · (y_c + (q − y_c).detach())`` from autograd's operations (any ``step``, with or without grad)."""
    # y_c = clip(x / s, range of the grid's cells)
    y = torch.clamp(x / step, lo - 0.5, hi + 0.5)
    with torch.no_grad():
        # nearest level k + offset, restricted to [lo, hi]; then round(y_c) − y_c (no graph: it is detached)
        shift = (y.detach() - off).round_().add_(off).clamp_(lo, hi).sub_(y.detach())
    # x̂ = s · (y_c + (round(y_c) − y_c).detach()): straight-through rounding
    return step * (y + shift)


class StraightThroughRound(torch.autograd.Function):
    """:func:`straight_through_reference` for a ``step`` without gradient, as one autograd node (same bits)."""

    @staticmethod
    def forward(ctx, x: Tensor, step: Tensor, lo: float, hi: float, off: float) -> Tensor:  # type: ignore[override]
        r = x / step
        y = torch.clamp(r, lo - 0.5, hi + 0.5)
        shift = (y - off).round_().add_(off).clamp_(lo, hi).sub_(y)
        # inside the clip ⇔ clamp left x/s as it was (NaN: outside, as in autograd's clamp backward)
        ctx.save_for_backward(torch.eq(y, r), step)
        return step * (y + shift)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        inside, step = ctx.saved_tensors
        # autograd's chain, in its order: multiply by s, the clamp's mask (zero outside), divide by s
        return torch.where(inside, grad * step, 0.0) / step, None, None, None, None


def straight_through_round(x: Tensor, step: Tensor, lo: float, hi: float, off: float) -> Tensor:
    """The straight-through rounding of ``x`` ``(..., d)`` with per-token ``step`` ``(..., 1)``: the fused
    node when ``step`` needs no gradient, else :func:`straight_through_reference`."""
    if step.requires_grad:
        return straight_through_reference(x, step, lo, hi, off)
    return StraightThroughRound.apply(x, step, lo, hi, off)
