"""Patching a Hugging Face Llama / Qwen3 model with HiCI, per instance.

``patch(model, config)`` adds, to every decoder layer's ``self_attn``, the submodules
``local_constructor`` (when M > 0) and ``global_integrator`` (when K > 0) and replaces that
instance's ``forward`` (not the class's). The modules therefore appear in ``state_dict``,
``save_pretrained`` and PEFT's ``modules_to_save``; other models in the process are untouched.

The patched forward, in ``hici`` mode, for hidden states X ``(b, N, d)`` with G | N, S = N / G:

1. q, k, v from the layer's own projections (Qwen3: with ``q_norm``/``k_norm``), RoPE at global positions;
2. L = LocalConstructor(X cut into S segments)                                  ``(b, S, M, d)``;
3. G = GlobalIntegrator(L) (``none``) or its causal form per segment            ``(b, S, K, d)``;
4. the prefix of segment i by ``causal_mode``: ``[G_{i-1}; L_{i-1}]`` (``causal_shift``), ``[G_{i-1}]``
   (``causal_shift_g``), ``[G; L_i]`` (``none``), ``[G_i; L_i]`` (``causal_gi``); segment 0 of the shift
   modes sees no prefix (masked);
5. prefix keys/values from the layer's ``k_proj``/``v_proj`` (Qwen3: ``k_norm`` when ``slot_qk_norm``), no RoPE;
6. segment attention under ``[prefix_valid | tril(G, G)]``; ``o_proj``. With ``gated_prefix`` instead: the
   segment's causal attention plus ``tanh(alpha_h)`` times a separate softmax over the valid slots
   (``self_attn.prefix_gate``, alpha = 0 at the start: exactly chunked attention until it trains).

In ``full`` mode the class's own forward runs: the model's full attention, HiCI modules unused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from typing import Iterator

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.common.extras import require
from icml26.papers.hici.attention import gated_prefix_attention, rope, segment_attention
from icml26.papers.hici.config import INFERENCE_MODES, HiCIConfig
from icml26.papers.hici.modules import GlobalIntegrator, LocalConstructor, PrefixGate

__all__ = ["attention_layers", "hici_attention", "hici_parameters", "is_patched", "patch", "set_inference_mode"]

_SUPPORTED = ("LlamaForCausalLM", "Qwen3ForCausalLM")
_TAG = "_icml26_attention"


def _unwrap(model: nn.Module) -> nn.Module:
    """The Hugging Face model under a PEFT wrapper (or the model itself)."""
    inner = model
    for _ in range(3):
        if hasattr(inner, "get_base_model") and callable(inner.get_base_model):
            inner = inner.get_base_model()
        else:
            break
    return inner


def _supported_model(model: object) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Hugging Face LlamaForCausalLM or Qwen3ForCausalLM, got {type(model).__name__}")
    inner = _unwrap(model)
    transformers = require("transformers", "lm")
    classes = tuple(getattr(transformers, name) for name in _SUPPORTED if hasattr(transformers, name))
    if not isinstance(inner, classes):
        raise ValueError(f"model is a {type(inner).__name__}; this patch supports {' and '.join(_SUPPORTED)} "
                         "(transformers 5.x)")
    if int(transformers.__version__.split(".")[0]) < 5:
        raise ValueError(f"transformers {transformers.__version__} is too old: the patch uses the 5.x attention "
                         "signature (position_embeddings, cache); upgrade to transformers>=5")
    return inner


def attention_layers(model: nn.Module) -> list[nn.Module]:
    """The ``self_attn`` module of every decoder layer of a supported model (PEFT-wrapped or not)."""
    inner = _supported_model(model)
    return [layer.self_attn for layer in inner.model.layers]


def is_patched(model: nn.Module) -> str | None:
    """``"hici"``, ``"s2attn"`` or None: which attention patch the model carries."""
    tags = {getattr(a, _TAG, None) for a in attention_layers(model)}
    return next(iter(tags)) if len(tags) == 1 else "mixed"


def _project_heads(attn: nn.Module, proj: nn.Module, x: Tensor, norm_name: str, use_norm: bool = True) -> Tensor:
    """``proj(x)`` split into heads ``(..., heads, hd)``, through the layer's ``q_norm``/``k_norm`` when it has one."""
    out = proj(x)
    out = out.view(*out.shape[:-1], -1, attn.head_dim)
    norm = getattr(attn, norm_name, None)
    if use_norm and norm is not None:
        out = norm(out)
    return out


def check_causal_mask(attention_mask: Tensor | None, seq_len: int) -> None:
    """Refuse a mask other than plain causal (padding): the segment attention builds its own masks."""
    if attention_mask is None:
        return
    if attention_mask.ndim != 4:
        raise ValueError("hici mode expects the model's 4-D causal mask or None")
    allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
    allowed = allowed[..., -seq_len:, -seq_len:]
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=allowed.device).tril()
    if allowed.shape[-1] != seq_len or not bool((allowed == causal).all()):
        raise ValueError("hici mode supports unpadded batches only (the attention mask holds padding); "
                         "batch sequences of equal length, or call set_inference_mode(model, 'full')")


