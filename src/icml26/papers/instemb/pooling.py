"""Dual-Anchor Alignment Pooling (DAAP): the embedding from the two anchors InstEmb trains.

The primary anchor is ``h_eos`` (the state at the end-of-input token, trained by the
contrastive loss); the complementary anchor is ``mean_k h_LA_k`` (the look-ahead states,
trained by distillation). The combination is not published; ours (brief §1.3):

    e = n( n(h_eos) + w · n(mean_k h_LA_k) )                 (mode="sum")
    e = n( [ n(h_eos) ; w · n(mean_k h_LA_k) ] )             (mode="concat")

with ``n(x) = x / |x|``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["daap_pool"]


def daap_pool(h_eos: Tensor, h_la: Tensor, weight: float = 1.0, mode: str = "sum") -> Tensor:
    """DAAP embedding of the end-of-input state and the look-ahead states.

    Args:
        h_eos: ``(B, d)`` states at the end-of-input (``<eos>`` / ``[SEP]``) token.
        h_la: ``(B, K, d)`` states at the K >= 1 look-ahead positions (or ``(B, d)``, their mean).
        weight: ``w >= 0``, the look-ahead anchor's weight; ``w = 0`` gives the eos embedding
            ``n(h_eos)`` in ``"sum"`` mode (and ``[n(h_eos); 0]`` in ``"concat"`` mode).
        mode: ``"sum"`` (``(B, d)``) or ``"concat"`` (``(B, 2d)``).

    Returns:
        Unit-norm embeddings. A zero anchor stays zero after ``n`` (``F.normalize``'s ε);
        NaN in the inputs propagates.
    """
    if not isinstance(h_eos, Tensor) or not isinstance(h_la, Tensor):
        raise TypeError("h_eos and h_la must be torch tensors")
    if mode not in ("sum", "concat"):
        raise ValueError(f"mode={mode!r} must be 'sum' or 'concat'")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise ValueError(f"weight={weight!r} must be a finite non-negative number")
    if h_eos.ndim != 2:
        raise ValueError(f"h_eos must be (B, d), got shape {tuple(h_eos.shape)}")
    if h_la.ndim == 3:
        if h_la.shape[1] < 1:
            raise ValueError("h_la has K = 0 look-ahead states; use the eos embedding (pooling='eos') when K = 0")
        h_la = h_la.mean(dim=1)
    if h_la.ndim != 2 or h_la.shape != h_eos.shape:
        raise ValueError(f"h_la {tuple(h_la.shape)} must be (B, K, d) or (B, d) matching h_eos {tuple(h_eos.shape)}")
    eos = F.normalize(h_eos, dim=-1)
    la = weight * F.normalize(h_la, dim=-1)
    if mode == "sum":
        # e = n( n(h_eos) + w n(mean_k h_LA) )
        return F.normalize(eos + la, dim=-1)
    # e = n( [n(h_eos); w n(mean_k h_LA)] )
    return F.normalize(torch.cat([eos, la], dim=-1), dim=-1)
