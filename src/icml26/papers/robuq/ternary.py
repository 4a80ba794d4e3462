"""Ternary (1.58-bit) weights, BitNet b1.58's absmean rule, trained with the straight-through estimator.

For a weight matrix ``W`` (``(out_features, in_features)``):

1. ``γ = mean|W|`` (per tensor; per output row with ``per_channel=True``);
2. ``W_t = clip(round(W / (γ + ε)), -1, 1)`` in {-1, 0, 1};
3. ``Ŵ = γ · W_t``.

The forward pass uses ``Ŵ``; the backward pass treats the quantizer as the identity
(``Ŵ_ste = W + (Ŵ - W).detach()``), so the latent full-precision ``W`` is what the optimizer
updates. For ``W ~ N(0, σ²)`` the zero threshold ``γ/2 = σ·√(2/π)/2 ≈ 0.399σ`` puts
``P(|w| < 0.399σ) ≈ 0.310`` of the weights at zero.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["TernaryLinear", "ternarize", "ternarize_ste"]

#: ε of ``W / (γ + ε)``: keeps an all-zero matrix at zero instead of 0/0.
EPS = 1e-8


def _check_weight(w: object) -> Tensor:
    if not isinstance(w, Tensor):
        raise TypeError(f"w must be a torch.Tensor, got {type(w).__name__}")
    if not w.is_floating_point():
        raise TypeError(f"w must be a floating tensor, got {w.dtype}")
    if w.numel() == 0:
        raise ValueError("w is empty; pass a weight with at least one entry")
    return w


def ternarize(w: Tensor, per_channel: bool = False) -> tuple[Tensor, Tensor]:
    """``(Ŵ, γ)``: the ternary weight ``γ · clip(round(W/(γ+ε)), -1, 1)`` and its scale ``γ = mean|W|``.

    Args:
        w: ``(out_features, in_features)`` (any shape for ``per_channel=False``; ``per_channel``
            averages over every axis but the first).
        per_channel: one ``γ`` per output row (shape ``(out_features, 1, …)``) instead of a scalar.

    Returns:
        ``Ŵ`` (``w``'s shape and dtype, values in {-γ, 0, γ}) and ``γ`` (a 0-d tensor, or
        ``(out, 1, …)`` per channel). No gradient flows through ``round``; see :func:`ternarize_ste`.

    NaN in ``w`` makes ``γ`` (of its row, per channel) NaN and so every entry it scales.
    """
    w = _check_weight(w)
    if per_channel:
        if w.ndim < 2:
            raise ValueError(f"per_channel=True needs a weight with an output axis, got shape {tuple(w.shape)}")
        # γ_o = mean_i |W_oi|, one scale per output row
        gamma = w.abs().mean(dim=tuple(range(1, w.ndim)), keepdim=True)
    else:
        # γ = mean |W|
        gamma = w.abs().mean()
    # W_t = clip(round(W / (γ + ε)), -1, 1)
    w_t = torch.clamp(torch.round(w / (gamma + EPS)), -1.0, 1.0)
    # Ŵ = γ · W_t
    return gamma * w_t, gamma


def ternarize_ste(w: Tensor, per_channel: bool = False) -> Tensor:
    """``Ŵ`` in the forward pass, the identity in the backward pass: ``W + (Ŵ - W).detach()``."""
    with torch.no_grad():  # the detached part: no autograd graph for it
        shift = ternarize(w, per_channel=per_channel)[0] - w
    return w + shift


class TernaryLinear(nn.Module):
    """A linear layer with ternary weights (BitNet b1.58), trained with the straight-through estimator.

    ``y = x Ŵᵀ + b`` with ``Ŵ = ternarize(W)``; gradients reach the latent ``weight`` as if it were
    used directly. Activations are left in full precision (see
    :class:`~icml26.papers.robuq.quant.QuantLinear` for the W1.58A\\ *b* layer).

    Args:
        in_features, out_features, bias: as :class:`torch.nn.Linear`.
        per_channel: one scale ``γ`` per output row.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, per_channel: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive int")
        self.in_features, self.out_features, self.per_channel = in_features, out_features, bool(per_channel)
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    @classmethod
    def from_linear(cls, linear: nn.Linear, *, per_channel: bool = False) -> "TernaryLinear":
        """A ternary layer whose latent weight and bias are copies of ``linear``'s."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        w = linear.weight
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, per_channel=per_channel,
                    device=w.device, dtype=w.dtype)
        with torch.no_grad():
            layer.weight.copy_(w.detach())
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        return layer

    def quantized_weight(self) -> Tensor:
        """``Ŵ`` (no gradient): what an inference kernel would store, as ``γ · W_t``."""
        return ternarize(self.weight.detach(), per_channel=self.per_channel)[0]

    def forward(self, x: Tensor) -> Tensor:
        return nn.functional.linear(x, ternarize_ste(self.weight, self.per_channel), self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, per_channel={self.per_channel}")
