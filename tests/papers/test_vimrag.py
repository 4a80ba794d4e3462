"""VimRAG: the memory graph, water-filling budgets, GGPO's mask and loss, and the reproduction's pieces.

Numbers from outside the code: networkx's DAG algorithms, hand-worked allocations and losses, a
brute-force bisection of the water level, a tabular policy's exact zero gradient, a tiny random
``Qwen2ForCausalLM`` (GGPO gradient = GRPO gradient of the trajectory without the masked tokens
= an explicit per-token loop), ``Qwen2VLImageProcessorPil``'s own token counts, scikit-learn's
digits.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.vimrag import (
    Action,
    EnergyFn,
    MemoryGraph,
    PixelAllocation,
    VisualItem,
    allocate_budget,
    ggpo_loss,
    ggpo_mask,
    ggpo_mask_from_membership,
    graph_modulated_allocation,
    grpo_advantages,
    grpo_loss,
    item_features,
    priority_allocation,
    processor_kwargs,
    recency_allocation,
    run_agent,
    snap_allocation,
    token_logprobs,
    token_steps,
    tokenize_trajectory,
    truncate_budget,
    uniform_allocation,
)
from icml26.papers.vimrag.analysis import (
    iterations_to_reach,
    median_ratio,
    points_gap,
    spread_points,
    sum_mod_distribution,
    tail_mean,
)


# ---------------------------------------------------------------------------
# Memory graph
# ---------------------------------------------------------------------------
def chain_with_dead_end():
    """root -> a -> b -> ans and root -> c (a dead end): the issue's worked example."""
    g = MemoryGraph("question")
    a = g.add_node("a", parents=[g.root])
    c = g.add_node("c", parents=[g.root])
    b = g.add_node("b", parents=[a])
    ans = g.add_node("answer", parents=[b], action="answer")
    return g, a, b, c, ans


def random_graph(rng: np.random.Generator, n: int) -> MemoryGraph:
    g = MemoryGraph("q")
    ids = [g.root]
    for i in range(n):
        k = int(rng.integers(1, min(3, len(ids)) + 1))
        parents = [ids[j] for j in rng.choice(len(ids), k, replace=False)]
        items = [VisualItem(i, float(rng.uniform(0.1, 2.0))) for _ in range(int(rng.integers(0, 3)))]
        ids.append(g.add_node(f"n{i}", parents=parents, items=items, step=i + 1))
    return g


def test_cycle_rejected():
    g, a, b, c, ans = chain_with_dead_end()
    with pytest.raises(ValueError, match="cycle"):
        g.add_edge(b, a)                       # a -> b already: b -> a closes a cycle
    with pytest.raises(ValueError, match="cycle"):
        g.add_edge(ans, g.root)                # through the whole chain
    with pytest.raises(ValueError, match="cycle"):
        g.add_node("self", parents=["me"], node_id="me")
    with pytest.raises(ValueError, match="unknown parent"):
        g.add_node("x", parents=[42])
    g.add_edge(c, b)                           # a new DAG edge is fine
    assert set(g.parents(b)) == {a, c}
    assert nx.is_directed_acyclic_graph(nx.DiGraph(g.edges()))


@pytest.mark.parametrize("seed", range(5))
def test_topological_order_respects_every_edge_and_matches_networkx(seed):
    g = random_graph(np.random.default_rng(seed), 25)
    # a few extra edges from earlier to later nodes
    nodes = g.nodes()
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        i, j = sorted(rng.choice(len(nodes), 2, replace=False))
        g.add_edge(nodes[i], nodes[j])
    order = g.topological_order()
    pos = {v: k for k, v in enumerate(order)}
    assert sorted(order) == sorted(nodes)
    assert all(pos[p] < pos[c] for p, c in g.edges())
    dg = nx.DiGraph(g.edges())
    assert nx.is_directed_acyclic_graph(dg)
    for v in nodes:
        assert g.ancestors(v) == nx.ancestors(dg, v)
        assert g.out_degree(v) == dg.out_degree(v)


def test_answer_path_is_the_ancestors_plus_the_answer():
    g, a, b, c, ans = chain_with_dead_end()
    assert g.answer_path() == {g.root, a, b, ans}
    g.add_edge(c, ans)                         # the answer now also cites c
    assert g.answer_path() == {g.root, a, b, c, ans}
    rng = np.random.default_rng(3)
    for _ in range(5):
        h = random_graph(rng, 15)
        v = h.nodes()[int(rng.integers(1, len(h)))]
        final = h.add_node("ans", parents=[v], action="answer")
        assert h.answer_path() == nx.ancestors(nx.DiGraph(h.edges()), final) | {final}


