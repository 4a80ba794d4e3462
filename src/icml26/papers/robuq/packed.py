"""Real ternary storage: 2 bits per weight instead of the latent float weight.

QAT keeps a float latent weight ``W'`` per :class:`~icml26.papers.robuq.quant.QuantLinear` and ternarises
it in every forward pass (fake quantisation). Once trained, only the ternary weight is needed:
``Ŵ = γ · W_t`` with ``W_t ∈ {-1, 0, 1}`` and one scale ``γ`` (or one per output row). A
:class:`PackedQuantLinear` stores ``W_t`` as codes ``W_t + 1 ∈ {0, 1, 2}``, four to a byte (2 bits per
weight), and ``γ`` in the latent weight's dtype; its forward unpacks them into the very weight the
fake-quantised layer uses, bit for bit (``γ·t`` for ``t ∈ {-1, 0, 1}`` is exact; the fake-quantised
forward's straight-through form ``W + (Ŵ − W)`` itself rounds once at W's scale). It is for
inference: there is no latent weight left to train.

:func:`pack_model` swaps every ternary ``QuantLinear`` of a model for its packed form, in place,
:func:`model_bytes` measures what a model's parameters and buffers occupy, and :func:`memory_report` compares
a float model with its packed W1.58A*b* form (``python -m icml26.papers.robuq.packed OUT.json`` measures a
DiT-XL/2).
"""

from __future__ import annotations

from torch import Tensor, nn
import torch

from icml26.common.argcheck import check_int
from icml26.papers.robuq.quant import QuantLinear, RobustQuantizer, check_layer_settings, layer_settings
from icml26.papers.robuq.ternary import ternarize

__all__ = ["PackedQuantLinear", "memory_report", "model_bytes", "pack_model", "pack_ternary", "unpack_ternary"]

_SHIFTS = torch.tensor([0, 2, 4, 6], dtype=torch.uint8)


def pack_ternary(w_t: Tensor) -> Tensor:
    """Codes ``w_t + 1`` (``w_t`` with entries in {-1, 0, 1}, any shape), four per byte, as a 1-D ``uint8``."""
    flat = w_t.detach().reshape(-1)
    if flat.numel() and not bool(((flat == -1) | (flat == 0) | (flat == 1)).all()):
        raise ValueError("w_t must hold only -1, 0 and 1 (a ternarised weight divided by its scale)")
    codes = (flat.to(torch.int16) + 1).to(torch.uint8)
    pad = (-codes.numel()) % 4
    if pad:
        codes = torch.cat([codes, torch.ones(pad, dtype=torch.uint8, device=codes.device)])  # padded with 0s
    groups = codes.view(-1, 4) << _SHIFTS.to(codes.device)
    return groups[:, 0] | groups[:, 1] | groups[:, 2] | groups[:, 3]


