"""A paper's claim read across its runs: a headline check measured in a further run, and a headline
comparison of trained models read at two training budgets.

A headline check too costly for the main setting declares the further run that measures it
(:attr:`icml26.contract.CheckSpec.run`); the paper's claim is decided with that run's reading
(:func:`with_headline_runs`). A check that compares trained models declares its budget field; a further
run ``budget_x<k>`` of the same paper at >= 3x that field is its second reading
(:func:`claim_across_budgets`). :func:`claim_across_runs` applies both.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from icml26.aggregate import claim_status as _claim_status
from icml26.aggregate import effective_verdict as _effective_verdict
from icml26.aggregate import role_counts as _role_counts
from icml26.contract import OPS as _OPS
from icml26.results import _is_number

__all__ = ["BUDGET_FACTOR", "BUDGET_RUN", "budget_checks", "budget_runs", "claim_across_budgets",
           "claim_across_runs", "headline_runs", "with_headline_runs"]


BUDGET_RUN = re.compile(r"budget_x(\d+)")
#: A further run counts as the second budget when it trains at least this many times longer.
BUDGET_FACTOR = 3


def budget_runs(data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The further runs named ``budget_x<k>`` that repeat ``data``'s setting and configuration with at
    least one declared budget field at >= 3x its value (every other field equal, the budget fields
    never smaller). Which checks a run may be read for: :func:`budget_checks`."""
    fields = {c["budget"] for c in data["claim"]["checks"] if c.get("budget")}
    if not fields:
        return {}
    found = {}
    for name, run in runs.items():
        if not BUDGET_RUN.fullmatch(name) or run["setting"] != data["setting"]:
            continue
        base, more = data["config"], run["config"]
        if set(base) != set(more) or any(base[k] != more[k] for k in base if k not in fields):
            continue  # something besides the budget changed: not the same comparison at another budget
        if any(not (_is_number(base.get(f)) and _is_number(more.get(f)) and more[f] >= base[f]) for f in fields):
            continue
        if any(base[f] > 0 and more[f] >= BUDGET_FACTOR * base[f] for f in fields):
            found[name] = run
    return found


