"""Baselines of the HiCI paper: LongLoRA's S²-Attn and linear RoPE position interpolation.

* :func:`icml26.papers.hici.s2attn.patch` (``s2attn_patch`` here): shifted sparse attention.
* :func:`position_interpolation` (Chen et al., 2023): positions scaled by ``1 / factor``, i.e. RoPE's
  inverse frequencies divided by ``factor``, so a model trained on N tokens sees N * factor tokens
  inside its trained position range. Every arm of the reproduction uses it (the authors' recipe).
"""

from __future__ import annotations

import math

from torch import nn

from icml26.papers.hici.patch import _supported_model
from icml26.papers.hici.s2attn import patch as s2attn_patch

__all__ = ["position_interpolation", "s2attn_patch"]


def position_interpolation(model: nn.Module, factor: float) -> nn.Module:
    """Linear RoPE position interpolation by ``factor`` (in place; composes with an earlier one).

    Args:
        model: ``LlamaForCausalLM`` or ``Qwen3ForCausalLM``, possibly PEFT-wrapped.
        factor: target context / trained context, >= 1 (1: no change).

    Returns:
        The same model, its rotary embedding's inverse frequencies divided by ``factor`` and its
        config's ``rope_parameters`` / ``max_position_embeddings`` updated to match.
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor < 1:
        raise ValueError(f"factor={factor!r} must be a finite number >= 1 (target context / trained context)")
    inner = _supported_model(model)
    rotary = inner.model.rotary_emb
    # theta_j' = theta_j / factor  <=>  position m -> m / factor
    rotary.inv_freq.div_(factor)
    if hasattr(rotary, "original_inv_freq"):
        rotary.original_inv_freq.div_(factor)
    config = inner.config
    params = dict(getattr(config, "rope_parameters", None) or {})
    if params.get("rope_type", "default") in ("default", "linear"):
        params["factor"] = float(params.get("factor", 1.0)) * float(factor) if params.get("rope_type") == "linear" \
            else float(factor)
        params["rope_type"] = "linear"
        config.rope_parameters = params
    config.max_position_embeddings = int(round(config.max_position_embeddings * factor))
    rotary.max_seq_len_cached = config.max_position_embeddings
    return model
