"""SubspacePath Pruner: scenario-specific attention-head pathways (ICML 2026, OpenReview fvkCjFvWKf).

One frozen LLM serves many scenarios; for each scenario a head mask is compiled from its
first input and reused for every later turn.

Offline: domain axes (:func:`synthesize_basis`), layer-wise one-vs-rest probes
(:func:`fit_probes`), axis-aligned head importance (:func:`head_importance`, read with an
``o_proj`` pre-hook) and a whitelist of domain-invariant heads (:func:`whitelist_heads`,
Mann–Whitney U). Online: probe similarity and breadth of the first input, then
:func:`compile_mask` (exact budgets with ``target_prune_ratio``). Heads are removed with
:func:`mask_heads` (an ``o_proj``-input pre-hook) or :func:`prune_heads` (structural).

>>> pruner = SubspacePathPruner(model).fit({"chemistry": chem_ids, "finance": fin_ids, ...})
>>> keep = pruner.compile(first_prompt_ids, target_prune_ratio=0.3)
>>> with mask_heads(model, keep):
...     out = model(next_turn_ids)

``METHOD`` is :class:`SubspacePathPruner`; ``BASELINES`` are drop-ins with its constructor
and ``fit``/``compile`` (global gradient importance, Wanda-sp, random heads, and a per-domain
oracle told the scenario's domains).
"""

from typing import Callable

from icml26.papers.subspace_path.baselines import (
    DomainOraclePruner,
    GlobalGradientPruner,
    RandomPruner,
    WandaSPPruner,
    gradient_head_importance,
    labelled_batch,
    wanda_sp_scores,
)
from icml26.papers.subspace_path.basis import Basis, basis_coverage, domain_axes, synthesize_basis
from icml26.papers.subspace_path.capture import Activations, Batch, as_batch, collect_activations, head_writes
from icml26.papers.subspace_path.compile import breadth, compile_mask, reference_compile, select_heads, similarity
from icml26.papers.subspace_path.heads import (
    AttentionLayout,
    attention_layout,
    attention_modules,
    count_heads,
    mask_heads,
    mask_output_blocks,
    prune_heads,
    scale_heads,
)
from icml26.papers.subspace_path.importance import (
    Whitelist,
    head_alignment,
    head_importance,
    importance_from_alignment,
    whitelist_from_alignment,
    whitelist_heads,
)
from icml26.papers.subspace_path.linear_probes import DomainProbes, fit_probes
from icml26.papers.subspace_path.persist import load_pruned, save_pruned
from icml26.papers.subspace_path.pruner import ScenarioProfile, SubspacePathPruner, domain_pools

METHOD: Callable = SubspacePathPruner
"""The method: ``SubspacePathPruner(model).fit(domain_data).compile(first_input, target_prune_ratio=r)``."""
BASELINES: dict[str, Callable] = {
    "global_gradient": GlobalGradientPruner,
    "wanda_sp": WandaSPPruner,
    "random": RandomPruner,
    "oracle": DomainOraclePruner,
}
"""Drop-in alternatives to :data:`METHOD` (same constructor, ``fit``, ``compile``; same selection and removal)."""

__all__ = [
    "BASELINES",
    "METHOD",
    "Activations",
    "AttentionLayout",
    "Basis",
    "Batch",
    "DomainOraclePruner",
    "DomainProbes",
    "GlobalGradientPruner",
    "RandomPruner",
    "ScenarioProfile",
    "SubspacePathPruner",
    "WandaSPPruner",
    "Whitelist",
    "as_batch",
    "attention_layout",
    "attention_modules",
    "basis_coverage",
    "breadth",
    "collect_activations",
    "compile_mask",
    "count_heads",
    "domain_axes",
    "domain_pools",
    "fit_probes",
    "gradient_head_importance",
    "head_alignment",
    "head_importance",
    "head_writes",
    "importance_from_alignment",
    "labelled_batch",
    "load_pruned",
    "mask_heads",
    "mask_output_blocks",
    "prune_heads",
    "reference_compile",
    "save_pruned",
    "scale_heads",
    "select_heads",
    "similarity",
    "synthesize_basis",
    "wanda_sp_scores",
    "whitelist_from_alignment",
    "whitelist_heads",
]
