"""Writing files so that a reader finds the old ones or the new ones, never a mix, and signals that
unwind the program instead of killing it mid-write.

:func:`atomic_write_bytes` writes one file through a temporary name and a rename; :func:`write_together`
writes a run's files as one unit (all staged, then renamed with interrupts held). :func:`sigterm_as_interrupt`
turns SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``), so ``finally`` blocks run as for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["Terminated", "WrittenBeforeStop", "atomic_write_bytes", "atomic_write_text", "sigterm_as_interrupt",
           "write_together"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; a result file is meant to be read by everyone (umask applies)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


class WrittenBeforeStop(KeyboardInterrupt):
    """An interrupt that arrived while a run's files were being moved into place: they were all moved
    first (so the folder holds the new run, whole), then the interrupt is raised with this message."""


@contextlib.contextmanager
def _signals_held(what: str):
    """SIGINT and SIGTERM wait until the block ends (only the main thread can hold them); one that
    arrived meanwhile is raised afterwards as :class:`WrittenBeforeStop` naming ``what``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: got.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if got:
        raise WrittenBeforeStop(f"{what} was written in full before stopping")


def write_together(folder: str | os.PathLike, files: Mapping[str, bytes], *, last: str,
                   remove: Sequence[str] = ()) -> None:
    """Write ``files`` (name -> bytes) into ``folder`` as one unit: every file is first written and
    synced under a temporary name (a full disk or an error here leaves the old files untouched and no
    temporary behind), then all are renamed into place with SIGINT and SIGTERM held, ``last`` (the file
    that names the others) last; then ``remove`` (stale names) are deleted. Only SIGKILL or a power cut
    during the renames (microseconds) can leave part of the new files beside the old ``last``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if last not in files:
        raise ValueError(f"last={last!r} is not among the files to write")
    staged: dict[str, str] = {}
    token = f"{os.getpid()}-{secrets.token_hex(4)}"  # names this call's temporaries, even one not yet recorded
    committed = False
    try:
        umask = os.umask(0)
        os.umask(umask)
        for name in sorted(files, key=lambda n: n == last):
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.{token}.", suffix=".tmp")
            staged[name] = tmp
            with os.fdopen(fd, "wb") as handle:
                handle.write(files[name])
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~umask)
        with _signals_held(str(folder / last)):
            for name, tmp in staged.items():  # `last` comes last (the order they were staged in)
                os.replace(tmp, folder / name)
            committed = True
            for name in remove:
                if name not in files:
                    (folder / name).unlink(missing_ok=True)
    finally:
        if not committed:  # remove every temporary of this call (an interrupt may land right after mkstemp)
            for tmp in folder.glob(f".*.{token}.*.tmp"):
                tmp.unlink(missing_ok=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it unwinds as for Ctrl-C (temporary files removed,
    a sweep's finished seeds aggregated, workers stopped) instead of dying mid-write."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While the block runs, SIGTERM raises :class:`Terminated` (the block yields the list of signals seen)."""
    got: list[int] = []

    def handler(signum, frame):
        got.append(signum)
        raise Terminated("terminated (SIGTERM)")

    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        yield got
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield got
    finally:
        signal.signal(signal.SIGTERM, previous)
