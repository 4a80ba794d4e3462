"""The control of the perturbation experiment: a misaligned, norm-matched perturbation.

Sibling of :func:`icml26.papers.curvature.perturb.straighten` (same trajectory in, same
trajectory out with only the last point moved). Steps:

1. the aligned displacement ``u = x^_t - x_t`` and the previous step ``v_{t-2}`` span the
   local trajectory plane (``x^_t - x_t = v_{t-2} - v_{t-1}``, so the plane holds the last
   three points);
2. draw ``g ~ N(0, I_d)`` and remove its components in that plane (Gram-Schmidt, twice
   for accuracy);
3. rescale to the aligned perturbation's norm: ``delta = |alpha| |u| g / |g|`` (or, with
   ``relative_to="state"``, ``delta = |epsilon| |x_t| g / |g|``); ``x_t <- x_t + delta``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icml26.common.argcheck import check_real
from icml26.papers.curvature.geometry import extrapolation_target

__all__ = ["misaligned"]


def _remove(component_of: Tensor, direction: Tensor) -> Tensor:
    """``a - <a, e> e`` for unit (or zero) ``e`` along the last dimension."""
    return component_of - (component_of * direction).sum(-1, keepdim=True) * direction


def _unit(v: Tensor) -> Tensor:
    norm = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return torch.where(norm > 0, v / norm.clamp_min(torch.finfo(v.dtype).tiny), torch.zeros_like(v))


def misaligned(
    hidden: Tensor,
    alpha: float,
    rng: torch.Generator | None = None,
    *,
    keep_step_length: bool = False,
    relative_to: str = "target",
) -> Tensor:
    """Move the last point by a random vector orthogonal to the local trajectory plane.

    Args:
        hidden: ``(..., T, d)`` trajectories, ``T >= 3``, ``d >= 3``.
        alpha: the displacement has norm ``|alpha| |x^_t - x_t|``, the norm of
            ``straighten(hidden, alpha)``'s displacement.
        rng: generator of the random direction (on any device; draws are moved to
            ``hidden``'s device).
        keep_step_length: which extrapolation defines ``x^_t`` (see ``extrapolation_target``).
        relative_to: ``"target"``: ``alpha`` scales ``|x^_t - x_t|`` (above); ``"state"``: the
            displacement has norm ``|alpha| |x_t|``, as ``straighten(..., relative_to="state")``'s.

    Returns:
        A copy of ``hidden`` with only the last point changed.
    """
    check_real(alpha, "alpha")
    if relative_to not in ("target", "state"):
        raise ValueError(f"relative_to={relative_to!r} must be 'target' (alpha |x^_t - x_t|) or 'state' "
                         f"(epsilon |x_t|)")
    if not isinstance(hidden, Tensor):
        raise TypeError(f"hidden must be a torch.Tensor (..., T, d), got {type(hidden).__name__}")
    if rng is not None and not isinstance(rng, torch.Generator):
        raise TypeError(f"rng must be a torch.Generator or None, got {type(rng).__name__}")
    target = extrapolation_target(hidden, keep_step_length=keep_step_length)
    if hidden.shape[-1] < 3:
        raise ValueError(f"hidden has d={hidden.shape[-1]}; an orthogonal complement of a plane needs d >= 3")
    x = hidden if hidden.dtype in (torch.float32, torch.float64) else hidden.float()
    last = x[..., -1, :]
    aligned = target.to(x.dtype) - last  # u = x^_t - x_t
    e1 = _unit(x[..., -2, :] - x[..., -3, :])  # v_{t-2}
    e2 = _unit(_remove(aligned, e1))
    draw_device = rng.device if rng is not None else x.device
    g = torch.randn(last.shape, generator=rng, dtype=x.dtype, device=draw_device).to(x.device)
    for _ in range(2):
        g = _remove(_remove(g, e1), e2)
    # delta = |alpha| |u| g / |g|   (relative_to="state": |epsilon| |x_t| g / |g|)
    scale = abs(alpha) * torch.linalg.vector_norm(aligned if relative_to == "target" else last, dim=-1, keepdim=True)
    delta = scale * _unit(g)
    out = hidden.clone()
    out[..., -1, :] = (last + delta).to(hidden.dtype)
    return out
