"""ou_steady: generator, identifiability oracle, both estimators, baseline, prediction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from icml26.papers.ou_steady import (
    BASELINES,
    Intervention,
    OUProcess,
    Regime,
    condensation_order,
    fit_lsq,
    fit_observational_lyapunov,
    fit_recursive,
    fit_strength,
    identifiability_nullity,
    predict,
    random_scc_system,
    scale_aligned_error,
    moment_system,
)


def _regimes(process, interventions, n_samples=None, rng=None):
    return [(process if iv is None else process.intervene(iv)).regime(n_samples, rng) for iv in interventions]


def _system(seed=0, sizes=(3, 3, 2), **kw):
    rng = np.random.default_rng(seed)
    process, support, components = random_scc_system(rng, sizes, **kw)
    interventions = [None] + [Intervention(comp[0], "soft_drift", 0.5 + k) for k, comp in enumerate(components)]
    return process, support, components, interventions


# --------------------------------------------------------------------------- generator
@pytest.mark.parametrize("kind", ["soft_drift", "noise", "knockout", "shift"])
def test_moments_satisfy_the_stationary_equations(kind):
    process, *_ = _system(1)
    proc = process.intervene(Intervention(4, kind, 1.3))
    m, sigma = proc.stationary_mean(), proc.stationary_cov()
    assert np.abs(proc.drift @ m + proc.const).max() < 1e-10
    lyap = proc.drift @ sigma + sigma @ proc.drift.T + np.diag(proc.diffusion)
    assert np.abs(lyap).max() < 1e-10
    if kind == "knockout":
        assert abs(m[4]) < 1e-12 and np.abs(sigma[4]).max() < 1e-12
    if kind == "shift":
        assert np.allclose(sigma, process.stationary_cov(), atol=1e-12)


def test_samples_match_moments_within_standard_errors():
    process, *_ = _system(2)
    n = 200_000
    x = process.sample(n, np.random.default_rng(0))
    m, sigma = process.stationary_mean(), process.stationary_cov()
    se_mean = np.sqrt(np.diag(sigma) / n)
    assert np.all(np.abs(x.mean(0) - m) < 4.5 * se_mean)
    # Var of the (i, j) product moment of a Gaussian: Σ_ii Σ_jj + Σ_ij²
    se_cov = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(np.cov(x, rowvar=False) - sigma) < 4.5 * se_cov)


def test_euler_maruyama_agrees_with_lyapunov():
    """Two code paths: simulating the SDE and solving the Lyapunov equation."""
    rng = np.random.default_rng(3)
    process, _, _ = random_scc_system(rng, (3,))
    dt, paths = 2e-3, 4000
    rate = -np.max(np.linalg.eigvals(process.drift).real)
    burn = int(20 / rate / dt)
    x = np.zeros((paths, 3))
    noise = np.sqrt(process.diffusion * dt)
    for _ in range(burn):
        # X ← X + (B X + c) dt + D^{1/2} ΔW
        x = x + (x @ process.drift.T + process.const) * dt + noise * rng.standard_normal((paths, 3))
    sigma = process.stationary_cov()
    rel = np.linalg.norm(np.cov(x, rowvar=False) - sigma) / np.linalg.norm(sigma)
    assert rel < 0.05
    assert np.linalg.norm(x.mean(0) - process.stationary_mean()) < 0.1 * np.linalg.norm(process.stationary_mean()) + 0.05


def test_one_dimensional_closed_form():
    b, c, d = -1.5, 0.6, 0.9
    proc = OUProcess(np.array([[b]]), np.array([c]), np.array([d]))
    # Var = d / (−2b), mean = −c / b
    assert proc.stationary_cov()[0, 0] == pytest.approx(d / (-2 * b), rel=1e-12)
    assert proc.stationary_mean()[0] == pytest.approx(-c / b, rel=1e-12)
    kappa = 0.7
    soft = proc.intervene(Intervention(0, "soft_drift", kappa))
    # Var'/Var = b / (b − κ)
    assert soft.stationary_cov()[0, 0] / proc.stationary_cov()[0, 0] == pytest.approx(b / (b - kappa), rel=1e-12)


def test_one_dimensional_recovery_by_hand():
    """With d normalised to 1: b̂ = −1/(2 Var), ĉ = −b̂ m, κ̂ = 1/(2 Var') − 1/(2 Var)."""
    proc = OUProcess(np.array([[-2.0]]), np.array([1.0]), np.array([3.0]))
    iv = [None, Intervention(0, "soft_drift", 1.0)]
    regimes = _regimes(proc, iv)
    var, var_i, mean = regimes[0].cov[0, 0], regimes[1].cov[0, 0], regimes[0].mean[0]
    for est in (fit_recursive(regimes, iv, np.ones((1, 1), bool)), fit_lsq(regimes, iv)):
        assert est.diffusion[0] == pytest.approx(1.0, rel=1e-10)
        assert est.drift[0, 0] == pytest.approx(-1 / (2 * var), rel=1e-10)
        assert est.const[0] == pytest.approx(-est.drift[0, 0] * mean, rel=1e-10)
        assert est.strengths[1] == pytest.approx(1 / (2 * var_i) - 1 / (2 * var), rel=1e-10)
        # and in the truth's units: scale 1/d = 1/3
        assert est.drift[0, 0] == pytest.approx(-2.0 / 3.0, rel=1e-10)


# --------------------------------------------------------------------------- recovery
def _common_scale(est, proc):
    s = proc.diffusion.sum() / est.diffusion.sum()
    return s, max(np.abs(s * est.drift - proc.drift).max(), np.abs(s * est.const - proc.const).max(),
                  np.abs(s * est.diffusion - proc.diffusion).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_recovery_up_to_one_common_scale(seed):
    process, support, components, iv = _system(seed)
    regimes = _regimes(process, iv)
    for est in (fit_recursive(regimes, iv, support), fit_lsq(regimes, iv), fit_lsq(regimes, iv, support=support)):
        s, worst = _common_scale(est, process)
        assert s > 0 and worst < 1e-8, est.method
        for k, intervention in enumerate(iv[1:], start=1):
            assert s * est.strengths[k] == pytest.approx(intervention.strength, rel=1e-7)
        assert scale_aligned_error(est, process, part="all") < 1e-8


def test_recovery_with_noise_interventions():
    process, support, components, _ = _system(4)
    iv = [None] + [Intervention(comp[-1], "noise", 1.0) for comp in components]
    regimes = _regimes(process, iv)
    for est in (fit_recursive(regimes, iv, support), fit_lsq(regimes, iv)):
        assert _common_scale(est, process)[1] < 1e-8


def test_knockouts_identify_jointly_but_not_component_by_component():
    """A knockout removes its node's equations from the component's own marginal system, so
    the recursive estimator must refuse; the joint least squares still uses the downstream
    cross-covariance equations and recovers the process exactly."""
    process, support, components, _ = _system(4)
    iv = [None] + [Intervention(comp[-1], "knockout") for comp in components]
    regimes = _regimes(process, iv)
    assert identifiability_nullity(regimes, iv, support) == 1
    assert _common_scale(fit_lsq(regimes, iv), process)[1] < 1e-8
    with pytest.raises(ValueError, match="not identified from the marginal"):
        fit_recursive(regimes, iv, support)


def test_residuals_are_scale_invariant_at_the_truth():
    """Multiplying θ by α keeps every residual at zero (residuals are linear in θ)."""
    process, support, _, iv = _system(5)
    for alpha in (0.1, 3.0):
        scaled = OUProcess(alpha * process.drift, alpha * process.const, alpha * process.diffusion)
        for a, b in zip(_regimes(process, iv), _regimes(scaled, [None if v is None else Intervention(v.target, v.kind, alpha * v.strength) for v in iv])):
            assert np.allclose(a.mean, b.mean, atol=1e-10) and np.allclose(a.cov, b.cov, atol=1e-10)


def test_permutation_equivariance():
    process, support, components, iv = _system(6)
    perm = np.random.default_rng(0).permutation(process.n)
    inv = np.argsort(perm)
    permuted = OUProcess(process.drift[np.ix_(perm, perm)], process.const[perm], process.diffusion[perm])
    iv_p = [None if v is None else Intervention(int(inv[v.target]), v.kind, v.strength) for v in iv]
    sup_p = support[np.ix_(perm, perm)]
    for fit in (lambda r, i, s: fit_recursive(r, i, s), lambda r, i, s: fit_lsq(r, i)):
        a = fit(_regimes(process, iv), iv, support)
        b = fit(_regimes(permuted, iv_p), iv_p, sup_p)
        assert np.allclose(a.drift[np.ix_(perm, perm)], b.drift, atol=1e-8)
        assert np.allclose(a.diffusion[perm], b.diffusion, atol=1e-8)


def test_error_shrinks_like_root_n():
    """1-D process, where the estimator is well conditioned: slope of log error vs log N ≈ −1/2."""
    proc = OUProcess(np.array([[-1.0]]), np.array([0.5]), np.array([2.0]))
    iv = [None, Intervention(0, "soft_drift", 1.0)]
    sizes = [1_000, 10_000, 100_000]
    med = []
    for n in sizes:
        errs = [scale_aligned_error(fit_lsq(_regimes(proc, iv, n, np.random.default_rng(s)), iv), proc, part="all")
                for s in range(40)]
        med.append(np.median(errs))
    slope = np.polyfit(np.log(sizes), np.log(med), 1)[0]
    assert med[-1] < med[0] / 5
    assert -0.7 <= slope <= -0.3


# --------------------------------------------------------------------------- oracle
def test_oracle_on_one_dense_component_matches_the_brief():
    """The brief's pilot (n = 4, one dense SCC): 10, 7, 2, 1, 1."""
    rng = np.random.default_rng(1)
    proc, _, _ = random_scc_system(rng, (4,))

    def nullity(kinds):
        iv = [None] + [Intervention(0, k, 1.0) for k in kinds]
        return identifiability_nullity(_regimes(proc, iv), iv)

    assert nullity([]) == 10
    assert nullity(["shift"]) == 7
    assert nullity(["knockout"]) == 2
    assert nullity(["soft_drift"]) == 1
    assert nullity(["noise"]) == 1


def test_oracle_cases_on_components():
    process, support, components, iv = _system(7)
    regimes = _regimes(process, iv)
    assert identifiability_nullity(regimes, iv) == 1  # one soft intervention per SCC
    assert identifiability_nullity(regimes[:1], iv[:1]) > 1  # observational only
    shifts = [None] + [Intervention(c[0], "shift", 1.0) for c in components]
    assert identifiability_nullity(_regimes(process, shifts), shifts) > 1  # shift only
    # a 2-SCC chain with a knockout in the root only: the downstream SCC is not pinned down
    proc2, sup2, comps2 = random_scc_system(np.random.default_rng(8), (2, 2))
    ko_root = [None, Intervention(comps2[0][0], "knockout")]
    ko_both = ko_root + [Intervention(comps2[1][0], "knockout")]
    assert identifiability_nullity(_regimes(proc2, ko_root), ko_root) > 1
    assert identifiability_nullity(_regimes(proc2, ko_both), ko_both) == 1


def test_two_roots_give_one_scale_each():
    rng = np.random.default_rng(9)
    a, _, _ = random_scc_system(rng, (2,))
    b, _, _ = random_scc_system(rng, (3,))
    drift = np.zeros((5, 5))
    drift[:2, :2], drift[2:, 2:] = a.drift, b.drift
    proc = OUProcess(drift, np.r_[a.const, b.const], np.r_[a.diffusion, b.diffusion])
    support = drift != 0
    iv = [None, Intervention(0), Intervention(3)]
    regimes = _regimes(proc, iv)
    assert identifiability_nullity(regimes, iv, support) == 2
    with pytest.raises(ValueError, match="2 roots"):
        fit_recursive(regimes, iv, support)


# --------------------------------------------------------------------------- structure and errors
def test_condensation_order_and_wrong_order():
    process, support, components, iv = _system(10)
    assert condensation_order(support) == components
    regimes = _regimes(process, iv)
    with pytest.raises(ValueError, match="not topological"):
        fit_recursive(regimes, iv, support, order=components[::-1])
    with pytest.raises(ValueError, match="does not list"):
        fit_recursive(regimes, iv, support, order=[[0, 1], [2, 3, 4, 5], [6, 7]])


def test_missing_or_shift_only_intervention_is_refused():
    process, support, components, iv = _system(11)
    regimes = _regimes(process, iv)
    with pytest.raises(ValueError, match="no intervention"):
        fit_recursive(regimes[:3], iv[:3], support)
    shift = iv[:3] + [Intervention(components[2][0], "shift", 1.0)]
    with pytest.raises(ValueError, match="only shift"):
        fit_recursive(_regimes(process, shift), shift, support)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="not Hurwitz"):
        OUProcess(np.array([[0.1]]), np.zeros(1), np.ones(1))
    with pytest.raises(ValueError, match="positive semi-definite"):
        Regime(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="not symmetric"):
        Regime(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))
    process, support, _, iv = _system(12)
    regimes = _regimes(process, iv)
    with pytest.raises(ValueError, match="out of range"):
        process.intervene(Intervention(8))
    with pytest.raises(ValueError, match="out of range"):
        fit_lsq(regimes, iv[:-1] + [Intervention(99)])
    with pytest.raises(ValueError, match="one intervention per regime"):
        fit_lsq(regimes, iv[:-1])
    with pytest.raises(ValueError, match="at least one interventional"):
        fit_lsq(regimes[:1], iv[:1])
    with pytest.raises(ValueError, match="kind"):
        Intervention(0, "hard")


