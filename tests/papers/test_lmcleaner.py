"""Tests of LMCleaner (icml26.papers.lmcleaner) against closed forms and independent computations."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import integrate, stats
from torch import nn

from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.lmcleaner import BASELINES, ReplayRemover, TruncatedRemover
from icml26.papers.lmcleaner.analysis import (
    accuracy_drop_points,
    decay_ratio,
    decay_window,
    draft_composition_epsilon,
    ga_equal_compute_score,
    lag_groups,
    max_abs_gap,
    per_request_mu,
    ratio,
    relative_residual,
)
from icml26.papers.lmcleaner import (
    RDPAccountant,
    BatchMeanFisherHVP,
    DataPool,
    EmpiricalFisherHVP,
    ExactHVP,
    GaussNewtonHVP,
    NoiseSpec,
    OnlineUnlearner,
    SupervisedProblem,
    TrajectoryRecorder,
    add_isotropic_noise,
    add_subspace_noise,
    correction_path,
    effective_window,
    gaussian_delta,
    gaussian_epsilon,
    gradient_ascent_unlearn,
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

DT = torch.float64

# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _squared(out, y):
    return 0.5 * ((out - y) ** 2).sum(-1)


def _least_squares(n=240, d=6, k=2, l2=0.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=DT)
    y = torch.randn(n, k, generator=gen, dtype=DT)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Linear(d, k).double()
    return SupervisedProblem(model, _squared, x, y, l2=l2)


def _train(problem, schedule, lr=0.05, checkpoint_every=None, snapshots=False):
    """SGD through ``torch.optim.SGD`` on the module, recorded; returns recorder (and θ per step)."""
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=problem.l2)
    rec = TrajectoryRecorder(model, opt, checkpoint_every=checkpoint_every, problem=problem)
    saved = []
    for ids in schedule:
        saved.append(problem.flat_params())
        with rec.step(ids):
            x, y = problem.batch(ids)
            loss = problem.loss(model(x), y).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    saved.append(problem.flat_params())
    return (rec, saved) if snapshots else rec


def _single_pass(n, batch):
    return [torch.arange(i, i + batch) for i in range(0, n, batch)]


def _replay(problem, rec, skip, now):
    theta = rec.params_at(0)
    for t in range(now):
        if t not in skip:
            theta = problem.sgd_step(theta, rec.batch_ids(t), rec.lr(t))
    return theta


# ---------------------------------------------------------------------------
# 1. quadratic exactness
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("deleted", [(7,), (3, 11, 17)])
@pytest.mark.parametrize("checkpoint_every", [None, 4])
def test_quadratic_exactness_equals_replay(deleted, checkpoint_every):
    """Least squares has a constant Hessian: with K ≥ L − 1 the correction is the counterfactual."""
    problem = _least_squares(l2=0.01)
    rec = _train(problem, _single_pass(240, 10), checkpoint_every=checkpoint_every)
    now = rec.num_steps
    expected = _replay(problem, rec, set(deleted), now)
    corr = truncated_correction(rec, rec.current_params(), list(deleted), now, window=now, hvp=ExactHVP(problem))
    assert torch.allclose(rec.current_params() - corr.vector, expected, atol=1e-10, rtol=0)
    assert corr.windows == tuple(now - t - 1 for t in deleted)
    # the baselines agree with the hand-written replay
    for fn in (replay_counterfactual, retrain_from_scratch):
        ids = torch.cat([rec.batch_ids(t) for t in deleted])
        out = fn(problem, rec, rec.current_params(), ids, now)
        assert torch.allclose(out.params, expected, atol=1e-12, rtol=0)


def test_quadratic_exactness_at_an_earlier_step():
    """A request served at τ < recorded steps rebuilds history from θ[τ], not from the last θ."""
    problem = _least_squares()
    rec, saved = _train(problem, _single_pass(240, 10), snapshots=True)
    tau, t_z = 15, 4
    expected = _replay(problem, rec, {t_z}, tau)
    corr = truncated_correction(rec, saved[tau], t_z, tau, window=100, hvp=ExactHVP(problem))
    assert torch.allclose(saved[tau] - corr.vector, expected, atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------
# 2. K* bookkeeping
# ---------------------------------------------------------------------------
def test_effective_window_cases():
    assert effective_window(10, 5, 6) == 0          # τ = t_z + 1: nothing to propagate through
    assert effective_window(10, 5, 7) == 1
    assert effective_window(10, 5, 16) == 10        # τ − t_z − 1 = K exactly
    assert effective_window(10, 5, 100) == 10
    assert effective_window(0, 5, 100) == 0
    for bad in ((-1, 5, 10), (3, 10, 10), (3, 11, 10), (3, -1, 10)):
        with pytest.raises(ValueError):
            effective_window(*bad)


def test_off_by_one_corrections():
    problem = _least_squares(l2=0.01)
    rec = _train(problem, _single_pass(240, 10))
    hvp = ExactHVP(problem)
    theta = rec.current_params()
    t_z = 5
    u = rec.params_at(t_z + 1) - rec.params_at(t_z)
    # τ = t_z + 1: v = u exactly, whatever K
    params_tz1 = rec.params_at(t_z + 1)
    c = truncated_correction(rec, params_tz1, t_z, t_z + 1, window=50, hvp=hvp)
    assert c.windows == (0,) and c.hvp_calls == 0
    assert torch.equal(c.vector, rec.update(t_z))
    assert torch.allclose(c.vector, u, atol=1e-14)
    # K = 1: v = (I − η H[t_z+1]) u, by hand
    c1 = truncated_correction(rec, theta, t_z, rec.num_steps, window=1, hvp=hvp)
    manual = u - rec.lr(t_z + 1) * hvp(rec.params_at(t_z + 1), rec.batch_ids(t_z + 1), u)
    assert c1.hvp_calls == 1 and torch.allclose(c1.vector, manual, atol=1e-14)
    # the path's prefixes are the truncated corrections
    path = correction_path(rec, theta, t_z, rec.num_steps, windows=[0, 1, 3, 100], hvp=hvp)
    assert torch.equal(path[0].vector, rec.update(t_z))
    for k in (1, 3, 100):
        single = truncated_correction(rec, theta, t_z, rec.num_steps, window=k, hvp=hvp)
        assert torch.allclose(path[k].vector, single.vector, atol=1e-14)
        assert path[k].hvp_calls == single.hvp_calls == min(k, rec.num_steps - t_z - 1)


def test_propagation_uses_historical_parameters():
    """Non-quadratic model: v_K = Π_s (I − η_s H_s(θ[s])) u with θ[s] the recorded parameters."""
    problem = _mlp_problem(l2=0.01)
    rec, saved = _train(problem, _single_pass(30, 3) * 2, lr=0.5, snapshots=True)
    t_z, tau = 4, 14
    v = saved[t_z + 1] - saved[t_z]
    for s in range(t_z + 1, t_z + 4):
        _, hv = torch.autograd.functional.hvp(lambda th: problem.objective(th, rec.batch_ids(s)), saved[s], v)
        v = v - rec.lr(s) * hv
    corr = truncated_correction(rec, saved[tau], t_z, tau, window=3, hvp=ExactHVP(problem))
    assert torch.allclose(corr.vector, v, atol=1e-12)
    # evaluating the Hessians at the wrong point would be caught: θ[τ] instead of θ[s]
    wrong = saved[t_z + 1] - saved[t_z]
    for s in range(t_z + 1, t_z + 4):
        _, hv = torch.autograd.functional.hvp(lambda th: problem.objective(th, rec.batch_ids(s)), saved[tau], wrong)
        wrong = wrong - rec.lr(s) * hv
    assert (corr.vector - wrong).abs().max() > 1e-6


# ---------------------------------------------------------------------------
# 3. truncation bound on ridge regression
# ---------------------------------------------------------------------------
def _ridge_gamma(problem, rec, steps):
    gammas = []
    for s in steps:
        x, _ = problem.batch(rec.batch_ids(s))
        xa = torch.cat([x, torch.ones(x.shape[0], 1, dtype=DT)], 1)   # weight and bias of one output
        h = xa.T @ xa / x.shape[0] + problem.l2 * torch.eye(xa.shape[1], dtype=DT)
        eig = torch.linalg.eigvalsh(torch.eye(h.shape[0], dtype=DT) - rec.lr(s) * h)
        gammas.append(float(eig.abs().max()))
    return max(gammas)


@pytest.mark.parametrize("same_batch", [False, True])
def test_truncation_bound_ridge(same_batch):
    """‖δ_full − δ_K‖ ≤ γ^K/(1 − γ)·‖u‖ with γ = max_s ‖I − η H_s‖₂ computed exactly."""
    problem = _least_squares(n=400, d=4, k=1, l2=0.5, seed=1)
    schedule = [torch.arange(0, 40)] * 40 if same_batch else _single_pass(400, 10) * 4
    rec = _train(problem, schedule, lr=0.15)
    now, t_z = rec.num_steps, 3
    gamma = _ridge_gamma(problem, rec, range(t_z + 1, now))
    assert 0 < gamma < 1
    hvp = ExactHVP(problem)
    windows = list(range(0, now - t_z))
    path = correction_path(rec, rec.current_params(), t_z, now, windows=windows, hvp=hvp)
    full = path[now - t_z - 1].vector
    u_norm = float(rec.update(t_z).norm())
    errors = [float((full - path[k].vector).norm()) for k in windows]
    for k, err in zip(windows, errors):
        assert err <= gamma**k / (1 - gamma) * u_norm + 1e-12
    assert errors[-1] < 1e-14
    if same_batch:
        # one fixed PSD propagator: the error is monotone non-increasing in K
        assert all(b <= a + 1e-14 for a, b in zip(errors, errors[1:]))


# ---------------------------------------------------------------------------
# 4. HVP backends
# ---------------------------------------------------------------------------
def _mlp_problem(l2=0.01):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(30, 5, generator=gen, dtype=DT)
    y = torch.randint(0, 3, (30,), generator=gen)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).double()
    return SupervisedProblem(model, lambda o, t: F.cross_entropy(o, t, reduction="none"), x, y, l2=l2)


def test_exact_hvp_matches_autograd_functional():
    problem = _mlp_problem()
    theta = problem.flat_params()
    ids = torch.arange(4, 16)
    v = torch.randn(theta.numel(), generator=torch.Generator().manual_seed(0), dtype=DT)
    _, expected = torch.autograd.functional.hvp(lambda th: problem.objective(th, ids), theta, v)
    assert torch.allclose(ExactHVP(problem)(theta, ids, v), expected, atol=1e-12)


def test_gauss_newton_matches_explicit_jt_h_j():
    problem = _mlp_problem()
    theta = problem.flat_params()
    ids = torch.arange(0, 9)
    x, y = problem.batch(ids)
    v = torch.randn(theta.numel(), generator=torch.Generator().manual_seed(1), dtype=DT)
    jac = torch.autograd.functional.jacobian(lambda th: problem.forward(th, x).reshape(-1), theta)  # (B·C, p)
    out = problem.forward(theta, x).detach()
    h_out = torch.autograd.functional.hessian(
        lambda o: problem.loss(o.view_as(out), y).mean(), out.reshape(-1))                        # (B·C, B·C)
    explicit = jac.T @ h_out @ jac @ v + problem.l2 * v
    assert torch.allclose(GaussNewtonHVP(problem)(theta, ids, v), explicit, atol=1e-12)


def test_gauss_newton_equals_exact_for_a_linear_model():
    problem = _least_squares(l2=0.1)
    theta = problem.flat_params()
    v = torch.randn(theta.numel(), generator=torch.Generator().manual_seed(2), dtype=DT)
    ids = torch.arange(10)
    assert torch.allclose(GaussNewtonHVP(problem)(theta, ids, v), ExactHVP(problem)(theta, ids, v), atol=1e-12)


def test_fisher_backends_match_explicit_gradients():
    problem = _mlp_problem()
    theta = problem.flat_params()
    ids = torch.arange(5, 13)
    v = torch.randn(theta.numel(), generator=torch.Generator().manual_seed(4), dtype=DT)
    grads = []
    for i in ids:   # per-sample gradients one by one with plain autograd
        th = theta.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(problem.per_sample_losses(th, i.view(1)).sum(), th)
        grads.append(g)
    g = torch.stack(grads)
    fisher = g.T @ (g @ v) / g.shape[0] + problem.l2 * v
    assert torch.allclose(EmpiricalFisherHVP(problem)(theta, ids, v), fisher, atol=1e-12)
    mean = g.mean(0)
    assert torch.allclose(BatchMeanFisherHVP(problem)(theta, ids, v), mean * (mean @ v) + problem.l2 * v,
                          atol=1e-12)
    with pytest.raises(ValueError):
        make_hvp(problem, "diag")


# ---------------------------------------------------------------------------
# 5. noise calibration
# ---------------------------------------------------------------------------
def test_noise_scales_closed_forms():
    # Δ̄ = 0.5, ε = 1, δ = 1e-5: σ_∥ = 2·0.5/1·√(2 ln 250000) = √(2·12.429216…) = 4.98582…
    sp, sq = subspace_noise_scales(0.5, 1.0, 1e-5, 0.1)
    assert sp == pytest.approx(4.985823, rel=1e-6)
    assert sq == pytest.approx(0.4985823, rel=1e-6)
    # Δ̄ = 2, ε = 4, δ = 1e-3: σ_∥ = 1·√(2 ln 2500) = √(2·7.824046) = 3.955767…
    assert subspace_noise_scales(2.0, 4.0, 1e-3, 1.0) == pytest.approx((3.955767, 3.955767), rel=1e-6)
    # isotropic: σ = Δ̄/ε·√(2 ln(1.25/δ)); Δ̄ = 1, ε = 0.5, δ = 1e-5 → 2·√(2·11.736069) = 9.689611…
    assert isotropic_noise_scale(1.0, 0.5, 1e-5) == pytest.approx(9.689611, rel=1e-6)
    for bad in [dict(sensitivity=None), dict(sensitivity=0.0), dict(epsilon=0.0), dict(delta=1.0), dict(beta=0.0),
                dict(beta=1.5)]:
        kwargs = dict(sensitivity=1.0, epsilon=1.0, delta=1e-5, beta=0.1) | bad
        with pytest.raises(ValueError):
            subspace_noise_scales(**kwargs)


def test_subspace_noise_empirical_variances():
    p, k, n = 40, 4, 20000
    basis = random_basis(p, k, seed=7, dtype=DT)
    gen = torch.Generator().manual_seed(0)
    sp, sq = subspace_noise_scales(0.3, 1.0, 1e-5, 0.2)
    draws = sample_subspace_noise(basis, sp, sq, num_samples=n, generator=gen)     # (n, p)
    inside = draws @ basis                                  # Qᵀξ: (n, k)
    outside = draws - inside @ basis.T                      # (I − QQᵀ)ξ: (n, p)
    assert inside.var(0).div(sp**2).sub(1).abs().max() < 0.05
    # (I − QQᵀ) has trace p − k: per-coordinate variance over the complement
    per_coord = outside.pow(2).sum(1).mean() / (p - k)
    assert abs(float(per_coord) / sq**2 - 1) < 0.05
    # β = 1 is isotropic noise: covariance σ² I
    sp1, sq1 = subspace_noise_scales(0.3, 1.0, 1e-5, 1.0)
    assert sp1 == sq1
    iso = sample_subspace_noise(basis, sp1, sq1, num_samples=n, generator=gen)
    cov = torch.cov(iso.T) / sp1**2
    assert (cov - torch.eye(p, dtype=DT)).abs().max() < 0.06
    # add_subspace_noise adds one such draw: same generator state, same noise
    theta = torch.linspace(-1, 1, p, dtype=DT)
    release = add_subspace_noise(theta, basis, sensitivity=0.3, epsilon=1.0, delta=1e-5, beta=0.2,
                                 generator=torch.Generator().manual_seed(9))
    again = sample_subspace_noise(basis, sp, sq, generator=torch.Generator().manual_seed(9))[0]
    assert torch.allclose(release.params - theta, again, atol=1e-15)
    assert (release.sigma_parallel, release.sigma_perp) == (sp, sq)


def test_noise_refuses_without_sensitivity_and_checks_basis():
    theta = torch.zeros(6, dtype=DT)
    with pytest.raises(ValueError, match="sensitivity"):
        add_subspace_noise(theta, random_basis(6, 2, dtype=DT), sensitivity=None, epsilon=1, delta=1e-5, beta=0.1)
    with pytest.raises(ValueError, match="orthonormal"):
        add_subspace_noise(theta, torch.ones(6, 2, dtype=DT), sensitivity=1, epsilon=1, delta=1e-5, beta=0.1)
    with pytest.raises(ValueError, match="sensitivity"):
        add_isotropic_noise(theta, sensitivity=None, epsilon=1.0, delta=1e-5)


# ---------------------------------------------------------------------------
# 6. the exact Gaussian privacy curve
# ---------------------------------------------------------------------------
def _delta_by_integration(mu, eps):
    """δ(ε) = E_{Z~N(μ²/2, μ²)}[(1 − e^{ε − Z})₊], the privacy-loss form (independent of Balle–Wang)."""
    loc, scale = mu**2 / 2, mu
    f = lambda z: (1 - math.exp(eps - z)) * stats.norm.pdf(z, loc, scale)  # noqa: E731
    value, _ = integrate.quad(f, eps, loc + 40 * scale, epsabs=1e-15, epsrel=1e-10, limit=200)
    return value


@pytest.mark.parametrize("mu,eps", [(0.5, 0.1), (1.0, 0.5), (1.0, 2.0), (2.0, 1.0), (3.0, 4.0)])
def test_gaussian_delta_matches_privacy_loss_integral(mu, eps):
    assert gaussian_delta(mu, eps) == pytest.approx(_delta_by_integration(mu, eps), rel=1e-7, abs=1e-15)
    assert gaussian_epsilon(mu, gaussian_delta(mu, eps)) == pytest.approx(eps, rel=1e-8)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_calibrated_noise_meets_the_exact_curve(epsilon, delta):
    sens, beta = 0.7, 0.05
    # isotropic: μ = Δ̄/σ for the worst shift ‖r‖ = Δ̄
    assert gaussian_delta(sens / isotropic_noise_scale(sens, epsilon, delta), epsilon) <= delta
    # subspace: the worst shift allowed by the assumptions, ‖Πr‖ = Δ̄ and ‖(I−Π)r‖ = βΔ̄
    basis = random_basis(12, 3, seed=1, dtype=DT)
    sp, sq = subspace_noise_scales(sens, epsilon, delta, beta)
    inside = basis[:, 0] * sens
    ortho = torch.randn(12, generator=torch.Generator().manual_seed(2), dtype=DT)
    ortho = ortho - basis @ (basis.T @ ortho)
    r = inside + ortho / ortho.norm() * beta * sens
    mu = mahalanobis_shift(r, basis, sp, sq)
    assert mu == pytest.approx(math.sqrt(2) * sens / sp, rel=1e-12)
    assert mu <= epsilon / math.sqrt(4 * math.log(2.5 / delta)) * (1 + 1e-12)
    assert gaussian_delta(mu, epsilon) <= delta
    release = add_subspace_noise(torch.zeros(12, dtype=DT), basis, sensitivity=sens, epsilon=epsilon, delta=delta,
                                 beta=beta)
    assert release.certificate.mu == pytest.approx(mu, rel=1e-12)


# ---------------------------------------------------------------------------
# 7. RDP accountant
# ---------------------------------------------------------------------------
def _renyi_by_integration(alpha, mu):
    """D_α(N(μ,1) ‖ N(0,1)) = 1/(α−1)·log ∫ p^α q^{1−α}, by quadrature."""
    def f(x):
        return math.exp(alpha * stats.norm.logpdf(x, mu, 1) + (1 - alpha) * stats.norm.logpdf(x, 0, 1))

    peak = alpha * mu    # the integrand is a Gaussian bump centred at αμ
    value, _ = integrate.quad(f, peak - 40, peak + 40, points=[peak], limit=200, epsrel=1e-12)
    return math.log(value) / (alpha - 1)


def test_accountant_matches_independent_rdp():
    mus = [0.3, 0.1, 0.25]
    orders = [1.5, 2.0, 3.0, 8.0, 32.0]
    acc = RDPAccountant(orders)
    for mu in mus:
        acc.add_gaussian(mu)
    expected = [sum(_renyi_by_integration(a, mu) for mu in mus) for a in orders]
    assert np.allclose(acc.rdp, expected, rtol=1e-7)
    # classic conversion on a dense grid → the continuous optimum ρ + 2√(ρ ln(1/δ)), ρ = Σμ²/2
    dense = RDPAccountant(np.linspace(1.01, 400, 200000))
    for mu in mus:
        dense.add_gaussian(mu)
    rho, delta = sum(m * m for m in mus) / 2, 1e-5
    eps_classic, _ = dense.epsilon(delta, conversion="classic")
    assert eps_classic == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-6)
    # improved conversion (Opacus' formula), computed by hand at each order, minimised
    a = dense.orders
    by_hand = dense.rdp + np.log((a - 1) / a) - (np.log(delta) + np.log(a)) / (a - 1)
    assert dense.epsilon(delta)[0] == pytest.approx(float(by_hand.min()), rel=1e-12)
    # RDP is an upper bound on the exact composed Gaussian; the improved conversion is tighter than classic
    exact = dense.exact_epsilon(delta)
    assert exact == pytest.approx(gaussian_epsilon(math.sqrt(2 * rho), delta), rel=1e-9)
    assert exact <= dense.epsilon(delta)[0] <= eps_classic


def test_accountant_grows_as_sqrt_m_unlike_the_draft_formula():
    mu = 1.0 / math.sqrt(4 * math.log(2.5 / 1e-5))    # one ε = 1 request
    eps = {}
    for m in (10, 40):
        acc = RDPAccountant()
        acc.add_gaussian(mu, count=m)
        eps[m] = acc.epsilon(1e-5)[0]
    assert eps[40] / eps[10] == pytest.approx(2.0, rel=0.15)   # √(40/10) = 2, not 4
    with pytest.raises(ValueError):
        RDPAccountant([0.5, 2.0])


# ---------------------------------------------------------------------------
# 8. recorder
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("checkpoint_every", [None, 1, 5])
def test_recorder_round_trip(checkpoint_every):
    problem = _mlp_problem(l2=0.001)
    rec, saved = _train(problem, _single_pass(30, 3) * 3, lr=0.3, checkpoint_every=checkpoint_every,
                        snapshots=True)
    for s, theta in enumerate(saved):
        assert (rec.params_at(s) - theta).abs().max() < 1e-12
    assert list(rec.iter_params(0, rec.num_steps))[-1].sub(saved[-1]).abs().max() < 1e-12
    # rebuilt from an earlier step τ' = 12 and its parameters (a request served mid-training)
    for s in (0, 5, 12):
        assert (rec.params_at(s, saved[12], now_step=12) - saved[s]).abs().max() < 1e-12
    for s in (0, 7, rec.num_steps - 1):
        assert (rec.update(s) - (saved[s + 1] - saved[s])).abs().max() < 1e-12
    p, t = saved[0].numel(), rec.num_steps
    ids_bytes = sum(r.batch_ids.numel() * 8 for r in rec.steps)
    stored = t if checkpoint_every is None else math.ceil(t / checkpoint_every)
    assert rec.memory_bytes() == (stored + 1) * p * 8 + ids_bytes


def test_recorder_refuses_adam_momentum_and_silent_changes():
    problem = _least_squares()
    model = problem.model
    with pytest.raises(ValueError, match="plain SGD"):
        TrajectoryRecorder(model, torch.optim.Adam(model.parameters()))
    with pytest.raises(ValueError, match="momentum"):
        TrajectoryRecorder(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    rec = TrajectoryRecorder(model, torch.optim.Adam(model.parameters()), allow_approximation=True)
    assert rec.approximate
    with pytest.raises(ValueError, match="certificate"):
        OnlineUnlearner(problem, rec, hvp=ExactHVP(problem), window=3,
                        noise=NoiseSpec(sensitivity=1.0, epsilon=1.0, delta=1e-5, mode="isotropic"))
    rec = TrajectoryRecorder(model, torch.optim.SGD(model.parameters(), lr=0.1))
    with torch.no_grad():
        model.weight.add_(1.0)
    with pytest.raises(ValueError, match="record_edit"):
        with rec.step([0, 1]):
            pass


# ---------------------------------------------------------------------------
# online unlearner and baselines
# ---------------------------------------------------------------------------
def test_online_unlearner_on_least_squares_is_exact_and_requeues():
    """Deletion during training: the served model equals replay without the affected batches,
    and the benign samples of the removed batches are learned again, once."""
    problem = _least_squares(n=200, l2=0.01)
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=problem.l2)
    rec = TrajectoryRecorder(model, opt)
    pool = DataPool(torch.arange(200), 10, epochs=1, generator=torch.Generator().manual_seed(0))
    unlearner = OnlineUnlearner(problem, rec, hvp=ExactHVP(problem), window=1000, pool=pool)
    served_ids, step = [], 0
    while (ids := pool.next_batch()) is not None:
        if step == 15:
            forget = torch.cat([rec.batch_ids(2)[:2], rec.batch_ids(9)[:1]])
            unlearner.request(forget)
            (served,) = unlearner.serve()
        with rec.step(ids):
            loss = problem.loss(model(problem.inputs[ids]), problem.targets[ids]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        served_ids.append(ids)
        step += 1
    assert served.deleted_steps == (2, 9) and served.windows == (12, 5) and served.now_step == 15
    # replay the first 15 steps without the deleted batches; step 15 of the recorder is the edit
    expected = _replay(problem, rec, {2, 9}, 15)
    assert rec.steps[15].kind == "edit"
    assert torch.allclose(rec.params_at(16), expected, atol=1e-10, rtol=0)
    # the 17 benign samples come back exactly once after τ; the forgotten ones never do
    benign = torch.cat([rec.batch_ids(2), rec.batch_ids(9)])
    benign = benign[~torch.isin(benign, forget)]
    assert sorted(served.requeued.tolist()) == sorted(benign.tolist())
    later = torch.cat(served_ids[15:])
    assert not torch.isin(forget, later).any()
    assert int(torch.isin(later, benign).sum()) == benign.numel() == 17
    assert step == 20 + 2   # 20 batches, then 17 requeued samples fill two more


def test_online_unlearner_noise_and_ledger():
    problem = _least_squares(n=100)
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    rec = TrajectoryRecorder(model, opt)
    basis = random_basis(problem.num_params, 3, dtype=DT)
    spec = NoiseSpec(sensitivity=0.05, epsilon=1.0, delta=1e-5, basis=basis, beta=0.5)
    unlearner = OnlineUnlearner(problem, rec, hvp=ExactHVP(problem), window=5, noise=spec,
                                generator=torch.Generator().manual_seed(0))
    for ids in _single_pass(100, 10):
        with rec.step(ids):
            opt.zero_grad()
            problem.loss(model(problem.inputs[ids]), problem.targets[ids]).mean().backward()
            opt.step()
    eps = []
    for request in ([1], [15], [33]):
        unlearner.request(request)
        (served,) = unlearner.serve()
        eps.append(served.epsilon_spent)
        assert served.certificate is not None and served.certificate.epsilon == 1.0
    assert eps[0] < eps[1] < eps[2]
    mu = spec.epsilon / math.sqrt(4 * math.log(2.5 / spec.delta))
    check = RDPAccountant()
    check.add_gaussian(mu, count=3)
    assert eps[2] == pytest.approx(check.epsilon(spec.delta)[0], rel=1e-9)
    assert unlearner.accountant.exact_epsilon(spec.delta) < eps[2]


def test_baselines_share_a_signature_and_cost_accounting():
    problem = _least_squares(n=200, l2=0.01)
    rec = _train(problem, _single_pass(200, 10))
    theta, now, forget = rec.current_params(), rec.num_steps, torch.arange(40, 50)   # batch of step 4
    results = {
        "lmcleaner": lmcleaner_unlearn(problem, rec, theta, forget, now, window=3, hvp=ExactHVP(problem)),
        "replay": replay_counterfactual(problem, rec, theta, forget, now),
        "retrain": retrain_from_scratch(problem, rec, theta, forget, now),
        "ga": gradient_ascent_unlearn(problem, rec, theta, forget, now, steps=6, lr=0.05),
        "neggrad": neggrad_plus_unlearn(problem, rec, theta, forget, now, steps=3, lr=0.05),
        "noop": no_op(problem, rec, theta, forget, now),
    }
    assert results["lmcleaner"].grad_equivalents == 6.0 and results["lmcleaner"].deleted_steps == (4,)
    assert results["replay"].grad_equivalents == now - 4 - 1
    assert results["retrain"].grad_equivalents == now - 1
    assert results["ga"].grad_equivalents == 6.0 and results["neggrad"].grad_equivalents == 6.0
    assert torch.equal(results["noop"].params, theta)
    # a larger window moves LMCleaner toward the exact answer on this quadratic
    err3 = (results["lmcleaner"].params - results["replay"].params).norm()
    full = lmcleaner_unlearn(problem, rec, theta, forget, now, window=now, hvp=ExactHVP(problem))
    assert (full.params - results["replay"].params).norm() < 1e-10 < err3
    with pytest.raises(ValueError, match="nothing to delete"):
        lmcleaner_unlearn(problem, rec, theta, [10_000], now, window=3, hvp=ExactHVP(problem))


def test_lanczos_matches_eigh():
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(30, 30, generator=gen, dtype=DT)
    a = a @ a.T + torch.diag(torch.linspace(0, 50, 30, dtype=DT))
    values, vectors = lanczos_top_eigenvectors(lambda v: a @ v, 30, 4, num_iters=30)
    exact_values, exact_vectors = torch.linalg.eigh(a)
    assert torch.allclose(values, exact_values.flip(0)[:4], rtol=1e-9)
    overlap = (vectors.T @ exact_vectors.flip(1)[:, :4]).abs()
    assert torch.allclose(overlap.diagonal(), torch.ones(4, dtype=DT), atol=1e-8)


def test_hessian_basis_on_least_squares():
    """The Lanczos basis spans the top eigenvectors of the explicit Hessian XᵀX/n ⊗ I + λI."""
    from icml26.papers.lmcleaner import hessian_basis

    problem = _least_squares(n=80, d=5, k=1, l2=0.1)
    ids = torch.arange(80)
    q = hessian_basis(problem, problem.flat_params(), ids, 2)
    xa = torch.cat([problem.inputs, torch.ones(80, 1, dtype=DT)], 1)
    _, vectors = torch.linalg.eigh(xa.T @ xa / 80 + 0.1 * torch.eye(6, dtype=DT))
    top = vectors[:, -2:]
    assert torch.allclose(top @ top.T, q @ q.T, atol=1e-8)      # same projector


def test_online_unlearner_mid_training_request_counts():
    """The README's scenario with numbers checked: train, record, delete mid-training, requeue."""
    torch.manual_seed(0)
    x, y = torch.randn(1000, 20), torch.randint(0, 10, (1000,))
    model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 10))
    problem = SupervisedProblem(model, lambda out, t: F.cross_entropy(out, t, reduction="none"), x, y, l2=1e-4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-4)
    recorder = TrajectoryRecorder(model, optimizer)
    pool = DataPool(torch.arange(1000), batch_size=20, epochs=1, generator=torch.Generator().manual_seed(0))
    unlearner = OnlineUnlearner(problem, recorder, hvp=make_hvp(problem, "exact"), window=10, pool=pool)
    step = 0
    while (ids := pool.next_batch()) is not None:
        if step == 30:
            unlearner.request([int(recorder.batch_ids(20)[0])])   # delete a sample seen at step 20
            served = unlearner.serve()
        with recorder.step(ids):
            loss = F.cross_entropy(model(x[ids]), y[ids])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        step += 1
    assert served[0].deleted_steps == (20,) and served[0].windows == (9,) and served[0].hvp_calls == 9
    assert served[0].requeued.numel() == 19
    assert recorder.steps[20].removed and recorder.steps[30].kind == "edit"
    assert step == 50 + 1   # 50 batches plus one of the 19 requeued samples


