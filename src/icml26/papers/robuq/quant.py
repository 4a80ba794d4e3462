"""RobuQ's activation quantizer and the W1.58A\\ *b* linear layer.

:class:`RobustQuantizer` quantizes every token ``x_t`` (a row of width ``d``) on its own:

1. **rotate** (``rotate=True``): ``x_t ← x_t H`` with an orthonormal Hadamard ``H``. Each rotated
   coordinate is ``(1/√d) Σ_i ±x_i``, by a central-limit argument close to ``N(μ_t, σ_t²)`` with
   ``σ_t ≈ RMS(x_t) = ‖x_t‖/√d`` -- provided no single ``|x_i|`` dominates ``‖x_t‖`` (Lindeberg's
   condition; a one-hot token becomes a flat ±1/√d vector, not a Gaussian one);
2. **scale**: ``scale="gauss"`` sets the step to ``s_t = Δ*_b · RMS(x_t)``, where ``Δ*_b`` is the
   MSE-optimal uniform step for a unit Gaussian (:func:`gaussian_step`; the clip
   ``c_b = (2^b/2)·Δ*_b`` of the midrise grid is :func:`gaussian_clip`, Max 1960: 1.99, 2.34,
   2.68 at 2, 3, 4 bits); ``scale="absmax"`` maps ``max|x_t|`` to the outermost level (BitNet);
3. **round** on a uniform grid of ``2^b`` levels: ``grid="midrise"`` ``{±(k+½)s}`` (symmetric,
   four true levels at 2 bits), ``grid="int"`` ``{-2^{b-1}, …, 2^{b-1}-1}·s`` (asymmetric) or
   ``grid="ternary"`` ``{-s, 0, s}`` (``bits=2`` storage);
4. **straight-through** rounding: ``x̂ = s·(y_c + (round(y_c) - y_c).detach())`` with
   ``y_c = clip(x/s)``: the gradient is 1 inside the clipping range, 0 outside, and reaches the
   clip multiplier when ``learnable_clip=True`` (LSQ-style).

With ``rotate=True`` the output is in the rotated basis; :class:`QuantLinear` stores its weight
as ``W H`` so that ``(x H)(W H)ᵀ = x Wᵀ`` before quantization.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_real
from icml26.papers.robuq.hadamard import DENSE_MAX, _resolve, hadamard, hadamard_transform
from icml26.papers.robuq.ste import straight_through_round
from icml26.papers.robuq.ternary import ternarize, ternarize_ste

__all__ = [
    "GRIDS",
    "MAX_BITS",
    "SCALES",
    "QUANTIZER_FIELDS",
    "QuantLinear",
    "RobustQuantizer",
    "check_layer_settings",
    "gaussian_clip",
    "gaussian_quant_mse",
    "gaussian_step",
    "grid_levels",
    "layer_settings",
    "quantize_tokens",
    "random_signs",
]

Scale = Literal["gauss", "absmax"]
Grid = Literal["midrise", "int", "ternary"]
SCALES: tuple[str, ...] = ("gauss", "absmax")
GRIDS: tuple[str, ...] = ("midrise", "int", "ternary")
#: Widest activation bit-width accepted (float32 represents every level of a 16-bit grid exactly).
MAX_BITS = 16
#: Smallest step ``s_t``: a zero token maps to ``±s/2 ≈ 0`` (midrise) or 0 instead of 0/0.
EPS = 1e-8


def _check_bits(bits: object, grid: str = "midrise") -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"bits={bits!r} must be an int")
    bits = int(bits)
    if bits < 1:
        raise ValueError(f"bits={bits} must be at least 1")
    if bits > MAX_BITS:
        raise ValueError(f"bits={bits} must be at most {MAX_BITS}; leave the layer in full precision instead")
    if grid not in GRIDS:
        raise ValueError(f"grid={grid!r} must be one of {', '.join(GRIDS)}")
    if grid == "int" and bits < 2:
        raise ValueError(f"bits={bits}: grid='int' needs at least 2 bits (1 bit gives the levels {{-1, 0}}·s); "
                         "use grid='midrise'")
    if grid == "ternary" and bits != 2:
        raise ValueError(f"bits={bits}: grid='ternary' has 3 levels and is stored in 2 bits; pass bits=2")
    return bits


def grid_levels(bits: int, grid: Grid = "midrise") -> tuple[float, float, float]:
    """``(lowest, highest, offset)`` of the grid in units of the step: levels ``k + offset`` for
    integers ``k`` with ``lowest <= k + offset <= highest``."""
    bits = _check_bits(bits, grid)
    half = 2 ** (bits - 1)
    if grid == "midrise":
        return -half + 0.5, half - 0.5, 0.5
    if grid == "int":
        return float(-half), float(half - 1), 0.0
    return -1.0, 1.0, 0.0


# ---------------------------------------------------------------------------
# Gaussian-optimal steps, computed numerically
# ---------------------------------------------------------------------------
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _upper_tail(a: np.ndarray | float, c: np.ndarray | float) -> np.ndarray | float:
    """``∫_a^∞ (x - c)² φ(x) dx = (1 + c²) Q(a) + (a - 2c) φ(a)`` for the unit Gaussian."""
    from scipy.stats import norm

    return (1.0 + c * c) * norm.sf(a) + (a - 2.0 * c) * norm.pdf(a)


def gaussian_quant_mse(step: float, bits: int, grid: Grid = "midrise") -> float:
    """``E[(X - Q(X))²]`` for ``X ~ N(0, 1)`` and the uniform ``grid`` of ``2^b`` levels with ``step``.

    Each level ``L`` owns the cell ``[L - s/2, L + s/2]`` (8-point Gauss-Legendre, exact to
    ~1e-15 here) and the outermost levels also own the tails beyond them (closed form).
    """
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise ValueError(f"step={step!r} must be a positive finite number")
    lo, hi, off = grid_levels(bits, grid)
    levels = (np.arange(lo - off, hi - off + 1) + off) * step
    half = step / 2.0
    # granular part: Σ_L ∫_{L-s/2}^{L+s/2} (x - L)² φ(x) dx with x = L + half·u, u ∈ [-1, 1]
    u = _GL_NODES[None, :]
    x = levels[:, None] + half * u
    phi = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    granular = float(np.sum(_GL_WEIGHTS[None, :] * (half * u) ** 2 * phi) * half)
    # overload: the tails beyond the outermost cells, clipped to the outermost levels
    top, bottom = levels[-1], levels[0]
    overload = float(_upper_tail(top + half, top) + _upper_tail(-(bottom - half), -bottom))
    return granular + overload


@functools.lru_cache(maxsize=None)
def _gaussian_step(bits: int, grid: str) -> float:
    from scipy.optimize import minimize_scalar

    lo, hi, _ = grid_levels(bits, grid)  # type: ignore[arg-type]
    n_levels = hi - lo + 1
    # the optimum lies well inside [2/n, 8/n] (clip between 1σ and 4σ+); search log-step there
    bounds = (math.log(0.5 / n_levels), math.log(12.0 / n_levels))
    res = minimize_scalar(lambda z: gaussian_quant_mse(math.exp(z), bits, grid),  # type: ignore[arg-type]
                          bounds=bounds, method="bounded", options={"xatol": 1e-10})
    return float(math.exp(res.x))


def gaussian_step(bits: int, grid: Grid = "midrise") -> float:
    """``Δ*_b``: the MSE-optimal uniform step of ``grid`` with ``2^b`` levels for ``N(0, 1)``.

    Computed numerically (bounded scalar minimisation of :func:`gaussian_quant_mse`), cached.
    Max (1960), Table II: 0.9957 (4 levels), 0.5860 (8), 0.3352 (16).
    """
    return _gaussian_step(_check_bits(bits, grid), grid)


def gaussian_clip(bits: int, grid: Grid = "midrise") -> float:
    """``c_b``: the MSE-optimal clipping point for a unit Gaussian, in units of σ.

    The edge of the outermost cell, ``(max |level| + ½)·Δ*_b``; for the midrise grid
    ``c_b = 2^{b-1}·Δ*_b``: 1.596 (1 bit), 1.991 (2), 2.344 (3), 2.682 (4).
    """
    lo, hi, _ = grid_levels(bits, grid)
    return (max(abs(lo), abs(hi)) + 0.5) * gaussian_step(bits, grid)


@functools.lru_cache(maxsize=None)
def _signs(d: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(d))
    return torch.randint(0, 2, (d,), generator=g).to(torch.float64) * 2.0 - 1.0


def random_signs(d: int, seed: int = 0) -> Tensor:
    """The fixed ±1 vector (float64, CPU) of the randomized Hadamard ``D H`` for width ``d`` and ``seed``."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d={d!r} must be a positive int")
    return _signs(int(d), int(seed))


