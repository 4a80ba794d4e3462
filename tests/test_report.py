"""The generated report's wording (``icml26.report``)."""

from __future__ import annotations


def test_the_report_names_pooled_units_in_the_plural():
    from icml26.report import _plural, _units_of

    assert [_plural(u) for u in ("prefix", "draw", "game", "batch")] == ["prefixes", "draws", "games", "batches"]
    assert _plural("seed × game (fraction checks; the others: master seed)") == \
        "seed × games (fraction checks; the others: master seed)"
    data = {"seeds": [0, 1, 2], "claim": {"checks": [{"unit": "prefix", "n": 900}, {"unit": "master seed", "n": 3}]}}
    assert _units_of(data) == "3 seeds × prefixes (n = 900)"
