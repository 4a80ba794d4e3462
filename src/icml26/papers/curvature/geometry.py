"""Turning angles and contextual curvature of representation trajectories.

Paper: contextual curvature of LLM representation trajectories and next-token entropy
(King, Fedorenko, Hosseini, ICML 2026, arXiv 2604.23985), building on the
"temporal straightening" curvature of Hosseini & Fedorenko (NeurIPS 2023).

Steps, for a trajectory ``x_0 .. x_{T-1}`` (the hidden states of one layer, one per token):

1. steps ``v_t = x_{t+1} - x_t``;
2. turning angle at vertex ``j`` (points ``j-1, j, j+1``):
   ``phi_j = arccos(<v_{j-1}, v_j> / (|v_{j-1}| |v_j|))`` in ``[0, pi]``, computed with
   Kahan's ``2 atan2(|a^ - b^|, |a^ + b^|)``, which is exact near 0 and pi where arccos
   is not;
3. contextual curvature ``kappa(t; W)``: the mean of the last ``W`` angles whose three
   points all lie at positions ``<= t``, i.e. ``phi_{t-W} .. phi_{t-1}``; it is causal and
   defined for ``t >= W + 1`` (``W + 2`` points), NaN before.

An angle next to a zero-length step (``|v| <= eps``) is undefined (NaN); a window that
contains an undefined angle gives a NaN ``kappa``. NaN points give NaN angles (documented,
not an error: a trajectory may be partly padded). Every function takes NumPy arrays too and
then returns NumPy arrays. :func:`extrapolation_target` is the
constant-velocity continuation ``2 x_{t-1} - x_{t-2}`` that the perturbations aim at. Every function takes any leading batch
dimensions: ``(T, d)`` or ``(batch, T, d)``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import Tensor

from icml26.common.argcheck import check_real

__all__ = ["contextual_curvature", "curvature_from_angles", "extrapolation_target", "mean_curvature",
           "turning_angles"]


def _numpy_in_out(fn):
    """Let ``fn(traj, ...)`` take a NumPy array and return a NumPy array for it."""

    @functools.wraps(fn)
    def wrapper(traj, *args, **kwargs):
        if isinstance(traj, np.ndarray):
            return fn(torch.from_numpy(traj), *args, **kwargs).numpy()
        return fn(traj, *args, **kwargs)

    return wrapper


def _check_trajectory(traj: Tensor, min_points: int) -> Tensor:
    if not isinstance(traj, Tensor):
        raise TypeError(f"traj must be a torch.Tensor or NumPy array of shape (..., T, d), got {type(traj).__name__}")
    if not traj.is_floating_point():
        raise TypeError(f"traj must be floating point, got {traj.dtype}")
    if traj.ndim < 2:
        raise ValueError(f"traj has shape {tuple(traj.shape)}; it must be (..., T, d) with T points in d dims")
    if traj.shape[-2] < min_points:
        raise ValueError(f"traj has {traj.shape[-2]} points; at least {min_points} are needed")
    # Half precision loses the small angles; compute in float32 at least.
    return traj if traj.dtype in (torch.float32, torch.float64) else traj.float()


@_numpy_in_out
def turning_angles(traj: Tensor, *, eps: float = 1e-8) -> Tensor:
    """Turning angle (radians) at every interior vertex of a trajectory.

    Args:
        traj: ``(..., T, d)`` points ``x_0 .. x_{T-1}``; ``T >= 3``.
        eps: a step with norm ``<= eps`` has no direction; angles next to it are NaN.

    Returns:
        ``(..., T - 2)``: entry ``k`` is the angle at vertex ``k + 1`` (points ``k, k+1, k+2``).
    """
    check_real(eps, "eps", low=0.0)
    x = _check_trajectory(traj, 3)
    # v_t = x_{t+1} - x_t
    steps = x[..., 1:, :] - x[..., :-1, :]  # (..., T-1, d)
    norms = torch.linalg.vector_norm(steps, dim=-1, keepdim=True)
    moving = norms > eps
    unit = steps / torch.where(moving, norms, torch.ones_like(norms))
    a, b = unit[..., :-1, :], unit[..., 1:, :]
    # phi_j = arccos(<a, b>) = 2 atan2(|a - b|, |a + b|) for unit a, b (Kahan)
    phi = 2.0 * torch.atan2(torch.linalg.vector_norm(a - b, dim=-1), torch.linalg.vector_norm(a + b, dim=-1))
    defined = moving[..., :-1, 0] & moving[..., 1:, 0]
    return torch.where(defined, phi, torch.full_like(phi, float("nan")))


@_numpy_in_out
def contextual_curvature(traj: Tensor, window: int = 3, *, eps: float = 1e-8) -> Tensor:
    """Causal contextual curvature ``kappa(t; W)`` at every position.

    Args:
        traj: ``(..., T, d)`` hidden states of one layer, one point per token.
        window: ``W``, the number of most recent angles averaged (the paper's window is
            not public; 3 is our default, which reads the 5 points ``x_{t-4} .. x_t``).
        eps: zero-length threshold of :func:`turning_angles`.

    Returns:
        ``(..., T)``; NaN for ``t < W + 1`` and wherever the window holds an undefined angle.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window={window!r} must be a positive integer (the number of angles averaged)")
    x = _check_trajectory(traj, 1)
    T = x.shape[-2]
    if T < window + 2:
        return torch.full((*x.shape[:-2], T), float("nan"), dtype=x.dtype, device=x.device)
    return curvature_from_angles(turning_angles(x, eps=eps), window)


