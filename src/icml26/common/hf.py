"""Small helpers for any Hugging Face model, shared by the papers that patch or probe one.

* :func:`num_layers` and :func:`decoder_blocks` find a decoder's block stack whatever the
  architecture calls it (``transformer.h``, ``model.layers``, ``gpt_neox.layers`` …);
* :func:`cache_kwarg` names the keyword ``forward`` takes its key-value cache under, and
  :func:`output_cache` reads the cache a forward returned, under either name;
* :func:`quiet_transformers` silences transformers' load/save progress bars (the GGUF reader's
  own included) and warnings for the duration of a ``with`` block.

Needs the ``lm`` extra only where a function says so; the functions here import nothing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from torch import nn

__all__ = ["cache_kwarg", "decoder_blocks", "num_layers", "output_cache", "quiet_transformers", "saved_state_dict"]


def cache_kwarg(model: nn.Module) -> str:
    """The name ``model.forward`` takes its key-value cache under: ``"cache"`` (transformers >= 5.2x)
    or ``"past_key_values"`` (earlier, and deprecated after)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def output_cache(output: Any) -> Any:
    """The key-value cache a forward returned: ``output.cache`` (transformers >= 5.2x) or
    ``output.past_key_values`` (earlier); ``None`` when it returned none."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


def num_layers(model: nn.Module) -> int:
    """Number of transformer blocks ``L`` of a Hugging Face model (``hidden_states`` has ``L + 1``)."""
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError("model has no .config; pass a Hugging Face PreTrainedModel")
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    n = getattr(config, "num_hidden_layers", None)
    if not isinstance(n, int) or n < 1:
        raise ValueError("model.config has no positive num_hidden_layers; pass a Hugging Face causal LM")
    return n


def decoder_blocks(model: nn.Module) -> nn.ModuleList:
    """The model's stack of transformer blocks.

    The first ``nn.ModuleList`` with ``num_layers(model)`` entries in module order
    (``transformer.h`` for GPT-2, ``model.layers`` for Llama, ``gpt_neox.layers`` for
    Pythia …).
    """
    n = num_layers(model)
    for _, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) == n:
            return module
    raise ValueError(f"found no nn.ModuleList of {n} blocks in {type(model).__name__}; "
                     "this model does not follow the Hugging Face decoder layout")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Within the block, transformers shows no progress bars and logs errors only."""
    from icml26.common.extras import require

    transformers = require("transformers", "lm")
    logging_ = transformers.utils.logging
    bars = logging_.is_progress_bar_enabled()
    verbosity = logging_.get_verbosity()
    # the GGUF reader draws its own tqdm bar ("Converting and de-quantizing GGUF tensors"), which the
    # switch above does not reach: swap in a disabled one for the block
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # another transformers layout: leave its bar alone
        gguf_utils = None
    gguf_bar = getattr(gguf_utils, "tqdm", None)
    logging_.disable_progress_bar()
    logging_.set_verbosity_error()
    if gguf_bar is not None:
        gguf_utils.tqdm = functools.partial(gguf_bar, disable=True)
    try:
        yield
    finally:
        if gguf_bar is not None:
            gguf_utils.tqdm = gguf_bar
        logging_.set_verbosity(verbosity)
        if bars:
            logging_.enable_progress_bar()


def saved_state_dict(path: str | os.PathLike, keep: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The tensors a ``save_pretrained`` folder holds (``model.safetensors``, or every shard its
    ``model.safetensors.index.json`` names), only the names ``keep`` accepts when given.

    Raises ``FileNotFoundError`` naming a missing file.
    """
    from safetensors.torch import load_file

    path = Path(path)
    index = path / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.is_file() \
        else ["model.safetensors"]
    state: dict[str, Any] = {}
    for name in files:
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} is missing; is {path} a folder written by save_pretrained?")
        state.update({k: v for k, v in load_file(str(path / name)).items() if keep is None or keep(k)})
    return state
