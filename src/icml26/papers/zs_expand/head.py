"""Weight injection: append synthesised rows to a trained linear head (our interpretation).

No paper code is public; the task definition follows ICIS (brief §1): the seen rows
``[W_s | b_s]`` of the trained head stay as they are and the synthesised rows ``ŵ_u`` are
appended, giving a head over seen ∪ unseen classes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from icml26.common.argcheck import as_tensor, require_finite

__all__ = ["inject"]


def inject(head: nn.Linear, weights: Any, bias: Any = None) -> nn.Linear:
    """A new ``nn.Linear`` whose first ``head.out_features`` rows are ``head``'s, bit for bit, followed
    by ``weights``.

    Args:
        head: the trained head (``in_features → S``); it is not modified.
        weights: ``(U, in_features)`` synthesised rows.
        bias: ``(U,)`` biases of the new rows. Default (when ``head`` has a bias): the mean of the seen
            biases, so that new classes start neither favoured nor penalised. Giving a bias to a
            head without one is a ``ValueError``.

    The new module has ``head``'s dtype, device and ``requires_grad``; the new rows are cast to them.
    ``ValueError`` for a width other than ``in_features``, NaN or inf.
    """
    if not isinstance(head, nn.Linear):
        raise TypeError(f"head must be a torch.nn.Linear, got {type(head).__name__}")
    w = as_tensor(weights, "weights")
    if w.ndim != 2 or w.shape[1] != head.in_features:
        raise ValueError(f"weights must be (U, {head.in_features}) to match head.in_features, got {tuple(w.shape)}")
    require_finite(w, "weights")
    ref = head.weight
    has_bias = head.bias is not None
    if bias is not None:
        if not has_bias:
            raise ValueError("bias was given but head has no bias; build the head with bias=True or pass bias=None")
        b = as_tensor(bias, "bias")
        if b.shape != (w.shape[0],):
            raise ValueError(f"bias must be ({w.shape[0]},), one per new row, got {tuple(b.shape)}")
        require_finite(b, "bias")
    out = nn.Linear(head.in_features, head.out_features + w.shape[0], bias=has_bias, device=ref.device,
                    dtype=ref.dtype)
    with torch.no_grad():
        out.weight.copy_(torch.cat([ref.detach(), w.to(device=ref.device, dtype=ref.dtype)]))
        if has_bias:
            new_b = head.bias.detach().mean().expand(w.shape[0]) if bias is None else b.to(ref.device, ref.dtype)
            out.bias.copy_(torch.cat([head.bias.detach(), new_b.to(ref.dtype)]))
    out.weight.requires_grad_(head.weight.requires_grad)
    if has_bias:
        out.bias.requires_grad_(head.bias.requires_grad)
    return out
