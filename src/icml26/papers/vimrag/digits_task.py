"""Experiment (A): multi-hop digit questions answered from a memory graph under a visual-token budget.

Reproduction code (not part of the library API). An episode is a :class:`MemoryGraph` of 6–10
retrieval nodes, each holding 1–2 scikit-learn digits. The answer is the sum mod 10 of the
digits in the 2–3 *pivotal* nodes, a chain root → p1 → … → pk; the other nodes are dead ends
holding distractor digits. Allocators see what an agent would: each item's noisy relevance
(priority), the graph and the steps, never the pivotal labels. A fixed reader (one logistic
regression per resolution, trained on a disjoint split) reads every item at the resolution its
tokens buy (8×8 for 64, 4×4 for 16, 2×2 for 4, block-averaged) and combines the pivotal items'
class posteriors into a posterior over the answer (it knows from the text summaries which nodes
the question depends on, as an MLLM reading ``s_v`` would).

Two graph generators:

* ``structured`` (the main one): the agent answers right after finding the last key, so the
  last retrieval is pivotal; a dead end is built on a live node (the root or a pivotal node found
  so far), or with probability ``dead_follow`` on an earlier dead end (following a wrong lead);
* ``unstructured`` (the control): pivotal steps at random times and every dead end built on a
  uniformly random earlier node, so the graph says little about which items matter;
* ``structure = s`` in [0, 1] between the two: the episode ends on a pivotal retrieval with
  probability ``s``, and each dead end follows the structured rule with probability ``s``, else
  a uniformly random earlier node (how informative the graph is, for the sweep).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from icml26.papers.vimrag.analysis import sum_mod_distribution
from icml26.papers.vimrag.baselines import priority_allocation, recency_allocation, uniform_allocation
from icml26.papers.vimrag.budget import PixelAllocation, allocate_budget, graph_modulated_allocation, snap_allocation
from icml26.papers.vimrag.energy import EnergyFn
from icml26.papers.vimrag.graph import MemoryGraph, VisualItem

__all__ = ["COSTS", "DigitEpisode", "DigitReader", "POLICIES", "block_average", "sample_episode", "solve"]

RESOLUTIONS = (8, 4, 2)
COSTS = (4, 16, 64)
"""Tokens of a 2×2, 4×4 and 8×8 read (one token per pixel of the block-averaged image)."""


def block_average(images: np.ndarray, resolution: int) -> np.ndarray:
    """``(n, 8, 8)`` images averaged over ``8/r × 8/r`` blocks: ``(n, r·r)``."""
    if 8 % resolution:
        raise ValueError(f"resolution={resolution} must divide 8")
    f = 8 // resolution
    n = images.shape[0]
    return images.reshape(n, resolution, f, resolution, f).mean((2, 4)).reshape(n, -1)


@dataclasses.dataclass
class DigitReader:
    """Class posteriors of every pool image at each resolution: ``proba[r]`` is ``(n_pool, 10)``."""

    proba: dict[int, np.ndarray]
    labels: np.ndarray
    accuracy: dict[int, float]

    @classmethod
    def train(cls, train_x: np.ndarray, train_y: np.ndarray, pool_x: np.ndarray, pool_y: np.ndarray,
              seed: int) -> "DigitReader":
        """One logistic regression per resolution, fit on ``train_*`` (raw pixels / 16), read on the pool."""
        from sklearn.linear_model import LogisticRegression

        proba, acc = {}, {}
        for r in RESOLUTIONS:
            model = LogisticRegression(max_iter=5000, random_state=seed).fit(block_average(train_x, r), train_y)
            proba[r] = model.predict_proba(block_average(pool_x, r))
            acc[r] = float((proba[r].argmax(1) == pool_y).mean())
        return cls(proba=proba, labels=pool_y, accuracy=acc)


@dataclasses.dataclass
class DigitEpisode:
    """One question: its graph, and per item (in ``graph.items()`` order) the pool image and labels."""

    graph: MemoryGraph
    image: np.ndarray
    pivotal: np.ndarray
    tie_break: np.ndarray


def sample_episode(rng: np.random.Generator, pool_size: int, *, structured: bool = True,
                   nodes: tuple[int, int] = (6, 10), pivotal: tuple[int, int] = (2, 3),
                   items: tuple[int, int] = (1, 2), relevance_gap: float = 1.0, relevance_noise: float = 1.0,
                   dead_follow: float = 0.3, structure: float | None = None) -> DigitEpisode:
    """A random episode (see the module docstring); priority ``= exp(gap·1[pivotal] + noise·ε)``.

    ``structure`` (in [0, 1]) overrides ``structured``: the probability of each structured choice.
    Without it the draws are those of the plain structured or unstructured generator."""
    if structure is not None and not 0.0 <= structure <= 1.0:
        raise ValueError(f"structure={structure!r} must be in [0, 1]")
    mixed = structure is not None
    n = int(rng.integers(nodes[0], nodes[1] + 1))
    k = int(rng.integers(pivotal[0], pivotal[1] + 1))
    if mixed:
        structured = bool(rng.random() < structure)  # the episode ends on a pivotal retrieval
    if structured:  # the last retrieval is the last key
        piv_steps = set(rng.choice(np.arange(1, n), k - 1, replace=False).tolist()) | {n}
    else:
        piv_steps = set(rng.choice(np.arange(1, n + 1), k, replace=False).tolist())
    graph = MemoryGraph("sum of the key digits mod 10")
    live, dead, every = [graph.root], [], [graph.root]
    piv_nodes = set()
    for step in range(1, n + 1):
        is_piv = step in piv_steps
        if is_piv:
            parent = live[-1]
        elif (not structured and not mixed) or (mixed and rng.random() >= structure):
            parent = every[int(rng.integers(len(every)))]
        elif dead and rng.random() < dead_follow:
            parent = dead[int(rng.integers(len(dead)))]
        else:
            parent = live[int(rng.integers(len(live)))]
        m = int(rng.integers(items[0], items[1] + 1))
        images = rng.integers(0, pool_size, m)
        score = relevance_gap * is_piv + relevance_noise * rng.normal(size=m)
        node = graph.add_node(f"search {step}", parents=[parent], step=step,
                              items=[VisualItem(int(i), float(np.exp(s))) for i, s in zip(images, score)])
        (live if is_piv else dead).append(node)
        every.append(node)
        if is_piv:
            piv_nodes.add(node)
    flat = graph.items()
    return DigitEpisode(graph=graph, image=np.array([it.content for _, _, it in flat]),
                        pivotal=np.array([v in piv_nodes for v, _, _ in flat]), tie_break=rng.random(len(flat)))


def _oracle(graph: MemoryGraph, total: float, *, pivotal: np.ndarray, **limits) -> PixelAllocation:
    return allocate_budget(pivotal.astype(float), total, **limits)


POLICIES: dict[str, Callable[..., PixelAllocation]] = {
    "graph_modulated": lambda g, total, **kw: graph_modulated_allocation(g, total, **kw),
    "uniform": lambda g, total, **kw: uniform_allocation(g, total, **kw),
    "recency": lambda g, total, **kw: recency_allocation(g, total, **kw),
    "priority_only": lambda g, total, **kw: priority_allocation(g, total, **kw),
    "graph_no_decay": lambda g, total, **kw: graph_modulated_allocation(g, total, energy_fn=EnergyFn(gamma=1.0), **kw),
    "priority_decay": lambda g, total, **kw: graph_modulated_allocation(g, total, energy_fn=EnergyFn(lam=0.0), **kw),
}
"""The allocators compared (each ``(graph, total_pixels, **limits) -> PixelAllocation``); ``oracle`` is added
by :func:`solve` (it knows the pivotal items: the ceiling, not a baseline)."""


def solve(episode: DigitEpisode, reader: DigitReader, policy: str, fraction: float) -> tuple[bool, float, int]:
    """``(answered correctly, share of read tokens on pivotal items, tokens read)`` of one policy at a budget
    of ``fraction`` × the full cost (every item at 8×8)."""
    n = len(episode.image)
    total = fraction * COSTS[-1] * n
    limits = dict(min_pixels=COSTS[0], max_pixels=COSTS[-1], patch_area=1)
    if policy == "oracle":
        alloc = _oracle(episode.graph, total, pivotal=episode.pivotal, **limits)
    else:
        alloc = POLICIES[policy](episode.graph, total, **limits)
    tokens = snap_allocation(alloc, COSTS, tie_break=episode.tie_break).tokens
    piv = np.flatnonzero(episode.pivotal)
    target = int(reader.labels[episode.image[piv]].sum() % 10)
    if (tokens[piv] == 0).any():
        guess = 0  # a pivotal digit was not read: the posterior over the answer is uniform
    else:
        rows = [reader.proba[int(round(np.sqrt(tokens[i])))][episode.image[i]] for i in piv]
        guess = int(np.argmax(sum_mod_distribution(np.stack(rows))))
    used = int(tokens.sum())
    return guess == target, float(tokens[piv].sum() / used) if used else 0.0, used
