"""RobuQ's declarations for the hostile-input walk (tests/test_hostile_walk.py): a small valid call of
every export (``VALID``), the exports not walked and why (``NOT_WALKED``), and the suspects accepted by
design (``ALLOWED``). Imported into :mod:`icml26.papers.robuq.probes`."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from icml26.papers.robuq import (
    LinearSchedule,
    RobustQuantizer,
    TinyDiT,
    TinyDiTConfig,
    pack_ternary,
    quantize_dit,
    save_quantized,
)

_TINY = TinyDiTConfig(hidden=32, depth=2, heads=2, mlp_ratio=2)
_TMP = Path(tempfile.mkdtemp(prefix="robuq_walk_"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _dit() -> TinyDiT:
    torch.manual_seed(0)
    return TinyDiT(_TINY)


def _qdit() -> TinyDiT:
    return quantize_dit(_dit(), 2)


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = _gen(seed)
    return (torch.randn(2, 1, 8, 8, generator=g), torch.randint(0, 1000, (2,), generator=g),
            torch.randint(0, 10, (2,), generator=g))


def _images() -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(1)
    return torch.rand(4, 1, 8, 8, generator=g) * 2 - 1, torch.randint(0, 10, (4,), generator=g)


def _saved() -> Path:
    return save_quantized(_qdit(), Path(tempfile.mkdtemp(dir=_TMP)))


def _forward_call(model: TinyDiT):
    x, t, y = _inputs()
    return lambda: model(x, t, y)


def _with_model(make_args):
    """A VALID entry whose arguments read one fresh model."""
    def make():
        model = _dit()
        return make_args(model), {}
    return make


def _ternary_codes() -> torch.Tensor:
    return torch.tensor([-1.0, 0.0, 1.0, 1.0, 0.0])


VALID = {
    "HadamardLinear": lambda: ((12, 5), {}),
    "PackedQuantLinear": lambda: ((32, 8), {"quantizer": RobustQuantizer(2)}),
    "QuantLinear": lambda: ((32, 8), {"quantizer": RobustQuantizer(2)}),
    "Sensitivity": lambda: ((("a", "b"), (2, 4), np.array([[0.5, 0.1], [0.3, 0.2]])), {}),
    "TernaryLinear": lambda: ((16, 8), {}),
    "add_noise": lambda: ((LinearSchedule(), *_images()[:1] * 2, torch.tensor([0, 10, 500, 999])), {}),
    "allocate_bits": lambda: ((np.array([[0.5, 0.1], [0.3, 0.2], [0.4, 0.0]]), (2, 4), 3.0), {}),
    "collect_linear_inputs": _with_model(lambda m: (m, _forward_call(m), ["blocks.0.attn.qkv"])),
    "ddim_sample": lambda: ((_dit(), torch.tensor([1, 2]), (1, 8, 8), LinearSchedule()),
                            {"generator": _gen(), "steps": 2}),
    "diffusion_loss": lambda: ((_dit(), *_images(), LinearSchedule()), {"generator": _gen()}),
    "dit_linear_names": lambda: ((_dit(),), {}),
    "ema_decay_at": lambda: ((5, 0.9), {}),
    "eps_mse": lambda: ((_dit(), *_images(), LinearSchedule(), [10, 500]), {"generator": _gen(), "batch_size": 2}),
    "fp_dit": lambda: ((_dit(),), {}),
    "fwht": lambda: ((torch.randn(3, 8, generator=_gen()),), {}),
    "gaussian_clip": lambda: ((2,), {}),
    "gaussian_quant_mse": lambda: ((0.9957, 2), {}),
    "gaussian_step": lambda: ((2,), {}),
    "hadamard": lambda: ((8,), {}),
    "hadamard_absmax_quantize_dit": lambda: ((_dit(), 2), {}),
    "hadamard_transform": lambda: ((torch.randn(2, 12, generator=_gen()),), {}),
    "has_hadamard": lambda: ((12,), {}),
    "layer_macs": _with_model(lambda m: (quantize_dit(m, 2), _forward_call(m))),
    "layer_sensitivity": lambda: ((_qdit(), [_inputs()], (2, 4)), {}),
    "load_quantized": lambda: ((_saved(), _dit()), {}),
    "memory_report": lambda: ((_dit(), 2), {}),
    "model_bytes": lambda: ((_dit(),), {}),
    "naive_int_quantize_dit": lambda: ((_dit(), 2), {}),
    "naive_quantize_dit": lambda: ((_dit(), 2), {}),
    "pack_model": lambda: ((_qdit(),), {}),
    "pack_ternary": lambda: ((_ternary_codes(),), {}),
    "paley_hadamard": lambda: ((11,), {}),
    "predict_eps": lambda: ((_dit(), *_inputs()), {}),
    "quantize_dit": lambda: ((_dit(), 2), {}),
    "quantize_tokens": lambda: ((torch.randn(2, 16, generator=_gen()), 2), {}),
    "quantized_layers": lambda: ((_qdit(),), {}),
    "rotate_linear": lambda: ((torch.nn.Linear(12, 5),), {}),
    "save_quantized": lambda: ((_qdit(), Path(tempfile.mkdtemp(dir=_TMP))), {}),
    "set_act_bits": lambda: ((_qdit(), 3), {}),
    "sylvester_hadamard": lambda: ((8,), {}),
    "ternarize": lambda: ((torch.randn(4, 4, generator=_gen()),), {}),
    "ternarize_ste": lambda: ((torch.randn(4, 4, generator=_gen()),), {}),
    "train_denoiser": lambda: ((_dit(), *_images()), {"schedule": LinearSchedule(), "steps": 1, "batch_size": 2,
                                                      "lr": 1e-3, "generator": _gen(), "null_label": 10}),
    "uniform_quantize_dit": lambda: ((_dit(), 2), {}),
    "unpack_ternary": lambda: ((pack_ternary(_ternary_codes()), 5), {}),
}

NOT_WALKED = {
    "Allocation": "a result record filled by allocate_bits (walked; HOSTILE probes its budget, NaN and weights)",
}

_TRAIN_STEP = ("hot path: called on every training step (diffusion_loss) and every evaluation batch; a finiteness "
               "check would cost a device sync per step, and a NaN gives a NaN loss the caller sees. train_denoiser "
               "and eps_mse check their images once")
_TOKEN_NAN = ("documented: NaN in a token spreads to that token only (HOSTILE probes it), and this runs in every "
              "forward pass of a quantized layer, where a finiteness check would cost a device sync per layer")
_WEIGHT_NAN = ("documented: NaN in w makes the scale gamma, and so every entry it scales, NaN (HOSTILE 'NaN weight "
               "makes the ternary weight NaN'); it runs in every forward pass of a ternary layer, where a check "
               "would cost a device sync per layer")

ALLOWED = {
    "add_noise.x0:nan": _TRAIN_STEP,
    "add_noise.eps:nan": _TRAIN_STEP,
    "diffusion_loss.x0:nan": _TRAIN_STEP,
    "predict_eps.x:nan": _TRAIN_STEP + " (one model forward)",
    "fwht.x:nan": _TOKEN_NAN,
    "hadamard_transform.x:nan": _TOKEN_NAN,
    "quantize_tokens.x:nan": _TOKEN_NAN,
    "ternarize.w:nan": _WEIGHT_NAN,
    "ternarize_ste.w:nan": _WEIGHT_NAN,
}
