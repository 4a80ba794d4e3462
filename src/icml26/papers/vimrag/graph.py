"""The multimodal memory graph of VimRAG: a DAG of agent states rooted at the question.

Each node holds a sub-query ``q_v``, a textual summary ``s_v``, its visual items (the episodic
memory bank ``M_v``, each with a relevance score), the step at which it was created and its
action type (``retrieve``, ``perceive`` or ``answer``). Edges point from the nodes a step
builds on to the node it creates. The context the policy reads at each step is the graph
serialised in topological order (:meth:`MemoryGraph.serialize`).

The node schema is unpublished (brief §6.1); the fields here are our reading of the paper's
description, second-hand.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Hashable, Iterable, Sequence

from icml26.common.argcheck import check_int, check_real

__all__ = ["ACTIONS", "MemoryGraph", "MemoryNode", "VisualItem"]

ACTIONS = ("root", "retrieve", "perceive", "answer")
"""Node kinds: the question (``root``) and the paper's three action types."""


@dataclasses.dataclass(frozen=True)
class VisualItem:
    """One visual item of a node's memory bank ``M_v`` (an image, a crop or a keyframe).

    Attributes:
        content: the item itself (a PIL image, an array, a path …); never inspected here.
        priority: semantic priority ``p_i >= 0``, the item's relevance to its sub-query or the
            question (e.g. the retriever's score mapped to a non-negative number).
        name: optional label shown by :meth:`MemoryGraph.serialize`.
    """

    content: Any = None
    priority: float = 1.0
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "priority", check_real(self.priority, "priority", low=0.0))
        if not isinstance(self.name, str):
            raise TypeError(f"name={self.name!r} must be a string")


@dataclasses.dataclass
class MemoryNode:
    """A node ``v`` of the memory graph (see :class:`MemoryGraph`)."""

    id: Hashable
    query: str
    summary: str
    items: tuple[VisualItem, ...]
    step: int
    action: str


def _as_items(items: Iterable[Any], name: str) -> tuple[VisualItem, ...]:
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of VisualItem objects, got a string")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, VisualItem):
            raise TypeError(f"{name}[{i}] is a {type(item).__name__}; wrap it as VisualItem(content, priority=...)")
        out.append(item)
    return tuple(out)


