"""Save and reload a quantised DiT (:func:`~icml26.papers.robuq.quantize_dit`) exactly.

A quantised model's Linears hold the rotated latent weights ``W H``; saved with a plain
``save_pretrained`` and reloaded by ``from_pretrained``, they would come back as plain Linears on
rotated weights: a model unlike both the float and the quantised one. So :func:`quantize_dit` makes the
model's own ``save_pretrained`` refuse (pointing here), :func:`save_quantized` writes the weights
(safetensors), the base model's config and every quantised layer's settings (``robuq.json``: bits,
quantiser options, ternary, per-channel), and :func:`load_quantized` rebuilds the same layers before
loading the weights, refusing any mismatch. ``packed=True`` stores each ternary weight at 2 bits
(:mod:`~icml26.papers.robuq.packed`) instead of its float latent weight, for inference.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from torch import nn

from icml26.papers.robuq.packed import PackedQuantLinear, pack_model
from icml26.papers.robuq.quant import QUANTIZER_FIELDS, QuantLinear, RobustQuantizer

__all__ = ["load_quantized", "save_quantized"]

MANIFEST = "robuq.json"
_EXTRA = "_extra_state"  # a layer's settings in its state dict; robuq.json carries them here


class RefusePlainSave:
    """Installed as a quantised model's ``save_pretrained`` (an instance attribute, picklable): a plain
    save would reload the rotated weights into plain Linears."""

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("this model is quantized with robuq.quantize_dit; a plain save_pretrained would reload "
                           "its rotated weights into plain Linears. Use icml26.papers.robuq.save_quantized(model, "
                           "path) and load_quantized(path)")


def _layers(model: nn.Module) -> dict[str, dict[str, Any]]:
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, (QuantLinear, PackedQuantLinear)):
            q = module.quantizer
            out[name] = {"in_features": module.in_features, "out_features": module.out_features,
                         "bias": module.bias is not None, "ternary": module.ternary, "per_channel": module.per_channel,
                         "packed": isinstance(module, PackedQuantLinear),
                         "quantizer": None if q is None else {f: getattr(q, f) for f in QUANTIZER_FIELDS}}
    return out


def save_quantized(model: nn.Module, path: str | os.PathLike, *, packed: bool = False) -> Path:
    """Write ``model`` (quantised by :func:`quantize_dit`) to the folder ``path``; returns it.

    The folder holds ``model.safetensors`` (every parameter and buffer), ``robuq.json`` (each quantised
    layer's settings) and, for a ``diffusers`` model, its ``config.json``. ``packed=True`` writes each
    ternary layer's weight as 2-bit codes and its scale (:func:`~icml26.papers.robuq.packed.pack_model`
    on a copy; ``model`` is untouched): the reloaded model gives the same outputs and cannot be trained
    further. A model already packed is written packed.
    """
    import copy

    from safetensors.torch import save_file

    if packed and any(isinstance(m, QuantLinear) and m.ternary for m in model.modules()):
        model = pack_model(copy.deepcopy(model))
    layers = _layers(model)
    if not layers:
        raise ValueError("model has no QuantLinear layer; quantize it with quantize_dit first (or save it plainly)")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items() if not k.endswith(_EXTRA)}
    save_file(state, str(folder / "model.safetensors"))
    manifest = {"class": f"{type(model).__module__}.{type(model).__qualname__}", "layers": layers}
    if hasattr(model, "save_config"):  # diffusers ConfigMixin: enough to rebuild the architecture
        model.save_config(str(folder))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return folder


def load_quantized(path: str | os.PathLike, model: nn.Module | None = None) -> nn.Module:
    """Rebuild a model saved by :func:`save_quantized`.

    Args:
        path: the folder.
        model: a fresh, unquantised model of the same architecture to load into (in place); optional
            for a ``diffusers`` model, whose class and config were saved.

    Returns the model in eval mode, as ``from_pretrained`` does.
    """
    from safetensors.torch import load_file

    from icml26.papers.robuq.quantize import _set_submodule

    folder = Path(path)
    if not (folder / MANIFEST).is_file():
        raise ValueError(f"{folder}: no {MANIFEST}; was it saved with robuq.save_quantized?")
    manifest = json.loads((folder / MANIFEST).read_text())
    if model is None:
        module_name, _, cls_name = manifest["class"].rpartition(".")
        if not module_name.startswith("diffusers"):
            raise ValueError(f"{folder} holds a {manifest['class']}; pass model= (a fresh instance of it) to load into")
        import importlib

        cls = getattr(importlib.import_module(module_name), cls_name)
        model = cls.from_config(cls.load_config(str(folder)))
    for name, spec in manifest["layers"].items():
        try:
            linear = model.get_submodule(name)
        except AttributeError:
            raise ValueError(f"{folder}: layer {name} is not in the model; is it the same architecture?") from None
        if not isinstance(linear, nn.Linear) or (linear.in_features, linear.out_features) != \
                (spec["in_features"], spec["out_features"]):
            raise ValueError(f"{folder}: layer {name} is {linear!r} in the model, the saved one is "
                             f"{spec['in_features']} -> {spec['out_features']}")
        q = None if spec["quantizer"] is None else RobustQuantizer(**spec["quantizer"])
        if spec.get("packed", False):
            layer = PackedQuantLinear(linear.in_features, linear.out_features, linear.bias is not None, quantizer=q,
                                      per_channel=spec["per_channel"], dtype=linear.weight.dtype,
                                      device=linear.weight.device)
        else:
            layer = QuantLinear.from_linear(linear, q, ternary=spec["ternary"], per_channel=spec["per_channel"])
        _set_submodule(model, name, layer)
    missing, unexpected = model.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
    missing = [k for k in missing if not k.endswith(_EXTRA)]  # the layers were rebuilt from robuq.json's settings
    if missing or unexpected:
        raise ValueError(f"{folder}: the saved weights do not match the rebuilt model "
                         f"(missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")
    if hasattr(model, "save_pretrained"):
        model.save_pretrained = RefusePlainSave()
    return model.eval()
