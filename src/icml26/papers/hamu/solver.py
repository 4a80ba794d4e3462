"""The per-step problem of HAMU (hardness-aware multi-objective unlearning), solved in closed form.

Paper: "HAMU: hardness-aware multi-objective machine unlearning" (ICML 2026, arXiv 2606.02119;
code github.com/aoi3142/HAMU). With g_r = ∇L_retain and g_f = ∇L_forget and a step
θ ← θ + δ, HAMU-Q solves, at every step,

    minimise  g_r·δ   subject to   g_f·δ ≥ B   and   ‖δ‖ ≤ R,

i.e. it guarantees a first-order forget-loss increase of B while harming the retain loss as
little as possible. Steps of :func:`hamu_update`:

1. hardness κ = g_r·g_f; infeasible when B > R‖g_f‖ (no step of norm ≤ R reaches B);
2. direct branch when κ ≤ κ₁ = −B‖g_r‖/R: pure retain descent δ = −R·g_r/‖g_r‖ already meets
   the forget constraint;
3. otherwise the rectified branch: δ = (B/‖g_f‖²)·g_f − √(R² − B²/‖g_f‖²)·ĝ_⊥, with
   g_⊥ = g_r − (κ/‖g_f‖²)·g_f the part of g_r orthogonal to g_f (both constraints active);
   colinear gradients (g_⊥ = 0) take δ = (B/‖g_f‖²)·g_f;
4. stop flag: retain degradation is unavoidable (the optimum has g_r·δ ≥ 0) exactly when
   κ ≥ κ₂ = ‖g_r‖·√(‖g_f‖² − B²/R²).

HAMU-U is the same solver applied to (g_r, g_f) → (−g_f, −g_r): a guaranteed retain-loss
decrease of B with the largest forget-loss increase.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "BRANCHES",
    "Branch",
    "HamuStep",
    "SegmentSolution",
    "Variant",
    "check_gradient_pair",
    "hamu_update",
    "hamu_update_segments",
    "stopping_threshold",
]

Branch = Literal["direct", "rectified", "infeasible"]
BRANCHES: tuple[Branch, ...] = ("direct", "rectified", "infeasible")
"""Branch names by the codes :func:`hamu_update_segments` returns (0, 1, 2)."""
Variant = Literal["Q", "U"]

# Norms below this count as zero (colinear or vanishing gradients).
_EPS = 1e-12


@dataclasses.dataclass(frozen=True)
class HamuStep:
    """The solution of one HAMU problem.

    Attributes:
        delta: the step δ, same shape as the gradients (apply as θ ← θ + δ).
        branch: ``"direct"`` (retain descent meets the bound), ``"rectified"`` (both
            constraints active; includes colinear gradients) or ``"infeasible"``
            (B > R‖g_f‖; ``delta`` is then the minimum-norm step (B/‖g_f‖²)·g_f, or zero when
            g_f = 0).
        stop: the optimum has g_r·δ ≥ 0, i.e. κ ≥ κ₂: no step meeting the bound lowers the
            (effective) retain loss. ``False`` when infeasible (the branch says so).
        hardness: κ = g_r·g_f of the effective gradients (for ``"U"``: (−g_f)·(−g_r), the same
            number).
        kappa_direct: κ₁ = −B‖g_r‖/R, the branch threshold (``-inf`` if R = 0).
        kappa_stop: κ₂ = ‖g_r‖·√(‖g_f‖² − B²/R²) (``nan`` when infeasible).
    """

    delta: Tensor
    branch: Branch
    stop: bool
    hardness: float
    kappa_direct: float
    kappa_stop: float

    def __post_init__(self) -> None:
        if self.branch not in BRANCHES:
            raise ValueError(f"branch={self.branch!r} must be one of {', '.join(BRANCHES)}")


def stopping_threshold(retain_norm: float, forget_norm: float, *, bound: float, radius: float) -> float:
    """κ₂ = ‖g_r‖·√(‖g_f‖² − B²/R²); ``nan`` when the problem is infeasible (B > R‖g_f‖).

    With R = 0 and B = 0 only δ = 0 is feasible, so retain cannot improve: κ₂ = −∞.
    The norms must be finite and non-negative, B and R as in :func:`hamu_update`.
    """
    for name, value in (("retain_norm", retain_norm), ("forget_norm", forget_norm)):
        value = _number(name, value)
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f"{name}={value} must be a finite norm >= 0")
    retain_norm, forget_norm = float(retain_norm), float(forget_norm)
    bound, radius = _number("bound", bound), _number("radius", radius)
    _check_scalars(bound, radius)
    if radius <= 0.0:
        return -math.inf if bound <= 0.0 else math.nan
    # κ₂ = ‖g_r‖ √(‖g_f‖² − B²/R²)
    inside = forget_norm**2 - (bound / radius) ** 2
    return retain_norm * math.sqrt(inside) if inside >= 0.0 else math.nan


def _number(name: str, value) -> float:
    """A real number (Python, NumPy or a one-element tensor) as a float, else a ``TypeError`` naming it."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(f"{name} must be a number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"{name}={value!r} must be a real number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r} must be a real number") from None


