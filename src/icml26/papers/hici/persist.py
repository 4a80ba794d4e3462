"""Save and reload a HiCI-patched model with its configuration.

A plain ``model.save_pretrained`` writes HiCI's weights, but ``from_pretrained`` rebuilds an unpatched
model and drops them (an "unexpected keys" report): the :class:`HiCIConfig` lives on the patched
layers, not in the model's config. :func:`save_pretrained` stores it in the config (``config.hici``);
:func:`from_pretrained` loads the base model, patches it with the stored configuration and loads every
HiCI weight, refusing a checkpoint whose HiCI weights do not match one for one.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from torch import nn

from icml26.common.extras import require
from icml26.papers.hici.config import HiCIConfig
from icml26.papers.hici.patch import _supported_model, attention_layers, is_patched, patch

__all__ = ["from_pretrained", "save_pretrained"]

_HICI_KEYS = ("local_constructor.", "global_integrator.", "prefix_gate.")


def save_pretrained(model: nn.Module, path: str | os.PathLike, **kwargs: Any) -> None:
    """``model.save_pretrained(path, **kwargs)`` with the :class:`HiCIConfig` stored in ``config.json``.

    Raises ``ValueError`` if ``model`` is not patched with HiCI (a plain model needs no helper).
    """
    if is_patched(model) != "hici":
        raise ValueError("model is not patched with HiCI; save it with model.save_pretrained")
    config = attention_layers(model)[0].hici_config
    inner = _supported_model(model)
    inner.config.hici = dataclasses.asdict(config)
    try:
        model.save_pretrained(path, **kwargs)
    finally:
        del inner.config.hici


def from_pretrained(path: str | os.PathLike, model_class: Any = None, **kwargs: Any) -> nn.Module:
    """Reload a model saved with :func:`save_pretrained`: patched, with its HiCI weights and inference mode.

    Args:
        path: the folder :func:`save_pretrained` wrote.
        model_class: the ``transformers`` class to load (default ``AutoModelForCausalLM``).
        kwargs: passed to ``model_class.from_pretrained`` (``torch_dtype``, ``device_map`` …).
    """
    transformers = require("transformers", "lm")
    from icml26.common.hf import quiet_transformers, saved_state_dict

    path = Path(path)
    config = transformers.AutoConfig.from_pretrained(path)
    stored = getattr(config, "hici", None)
    if not isinstance(stored, dict):
        raise ValueError(f"{path}: config.json holds no HiCI configuration; was it saved with hici.save_pretrained?")
    hici_config = HiCIConfig(**stored)
    cls = model_class or transformers.AutoModelForCausalLM
    with quiet_transformers():  # the HiCI weights are "unexpected" to the unpatched class; they are loaded below
        model = cls.from_pretrained(path, **kwargs)
    del _supported_model(model).config.hici
    patch(model, hici_config)
    expected = {k for k in model.state_dict() if any(t in k for t in _HICI_KEYS)}
    saved = saved_state_dict(path, keep=lambda k: any(t in k for t in _HICI_KEYS))
    if set(saved) != expected:
        missing, extra = sorted(expected - set(saved)), sorted(set(saved) - expected)
        raise ValueError(f"{path}: the saved HiCI weights do not match the configuration "
                         f"(missing {missing[:3]}{'…' if len(missing) > 3 else ''}, "
                         f"unexpected {extra[:3]}{'…' if len(extra) > 3 else ''})")
    model.load_state_dict(saved, strict=False)
    return model
