"""Keeping a run's tensor memory mapped between passes (glibc's ``malloc``).

On CPU a training or sampling loop allocates and frees the same few tensors of 0.25-32 MiB thousands
of times. glibc serves blocks above its mmap threshold (128 KiB, raised on the fly to the largest block
freed) with a fresh ``mmap`` and returns freed heap tops above its trim threshold to the kernel, so the
next tensor of that size is paged in again: robuq measured about 25,000 page faults per guided DDIM step
and 300-800 per QAT step with ``getrusage``, and a guided DDIM step ran 25-45 % faster without them.

:func:`heap_allocations` raises both thresholds for the duration of a run (allocations up to 32 MiB,
glibc's largest mmap threshold, come from the heap; freed memory stays mapped for the next tensor)
and afterwards leaves them where glibc's own rule would after freeing a 32 MiB block, returning the free
memory to the kernel. It changes where tensors live, not what is computed: PyTorch aligns every CPU
tensor to 64 bytes wherever it comes from, and the tests check that training inside and outside it
gives the same bits. Off glibc (macOS, musl) it does nothing. :func:`icml26.runner.execute_plan` runs
every reproduction inside it unless ``ICML26_HEAP_ALLOCATIONS=0``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import sys
from typing import Iterator

__all__ = ["heap_allocations"]

#: ``mallopt`` parameters (glibc ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: The largest mmap threshold glibc accepts on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``).
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024


@functools.lru_cache(maxsize=None)
def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc (it has ``mallopt`` and ``malloc_trim``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") and hasattr(libc, "gnu_get_libc_version")):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    return libc


@contextlib.contextmanager
def heap_allocations(mmap_threshold: int = MMAP_THRESHOLD_MAX, trim_threshold: int = 1 << 30) -> Iterator[bool]:
    """Serve blocks up to ``mmap_threshold`` bytes from the heap and keep up to ``trim_threshold`` bytes of
    freed heap mapped, inside the ``with`` block; yields whether glibc accepted both settings.

    On exit the thresholds become 32 MiB and 64 MiB, the highest pair glibc's dynamic rule reaches by itself
    (the mmap threshold follows the largest mmapped block freed, up to 32 MiB, the trim threshold twice it):
    glibc stops adjusting them once they were set, and its starting 128 KiB would leave the rest of the
    process paging large tensors in again. ``malloc_trim(0)`` then returns the free memory to the kernel.
    """
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2 ** 31:
            raise ValueError(f"{name}={value!r} must be an int in (0, 2**31) bytes")
    if mmap_threshold > MMAP_THRESHOLD_MAX:
        raise ValueError(f"mmap_threshold={mmap_threshold} exceeds glibc's maximum {MMAP_THRESHOLD_MAX} (32 MiB)")
    libc = _glibc()
    if libc is None:
        yield False
        return
    ok = bool(libc.mallopt(M_TRIM_THRESHOLD, trim_threshold)) & bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold))
    try:
        yield ok
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
        libc.mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_MAX)
        libc.malloc_trim(0)
