"""The agent loop: any retriever and any (M)LLM policy, one memory graph.

At each step the policy reads the graph (``Policy.act(graph) -> Action``; an MLLM would read
``graph.serialize(allocation.tokens)`` plus the images resized by
:func:`~icml26.papers.vimrag.budget.processor_kwargs`) and chooses one of the paper's three
action types:

* ``retrieve``: a sub-query plus the nodes it builds on; the :class:`Retriever` returns the top-k
  visual items (each with its relevance as priority) and a new node holds them;
* ``perceive``: keep selected items or crops (``items``) and a summary, as a new node;
* ``answer``: the terminal projection, an answer node linked to its supporting nodes.

:func:`run_agent` records the node each step created, which is what
:func:`~icml26.papers.vimrag.ggpo.ggpo_mask` needs (``P_ans`` from ``graph.answer_path()``).
"""

from __future__ import annotations

import dataclasses
from typing import Hashable, Protocol, Sequence, runtime_checkable

from icml26.common.argcheck import check_int
from icml26.papers.vimrag.graph import MemoryGraph, VisualItem

__all__ = ["Action", "AgentTrace", "Policy", "Retriever", "run_agent"]


@dataclasses.dataclass(frozen=True)
class Action:
    """One step of the policy.

    Attributes:
        kind: ``"retrieve"``, ``"perceive"`` or ``"answer"``.
        text: the sub-query (retrieve), what was perceived (perceive) or the answer (answer).
        parents: the nodes this step builds on (default: the root).
        summary: the node's textual summary ``s_v``.
        items: the visual items a ``perceive`` step keeps (crops, keyframes).
    """

    kind: str
    text: str
    parents: tuple[Hashable, ...] = ()
    summary: str = ""
    items: tuple[VisualItem, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("retrieve", "perceive", "answer"):
            raise ValueError(f"kind={self.kind!r} must be 'retrieve', 'perceive' or 'answer'")
        if not isinstance(self.text, str) or not isinstance(self.summary, str):
            raise TypeError("text and summary must be strings")
        object.__setattr__(self, "parents", tuple(self.parents))
        object.__setattr__(self, "items", tuple(self.items))
        if self.items and self.kind != "perceive":
            raise ValueError("items are kept by 'perceive' steps; a 'retrieve' step gets its items from the retriever"
                             if self.kind == "retrieve" else "items: an answer step holds no items")


@runtime_checkable
class Retriever(Protocol):
    """A search engine over visual items: ``search(query, k)`` -> up to ``k`` items, best first."""

    def search(self, query: str, k: int) -> Sequence[VisualItem]: ...


@runtime_checkable
class Policy(Protocol):
    """An agent policy: reads the memory graph, returns the next :class:`Action`."""

    def act(self, graph: MemoryGraph) -> Action: ...


@dataclasses.dataclass
class AgentTrace:
    """One rollout: the final graph, the node each step created (``v_t``), the actions, the answer."""

    graph: MemoryGraph
    steps: list[Hashable]
    actions: list[Action]
    answer: str | None


def run_agent(question: str, policy: Policy, retriever: Retriever, *, horizon: int = 8,
              top_k: int = 3) -> AgentTrace:
    """Run ``policy`` against ``retriever`` for at most ``horizon`` steps or until it answers."""
    if not isinstance(policy, Policy):
        raise TypeError("policy must have a method act(graph) -> Action")
    if not isinstance(retriever, Retriever):
        raise TypeError("retriever must have a method search(query, k) -> list of VisualItem")
    horizon = check_int(horizon, "horizon", low=1)
    top_k = check_int(top_k, "top_k", low=1)
    graph = MemoryGraph(question)
    steps: list[Hashable] = []
    actions: list[Action] = []
    for t in range(1, horizon + 1):
        action = policy.act(graph)
        if not isinstance(action, Action):
            raise TypeError(f"policy.act returned {type(action).__name__}; return an Action")
        parents = action.parents or (graph.root,)
        if action.kind == "retrieve":
            items = list(retriever.search(action.text, top_k))[:top_k]
            node = graph.add_node(action.text, parents=parents, summary=action.summary, items=items, step=t)
        else:
            node = graph.add_node(action.text, parents=parents, summary=action.summary, items=action.items,
                                  step=t, action=action.kind)
        steps.append(node)
        actions.append(action)
        if action.kind == "answer":
            return AgentTrace(graph, steps, actions, action.text)
    return AgentTrace(graph, steps, actions, None)