def test_serialize_lists_nodes_in_topological_order_with_token_counts():
    g = MemoryGraph("q")
    a = g.add_node("find poster", parents=[g.root], items=[VisualItem("p", 1.0, name="poster")], summary="a poster")
    g.add_node("tower", parents=[a], items=[VisualItem("t", 1.0)])
    text = g.serialize([64, 0])
    assert text.index("find poster") < text.index("tower")
    assert "poster: <image> x 64 tokens" in text and "(dropped)" in text and "summary: a poster" in text


# ---------------------------------------------------------------------------
# Energy
# ---------------------------------------------------------------------------
def test_energy_by_hand():
    g = MemoryGraph("q")
    a = g.add_node("a", parents=[g.root], items=[VisualItem("x", 2.0)], step=1)
    g.add_node("b", parents=[a], items=[VisualItem("y", 1.0)], step=2)
    g.add_node("c", parents=[a], items=[VisualItem("z", 0.5)], step=3)
    # now = 3; deg+(a) = 2: E_a = 2 * 3 * 0.8^2, E_b = 1 * 1 * 0.8, E_c = 0.5
    assert np.allclose(EnergyFn()(g), [3.84, 0.8, 0.5])
    assert np.allclose(EnergyFn(lam=0.0, gamma=1.0)(g), [2.0, 1.0, 0.5])  # priority only
    assert np.allclose(EnergyFn(lam=0.5, gamma=0.5)(g, now=5), [2 * 2 * 0.5 ** 4, 0.5 ** 3, 0.5 * 0.5 ** 2])
    # a plugged-in structure: 1 for nodes with children
    assert np.allclose(EnergyFn(structure=lambda gr, v: float(gr.out_degree(v) > 0))(g), [2 * 2 * 0.64, 0.8, 0.5])
    f = item_features(g)
    assert f.structure.tolist() == [2, 0, 0] and f.age.tolist() == [2, 1, 0]


# ---------------------------------------------------------------------------
# Allocation
# ---------------------------------------------------------------------------
def brute_force_water_level(e: np.ndarray, total: float, lo: float, hi: float) -> np.ndarray:
    """The spec itself: px(nu) = 0 if nu E < lo else min(nu E, hi); the largest nu with sum <= total (bisection)."""
    def px(nu):
        v = np.minimum(nu * e, hi)
        return np.where(nu * e < lo, 0.0, v)

    a, b = 0.0, 1.0
    while px(b).sum() <= total and b < 1e30:
        b *= 2
    if px(b).sum() <= total:
        return px(b)
    for _ in range(200):
        mid = (a + b) / 2
        a, b = (mid, b) if px(mid).sum() <= total else (a, mid)
    return px(a)


def test_allocation_by_hand():
    # proportional 66.7 > 60: capped, and the rest split 1:1
    a = allocate_budget([4.0, 1.0, 1.0], 100, min_pixels=10, max_pixels=60, patch_area=1)
    assert a.pixels.tolist() == [60, 20, 20] and not a.dropped.any()
    # the third would get 4.76 < 10: dropped, its share redistributed
    a = allocate_budget([10.0, 10.0, 1.0], 100, min_pixels=10, max_pixels=100, patch_area=4)
    assert a.pixels.tolist() == [50, 50, 0] and a.dropped.tolist() == [False, False, True]
    assert a.tokens.tolist() == [12, 12, 0] and a.level == pytest.approx(5.0)
    # admitting the second item (at nu = 20) would cost 30 > 25: the first stays at nu = 20, 5 px unused
    a = allocate_budget([1.0, 0.5], 25, min_pixels=10, max_pixels=100, patch_area=1)
    assert a.pixels.tolist() == [20, 0]
    # everything fits at max_pixels
    a = allocate_budget([1.0, 2.0], 1000, min_pixels=10, max_pixels=100, patch_area=1)
    assert a.pixels.tolist() == [100, 100] and math.isinf(a.level)
    # the paper's defaults: 1 280 tokens of 32x32 px, min 64 and max 1024 tokens
    a = allocate_budget(np.ones(5))
    assert a.tokens.tolist() == [256] * 5 and a.used_pixels == 5 * 256 * 32 * 32
    a = allocate_budget(np.ones(30))              # 42.7 tokens each < 64: keep the first 20 at 64
    assert a.tokens.tolist() == [64] * 20 + [0] * 10


