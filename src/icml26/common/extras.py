"""Optional dependencies, imported lazily with an install hint.

Each research area has a pip extra (``icml26[lm]``, ``icml26[games]`` …). Library
code calls :func:`require` right where it needs an optional module, so that
``import icml26`` and every paper's public API import without the extra.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "extra_installed", "require"]

#: The import names each extra provides (the pip names live in pyproject.toml).
EXTRAS: dict[str, tuple[str, ...]] = {
    "lm": ("transformers", "tokenizers", "safetensors"),
    "games": ("pyspiel",),
    "rl": ("gymnasium", "minatar"),
    "ts": ("statsmodels", "pmdarima"),
    "sleep": ("mne", "edfio"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says what to run."""


def install_hint(extra: str) -> str:
    """The exact command that installs an extra."""
    return f'pip install "icml26[{extra}]"'


@functools.lru_cache(maxsize=None)
def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def extra_installed(extra: str) -> bool:
    """Whether every module of ``extra`` can be imported."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known extras: {', '.join(sorted(EXTRAS))}")
    return all(_has_module(name) for name in EXTRAS[extra])


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` with the pip line to run."""
    if not _has_module(module):
        raise MissingExtraError(
            f"{module!r} is needed here but is not installed; run: {install_hint(extra)}"
        )
    return importlib.import_module(module)
