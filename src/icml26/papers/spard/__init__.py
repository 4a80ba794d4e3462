"""SPARD: safety-projected alternating fine-tuning (SPAG) with relevance–diversity DPP safety data.

(ICML 2026; authors' code github.com/shuhao02/SPARD.) Fine-tune an aligned model on user data
that may hold harmful examples, while a small, selected safety set keeps it refusing:

>>> sel = dpp_select(embed(base, safety_inputs), embed(base, user_inputs), k)   # which safety data
>>> spag_finetune(model, task_loader, safety_loader_of(sel.order), steps=..., optimizer=adamw)

``METHOD`` is :func:`spag_finetune`; ``BASELINES`` are drop-ins with its signature (SFT,
SafeInstr, penalty, Lisa-style); ``SELECTORS`` are the selection rules with
:func:`dpp_select`'s signature (DPP, random, relevance-only top-k).
"""

from typing import Callable

from icml26.papers.spard.baselines import lisa_finetune, penalty_finetune, safeinstr_finetune, sft_finetune
from icml26.papers.spard.embedding import embed
from icml26.papers.spard.projection import (
    ProjectionStep,
    SafetyProjection,
    auto_tau,
    default_loss,
    safety_step,
)
from icml26.papers.spard.selection import (
    Selection,
    cosine_matrix,
    dpp_kernel,
    dpp_select,
    greedy_map,
    random_select,
    relevance,
    topk_relevance,
)
from icml26.papers.spard.training import FinetuneHistory, spag_finetune

METHOD: Callable = spag_finetune
"""The method: SPAG fine-tuning (feed it DPP-selected safety data for SPARD)."""
BASELINES: dict[str, Callable] = {
    "SFT": sft_finetune,
    "SafeInstr": safeinstr_finetune,
    "penalty": penalty_finetune,
    "Lisa": lisa_finetune,
}
"""Drop-in alternatives to :data:`METHOD` (same required arguments)."""
SELECTORS: dict[str, Callable] = {"dpp": dpp_select, "random": random_select, "topk": topk_relevance}
"""Safety-data selection rules with one signature ``(candidates, reference, k, ...) -> Selection``."""

__all__ = [
    "BASELINES",
    "METHOD",
    "SELECTORS",
    "FinetuneHistory",
    "ProjectionStep",
    "SafetyProjection",
    "Selection",
    "auto_tau",
    "cosine_matrix",
    "default_loss",
    "dpp_kernel",
    "dpp_select",
    "embed",
    "greedy_map",
    "lisa_finetune",
    "penalty_finetune",
    "random_select",
    "relevance",
    "safeinstr_finetune",
    "safety_step",
    "sft_finetune",
    "spag_finetune",
    "topk_relevance",
]
