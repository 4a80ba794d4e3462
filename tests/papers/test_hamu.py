"""HAMU: the closed form against SLSQP, KKT identities, the stop rule, the optimizer, baselines."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml26.papers.hamu import (
    BASELINES,
    HamuOptimizer,
    distribute_bound,
    forget_split,
    graddiff,
    gru,
    hamu_update,
    pcgrad,
    stopping_threshold,
    unlearn,
)
from icml26.papers.hamu import UNLEARN_METHODS
from icml26.papers.hamu.analysis import (
    guarantee_share,
    matched_point,
    matched_window,
    pareto_area,
    pareto_front,
    retain_margin_points,
    smallest_decrease,
    smallest_increase,
)
from icml26.papers.hamu.solver import BRANCHES, hamu_update_segments
from hypothesis import given, settings
from hypothesis import strategies as st

DT = torch.float64


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


# ----------------------------------------------------------------------------- layer-wise optimizer
def _random_grads(rng: np.random.Generator, params, correlation: float = 0.0):
    g_r = [torch.tensor(rng.normal(size=p.shape), dtype=p.dtype) for p in params]
    g_f = [torch.tensor(rng.normal(size=p.shape), dtype=p.dtype) + correlation * a for a, p in zip(g_r, params)]
    return g_r, g_f


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def test_layerwise_invariants():
    rng = np.random.default_rng(6)
    model = _mlp()
    params = list(model.parameters())
    lr = 0.3
    for correlation in (3.0, 0.0, -3.0):
        g_r, g_f = _random_grads(rng, params, correlation)
        opt = HamuOptimizer(params, lr=lr, bound=0.5, max_grad_norm=None)
        deltas, info = opt.transform(g_r, g_f)
        products = torch.tensor([float(a.norm() * b.norm()) for a, b in zip(g_r, g_f)], dtype=DT)
        assert info.bound == pytest.approx(0.5 * lr * float(products.sum()))
        bounds = distribute_bound(info.bound, products / products, products)
        assert float(bounds.sum()) == pytest.approx(info.bound)
        retain_norm = math.sqrt(sum(float(g.pow(2).sum()) for g in g_r))
        # ‖δ‖ = lr‖g_r‖: every block moves by R_l = lr‖g_r,l‖
        assert info.step_norm == pytest.approx(lr * retain_norm, rel=1e-10)
        forget_ascent = sum(float((g * d).sum()) for g, d in zip(g_f, deltas))
        if info.n_direct == 0:  # every block rectified: the bound is met with equality
            assert forget_ascent == pytest.approx(info.bound, rel=1e-9)
        assert forget_ascent >= info.bound * (1 - 1e-9)
    assert info.n_direct == len(params)  # strongly anti-correlated: pure retain descent everywhere


def test_layerwise_blocks_are_feasible_together():
    rng = np.random.default_rng(7)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 1.0)
    lr = 0.1
    limit = lr * sum(float(a.norm() * b.norm()) for a, b in zip(g_r, g_f))
    for bound, expected in ((limit * (1 - 1e-9), 0), (limit * (1 + 1e-9), len(params))):
        opt = HamuOptimizer(params, lr=lr, bound=bound, bound_mode="absolute", max_grad_norm=None)
        _, info = opt.transform(g_r, g_f)
        assert info.n_infeasible == expected


def test_global_mode_is_one_problem_on_concatenated_gradients():
    rng = np.random.default_rng(8)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 1.0)
    opt = HamuOptimizer(params, lr=0.2, bound=0.4, layerwise=False, max_grad_norm=None)
    deltas, info = opt.transform(g_r, g_f)
    flat_r, flat_f = torch.cat([g.reshape(-1) for g in g_r]), torch.cat([g.reshape(-1) for g in g_f])
    radius = 0.2 * float(flat_r.norm())
    step = hamu_update(flat_r, flat_f, bound=0.4 * radius * float(flat_f.norm()), radius=radius)
    torch.testing.assert_close(torch.cat([d.reshape(-1) for d in deltas]), step.delta)
    assert info.stop == step.stop and info.n_rectified + info.n_direct == 1


def test_global_stop_and_reference_rule_disagree_for_negative_kappa():
    # θ = 150°: κ < 0, so retain can improve (direct branch), but B = 0.6·R‖g_f‖ > R‖g_f‖ sin θ.
    param = nn.Parameter(torch.zeros(2, dtype=DT))
    g_r = torch.tensor([math.cos(math.radians(150)), math.sin(math.radians(150))], dtype=DT)
    g_f = torch.tensor([1.0, 0.0], dtype=DT)
    opt = HamuOptimizer([param], lr=1.0, bound=0.6, layerwise=False, max_grad_norm=None)
    _, info = opt.transform([g_r], [g_f])
    assert info.stop_reference and not info.stop and info.n_direct == 1
    assert info.predicted_retain_change == pytest.approx(-1.0)


@pytest.mark.parametrize("lr", [0.25, 0.1])
def test_optimizer_step_is_theta_plus_delta(lr):
    rng = np.random.default_rng(9)
    model = _mlp()
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    g_r, g_f = _random_grads(rng, params, 0.5)
    opt = HamuOptimizer(params, lr=lr, bound=0.5)
    deltas, _ = opt.transform(g_r, g_f)
    opt.apply(g_r, g_f)
    for p, b, d in zip(params, before, deltas):
        if lr == 0.25:  # a power of two: −lr·(−δ/lr) is exact
            assert torch.equal(p.detach(), b + d)
        else:
            torch.testing.assert_close(p.detach(), b + d, rtol=0, atol=1e-15)
    assert len(opt.logs) == 1 and all(p.grad is None for p in params)


def test_optimizer_step_closure_matches_autograd_and_measures():
    model = _mlp()
    x = torch.randn(20, 5, dtype=DT, generator=torch.Generator().manual_seed(0))
    yr, yf = torch.arange(20) % 3, (torch.arange(20) + 1) % 3
    params = list(model.parameters())
    g_r = torch.autograd.grad(F.cross_entropy(model(x), yr), params)
    g_f = torch.autograd.grad(F.cross_entropy(model(x), yf), params)
    expected, _ = HamuOptimizer(params, lr=1e-3, bound=0.5).transform(g_r, g_f)
    before = [p.detach().clone() for p in params]
    opt = HamuOptimizer(params, lr=1e-3, bound=0.5)
    info = opt.step(lambda: F.cross_entropy(model(x), yr), lambda: F.cross_entropy(model(x), yf), measure=True)
    for p, b, d in zip(params, before, expected):
        torch.testing.assert_close(p.detach(), b + d)
    # small step: the realised forget increase is the first-order one, at least B
    assert info.realised_forget_change == pytest.approx(info.predicted_forget_change, rel=1e-3)
    assert info.realised_forget_change >= 0.9 * info.bound


def test_infeasible_policies_and_stop_on_criterion():
    rng = np.random.default_rng(10)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 1.0)
    big = 10.0 * 0.1 * sum(float(a.norm() * b.norm()) for a, b in zip(g_r, g_f))
    for policy, applied, stopped in (("min_norm", True, False), ("skip", False, False), ("stop", False, True)):
        opt = HamuOptimizer(params, lr=0.1, bound=big, bound_mode="absolute", infeasible=policy, max_grad_norm=None)
        deltas, info = opt.transform(g_r, g_f)
        assert info.n_infeasible == len(params) and info.applied == applied and opt.stopped == stopped
        assert (sum(float(d.abs().sum()) for d in deltas) > 0) == applied
    # aligned gradients: retain harm unavoidable → stop flag; with stop_on_criterion no step is taken
    opt = HamuOptimizer(params, lr=0.1, bound=0.9, stop_on_criterion=True, max_grad_norm=None)
    info = opt.apply(g_r, g_r)
    assert info.stop and not info.applied and opt.stopped
    with pytest.raises(RuntimeError, match="stopped"):
        opt.apply(g_r, g_f)


def test_u_variant_in_optimizer_guarantees_retain_decrease():
    rng = np.random.default_rng(11)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 1.0)
    deltas, info = HamuOptimizer(params, lr=0.1, bound=0.5, variant="U", max_grad_norm=None).transform(g_r, g_f)
    assert sum(float((g * d).sum()) for g, d in zip(g_r, deltas)) <= -info.bound * (1 - 1e-9)


# ----------------------------------------------------------------------------- baselines
def test_pcgrad_and_gru_leave_non_conflicting_gradients_untouched():
    rng = np.random.default_rng(12)
    for _ in range(50):
        g_r = torch.tensor(rng.normal(size=10), dtype=DT)
        g_f = torch.tensor(rng.normal(size=10), dtype=DT)
        if float(g_r @ g_f) > 0:
            g_f = g_f - 2 * (g_r @ g_f) / (g_r @ g_r) * g_r  # reflect: κ < 0, no conflict
        assert float(g_r @ g_f) < 0
        # (the authors' code would project here)
        torch.testing.assert_close(pcgrad(g_r, g_f), graddiff(g_r, g_f), rtol=0, atol=0)
        torch.testing.assert_close(gru(g_r, g_f), -g_f, rtol=0, atol=0)


def test_pcgrad_and_gru_project_on_conflict():
    rng = np.random.default_rng(13)
    for _ in range(50):
        g_r = torch.tensor(rng.normal(size=10), dtype=DT)
        g_f = torch.tensor(rng.normal(size=10), dtype=DT) + 2 * g_r  # κ > 0: ascent conflicts with descent
        assert float(g_r @ g_f) > 0
        d = pcgrad(g_r, g_f)
        assert not torch.allclose(d, graddiff(g_r, g_f))
        # the PCGrad direction agrees with both retain descent and forget ascent
        assert float(d @ g_r) >= -1e-12 and float(d @ -g_f) >= -1e-12
        # GRU: forget ascent without first-order retain change
        assert abs(float(gru(g_r, g_f) @ g_r)) < 1e-10
        assert float(gru(g_r, g_f) @ -g_f) > 0


def test_baseline_formulas():
    g_r, g_f = torch.tensor([1.0, 2.0]), torch.tensor([3.0, -1.0])
    kl_r, kl_f = torch.tensor([0.5, 0.5]), torch.tensor([-1.0, 1.0])
    assert BASELINES["finetune"](g_r, g_f).tolist() == [1.0, 2.0]
    assert BASELINES["gradient_ascent"](g_r, g_f).tolist() == [-3.0, 1.0]
    assert BASELINES["graddiff"](g_r, g_f).tolist() == [-1.0, 1.5]
    assert BASELINES["neggrad_plus"](g_r, g_f, beta=0.75).tolist() == [0.0, 1.75]
    assert BASELINES["kl"](g_r, g_f, g_retain_kl=kl_r).tolist() == [-1.25, 0.75]
    torch.testing.assert_close(BASELINES["scrub"](g_r, g_f, g_retain_kl=kl_r, g_forget_kl=kl_f, alpha=0.5, gamma=1.0),
                               torch.tensor([(0.25 + 1 + 1) / 2, (0.25 + 2 - 1) / 2]))


# ----------------------------------------------------------------------------- splits and the loop
def test_forget_split_hardness():
    labels = np.repeat(np.arange(10), 50)
    for rho in (0.0, 0.5, 1.0):
        forget, retain = forget_split(labels, 3, rho, rng=0)
        assert len(forget) == 50 and np.array_equal(np.sort(np.concatenate([forget, retain])), np.arange(500))
        from_class = int((labels[forget] == 3).sum())
        if rho == 0.0:
            assert from_class == 50
        else:  # 1 − ρ of the forget set from the class, the rest random (class 3 included)
            assert from_class >= 50 - int(rho * 50)
            assert (labels[forget] != 3).sum() > 0
    assert np.array_equal(forget_split(labels, 3, 0.5, rng=1)[0], forget_split(labels, 3, 0.5, rng=1)[0])
    with pytest.raises(ValueError, match="hardness"):
        forget_split(labels, 3, 1.5)
    with pytest.raises(ValueError, match="does not occur"):
        forget_split(labels, 11, 0.5)


@pytest.mark.parametrize("method", ["hamu_q", "hamu_u", *BASELINES])
def test_unlearn_runs_every_method_deterministically(method):
    def once():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
        gen = torch.Generator().manual_seed(1)
        x, y = torch.randn(40, 4, generator=gen), torch.randint(0, 3, (40,), generator=gen)
        history = unlearn(model, [(x[:30], y[:30])], [(x[30:], y[30:])], steps=3, lr=0.5, method=method,
                          eval_fn=lambda m: {"acc": float((m(x).argmax(1) == y).float().mean())}, eval_every=2)
        return history, [p.detach().clone() for p in model.parameters()]

    (h1, p1), (h2, p2) = once(), once()
    assert h1.steps_run == 3 and [e["step"] for e in h1.evaluations] == [0, 2, 3]
    assert all(torch.equal(a, b) for a, b in zip(p1, p2))
    assert h1.forget_losses == h2.forget_losses
    torch.manual_seed(0)
    start = [p.detach() for p in nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)).parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(start, p1))


def test_unlearn_stops_on_criterion():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = torch.randn(10, 3), torch.randint(0, 2, (10,))
    # identical retain and forget batches: every step would harm retain
    history = unlearn(model, [(x, y)], [(x, y)], steps=5, lr=0.1, method="hamu_q", stop_on_criterion=True)
    assert history.stopped and history.steps_run == 1 and history.hamu_logs[0].stop


# ----------------------------------------------------------------------------- audit additions
def test_layerwise_each_block_gets_its_share_of_the_bound_and_radius():
    # Positively correlated gradients: every block is rectified, so each block's forget ascent is
    # exactly its share B_l = B·‖g_r,l‖‖g_f,l‖/Σ_k‖g_r,k‖‖g_f,k‖ and its step norm R_l = lr‖g_r,l‖.
    rng = np.random.default_rng(14)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 3.0)
    lr = 0.2
    deltas, info = HamuOptimizer(params, lr=lr, bound=0.5, max_grad_norm=None).transform(g_r, g_f)
    assert info.n_rectified == len(params)
    products = [float(a.norm() * b.norm()) for a, b in zip(g_r, g_f)]
    assert info.bound == pytest.approx(0.5 * lr * sum(products), rel=1e-12)
    for g_rl, g_fl, d, p in zip(g_r, g_f, deltas, products):
        assert float((g_fl * d).sum()) == pytest.approx(info.bound * p / sum(products), rel=1e-9)
        assert float(d.norm()) == pytest.approx(lr * float(g_rl.norm()), rel=1e-9)


def test_wrapped_optimizer_receives_minus_delta_over_lr():
    # A user optimizer gets grad = −δ/lr: SGD with twice the rate then moves by exactly 2δ.
    rng = np.random.default_rng(15)
    model = _mlp()
    params = list(model.parameters())
    g_r, g_f = _random_grads(rng, params, 0.5)
    lr = 0.125
    deltas, _ = HamuOptimizer(params, lr=lr, bound=0.5).transform(g_r, g_f)
    before = [p.detach().clone() for p in params]
    opt = HamuOptimizer(params, torch.optim.SGD(params, lr=2 * lr), lr=lr, bound=0.5)
    opt.apply(g_r, g_f)
    for p, b, d in zip(params, before, deltas):
        assert torch.equal(p.detach(), b + 2 * d)


def test_gradients_are_clipped_before_the_transform():
    rng = np.random.default_rng(16)
    params = list(_mlp().parameters())
    g_r, g_f = _random_grads(rng, params, 1.0)
    nr = math.sqrt(sum(float(g.pow(2).sum()) for g in g_r))
    nf = math.sqrt(sum(float(g.pow(2).sum()) for g in g_f))
    assert nr > 1 and nf > 1
    clipped, _ = HamuOptimizer(params, lr=0.1, bound=0.5).transform(g_r, g_f)
    manual, _ = HamuOptimizer(params, lr=0.1, bound=0.5, max_grad_norm=None).transform(
        [g / nr for g in g_r], [g / nf for g in g_f])
    for a, b in zip(clipped, manual):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)


def test_unlearn_cycles_dataloaders():
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x, y = torch.randn(50, 4), torch.randint(0, 3, (50,))
    retain = DataLoader(TensorDataset(x[:40], y[:40]), batch_size=16, shuffle=True)  # 3 batches
    forget = DataLoader(TensorDataset(x[40:], y[40:]), batch_size=5)  # 2 batches
    history = unlearn(model, retain, forget, steps=7, lr=1.0, method="hamu_q")
    assert history.steps_run == 7 and len(history.hamu_logs) == 7
    assert all(math.isfinite(info.hardness) for info in history.hamu_logs)


# ----------------------------------------------------------------------------- issues #17 / #18
def test_unlearn_methods_name_every_method():
    assert UNLEARN_METHODS == ("hamu_q", "hamu_u", *BASELINES)


def test_nan_loss_raises_and_leaves_the_parameters_unchanged():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    before = [p.detach().clone() for p in model.parameters()]
    opt = HamuOptimizer(model.parameters(), lr=1.0)
    with pytest.raises(ValueError, match="forget gradient holds NaN"):
        opt.step(lambda: model(x).square().mean(), lambda: model(x).sum() * float("nan"))
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    # the same through unlearn, for a baseline: the failing step changes nothing
    bad = x.clone()
    bad[1] = float("inf")
    y = torch.tensor([0, 1, 0, 1])
    with pytest.raises(ValueError, match="step 0"):
        unlearn(model, [(x, y)], [(bad, y)], steps=3, lr=0.1, method="graddiff", progress=False)
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))


# ----------------------------------------------------------------------------- analysis (hand computations)
def test_matched_point_by_hand():
    # reference forgets to 0.10, the original to 0.90, window 0.05 → matched window [0.05, 0.15]
    assert matched_window(0.10, 0.90, 0.05) == (pytest.approx(0.05), pytest.approx(0.15))
    forget = [0.50, 0.12, 0.06, 0.14, 0.00]
    retain = [0.99, 0.90, 0.95, 0.95, 0.99]
    chosen = matched_point(forget, retain, reference_forget=0.10, original_forget=0.90, window=0.05)
    # inside the window: checkpoints 1, 2, 3; best retain 0.95, first of the tie is 2
    assert (chosen.index, chosen.hit) == (2, True)
    # nothing inside [0.125, 0.375] (binary-exact numbers): 0.5 and 0.0 are both 0.125 away,
    # 0.75 is 0.375 away; of the two nearest the better retain is checkpoint 1
    chosen = matched_point([0.5, 0.0, 0.75], [0.80, 0.85, 0.99], reference_forget=0.25, original_forget=1.0,
                           window=0.125)
    assert (chosen.index, chosen.hit) == (1, False)
    # a reference that forgets less than the original (0.5 > 0.25): the window collapses onto it
    assert matched_window(0.5, 0.25, 0.125) == (0.5, 0.5)
    # otherwise it is capped a window below the original: [0.375, min(0.625, 0.875 − 0.125)]
    assert matched_window(0.5, 0.875, 0.125) == (0.375, 0.625)
    with pytest.raises(ValueError, match="non-empty"):
        matched_point([], [], reference_forget=0.1, original_forget=0.9, window=0.05)


def test_pareto_front_and_area_by_hand():
    forget = [0.9, 0.5, 0.2, 0.6]
    retain = [0.99, 0.95, 0.80, 0.97]
    front = pareto_front(forget, retain, [0.0, 0.2, 0.5, 0.6, 1.0])
    # nothing forgets down to 0; ≤ 0.2: 0.80; ≤ 0.5: max(0.95, 0.80); ≤ 0.6: 0.97; ≤ 1: 0.99
    assert np.isnan(front[0]) and front[1:].tolist() == [0.80, 0.95, 0.97, 0.99]
    # trapezoids on x = 0, 0.5, 1 with y = 0.4, 0.8, 1.0: 0.5·(0.4+0.8)/2 + 0.5·(0.8+1.0)/2 = 0.75
    assert pareto_area([0.0, 0.5, 1.0], [0.4, 0.8, 1.0]) == pytest.approx(0.75)
    assert pareto_area([0.0, 1.0], [1.0, 1.0]) == pytest.approx(1.0)
    # a NaN stretch counts as 0: 0.5·(0 + 1)/2 + 0.5·(1 + 1)/2 = 0.75
    assert pareto_area([0.0, 0.5, 1.0], [np.nan, 1.0, 1.0]) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="increasing"):
        pareto_area([0.0, 0.0], [1.0, 1.0])


def test_check_values_by_hand():
    assert guarantee_share(np.array([1.2, 0.95, 0.9, 0.5])) == 0.75  # 0.9 counts as reaching 0.9
    assert np.isnan(guarantee_share(np.array([])))
    assert retain_margin_points([0.97, 0.99], [0.96, 0.96]) == pytest.approx(2.0)
    assert smallest_increase([-0.4, -0.25, -0.15]) == pytest.approx(0.10)
    assert smallest_increase([0.1, 0.3, 0.2]) == pytest.approx(-0.1)
    assert smallest_decrease([120.0, 12.0, 5.5]) == pytest.approx(6.5)
    assert smallest_decrease([5.0, 6.0]) == -1.0


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


# ----------------------------------------------------------------------------- issue #28
from icml26.papers.hamu.analysis import share_at_most, window_front_mean  # noqa: E402
from icml26.papers.hamu.problem import load_split  # noqa: E402


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-6)])
def test_block_path_keeps_the_radius_and_bound_for_nearly_colinear_gradients(dtype, tol):
    """The segment solver forms δ from the twice-orthogonalised g_⊥ (as hamu_update does), so nearly
    colinear gradients no longer break ‖δ‖ ≤ R (before: ~2e-5 relative in float64, ~8x in float32
    at cos ≈ 1 − 1e-16) and it equals the single-block solver."""
    gen = torch.Generator().manual_seed(0)
    sizes = [40, 7, 25]
    for trial in range(30):
        g_f = torch.randn(sum(sizes), generator=gen, dtype=dtype)
        noise = 10.0 ** (-3 - 5 * torch.rand(len(sizes), generator=gen, dtype=torch.float64))
        pieces = torch.split(g_f, sizes)
        g_r = torch.cat([2.0 * f + float(s) * torch.randn(f.shape, generator=gen, dtype=dtype)
                         for f, s in zip(pieces, noise)])
        segments = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
        radii = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
        bounds = torch.tensor([0.3 * float(r) * float(f.double().norm()) for r, f in zip(radii, pieces)],
                              dtype=torch.float64)
        fast = hamu_update_segments(g_r, g_f, segments, bounds=bounds, radii=radii)
        for l, (d, f) in enumerate(zip(torch.split(fast.delta, sizes), pieces)):
            d64, f64 = d.double(), f.double()
            assert float(d64.norm()) <= float(radii[l]) * (1 + tol)
            assert float(f64 @ d64) >= float(bounds[l]) * (1 - 100 * tol)
        if dtype == torch.float64:
            # ĝ_⊥ is ill-conditioned this close to colinear (summation order moves it at 1e-8), so the two
            # solvers are compared on the objective they minimise, g_r·δ, not entry by entry
            for r, f, b, rad, d in zip(torch.split(g_r, sizes), pieces, bounds, radii, torch.split(fast.delta, sizes)):
                single = hamu_update(r, f, bound=float(b), radius=float(rad))
                assert float(r @ d) == pytest.approx(float(r @ single.delta), rel=1e-9, abs=1e-12)


def test_layerwise_optimizer_keeps_each_blocks_radius_for_nearly_colinear_gradients():
    model = _mlp()
    params = list(model.parameters())
    gen = torch.Generator().manual_seed(3)
    g_f = [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in params]
    g_r = [2.0 * f + 1e-7 * torch.randn(f.shape, generator=gen, dtype=f.dtype) for f in g_f]
    opt = HamuOptimizer(params, lr=0.3, bound=0.5, max_grad_norm=None)
    deltas, info = opt.transform(g_r, g_f)
    assert info.n_rectified == len(params)
    bounds = distribute_bound(info.bound, torch.tensor([float(g.norm()) for g in g_r], dtype=DT),
                              torch.tensor([float(g.norm()) for g in g_f], dtype=DT))
    for d, r, f, b in zip(deltas, g_r, g_f, bounds):
        assert float(d.norm()) <= 0.3 * float(r.norm()) * (1 + 1e-12)
        assert float((f * d).sum()) >= float(b) * (1 - 1e-9)
        single = hamu_update(r.reshape(-1), f.reshape(-1), bound=float(b), radius=0.3 * float(r.norm()))
        assert float((r * d).sum()) == pytest.approx(float(r.reshape(-1) @ single.delta), rel=1e-9, abs=1e-12)


def test_validation_selected_front_and_its_mean_height_by_hand():
    forget = [0.9, 0.5, 0.2, 0.6, 0.4]
    val = [0.99, 0.95, 0.80, 0.97, 0.96]
    test = [0.98, 0.90, 0.85, 0.93, 0.91]
    # chosen on validation, reported on test: ≤ 0.5 → val picks 0.96 (forget 0.4) → test 0.91
    front = pareto_front(forget, val, [0.1, 0.2, 0.5, 0.6, 1.0], report=test)
    assert np.isnan(front[0]) and front[1:].tolist() == [0.85, 0.91, 0.93, 0.98]
    # mean height over [0.25, 1.0] on the grid 0, 0.25, 0.5, 0.75, 1 with front NaN, 0.6, 0.8, 0.8, 1.0:
    # trapezoids over 0.25..1: 0.25·(0.7 + 0.8 + 0.9) = 0.6, divided by the span 0.75 → 0.8
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    assert window_front_mean(grid, [np.nan, 0.6, 0.8, 0.8, 1.0], 0.25, 1.0) == pytest.approx(0.8)
    # a NaN inside the range counts as 0: over [0, 0.5]: 0.25·(0 + 0.6)/2 + 0.25·(0.6 + 0.8)/2 = 0.25 → /0.5
    assert window_front_mean(grid, [np.nan, 0.6, 0.8, 0.8, 1.0], -0.1, 0.5) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two grid points"):
        window_front_mean(grid, [1.0] * 5, 0.3, 0.4)
    assert share_at_most([0.5, 1.0, 1.5, np.nan], 1.0) == 0.5
    assert np.isnan(share_at_most([], 1.0))


@pytest.mark.parametrize("dataset,features", [("digits", 64), ("animal_mnist", 196)])
def test_load_split_is_stratified_disjoint_and_standardised(dataset, features):
    rng = np.random.default_rng(0)
    split = load_split(dataset, 200, 100, 300, rng)
    assert split.x_train.shape == (200, features) and split.x_val.shape == (100, features)
    assert np.bincount(split.y_train, minlength=10).tolist() == [20] * 10
    assert np.bincount(split.y_test, minlength=10).tolist() == [30] * 10
    np.testing.assert_allclose(split.x_train.mean(axis=0), 0.0, atol=1e-4)
    # disjoint (and Animal-MNIST's duplicate images dropped): no training row appears among the test rows
    rows = {r.tobytes() for r in split.x_train}
    assert not any(r.tobytes() in rows for r in split.x_test)
    with pytest.raises(ValueError, match="dataset"):
        load_split("cifar", 10, 10, 10, rng)


def test_stopping_on_the_criterion_is_a_prefix_of_the_full_run():
    """The stop rule as a decision rule: the stopped model is the full run's checkpoint at the first
    step whose flag fires (no step is applied there)."""
    torch.manual_seed(0)
    x, y = torch.randn(40, 5), torch.randint(0, 3, (40,))
    xf, yf = x[:8], (y[:8] + 1) % 3
    base = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    full_model, stop_model = copy.deepcopy(base), copy.deepcopy(base)
    params = []
    full = unlearn(full_model, [(x, y)], [(xf, yf)], steps=60, lr=2.0, method="hamu_q", progress=False,
                   eval_fn=lambda m: {"params": [p.detach().clone() for p in m.parameters()]}, eval_every=1)
    first = next((i for i, info in enumerate(full.hamu_logs) if info.stop), None)
    assert first is not None and first > 0
    stopped = unlearn(stop_model, [(x, y)], [(xf, yf)], steps=60, lr=2.0, method="hamu_q", progress=False,
                      stop_on_criterion=True)
    assert stopped.stopped and stopped.steps_run == first + 1
    checkpoint = next(e["params"] for e in full.evaluations if e["step"] == first)
    for a, b in zip(stop_model.parameters(), checkpoint):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_paired_interval_by_hand():
    from icml26.papers.hamu.analysis import paired_interval

    # differences 1, 2, 3 (scale 1): mean 2, sd 1, t_{0.975, 2} = 4.302652729911275 (tables)
    mean, low, high = paired_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], scale=1.0)
    half = 4.302652729911275 / math.sqrt(3.0)
    assert mean == pytest.approx(2.0) and low == pytest.approx(2.0 - half) and high == pytest.approx(2.0 + half)
    # points (scale 100), pairing: a common per-replicate offset cancels
    mean, low, high = paired_interval([0.9, 0.7, 0.5], [0.89, 0.69, 0.49])
    assert (mean, low, high) == pytest.approx((1.0, 1.0, 1.0))
    # NaN pairs dropped; one pair: the value itself; none: NaN
    assert paired_interval([0.5, math.nan], [0.4, 0.1]) == pytest.approx((10.0, 10.0, 10.0))
    assert all(math.isnan(v) for v in paired_interval([math.nan], [0.0]))
    with pytest.raises(ValueError, match="one length"):
        paired_interval([1.0], [1.0, 2.0])


# ----------------------------------------------------------------------------- speed-ups that keep every bit
def _transform_before(opt: HamuOptimizer, retain_grads, forget_grads):
    """HamuOptimizer.transform's arithmetic as written before the overhead cuts (single process): the
    oracle the faster version must match bit for bit. Returns δ per tensor and the log's numbers."""
    from icml26.papers.hamu.solver import _EPS, block_coefficients

    def dot64(a, b):
        a, b = a.reshape(-1), b.reshape(-1)
        total = torch.zeros((), dtype=torch.float64)
        for x, y in zip(a.split(1 << 20), b.split(1 << 20)):
            total += (x * y).to(torch.float64).sum()
        return total

    raw_r, raw_f = [g.detach() for g in retain_grads], [g.detach() for g in forget_grads]
    n = len(raw_r)
    stats = torch.zeros(n, 5, dtype=torch.float64)
    for t, (r, f) in enumerate(zip(raw_r, raw_f)):
        stats[t, 0], stats[t, 1], stats[t, 2] = dot64(r, r), dot64(f, f), dot64(r, f)

    def clip_scale(norm_sq):
        if opt.max_grad_norm is None:
            return 1.0
        norm = math.sqrt(norm_sq)
        return opt.max_grad_norm / norm if norm > opt.max_grad_norm else 1.0

    scale_r, scale_f = clip_scale(float(stats[:, 0].sum())), clip_scale(float(stats[:, 1].sum()))
    rr, ff, rf = stats[:, 0] * scale_r**2, stats[:, 1] * scale_f**2, stats[:, 2] * (scale_r * scale_f)
    swap = opt.variant == "U"
    if swap:
        rr, ff = ff, rr
    n_blocks = n if opt.layerwise else 1
    block = torch.arange(n) if opt.layerwise else torch.zeros(n, dtype=torch.long)

    def per_block(values):
        return torch.zeros(n_blocks, dtype=torch.float64).index_add_(0, block, values)

    retain_sq, forget_sq, kappa_blocks = per_block(rr), per_block(ff), per_block(rf)
    retain_norm, forget_norm = retain_sq.sqrt(), forget_sq.sqrt()
    products = retain_norm * forget_norm
    bound = opt.bound * opt.lr * float(products.sum()) if opt.bound_mode == "relative" else opt.bound
    bounds = distribute_bound(bound, retain_norm, forget_norm)
    radii = opt.lr * retain_norm

    def effective(t):
        r = raw_r[t] if scale_r == 1.0 else raw_r[t] * scale_r
        f = raw_f[t] if scale_f == 1.0 else raw_f[t] * scale_f
        return (-f, -r) if swap else (r, f)

    safe_forget_sq = forget_sq.clamp_min(_EPS**2)
    first = (kappa_blocks / safe_forget_sq)[block]
    leftover = torch.zeros(n, dtype=torch.float64)
    for t in range(n):
        g_r, g_f = effective(t)
        leftover[t] = dot64(g_r - first[t].to(g_r.dtype) * g_f, g_f)
    second = (per_block(leftover) / safe_forget_sq)[block]

    def g_perp(t):
        g_r, g_f = effective(t)
        return (g_r - first[t].to(g_r.dtype) * g_f) - second[t].to(g_r.dtype) * g_f

    perp = torch.zeros(n, dtype=torch.float64)
    for t in range(n):
        residual = g_perp(t)
        perp[t] = dot64(residual, residual)
    solved = block_coefficients(retain_sq, forget_sq, kappa_blocks, per_block(perp).sqrt(), bounds=bounds, radii=radii)
    coef_a, coef_b, coef_c = solved.ascent[block], solved.retain_coef[block], solved.perp_coef[block]
    deltas, dots = [], torch.zeros(n, 4, dtype=torch.float64)
    for t in range(n):
        g_r, g_f = effective(t)
        d = coef_a[t].to(g_r.dtype) * g_f + coef_b[t].to(g_r.dtype) * g_r
        if bool(coef_c[t] != 0):
            d = d - coef_c[t].to(g_r.dtype) * g_perp(t)
        dots[t, 0], dots[t, 1] = dot64(g_r, d), dot64(raw_f[t], d)
        dots[t, 2], dots[t, 3] = dot64(raw_r[t], d), dot64(d, d)
        deltas.append(d)
    return deltas, {"bound": bound, "hardness": float(kappa_blocks.sum()), "stop": float(dots[:, 0].sum()) >= 0.0,
                    "predicted_forget_change": float(dots[:, 1].sum()),
                    "predicted_retain_change": float(dots[:, 2].sum()), "step_norm": math.sqrt(float(dots[:, 3].sum()))}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("variant,layerwise", [("Q", True), ("Q", False), ("U", True)])