# --------------------------------------------------------------------------- baseline and prediction
def test_baseline_is_exact_when_its_assumption_holds_and_biased_otherwise():
    process, support, _, _ = _system(13)
    unit = OUProcess(process.drift, process.const, np.ones(process.n))
    # with a known sparse support, observational moments identify B when D is known
    assert scale_aligned_error(fit_observational_lyapunov(unit.regime(), support=support), unit) < 1e-8
    assert scale_aligned_error(fit_observational_lyapunov(process.regime(), support=support), process) > 0.05


def test_prediction_of_an_unseen_intervention_from_exact_moments():
    process, support, _, iv = _system(14)
    est = fit_lsq(_regimes(process, iv), iv)
    held = Intervention(5, "soft_drift", 1.7)
    truth = process.intervene(held).regime()
    strength = fit_strength(est, Intervention(5), truth)
    s, _ = _common_scale(est, process)
    assert s * strength == pytest.approx(1.7, rel=1e-7)
    mean, cov = predict(est, Intervention(5, "soft_drift", strength))
    assert np.allclose(mean, truth.mean, atol=1e-8) and np.allclose(cov, truth.cov, atol=1e-8)


def test_scale_aligned_error_ignores_global_scale():
    process, support, _, iv = _system(15)
    est = fit_lsq(_regimes(process, iv), iv)
    from dataclasses import replace

    doubled = replace(est, drift=2 * est.drift, const=2 * est.const, diffusion=2 * est.diffusion)
    assert scale_aligned_error(doubled, process) == pytest.approx(scale_aligned_error(est, process), abs=1e-12)
    wrong = replace(est, drift=est.drift + np.eye(process.n))
    assert scale_aligned_error(wrong, process) > 0.1


