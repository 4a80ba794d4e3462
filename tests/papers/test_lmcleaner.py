"""Tests of LMCleaner (icml26.papers.lmcleaner) against closed forms and independent computations:
quadratic exactness against replay, the K* bookkeeping, the truncation bound on ridge regression,
the HVP backends against explicit Jacobians and autograd, and the training recorder.
"""

from __future__ import annotations

import math

import pytest
import torch

from icml26.papers.lmcleaner import (
    BatchMeanFisherHVP,
    EmpiricalFisherHVP,
    ExactHVP,
    GaussNewtonHVP,
    NoiseSpec,
    OnlineUnlearner,
    TrajectoryRecorder,
    correction_path,
    effective_window,
    make_hvp,
    replay_counterfactual,
    retrain_from_scratch,
    truncated_correction,
)
from tests.papers._lmcleaner_helpers import DT, _least_squares, _mlp_problem, _replay, _single_pass, _train


# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


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
