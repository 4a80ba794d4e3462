"""What one deletion request costs: measured unit costs and a per-request cost model.

A deletion served by LMCleaner is made of three kinds of operation, whose costs are measured on
the user's own model and batch size (:func:`measure_unit_costs`) rather than assumed (the draft's
"1 HVP ≈ 2 gradients"; an exact double-backprop HVP measures 3–5 SGD steps on small models):

* one Hessian-vector product at a historical θ[s] on one recorded batch (t_hvp), K* per deleted batch;
* rebuilding θ[s] from θ[τ] in dense recording mode: one p-vector subtraction per step between
  s and τ (t_rebuild per step);
* the tail correction's public-batch HVPs, if used (t_tail each).

Retraining from scratch replays τ − (#deleted) SGD steps (t_step each) after rebuilding θ[0];
exact replay from the first deleted step t replays τ − t − (#deleted) of them. So, for a request
at τ deleting the batches of steps t_1 … t_n with windows K*_j,

    T_LMCleaner ≈ Σ_j (K*_j·t_hvp + (τ − t_j)·t_rebuild) + (tail calls)·t_tail,
    T_retrain   ≈ (τ − n)·t_step + τ·t_rebuild,
    T_replay    ≈ (τ − t_1 − n)·t_step + (τ − t_1)·t_rebuild,

and LMCleaner is dearer than retraining once n·K·t_hvp > τ·t_step: when the deleted samples were
seen in many batches (multi-epoch training: n grows with the epochs before the request).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from ._checks import finite_vector, integer, number, sample_ids
from .hvp import HVP
from .problem import SupervisedProblem
from .propagation import truncated_correction
from .trajectory import TrajectoryRecorder

__all__ = ["UnitCosts", "measure_unit_costs", "predict_lmcleaner_seconds", "predict_replay_seconds",
           "predict_retrain_seconds"]


@dataclasses.dataclass(frozen=True)
class UnitCosts:
    """Measured seconds per operation (the fastest of repeats).

    Attributes:
        sgd_step: one SGD step replayed on a recorded batch (gradient and update).
        hvp: one Hessian-vector product of the backend at a historical θ on a recorded batch.
        rebuild_step: rebuilding θ[s] one step further back from θ[τ] (one p-vector subtraction).
        tail_hvp: one public-batch HVP of the tail correction (0 when none was measured).
    """

    sgd_step: float
    hvp: float
    rebuild_step: float
    tail_hvp: float = 0.0

    def __post_init__(self) -> None:
        for name in ("sgd_step", "hvp", "rebuild_step", "tail_hvp"):
            number(name, getattr(self, name), low=0.0)
        if self.sgd_step <= 0:
            raise ValueError(f"sgd_step={self.sgd_step} must be positive (it is the unit of gradient-equivalents)")

    @property
    def hvp_cost(self) -> float:
        """One HVP in gradient-equivalents (SGD steps), calibrated: t_hvp / t_step."""
        return self.hvp / self.sgd_step

    @property
    def tail_cost(self) -> float:
        """One public-batch HVP in gradient-equivalents: t_tail / t_step."""
        return self.tail_hvp / self.sgd_step


def _best_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` timings after a warm-up call (the least disturbed by other load)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.min(times))


def measure_unit_costs(problem: SupervisedProblem, recorder: TrajectoryRecorder, params: Tensor, step: int,
                       hvp: HVP, *, tail=None, repeats: int = 20, rebuild_span: int = 1000,
                       hvp_block: int = 10, step_block: int = 200) -> UnitCosts:
    """Time the unit operations on the recorded batches from ``step`` on, at ``params`` (a θ of the run).

    Each unit is timed as it is used, in a block of consecutive recorded steps (each with its own
    batch and learning rate; the block's time ÷ its length): HVPs as ``hvp_block`` propagation steps
    of the library's own loop (one request's window K, deleting the batch of ``step`` right after
    it), SGD steps in blocks of ``step_block`` (a replay). The fastest of repeated
    *short* calls is the best moment of a shared machine, while a long replay also pays its typical
    slow-downs: on the reproduction's models the fastest single SGD step was 10–35% below the
    per-step time of a 1,000-step replay, and a model calibrated on it under-predicted retraining.

    Args:
        problem, recorder: the training set-up and its recorded trajectory.
        params: ``(p,)`` parameters to evaluate at (e.g. θ[step]).
        step: a recorded SGD step whose batch is used.
        hvp: the HVP backend of the corrections.
        tail: a :class:`~.tail.TailCorrection` whose public HVP is timed too (optional).
        repeats: timings per unit (the fastest is kept: timings on a shared machine are inflated by
            other load, never deflated).
        rebuild_span: the rebuild cost per step is the time of rebuilding θ this many steps back,
            divided by it (capped by the recorded steps); pass the lag of the requests to predict, since
            the per-step cost grows once the history no longer fits in cache.
        hvp_block, step_block: recorded steps per timed block of HVPs / SGD steps (capped by the steps
            recorded after ``step``); the SGD block is timed max(1, repeats // 10) times.
    """
    if not isinstance(problem, SupervisedProblem):
        raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
    if not isinstance(recorder, TrajectoryRecorder):
        raise TypeError(f"recorder must be a TrajectoryRecorder, got {type(recorder).__name__}")
    theta = finite_vector("params", params, problem.num_params)
    step = integer("step", step)
    if not 0 <= step < recorder.num_steps:
        raise ValueError(f"step={step} must be a recorded step (0..{recorder.num_steps - 1})")
    repeats, rebuild_span = integer("repeats", repeats, low=1), integer("rebuild_span", rebuild_span, low=1)
    hvp_block, step_block = integer("hvp_block", hvp_block, low=1), integer("step_block", step_block, low=1)
    sgd = [s for s in range(step, recorder.num_steps) if recorder.steps[s].kind == "sgd"][:max(hvp_block, step_block)]
    if not sgd:
        raise ValueError(f"no recorded SGD step at or after step={step} to time")
    batches = [(sample_ids("batch", recorder.batch_ids(s)), recorder.lr(s)) for s in sgd]
    vector = torch.randn(theta.shape, generator=torch.Generator().manual_seed(0), dtype=theta.dtype).to(theta.device)
    steps_b, hvps_b = batches[:step_block], batches[:hvp_block]

    def sgd_run() -> None:
        w = theta
        for batch, lr in steps_b:
            w = problem.sgd_step(w, batch, lr)

    def hvp_run() -> None:
        w = vector
        for batch, lr in hvps_b:
            w = w - lr * hvp(theta, batch, w)

    t_step = _best_seconds(sgd_run, max(1, repeats // 10)) / len(steps_b)
    # one propagation step as the library runs it (the HVP at the rebuilt θ[s] plus the loop's own work):
    # the correction of the batch of ``step`` served right after a window of ``hvp_block`` steps, whose
    # rebuild is only hvp_block + 1 steps long; bare HVPs when too few steps are recorded after ``step``
    end = min(step + hvp_block + 1, recorder.num_steps)
    if end - step - 1 >= 1 and recorder.steps[step].kind == "sgd":
        theta_end = recorder.params_at(end).to(theta.device)
        k = end - step - 1
        t_hvp = _best_seconds(lambda: truncated_correction(recorder, theta_end, step, end, window=k, hvp=hvp),
                              repeats) / k
    else:
        t_hvp = _best_seconds(hvp_run, repeats) / len(hvps_b)
    now = recorder.num_steps
    span = min(rebuild_span, now)
    t_rebuild = _best_seconds(lambda: recorder.params_at(now - span), max(1, repeats // 4)) / span
    t_tail = 0.0
    if tail is not None:
        t_tail = _best_seconds(lambda: tail._hvp(theta, tail.public_ids, vector), repeats)
    return UnitCosts(sgd_step=t_step, hvp=t_hvp, rebuild_step=t_rebuild, tail_hvp=t_tail)


def _lags(windows: Sequence[int], lags: Sequence[int]) -> tuple[list[int], list[int]]:
    windows = [integer("window", k) for k in windows]
    lags = [integer("lag", lag, low=1) for lag in lags]
    if len(windows) != len(lags) or not windows:
        raise ValueError("windows and lags must be two non-empty sequences of one length (one per deleted batch)")
    return windows, lags


def predict_lmcleaner_seconds(units: UnitCosts, windows: Sequence[int], lags: Sequence[int],
                              tail_calls: int = 0) -> float:
    """Σ_j (K*_j·t_hvp + L_j·t_rebuild) + tail_calls·t_tail, with L_j = τ − t_j per deleted batch."""
    windows, lags = _lags(windows, lags)
    tail_calls = integer("tail_calls", tail_calls)
    return float(sum(k * units.hvp + lag * units.rebuild_step for k, lag in zip(windows, lags))
                 + tail_calls * units.tail_hvp)


def predict_retrain_seconds(units: UnitCosts, now_step: int, deleted: int) -> float:
    """(τ − n)·t_step + τ·t_rebuild: replay of every kept step from θ[0], rebuilt from θ[τ]."""
    now_step, deleted = integer("now_step", now_step, low=1), integer("deleted", deleted)
    return float((now_step - deleted) * units.sgd_step + now_step * units.rebuild_step)


def predict_replay_seconds(units: UnitCosts, lag: int, deleted: int) -> float:
    """(L − n)·t_step + L·t_rebuild with L = τ − t_1 (replay from the first deleted step)."""
    lag, deleted = integer("lag", lag, low=1), integer("deleted", deleted)
    return float((lag - deleted) * units.sgd_step + lag * units.rebuild_step)
