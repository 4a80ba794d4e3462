"""Baselines for ReViT: a plain Swin-style ViT of equal size, and C4 data augmentation.

* :class:`PlainViT` [paper: "a plain ViT"; the pilot's baseline]: linear embedding of the
  flattened patch, learned absolute position embedding, the same backbone as ReViT
  (:class:`~icml26.papers.revit.backbone.SwinUNet`) run in the global frame, and a
  linear patch decoder. It breaks the symmetry in the three ways the paper names
  (C1 flattened patches, C2 absolute positions, C3 unconstrained maps on vectors).
* :func:`random_c4_augment`: the "ViT + random C4 augmentation" baseline trains
  :class:`PlainViT` on randomly rotated (input, target) pairs.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.revit.backbone import SwinUNet, check_token_grid
from icml26.papers.revit.frames import ChannelLayout
from icml26.papers.revit.grid import patchify, unpatchify
from icml26.papers.revit.group import check_channel_split, rotate_field
from icml26.papers.revit.model import check_architecture, check_field_io, residual_add

__all__ = ["PlainViT", "random_c4_augment"]


class PlainViT(nn.Module):
    """A Swin-style ViT with linear patch embedding and absolute positions (not equivariant).

    Same arguments as :class:`~icml26.papers.revit.model.ReViT` where they apply, plus
    ``grid_size``: the spatial side(s) the absolute position embedding is learned for.
    """

    def __init__(self, n_scalar_in: int, n_vector_in: int, n_scalar_out: int, n_vector_out: int, *,
                 grid_size: int | tuple[int, ...], dims: int = 2, patch: int = 4, dim: int = 64,
                 heads: int = 4, depths: tuple[int, ...] = (2, 2), decoder_depth: int = 1, window: int = 4,
                 mlp_ratio: float = 2.0, periodic: bool = True, residual: bool = False) -> None:
        super().__init__()
        check_field_io(n_scalar_in, n_vector_in, n_scalar_out, n_vector_out, residual)
        if dims not in (2, 3):
            raise ValueError(f"dims={dims} must be 2 or 3")
        check_architecture(patch, dim, heads, depths, decoder_depth, window, mlp_ratio)
        if isinstance(grid_size, (tuple, list)):
            spatial = tuple(check_int(s, "grid_size", low=1) for s in grid_size)
        else:
            spatial = (check_int(grid_size, "grid_size", low=1),) * dims
        if len(spatial) != dims or any(s % patch for s in spatial):
            raise ValueError(f"grid_size={grid_size} must give {dims} positive sides divisible by patch={patch}")
        self.n_scalar_in, self.n_vector_in = n_scalar_in, n_vector_in
        self.n_scalar_out, self.n_vector_out = n_scalar_out, n_vector_out
        self.dims, self.patch, self.residual, self.spatial = dims, patch, residual, spatial
        self.token_grid = tuple(s // patch for s in spatial)
        c_in = n_scalar_in + dims * n_vector_in
        self.c_out = n_scalar_out + dims * n_vector_out
        pixels = patch**dims
        n_tokens = 1
        for g in self.token_grid:
            n_tokens *= g
        self.embed = nn.Linear(pixels * c_in, dim)
        self.position = nn.Parameter(torch.randn(1, n_tokens, dim) * 0.02)
        # Layout without vector channels: the backbone never changes frames here.
        self.backbone = SwinUNet(ChannelLayout(dim, heads, 0, dims), tuple(depths), decoder_depth, window,
                                 mlp_ratio, periodic)
        check_token_grid(self.token_grid, self.backbone.levels, window)
        self.decode = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(),
                                    nn.Linear(dim, pixels * self.c_out))

    def forward(self, x: Tensor) -> Tensor:
        """x ``(B, C_in, *grid_size)`` → ``(B, C_out, *grid_size)``."""
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        expected = self.n_scalar_in + self.dims * self.n_vector_in
        if x.ndim != self.dims + 2 or x.shape[1] != expected or tuple(x.shape[2:]) != self.spatial:
            raise ValueError(f"expected a field (B, {expected}, {self.spatial}), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point field, got {x.dtype}")
        pix = patchify(x, self.patch)  # (B, T, K^d, C)
        tokens = self.embed(pix.flatten(-2)) + self.position
        tokens = self.backbone(tokens, self.token_grid, None)
        b, t, _ = tokens.shape
        y = self.decode(tokens).reshape(b, t, self.patch**self.dims, self.c_out)
        y = unpatchify(y, self.patch, self.spatial)
        if self.residual:
            y = residual_add(y, x, self.n_scalar_in, self.n_scalar_out, self.n_vector_out, self.dims)
        return y


def random_c4_augment(inputs: Tensor, targets: Tensor, n_scalar_in: int, n_vector_in: int,
                      n_scalar_out: int, n_vector_out: int, generator: torch.Generator | None = None
                      ) -> tuple[Tensor, Tensor]:
    """Rotate each (input, target) pair of a 2D batch by its own random multiple of 90°.

    Args:
        inputs: ``(B, n_scalar_in + 2·n_vector_in, H, W)``; targets likewise with the output split.
        generator: CPU generator for the rotation draws (reproducible augmentation).

    Values (NaN included) are moved, never changed.
    """
    if not isinstance(inputs, Tensor) or not isinstance(targets, Tensor):
        raise TypeError("inputs and targets must be torch.Tensors")
    if inputs.ndim != 4 or targets.ndim != 4 or inputs.shape[0] != targets.shape[0]:
        raise ValueError(f"inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} must be 2D field "
                         f"batches (B, C, H, W) with the same B")
    check_channel_split(inputs, "inputs", n_scalar_in, n_vector_in, "n_scalar_in", "n_vector_in")
    check_channel_split(targets, "targets", n_scalar_out, n_vector_out, "n_scalar_out", "n_vector_out")
    ks = torch.randint(0, 4, (inputs.shape[0],), generator=generator).tolist()
    xs, ys = inputs.clone(), targets.clone()
    for k in range(1, 4):
        sel = [i for i, kk in enumerate(ks) if kk == k]
        if sel:
            xs[sel] = rotate_field(inputs[sel], k, n_scalar_in, n_vector_in)
            ys[sel] = rotate_field(targets[sel], k, n_scalar_out, n_vector_out)
    return xs, ys
