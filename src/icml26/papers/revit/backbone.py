"""The Swin-style U-shaped token backbone shared by ReViT and the plain-ViT baseline.

Encoder: at every level ``l`` a stage of ``depths[l]`` blocks alternating plain and
cyclically shifted windows, then (except at the coarsest level) a merge to a 2x
coarser token grid. Decoder: from the coarsest level back, an expansion to the finer
grid, a skip connection from the encoder at that level, and ``decoder_depth`` blocks.
Given per-level frames the backbone is ReViT's (frame transport in attention, merge
and expand); given ``None`` it is an ordinary Swin U-Net in the global frame.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from icml26.papers.revit.frames import ChannelLayout
from icml26.papers.revit.grid import MergeGroups, WindowPartition, merge_groups, window_partition
from icml26.papers.revit.layers import FrameExpand, FrameMerge, SwinBlock

__all__ = ["SwinUNet", "check_token_grid"]


def check_token_grid(grid: tuple[int, ...], levels: int, window: int) -> list[tuple[int, ...]]:
    """Token grids at every level; ``ValueError`` if merging or windowing would not tile.

    Each level's sides must be even (to merge) and a multiple of ``min(window, side)``;
    that is also what makes the window groups map to window groups under rotation.
    """
    grids = [tuple(grid)]
    for level in range(1, levels):
        prev = grids[-1]
        if any(g % 2 for g in prev):
            raise ValueError(
                f"token grid {prev} at level {level - 1} cannot be merged (odd side); use a grid side "
                f"divisible by patch*2^(levels-1)"
            )
        grids.append(tuple(g // 2 for g in prev))
    for level, g in enumerate(grids):
        for side in g:
            if side % min(window, side):
                raise ValueError(
                    f"token grid side {side} at level {level} is not a multiple of window={window}; "
                    f"use a grid side divisible by patch*window*2^(levels-1)"
                )
    return grids


class SwinUNet(nn.Module):
    """Hierarchical windowed attention over tokens, optionally in local frames.

    Args:
        layout: channel typing (``dim``, heads, vectors per head, ``d``).
        depths: blocks per encoder level; ``len(depths)`` levels.
        decoder_depth: blocks per level after each expansion.
        window: window side in tokens.
        mlp_ratio: hidden width of the block MLPs relative to ``dim``.
        periodic: whether shifted windows may pair tokens across the domain boundary.
        kernel: ψ of merge and expand over the children's rebased offsets: ``"mlp"`` (learned) or
            ``"bilinear"`` (fixed tent weights; with identity frames Swin's concatenating merge).
    """

    def __init__(self, layout: ChannelLayout, depths: tuple[int, ...] = (2, 2), decoder_depth: int = 1,
                 window: int = 4, mlp_ratio: float = 2.0, periodic: bool = True, bias_hidden: int = 32,
                 kernel: str = "mlp") -> None:
        super().__init__()
        if not depths or any(n < 1 for n in depths) or decoder_depth < 0:
            raise ValueError(f"depths={depths} needs at least one level of ≥ 1 block, decoder_depth ≥ 0")
        if window < 1:
            raise ValueError(f"window={window} must be ≥ 1")
        self.layout, self.window, self.periodic = layout, window, periodic
        self.levels = len(depths)
        self.encoder = nn.ModuleList(
            nn.ModuleList(SwinBlock(layout, mlp_ratio, bias_hidden) for _ in range(n)) for n in depths
        )
        self.merges = nn.ModuleList(FrameMerge(layout, kernel=kernel) for _ in range(self.levels - 1))
        self.expands = nn.ModuleList(FrameExpand(layout, kernel=kernel) for _ in range(self.levels - 1))
        self.decoder = nn.ModuleList(
            nn.ModuleList(SwinBlock(layout, mlp_ratio, bias_hidden) for _ in range(decoder_depth))
            for _ in range(self.levels - 1)
        )
        self._geometry: dict = {}

    def _partition(self, grid: tuple[int, ...], shifted: bool, device: torch.device) -> WindowPartition:
        key = ("w", grid, shifted, str(device))
        if key not in self._geometry:
            self._geometry[key] = window_partition(grid, self.window, shifted, self.periodic).to(device)
        return self._geometry[key]

    def _groups(self, grid: tuple[int, ...], device: torch.device) -> MergeGroups:
        key = ("m", grid, str(device))
        if key not in self._geometry:
            self._geometry[key] = merge_groups(grid).to(device)
        return self._geometry[key]

    def _stage(self, blocks: nn.ModuleList, x: Tensor, frames: Tensor | None, grid: tuple[int, ...]) -> Tensor:
        for i, block in enumerate(blocks):
            x = block(x, frames, self._partition(grid, bool(i % 2), x.device))
        return x

    def forward(self, tokens: Tensor, grid: tuple[int, ...], frames: list[Tensor] | None = None) -> Tensor:
        """tokens ``(B, T, dim)`` on the token grid ``grid``; frames per level ``(B, T_l, d, d)``."""
        grids = check_token_grid(grid, self.levels, self.window)
        frame = (lambda level: None) if frames is None else (lambda level: frames[level])  # noqa: E731
        x, skips = tokens, []
        for level in range(self.levels):
            x = self._stage(self.encoder[level], x, frame(level), grids[level])
            if level < self.levels - 1:
                skips.append(x)
                x = self.merges[level](x, self._groups(grids[level], x.device), frame(level), frame(level + 1))
        for level in reversed(range(self.levels - 1)):
            x = self.expands[level](x, self._groups(grids[level], x.device), frame(level + 1), frame(level))
            x = self._stage(self.decoder[level], x + skips[level], frame(level), grids[level])
        return x
