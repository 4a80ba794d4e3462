"""Graph-modulated energy of the visual items (GMVME's weighting, brief §1.3).

Each visual item ``i`` of node ``v_i`` gets

    E_i = p_i · (1 + λ·deg⁺(v_i)) · γ^(t − t_i)

(semantic priority × structural relevance × temporal decay), with ``t`` the current step and
``t_i`` the step of the item's node. The paper's exact formula is unpublished; this form and
its defaults λ = 1, γ = 0.8 are ours (the issue's values). :class:`EnergyFn` is pluggable: set
``structure`` to any per-node score in place of the out-degree, or pass any callable
``graph -> energies`` wherever an energy function is taken.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Hashable

import numpy as np

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.papers.vimrag.graph import MemoryGraph

__all__ = ["EnergyFn", "ItemFeatures", "item_features"]


@dataclasses.dataclass(frozen=True)
class ItemFeatures:
    """What the energy reads of each visual item, in :meth:`MemoryGraph.items` order.

    ``priority``: ``p_i``; ``structure``: ``deg⁺(v_i)`` (or the plugged-in node score);
    ``age``: ``t − t_i`` in steps; all ``(n_items,)`` float64.
    """

    priority: np.ndarray
    structure: np.ndarray
    age: np.ndarray


def item_features(graph: MemoryGraph, now: int | None = None,
                  structure: Callable[[MemoryGraph, Hashable], float] | None = None) -> ItemFeatures:
    """Priority, structural score (default: out-degree) and age of every item of ``graph``.

    ``now`` defaults to the graph's current step (its largest node step); an earlier ``now``
    than a node's step is a ``ValueError``.
    """
    if not isinstance(graph, MemoryGraph):
        raise TypeError(f"graph must be a MemoryGraph, got {type(graph).__name__}")
    now = graph.step if now is None else check_int(now, "now", low=0)
    items = graph.items()
    scores: dict[Hashable, float] = {}
    for v, _, _ in items:
        if v not in scores:
            s = graph.out_degree(v) if structure is None else structure(graph, v)
            scores[v] = check_real(s, f"structure score of node {v!r}", low=0.0)
    steps = np.array([graph.node(v).step for v, _, _ in items], dtype=np.float64)
    if steps.size and steps.max() > now:
        raise ValueError(f"now={now} is earlier than a node's step ({int(steps.max())}); pass now >= every step")
    return ItemFeatures(priority=np.array([it.priority for _, _, it in items], dtype=np.float64),
                        structure=np.array([scores[v] for v, _, _ in items], dtype=np.float64),
                        age=now - steps)


@dataclasses.dataclass(frozen=True)
class EnergyFn:
    """``E_i = p_i · (1 + λ·s(v_i)) · γ^(t − t_i)`` with ``s = deg⁺`` by default.

    Call it on a :class:`MemoryGraph` (energies in :meth:`MemoryGraph.items` order) or use
    :meth:`energy` on raw arrays. ``EnergyFn(lam=0, gamma=1)`` is priority only;
    ``EnergyFn(lam=0)`` priority with decay.
    """

    lam: float = 1.0
    """λ, the weight of the structural score (out-degree); >= 0."""
    gamma: float = 0.8
    """γ, the decay per step of age, in (0, 1]."""
    structure: Callable[[MemoryGraph, Hashable], float] | None = None
    """Optional per-node structural score ``structure(graph, node) >= 0`` in place of ``deg⁺``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", check_real(self.lam, "lam", low=0.0))
        object.__setattr__(self, "gamma", check_real(self.gamma, "gamma", low=0.0, high=1.0, low_open=True))
        if self.structure is not None and not callable(self.structure):
            raise TypeError(f"structure must be callable (graph, node) -> float, got {type(self.structure).__name__}")

    def energy(self, priority: Any, structure: Any, age: Any) -> np.ndarray:
        """The energies of items given as arrays (``(n,)`` each, broadcastable), float64.

        Negative or non-finite inputs are a ``ValueError``.
        """
        arrays = []
        for name, x in (("priority", priority), ("structure", structure), ("age", age)):
            a = np.asarray(x, dtype=np.float64)
            require_finite(a, name)
            if (a < 0).any():
                raise ValueError(f"{name} must be non-negative, got min {a.min()}")
            arrays.append(a)
        p, s, age_ = arrays
        # E_i = p_i · (1 + λ·deg⁺(v_i)) · γ^(t − t_i)
        return p * (1.0 + self.lam * s) * np.power(self.gamma, age_)

    def __call__(self, graph: MemoryGraph, now: int | None = None) -> np.ndarray:
        """``(n_items,)`` energies of ``graph``'s items at step ``now`` (default: the graph's step)."""
        f = item_features(graph, now, self.structure)
        return self.energy(f.priority, f.structure, f.age)
