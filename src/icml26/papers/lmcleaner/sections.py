"""The sections of the lmcleaner reproduction: data, models, and the four measurements.

Reproduction code (the method's API does not import it). ``experiment.py`` calls
:func:`mixture`, then :func:`lag_sweep` per model, :func:`noise_section`, :func:`ledger_curve`
and :func:`digits_section`; each returns a dataclass. ``config`` is the experiment's
``Config``. The digits section is in ``digits.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.common.metrics import loss_threshold_mia_auc
from icml26.contract import RunContext

from .accountant import RDPAccountant
from .analysis import draft_composition_epsilon, per_request_mu, relative_residual
from .baselines import (
    gradient_ascent_unlearn,
    lmcleaner_unlearn,
    neggrad_plus_unlearn,
    no_op,
    replay_counterfactual,
    retrain_from_scratch,
)
from .hvp import ExactHVP, make_hvp
from .privacy import (
    add_isotropic_noise,
    add_subspace_noise,
    concentration,
    gaussian_delta,
    hessian_basis,
    random_basis,
    subspace_noise_scales,
)
from .problem import SupervisedProblem
from .propagation import correction_path
from .trajectory import TrajectoryRecorder

__all__ = ["ARM_OF_BACKEND", "BACKENDS", "ArmResult", "LagResult", "MixtureData", "NoiseResult", "SweepResult",
           "ledger_curve", "lag_sweep", "mixture", "noise_section", "single_thread"]

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


def mixture(config, gen: torch.Generator, device: torch.device) -> MixtureData:
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

    steps = config.canary_step + max(config.lags)
    x, y = clean(steps * config.batch_size)
    canary_ids = torch.arange(config.canary_step * config.batch_size, (config.canary_step + 1) * config.batch_size)
    x[canary_ids], y[canary_ids] = canary(config.batch_size)
    x_test, y_test = clean(config.n_test)
    x_non, y_non = canary(config.n_nonmembers)
    x_pub, y_pub = clean(config.n_test)
    return MixtureData(*(t.to(device) for t in (x, y, x_test, y_test, x_non, y_non, x_pub, y_pub)), canary_ids)


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


def _median_time(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


@contextlib.contextmanager
def single_thread():
    """Tiny models gain nothing from intra-op threads; one thread keeps timings clean."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ---------------------------------------------------------------------------
# Section 1: lag sweep
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ArmResult:
    """One arm's unlearned parameters at one lag and what they score."""

    theta: Tensor
    grad_eq: float
    wall: float | None = None
    """Seconds (median of repeats) for the arms that are timed."""
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
    """Residual vs window per HVP backend."""
    arms: dict[str, ArmResult]
    floor: float = math.nan
    """Residual of exact propagation over the whole lag (the linearisation floor)."""


@dataclasses.dataclass
class SweepResult:
    """One model's lag sweep, with the problem and recorder the noise section reuses."""

    kind: str
    problem: SupervisedProblem
    recorder: TrajectoryRecorder
    per_lag: dict[int, LagResult]


