"""Controls for LLR (arXiv 2605.22297): the same multipliers on the wrong layers.

*Uniform* training needs nothing here: it is the optimizer without
:class:`~icml26.papers.llr.layerwise.LayerwiseLR`.

The *shuffled* control (ours, proposed in the brief) keeps LLR's schedule and the
multiset of its multipliers but permutes them across the fitted layers with one fixed
random permutation. It gives the same total "extra learning rate" as LLR, so LLR beating
it shows that the heavy-tail signal puts the rate in the right places, not just that
more rate helps.
"""

from __future__ import annotations

import numpy as np
import torch

from icml26.papers.llr.layerwise import LayerwiseLR

__all__ = ["ShuffledMultipliers", "shuffled_layerwise_lr"]


class ShuffledMultipliers:
    """A ``target_transform`` that permutes multipliers across layers with one fixed permutation.

    The permutation is drawn once, on the first call, over the layer names in sorted
    order, and reused at every update, so a layer keeps its (wrong) partner throughout.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.permutation: dict[str, str] | None = None
        """``{layer: layer whose multiplier it receives}``, fixed after the first call."""

    def __call__(self, multipliers: dict[str, float]) -> dict[str, float]:
        names = sorted(multipliers)
        if self.permutation is None or set(self.permutation) != set(names):
            order = np.random.default_rng(self.seed).permutation(len(names))
            self.permutation = {name: names[j] for name, j in zip(names, order)}
        return {name: multipliers[self.permutation[name]] for name in names}


def shuffled_layerwise_lr(model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, seed: int,
                          **kwargs) -> LayerwiseLR:
    """:class:`LayerwiseLR` with its multipliers permuted across the fitted layers.

    Takes the same arguments as :class:`LayerwiseLR` (``total_steps`` …) plus the
    permutation's ``seed``. Embeddings and head keep their policy (``r_max`` by default).
    """
    if "target_transform" in kwargs:
        raise ValueError("shuffled_layerwise_lr sets target_transform itself; do not pass one")
    return LayerwiseLR(model, optimizer, target_transform=ShuffledMultipliers(seed), **kwargs)
