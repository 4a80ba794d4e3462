"""The contract every implemented paper's reproduction keeps, in its tiny setting.

The experiment writes a valid result; the same seed gives the same metrics; every
metric is finite; the method's metrics differ from the baseline's.
"""

from __future__ import annotations

import math

import pytest

from icml26 import registry, runner
from icml26.results import load_result

IMPLEMENTED = registry.keys(status="implemented")


def _params():
    if not IMPLEMENTED:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no paper is implemented yet: nothing to run"))]
    return [pytest.param(k, id=k) for k in IMPLEMENTED]


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Each paper's tiny run, twice with seed 0, computed once per module."""
    cache: dict[str, tuple] = {}

    def get(key: str):
        if key not in cache:
            spec = registry.get(key)
            missing = spec.missing_extras()
            if missing:
                pytest.skip(f"{key} needs {spec.install_hint()}")
            out = tmp_path_factory.mktemp(key)
            first = runner.run(key, tiny=True, seed=0, out=out, progress=False)
            second = runner.run(key, tiny=True, seed=0, out=None, progress=False)
            cache[key] = (first, second, out)
        return cache[key]

    return get


@pytest.mark.parametrize("key", _params())
def test_tiny_run_writes_a_valid_result(key, tiny_runs):
    first, _, out = tiny_runs(key)
    data = load_result(out / key / "result.json")  # validates the schema
    assert data["paper"] == key and data["setting"] == "tiny"
    for fig in data["figures"]:
        assert (out / key / fig).stat().st_size > 0


@pytest.mark.parametrize("key", _params())
def test_same_seed_same_metrics(key, tiny_runs):
    first, second, _ = tiny_runs(key)
    assert first.metrics == second.metrics


@pytest.mark.parametrize("key", _params())
def test_metrics_are_finite(key, tiny_runs):
    first, _, _ = tiny_runs(key)
    for arm, values in first.metrics.items():
        for name, value in values.items():
            assert math.isfinite(value), f"{key}: {arm}.{name} = {value}"


@pytest.mark.parametrize("key", _params())
def test_method_and_baseline_differ(key, tiny_runs):
    first, _, _ = tiny_runs(key)
    arms = list(first.metrics.values())
    assert len(arms) >= 2, f"{key} reports a single arm; the contract needs method and baseline"
    method, *baselines = arms
    for baseline in baselines:
        shared = set(method) & set(baseline)
        assert any(method[m] != baseline[m] for m in shared) or set(method) != set(baseline)


@pytest.mark.parametrize("key", _params())
def test_a_run_says_where_its_time_went(key, tiny_runs):
    """Every reproduction announces its sections (``ctx.stage``); their seconds cover the whole run."""
    first, _, _ = tiny_runs(key)
    prov = first.data["provenance"]
    stages = prov.get("stage_seconds")
    assert stages, f"{key}: the run announced no stage (call ctx.stage before each costly section)"
    assert all(v >= 0 for v in stages.values())
    assert sum(stages.values()) == pytest.approx(prov["wall_time_s"], abs=0.01 + 1e-3 * len(stages))