# ---------------------------------------------------------------------------
# further closed forms and code-path equivalences
# ---------------------------------------------------------------------------
def test_concentration_and_mahalanobis_shift_closed_forms():
    """β̂ = ‖(I−Π)r‖/Δ̄ and μ = √(‖Πr‖²/σ_∥² + ‖(I−Π)r‖²/σ_⊥²) on a residual built by hand."""
    from icml26.papers.lmcleaner import concentration

    basis = random_basis(10, 3, seed=4, dtype=DT)
    inside = basis @ torch.tensor([1.0, -2.0, 0.5], dtype=DT)          # ‖Πr‖² = 1 + 4 + 0.25 = 5.25
    ortho = torch.randn(10, generator=torch.Generator().manual_seed(6), dtype=DT)
    ortho = ortho - basis @ (basis.T @ ortho)
    ortho = ortho / ortho.norm() * 0.3                                 # ‖(I−Π)r‖ = 0.3
    r = inside + ortho
    assert concentration(inside, basis, 2.0) == pytest.approx(0.0, abs=1e-12)
    assert concentration(r, basis, 2.0) == pytest.approx(0.15, rel=1e-12)
    assert mahalanobis_shift(r, basis, 4.0, 0.5) == pytest.approx(math.sqrt(5.25 / 16 + 0.09 / 0.25), rel=1e-12)


