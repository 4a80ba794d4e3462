"""Preconditions (``CheckSpec.requires``): a check whose premise did not hold is gated, not scored.

E.g. curvature's tiny-model correlations mean nothing when that model does not beat its bigram; a
"not held" there would be read as evidence against the paper. These tests pin the rule at each
place a verdict is read: a run's own claim, the aggregate over seeds, validation, the report.
"""

from __future__ import annotations

import copy
import json

import pytest

from icml26.aggregate import aggregate_results, claim_status, effective_verdict, gate, role_counts
from icml26.contract import CheckSpec, annotate, declare
from icml26.report import checks_table, counts_text, verdict_table
from icml26.results import ResultError, config_hash, validate
from icml26.runner import claim_block


def _table():
    return annotate(declare(
        CheckSpec("beats_bigram", "model loss below its bigram's", ">=", 0.1, "ours", "precondition"),
        CheckSpec("effect", "the effect", ">=", 0.0, "ours", "r"),
        CheckSpec("other", "an unconditioned check", ">=", 0.0, "ours", "r"),
    ), headline=("effect",), diagnostic=("beats_bigram",), requires={"effect": ("beats_bigram",)})


def test_requires_is_validated_where_it_is_declared():
    assert _table()["effect"].requires == ("beats_bigram",)
    assert CheckSpec("x", "x", ">", 0.0, "ours", "r", requires="y").requires == ("y",)
    with pytest.raises(ValueError, match="itself"):
        CheckSpec("x", "x", ">", 0.0, "ours", "r", requires=("x",))
    with pytest.raises(ValueError, match="undeclared check"):
        declare(CheckSpec("x", "x", ">", 0.0, "ours", "r", requires=("nope",)))
    with pytest.raises(ValueError, match="preconditions of its own"):
        declare(CheckSpec("a", "a", ">", 0.0, "ours", "r", requires=("b",)),
                CheckSpec("b", "b", ">", 0.0, "ours", "r", requires=("c",)),
                CheckSpec("c", "c", ">", 0.0, "ours", "r"))
    with pytest.raises(ValueError, match="requires names undeclared"):
        annotate(_table(), requires={"zz": ("effect",)})


def _run_checks(bigram_margin: float, effect: float) -> list[dict]:
    t = _table()
    return [t["beats_bigram"].measure(bigram_margin).to_dict(), t["effect"].measure(effect).to_dict(),
            t["other"].measure(-1.0).to_dict()]


def test_a_run_whose_precondition_fails_gates_the_check_and_leaves_the_claim_open():
    claim = claim_block("t", _run_checks(-0.13, -0.5))          # the model does not beat its bigram
    effect = claim["checks"][1]
    assert effect["passed"] is False and effect["gated_by"] == ["beats_bigram"]
    assert effective_verdict(effect) == "gated"
    assert claim["status"] == "inconclusive" and "gated" in claim["reason"]  # not "refuted"
    assert claim["counts"]["headline"] == {"held": 0, "not held": 0, "unresolved": 0, "gated": 1}
    assert "gated" not in claim["counts"]["supporting"]          # the count appears only where used


def test_a_run_whose_precondition_holds_scores_the_check_as_usual():
    claim = claim_block("t", _run_checks(0.3, -0.5))
    assert "gated_by" not in claim["checks"][1]
    assert claim["status"] == "refuted"
    claim = claim_block("t", _run_checks(0.3, 0.5))
    assert claim["status"] == "supported"


def test_gate_is_idempotent_and_drops_a_stale_mark():
    checks = _run_checks(-0.13, 0.5)
    gate(checks)
    assert checks[1]["gated_by"] == ["beats_bigram"]
    checks[0].update(value=0.2, passed=True)
    gate(gate(checks))
    assert "gated_by" not in checks[1]
    missing = [c for c in _run_checks(0.3, 0.5) if c["id"] != "beats_bigram"]
    assert gate(missing)[0]["gated_by"] == ["beats_bigram"]      # an unmeasured precondition does not hold


def _seed(seed: int, margin: float, effect: float) -> dict:
    return {"schema": 3, "paper": "zz", "quick": True, "setting": "quick", "seed": seed, "config": {"steps": 1},
            "metrics": {"m": {"x": effect}}, "claim": claim_block("t", _run_checks(margin, effect)),
            "curves": {}, "figures": [], "notes": [],
            "provenance": {"icml26": "0", "python": "3", "numpy": "2", "torch": "2", "platform": "p", "threads": 1,
                           "device": "cpu", "wall_time_s": 1.0, "utc": "u"}}


def _aggregate(margins, effects):
    data = aggregate_results([_seed(i, m, e) for i, (m, e) in enumerate(zip(margins, effects))],
                             declared=_table())
    data["config_hash"] = config_hash("zz", "quick", data["config"])
    return data


def test_the_aggregate_gates_on_the_preconditions_aggregate_verdict():
    # the effect's interval is far below 0 (it would be "not held"), but the model never beat its bigram
    data = _aggregate([-0.13, -0.14, -0.12], [-0.5, -0.6, -0.55])
    validate(data)
    effect = next(c for c in data["claim"]["checks"] if c["id"] == "effect")
    assert effect["verdict"] == "not held" and effect["gated_by"] == ["beats_bigram"]
    assert data["claim"]["status"] == "inconclusive"
    # the same effect behind a precondition that holds refutes the claim
    held = _aggregate([0.3, 0.35, 0.32], [-0.5, -0.6, -0.55])
    validate(held)
    assert held["claim"]["status"] == "refuted"
    # an unresolved precondition gates too: the premise is not established
    open_ = _aggregate([0.3, -0.2, 0.4], [0.5, 0.6, 0.55])
    assert next(c for c in open_["claim"]["checks"] if c["id"] == "effect")["gated_by"] == ["beats_bigram"]


@pytest.mark.parametrize("edit", [
    lambda d: d["claim"]["checks"][1].pop("gated_by"),                      # a gate dropped by hand
    lambda d: d["claim"]["checks"][2].update(gated_by=["beats_bigram"]),   # a gate added by hand
    lambda d: d["claim"]["checks"][1].update(gated_by="beats_bigram"),     # not a list
])
def test_a_hand_edited_gate_is_refused(edit):
    data = _aggregate([-0.13, -0.14, -0.12], [-0.5, -0.6, -0.55])
    edit(data)
    with pytest.raises(ResultError, match="gated_by"):
        validate(json.loads(json.dumps(data)))


def test_the_report_shows_a_gated_check_as_gated():
    data = _aggregate([-0.13, -0.14, -0.12], [-0.5, -0.6, -0.55])
    assert "⏸ gated (requires beats_bigram)" in checks_table(data)
    assert "[GATED]" in verdict_table(data)
    assert "headline 0/1 (1 gated)" in counts_text(data)
    one = copy.deepcopy(_seed(0, -0.13, -0.5))
    assert "⏸ gated" in checks_table(one) and "[GATED]" in verdict_table(one)


def test_role_counts_without_gates_keep_their_shape():
    checks = _run_checks(0.3, 0.5)
    gate(checks)
    assert set(role_counts(checks)["headline"]) == {"held", "not held", "unresolved"}
    assert claim_status(checks)[0] == "supported"
