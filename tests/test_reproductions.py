"""Whole quick reproductions (``make test-slow``): each implemented paper's committed
``results/<key>/result.json`` is regenerated from the code as it stands, with the same
seed, config and thread count, and must come out with the same metrics and verdicts.

This is what ties a committed figure to the code: a result left stale by a later change
fails here. Minutes per paper on 2 cores; not part of the default run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from icml26 import registry, runner

RESULTS = Path(__file__).resolve().parents[1] / "results"
COMMITTED = [k for k in registry.keys(status="implemented") if (RESULTS / k / "result.json").exists()]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:  # non-finite values are stored as null
        return a is b
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("key", COMMITTED)
def test_quick_run_reproduces_the_committed_result(key, tmp_path):
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    committed = json.loads((RESULTS / key / "result.json").read_text(encoding="utf-8"))
    assert committed["setting"] == "quick", f"{key}: the committed result is not a --quick run"
    result = runner.run(key, quick=True, seed=committed["seed"], out=tmp_path,
                        threads=committed["provenance"]["threads"], progress=False)
    fresh_data = json.loads(json.dumps(result.data))  # the committed file went through JSON too
    assert fresh_data["config"] == committed["config"], f"{key}: Config.quick() no longer matches the committed run"
    fresh = fresh_data["metrics"]
    assert fresh.keys() == committed["metrics"].keys()
    differing = [f"{arm}.{name}: committed {value!r}, now {fresh[arm].get(name)!r}"
                 for arm, values in committed["metrics"].items() for name, value in values.items()
                 if name not in fresh[arm] or not _same(value, fresh[arm][name])]
    assert not differing, f"{key}: {len(differing)} metric(s) differ, e.g. " + "; ".join(differing[:5])
    checks = [(c["name"], c["passed"]) for c in fresh_data["claim"]["checks"]]
    assert checks == [(c["name"], c["passed"]) for c in committed["claim"]["checks"]]