_SIGNED_DENSE: dict[tuple[int, int, torch.dtype, str], Tensor] = {}


def _is_one_dense_block(d: int, block: int | None) -> bool:
    """Whether :func:`hadamard_transform` rotates width ``d`` by one cached dense ``(d, d)`` matmul."""
    n_blocks, pow2, m = _resolve(d, block)
    return n_blocks == 1 and pow2 * m <= DENSE_MAX


def _signed_dense(d: int, seed: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``D H`` as one dense ``(d, d)`` matrix (cached): the randomized rotation of a full-width block.

    ``(x D) H`` and ``x (D H)`` multiply the same numbers: every product is ``±x_i H_ij`` exactly
    (a sign flip rounds like its absolute value), so the matmul returns the same bits as rotating
    the sign-flipped tokens, without the elementwise pass over the tokens.
    """
    key = (d, seed, dtype, str(device))
    h = _SIGNED_DENSE.get(key)
    if h is None:
        h = (_signs(d, seed)[:, None] * hadamard(d, dtype=torch.float64)).to(dtype=dtype, device=device)
        _SIGNED_DENSE[key] = h
    return h


# ---------------------------------------------------------------------------
# Per-token uniform quantization
# ---------------------------------------------------------------------------
def quantize_tokens(x: Tensor, bits: int, *, scale: Scale = "gauss", grid: Grid = "midrise",
                    clip_multiplier: Tensor | float = 1.0) -> Tensor:
    """Quantize every token (last axis) of ``x`` on its own to ``2^b`` uniform levels, STE on rounding.

    No rotation here (see :class:`RobustQuantizer`).

    Args:
        x: ``(..., d)`` floating tensor; every leading index is a token.
        bits: ``b >= 1`` (``>= 2`` for ``grid="int"``, ``== 2`` for ``grid="ternary"``), ``<= 16``.
        scale: ``"gauss"``: step ``Δ*_b · RMS(x_t)``; ``"absmax"``: ``max|x_t|`` on the outermost level.
        grid: ``"midrise"``, ``"int"`` or ``"ternary"`` (see the module docstring).
        clip_multiplier: multiplies the step (a learnable LSQ-style scalar in :class:`RobustQuantizer`);
            the gradient reaches it only if it is a tensor that requires one. A number must be finite
            and positive; a tensor is not checked (it is read on every forward pass).

    Returns:
        ``x̂`` of ``x``'s shape, dtype and device, at most ``2^b`` distinct values per token. NaN in a
        token makes its scale, and so the whole token, NaN. A zero token stays (almost) zero.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {x.dtype}")
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (the token width)")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} must be one of {', '.join(SCALES)}")
    if not isinstance(clip_multiplier, Tensor):
        check_real(clip_multiplier, "clip_multiplier", low=0.0, low_open=True)
    lo, hi, off = grid_levels(bits, grid)
    if scale == "gauss":
        # s_t = Δ*_b · RMS(x_t),  RMS(x_t) = ‖x_t‖ / √d
        rms = x.detach().pow(2).mean(dim=-1, keepdim=True).sqrt()
        step = gaussian_step(bits, grid) * rms
    else:
        # s_t = max|x_t| / (outermost symmetric level): max|x_t| lands on a level of either sign
        # (the int grid's extra negative level -2^{b-1} stays unused, as in BitNet's Q_b = 2^{b-1} − 1)
        step = x.detach().abs().amax(dim=-1, keepdim=True) / min(abs(lo), abs(hi))
    step = step.clamp_min(EPS)
    if isinstance(clip_multiplier, Tensor) or clip_multiplier != 1.0:  # (× 1.0 changes no bit)
        step = step * clip_multiplier
    if not (torch.is_grad_enabled() and (x.requires_grad or isinstance(clip_multiplier, Tensor)
                                         and clip_multiplier.requires_grad)):
        # no gradient: the same operations as below, in place in one buffer
        with torch.no_grad():
            r = torch.div(x, step).clamp_(lo - 0.5, hi + 0.5)
            return r.sub_(off).round_().add_(off).clamp_(lo, hi).mul_(step)
    # x̂ = s · (y_c + (round(y_c) − y_c).detach()), y_c = clip(x / s): straight-through rounding (ste.py)
    return straight_through_round(x, step, lo, hi, off)