# --------------------------------------------------------------------------- API of issue #28
def test_knockout_needs_no_strength():
    ko = Intervention(2, "knockout")
    assert ko.strength is None and not ko.has_strength
    assert Intervention(2, "knockout", 5.0) == ko  # a strength given to a knockout is dropped
    assert Intervention(2).strength == 1.0  # the kinds with a strength default to 1.0
    process, *_ = _system(1)
    assert process.intervene(ko).diffusion[2] == 0.0


def test_knockout_regime_is_validated():
    process, support, components, _ = _system(4)
    ko = Intervention(components[1][0], "knockout")
    good = [process.regime(), process.intervene(ko).regime()]
    assert moment_system(good, [None, ko]).matrix.shape[0] > 0
    # the observational regime paired with the knockout: the node is not clamped there
    with pytest.raises(ValueError, match="not clamped"):
        moment_system([process.regime(), process.regime()], [None, ko])
    # sample moments of a knockout regime pass (the node is exactly 0 in every draw)
    sampled = process.intervene(ko).regime(2_000, np.random.default_rng(0))
    assert moment_system([process.regime(), sampled], [None, ko]).matrix.shape[0] > 0


def test_observational_regime_may_sit_anywhere_and_a_missing_none_is_explained():
    process, support, components, iv = _system(3)
    regimes = _regimes(process, iv)
    first = fit_lsq(regimes, iv)
    last = fit_lsq(regimes[1:] + regimes[:1], iv[1:] + iv[:1])
    assert np.allclose(first.drift, last.drift, atol=1e-9)
    with pytest.raises(ValueError, match=r"\[None\] \+ interventions"):
        fit_lsq(regimes, iv[1:])