def test_isotropic_noise_variance_and_certificate():
    """One draw over p = 40 000 coordinates has per-coordinate variance σ² (within 5 %), and
    the classical calibration σ = Δ̄/ε·√(2 ln(1.25/δ)) meets the exact curve with room to spare."""
    sens, eps, delta = 0.4, 1.0, 1e-5
    theta = torch.full((40_000,), 3.0, dtype=DT)
    release = add_isotropic_noise(theta, sensitivity=sens, epsilon=eps, delta=delta,
                                  generator=torch.Generator().manual_seed(1))
    sigma = isotropic_noise_scale(sens, eps, delta)
    noise = release.params - theta
    assert release.sigma_parallel == release.sigma_perp == sigma
    assert abs(float(noise.var()) / sigma**2 - 1) < 0.05
    assert abs(float(noise.mean())) < 5 * sigma / math.sqrt(noise.numel())
    assert release.certificate.mu == pytest.approx(sens / sigma, rel=1e-12)
    assert gaussian_delta(release.certificate.mu, eps) <= delta
    assert gaussian_epsilon(release.certificate.mu, delta) < eps      # the classical bound is loose


class _DampedExact:
    """H·v + λ·v through the plain backend: the damping written as a different HVP."""

    grad_equivalents = 2.0

    def __init__(self, problem, damping):
        self.inner, self.damping = ExactHVP(problem), damping

    def __call__(self, params, batch_ids, vector):
        return self.inner(params, batch_ids, vector) + self.damping * vector