class RobustQuantizer(nn.Module):
    """RobuQ's per-token activation quantizer: Hadamard rotation, then a uniform ``b``-bit grid.

    Args:
        bits: activation bit-width ``b`` (1-16; see :func:`quantize_tokens` for the grids' limits).
            Settable after construction (AMPN switches it per layer).
        scale: ``"gauss"`` (the step from the token's RMS and the Gaussian-optimal :func:`gaussian_step`,
            our default reading of the paper) or ``"absmax"`` (BitNet v2's H-BitLinear reading).
        grid: ``"midrise"`` (default), ``"int"`` or ``"ternary"``.
        rotate: rotate each token by a Hadamard matrix first (the output is then in the rotated basis).
        randomized: rotate by ``D H`` with ``D`` a fixed random ±1 diagonal (QuaRot's randomized
            Hadamard; still orthonormal). Without it, structured tokens stay concentrated: DiT's
            sin-cos position embedding at angle 0 is a sum of two Walsh functions, which ``H`` maps
            to two coordinates, far outside a Gaussian clip.
        seed: seeds ``D`` (one fixed sign vector per width and seed; nothing to store).
        center: quantize ``x_t − μ_t`` and add the token mean ``μ_t`` back exactly (one full-precision
            number per token, like a zero point). A rotation gathers the mean into one coordinate
            (``√d μ_t`` for Sylvester's ``H``), far outside a Gaussian clip after SiLU/GELU; centring
            keeps it out of the quantized part. Our addition (the paper does not say), off by default.
        block: block size of a block-diagonal Hadamard (default: the full width).
        learnable_clip: learn one multiplier of the step (initialised at 1, i.e. at ``c_b``), LSQ-style.
        quantize: ``False`` rotates the tokens and leaves them in full precision (``bits`` unused): with
            :class:`QuantLinear` that is W1.58A16 on the rotated weight ``W D H``, the control that
            separates RobuQ's activation effect from the rotation's effect on ternarisation.

    Input ``(..., d)``, output ``(..., d)`` (rotated when ``rotate``), same dtype and device.
    """

    def __init__(self, bits: int = 4, scale: Scale = "gauss", grid: Grid = "midrise", rotate: bool = True,
                 *, randomized: bool = True, seed: int = 0, center: bool = False, block: int | None = None,
                 learnable_clip: bool = False, quantize: bool = True) -> None:
        super().__init__()
        if scale not in SCALES:
            raise ValueError(f"scale={scale!r} must be one of {', '.join(SCALES)}")
        self.grid: str = grid
        self.bits = bits  # validated by the setter (also checks grid)
        self.scale: str = scale
        self.rotate = bool(rotate)
        self.randomized = bool(randomized)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed={seed!r} must be a non-negative int (it seeds the random signs)")
        self.seed = int(seed)
        self.center = bool(center)
        if block is not None:
            _resolve(block, block)
        self.block = block
        self.learnable_clip = bool(learnable_clip)
        self.quantize = bool(quantize)
        self.clip_multiplier = nn.Parameter(torch.ones(())) if learnable_clip else None

    @property
    def bits(self) -> int:
        return self._bits

    @bits.setter
    def bits(self, value: int) -> None:
        self._bits = _check_bits(value, self.grid)

    def with_bits(self, bits: int) -> "RobustQuantizer":
        """A new quantizer with these options and ``bits``."""
        return RobustQuantizer(bits, self.scale, self.grid, self.rotate,  # type: ignore[arg-type]
                               randomized=self.randomized, seed=self.seed, center=self.center, block=self.block,
                               learnable_clip=self.learnable_clip, quantize=self.quantize)

    def check_width(self, d: int) -> None:
        """Raise ``ValueError`` if tokens of width ``d`` cannot be rotated with these options."""
        if self.rotate:
            try:
                _resolve(d, self.block)
            except ValueError as exc:
                raise ValueError(f"in_features={d}: {exc}") from None

    def rotate_tokens(self, x: Tensor) -> Tensor:
        """``x D H`` (``x H`` without ``randomized``) if ``rotate``, else ``x``; ``x`` is ``(..., d)``."""
        if not self.rotate:
            return x
        if self.randomized:
            d = x.shape[-1]
            if x.is_floating_point() and _is_one_dense_block(d, self.block):
                # one full-width dense block: fold D into H (same bits as below, one pass fewer)
                lead = x.shape[:-1]
                return (x.contiguous().reshape(*lead, 1, d) @ _signed_dense(d, self.seed, x.dtype, x.device)
                        ).reshape(*lead, d)
            x = x * random_signs(d, self.seed).to(dtype=x.dtype, device=x.device)
        return hadamard_transform(x, block=self.block)

    def forward(self, x: Tensor) -> Tensor:
        if not self.quantize:  # the rotation alone (full-precision activations in the rotated basis)
            return self.rotate_tokens(x)
        multiplier: Tensor | float = 1.0
        if self.clip_multiplier is not None:
            multiplier = self.clip_multiplier.to(x.dtype)
        if not self.center:
            return quantize_tokens(self.rotate_tokens(x), self.bits, scale=self.scale,  # type: ignore[arg-type]
                                   grid=self.grid, clip_multiplier=multiplier)  # type: ignore[arg-type]
        # x = x̃ + μ_t 1: quantize the rotated centred part, keep μ_t (one number per token) exact
        mu = x.mean(dim=-1, keepdim=True)
        q = quantize_tokens(self.rotate_tokens(x - mu), self.bits, scale=self.scale,  # type: ignore[arg-type]
                            grid=self.grid, clip_multiplier=multiplier)  # type: ignore[arg-type]
        ones = torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
        # Q(x) = Q((x − μ_t 1) H) + μ_t (1 H)   (for Sylvester's H, 1 H = √d e_0)
        return q + mu * self.rotate_tokens(ones)

    def extra_repr(self) -> str:
        return (f"bits={self.bits}, scale={self.scale!r}, grid={self.grid!r}, rotate={self.rotate}, "
                f"randomized={self.randomized}, seed={self.seed}, center={self.center}, block={self.block}, learnable_clip={self.learnable_clip}"
                + ("" if self.quantize else ", quantize=False"))


