"""RobuQ (arXiv 2509.23582): ternary-weight QAT for diffusion transformers with Hadamard-robust
activation quantization (W1.58A\\ *b*) and activation-only mixed precision (AMPN).

The authors' repository holds no code; the quantizer details are our reconstruction from
BitNet b1.58 / BitNet v2 and QuaRot, with every option configurable (see the README).

* :func:`ternarize`, :class:`TernaryLinear`: BitNet b1.58 absmean ternary weights, STE;
* :func:`hadamard`, :func:`fwht`, :func:`hadamard_transform`, :class:`HadamardLinear`: orthonormal
  rotations (Sylvester, Kronecker with Paley H_12/H_20/H_36, block-diagonal);
* :class:`RobustQuantizer`, :func:`gaussian_clip`: rotate each token, quantize it on a uniform grid
  with a Gaussian-optimal clip (or absmax); :class:`QuantLinear`: the W1.58A\\ *b* layer;
* :func:`quantize_dit`: swap a DiT's block Linears (TinyDiT or ``diffusers.DiTTransformer2DModel``);
  :func:`save_quantized` / :func:`load_quantized` (``packed=True``: 2-bit ternary storage),
  :func:`pack_model`, :class:`PackedQuantLinear`, :func:`model_bytes`;
* :func:`layer_sensitivity`, :func:`allocate_bits`: AMPN's sensitivity and exact knapsack DP;
* :class:`TinyDiT` and :mod:`~icml26.papers.robuq.diffusion`: the ε-prediction DiT, DDPM training
  and DDIM sampling of the reproduction.
"""

from icml26.papers.robuq.ampn import Allocation, Sensitivity, allocate_bits, layer_sensitivity
from icml26.papers.robuq.baselines import (
    fp_dit,
    hadamard_absmax_quantize_dit,
    naive_int_quantize_dit,
    naive_quantize_dit,
    uniform_quantize_dit,
)
from icml26.papers.robuq.diffusion import (
    LinearSchedule,
    add_noise,
    ddim_sample,
    diffusion_loss,
    ema_decay_at,
    eps_mse,
    predict_eps,
    train_denoiser,
)
from icml26.papers.robuq.hadamard import (
    HadamardLinear,
    fwht,
    hadamard,
    hadamard_transform,
    has_hadamard,
    paley_hadamard,
    rotate_linear,
    sylvester_hadamard,
)
from icml26.papers.robuq.model import TinyDiT, TinyDiTConfig
from icml26.papers.robuq.packed import (
    PackedQuantLinear,
    memory_report,
    model_bytes,
    pack_model,
    pack_ternary,
    unpack_ternary,
)
from icml26.papers.robuq.persist import load_quantized, save_quantized
from icml26.papers.robuq.quant import (
    QuantLinear,
    RobustQuantizer,
    gaussian_clip,
    gaussian_quant_mse,
    gaussian_step,
    quantize_tokens,
)
from icml26.papers.robuq.quantize import (
    DEFAULT_QUANTIZER,
    collect_linear_inputs,
    dit_linear_names,
    layer_macs,
    quantize_dit,
    quantized_layers,
    set_act_bits,
)
from icml26.papers.robuq.ternary import TernaryLinear, ternarize, ternarize_ste

__all__ = [
    "BASELINES",
    "DEFAULT_QUANTIZER",
    "METHOD",
    "Allocation",
    "HadamardLinear",
    "LinearSchedule",
    "PackedQuantLinear",
    "QuantLinear",
    "RobustQuantizer",
    "Sensitivity",
    "TernaryLinear",
    "TinyDiT",
    "TinyDiTConfig",
    "add_noise",
    "allocate_bits",
    "collect_linear_inputs",
    "ddim_sample",
    "diffusion_loss",
    "dit_linear_names",
    "ema_decay_at",
    "eps_mse",
    "fp_dit",
    "fwht",
    "gaussian_clip",
    "gaussian_quant_mse",
    "gaussian_step",
    "hadamard",
    "hadamard_absmax_quantize_dit",
    "hadamard_transform",
    "has_hadamard",
    "layer_macs",
    "layer_sensitivity",
    "naive_int_quantize_dit",
    "naive_quantize_dit",
    "paley_hadamard",
    "predict_eps",
    "quantize_dit",
    "save_quantized",
    "quantize_tokens",
    "quantized_layers",
    "load_quantized",
    "memory_report",
    "model_bytes",
    "pack_model",
    "pack_ternary",
    "rotate_linear",
    "set_act_bits",
    "sylvester_hadamard",
    "ternarize",
    "ternarize_ste",
    "train_denoiser",
    "uniform_quantize_dit",
    "unpack_ternary",
]

#: RobuQ's quantization of a DiT; the baselines below take the same ``(model, act_bits, …)``.
METHOD = quantize_dit

#: The paper's baselines as drop-in alternatives to :data:`METHOD`.
BASELINES = {
    "naive_w158": naive_quantize_dit,
    "naive_w158_int": naive_int_quantize_dit,
    "hadamard_absmax": hadamard_absmax_quantize_dit,
    "wo_amp": uniform_quantize_dit,
    "fp": fp_dit,
}
