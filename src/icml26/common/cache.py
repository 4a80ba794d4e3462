"""The on-disk cache for trained artifacts (tokenizers, pretrained tiny models).

Location: ``$ICML26_CACHE`` if set, else ``~/.cache/icml26``. Entries are folders
named by a hash of everything that produced them, written to a temporary folder
and renamed into place, so an interrupted build never leaves a half entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

__all__ = ["cache_dir", "config_hash", "entry"]


def cache_dir() -> Path:
    """The cache root (created on first use)."""
    root = Path(os.environ.get("ICML26_CACHE") or Path.home() / ".cache" / "icml26")
    root.mkdir(parents=True, exist_ok=True)
    return root


def config_hash(*parts: Any, length: int = 16) -> str:
    """A stable hex digest of JSON-serialisable parts (sorted keys)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


@contextmanager
def entry(kind: str, key: str) -> Iterator[tuple[Path, Path | None]]:
    """Yield ``(final_path, build_path)`` for a cache entry.

    If the entry exists, ``build_path`` is ``None``. Otherwise the caller writes into
    ``build_path`` (a fresh temporary folder); on a clean exit it is renamed to
    ``final_path``, on an exception it is removed.
    """
    final = cache_dir() / kind / key
    if final.is_dir():
        yield final, None
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{key}.", suffix=".tmp"))
    try:
        yield final, build
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    try:
        os.replace(build, final)
    except OSError:
        # Another process finished the same entry first; keep theirs.
        shutil.rmtree(build, ignore_errors=True)
        if not final.is_dir():
            raise
