"""Baselines for deleting samples during training, siblings of :func:`lmcleaner_unlearn`.

Every function has the same signature,
``fn(problem, recorder, params_now, forget_ids, now_step, **options) -> Unlearned``:

* :func:`retrain_from_scratch`: replay the recorded schedule from θ[0], skipping
  every step whose batch touched ``forget_ids`` (cost: τ − #skipped gradients);
* :func:`replay_counterfactual`: the same from θ[t_z], the first affected step
  (cost: τ − t_z − #skipped gradients); both give θ_ideal exactly;
* :func:`gradient_ascent_unlearn`: ascend the mean loss of the forget samples;
* :func:`neggrad_plus_unlearn`: descend β·L_retain − (1 − β)·L_forget (Kurmanji et al.
  2023), with retain batches taken from the most recent recorded batches;
* :func:`no_op`: return θ[τ] unchanged.

The method itself, :func:`lmcleaner_unlearn`, wraps :func:`~.propagation.truncated_correction`.
Costs are counted in mini-batch gradients (a gradient over |S| samples costs |S|/B
with B the recorded batch size).

The two ascent baselines are ``gradient_ascent_unlearn`` and ``neggrad_plus_unlearn``, not
``gradient_ascent`` and ``neggrad_plus``: they are whole unlearning procedures, while hamu's
functions of those names are update directions (one meaning per name). Every function refuses a
``params_now`` holding NaN or inf and a ``forget_ids`` with negative ids.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch
from torch import Tensor

from ._checks import finite_vector, integer, number, sample_ids
from .hvp import HVP
from .problem import SupervisedProblem
from .propagation import truncated_correction
from .tail import TailCorrection
from .trajectory import TrajectoryRecorder

__all__ = [
    "Unlearned",
    "gradient_ascent_unlearn",
    "lmcleaner_unlearn",
    "neggrad_plus_unlearn",
    "no_op",
    "replay_counterfactual",
    "retrain_from_scratch",
]


@dataclasses.dataclass
class Unlearned:
    """Parameters after unlearning and the compute spent.

    Attributes:
        params: θ ``(p,)``.
        grad_equivalents: cost in mini-batch gradients.
        deleted_steps: the recorded steps whose batch was removed (empty for methods
            that work on samples directly).
    """

    params: Tensor
    grad_equivalents: float
    deleted_steps: tuple[int, ...] = ()


def _inputs(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor, forget_ids,
            now_step: int) -> Tensor:
    """Check the shared arguments; returns the forget ids as a CPU long tensor."""
    if not isinstance(problem, SupervisedProblem):
        raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
    if not isinstance(recorder, TrajectoryRecorder):
        raise TypeError(f"recorder must be a TrajectoryRecorder, got {type(recorder).__name__}")
    finite_vector("params_now", params_now, problem.num_params)
    integer("now_step", now_step, low=1)
    if now_step > recorder.num_steps:
        raise ValueError(f"now_step={now_step} must lie in 1..{recorder.num_steps} (the recorded steps)")
    ids = sample_ids("forget_ids", forget_ids)
    if ids.numel() == 0:
        raise ValueError("forget_ids is empty; name at least one sample to delete")
    return ids


def _affected(recorder: TrajectoryRecorder, forget_ids, now_step: int) -> list[int]:
    steps = [s for s in recorder.steps_using(forget_ids) if s < now_step]
    if not steps:
        raise ValueError("no recorded step before now_step used any of forget_ids; nothing to delete")
    return steps


def _batch_size(recorder: TrajectoryRecorder) -> int:
    sizes = [r.batch_ids.numel() for r in recorder.steps if r.kind == "sgd"]
    return max(1, round(sum(sizes) / len(sizes)))


def _replay(problem: SupervisedProblem, recorder: TrajectoryRecorder, theta: Tensor, start: int,
            now_step: int, skip: set[int]) -> tuple[Tensor, int]:
    grads = 0
    for t in range(start, now_step):
        record = recorder.steps[t]
        if t in skip or record.removed:
            continue
        if record.kind == "edit":
            theta = theta + recorder.update(t).to(theta.device)
            continue
        theta = problem.sgd_step(theta, record.batch_ids, record.lr)
        grads += 1
    return theta, grads


def lmcleaner_unlearn(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
                      forget_ids: Tensor | Sequence[int], now_step: int, *, window: int, hvp: HVP,
                      damping: float = 0.0, tail: TailCorrection | None = None) -> Unlearned:
    """LMCleaner: delete every batch before τ that used ``forget_ids`` by truncated propagation
    (``tail``: our public-data tail extension, :class:`~.tail.TailCorrection`)."""
    _inputs(problem, recorder, params_now, forget_ids, now_step)
    steps = _affected(recorder, forget_ids, now_step)
    correction = truncated_correction(recorder, params_now, steps, now_step, window=window, hvp=hvp,
                                      damping=damping, tail=tail)
    return Unlearned(params=params_now.detach().reshape(-1) - correction.vector,
                     grad_equivalents=correction.grad_equivalents, deleted_steps=tuple(steps))


def retrain_from_scratch(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
                         forget_ids: Tensor | Sequence[int], now_step: int) -> Unlearned:
    """Rerun the recorded schedule from θ[0] without the affected batches (θ_ideal)."""
    _inputs(problem, recorder, params_now, forget_ids, now_step)
    steps = _affected(recorder, forget_ids, now_step)
    theta = recorder.params_at(0, params_now, now_step).to(params_now.device)
    theta, grads = _replay(problem, recorder, theta, 0, now_step, set(steps))
    return Unlearned(params=theta, grad_equivalents=float(grads), deleted_steps=tuple(steps))


def replay_counterfactual(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
                          forget_ids: Tensor | Sequence[int], now_step: int) -> Unlearned:
    """Replay from θ[t_z] (the first affected step) without the affected batches (θ_ideal)."""
    _inputs(problem, recorder, params_now, forget_ids, now_step)
    steps = _affected(recorder, forget_ids, now_step)
    start = min(steps)
    theta = recorder.params_at(start, params_now, now_step).to(params_now.device)
    theta, grads = _replay(problem, recorder, theta, start, now_step, set(steps))
    return Unlearned(params=theta, grad_equivalents=float(grads), deleted_steps=tuple(steps))


def gradient_ascent_unlearn(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
                            forget_ids: Tensor | Sequence[int], now_step: int, *, steps: int,
                            lr: float) -> Unlearned:
    """``steps`` ascent steps θ ← θ + η·∇L_forget(θ) on the forget samples' mean loss (λ = 0)."""
    forget = _inputs(problem, recorder, params_now, forget_ids, now_step)
    steps, lr = integer("steps", steps), number("lr", lr, low=0.0, strict=True)
    theta = params_now.detach().reshape(-1).clone()
    loss = lambda th: problem.per_sample_losses(th, forget).mean()  # noqa: E731
    for _ in range(steps):
        # θ ← θ + η ∇ mean_{z ∈ D_u} ℓ(z; θ)
        theta = theta + lr * torch.func.grad(loss)(theta)
    cost = steps * forget.numel() / _batch_size(recorder)
    return Unlearned(params=theta, grad_equivalents=float(cost))