def _tail(x: Tensor, dim: int, start: int) -> Tensor:
    """``x`` from index ``start`` on along ``dim``; ``x`` itself when ``start == 0`` (no extra node in autograd)."""
    return x if start == 0 else x.narrow(dim, start, x.shape[dim] - start)


def _hici_forward(self: nn.Module, hidden_states: Tensor, position_embeddings: tuple[Tensor, Tensor] | None = None,
                  attention_mask: Tensor | None = None, cache=None, **kwargs):
    """The patched ``self_attn.forward`` (bound per instance); the signature of transformers 5.x."""
    if cache is None:
        cache = kwargs.pop("past_key_values", None)
    kwargs.pop("past_key_values", None)
    if self.hici_mode == "full":
        return type(self).forward(self, hidden_states, position_embeddings=position_embeddings,
                                  attention_mask=attention_mask, cache=cache, **kwargs)
    return hici_attention(self, hidden_states, position_embeddings, attention_mask, cache), None


def hici_attention(attn: nn.Module, hidden_states: Tensor, position_embeddings: tuple[Tensor, Tensor] | None,
                   attention_mask: Tensor | None = None, cache=None, *, window: int | None = None) -> Tensor:
    """HiCI attention of a patched ``self_attn`` ``attn`` (hici mode): ``(b, N, d) -> (b, window, d)``.

    Args:
        window: compute the output of the last ``window`` positions only (a multiple of G; default N).
            Keys, values and every segment's slots are computed as for the whole sequence, so these
            rows equal the corresponding rows of the whole output.
    """
    config: HiCIConfig = attn.hici_config
    if position_embeddings is None:
        raise ValueError("position_embeddings (cos, sin) are required: call the patched layer through the model")
    if cache is not None and cache.get_seq_length(attn.layer_idx) > 0:
        raise ValueError("hici mode cannot continue from a KV cache (token-by-token generation); "
                         "call set_inference_mode(model, 'full') before generate()")
    b, n, d = hidden_states.shape
    g = config.segment_length(n)
    s = n // g
    window = n if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) or not 0 < window <= n or window % g:
        raise ValueError(f"window={window!r} must be a multiple of the segment length G={g} in [G, N={n}]")
    check_causal_mask(attention_mask, n)
    start = n - window
    queries = _tail(hidden_states, 1, start)
    q = _project_heads(attn, attn.q_proj, queries, "q_norm").transpose(1, 2)  # (b, H, window, hd)
    k = _project_heads(attn, attn.k_proj, hidden_states, "k_norm").transpose(1, 2)  # (b, H_kv, N, hd)
    v = _project_heads(attn, attn.v_proj, hidden_states, "", False).transpose(1, 2)
    cos, sin = position_embeddings
    q, k = rope(q, _tail(cos, 1, start), _tail(sin, 1, start)), rope(k, cos, sin)
    if cache is not None:
        cache.update(k, v, attn.layer_idx)  # the prefill of a later full-mode continuation
    prefix_k = prefix_v = prefix_valid = None
    if config.num_slots > 0:
        slots = attn.local_constructor(hidden_states.view(b, s, g, d))  # (b, S, M, d)
        shift = config.causal_mode in ("causal_shift", "causal_shift_g")
        parts = []
        if config.num_global > 0:
            if config.causal_mode == "none":
                glob = attn.global_integrator(slots).unsqueeze(1).expand(b, s, config.num_global, d)
            else:
                glob = attn.global_integrator.forward_causal(slots)  # G_i from segments 0..i
            parts.append(glob)
        if config.causal_mode != "causal_shift_g":
            parts.append(slots)
        prefix = torch.cat(parts, dim=2)  # (b, S, P, d)
        if shift:  # segment i sees the prefix of segment i-1; segment 0 sees none (masked)
            prefix = torch.cat([torch.zeros_like(prefix[:, :1]), prefix[:, :-1]], dim=1)
        p = prefix.shape[2]
        prefix_valid = torch.ones(s, p, dtype=torch.bool, device=hidden_states.device)
        if shift:
            prefix_valid[0] = False
        use_norm = config.slot_qk_norm
        first = start // g  # the window's segments
        prefix_k = _project_heads(attn, attn.k_proj, prefix, "k_norm", use_norm).permute(0, 3, 1, 2, 4)
        prefix_v = _project_heads(attn, attn.v_proj, prefix, "", False).permute(0, 3, 1, 2, 4)
        prefix_k, prefix_v = _tail(prefix_k, 2, first), _tail(prefix_v, 2, first)
        prefix_valid = _tail(prefix_valid, 0, first)
    dropout = attn.attention_dropout if attn.training else 0.0
    if config.gated_prefix and prefix_k is not None:
        out = gated_prefix_attention(q, _tail(k, 2, start), _tail(v, 2, start), segment_size=g, prefix_key=prefix_k,
                                     prefix_value=prefix_v, prefix_valid=prefix_valid, gate=attn.prefix_gate.gate,
                                     scaling=attn.scaling, dropout=dropout)
    else:
        out = segment_attention(q, _tail(k, 2, start), _tail(v, 2, start), segment_size=g, prefix_key=prefix_k,
                                prefix_value=prefix_v, prefix_valid=prefix_valid, scaling=attn.scaling,
                                dropout=dropout)
    out = out.transpose(1, 2).reshape(b, window, -1)
    return attn.o_proj(out)