@pytest.mark.parametrize("seed", range(20))
def test_allocation_matches_the_brute_force_water_level(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    e = rng.exponential(size=n) * (rng.random(n) > 0.15)
    lo = float(rng.uniform(5, 50))
    hi = lo * float(rng.uniform(1, 20))
    total = float(math.floor(rng.uniform(lo, n * hi * 1.2)))
    a = allocate_budget(e, total, min_pixels=lo, max_pixels=hi, patch_area=1)
    ref = brute_force_water_level(e, total, lo, hi)
    assert np.all(np.abs(a.pixels - ref) <= 1.0 + 1e-6 * ref)
    assert a.used_pixels <= total


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=15), st.floats(1.0, 5e5), st.floats(1.0, 200.0),
       st.floats(1.0, 30.0), st.sampled_from([2.0 ** -7, 0.5, 4.0, 1024.0]))
def test_allocation_invariants(energies, total, lo, ratio, scale):
    hi = lo * ratio
    total = max(total, lo)
    e = np.array(energies)
    a = allocate_budget(e, total, min_pixels=lo, max_pixels=hi, patch_area=7)
    assert a.used_pixels <= math.floor(total)                                  # within budget
    assert (a.pixels <= hi).all() and ((a.pixels == 0) | (a.pixels >= math.floor(lo))).all()
    order = np.argsort(e, kind="stable")
    assert (np.diff(a.pixels[order]) >= 0).all() or len(set(e)) < len(e)       # monotone in energy
    for i in range(len(e)):
        for j in range(len(e)):
            if e[i] > e[j]:
                assert a.pixels[i] >= a.pixels[j]
    scaled = e * scale
    b = allocate_budget(scaled, total, min_pixels=lo, max_pixels=hi, patch_area=7)
    # scale invariant for powers of 2, where the scaling is exact: a subnormal energy (e.g. 5e-324)
    # times 2^-7 underflows to 0, a different input (zero energy is always dropped), so the
    # invariance is asserted only when scaled / scale recovers every energy bit for bit
    if np.array_equal(scaled / scale, e):
        assert np.array_equal(a.pixels, b.pixels)
    else:
        assert (b.pixels[scaled == 0] == 0).all()
    assert (a.pixels[e == 0] == 0).all()
    assert np.array_equal(a.tokens, np.floor(a.pixels / 7).astype(int))


def test_subnormal_energies_are_positive_energies():
    # the hypothesis counterexample energies=[5e-324]: a subnormal energy is positive, so the item is
    # kept (at max_pixels, level inf: every positive item capped), while 0 energy is dropped
    a = allocate_budget([5e-324], 1, min_pixels=1, max_pixels=1, patch_area=7)
    assert a.pixels.tolist() == [1] and not a.dropped[0] and a.level == math.inf
    z = allocate_budget([0.0], 1, min_pixels=1, max_pixels=1, patch_area=7)
    assert z.pixels.tolist() == [0] and z.dropped[0]
    # mixed with normal energies the ratio 5e-324 / 1 is what counts: min_pixels / E overflows to inf,
    # so the subnormal item is the first dropped (here 300 px hold two items at 100..200 px)
    m = allocate_budget([1.0, 5e-324, 0.5], 300, min_pixels=100, max_pixels=200, patch_area=1)
    assert m.pixels.tolist() == [200, 0, 100] and m.dropped.tolist() == [False, True, False]


