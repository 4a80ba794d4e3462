"""Tests of asym_perturb's projections: the simplex projection against brute force and its
properties, the dilated prox on Kuhn and Leduc's treeplexes (feasible, identity at zero gradient,
minimiser of its objective against random points and SLSQP).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from icml26.papers.asym_perturb import Treeplex, project_simplex

pyspiel = pytest.importorskip("pyspiel")

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny problems: one thread is faster


@pytest.fixture(scope="module")
def kuhn():
    from icml26.papers.asym_perturb import sequence_form_game

    return sequence_form_game("kuhn_poker")


def _brute_force_projection(v: np.ndarray) -> np.ndarray:
    """argmin_{p∈Δ} ‖p − v‖ by trying every support: the face whose candidate p_S = v_S − τ,
    τ = (Σ v_S − 1)/|S|, meets the KKT conditions (p_S ≥ 0 and v_j ≤ τ off the support). The
    projection is unique, so every face that meets them gives the same p. (Choosing the nearest
    nonnegative candidate by distance fails when off-support entries are large: at |v_j| ~ 600 the
    squared distances, ~1e6, cannot resolve candidates 5e-11 apart: v = (0, 0.99999, −592, −592, −592).)"""
    n = len(v)
    slack = 1e-12 * (1.0 + np.abs(v).max())
    for k in range(1, n + 1):
        for support in itertools.combinations(range(n), k):
            s, off = list(support), [j for j in range(n) if j not in support]
            tau = (v[s].sum() - 1.0) / k
            p = np.zeros(n)
            p[s] = v[s] - tau
            if (p >= -slack).all() and (v[off] <= tau + slack).all():
                return p
    raise AssertionError(f"no face of the simplex meets the KKT conditions for {v}")


def test_simplex_projection_matches_brute_force():
    rng = np.random.default_rng(0)
    v = rng.normal(scale=2.0, size=(200, 6))
    v[:20] = rng.uniform(0, 1, size=(20, 6))  # some points already close to the simplex
    ours = project_simplex(torch.as_tensor(v)).numpy()
    brute = np.stack([_brute_force_projection(row) for row in v])
    np.testing.assert_allclose(ours, brute, atol=1e-12)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-13)


def _held_projection(v: torch.Tensor) -> torch.Tensor:
    """Held et al.'s sort-based projection as the committed runs computed it (θ = cumsum_ρ / ρ)."""
    u, _ = torch.sort(v, dim=-1, descending=True)
    cumsum = u.cumsum(dim=-1) - 1.0
    k = torch.arange(1, v.shape[-1] + 1, dtype=v.dtype)
    rho = (u - cumsum / k > 0).sum(dim=-1, keepdim=True).clamp_min(1)
    return (v - cumsum.gather(-1, rho - 1) / rho.to(v.dtype)).clamp_min(0.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_simplex_projection_is_bit_identical_to_the_committed_runs_formula(dtype):
    """The committed dynamics ran the projection above; the current code must give the same bits
    (ties, NaN, ±inf and scales from 1e-12 to 1e6 included), or every committed curve would move."""
    g = torch.Generator().manual_seed(0)
    for trial in range(300):
        n, batch = 1 + trial % 13, 1 + trial % 17
        v = torch.randn(batch, n, generator=g, dtype=torch.float64) * 10.0 ** (trial % 19 - 12)
        v = v.round() if trial % 7 == 0 else v
        v[0, 0] = [v[0, 0], float("nan"), float("inf"), -float("inf")][trial % 4]
        v = v.to(dtype)
        expected, got = _held_projection(v), project_simplex(v)
        assert torch.equal(torch.isnan(expected), torch.isnan(got))
        assert torch.equal(expected.nan_to_num(0.0), got.nan_to_num(0.0)), (trial, v)


def test_simplex_projection_differentiates_after_a_first_call_under_inference_mode(monkeypatch):
    """The projection keeps 1…n per shape; a first call under inference mode must not leave a
    tensor that autograd refuses to save (the gradient of a projection onto the face of its
    support is the centred identity there)."""
    from icml26.papers.asym_perturb import treeplex

    monkeypatch.setattr(treeplex, "_RANKS", {})  # no shape kept from an earlier test
    with torch.inference_mode():
        project_simplex(torch.zeros(1, 11, dtype=torch.float64))
    v = torch.tensor([[0.9, 0.5, -3.0] + [-5.0] * 8], dtype=torch.float64, requires_grad=True)
    p = project_simplex(v)
    p[0, 0].backward()
    expected = torch.zeros(11, dtype=torch.float64)
    expected[:2] = torch.tensor([0.5, -0.5], dtype=torch.float64)
    torch.testing.assert_close(v.grad[0], expected)


def test_simplex_treeplex_is_euclidean_geometry():
    X = Treeplex.simplex(5)
    c = torch.randn(3, 5, dtype=torch.float64)
    torch.testing.assert_close(X.prox(c), project_simplex(-c))
    torch.testing.assert_close(X.min_linear(c), c.min(-1).values)
    E, e = X.constraints()
    assert E.shape == (1, 5) and float(e[0]) == 1.0


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_dilated_prox_stays_in_treeplex_and_is_identity_at_zero_gradient(name):
    from icml26.papers.asym_perturb import sequence_form_game

    game = sequence_form_game(name)
    g = torch.Generator().manual_seed(1)
    for space in (game.X, game.Y):
        E, e = space.constraints()
        b = space.random(g, (4,))
        c = torch.randn(4, space.size, generator=g, dtype=torch.float64) * 3
        x = space.to_sequence(space.prox(c))
        assert (x >= 0).all()
        assert (x @ E.T - e).abs().max() < 1e-12
        # prox(−∇ψ(x_t)) = argmin D_ψ(x, x_t) = x_t
        back = space.to_sequence(space.prox(-space.mirror_grad(b)))
        torch.testing.assert_close(back, space.to_sequence(b), atol=1e-12, rtol=0)


def _psi(space: Treeplex, x: torch.Tensor) -> torch.Tensor:
    """ψ(x) = Σ_J ½‖x_J‖²/x_{p(J)} (0 where x_{p(J)} = 0), written directly in sequence form."""
    total = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for grp in space.groups:
        parent = x[..., grp.parents]
        sq = x[..., grp.actions].square().sum(-1)
        total = total + torch.where(parent > 0, 0.5 * sq / parent.clamp_min(1e-300),
                                    torch.zeros_like(sq)).sum(-1)
    return total


@pytest.mark.parametrize("player", [0, 1])
def test_dilated_prox_minimises_the_prox_objective(kuhn, player):
    """⟨c, x⟩ + ψ(x) (ψ written directly in sequence form) is smallest at the prox: below
    5000 random treeplex points, below points a step 1e-3 towards them (the objective is
    convex, so no feasible direction may descend), and below SLSQP's answer."""
    g = torch.Generator().manual_seed(2)
    space = (kuhn.X, kuhn.Y)[player]
    c = torch.randn(space.size, generator=g, dtype=torch.float64)
    best = space.to_sequence(space.prox(c))
    objective = lambda x: (x * c).sum(-1) + _psi(space, x)  # noqa: E731
    others = space.to_sequence(space.random(g, (5000,)))
    assert (objective(others) >= objective(best) - 1e-12).all()
    near = (1 - 1e-3) * best + 1e-3 * others
    assert (objective(near) >= objective(best) - 1e-14).all()
    E, e = (t.numpy() for t in space.constraints())
    fun = lambda z: float(objective(torch.as_tensor(z)))  # noqa: E731
    res = minimize(fun, others[0].numpy(), method="SLSQP", bounds=[(0, 1)] * space.size,
                   constraints=[{"type": "eq", "fun": lambda z: E @ z - e}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert objective(best) <= res.fun + 1e-12


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e3, 1e3)))
@example(np.array([0.0, 0.99999, -592.0, -592.0, -592.0]))
def test_property_simplex_projection(v):
    p = project_simplex(torch.as_tensor(v)).numpy()
    # on the simplex
    assert (p >= 0).all() and abs(p.sum() - 1.0) < 1e-9
    # optimality (variational inequality): ⟨v − p, q − p⟩ ≤ 0 for every vertex q of the simplex
    assert ((v - p) - (v - p) @ p <= 1e-7 * (1 + np.abs(v).max())).all()
    # idempotent, and a shift along (1, …, 1) does not move it
    np.testing.assert_allclose(project_simplex(torch.as_tensor(p)).numpy(), p, atol=1e-12)
    np.testing.assert_allclose(project_simplex(torch.as_tensor(v + 3.7)).numpy(), p, atol=1e-9)
    if len(v) <= 5:
        np.testing.assert_allclose(p, _brute_force_projection(v), atol=1e-9)


