"""The digits section of the lmcleaner reproduction: one deletion request served during training.

scikit-learn digits, ``digits_epochs`` epochs of SGD from a :class:`~.unlearner.DataPool`; a
request to delete mislabelled training digits arrives after ``digits_request_epoch`` epochs and
is served by :class:`~.unlearner.OnlineUnlearner` (LMCleaner, or exact replay through
:class:`~.unlearner.ReplayRemover`), which removes every batch that used them and returns the
benign samples to the pool; training then goes on.
"""

from __future__ import annotations

import dataclasses
import math
import time

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.common.data import load_digits_split
from icml26.contract import RunContext

from .baselines import retrain_from_scratch
from .config import Config
from .cost import measure_unit_costs, predict_lmcleaner_seconds, predict_retrain_seconds
from .hvp import ExactHVP
from .problem import SupervisedProblem
from .sections import _accuracy, _ce, _mia, _model
from .trajectory import TrajectoryRecorder
from .unlearner import DataPool, OnlineUnlearner, ReplayRemover

__all__ = ["DigitsRun", "digits_section"]


@dataclasses.dataclass
class DigitsRun:
    """One strategy on digits: the request served after ``digits_request_epoch`` epochs, training on."""

    acc: float
    mia: float
    grad_eq: float
    residual: float | None = None
    """‖θ̂ − θ_ideal‖ / ‖θ[τ] − θ_ideal‖ right after the request (not for retraining)."""
    deleted_batches: float = 0.0
    requeued: float = 0.0
    calibrated_grad_eq: float = math.nan
    """The served correction's cost from measured unit costs (timing; ``grad_eq`` is the nominal one)."""
    wall: float = math.nan
    """Seconds to serve the request (LMCleaner and replay)."""
    predicted_wall: float = math.nan
    """The per-request cost model's prediction of ``wall`` (LMCleaner)."""
    retrain_wall: float = math.nan
    """Seconds of retraining from scratch at the request (measured beside LMCleaner's serving)."""
    retrain_predicted_wall: float = math.nan


def digits_section(config: Config, ctx: RunContext) -> dict[str, DigitsRun]:
    """LMCleaner, exact replay and no-op serving one request during training, and retraining without D_u.

    LMCleaner and replay are both served by :class:`OnlineUnlearner` (replay through
    :class:`ReplayRemover`), so the pool and recorder bookkeeping is the library's.
    """
    split = load_digits_split(test_fraction=0.25, seed=0)
    rng = ctx.rng("digits")
    x = torch.from_numpy(split.x_train).double()
    y = torch.from_numpy(split.y_train).clone()
    forget = torch.from_numpy(rng.choice(x.shape[0], config.digits_forget, replace=False))
    # D_u: mislabelled training digits (a wrong label, uniformly among the other nine)
    y[forget] = (y[forget] + torch.from_numpy(rng.integers(1, 10, forget.numel()))) % 10
    x_test = torch.from_numpy(split.x_test).double()
    y_test = torch.from_numpy(split.y_test)
    n_non = config.digits_nonmembers
    y_non = (y_test[:n_non] + torch.from_numpy(rng.integers(1, 10, n_non))) % 10
    x_non, x_eval, y_eval = x_test[:n_non], x_test[n_non:], y_test[n_non:]
    x, y, x_non, y_non, x_eval, y_eval = (t.to(ctx.device) for t in (x, y, x_non, y_non, x_eval, y_eval))
    steps_per_epoch = math.ceil(x.shape[0] / config.digits_batch_size)
    request_step = steps_per_epoch * config.digits_request_epoch

    def train(strategy: str) -> tuple[DigitsRun, Tensor | None, Tensor | None]:
        model = _model("softmax", x.shape[1], 10, config.hidden, seed=ctx.seed + 2).to(ctx.device)
        problem = SupervisedProblem(model, _ce, x, y, l2=config.l2)
        optimizer = torch.optim.SGD(model.parameters(), lr=config.digits_lr, weight_decay=config.l2)
        recorder = TrajectoryRecorder(model, optimizer)
        ids = torch.arange(x.shape[0])
        if strategy == "retrain":
            ids = ids[~torch.isin(ids, forget)]
        pool = DataPool(ids, config.digits_batch_size, epochs=config.digits_epochs,
                        generator=ctx.torch_generator("digits_pool"))
        remover = ReplayRemover(problem) if strategy == "replay" else None
        unlearner = OnlineUnlearner(problem, recorder, hvp=ExactHVP(problem), window=config.headline_window,
                                    remover=remover, pool=pool)
        run = DigitsRun(acc=math.nan, mia=math.nan, grad_eq=0.0)
        theta_before = theta_tau = None
        step = 0
        while True:
            if step == request_step and strategy != "retrain":
                theta_before = recorder.current_params()
                if strategy == "no_op":  # the samples leave the pool, their past influence stays
                    pool.remove(forget)
                else:
                    if strategy == "lmcleaner":
                        units = measure_unit_costs(problem, recorder, theta_before, step - 1, ExactHVP(problem),
                                                   repeats=config.timing_unit_repeats)
                        start = time.perf_counter()
                        retrained = retrain_from_scratch(problem, recorder, theta_before, forget, step)
                        run.retrain_wall = time.perf_counter() - start
                        run.retrain_predicted_wall = predict_retrain_seconds(units, step, len(retrained.deleted_steps))
                    unlearner.request(forget)
                    start = time.perf_counter()
                    served = unlearner.serve()[0]
                    run.wall = time.perf_counter() - start
                    run.grad_eq = served.grad_equivalents
                    run.deleted_batches = float(len(served.deleted_steps))
                    run.requeued = float(served.requeued.numel())
                    if strategy == "lmcleaner":
                        run.predicted_wall = predict_lmcleaner_seconds(
                            units, list(served.windows), [step - t for t in served.deleted_steps])
                        run.calibrated_grad_eq = run.predicted_wall / units.sgd_step
                theta_tau = recorder.current_params()
            batch = pool.next_batch()
            if batch is None:
                break
            with recorder.step(batch):
                loss = F.cross_entropy(model(x[batch]), y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            step += 1
        theta = problem.flat_params()
        if strategy == "retrain":
            run.grad_eq = float(step)
        run.acc = _accuracy(problem, theta, x_eval, y_eval)
        run.mia = _mia(problem, theta, x[forget], y[forget], x_non, y_non)
        return run, theta_before, theta_tau

    runs, before, tau = {}, {}, {}
    for s in ctx.progress(("lmcleaner", "replay", "no_op", "retrain"), desc="digits"):
        runs[s], before[s], tau[s] = train(s)
    ideal_tau, theta_before = tau["replay"], before["replay"]
    for name in ("lmcleaner", "replay", "no_op"):
        runs[name].residual = float((tau[name] - ideal_tau).norm() / (theta_before - ideal_tau).norm())
    return runs
