"""Tests of asym_perturb against closed forms, LP/QP solutions and OpenSpiel.

Checked here (projections: ``test_asym_perturb_projection.py``; the metric functions by
hand: ``test_asym_perturb_analysis.py``; the held-out tuning: ``test_asym_perturb_tuning.py``):
NashConv and CFR+ equal OpenSpiel's; Kuhn's value is −1/18; rock–paper–scissors converges to
uniform; the coincidence (for small μ the perturbed x equals proj_{X*}(σ) from LP +
QP, and not for large μ); the asymmetry guard (the unperturbed y is not exact); the
linear rate; batched = looped.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from icml26.papers.asym_perturb import (
    Treeplex,
    degenerate_game,
    duality_gaps,
    nash_conv,
    perturbed_dynamics,
    project_simplex,
    random_game,
    rock_paper_scissors_game,
    solve_lp,
    solve_matrix_game,
)
from icml26.papers.asym_perturb import BASELINES, DYNAMICS, METHOD, asymmetric_reference
from icml26.papers.asym_perturb.analysis import (
    half_gaps,
    summarize,
    tail_fit,
)

pyspiel = pytest.importorskip("pyspiel")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread is faster


@pytest.fixture(scope="module")
def kuhn():
    from icml26.papers.asym_perturb import sequence_form_game

    return sequence_form_game("kuhn_poker")


def test_nash_conv_equals_openspiel_on_random_behavioural_policies(kuhn):
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    rng = np.random.default_rng(3)
    for _ in range(10):
        pol = policy_lib.TabularPolicy(kuhn.game)
        raw = rng.exponential(size=pol.action_probability_array.shape) * pol.legal_actions_mask
        pol.action_probability_array = raw / raw.sum(1, keepdims=True)
        x, y = kuhn.from_policy(pol)
        ours = float(nash_conv(kuhn.A, x, y, kuhn.X, kuhn.Y))
        assert ours == pytest.approx(exploitability.nash_conv(kuhn.game, pol), abs=1e-12)
        # and back: our sequence form → OpenSpiel policy → same NashConv
        assert exploitability.nash_conv(kuhn.game, kuhn.to_policy(x, y)) == pytest.approx(ours, abs=1e-12)


def test_nash_conv_equals_openspiel_on_leduc():
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    from icml26.papers.asym_perturb import sequence_form_game

    leduc = sequence_form_game("leduc_poker")
    pol = policy_lib.TabularPolicy(leduc.game)
    raw = np.random.default_rng(4).exponential(size=pol.action_probability_array.shape)
    pol.action_probability_array = raw * pol.legal_actions_mask / (raw * pol.legal_actions_mask).sum(1, keepdims=True)
    x, y = leduc.from_policy(pol)
    ours = float(nash_conv(leduc.A, x, y, leduc.X, leduc.Y))
    assert ours == pytest.approx(exploitability.nash_conv(leduc.game, pol), abs=1e-10)


def test_kuhn_value_by_lp_and_by_asymmetric_dynamics(kuhn):
    from icml26.papers.asym_perturb import solve_efg

    value, x_lp = solve_lp(kuhn.A, kuhn.X, kuhn.Y)
    assert -value == pytest.approx(-1 / 18, abs=1e-9)  # A is player 0's loss
    sol = solve_efg(kuhn, "asymmetric_reference", eta=1.0, mu=1.0, iterations=3000,
                    show_progress=False)
    assert float(sol.nash_conv[-1]) < 1e-6
    assert float(kuhn.value_for_player0(sol.x, sol.y)) == pytest.approx(-1 / 18, abs=1e-6)
    E, e = kuhn.X.constraints()
    assert (E @ sol.x - e).abs().max() < 1e-12


def test_cfr_plus_matches_openspiel(kuhn):
    from open_spiel.python.algorithms import cfr, exploitability

    from icml26.papers.asym_perturb import solve_efg

    sol = solve_efg(kuhn, "cfr_plus", iterations=25, show_progress=False)
    solver = cfr.CFRPlusSolver(kuhn.game)
    for _ in range(25):
        solver.evaluate_and_update_policy()
    x, y = kuhn.from_policy(solver.average_policy())
    torch.testing.assert_close(sol.x, x, atol=1e-12, rtol=0)
    torch.testing.assert_close(sol.y, y, atol=1e-12, rtol=0)
    assert float(sol.nash_conv[-1]) == pytest.approx(
        exploitability.nash_conv(kuhn.game, solver.average_policy()), abs=1e-12)


@pytest.mark.parametrize("method", ["asymmetric_reference", "asymmetric", "symmetric_reference",
                                    "ogda"])
def test_rock_paper_scissors_converges_to_uniform(method):
    """From a random start (uniform would already be the answer)."""
    sol = solve_matrix_game(rock_paper_scissors_game(), method, eta=0.1, mu=1.0, iterations=4000,
                            seed=0, show_progress=False)
    assert float(sol.nash_conv[0]) > 0.1
    torch.testing.assert_close(sol.x, torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-8, rtol=0)
    torch.testing.assert_close(sol.y, torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-8, rtol=0)


def test_plain_gda_does_not_converge_on_rock_paper_scissors_game():
    sol = solve_matrix_game(rock_paper_scissors_game(), "gda", eta=0.1, iterations=4000,
                            show_progress=False, seed=0)
    assert float(sol.nash_conv[-1000:].min()) > 1e-2


# ---------------------------------------------------------------------------
# Coincidence and asymmetry on a degenerate game
# ---------------------------------------------------------------------------
def _degenerate():
    """Seed 9's 5×5 core has both copied rows and a copied column in its support,
    so X* and Y* are segments, not points."""
    return degenerate_game(torch.Generator().manual_seed(9), 5, 2).numpy()


def _perturbed_equilibrium_x(A: np.ndarray, sigma: np.ndarray, mu: float) -> np.ndarray:
    """x_μ = argmin_x max_y xᵀAy + μ/2‖x − σ‖², as a QP in (x, v) solved by SLSQP."""
    n, m = A.shape
    cons = [{"type": "ineq", "fun": lambda z: z[n] - A.T @ z[:n],
             "jac": lambda z: np.hstack([-A.T, np.ones((m, 1))])},
            {"type": "eq", "fun": lambda z: z[:n].sum() - 1, "jac": lambda z: np.r_[np.ones(n), 0.0]}]
    res = minimize(lambda z: z[n] + 0.5 * mu * ((z[:n] - sigma) ** 2).sum(),
                   np.r_[sigma, (A.T @ sigma).max()], jac=lambda z: np.r_[mu * (z[:n] - sigma), 1.0],
                   constraints=cons, bounds=[(0, None)] * n + [(None, None)], method="SLSQP",
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x[:n]


def _projection_onto_equilibria(A: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """proj_{X*}(σ) with X* = {x ∈ Δ : Aᵀx ≤ v*} (v* from the LP), by SLSQP."""
    value, _ = solve_lp(A)
    n = A.shape[0]
    cons = [{"type": "ineq", "fun": lambda x: value + 1e-12 - A.T @ x, "jac": lambda x: -A.T},
            {"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(n)}]
    res = minimize(lambda x: 0.5 * ((x - sigma) ** 2).sum(), sigma, jac=lambda x: x - sigma,
                   constraints=cons, bounds=[(0, None)] * n, method="SLSQP",
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x


def test_projection_onto_equilibria_is_the_equal_split_of_copied_rows():
    """Hand calculation: X* = {x : x_i + x_{i'} = x̃_i for copied rows}, so the point of X*
    nearest the uniform σ splits each copied row's mass equally."""
    A = _degenerate()
    _, core = solve_lp(A[:5, :5])
    assert core[0] > 0.05 and core[1] > 0.05  # the copies carry mass: X* is a segment
    split = np.r_[core[:2] / 2, core[2:], core[:2] / 2]
    np.testing.assert_allclose(_projection_onto_equilibria(A, np.full(7, 1 / 7)), split, atol=1e-9)


def test_coincidence_small_mu_exact_large_mu_not():
    A = _degenerate()
    sigma = np.full(7, 1 / 7)
    target = _projection_onto_equilibria(A, sigma)
    value, _ = solve_lp(A)
    for mu in (0.03, 0.1, 0.5):
        np.testing.assert_allclose(_perturbed_equilibrium_x(A, sigma, mu), target, atol=1e-8)
    x_big = _perturbed_equilibrium_x(A, sigma, 3.0)
    assert np.abs(x_big - target).max() > 1e-2
    x_gap, _ = duality_gaps(A, torch.as_tensor(x_big), torch.full((7,), 1 / 7, dtype=torch.float64),
                            value=value)
    assert float(x_gap) > 1e-3


@pytest.mark.parametrize("alternating,eta,mu,iterations", [(True, 0.4, 0.3, 3000),
                                                           (False, 0.05, 0.5, 8000)])
def test_dynamics_reach_the_projection_and_only_x_is_exact(alternating, eta, mu, iterations):
    """The single x-perturbed instance converges to (proj_{X*}(σ), y_μ): x exact, y not.
    (This game's threshold μ̄ exceeds 0.5: the QP gives x_μ = proj_{X*}(σ) there.)"""
    A = _degenerate()
    target = _projection_onto_equilibria(A, np.full(7, 1 / 7))
    value, _ = solve_lp(A)
    A_t = torch.as_tensor(A)[None]
    X, Y = Treeplex.simplex(7), Treeplex.simplex(7)
    np.testing.assert_allclose(_perturbed_equilibrium_x(A, np.full(7, 1 / 7), mu), target, atol=1e-8)
    run = perturbed_dynamics(A_t, X, Y, eta=eta, mu_x=mu, mu_y=0.0, iterations=iterations,
                             alternating=alternating)
    np.testing.assert_allclose(run.x[0].numpy(), target, atol=1e-8)
    x_gap, y_gap = duality_gaps(A, run.x[0], run.y[0], value=value)
    assert float(x_gap) < 1e-8
    assert float(y_gap) > 1e-3  # asymmetry guard: the unperturbed player is visibly off
    # the mirrored instance reaches its own QP point y_μ; for y this game's threshold lies
    # between 0.03 and 0.1, so at this μ the y half of the pair is biased and pairing is not exact
    mirrored = perturbed_dynamics(A_t, X, Y, eta=eta, mu_x=0.0, mu_y=mu, iterations=iterations,
                                  alternating=alternating)
    np.testing.assert_allclose(mirrored.y[0].numpy(), _perturbed_equilibrium_x(-A.T, np.full(7, 1 / 7), mu),
                               atol=1e-8)
    assert float(nash_conv(A, run.x[0], mirrored.y[0])) > 1e-4


def test_pairing_is_exact_below_both_thresholds():
    """With μ below the y-player's threshold too, (x from the x-perturbed instance, y from the
    y-perturbed one) is an exact equilibrium of the original game."""
    A = _degenerate()
    sigma = np.full(7, 1 / 7)
    target_y = _projection_onto_equilibria(-A.T, sigma)
    np.testing.assert_allclose(_perturbed_equilibrium_x(-A.T, sigma, 0.03), target_y, atol=1e-8)
    assert np.abs(_perturbed_equilibrium_x(-A.T, sigma, 0.1) - target_y).max() > 1e-2
    A_t = torch.as_tensor(A)[None]
    X, Y = Treeplex.simplex(7), Treeplex.simplex(7)
    run = perturbed_dynamics(A_t, X, Y, eta=0.4, mu_x=0.03, mu_y=0.0, iterations=6000, alternating=True)
    mirrored = perturbed_dynamics(A_t, X, Y, eta=0.4, mu_x=0.0, mu_y=0.03, iterations=6000,
                                  alternating=True)
    np.testing.assert_allclose(mirrored.y[0].numpy(), target_y, atol=1e-8)
    assert float(nash_conv(A, run.x[0], mirrored.y[0])) < 1e-8


def test_experiment_splits_the_pair_into_its_x_and_y_halves():
    """The reproduction's diagnostic: at μ = 0.3 (above μ̄_y, below μ̄_x) the x half of the
    pair is exact and the y half is not; the two gaps add up to the pair's NashConv."""
    A = torch.as_tensor(_degenerate())[None]
    sol = solve_matrix_game(A, "asymmetric", eta=0.4, mu=0.3, iterations=3000, alternating=True,
                            show_progress=False)
    values = np.array([solve_lp(a)[0] for a in A])
    halves = half_gaps(values, sol.best_y_value[:, -1].numpy(), sol.best_x_value[:, -1].numpy())
    assert halves["frac_x_half_below_1e-8"] == 1.0 and halves["frac_y_half_below_1e-8"] == 0.0
    assert halves["median_final_y_gap"] > 1e-4
    assert halves["median_final_x_gap"] + halves["median_final_y_gap"] == pytest.approx(
        float(sol.nash_conv[0, -1]), abs=1e-9)


def test_symmetric_fixed_mu_is_biased_on_the_same_game():
    A = _degenerate()
    value, _ = solve_lp(A)
    sol = solve_matrix_game(A, "symmetric", eta=0.4, mu=0.1, iterations=4000, alternating=True,
                            show_progress=False)
    x_gap, y_gap = duality_gaps(A, sol.x, sol.y, value=value)
    assert float(x_gap) > 1e-4 and float(y_gap) > 1e-4


# ---------------------------------------------------------------------------
# Rates, batching, API
# ---------------------------------------------------------------------------
def test_tail_fit_recovers_a_geometric_rate():
    curve = 0.5 * 0.99 ** np.arange(3000)
    slope, r2, points = tail_fit(curve)
    assert 10 ** slope == pytest.approx(0.99, rel=1e-9)
    assert r2 == pytest.approx(1.0, abs=1e-12) and points > 10
    flat = np.full(100, 0.1)
    assert math.isnan(tail_fit(flat)[1])


def test_asymmetric_reference_converges_linearly():
    A = random_game(torch.Generator().manual_seed(5), 6, batch=4)
    sol = solve_matrix_game(A, "asymmetric_reference", eta=0.1, mu=1.0, iterations=6000,
                            show_progress=False)
    stats = summarize(sol.nash_conv.numpy(), sol.evaluations_per_iteration)
    assert stats["frac_below_1e-8"] == 1.0
    assert stats["median_tail_r2"] > 0.9
    assert stats["median_tail_rate"] < 1 - 1e-4  # contraction per iteration


def test_batched_equals_looped():
    A = random_game(torch.Generator().manual_seed(6), 5, 4, batch=3)
    for method in ("asymmetric", "asymmetric_reference", "ogda"):
        batched = solve_matrix_game(A, method, eta=0.05, mu=0.5, iterations=500, show_progress=False)
        for i in range(3):
            single = solve_matrix_game(A[i], method, eta=0.05, mu=0.5, iterations=500,
                                       show_progress=False)
            torch.testing.assert_close(batched.nash_conv[i], single.nash_conv, atol=1e-13, rtol=0)
            torch.testing.assert_close(batched.x[i], single.x, atol=1e-13, rtol=0)


def test_asymmetric_pairs_the_two_one_sided_instances():
    A = random_game(torch.Generator().manual_seed(7), 4)
    pair = solve_matrix_game(A, "asymmetric", eta=0.05, mu=0.3, iterations=300, show_progress=False)
    X, Y = Treeplex.simplex(4), Treeplex.simplex(4)
    only_x = perturbed_dynamics(A[None], X, Y, eta=0.05, mu_x=0.3, mu_y=0.0, iterations=300)
    only_y = perturbed_dynamics(A[None], X, Y, eta=0.05, mu_x=0.0, mu_y=0.3, iterations=300)
    torch.testing.assert_close(pair.x, only_x.x[0])
    torch.testing.assert_close(pair.y, only_y.y[0])
    torch.testing.assert_close(pair.nash_conv[-1], nash_conv(A, only_x.x[0], only_y.y[0]))
    assert pair.evaluations_per_iteration == 2


def test_iterations_to_and_reference_updates():
    sol = solve_matrix_game(rock_paper_scissors_game(), "symmetric_reference", eta=0.1, mu=0.3,
                            iterations=1000, reference_period=100, seed=1, show_progress=False)
    assert int(sol.reference_updates) == 10
    first = int(sol.iterations_to(1e-3))
    assert first > 0 and float(sol.nash_conv[first]) <= 1e-3 < float(sol.nash_conv[first - 1])
    assert int(sol.iterations_to(-1.0)) == -1


@pytest.mark.parametrize("kwargs,match", [
    (dict(method="nope"), "unknown method"),
    (dict(method="asymmetric", reference_period=10), "reference_period applies"),
    (dict(method="asymmetric_reference", reference_period=0), "reference_period=0"),
    (dict(method="symmetric", mu=0.0), "mu=0.0 must be > 0"),
    (dict(method="gda", eta=0.0), "eta=0.0 must be > 0"),
    (dict(method="gda", iterations=-1), "iterations=-1"),
    (dict(method="gda", x0=torch.tensor([0.5, 0.6, 0.0])), "x0 is not a strategy"),
])
def test_bad_input_raises_with_advice(kwargs, match):
    kwargs = {"eta": 0.1, "mu": 0.3, "iterations": 10, **kwargs}
    method = kwargs.pop("method")
    with pytest.raises(ValueError, match=match):
        solve_matrix_game(rock_paper_scissors_game(), method, show_progress=False, **kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runs_on_cuda():
    A = random_game(torch.Generator().manual_seed(8), 6, batch=2)
    cpu = solve_matrix_game(A, "asymmetric_reference", iterations=300, show_progress=False)
    gpu = solve_matrix_game(A, "asymmetric_reference", iterations=300, device="cuda",
                            show_progress=False)
    torch.testing.assert_close(gpu.nash_conv.cpu(), cpu.nash_conv, atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------
# Issues #17 / #18 / #29: names, types, analysis, properties
# ---------------------------------------------------------------------------
def test_method_baselines_and_dynamics_table():
    assert METHOD is asymmetric_reference
    assert set(BASELINES) == {"symmetric", "symmetric_reference", "ogda", "gda", "cfr_plus"}
    assert set(DYNAMICS) == {"asymmetric", "asymmetric_reference", *BASELINES}
    # drop-in: every baseline runs with the method's call
    A, X = random_game(torch.Generator().manual_seed(3), 3, batch=2), Treeplex.simplex(3)
    for fn in (METHOD, *BASELINES.values()):
        run = fn(A, X, X, eta=0.05, mu=0.5, iterations=20)
        assert run.nash_conv.shape == (2, 21)


def test_nash_conv_and_gaps_return_the_callers_type():
    u = np.full(3, 1 / 3)
    pure = np.array([1.0, 0.0, 0.0])
    # rock against uniform: y's best response (paper) gains 1, x's best response to uniform gains 0
    # NashConv = max_y' xᵀAy' − min_x' x'ᵀAy = 1 − 0
    v = nash_conv(rock_paper_scissors_game().numpy(), pure, u)
    assert type(v) is float and v == pytest.approx(1.0)
    gx, gy = duality_gaps(rock_paper_scissors_game().numpy(), pure, u)  # v* = 0
    assert type(gx) is float and (gx, gy) == (pytest.approx(1.0), pytest.approx(0.0))
    batch = nash_conv(np.stack([rock_paper_scissors_game().numpy()] * 2), np.stack([pure, u]), np.stack([u, u]))
    assert isinstance(batch, np.ndarray) and batch.tolist() == pytest.approx([1.0, 0.0])
    t = nash_conv(rock_paper_scissors_game(), torch.tensor(pure), torch.tensor(u))
    assert isinstance(t, torch.Tensor) and t.dim() == 0


def test_project_simplex_nan_rows_give_nan_and_others_are_untouched():
    v = torch.tensor([[float("nan"), 0.0, 1.0], [0.2, 0.3, 0.9]], dtype=torch.float64)
    p = project_simplex(v)
    assert torch.isnan(p[0]).all()
    torch.testing.assert_close(p[1], project_simplex(v[1]))
    assert project_simplex([0.2, 0.5]).tolist() == pytest.approx([0.35, 0.65])  # lists / NumPy accepted


# ---------------------------------------------------------------------------
# Thresholds by LP
# ---------------------------------------------------------------------------
def test_thresholds_hand_example():
    """A = [[0, 0], [0, 0], [1, 1]], σ uniform: X* = {x₃ = 0}, x̂ = (½, ½, 0); along
    x₁ = x₂, d/dx₃ [x₃ + μ/2‖x − σ‖²] at x₃ = 0 is 1 − μ/2, so μ̄_x = 2; every y is an
    equilibrium strategy (y's value is 0 whatever it plays), so μ̄_y = ∞."""
    from icml26.papers.asym_perturb import perturbation_thresholds

    th = perturbation_thresholds(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]))
    assert th.mu_x == pytest.approx(2.0, abs=1e-9)
    assert th.mu_y == math.inf and th.mu_pair == pytest.approx(2.0, abs=1e-9)
    np.testing.assert_allclose(th.x_hat, [0.5, 0.5, 0.0], atol=1e-12)
    assert th.value == pytest.approx(0.0, abs=1e-12)


def test_thresholds_separate_exact_from_biased_fixed_points():
    """On the degenerate test game, the QP's perturbed point equals proj_{X*}(σ) just below μ̄
    and leaves it just above, for x and for the mirrored y (independent SLSQP paths)."""
    from icml26.papers.asym_perturb import perturbation_thresholds, projection_onto_equilibria

    A = _degenerate()
    sigma = np.full(7, 1 / 7)
    th = perturbation_thresholds(A)
    assert 0.5 < th.mu_x < 3.0 and 0.03 < th.mu_y < 0.1  # the brackets the older tests established
    np.testing.assert_allclose(th.x_hat, _projection_onto_equilibria(A, sigma), atol=1e-8)
    np.testing.assert_allclose(projection_onto_equilibria(-A.T), _projection_onto_equilibria(-A.T, sigma), atol=1e-8)
    for game, mu_bar, target in ((A, th.mu_x, th.x_hat), (-A.T, th.mu_y, th.y_hat)):
        np.testing.assert_allclose(_perturbed_equilibrium_x(game, sigma, 0.9 * mu_bar), target, atol=1e-7)
        assert np.abs(_perturbed_equilibrium_x(game, sigma, 1.25 * mu_bar) - target).max() > 1e-4


def test_pair_at_half_the_smaller_threshold_is_exact():
    from icml26.papers.asym_perturb import asymmetric, perturbation_thresholds

    A = torch.as_tensor(_degenerate())[None]
    mu = 0.5 * perturbation_thresholds(A[0]).mu_pair
    X = Treeplex.simplex(7)
    run = asymmetric(A, X, X, eta=0.4, mu=torch.tensor([mu], dtype=torch.float64), iterations=6000,
                     alternating=True)
    assert float(run.nash_conv[0, -1]) < 1e-8