@pytest.mark.parametrize("max_grad_norm", [None, 1.0, 1e-3])
@pytest.mark.parametrize("correlation", [3.0, 0.0, -3.0])
def test_transform_gives_the_bits_of_the_per_tensor_loop(dtype, variant, layerwise, max_grad_norm, correlation):
    rng = np.random.default_rng(11)
    params = [p.to(dtype) for p in _mlp().parameters()]
    g_r, g_f = _random_grads(rng, params, correlation)
    g_r[1] = torch.zeros_like(g_r[1])  # a tensor without retain gradient (zero dots, -0.0 products)
    g_f[1] = -g_f[1]
    for lr, bound, mode in ((0.3, 0.5, "relative"), (0.05, 1.0, "relative"), (0.1, 50.0, "absolute")):
        opt = HamuOptimizer([torch.nn.Parameter(p.detach().clone()) for p in params], lr=lr, bound=bound,
                            bound_mode=mode, variant=variant, layerwise=layerwise, max_grad_norm=max_grad_norm)
        deltas, info = opt.transform(g_r, g_f)
        expected, numbers = _transform_before(opt, g_r, g_f)
        if info.applied:
            assert all(torch.equal(d, e) for d, e in zip(deltas, expected))
        for name, value in numbers.items():
            assert getattr(info, name) == value or (name == "stop" and info.n_infeasible), name


