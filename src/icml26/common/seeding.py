"""Seeding and thread helpers: the same seed gives the same numbers."""

from __future__ import annotations

import contextlib
import os
import random
from typing import Iterator

import numpy as np
import torch

__all__ = ["default_threads", "resolve_device", "seed_everything", "set_threads", "torch_threads"]


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, NumPy and torch (CPU and CUDA); return a fresh NumPy generator.

    Library code should take explicit generators; this exists for the runner and
    for third-party code that draws from the global generators.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def default_threads() -> int:
    """Threads to use: ``ICML26_THREADS`` if set, else every core this process may use."""
    env = os.environ.get("ICML26_THREADS")
    if env:
        try:
            value = int(env)
        except ValueError:
            raise ValueError(f"ICML26_THREADS={env!r} must be a positive integer") from None
        if value < 1:
            raise ValueError(f"ICML26_THREADS={env!r} must be a positive integer")
        return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads (default :func:`default_threads`); return the number."""
    n = default_threads() if n is None else n
    if n < 1:
        raise ValueError(f"threads={n} must be at least 1")
    torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run a block with ``n`` torch intra-op threads, restoring the previous number afterwards.

    ``n = None`` or ``0`` keeps the current setting (e.g. the runner's). Yields the number in use.
    For small models one thread is often fastest, and a fixed count keeps float32 sums in one order.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise ValueError(f"threads={n!r} must be a non-negative integer (0 or None: keep the current setting)")
    previous = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(previous)


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Turn ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or ``None`` (CPU) into a torch device.

    Raises ``ValueError`` if CUDA is asked for but is not available.
    """
    if device is None:
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device={device!r} is not a torch device ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asked for CUDA, but torch sees no GPU; use device=cpu")
    return dev
