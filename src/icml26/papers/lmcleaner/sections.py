"""The sections of the lmcleaner reproduction: data, models, and the four measurements.

Reproduction code (the method's API does not import it). ``experiment.py`` calls
:func:`mixture`, then :func:`lag_sweep` per model, :func:`~.certified.certified_noise_section`, :func:`ledger_curve`
and :func:`digits_section`; each returns a dataclass. ``config`` is the experiment's
``Config``. The digits section is in ``digits.py``, the certified noise section in ``certified.py``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.common.metrics import loss_threshold_mia_auc
from icml26.contract import Curve, RunContext

from .accountant import RDPAccountant
from .analysis import draft_composition_epsilon, per_request_mu, relative_residual
from .config import Config
from .baselines import (
    gradient_ascent_unlearn,
    lmcleaner_unlearn,
    neggrad_plus_unlearn,
    no_op,
    replay_counterfactual,
    retrain_from_scratch,
)
from .cost import UnitCosts, measure_unit_costs, predict_lmcleaner_seconds, predict_replay_seconds, predict_retrain_seconds
from .hvp import ExactHVP, make_hvp
from .problem import SupervisedProblem
from .propagation import correction_path
from .tail import TailCorrection
from .trajectory import TrajectoryRecorder

__all__ = ["ARM_OF_BACKEND", "BACKENDS", "ArmResult", "LagResult", "MixtureData", "SweepResult",
           "ledger_curve", "lag_sweep", "mixture", "tail_for"]

BACKENDS = ("exact", "gauss_newton", "empirical_fisher", "batch_mean_fisher")
ARM_OF_BACKEND = {"exact": "lmcleaner", "gauss_newton": "lmcleaner_ggn",
                  "empirical_fisher": "lmcleaner_fisher", "batch_mean_fisher": "lmcleaner_rank1"}


# ---------------------------------------------------------------------------
# Data and models
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class MixtureData:
    """The synthetic mixture: training rows (the canary batch at ``canary_ids``), clean test rows,
    canary-like MIA non-members and public rows (for the Hessian basis)."""

    x: Tensor
    y: Tensor
    x_test: Tensor
    y_test: Tensor
    x_nonmember: Tensor
    y_nonmember: Tensor
    x_public: Tensor
    y_public: Tensor
    canary_ids: Tensor
    extra_canary_ids: list[Tensor] = dataclasses.field(default_factory=list)


def mixture(config: Config, gen: torch.Generator, device: torch.device, extra_canary_steps: tuple[int, ...] = (),
            steps: int | None = None) -> MixtureData:
    """The data of ``steps`` (default t_z + max lag) single-pass batches, the canary batch at t_z,
    and canary batches also at ``extra_canary_steps`` (drawn last, so the default draw is unchanged;
    ``MixtureData.extra_canary_ids`` lists their ids, one tensor per step)."""
    d, r, c = config.informative_features, config.rare_features, config.n_classes
    means = torch.randn(c, d, generator=gen, dtype=torch.float64) * config.class_separation

    def clean(n: int) -> tuple[Tensor, Tensor]:
        y = torch.randint(0, c, (n,), generator=gen)
        x = means[y] + torch.randn(n, d, generator=gen, dtype=torch.float64)
        rare = torch.randn(n, r, generator=gen, dtype=torch.float64) * config.rare_noise
        return torch.cat([x, rare], dim=1), y

    def canary(n: int) -> tuple[Tensor, Tensor]:
        # a clean point with strong rare features and a wrong label (uniform over the other classes)
        x, y = clean(n)
        x[:, d:] = torch.randn(n, r, generator=gen, dtype=torch.float64) * config.canary_rare_scale
        return x, (y + torch.randint(1, c, (n,), generator=gen)) % c

    steps = config.canary_step + max(config.lags) if steps is None else steps
    x, y = clean(steps * config.batch_size)
    canary_ids = torch.arange(config.canary_step * config.batch_size, (config.canary_step + 1) * config.batch_size)
    x[canary_ids], y[canary_ids] = canary(config.batch_size)
    x_test, y_test = clean(config.n_test)
    x_non, y_non = canary(config.n_nonmembers)
    x_pub, y_pub = clean(config.n_test)
    extra = []
    for step in extra_canary_steps:
        ids = torch.arange(step * config.batch_size, (step + 1) * config.batch_size)
        x[ids], y[ids] = canary(config.batch_size)
        extra.append(ids)
    data = MixtureData(*(t.to(device) for t in (x, y, x_test, y_test, x_non, y_non, x_pub, y_pub)), canary_ids)
    data.extra_canary_ids = extra
    return data


def _model(kind: str, n_in: int, n_out: int, hidden: int, seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if kind == "softmax":
            model = nn.Linear(n_in, n_out)
        else:
            model = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, n_out))
    return model.double()


def _ce(out: Tensor, y: Tensor) -> Tensor:
    return F.cross_entropy(out, y, reduction="none")


def _accuracy(problem: SupervisedProblem, theta: Tensor, x: Tensor, y: Tensor) -> float:
    with torch.no_grad():
        return float((problem.forward(theta, x).argmax(1) == y).double().mean())


def _mia(problem: SupervisedProblem, theta: Tensor, x_in: Tensor, y_in: Tensor, x_out: Tensor, y_out: Tensor) -> float:
    with torch.no_grad():
        member = _ce(problem.forward(theta, x_in), y_in)
        nonmember = _ce(problem.forward(theta, x_out), y_out)
    return loss_threshold_mia_auc(member.cpu().numpy(), nonmember.cpu().numpy())


def _timing_rounds(arms: dict[str, Callable[[], Any]], measure_units: Callable[[], UnitCosts],
                   rounds: int) -> tuple[dict[str, float], UnitCosts]:
    """Interleaved timing: after one warm-up call of each arm, ``rounds`` rounds of (the unit costs, then
    every arm once). Returns the median over rounds of each arm's seconds and of each unit cost, so that
    the per-request model's prediction and the measurement it is compared with saw the same load."""
    for fn in arms.values():
        fn()
    walls: dict[str, list[float]] = {name: [] for name in arms}
    units: list[UnitCosts] = []
    for _ in range(rounds):
        units.append(measure_units())
        for name, fn in arms.items():
            start = time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - start)

    def median(values: list[float]) -> float:
        return float(np.median(values))

    return ({name: median(times) for name, times in walls.items()},
            UnitCosts(**{f: median([getattr(u, f) for u in units]) for f in ("sgd_step", "hvp", "rebuild_step",
                                                                          "tail_hvp")}))


