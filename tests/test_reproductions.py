"""Whole quick reproductions (``make test-slow``): the committed results regenerate from the code.

For every implemented paper with a committed ``results/<key>/result.json``:

* an **aggregate** over seeds (the normal case): its first seed is rerun with the sweep's
  settings (same config, one thread) and compared with that seed's committed file
  ``results/<key>/seeds/<s>/result.json``: every check must reach the same verdict, except checks
  the aggregate calls *unresolved* (their verdict flips within the seed spread); every metric must
  lie within **3 standard deviations of the committed seeds' spread** (relative floor 1e-6).
  Papers whose computation is deterministic across CPUs (float64 NumPy/SciPy; they set
  ``DETERMINISTIC_ACROSS_CPUS = True`` in ``experiment.py``) must match to 1e-9 instead.
* a **single-seed** result (no sweep yet): rerun with its seed and thread count; metrics to 1e-6
  relative (exact only on the machine that produced it) and the same verdicts.

Float32 kernels differ between CPUs, so bit-identical float32 numbers are only expected on the
machine that produced them; the tolerance says how far another machine may be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icml26 import registry, runner

RESULTS = Path(__file__).resolve().parents[1] / "results"
COMMITTED = [k for k in registry.keys(status="implemented") if (RESULTS / k / "result.json").exists()]


def _close(a: float | None, b: float | None, tol: float) -> bool:
    if a is None or b is None:  # non-finite values are stored as null
        return a is b
    return abs(a - b) <= tol


@pytest.mark.slow
@pytest.mark.parametrize("key", COMMITTED)
def test_quick_run_reproduces_the_committed_result(key, tmp_path):
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    committed = json.loads((RESULTS / key / "result.json").read_text(encoding="utf-8"))
    assert committed["setting"] == "quick", f"{key}: the committed result is not a --quick run"
    exact = bool(getattr(spec.load_experiment(), "DETERMINISTIC_ACROSS_CPUS", False))
    if "seeds" in committed:
        seed = committed["seeds"][0]
        reference = json.loads((RESULTS / key / "seeds" / str(seed) / "result.json").read_text(encoding="utf-8"))
        threads = 1
        spread = {arm: {m: s.get("sd") for m, s in values.items()} for arm, values in committed["metric_stats"].items()}
        unresolved = {c["name"] for c in committed["claim"]["checks"] if c["verdict"] == "unresolved"}
    else:
        seed, reference, threads = committed["seed"], committed, committed["provenance"]["threads"]
        spread, unresolved, exact = {}, set(), True
    data, _ = runner.execute(key, "quick", seed, threads=threads, progress=False, render=False)
    fresh = json.loads(json.dumps(data))
    assert fresh["config"] == reference["config"], f"{key}: Config.quick() no longer matches the committed run"
    assert fresh["metrics"].keys() == reference["metrics"].keys()
    differing = []
    for arm, values in reference["metrics"].items():
        for name, value in values.items():
            now = fresh["metrics"][arm].get(name)
            sd = (spread.get(arm) or {}).get(name) or 0.0
            scale = abs(value) if value is not None else 0.0
            tol = max(1e-9 * max(scale, 1.0), 0.0) if exact else max(3.0 * sd, 1e-6 * scale, 1e-12)
            if name not in fresh["metrics"][arm] or not _close(value, now, tol):
                differing.append(f"{arm}.{name}: committed {value!r}, now {now!r} (tolerance {tol:.3g})")
    assert not differing, f"{key}: {len(differing)} metric(s) outside tolerance, e.g. " + "; ".join(differing[:5])
    fresh_checks = {c["name"]: c["passed"] for c in fresh["claim"]["checks"]}
    flipped = [c["name"] for c in reference["claim"]["checks"]
               if c["name"] not in unresolved and fresh_checks.get(c["name"]) != c["passed"]]
    assert not flipped, f"{key}: verdicts changed for {flipped}"
