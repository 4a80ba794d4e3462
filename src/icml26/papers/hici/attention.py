"""Segment attention with a slot prefix, under explicit bottom-right causal masks.

Each segment's G queries attend to ``[P prefix slots ; the segment's G tokens]``. The mask of
one segment is ``[prefix_valid (broadcast over rows) | tril(G, G)]``: every query sees every valid
slot and the segment's tokens up to itself. The mask is always passed explicitly; SDPA's
``is_causal=True`` would align the triangle top-left when kv_len != q_len, hiding the last
slots from the first queries and letting queries see later tokens.

:func:`gated_prefix_attention` is the optional zero-gated variant: the segment's causal attention
(exactly :func:`segment_attention` without a prefix) plus a per-head gate times a separate softmax
over the slots, so that a closed gate gives chunked attention bit for bit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.common.argcheck import check_int, check_real

__all__ = ["apply_rope", "block_local_attention", "gated_prefix_attention", "repeat_kv", "rope", "rotate_half",
           "segment_attention", "segment_mask"]


def rotate_half(x: Tensor) -> Tensor:
    """``[x1, x2] -> [-x2, x1]`` on the last dimension (the RoPE convention of Hugging Face Llama)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE on ``x`` ``(b, heads, N, hd)`` with ``cos, sin`` ``(b, N, hd)``: ``x cos + rotate_half(x) sin``."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return x * cos + rotate_half(x) * sin


def apply_rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    """RoPE on ``q, k`` ``(b, heads, N, hd)`` with ``cos, sin`` ``(b, N, hd)`` (:func:`rope` on each)."""
    return rope(q, cos, sin), rope(k, cos, sin)


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """``(b, kv_heads, ..., hd) -> (b, kv_heads * n_rep, ..., hd)``, each kv head repeated for its query group."""
    if n_rep == 1:
        return x
    return x.repeat_interleave(n_rep, dim=1)


def _check_options(scaling: float | None, dropout: float) -> None:
    """The scalar options of the attention functions (Python numbers: no device sync)."""
    if scaling is not None:
        check_real(scaling, "scaling", low=0.0, low_open=True)
    check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)


def segment_mask(segment_size: int, prefix_valid: Tensor | None = None, *, device=None) -> Tensor:
    """The boolean masks ``(S, G, P + G)`` of the segments (True = may attend).

    Args:
        segment_size: G.
        prefix_valid: ``(S, P)`` bool, which prefix slots each segment may see (None: no prefix, S = 1).

    Returns:
        ``[prefix_valid[s] broadcast over the G rows | tril(ones(G, G))]`` per segment.
    """
    if isinstance(segment_size, bool) or not isinstance(segment_size, int) or segment_size < 1:
        raise ValueError(f"segment_size={segment_size!r} must be a positive integer")
    if prefix_valid is not None:
        device = prefix_valid.device
    tril = torch.ones(segment_size, segment_size, dtype=torch.bool, device=device).tril()
    if prefix_valid is None:
        return tril.unsqueeze(0)
    if prefix_valid.ndim != 2 or prefix_valid.dtype != torch.bool:
        raise ValueError("prefix_valid must be a bool tensor of shape (segments, prefix)")
    s, p = prefix_valid.shape
    prefix = prefix_valid[:, None, :].expand(s, segment_size, p)
    return torch.cat([prefix, tril.unsqueeze(0).expand(s, -1, -1)], dim=-1)