def test_scale_invariance_for_arbitrary_factors_and_equal_shares():
    rng = np.random.default_rng(0)
    for _ in range(50):
        e = rng.exponential(size=8)
        c = float(rng.uniform(1e-3, 1e3))
        a = allocate_budget(e, 5000, min_pixels=50, max_pixels=2000, patch_area=10)
        b = allocate_budget(e * c, 5000, min_pixels=50, max_pixels=2000, patch_area=10)
        assert np.abs(a.pixels - b.pixels).max() <= 1 and np.array_equal(a.dropped, b.dropped)
    for n in (1, 3, 7):
        a = allocate_budget(np.full(n, 0.3), 1000, min_pixels=10, max_pixels=900, patch_area=1)
        assert len(set(a.pixels.tolist())) == 1 and a.pixels[0] == min(900, 1000 // n)


def test_graph_allocations_and_baselines():
    g = MemoryGraph("q")
    a = g.add_node("a", parents=[g.root], items=[VisualItem("x", 1.0)], step=1)
    g.add_node("b", parents=[a], items=[VisualItem("y", 1.0)], step=2)
    g.add_node("c", parents=[g.root], items=[VisualItem("z", 3.0)], step=3)
    kw = dict(min_pixels=10, max_pixels=1000, patch_area=1)
    # energies 1*2*0.64 = 1.28, 0.8, 3: shares of 508 px
    assert graph_modulated_allocation(g, 508, **kw).pixels.tolist() == [128, 80, 300]
    assert uniform_allocation(g, 510, **kw).pixels.tolist() == [170, 170, 170]
    assert priority_allocation(g, 500, **kw).pixels.tolist() == [100, 100, 300]
    # truncation: the newest (c, then b) at full resolution, a gets the rest
    assert recency_allocation(g, 2100, **kw).pixels.tolist() == [100, 1000, 1000]


def test_truncation_and_snapping_by_hand():
    a = truncate_budget([1.0, 3.0, 2.0, 3.0], 150, min_pixels=10, max_pixels=64, patch_area=1)
    assert a.pixels.tolist() == [0, 64, 22, 64]        # ties: the later index counts as newer
    alloc = PixelAllocation(pixels=np.array([40, 30, 10, 0]), tokens=np.array([40, 30, 10, 0]),
                            dropped=np.array([False, False, False, True]), level=1.0, total_pixels=100,
                            patch_area=1.0)
    # 16+16+4 = 36 used, 64 left: item 0 -> 64 (48), item 1 cannot (48 > 16), item 2 -> 16 (12), item 3 -> 4
    assert snap_allocation(alloc, (4, 16, 64)).pixels.tolist() == [64, 16, 16, 4]
    # equal pixels: the tie-break decides who is upgraded
    alloc = allocate_budget(np.ones(3), 60, min_pixels=4, max_pixels=64, patch_area=1)
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.9, 0.1, 0.5]).pixels.tolist() == [16, 16, 16]
    # 33 px each: 16 each, 52 left: the first in tie-break order goes to 64, 4 px stay unused
    alloc = allocate_budget(np.ones(3), 100, min_pixels=4, max_pixels=64, patch_area=1)
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.9, 0.1, 0.5]).pixels.tolist() == [16, 64, 16]
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.1, 0.9, 0.5]).pixels.tolist() == [64, 16, 16]


@pytest.mark.parametrize("patch,merge", [(14, 2), (16, 2)])
def test_qwen2vl_processor_token_counts_stay_within_the_allocation(patch, merge):
    pytest.importorskip("transformers")
    from PIL import Image
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    area = (patch * merge) ** 2
    sizes = [(480, 640), (300, 1000), (200, 200), (1500, 1500), (90, 60), (720, 1280)]
    energies = [3.0, 1.0, 0.5, 2.0, 0.2, 1.5]
    alloc = allocate_budget(energies, 5 * 256 * area, min_pixels=64 * area, max_pixels=1024 * area,
                            patch_area=area)
    kws = processor_kwargs(alloc)
    assert alloc.dropped.tolist() == [False, False, False, False, True, False]
    for (h, w), kw, tok in zip(sizes, kws, alloc.tokens):
        if kw is None:
            assert tok == 0
            continue
        proc = Qwen2VLImageProcessorPil(patch_size=patch, merge_size=merge, **kw)
        out = proc(images=[Image.new("RGB", (w, h), color=(120, 30, 200))], return_tensors="np")
        t, gh, gw = out["image_grid_thw"][0]
        n = int(t * gh * gw) // merge ** 2
        assert 0 < n <= tok, (h, w, n, tok)
        native = round(h / (patch * merge)) * round(w / (patch * merge))
        assert n >= min(native, tok) * 0.7       # the image is not shrunk far below what it was given


