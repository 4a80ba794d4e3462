"""Evidence a user can act on: headline roles decide a three-valued claim, per-unit values pool into
intervals over independent units, the units that would resolve a check, arms declared and tuned alike
by one tuner, budgets cross-checked, and results that cannot overclaim (validate recomputes)."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from scipy import stats

from icml26.aggregate import aggregate_check, aggregate_results, claim_status, n_to_resolve, role_counts
from icml26.contract import ArmSpec, CheckSpec, Replication, annotate, budget_mismatches, declare, declare_arms
from icml26.results import ResultError, claim_across_budgets, config_hash, validate
from icml26.tuning import grid_points, tune


# ---------------------------------------------------------------------------
# Roles and the claim's status
# ---------------------------------------------------------------------------
def _specs():
    return declare(
        CheckSpec("a", "a", ">=", 1.0, "ours", "r"),
        CheckSpec("b", "b", "<=", 0.5, "ours", "r"),
        CheckSpec("c", "c", ">", 0.0, "ours", "r"),
    )


def test_annotate_sets_roles_compares_and_budget_and_refuses_unknown_ids():
    table = annotate(_specs(), headline=("a",), diagnostic=("c",), compares={"a": ("m", "b1")},
                     budget={"a": "steps"})
    assert [t.role for t in table.values()] == ["headline", "supporting", "diagnostic"]
    assert table["a"].compares == ("m", "b1") and table["a"].budget == "steps"
    with pytest.raises(ValueError, match="zz"):
        annotate(_specs(), headline=("zz",))
    with pytest.raises(ValueError, match="headline and diagnostic"):
        annotate(_specs(), headline=("a",), diagnostic=("a",))
    with pytest.raises(ValueError, match="role"):
        CheckSpec("x", "x", ">", 0.0, "ours", "r", role="central")
    with pytest.raises(ValueError, match="one arm"):
        CheckSpec("x", "x", ">", 0.0, "ours", "r", compares=("only",))


def _agg(id_, role, verdict):
    ci = {"held": [1.2, 1.4], "not held": [0.2, 0.4], "unresolved": [0.8, 1.2]}[verdict]
    return {"id": id_, "name": id_, "op": ">=", "target": 1.0, "value": sum(ci) / 2, "ci": ci, "n": 3,
            "verdict": verdict, "passed": verdict == "held", "role": role, "held_on": 0, "seeds": 3}


@pytest.mark.parametrize("head,support,want", [
    (["held", "held"], ["not held"], "supported"),         # a failing supporting check does not refute
    (["held", "not held"], ["held"], "refuted"),
    (["held", "unresolved"], ["held"], "inconclusive"),
    (["not held", "unresolved"], [], "refuted"),           # one failed headline check is enough
])
def test_headline_checks_alone_decide_the_claim(head, support, want):
    checks = ([_agg(f"h{i}", "headline", v) for i, v in enumerate(head)]
              + [_agg(f"s{i}", "supporting", v) for i, v in enumerate(support)]
              + [_agg("d", "diagnostic", "not held")])          # diagnostics are never scored
    status, reason = claim_status(checks)
    assert status == want
    if want == "refuted":
        assert "h1" in reason or "h0" in reason
    counts = role_counts(checks)
    assert counts["diagnostic"] == {"held": 0, "not held": 1, "unresolved": 0}
    assert sum(counts["headline"].values()) == len(head)


def test_no_headline_is_inconclusive_and_says_so():
    status, reason = claim_status([_agg("s", "supporting", "held")])
    assert status == "inconclusive" and "no headline" in reason


# ---------------------------------------------------------------------------
# Units of replication
# ---------------------------------------------------------------------------
def test_measure_with_units_requires_their_mean_and_records_them():
    spec = CheckSpec("m", "m", ">=", 0.0, "ours", "r", role="headline")
    c = spec.measure(2.0, units=[1.0, 3.0, float("nan")])
    assert c.units[:2] == (1.0, 3.0) and math.isnan(c.units[2])
    d = c.to_dict()
    assert d["units"] == [1.0, 3.0, None] and d["role"] == "headline"
    with pytest.raises(ValueError, match="mean of its units"):
        spec.measure(2.5, units=[1.0, 3.0])
    with pytest.raises(ValueError, match="empty"):
        spec.measure(1.0, units=[])


def test_pooled_units_give_the_t_interval_over_every_draw():
    rng = np.random.default_rng(0)
    per_seed = [rng.normal(0.3, 1.0, size=10) for _ in range(3)]
    checks = [{"id": "m", "name": "m", "op": ">=", "target": 0.0, "value": float(u.mean()),
               "passed": bool(u.mean() >= 0), "units": u.tolist()} for u in per_seed]
    agg = aggregate_check(checks, role="headline", unit="forget-set draw")
    pooled = np.concatenate(per_seed)
    lo, hi = stats.t.interval(0.95, pooled.size - 1, loc=pooled.mean(), scale=stats.sem(pooled))
    assert agg["n"] == 30 and agg["unit"] == "forget-set draw" and agg["seeds"] == 3
    assert agg["ci"] == pytest.approx([lo, hi]) and agg["value"] == pytest.approx(pooled.mean())
    assert agg["half_width"] == pytest.approx(hi - pooled.mean())
    # without units in every seed, the seeds are the units
    checks[0].pop("units")
    assert aggregate_check(checks)["n"] == 3


def test_n_to_resolve_is_the_smallest_n_whose_half_width_clears_the_target():
    mean, sd, target = 0.4, 1.0, 0.0
    n = n_to_resolve(">=", target, mean, sd)

    def half(k):
        return stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k)

    assert half(n) < mean - target <= half(n - 1)
    assert 25 < n < 30  # about (1.96 / 0.4)^2 = 24 plus the t correction
    # abs<=: the distance is to the nearer end of [-t, t]
    assert n_to_resolve("abs<=", 0.7, -0.5, 0.3) == n_to_resolve("<=", 0.7, 0.5, 0.3)
    assert n_to_resolve(">=", 1.0, 1.0, 0.5) is None       # mean on the target: never
    assert n_to_resolve("==", 1.0, 2.0, 0.5) is None
    assert n_to_resolve(">=", 0.0, 1.0, 0.0) == 2          # no spread: two units suffice
    assert n_to_resolve(">=", 0.0, 1e-9, 1.0) is None      # beyond the limit


def test_unresolved_aggregate_records_n_to_resolve():
    checks = [{"id": "m", "name": "m", "op": ">=", "target": 0.0, "value": v, "passed": v >= 0}
              for v in (0.5, -0.1, 0.4)]
    agg = aggregate_check(checks)
    assert agg["verdict"] == "unresolved"
    assert agg["n_to_resolve"] == n_to_resolve(">=", 0.0, agg["value"], agg["sd"])


def test_replication_declaration_is_checked():
    with pytest.raises(ValueError, match="unit"):
        Replication(unit=" ")
    assert Replication().unit == "master seed"


# ---------------------------------------------------------------------------
# Arms and the shared tuner
# ---------------------------------------------------------------------------
def test_armspec_validates_its_budget_and_split():
    arm = ArmSpec("m", "method", space={"lr": (0.1, 0.3), "wd": (0.0, 0.1, 0.2)}, trials=6)
    assert arm.grid_size == 6 and arm.tuned
    with pytest.raises(ValueError, match="exceeds"):
        ArmSpec("m", "method", space={"lr": (0.1,)}, trials=2)
    with pytest.raises(ValueError, match="test split"):
        ArmSpec("m", "method", space={"lr": (0.1, 0.2)}, trials=2, select_on="test")
    with pytest.raises(ValueError, match="method"):
        declare_arms(ArmSpec("b", "baseline"))
    with pytest.raises(ValueError, match="twice"):
        declare_arms(ArmSpec("m", "method"), ArmSpec("m", "baseline"))


def test_budget_mismatches_need_a_declared_reason():
    checks = annotate(_specs(), compares={"a": ("m", "b1"), "b": ("m", "b2")})
    arms = declare_arms(ArmSpec("m", "method", space={"lr": (1, 2, 3)}, trials=3),
                        ArmSpec("b1", "baseline", space={"lr": (1, 2, 3)}, trials=3),
                        ArmSpec("b2", "baseline", space={"lr": (1,)}, trials=1))
    problems = budget_mismatches(checks, arms)
    assert len(problems) == 1 and "'b2'" in problems[0] and "no reason" in problems[0]
    arms["b2"] = ArmSpec("b2", "baseline", space={"lr": (1,)}, trials=1, reason="the authors' fixed setting")
    assert budget_mismatches(checks, arms) == []
    assert "undeclared" in budget_mismatches(annotate(_specs(), compares={"a": ("m", "zz")}), arms)[0]


def test_tuner_picks_the_best_validation_score_with_ties_to_the_first():
    arm = ArmSpec("m", "method", space={"lr": (0.1, 0.3, 1.0), "wd": (0.0, 0.1)}, trials=6)
    assert grid_points(arm)[:2] == [{"lr": 0.1, "wd": 0.0}, {"lr": 0.1, "wd": 0.1}]
    scores = {(0.1, 0.0): 3.0, (0.1, 0.1): 1.0, (0.3, 0.0): 1.0, (0.3, 0.1): float("nan"),
              (1.0, 0.0): 2.0, (1.0, 0.1): 5.0}
    record = tune(arm, lambda p: scores[(p["lr"], p["wd"])], maximize=False, rng=np.random.default_rng(0))
    assert record["chosen"] == {"lr": 0.1, "wd": 0.1} and record["score"] == 1.0   # the earlier of two ties
    assert len(record["trials"]) == 6 and record["trials"][3]["score"] is None      # NaN recorded, never chosen
    record = tune(arm, lambda p: scores[(p["lr"], p["wd"])], maximize=True, rng=np.random.default_rng(0))
    assert record["chosen"] == {"lr": 1.0, "wd": 0.1}
    with pytest.raises(TypeError, match="number"):
        tune(arm, lambda p: "good", maximize=True, rng=np.random.default_rng(0))


def test_tuner_subset_is_reproducible_and_within_budget():
    arm = ArmSpec("m", "method", space={"x": tuple(range(20))}, trials=5)
    seen = []
    a = tune(arm, lambda p: seen.append(p["x"]) or -abs(p["x"] - 7), maximize=True, rng=np.random.default_rng(3))
    b = tune(arm, lambda p: -abs(p["x"] - 7), maximize=True, rng=np.random.default_rng(3))
    assert len(seen) == 5 == len(set(seen)) and a == b
    assert a["chosen"]["x"] in seen


def test_run_context_tune_records_each_call():
    from icml26.contract import RunContext

    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1)
    arm = ArmSpec("m", "method", space={"lr": (0.1, 0.2)}, trials=2)
    assert ctx.tune(arm, lambda p: p["lr"], maximize=True) == {"lr": 0.2}
    ctx.tune(arm, lambda p: p["lr"], maximize=False, index=1)
    assert [c["chosen"] for c in ctx.tuning["m"]["calls"]] == [{"lr": 0.2}, {"lr": 0.1}]


# ---------------------------------------------------------------------------
# Results that cannot overclaim
# ---------------------------------------------------------------------------
def _seed_result(seed, value):
    head = {"id": "h", "name": "h", "op": ">=", "target": 0.0, "value": value, "passed": value >= 0.0,
            "source": "ours", "ref": "r", "role": "headline"}
    return {"schema": 3, "paper": "zz", "quick": True, "setting": "quick", "seed": seed, "config": {"steps": 1},
            "metrics": {"m": {"x": value}}, "claim": {"text": "t", "checks": [head], "passed": value >= 0.0},
            "curves": {}, "figures": [], "notes": [],
            "provenance": {"icml26": "0", "python": "3", "numpy": "2", "torch": "2", "platform": "p", "threads": 1,
                           "device": "cpu", "wall_time_s": 1.0, "utc": "u"}}


@pytest.fixture
def aggregate():
    data = aggregate_results([_seed_result(0, 1.0), _seed_result(1, 1.2), _seed_result(2, 0.9)])
    data["config_hash"] = config_hash("zz", "quick", data["config"])
    validate(data)
    assert data["claim"]["status"] == "supported" and data["schema"] == 3
    return data


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d["claim"]["checks"][0].update(ci=[-0.5, 2.0]), "verdict"),           # interval now spans 0
    (lambda d: d["claim"]["checks"][0].update(held_on=99), "held_on"),
    (lambda d: d["claim"]["checks"][0].update(seeds=2), "seeds"),
    (lambda d: d["claim"].update(status="inconclusive"), "claim.status"),
    (lambda d: d["claim"]["counts"]["headline"].update(held=0), "claim.counts"),
    (lambda d: d["claim"]["checks"][0].update(role="central"), "role"),
    (lambda d: d["claim"]["checks"][0].update(value=7.0), "outside its interval"),
    (lambda d: d.update(seed=5), "'seed'"),
    (lambda d: d["provenance"].update(wall_time_s="12"), "wall_time_s"),
    (lambda d: d["provenance"].update(threads="<b>2</b>"), "threads"),
    (lambda d: d["claim"]["checks"][0].pop("held_on"), "held_on"),
    (lambda d: d["claim"]["checks"][0].update(n=9), "'claim.checks\\[0\\].n'"),
    (lambda d: d["claim"]["checks"][0].update(sd=0.01), "t interval"),                  # ci no longer follows
    (lambda d: d["claim"]["checks"][0].update(half_width=0.001), "half_width"),
    (lambda d: d["metric_stats"]["m"]["x"].update(mean=5.0), "metric_stats.m.x"),
    (lambda d: d["metric_stats"]["m"]["x"].update(n=7), "metric_stats.m.x"),
    (lambda d: d.update(seeds=[0, 0, 2]), "twice"),
    (lambda d: d.update(failed_seeds=[{"seed": 1, "error": "x"}]), "failed_seeds"),
    (lambda d: d["config"].update(steps=2), "config_hash"),
    (lambda d: d.update(quick=False), "'quick'"),
])
def test_a_hand_edited_aggregate_is_refused(aggregate, edit, needle):
    data = copy.deepcopy(aggregate)
    edit(data)
    with pytest.raises(ResultError, match=needle):
        validate(json.loads(json.dumps(data)))


def test_budget_dependent_when_the_larger_budget_flips_a_headline_verdict(aggregate):
    main = copy.deepcopy(aggregate)
    main["claim"]["checks"][0]["budget"] = "steps"
    assert claim_across_budgets(main, {})[1].endswith("(one budget only: no further run at >= 3x steps)")
    longer = aggregate_results([_seed_result(0, -1.0), _seed_result(1, -1.2), _seed_result(2, -0.9)])
    longer["config"] = {"steps": 3}
    longer["claim"]["checks"][0]["budget"] = "steps"
    status, reason = claim_across_budgets(main, {"budget_x3": longer})
    assert status == "budget-dependent" and "held at steps=1, not held at 3" in reason
    # a further run that is not >= 3x the budget does not count
    longer["config"] = {"steps": 2}
    assert claim_across_budgets(main, {"budget_x3": longer})[0] == "supported"
    same = aggregate_results([_seed_result(0, 1.0), _seed_result(1, 1.1), _seed_result(2, 1.3)])
    same["config"] = {"steps": 4}
    status, reason = claim_across_budgets(main, {"budget_x4": same})
    assert status == "supported" and "the same at the larger budget" in reason


def test_a_larger_budget_that_is_only_less_resolved_is_not_a_flip(aggregate):
    """Unresolved at the larger budget with its mean on the same side: the same direction, not budget-dependent;
    with its mean on the other side of the target: budget-dependent."""
    main = copy.deepcopy(aggregate)
    main["claim"]["checks"][0]["budget"] = "steps"
    same_side = aggregate_results([_seed_result(0, 0.2), _seed_result(1, -0.1), _seed_result(2, 0.5)])
    same_side["config"] = {"steps": 3}
    same_side["claim"]["checks"][0]["budget"] = "steps"
    assert same_side["claim"]["checks"][0]["verdict"] == "unresolved"
    status, reason = claim_across_budgets(main, {"budget_x3": same_side})
    assert status == "supported" and "same side of the target at both budgets, resolved at only one" in reason
    other_side = aggregate_results([_seed_result(0, -0.5), _seed_result(1, 0.1), _seed_result(2, -0.3)])
    other_side["config"] = {"steps": 3}
    other_side["claim"]["checks"][0]["budget"] = "steps"
    assert other_side["claim"]["checks"][0]["verdict"] == "unresolved"
    assert claim_across_budgets(main, {"budget_x3": other_side})[0] == "budget-dependent"


def _two_headlines(values_a, values_b, config):
    """An aggregate of three seeds with two headline checks a (>= 0, budget steps) and b (>= 0, budget
    rounds)."""
    seeds = []
    for s, (a, b) in enumerate(zip(values_a, values_b)):
        r = _seed_result(s, a)
        second = dict(r["claim"]["checks"][0], id="b", name="b", value=b, passed=b >= 0.0)
        r["claim"]["checks"].append(second)
        r["config"] = dict(config)
        seeds.append(r)
    declared = annotate(declare(CheckSpec("h", "h", ">=", 0.0, "ours", "r"), CheckSpec("b", "b", ">=", 0.0, "ours", "r")),
                        headline=("h", "b"), budget={"h": "steps", "b": "rounds"})
    return aggregate_results(seeds, declared=declared)


def test_an_aggregate_carries_each_checks_budget_field_from_the_declarations():
    data = _two_headlines([1.0, 1.2, 0.9], [1.0, 1.1, 1.3], {"steps": 1, "rounds": 1, "lr": 0.1})
    assert [c.get("budget") for c in data["claim"]["checks"]] == ["steps", "rounds"]
    validate(json.loads(json.dumps(data)))


def test_a_larger_run_is_read_only_for_the_checks_whose_own_budget_it_triples():
    main = _two_headlines([1.0, 1.2, 0.9], [1.0, 1.1, 1.3], {"steps": 1, "rounds": 1, "lr": 0.1})
    # steps x3, rounds unchanged: read for h only; b stays at one budget
    longer = _two_headlines([1.0, 1.1, 1.2], [-1.0, -1.1, -1.3], {"steps": 3, "rounds": 1, "lr": 0.1})
    status, reason = claim_across_budgets(main, {"budget_x3": longer})
    assert status == "supported" and "one budget only for rounds" in reason
    # another field changed too: not the same comparison at another budget
    other = _two_headlines([-1.0, -1.1, -1.2], [1.0, 1.1, 1.3], {"steps": 3, "rounds": 1, "lr": 0.2})
    assert claim_across_budgets(main, {"budget_x3": other})[1].endswith(
        "(one budget only: no further run at >= 3x rounds, steps)")
    # h flips at 3x steps: budget-dependent
    flipped = _two_headlines([-1.0, -1.1, -1.2], [1.0, 1.1, 1.3], {"steps": 3, "rounds": 1, "lr": 0.1})
    assert claim_across_budgets(main, {"budget_x3": flipped})[0] == "budget-dependent"


def test_a_claim_refuted_at_both_budgets_stays_refuted_when_another_headline_flips():
    main = _two_headlines([1.0, 1.2, 0.9], [-1.0, -1.1, -1.3], {"steps": 1, "rounds": 1})
    assert main["claim"]["status"] == "refuted"
    longer = _two_headlines([-1.0, -1.1, -1.2], [-1.0, -1.1, -1.3], {"steps": 3, "rounds": 3})
    status, reason = claim_across_budgets(main, {"budget_x3": longer})
    assert status == "refuted" and "the claim's status does not" in reason and "h held at steps=1" in reason
    # a headline check the larger run did not measure is named, not taken as agreeing
    partial = copy.deepcopy(longer)
    partial["claim"]["checks"] = [c for c in partial["claim"]["checks"] if c["id"] != "b"]
    assert "not measured at the larger budget: b (budget_x3)" in claim_across_budgets(main, {"budget_x3": partial})[1]


def test_a_headline_check_names_the_further_run_that_measures_it():
    table = annotate(_specs(), headline=("a", "b"), run={"b": "smollm2"})
    assert table["b"].run == "smollm2" and table["a"].run is None
    with pytest.raises(ValueError, match="not headline checks"):
        annotate(_specs(), headline=("a",), run={"b": "smollm2"})  # only a headline check is read elsewhere
    with pytest.raises(ValueError, match="zz"):
        annotate(_specs(), headline=("a",), run={"zz": "smollm2"})
    for bad in ("a/b", "..", "", "x y"):
        with pytest.raises(ValueError, match="folder name"):
            CheckSpec("x", "x", ">", 0.0, "ours", "r", run=bad)


def _lm_run(values_h, values_lm):
    """A further run of three seeds measuring the main result's headline h and a second headline lm."""
    seeds = []
    for s, (h, lm) in enumerate(zip(values_h, values_lm)):
        r = _seed_result(s, h)
        r["claim"]["checks"].append(dict(r["claim"]["checks"][0], id="lm", name="lm", value=lm, passed=lm >= 0.0))
        r["config"] = {"steps": 1, "lm": True}
        seeds.append(r)
    return aggregate_results(seeds)


