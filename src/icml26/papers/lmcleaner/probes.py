"""Hostile calls to the lmcleaner API and what each must do (run by ``tests/test_hostile.py``).

The package exports no ``nn.Module`` (it works on the user's), so ``MODULES`` is empty.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.contract import Probe
from icml26.papers.lmcleaner import (
    BatchMeanFisherHVP,
    Certificate,
    DataPool,
    EmpiricalFisherHVP,
    ExactHVP,
    GaussNewtonHVP,
    NoiseSpec,
    OnlineUnlearner,
    RDPAccountant,
    ReplayRemover,
    SupervisedProblem,
    TrajectoryRecorder,
    TruncatedRemover,
    add_isotropic_noise,
    add_subspace_noise,
    concentration,
    correction_path,
    effective_window,
    gaussian_delta,
    gaussian_epsilon,
    gradient_ascent_unlearn,
    hessian_basis,
    isotropic_noise_scale,
    lanczos_top_eigenvectors,
    lmcleaner_unlearn,
    mahalanobis_shift,
    make_hvp,
    neggrad_plus_unlearn,
    no_op,
    random_basis,
    replay_counterfactual,
    retrain_from_scratch,
    sample_subspace_noise,
    subspace_noise_scales,
    truncated_correction,
)
from icml26.papers.lmcleaner import (
    TailCorrection,
    UnitCosts,
    hessian_band_basis,
    hessian_flat_basis,
    krylov_expm_multiply,
    measure_unit_costs,
    predict_lmcleaner_seconds,
    predict_retrain_seconds,
    remaining_time,
)

MODULES: list = []

_NAN, _INF = float("nan"), float("inf")
_DT = torch.float64


def _ce(out, y):
    return F.cross_entropy(out, y, reduction="none")


@functools.lru_cache(maxsize=1)
def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(40, 3, generator=g, dtype=_DT), torch.randint(0, 2, (40,), generator=g)


@functools.lru_cache(maxsize=1)
def _recorded(steps: int = 8):
    """A softmax model trained for ``steps`` recorded SGD steps on batches of 5: (problem, recorder, θ_τ).

    Shared by the probes (each fails before it could change it)."""
    x, y = _data()
    torch.manual_seed(0)
    model = nn.Linear(3, 2).double()
    problem = SupervisedProblem(model, _ce, x, y)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    recorder = TrajectoryRecorder(model, optimizer)
    for t in range(steps):
        ids = torch.arange(5 * t, 5 * t + 5)
        with recorder.step(ids):
            optimizer.zero_grad()
            F.cross_entropy(model(x[ids]), y[ids]).backward()
            optimizer.step()
    return problem, recorder, recorder.current_params()


def _theta(value=_NAN):
    return torch.full((8,), value, dtype=_DT)


def _basis():
    return random_basis(8, 2, dtype=_DT)


def _hvp(kind):
    problem, recorder, theta = _recorded()
    return kind(problem)(theta, torch.arange(3), torch.full((8,), _NAN, dtype=_DT))


HOSTILE = [
    # noise scales and certificates
    Probe("subspace_noise_scales: NaN epsilon", lambda: subspace_noise_scales(1.0, _NAN, 1e-5, 0.1), match="epsilon"),
    Probe("subspace_noise_scales: infinite epsilon", lambda: subspace_noise_scales(1.0, _INF, 1e-5, 0.1),
          match="epsilon"),
    Probe("subspace_noise_scales: delta of 1", lambda: subspace_noise_scales(1.0, 1.0, 1.0, 0.1), match="delta"),
    Probe("subspace_noise_scales: beta above 1", lambda: subspace_noise_scales(1.0, 1.0, 1e-5, 1.5), match="beta"),
    Probe("subspace_noise_scales: no sensitivity", lambda: subspace_noise_scales(None, 1.0, 1e-5, 0.1),
          match="sensitivity"),
    Probe("subspace_noise_scales: text sensitivity", lambda: subspace_noise_scales("1", 1.0, 1e-5, 0.1),
          match="sensitivity"),
    Probe("isotropic_noise_scale: negative epsilon", lambda: isotropic_noise_scale(1.0, -1.0, 1e-5), match="epsilon"),
    Probe("isotropic_noise_scale: NumPy numbers accepted", lambda: isotropic_noise_scale(np.float64(1.0), 1.0, 1e-5),
          returns=lambda s: isinstance(s, float) and s == math.sqrt(2 * math.log(1.25e5)),
          doc="σ = Δ̄/ε·√(2 ln(1.25/δ)) as a Python float"),
    Probe("random_basis: k = 0", lambda: random_basis(5, 0), match="k"),
    Probe("random_basis: fractional dim", lambda: random_basis(5.5, 2), match="dim"),
    Probe("random_basis: negative seed", lambda: random_basis(5, 2, seed=-1), match="seed"),
    Probe("lanczos_top_eigenvectors: k above dim", lambda: lanczos_top_eigenvectors(lambda v: v, 3, 5), match="k"),
    Probe("lanczos_top_eigenvectors: NaN operator", lambda: lanczos_top_eigenvectors(lambda v: v * _NAN, 4, 2),
          match="NaN"),
    Probe("lanczos_top_eigenvectors: wrong output shape", lambda: lanczos_top_eigenvectors(lambda v: v[:2], 4, 2),
          match="matvec"),
    Probe("hessian_basis: k = 0", lambda: hessian_basis(_recorded()[0], _recorded()[2], torch.arange(5), 0), match="k"),
    Probe("add_subspace_noise: NaN parameters", lambda: add_subspace_noise(_theta(), _basis(), sensitivity=1.0,
                                                                            epsilon=1.0, delta=1e-5, beta=0.1),
          match="params"),
    Probe("add_subspace_noise: NumPy parameters", lambda: add_subspace_noise(np.zeros(8), _basis(), sensitivity=1.0,
                                                                              epsilon=1.0, delta=1e-5, beta=0.1),
          match="params"),
    Probe("add_subspace_noise: basis that is not orthonormal",
          lambda: add_subspace_noise(_theta(0.0), torch.ones(8, 2, dtype=_DT), sensitivity=1.0, epsilon=1.0,
                                     delta=1e-5, beta=0.1), match="orthonormal"),
    Probe("add_subspace_noise: no sensitivity", lambda: add_subspace_noise(_theta(0.0), _basis(), sensitivity=None,
                                                                            epsilon=1.0, delta=1e-5, beta=0.1),
          match="sensitivity"),
    Probe("add_isotropic_noise: NaN parameters", lambda: add_isotropic_noise(_theta(), sensitivity=1.0, epsilon=1.0,
                                                                              delta=1e-5), match="params"),
    Probe("sample_subspace_noise: NaN scale", lambda: sample_subspace_noise(_basis(), _NAN, 1.0), match="sigma_parallel"),
    Probe("sample_subspace_noise: infinite scale", lambda: sample_subspace_noise(_basis(), 1.0, _INF), match="sigma_perp"),
    Probe("sample_subspace_noise: fractional count", lambda: sample_subspace_noise(_basis(), 1.0, 1.0, num_samples=2.5),
          match="num_samples"),
    Probe("sample_subspace_noise: NaN basis", lambda: sample_subspace_noise(torch.full((8, 2), _NAN), 1.0, 1.0),
          match="basis"),
    Probe("mahalanobis_shift: zero scale", lambda: mahalanobis_shift(_theta(0.0), _basis(), 0.0, 1.0),
          match="sigma_parallel"),
    Probe("mahalanobis_shift: NaN residual", lambda: mahalanobis_shift(_theta(), _basis(), 1.0, 1.0), match="residual"),
    Probe("mahalanobis_shift: basis of another size", lambda: mahalanobis_shift(_theta(0.0)[:3], _basis(), 1.0, 1.0),
          match="basis"),
    Probe("concentration: zero sensitivity", lambda: concentration(_theta(0.0), _basis(), 0.0), match="sensitivity"),
    Probe("concentration: NaN residual", lambda: concentration(_theta(), _basis(), 1.0), match="residual"),
    Probe("gaussian_delta: NaN mu", lambda: gaussian_delta(_NAN, 1.0), match="mu"),
    Probe("gaussian_delta: infinite mu", lambda: gaussian_delta(_INF, 1.0), match="mu"),
    Probe("gaussian_delta: NaN epsilon", lambda: gaussian_delta(1.0, _NAN), match="epsilon"),
    Probe("gaussian_delta: negative epsilon", lambda: gaussian_delta(1.0, -1.0), match="epsilon"),
    Probe("gaussian_delta: scalar in, float out", lambda: gaussian_delta(1.0, 0.5),
          returns=lambda d: type(d) is float and 0 < d < 1, doc="a scalar ε gives a Python float"),
    Probe("gaussian_delta: array in, array out", lambda: gaussian_delta(1.0, np.array([0.0, 1.0])),
          returns=lambda d: isinstance(d, np.ndarray) and d.shape == (2,) and d[0] > d[1],
          doc="an array of ε gives a NumPy array (δ falls with ε)"),
    Probe("gaussian_epsilon: zero mu", lambda: gaussian_epsilon(0.0, 1e-5), match="mu"),
    Probe("gaussian_epsilon: NaN delta", lambda: gaussian_epsilon(1.0, _NAN), match="delta"),
    Probe("Certificate: a record", lambda: Certificate(1.0, 1e-5, 0.3, 1.0, "‖r‖ ≤ Δ̄"),
          returns=lambda c: c.mu == 0.3, doc="a plain (ε, δ) statement the noise functions fill"),
    # the ledger
    Probe("RDPAccountant: orders at 1", lambda: RDPAccountant([1.0]), match="orders"),
    Probe("RDPAccountant: NaN orders", lambda: RDPAccountant([_NAN]), match="orders"),
    Probe("RDPAccountant.add_gaussian: NaN mu", lambda: RDPAccountant().add_gaussian(_NAN), match="mu"),
    Probe("RDPAccountant.add_gaussian: fractional count", lambda: RDPAccountant().add_gaussian(1.0, count=2.5),
          match="count"),
    Probe("RDPAccountant.epsilon: NaN delta", lambda: RDPAccountant().epsilon(_NAN), match="delta"),
    Probe("RDPAccountant.epsilon: unknown conversion", lambda: RDPAccountant().epsilon(1e-5, conversion="x"),
          match="conversion"),
    Probe("RDPAccountant.exact_epsilon: delta above 1", lambda: RDPAccountant().exact_epsilon(2.0), match="delta"),
    # the problem
    Probe("SupervisedProblem: rows disagree", lambda: SupervisedProblem(nn.Linear(3, 2), _ce, *(_data()[0],),
                                                                         _data()[1][:5]), match="rows"),
    Probe("SupervisedProblem: NaN l2", lambda: SupervisedProblem(nn.Linear(3, 2), _ce, *_data(), l2=_NAN), match="l2"),
    Probe("SupervisedProblem: negative l2", lambda: SupervisedProblem(nn.Linear(3, 2), _ce, *_data(), l2=-1.0),
          match="l2"),
    Probe("SupervisedProblem: not a module", lambda: SupervisedProblem("model", _ce, *_data()), match="model"),
    Probe("SupervisedProblem: list inputs", lambda: SupervisedProblem(nn.Linear(3, 2), _ce, [[1.0]], [0]),
          match="inputs"),
    Probe("SupervisedProblem.set_flat_params: NaN θ", lambda: _recorded()[0].set_flat_params(_theta()), match="NaN"),
    Probe("SupervisedProblem: θ of another dtype", lambda: _recorded()[0].objective(torch.zeros(8), torch.arange(3)),
          match="dtype"),
    Probe("SupervisedProblem.batch: id out of range", lambda: _recorded()[0].batch(torch.tensor([100])),
          match="sample ids"),
    Probe("SupervisedProblem.batch: negative id (would wrap around)", lambda: _recorded()[0].batch(torch.tensor([-1])),
          match="sample ids"),
    Probe("SupervisedProblem.sgd_step: NaN lr", lambda: _recorded()[0].sgd_step(_recorded()[2], torch.arange(3), _NAN),
          match="lr"),
    # the recorder
    Probe("TrajectoryRecorder: not a module", lambda: TrajectoryRecorder("model"), match="model"),
    Probe("TrajectoryRecorder: checkpoint_every 0", lambda: TrajectoryRecorder(nn.Linear(3, 2), checkpoint_every=0),
          match="checkpoint_every"),
    Probe("TrajectoryRecorder.step: empty batch", lambda: TrajectoryRecorder(nn.Linear(3, 2)).step([]).__enter__(),
          match="non-empty"),
    Probe("TrajectoryRecorder.step: NaN lr", lambda: TrajectoryRecorder(nn.Linear(3, 2)).step([0], lr=_NAN).__enter__(),
          match="lr"),
    Probe("TrajectoryRecorder.step: negative id",
          lambda: TrajectoryRecorder(nn.Linear(3, 2)).step([-1], lr=0.1).__enter__(), match="negative id"),
    Probe("TrajectoryRecorder.step: fractional ids",
          lambda: TrajectoryRecorder(nn.Linear(3, 2)).step([0.5], lr=0.1).__enter__(), match="integer"),
    Probe("TrajectoryRecorder.record_edit: NaN θ", lambda: _recorded()[1].record_edit(_theta()), match="new_params"),
    Probe("TrajectoryRecorder.record_edit: wrong size", lambda: _recorded()[1].record_edit(torch.zeros(3, dtype=_DT)),
          match="new_params"),
    Probe("TrajectoryRecorder.params_at: step out of range", lambda: _recorded()[1].params_at(100), match="step"),
    Probe("TrajectoryRecorder.update: fractional step", lambda: _recorded()[1].update(1.5), match="step"),
    Probe("TrajectoryRecorder.steps_using: negative id", lambda: _recorded()[1].steps_using([-1]), match="negative id"),
    Probe("TrajectoryRecorder.mark_removed: step out of range", lambda: _recorded()[1].mark_removed([100]),
          match="step"),
    # HVP backends (NaN propagates by design: no device sync in the propagation loop)
    Probe("ExactHVP: vector of the wrong length",
          lambda: ExactHVP(_recorded()[0])(_recorded()[2], torch.arange(3), torch.zeros(3, dtype=_DT)), match="(p,)"),
    Probe("ExactHVP: vector of another dtype",
          lambda: ExactHVP(_recorded()[0])(_recorded()[2], torch.arange(3), torch.zeros(8)), match="dtype"),
    Probe("ExactHVP: empty batch",
          lambda: ExactHVP(_recorded()[0])(_recorded()[2], torch.arange(0), torch.zeros(8, dtype=_DT)), match="empty"),
    Probe("ExactHVP: not a problem", lambda: ExactHVP("problem"), match="SupervisedProblem"),
    Probe("ExactHVP: NaN vector propagates", lambda: _hvp(ExactHVP), returns=lambda v: bool(torch.isnan(v).all()),
          doc="NaN in, NaN out (documented; the loop's inputs are checked)"),
    Probe("GaussNewtonHVP: NaN vector propagates", lambda: _hvp(GaussNewtonHVP),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in, NaN out (documented)"),
    Probe("EmpiricalFisherHVP: NaN vector propagates", lambda: _hvp(EmpiricalFisherHVP),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in, NaN out (documented)"),
    Probe("BatchMeanFisherHVP: NaN vector propagates", lambda: _hvp(BatchMeanFisherHVP),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in, NaN out (documented)"),
    Probe("make_hvp: unknown kind", lambda: make_hvp(_recorded()[0], "x"), match="kind"),
    Probe("make_hvp: not a problem", lambda: make_hvp("problem", "exact"), match="SupervisedProblem"),
    # propagation
    Probe("effective_window: negative window", lambda: effective_window(-1, 0, 5), match="window"),
    Probe("effective_window: fractional window", lambda: effective_window(2.5, 0, 5), match="window"),
    Probe("effective_window: deleted step not before now", lambda: effective_window(2, 5, 5), match="before now"),
    Probe("truncated_correction: NaN θ_τ", lambda: truncated_correction(_recorded()[1], _theta(), 3, 8, window=2,
                                                                        hvp=ExactHVP(_recorded()[0])),
          match="params_now"),
    Probe("truncated_correction: NaN damping", lambda: truncated_correction(_recorded()[1], _recorded()[2], 3, 8,
                                                                            window=2, hvp=ExactHVP(_recorded()[0]),
                                                                            damping=_NAN), match="damping"),
    Probe("truncated_correction: fractional window", lambda: truncated_correction(_recorded()[1], _recorded()[2], 3, 8,
                                                                                  window=2.5,
                                                                                  hvp=ExactHVP(_recorded()[0])),
          match="window"),
    Probe("truncated_correction: not an HVP", lambda: truncated_correction(_recorded()[1], _recorded()[2], 3, 8,
                                                                           window=2, hvp="exact"), match="hvp"),
    Probe("truncated_correction: step after now", lambda: truncated_correction(_recorded()[1], _recorded()[2], 9, 8,
                                                                               window=2, hvp=ExactHVP(_recorded()[0])),
          match="before now"),
    Probe("correction_path: negative window", lambda: correction_path(_recorded()[1], _recorded()[2], 3, 8, windows=[-1],
                                                                      hvp=ExactHVP(_recorded()[0])), match="window"),
    Probe("correction_path: no window", lambda: correction_path(_recorded()[1], _recorded()[2], 3, 8, windows=[],
                                                                hvp=ExactHVP(_recorded()[0])), match="windows"),
    # serving requests
    Probe("DataPool: no id", lambda: DataPool([], 2), match="sample id"),
    Probe("DataPool: batch size 0", lambda: DataPool([1, 2], 0), match="batch_size"),
    Probe("DataPool: fractional batch size", lambda: DataPool([1, 2], 2.5), match="batch_size"),
    Probe("DataPool: NaN epochs", lambda: DataPool([1, 2], 1, epochs=_NAN), match="epochs"),
    Probe("DataPool: negative id", lambda: DataPool([-1, 2], 1), match="negative id"),
    Probe("NoiseSpec: NaN sensitivity", lambda: NoiseSpec(_NAN, 1.0, 1e-5, mode="isotropic"), match="sensitivity"),
    Probe("NoiseSpec: unknown mode", lambda: NoiseSpec(1.0, 1.0, 1e-5, mode="x"), match="mode"),
    Probe("NoiseSpec: NaN basis", lambda: NoiseSpec(1.0, 1.0, 1e-5, basis=torch.full((4, 2), _NAN)), match="basis"),
    Probe("OnlineUnlearner: negative window", lambda: OnlineUnlearner(_recorded()[0], _recorded()[1],
                                                                       hvp=ExactHVP(_recorded()[0]), window=-1),
          match="window"),
    Probe("OnlineUnlearner: fractional window", lambda: OnlineUnlearner(_recorded()[0], _recorded()[1],
                                                                         hvp=ExactHVP(_recorded()[0]), window=2.5),
          match="window"),
    Probe("OnlineUnlearner: neither hvp nor remover", lambda: OnlineUnlearner(_recorded()[0], _recorded()[1]),
          match="remover"),
    Probe("OnlineUnlearner: basis of another size",
          lambda: OnlineUnlearner(_recorded()[0], _recorded()[1], hvp=ExactHVP(_recorded()[0]), window=2,
                                  noise=NoiseSpec(1.0, 1.0, 1e-5, basis=random_basis(10, 2, dtype=_DT))),
          match="basis"),
    Probe("OnlineUnlearner.request: no id", lambda: OnlineUnlearner(_recorded()[0], _recorded()[1],
                                                                     hvp=ExactHVP(_recorded()[0]), window=2).request([]),
          match="sample id"),
    Probe("OnlineUnlearner.request: negative id",
          lambda: OnlineUnlearner(_recorded()[0], _recorded()[1], hvp=ExactHVP(_recorded()[0]), window=2).request([-1]),
          match="negative id"),
    Probe("TruncatedRemover: NaN θ_τ", lambda: TruncatedRemover(ExactHVP(_recorded()[0]), 2)(
        _recorded()[1], _theta(), [3], 8, torch.tensor([15])), match="params_now"),
    Probe("ReplayRemover: NaN θ_τ", lambda: ReplayRemover(_recorded()[0])(_recorded()[1], _theta(), [3], 8,
                                                                           torch.tensor([15])), match="params_now"),
    # the method and its baselines
    Probe("lmcleaner_unlearn: NaN θ_τ", lambda: lmcleaner_unlearn(_recorded()[0], _recorded()[1], _theta(), [0], 8,
                                                                  window=2, hvp=ExactHVP(_recorded()[0])),
          match="params_now"),
    Probe("lmcleaner_unlearn: no id", lambda: lmcleaner_unlearn(_recorded()[0], _recorded()[1], _recorded()[2], [], 8,
                                                                window=2, hvp=ExactHVP(_recorded()[0])),
          match="forget_ids"),
    Probe("lmcleaner_unlearn: ids never used", lambda: lmcleaner_unlearn(_recorded()[0], _recorded()[1], _recorded()[2],
                                                                         [39], 7, window=2,
                                                                         hvp=ExactHVP(_recorded()[0])),
          match="nothing to delete"),
    Probe("retrain_from_scratch: now beyond the record", lambda: retrain_from_scratch(_recorded()[0], _recorded()[1],
                                                                                      _recorded()[2], [0], 100),
          match="now_step"),
    Probe("replay_counterfactual: negative id", lambda: replay_counterfactual(_recorded()[0], _recorded()[1],
                                                                              _recorded()[2], [-1], 8),
          match="negative id"),
    Probe("gradient_ascent_unlearn: fractional steps", lambda: gradient_ascent_unlearn(
        _recorded()[0], _recorded()[1], _recorded()[2], [0], 8, steps=2.5, lr=0.1), match="steps"),
    Probe("gradient_ascent_unlearn: NaN lr", lambda: gradient_ascent_unlearn(
        _recorded()[0], _recorded()[1], _recorded()[2], [0], 8, steps=2, lr=_NAN), match="lr"),
    Probe("neggrad_plus_unlearn: NaN beta", lambda: neggrad_plus_unlearn(
        _recorded()[0], _recorded()[1], _recorded()[2], [0], 8, steps=2, lr=0.1, beta=_NAN), match="beta"),
    Probe("no_op: NaN θ_τ", lambda: no_op(_recorded()[0], _recorded()[1], _theta(), [0], 8), match="params_now"),
    # clipping, the tail correction, the cost model, public bases
    Probe("SupervisedProblem: negative clip_norm", lambda: SupervisedProblem(nn.Linear(3, 2).double(), _ce, *_data(),
                                                                             clip_norm=-1.0), match="clip_norm"),
    Probe("SupervisedProblem: NaN clip_norm", lambda: SupervisedProblem(nn.Linear(3, 2).double(), _ce, *_data(),
                                                                        clip_norm=_NAN), match="clip_norm"),
    Probe("clipped_gradient without clip_norm", lambda: _recorded()[0].clipped_gradient(_recorded()[2], torch.arange(3)),
          match="clip_norm"),
    Probe("TailCorrection: krylov_dim 0", lambda: TailCorrection(_recorded()[0], torch.arange(5), krylov_dim=0),
          match="krylov_dim"),
    Probe("TailCorrection: no public rows", lambda: TailCorrection(_recorded()[0], torch.arange(0)), match="public_ids"),
    Probe("TailCorrection: not a problem", lambda: TailCorrection("data", torch.arange(5)), raises=TypeError,
          match="problem"),
    Probe("truncated_correction: tail of the wrong type",
          lambda: truncated_correction(_recorded()[1], _recorded()[2], 0, 8, window=2, hvp=ExactHVP(_recorded()[0]),
                                       tail="public"), raises=TypeError, match="tail"),
    Probe("krylov_expm_multiply: negative time",
          lambda: krylov_expm_multiply(lambda v: v, torch.ones(3, dtype=_DT), -1.0, krylov_dim=2), match="time"),
    Probe("krylov_expm_multiply: NaN vector",
          lambda: krylov_expm_multiply(lambda v: v, torch.full((3,), _NAN, dtype=_DT), 1.0, krylov_dim=2),
          match="vector"),
    Probe("krylov_expm_multiply: operator returns NaN",
          lambda: krylov_expm_multiply(lambda v: v * _NAN, torch.ones(3, dtype=_DT), 1.0, krylov_dim=2), match="NaN"),
    Probe("krylov_expm_multiply: operator of the wrong shape",
          lambda: krylov_expm_multiply(lambda v: v[:2], torch.ones(3, dtype=_DT), 1.0, krylov_dim=2), match="matvec"),
    Probe("remaining_time: after the window nothing remains", lambda: remaining_time(_recorded()[1], 0, 8, 7),
          returns=lambda t: t == 0.0, doc="K* = τ − t_z − 1 leaves no propagator for the tail"),
    Probe("UnitCosts: zero SGD step", lambda: UnitCosts(sgd_step=0.0, hvp=1.0, rebuild_step=0.0), match="sgd_step"),
    Probe("UnitCosts: NaN HVP", lambda: UnitCosts(sgd_step=1.0, hvp=_NAN, rebuild_step=0.0), match="hvp"),
    Probe("predict_lmcleaner_seconds: windows and lags of different lengths",
          lambda: predict_lmcleaner_seconds(UnitCosts(1.0, 1.0, 0.0), [1, 2], [3]), match="one length"),
    Probe("predict_retrain_seconds: fractional step",
          lambda: predict_retrain_seconds(UnitCosts(1.0, 1.0, 0.0), 2.5, 1), raises=TypeError, match="now_step"),
    Probe("measure_unit_costs: step not recorded",
          lambda: measure_unit_costs(_recorded()[0], _recorded()[1], _recorded()[2], 99, ExactHVP(_recorded()[0])),
          match="step"),
    Probe("hessian_band_basis: lag not above the window",
          lambda: hessian_band_basis(_recorded()[0], _recorded()[2], torch.arange(10), lr=0.1, window=5, lag=5),
          match="exceed"),
    Probe("hessian_band_basis: empty band",
          lambda: hessian_band_basis(_recorded()[0], _recorded()[2], torch.arange(10), lr=1e-9, window=1, lag=2),
          match="no public-Hessian eigenvalue"),
    Probe("hessian_flat_basis: k 0", lambda: hessian_flat_basis(_recorded()[0], _recorded()[2], torch.arange(10), 0),
          match="k"),
]

from .probes_walk import ALLOWED, NOT_WALKED, VALID  # noqa: E402,F401