def test_damping_equals_a_shifted_hessian():
    """v ← v − η(H + λ_damp I)v (the authors' damping) is the same as propagating with H + λ_damp I."""
    problem = _mlp_problem(l2=0.0)
    rec = _train(problem, _single_pass(30, 3) * 2, lr=0.4)
    theta, now, t_z = rec.current_params(), rec.num_steps, 3
    damped = truncated_correction(rec, theta, t_z, now, window=6, hvp=ExactHVP(problem), damping=0.05)
    shifted = truncated_correction(rec, theta, t_z, now, window=6, hvp=_DampedExact(problem, 0.05))
    plain = truncated_correction(rec, theta, t_z, now, window=6, hvp=ExactHVP(problem))
    assert torch.allclose(damped.vector, shifted.vector, atol=1e-13)
    assert (damped.vector - plain.vector).norm() > 1e-4
    with pytest.raises(ValueError, match="damping"):
        truncated_correction(rec, theta, t_z, now, window=6, hvp=ExactHVP(problem), damping=-0.1)


def test_data_pool_requeue_and_remove_across_epochs():
    """Requeued ids join the current epoch once (not if still pending); removed ids never return."""
    pool = DataPool(torch.arange(10), batch_size=4, epochs=2)      # no generator: no shuffling
    assert pool.next_batch().tolist() == [0, 1, 2, 3]
    pool.requeue([0, 1, 5])                                         # 5 is still pending: not doubled
    pool.remove([2, 7])
    assert pool.remaining == 7                                      # 4, 5, 6, 8, 9 + 0, 1
    epoch1 = [pool.next_batch().tolist() for _ in range(2)]
    assert epoch1 == [[4, 5, 6, 8], [9, 0, 1]]
    epoch2 = []
    while (batch := pool.next_batch()) is not None:
        epoch2.append(batch.tolist())
    assert epoch2 == [[0, 1, 3, 4], [5, 6, 8, 9]] and pool.epoch == 2


