"""Grid bookkeeping for ReViT: patches, token positions, Swin windows, merge groups.

Nothing here is learned; everything depends only on grid sizes and is cached.
Token grids are flattened row-major over the spatial tensor axes ((y, x) in 2D,
(z, y, x) in 3D); coordinate vectors are in the order (x, y[, z]) (see
:mod:`icml26.papers.revit.group`).

Swin windows (Liu et al. 2021, used by ReViT §1.2 step 4): tokens are grouped in
``w^d`` windows; every other block rolls the token grid by ``w/2`` first (a cyclic
shift). Under a grid rotation the set of token groups is unchanged when the grid
side is divisible by ``w`` and the shift is ``w/2`` [inferred from the project
page's demo]. Displacements between two tokens of a window are measured inside
the window's contiguous block on the torus, never by a minimum-image rule (a tie
at exactly half the domain flips sign under rotation). With ``periodic=False``
pairs whose block displacement wraps around the domain are masked, as Swin does.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import torch
from torch import Tensor

__all__ = [
    "MergeGroups",
    "WindowPartition",
    "merge_groups",
    "patchify",
    "pixel_offsets",
    "token_centres",
    "unpatchify",
    "window_partition",
]


def patchify(x: Tensor, patch: int) -> Tensor:
    """Cut a field into non-overlapping patches.

    Args:
        x: ``(B, C, *spatial)`` with ``d = len(spatial)`` and every side divisible by ``patch``.
        patch: patch side ``K``.

    Returns:
        ``(B, T, K^d, C)``: tokens row-major over the patch grid, pixels row-major
        inside the patch.
    """
    b, c, *spatial = x.shape
    d = len(spatial)
    grid = [s // patch for s in spatial]
    shape = [b, c]
    for g in grid:
        shape += [g, patch]
    y = x.reshape(shape)
    # (B, C, g1, K, g2, K, ...) -> (B, g1, g2, ..., K, K, ..., C)
    grid_axes = [2 + 2 * i for i in range(d)]
    pix_axes = [3 + 2 * i for i in range(d)]
    y = y.permute(0, *grid_axes, *pix_axes, 1)
    n_tok = 1
    for g in grid:
        n_tok *= g
    return y.reshape(b, n_tok, patch**d, c)


def unpatchify(tokens: Tensor, patch: int, spatial: tuple[int, ...]) -> Tensor:
    """Inverse of :func:`patchify`: ``(B, T, K^d, C)`` to ``(B, C, *spatial)``."""
    b, _, _, c = tokens.shape
    d = len(spatial)
    grid = [s // patch for s in spatial]
    y = tokens.reshape(b, *grid, *([patch] * d), c)
    order = [0, 2 * d + 1]
    for i in range(d):
        order += [1 + i, 1 + d + i]
    return y.permute(order).reshape(b, c, *spatial)


@functools.lru_cache(maxsize=None)
def _pixel_offsets(patch: int, dims: int) -> Tensor:
    centre = (patch - 1) / 2
    idx = torch.tensor(list(itertools.product(range(patch), repeat=dims)), dtype=torch.float64)
    # Row-major over (z, y, x) tensor axes; flip to coordinate order (x, y, z).
    return ((idx - centre) / patch).flip(-1)


def pixel_offsets(patch: int, dims: int) -> Tensor:
    """Centred pixel offsets inside a patch, ``(K^d, d)`` in patch units, float64.

    Pixel ``k`` of a patch sits at ``c_i + patch * offsets[k]`` for the patch centre ``c_i``.
    """
    return _pixel_offsets(patch, dims).clone()


@functools.lru_cache(maxsize=None)
def _token_centres(grid: tuple[int, ...]) -> Tensor:
    idx = torch.tensor(list(itertools.product(*[range(g) for g in grid])), dtype=torch.float64)
    centre = (torch.tensor(grid, dtype=torch.float64) - 1) / 2
    return (idx - centre).flip(-1)


def token_centres(grid: tuple[int, ...]) -> Tensor:
    """Centred token coordinates ``(T, d)`` in token units, coordinate order (x, y[, z])."""
    return _token_centres(tuple(grid)).clone()


@dataclasses.dataclass(frozen=True)
class WindowPartition:
    """Which tokens share a window, and their displacements.

    Attributes:
        index: ``(n_windows, w^d)`` flattened token indices, one row per window.
        inverse: ``(T,)`` position of each token in ``index.flatten()``.
        displacement: ``(n_windows, w^d, w^d, d)`` float64, ``x_j - x_i`` in token units,
            coordinate order (x, y[, z]), measured inside the window's block.
        mask: ``(n_windows, w^d, w^d)`` bool, ``False`` where a pair wraps around a
            non-periodic domain; ``None`` when every pair may attend.
    """

    index: Tensor
    inverse: Tensor
    displacement: Tensor
    mask: Tensor | None

    def to(self, device: torch.device) -> "WindowPartition":
        return WindowPartition(
            index=self.index.to(device),
            inverse=self.inverse.to(device),
            displacement=self.displacement.to(device),
            mask=None if self.mask is None else self.mask.to(device),
        )


@functools.lru_cache(maxsize=None)
def window_partition(grid: tuple[int, ...], window: int, shifted: bool, periodic: bool = True) -> WindowPartition:
    """The (possibly shifted) Swin window partition of a token grid.

    Args:
        grid: token grid sides in tensor-axis order, e.g. ``(8, 8)``.
        window: window side ``w``; clamped to each side (a side ≤ w is one window, unshifted).
        shifted: roll the grid by ``w // 2`` before partitioning (Swin's SW-MSA).
        periodic: pairs that wrap around the domain may attend (a torus) or are masked.
    """
    grid = tuple(int(g) for g in grid)
    d = len(grid)
    wins = [min(window, g) for g in grid]
    for g, w in zip(grid, wins):
        if g % w:
            raise ValueError(
                f"token grid side {g} is not divisible by the window {w}; choose a grid, patch and "
                f"window so that every stage's side is a multiple of the window"
            )
    shifts = [(w // 2 if (shifted and w < g) else 0) for g, w in zip(grid, wins)]
    # Rolled index r~ = (r - s) mod g; windows are blocks of the rolled grid.
    n_win = [g // w for g, w in zip(grid, wins)]
    rows, disp, masks = [], [], []
    strides = [1] * d
    for a in range(d - 2, -1, -1):
        strides[a] = strides[a + 1] * grid[a + 1]
    for widx in itertools.product(*[range(n) for n in n_win]):
        rolled = [list(range(wi * w, (wi + 1) * w)) for wi, w in zip(widx, wins)]
        members_rolled = list(itertools.product(*rolled))
        original = [tuple((r + s) % g for r, s, g in zip(m, shifts, grid)) for m in members_rolled]
        rows.append([sum(o * st for o, st in zip(orig, strides)) for orig in original])
        mr = torch.tensor(members_rolled, dtype=torch.float64)
        mo = torch.tensor(original, dtype=torch.float64)
        block = mr[None, :, :] - mr[:, None, :]  # x_j - x_i, tensor-axis order
        plain = mo[None, :, :] - mo[:, None, :]
        disp.append(block.flip(-1))
        masks.append((block == plain).all(-1))
    index = torch.tensor(rows, dtype=torch.int64)
    inverse = torch.empty(index.numel(), dtype=torch.int64)
    inverse[index.flatten()] = torch.arange(index.numel())
    mask = torch.stack(masks)
    return WindowPartition(
        index=index,
        inverse=inverse,
        displacement=torch.stack(disp),
        mask=None if (periodic or bool(mask.all())) else mask,
    )


@dataclasses.dataclass(frozen=True)
class MergeGroups:
    """The ``2^d`` children of every parent token of a 2x-coarser grid.

    Attributes:
        index: ``(T_parent, 2^d)`` child token indices on the fine grid.
        inverse: ``(T,)`` position of each fine token in ``index.flatten()``.
        offsets: ``(2^d, d)`` float64 child-centre minus parent-centre in fine-token
            units (±1/2 per axis), coordinate order (x, y[, z]).
    """

    index: Tensor
    inverse: Tensor
    offsets: Tensor

    def to(self, device: torch.device) -> "MergeGroups":
        return MergeGroups(index=self.index.to(device), inverse=self.inverse.to(device),
                           offsets=self.offsets.to(device))


@functools.lru_cache(maxsize=None)
def merge_groups(grid: tuple[int, ...]) -> MergeGroups:
    """Children of each parent when a token grid ``grid`` is merged 2x per axis."""
    grid = tuple(int(g) for g in grid)
    for g in grid:
        if g % 2:
            raise ValueError(f"cannot merge a token grid of side {g}: it must be even")
    d = len(grid)
    strides = [1] * d
    for a in range(d - 2, -1, -1):
        strides[a] = strides[a + 1] * grid[a + 1]
    children = list(itertools.product(range(2), repeat=d))
    rows = []
    for parent in itertools.product(*[range(g // 2) for g in grid]):
        rows.append([sum((2 * p + c) * st for p, c, st in zip(parent, ch, strides)) for ch in children])
    offsets = (torch.tensor(children, dtype=torch.float64) - 0.5).flip(-1)
    index = torch.tensor(rows, dtype=torch.int64)
    inverse = torch.empty(index.numel(), dtype=torch.int64)
    inverse[index.flatten()] = torch.arange(index.numel())
    return MergeGroups(index=index, inverse=inverse, offsets=offsets)
