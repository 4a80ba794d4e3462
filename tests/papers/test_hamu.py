"""HAMU's closed form: against SLSQP, the KKT identities per branch, infeasibility exactly above
radius times the forget norm, a hand example, the stop flag, degenerate cases, the u-variant, the
per-block segments, argument errors, and hypothesis properties of the step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26.papers.hamu import (
    HamuOptimizer,
    hamu_update,
    stopping_threshold,
    unlearn,
)
from icml26.papers.hamu.solver import BRANCHES, hamu_update_segments
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.papers._hamu_helpers import DT


def _instance(rng: np.random.Generator, d: int, *, feasible: bool = True):
    """Random (g_r, g_f, B, R) with a chosen share of positive κ (hard cases)."""
    g_r = rng.normal(size=d)
    g_f = rng.normal(size=d)
    if rng.random() < 0.5:  # correlate them so that all branches occur
        g_f = g_f + rng.choice([-1.5, 1.5]) * g_r
    radius = rng.uniform(0.2, 2.0)
    frac = rng.uniform(0.0, 0.98) if feasible else rng.uniform(1.02, 2.0)
    bound = frac * radius * np.linalg.norm(g_f)
    return torch.tensor(g_r, dtype=DT), torch.tensor(g_f, dtype=DT), bound, radius


def _slsqp(g_r, g_f, bound, radius):
    from scipy.optimize import minimize

    gr, gf = g_r.numpy(), g_f.numpy()
    x0 = gf * (bound / gf.dot(gf))  # feasible start
    res = minimize(
        lambda x: gr.dot(x), x0, jac=lambda x: gr, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: gf.dot(x) - bound, "jac": lambda x: gf},
                     {"type": "ineq", "fun": lambda x: radius**2 - x.dot(x), "jac": lambda x: -2 * x}],
        options={"ftol": 1e-10, "maxiter": 1000},
    )
    # status 8 ("positive directional derivative in the line search") is SLSQP stalling at the
    # optimum to rounding; the feasibility and the comparisons below still decide
    assert res.status in (0, 8), res.message
    assert gf.dot(res.x) >= bound - 1e-6 * abs(bound) and res.x.dot(res.x) <= radius**2 * (1 + 1e-6)
    return res.x


# ----------------------------------------------------------------------------- closed form
def test_closed_form_matches_slsqp_on_200_random_problems():
    rng = np.random.default_rng(0)
    branches = set()
    for _ in range(200):
        d = int(rng.integers(2, 51))
        g_r, g_f, bound, radius = _instance(rng, d)
        step = hamu_update(g_r, g_f, bound=bound, radius=radius)
        branches.add(step.branch)
        x = _slsqp(g_r, g_f, bound, radius)
        scale = float(g_r.norm()) * radius
        assert abs(float(g_r @ step.delta) - g_r.numpy().dot(x)) <= 1e-6 * scale
        # the optimum is unique (linear objective on a strictly convex set)
        np.testing.assert_allclose(step.delta.numpy(), x, atol=1e-5 * radius)
    assert branches == {"direct", "rectified"}


def test_kkt_identities_per_branch():
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(300):
        g_r, g_f, bound, radius = _instance(rng, int(rng.integers(2, 30)))
        step = hamu_update(g_r, g_f, bound=bound, radius=radius)
        seen.add(step.branch)
        norm, ascent = float(step.delta.norm()), float(g_f @ step.delta)
        if step.branch == "rectified":
            assert ascent == pytest.approx(bound, rel=1e-10, abs=1e-12)
            assert norm == pytest.approx(radius, rel=1e-10)
        else:
            assert step.branch == "direct"
            assert norm == pytest.approx(radius, rel=1e-12)
            assert ascent >= bound - 1e-12
            # direct is exactly κ ≤ κ₁ = −B‖g_r‖/R
            assert step.hardness <= -bound * float(g_r.norm()) / radius
    assert seen == {"direct", "rectified"}


def test_infeasible_exactly_when_bound_exceeds_radius_times_forget_norm():
    rng = np.random.default_rng(2)
    for _ in range(50):
        g_r, g_f, _, radius = _instance(rng, 8)
        edge = radius * float(g_f.norm())
        above = hamu_update(g_r, g_f, bound=edge * (1 + 1e-9), radius=radius)
        below = hamu_update(g_r, g_f, bound=edge * (1 - 1e-9), radius=radius)
        assert above.branch == "infeasible" and below.branch != "infeasible"
        # fallback: the minimum-norm step meeting the bound, (B/‖g_f‖²)·g_f
        torch.testing.assert_close(above.delta, g_f * (edge * (1 + 1e-9) / float(g_f @ g_f)))
        assert not above.stop and math.isnan(above.kappa_stop)


def test_hand_example_two_dimensions():
    # g_r = (1, 1), g_f = (1, 0), R = 1, B = 0.5: κ = 1, κ₁ = −0.5·√2, g_⊥ = (0, 1),
    # δ = 0.5·(1, 0) − √(1 − 0.25)·(0, 1) = (0.5, −0.8660254), g_r·δ = −0.3660254,
    # κ₂ = √2·√0.75 = 1.2247449 > κ: no stop.
    step = hamu_update(torch.tensor([1.0, 1.0], dtype=DT), torch.tensor([1.0, 0.0], dtype=DT), bound=0.5, radius=1.0)
    assert step.branch == "rectified" and not step.stop
    np.testing.assert_allclose(step.delta.numpy(), [0.5, -0.8660254037844386], rtol=1e-12)
    assert step.hardness == 1.0
    assert step.kappa_direct == pytest.approx(-0.7071067811865476)
    assert step.kappa_stop == pytest.approx(1.224744871391589)
    assert float(torch.tensor([1.0, 1.0], dtype=DT) @ step.delta) == pytest.approx(-0.3660254037844386)
    # g_r = (1, 0.2): κ = 1 ≥ κ₂ = √1.04·√0.75 = 0.8831761; δ is the same, g_r·δ = 0.5 − 0.1732051 > 0: stop.
    g_r = torch.tensor([1.0, 0.2], dtype=DT)
    step = hamu_update(g_r, torch.tensor([1.0, 0.0], dtype=DT), bound=0.5, radius=1.0)
    assert step.stop and step.kappa_stop == pytest.approx(0.8831760866327847)
    assert float(g_r @ step.delta) == pytest.approx(0.3267949192431123)
    # direct: g_r = (−1, 0), g_f = (1, 0): κ = −1 ≤ κ₁ = −0.5, δ = (1, 0)
    step = hamu_update(torch.tensor([-1.0, 0.0], dtype=DT), torch.tensor([1.0, 0.0], dtype=DT), bound=0.5, radius=1.0)
    assert step.branch == "direct" and step.delta.tolist() == [1.0, 0.0] and not step.stop


def test_stop_flag_iff_optimum_harms_retain_including_negative_kappa():
    rng = np.random.default_rng(3)
    negative_kappa_where_reference_rule_fires = 0
    for _ in range(2000):
        g_r, g_f, bound, radius = _instance(rng, int(rng.integers(2, 6)))
        step = hamu_update(g_r, g_f, bound=bound, radius=radius)
        value = float(g_r @ step.delta)
        if abs(value) < 1e-9:
            continue
        assert step.stop == (value >= 0.0)
        assert step.stop == (step.hardness >= stopping_threshold(float(g_r.norm()), float(g_f.norm()),
                                                                   bound=bound, radius=radius))
        # the authors' rule B > R‖g_f‖ sin θ ignores the sign of κ
        sin = math.sqrt(max(1 - step.hardness**2 / float(g_r @ g_r) / float(g_f @ g_f), 0.0))
        if step.hardness < 0 and bound > radius * float(g_f.norm()) * sin:
            negative_kappa_where_reference_rule_fires += 1
            assert not step.stop
    assert negative_kappa_where_reference_rule_fires > 10
    # the SLSQP optimum agrees on a few of them
    for _ in range(30):
        g_r, g_f, bound, radius = _instance(rng, 4)
        value = g_r.numpy().dot(_slsqp(g_r, g_f, bound, radius))
        if abs(value) > 1e-6:
            assert hamu_update(g_r, g_f, bound=bound, radius=radius).stop == (value >= 0)


def test_degenerate_cases():
    g = torch.tensor([3.0, 4.0], dtype=DT)
    zero = torch.zeros(2, dtype=DT)
    # colinear, same direction: the shortest step meeting the bound, and retain cannot improve
    step = hamu_update(2 * g, g, bound=1.0, radius=1.0)
    torch.testing.assert_close(step.delta, g / 25.0)
    assert step.branch == "rectified" and step.stop
    # colinear, opposite: direct
    step = hamu_update(-g, g, bound=1.0, radius=1.0)
    assert step.branch == "direct"
    torch.testing.assert_close(step.delta, g / 5.0)
    # zero forget gradient: direct when B = 0, infeasible otherwise
    assert hamu_update(g, zero, bound=0.0, radius=1.0).branch == "direct"
    step = hamu_update(g, zero, bound=0.1, radius=1.0)
    assert step.branch == "infeasible" and torch.equal(step.delta, zero)
    # zero retain gradient: the shortest feasible step
    torch.testing.assert_close(hamu_update(zero, g, bound=1.0, radius=1.0).delta, g / 25.0)


def test_u_variant_is_q_on_swapped_negated_gradients():
    rng = np.random.default_rng(4)
    for _ in range(50):
        g_r, g_f, bound, radius = _instance(rng, 7)
        u = hamu_update(g_r, g_f, bound=bound * 0.3, radius=radius, variant="U")
        q = hamu_update(-g_f, -g_r, bound=bound * 0.3, radius=radius, variant="Q")
        assert torch.equal(u.delta, q.delta) and (u.branch, u.stop, u.hardness) == (q.branch, q.stop, q.hardness)
        if u.branch != "infeasible":  # the guarantee is now a retain decrease
            assert float(g_r @ u.delta) <= -bound * 0.3 + 1e-12


def test_segments_equal_the_per_block_loop():
    rng = np.random.default_rng(5)
    sizes = [7, 1, 30, 4, 12]
    for trial in range(40):
        blocks = [_instance(rng, s, feasible=bool(rng.random() < 0.8)) for s in sizes]
        blocks[1] = (blocks[1][0], torch.zeros(1, dtype=DT), 0.0, blocks[1][3])  # zero forget gradient
        if trial % 5 == 0:
            blocks[2] = (2.0 * blocks[2][1], blocks[2][1], blocks[2][2], blocks[2][3])  # colinear
        g_r = torch.cat([b[0] for b in blocks])
        g_f = torch.cat([b[1] for b in blocks])
        segments = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
        bounds = torch.tensor([b[2] for b in blocks], dtype=DT)
        radii = torch.tensor([b[3] for b in blocks], dtype=DT)
        fast = hamu_update_segments(g_r, g_f, segments, bounds=bounds, radii=radii)
        loop = [hamu_update(b[0], b[1], bound=b[2], radius=b[3]) for b in blocks]
        torch.testing.assert_close(fast.delta, torch.cat([s.delta for s in loop]), rtol=1e-10, atol=1e-12)
        assert [BRANCHES[i] for i in fast.branch.tolist()] == [s.branch for s in loop]
        assert fast.stop.tolist() == [s.stop for s in loop]


def test_bad_arguments_raise_with_advice():
    g = torch.ones(3)
    with pytest.raises(ValueError, match="bound"):
        hamu_update(g, g, bound=-1.0, radius=1.0)
    with pytest.raises(ValueError, match="same shape"):
        hamu_update(g, torch.ones(4), bound=0.0, radius=1.0)
    with pytest.raises(ValueError, match="variant"):
        hamu_update(g, g, bound=0.0, radius=1.0, variant="X")
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="relative"):
        HamuOptimizer(model.parameters(), lr=0.1, bound=1.5)
    with pytest.raises(ValueError, match="method"):
        unlearn(model, [], [], steps=1, lr=0.1, method="nope")


# ----------------------------------------------------------------------------- properties of the step (hypothesis)
_vec = st.lists(st.floats(-10, 10, allow_subnormal=False), min_size=2, max_size=12)


@settings(max_examples=300, deadline=None)
@given(gr=_vec, gf=_vec, frac=st.floats(0.0, 0.999), radius=st.floats(0.01, 5.0), mix=st.floats(-2, 2))
def test_property_hamu_step_is_feasible_and_optimal(gr, gf, frac, radius, mix):
    d = min(len(gr), len(gf))
    g_r = torch.tensor(gr[:d], dtype=DT)
    g_f = torch.tensor(gf[:d], dtype=DT) + mix * g_r  # correlated pairs reach every branch
    if float(g_f.norm()) < 1e-6:
        return
    bound = frac * radius * float(g_f.norm())
    step = hamu_update(g_r, g_f, bound=bound, radius=radius)
    delta = step.delta
    scale = 1e-9 * (1 + float(g_f.norm()) * radius)
    # feasible: the guaranteed forget increase and the radius
    assert float(g_f @ delta) >= bound - scale
    assert float(delta.norm()) <= radius * (1 + 1e-9)
    assert step.branch in ("direct", "rectified")
    # optimal against feasible candidates: −R ĝ_r projected into the constraint, the shortest
    # step (B/‖g_f‖²)g_f, and random feasible points
    rng = np.random.default_rng(len(gr) * 7 + len(gf))
    shortest = (bound / float(g_f @ g_f)) * g_f
    candidates = [shortest]
    for _ in range(20):
        u = torch.tensor(rng.normal(size=d), dtype=DT)
        u = u / u.norm() * radius * rng.uniform(0, 1)
        if float(g_f @ u) >= bound:
            candidates.append(u)
    for c in candidates:
        assert float(g_r @ delta) <= float(g_r @ c) + 1e-9 * (1 + float(g_r.norm()) * radius)
    # the stop flag says whether the optimum harms retain (g_r·δ ≥ 0). It is decided from κ ≥ κ₂,
    # whose two sides meet at colinear gradients: within rounding of colinear (|cos| > 1 − 1e-9)
    # the tie is not asserted, nor a g_r·δ within rounding of 0
    cos = float(g_r @ g_f) / max(float(g_r.norm() * g_f.norm()), 1e-300)
    if abs(float(g_r @ delta)) > 1e-9 * (1 + float(g_r.norm()) * radius) and abs(cos) < 1 - 1e-9:
        assert step.stop == (float(g_r @ delta) >= 0)


@settings(max_examples=200, deadline=None)
@given(gr=_vec, gf=_vec, frac=st.floats(1.001, 3.0), radius=st.floats(0.01, 5.0))
def test_property_infeasible_exactly_above_radius_times_forget_norm(gr, gf, frac, radius):
    d = min(len(gr), len(gf))
    g_r, g_f = torch.tensor(gr[:d], dtype=DT), torch.tensor(gf[:d], dtype=DT)
    if float(g_f.norm()) < 1e-6:
        return
    step = hamu_update(g_r, g_f, bound=frac * radius * float(g_f.norm()), radius=radius)
    assert step.branch == "infeasible" and not step.stop
    # the minimum-norm step (B/‖g_f‖²)·g_f meets the bound exactly
    assert float(g_f @ step.delta) == pytest.approx(frac * radius * float(g_f.norm()), rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(gr=_vec, gf=_vec, frac=st.floats(0.0, 0.99), radius=st.floats(0.01, 5.0))
def test_property_u_variant_is_q_on_swapped_negated_gradients(gr, gf, frac, radius):
    d = min(len(gr), len(gf))
    g_r, g_f = torch.tensor(gr[:d], dtype=DT), torch.tensor(gf[:d], dtype=DT)
    if float(g_r.norm()) < 1e-6:
        return
    bound = frac * radius * float(g_r.norm())
    u = hamu_update(g_r, g_f, bound=bound, radius=radius, variant="U")
    q = hamu_update(-g_f, -g_r, bound=bound, radius=radius, variant="Q")
    torch.testing.assert_close(u.delta, q.delta, atol=0, rtol=0)
    assert (u.branch, u.stop) == (q.branch, q.stop)
    # HAMU-U guarantees a retain-loss decrease of B: g_r·δ ≤ −B
    assert float(g_r @ u.delta) <= -bound + 1e-9 * (1 + float(g_r.norm()) * radius)