_KUHN = {}


def _kuhn_space(player: int) -> Treeplex:
    if not _KUHN:
        from icml26.papers.asym_perturb import sequence_form_game

        game = sequence_form_game("kuhn_poker")
        _KUHN.update({0: game.X, 1: game.Y})
    return _KUHN[player]


@settings(max_examples=40, deadline=None)
@given(player=st.integers(0, 1), seed=st.integers(0, 2**31 - 1), scale=st.floats(0.01, 100.0))
def test_property_treeplex_prox(player, seed, scale):
    space = _kuhn_space(player)
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(space.size, generator=g, dtype=torch.float64) * scale
    x = space.to_sequence(space.prox(c))
    E, e = space.constraints()
    # feasible: x ≥ 0 and the sequence-form flow constraints E x = e
    assert (x >= 0).all() and (x @ E.T - e).abs().max() < 1e-10
    # optimal: no treeplex point, nor a small step towards one, has a lower ⟨c, x⟩ + ψ(x)
    objective = lambda z: (z * c).sum(-1) + _psi(space, z)  # noqa: E731
    others = space.to_sequence(space.random(g, (200,)))
    tol = 1e-10 * (1 + scale)
    assert (objective(others) >= objective(x) - tol).all()
    assert (objective((1 - 1e-3) * x + 1e-3 * others) >= objective(x) - tol).all()
    # the prox of −∇ψ(x) is x itself
    back = space.to_sequence(space.prox(-space.mirror_grad(space.to_behavioural(x))))
    torch.testing.assert_close(back, x, atol=1e-9, rtol=0)
