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

Optionally (``tail=``, ours, off by default) the propagators after the window are approximated
from a public-data Hessian at θ[τ] (:class:`~.tail.TailCorrection`): v ← exp(−T·H̄)·v with T
the sum of the remaining steps' learning rates.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import torch
from torch import Tensor

from ._checks import finite_vector, integer, number
from .hvp import HVP
from .tail import TailCorrection
from .trajectory import TrajectoryRecorder

__all__ = ["Correction", "correction_path", "effective_window", "remaining_time", "truncated_correction"]


def effective_window(window: int, batch_step: int, now_step: int) -> int:
    """K* = min(K, τ − t_z − 1): how many propagators follow the deleted step t_z."""
    window, batch_step, now_step = integer("window", window, low=-(2**62)), \
        integer("batch_step", batch_step, low=-(2**62)), integer("now_step", now_step, low=-(2**62))
    if window < 0:
        raise ValueError(f"window={window} must be non-negative")
    if now_step < 1:
        raise ValueError(f"now_step={now_step} (τ) must be >= 1: a deleted step lies before it")
    if not 0 <= batch_step < now_step:
        raise ValueError(f"the deleted step batch_step={batch_step} (t_z) must lie in 0..now_step-1, before "
                         f"now_step={now_step} (τ)")
    return min(window, now_step - batch_step - 1)


@dataclasses.dataclass
class Correction:
    """The result of :func:`truncated_correction`.

    Attributes:
        vector: v ``(p,)``; the unlearned parameters are θ̂ = θ[τ] − v.
        batch_steps: the deleted steps t_z.
        windows: K* for each deleted step.
        hvp_calls: Hessian-vector products evaluated inside the window(s).
        grad_equivalents: cost in mini-batch gradients (HVP calls × the backend's cost, plus the
            tail's public HVPs × their cost).
        tail_calls: public-batch Hessian-vector products of the tail correction (0 without one).
    """

    vector: Tensor
    batch_steps: tuple[int, ...]
    windows: tuple[int, ...]
    hvp_calls: int
    grad_equivalents: float
    tail_calls: int = 0


def _as_steps(batch_step: int | Sequence[int]) -> tuple[int, ...]:
    items = None
    if not isinstance(batch_step, (str, bytes)) and not (isinstance(batch_step, Tensor) and batch_step.numel() == 1):
        try:
            items = list(batch_step)
        except TypeError:  # a single step (an int, or a number the check below refuses by name)
            pass
    if items is None:
        steps = (integer("batch_step", batch_step),)
    else:
        steps = tuple(integer("batch_step", s) for s in items)
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


def _check_tail(tail) -> None:
    if tail is not None and not isinstance(tail, TailCorrection):
        raise TypeError(f"tail must be a TailCorrection or None, got {type(tail).__name__}")


def remaining_time(recorder: TrajectoryRecorder, batch_step: int, now_step: int, k_star: int,
                   skip: frozenset[int] = frozenset()) -> float:
    """T = Σ η_s over the propagators the window left out: s = t_z + K* + 1 … τ − 1, except deleted
    (``skip``) and identity steps (edits, removed batches)."""
    _check_now(recorder, now_step)
    batch_step, k_star = integer("batch_step", batch_step), integer("k_star", k_star)
    if batch_step >= now_step:
        raise ValueError(f"the deleted step batch_step={batch_step} (t_z) must lie before now_step={now_step} (τ)")
    start = batch_step + k_star + 1
    # one pass over the step records (no per-step method calls: this runs over the whole lag)
    return float(sum(record.lr for s, record in enumerate(recorder.steps[start:now_step], start=start)
                     if s not in skip and record.kind != "edit" and not record.removed))


def _apply_tail(tail: TailCorrection | None, recorder: TrajectoryRecorder, params_now: Tensor, v: Tensor,
                batch_step: int, now_step: int, k_star: int, skip: frozenset[int], damping: float) -> tuple[Tensor, int]:
    if tail is None:
        return v, 0
    time = remaining_time(recorder, batch_step, now_step, k_star, skip)
    return tail.apply(params_now, v, time, damping)


def _batch_size(recorder: TrajectoryRecorder, step: int) -> int:
    """B of the deleted step's batch (the unit of a public HVP's cost; O(1), not a scan of the run)."""
    return max(1, int(recorder.batch_ids(step).numel()))


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
    tail: TailCorrection | None = None,
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
        tail: our tail extension (:class:`~.tail.TailCorrection`): approximate the propagators
            after the window from a public-data Hessian at θ[τ]; ``None`` (default) is the paper.

    Returns:
        a :class:`Correction`; the unlearned model is ``params_now - correction.vector``.
    """
    steps = _as_steps(batch_step)
    _check_now(recorder, now_step)
    _check_hvp(hvp)
    _check_tail(tail)
    integer("window", window, low=-(2**62))
    damping = number("damping", damping)
    if damping < 0:
        raise ValueError(f"damping={damping} must be non-negative")
    params_now = finite_vector("params_now", params_now)
    skip = frozenset(steps)
    total = torch.zeros_like(params_now)
    windows, calls, tail_calls = [], 0, 0
    for t_z in steps:
        k_star = effective_window(window, t_z, now_step)
        for k, v, n in _propagate(recorder, params_now, t_z, now_step, window, hvp, skip, damping):
            if k == k_star:
                v, extra = _apply_tail(tail, recorder, params_now, v, t_z, now_step, k_star, skip, damping)
                total = total + v
                calls += n
                tail_calls += extra
        windows.append(k_star)
    cost = calls * float(hvp.grad_equivalents)
    if tail is not None:
        cost += tail_calls * tail.call_cost(_batch_size(recorder, steps[0]))
    return Correction(vector=total, batch_steps=steps, windows=tuple(windows), hvp_calls=calls,
                      grad_equivalents=cost, tail_calls=tail_calls)


def correction_path(
    recorder: TrajectoryRecorder,
    params_now: Tensor,
    batch_step: int,
    now_step: int,
    *,
    windows: Sequence[int],
    hvp: HVP,
    damping: float = 0.0,
    tail: TailCorrection | None = None,
) -> dict[int, Correction]:
    """Corrections for several windows K at once (one propagation, ``max(windows)`` HVPs).

    Truncation at K is a prefix of truncation at a larger K, so ``path[K].vector`` equals
    ``truncated_correction(..., window=K).vector`` (also with a ``tail``, applied to each
    window's vector: m public HVPs per window).
    """
    if not windows:
        raise ValueError("windows is empty")
    _check_now(recorder, now_step)
    _check_hvp(hvp)
    _check_tail(tail)
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
    skip = frozenset({batch_step})
    for window, k_star in wanted.items():
        v, n = by_kstar[k_star]
        v, extra = _apply_tail(tail, recorder, params_now, v, batch_step, now_step, k_star, skip, damping)
        cost = n * float(hvp.grad_equivalents)
        if tail is not None:
            cost += extra * tail.call_cost(_batch_size(recorder, batch_step))
        out[window] = Correction(vector=v, batch_steps=(batch_step,), windows=(k_star,), hvp_calls=n,
                                 grad_equivalents=cost, tail_calls=extra)
    return out
