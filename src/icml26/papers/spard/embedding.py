"""Embeddings for the DPP selection: what the *base* model makes of each example.

* a Hugging Face model and a tokenised batch (a mapping with ``input_ids`` and
  ``attention_mask``): the mean over real tokens of the last hidden state (authors'
  ``get_embeddings_optimized``);
* any other ``nn.Module`` and an input tensor: the input of its last ``nn.Linear`` (the
  penultimate features of a classifier), or of the module passed as ``layer``.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn

from icml26.common.argcheck import require_finite

__all__ = ["embed"]


def _last_linear(model: nn.Module) -> nn.Module:
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError("model has no nn.Linear layer; pass layer= (the module whose input is the embedding)")
    return linears[-1]


def _device(model: nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


@torch.no_grad()
def embed(model: nn.Module, batch: Any, *, layer: nn.Module | None = None) -> torch.Tensor:
    """Embeddings ``(n, d)`` float32 of one batch under ``model`` (eval mode, no gradient).

    Args:
        model: the base model (a Hugging Face model, PEFT-wrapped or not, or any ``nn.Module``).
        batch: a mapping ``{"input_ids": (n, T), "attention_mask": (n, T), …}`` for a Hugging
            Face model (``labels`` are ignored), or an input tensor ``(n, …)``.
        layer: plain models only: the module whose *input* is returned (default: the last
            ``nn.Linear`` in ``model.modules()`` order, i.e. a classifier's head).

    Mean pooling over the attention mask (``e = Σ_t m_t h_t / Σ_t m_t``); a row with no real
    token is refused. Features with extra dimensions (``(n, T, d)``) are averaged to ``(n, d)``.
    The model's train/eval mode is restored afterwards. NaN in the features raises.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    was_training = model.training
    model.eval()
    try:
        if isinstance(batch, Mapping) or (hasattr(batch, "keys") and hasattr(batch, "__getitem__")):
            if "input_ids" not in batch:
                raise ValueError("a mapping batch must hold 'input_ids' (and 'attention_mask')")
            ids = batch["input_ids"].to(_device(model))
            mask = batch.get("attention_mask") if hasattr(batch, "get") else None
            mask = torch.ones_like(ids) if mask is None else mask.to(ids.device)
            if bool((mask.sum(dim=1) == 0).any()):
                raise ValueError("attention_mask has a row with no real token; drop empty texts")
            out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            hidden = out.hidden_states[-1].float()  # (n, T, d)
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            # e = Σ_t m_t h_t / Σ_t m_t
            feats = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
        else:
            if not isinstance(batch, torch.Tensor):
                raise TypeError(f"batch must be a tensor or a mapping with input_ids, got {type(batch).__name__}")
            require_finite(batch, "batch", hint="embed finite inputs")
            target = _last_linear(model) if layer is None else layer
            if not isinstance(target, nn.Module):
                raise TypeError(f"layer must be an nn.Module inside model, got {type(target).__name__}")
            captured: list[torch.Tensor] = []
            handle = target.register_forward_hook(lambda mod, args, out: captured.append(args[0]))
            try:
                model(batch.to(_device(model)))
            finally:
                handle.remove()
            if not captured:
                raise ValueError("layer was not called in model's forward pass; pass a layer the forward uses")
            feats = captured[-1].float()
            if feats.ndim > 2:
                feats = feats.flatten(1, -2).mean(dim=1)
        require_finite(feats, "embeddings", hint="the model produced NaN/inf features")
        return feats.detach()
    finally:
        model.train(was_training)