class QuantLinear(nn.Module):
    """A W1.58A\\ *b* linear layer: quantized activations times ternary weights.

    ``y = Q(x) Ŵ'ᵀ + b`` with ``Q`` the activation ``quantizer`` (or the identity if ``None``) and
    ``Ŵ' = ternarize(W')`` (or ``W'`` itself if ``ternary=False``). When the quantizer rotates,
    the latent weight is stored rotated, ``W' = W H`` (so it is ``W H`` that gets ternarised,
    as in the paper's QAT); :meth:`from_linear` does that fold.

    Args:
        in_features, out_features, bias: as :class:`torch.nn.Linear`.
        quantizer: a :class:`RobustQuantizer` (its ``rotate`` and ``block`` decide the basis), or None.
        ternary: ternarise the weight (straight-through) or keep it in full precision.
        per_channel: one ternary scale per output row.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 quantizer: RobustQuantizer | None = None, ternary: bool = True, per_channel: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive int")
        if quantizer is not None and not isinstance(quantizer, RobustQuantizer):
            raise TypeError(f"quantizer must be a RobustQuantizer or None, got {type(quantizer).__name__}")
        if quantizer is not None:
            quantizer.check_width(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.quantizer = quantizer
        self.ternary, self.per_channel = bool(ternary), bool(per_channel)
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    @classmethod
    def from_linear(cls, linear: nn.Linear, quantizer: RobustQuantizer | None, *, ternary: bool = True,
                    per_channel: bool = False) -> "QuantLinear":
        """The quantized copy of ``linear``, its weight rotated (``W H``) if the quantizer rotates."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        w = linear.weight
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, quantizer=quantizer,
                    ternary=ternary, per_channel=per_channel, device=w.device, dtype=w.dtype)
        with torch.no_grad():
            # W' = W H: every row of W rotated like a token, so that (x H)(W H)ᵀ = x Wᵀ
            layer.weight.copy_(quantizer.rotate_tokens(w.detach()) if quantizer is not None else w.detach())
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        return layer

    @property
    def act_bits(self) -> int | None:
        """The activation bit-width, or None without a quantizer (or one that only rotates)."""
        return None if self.quantizer is None or not self.quantizer.quantize else self.quantizer.bits

    def quantized_weight(self) -> Tensor:
        """The weight the forward pass uses (ternary ``γ·W_t`` or the latent one), without gradient."""
        w = self.weight.detach()
        return ternarize(w, per_channel=self.per_channel)[0] if self.ternary else w

    def forward(self, x: Tensor) -> Tensor:
        xq = self.quantizer(x) if self.quantizer is not None else x
        w = ternarize_ste(self.weight, self.per_channel) if self.ternary else self.weight
        return nn.functional.linear(xq, w, self.bias)

    def get_extra_state(self) -> dict[str, Any]:
        """The layer's settings, saved in its state dict (:func:`layer_settings`)."""
        return layer_settings(self)

    def set_extra_state(self, state: Any) -> None:
        """Refuse weights saved by a layer with other settings (:func:`check_layer_settings`)."""
        check_layer_settings(self, state)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, ternary={self.ternary}, per_channel={self.per_channel}")


