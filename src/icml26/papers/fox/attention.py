"""The Hugging Face plumbing: one attention function, registered once, that applies whatever
intervention is active in the current context.

* :func:`fox_attention_forward` is a ``transformers.AttentionInterface`` function: eager
  attention (``QKᵀ·scaling`` → edit → ``+ mask`` → fp32 softmax → edit → ``·V``), identical to
  ``eager`` when no intervention is active.
* :func:`register_fox_attention` registers it under :data:`ATTN_IMPLEMENTATION` **and**
  registers ``masking_utils.eager_mask`` for the same name in ``AttentionMaskInterface``;
  without the latter, transformers 5.x hands a custom implementation ``attention_mask=None``
  in prefill (no causal mask: logits off by ~0.5 on a tiny LLaVA).
* :func:`use_fox_attention` sets it on the **decoder only** (``model.model.language_model``):
  the vision tower calls the same interface and must stay untouched.
* An intervention is an object with ``edit_scores(layer, scores, mask)`` and
  ``edit_probs(layer, probs)``; :func:`active_intervention` makes one current (a
  ``ContextVar``, so the second stream of a logits processor can run its own inside the main
  stream's ``generate``).

Text routing (:func:`route_text_attention`, a testbed's architecture, not an intervention): in the
decoder layers it names as *blocked*, a text token after the image may attend to the tokens up to the
end of the image block and to itself, not to earlier text; so whatever the model computes from earlier
text (a language prior) is computed in the other layers. The pathology testbed uses it to put the prior
in the layers Fox probes. It lives on the attention modules and applies to every forward, with or
without an intervention.

Logit soft-capping (:func:`cap_attention_logits`, also a testbed's architecture): in the layers it names,
the scaled logits become ``c·tanh(s/c)`` before any intervention and before the mask (as Gemma 2 caps its
attention logits, there with ``c = 50``). With ``c ≤ 4`` every logit of a capped head lies in one 8-wide bin
of Fox's saturation, so saturating the head leaves it attending uniformly over the keys it may see: the
head routes by logit differences finer than saturation keeps.

Interventions (in :mod:`.interventions`, with the prompt's :class:`KeySets`; their names still
import from here): :class:`FoxIntervention` (probe + saturation), :class:`PAIIntervention`
(image logits ``s + α|s|``), :class:`SIDIntervention` (keep the least-attended image tokens),
:class:`HeadAblation` (zero one head's output; for the mechanism check).

Rows: with a KV cache each position is the last query row exactly once, so intervening on the
rows whose absolute index is ``≥ prompt_length − 1`` is the same rule in prefill (only the last
prompt row), in cached decoding (the new row) and in a cache-free recompute of the whole
sequence (every generated row, each with its own statistics): by causality the three give the
same stream. ``rows="last"`` intervenes on the current last row only (the authors'
``use_cache=False`` path, which differs from their cached path once more than one token is
generated).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from typing import Any, Iterator, Protocol

import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.extras import require
from icml26.papers.fox.interventions import (
    FoxIntervention,
    HeadAblation,
    HeadSaturation,
    KeySets,
    PAIIntervention,
    ProbeRecord,
    SIDIntervention,
    image_token_id,
    key_sets,
    sid_keep_mask,
)

__all__ = [
    "ATTN_IMPLEMENTATION",
    "AttentionIntervention",
    "FoxIntervention",
    "HeadAblation",
    "HeadSaturation",
    "KeySets",
    "PAIIntervention",
    "ProbeRecord",
    "SIDIntervention",
    "active_intervention",
    "cap_attention_logits",
    "current_intervention",
    "fox_attention_forward",
    "image_token_id",
    "key_sets",
    "language_model",
    "register_fox_attention",
    "route_text_attention",
    "sid_keep_mask",
    "use_fox_attention",
]

log = logging.getLogger(__name__)

ATTN_IMPLEMENTATION = "icml26_fox"
"""The name under which :func:`fox_attention_forward` is registered."""

_ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar("icml26_fox_intervention", default=None)
_REGISTERED = False


class AttentionIntervention(Protocol):
    """What :func:`fox_attention_forward` asks of an active intervention."""

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Pre-softmax logits ``(B, H, Q, K)`` (before the mask is added) -> edited logits."""

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        """Attention probabilities ``(B, H, Q, K)`` -> edited probabilities."""


# ---------------------------------------------------------------------------
# The attention function and its registration
# ---------------------------------------------------------------------------
def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    if groups == 1:
        return x
    b, h, n, d = x.shape
    return x[:, :, None, :, :].expand(b, h, groups, n, d).reshape(b, h * groups, n, d)


