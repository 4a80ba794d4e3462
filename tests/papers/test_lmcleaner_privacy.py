"""LMCleaner's privacy side: noise scales in closed form, the exact Gaussian privacy curve against
the privacy-loss integral, the RDP accountant against quadrature, and property tests of the noise scales.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.lmcleaner import (
    RDPAccountant,
    add_isotropic_noise,
    add_subspace_noise,
    gaussian_delta,
    gaussian_epsilon,
    isotropic_noise_scale,
    mahalanobis_shift,
    random_basis,
    sample_subspace_noise,
    subspace_noise_scales,
)
from tests.papers._lmcleaner_helpers import DT


# torch's forward-mode AD loads its decompositions through torch.jit once per process
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


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