def test_baselines_table():
    assert BASELINES["observational_lyapunov"] is fit_observational_lyapunov


# --------------------------------------------------------------------------- properties (hypothesis)
def _hurwitz(seed: int, n: int, margin: float, *, dissipative: bool = False) -> OUProcess:
    """A random stable process: B's eigenvalues shifted to real part <= -margin, or (dissipative)
    B + Bᵀ shifted to <= -2 margin, which keeps B - κ e_i e_iᵀ Hurwitz for every κ >= 0."""
    rng = np.random.default_rng(seed)
    drift = rng.standard_normal((n, n))
    top = np.linalg.eigvalsh((drift + drift.T) / 2).max() if dissipative else np.linalg.eigvals(drift).real.max()
    drift -= (top + margin) * np.eye(n)
    return OUProcess(drift, rng.standard_normal(n), rng.uniform(0.1, 3.0, n))


def test_a_soft_drift_can_destabilise_a_non_normal_stable_process_and_intervene_says_so():
    """Found by the property below (seed 16452, n 2, margin 0.25): B is Hurwitz (eigenvalues
    −0.25 ± 0.24i) but not dissipative, and extra degradation κ = 0.7 on node 0 pushes an
    eigenvalue of B − κ e₀e₀ᵀ to the right half-plane — a fact of non-normal matrices, not a bug;
    intervene must refuse it with the Hurwitz message rather than return a process with no
    stationary law. A dissipative B (B + Bᵀ < 0) cannot be destabilised this way."""
    process = _hurwitz(16452, 2, 0.25)
    assert np.linalg.eigvals(process.drift).real.max() == pytest.approx(-0.25)
    shifted = process.drift - 0.7 * np.diag([1.0, 0.0])
    assert np.linalg.eigvals(shifted).real.max() > 0
    with pytest.raises(ValueError, match="not Hurwitz"):
        process.intervene(Intervention(0, "soft_drift", 0.7))
    stable = _hurwitz(16452, 2, 0.25, dissipative=True)
    for kappa in (0.7, 5.0, 50.0):
        assert np.linalg.eigvals(stable.intervene(Intervention(0, "soft_drift", kappa)).drift).real.max() < 0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), margin=st.floats(0.2, 3.0))