def fox_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention with the active intervention (an ``AttentionInterface`` function).

    Args:
        module: the attention module (its ``layer_idx`` selects the layer).
        query: ``(B, H, Q, d)``; key, value: ``(B, H_kv, K, d)`` (grouped-query heads are repeated).
        attention_mask: ``(B, 1, Q, K)`` additive float mask (``eager_mask``), or ``None``.
        scaling: ``1/√d``.
        dropout: attention dropout (training only).

    Returns:
        ``(attn_output (B, Q, H, d), attn_weights (B, H, Q, K))``, as transformers' eager attention.

    ``scaling`` and ``dropout`` are checked (plain numbers, no device sync); the tensors are not,
    as in transformers' eager attention: this runs for every layer at every decoding step.
    """
    check_real(scaling, "scaling", low=0.0, low_open=True)
    check_real(dropout, "dropout", low=0.0, high=1.0)
    groups = query.shape[1] // key.shape[1]
    key_states = _repeat_kv(key, groups)
    value_states = _repeat_kv(value, groups)
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    cap = getattr(module, LOGIT_CAP_ATTR, None)
    if cap is not None:
        scores = cap * torch.tanh(scores / cap)
    intervention = _ACTIVE.get()
    layer = getattr(module, "layer_idx", None)
    active = intervention is not None and layer is not None
    mask = attention_mask
    if mask is not None:
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=scores.dtype, device=mask.device).masked_fill(~mask, float("-inf"))
        mask = mask[:, :, :, : key_states.shape[-2]]
    text_start = getattr(module, TEXT_ROUTING_ATTR, None)
    if text_start is not None:
        routing = text_routing_mask(scores.shape[-2], scores.shape[-1], text_start, dtype=scores.dtype,
                                    device=scores.device)
        mask = routing if mask is None else mask + routing
    if active:
        scores = intervention.edit_scores(layer, scores, mask)
    if mask is not None:
        scores = scores + mask
    probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    if active:
        probs = intervention.edit_probs(layer, probs)
    probs = nn.functional.dropout(probs, p=dropout, training=module.training)
    out = torch.matmul(probs, value_states).transpose(1, 2).contiguous()
    return out, probs


TEXT_ROUTING_ATTR = "icml26_text_routed_from"
"""Attribute of a blocked layer's attention module: the first position after the image block."""

LOGIT_CAP_ATTR = "icml26_logit_cap"
"""Attribute of a capped layer's attention module: the soft cap ``c`` of its scaled logits."""


def text_routing_mask(n_queries: int, n_keys: int, text_start: int, *, dtype: torch.dtype = torch.float32,
                      device: torch.device | str | None = None) -> torch.Tensor:
    """``(1, 1, Q, K)`` additive mask of a blocked layer: ``-inf`` where a query at absolute position
    ``q >= text_start`` would attend to a key ``k >= text_start`` other than itself. The queries are the
    last ``Q`` of the ``K`` positions (prefill, training and cached decoding alike; no left padding)."""
    n_queries = check_int(n_queries, "n_queries", low=1)
    n_keys = check_int(n_keys, "n_keys", low=n_queries)
    text_start = check_int(text_start, "text_start", low=0)
    q = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]
    k = torch.arange(n_keys, device=device)[None, :]
    blocked = (q >= text_start) & (k >= text_start) & (k != q)
    return torch.zeros(blocked.shape, dtype=dtype, device=device).masked_fill(blocked, float("-inf"))[None, None]


def route_text_attention(model: nn.Module, *, text_start: int, text_layers: tuple[int, ...] | list[int]) -> nn.Module:
    """Make every decoder layer outside ``text_layers`` a blocked layer (see the module docstring).

    The decoder then runs :func:`fox_attention_forward` for good (``use_fox_attention`` leaves it so); the
    vision tower keeps its own attention. Returns ``model``.

    Args:
        model: a vision-language model whose prompts put every image token before position ``text_start``
            (ShapeScenes: ``<s> look at :`` then the image tokens) and pad on the right only.
        text_start: the first position after the image block.
        text_layers: the decoder layers in which text may attend to earlier text (may be empty).
    """
    text_start = check_int(text_start, "text_start", low=1)
    return _mark_layers(model, TEXT_ROUTING_ATTR, text_layers, "text_layers", inside=None, outside=text_start)


