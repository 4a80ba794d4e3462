"""LongLoRA's shifted sparse attention (S²-Attn), the baseline HiCI is compared with.

Training-time attention of LongLoRA (Chen et al., ICLR 2024): the sequence is split into groups
of G tokens and each token attends causally within its group; the second half of the heads uses
groups shifted by G/2, so that information flows between neighbouring groups. At inference
LongLoRA uses full attention (``set_inference_mode(model, "full")``).

``roll=False`` (default) shifts by partitioning: the shifted heads' groups are
``[0, G/2), [G/2, 3G/2), ..., [N - G/2, N)``, strictly causal. ``roll=True`` reproduces the
original ``torch.roll`` (LongLoRA issues #15, #90): the first G/2 tokens wrap behind the last
ones and, inside that last group, attend to the end of the sequence (a leak of future tokens).

``patch(model, group_size)`` is per instance, like :func:`icml26.papers.hici.patch`, and adds no
parameters.
"""

from __future__ import annotations

import types

import torch
from torch import Tensor, nn

from icml26.papers.hici.attention import (_check_options, apply_rope, block_local_attention, repeat_kv,
                                          segment_attention)
from icml26.papers.hici.patch import _TAG, _project_heads, attention_layers, check_causal_mask

__all__ = ["patch", "receptive_field", "s2_attention", "set_inference_mode"]

_MODES = ("s2", "full")


