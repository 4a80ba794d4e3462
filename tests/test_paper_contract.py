"""What every implemented paper declares, checked across the registry (new papers join by
being registered): claims as data, a config boundary that refuses non-finite and negative
numbers, baselines that share the method's signature, the public API's ``__all__``."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from icml26 import registry
from icml26.common.config import ConfigError, _numeric_kind, _type_hints
from icml26.contract import CheckSpec
from icml26.runner import build_config

RESULTS = Path(__file__).resolve().parents[1] / "results"
IMPLEMENTED = registry.keys(status="implemented")


def _available(key: str) -> registry.PaperSpec:
    spec = registry.get(key)
    if spec.missing_extras():
        pytest.skip(f"{key} needs {spec.install_hint()}")
    return spec


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_checks_are_declared_as_data(key):
    spec = _available(key)
    checks = spec.load_claims()
    assert checks, f"{key}: claims.py declares no checks"
    assert all(isinstance(c, CheckSpec) for c in checks.values())
    assert list(checks) == [c.id for c in checks.values()]
    assert spec.load_experiment().CHECKS is not None
    assert list(spec.load_experiment().CHECKS) == list(checks), f"{key}: experiment.CHECKS is not claims.CHECKS"


@pytest.mark.parametrize("key", [k for k in IMPLEMENTED if (RESULTS / k / "result.json").exists()])
def test_committed_result_checks_are_the_declared_ones(key):
    data = json.loads((RESULTS / key / "result.json").read_text())
    declared = {i: c for i, c in registry.get(key).load_claims().items() if data["setting"] in c.settings}
    assert [c.get("id") for c in data["claim"]["checks"]] == list(declared), (
        f"{key}: the committed result's checks differ from claims.py; rerun `icml26 run {key} --quick`")
    for c in data["claim"]["checks"]:
        spec = declared[c["id"]]
        assert (c["op"], c["target"], c["source"], c["ref"]) == (spec.op, spec.target, spec.source, spec.ref)


def _numeric_fields(cls):
    hints = _type_hints(cls)
    return [(f, _numeric_kind(hints[f.name])) for f in dataclasses.fields(cls) if _numeric_kind(hints[f.name])]


def _config_cases():
    for key in IMPLEMENTED:
        spec = registry.get(key)
        if spec.missing_extras():
            continue
        cls = spec.load_experiment().Config
        for f, kind in _numeric_fields(cls):
            bad = ["nan", "inf", "-inf"] if kind == "float" else []
            if -1 not in tuple((f.metadata or {}).get("sentinels", ())) and (f.metadata or {}).get("min", 0) >= 0:
                bad.append("-1")
            for value in bad:
                yield pytest.param(key, f.name, value, id=f"{key}-{f.name}={value}")


@pytest.mark.parametrize("key,field,value", list(_config_cases()))
def test_config_refuses_bad_numbers_naming_the_field(key, field, value):
    with pytest.raises((ConfigError, ValueError), match=field):
        build_config(key, "quick", {field: value})


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_config_constructor_validates_numbers(key):
    """Built directly (not through overrides), a config refuses NaN in its first float field."""
    cls = _available(key).load_experiment().Config
    floats = [f for f, kind in _numeric_fields(cls) if kind == "float" and (f.metadata or {}).get("finite", True)]
    if not floats:
        pytest.skip(f"{key}: no float field")
    base = cls.quick()
    value = getattr(base, floats[0].name)
    bad = tuple(float("nan") for _ in value) if isinstance(value, tuple) else float("nan")
    with pytest.raises(ValueError, match=floats[0].name):
        dataclasses.replace(base, **{floats[0].name: bad})


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_public_api_exports_baselines(key):
    api = _available(key).load_api()
    assert hasattr(api, "__all__") and all(hasattr(api, name) for name in api.__all__), f"{key}: broken __all__"
    baselines = getattr(api, "BASELINES", None)
    assert isinstance(baselines, dict) and baselines, f"{key}: export BASELINES: dict[str, Callable]"
    assert all(callable(b) for b in baselines.values())
    method = getattr(api, "METHOD", None)
    if method is None:
        return  # the paper's baselines are not drop-in alternatives to one callable (its README says why)
    want = [(p.name, p.kind) for p in inspect.signature(method).parameters.values()
            if p.default is inspect.Parameter.empty]
    for name, baseline in baselines.items():
        got = [(p.name, p.kind) for p in inspect.signature(baseline).parameters.values()
               if p.default is inspect.Parameter.empty]
        assert got == want, f"{key}: baseline {name} takes {got}, the method {want}"


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_one_to_three_headline_checks_state_the_claim(key):
    checks = _available(key).load_claims()
    headline = [c.id for c in checks.values() if c.role == "headline"]
    assert 1 <= len(headline) <= 3, f"{key}: mark the one to three checks of the abstract's central claim"
    # a headline check the quick setting does not measure is read in a further run, or the quick run could
    # never decide the claim and nothing would say where it is decided
    unread = [c.id for c in checks.values() if c.role == "headline" and "quick" not in c.settings and not c.run]
    assert not unread, f"{key}: headline check(s) {unread} are not measured in quick; name their further run (run=)"


@pytest.mark.parametrize("key", IMPLEMENTED)
def test_compared_arms_are_declared_and_tuned_alike(key):
    """Arms compared by a check get the same tuning budget, or the arm with fewer trials says why."""
    from icml26.contract import budget_mismatches

    spec = _available(key)
    arms = spec.load_arms()
    assert arms, f"{key}: declare ARMS in claims.py (the method, its baselines and controls)"
    checks = spec.load_claims()
    assert any(c.compares for c in checks.values()), f"{key}: no check says which arms it compares"
    assert budget_mismatches(checks, arms) == []


@pytest.mark.parametrize("key", [k for k in IMPLEMENTED if (RESULTS / k / "result.json").exists()])
def test_committed_result_records_the_declared_arms_and_roles(key):
    data = json.loads((RESULTS / key / "result.json").read_text())
    spec = registry.get(key)
    declared = spec.load_claims()
    assert data["schema"] >= 3, f"{key}: rebuild the committed result (`icml26 aggregate {key}`)"
    for c in data["claim"]["checks"]:
        assert c["role"] == declared[c["id"]].role, f"{key}: {c['id']} has role {c['role']} in the result"
        assert tuple(c.get("requires", ())) == declared[c["id"]].requires, (
            f"{key}: {c['id']} requires {c.get('requires', [])} in the result, {list(declared[c['id']].requires)} in "
            f"claims.py; rebuild it (`icml26 aggregate {key}`)")
    arms = spec.load_arms()
    assert set(data.get("arms", {})) == set(arms), f"{key}: the result's arms differ from claims.py ARMS"
    for arm_id, arm in arms.items():
        got = data["arms"][arm_id]
        assert (got["trials"], got["role"]) == (arm.trials, arm.role), f"{key}: arm {arm_id} differs from claims.py"


#: One unit of replication below this many seconds on one core is cheap: the committed result then
#: holds at least MIN_UNITS units, so that three draws' t multiplier (4.30) does not decide the verdicts.
CHEAP_UNIT_S = 120.0
MIN_UNITS = 8


@pytest.mark.parametrize("key", [k for k in IMPLEMENTED if (RESULTS / k / "result.json").exists()])
def test_cheap_units_are_replicated_at_least_eight_times(key):
    data = json.loads((RESULTS / key / "result.json").read_text())
    times = list((data["provenance"].get("seed_wall_times_s") or {}).values()) or [data["provenance"]["wall_time_s"]]
    seed_cost = sum(times) / len(times)
    units = max((c.get("n") or 0 for c in data["claim"]["checks"]), default=0) or len(data.get("seeds", [1]))
    per_unit = seed_cost * len(data.get("seeds", [1])) / units
    if per_unit < CHEAP_UNIT_S:
        assert units >= MIN_UNITS, (f"{key}: a unit costs {per_unit:.0f} s on one core, so the committed result "
                                    f"should hold >= {MIN_UNITS} units; it holds {units}: "
                                    f"`icml26 run {key} --quick --seeds {len(data.get('seeds', [1]))}-{MIN_UNITS - 1}`")


@pytest.mark.parametrize("key", [k for k in IMPLEMENTED if (RESULTS / k / "seeds").is_dir()])
def test_committed_aggregate_is_what_its_seeds_give(key):
    """The committed aggregate is rebuilt from the committed seeds by the harness, with the paper's current
    declarations: the same checks, values, intervals, verdicts, roles and claim status (no stale or
    hand-edited aggregate)."""
    from icml26.sweep import aggregate_folder

    _available(key)
    committed = json.loads((RESULTS / key / "result.json").read_text())
    rebuilt, _ = aggregate_folder(key, RESULTS / key, {}, render=False)
    assert rebuilt["seeds"] == committed["seeds"], f"{key}: the aggregate's seeds differ from seeds/; `icml26 aggregate {key}`"
    fields = ("id", "role", "value", "ci", "n", "unit", "verdict", "held_on", "seeds", "n_to_resolve")
    assert [{f: c.get(f) for f in fields} for c in rebuilt["claim"]["checks"]] == \
        [{f: c.get(f) for f in fields} for c in committed["claim"]["checks"]], f"{key}: stale aggregate"
    assert rebuilt["claim"]["status"] == committed["claim"]["status"]
