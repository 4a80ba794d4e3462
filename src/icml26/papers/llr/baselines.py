"""Controls for LLR (arXiv 2605.22297): the same multipliers on the wrong layers.

*Uniform* training is the optimizer without
:class:`~icml26.papers.llr.layerwise.LayerwiseLR`; :func:`uniform_layerwise_lr` is the same as a
drop-in with LLR's signature (every multiplier 1).

The *shuffled* control (ours, proposed in the brief) keeps LLR's schedule and the
multiset of its multipliers but permutes them across the fitted layers with one fixed
random permutation. It gives the same total "extra learning rate" as LLR, so LLR beating
it shows that the heavy-tail signal puts the rate in the right places, not just that
more rate helps.
"""

from __future__ import annotations

from typing import Iterable, Literal

import numpy as np
import torch

from icml26.common.argcheck import check_int
from icml26.papers.llr.esd import FitMethod
from icml26.papers.llr.layerwise import EmbedPolicy, LayerwiseLR, MapKind

__all__ = ["ShuffledMultipliers", "shuffled_layerwise_lr", "uniform_layerwise_lr"]


class ShuffledMultipliers:
    """A ``target_transform`` that permutes multipliers across layers with one fixed permutation.

    The permutation is drawn once, on the first call, over the layer names in sorted
    order, and reused at every update, so a layer keeps its (wrong) partner throughout.
    """

    def __init__(self, seed: int) -> None:
        self.seed = check_int(seed, "seed", low=0)
        self.permutation: dict[str, str] | None = None
        """``{layer: layer whose multiplier it receives}``, fixed after the first call."""

    def __call__(self, multipliers: dict[str, float]) -> dict[str, float]:
        if not isinstance(multipliers, dict):
            raise TypeError(f"multipliers must be a dict {{layer: multiplier}}, got {type(multipliers).__name__}")
        names = sorted(multipliers)
        if self.permutation is None or set(self.permutation) != set(names):
            order = np.random.default_rng(self.seed).permutation(len(names))
            self.permutation = {name: names[j] for name, j in zip(names, order)}
        return {name: multipliers[self.permutation[name]] for name in names}


def shuffled_layerwise_lr(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    total_steps: int,
    seed: int = 0,
    r_min: float = 1.0,
    r_max: float = 3.0,
    every: int = 40,
    ramp_steps: int = 20,
    active_fraction: float = 0.2,
    mapping: MapKind = "linear",
    exclude: Iterable[str] = ("embed", "head"),
    embed_policy: EmbedPolicy = "max",
    alpha_positive: bool = True,
    normalize: Literal["mean"] | None = None,
    method: FitMethod = "median",
    xmin_pos: int = 2,
    min_eigs: int = 50,
) -> LayerwiseLR:
    """:class:`LayerwiseLR` with its multipliers permuted across the fitted layers.

    A drop-in for :class:`LayerwiseLR` (same arguments) plus the permutation's ``seed``.
    Embeddings and head keep their policy (``r_max`` by default).
    """
    return LayerwiseLR(model, optimizer, total_steps=total_steps, r_min=r_min, r_max=r_max, every=every,
                       ramp_steps=ramp_steps, active_fraction=active_fraction, mapping=mapping, exclude=exclude,
                       embed_policy=embed_policy, alpha_positive=alpha_positive, normalize=normalize,
                       method=method, xmin_pos=xmin_pos, min_eigs=min_eigs,
                       target_transform=ShuffledMultipliers(seed))


def uniform_layerwise_lr(model: torch.nn.Module, optimizer: torch.optim.Optimizer, *,
                         total_steps: int) -> LayerwiseLR:
    """The uniform baseline as a drop-in for :class:`LayerwiseLR`: every multiplier is 1.

    ``r_min = r_max = 1``, embeddings at the base rate and no spectral fits
    (``active_fraction=0``), so training is bit-identical to the optimizer alone (tested).
    """
    return LayerwiseLR(model, optimizer, total_steps=total_steps, r_min=1.0, r_max=1.0, active_fraction=0.0,
                       embed_policy="base")