# ---------------------------------------------------------------------------
# Section 1: lag sweep
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ArmResult:
    """One arm's unlearned parameters at one lag and what they score."""

    theta: Tensor
    grad_eq: float
    """Nominal cost in gradient-equivalents (deterministic: an HVP counts 2 gradients, a public HVP
    2·|public batch|/B; replayed steps 1 each)."""
    calibrated: float | None = None
    """Cost in gradient-equivalents from the measured unit costs (``UnitCosts``; timing, so it varies)."""
    wall: float | None = None
    """Seconds (median of the interleaved timing rounds) for the arms that are timed."""
    predicted_wall: float | None = None
    """Seconds the per-request cost model predicts (timed arms)."""
    residual: float = math.nan
    acc: float = math.nan
    mia: float = math.nan


@dataclasses.dataclass
class LagResult:
    """Everything measured at one lag L = τ − t_z."""

    lag: int
    tau: int
    denominator: float
    """‖θ[τ] − θ_ideal‖."""
    retrain_gap: float
    """‖θ_retrain − θ_ideal‖ (two exact paths; ≈ 0)."""
    curves: dict[str, list[float]]
    """Residual vs window per HVP backend (and ``"exact+tail"``)."""
    costs: dict[str, list[float]]
    """Calibrated cost (gradient-equivalents) vs window: ``"exact"`` and ``"exact+tail"``."""
    arms: dict[str, ArmResult]
    floor: float = math.nan
    """Residual of exact propagation over the whole lag (the linearisation floor)."""
    units: UnitCosts | None = None
    """The unit costs measured at this lag (calibration of its costs and predictions)."""


@dataclasses.dataclass
class SweepResult:
    """One model's lag sweep, with the problem, recorder and measured unit costs."""

    kind: str
    problem: SupervisedProblem
    recorder: TrajectoryRecorder
    per_lag: dict[int, LagResult]
    units: UnitCosts
    """The unit costs measured at the longest lag."""


def _train_single_pass(problem: SupervisedProblem, config: Config, lr: float, taus: set[int], ctx: RunContext,
                       desc: str) -> tuple[TrajectoryRecorder, dict[int, Tensor]]:
    model = problem.model
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=config.l2)
    recorder = TrajectoryRecorder(model, optimizer)
    steps = config.canary_step + max(config.lags)
    snapshots = {}
    for t in ctx.progress(range(steps), desc=desc):
        if t in taus:
            snapshots[t] = recorder.current_params()
        ids = torch.arange(t * config.batch_size, (t + 1) * config.batch_size)
        with recorder.step(ids):
            x, y = problem.batch(ids)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    if steps in taus:
        snapshots[steps] = recorder.current_params()
    return recorder, snapshots


