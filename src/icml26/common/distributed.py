"""``torch.distributed`` helpers shared by the training-time methods (HAMU, LLR, LMCleaner, curvature).

Everything here is a no-op on one process (no process group initialised), so library code calls
it unconditionally:

* :func:`world` — ``(rank, world_size)`` of a group (``(0, 1)`` without one);
* :func:`all_reduce_` — sum or mean a tensor across ranks, in place (float64 sums stay float64);
* :func:`all_gather_objects` — a Python object from every rank, in rank order;
* :func:`local` / :func:`is_sharded` — the local shard of an FSDP2 ``DTensor`` parameter (or the
  tensor itself), and whether a tensor is such a shard;
* :func:`gather_full` — the full tensor of a ``DTensor`` (an all-gather), or the tensor itself;
* :func:`unwrap` — the module inside ``DistributedDataParallel`` / ``FullyShardedDataParallel``.

Reductions of per-block scalars (norms, dot products) over FSDP2 shards go through
:func:`all_reduce_` on the *local* pieces: the sum of per-shard squared norms is the squared norm
of the full tensor.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

__all__ = ["all_gather_objects", "all_gather_slices", "all_reduce_", "gather_full", "is_distributed", "is_sharded",
           "local", "shard_bounds", "unwrap", "world"]


def is_distributed(group: Any = None) -> bool:
    """Whether a process group is active with more than one rank."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def world(group: Any = None) -> tuple[int, int]:
    """``(rank, world_size)`` in ``group`` (the default group), ``(0, 1)`` without distributed."""
    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def all_reduce_(tensor: torch.Tensor, op: str = "sum", group: Any = None) -> torch.Tensor:
    """Sum (``op="sum"``) or average (``"mean"``) ``tensor`` over the ranks of ``group``, in place."""
    if op not in ("sum", "mean"):
        raise ValueError(f"op={op!r} must be 'sum' or 'mean'")
    if not is_distributed(group):
        return tensor
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group)
    if op == "mean":
        tensor.div_(dist.get_world_size(group))
    return tensor


def all_gather_objects(obj: Any, group: Any = None) -> list[Any]:
    """``[obj of rank 0, obj of rank 1, …]`` (``[obj]`` without distributed)."""
    if not is_distributed(group):
        return [obj]
    out: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, obj, group=group)
    return out


def shard_bounds(total: int, group: Any = None) -> tuple[int, int]:
    """``(lo, hi)``: this rank's contiguous share of ``total`` entries (equal chunks of ⌈total/W⌉;
    the last rank's may be shorter or empty). ``(0, total)`` without distributed."""
    rank, size = world(group)
    chunk = -(-total // size)
    lo = min(rank * chunk, total)
    return lo, min(lo + chunk, total)


def all_gather_slices(piece: torch.Tensor, total: int, group: Any = None) -> torch.Tensor:
    """The full ``(total,)`` vector from every rank's :func:`shard_bounds` slice ``piece``
    (a collective: every rank calls it). ``piece`` itself without distributed."""
    if not is_distributed(group):
        return piece
    size = dist.get_world_size(group)
    chunk = -(-total // size)
    padded = torch.zeros(chunk, dtype=piece.dtype, device=piece.device)
    padded[: piece.numel()] = piece
    parts = [torch.empty_like(padded) for _ in range(size)]
    dist.all_gather(parts, padded, group=group)
    return torch.cat(parts)[:total]


def is_sharded(tensor: Any) -> bool:
    """Whether ``tensor`` is a ``DTensor`` (an FSDP2 parameter or gradient)."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # pragma: no cover - torch without DTensor
        return False
    return isinstance(tensor, DTensor)


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a ``DTensor`` (a view that writes through), or ``tensor`` itself."""
    return tensor.to_local() if is_sharded(tensor) else tensor


def gather_full(tensor: torch.Tensor) -> torch.Tensor:
    """The whole tensor behind a ``DTensor`` (all-gathered on every rank), or ``tensor`` itself."""
    return tensor.full_tensor() if is_sharded(tensor) else tensor


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The user's module inside ``DistributedDataParallel`` (``.module``); other modules unchanged."""
    from torch.nn.parallel import DistributedDataParallel

    return model.module if isinstance(model, DistributedDataParallel) else model
