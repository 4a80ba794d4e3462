"""The README's code blocks are executed, not copied into tests: the top-level README's and
every paper's. Blocks of one README run in order in one namespace, in a temporary working
folder. A block preceded by ``<!-- not-run: reason -->`` is skipped (the reason is required)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icml26 import registry

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"(<!--\s*not-run:(?P<reason>[^>]*)-->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def python_blocks(text: str) -> list[tuple[str, str | None]]:
    """``(code, skip_reason)`` for every fenced python block of a markdown text."""
    return [(m["code"], (m["reason"] or "").strip() or None if m.group(1) else None) for m in _BLOCK.finditer(text)]


def _readmes():
    yield pytest.param(ROOT / "README.md", None, id="README")
    for spec in registry.list_papers():
        path = spec.folder / "README.md"
        if spec.implemented and path.is_file():
            yield pytest.param(path, spec, id=spec.key)


@pytest.mark.parametrize("path,spec", list(_readmes()))
def test_readme_code_blocks_run(path, spec, tmp_path, monkeypatch):
    if spec is not None and spec.missing_extras():
        pytest.skip(f"{spec.key} needs {spec.install_hint()}")
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    runnable = [code for code, skip in blocks if skip is None]
    if spec is not None:
        assert runnable, f"{path} has no runnable python example; add a usage example on the user's own objects"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for i, code in enumerate(runnable):
        try:
            exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{path}: python block {i} failed: {type(exc).__name__}: {exc}\n{code}") from exc
    import matplotlib.pyplot as plt

    plt.close("all")


def test_block_parser():
    text = "x\n```python\na = 1\n```\n<!-- not-run: needs a GPU -->\n```python\nb = 2\n```\n```bash\nls\n```"
    assert python_blocks(text) == [("a = 1\n", None), ("b = 2\n", "needs a GPU")]