# ---------------------------------------------------------------------------
# GGPO
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("reward,on_path,valuable,masked", [
    (1, True, False, False), (1, False, False, True),   # success: only dead ends are masked
    (1, True, True, False), (1, False, True, True),
    (0, True, True, True), (0, False, True, True),      # failure: only valuable retrievals are masked
    (0, True, False, False), (0, False, False, False),
])
def test_mask_truth_table(reward, on_path, valuable, masked):
    mu = ggpo_mask(["v"], reward, {"v"} if on_path else set(), {"v"} if valuable else set())
    assert mu.tolist() == [masked]
    batch = ggpo_mask_from_membership(torch.tensor([[on_path]]), torch.tensor([[valuable]]), torch.tensor([reward]))
    assert batch.tolist() == [[masked]]


def test_mask_worked_example():
    g, a, b, c, ans = chain_with_dead_end()
    steps = [a, c, b, ans]
    assert ggpo_mask(steps, 1, g.answer_path(), valuable=set()).tolist() == [False, True, False, False]   # {c}
    assert ggpo_mask(steps, 0, g.answer_path(), valuable={a}).tolist() == [True, False, False, False]     # {a}


def test_group_advantages_by_hand():
    adv = grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]))
    s = math.sqrt(1 / 3)                          # unbiased std of (1, 0, 0, 1)
    assert torch.allclose(adv[0], torch.tensor([0.5, -0.5, -0.5, 0.5]) / (s + 1e-6))
    assert (adv[1] == 0).all()
    r = torch.rand(6, 8, generator=torch.Generator().manual_seed(0)).round()
    assert grpo_advantages(r).sum(-1).abs().max() < 1e-5
    assert torch.allclose(grpo_advantages(r, scale=False), r - r.mean(-1, keepdim=True))
    # equal rewards at eps = 0: zeros as documented, not 0/0 = NaN
    assert torch.equal(grpo_advantages(torch.tensor([1.0, 1.0, 1.0]), eps=0.0), torch.zeros(3))
    torch.testing.assert_close(grpo_advantages(torch.tensor([1.0, 0.0]), eps=0.0),
                               torch.tensor([0.5, -0.5]) / math.sqrt(0.5))


def test_token_and_sequence_ratio_losses_by_hand():
    lp = torch.tensor([[-0.2, -0.8]], requires_grad=True)  # log-ratios 0.1, -0.5 against the old policy
    old = torch.full((1, 2), -0.3)
    steps = torch.tensor([[0, 1]])
    no_mask = torch.zeros(1, 2, dtype=torch.bool)
    # token ratio: r = (e^0.1, e^-0.5), A = 2: min(2r, 2 clip(r, .8, 1.2)) = (2e^0.1, 2e^-0.5); mean over tokens
    loss = ggpo_loss(lp, old, torch.tensor([2.0]), steps, no_mask, 0.2)
    assert float(loss.detach()) == pytest.approx(-(2 * math.exp(0.1) + 2 * math.exp(-0.5)) / 2)
    # GSPO: s = exp(mean(0.1, -0.5)) = e^-0.2; A = -1, clip 0.1: min(-s, -clip(s)) = -max(s, 0.9) = -0.9
    loss = ggpo_loss(lp, old, torch.tensor([-1.0]), steps, no_mask, 0.1, ratio="sequence")
    assert float(loss.detach()) == pytest.approx(0.9)
    loss.backward()
    assert torch.equal(lp.grad, torch.zeros(1, 2))   # clipped: no gradient
    # masking step 1 leaves the sequence ratio of step 0 alone: s = e^0.1, A = 1, clip 0.2: min(s, 1.2) = e^0.1
    loss = ggpo_loss(lp, old, torch.tensor([1.0]), steps, torch.tensor([[False, True]]), 0.2, ratio="sequence")
    assert float(loss.detach()) == pytest.approx(-math.exp(0.1))
    # reductions: per-token losses (-2e^0.1, -2e^-0.5) of one sequence; sum, token mean
    kw = dict(advantages=torch.tensor([2.0]), token_step=steps, mask=no_mask)
    total = float(ggpo_loss(lp, old, reduction="sum", **kw).detach())
    assert total == pytest.approx(-2 * (math.exp(0.1) + math.exp(-0.5)))
    with pytest.raises(ValueError, match="log-probabilities"):  # probabilities passed as log-probabilities
        ggpo_loss(lp.detach().exp(), old, **kw)


