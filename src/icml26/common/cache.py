"""The on-disk cache for trained artifacts (tokenizers, pretrained tiny models, dequantised weights).

Location: ``$ICML26_CACHE`` if set, else ``~/.cache/icml26``. Entries are folders named by a
hash of everything that produced them, written to a temporary folder and renamed into
place, so an interrupted build never leaves a half entry.

Every entry carries ``manifest.json``: the SHA-256 of each file and the config that built
it. :func:`entry` verifies the manifest before handing an existing entry out; a file that
was changed, removed or added (zeroed weights, a swapped vocabulary) makes the entry stale,
and it is deleted and rebuilt. Temporary build folders left by a killed process are removed
once they are older than :data:`STALE_SECONDS`.

Entries made of JSON files (finished arms of a long run, not weights) travel between machines as one
bundle file (:func:`export_json_entries`, :func:`import_json_entries`; ``icml26 cache export|import``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

__all__ = [
    "BUNDLE_SCHEMA",
    "MANIFEST",
    "STALE_SECONDS",
    "CacheEntry",
    "cache_dir",
    "config_hash",
    "entry",
    "export_json_entries",
    "file_sha256",
    "import_json_entries",
    "load_entry",
    "read_json_entry",
    "source_digest",
    "verify_manifest",
    "write_json_entry",
    "write_manifest",
]

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
#: The format of a bundle of JSON entries (:func:`export_json_entries`, :func:`import_json_entries`).
BUNDLE_SCHEMA = "icml26-cache-bundle/1"
#: Temporary build folders older than this (seconds) belong to a dead build and are removed.
STALE_SECONDS = 6 * 3600


def cache_dir() -> Path:
    """The cache root (created on first use)."""
    root = Path(os.environ.get("ICML26_CACHE") or Path.home() / ".cache" / "icml26")
    root.mkdir(parents=True, exist_ok=True)
    return root


def config_hash(*parts: Any, length: int = 16) -> str:
    """A stable hex digest of JSON-serialisable parts (sorted keys)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def source_digest(folder: str | os.PathLike, modules: tuple[str, ...] | list[str], length: int = 16) -> str:
    """A hex digest of the named Python modules of ``folder`` (``<name>.py``, name and bytes, in the order
    given): part of a cache key, so that a change to any module an entry's computation runs retires it."""
    if not modules:
        raise ValueError("modules must name at least one module")
    if not 1 <= length <= 64:
        raise ValueError(f"length={length} must be between 1 and 64 hex digits")
    h = hashlib.sha256()
    for name in modules:
        h.update(name.encode())
        h.update((Path(folder) / f"{name}.py").read_bytes())
    return h.hexdigest()[:length]


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name != MANIFEST)


