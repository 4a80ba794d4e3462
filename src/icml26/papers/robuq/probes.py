"""RobuQ's modules for the registry-wide module matrix and its hostile-input probes."""

from __future__ import annotations

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.robuq import (
    HadamardLinear,
    LinearSchedule,
    PackedQuantLinear,
    QuantLinear,
    RobustQuantizer,
    TernaryLinear,
    TinyDiT,
    TinyDiTConfig,
    allocate_bits,
    ddim_sample,
    fwht,
    gaussian_clip,
    hadamard,
    hadamard_transform,
    layer_sensitivity,
    quantize_dit,
    quantize_tokens,
    ternarize,
)
from icml26.papers.robuq.analysis import excess_kurtosis, frechet_distance

_TINY = TinyDiTConfig(hidden=32, depth=2, heads=2, mlp_ratio=2)


def _tiny_dit() -> TinyDiT:
    torch.manual_seed(0)
    model = TinyDiT(_TINY)
    # leave adaLN-Zero's zero start so that every parameter meets a non-trivial gradient path
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape))
    return model


def _dit_inputs(g: torch.Generator) -> tuple:
    return (torch.randn(2, 1, 8, 8, generator=g), torch.randint(0, 1000, (2,), generator=g),
            torch.randint(0, 11, (2,), generator=g))


def _nan_token() -> torch.Tensor:
    x = torch.randn(2, 16)
    x[0, 3] = float("nan")
    return x


MODULES = [
    ModuleCase("TernaryLinear", build=lambda: TernaryLinear(16, 8),
               inputs=lambda g: (torch.randn(3, 16, generator=g),)),
    ModuleCase("HadamardLinear", build=lambda: HadamardLinear(12, 5),
               inputs=lambda g: (torch.randn(4, 12, generator=g),)),
    ModuleCase("QuantLinear", build=lambda: QuantLinear(32, 8, quantizer=RobustQuantizer(2, learnable_clip=True)),
               inputs=lambda g: (torch.randn(2, 5, 32, generator=g),)),
    ModuleCase("PackedQuantLinear",
               build=lambda: PackedQuantLinear.from_quant_linear(QuantLinear(32, 8, quantizer=RobustQuantizer(2))),
               inputs=lambda g: (torch.randn(2, 5, 32, generator=g),)),
    ModuleCase("RobustQuantizer", build=lambda: RobustQuantizer(3, learnable_clip=True, center=True),
               inputs=lambda g: (torch.randn(4, 64, generator=g),)),
    ModuleCase("TinyDiT", build=_tiny_dit, inputs=_dit_inputs),
]

