"""Progress that fits where the output goes.

* stderr is a terminal: a ``tqdm`` bar;
* stderr is a file or a pipe (logs, batch jobs): plain log lines on the ``icml26.progress``
  logger, at most one every :data:`LOG_EVERY_S` seconds, naming the stage, with the count,
  share done, elapsed time and any postfix;
* ``enabled=False``: nothing.

Both kinds have the ``tqdm`` methods the package uses (iteration, ``update``,
``set_postfix``, ``set_description``, ``close``, context manager).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Iterable, Iterator, TypeVar

from tqdm.auto import tqdm

__all__ = ["LOG_EVERY_S", "LogProgress", "progress"]

T = TypeVar("T")
LOG_EVERY_S = 30.0
log = logging.getLogger("icml26.progress")


class LogProgress:
    """A ``tqdm`` stand-in that writes a log line at most every ``every`` seconds."""

    def __init__(self, iterable: Iterable[T] | None = None, *, desc: str | None = None,
                 total: int | None = None, every: float = LOG_EVERY_S, **_: Any) -> None:
        self.iterable = iterable
        self.desc = desc or "working"
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total = total
        self.n = 0
        self.every = every
        self.postfix = ""
        self._start = time.monotonic()
        self._last = self._start

    def __iter__(self) -> Iterator[T]:
        if self.iterable is None:
            raise TypeError("this progress has no iterable; call update() instead")
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> "LogProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _line(self) -> str:
        elapsed = time.monotonic() - self._start
        count = f"{self.n}/{self.total} ({100 * self.n / self.total:.0f}%)" if self.total else f"{self.n}"
        return f"{self.desc}: {count}, {elapsed:.0f} s" + (f", {self.postfix}" if self.postfix else "")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            log.info("%s", self._line())

    def set_postfix(self, ordered_dict: dict | None = None, refresh: bool = True, **kwargs: Any) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or self.desc

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        if self.n and time.monotonic() - self._start >= self.every:
            log.info("%s (done)", self._line())


def progress(
    iterable: Iterable[T] | None = None,
    *,
    enabled: bool | None = None,
    desc: str | None = None,
    total: int | None = None,
    leave: bool = False,
    **kwargs,
):
    """A progress bar on a terminal, log lines elsewhere (``enabled=None``); nothing if ``enabled=False``.

    ``enabled=True`` forces a ``tqdm`` bar.
    """
    if enabled is None:
        if not sys.stderr.isatty():
            return LogProgress(iterable, desc=desc, total=total)
        enabled = True
    return tqdm(iterable, desc=desc, total=total, disable=not enabled, leave=leave,
                dynamic_ncols=True, **kwargs)
