"""Turning a DiT into a W1.58A\\ *b* model: :func:`quantize_dit` and its helpers.

The scope (brief §1.1, the convention of BinaryDM and EfficientDM): every ``nn.Linear`` inside the
transformer blocks -- attention q/k/v (or a fused qkv) and output, the MLP, and the adaLN
modulation -- becomes a :class:`~icml26.papers.robuq.quant.QuantLinear` with ternary weights and
a per-token activation quantizer. The patch embedding, the timestep and label embedders
(diffusers keeps one per block, under ``norm1.emb``) and the final layer stay in full precision.

Supported models: our :class:`~icml26.papers.robuq.model.TinyDiT` (blocks under ``blocks``) and
``diffusers.DiTTransformer2DModel`` (the class of facebook/DiT-XL-2-256; blocks under
``transformer_blocks``). Any model whose blocks are an ``nn.ModuleList`` attribute works with
``blocks_attr=``.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.robuq.quant import MAX_BITS, QuantLinear, RobustQuantizer

__all__ = [
    "DEFAULT_QUANTIZER",
    "collect_linear_inputs",
    "dit_linear_names",
    "layer_macs",
    "quantize_dit",
    "quantized_layers",
    "set_act_bits",
]

#: RobuQ's default activation quantizer options (our reading of the paper, brief §6).
DEFAULT_QUANTIZER: dict[str, Any] = {"scale": "gauss", "grid": "midrise", "rotate": True}

QuantizerSpec = Mapping[str, Any] | RobustQuantizer | Callable[[int], RobustQuantizer] | None


def _blocks(model: nn.Module, blocks_attr: str | None) -> tuple[str, nn.ModuleList]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    candidates = [blocks_attr] if blocks_attr is not None else ["blocks", "transformer_blocks"]
    for name in candidates:
        blocks = getattr(model, name, None)
        if isinstance(blocks, nn.ModuleList):
            return name, blocks
    raise ValueError(f"model ({type(model).__name__}) has no nn.ModuleList of transformer blocks under "
                     f"{' or '.join(repr(c) for c in candidates)}; pass blocks_attr= the attribute that holds them")


def dit_linear_names(model: nn.Module, *, blocks_attr: str | None = None) -> list[str]:
    """The qualified names of the Linears RobuQ quantizes: inside the blocks, not in an embedder.

    Already-quantized layers (:class:`QuantLinear`) are listed too, so the names stay valid after
    :func:`quantize_dit`.
    """
    attr, blocks = _blocks(model, blocks_attr)
    names = []
    for i, block in enumerate(blocks):
        for sub, module in block.named_modules():
            if isinstance(module, (nn.Linear, QuantLinear)) and "emb" not in sub:
                names.append(f"{attr}.{i}.{sub}")
    return names


def _matches(name: str, skip: Iterable[str] | Callable[[str], bool]) -> bool:
    if callable(skip):
        return bool(skip(name))
    return any(name == pattern or fnmatch.fnmatchcase(name, pattern) for pattern in skip)


def _factory(quantizer: QuantizerSpec) -> Callable[[int], RobustQuantizer]:
    if quantizer is None:
        return lambda bits: RobustQuantizer(bits, **DEFAULT_QUANTIZER)
    if isinstance(quantizer, RobustQuantizer):
        return quantizer.with_bits
    if isinstance(quantizer, Mapping):
        options = dict(quantizer)
        if "bits" in options:
            raise ValueError("quantizer options must not contain 'bits'; pass act_bits= instead")
        RobustQuantizer(4 if options.get("grid") != "ternary" else 2, **options)  # validate the options now
        return lambda bits: RobustQuantizer(bits, **options)
    if callable(quantizer):
        return quantizer
    raise TypeError(f"quantizer must be a dict of RobustQuantizer options, a RobustQuantizer, a callable "
                    f"bits -> quantizer, or None; got {type(quantizer).__name__}")


def _set_submodule(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, module)


def quantize_dit(model: nn.Module, act_bits: int | Mapping[str, int] | None = 4, *, quantizer: QuantizerSpec = None,
                 skip: Iterable[str] | Callable[[str], bool] = (), ternary: bool = True, per_channel: bool = False,
                 blocks_attr: str | None = None, rotate_weights: bool = False) -> nn.Module:
    """Replace the DiT's block Linears by :class:`QuantLinear` (ternary weights, b-bit activations), in place.

    Args:
        model: a :class:`~icml26.papers.robuq.model.TinyDiT`, a ``diffusers.DiTTransformer2DModel``, or
            any model with its blocks in an ``nn.ModuleList`` (see ``blocks_attr``).
        act_bits: one activation bit-width for every layer, or ``{name: bits}`` for each layer in scope
            (names from :func:`dit_linear_names`, minus ``skip``; AMPN's allocation), or ``None`` for
            full-precision activations (W1.58A16).
        quantizer: the activation quantizer: a dict of :class:`RobustQuantizer` options (default
            :data:`DEFAULT_QUANTIZER`: Gaussian scale, midrise grid, Hadamard rotation), a template
            :class:`RobustQuantizer` (its options, each layer its own bits), or ``bits -> quantizer``.
        skip: names or ``fnmatch`` patterns of in-scope Linears to leave in full precision (each must
            match one), or a predicate on the name.
        ternary: ternarise the weights (BitNet b1.58); ``False`` keeps them in full precision.
        per_channel: one ternary scale per output row instead of per tensor.
        blocks_attr: the attribute holding the blocks (default: ``blocks`` or ``transformer_blocks``).
        rotate_weights: with ``act_bits=None``, still rotate as ``quantizer`` would (``W D H`` ternarised,
            activations rotated but not quantised): W1.58A16 on the weights RobuQ ternarises, the
            control that separates the activation quantiser from the rotation's effect on the weights.

    Returns:
        ``model`` itself, modified. The latent weights are copies of the Linears' (rotated as ``W H``
        where the quantizer rotates), so before rounding the function is unchanged.
    """
    names = dit_linear_names(model, blocks_attr=blocks_attr)
    _check_act_bits(act_bits)
    if isinstance(skip, str):
        raise TypeError(f"skip={skip!r} must be a list of names or patterns, not one string; pass [{skip!r}]")
    if not callable(skip):
        skip = list(skip)
        for pattern in skip:
            if not any(n == pattern or fnmatch.fnmatchcase(n, pattern) for n in names):
                raise ValueError(f"skip entry {pattern!r} matches no quantizable layer; layers look like "
                                 f"{names[:3]}")
    targets = [n for n in names if not _matches(n, skip)]
    already = [n for n in targets if isinstance(model.get_submodule(n), QuantLinear)]
    if already:
        raise ValueError(f"model is already quantized ({already[0]} is a QuantLinear); quantize a fresh copy")
    if rotate_weights and act_bits is not None:
        raise ValueError(f"rotate_weights=True is the W1.58A16 control and needs act_bits=None, got {act_bits!r}")
    if act_bits is None:
        bits_of: dict[str, int | None] = {n: None for n in targets}
    elif isinstance(act_bits, Mapping):
        unknown = sorted(set(act_bits) - set(targets))
        missing = [n for n in targets if n not in act_bits]
        if unknown:
            raise ValueError(f"act_bits names layers that are not quantized here: {unknown[:4]}; "
                             f"see dit_linear_names(model)")
        if missing:
            raise ValueError(f"act_bits gives no bit-width for {missing[:4]} ({len(missing)} layers); "
                             "give one for every layer in scope or list them in skip=")
        bits_of = dict(act_bits)
    else:
        bits_of = {n: act_bits for n in targets}
    make = _factory(quantizer)
    for name in targets:
        linear = model.get_submodule(name)
        bits = bits_of[name]
        q = None if bits is None else make(bits)
        if bits is None and rotate_weights:
            q = make(2)
            if not isinstance(q, RobustQuantizer):
                raise TypeError(f"quantizer factory returned {type(q).__name__}; it must return a RobustQuantizer")
            if not q.rotate:
                raise ValueError("rotate_weights=True needs a quantizer that rotates (rotate=True)")
            q.quantize = False
        if q is not None and not isinstance(q, RobustQuantizer):
            raise TypeError(f"quantizer factory returned {type(q).__name__}; it must return a RobustQuantizer")
        _set_submodule(model, name, QuantLinear.from_linear(linear, q, ternary=ternary, per_channel=per_channel))
    if hasattr(model, "save_pretrained"):  # a plain save would reload W·H into plain Linears: see save_quantized
        from icml26.papers.robuq.persist import RefusePlainSave

        model.save_pretrained = RefusePlainSave()
    return model


def _check_act_bits(act_bits: int | Mapping[str, int] | None) -> None:
    """``act_bits`` is None, an int in ``[1, MAX_BITS]`` or a mapping of names to such ints (the quantizer's
    grid may ask for more: ``grid="int"`` needs 2 bits, ``grid="ternary"`` exactly 2)."""
    if act_bits is None:
        return
    if isinstance(act_bits, Mapping):
        for name, bits in act_bits.items():
            check_int(bits, f"act_bits[{name!r}]", low=1, high=MAX_BITS)
    else:
        check_int(act_bits, "act_bits", low=1, high=MAX_BITS)


def quantized_layers(model: nn.Module) -> dict[str, QuantLinear]:
    """``{name: QuantLinear}`` of every quantized layer of ``model``, in module order."""
    return {n: m for n, m in model.named_modules() if isinstance(m, QuantLinear)}


def set_act_bits(model: nn.Module, act_bits: int | Mapping[str, int]) -> None:
    """Set the activation bit-width of every quantized layer (an int) or of the named ones (a dict)."""
    if act_bits is None:
        raise TypeError("act_bits must be an int or {name: int}, not None (quantizers cannot be removed here)")
    _check_act_bits(act_bits)
    layers = quantized_layers(model)
    if not layers:
        raise ValueError("model has no QuantLinear layers; call quantize_dit first")
    items = act_bits.items() if isinstance(act_bits, Mapping) else [(n, act_bits) for n in layers]
    for name, bits in items:
        if name not in layers:
            raise ValueError(f"act_bits names {name!r}, which is not a quantized layer")
        if layers[name].quantizer is None:
            raise ValueError(f"layer {name!r} has full-precision activations (no quantizer)")
        layers[name].quantizer.bits = bits  # type: ignore[union-attr]


def collect_linear_inputs(model: nn.Module, forward: Callable[[], Any], names: Iterable[str]) -> dict[str, Tensor]:
    """The inputs (before any quantization) of the named Linears during ``forward()``, as ``(tokens, d)``.

    Args:
        forward: a no-argument call that runs ``model`` once (e.g. ``lambda: model(x, t, y)``).
        names: qualified names of ``nn.Linear`` / :class:`QuantLinear` modules.
    """
    store: dict[str, list[Tensor]] = {}
    handles = []
    for name in names:
        module = model.get_submodule(name)

        def hook(mod, inputs, _output, name=name):
            x = inputs[0].detach()
            store.setdefault(name, []).append(x.reshape(-1, x.shape[-1]))

        handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            forward()
    finally:
        for h in handles:
            h.remove()
    return {n: torch.cat(v) for n, v in store.items()}


def layer_macs(model: nn.Module, forward: Callable[[], Any], names: Iterable[str] | None = None) -> dict[str, int]:
    """Multiply-accumulates of each named Linear during ``forward()``: ``tokens · in · out``.

    ``names`` defaults to :func:`quantized_layers`. The MAC-weighted AMPN budget uses these.
    """
    names = list(quantized_layers(model)) if names is None else list(names)
    inputs = collect_linear_inputs(model, forward, names)
    macs = {}
    for name in names:
        module = model.get_submodule(name)
        tokens = inputs[name].shape[0] if name in inputs else 0
        macs[name] = int(tokens * module.in_features * module.out_features)
    return macs