def segment_attention(query: Tensor, key: Tensor, value: Tensor, *, segment_size: int,
                      prefix_key: Tensor | None = None, prefix_value: Tensor | None = None,
                      prefix_valid: Tensor | None = None, scaling: float | None = None,
                      dropout: float = 0.0) -> Tensor:
    """Causal attention inside each segment of G tokens, after an optional per-segment slot prefix.

    Args:
        query: ``(b, H, N, hd)`` (RoPE applied).
        key, value: ``(b, H_kv, N, hd)``; ``H`` must be a multiple of ``H_kv`` (grouped-query attention).
        segment_size: G, dividing N.
        prefix_key, prefix_value: ``(b, H_kv, S, P, hd)`` slot keys/values of each segment (no RoPE), or None.
        prefix_valid: ``(S, P)`` bool, which slots each segment may see (default: all).
        scaling: softmax scale > 0 (default ``hd ** -0.5``).
        dropout: attention dropout probability in [0, 1) (training only; pass 0 at evaluation).

    Returns:
        ``(b, H, N, hd)``.
    """
    check_int(segment_size, "segment_size", low=1)
    _check_options(scaling, dropout)
    b, h, n, hd = query.shape
    h_kv = key.shape[1]
    if h % h_kv:
        raise ValueError(f"query heads H={h} must be a multiple of key heads H_kv={h_kv}")
    if n % segment_size:
        raise ValueError(f"sequence length N={n} is not divisible by segment_size G={segment_size}")
    s, g = n // segment_size, segment_size
    q = query.reshape(b, h, s, g, hd).transpose(1, 2).reshape(b * s, h, g, hd)
    k = key.reshape(b, h_kv, s, g, hd)
    v = value.reshape(b, h_kv, s, g, hd)
    if prefix_key is not None:
        p = prefix_key.shape[3]
        if prefix_key.shape != (b, h_kv, s, p, hd) or prefix_value is None or prefix_value.shape != prefix_key.shape:
            raise ValueError(f"prefix_key/prefix_value must have shape (b={b}, H_kv={h_kv}, S={s}, P, hd={hd})")
        k = torch.cat([prefix_key.to(k.dtype), k], dim=3)
        v = torch.cat([prefix_value.to(v.dtype), v], dim=3)
        if prefix_valid is None:
            prefix_valid = torch.ones(s, p, dtype=torch.bool, device=query.device)
    else:
        p, prefix_valid = 0, None
    k = repeat_kv(k.transpose(1, 2).reshape(b * s, h_kv, p + g, hd), h // h_kv)
    v = repeat_kv(v.transpose(1, 2).reshape(b * s, h_kv, p + g, hd), h // h_kv)
    mask = segment_mask(g, prefix_valid, device=query.device)  # (S or 1, G, P + G)
    mask = mask.unsqueeze(0).expand(b, s, g, p + g).reshape(b * s, 1, g, p + g)
    # softmax(q k^T * scaling + log mask) v, the mask given explicitly (never is_causal with q_len != kv_len)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scaling)
    return out.reshape(b, s, h, g, hd).transpose(1, 2).reshape(b, h, n, hd)


def gated_prefix_attention(query: Tensor, key: Tensor, value: Tensor, *, segment_size: int, prefix_key: Tensor,
                           prefix_value: Tensor, gate: Tensor, prefix_valid: Tensor | None = None,
                           scaling: float | None = None, dropout: float = 0.0) -> Tensor:
    """Segment attention plus a gated, separately normalised attention over the slot prefix.

    ``out_i = softmax_causal(q k_i^T) v_i + gate_h * softmax(q k_p^T) v_p`` for the tokens of segment i
    and its valid prefix slots p (a segment without valid slots adds nothing). With ``gate = 0`` the
    output equals ``segment_attention(query, key, value, segment_size=G)`` exactly; the gradient with
    respect to the gate is the slot attention's output, so a zero gate still learns to open.

    Args:
        query: ``(b, H, N, hd)``; key, value: ``(b, H_kv, N, hd)``.
        segment_size: G, dividing N.
        prefix_key, prefix_value: ``(b, H_kv, S, P, hd)`` slot keys/values (no RoPE).
        gate: ``(H,)`` per-head gates (:class:`icml26.papers.hici.modules.PrefixGate`).
        prefix_valid: ``(S, P)`` bool, which slots each segment may see (default: all).
        scaling, dropout: as in :func:`segment_attention`.

    Returns:
        ``(b, H, N, hd)``.
    """
    local = segment_attention(query, key, value, segment_size=segment_size, scaling=scaling, dropout=dropout)
    b, h, n, hd = query.shape
    h_kv = key.shape[1]
    s, g = n // segment_size, segment_size
    if not isinstance(prefix_key, Tensor) or prefix_key.ndim != 5 or prefix_key.shape[:3] != (b, h_kv, s) \
            or prefix_key.shape[4] != hd or not isinstance(prefix_value, Tensor) or prefix_value.shape != prefix_key.shape:
        raise ValueError(f"prefix_key/prefix_value must have shape (b={b}, H_kv={h_kv}, S={s}, P, hd={hd})")
    if not isinstance(gate, Tensor) or gate.shape != (h,):
        raise ValueError(f"gate must be a tensor of shape (H={h},), one gate per query head")
    p = prefix_key.shape[3]
    if prefix_valid is None:
        prefix_valid = torch.ones(s, p, dtype=torch.bool, device=query.device)
    if prefix_valid.shape != (s, p) or prefix_valid.dtype != torch.bool:
        raise ValueError(f"prefix_valid must be a bool tensor of shape (S={s}, P={p})")
    scale = hd ** -0.5 if scaling is None else scaling
    q = query.reshape(b, h, s, g, hd)
    pk = repeat_kv(prefix_key.to(query.dtype), h // h_kv)  # (b, H, S, P, hd)
    pv = repeat_kv(prefix_value.to(query.dtype), h // h_kv)
    # scores of the slots alone: q k_p^T * scaling, the invalid slots masked
    scores = torch.einsum("bhsgd,bhspd->bhsgp", q, pk) * scale
    scores = scores.masked_fill(~prefix_valid[None, None, :, None, :], float("-inf"))
    wide = scores.float() if scores.dtype in (torch.float16, torch.bfloat16) else scores  # at least float32
    weights = torch.softmax(wide, dim=-1).to(query.dtype)
    # a segment with no valid slot (segment 0 of the shift modes) contributes nothing (not NaN)
    weights = torch.where(prefix_valid.any(-1)[None, None, :, None, None], weights, torch.zeros_like(weights))
    if dropout > 0:
        weights = F.dropout(weights, p=dropout)
    slots = torch.einsum("bhsgp,bhspd->bhsgd", weights, pv).reshape(b, h, n, hd)
    # out = local + gate_h * slots
    return local + gate.to(local.dtype).view(1, h, 1, 1) * slots


def block_local_attention(query: Tensor, key: Tensor, value: Tensor, *, group_size: int, offset: int = 0,
                          scaling: float | None = None, dropout: float = 0.0) -> Tensor:
    """Causal attention inside groups of ``group_size`` tokens, the groups starting at ``offset``.

    With ``offset = G/2`` the groups are ``[0, G/2), [G/2, 3G/2), ...`` (S²-Attn's shifted half as a
    partition, without wrapping the first half-group behind the last tokens).

    Args:
        query: ``(b, H, N, hd)``; key, value: ``(b, H_kv, N, hd)``.
        group_size: G (N need not be a multiple of G when ``offset > 0``; it must be when ``offset = 0``).
        offset: where the first full group starts, ``0 <= offset < G``.
        scaling, dropout: as in :func:`segment_attention` (scale > 0, dropout in [0, 1)).

    Returns:
        ``(b, H, N, hd)``.
    """
    check_int(group_size, "group_size", low=1)
    check_int(offset, "offset", low=0)
    _check_options(scaling, dropout)
    b, h, n, hd = query.shape
    if not 0 <= offset < group_size:
        raise ValueError(f"offset={offset} must be in [0, group_size={group_size})")
    if offset == 0:
        return segment_attention(query, key, value, segment_size=group_size, scaling=scaling, dropout=dropout)
    # pad `offset` tokens in front and enough behind so that the groups tile the padded sequence
    back = (-(n + offset)) % group_size
    padded = n + offset + back

    def pad(x: Tensor) -> Tensor:
        return F.pad(x, (0, 0, offset, back))

    q, k, v = pad(query), pad(key), pad(value)
    s, g = padded // group_size, group_size
    real = torch.zeros(padded, dtype=torch.bool, device=query.device)
    real[offset:offset + n] = True
    real = real.view(s, g)
    # allowed[s, i, j] = j <= i and key j is a real token (a padded query sees itself, so no row is empty)
    tril = torch.ones(g, g, dtype=torch.bool, device=query.device).tril()
    allowed = tril & real[:, None, :] | torch.eye(g, dtype=torch.bool, device=query.device)
    h_kv = k.shape[1]
    qg = q.reshape(b, h, s, g, hd).transpose(1, 2).reshape(b * s, h, g, hd)
    kg = repeat_kv(k.reshape(b, h_kv, s, g, hd).transpose(1, 2).reshape(b * s, h_kv, g, hd), h // h_kv)
    vg = repeat_kv(v.reshape(b, h_kv, s, g, hd).transpose(1, 2).reshape(b * s, h_kv, g, hd), h // h_kv)
    mask = allowed.unsqueeze(0).expand(b, s, g, g).reshape(b * s, 1, g, g)
    out = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=mask, dropout_p=dropout, scale=scaling)
    out = out.reshape(b, s, h, g, hd).transpose(1, 2).reshape(b, h, padded, hd)
    return out[:, :, offset:offset + n]
