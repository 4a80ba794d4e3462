"""Truncated influence propagation: LMCleaner's removal of a deleted batch.

Deleting the batch used at step t_z changes the counterfactual trajectory by
δ[t_z+1] = u[t_z] (the skipped update), and a first-order expansion of the later
gradients around the recorded trajectory propagates it as δ[s+1] = P[s]·δ[s] with
P[s] = I − η_s·H[s] (H[s] the mini-batch Hessian at the historical θ[s]).
LMCleaner applies only the first K* propagators:

1. K* = min(K, τ − t_z − 1)                                (effective window)
2. v ← u[t_z]
3. for s = t_z+1 … t_z+K*:  v ← v − η_s·(H[s] + λ_damp·I)·v   (λ_damp = 0 in the paper)
4. θ̂ = θ[τ] − v

Steps whose batch was deleted as well, and edit steps, propagate as the identity
(the counterfactual skips them), so deleting several batches is the sum of their
corrections. The cost is K* Hessian-vector products per batch, independent of
the lag τ − t_z; rebuilding the historical θ[s] adds O((τ − t_z)·p) additions in
dense recording mode (no gradients).

For a quadratic objective H[s] does not depend on θ, and with K ≥ τ − t_z − 1 the
result equals the exact counterfactual replay.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import torch
from torch import Tensor

from ._checks import finite_vector, integer, number
from .hvp import HVP
from .trajectory import TrajectoryRecorder

__all__ = ["Correction", "correction_path", "effective_window", "truncated_correction"]


def effective_window(window: int, batch_step: int, now_step: int) -> int:
    """K* = min(K, τ − t_z − 1): how many propagators follow the deleted step t_z."""
    window, batch_step, now_step = integer("window", window, low=-(2**62)), \
        integer("batch_step", batch_step, low=-(2**62)), integer("now_step", now_step, low=-(2**62))
    if window < 0:
        raise ValueError(f"window={window} must be non-negative")
    if not 0 <= batch_step < now_step:
        raise ValueError(f"the deleted step t_z={batch_step} must lie before now τ={now_step}")
    return min(window, now_step - batch_step - 1)


@dataclasses.dataclass
class Correction:
    """The result of :func:`truncated_correction`.

    Attributes:
        vector: v ``(p,)``; the unlearned parameters are θ̂ = θ[τ] − v.
        batch_steps: the deleted steps t_z.
        windows: K* for each deleted step.
        hvp_calls: Hessian-vector products evaluated.
        grad_equivalents: cost in mini-batch gradients (HVP calls × the backend's cost).
    """

    vector: Tensor
    batch_steps: tuple[int, ...]
    windows: tuple[int, ...]
    hvp_calls: int
    grad_equivalents: float


def _as_steps(batch_step: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(batch_step, (int, Tensor)) and not isinstance(batch_step, bool) and \
            (not isinstance(batch_step, Tensor) or batch_step.numel() == 1):
        steps = (integer("batch_step", batch_step),)
    else:
        steps = tuple(integer("batch_step", s) for s in batch_step)
    if not steps:
        raise ValueError("batch_step is empty: give at least one step to delete")
    if len(set(steps)) != len(steps):
        raise ValueError(f"batch_step has repeated steps {sorted(steps)}")
    return steps


def _check_now(recorder: TrajectoryRecorder, now_step: int) -> None:
    if not isinstance(recorder, TrajectoryRecorder):
        raise TypeError(f"recorder must be a TrajectoryRecorder, got {type(recorder).__name__}")
    integer("now_step", now_step, low=-(2**62))
    if not 0 < now_step <= recorder.num_steps:
        raise ValueError(f"now_step={now_step} must lie in 1..{recorder.num_steps} (the recorded steps)")


def _check_hvp(hvp) -> None:
    if not callable(hvp) or not hasattr(hvp, "grad_equivalents"):
        raise TypeError(f"hvp must be an HVP backend (make_hvp(problem, kind)), got {type(hvp).__name__}")


def _propagate(
    recorder: TrajectoryRecorder,
    params_now: Tensor,
    batch_step: int,
    now_step: int,
    window: int,
    hvp: HVP,
    skip: frozenset[int],
    damping: float,
) -> Iterator[tuple[int, Tensor, int]]:
    """Yield (k, v_k, hvp calls so far) for k = 0 … K*, v_k after k propagators."""
    if recorder.steps[batch_step].kind != "sgd":
        raise ValueError(f"step {batch_step} is an edit, not a batch; only batches can be deleted")
    k_star = effective_window(window, batch_step, now_step)
    # v ← u[t_z]
    v = recorder.update(batch_step).to(params_now.device, copy=True)
    calls = 0
    yield 0, v, calls
    if k_star == 0:
        return
    params = recorder.iter_params(batch_step + 1, batch_step + k_star, params_now, now_step)
    for k, theta_s in enumerate(params, start=1):
        s = batch_step + k
        if s not in skip and not recorder.is_identity(s):
            eta = recorder.lr(s)
            hv = hvp(theta_s.to(params_now.device), recorder.batch_ids(s), v)
            calls += 1
            # v ← (I − η_s (H[s] + λ_damp I)) v
            v = v - eta * (hv + damping * v) if damping else v - eta * hv
        yield k, v, calls


def truncated_correction(
    recorder: TrajectoryRecorder,
    params_now: Tensor,
    batch_step: int | Sequence[int],
    now_step: int,
    *,
    window: int,
    hvp: HVP,
    damping: float = 0.0,
) -> Correction:
    """LMCleaner's correction v for deleting the batch(es) of ``batch_step`` at step τ.

    Args:
        recorder: the recorded trajectory (steps 0 … τ−1 at least).
        params_now: θ[τ] ``(p,)``, the parameters at ``now_step`` (historical parameters are
            rebuilt from it in dense recording mode).
        batch_step: t_z, or several deleted steps (their corrections add up; each
            skips the others' steps).
        now_step: τ, the step at which the request is served (≤ ``recorder.num_steps``).
        window: K, the truncation window (paper symbol K).
        hvp: a backend from :mod:`.hvp`, evaluated at the historical θ[s].
        damping: λ_damp of the authors' code (v ← v − η·λ_damp·v); 0 is the paper.

    Returns:
        a :class:`Correction`; the unlearned model is ``params_now - correction.vector``.
    """
    steps = _as_steps(batch_step)
    _check_now(recorder, now_step)
    _check_hvp(hvp)
    integer("window", window, low=-(2**62))
    damping = number("damping", damping)
    if damping < 0:
        raise ValueError(f"damping={damping} must be non-negative")
    params_now = finite_vector("params_now", params_now)
    skip = frozenset(steps)
    total = torch.zeros_like(params_now)
    windows, calls = [], 0
    for t_z in steps:
        k_star = effective_window(window, t_z, now_step)
        for k, v, n in _propagate(recorder, params_now, t_z, now_step, window, hvp, skip, damping):
            if k == k_star:
                total = total + v
                calls += n
        windows.append(k_star)
    return Correction(vector=total, batch_steps=steps, windows=tuple(windows), hvp_calls=calls,
                      grad_equivalents=calls * float(hvp.grad_equivalents))


def correction_path(
    recorder: TrajectoryRecorder,
    params_now: Tensor,
    batch_step: int,
    now_step: int,
    *,
    windows: Sequence[int],
    hvp: HVP,
    damping: float = 0.0,
) -> dict[int, Correction]:
    """Corrections for several windows K at once (one propagation, ``max(windows)`` HVPs).

    Truncation at K is a prefix of truncation at a larger K, so ``path[K].vector`` equals
    ``truncated_correction(..., window=K).vector``.
    """
    if not windows:
        raise ValueError("windows is empty")
    _check_now(recorder, now_step)
    _check_hvp(hvp)
    batch_step = integer("batch_step", batch_step)
    damping = number("damping", damping, low=0.0)
    params_now = finite_vector("params_now", params_now)
    wanted = {integer("window", k, low=-(2**62)): effective_window(k, batch_step, now_step) for k in windows}
    by_kstar: dict[int, tuple[Tensor, int]] = {}
    for k, v, n in _propagate(recorder, params_now, batch_step, now_step, max(wanted),
                              hvp, frozenset({batch_step}), damping):
        if k in wanted.values():
            by_kstar[k] = (v, n)
    out = {}
    for window, k_star in wanted.items():
        v, n = by_kstar[k_star]
        out[window] = Correction(vector=v, batch_steps=(batch_step,), windows=(k_star,), hvp_calls=n,
                                 grad_equivalents=n * float(hvp.grad_equivalents))
    return out
