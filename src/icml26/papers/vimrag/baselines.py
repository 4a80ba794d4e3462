"""The baselines of VimRAG's two mechanisms, each a drop-in sibling of the method.

PixelAllocation (same call as :func:`~icml26.papers.vimrag.budget.graph_modulated_allocation`):

* :func:`uniform_allocation`: every item the same energy (equal shares);
* :func:`recency_allocation`: linear-history truncation, the analogue of ReAct's context
  window: the newest items at full resolution, back in time until the budget runs out;
* :func:`priority_allocation`: energy = semantic priority only (no graph, no decay).

Credit assignment (same call as :func:`~icml26.papers.vimrag.ggpo.ggpo_loss` without the mask):

* :func:`grpo_loss`: outcome-only GRPO/GSPO, every step of every rollout in the loss.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch

from icml26.papers.vimrag.budget import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_PIXELS,
    DEFAULT_PATCH_AREA,
    DEFAULT_TOTAL_PIXELS,
    PixelAllocation,
    _as_energies,
    _check_limits,
    _floor,
    allocate_budget,
)
from icml26.papers.vimrag.energy import EnergyFn, item_features
from icml26.papers.vimrag.ggpo import ggpo_loss
from icml26.papers.vimrag.graph import MemoryGraph

__all__ = ["grpo_loss", "priority_allocation", "recency_allocation", "truncate_budget", "uniform_allocation"]


def _graph(graph: Any) -> MemoryGraph:
    if not isinstance(graph, MemoryGraph):
        raise TypeError(f"graph must be a MemoryGraph, got {type(graph).__name__}")
    return graph


def uniform_allocation(graph: MemoryGraph, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                       min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                       patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """Equal shares of ``total_pixels`` for every item of ``graph`` (capped at ``max_pixels``).

    When ``n · min_pixels > total_pixels`` the first items in :meth:`MemoryGraph.items` order are
    kept (see :func:`allocate_budget` on ties).
    """
    n = len(_graph(graph).items())
    return allocate_budget(np.ones(n), total_pixels, min_pixels=min_pixels, max_pixels=max_pixels,
                           patch_area=patch_area)


def priority_allocation(graph: MemoryGraph, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                        min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                        patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """Water-filling on the items' semantic priorities alone (``EnergyFn(lam=0, gamma=1)``)."""
    energies = EnergyFn(lam=0.0, gamma=1.0)(_graph(graph))
    return allocate_budget(energies, total_pixels, min_pixels=min_pixels, max_pixels=max_pixels,
                           patch_area=patch_area)


def truncate_budget(recency: Any, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                    min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                    patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """History truncation: items by decreasing ``recency`` (ties: later index first) get ``max_pixels``
    each until the budget runs out; the remainder goes to the next item if it is at least
    ``min_pixels``; the older items are dropped.

    ``recency``: ``(n,)`` non-negative, larger = newer (e.g. node steps). ``level`` is reported as NaN
    (no water level).
    """
    keys = _as_energies(recency, "recency")
    total, lo, hi, area = _check_limits(total_pixels, min_pixels, max_pixels, patch_area)
    n = keys.shape[0]
    order = np.lexsort((-np.arange(n), -keys))  # newest first, later index first among equals
    px = np.zeros(n, dtype=np.float64)
    left = float(total)
    for i in order:
        give = min(hi, left)
        if give < lo:
            break
        px[i] = give
        left -= give
    pixels = _floor(px)
    return PixelAllocation(pixels=pixels, tokens=_floor(pixels / area), dropped=pixels == 0, level=math.nan,
                           total_pixels=total, patch_area=area)


def recency_allocation(graph: MemoryGraph, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                       min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                       patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """:func:`truncate_budget` on the steps of the items' nodes: the newest items at full resolution."""
    steps = item_features(_graph(graph)).age
    return truncate_budget(steps.max(initial=0.0) - steps, total_pixels, min_pixels=min_pixels,
                           max_pixels=max_pixels, patch_area=patch_area)


def grpo_loss(logprobs: torch.Tensor, old_logprobs: Any, advantages: Any, token_step: Any, clip: float = 0.2, *,
              clip_high: float | None = None, ratio: Literal["token", "sequence"] = "token",
              reduction: Literal["sequence", "token", "sum"] = "sequence") -> torch.Tensor:
    """Outcome-only GRPO (or GSPO with ``ratio="sequence"``): :func:`ggpo_loss` with ``μ ≡ 0``."""
    if not isinstance(logprobs, torch.Tensor) or logprobs.dim() != 2:
        raise ValueError("logprobs must be a (B, T) torch.Tensor")
    steps = torch.as_tensor(token_step)
    n_steps = int(steps.max()) + 1 if steps.numel() and not steps.is_floating_point() else 1
    mask = torch.zeros(logprobs.shape[0], max(n_steps, 1), dtype=torch.bool, device=logprobs.device)
    return ggpo_loss(logprobs, old_logprobs, advantages, token_step, mask, clip, clip_high=clip_high, ratio=ratio,
                     reduction=reduction)