def test_noise_spec_refuses_a_missing_bound_before_serving():
    basis = random_basis(14, 2, dtype=DT)
    with pytest.raises(ValueError, match="sensitivity"):
        NoiseSpec(sensitivity=None, epsilon=1.0, delta=1e-5, basis=basis)
    with pytest.raises(ValueError, match="beta"):
        NoiseSpec(sensitivity=0.1, epsilon=1.0, delta=1e-5, basis=basis, beta=0.0)
    with pytest.raises(ValueError, match="basis"):
        NoiseSpec(sensitivity=0.1, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        NoiseSpec(sensitivity=0.1, epsilon=0.0, delta=1e-5, mode="isotropic")


def test_adam_opt_in_records_the_real_updates():
    """With allow_approximation=True an Adam run is recorded as it happened: K = 0 removes Adam's u[t_z]."""
    problem = _least_squares(n=60)
    model = problem.model
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    rec = TrajectoryRecorder(model, opt, allow_approximation=True)
    saved = []
    for ids in _single_pass(60, 10):
        saved.append(problem.flat_params())
        with rec.step(ids):
            opt.zero_grad()
            problem.loss(model(problem.inputs[ids]), problem.targets[ids]).mean().backward()
            opt.step()
    saved.append(problem.flat_params())
    corr = truncated_correction(rec, rec.current_params(), 2, rec.num_steps, window=0, hvp=ExactHVP(problem))
    assert torch.equal(corr.vector, saved[3] - saved[2])
    assert (rec.params_at(1) - saved[1]).abs().max() < 1e-12
    with pytest.raises(ValueError, match="checkpoint"):
        TrajectoryRecorder(model, opt, checkpoint_every=2, problem=problem, allow_approximation=True)


@pytest.mark.parametrize("bad", [dict(headline_window=3), dict(lags=(1,)), dict(models=("cnn",)),
                                 dict(windows=(1, 10)), dict(clip_norm=0.0), dict(digits_request_epoch=5),
                                 dict(noise_calibration_spacing=2000)])
def test_experiment_config_rejects_bad_fields(bad):
    from icml26.papers.lmcleaner.experiment import Config

    Config.quick()
    Config.tiny()
    with pytest.raises(ValueError):
        Config(**bad)


# ---------------------------------------------------------------------------
# issues #17 / #18: the pluggable remover, renames, checked input
# ---------------------------------------------------------------------------
def test_replay_remover_serves_the_exact_counterfactual_with_the_same_bookkeeping():
    """Two code paths, one answer: OnlineUnlearner with ReplayRemover equals replay_counterfactual,
    and with TruncatedRemover (K ≥ L − 1, least squares) the same θ again."""
    results = {}
    for name in ("replay", "truncated"):
        problem = _least_squares(l2=0.01)
        rec = _train(problem, _single_pass(120, 10))
        pool = DataPool(torch.arange(120), 10, generator=torch.Generator().manual_seed(0))
        remover = ReplayRemover(problem) if name == "replay" else TruncatedRemover(ExactHVP(problem), 100)
        unlearner = OnlineUnlearner(problem, rec, remover=remover, pool=pool)
        theta_before = rec.current_params()
        expected = replay_counterfactual(problem, rec, theta_before, [35, 71], rec.num_steps)
        unlearner.request([35, 71])
        served = unlearner.serve()[0]
        assert served.deleted_steps == (3, 7)
        assert served.requeued.numel() == 18                 # the other samples of the two batches
        assert rec.steps[3].removed and rec.steps[7].removed and rec.steps[-1].kind == "edit"
        assert torch.allclose(rec.current_params(), expected.params, atol=1e-10, rtol=0)
        results[name] = served
    # replay runs from t_z = 3 to τ = 12: 9 steps, 2 of them deleted → 7 gradients
    assert results["replay"].grad_equivalents == 7
    assert results["replay"].hvp_calls == 0 and results["truncated"].hvp_calls > 0


def test_baselines_table_names_the_procedures():
    assert BASELINES["gradient_ascent"] is gradient_ascent_unlearn
    assert BASELINES["neggrad_plus"] is neggrad_plus_unlearn
    assert set(BASELINES) == {"retrain", "replay", "gradient_ascent", "neggrad_plus", "no_op"}


def test_negative_ids_no_longer_wrap_around():
    problem = _least_squares()
    with pytest.raises(ValueError, match="sample ids"):
        problem.batch(torch.tensor([-1]))
    rec = _train(problem, _single_pass(40, 10))
    with pytest.raises(ValueError, match="negative id"):
        rec.steps_using([-1])


# ---------------------------------------------------------------------------
# analysis (hand computations)
# ---------------------------------------------------------------------------
def test_analysis_by_hand():
    now, ideal = torch.tensor([3.0, 4.0]), torch.zeros(2)
    # ‖(0.6, 0.8) − 0‖ / ‖(3, 4) − 0‖ = 1 / 5
    assert relative_residual(torch.tensor([0.6, 0.8]), ideal, now) == pytest.approx(0.2)
    assert relative_residual(now, ideal, now) == 1.0                   # no-op scores 1
    assert lag_groups([1000, 50, 200]) == (50, [200], 1000)
    assert lag_groups([5, 20]) == (5, [], 20)
    windows = [0, 1, 2, 5, 10, 20, 50, 100]
    assert decay_window(windows, 200) == 100 and decay_window(windows, 20) == 10 and decay_window([0, 5], 3) == 0
    curve = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2]
    assert decay_ratio(curve, windows, 200) == pytest.approx(0.2 / 0.8)
    assert max_abs_gap([0.50, 0.61], [0.52, 0.55]) == pytest.approx(0.06)
    # lag 1: max(0.9/0.8, 100·(0.95 − 0.95)) = 1.125; lag 2: max(0.4/0.8, 100·(0.95 − 0.93)) = 2 → min 1.125
    assert ga_equal_compute_score([0.9, 0.4], [0.95, 0.95], [0.95, 0.93]) == pytest.approx(1.125)
    assert accuracy_drop_points(0.95, 0.20) == pytest.approx(75.0)
    assert ratio(2040.0, 20.0) == 102.0 and math.isnan(ratio(1.0, 0.0))
    # μ = ε / √(4 ln(2.5/δ)); ε = 1, δ = 2.5e-4: √(4 ln 1e4) = √(16 ln 10)
    assert per_request_mu(1.0, 2.5e-4) == pytest.approx(1 / math.sqrt(16 * math.log(10)))
    # M = 4, ε = 1, δ = e^-2: 4 + √(2 · 2 · 4) = 8
    assert draft_composition_epsilon(4, 1.0, math.exp(-2)) == pytest.approx(8.0)