def cap_attention_logits(model: nn.Module, *, cap: float, layers: tuple[int, ...] | list[int] | None = None
                         ) -> nn.Module:
    """Soft-cap the scaled attention logits of the decoder layers ``layers`` (every layer if ``None``):
    ``s ← cap·tanh(s/cap)`` before the mask and before any intervention (see the module docstring).

    The decoder then runs :func:`fox_attention_forward` for good; the vision tower keeps its own
    attention. A layer not named keeps its logits as they are. Returns ``model``.

    Args:
        model: a Hugging Face (vision-)language model whose decoder routes attention through
            ``AttentionInterface``.
        cap: the cap ``c > 0`` (logits then lie in ``(−c, c)``).
        layers: decoder layer indices, or ``None`` for all.
    """
    cap = check_real(cap, "cap", low=0.0, low_open=True)
    return _mark_layers(model, LOGIT_CAP_ATTR, layers, "layers", inside=cap, outside=None)


def _mark_layers(model: nn.Module, attr: str, layers, name: str, *, inside: Any, outside: Any) -> nn.Module:
    """Set ``attr`` on every decoder attention module: ``inside`` in the layers named (every layer for
    ``None``), ``outside`` in the others; the decoder then runs :func:`fox_attention_forward`."""
    decoder = language_model(model)
    modules = [m for m in decoder.modules() if isinstance(getattr(m, "layer_idx", None), int)]
    if not modules:
        raise ValueError(f"{type(decoder).__name__} has no attention modules with layer_idx")
    n_layers = 1 + max(m.layer_idx for m in modules)
    if layers is None:
        chosen = frozenset(range(n_layers))
    else:
        if isinstance(layers, (str, bytes)):
            raise TypeError(f"{name} must be a sequence of decoder layer indices (or None for all)")
        chosen = frozenset(check_int(v, name, low=0) for v in layers)
        _check_num_layers(chosen, n_layers)
    decoder.set_attn_implementation(register_fox_attention())
    for m in modules:
        setattr(m, attr, inside if m.layer_idx in chosen else outside)
    return model


def register_fox_attention() -> str:
    """Register :func:`fox_attention_forward` (and ``eager_mask`` for its masks); return the name."""
    global _REGISTERED
    if not _REGISTERED:
        transformers = require("transformers", "lm")
        from transformers.masking_utils import AttentionMaskInterface, eager_mask

        transformers.AttentionInterface.register(ATTN_IMPLEMENTATION, fox_attention_forward)
        AttentionMaskInterface.register(ATTN_IMPLEMENTATION, eager_mask)
        _REGISTERED = True
    return ATTN_IMPLEMENTATION


def language_model(model: nn.Module) -> nn.Module:
    """The decoder (text) model of a vision-language model: ``model.model.language_model`` and kin."""
    for path in ("model.language_model", "language_model", "model.text_model"):
        obj: Any = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.Module) and hasattr(obj, "set_attn_implementation"):
            return obj
    get_decoder = getattr(model, "get_decoder", None)
    if callable(get_decoder):
        decoder = get_decoder()
        if isinstance(decoder, nn.Module) and decoder is not model and hasattr(decoder, "set_attn_implementation"):
            return decoder
    raise ValueError(f"found no language model inside {type(model).__name__}; pass a Hugging Face "
                     "vision-language model (LlavaForConditionalGeneration, Qwen2VLForConditionalGeneration …)")


@contextlib.contextmanager
def use_fox_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, the model's decoder runs :func:`fox_attention_forward`; restored on exit.

    Yields the decoder. The vision tower keeps its own implementation.
    """
    name = register_fox_attention()
    decoder = language_model(model)
    if not any(hasattr(m, "layer_idx") for m in decoder.modules()):
        raise ValueError(f"{type(decoder).__name__} has no attention modules with layer_idx; Fox needs a "
                         "transformers 5.x decoder that routes attention through AttentionInterface")
    previous = decoder.config._attn_implementation
    if previous != name:
        decoder.set_attn_implementation(name)
    try:
        yield decoder
    finally:
        if previous != name:
            decoder.set_attn_implementation(previous)


@contextlib.contextmanager
def active_intervention(intervention: AttentionIntervention | None) -> Iterator[None]:
    """Make ``intervention`` (or none) the current one for :func:`fox_attention_forward`."""
    if intervention is not None and not (hasattr(intervention, "edit_scores") and hasattr(intervention, "edit_probs")):
        raise TypeError("intervention must have edit_scores(layer, scores, mask) and edit_probs(layer, probs)")
    token = _ACTIVE.set(intervention)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def current_intervention() -> AttentionIntervention | None:
    """The intervention active in this context (``None`` outside :func:`active_intervention`)."""
    return _ACTIVE.get()


def _check_num_layers(layers: frozenset[int], n_layers: int) -> None:
    bad = sorted(v for v in layers if v >= n_layers)
    if bad:
        raise ValueError(f"layers {bad} are out of range for a decoder with {n_layers} layers (0..{n_layers - 1})")