def patch(model: nn.Module, config: HiCIConfig | None = None, *, seed: int | None = None) -> nn.Module:
    """Add HiCI to every attention layer of ``model`` (in place) and return it.

    Args:
        model: a ``LlamaForCausalLM`` or ``Qwen3ForCausalLM`` (transformers 5.x), possibly PEFT-wrapped.
        config: the :class:`HiCIConfig` (default: the authors' sizes).
        seed: seeds the new modules' initialisation (default: the global torch generator).

    Returns:
        The same model. Its HiCI parameters are trainable; :func:`hici_parameters` lists them.
    """
    config = HiCIConfig() if config is None else config
    if seed is not None:
        check_int(seed, "seed", low=0)
    if not isinstance(config, HiCIConfig):
        raise TypeError(f"config must be a HiCIConfig, got {type(config).__name__}")
    layers = attention_layers(model)
    if any(getattr(a, _TAG, None) for a in layers):
        raise ValueError("model is already patched (HiCI or S2-Attn); patch a fresh model")
    inner = _supported_model(model)
    for attn in layers:
        if getattr(attn, "sliding_window", None):
            raise ValueError("model uses sliding-window attention, which HiCI does not reproduce; "
                             "build it with use_sliding_window=False")
    hidden = inner.config.hidden_size
    embeddings = inner.get_input_embeddings().weight.detach()
    rng = torch.random.fork_rng(devices=[]) if seed is not None else contextlib.nullcontext()
    with rng:
        if seed is not None:
            torch.manual_seed(seed)
        for attn in layers:
            weight = attn.q_proj.weight
            if config.num_slots > 0:
                attn.local_constructor = LocalConstructor(hidden, config.num_slots, config.bottleneck,
                                                          config.num_heads).to(device=weight.device, dtype=weight.dtype)
            if config.num_global > 0:
                glob = GlobalIntegrator(hidden, config.num_global, config.bottleneck, config.stat_dim,
                                        config.num_heads).to(device=weight.device, dtype=weight.dtype)
                glob.init_queries_from_embeddings(embeddings)
                attn.global_integrator = glob
            if config.gated_prefix:
                heads = attn.q_proj.out_features // attn.head_dim
                attn.prefix_gate = PrefixGate(heads).to(device=weight.device, dtype=weight.dtype)
            attn.hici_config = config
            attn.hici_mode = config.inference_mode
            setattr(attn, _TAG, "hici")
            attn.forward = types.MethodType(_hici_forward, attn)
    return model


def set_inference_mode(model: nn.Module, mode: str) -> nn.Module:
    """Switch every patched layer to ``"hici"`` (chunked HiCI) or ``"full"`` (the model's full attention)."""
    if mode not in INFERENCE_MODES:
        raise ValueError(f"mode={mode!r} is unknown; use 'hici' or 'full'")
    layers = attention_layers(model)
    if not all(getattr(a, _TAG, None) == "hici" for a in layers):
        raise ValueError("model is not patched with HiCI; call hici.patch(model, config) first")
    for attn in layers:
        attn.hici_mode = mode
        attn.hici_config = dataclasses.replace(attn.hici_config, inference_mode=mode)
    return model


@contextlib.contextmanager
def inference_mode(model: nn.Module, mode: str) -> Iterator[nn.Module]:
    """Within the block, the model runs in ``mode``; the previous mode is restored after."""
    previous = attention_layers(model)[0].hici_mode if is_patched(model) == "hici" else None
    set_inference_mode(model, mode)
    try:
        yield model
    finally:
        set_inference_mode(model, previous)


def hici_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters HiCI added (local constructors, global integrators and prefix gates of every layer)."""
    layers = attention_layers(model)
    if not all(getattr(a, _TAG, None) == "hici" for a in layers):
        raise ValueError("model is not patched with HiCI; call hici.patch(model, config) first")
    params: list[nn.Parameter] = []
    for attn in layers:
        for name in ("local_constructor", "global_integrator", "prefix_gate"):
            module = getattr(attn, name, None)
            if module is not None:
                params.extend(module.parameters())
    return params