@example(seed=16452, n=2, margin=0.25)
def test_property_stationary_moments_solve_the_moment_equations(seed, n, margin):
    # dissipative, so that the soft-drift regime below is stable too (see the test above)
    process = _hurwitz(seed, n, margin, dissipative=True)
    m, sigma = process.stationary_mean(), process.stationary_cov()
    scale = 1.0 + np.abs(sigma).max() * np.abs(process.drift).max()
    # B m + c = 0 and B Σ + Σ Bᵀ + D = 0
    assert np.abs(process.drift @ m + process.const).max() <= 1e-9 * (1 + np.abs(process.const).max())
    assert np.abs(process.drift @ sigma + sigma @ process.drift.T + np.diag(process.diffusion)).max() <= 1e-9 * scale
    assert np.linalg.eigvalsh(sigma).min() > -1e-10 * scale
    # the truth is in the null space of the stacked system M z = 0
    iv = [None, Intervention(seed % n, "soft_drift", 0.7)]
    regimes = [process.intervene(v).regime() for v in iv]
    system = moment_system(regimes, iv)
    z = system.layout.pack(process.drift, process.const, process.diffusion, [None, 0.7])
    assert np.abs(system.matrix @ z).max() <= 1e-8 * scale * (1 + np.abs(z).max())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 5), alpha=st.floats(0.05, 20.0))
def test_property_moments_are_invariant_to_the_global_scale(seed, n, alpha):
    process = _hurwitz(seed, n, 0.5)
    scaled = OUProcess(alpha * process.drift, alpha * process.const, alpha * process.diffusion)
    assert np.allclose(scaled.stationary_mean(), process.stationary_mean(), rtol=1e-8, atol=1e-10)
    assert np.allclose(scaled.stationary_cov(), process.stationary_cov(), rtol=1e-7, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(b=st.floats(-5.0, -0.05), c=st.floats(-3.0, 3.0), d=st.floats(0.05, 5.0), kappa=st.floats(0.0, 5.0))
def test_property_one_dimensional_closed_form(b, c, d, kappa):
    proc = OUProcess(np.array([[b]]), np.array([c]), np.array([d]))
    # Var = d / (−2b), mean = −c / b; soft drift: Var'/Var = b / (b − κ)
    assert proc.stationary_cov()[0, 0] == pytest.approx(d / (-2 * b), rel=1e-10)
    assert proc.stationary_mean()[0] == pytest.approx(-c / b, rel=1e-10, abs=1e-12)
    soft = proc.intervene(Intervention(0, "soft_drift", kappa))
    assert soft.stationary_cov()[0, 0] / proc.stationary_cov()[0, 0] == pytest.approx(b / (b - kappa), rel=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), alpha=st.floats(0.1, 10.0))