def s2_attention(query: Tensor, key: Tensor, value: Tensor, *, group_size: int, shift: bool = True,
                 roll: bool = False, scaling: float | None = None, dropout: float = 0.0) -> Tensor:
    """S²-Attn on RoPE'd heads.

    Args:
        query: ``(b, H, N, hd)``; key, value: ``(b, H_kv, N, hd)``; N divisible by ``group_size``.
        group_size: G.
        shift: shift the second half of the heads by G/2 (False: every head in plain groups). With an odd
            number of query or key/value heads (SmolLM2: 9 over 3) the key/value heads are first repeated to
            one per query head and the first ⌊H/2⌋ heads stay plain, the other ⌈H/2⌉ are shifted.
        roll: shift with LongLoRA's wrap-around roll (leaks, see module doc) instead of a partition.

    Returns:
        ``(b, H, N, hd)``.
    """
    b, h, n, hd = query.shape
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size={group_size!r} must be a positive integer")
    _check_options(scaling, dropout)
    if n % group_size:
        raise ValueError(f"sequence length N={n} is not divisible by group_size G={group_size}; pad or crop the "
                         "input to a multiple of G")
    if not shift or group_size < 2:
        return segment_attention(query, key, value, segment_size=group_size, scaling=scaling, dropout=dropout)
    h_kv = key.shape[1]
    if h % h_kv:
        raise ValueError(f"query heads H={h} must be a multiple of the key/value heads H_kv={h_kv}")
    if h % 2 or h_kv % 2:  # the halves would split a query group: give every query head its own key/value head
        key, value, h_kv = repeat_kv(key, h // h_kv), repeat_kv(value, h // h_kv), h
    half, half_kv, offset = h // 2, h_kv // 2, group_size // 2
    plain = segment_attention(query[:, :half], key[:, :half_kv], value[:, :half_kv], segment_size=group_size,
                              scaling=scaling, dropout=dropout)
    q2, k2, v2 = query[:, half:], key[:, half_kv:], value[:, half_kv:]
    if roll:
        # LongLoRA: x.roll(-G/2) on the sequence, grouped attention, roll back (the first G/2 tokens wrap to the end)
        rolled = segment_attention(q2.roll(-offset, dims=2), k2.roll(-offset, dims=2), v2.roll(-offset, dims=2),
                                   segment_size=group_size, scaling=scaling, dropout=dropout)
        shifted = rolled.roll(offset, dims=2)
    else:
        shifted = block_local_attention(q2, k2, v2, group_size=group_size, offset=offset, scaling=scaling,
                                        dropout=dropout)
    return torch.cat([plain, shifted], dim=1)


def receptive_field(group_size: int, num_layers: int, *, shift: bool = True) -> int:
    """Trailing tokens that the last token's output depends on, after ``num_layers`` S²-Attn layers.

    Cut a sequence (N and the cut multiples of G) to its last ``c`` tokens, kept at their original
    positions: the plain groups and the shifted partition (``roll=False``) stay aligned, except the
    shifted heads' first group, which lost the tokens before the cut. The outputs that may differ
    form a prefix of the cut sequence: ``G/2`` tokens after the first layer, and each further layer
    extends it to the end of the plain group (multiples of G) or of the shifted group (G/2 + multiples
    of G) it reaches, so after L layers ``w_L = floor(L/2) G + (L mod 2) floor(G/2)`` tokens. For any
    ``c > w_L`` the last token's output is computed from the same values by the same operations; the
    smallest multiple of G is ``c = G (floor(L/2) + 1)``. Without the shift (block-local attention)
    ``c = G``. :func:`icml26.papers.hici.training.topic_accuracy` evaluates on such a cut (``context``).

    Args:
        group_size: G.
        num_layers: L, the model's decoder layers (all S²-Attn).
        shift: as in :func:`patch` (``roll=True``, the wrap-around, reaches the whole sequence: no bound).

    Returns:
        ``c``, a multiple of G.
    """
    for name, value in (("group_size", group_size), ("num_layers", num_layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive integer")
    if not shift or group_size < 2:
        return group_size
    return group_size * (num_layers // 2 + 1)


def _s2_forward(self: nn.Module, hidden_states: Tensor, position_embeddings=None, attention_mask=None, cache=None,
                **kwargs):
    if cache is None:
        cache = kwargs.pop("past_key_values", None)
    kwargs.pop("past_key_values", None)
    if self.s2_mode == "full":
        return type(self).forward(self, hidden_states, position_embeddings=position_embeddings,
                                  attention_mask=attention_mask, cache=cache, **kwargs)
    if position_embeddings is None:
        raise ValueError("position_embeddings (cos, sin) are required: call the patched layer through the model")
    if cache is not None and cache.get_seq_length(self.layer_idx) > 0:
        raise ValueError("S2-Attn cannot continue from a KV cache; call s2attn.set_inference_mode(model, 'full')")
    b, n, _ = hidden_states.shape
    check_causal_mask(attention_mask, n)
    q = _project_heads(self, self.q_proj, hidden_states, "q_norm").transpose(1, 2)
    k = _project_heads(self, self.k_proj, hidden_states, "k_norm").transpose(1, 2)
    v = _project_heads(self, self.v_proj, hidden_states, "", False).transpose(1, 2)
    q, k = apply_rope(q, k, *position_embeddings)
    if cache is not None:
        cache.update(k, v, self.layer_idx)
    out = s2_attention(q, k, v, group_size=self.s2_group_size, shift=self.s2_shift, roll=self.s2_roll,
                       scaling=self.scaling, dropout=self.attention_dropout if self.training else 0.0)
    return self.o_proj(out.transpose(1, 2).reshape(b, n, -1)), None


def patch(model: nn.Module, group_size: int, *, roll: bool = False, shift: bool = True) -> nn.Module:
    """Give every attention layer of a Llama / Qwen3 model S²-Attn with groups of ``group_size`` (in place).

    Args:
        model: ``LlamaForCausalLM`` or ``Qwen3ForCausalLM`` (transformers 5.x), possibly PEFT-wrapped.
        group_size: G; inputs must have a length divisible by G.
        roll: LongLoRA's original wrap-around shift (leaks future tokens; see the module doc).
        shift: shift half of the heads by G/2 (False: plain block-local attention).

    Returns:
        The same model.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size={group_size!r} must be a positive integer")
    if not isinstance(roll, bool) or not isinstance(shift, bool):
        raise TypeError("roll and shift must be bools")
    layers = attention_layers(model)
    if any(getattr(a, _TAG, None) for a in layers):
        raise ValueError("model is already patched (HiCI or S2-Attn); patch a fresh model")
    for attn in layers:
        attn.s2_group_size, attn.s2_roll, attn.s2_shift, attn.s2_mode = group_size, roll, shift, "s2"
        setattr(attn, _TAG, "s2attn")
        attn.forward = types.MethodType(_s2_forward, attn)
    return model


def set_inference_mode(model: nn.Module, mode: str) -> nn.Module:
    """``"s2"`` (shifted group attention) or ``"full"`` (the model's own attention; LongLoRA's inference)."""
    if mode not in _MODES:
        raise ValueError(f"mode={mode!r} is unknown; use 's2' or 'full'")
    layers = attention_layers(model)
    if not all(getattr(a, _TAG, None) == "s2attn" for a in layers):
        raise ValueError("model is not patched with S2-Attn; call s2attn.patch(model, group_size) first")
    for attn in layers:
        attn.s2_mode = mode
    return model
