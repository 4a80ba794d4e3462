"""VimRAG's hostile-input probes (the issue's bad inputs first). The paper exports no ``nn.Module``."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import Probe
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

MODULES: list = []


def _graph() -> MemoryGraph:
    g = MemoryGraph("q")
    a = g.add_node("a", parents=[g.root], items=[VisualItem("x", 0.5), VisualItem("y", 2.0)])
    g.add_node("b", parents=[a], items=[VisualItem("z", 1.0)])
    return g


def _cycle() -> None:
    g = MemoryGraph("q")
    a = g.add_node("a", parents=[g.root])
    b = g.add_node("b", parents=[a])
    g.add_edge(b, a)


_LP = torch.zeros(2, 3, requires_grad=True)
_STEPS = torch.tensor([[0, 0, 1], [-1, 0, 1]])
_MASK = torch.zeros(2, 2, dtype=torch.bool)
_ALLOC = allocate_budget([1.0, 2.0], 200, min_pixels=10, max_pixels=150, patch_area=10)


class _Retriever:
    def search(self, query, k):
        return [VisualItem(query, 1.0)]


class _Policy:
    def act(self, graph):
        return "answer"


HOSTILE = [
    # the bad inputs
    Probe("allocate_budget with a negative energy", lambda: allocate_budget([1.0, -0.5], 1000, min_pixels=10,
                                                                            max_pixels=500), match="non-negative"),
    Probe("allocate_budget with min_pixels > max_pixels", lambda: allocate_budget([1.0], 1000, min_pixels=600,
                                                                                  max_pixels=500), match="min_pixels"),
    Probe("allocate_budget with a budget below one minimal item",
          lambda: allocate_budget([1.0, 2.0], 50, min_pixels=64, max_pixels=500), match="total_pixels"),
    Probe("add_node with an unknown parent", lambda: MemoryGraph("q").add_node("a", parents=[7]),
          match="unknown parent"),
    # graph
    Probe("add_edge closing a cycle", _cycle, match="cycle"),
    Probe("add_node with itself as parent", lambda: MemoryGraph("q").add_node("a", parents=[1], node_id=1),
          match="cycle"),
    Probe("add_node without parents", lambda: MemoryGraph("q").add_node("a", parents=[]), match="parents"),
    Probe("add_node with a duplicate id", lambda: MemoryGraph("q").add_node("a", parents=[0], node_id=0),
          match="already exists"),
    Probe("add_node with action='search'", lambda: MemoryGraph("q").add_node("a", parents=[0], action="search"),
          match="action"),
    Probe("add_node with a step before its parent's", lambda: _graph().add_node("c", parents=[2], step=1),
          match="step"),
    Probe("add_node with step=1.5", lambda: MemoryGraph("q").add_node("a", parents=[0], step=1.5), raises=TypeError,
          match="step"),
    Probe("add_node with raw items", lambda: MemoryGraph("q").add_node("a", parents=[0], items=["img.png"]),
          raises=TypeError, match="VisualItem"),
    Probe("add_node with parents given as a string", lambda: MemoryGraph("q").add_node("a", parents="0"),
          raises=TypeError, match="parents"),
    Probe("MemoryGraph with a non-string question", lambda: MemoryGraph(3), raises=TypeError, match="question"),
    Probe("out_degree of an unknown node", lambda: MemoryGraph("q").out_degree(5), match="unknown node"),
    Probe("answer_path without an answer node", lambda: _graph().answer_path(), match="no answer node"),
    Probe("serialize with the wrong number of token counts", lambda: _graph().serialize([1, 2]), match="tokens"),
    Probe("VisualItem with a negative priority", lambda: VisualItem("x", -1.0), match="priority"),
    Probe("VisualItem with a NaN priority", lambda: VisualItem("x", math.nan), match="priority"),
    # energy
    Probe("EnergyFn gamma=0", lambda: EnergyFn(gamma=0.0), match="gamma"),
    Probe("EnergyFn gamma=1.5", lambda: EnergyFn(gamma=1.5), match="gamma"),
    Probe("EnergyFn lam=-1", lambda: EnergyFn(lam=-1.0), match="lam"),
    Probe("EnergyFn.energy with NaN priority", lambda: EnergyFn().energy([math.nan], [0], [0]), match="priority"),
    Probe("EnergyFn.energy with a negative age", lambda: EnergyFn().energy([1.0], [0], [-1]), match="age"),
    Probe("EnergyFn structure not callable", lambda: EnergyFn(structure=3), raises=TypeError, match="structure"),
    Probe("EnergyFn with a negative structure score", lambda: EnergyFn(structure=lambda g, v: -1.0)(_graph()),
          match="structure"),
    Probe("item_features of a dict", lambda: item_features({}), raises=TypeError, match="MemoryGraph"),
    Probe("item_features with now before the last step", lambda: item_features(_graph(), now=1), match="now"),
    # allocation
    Probe("allocate_budget with NaN energy", lambda: allocate_budget([1.0, math.nan], 1000, min_pixels=10,
                                                                     max_pixels=500), match="NaN"),
    Probe("allocate_budget with 2-D energies", lambda: allocate_budget(np.ones((2, 2)), 1000, min_pixels=10,
                                                                       max_pixels=500), match="1-D"),
    Probe("allocate_budget with a string", lambda: allocate_budget("1,2", 1000), raises=TypeError, match="energies"),
    Probe("allocate_budget with total_pixels=inf", lambda: allocate_budget([1.0], math.inf), match="total_pixels"),
    Probe("allocate_budget with patch_area=0", lambda: allocate_budget([1.0], 1000, min_pixels=10, max_pixels=500,
                                                                       patch_area=0), match="patch_area"),
    Probe("allocate_budget with min_pixels=0", lambda: allocate_budget([1.0], 1000, min_pixels=0, max_pixels=500),
          match="min_pixels"),
    Probe("allocate_budget of all-zero energies drops every item",
          lambda: allocate_budget([0.0, 0.0], 1000, min_pixels=10, max_pixels=500),
          returns=lambda a: bool(a.dropped.all()) and a.used_pixels == 0,
          doc="a zero-energy item is never kept (nu * 0 < min_pixels); all zero: nothing is kept"),
    Probe("allocate_budget of no items", lambda: allocate_budget([], 1000, min_pixels=10, max_pixels=500),
          returns=lambda a: len(a) == 0, doc="an empty allocation"),
    Probe("allocate_budget accepts a tensor", lambda: allocate_budget(torch.tensor([1.0, 1.0]), 100, min_pixels=10,
                                                                      max_pixels=500, patch_area=1),
          returns=lambda a: a.pixels.tolist() == [50, 50], doc="tensors on any device are read as NumPy"),
    Probe("graph_modulated_allocation of a list", lambda: graph_modulated_allocation([1.0]), raises=TypeError,
          match="graph"),
    Probe("graph_modulated_allocation with energies of the wrong length",
          lambda: graph_modulated_allocation(_graph(), 1000, energy_fn=lambda g: [1.0], min_pixels=10,
                                             max_pixels=500), match="energies"),
    Probe("uniform_allocation of a list", lambda: uniform_allocation([1.0]), raises=TypeError, match="graph"),
    Probe("priority_allocation with min > max", lambda: priority_allocation(_graph(), 1000, min_pixels=600,
                                                                            max_pixels=500), match="min_pixels"),
    Probe("recency_allocation below one item", lambda: recency_allocation(_graph(), 5, min_pixels=10, max_pixels=50),
          match="total_pixels"),
    Probe("truncate_budget with a negative key", lambda: truncate_budget([-1.0], 100, min_pixels=10, max_pixels=50),
          match="non-negative"),
    Probe("processor_kwargs of a dict", lambda: processor_kwargs({"pixels": [1]}), raises=TypeError,
          match="allocation"),
    Probe("processor_kwargs with min_tokens=0", lambda: processor_kwargs(_ALLOC, min_tokens=0), match="min_tokens"),
    Probe("processor_kwargs of a dropped item is None",
          lambda: processor_kwargs(allocate_budget([1.0, 0.0], 200, min_pixels=10, max_pixels=150, patch_area=10)),
          returns=lambda kw: kw[1] is None and kw[0] == {"min_pixels": 10, "max_pixels": 150},
          doc="a dropped item gets None: leave the image out"),
    Probe("snap_allocation with decreasing levels", lambda: snap_allocation(_ALLOC, (64, 16)), match="increasing"),
    Probe("snap_allocation with a short tie_break", lambda: snap_allocation(_ALLOC, (10, 100), tie_break=[0.0]),
          match="tie_break"),
    Probe("snap_allocation of a list", lambda: snap_allocation([1, 2], (10,)), raises=TypeError, match="allocation"),
    Probe("PixelAllocation is what allocate_budget returns", lambda: _ALLOC,
          returns=lambda a: isinstance(a, PixelAllocation) and a.used_pixels <= 200, doc="the budget is respected"),
    # GGPO
    Probe("ggpo_mask with reward 0.5", lambda: ggpo_mask([1, 2], 0.5, {1}, set()), match="binary"),
    Probe("ggpo_mask with reward 'yes'", lambda: ggpo_mask([1], "yes", {1}, set()), raises=TypeError,
          match="reward"),
    Probe("ggpo_mask with steps as a string", lambda: ggpo_mask("ab", 1, {"a"}, set()), raises=TypeError,
          match="steps"),
    Probe("ggpo_mask with answer_path as a number", lambda: ggpo_mask([1], 1, 3, set()), raises=TypeError,
          match="answer_path"),
    Probe("ggpo_mask_from_membership with mismatched shapes",
          lambda: ggpo_mask_from_membership(torch.zeros(2, 3, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool),
                                            torch.zeros(2)), match="shape"),
    Probe("ggpo_mask_from_membership with reward 2", lambda: ggpo_mask_from_membership(
        torch.zeros(1, 2, dtype=torch.bool), torch.zeros(1, 2, dtype=torch.bool), torch.tensor([2.0])),
          match="binary"),
    Probe("grpo_advantages of one rollout", lambda: grpo_advantages([1.0]), match="G >= 2"),
    Probe("grpo_advantages with NaN", lambda: grpo_advantages([1.0, math.nan]), match="NaN"),
    Probe("grpo_advantages of a string", lambda: grpo_advantages("10"), raises=TypeError, match="rewards"),
    Probe("grpo_advantages of equal rewards", lambda: grpo_advantages([1.0, 1.0, 1.0]),
          returns=lambda a: bool((a == 0).all()), doc="a group of equal rewards gets zero advantages"),
    Probe("ggpo_loss of NumPy logprobs", lambda: ggpo_loss(np.zeros((2, 3)), _LP, torch.zeros(2), _STEPS, _MASK),
          raises=TypeError, match="logprobs"),
    Probe("ggpo_loss with old_logprobs of another shape",
          lambda: ggpo_loss(_LP, torch.zeros(2, 4), torch.zeros(2), _STEPS, _MASK), match="old_logprobs"),
    Probe("ggpo_loss with a float token_step",
          lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS.float(), _MASK), match="token_step"),
    Probe("ggpo_loss with a step beyond the mask",
          lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS + 1, _MASK), match="token_step"),
    Probe("ggpo_loss with a mask of 2", lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS,
                                                          torch.full((2, 2), 2)), match="mask"),
    Probe("ggpo_loss with NaN advantages",
          lambda: ggpo_loss(_LP, _LP.detach(), torch.tensor([math.nan, 0.0]), _STEPS, _MASK), match="advantages"),
    Probe("ggpo_loss with clip=-0.1", lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS, _MASK, -0.1),
          match="clip"),
    Probe("ggpo_loss GSPO with per-token advantages",
          lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2, 3), _STEPS, _MASK, ratio="sequence"),
          match="sequence"),
    Probe("ggpo_loss reduction='mean'", lambda: ggpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS, _MASK,
                                                          reduction="mean"), match="reduction"),
    Probe("ggpo_loss with every step masked is 0",
          lambda: ggpo_loss(_LP, _LP.detach(), torch.ones(2), _STEPS, torch.ones(2, 2, dtype=torch.bool)),
          returns=lambda v: float(v.detach()) == 0.0 and v.requires_grad,
          doc="no token in the loss: 0, still differentiable"),
    Probe("grpo_loss with a float token_step",
          lambda: grpo_loss(_LP, _LP.detach(), torch.zeros(2), _STEPS.float()), match="token_step"),
    Probe("token_logprobs with float input_ids", lambda: token_logprobs(lambda **k: None, torch.zeros(1, 3)),
          match="input_ids"),
    Probe("token_logprobs with a model returning the wrong shape",
          lambda: token_logprobs(lambda **k: torch.zeros(1, 2, 5), torch.zeros(1, 3, dtype=torch.long)),
          match="logits"),
    Probe("token_steps with overlapping spans", lambda: token_steps([[(0, 3), (2, 4)]], 5), match="overlaps"),
    Probe("token_steps with a span past the end", lambda: token_steps([[(0, 6)]], 5), match="end"),
    Probe("tokenize_trajectory with a bare string segment", lambda: tokenize_trajectory(lambda s: [1], ["hi"]),
          raises=TypeError, match="segments"),
    # agent loop
    Probe("Action kind='search'", lambda: Action("search", "q"), match="kind"),
    Probe("Action retrieve with items", lambda: Action("retrieve", "q", items=(VisualItem(),)), match="items"),
    Probe("run_agent with a policy returning a string", lambda: run_agent("q", _Policy(), _Retriever()),
          raises=TypeError, match="Action"),
    Probe("run_agent with a non-retriever", lambda: run_agent("q", _Policy(), object()), raises=TypeError,
          match="retriever"),
    Probe("run_agent horizon=0", lambda: run_agent("q", _Policy(), _Retriever(), horizon=0), match="horizon"),
]


# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
class _Answering:
    """A policy that answers at once (a valid run_agent call)."""

    def act(self, graph):
        return Action("answer", "42")


def _loss_call() -> tuple:
    logprobs = -torch.rand(2, 3, requires_grad=True)
    steps = torch.tensor([[0, 0, 1], [0, 1, -1]])  # token [0, 0] is generated, so the walk's NaN lands in the loss
    return ((logprobs, -torch.rand(2, 3), torch.tensor([1.0, -1.0]), steps), {"clip": 0.2, "clip_high": 0.3})


_LIMITS = {"min_pixels": 10.0, "max_pixels": 150.0, "patch_area": 10.0}  # pixel counts typed float

VALID = {
    "Action": lambda: (("retrieve", "the tower"), {}),
    "MemoryGraph": lambda: (("q",), {}),
    "allocate_budget": lambda: ((np.array([1.0, 2.0, 0.5]), 200.0), _LIMITS),
    "ggpo_loss": lambda: ((*_loss_call()[0], torch.zeros(2, 2, dtype=torch.bool)), _loss_call()[1]),
    "ggpo_mask": lambda: (([1, 2], 1, {0, 1}, set()), {}),
    "ggpo_mask_from_membership": lambda: ((torch.tensor([[True, False]]), torch.tensor([[False, True]]),
                                           torch.tensor([1.0])), {}),
    "graph_modulated_allocation": lambda: ((_graph(), 200.0), _LIMITS),
    "grpo_advantages": lambda: ((torch.tensor([1.0, 0.0, 1.0]),), {"eps": 1e-6}),
    "grpo_loss": _loss_call,
    "item_features": lambda: ((_graph(),), {"now": 3}),
    "priority_allocation": lambda: ((_graph(), 200.0), _LIMITS),
    "processor_kwargs": lambda: ((_ALLOC,), {"patch_area": 10.0, "min_tokens": 1}),
    "recency_allocation": lambda: ((_graph(), 200.0), _LIMITS),
    "run_agent": lambda: (("q", _Answering(), _Retriever()), {"horizon": 2, "top_k": 1}),
    "snap_allocation": lambda: ((_ALLOC, np.array([10.0, 50.0, 100.0])), {"tie_break": np.array([0.5, 0.1])}),
    "token_logprobs": lambda: ((lambda **k: torch.randn(1, 3, 5), torch.tensor([[1, 2, 3]])), {}),
    "token_steps": lambda: (([[(0, 2), (3, 5)]], 6), {}),
    "tokenize_trajectory": lambda: ((lambda s: [len(s)], [("prompt", None), ("step", 0)]), {}),
    "truncate_budget": lambda: ((np.array([0.0, 1.0, 2.0]), 200.0), _LIMITS),
    "uniform_allocation": lambda: ((_graph(), 200.0), _LIMITS),
}

NOT_WALKED = {
    "AgentTrace": "a plain record (graph, steps, actions, answer) that run_agent fills; run_agent is walked",
    "ItemFeatures": "a plain record (priority, structure, age) that item_features fills; item_features and "
                    "EnergyFn.energy (HOSTILE 'EnergyFn.energy with NaN priority') check the values",
    "MemoryNode": "a plain record that MemoryGraph.add_node builds after checking step, action, parents and "
                  "items (HOSTILE 'add_node ...' probes)",
    "PixelAllocation": "a plain record that allocate_budget, the baselines and snap_allocation fill; they are "
                       "walked",
    "Policy": "a typing.Protocol (an interface, not instantiable); run_agent is walked with an implementation "
              "and refuses objects without act (HOSTILE 'run_agent with a policy returning a string')",
    "Retriever": "a typing.Protocol (an interface, not instantiable); run_agent is walked with an implementation "
                 "and refuses objects without search (HOSTILE 'run_agent with a non-retriever')",
}
