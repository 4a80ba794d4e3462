"""The curvature regulariser: an auxiliary loss that straightens hidden-state trajectories.

``L = CE + lambda * mean_{l in layers} L_curv(hidden_states[l])`` with
``L_curv = mean_{b,t} (1 - cos(v_{t+1}, v_t))`` over valid step pairs (the precursor code's
``loss_utils.curvature``; ``1 - cos`` rather than the angle because ``arccos`` has an
infinite gradient at a straight line). :class:`CurvatureLoss` plugs into
:func:`icml26.common.tiny_lm.pretrain` as ``aux_loss`` or into any training loop that
runs the model with ``output_hidden_states=True``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch
from torch import Tensor

from icml26.common.argcheck import check_int, check_real

__all__ = ["CurvatureLoss", "curvature_regularizer"]


def curvature_regularizer(hidden: Tensor, mask: Tensor | None = None, *, eps: float = 1e-8) -> Tensor:
    """Mean ``1 - cos`` between consecutive steps of the trajectories.

    Args:
        hidden: ``(batch, T, d)`` (or ``(T, d)``), ``T >= 3``; differentiable.
        mask: ``(batch, T)`` (or ``(T,)``), true/1 at real tokens; a term counts only when
            its three points ``t, t+1, t+2`` are all real. ``None``: every token is real.
        eps: floor on ``|v_t| |v_{t+1}|`` so zero-length steps give finite values and gradients.

    Returns:
        A scalar in ``[0, 2]``; 0 for straight trajectories.
    """
    if not isinstance(hidden, Tensor) or hidden.ndim < 2 or hidden.shape[-2] < 3:
        raise ValueError("hidden must be a (batch, T, d) or (T, d) tensor with T >= 3")
    if not hidden.is_floating_point():
        raise TypeError(f"hidden must be floating point, got {hidden.dtype}")
    check_real(eps, "eps", low=0.0, low_open=True)
    steps = hidden[..., 1:, :] - hidden[..., :-1, :]  # v_t = x_{t+1} - x_t
    a, b = steps[..., :-1, :], steps[..., 1:, :]
    # cos(v_{t+1}, v_t) = <v_t, v_{t+1}> / max(|v_t| |v_{t+1}|, eps), with norms that stay differentiable at 0
    norm_a = (a * a).sum(-1).clamp_min(eps**2).sqrt()
    norm_b = (b * b).sum(-1).clamp_min(eps**2).sqrt()
    cos = (a * b).sum(-1) / (norm_a * norm_b).clamp_min(eps)
    terms = 1.0 - cos  # (batch, T-2)
    if mask is None:
        return terms.mean()
    if mask.shape != hidden.shape[:-1]:
        raise ValueError(f"mask has shape {tuple(mask.shape)}; it must match hidden's {tuple(hidden.shape[:-1])}")
    m = mask.to(torch.bool)
    valid = m[..., :-2] & m[..., 1:-1] & m[..., 2:]
    count = valid.sum()
    if int(count) == 0:
        return terms.sum() * 0.0
    return torch.where(valid, terms, torch.zeros_like(terms)).sum() / count


@dataclasses.dataclass(frozen=True)
class CurvatureLoss:
    """``lambda * mean_{l in layers} curvature_regularizer(hidden_states[l])`` as an auxiliary loss.

    Call it as ``loss(outputs, input_ids, attention_mask=None)`` with the outputs of a
    forward pass run with ``output_hidden_states=True``.
    """

    layers: Sequence[int]
    """Indices into ``hidden_states`` (``0 .. L``) to straighten (the precursor: middle layers)."""
    weight: float = 0.1
    """``lambda`` (the precursor code used 0.01 and 0.1)."""
    eps: float = 1e-8
    """See :func:`curvature_regularizer`."""

    def __post_init__(self) -> None:
        if isinstance(self.layers, (str, bytes)) or not self.layers:
            raise ValueError("layers is empty; name at least one hidden_states index to straighten")
        for layer in self.layers:
            check_int(layer, "layers")
        check_real(self.weight, "weight", low=0.0)
        check_real(self.eps, "eps", low=0.0, low_open=True)

    def __call__(self, outputs: Any, input_ids: Tensor | None = None, attention_mask: Tensor | None = None) -> Tensor:
        hidden_states = getattr(outputs, "hidden_states", None)
        if hidden_states is None:
            raise ValueError("outputs carry no hidden_states; run the model with output_hidden_states=True")
        n = len(hidden_states)
        bad = [layer for layer in self.layers if not -n <= layer < n]
        if bad:
            raise ValueError(f"layers {bad} are out of range for {n} hidden states (0 .. {n - 1})")
        terms = [curvature_regularizer(hidden_states[layer], attention_mask, eps=self.eps) for layer in self.layers]
        return self.weight * torch.stack(terms).mean()
