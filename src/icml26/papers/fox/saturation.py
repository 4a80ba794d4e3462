"""Step B of Fox: "numerical logit saturation" of the selected heads' attention logits.

The authors' line (``modeling_llama.py`` of their vendored transformers) is

    S[h, -1, :] = (S[h, -1, :].float() - P).to(model_dtype)        # P = 10 000

Softmax is shift-invariant, so in float32 this does (almost) nothing. It acts only because the
released models run in **float16**: near 10⁴ the fp16 spacing is 8, so every logit is rounded
to a multiple of 8 (10⁴ ≡ 0 mod 8, so the bins sit on multiples of 8 in raw-logit units). The
head then attends uniformly to the keys of its top 8-wide bin; the next bin gets e⁻⁸ ≈ 3.4e-4.
It is a coarse hard-bin attention that erases the head's fine routing.

:func:`saturate_logits` makes that explicit, so that the intervention does not depend on the
dtype a user happens to run:

* ``mode="fp16"``: ``float(half(x − P)) + P`` — the cast the authors rely on, bit for bit;
* ``mode="grid"``: ``Δ·round((x − P)/Δ) + P`` with ``Δ = 2^(⌊log₂ P⌋ − 10)`` (the fp16 spacing at
  ``P``: 8 for P = 10⁴) or a given ``grid``; round half to even, like the cast;
* ``mode="literal"``: ``(x.float() − P).to(x.dtype)`` — the authors' line itself (a no-op up to
  rounding in float32: attention changes by < 1e-3; in float16 it is the quantiser above).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from icml26.common.argcheck import as_tensor, check_real

__all__ = ["SATURATION_MODES", "SATURATION_SHIFT", "fp16_spacing", "saturate_logits"]

SATURATION_SHIFT = 1e4
"""P of the authors' code."""

SATURATION_MODES = ("fp16", "grid", "literal")

_FP16_MAX = 65504.0


def fp16_spacing(shift: float) -> float:
    """The float16 grid spacing at ``shift``: ``2^(⌊log₂ P⌋ − 10)`` (8 for P = 10⁴, 64 for bf16-like 2^7·…)."""
    shift = check_real(shift, "shift", low=0.0, low_open=True)
    return 2.0 ** (math.floor(math.log2(shift)) - 10)


def saturate_logits(
    scores: torch.Tensor,
    *,
    shift: float = SATURATION_SHIFT,
    mode: Literal["fp16", "grid", "literal"] = "fp16",
    grid: float | None = None,
) -> torch.Tensor:
    """Saturate pre-softmax attention logits (before the mask is added).

    Args:
        scores: ``(..., K)`` logits ``QKᵀ/√d`` of the rows to saturate (any floating dtype; the
            output has the same dtype and device).
        shift: P, the shift (10⁴ in the authors' code). Must be positive; in ``"fp16"`` mode
            ``x − P`` must stay within float16's range (|x − P| ≤ 65504).
        mode: ``"fp16"``, ``"grid"`` or ``"literal"`` (see the module docstring).
        grid: the bin width Δ of ``"grid"`` mode (default: the fp16 spacing at ``shift``).

    Returns:
        The saturated logits. ``"fp16"``/``"grid"`` return values on the grid (in raw-logit
        units: ``+P`` is added back); ``"literal"`` returns ``x − P`` (softmax is unchanged by
        the shift). ``-inf`` stays ``-inf``; NaN propagates (documented).

    Raises:
        ValueError: unknown mode, non-positive shift or grid, finite logits that overflow float16
            in ``"fp16"`` mode.
    """
    x = as_tensor(scores, "scores")
    if mode not in SATURATION_MODES:
        raise ValueError(f"mode={mode!r} must be one of {SATURATION_MODES}")
    shift = check_real(shift, "shift", low=0.0, low_open=True)
    if grid is not None and mode != "grid":
        raise ValueError(f"grid={grid} applies only to mode='grid' (mode={mode!r})")
    if mode == "literal":
        # the authors' line: S <- cast_to_model_dtype(float32(S) - P)
        return (x.float() - shift).to(x.dtype)
    wide = x.double() if x.dtype == torch.float64 else x.float()
    shifted = wide - shift
    if mode == "fp16":
        finite = torch.isfinite(shifted)
        if bool((shifted[finite].abs() > _FP16_MAX).any()):
            raise ValueError(f"scores - shift leaves the float16 range (|x - {shift:g}| > {_FP16_MAX:g}); "
                             "lower shift or use mode='grid'")
        # float(half(x - P)) + P: the fp16 cast rounds to the spacing at |x - P| (8 near 10^4)
        out = shifted.half().to(wide.dtype) + shift
    else:
        delta = fp16_spacing(shift) if grid is None else check_real(grid, "grid", low=0.0, low_open=True)
        # Δ·round((x − P)/Δ) + P, round half to even like the cast
        out = torch.round(shifted / delta) * delta + shift
    return out.to(x.dtype)