HOSTILE = [
    Probe("bits below 1", lambda: RobustQuantizer(0), raises=ValueError, match="bits"),
    Probe("fractional bits", lambda: RobustQuantizer(2.5), raises=TypeError, match="bits"),
    Probe("bits above 16", lambda: quantize_tokens(torch.randn(2, 8), 17), raises=ValueError, match="bits"),
    Probe("unknown scale", lambda: RobustQuantizer(2, scale="max"), raises=ValueError, match="scale"),
    Probe("unknown grid", lambda: RobustQuantizer(2, grid="log"), raises=ValueError, match="grid"),
    Probe("one-bit integer grid", lambda: RobustQuantizer(1, grid="int"), raises=ValueError, match="bits"),
    Probe("ternary grid at 4 bits", lambda: RobustQuantizer(4, grid="ternary"), raises=ValueError, match="bits"),
    Probe("gaussian clip at 0 bits", lambda: gaussian_clip(0), raises=ValueError, match="bits"),
    Probe("width with no Hadamard", lambda: hadamard(100), raises=ValueError, match="d=100"),
    Probe("block that does not divide", lambda: hadamard(64, block=12), raises=ValueError, match="block"),
    Probe("non-power-of-two fwht", lambda: fwht(torch.randn(3, 12)), raises=ValueError, match="d=12"),
    Probe("integer tensor to fwht", lambda: fwht(torch.ones(2, 8, dtype=torch.long)), raises=TypeError, match="floating"),
    Probe("rotated layer of a width with no Hadamard", lambda: QuantLinear(100, 4, quantizer=RobustQuantizer(2)),
          raises=ValueError, match="in_features=100"),
    Probe("budget below the smallest option", lambda: allocate_bits(np.ones((3, 4)), (1, 2, 3, 4), 0.5),
          raises=ValueError, match="avg_bits"),
    Probe("NaN sensitivity", lambda: allocate_bits(np.full((2, 2), np.nan), (2, 4), 3.0), raises=ValueError,
          match="NaN"),
    Probe("negative layer weight", lambda: allocate_bits(np.ones((2, 2)), (2, 4), 3.0, weights=[1.0, -1.0]),
          raises=ValueError, match="weights"),
    Probe("duplicate bit options", lambda: allocate_bits(np.ones((2, 2)), (2, 2), 3.0), raises=ValueError,
          match="bit_options"),
    Probe("act_bits dict missing layers", lambda: quantize_dit(TinyDiT(_TINY), {"blocks.0.attn.qkv": 2}),
          raises=ValueError, match="act_bits"),
    Probe("act_bits of 0", lambda: quantize_dit(TinyDiT(_TINY), 0), raises=ValueError, match="bits"),
    Probe("model without blocks", lambda: quantize_dit(torch.nn.Linear(4, 4), 2), raises=ValueError,
          match="blocks_attr"),
    Probe("skip pattern matching nothing", lambda: quantize_dit(TinyDiT(_TINY), 2, skip=["decoder.*"]),
          raises=ValueError, match="skip"),
    Probe("sensitivity of an unquantized model", lambda: layer_sensitivity(TinyDiT(_TINY), [()], (2, 4)),
          raises=ValueError, match="quantize_dit"),
    Probe("empty weight", lambda: ternarize(torch.empty(0, 3)), raises=ValueError, match="empty"),
    Probe("integer weight", lambda: ternarize(torch.ones(2, 2, dtype=torch.long)), raises=TypeError, match="floating"),
    Probe("label out of range", lambda: TinyDiT(_TINY)(torch.zeros(1, 1, 8, 8), torch.zeros(1, dtype=torch.long),
                                                        torch.tensor([12])), raises=ValueError, match="y"),
    Probe("wrong image size", lambda: TinyDiT(_TINY)(torch.zeros(1, 1, 6, 6), torch.zeros(1, dtype=torch.long),
                                                     torch.zeros(1, dtype=torch.long)), raises=ValueError, match="x"),
    Probe("guidance without a null class", lambda: ddim_sample(TinyDiT(_TINY), torch.zeros(1, dtype=torch.long),
                                                               (1, 8, 8), LinearSchedule(),
                                                               generator=torch.Generator(), guidance=2.0),
          raises=ValueError, match="null_label"),
    Probe("Frechet distance of one sample", lambda: frechet_distance(np.ones((1, 3)), np.ones((5, 3))),
          raises=ValueError, match="samples"),
    Probe("NaN token stays NaN, others finite", lambda: quantize_tokens(_nan_token(), 2),
          returns=lambda v: bool(torch.isnan(v[0]).all() and torch.isfinite(v[1]).all()),
          doc="a NaN in a token makes that token's scale, and so the token, NaN; other tokens are untouched"),
    Probe("NaN spreads through the rotation of its token only",
          lambda: hadamard_transform(_nan_token()),
          returns=lambda v: bool(torch.isnan(v[0]).all() and torch.isfinite(v[1]).all()),
          doc="every rotated coordinate sums all of the token's coordinates"),
    Probe("NaN weight makes the ternary weight NaN", lambda: ternarize(torch.tensor([[1.0, float("nan")]]))[0],
          returns=lambda v: bool(torch.isnan(v).all()), doc="γ = mean|W| is NaN, and it scales every entry"),
    Probe("constant token has undefined kurtosis", lambda: excess_kurtosis(np.ones((2, 8))),
          returns=lambda v: bool(np.isnan(v).all()), doc="m_2 = 0: NaN, left out of the mean"),
]

from icml26.papers.robuq.probes_walk import ALLOWED, NOT_WALKED, VALID  # noqa: E402,F401  (the hostile-input walk)
