"""An offline English + code text corpus built from what every Python install carries.

Documents are the docstrings of the standard library's modules, classes and functions
(found by walking its source files with :mod:`ast`) and the help topics of
``pydoc_data.topics``. Files are read in sorted order, so the corpus is deterministic
for a given Python version; its SHA-256 is recorded so results can say which text
they were trained on. Nothing is downloaded.

The split is by document: a document goes to validation when the first byte of the
SHA-256 of its text falls below ``valid_fraction * 256``, so the split does not depend
on document order.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import sysconfig
import warnings
from pathlib import Path

__all__ = ["Corpus", "stdlib_corpus", "unigram_entropy"]

# Folders of the standard library that are tests, vendored code or tools.
_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__",
              "lib2to3", "ensurepip", "turtledemo", "pydoc_data"}
_MIN_CHARS = 40


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Train and validation documents plus a content hash."""

    train: tuple[str, ...]
    valid: tuple[str, ...]
    sha256: str

    @property
    def n_chars(self) -> int:
        return sum(map(len, self.train)) + sum(map(len, self.valid))

    def train_text(self, separator: str = "\n\n") -> str:
        return separator.join(self.train)

    def valid_text(self, separator: str = "\n\n") -> str:
        return separator.join(self.valid)


def _docstrings(path: Path) -> list[str]:
    try:
        source = path.read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    docs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc and len(doc) >= _MIN_CHARS:
                docs.append(doc.strip())
    return docs


def _stdlib_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if any(part in _SKIP_DIRS for part in rel[:-1]):
            continue
        files.append(path)
    return files


@functools.lru_cache(maxsize=4)
def stdlib_corpus(valid_fraction: float = 0.1, include_topics: bool = True) -> Corpus:
    """The standard-library docstring corpus (a few seconds; cached in-process).

    Args:
        valid_fraction: share of documents held out for validation, in (0, 1).
        include_topics: add the ``pydoc_data.topics`` help texts.
    """
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"valid_fraction={valid_fraction} must be in (0, 1)")
    root = Path(sysconfig.get_paths()["stdlib"])
    if not root.is_dir():
        raise RuntimeError(f"the standard library was not found at {root}")
    documents: list[str] = []
    for path in _stdlib_files(root):
        documents.extend(_docstrings(path))
    if include_topics:
        from pydoc_data.topics import topics

        documents.extend(topics[name].strip() for name in sorted(topics) if topics[name].strip())
    # Drop exact duplicates (inherited docstrings repeat), keeping the first.
    seen: set[str] = set()
    unique = [d for d in documents if not (d in seen or seen.add(d))]
    threshold = int(valid_fraction * 256)
    train, valid = [], []
    digest = hashlib.sha256()
    for doc in unique:
        raw = doc.encode("utf-8")
        digest.update(raw + b"\x00")
        (valid if hashlib.sha256(raw).digest()[0] < threshold else train).append(doc)
    if not train or not valid:
        raise RuntimeError("the stdlib corpus came out empty; is the standard library source installed?")
    return Corpus(train=tuple(train), valid=tuple(valid), sha256=digest.hexdigest())


def unigram_entropy(token_ids, vocab_size: int | None = None) -> float:
    """Entropy in nats of the empirical unigram distribution of ``token_ids``.

    A language model that ignores context can do no better than this on the same
    tokens, so a trained model's loss should fall clearly below it.
    """
    import numpy as np

    ids = np.asarray(token_ids).ravel()
    if ids.size == 0:
        raise ValueError("token_ids is empty")
    counts = np.bincount(ids, minlength=vocab_size or 0).astype(np.float64)
    p = counts[counts > 0] / ids.size
    return float(-(p * np.log(p)).sum())