def test_zero_mask_equals_grpo_exactly():
    g = torch.Generator().manual_seed(0)
    lp = (-3 * torch.rand(4, 10, generator=g) - 0.3).requires_grad_()  # log-probabilities, <= 0
    old = lp.detach() + 0.3 * torch.randn(4, 10, generator=g).clamp(-1, 1)
    steps = torch.randint(-1, 3, (4, 10), generator=g)
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 1.0, 0.0]))
    for ratio in ("token", "sequence"):
        for reduction in ("sequence", "token", "sum"):
            a = ggpo_loss(lp, old, adv, steps, torch.zeros(4, 3, dtype=torch.bool), ratio=ratio, reduction=reduction)
            b = grpo_loss(lp, old, adv, steps, ratio=ratio, reduction=reduction)
            assert torch.equal(a, b)


def test_masked_steps_get_exactly_zero_gradient_tabular():
    # a tabular policy: one row of logits per (rollout, step) state
    g = torch.Generator().manual_seed(1)
    B, S, A = 4, 5, 6
    table = torch.randn(B, S, A, generator=g, requires_grad=True)
    actions = torch.randint(A, (B, S), generator=g)
    logp = torch.log_softmax(table, -1).gather(2, actions[..., None]).squeeze(-1)   # (B, S): one token per step
    steps = torch.arange(S).expand(B, S)
    mask = torch.rand(B, S, generator=g) < 0.4
    old = logp.detach() + 0.1 * torch.randn(B, S, generator=g)
    ggpo_loss(logp, old, torch.tensor([1.0, -0.5, 2.0, -1.0]), steps, mask).backward()
    grad_norm = table.grad.abs().sum(-1)
    assert torch.equal(grad_norm[mask], torch.zeros(int(mask.sum())))
    assert (grad_norm[~mask] > 0).all()


def _tiny_qwen2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(cfg).double().eval()


def _loop_loss(lp, old, adv, step, mask, clip, ratio):
    """The clipped objective written token by token (sequence reduction)."""
    total, count = 0.0, 0
    for b in range(lp.shape[0]):
        kept = [t for t in range(lp.shape[1]) if step[b, t] >= 0 and not mask[b, step[b, t]]]
        if not kept:
            continue
        if ratio == "sequence":
            s = torch.exp(sum(lp[b, t] - old[b, t] for t in kept) / len(kept))
            seq = -torch.minimum(s * adv[b], s.clamp(1 - clip, 1 + clip) * adv[b])
        else:
            seq = 0.0
            for t in kept:
                r = torch.exp(lp[b, t] - old[b, t])
                seq = seq - torch.minimum(r * adv[b], r.clamp(1 - clip, 1 + clip) * adv[b])
            seq = seq / len(kept)
        total, count = total + seq, count + 1
    return total / count


@pytest.mark.parametrize("ratio", ["token", "sequence"])
def test_ggpo_gradient_on_a_tiny_qwen2_equals_grpo_without_the_masked_tokens(ratio, one_thread):
    model = _tiny_qwen2()
    params = [p for p in model.parameters() if p.requires_grad]
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(64, (3, 24), generator=g)
    spans = [[(3, 7), (10, 14), (18, 22)], [(2, 6), (9, 12)], [(4, 9), (12, 16), (20, 24)]]
    step = token_steps(spans, 24)
    mask = torch.tensor([[False, True, False], [True, False, False], [False, False, True]])
    adv = torch.tensor([0.7, -1.2, 0.5], dtype=torch.float64)
    lp = token_logprobs(model, ids)
    old = lp.detach() + 0.15 * torch.randn(3, 24, generator=g, dtype=torch.float64)
    g_ggpo = torch.autograd.grad(ggpo_loss(lp, old, adv, step, mask, 0.2, ratio=ratio), params)
    dropped = step.clone()
    dropped[torch.gather(mask, 1, step.clamp(min=0)) & (step >= 0)] = -1
    g_grpo = torch.autograd.grad(grpo_loss(token_logprobs(model, ids), old, adv, dropped, 0.2, ratio=ratio), params)
    g_loop = torch.autograd.grad(_loop_loss(token_logprobs(model, ids), old, adv, step, mask, 0.2, ratio), params)
    g_full = torch.autograd.grad(grpo_loss(token_logprobs(model, ids), old, adv, step, 0.2, ratio=ratio), params)
    for a, b, c in zip(g_ggpo, g_grpo, g_loop):
        assert torch.allclose(a, b, atol=1e-12) and torch.allclose(a, c, atol=1e-10)
    assert any(not torch.allclose(a, f) for a, f in zip(g_ggpo, g_full))   # the mask does change the update