def test_property_lsq_recovers_exact_moments_up_to_scale(seed, alpha):
    process, support, components, iv = _system(seed % 50)
    scaled = OUProcess(alpha * process.drift, alpha * process.const, alpha * process.diffusion)
    iv = [None if v is None else dataclasses.replace(v, strength=alpha * v.strength) for v in iv]
    est = fit_lsq(_regimes(scaled, iv), iv)
    assert scale_aligned_error(est, scaled, part="all") < 1e-7


# --------------------------------------------------------------------------- issue #28


def test_refined_recursive_minimises_the_joint_objective_under_its_scale_convention():
    """The refinement solves the joint weighted least squares of every regime on the support with
    the scale fixed along the recursive estimate z₀ (⟨z₀, z⟩ = ‖z₀‖²), reported in the recursive
    convention (Σ_root d = |root|): from exact moments it recovers the truth; on sample moments its
    scale-free objective f(z)/⟨z₀, z⟩² is at most the recursive pass's (z₀ is feasible), and it is a
    stationary point (G z is parallel to z₀, the constraint's normal)."""
    from icml26.papers.ou_steady.equations import moment_system

    process, support, components, iv = _system(2)
    refined = fit_recursive(_regimes(process, iv), iv, support, refine=True)
    assert refined.method == "recursive_refined"
    assert _common_scale(refined, process)[1] < 1e-8
    sampled = _regimes(process, iv, 5_000, np.random.default_rng(1))
    system = moment_system(sampled, iv, support)
    gram = (system.matrix.T @ (system.weight[:, None] * system.matrix.toarray()))

    def packed(est):
        return system.layout.pack(est.drift, est.const, est.diffusion, est.strengths)

    plain, fine = fit_recursive(sampled, iv, support), fit_recursive(sampled, iv, support, refine=True)
    for est in (plain, fine):
        assert est.diffusion[components[0]].sum() == pytest.approx(len(components[0]))
    z0, z = packed(plain), packed(fine)
    f_plain = float(z0 @ gram @ z0) / float(z0 @ z0) ** 2
    f_fine = float(z @ gram @ z) / float(z0 @ z) ** 2
    assert f_fine <= f_plain * (1 - 1e-3)
    grad = gram @ z
    lam = grad @ z0 / (z0 @ z0)
    assert np.abs(grad - lam * z0).max() < 1e-8 * max(1.0, np.abs(grad).max())
    with pytest.raises(TypeError, match="refine"):
        fit_recursive(_regimes(process, iv), iv, support, refine="yes")


def test_observational_data_with_the_support_identify_the_process():
    process, support, _, _ = _system(6)
    obs = [process.regime()]
    assert identifiability_nullity(obs, [None], support) == 1
    assert identifiability_nullity(obs, [None]) > 1
    est = fit_lsq(obs, [None], support=support)
    assert _common_scale(est, process)[1] < 1e-8
    with pytest.raises(ValueError, match="support"):
        fit_lsq(obs, [None])


def test_knockouts_in_the_root_only_are_not_identified_without_the_support():
    process, support, components, _ = _system(7)
    ko = [Intervention(comp[0], "knockout") for comp in components]
    every = [None, *ko]
    root = [None, ko[0]]
    assert identifiability_nullity(_regimes(process, every), every) == 1
    assert identifiability_nullity(_regimes(process, root), root) >= 2
    # with the support the root-only design is identified (the observational moments already are)
    assert identifiability_nullity(_regimes(process, root), root, support) == 1
    # and the estimator lands off the truth on the downstream rows when it is not identified
    est = fit_lsq(_regimes(process, root), root)
    downstream = [i for comp in components[1:] for i in comp]
    assert scale_aligned_error(est, process, nodes=downstream) > 1e-3