def curvature_from_angles(angles: Tensor, window: int) -> Tensor:
    """:func:`contextual_curvature` from the trajectory's :func:`turning_angles` ``(..., T - 2)``, for a
    caller that needs the angles too (the same numbers as computing them again).

    Returns:
        ``(..., T)``; NaN for ``t < W + 1``.
    """
    T = angles.shape[-1] + 2
    out = torch.full((*angles.shape[:-1], T), float("nan"), dtype=angles.dtype, device=angles.device)
    if T < window + 2:
        return out
    # kappa(t; W) = (1/W) sum_{j=t-W}^{t-1} phi_j  ->  angle indices t-W-1 .. t-2
    windows = angles.unfold(-1, window, 1)  # (..., T-W-1, W), window i ends at angle i+W-1
    out[..., window + 1 :] = windows.mean(-1)
    return out


@_numpy_in_out
def mean_curvature(traj: Tensor, *, eps: float = 1e-8) -> Tensor:
    """Curvature of a whole trajectory (Hosseini & Fedorenko 2023): the mean turning angle.

    Args:
        traj: ``(..., T, d)``, ``T >= 3``.

    Returns:
        ``(...)``: the mean over the defined angles (NaN if none is defined).
    """
    return torch.nanmean(turning_angles(traj, eps=eps), dim=-1)


@_numpy_in_out
def extrapolation_target(hidden: Tensor, *, keep_step_length: bool = False) -> Tensor:
    """Constant-velocity extrapolation ``x^_t`` of the last point from the two before it.

    Args:
        hidden: ``(..., T, d)``, ``T >= 3``.
        keep_step_length: keep the original last step's length
            (``x_{t-1} + |x_t - x_{t-1}| v^_{t-2}``) instead of ``2 x_{t-1} - x_{t-2}``.

    Returns:
        ``(..., d)``.
    """
    _check_trajectory(hidden, 3)
    x_prev2, x_prev, x_last = hidden[..., -3, :], hidden[..., -2, :], hidden[..., -1, :]
    velocity = x_prev - x_prev2  # v_{t-2}
    if not keep_step_length:
        # x^_t = x_{t-1} + v_{t-2}
        return x_prev + velocity
    speed = torch.linalg.vector_norm(velocity, dim=-1, keepdim=True)
    step = torch.linalg.vector_norm(x_last - x_prev, dim=-1, keepdim=True)
    # x^_t = x_{t-1} + |v_{t-1}| v_{t-2} / |v_{t-2}|
    return x_prev + step * velocity / speed.clamp_min(torch.finfo(speed.dtype).tiny)