def _as_gradient(name: str, g) -> tuple[Tensor, bool]:
    """``g`` as a floating tensor (NumPy arrays and lists accepted) and whether it came as NumPy."""
    numpy_in = not isinstance(g, Tensor)
    if numpy_in:
        try:
            g = torch.as_tensor(np.asarray(g, dtype=np.float64))
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a tensor or an array of numbers, got {type(g).__name__}") from None
    elif not g.is_floating_point():
        g = g.to(torch.get_default_dtype())
    return g, numpy_in


def check_gradient_pair(g_retain, g_forget, *, names: tuple[str, str] = ("g_retain", "g_forget"),
                        flat: bool = False) -> tuple[Tensor, Tensor, bool]:
    """Validate paired gradients: the same shape (1-D if ``flat``), non-empty, finite.

    Returns them as floating tensors and whether the caller passed NumPy (then results go back
    as NumPy). NaN or inf (a diverged loss) is a ``ValueError``: a step from it would write NaN
    into the parameters.
    """
    (a, a_np), (b, b_np) = _as_gradient(names[0], g_retain), _as_gradient(names[1], g_forget)
    if a.shape != b.shape:
        raise ValueError(f"{names[0]} {tuple(a.shape)} and {names[1]} {tuple(b.shape)} must have the same shape")
    if flat and a.dim() != 1:
        raise ValueError(f"{names[0]} and {names[1]} must be flat (1-D) gradients, got shape {tuple(a.shape)}; "
                         "flatten them with torch.cat([g.reshape(-1) for g in grads])")
    if a.numel() == 0:
        raise ValueError(f"{names[0]} and {names[1]} are empty; pass the gradients of at least one parameter")
    for name, t in zip(names, (a, b)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} holds NaN or inf (a diverged loss?); no step is computed from it")
    return a, b, a_np and b_np


def _check_scalars(bound: float, radius: float) -> None:
    if not (math.isfinite(bound) and bound >= 0.0):
        raise ValueError(f"bound={bound} must be a finite number >= 0 (the guaranteed first-order "
                         "forget-loss increase B)")
    if not (math.isfinite(radius) and radius >= 0.0):
        raise ValueError(f"radius={radius} must be a finite number >= 0 (the step-norm limit R)")