# ---------------------------------------------------------------------------
# noise scales (hypothesis)
# ---------------------------------------------------------------------------
_sens = st.floats(1e-6, 1e3)
_eps = st.floats(0.01, 1.0)
_delta = st.floats(1e-12, 0.5)


@settings(max_examples=200, deadline=None)
@given(sensitivity=_sens, epsilon=_eps, delta=_delta, beta=st.floats(1e-4, 1.0))
def test_property_noise_scales(sensitivity, epsilon, delta, beta):
    sigma = isotropic_noise_scale(sensitivity, epsilon, delta)
    sigma_par, sigma_perp = subspace_noise_scales(sensitivity, epsilon, delta, beta)
    # the closed forms: σ = Δ̄/ε √(2 ln(1.25/δ)); σ_∥ = 2Δ̄/ε √(2 ln(2.5/δ)); σ_⊥ = β σ_∥
    assert sigma == pytest.approx(sensitivity / epsilon * math.sqrt(2 * math.log(1.25 / delta)), rel=1e-12)
    assert sigma_par == pytest.approx(2 * sensitivity / epsilon * math.sqrt(2 * math.log(2.5 / delta)), rel=1e-12)
    assert sigma_perp == pytest.approx(beta * sigma_par, rel=1e-12)
    # linear in Δ̄ and in 1/ε
    assert isotropic_noise_scale(3 * sensitivity, epsilon, delta) == pytest.approx(3 * sigma, rel=1e-12)
    assert isotropic_noise_scale(sensitivity, epsilon / 2, delta) == pytest.approx(2 * sigma, rel=1e-12)
    # the subspace budget is split (ε/2, δ/2): σ_∥ is the isotropic σ at (ε/2, δ/2) — up to 1.25 vs 2.5
    assert sigma_par >= sigma


