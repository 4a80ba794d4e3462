"""LLR: heavy-tail guided layerwise learning rates (ICML 2026, arXiv 2605.22297).

Each layer's weight spectrum is fitted with a power law; layers with a larger exponent
alpha (a lighter tail: less trained) get a larger learning rate.

>>> from icml26.papers.llr import LayerwiseLR, layerwise_param_groups, esd_alpha
>>> optimizer = torch.optim.AdamW(layerwise_param_groups(model, weight_decay=0.1), lr=1e-3)
>>> llr = LayerwiseLR(model, optimizer, total_steps=10_000)
>>> # each step: loss.backward(); optimizer.step(); scheduler.step(); llr.step()

``METHOD`` is :class:`LayerwiseLR`; ``BASELINES`` holds drop-ins with its signature: the
uniform baseline (every multiplier 1, or a rate-matched ``multiplier``) and the shuffled control
(LLR's multipliers permuted within matrix kinds, which keeps every kind's rate), and two controls
that need no fit of a trained weight: the embeddings and head alone at ``r_max``
(:func:`embed_head_layerwise_lr`) and LLR's step-0 assignment averaged per matrix kind and held
(:func:`kind_static_step0_lr`). :class:`StaticLayerwiseLR` holds fixed per-layer multipliers
(the kind-static control).
"""

from typing import Callable

from icml26.papers.llr.baselines import (
    KindMeans,
    ShuffledMultipliers,
    StaticLayerwiseLR,
    embed_head_layerwise_lr,
    kind_static_step0_lr,
    layer_kinds,
    matrix_kind,
    shuffled_layerwise_lr,
    uniform_layerwise_lr,
)
from icml26.papers.llr.esd import AlphaFit, esd, esd_alpha, fit_power_law
from icml26.papers.llr.layerwise import (
    LayerwiseLR,
    LLRHistory,
    find_layers,
    layer_alphas,
    layerwise_param_groups,
    map_alphas,
)
from icml26.papers.llr.muon import Muon, newton_schulz

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD: Callable = LayerwiseLR
"""The method: heavy-tail guided multipliers on any optimizer."""
BASELINES: dict[str, Callable] = {"uniform": uniform_layerwise_lr, "shuffled": shuffled_layerwise_lr,
                                  "embed_head": embed_head_layerwise_lr, "kind_static_step0": kind_static_step0_lr}
"""Drop-in alternatives to :data:`METHOD` (same required arguments)."""

__all__ = [
    "BASELINES",
    "AlphaFit",
    "KindMeans",
    "LLRHistory",
    "LayerwiseLR",
    "Muon",
    "ShuffledMultipliers",
    "StaticLayerwiseLR",
    "embed_head_layerwise_lr",
    "esd",
    "esd_alpha",
    "find_layers",
    "fit_power_law",
    "kind_static_step0_lr",
    "layer_alphas",
    "layer_kinds",
    "layerwise_param_groups",
    "map_alphas",
    "matrix_kind",
    "newton_schulz",
    "shuffled_layerwise_lr",
    "uniform_layerwise_lr",
]