def hamu_update(
    g_retain: Tensor,
    g_forget: Tensor,
    *,
    bound: float,
    radius: float,
    variant: Variant = "Q",
) -> HamuStep:
    """Solve min g_r·δ s.t. g_f·δ ≥ B, ‖δ‖ ≤ R in closed form (HAMU-Q), or its dual (HAMU-U).

    Args:
        g_retain: g_r, gradient of the retain loss, any shape (one parameter tensor or a
            flattened vector); computed in its own dtype and device.
        g_forget: g_f, gradient of the forget loss, same shape as ``g_retain``.
        bound: B ≥ 0, the guaranteed first-order forget-loss increase (for ``"U"``: the
            guaranteed retain-loss decrease).
        radius: R ≥ 0, the largest step norm.
        variant: ``"Q"`` (guaranteed forgetting, least retain harm) or ``"U"`` (guaranteed
            retain improvement, most forgetting) = ``"Q"`` on (−g_f, −g_r).

    Returns:
        :class:`HamuStep` with δ of the gradients' shape (a NumPy array when both gradients
        were given as NumPy arrays or lists). NaN or inf in a gradient is a ``ValueError``.
    """
    g_retain, g_forget, numpy_in = check_gradient_pair(g_retain, g_forget)
    if variant not in ("Q", "U"):
        raise ValueError(f"variant={variant!r} must be 'Q' or 'U'")
    bound, radius = _number("bound", bound), _number("radius", radius)
    _check_scalars(bound, radius)
    if variant == "U":
        g_retain, g_forget = -g_forget, -g_retain

    gr, gf = g_retain.reshape(-1), g_forget.reshape(-1)
    # κ = g_r·g_f
    kappa = float(torch.dot(gr, gf))
    gr_norm = float(torch.linalg.vector_norm(gr))
    gf_norm = float(torch.linalg.vector_norm(gf))
    kappa_stop = stopping_threshold(gr_norm, gf_norm, bound=bound, radius=radius)
    # κ₁ = −B‖g_r‖/R
    kappa_direct = -bound * gr_norm / radius if radius > 0.0 else -math.inf

    def result(delta: Tensor, branch: Branch, stop: bool) -> HamuStep:
        delta = delta.reshape(g_retain.shape)
        return HamuStep(delta.numpy() if numpy_in else delta, branch, stop, kappa, kappa_direct, kappa_stop)

    # Infeasible: B > R‖g_f‖ (also g_f = 0 with B > 0).
    if bound > radius * gf_norm or (gf_norm <= _EPS and bound > 0.0):
        if gf_norm <= _EPS:
            return result(torch.zeros_like(gr), "infeasible", False)
        # minimum-norm step meeting the bound: δ = (B/‖g_f‖²)·g_f
        return result((bound / gf_norm**2) * gf, "infeasible", False)

    if gr_norm <= _EPS:
        # The objective is flat: the minimum-norm feasible step; g_r·δ = 0, so retain cannot improve.
        delta = (bound / gf_norm**2) * gf if bound > 0.0 else torch.zeros_like(gr)
        return result(delta, "rectified", True)

    if kappa <= kappa_direct:
        # Direct: δ = −R·g_r/‖g_r‖ gives g_f·δ = −Rκ/‖g_r‖ ≥ B.
        return result((-radius / gr_norm) * gr, "direct", False)

    # Rectified. g_⊥ = g_r − (κ/‖g_f‖²)·g_f
    ascent = (bound / gf_norm**2) * gf
    g_perp = gr - (kappa / gf_norm**2) * gf
    # a second Gram–Schmidt pass: for nearly colinear gradients the first leaves g_⊥ visibly
    # non-orthogonal to g_f (cancellation), and δ would break ‖δ‖ ≤ R and g_f·δ ≥ B
    g_perp = g_perp - (float(torch.dot(g_perp, gf)) / gf_norm**2) * gf
    perp_norm = float(torch.linalg.vector_norm(g_perp))
    stop = kappa >= kappa_stop
    if perp_norm <= _EPS * max(gr_norm, 1.0):
        # Colinear, same direction: any δ with g_f·δ = B is optimal; take the shortest.
        # Then g_r·δ = κB/‖g_f‖² ≥ 0, so retain cannot improve.
        return result(ascent, "rectified", True)
    # δ = (B/‖g_f‖²)·g_f − √(R² − B²/‖g_f‖²)·ĝ_⊥
    orthogonal_scale = math.sqrt(max(radius**2 - (bound / gf_norm) ** 2, 0.0))
    delta = ascent - (orthogonal_scale / perp_norm) * g_perp
    return result(delta, "rectified", stop)