def budget_checks(data: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """The ids of ``data``'s budget checks whose own budget field is >= 3x larger in ``run``."""
    out = []
    for c in data["claim"]["checks"]:
        f = c.get("budget")
        base, more = data["config"].get(f), run["config"].get(f)
        if f and _is_number(base) and _is_number(more) and base > 0 and more >= BUDGET_FACTOR * base:
            out.append(c.get("id"))
    return out


def claim_across_budgets(data: Mapping[str, Any],
                         runs: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """``(status, reason)`` of the claim read at two training budgets.

    A headline check that compares trained models declares its budget field; a further run
    ``budget_x<k>`` at >= 3x that field (the configuration otherwise equal) is its second reading. The
    claim is **budget-dependent** when the larger budget changes the claim's status through such a
    check: a check's verdict flips (held <-> not held) or its mean crosses the target. A flip that
    leaves the status as it was (a claim refuted by another check at both budgets) is named in the
    reason, not promoted. A headline budget check with no second reading gets "(one budget only)"."""
    claim = data["claim"]
    status = claim.get("status") or _claim_status(claim["checks"])[0]
    reason = claim.get("reason") or _claim_status(claim["checks"])[1]
    headline_budget = [c for c in claim["checks"] if c.get("role") == "headline" and c.get("budget")]
    if not headline_budget:
        return status, reason
    larger = budget_runs(data, runs)
    read = {c.get("id") for name, run in larger.items() for c in headline_budget
            if c.get("id") in budget_checks(data, run)}
    unread = sorted({c["budget"] for c in headline_budget if c.get("id") not in read})
    if not read:
        return status, reason + " (one budget only: no further run at >= 3x " + ", ".join(unread) + ")"
    flips, same_side, missing, dependent = [], [], [], False
    for name, run in sorted(larger.items()):
        ids = set(budget_checks(data, run))
        other = {c.get("id"): c for c in run["claim"]["checks"]}
        swapped = []
        for c in claim["checks"]:
            o = other.get(c.get("id"))
            if c.get("role") == "headline" and c.get("id") in ids and o is not None:
                swapped.append(o)
            else:
                swapped.append(c)
        for c in headline_budget:
            if c.get("id") not in ids:
                continue
            o = other.get(c.get("id"))
            if o is None:
                missing.append(f"{c.get('id')} ({name})")
                continue
            mine, theirs = _effective_verdict(c), _effective_verdict(o)
            if mine == theirs:
                continue
            where = (f"{c.get('id')} {mine} at {c['budget']}={data['config'].get(c['budget'])}, {theirs} at "
                     f"{run['config'].get(c['budget'])} ({name})")
            opposite = {mine, theirs} == {"held", "not held"}
            crossed = _holds(c.get("value"), c) != _holds(o.get("value"), o)
            (flips if (opposite or crossed) else same_side).append(where)
        if _claim_status(swapped)[0] != status and any(w.endswith(f"({name})") for w in flips):
            dependent = True
    notes = []
    if flips and not dependent:
        notes.append("a headline check changes with the budget but the claim's status does not: " + "; ".join(flips))
    if same_side:
        notes.append("same side of the target at both budgets, resolved at only one: " + "; ".join(same_side))
    if missing:
        notes.append("not measured at the larger budget: " + ", ".join(missing))
    if unread:
        notes.append("one budget only for " + ", ".join(unread))
    if dependent:
        return "budget-dependent", "the verdict changes with the training budget: " + "; ".join(flips)
    if not notes:
        notes.append(f"the same at the larger budget: {', '.join(sorted(larger))}")
    return status, reason + " (" + "; ".join(notes) + ")"


def _holds(value: Any, c: Mapping[str, Any]) -> bool | None:
    return None if value is None else bool(_OPS[c["op"]](value, c["target"]))


def headline_runs(key: str) -> dict[str, str]:
    """``{check id: further run}`` of paper ``key``'s headline checks read in a further run
    (:attr:`~icml26.contract.CheckSpec.run`); empty for a paper the registry does not know."""
    from icml26 import registry

    spec = registry.PAPERS.get(key)
    if spec is None:
        return {}
    return {i: c.run for i, c in spec.load_claims().items() if c.role == "headline" and c.run}


def with_headline_runs(data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]],
                       read_in: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``data`` (a paper's main result) with each headline check it does not measure read in the further
    run that declares it (``read_in``: ``{check id: run name}``, by default :func:`headline_runs`), and its
    claim's status, reason and counts recomputed over the checks so completed.

    A check the main result measures keeps the main reading. One whose run is not committed, or which the
    run does not measure, stays unread: the claim cannot then be *supported* (it becomes inconclusive,
    naming the check), though another headline check may still refute it. ``data`` unchanged (the same
    object) when nothing is declared."""
    read_in = headline_runs(data["paper"]) if read_in is None else dict(read_in)
    if not read_in:
        return data  # type: ignore[return-value]
    checks = [dict(c) for c in data["claim"]["checks"]]
    where = {c.get("id"): k for k, c in enumerate(checks)}
    read, unread = [], []
    for cid, name in read_in.items():
        k = where.get(cid)
        if k is not None and checks[k].get("value") is not None:
            continue  # measured where the claim is stated
        run = runs.get(name)
        other = None if run is None else next((c for c in run["claim"]["checks"] if c.get("id") == cid), None)
        if other is None or other.get("value") is None:
            unread.append(f"{cid} (its further run {name} " + ("is not committed)" if run is None
                                                                 else "does not measure it)"))
            continue
        c = {**other, "role": "headline", "read_in": name}
        if k is None:
            checks.append(c)
        else:
            checks[k] = c
        units = run.get("seeds")
        read.append(f"{cid} from {name}" + (f" ({len(units)} seeds)" if isinstance(units, list) else ""))
    status, reason = _claim_status(checks)
    if unread and status == "supported":
        status, reason = "inconclusive", "headline not measured: " + "; ".join(unread) + "; the others held"
    elif unread:
        reason += "; headline not measured: " + "; ".join(unread)
    if read:
        reason += " [read in further runs: " + "; ".join(read) + "]"
    claim = {**data["claim"], "checks": checks, "status": status, "reason": reason, "counts": _role_counts(checks)}
    return {**data, "claim": claim}


def claim_across_runs(data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]],
                      read_in: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(status, reason)`` of a paper's claim: its headline checks completed from their further runs
    (:func:`with_headline_runs`), then read at two budgets (:func:`claim_across_budgets`)."""
    return claim_across_budgets(with_headline_runs(data, runs, read_in), runs)
