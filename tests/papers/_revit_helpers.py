"""Shared helpers of the ReViT tests: random velocity fields and token permutations."""

from __future__ import annotations

import torch

from icml26.papers.revit import rotate_field


def _field(b=2, ns=1, nv=1, n=16, dims=2, mean=(1.0, 0.4, -0.3), dtype=torch.float64, seed=0):
    """Random field with a non-zero mean velocity (so the frames are well defined)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, ns + dims * nv, *([n] * dims), generator=g, dtype=dtype)
    for a in range(dims):
        x[:, ns + a] += mean[a]
    return x


def _token_perm(grid_side: int, k: int, dims: int = 2) -> torch.Tensor:
    """π: where token i goes under rotation k (rotated id grid, flattened)."""
    ids = torch.arange(grid_side**dims, dtype=torch.float64).reshape(1, 1, *([grid_side] * dims))
    return rotate_field(ids, k, 1, 0, dims=dims).flatten().long()


def _equivariance_error(model, x, ns_in, nv_in, ns_out, nv_out, dims=2, ks=(1, 2, 3)):
    with torch.no_grad():
        y = model(x)
        errs = [float((model(rotate_field(x, k, ns_in, nv_in, dims=dims))
                       - rotate_field(y, k, ns_out, nv_out, dims=dims)).abs().max()) for k in ks]
    return max(errs), float(y.abs().max())
