"""Next-token entropy of a causal LM's predictive distribution.

``H_t = -sum_w p(w | x_{<=t}) log p(w | x_{<=t})`` from the logits at position ``t``
(nats). Part of the curvature paper's analysis (see :mod:`.geometry`).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["next_token_entropy"]


def next_token_entropy(logits: Tensor, dim: int = -1) -> Tensor:
    """Entropy (nats) of ``softmax(logits)`` along ``dim``.

    Args:
        logits: ``(..., vocab)`` (any float dtype; computed in float32 at least).
            ``-inf`` entries (masked words) contribute nothing.
        dim: the vocabulary dimension.

    Returns:
        ``(...)`` entropies, in ``[0, log vocab]``.
    """
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise ValueError("logits must be a floating-point torch.Tensor of shape (..., vocab)")
    z = logits if logits.dtype in (torch.float32, torch.float64) else logits.float()
    log_p = torch.log_softmax(z, dim=dim)
    p = log_p.exp()
    # H = -sum_w p_w log p_w, with 0 log 0 = 0
    terms = torch.where(p > 0, p * log_p, torch.zeros_like(p))
    return -terms.sum(dim)
