"""Save and reload an :class:`~icml26.papers.instemb.InstEmbModel` with everything its embeddings depend
on: the backbone, its tokenizer, the K look-ahead vectors and the settings (pooling, DAAP weight …).

The frozen teacher is training-time state and is not saved; :func:`load_instemb` gives an encode-ready
model (``with_teacher=True`` makes a fresh teacher copy of the loaded backbone to train on).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from icml26.common.extras import require

__all__ = ["SentenceEncoder", "load_instemb", "save_instemb"]

MANIFEST = "instemb.json"


def save_instemb(model: Any, path: str | os.PathLike) -> Path:
    """Write ``model`` to the folder ``path`` (``backbone/``, ``tokenizer/``, ``lookahead.safetensors``,
    ``instemb.json``); returns the folder."""
    from safetensors.torch import save_file

    from icml26.papers.instemb.model import InstEmbModel

    if not isinstance(model, InstEmbModel):
        raise TypeError(f"model must be an InstEmbModel, got {type(model).__name__}")
    if not hasattr(model.backbone, "save_pretrained"):
        raise TypeError(f"the backbone ({type(model.backbone).__name__}) has no save_pretrained")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    backbone = model.backbone
    if model.teacher_shares_backbone or hasattr(backbone, "merge_and_unload"):  # LoRA: merge a copy, save it whole
        import copy

        backbone = copy.deepcopy(backbone).merge_and_unload()
    backbone.save_pretrained(folder / "backbone")
    if model.tokenizer is not None:
        if not hasattr(model.tokenizer, "save_pretrained"):
            raise TypeError("the tokenizer has no save_pretrained; save it yourself and pass tokenizer= to load_instemb")
        model.tokenizer.save_pretrained(folder / "tokenizer")
    save_file({"lookahead": model.lookahead.detach().cpu().contiguous()}, str(folder / "lookahead.safetensors"))
    manifest = {"backbone_class": type(backbone).__name__, "num_lookahead": model.num_lookahead,
                "kind": model.kind, "settings": dataclasses.asdict(model.settings)}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return folder


def load_instemb(path: str | os.PathLike, *, tokenizer: Any = None, with_teacher: bool = False, **kwargs: Any):
    """Reload a model saved by :func:`save_instemb`, in eval mode.

    Args:
        path: the folder.
        tokenizer: use this tokenizer instead of the saved one (required if none was saved).
        with_teacher: also build a frozen teacher (a copy of the loaded backbone) to train further.
        kwargs: passed to the backbone's ``from_pretrained`` (``torch_dtype``, ``device_map`` …).
    """
    import torch
    from safetensors.torch import load_file

    from icml26.papers.instemb.model import InstEmbModel, InstEmbSettings

    transformers = require("transformers", "lm")
    folder = Path(path)
    if not (folder / MANIFEST).is_file():
        raise ValueError(f"{folder}: no {MANIFEST}; was it saved with InstEmbModel.save / save_instemb?")
    manifest = json.loads((folder / MANIFEST).read_text())
    backbone_cls = getattr(transformers, manifest["backbone_class"], None)
    if backbone_cls is None:
        raise ValueError(f"{folder}: backbone class {manifest['backbone_class']!r} is not in transformers")
    backbone = backbone_cls.from_pretrained(folder / "backbone", **kwargs)
    if tokenizer is None and (folder / "tokenizer").is_dir():
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder / "tokenizer")
    model = InstEmbModel(backbone, manifest["num_lookahead"], tokenizer=tokenizer,
                         settings=InstEmbSettings(**manifest["settings"]), with_teacher=with_teacher,
                         kind=manifest["kind"])
    lookahead = load_file(str(folder / "lookahead.safetensors"))["lookahead"]
    if tuple(lookahead.shape) != tuple(model.lookahead.shape):
        raise ValueError(f"{folder}: look-ahead vectors of shape {tuple(lookahead.shape)}, the model needs "
                         f"{tuple(model.lookahead.shape)}")
    with torch.no_grad():
        model.lookahead.copy_(lookahead.to(model.lookahead))
    return model.eval()


class SentenceEncoder:
    """An :class:`~icml26.papers.instemb.InstEmbModel` behind the ``encode(sentences, **kwargs)`` call that
    sentence-transformers users and MTEB-style evaluation loops make, with one instruction fixed.

    ``encode`` returns a float32 NumPy array ``(n, d)`` of unit-norm rows (a tensor with
    ``convert_to_tensor=True``); ``batch_size`` is honoured; ``show_progress_bar``,
    ``normalize_embeddings`` (the rows are unit-norm already) and other keyword arguments such
    loops pass are accepted and ignored.
    """

    def __init__(self, model: Any, instruction: str | None, pooling: str | None = None) -> None:
        from icml26.papers.instemb.model import InstEmbModel

        if not isinstance(model, InstEmbModel):
            raise TypeError(f"model must be an InstEmbModel, got {type(model).__name__}")
        if instruction is not None and (not isinstance(instruction, str) or not instruction.strip()):
            raise ValueError("instruction must be a non-empty string, or None for the text alone")
        self.model, self.instruction, self.pooling = model, instruction, pooling

    def encode(self, sentences: Any, batch_size: int = 32, *, convert_to_tensor: bool = False, **_: Any) -> Any:
        single = isinstance(sentences, str)
        out = self.model.encode([sentences] if single else list(sentences), self.instruction, self.pooling,
                                batch_size=batch_size)
        out = out if convert_to_tensor else out.numpy()
        return out[0] if single else out