def unpack_ternary(packed: Tensor, numel: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The first ``numel`` entries of :func:`pack_ternary`'s input, 1-D, as ``dtype`` values in {-1, 0, 1}."""
    if packed.dtype != torch.uint8 or packed.ndim != 1:
        raise ValueError(f"packed must be a 1-D uint8 tensor, got {packed.dtype} of shape {tuple(packed.shape)}")
    numel = check_int(numel, "numel", low=0)
    if not numel <= 4 * packed.numel():
        raise ValueError(f"numel={numel} does not fit in {packed.numel()} bytes (4 weights each)")
    codes = (packed.unsqueeze(1) >> _SHIFTS.to(packed.device)) & 3
    return codes.reshape(-1)[:numel].to(dtype) - 1


class PackedQuantLinear(nn.Module):
    """A trained W1.58A\\ *b* layer with its ternary weight packed at 2 bits (inference only).

    Buffers: ``weight_codes`` (``uint8``, ⌈out·in/4⌉ bytes), ``weight_scale`` (γ: 0-d, or ``(out, 1)``
    per channel) and the bias as a parameter. ``quantizer`` is the layer's activation quantizer (or None).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 quantizer: RobustQuantizer | None = None, per_channel: bool = False,
                 dtype: torch.dtype = torch.float32, device=None) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive int")
        if quantizer is not None and not isinstance(quantizer, RobustQuantizer):
            raise TypeError(f"quantizer must be a RobustQuantizer or None, got {type(quantizer).__name__}")
        self.in_features, self.out_features = in_features, out_features
        self.quantizer, self.per_channel, self.ternary = quantizer, bool(per_channel), True
        n = self.in_features * self.out_features
        self.register_buffer("weight_codes", torch.zeros((n + 3) // 4, dtype=torch.uint8, device=device))
        self.register_buffer("weight_scale", torch.ones((self.out_features, 1) if per_channel else (),
                                                        dtype=dtype, device=device))
        self.bias = nn.Parameter(torch.zeros(self.out_features, dtype=dtype, device=device)) if bias else None

    @classmethod
    def from_quant_linear(cls, layer: QuantLinear) -> "PackedQuantLinear":
        """The packed form of a ternary :class:`QuantLinear` (the same ternary weight, bit for bit)."""
        if not isinstance(layer, QuantLinear) or not layer.ternary:
            raise ValueError(f"only a ternary QuantLinear can be packed, got {layer!r}")
        w = layer.weight.detach()
        w_hat, gamma = ternarize(w, per_channel=layer.per_channel)
        packed = cls(layer.in_features, layer.out_features, layer.bias is not None, quantizer=layer.quantizer,
                     per_channel=layer.per_channel, dtype=w.dtype, device=w.device)
        # W_t = Ŵ / γ, exactly {-1, 0, 1}: Ŵ was built as γ·W_t (and a zero γ leaves W_t = 0)
        w_t = torch.where(w_hat == 0, torch.zeros_like(w_hat), torch.sign(w_hat))
        packed.weight_codes.copy_(pack_ternary(w_t))
        packed.weight_scale.copy_(gamma.reshape(packed.weight_scale.shape))
        if layer.bias is not None:
            packed.bias.data.copy_(layer.bias.detach())
        return packed

    @property
    def act_bits(self) -> int | None:
        return None if self.quantizer is None or not self.quantizer.quantize else self.quantizer.bits

    def quantized_weight(self) -> Tensor:
        """``γ · W_t``, shape ``(out_features, in_features)``."""
        w_t = unpack_ternary(self.weight_codes, self.in_features * self.out_features, self.weight_scale.dtype)
        return self.weight_scale * w_t.view(self.out_features, self.in_features)

    def forward(self, x: Tensor) -> Tensor:
        xq = self.quantizer(x) if self.quantizer is not None else x
        return nn.functional.linear(xq, self.quantized_weight(), self.bias)

    def get_extra_state(self) -> dict:
        """The layer's settings, saved in its state dict (:func:`~icml26.papers.robuq.quant.layer_settings`)."""
        return layer_settings(self)

    def set_extra_state(self, state) -> None:
        """Refuse weights saved by a layer with other settings."""
        check_layer_settings(self, state)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, packed=2 bits, per_channel={self.per_channel}")


def pack_model(model: nn.Module) -> nn.Module:
    """Replace every ternary :class:`QuantLinear` of ``model`` by its :class:`PackedQuantLinear`, in place.

    Each layer keeps its ternary weight bit for bit (outputs equal to float rounding); the model can no
    longer be trained (no latent weights).
    Returns ``model``.
    """
    from icml26.papers.robuq.quantize import _set_submodule

    targets = [n for n, m in model.named_modules() if isinstance(m, QuantLinear) and m.ternary]
    if not targets:
        raise ValueError("model has no ternary QuantLinear to pack; quantize it with quantize_dit first")
    for name in targets:
        _set_submodule(model, name, PackedQuantLinear.from_quant_linear(model.get_submodule(name)))
    return model


def model_bytes(model: nn.Module) -> int:
    """Bytes of ``model``'s parameters and buffers (shared tensors counted once)."""
    seen, total = set(), 0
    for t in [*model.parameters(), *model.buffers()]:
        if t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        total += t.numel() * t.element_size()
    return int(total)


def memory_report(float_model: nn.Module, act_bits: int = 2) -> dict[str, float]:
    """Measured bytes of ``float_model`` (float32) and of its W1.58A\\ *b* form packed at 2 bits per ternary weight.

    The model is quantised (:func:`~icml26.papers.robuq.quantize_dit`, RobuQ's quantizer) and packed on a copy;
    the embedders, final layer and norms stay in float, as in the reproduction. Returns ``float_bytes``,
    ``packed_bytes``, their ``ratio``, the share of parameters that are ternary and the parameter count.
    """
    import copy

    from icml26.papers.robuq.quantize import quantize_dit

    float_bytes = model_bytes(float_model)
    packed = pack_model(quantize_dit(copy.deepcopy(float_model), act_bits))
    layers = [m for m in packed.modules() if isinstance(m, PackedQuantLinear)]
    ternary = sum(m.in_features * m.out_features for m in layers)
    params = sum(p.numel() for p in float_model.parameters())
    packed_bytes = model_bytes(packed)
    return {"float_bytes": float(float_bytes), "packed_bytes": float(packed_bytes),
            "ratio": float_bytes / packed_bytes, "ternary_share": ternary / params, "parameters": float(params),
            "quantized_layers": float(len(layers))}


def _dit_xl_memory(out: str) -> None:
    """``python -m icml26.papers.robuq.packed OUT.json``: :func:`memory_report` of a randomly initialised
    diffusers DiT-XL/2 (28 blocks, width 1152, 16 heads, 256x256 latents), written to ``OUT.json``."""
    import json
    import time

    from diffusers import DiTTransformer2DModel

    torch.manual_seed(0)
    start = time.perf_counter()
    model = DiTTransformer2DModel(num_attention_heads=16, attention_head_dim=72, in_channels=4, out_channels=8,
                                  num_layers=28, sample_size=32, patch_size=2, num_embeds_ada_norm=1000)
    report = {"model": "diffusers DiTTransformer2DModel, DiT-XL/2 configuration, random weights", "act_bits": 2,
              **memory_report(model), "seconds": round(time.perf_counter() - start, 1),
              "command": f"python -m icml26.papers.robuq.packed {out}"}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":  # pragma: no cover - a measurement, run by hand
    import sys

    _dit_xl_memory(sys.argv[1])
