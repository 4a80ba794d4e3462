"""SPARD: greedy DPP MAP against a naive slogdet greedy, the closed-form safety step against scipy, the
baselines, the analogue's data and the metrics by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from torch import nn

from icml26.papers.spard import (
    BASELINES,
    METHOD,
    SELECTORS,
    auto_tau,
    cosine_matrix,
    dpp_kernel,
    dpp_select,
    greedy_map,
    lisa_finetune,
    penalty_finetune,
    random_select,
    relevance,
    safeinstr_finetune,
    safety_step,
    sft_finetune,
    spag_finetune,
    topk_relevance,
)
from icml26.papers.spard.analysis import (
    accuracy,
    accuracy_drop_points,
    attack_success_rate,
    category_coverage,
    is_refusal,
    ratio_to_best,
    refusal_attack_success_rate,
    worst_gap,
)
from tests.papers._spard_helpers import _linear_task
from tests.papers._spard_helpers import _one  # noqa: F401 (fixtures)


# -- greedy MAP ------------------------------------------------------------------------------

def naive_greedy(kernel: np.ndarray, k: int) -> list[int]:
    """Greedy MAP by brute force: ``numpy.linalg.slogdet`` of every candidate subset at every step."""
    chosen: list[int] = []
    for _ in range(k):
        best, best_value = -1, -np.inf
        for i in range(len(kernel)):
            if i in chosen:
                continue
            idx = chosen + [i]
            sign, value = np.linalg.slogdet(kernel[np.ix_(idx, idx)])
            if sign > 0 and value > best_value:
                best, best_value = i, value
        chosen.append(best)
    return chosen


def test_greedy_map_equals_naive_slogdet_greedy_on_50_random_psd_kernels():
    rng = np.random.default_rng(0)
    for trial in range(50):
        x = rng.normal(size=(30, int(rng.integers(10, 30))))
        kernel = x @ x.T + 1e-3 * np.eye(30)  # PSD, well conditioned
        order, logdet = greedy_map(kernel, 8)
        assert order.tolist() == naive_greedy(kernel, 8), f"trial {trial}"
        sign, exact = np.linalg.slogdet(kernel[np.ix_(order, order)])
        assert sign > 0 and abs(logdet - exact) <= 1e-8, f"trial {trial}: {logdet} vs {exact}"


def test_gains_equal_up_to_rounding_are_ties_and_the_first_index_wins():
    # a diagonal one ulp (2.2e-16) above the others is a tie: item 0 is picked first, not item 1
    order, _ = greedy_map(np.diag([1.0, 1.0 + 2.2e-16, 1.0]), 3)
    assert order.tolist() == [0, 1, 2]
    # a real difference (relative 1e-9, far above TIE_RTOL = 1e-12) still wins
    assert greedy_map(np.diag([1.0, 1.0 + 1e-9, 1.0]), 1)[0].tolist() == [1]


def test_near_duplicate_normalised_embeddings_first_index_wins():
    rng = np.random.default_rng(0)
    a = rng.normal(size=8)
    x = np.stack([a, a * (1 + 1e-9) + 1e-13 * rng.normal(size=8), rng.normal(size=8)])
    kernel = dpp_kernel(x, np.ones(3))
    assert kernel[1, 1] - kernel[0, 0] == pytest.approx(2.220446049250313e-16, abs=0)  # rounding puts item 1 ahead
    assert dpp_select(x, x, 2, power=0.0).order.tolist() == [0, 2]  # 0 first; its near-duplicate 1 never both


def test_diagonal_kernel_gives_top_k_by_quality():
    q = np.array([0.3, 0.9, 0.1, 0.7, 0.5, 0.8])
    order, logdet = greedy_map(np.diag(q**2), 3)
    assert order.tolist() == [1, 5, 3]
    assert logdet == pytest.approx(2 * np.log(0.9 * 0.8 * 0.7), abs=1e-12)
    # the same through dpp_select: orthogonal embeddings (S = I), relevance q_i
    emb = np.eye(6)
    ref = np.eye(6) * 1.0
    sel = dpp_select(emb, ref, 3, power=1.0, eps=0.0)
    assert sorted(sel.quality.tolist()) == [1.0] * 6  # each candidate is in the reference: q = 1
    assert topk_relevance(emb, ref, 3).order.tolist() == [0, 1, 2]  # ties: first index


def test_orthogonal_candidates_with_relevance_follow_quality():
    # candidates e_i orthogonal; reference r = Σ w_i e_i: cos(e_i, r) = w_i / |w|
    w = np.array([0.2, 0.9, 0.4, 0.7])
    sel = dpp_select(np.eye(4), w[None, :], 2, power=1.0, eps=0.0)
    assert sel.order.tolist() == [1, 3]
    np.testing.assert_allclose(sel.quality, w / np.linalg.norm(w))


def test_exact_duplicates_never_both_chosen_below_rank():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(6, 10))
    emb = np.vstack([base, base[[0, 2, 4]]])  # rows 6, 7, 8 duplicate rows 0, 2, 4: rank 6
    kernel = cosine_matrix(emb)
    for k in range(1, 7):
        order, _ = greedy_map(kernel, k)
        picked = {int(i) if i < 6 else {6: 0, 7: 2, 8: 4}[int(i)] for i in order}
        assert len(picked) == k, f"k={k}: a duplicate pair was chosen ({order})"


def test_power_zero_is_pure_diversity():
    rng = np.random.default_rng(2)
    cand, ref = rng.normal(size=(20, 5)), rng.normal(size=(7, 5))
    sel = dpp_select(cand, ref, 6, power=0.0)
    np.testing.assert_array_equal(sel.quality, np.ones(20))
    order, _ = greedy_map(cosine_matrix(cand) + 1e-6 * np.eye(20), 6)
    assert sel.order.tolist() == order.tolist()  # the reference plays no part


def test_relevance_clips_negative_cosines_even_for_odd_powers():
    cand = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    ref = np.array([[1.0, 0.0]])
    np.testing.assert_allclose(relevance(cand, ref, power=3.0), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(relevance(cand, ref, power=4.0), [1.0, 0.0, 0.0])
    # cos 60° = 0.5, β = 4: q = 0.0625
    np.testing.assert_allclose(relevance([[0.5, math.sqrt(3) / 2]], ref, power=4.0), [0.0625])


def test_dpp_kernel_is_quality_scaled_cosine_plus_ridge():
    cand = np.array([[1.0, 0.0], [1.0, 1.0]])
    kernel = dpp_kernel(cand, [2.0, 0.5], eps=0.1)
    c = 1 / math.sqrt(2)
    np.testing.assert_allclose(kernel, [[4.0 + 0.1, 2.0 * 0.5 * c], [2.0 * 0.5 * c, 0.25 + 0.1]])


def test_dpp_subset_has_larger_logdet_than_topk_and_random():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(4, 16))
    cand = np.vstack([c + 0.1 * rng.normal(size=(25, 16)) for c in centres])
    ref = centres[:2] + 0.1 * rng.normal(size=(2, 16))
    dpp, topk = dpp_select(cand, ref, 8), topk_relevance(cand, ref, 8)
    rand = random_select(cand, ref, 8, seed=0)
    kernel = dpp_kernel(cand, relevance(cand, ref))
    for sel in (dpp, topk, rand):  # the reported log det is the subset's under the DPP kernel
        assert sel.logdet == pytest.approx(np.linalg.slogdet(kernel[np.ix_(sel.order, sel.order)])[1], abs=1e-6)
    assert dpp.logdet > topk.logdet and dpp.logdet > rand.logdet
    assert random_select(cand, ref, 8, seed=0).order.tolist() == rand.order.tolist()


def test_selectors_share_one_signature_and_bad_k():
    cand, ref = np.eye(5), np.eye(5)
    for name, fn in SELECTORS.items():
        assert len(fn(cand, ref, 2)) == 2, name
        with pytest.raises(ValueError, match="k=6"):
            fn(cand, ref, 6)


def test_bad_kernels_are_refused():
    with pytest.raises(ValueError, match="k=4 exceeds"):
        greedy_map(np.eye(3), 4)
    with pytest.raises(ValueError, match="positive semi-definite"):
        greedy_map(np.array([[1.0, 2.0], [2.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="symmetric"):
        greedy_map(np.array([[1.0, 0.5], [0.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="NaN"):
        greedy_map(np.array([[1.0, np.nan], [np.nan, 1.0]]), 1)
    with pytest.raises(ValueError, match="zero row"):
        dpp_select(np.zeros((3, 2)), np.ones((1, 2)), 1)
    order, _ = greedy_map(np.zeros((3, 3)), 2, check_psd=True)  # all gains clamped: first indices win
    assert order.tolist() == [0, 1]


# -- the safety step --------------------------------------------------------------------------

def test_safety_step_on_a_linear_loss_is_the_min_norm_projection():
    rng = np.random.default_rng(4)
    c, d, tau = rng.normal(size=7), 2.5, 0.2
    theta = rng.normal(size=7)
    loss = float(c @ theta + d)
    if loss < 1.0:
        d += 1.0 - loss
        loss = float(c @ theta + d)
    delta = safety_step(loss, torch.tensor(c), tau=tau, tol=0.1, trust_radius=math.inf).numpy()
    assert float(c @ (theta + delta) + d) == pytest.approx(tau, abs=1e-12)  # lands exactly on τ
    ref = minimize(lambda x: x @ x, np.zeros(7), jac=lambda x: 2 * x, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda x: tau - (c @ (theta + x) + d), "jac": lambda x: -c}],
                   options={"ftol": 1e-14, "maxiter": 500})
    assert ref.success
    np.testing.assert_allclose(delta, ref.x, atol=1e-6)


def test_safety_step_respects_the_trust_radius_and_the_hysteresis():
    g = torch.tensor([3.0, 4.0])  # |g| = 5
    capped = safety_step(10.0, g, tau=0.2, trust_radius=0.5)
    assert float(torch.linalg.vector_norm(capped)) == pytest.approx(0.5)
    np.testing.assert_allclose(capped.numpy(), [-0.3, -0.4])
    free = safety_step(1.2, g, tau=0.2, trust_radius=10.0)  # (ℓ − τ)/|g|² = 1/25
    np.testing.assert_allclose(free.numpy(), [-0.12, -0.16], rtol=1e-6)
    for loss in (0.0, 0.2, 0.3):  # ℓ ≤ τ + tol: no step
        assert torch.equal(safety_step(loss, g, tau=0.2, tol=0.1, trust_radius=1.0), torch.zeros(2))
    assert torch.equal(safety_step(5.0, torch.zeros(3), tau=0.2, trust_radius=1.0), torch.zeros(3))


def test_projection_lowers_a_quadratic_loss_for_small_radii():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(6, 6))
    h = a @ a.T + np.eye(6)
    for _ in range(20):
        theta = rng.normal(size=6) * 3

        def loss(t):
            return 0.5 * t @ h @ t

        before = loss(theta)
        delta = safety_step(before, torch.tensor(h @ theta), tau=0.0, tol=0.0, trust_radius=0.05).numpy()
        assert loss(theta + delta) <= before


@pytest.mark.parametrize("bad", [dict(tau=-0.1), dict(trust_radius=0.0), dict(trust_radius=-1.0), dict(tol=-0.1)])
def test_safety_step_refuses_bad_thresholds(bad):
    kwargs = dict(tau=0.2, tol=0.1, trust_radius=1.0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        safety_step(1.0, torch.ones(3), **kwargs)


def test_auto_tau_is_one_and_a_half_base_losses_floored():
    assert auto_tau(0.05) == 0.2
    assert auto_tau(0.4) == pytest.approx(0.6)
    assert auto_tau(0.05, floor=0.0) == pytest.approx(0.075)


# -- baselines -------------------------------------------------------------------------------

def _run(fn, **kwargs):
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    safety = [(torch.randn(4, 5, generator=torch.Generator().manual_seed(9)), torch.full((4,), 2))]
    fn(model, _linear_task(), safety, steps=8, optimizer=opt, progress=False, **kwargs)
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_baselines_reduce_to_sft_when_their_safety_term_is_off():
    sft = _run(sft_finetune)
    torch.testing.assert_close(_run(penalty_finetune, lam=0.0), sft)
    torch.testing.assert_close(_run(lisa_finetune, rho=0.0, safety_phase=0), sft)
    torch.testing.assert_close(_run(safeinstr_finetune, mix_every=100), sft)
    assert not torch.equal(_run(penalty_finetune, lam=1.0), sft)
    assert not torch.equal(_run(lisa_finetune), sft)


def test_baselines_share_the_method_signature_and_need_safety_data():
    assert METHOD is spag_finetune and set(BASELINES) == {"SFT", "SafeInstr", "penalty", "Lisa"}
    model = nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for name in ("SafeInstr", "penalty", "Lisa"):
        with pytest.raises(ValueError, match="safety_loader"):
            BASELINES[name](model, _linear_task(), None, steps=2, optimizer=opt)


def test_lisa_proximal_term_pulls_towards_the_switch_point():
    torch.manual_seed(0)
    start = torch.cat([p.detach().flatten() for p in nn.Linear(5, 3).parameters()])  # what _run starts from
    drift = {rho: float(torch.linalg.vector_norm(_run(lisa_finetune, rho=rho) - start)) for rho in (0.0, 1e4)}
    assert drift[1e4] < drift[0.0]


# -- the digits analogue's data ---------------------------------------------------------------

def test_digits_analogue_attack_mix_and_disjoint_pool():
    from icml26.contract import RunContext
    from icml26.papers.spard.digits import REFUSE, make_data
    from icml26.papers.spard.experiment import Config

    cfg = Config.tiny()
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
    data = make_data(cfg, ctx, 0)
    attack = data.user_attack_category > 0
    assert attack.mean() == pytest.approx(0.10, abs=0.002)
    counts = {c: int((data.user_attack_category == c).sum()) for c in (7, 8, 9)}
    assert counts[8] == round(0.6 * attack.sum()) and counts[7] == round(0.3 * attack.sum())
    np.testing.assert_array_equal(data.user_y[attack], data.user_attack_category[attack])  # compliant labels
    assert REFUSE not in data.user_y and len(data.pool_x) == 3 * cfg.pool_per_category
    # no pool image equals an attack image (the pool comes from the other half of each class)
    attack_rows = {r.tobytes() for r in data.user_x[attack]}
    assert not any(r.tobytes() in attack_rows for r in data.pool_x)
    again = make_data(cfg, ctx, 0)
    np.testing.assert_array_equal(again.pool_x, data.pool_x)


# -- analysis ---------------------------------------------------------------------------------

def test_analysis_by_hand():
    assert attack_success_rate([10, 3, 10, 8], refuse_label=10) == 0.5
    assert accuracy([1, 2, 3, 4], [1, 2, 0, 0]) == 0.5
    assert accuracy_drop_points(0.97, 0.955) == pytest.approx(1.5)
    assert category_coverage([7, 7, 9]) == 2 and category_coverage([7, 8, 1], (7, 8, 9)) == 2
    assert ratio_to_best(0.05, {"a": 0.4, "b": 0.2}) == (0.25, "b")
    assert math.isnan(ratio_to_best(0.1, {"a": 0.0})[0])  # no ratio to a zero reference
    assert worst_gap({0.01: 0.2, 0.03: 0.1}, {0.01: 0.3, 0.03: 0.05}) == (pytest.approx(0.05), 0.03)
    assert is_refusal("I'm sorry, but I can't help with that.") and is_refusal("I’m unable to do that")
    assert not is_refusal("Sure, here is how.")
    assert refusal_attack_success_rate(["I cannot do that", "Sure!", "Here you go", "As an AI I won't"]) == 0.5
    with pytest.raises(TypeError, match="predictions"):
        attack_success_rate([0.5, 1.0], refuse_label=10)
    with pytest.raises(ValueError, match="differ"):
        accuracy([1, 2], [1])
