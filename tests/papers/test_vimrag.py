"""VimRAG: the memory graph against networkx's DAG algorithms, the energy by hand, the agent loop and
the search task (two ways to the same mask), and the reproduction's reader, episodes and verdict
functions (scikit-learn's digits).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from icml26.papers.vimrag import (
    Action,
    EnergyFn,
    MemoryGraph,
    VisualItem,
    ggpo_mask,
    ggpo_mask_from_membership,
    graph_modulated_allocation,
    item_features,
    run_agent,
)
from icml26.papers.vimrag.analysis import (
    iterations_to_reach,
    median_ratio,
    points_gap,
    spread_points,
    sum_mod_distribution,
    tail_mean,
)
from tests.papers._vimrag_helpers import chain_with_dead_end


# ---------------------------------------------------------------------------
# Memory graph
# ---------------------------------------------------------------------------
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