class MemoryGraph:
    """A dynamic DAG ``G_t = (V_t, E_t)`` whose root is the user question.

    >>> g = MemoryGraph("Which year was the tower on the poster finished?")
    >>> a = g.add_node("find the poster", parents=[g.root], items=[VisualItem("poster.png", 0.9)])
    >>> b = g.add_node("tower history", parents=[a], summary="finished in 1889")
    >>> ans = g.add_node("answer", parents=[b], action="answer")
    >>> sorted(g.answer_path()) == sorted([g.root, a, b, ans])
    True

    Node ids are integers assigned in insertion order unless ``node_id`` is given. Steps
    default to the insertion index (the root is step 0).
    """

    def __init__(self, question: str, *, items: Sequence[VisualItem] = ()) -> None:
        if not isinstance(question, str):
            raise TypeError(f"question must be a string, got {type(question).__name__}")
        self._nodes: dict[Hashable, MemoryNode] = {}
        self._parents: dict[Hashable, list[Hashable]] = {}
        self._children: dict[Hashable, list[Hashable]] = {}
        self._next_id = 0
        self.root = self._insert(0, MemoryNode(0, question, "", _as_items(items, "items"), 0, "root"), ())

    # -- construction ---------------------------------------------------------------------
    def _insert(self, node_id: Hashable, node: MemoryNode, parents: Sequence[Hashable]) -> Hashable:
        self._nodes[node_id] = node
        self._parents[node_id] = []
        self._children[node_id] = []
        for p in parents:
            self._parents[node_id].append(p)
            self._children[p].append(node_id)
        return node_id

    def add_node(self, query: str, *, parents: Sequence[Hashable], summary: str = "",
                 items: Sequence[VisualItem] = (), step: int | None = None, action: str = "retrieve",
                 node_id: Hashable | None = None) -> Hashable:
        """Add a node built on ``parents`` and return its id.

        Args:
            query: the sub-query ``q_v`` (or the answer text for an ``answer`` node).
            parents: existing node ids this step builds on (at least one; the root for a fresh
                search). An unknown parent or the node itself is a ``ValueError`` (an edge to
                itself would close a cycle).
            summary: the textual summary ``s_v``.
            items: the node's visual memory bank, :class:`VisualItem` objects.
            step: the step ``t_v`` at which the node was created (default: the number of nodes
                so far); a step earlier than a parent's is refused.
            action: ``"retrieve"``, ``"perceive"`` or ``"answer"``.
            node_id: an explicit id (any hashable not yet used); default the next integer.
        """
        if not isinstance(query, str) or not isinstance(summary, str):
            raise TypeError("query and summary must be strings")
        if action not in ACTIONS[1:]:
            raise ValueError(f"action={action!r} must be one of {', '.join(ACTIONS[1:])}")
        if isinstance(parents, (str, bytes)) or not isinstance(parents, Iterable):
            raise TypeError(f"parents must be a sequence of node ids, got {type(parents).__name__}")
        parents = list(dict.fromkeys(parents))
        if not parents:
            raise ValueError("parents is empty: every node builds on at least one node (the root for a fresh search)")
        if node_id is None:
            while self._next_id in self._nodes:
                self._next_id += 1
            node_id = self._next_id
        try:
            hash(node_id)
        except TypeError:
            raise TypeError(f"node_id={node_id!r} must be hashable") from None
        if node_id in self._nodes:
            raise ValueError(f"node_id={node_id!r} already exists; node ids are unique")
        for p in parents:
            if p == node_id:
                raise ValueError(f"parents contains the node itself ({node_id!r}): that edge would close a cycle")
            if p not in self._nodes:
                raise ValueError(f"unknown parent {p!r}: add it first (known ids: {list(self._nodes)[:8]}...)")
        if step is None:
            step = len(self._nodes)
        step = check_int(step, "step", low=0)
        late = [p for p in parents if self._nodes[p].step > step]
        if late:
            raise ValueError(f"step={step} is earlier than its parents' steps {[self._nodes[p].step for p in late]}")
        node = MemoryNode(node_id, query, summary, _as_items(items, "items"), step, action)
        return self._insert(node_id, node, parents)

    def add_edge(self, parent: Hashable, child: Hashable) -> None:
        """Add the edge ``parent -> child`` between existing nodes; an edge that closes a cycle is refused."""
        for name, v in (("parent", parent), ("child", child)):
            if v not in self._nodes:
                raise ValueError(f"unknown {name} {v!r}")
        if parent in self._parents[child]:
            return
        if parent == child or child in self.ancestors(parent):
            raise ValueError(f"edge {parent!r} -> {child!r} would close a cycle ({child!r} is an ancestor of "
                             f"{parent!r}); the memory graph is a DAG")
        self._parents[child].append(parent)
        self._children[parent].append(child)

    # -- queries --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: Hashable) -> bool:
        return node_id in self._nodes

    def node(self, node_id: Hashable) -> MemoryNode:
        """The node with id ``node_id``."""
        self._require(node_id)
        return self._nodes[node_id]

    def nodes(self) -> list[Hashable]:
        """Node ids in insertion order."""
        return list(self._nodes)

    def parents(self, node_id: Hashable) -> list[Hashable]:
        self._require(node_id)
        return list(self._parents[node_id])

    def children(self, node_id: Hashable) -> list[Hashable]:
        self._require(node_id)
        return list(self._children[node_id])

    def edges(self) -> list[tuple[Hashable, Hashable]]:
        """Every edge ``(parent, child)``."""
        return [(p, c) for c in self._nodes for p in self._parents[c]]

    def out_degree(self, node_id: Hashable) -> int:
        """``deg⁺(v)``: how many later nodes build on ``v``."""
        self._require(node_id)
        return len(self._children[node_id])

    def ancestors(self, node_id: Hashable) -> set[Hashable]:
        """Every node with a path to ``node_id`` (not the node itself)."""
        self._require(node_id)
        seen: set[Hashable] = set()
        stack = list(self._parents[node_id])
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(self._parents[v])
        return seen

    def answer_node(self) -> Hashable | None:
        """The latest ``answer`` node (largest step, then latest inserted), or ``None``."""
        answers = [v for v, n in self._nodes.items() if n.action == "answer"]
        if not answers:
            return None
        rank = {v: i for i, v in enumerate(self._nodes)}
        return max(answers, key=lambda v: (self._nodes[v].step, rank[v]))

    def answer_path(self, answer: Hashable | None = None) -> set[Hashable]:
        """``P_ans``: the answer node and its ancestors (the critical path(s) from the root).

        ``answer`` defaults to :meth:`answer_node`; a graph without an answer node is a ``ValueError``.
        """
        if answer is None:
            answer = self.answer_node()
            if answer is None:
                raise ValueError("the graph has no answer node; add one with action='answer' or pass answer=")
        self._require(answer)
        return self.ancestors(answer) | {answer}

    def topological_order(self) -> list[Hashable]:
        """Node ids with every parent before its children (Kahn's algorithm; ties by step, then insertion)."""
        import heapq

        rank = {v: i for i, v in enumerate(self._nodes)}
        indeg = {v: len(p) for v, p in self._parents.items()}
        heap = [(self._nodes[v].step, rank[v]) for v, d in indeg.items() if d == 0]
        heapq.heapify(heap)
        by_rank = list(self._nodes)
        order = []
        while heap:
            _, r = heapq.heappop(heap)
            v = by_rank[r]
            order.append(v)
            for c in self._children[v]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(heap, (self._nodes[c].step, rank[c]))
        return order

    def items(self) -> list[tuple[Hashable, int, VisualItem]]:
        """Every visual item as ``(node id, index in the node, item)``, nodes in topological order.

        This is the item order of :class:`~icml26.papers.vimrag.energy.EnergyFn` and of the
        allocations built from a graph.
        """
        return [(v, i, item) for v in self.topological_order() for i, item in enumerate(self._nodes[v].items)]

    @property
    def step(self) -> int:
        """The current step ``t``: the largest step of any node."""
        return max(n.step for n in self._nodes.values())

    def serialize(self, tokens: Sequence[int] | None = None, *, image_token: str = "<image>") -> str:
        """The context the policy reads: nodes in topological order with their summaries and items.

        Args:
            tokens: optional visual tokens per item (in :meth:`items` order, e.g.
                ``Allocation.tokens``); an item with 0 tokens is shown as dropped.
            image_token: the placeholder written for a kept item.
        """
        flat = self.items()
        if tokens is not None:
            tokens = [check_int(t, "tokens[i]", low=0) for t in tokens]
            if len(tokens) != len(flat):
                raise ValueError(f"tokens has {len(tokens)} entries for {len(flat)} visual items; pass one per item")
        lines, k = [], 0
        for v in self.topological_order():
            n = self._nodes[v]
            head = f"[{v}] {n.action} (step {n.step})"
            if self._parents[v]:
                head += " <- " + ", ".join(str(p) for p in self._parents[v])
            lines.append(f"{head}: {n.query}")
            if n.summary:
                lines.append(f"  summary: {n.summary}")
            for item in n.items:
                label = item.name or f"item {k}"
                if tokens is None:
                    lines.append(f"  {label}: {image_token}")
                elif tokens[k] == 0:
                    lines.append(f"  {label}: (dropped)")
                else:
                    lines.append(f"  {label}: {image_token} x {tokens[k]} tokens")
                k += 1
        return "\n".join(lines)

    def _require(self, node_id: Hashable) -> None:
        try:
            known = node_id in self._nodes
        except TypeError:
            raise TypeError(f"node id {node_id!r} is not hashable") from None
        if not known:
            raise ValueError(f"unknown node {node_id!r}")

    def __repr__(self) -> str:
        return f"MemoryGraph({len(self._nodes)} nodes, {sum(len(p) for p in self._parents.values())} edges)"