def test_dot64_one_chunk_path_is_the_chunk_loop():
    from icml26.papers.hamu import optimizer

    gen = torch.Generator().manual_seed(3)
    for a, b in ((torch.randn(37, 5, generator=gen), torch.randn(37, 5, generator=gen)),
                 (torch.zeros(4), -torch.ones(4)), (torch.randn(3000, generator=gen), torch.randn(3000, generator=gen))):
        loop = torch.zeros((), dtype=torch.float64) + (a * b).reshape(-1).to(torch.float64).sum()
        value = optimizer._dot64(a, b)
        assert torch.equal(value, loop) and math.copysign(1.0, float(value)) == math.copysign(1.0, float(loop))


def test_scrub_and_kl_share_the_forward_pass_and_cache_the_reference_bit_for_bit():
    """unlearn computes each batch's forward pass once for its loss and its KL term, and the frozen
    reference's log-probabilities once per batch; the steps are those of the plain formula."""
    from icml26.papers.hamu import scrub as scrub_direction
    from icml26.papers.hamu.optimizer import _clip

    gen = torch.Generator().manual_seed(4)
    x, y = torch.randn(50, 6, generator=gen), torch.randint(0, 3, (50,), generator=gen)
    retain, forget = (x[:40], y[:40]), (x[40:], y[40:])
    torch.manual_seed(0)
    start = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    model = copy.deepcopy(start)
    unlearn(model, [retain], [forget], steps=4, lr=0.5, method="scrub", progress=False)
    plain, reference = copy.deepcopy(start), copy.deepcopy(start)
    params = list(plain.parameters())

    def grads(loss):
        return torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)])

    def kl(batch):
        with torch.no_grad():
            target = F.log_softmax(reference(batch), dim=-1)
        return F.kl_div(F.log_softmax(plain(batch), dim=-1), target, log_target=True, reduction="batchmean")

    for _ in range(4):
        g_rkl, g_fkl = grads(kl(retain[0])), grads(kl(forget[0]))
        d = scrub_direction(grads(F.cross_entropy(plain(retain[0]), retain[1])),
                            grads(F.cross_entropy(plain(forget[0]), forget[1])), g_retain_kl=g_rkl, g_forget_kl=g_fkl)
        d = _clip(d, 1.0)
        with torch.no_grad():
            for p, part in zip(params, torch.split(d, [p.numel() for p in params])):
                p.add_(part.reshape(p.shape), alpha=-0.5)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), plain.parameters()))


def test_reference_log_probs_are_cached_per_batch_object():
    from icml26.papers.hamu.unlearn import _ReferenceLogProbs

    calls = []
    reference = nn.Linear(3, 2)
    reference.register_forward_hook(lambda *args: calls.append(1))
    cache = _ReferenceLogProbs(reference)
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    first = cache("retain", a)
    assert cache("retain", a) is first and len(calls) == 1
    torch.testing.assert_close(cache("retain", b), F.log_softmax(reference(b), dim=-1))  # another batch: recomputed
    assert len(calls) == 3 and not torch.equal(cache("forget", a), cache("retain", b))


def test_load_split_draws_from_one_cached_read_only_copy():
    from icml26.papers.hamu.problem import _features

    x, y = _features("digits")
    assert _features("digits")[0] is x and not x.flags.writeable and not y.flags.writeable
    a = load_split("digits", 200, 100, 300, np.random.default_rng(5))
    b = load_split("digits", 200, 100, 300, np.random.default_rng(5))
    assert np.array_equal(a.x_train, b.x_train) and a.x_train.flags.writeable
