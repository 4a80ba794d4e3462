"""LMCleaner: clipped training and its exact Jacobian, the Krylov expm against scipy, the tail correction,
unit costs and the cost model, band and flat bases, and the calibrated isotropic arm.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml26.papers.lmcleaner import (
    ExactHVP,
    SupervisedProblem,
    TrajectoryRecorder,
    correction_path,
    isotropic_noise_scale,
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
    predict_replay_seconds,
    predict_retrain_seconds,
    remaining_time,
)
from icml26.papers.lmcleaner.analysis import max_relative_error
from tests.papers._lmcleaner_helpers import DT, _least_squares, _replay, _single_pass, _squared, _train


# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------
# issue #28: clipped training, the tail correction, unit costs and the cost model, bases
# ---------------------------------------------------------------------------
def _softmax_problem(clip=None, l2=0.0, n=60, seed=3):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen, dtype=DT) * 3
    y = torch.randint(0, 3, (n,), generator=gen)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Linear(4, 3).double()
    return SupervisedProblem(model, lambda o, t: F.cross_entropy(o, t, reduction="none"), x, y, l2=l2, clip_norm=clip)


def test_clipped_gradient_by_hand_and_its_exact_jacobian():
    problem = _softmax_problem(clip=0.7, l2=0.01)
    theta = problem.flat_params() + 0.3
    ids = torch.arange(10)
    # by hand: a loop over samples, each gradient scaled to norm <= C, then the mean and the decay
    expected = torch.zeros_like(theta)
    clipped = 0
    for i in ids.tolist():
        g = torch.func.grad(lambda th: problem.per_sample_losses(th, torch.tensor([i])).sum())(theta)
        clipped += int(float(g.norm()) > 0.7)
        expected += g * min(1.0, 0.7 / float(g.norm()))
    expected = expected / len(ids) + 0.01 * theta
    assert clipped > 0
    torch.testing.assert_close(problem.gradient(theta, ids), expected, rtol=1e-12, atol=1e-14)
    # the exact backend propagates with the Jacobian of that clipped direction: central differences
    v = torch.randn(theta.shape, generator=torch.Generator().manual_seed(1), dtype=DT)
    h = 1e-6
    fd = (problem.gradient(theta + h * v, ids) - problem.gradient(theta - h * v, ids)) / (2 * h)
    torch.testing.assert_close(ExactHVP(problem)(theta, ids, v), fd, rtol=1e-6, atol=1e-8)
    # without clipping (C huge) the clipped direction is the plain gradient
    loose = _softmax_problem(clip=1e9, l2=0.01)
    plain = _softmax_problem(clip=None, l2=0.01)
    torch.testing.assert_close(loose.gradient(theta, ids), plain.gradient(theta, ids), rtol=1e-12, atol=1e-14)


def test_clipped_training_bounds_every_update_and_replays_exactly():
    problem = _softmax_problem(clip=0.5)
    opt = torch.optim.SGD(problem.model.parameters(), lr=0.3)
    rec = TrajectoryRecorder(problem.model, opt)
    params = list(problem.model.parameters())
    for ids in _single_pass(60, 6):
        with rec.step(ids):
            g = problem.gradient(rec.current_params(), ids)
            for p, piece in zip(params, torch.split(g, [p.numel() for p in params])):
                p.grad = piece.view_as(p)
            opt.step()
    # Δ̄ = η·C bounds every recorded update (l2 = 0)
    assert max(float(rec.update(t).norm()) for t in range(rec.num_steps)) <= 0.3 * 0.5 + 1e-12
    # replay through problem.sgd_step reproduces the clipped run
    torch.testing.assert_close(_replay(problem, rec, set(), rec.num_steps), rec.current_params(), rtol=0, atol=1e-12)


def test_krylov_expm_matches_scipy_expm():
    from scipy.linalg import expm

    rng = np.random.default_rng(0)
    a = rng.normal(size=(9, 9))
    spd = a @ a.T / 9
    v = torch.tensor(rng.normal(size=9), dtype=DT)
    matvec = lambda w: torch.tensor(spd, dtype=DT) @ w  # noqa: E731
    exact = torch.tensor(expm(-1.7 * (spd + 0.2 * np.eye(9))), dtype=DT) @ v
    full, calls = krylov_expm_multiply(matvec, v, 1.7, krylov_dim=9, shift=0.2)
    torch.testing.assert_close(full, exact, rtol=1e-9, atol=1e-12)
    assert calls == 9
    # a smaller Krylov space is an approximation that improves with m
    errors = [float((krylov_expm_multiply(matvec, v, 1.7, krylov_dim=m, shift=0.2)[0] - exact).norm()) for m in (1, 3, 6)]
    assert errors[0] > errors[1] > errors[2]
    # time 0 and the zero vector are exact without any product
    assert torch.equal(krylov_expm_multiply(matvec, v, 0.0, krylov_dim=3)[0], v)
    assert krylov_expm_multiply(matvec, torch.zeros(9, dtype=DT), 1.0, krylov_dim=3)[1] == 0


def test_remaining_time_by_hand():
    problem = _least_squares()
    rec = _train(problem, _single_pass(240, 10), lr=0.05)
    # steps 3 … 23 after t_z = 2 with K* = 0: 21 steps at η = 0.05, minus the skipped step 10
    assert remaining_time(rec, 2, 24, 0) == pytest.approx(21 * 0.05)
    assert remaining_time(rec, 2, 24, 0, frozenset({10})) == pytest.approx(20 * 0.05)
    assert remaining_time(rec, 2, 24, 21) == 0.0


def _constant_hessian_problem():
    """Least squares whose every batch holds the same inputs: one Hessian for every step."""
    gen = torch.Generator().manual_seed(5)
    base = torch.randn(8, 3, generator=gen, dtype=DT)
    x = base.repeat(12, 1)
    y = torch.randn(96, 2, generator=gen, dtype=DT)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        model = nn.Linear(3, 2).double()
    train = SupervisedProblem(model, _squared, x, y, l2=0.01)
    public = SupervisedProblem(model, _squared, base, torch.zeros(8, 2, dtype=DT), l2=0.01)
    return train, public


def test_tail_correction_is_exact_when_the_public_hessian_is_every_step_s():
    """Constant Hessian H: the remaining propagators are (I − ηH)^n, and exp(−nηH) differs from it
    only by the discretisation; with the public batch's Hessian equal to H and a full Krylov space the
    tail equals exp(−T·H)·v exactly (checked against the eigendecomposition)."""
    train, public = _constant_hessian_problem()
    rec = _train(train, _single_pass(96, 8), lr=0.05)
    now = rec.num_steps
    p = train.num_params
    tail = TailCorrection(public, torch.arange(8), krylov_dim=p)
    base = truncated_correction(rec, rec.current_params(), 1, now, window=2, hvp=ExactHVP(train))
    with_tail = truncated_correction(rec, rec.current_params(), 1, now, window=2, hvp=ExactHVP(train), tail=tail)
    hess = torch.func.hessian(lambda th: public.objective(th, torch.arange(8)))(rec.current_params())
    values, vectors = torch.linalg.eigh(hess)
    t = remaining_time(rec, 1, now, 2)
    expected = vectors @ (torch.exp(-t * values) * (vectors.T @ base.vector))
    torch.testing.assert_close(with_tail.vector, expected, rtol=1e-9, atol=1e-12)
    assert with_tail.tail_calls <= p and base.tail_calls == 0
    # and it is much closer to the full propagation (here: the exact counterfactual) than the truncation
    exact = _replay(train, rec, {1}, now)
    err_tail = float((rec.current_params() - with_tail.vector - exact).norm())
    err_plain = float((rec.current_params() - base.vector - exact).norm())
    assert err_tail < 0.2 * err_plain
    # the path gives the same vectors, and its cost counts the public products
    path = correction_path(rec, rec.current_params(), 1, now, windows=[2], hvp=ExactHVP(train), tail=tail)
    torch.testing.assert_close(path[2].vector, with_tail.vector, rtol=0, atol=1e-13)
    assert path[2].grad_equivalents == pytest.approx(2 * 2.0 + path[2].tail_calls * tail.call_cost(8))


def test_cost_model_by_hand_and_measured_units():
    units = UnitCosts(sgd_step=2e-3, hvp=5e-3, rebuild_step=1e-5, tail_hvp=8e-3)
    assert units.hvp_cost == pytest.approx(2.5) and units.tail_cost == pytest.approx(4.0)
    # two deleted batches: K* = 10 and 3, lags 100 and 40, 4 tail products
    assert predict_lmcleaner_seconds(units, [10, 3], [100, 40], 4) == pytest.approx(13 * 5e-3 + 140 * 1e-5 + 4 * 8e-3)
    assert predict_retrain_seconds(units, 500, 2) == pytest.approx(498 * 2e-3 + 500 * 1e-5)
    assert predict_replay_seconds(units, 100, 1) == pytest.approx(99 * 2e-3 + 100 * 1e-5)
    with pytest.raises(ValueError, match="one length"):
        predict_lmcleaner_seconds(units, [1, 2], [3])
    with pytest.raises(ValueError, match="sgd_step"):
        UnitCosts(sgd_step=0.0, hvp=1.0, rebuild_step=0.0)
    problem = _least_squares()
    rec = _train(problem, _single_pass(240, 10))
    measured = measure_unit_costs(problem, rec, rec.current_params(), 3, ExactHVP(problem), repeats=3, rebuild_span=10)
    assert measured.sgd_step > 0 and measured.hvp > 0 and measured.rebuild_step > 0 and measured.tail_hvp == 0
    assert max_relative_error([1.1, 0.9], [1.0, 1.0]) == pytest.approx(0.1)
    assert max_relative_error([3.0], [2.0]) == pytest.approx(0.5)
    assert math.isnan(max_relative_error([1.0], [0.0]))


def test_band_and_flat_bases_on_a_known_hessian():
    train, public = _constant_hessian_problem()
    theta = train.flat_params()
    hess = torch.func.hessian(lambda th: public.objective(th, torch.arange(8)))(theta)
    values, vectors = torch.linalg.eigh(hess)
    flat = hessian_flat_basis(public, theta, torch.arange(8), 2)
    # the span of the two smallest eigenvectors
    proj = vectors[:, :2] @ vectors[:, :2].T
    torch.testing.assert_close(proj @ flat, flat, rtol=0, atol=1e-8)
    lr = 0.05
    window, lag = 2, 40
    band = hessian_band_basis(public, theta, torch.arange(8), lr=lr, window=window, lag=lag)
    inside = (lr * values > 1 / lag) & (lr * values < 1 / window)
    assert band.shape[1] == int(inside.sum())
    proj = vectors[:, inside] @ vectors[:, inside].T
    torch.testing.assert_close(proj @ band, band, rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="exceed"):
        hessian_band_basis(public, theta, torch.arange(8), lr=lr, window=5, lag=5)


def test_delta_eff_counts_the_calibration_miss_rate():
    """β is a max over n exchangeable canaries: a further exchangeable residual exceeds it with probability
    1/(n + 1), which δ_eff adds to δ; a simulation of exchangeable residuals agrees."""
    from icml26.papers.lmcleaner.certified import CertifiedNoiseResult

    fields = {f.name: math.nan for f in dataclasses.fields(CertifiedNoiseResult)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    fields["band_dim"] = 1
    res = CertifiedNoiseResult(**fields, canaries=19, delta=1e-5)
    assert res.miss_rate == pytest.approx(1 / 20)
    assert res.delta_eff == pytest.approx(1e-5 + 1 / 20)
    gen = np.random.default_rng(0)
    draws = gen.lognormal(size=(40_000, 20))
    missed = float(np.mean(draws[:, -1] > draws[:, :-1].max(axis=1)))
    assert abs(missed - res.miss_rate) < 4 * math.sqrt(0.05 * 0.95 / 40_000)
    assert CertifiedNoiseResult(**fields, canaries=999, delta=1e-5).delta_eff == pytest.approx(1e-5 + 1e-3)


def test_calibrated_isotropic_arm_uses_the_canaries_bound():
    """The equal-information arm: σ is the Gaussian mechanism's at sensitivity max_j ‖r_j‖ (not Δ̄ = η·C),
    its accuracy enters the headline noise check as subspace − isotropic in points, and the certificate
    check includes its assumption ‖r‖ ≤ max_j ‖r_j‖."""
    from icml26.contract import RunContext
    from icml26.papers.lmcleaner.certified import certified_noise_section
    from icml26.papers.lmcleaner.experiment import Config, _noise_checks

    config = Config.tiny()
    noise = certified_noise_section(config, RunContext(seed=0, device="cpu", setting="tiny", threads=1))
    assert noise.canaries == config.noise_calibration_requests
    assert 0 < noise.residual_bound < noise.sensitivity
    assert noise.sigma_isotropic_calibrated == pytest.approx(
        isotropic_noise_scale(noise.residual_bound, config.epsilon, config.delta))
    assert noise.sigma_isotropic_calibrated < noise.sigma_isotropic
    assert 0 <= noise.acc_isotropic_calibrated <= 1
    assert noise.holds >= noise.residual_norm / noise.residual_bound
    checks = {c.id: c for c in _noise_checks(config, noise)}
    assert checks["subspace_vs_isotropic"].value == pytest.approx(
        100 * (noise.acc_subspace_random - noise.acc_isotropic_calibrated))
    assert checks["subspace_vs_isotropic_flat"].value == pytest.approx(
        100 * (noise.acc_subspace_flat - noise.acc_isotropic_calibrated))
    assert checks["certificate_holds"].value == pytest.approx(noise.holds)