#: The settings of a :class:`RobustQuantizer` that decide what a layer computes.
QUANTIZER_FIELDS = ("bits", "scale", "grid", "rotate", "randomized", "seed", "center", "block", "learnable_clip",
                    "quantize")


def layer_settings(layer: nn.Module) -> dict[str, Any]:
    """What a quantised layer computes besides its tensors: ``ternary``, ``per_channel`` and its activation
    quantizer's :data:`QUANTIZER_FIELDS` (``None`` without one). Stored with the weights as the layer's extra
    state, so that loading them into a layer quantised otherwise is refused instead of silently accepted."""
    q = layer.quantizer
    return {"ternary": bool(layer.ternary), "per_channel": bool(layer.per_channel),
            "quantizer": None if q is None else {f: getattr(q, f) for f in QUANTIZER_FIELDS}}


def check_layer_settings(layer: nn.Module, saved: Any) -> None:
    """Raise ``ValueError`` naming the first setting in which ``saved`` (a :func:`layer_settings`) differs
    from ``layer``'s."""
    mine = layer_settings(layer)
    if not isinstance(saved, dict) or set(saved) != set(mine):
        raise ValueError(f"the saved layer settings {saved!r} are not a robuq layer's; the weights come from "
                         "another model or another version")
    for field in ("ternary", "per_channel"):
        if saved[field] != mine[field]:
            raise ValueError(f"the weights were saved by a layer with {field}={saved[field]}, this layer has "
                             f"{field}={mine[field]}: quantise the model as it was saved (or use "
                             "robuq.load_quantized, which rebuilds it from the saved folder)")
    theirs, ours = saved["quantizer"], mine["quantizer"]
    if (theirs is None) != (ours is None):
        raise ValueError(f"the weights were saved by a layer {'without' if theirs is None else 'with'} an activation "
                         f"quantizer, this layer has {'one' if ours is not None else 'none'}: quantise the model as "
                         "it was saved (or use robuq.load_quantized)")
    for field in QUANTIZER_FIELDS if ours is not None else ():
        if theirs.get(field) != ours[field]:
            raise ValueError(f"the weights were saved with activation {field}={theirs.get(field)!r}, this layer "
                             f"has {field}={ours[field]!r}: quantise the model as it was saved (or use "
                             "robuq.load_quantized)")