@settings(max_examples=200, deadline=None)
@given(sensitivity=_sens, epsilon=_eps, delta=_delta, beta=st.floats(1e-4, 1.0))
def test_property_calibrated_noise_meets_its_budget_on_the_exact_curve(sensitivity, epsilon, delta, beta):
    """For ε ≤ 1 (the classical Gaussian mechanism's domain) the calibrated shifts satisfy the
    exact privacy curve of Balle & Wang: δ(ε) ≤ δ (isotropic: μ = Δ̄/σ; subspace: the certificate's μ)."""
    mu_iso = sensitivity / isotropic_noise_scale(sensitivity, epsilon, delta)
    assert gaussian_delta(mu_iso, epsilon) <= delta * (1 + 1e-9)
    sigma_par, sigma_perp = subspace_noise_scales(sensitivity, epsilon, delta, beta)
    # μ² = Δ̄²/σ_∥² + (βΔ̄)²/σ_⊥² = 2 Δ̄²/σ_∥²
    mu_sub = math.sqrt(sensitivity**2 / sigma_par**2 + (beta * sensitivity) ** 2 / sigma_perp**2)
    assert mu_sub == pytest.approx(math.sqrt(2) * sensitivity / sigma_par, rel=1e-12)
    assert gaussian_delta(mu_sub, epsilon) <= delta * (1 + 1e-9)


# ---------------------------------------------------------------------------
# issue #28: clipped training, the tail correction, unit costs and the cost model, bases
# ---------------------------------------------------------------------------
from icml26.papers.lmcleaner import (  # noqa: E402
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
from icml26.papers.lmcleaner.analysis import max_relative_error  # noqa: E402


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