def test_a_headline_check_read_in_its_further_run_decides_the_papers_claim(aggregate):
    from icml26.budgets import claim_across_runs, with_headline_runs

    main = copy.deepcopy(aggregate)  # measures h only (held)
    read_in = {"lm": "smollm2"}
    assert with_headline_runs(main, {}, {}) is main
    # the further run holds lm: supported, and the reason says where lm was read
    held = _lm_run([1.0, 1.1, 1.2], [1.0, 1.2, 0.9])
    status, reason = claim_across_runs(main, {"smollm2": held}, read_in)
    assert status == "supported" and "lm from smollm2 (3 seeds)" in reason
    merged = with_headline_runs(main, {"smollm2": held}, read_in)
    assert [c["id"] for c in merged["claim"]["checks"]] == ["h", "lm"]
    assert merged["claim"]["checks"][1]["read_in"] == "smollm2"
    assert main["claim"]["checks"] == aggregate["claim"]["checks"]  # the main result itself is not changed
    # ... does not hold there: the paper's claim is refuted though the main result's own headline held
    failed = _lm_run([1.0, 1.1, 1.2], [-1.0, -1.2, -0.9])
    status, reason = claim_across_runs(main, {"smollm2": failed}, read_in)
    assert status == "refuted" and reason.startswith("headline not held: lm")
    # ... is not committed, or does not measure lm: never supported on the main result's checks alone
    status, reason = claim_across_runs(main, {}, read_in)
    assert status == "inconclusive" and "lm (its further run smollm2 is not committed)" in reason
    without = copy.deepcopy(failed)
    without["claim"]["checks"] = [c for c in without["claim"]["checks"] if c["id"] != "lm"]
    assert "lm (its further run smollm2 does not measure it)" in claim_across_runs(main, {"smollm2": without},
                                                                                   read_in)[1]
    # a main result refuted by its own headline stays refuted, naming the unread check too
    refuted = aggregate_results([_seed_result(0, -1.0), _seed_result(1, -1.2), _seed_result(2, -0.9)])
    status, reason = claim_across_runs(refuted, {}, read_in)
    assert status == "refuted" and "headline not measured: lm" in reason
    # a check the main result measures keeps the main reading
    own = with_headline_runs(main, {"smollm2": failed}, {"h": "smollm2"})
    assert own["claim"]["checks"] == main["claim"]["checks"] and own["claim"]["status"] == "supported"


