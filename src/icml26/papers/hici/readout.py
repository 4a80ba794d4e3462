"""The last decoder layer computed for the last positions only, when only their logits are read.

Scoring a document (:func:`icml26.papers.hici.training.topic_accuracy`) reads the logits at its last
token. Every decoder layer but the last must run on the whole sequence (later tokens attend to
earlier ones), but the last layer's queries, attention, output projection and MLP are needed only
for the positions whose logits are read. Inside :func:`last_layer_window` the model's last layer
computes the last ``window`` positions from the keys and values (and, in HiCI mode, the slots) of
the whole sequence: the same operations on the same values as those rows of the whole forward pass.

Supported: the model's own full attention (unpatched, or HiCI / S²-Attn in ``full`` mode) and HiCI
mode (``window`` a multiple of G); S²-Attn mode computes its attention on the whole sequence and
keeps the window (its shifted groups straddle the window's start).
"""

from __future__ import annotations

import contextlib
import types
from typing import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.papers.hici.attention import repeat_kv, rope
from icml26.papers.hici.patch import _TAG, _project_heads, _supported_model, _tail, hici_attention

__all__ = ["last_layer_window"]

_WINDOW = "_icml26_window"


@contextlib.contextmanager
def last_layer_window(model: nn.Module, window: int) -> Iterator[nn.Module]:
    """Within the block, the last decoder layer of ``model`` outputs its last ``window`` positions only.

    The model's output (hidden states, logits) then covers the last ``min(window, N)`` positions;
    read the logits of the last token with ``logits_to_keep=1`` as usual. No KV cache.

    Args:
        model: ``LlamaForCausalLM`` or ``Qwen3ForCausalLM`` (transformers 5.x), possibly PEFT-wrapped and patched.
        window: positions to keep (in HiCI mode, a multiple of the segment length G).
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window={window!r} must be a positive integer")
    layer = _supported_model(model).model.layers[-1]
    previous = layer.__dict__.get("forward")
    layer.forward = types.MethodType(_window_layer_forward, layer)
    setattr(layer, _WINDOW, window)
    try:
        yield model
    finally:
        delattr(layer, _WINDOW)
        if previous is None:
            del layer.forward
        else:
            layer.forward = previous


def _window_layer_forward(self: nn.Module, hidden_states: Tensor, attention_mask: Tensor | None = None,
                          position_ids=None, cache=None, use_cache: bool | None = False,
                          position_embeddings: tuple[Tensor, Tensor] | None = None, **kwargs) -> Tensor:
    """A pre-norm Llama / Qwen3 decoder layer (``x + attn(norm(x))``, then ``+ mlp(norm(.))``) on the window."""
    if cache is not None or use_cache:
        raise ValueError("last_layer_window does not support a KV cache; call the model with use_cache=False")
    if position_embeddings is None:
        raise ValueError("position_embeddings (cos, sin) are required: call the layer through the model")
    start = max(0, hidden_states.shape[1] - getattr(self, _WINDOW))
    normed = self.input_layernorm(hidden_states)
    attn = self.self_attn
    tag = getattr(attn, _TAG, None)
    if tag == "hici" and attn.hici_mode == "hici":
        out = hici_attention(attn, normed, position_embeddings, attention_mask, window=normed.shape[1] - start)
    elif tag == "s2attn" and attn.s2_mode == "s2":
        out = _tail(attn(normed, position_embeddings=position_embeddings, attention_mask=attention_mask)[0], 1, start)
    else:
        out = _full_attention(attn, normed, position_embeddings, attention_mask, start)
    hidden = _tail(hidden_states, 1, start) + out
    return hidden + self.mlp(self.post_attention_layernorm(hidden))


def _full_attention(attn: nn.Module, hidden: Tensor, position_embeddings: tuple[Tensor, Tensor],
                    attention_mask: Tensor | None, start: int) -> Tensor:
    """The layer's own causal attention (``LlamaAttention`` / ``Qwen3Attention``) for the queries from ``start`` on."""
    b, n, _ = hidden.shape
    q = _project_heads(attn, attn.q_proj, _tail(hidden, 1, start), "q_norm").transpose(1, 2)  # (b, H, w, hd)
    k = _project_heads(attn, attn.k_proj, hidden, "k_norm").transpose(1, 2)  # (b, H_kv, N, hd)
    v = _project_heads(attn, attn.v_proj, hidden, "", False).transpose(1, 2)
    cos, sin = position_embeddings
    q, k = rope(q, _tail(cos, 1, start), _tail(sin, 1, start)), rope(k, cos, sin)
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)
    if attention_mask is None:  # causal, bottom-right: query i (position start + i) sees keys <= start + i
        mask = torch.ones(n, n, dtype=torch.bool, device=hidden.device).tril()[start:]
    else:
        mask = attention_mask[..., -n:, -n:][..., start:, :]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=attn.scaling)
    return attn.o_proj(out.transpose(1, 2).reshape(b, n - start, -1))
