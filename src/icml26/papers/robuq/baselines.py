"""The baselines RobuQ is compared with, drop-in alternatives to :func:`~icml26.papers.robuq.quantize_dit`.

* **naive W1.58A**\\ *b* (BitNet b1.58 style, the brief's "naive A_b"): ternary weights and per-token
  absmax activations on the same midrise grid, no rotation -- :func:`naive_quantize_dit`;
  and on the signed-integer grid ``{-2^{b-1}, …, 2^{b-1}-1}·s`` -- :func:`naive_int_quantize_dit`;
* **absmax after H** (BitNet v2's H-BitLinear; the other reading of the paper's quantizer):
  rotation, then absmax -- :func:`hadamard_absmax_quantize_dit`. Between naive and RobuQ it
  isolates the rotation from the Gaussian scale rule;
* **w/o AMP**: RobuQ with one bit-width for every layer -- :func:`uniform_quantize_dit`;
* **FP**: the model unchanged -- :func:`fp_dit`.
"""

from __future__ import annotations

from typing import Callable, Iterable

from torch import nn

from icml26.papers.robuq.quantize import quantize_dit

__all__ = [
    "fp_dit",
    "hadamard_absmax_quantize_dit",
    "naive_int_quantize_dit",
    "naive_quantize_dit",
    "uniform_quantize_dit",
]

NAIVE_QUANTIZER = {"scale": "absmax", "grid": "midrise", "rotate": False}
NAIVE_INT_QUANTIZER = {"scale": "absmax", "grid": "int", "rotate": False}
HADAMARD_ABSMAX_QUANTIZER = {"scale": "absmax", "grid": "midrise", "rotate": True}


def naive_quantize_dit(model: nn.Module, act_bits: int = 4, *, skip: Iterable[str] | Callable[[str], bool] = (),
                       ternary: bool = True, per_channel: bool = False, blocks_attr: str | None = None) -> nn.Module:
    """Naive W1.58A\\ *b*: per-token absmax on the midrise grid, no rotation (in place; returns ``model``)."""
    return quantize_dit(model, act_bits, quantizer=NAIVE_QUANTIZER, skip=skip, ternary=ternary,
                        per_channel=per_channel, blocks_attr=blocks_attr)


def naive_int_quantize_dit(model: nn.Module, act_bits: int = 4, *,
                           skip: Iterable[str] | Callable[[str], bool] = (), ternary: bool = True,
                           per_channel: bool = False, blocks_attr: str | None = None) -> nn.Module:
    """Naive W1.58A\\ *b* on the signed-integer grid (``act_bits >= 2``), no rotation."""
    return quantize_dit(model, act_bits, quantizer=NAIVE_INT_QUANTIZER, skip=skip, ternary=ternary,
                        per_channel=per_channel, blocks_attr=blocks_attr)


def hadamard_absmax_quantize_dit(model: nn.Module, act_bits: int = 4, *,
                                 skip: Iterable[str] | Callable[[str], bool] = (), ternary: bool = True,
                                 per_channel: bool = False, blocks_attr: str | None = None) -> nn.Module:
    """W1.58A\\ *b* with a Hadamard rotation then per-token absmax (BitNet v2's H-BitLinear)."""
    return quantize_dit(model, act_bits, quantizer=HADAMARD_ABSMAX_QUANTIZER, skip=skip, ternary=ternary,
                        per_channel=per_channel, blocks_attr=blocks_attr)


def uniform_quantize_dit(model: nn.Module, act_bits: int = 2, *,
                         skip: Iterable[str] | Callable[[str], bool] = (), ternary: bool = True,
                         per_channel: bool = False, blocks_attr: str | None = None) -> nn.Module:
    """RobuQ "w/o AMP": the robust quantizer at one bit-width for every layer."""
    if not isinstance(act_bits, int) or isinstance(act_bits, bool):
        raise TypeError(f"act_bits={act_bits!r} must be one int (w/o AMP is uniform); use quantize_dit for a dict")
    return quantize_dit(model, act_bits, skip=skip, ternary=ternary, per_channel=per_channel,
                        blocks_attr=blocks_attr)


def fp_dit(model: nn.Module, act_bits: int | None = None, *, skip: Iterable[str] | Callable[[str], bool] = (),
           ternary: bool = False, per_channel: bool = False, blocks_attr: str | None = None) -> nn.Module:
    """Full precision: ``model`` unchanged (the other arguments exist for the shared signature and are ignored)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return model