def _train_single_pass(problem: SupervisedProblem, config, lr: float, taus: set[int], ctx: RunContext,
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


def lag_sweep(kind: str, data: MixtureData, config, ctx: RunContext) -> SweepResult:
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
    # wall times are repeated for the first model only (the cost figures use it)
    repeats = config.timing_repeats if kind == config.models[0] else 1
    per_lag: dict[int, LagResult] = {}
    for lag in ctx.progress(config.lags, desc=f"lags {kind}"):
        tau = t_z + lag
        theta_now = snapshots[tau]
        ideal, t_replay = _median_time(
            lambda: replay_counterfactual(problem, recorder, theta_now, canaries, tau), repeats)
        retrain, t_retrain = _median_time(
            lambda: retrain_from_scratch(problem, recorder, theta_now, canaries, tau), repeats)
        theta_ideal = ideal.params
        row = LagResult(lag=lag, tau=tau, denominator=float((theta_now - theta_ideal).norm()),
                        retrain_gap=float((retrain.params - theta_ideal).norm()), curves={}, arms={})
        for backend in BACKENDS:
            hvp = make_hvp(problem, backend)
            path = correction_path(recorder, theta_now, t_z, tau, windows=list(config.windows), hvp=hvp)
            row.curves[backend] = [relative_residual(theta_now - path[k].vector, theta_ideal, theta_now)
                                   for k in config.windows]
            row.arms[ARM_OF_BACKEND[backend]] = ArmResult(theta_now - path[k_head].vector,
                                                          path[k_head].grad_equivalents)
        # the linearisation floor: exact propagation over the whole lag (K* = L − 1)
        full = correction_path(recorder, theta_now, t_z, tau, windows=[lag], hvp=ExactHVP(problem))[lag]
        row.floor = relative_residual(theta_now - full.vector, theta_ideal, theta_now)
        # wall time of the method itself, side by side with replay and retraining
        _, t_method = _median_time(
            lambda: lmcleaner_unlearn(problem, recorder, theta_now, canaries, tau, window=k_head,
                                      hvp=ExactHVP(problem)), repeats)
        budget = row.arms["lmcleaner"].grad_eq
        ga_steps = max(1, round(budget))                     # one forget batch = one gradient
        ng_steps = max(1, round(budget / 2))                 # forget + retain batch = two gradients
        ga = gradient_ascent_unlearn(problem, recorder, theta_now, canaries, tau, steps=ga_steps, lr=lr)
        ng = neggrad_plus_unlearn(problem, recorder, theta_now, canaries, tau, steps=ng_steps, lr=lr,
                                  beta=config.neggrad_beta)
        noop = no_op(problem, recorder, theta_now, canaries, tau)
        row.arms.update({
            "replay": ArmResult(theta_ideal, ideal.grad_equivalents, t_replay),
            "retrain": ArmResult(retrain.params, retrain.grad_equivalents, t_retrain),
            "gradient_ascent": ArmResult(ga.params, ga.grad_equivalents),
            "neggrad_plus": ArmResult(ng.params, ng.grad_equivalents),
            "no_op": ArmResult(noop.params, 0.0),
        })
        row.arms["lmcleaner"].wall = t_method
        for arm in row.arms.values():
            arm.residual = relative_residual(arm.theta, theta_ideal, theta_now)
            arm.acc = _accuracy(problem, arm.theta, data.x_test, data.y_test)
            arm.mia = _mia(problem, arm.theta, x_c, y_c, data.x_nonmember, data.y_nonmember)
        per_lag[lag] = row
    return SweepResult(kind, problem, recorder, per_lag)


# ---------------------------------------------------------------------------
# Section 2: noise
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class NoiseResult:
    """Subspace vs isotropic noise on LMCleaner's θ̂ at the longest lag (first model)."""

    sensitivity: float
    residual_norm: float
    acc_clean: float
    acc_isotropic: float
    sigma_parallel: float
    sigma_perp: float
    mu_calibrated: float
    delta_exact: float
    acc_subspace_random: float
    acc_subspace_hessian: float
    beta_hat_random: float
    beta_hat_hessian: float


def noise_section(sweep: SweepResult, data: MixtureData, config, ctx: RunContext) -> NoiseResult:
    """Accuracy under noise at ε = ``config.epsilon`` and the residual's concentration β̂."""
    problem, recorder = sweep.problem, sweep.recorder
    row = sweep.per_lag[max(config.lags)]
    theta_hat = row.arms["lmcleaner"].theta
    theta_ideal = row.arms["replay"].theta
    p = theta_hat.numel()
    public = SupervisedProblem(problem.model, _ce, data.x_public, data.y_public, l2=config.l2)
    # Δ̄: the largest logged update norm, max_t ‖u[t]‖ (brief §1.6: "max ‖u[t]‖ from the training logs")
    sensitivity = max(float(recorder.update(t).norm()) for t in range(recorder.num_steps))
    bases = {
        "random": random_basis(p, config.subspace_dim, seed=42, dtype=theta_hat.dtype, device=theta_hat.device),
        # public data at public parameters (the initialisation): the basis reveals nothing private
        "hessian": hessian_basis(public, recorder.params_at(0), torch.arange(data.x_public.shape[0]),
                                 config.subspace_dim, seed=0),
    }
    gen = ctx.torch_generator("noise")
    residual = theta_hat - theta_ideal

    def mean_acc(draw: Callable[[], Tensor]) -> float:
        return float(np.mean([_accuracy(problem, draw(), data.x_test, data.y_test)
                              for _ in range(config.noise_draws)]))

    acc_clean = _accuracy(problem, theta_hat, data.x_test, data.y_test)
    acc_isotropic = mean_acc(lambda: add_isotropic_noise(
        theta_hat, sensitivity=sensitivity, epsilon=config.epsilon, delta=config.delta, generator=gen).params)
    sigma_par, sigma_perp = subspace_noise_scales(sensitivity, config.epsilon, config.delta, config.beta)
    mu = math.sqrt(2.0) * sensitivity / sigma_par
    subspace = {name: mean_acc(lambda b=basis: add_subspace_noise(
        theta_hat, b, sensitivity=sensitivity, epsilon=config.epsilon, delta=config.delta,
        beta=config.beta, generator=gen).params) for name, basis in bases.items()}
    beta_hat = {name: concentration(residual, basis, sensitivity) for name, basis in bases.items()}
    return NoiseResult(sensitivity=sensitivity, residual_norm=float(residual.norm()), acc_clean=acc_clean,
                       acc_isotropic=acc_isotropic, sigma_parallel=sigma_par, sigma_perp=sigma_perp,
                       mu_calibrated=mu, delta_exact=float(gaussian_delta(mu, config.epsilon)),
                       acc_subspace_random=subspace["random"], acc_subspace_hessian=subspace["hessian"],
                       beta_hat_random=beta_hat["random"], beta_hat_hessian=beta_hat["hessian"])


# ---------------------------------------------------------------------------
# Section 3: ledger
# ---------------------------------------------------------------------------
def ledger_curve(config) -> dict[str, Any]:
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
    return {"x": counts, "series": {"draft formula": draft, "RDP accountant": rdp, "exact Gaussian": exact},
            "xlabel": "sequential requests M", "ylabel": f"total ε at δ = {config.delta:g}",
            "title": "Privacy ledger across requests", "logx": True, "logy": True}