def test_token_logprobs_match_log_softmax_and_trajectory_tokens():
    model = _tiny_qwen2()
    ids = torch.randint(64, (2, 9), generator=torch.Generator().manual_seed(0))
    lp = token_logprobs(model, ids)
    logits = model(ids).logits
    assert lp[0, 0] == 0
    assert torch.allclose(lp[1, 5], torch.log_softmax(logits[1, 4], -1)[ids[1, 5]])
    encode = lambda s: [ord(ch) % 50 for ch in s]  # noqa: E731
    ids, step = tokenize_trajectory(encode, [("Q:", None), ("ab", 0), ("obs", None), ("c", 1)])
    assert ids.tolist() == encode("Q:abobsc") and step.tolist() == [-1, -1, 0, 0, -1, -1, -1, 1]
    assert token_steps([[(2, 4), (7, 8)]], 8).tolist() == [step.tolist()]


# ---------------------------------------------------------------------------
# Agent loop and the search task: two ways to the same mask
# ---------------------------------------------------------------------------
class _Docs:
    def search(self, query, k):
        return [VisualItem(f"{query}-{i}", 1.0 / (i + 1)) for i in range(k)]


class _Scripted:
    """Finds the key, wanders once, opens the locked document with the key, crops it, answers."""

    def act(self, graph):
        nodes, t = graph.nodes(), len(graph)
        if t == 1:
            return Action("retrieve", "key doc")
        if t == 2:
            return Action("retrieve", "distractor")
        if t == 3:
            return Action("retrieve", "locked doc", parents=(nodes[1],))
        if t == 4:
            return Action("perceive", "crop", parents=(nodes[3],), items=(VisualItem("crop", 2.0),))
        return Action("answer", "42", parents=(nodes[4],))


def test_run_agent_builds_the_graph_ggpo_needs():
    trace = run_agent("what is the value?", _Scripted(), _Docs(), horizon=8, top_k=2)
    g = trace.graph
    assert trace.answer == "42" and len(trace.steps) == 5
    assert [len(g.node(v).items) for v in trace.steps] == [2, 2, 2, 1, 0]
    key, distractor, locked, crop, ans = trace.steps
    assert g.answer_path() == {g.root, key, locked, crop, ans}
    assert ggpo_mask(trace.steps, 1, g.answer_path(), {key, locked}).tolist() == [False, True, False, False, False]
    tokens = graph_modulated_allocation(g, 20 * 32 * 32, min_pixels=32 * 32, max_pixels=8 * 32 * 32).tokens
    assert "x 8 tokens" in g.serialize(tokens)


def test_search_task_masks_equal_the_masks_of_explicit_memory_graphs():
    from icml26.papers.vimrag.search_task import SearchTask, rollout

    task = SearchTask()
    weights = torch.randn(task.features, task.actions, generator=torch.Generator().manual_seed(0))
    ro = rollout(task, weights, task.tables(), 16, 8, torch.Generator().manual_seed(1))
    batch_mask = ggpo_mask_from_membership(ro.on_path, ro.valuable, ro.reward)
    for b in range(ro.kind.shape[0]):
        g = MemoryGraph("q")
        nodes = []
        for t in range(task.horizon):
            kind = int(ro.kind[b, t])
            if kind == 0:
                break
            parent = int(ro.parent[b, t])
            nodes.append(g.add_node(f"step {t}", parents=[nodes[parent] if parent >= 0 else g.root],
                                    action="answer" if kind == 2 else "retrieve"))
        path = g.answer_path() if g.answer_node() is not None else set()
        valuable = {nodes[t] for t in range(len(nodes)) if ro.valuable[b, t]}
        mu = ggpo_mask(nodes, int(ro.reward[b]), path, valuable)
        assert mu.tolist() == batch_mask[b, :len(nodes)].tolist()
        searches = [v for v in nodes if g.node(v).action == "retrieve"]
        assert ro.redundant[b] == sum(v not in path for v in searches)