@dataclasses.dataclass(frozen=True)
class SegmentSolution:
    """Many independent HAMU problems solved at once (:func:`hamu_update_segments`).

    Attributes:
        delta: ``(n,)`` the concatenated steps.
        branch: ``(n_segments,)`` int64 codes into :data:`BRANCHES`.
        stop: ``(n_segments,)`` bool, the stop flag of each problem.
        hardness: ``(n_segments,)`` κ of each problem.
        retain_norm, forget_norm: ``(n_segments,)`` ‖g_r‖ and ‖g_f‖ of each problem.
    """

    delta: Tensor
    branch: Tensor
    stop: Tensor
    hardness: Tensor
    retain_norm: Tensor
    forget_norm: Tensor


def _segment_sum(values: Tensor, segments: Tensor, n_segments: int) -> Tensor:
    out = torch.zeros(n_segments, dtype=torch.float64, device=values.device)
    return out.index_add_(0, segments, values.to(torch.float64))


def hamu_update_segments(
    g_retain: Tensor,
    g_forget: Tensor,
    segments: Tensor,
    *,
    bounds: Tensor,
    radii: Tensor,
) -> SegmentSolution:
    """HAMU-Q on many blocks at once: the same answer as :func:`hamu_update` per block.

    Every branch of the closed form is a combination of g_f, g_r and g_⊥ = g_r − p·g_f, so the
    per-block scalars (norms, κ, the projection p and ‖g_⊥‖) are segment sums and δ costs a few
    vector operations whatever the number of blocks (the layer-wise solver of
    :class:`~.optimizer.HamuOptimizer` does the same tensor by tensor). As in :func:`hamu_update`,
    g_⊥ gets a second Gram–Schmidt pass and δ is formed from the g_⊥ vector itself (not as
    a·g_f + b·g_r, whose two large terms cancel for nearly colinear gradients), so ‖δ‖ ≤ R and
    g_f·δ ≥ B hold to rounding of the result in every block.

    Args:
        g_retain, g_forget: ``(n,)`` flat gradients (effective ones for HAMU-U).
        segments: ``(n,)`` int64 block index of every entry, in ``0 .. n_segments - 1``.
        bounds, radii: ``(n_segments,)`` B and R of every block (float64, same device), finite
            and non-negative.
    """
    g_retain, g_forget, _ = check_gradient_pair(g_retain, g_forget)
    n_segments = bounds.numel()
    if radii.shape != bounds.shape or bounds.dim() != 1 or n_segments == 0:
        raise ValueError(f"bounds {tuple(bounds.shape)} and radii {tuple(radii.shape)} must be one (n_segments,) shape")
    if not bool(torch.isfinite(bounds).all() & torch.isfinite(radii).all()) or bool((bounds < 0).any() | (radii < 0).any()):
        raise ValueError("bounds and radii must be finite and >= 0")
    if segments.shape != (g_retain.numel(),) or segments.dtype != torch.long or \
            int(segments.min()) < 0 or int(segments.max()) >= n_segments:
        raise ValueError(f"segments must be ({g_retain.numel()},) int64 block indices in 0..{n_segments - 1}")
    gr, gf = g_retain.reshape(-1), g_forget.reshape(-1)
    retain_sq = _segment_sum(gr * gr, segments, n_segments)
    forget_sq = _segment_sum(gf * gf, segments, n_segments)
    # κ = g_r·g_f per block
    kappa = _segment_sum(gr * gf, segments, n_segments)
    safe_forget_sq = forget_sq.clamp_min(_EPS**2)
    # first pass g_⊥ = g_r − (κ/‖g_f‖²)·g_f, then a second pass against its leftover along g_f
    first = (kappa / safe_forget_sq).to(gr.dtype)[segments]
    residual = gr - first * gf
    second = (_segment_sum(residual * gf, segments, n_segments) / safe_forget_sq).to(gr.dtype)[segments]
    g_perp = residual - second * gf
    perp_norm = _segment_sum(g_perp * g_perp, segments, n_segments).sqrt()
    coef = block_coefficients(retain_sq, forget_sq, kappa, perp_norm, bounds=bounds, radii=radii)
    delta = (coef.ascent.to(gr.dtype)[segments] * gf + coef.retain_coef.to(gr.dtype)[segments] * gr
             - coef.perp_coef.to(gr.dtype)[segments] * g_perp)
    return SegmentSolution(delta, coef.branch, coef.stop, kappa, coef.retain_norm, coef.forget_norm)