def tail_for(problem: SupervisedProblem, data: MixtureData, config: Config) -> TailCorrection:
    """The tail correction of the reproduction: the public rows' Hessian (same model, loss and decay)."""
    public = SupervisedProblem(problem.model, _ce, data.x_public, data.y_public, l2=config.l2)
    return TailCorrection(public, torch.arange(min(config.tail_public, data.x_public.shape[0])),
                          krylov_dim=config.tail_krylov)


def lag_sweep(kind: str, data: MixtureData, config: Config, ctx: RunContext) -> SweepResult:
    """Train one model single-pass, then at every lag compare every arm with θ_ideal."""
    lr = config.lr_softmax if kind == "softmax" else config.lr_mlp
    n_in = data.x.shape[1]
    model = _model(kind, n_in, config.n_classes, config.hidden,
                   seed=ctx.seed + (0 if kind == "softmax" else 1)).to(ctx.device)
    problem = SupervisedProblem(model, _ce, data.x, data.y, l2=config.l2)
    t_z = config.canary_step
    taus = {t_z + lag for lag in config.lags}
    recorder, snapshots = _train_single_pass(problem, config, lr, taus, ctx, desc=f"train {kind}")
    canaries = data.canary_ids
    x_c, y_c = data.x[canaries], data.y[canaries]
    k_head = config.headline_window
    tail = tail_for(problem, data, config)
    # wall times are repeated for the first model only (the cost figures use it)
    repeats = config.timing_repeats if kind == config.models[0] else 1
    per_lag: dict[int, LagResult] = {}
    for lag in ctx.progress(config.lags, desc=f"lags {kind}"):
        tau = t_z + lag
        theta_now = snapshots[tau]
        ideal = replay_counterfactual(problem, recorder, theta_now, canaries, tau)
        retrain = retrain_from_scratch(problem, recorder, theta_now, canaries, tau)
        theta_ideal = ideal.params
        # timings in interleaved rounds: each round measures the unit costs (on recorded batches after t_z)
        # and then times every arm once, back to back, so that a round's prediction and its measurement
        # see the same machine load; medians over the rounds
        walls, units = _timing_rounds({
            "lmcleaner": lambda: lmcleaner_unlearn(problem, recorder, theta_now, canaries, tau, window=k_head,
                                                   hvp=ExactHVP(problem)),
            "lmcleaner_tail": lambda: lmcleaner_unlearn(problem, recorder, theta_now, canaries, tau, window=k_head,
                                                        hvp=ExactHVP(problem), tail=tail),
            "replay": lambda: replay_counterfactual(problem, recorder, theta_now, canaries, tau),
            "retrain": lambda: retrain_from_scratch(problem, recorder, theta_now, canaries, tau),
        }, lambda: measure_unit_costs(problem, recorder, theta_now, t_z + 1, ExactHVP(problem), tail=tail,
                                      repeats=config.timing_unit_repeats, rebuild_span=lag,
                                      hvp_block=max(1, k_head)), repeats)
        t_method, t_tail, t_replay, t_retrain = (walls[a] for a in ("lmcleaner", "lmcleaner_tail", "replay", "retrain"))
        row = LagResult(lag=lag, tau=tau, denominator=float((theta_now - theta_ideal).norm()),
                        retrain_gap=float((retrain.params - theta_ideal).norm()), curves={}, costs={}, arms={})

        def calibrated(k_star: int, tail_calls: int = 0) -> float:
            return predict_lmcleaner_seconds(units, [k_star], [lag], tail_calls) / units.sgd_step

        for backend in BACKENDS:
            hvp = make_hvp(problem, backend)
            path = correction_path(recorder, theta_now, t_z, tau, windows=list(config.windows), hvp=hvp)
            row.curves[backend] = [relative_residual(theta_now - path[k].vector, theta_ideal, theta_now)
                                   for k in config.windows]
            row.arms[ARM_OF_BACKEND[backend]] = ArmResult(theta_now - path[k_head].vector,
                                                          path[k_head].grad_equivalents)
        row.costs["exact"] = [calibrated(min(k, lag - 1)) for k in config.windows]
        row.arms["lmcleaner"].calibrated = calibrated(min(k_head, lag - 1))
        tail_path = correction_path(recorder, theta_now, t_z, tau, windows=list(config.windows),
                                    hvp=ExactHVP(problem), tail=tail)
        row.curves["exact+tail"] = [relative_residual(theta_now - tail_path[k].vector, theta_ideal, theta_now)
                                    for k in config.windows]
        row.costs["exact+tail"] = [calibrated(tail_path[k].windows[0], tail_path[k].tail_calls)
                                   for k in config.windows]
        head = tail_path[k_head]
        row.arms["lmcleaner_tail"] = ArmResult(theta_now - head.vector, head.grad_equivalents,
                                               calibrated(head.windows[0], head.tail_calls))
        # the linearisation floor: exact propagation over the whole lag (K* = L − 1)
        full = correction_path(recorder, theta_now, t_z, tau, windows=[lag], hvp=ExactHVP(problem))[lag]
        row.floor = relative_residual(theta_now - full.vector, theta_ideal, theta_now)
        # equal compute at the nominal cost (deterministic, so the ascent arms repeat exactly): K HVPs × 2
        budget = row.arms["lmcleaner"].grad_eq
        ga_steps = max(1, round(budget))                     # one forget batch = one gradient
        ng_steps = max(1, round(budget / 2))                 # forget + retain batch = two gradients
        ga = gradient_ascent_unlearn(problem, recorder, theta_now, canaries, tau, steps=ga_steps, lr=lr)
        ng = neggrad_plus_unlearn(problem, recorder, theta_now, canaries, tau, steps=ng_steps, lr=lr,
                                  beta=config.neggrad_beta)
        noop = no_op(problem, recorder, theta_now, canaries, tau)
        row.arms.update({
            "replay": ArmResult(theta_ideal, ideal.grad_equivalents, predict_replay_seconds(units, lag, 1) / units.sgd_step,
                                t_replay, predict_replay_seconds(units, lag, 1)),
            "retrain": ArmResult(retrain.params, retrain.grad_equivalents,
                                 predict_retrain_seconds(units, tau, 1) / units.sgd_step, t_retrain,
                                 predict_retrain_seconds(units, tau, 1)),
            "gradient_ascent": ArmResult(ga.params, ga.grad_equivalents),
            "neggrad_plus": ArmResult(ng.params, ng.grad_equivalents),
            "no_op": ArmResult(noop.params, 0.0),
        })
        row.arms["lmcleaner"].wall = t_method
        row.arms["lmcleaner"].predicted_wall = predict_lmcleaner_seconds(units, [min(k_head, lag - 1)], [lag])
        row.arms["lmcleaner_tail"].wall = t_tail
        row.arms["lmcleaner_tail"].predicted_wall = predict_lmcleaner_seconds(units, [head.windows[0]], [lag],
                                                                              head.tail_calls)
        for arm in row.arms.values():
            arm.residual = relative_residual(arm.theta, theta_ideal, theta_now)
            arm.acc = _accuracy(problem, arm.theta, data.x_test, data.y_test)
            arm.mia = _mia(problem, arm.theta, x_c, y_c, data.x_nonmember, data.y_nonmember)
        row.units = units
        per_lag[lag] = row
    return SweepResult(kind, problem, recorder, per_lag, per_lag[max(config.lags)].units)


# ---------------------------------------------------------------------------
# Section 3: ledger
# ---------------------------------------------------------------------------
def ledger_curve(config: Config) -> Curve:
    """ε after M requests, each (ε, δ)-calibrated: draft formula vs RDP vs exact composition (a curve)."""
    mu = per_request_mu(config.epsilon, config.delta)  # per-request shift (Eq. 14–15)
    counts = sorted({1, 2, 5, 10, 20, 50, config.ledger_requests} & set(range(1, config.ledger_requests + 1)))
    draft, rdp, exact = [], [], []
    for m in counts:
        draft.append(draft_composition_epsilon(m, config.epsilon, config.delta))
        acc = RDPAccountant()
        acc.add_gaussian(mu, count=m)
        rdp.append(acc.epsilon(config.delta)[0])
        exact.append(acc.exact_epsilon(config.delta))
    return Curve(x=counts, series={"draft formula": draft, "RDP accountant": rdp, "exact Gaussian": exact},
                 xlabel="sequential requests M", ylabel=f"total ε at δ = {config.delta:g}",
                 title="Privacy ledger across requests", logx=True, logy=True)