# ---------------------------------------------------------------------------
# The reproduction's reader, episodes and verdict functions
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reader():
    from icml26.common.data import load_digits_split
    from icml26.papers.vimrag.digits_task import DigitReader

    split = load_digits_split(test_fraction=0.5, seed=0, standardize=False)
    img = lambda x: (x / 16.0).reshape(-1, 8, 8)  # noqa: E731
    return DigitReader.train(img(split.x_train), split.y_train, img(split.x_test), split.y_test, seed=0)


def test_reader_full_resolution_and_monotone_in_resolution(reader):
    assert reader.accuracy[8] >= 0.9
    assert reader.accuracy[8] >= reader.accuracy[4] >= reader.accuracy[2] > 0.1


def test_block_average_by_hand():
    from icml26.papers.vimrag.digits_task import block_average

    x = np.arange(64, dtype=float).reshape(1, 8, 8)
    assert block_average(x, 8).tolist() == [list(range(64))]
    assert block_average(x, 1).tolist() == [[31.5]]
    assert block_average(x, 2)[0].tolist() == [13.5, 17.5, 45.5, 49.5]


def test_full_budget_reads_every_item_at_full_resolution(reader):
    from icml26.papers.vimrag.digits_task import COSTS, POLICIES, sample_episode, solve

    rng = np.random.default_rng(0)
    for structured in (True, False):
        for _ in range(10):
            ep = sample_episode(rng, len(reader.labels), structured=structured)
            assert ep.pivotal.sum() >= 2 and (~ep.pivotal).sum() >= 1
            outcomes = {p: solve(ep, reader, p, 1.0) for p in list(POLICIES) + ["oracle"]}
            assert {o[2] for o in outcomes.values()} == {COSTS[-1] * len(ep.image)}
            assert len({o[0] for o in outcomes.values()}) == 1


def test_structured_episodes_end_with_a_pivotal_retrieval():
    from icml26.papers.vimrag.digits_task import sample_episode

    rng = np.random.default_rng(5)
    for _ in range(20):
        ep = sample_episode(rng, 100)
        last = max(ep.graph.nodes(), key=lambda v: ep.graph.node(v).step)
        flat = ep.graph.items()
        assert all(ep.pivotal[k] for k, (v, _, _) in enumerate(flat) if v == last)


def test_analysis_by_hand():
    point = lambda d: np.eye(10)[d]  # noqa: E731
    assert np.allclose(sum_mod_distribution(np.stack([point(7), point(5)])), point(2))
    mix = np.stack([0.5 * point(1) + 0.5 * point(2), point(9)])
    assert np.allclose(sum_mod_distribution(mix), 0.5 * point(0) + 0.5 * point(1))
    assert np.allclose(sum_mod_distribution(np.zeros((0, 10))), point(0))
    assert points_gap(0.7, 0.55) == pytest.approx(15.0)
    assert spread_points([0.5, 0.52, 0.49]) == pytest.approx(3.0) and math.isnan(spread_points([0.5, math.nan]))
    # trailing means over 2: (0, .5, 1, 1): first >= .6 after 4 iterations
    assert iterations_to_reach([0, 0, 1, 1, 1], 0.6, window=2) == 4
    assert iterations_to_reach([0, 0.5, 0.5], 0.6, window=2) == math.inf
    r = median_ratio([100, 120, 90], [200, 150, 160], horizon=300)
    assert r.ratio == pytest.approx(100 / 160) and not r.censored
    r = median_ratio([100, 120, 90], [math.inf, math.inf, 150], horizon=300)
    assert r.ratio == pytest.approx(100 / 301) and r.censored
    assert math.isnan(median_ratio([math.inf] * 3, [10, 10, 10], horizon=300).ratio)
    assert tail_mean(list(range(10)), 0.2) == pytest.approx(8.5) and tail_mean([3.0], 0.1) == 3.0


def test_huge_energies_do_not_overflow_the_allocation():
    """[1e308, 1e308, 1]: two equal images get equal pixels (their sum once overflowed to inf and the first took
    everything); level stays in pixels per unit of the caller's energy."""
    from icml26.papers.vimrag import allocate_budget

    a = allocate_budget([1e308, 1e308, 1.0], 4 * 65536 * 4)
    b = allocate_budget([1.0, 1.0, 1e-308], 4 * 65536 * 4)
    assert a.pixels[0] == a.pixels[1] > 0 and a.pixels.tolist() == b.pixels.tolist()
    assert a.level * 1e308 == pytest.approx(b.level)
