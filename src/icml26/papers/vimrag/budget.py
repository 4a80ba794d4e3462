"""Graph-Modulated Visual Memory Encoding (GMVME): a global pixel budget split by energy.

Token assignment is a resource-allocation problem (brief §1.3). Given energies ``E_i >= 0``
and a budget ``S_total`` of pixels, water-filling at level ``ν`` gives item ``i``

    px_i(ν) = 0                     if ν·E_i < min_pixels   (dropped)
            = min(ν·E_i, max_pixels) otherwise

and ``ν*`` is the largest level with ``Σ_i px_i(ν*) <= S_total``: a dropped item's share goes
to the rest, high-energy items get high resolution up to ``max_pixels``. Tokens are
``⌊px_i / patch_area⌋`` (one merged vision token per ``patch_area`` pixels: 32² for Qwen3-VL,
28² for Qwen2/2.5-VL). The defaults are the paper's budget ``S_total = 5·256·32²`` pixels
(1 280 tokens) with ``min_pixels = 64·32²`` and ``max_pixels = 1024·32²`` (brief §1.3; the
min/max are our inference).

:func:`processor_kwargs` turns an allocation into per-image ``min_pixels``/``max_pixels`` for
Qwen2-VL-style image processors, so each image is resized to at most its tokens.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.papers.vimrag.energy import EnergyFn
from icml26.papers.vimrag.graph import MemoryGraph

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MIN_PIXELS",
    "DEFAULT_PATCH_AREA",
    "DEFAULT_TOTAL_PIXELS",
    "PixelAllocation",
    "allocate_budget",
    "graph_modulated_allocation",
    "processor_kwargs",
    "snap_allocation",
]

DEFAULT_PATCH_AREA = 32 * 32
"""Pixels per merged vision token (Qwen3-VL: 16-pixel patches merged 2×2)."""
DEFAULT_TOTAL_PIXELS = 5 * 256 * 32 * 32
"""``S_total``: 1 310 720 pixels, 1 280 tokens (the paper's budget, second-hand)."""
DEFAULT_MIN_PIXELS = 64 * 32 * 32
"""Below this an item is dropped (64 tokens; ours)."""
DEFAULT_MAX_PIXELS = 1024 * 32 * 32
"""The most one item may get (1 024 tokens; ours)."""

_ROUND = 1e-12  # relative slack before flooring, so 249.99999999999997 pixels count as 250


@dataclasses.dataclass(frozen=True)
class PixelAllocation:
    """The budget split over ``n`` items (in the order the energies were given).

    Attributes:
        pixels: ``(n,)`` int64 pixels per item, ``Σ <= total_pixels``; 0 for a dropped item.
        tokens: ``(n,)`` int64 ``⌊pixels / patch_area⌋``.
        dropped: ``(n,)`` bool, the items below ``min_pixels`` at the final level.
        level: ``ν*`` in pixels per unit energy (``inf`` when every item is at ``max_pixels``).
        total_pixels: the budget; ``patch_area``: pixels per token.
    """

    pixels: np.ndarray
    tokens: np.ndarray
    dropped: np.ndarray
    level: float
    total_pixels: int
    patch_area: float

    def __len__(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def used_pixels(self) -> int:
        return int(self.pixels.sum())

    @property
    def used_tokens(self) -> int:
        return int(self.tokens.sum())


Allocation = PixelAllocation
"""The issue's name for :class:`PixelAllocation` (an alias; robuq's ``Allocation`` is a bit allocation)."""


def _check_limits(total_pixels: Any, min_pixels: Any, max_pixels: Any,
                  patch_area: Any) -> tuple[int, float, float, float]:
    total = check_real(total_pixels, "total_pixels", low=0.0)
    lo = check_real(min_pixels, "min_pixels", low=0.0, low_open=True)
    hi = check_real(max_pixels, "max_pixels", low=0.0, low_open=True)
    area = check_real(patch_area, "patch_area", low=0.0, low_open=True)
    if lo > hi:
        raise ValueError(f"min_pixels={lo:g} exceeds max_pixels={hi:g}; lower min_pixels or raise max_pixels")
    if total < lo:
        raise ValueError(f"total_pixels={total:g} is below one minimal item (min_pixels={lo:g}): nothing could be "
                         "kept; raise the budget or lower min_pixels")
    return int(math.floor(total)), lo, hi, area


def _as_energies(energies: Any, name: str = "energies") -> np.ndarray:
    """``energies`` as a finite, non-negative ``(n,)`` float64 array; errors name the argument ``name``."""
    if hasattr(energies, "detach"):  # a torch tensor on any device
        energies = energies.detach().cpu().double().numpy()
    if isinstance(energies, (str, bytes)) or not isinstance(energies, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be a 1-D array, list or tensor of numbers, got {type(energies).__name__}")
    try:
        e = np.asarray(energies, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric") from None
    if e.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one per item), got shape {e.shape}")
    require_finite(e, name)
    if (e < 0).any():
        raise ValueError(f"{name} must be non-negative, got min {e.min():g} at item {int(e.argmin())}")
    return e


def _floor(x: np.ndarray) -> np.ndarray:
    return np.floor(x * (1.0 + _ROUND)).astype(np.int64)


def allocate_budget(energies: Any, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                    min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                    patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """Water-fill ``total_pixels`` over items in proportion to their energies.

    Args:
        energies: ``(n,)`` non-negative, finite (NumPy, list or tensor). Zero-energy items are
            always dropped; the scale of the energies does not matter.
        total_pixels: the budget ``S_total`` (at least ``min_pixels``).
        min_pixels: an item that would get less is dropped and its share redistributed.
        max_pixels: the cap on one item.
        patch_area: pixels per vision token.

    Equal energies get equal pixels. Items tied exactly at the drop threshold are admitted in
    order (earlier index first), so a budget that cannot hold every tied item at
    ``min_pixels`` keeps as many as fit instead of none.

    Only ratios of energies matter, and any positive energy counts as positive, a subnormal one
    (``5e-324``) included: alone, it is kept like any other item; beside normal energies its
    ratio to them is ~0 (``min_pixels / E`` overflows to ``inf``), so it is the first dropped.
    An energy that underflows to ``0`` (e.g. ``5e-324 * 2**-7``) is a zero energy and is dropped;
    scale invariance therefore holds for every factor that keeps the energies positive and
    finite. Negative, NaN or infinite energies are a ``ValueError``.
    """
    e = _as_energies(energies)
    total, lo, hi, area = _check_limits(total_pixels, min_pixels, max_pixels, patch_area)
    scale = float(e.max()) if e.size and e.max() > 0 else 1.0
    e = e / scale  # only ratios matter; this keeps sums of huge energies (1e308 + 1e308) finite
    n = e.shape[0]
    px = np.zeros(n, dtype=np.float64)
    level = 0.0
    order = np.argsort(-e, kind="stable")
    es = e[order]
    k_pos = int((es > 0).sum())
    # the largest active set (a prefix of the sorted items) whose switch-on level is affordable:
    # at ν = min_pixels / E_k the k-th item just reaches min_pixels
    k = 0
    with np.errstate(over="ignore"):  # lo / E for a subnormal E is inf: min(inf, max_pixels) = max_pixels
        for cand in range(k_pos, 0, -1):
            if np.minimum(lo * es[:cand] / es[cand - 1], hi).sum() <= total * (1.0 + _ROUND):
                k = cand
                break
        if k:
            act = es[:k]
            next_e = es[k] if k < k_pos else 0.0
            # within the active set, Σ min(ν E_i, max) is continuous; ν ranges up to min/E_{k+1}
            if next_e > 0 and np.minimum(lo * act / next_e, hi).sum() <= total:
                share = np.minimum(lo * act / next_e, hi)          # ν* = min_pixels / E_{k+1} (left limit)
                level = lo / next_e
            elif next_e == 0 and k * hi <= total:
                share = np.full(k, hi)                               # every active item capped
                level = math.inf
            else:
                # ν*: Σ_{capped} max + ν Σ_{uncapped} E_i = total, the top c items capped
                share = np.empty(k)
                for c in range(k):
                    free = total - c * hi
                    rest = act[c:].sum()
                    # px_i = free · E_i / Σ_uncapped E  (= ν* E_i with ν* = free / Σ_uncapped E)
                    if c == k - 1 or act[c] * free / rest <= hi:  # the last c always solves it (total < k max)
                        share[:c] = hi
                        share[c:] = free * act[c:] / rest
                        level = free / rest
                        break
            px[order[:k]] = share
    pixels = np.minimum(_floor(px), int(math.floor(hi)))
    with np.errstate(over="ignore"):  # ν in pixels per unit of the caller's energy (the scale undone)
        level = float(level / scale)
    return PixelAllocation(pixels=pixels, tokens=_floor(pixels / area), dropped=pixels == 0, level=level,
                           total_pixels=total, patch_area=area)


def graph_modulated_allocation(graph: MemoryGraph, total_pixels: float = DEFAULT_TOTAL_PIXELS, *,
                               energy_fn: Callable[[MemoryGraph], Any] | None = None,
                               min_pixels: float = DEFAULT_MIN_PIXELS, max_pixels: float = DEFAULT_MAX_PIXELS,
                               patch_area: float = DEFAULT_PATCH_AREA) -> PixelAllocation:
    """GMVME: the budget over ``graph``'s items (:meth:`MemoryGraph.items` order) by graph-modulated energy.

    ``energy_fn`` defaults to :class:`EnergyFn` ``(λ=1, γ=0.8)``; any callable
    ``graph -> (n_items,) energies`` plugs in.
    """
    if not isinstance(graph, MemoryGraph):
        raise TypeError(f"graph must be a MemoryGraph, got {type(graph).__name__}")
    energy_fn = EnergyFn() if energy_fn is None else energy_fn
    if not callable(energy_fn):
        raise TypeError(f"energy_fn must be callable graph -> energies, got {type(energy_fn).__name__}")
    energies = _as_energies(energy_fn(graph))
    if energies.shape[0] != len(graph.items()):
        raise ValueError(f"energy_fn returned {energies.shape[0]} energies for {len(graph.items())} items")
    return allocate_budget(energies, total_pixels, min_pixels=min_pixels, max_pixels=max_pixels,
                           patch_area=patch_area)


def processor_kwargs(allocation: PixelAllocation, patch_area: float | None = None, *,
                     min_tokens: int = 1) -> list[dict[str, int] | None]:
    """Per-image ``{"min_pixels", "max_pixels"}`` for Qwen2-VL-style processors; ``None`` for a dropped item.

    ``max_pixels = tokens_i · patch_area``, so the processor's ``smart_resize`` shrinks the image
    to at most its allocated tokens; ``min_pixels = min(min_tokens, tokens_i) · patch_area``
    (upscaling a small image past ``min_pixels`` could round above ``max_pixels``, so it is not
    asked for). Pass them to the processor's constructor
    (``Qwen2VLImageProcessorPil(**kw)``) or as ``size={"shortest_edge": kw["min_pixels"],
    "longest_edge": kw["max_pixels"]}``. ``patch_area`` must be the processor's
    ``(patch_size · merge_size)²`` (default: the allocation's). ``smart_resize`` keeps each side at
    least one patch, so an image more elongated than ``tokens_i : 1`` can exceed its allocation.
    """
    if not isinstance(allocation, PixelAllocation):
        raise TypeError(f"allocation must be an PixelAllocation, got {type(allocation).__name__}")
    area = allocation.patch_area if patch_area is None else check_real(patch_area, "patch_area", low=0.0,
                                                                        low_open=True)
    min_tokens = check_int(min_tokens, "min_tokens", low=1)
    tokens = _floor(allocation.pixels / area)
    out: list[dict[str, int] | None] = []
    for t in tokens.tolist():
        if t <= 0:
            out.append(None)
        else:
            out.append({"min_pixels": int(min(min_tokens, t) * area), "max_pixels": int(t * area)})
    return out


def snap_allocation(allocation: PixelAllocation, levels: Any, *, tie_break: Any | None = None) -> PixelAllocation:
    """An allocation on a discrete grid of per-item costs (e.g. the pixels of a few fixed resolutions).

    Each item first gets the largest level it can pay for (``0``, dropped, below the smallest);
    the pixels this rounding leaves unused then buy upgrades, item by item in decreasing order of
    allocated pixels (ties by ``tie_break`` ascending, then index), each item to the highest level
    the remainder affords. The total never exceeds the allocation's budget. A continuous
    processor grid (Qwen's 28/32-pixel multiples) leaves little to redistribute; a coarse one
    (8×8 / 4×4 / 2×2) leaves a lot, and this rule spends it the same way for every allocator.

    Args:
        allocation: the continuous allocation (:func:`allocate_budget` or a baseline).
        levels: increasing positive pixel costs, e.g. ``(4, 16, 64)``.
        tie_break: optional ``(n,)`` keys ordering items of equal pixels (e.g. a random draw).
    """
    if not isinstance(allocation, PixelAllocation):
        raise TypeError(f"allocation must be an PixelAllocation, got {type(allocation).__name__}")
    costs = np.asarray(levels, dtype=np.float64)
    if costs.ndim != 1 or costs.size == 0:
        raise ValueError(f"levels must be a non-empty 1-D sequence of pixel costs, got {levels!r}")
    require_finite(costs, "levels")
    if (costs <= 0).any() or (np.diff(costs) <= 0).any():
        raise ValueError(f"levels must be positive and strictly increasing, got {costs.tolist()}")
    n = len(allocation)
    if tie_break is None:
        keys = np.zeros(n)
    else:
        keys = np.asarray(tie_break, dtype=np.float64)
        if keys.shape != (n,):
            raise ValueError(f"tie_break must have one key per item ({n}), got shape {keys.shape}")
        require_finite(keys, "tie_break")
    grid = np.concatenate([[0.0], costs])
    px = allocation.pixels.astype(np.float64)
    idx = np.searchsorted(grid, px, side="right") - 1             # largest affordable level
    left = float(allocation.total_pixels) - grid[idx].sum()
    for i in np.lexsort((np.arange(n), keys, -px)):
        affordable = np.flatnonzero(grid <= grid[idx[i]] + left)
        best = int(affordable.max())
        if best > idx[i]:
            left -= grid[best] - grid[idx[i]]
            idx[i] = best
    pixels = _floor(grid[idx])
    return PixelAllocation(pixels=pixels, tokens=_floor(pixels / allocation.patch_area), dropped=pixels == 0,
                           level=allocation.level, total_pixels=allocation.total_pixels,
                           patch_area=allocation.patch_area)