def neggrad_plus_unlearn(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
                         forget_ids: Tensor | Sequence[int], now_step: int, *, steps: int, lr: float,
                         beta: float = 0.5) -> Unlearned:
    """NegGrad+: ``steps`` descent steps on β·L_retain − (1 − β)·L_forget.

    Retain batch k is the batch of the k-th most recent recorded step before τ that
    did not touch ``forget_ids``.
    """
    forget = _inputs(problem, recorder, params_now, forget_ids, now_step)
    steps, lr = integer("steps", steps), number("lr", lr, low=0.0, strict=True)
    beta = number("beta", beta, low=0.0, high=1.0)
    affected = set(recorder.steps_using(forget, include_removed=True))
    retain_steps = [s for s in range(now_step - 1, -1, -1)
                    if recorder.steps[s].kind == "sgd" and s not in affected][:steps]
    if len(retain_steps) < steps:
        raise ValueError(f"only {len(retain_steps)} retain batches are recorded, {steps} asked")
    theta = params_now.detach().reshape(-1).clone()
    cost = 0.0
    batch = _batch_size(recorder)
    for s in retain_steps:
        retain = recorder.batch_ids(s)

        def objective(th: Tensor) -> Tensor:
            # β L_retain(θ) − (1 − β) L_forget(θ)
            return (beta * problem.objective(th, retain)
                    - (1 - beta) * problem.per_sample_losses(th, forget).mean())

        theta = theta - lr * torch.func.grad(objective)(theta)
        cost += (retain.numel() + forget.numel()) / batch
    return Unlearned(params=theta, grad_equivalents=cost)


def no_op(problem: SupervisedProblem, recorder: TrajectoryRecorder, params_now: Tensor,
          forget_ids: Tensor | Sequence[int], now_step: int) -> Unlearned:
    """Leave the model as it is."""
    _inputs(problem, recorder, params_now, forget_ids, now_step)
    return Unlearned(params=params_now.detach().reshape(-1).clone(), grad_equivalents=0.0)
