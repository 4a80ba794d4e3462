"""VimRAG: navigating massive visual context in retrieval-augmented generation via a multimodal memory graph.

*Navigating Massive Visual Context in Retrieval-Augmented Generation via Multimodal Memory Graph*
(Tongyi Lab, ICML 2026, arXiv 2602.12735; no public code). Three mechanisms:

1. **Multimodal memory graph** (:class:`MemoryGraph`): a DAG of agent states rooted at the
   question; each node holds a sub-query, a summary and visual items; the context is the graph
   serialised in topological order.
2. **Graph-modulated visual memory encoding** (GMVME): each item's energy
   ``E_i = p_i · (1 + λ·deg⁺(v_i)) · γ^(t − t_i)`` (:class:`EnergyFn`) splits a global pixel budget
   by water-filling (:func:`allocate_budget`, :func:`graph_modulated_allocation`); items below the
   minimum are dropped and their share redistributed; :func:`processor_kwargs` turns the result into
   per-image ``min_pixels``/``max_pixels`` for Qwen2-VL-style processors.
3. **Graph-guided policy optimization** (GGPO): the mask
   ``μ_t = 1[r=1]·1[v_t ∉ P_ans] + 1[r=0]·1[v_t ∈ R_val]`` (:func:`ggpo_mask`) removes dead ends of
   successful rollouts and useful retrievals of failed ones from the clipped GRPO/GSPO loss
   (:func:`ggpo_loss`, :func:`grpo_advantages`); HF causal LMs plug in through per-token step spans
   (:func:`token_logprobs`, :func:`token_steps`, :func:`tokenize_trajectory`).

The agent loop (:class:`Retriever`, :class:`Policy`, :class:`Action`, :func:`run_agent`) connects any
retriever and any (M)LLM policy to the graph.

There are two methods, so there is no single ``METHOD``: ``ALLOCATION_BASELINES`` are drop-in
alternatives to :func:`graph_modulated_allocation` ``(graph, total_pixels, **limits)``, and
``LOSS_BASELINES`` to :func:`ggpo_loss` without its mask (``grpo_loss``). ``BASELINES`` holds both.
See ``README.md`` beside this file.
"""

from typing import Callable

from icml26.papers.vimrag.agent import Action, AgentTrace, Policy, Retriever, run_agent
from icml26.papers.vimrag.baselines import (
    grpo_loss,
    priority_allocation,
    recency_allocation,
    truncate_budget,
    uniform_allocation,
)
from icml26.papers.vimrag.budget import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_PIXELS,
    DEFAULT_PATCH_AREA,
    DEFAULT_TOTAL_PIXELS,
    Allocation,  # noqa: F401  (an alias kept out of __all__, see below)
    PixelAllocation,
    allocate_budget,
    graph_modulated_allocation,
    processor_kwargs,
    snap_allocation,
)
from icml26.papers.vimrag.energy import EnergyFn, ItemFeatures, item_features
from icml26.papers.vimrag.ggpo import (
    ggpo_loss,
    ggpo_mask,
    ggpo_mask_from_membership,
    grpo_advantages,
    token_logprobs,
    token_steps,
    tokenize_trajectory,
)
from icml26.papers.vimrag.graph import ACTIONS, MemoryGraph, MemoryNode, VisualItem

# Allocation (the name) is an alias of PixelAllocation, kept out of __all__ because robuq exports
# a different Allocation (one meaning per public name across the package).
ALLOCATION_BASELINES: dict[str, Callable] = {
    "uniform": uniform_allocation,
    "recency": recency_allocation,
    "priority_only": priority_allocation,
}
"""Drop-in alternatives to :func:`graph_modulated_allocation`: ``(graph, total_pixels, **limits)``."""
LOSS_BASELINES: dict[str, Callable] = {"grpo": grpo_loss}
"""The outcome-only alternative to :func:`ggpo_loss`: the same call without ``mask``."""
BASELINES: dict[str, Callable] = {**ALLOCATION_BASELINES, **LOSS_BASELINES}
"""Every baseline of the reproduction (two methods, so no single ``METHOD``)."""

__all__ = [
    "ACTIONS",
    "ALLOCATION_BASELINES",
    "Action",
    "AgentTrace",
    "PixelAllocation",
    "BASELINES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MIN_PIXELS",
    "DEFAULT_PATCH_AREA",
    "DEFAULT_TOTAL_PIXELS",
    "EnergyFn",
    "ItemFeatures",
    "LOSS_BASELINES",
    "MemoryGraph",
    "MemoryNode",
    "Policy",
    "Retriever",
    "VisualItem",
    "allocate_budget",
    "ggpo_loss",
    "ggpo_mask",
    "ggpo_mask_from_membership",
    "graph_modulated_allocation",
    "grpo_advantages",
    "grpo_loss",
    "item_features",
    "priority_allocation",
    "processor_kwargs",
    "recency_allocation",
    "run_agent",
    "snap_allocation",
    "token_logprobs",
    "token_steps",
    "tokenize_trajectory",
    "truncate_budget",
    "uniform_allocation",
]
