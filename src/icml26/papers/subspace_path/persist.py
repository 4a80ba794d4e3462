"""Save and reload a model whose heads :func:`~icml26.papers.subspace_path.prune_heads` removed.

A pruned model's layers have fewer heads than its config says, so ``from_pretrained`` refuses its
weights (size mismatch). :func:`prune_heads` records the kept heads in the config
(``subspace_path_kept_heads``); :func:`save_pruned` writes the model with them and :func:`load_pruned`
builds the dense architecture from the config, prunes it the same way and loads the weights, all of
them, with their shapes checked. (:func:`~icml26.papers.subspace_path.mask_heads` is a context for an
evaluation and changes no weight: prune to keep the result.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from icml26.common.extras import require
from icml26.common.hf import saved_state_dict
from icml26.papers.subspace_path.heads import KEPT_HEADS, attention_layout, prune_heads

__all__ = ["load_pruned", "save_pruned"]


def save_pruned(model: nn.Module, path: str | os.PathLike, **kwargs: Any) -> None:
    """``model.save_pretrained(path, **kwargs)`` for a model pruned with :func:`prune_heads` (the kept
    heads are in its config). Raises ``ValueError`` for a model that was not pruned."""
    if getattr(getattr(model, "config", None), KEPT_HEADS, None) is None:
        raise ValueError("model was not pruned with prune_heads (its config records no kept heads); "
                         "save a dense model with model.save_pretrained")
    model.save_pretrained(path, **kwargs)


def load_pruned(path: str | os.PathLike, model_class: Any = None, **kwargs: Any) -> nn.Module:
    """Reload a model saved with :func:`save_pruned`: the dense architecture from its config, pruned to
    the recorded heads, then every saved weight (a missing or extra weight is an error).

    Args:
        path: the folder :func:`save_pruned` wrote.
        model_class: the ``transformers`` class (default ``AutoModelForCausalLM``).
        kwargs: passed to ``model_class.from_config`` (e.g. ``torch_dtype``).
    """
    transformers = require("transformers", "lm")
    path = Path(path)
    config = transformers.AutoConfig.from_pretrained(path)
    kept = getattr(config, KEPT_HEADS, None)
    if kept is None:
        raise ValueError(f"{path}: config.json records no kept heads; was it saved with save_pruned?")
    delattr(config, KEPT_HEADS)
    cls = model_class or transformers.AutoModelForCausalLM
    model = cls.from_config(config, **kwargs)
    layouts = attention_layout(model)
    if len(kept) != len(layouts):
        raise ValueError(f"{path}: kept heads for {len(kept)} layers, the model has {len(layouts)}")
    keep = []
    for i, (heads, lay) in enumerate(zip(kept, layouts)):
        if not heads or any(not 0 <= h < lay.n_heads for h in heads):
            raise ValueError(f"{path}: layer {i}'s kept heads {heads} do not fit its {lay.n_heads} heads")
        row = torch.zeros(lay.n_heads, dtype=torch.bool)
        row[list(heads)] = True
        keep.append(row)
    prune_heads(model, keep)
    state = saved_state_dict(path)
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if unexpected or set(missing) - tied:
        raise ValueError(f"{path}: the saved weights do not match the pruned model "
                         f"(missing {sorted(set(missing) - tied)[:3]}, unexpected {sorted(unexpected)[:3]})")
    if tied:
        model.tie_weights()
    return model.eval()