@dataclasses.dataclass
class BlockCoefficients:
    """Per block, the closed form's δ_l = ascent_l·g_f,l + retain_coef_l·g_r,l − perp_coef_l·g_⊥,l.

    g_⊥,l is the part of g_r,l orthogonal to g_f,l (two Gram–Schmidt passes) whose norm was
    passed in; at most one of ``retain_coef`` (direct branch) and ``perp_coef`` (rectified) is
    non-zero in a block.
    """

    ascent: Tensor
    retain_coef: Tensor
    perp_coef: Tensor
    branch: Tensor
    """0 direct, 1 rectified, 2 infeasible."""
    stop: Tensor
    retain_norm: Tensor
    forget_norm: Tensor


def block_coefficients(retain_sq: Tensor, forget_sq: Tensor, kappa: Tensor, perp_norm: Tensor, *,
                       bounds: Tensor, radii: Tensor) -> BlockCoefficients:
    """HAMU-Q's closed form from per-block scalars only: ‖g_r,l‖², ‖g_f,l‖², κ_l, ‖g_⊥,l‖ (float64).

    Every branch is a combination of g_f,l, g_r,l and g_⊥,l, so these four scalars per block
    decide δ; the gradients themselves are needed only to form δ. This is what lets the optimizer
    work tensor by tensor (no flattened copy) and on FSDP2 shards (the scalars are sums over
    shards). ``perp_norm`` must be the norm of the g_⊥ vector the caller forms δ with.
    """
    retain_norm, forget_norm = retain_sq.sqrt(), forget_sq.sqrt()
    safe_forget_sq = forget_sq.clamp_min(_EPS**2)

    infeasible = (bounds > radii * forget_norm) | ((forget_norm <= _EPS) & (bounds > 0))
    flat = ~infeasible & (retain_norm <= _EPS)
    safe_radii = radii.clamp_min(_EPS)
    # κ₁ = −B‖g_r‖/R (−∞ when R = 0)
    kappa_direct = torch.where(radii > 0, -bounds * retain_norm / safe_radii, torch.full_like(radii, -math.inf))
    direct = ~infeasible & ~flat & (kappa <= kappa_direct)
    rectified = ~infeasible & ~direct
    colinear = rectified & ~flat & (perp_norm <= _EPS * retain_norm.clamp_min(1.0))
    # κ₂ = ‖g_r‖ √(‖g_f‖² − B²/R²), −∞ when R = B = 0
    inside = (forget_sq - (bounds / safe_radii) ** 2).clamp_min(0.0)
    kappa_stop = torch.where(radii > 0, retain_norm * inside.sqrt(), torch.full_like(radii, -math.inf))
    stop = rectified & (flat | colinear | (kappa >= kappa_stop))

    # B/‖g_f‖²: the shortest step meeting the bound (rectified, colinear, flat and infeasible)
    ascent = torch.where((forget_norm > _EPS) & ~direct, bounds / safe_forget_sq, torch.zeros_like(bounds))
    # rectified: δ = (B/‖g_f‖²)·g_f − √(R² − B²/‖g_f‖²)·g_⊥/‖g_⊥‖
    orthogonal_scale = (radii**2 - bounds**2 / safe_forget_sq).clamp_min(0.0).sqrt()
    perp_coef = torch.where(rectified & ~flat & ~colinear, orthogonal_scale / perp_norm.clamp_min(_EPS),
                            torch.zeros_like(bounds))
    # direct: δ = −(R/‖g_r‖)·g_r
    retain_coef = torch.where(direct, -radii / retain_norm.clamp_min(_EPS), torch.zeros_like(bounds))
    branch = torch.where(direct, 0, torch.where(infeasible, 2, 1))
    return BlockCoefficients(ascent, retain_coef, perp_coef, branch, stop, retain_norm, forget_norm)
