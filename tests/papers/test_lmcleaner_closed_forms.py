"""LMCleaner: further closed forms and code-path equivalences (concentration and Mahalanobis shift,
isotropic noise, damping as a shifted Hessian, the data pool, Adam opt-in, config checks) and the
analysis helpers by hand.
"""

from __future__ import annotations

import math

import pytest
import torch

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
    DataPool,
    ExactHVP,
    NoiseSpec,
    TrajectoryRecorder,
    add_isotropic_noise,
    gaussian_delta,
    gaussian_epsilon,
    isotropic_noise_scale,
    mahalanobis_shift,
    random_basis,
    truncated_correction,
)
from tests.papers._lmcleaner_helpers import DT, _least_squares, _mlp_problem, _single_pass, _train


# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


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