def test_the_summary_table_decides_with_a_headline_read_in_a_further_run(aggregate, monkeypatch):
    import icml26.budgets
    from icml26.results import _summary_table

    monkeypatch.setattr(icml26.budgets, "headline_runs", lambda key: {"lm": "smollm2"} if key == "zz" else {})
    failed = _lm_run([1.0, 1.1, 1.2], [-1.0, -1.2, -0.9])
    row = [line for line in _summary_table({"zz": aggregate}, {"zz": {"smollm2": failed}}).splitlines()
           if line.startswith("| [zz]")][0]
    assert "❌ refuted" in row and "| lm |" in row  # decided by lm, read in smollm2
    assert "❔ inconclusive" in _summary_table({"zz": aggregate}, {})


def test_the_summary_table_says_at_how_many_budgets_the_claim_was_read(aggregate):
    from icml26.results import _summary_table

    main = copy.deepcopy(aggregate)
    main["claim"]["checks"][0]["budget"] = "steps"
    assert "✅ supported (one budget)" in _summary_table({"zz": main})
    same = aggregate_results([_seed_result(0, 1.0), _seed_result(1, 1.1), _seed_result(2, 1.3)])
    same["config"] = {"steps": 3}
    assert "✅ supported (two budgets)" in _summary_table({"zz": main}, {"zz": {"budget_x3": same}})
    # the same side at the larger budget but unresolved there: still read at two budgets
    wide = aggregate_results([_seed_result(0, 0.2), _seed_result(1, -0.1), _seed_result(2, 0.5)])
    wide["config"] = {"steps": 3}
    assert "✅ supported (two budgets)" in _summary_table({"zz": main}, {"zz": {"budget_x3": wide}})