def write_manifest(folder: str | os.PathLike, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write ``manifest.json`` (SHA-256 of every file, and ``config``) into ``folder``; return it."""
    folder = Path(folder)
    manifest = {"files": {name: file_sha256(folder / name) for name in _files(folder)},
                "config": dict(config or {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
    return manifest


def verify_manifest(folder: str | os.PathLike) -> str | None:
    """``None`` if ``folder`` matches its manifest, else the reason it does not."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        recorded = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return "no readable manifest.json"
    present = _files(folder)
    if sorted(recorded) != present:
        extra, missing = set(present) - set(recorded), set(recorded) - set(present)
        return f"files differ from the manifest (extra {sorted(extra)}, missing {sorted(missing)})"
    for name, digest in recorded.items():
        if file_sha256(folder / name) != digest:
            return f"{name} does not match its SHA-256 in the manifest"
    return None


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """A finished, verified cache entry."""

    path: Path
    manifest: dict[str, Any]

    @property
    def digest(self) -> str:
        """One SHA-256 over the manifest's file hashes: what a result's provenance records."""
        return hashlib.sha256(json.dumps(self.manifest["files"], sort_keys=True).encode()).hexdigest()


def _clean_stale(parent: Path) -> None:
    now = time.time()
    for tmp in parent.glob(".*.tmp"):
        try:
            if tmp.is_dir() and now - tmp.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(tmp, ignore_errors=True)
                log.info("removed the stale cache build folder %s", tmp)
        except OSError:
            continue


@contextmanager
def entry(kind: str, key: str, config: Mapping[str, Any] | None = None) -> Iterator[tuple[Path, Path | None]]:
    """Yield ``(final_path, build_path)`` for a cache entry.

    If a verified entry exists, ``build_path`` is ``None``. Otherwise (none yet, or one
    whose files no longer match its manifest, which is deleted) the caller writes into
    ``build_path`` (a fresh temporary folder); on a clean exit the manifest is written and the
    folder renamed to ``final_path``, on an exception it is removed. ``config`` is recorded in
    the manifest.
    """
    parent = cache_dir() / kind
    parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(parent)
    final = parent / key
    if final.is_dir():
        problem = verify_manifest(final)
        if problem is None:
            yield final, None
            return
        log.warning("cache entry %s is stale (%s); rebuilding it", final, problem)
        shutil.rmtree(final, ignore_errors=True)
    build = Path(tempfile.mkdtemp(dir=parent, prefix=f".{key}.", suffix=".tmp"))
    try:
        yield final, build
        write_manifest(build, config)
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


def load_entry(path: str | os.PathLike) -> CacheEntry:
    """The :class:`CacheEntry` of a finished entry folder (its manifest read, not re-verified)."""
    path = Path(path)
    return CacheEntry(path=path, manifest=json.loads((path / MANIFEST).read_text()))


def _json_name(name: str) -> str:
    if not isinstance(name, str) or not name.endswith(".json") or Path(name).name != name or name == MANIFEST:
        raise ValueError(f"name={name!r} must be a plain '<file>.json' name other than {MANIFEST}")
    return name


def read_json_entry(kind: str, key: str, name: str) -> Any | None:
    """The JSON file ``name`` of the finished entry ``kind/key``; ``None`` when there is no such entry or its
    files no longer match its manifest (a stale entry is rebuilt by the next :func:`write_json_entry`)."""
    _json_name(name)
    path = cache_dir() / kind / key
    if not path.is_dir() or verify_manifest(path) is not None:
        return None
    return json.loads((path / name).read_text())


def write_json_entry(kind: str, key: str, name: str, data: Any, config: Mapping[str, Any] | None = None) -> None:
    """Store ``data`` as the JSON file ``name`` of the entry ``kind/key`` (NumPy scalars written as floats),
    through :func:`entry`: written whole or not at all; an existing verified entry is kept."""
    _json_name(name)
    with entry(kind, key, config) as (_, build):
        if build is not None:
            (build / name).write_text(json.dumps(data, default=float))


def _plain(what: str, name: Any) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*", name):
        raise ValueError(f"{what}={name!r} must be a plain name (letters, digits, '_', '-', '.'; no path)")
    return name


def export_json_entries(kind: str) -> dict[str, Any]:
    """Every finished, verified entry of ``kind`` as a bundle (:data:`BUNDLE_SCHEMA`): each entry's key, the
    config its manifest records and the exact text of its JSON files, so that :func:`import_json_entries` on
    another machine recreates the entries byte for byte. Entries are keyed by everything that produced them,
    so an imported entry is read only by a computation with the same inputs, code and libraries.

    Only entries made of JSON files travel (results such as finished arms, not weights): an entry holding
    any other file raises ``ValueError`` naming it. A stale entry (files not matching its manifest) is left
    out, with a warning."""
    _plain("kind", kind)
    parent = cache_dir() / kind
    entries: dict[str, Any] = {}
    for folder in sorted(parent.iterdir()) if parent.is_dir() else []:
        if not folder.is_dir() or folder.name.startswith("."):
            continue  # a build in progress or left by a killed process
        problem = verify_manifest(folder)
        if problem is not None:
            log.warning("cache entry %s is stale (%s); left out of the bundle", folder, problem)
            continue
        names = _files(folder)
        other = [n for n in names if not n.endswith(".json") or "/" in n]
        if other:
            raise ValueError(f"cache entry {folder} holds files other than top-level JSON ({other[:3]}); only "
                             "entries made of JSON files can be exported")
        entries[folder.name] = {"config": load_entry(folder).manifest.get("config", {}),
                                "files": {n: (folder / n).read_text(encoding="utf-8") for n in names}}
    return {"schema": BUNDLE_SCHEMA, "kind": kind, "entries": entries}


def import_json_entries(bundle: Mapping[str, Any]) -> dict[str, int]:
    """Write the entries of a bundle from :func:`export_json_entries` into this machine's cache, each through
    :func:`entry` (whole or not at all). A verified entry already here is kept; if its files differ from the
    bundle's, a warning says so (two results under one key: a key that misses an input). The bundle is
    checked in full before anything is written: its schema, plain kind/key/file names, JSON text.
    Returns ``{"added": n, "kept": n, "differ": n}``."""
    if not isinstance(bundle, Mapping) or bundle.get("schema") != BUNDLE_SCHEMA:
        raise ValueError(f"not a cache bundle: its 'schema' must be {BUNDLE_SCHEMA!r}")
    kind = _plain("kind", bundle.get("kind"))
    entries = bundle.get("entries")
    if not isinstance(entries, Mapping):
        raise ValueError("a cache bundle's 'entries' must map keys to entries")
    for key, item in entries.items():
        _plain("key", key)
        if not isinstance(item, Mapping) or not isinstance(item.get("files"), Mapping) or not item["files"] \
                or not isinstance(item.get("config", {}), Mapping):
            raise ValueError(f"bundle entry {key!r} must hold 'files' (name -> JSON text) and a 'config' mapping")
        for name, text in item["files"].items():
            _json_name(name)
            if not isinstance(text, str):
                raise ValueError(f"bundle entry {key!r}: file {name!r} must be given as text")
            try:
                json.loads(text)
            except ValueError as exc:
                raise ValueError(f"bundle entry {key!r}: file {name!r} is not valid JSON ({exc})") from None
    counts = {"added": 0, "kept": 0, "differ": 0}
    for key, item in entries.items():
        with entry(kind, key, item.get("config", {})) as (final, build):
            if build is not None:
                for name, text in item["files"].items():
                    (build / name).write_text(text, encoding="utf-8")
                counts["added"] += 1
                continue
            here = {n: (final / n).read_text(encoding="utf-8") for n in _files(final)}
            if here != dict(item["files"]):
                log.warning("cache entry %s/%s differs from the bundle's; kept this machine's", kind, key)
                counts["differ"] += 1
            counts["kept"] += 1
    return counts
