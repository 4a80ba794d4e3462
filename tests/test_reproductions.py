"""Whole quick reproductions (``make test-slow``): a committed result survives a rerun on another machine.

For every implemented paper with a committed ``results/<key>/result.json``, its first seed is rerun
with the committed configuration (one torch thread, as the sweep ran it) and judged by what a user
cares about, not by the last digits of float32 kernels, which differ between CPUs:

* **each check's value** lies inside the committed seeds' 95 % **prediction interval** for one new
  seed, ``mean ± t_{0.975, n-1} · sd · √(1 + 1/n)`` over the committed seeds' values of that check
  (a check with units pools them: its values here are the per-seed means);
* **no headline verdict flips**: the aggregate rebuilt with the rerun seed in place of the committed
  one reaches the same verdict on every headline check, and the same claim status;
* metric-by-metric equality (to 1e-9 relative) is asked only of papers whose computation is
  deterministic across CPUs (``DETERMINISTIC_ACROSS_CPUS = True`` in ``experiment.py``: float64
  NumPy/SciPy).

A single-seed committed result (no sweep) must reproduce its values to 1e-6 relative and its
verdicts (exact only on the machine that produced it).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from scipy import stats

from icml26 import registry, runner
from icml26.aggregate import aggregate_results

RESULTS = Path(__file__).resolve().parents[1] / "results"
COMMITTED = [k for k in registry.keys(status="implemented") if (RESULTS / k / "result.json").exists()]


def prediction_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """``mean ± t_{(1+c)/2, n-1} · sd · √(1 + 1/n)``: where one new draw falls with probability ``c``
    (normal spread assumed); ``None`` with fewer than two finite values."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    n = len(xs)
    if n < 2:
        return None
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


def _close(a: float | None, b: float | None, tol: float) -> bool:
    if a is None or b is None:  # non-finite values are stored as null
        return a is b
    return abs(a - b) <= tol


def _seed_results(key: str, seeds: list[int]) -> dict[int, dict]:
    return {s: json.loads((RESULTS / key / "seeds" / str(s) / "result.json").read_text(encoding="utf-8"))
            for s in seeds}


def _slack(lo: float, hi: float, value: float) -> float:
    """A float-noise margin around an interval (a zero-spread check must still match to rounding)."""
    return 1e-9 * max(1.0, abs(lo), abs(hi), abs(value))


@pytest.mark.slow
@pytest.mark.parametrize("key", COMMITTED)
def test_quick_run_reproduces_the_committed_result(key):
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    committed = json.loads((RESULTS / key / "result.json").read_text(encoding="utf-8"))
    assert committed["setting"] == "quick", f"{key}: the committed result is not a --quick run"
    exact = bool(getattr(spec.load_experiment(), "DETERMINISTIC_ACROSS_CPUS", False))
    if "seeds" not in committed:
        _single_seed(key, committed)
        return
    seeds = committed["seeds"]
    per_seed = _seed_results(key, seeds)
    seed = seeds[0]
    reference = per_seed[seed]
    data, _ = runner.execute(key, "quick", seed, threads=1, progress=False, render=False)
    fresh = json.loads(json.dumps(data))
    assert fresh["config"] == reference["config"], f"{key}: Config.quick() no longer matches the committed run"

    # 1. every check's value inside the committed seeds' prediction interval for one new seed
    outside = []
    for c in fresh["claim"]["checks"]:
        values = [next(x for x in r["claim"]["checks"] if x["id"] == c["id"]).get("value") for r in per_seed.values()]
        interval = prediction_interval(values)
        now = c.get("value")
        if interval is None:  # fewer than two measured seeds: the single value must repeat
            interval = (values[0], values[0]) if values and values[0] is not None else None
        if interval is None:
            continue
        lo, hi = interval
        if now is None or not (lo - _slack(lo, hi, now) <= now <= hi + _slack(lo, hi, now)):
            outside.append(f"{c['id']}: now {now!r}, committed seeds predict [{lo:.4g}, {hi:.4g}]")
    assert not outside, f"{key}: {len(outside)} check value(s) outside the prediction interval: " + "; ".join(outside)

    # 2. no headline verdict flips when the rerun replaces the committed seed
    rebuilt = aggregate_results([fresh if s == seed else per_seed[s] for s in seeds],
                                declared=spec.load_claims(), unit=spec.load_replication().unit)
    before = {c["id"]: c["verdict"] for c in committed["claim"]["checks"] if c.get("role") == "headline"}
    after = {c["id"]: c["verdict"] for c in rebuilt["claim"]["checks"] if c.get("role") == "headline"}
    flipped = [f"{i}: {before[i]} -> {after[i]}" for i in before if after.get(i) != before[i]]
    assert not flipped, f"{key}: headline verdicts changed: {flipped}"
    assert rebuilt["claim"]["status"] == committed["claim"]["status"]

    # 3. metric-by-metric equality only where the computation is deterministic across CPUs
    if exact:
        differing = [f"{arm}.{name}: committed {value!r}, now {fresh['metrics'][arm].get(name)!r}"
                     for arm, values in reference["metrics"].items() for name, value in values.items()
                     if not _close(value, fresh["metrics"][arm].get(name), 1e-9 * max(abs(value or 0.0), 1.0))]
        assert not differing, f"{key}: deterministic metrics differ: " + "; ".join(differing[:5])


