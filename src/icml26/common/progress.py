"""Progress bars that switch themselves off when nobody is watching."""

from __future__ import annotations

import sys
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

__all__ = ["progress"]

T = TypeVar("T")


def progress(
    iterable: Iterable[T] | None = None,
    *,
    enabled: bool | None = None,
    desc: str | None = None,
    total: int | None = None,
    leave: bool = False,
    **kwargs,
) -> tqdm:
    """A ``tqdm`` bar; ``enabled=None`` shows it only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    return tqdm(iterable, desc=desc, total=total, disable=not enabled, leave=leave,
                dynamic_ncols=True, **kwargs)