def _single_seed(key: str, committed: dict) -> None:
    data, _ = runner.execute(key, "quick", committed["seed"], threads=committed["provenance"]["threads"],
                             progress=False, render=False)
    fresh = json.loads(json.dumps(data))
    assert fresh["config"] == committed["config"], f"{key}: Config.quick() no longer matches the committed run"
    differing = [f"{arm}.{name}" for arm, values in committed["metrics"].items() for name, value in values.items()
                 if not _close(value, fresh["metrics"][arm].get(name), max(1e-6 * abs(value or 0.0), 1e-12))]
    assert not differing, f"{key}: metrics differ: {differing[:5]}"
    fresh_checks = {c["id"]: c["passed"] for c in fresh["claim"]["checks"]}
    flipped = [c["id"] for c in committed["claim"]["checks"] if fresh_checks.get(c["id"]) != c["passed"]]
    assert not flipped, f"{key}: verdicts changed for {flipped}"


def test_prediction_interval_matches_its_definition():
    """The interval of the slow suite, against a hand computation and a simulation."""
    import numpy as np

    values = [1.0, 2.0, 4.0]
    mean, sd = 7 / 3, math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    half = 4.302652729911275 * sd * math.sqrt(1 + 1 / 3)   # t_{0.975, 2}
    assert prediction_interval(values) == pytest.approx((mean - half, mean + half))
    assert prediction_interval([1.0]) is None and prediction_interval([1.0, None, float("nan")]) is None
    # coverage: a new normal draw falls inside about 95 % of the time
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(4000):
        draw = rng.normal(size=6)
        lo, hi = prediction_interval(draw[:5].tolist())
        hits += lo <= draw[5] <= hi
    assert 0.94 <= hits / 4000 <= 0.96


def test_the_slow_suite_compares_the_first_committed_seed(monkeypatch):
    """The rerun replaces exactly the first committed seed in the rebuilt aggregate (a fake rerun that returns
    the committed seed itself reproduces every verdict and value)."""
    key = next((k for k in COMMITTED if "seeds" in json.loads((RESULTS / k / "result.json").read_text())), None)
    if key is None:
        pytest.skip("no committed sweep")
    committed = json.loads((RESULTS / key / "result.json").read_text())
    reference = _seed_results(key, committed["seeds"][:1])[committed["seeds"][0]]
    monkeypatch.setattr(runner, "execute", lambda *a, **k: (copy.deepcopy(reference), {}))
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    test_quick_run_reproduces_the_committed_result(key)
