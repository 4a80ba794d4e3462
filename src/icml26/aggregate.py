"""Verdicts from several seeds: per-metric statistics, per-check intervals, one verdict rule.

A sweep (``icml26 run KEY --seeds 0-4``) keeps every seed's full result and writes their
aggregate as the paper's ``result.json``. For each metric of each arm the aggregate holds the
mean, the standard deviation (``ddof=1``), ``n`` and a two-sided 95 % confidence interval for
the mean from Student's t over seeds::

    mean ± t_{0.975, n-1} · sd / √n

A check's value is computed within one seed (a difference or ratio of two arms measured on the
same seed and data), so its interval over seeds is the **paired** interval of that comparison.

**The verdict rule** (one for every paper, printed in the report):

* *held* when the check's 95 % interval lies entirely on the holding side of the target
  (for ``value >= target``: the lower end ``>= target``; for ``abs(value) <= target``: the
  whole interval inside ``[-target, target]``);
* *not held* when it lies entirely on the other side;
* *unresolved* when the interval contains the target: the seeds do not decide it.

With one seed there is no interval; the verdict is the single value's. A seed on which the
check was not measured (NaN) does not count towards ``n``; with no measured seed the check is
not held.

**Units of replication.** A paper whose run holds several independent draws (its ``claims.py``
``REPLICATION``, e.g. hamu's forget-set draws) measures those checks per draw
(``measure(value, units=[...])``); the interval is then over every seed's draws pooled, and ``n``
counts draws. Each aggregated check records its ``half_width`` and, when unresolved,
``n_to_resolve``: the number of units that would bring the interval off the target if the mean
and spread stayed as observed.

**Preconditions.** A check may declare the checks it ``requires`` (e.g. "the model beats its
bigram" before a representation effect is read off that model). When one of them does not hold,
the check is *gated* (:func:`gate` records ``gated_by``): its value and interval are reported, but
it counts as neither held nor not held, since its premise failed. A gated headline check leaves the
claim inconclusive.

**The claim.** Only *headline* checks (``role="headline"``, the abstract's central claim) decide
it: **supported** when every headline check holds, **refuted** when one does not hold,
**inconclusive** otherwise (:func:`claim_status`). Supporting checks are scored and counted;
diagnostics are reported and never scored.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from icml26.common.stats import t_half_width, t_interval
from icml26.contract import OPS, ROLES

__all__ = [
    "CLAIM_RULE",
    "CONFIDENCE",
    "VERDICT_RULE",
    "aggregate_check",
    "aggregate_curves",
    "aggregate_results",
    "check_against_seeds",
    "check_aggregate",
    "claim_status",
    "effective_verdict",
    "failed_preconditions",
    "gate",
    "mean_interval",
    "n_to_resolve",
    "role_counts",
    "verdict",
]

CONFIDENCE = 0.95
VERDICT_RULE = (
    "A check holds when its 95% confidence interval over independent units (master seeds, or the "
    "paper's declared draws pooled over seeds; Student t, paired within each unit) lies entirely on the "
    "holding side of its target, fails when it lies entirely on the other side, and is unresolved when "
    "the interval contains the target; with one seed, the single value decides."
)
CLAIM_RULE = (
    "The claim is supported when every headline check holds, refuted when a headline check does not "
    "hold, and inconclusive otherwise; supporting checks are scored but do not decide it, diagnostics "
    "are never scored."
)


def mean_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> dict[str, float | int | None]:
    """``{"mean", "sd", "n", "ci_low", "ci_high"}`` of the finite ``values`` (t interval for the mean).

    ``sd`` uses ``ddof=1``; with ``n = 1`` the interval is the single value and ``sd`` is ``None``;
    with ``n = 0`` every statistic is ``None``.
    """
    return t_interval(values, confidence).as_dict()


def verdict(op: str, target: float, low: float | None, high: float | None) -> str:
    """``"held"``, ``"not held"`` or ``"unresolved"`` for an interval ``[low, high]`` (see the rule)."""
    if op not in OPS:
        raise ValueError(f"op={op!r} must be one of {', '.join(OPS)}")
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "not held"
    if low > high:
        raise ValueError(f"low={low} must not exceed high={high}")
    holds = OPS[op]
    if op == "abs<=":
        if -target <= low and high <= target:
            return "held"
        if low > target or high < -target:
            return "not held"
        return "unresolved"
    if op == "==":
        if low == high == target:
            return "held"
        return "not held" if (high < target or low > target) else "unresolved"
    lo_ok, hi_ok = holds(low, target), holds(high, target)
    if lo_ok and hi_ok:
        return "held"
    if not lo_ok and not hi_ok:
        return "not held"
    return "unresolved"


def n_to_resolve(op: str, target: float, mean: float | None, sd: float | None,
                 confidence: float = CONFIDENCE, limit: int = 1_000_000) -> int | None:
    """The fewest units whose t interval around ``mean`` (spread ``sd``) excludes the target.

    The planning figure for an unresolved check: with the mean and standard deviation as observed,
    ``n`` units give the half-width ``t_{(1+confidence)/2, n-1} · sd / √n``; the answer is the
    smallest ``n >= 2`` for which that is below the distance from ``mean`` to the target (for
    ``abs<=``, to the nearer end of ``[-target, target]``). ``None`` when it cannot be resolved this
    way (no spread measured, the mean on the target, ``==``, or more than ``limit`` units).
    """
    if op not in OPS:
        raise ValueError(f"op={op!r} must be one of {', '.join(OPS)}")
    if mean is None or sd is None or op == "==" or not (math.isfinite(mean) and math.isfinite(sd)):
        return None
    distance = min(abs(mean - target), abs(mean + target)) if op == "abs<=" else abs(mean - target)
    if distance == 0.0:
        return None
    if sd == 0.0:
        return 2
    def half(n: int) -> float:
        return t_half_width(sd, n, confidence)

    if half(limit) >= distance:
        return None
    lo, hi = 1, 2
    while half(hi) >= distance:  # half() falls with n: double, then bisect
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if half(mid) >= distance else (lo, mid)
    return hi


def aggregate_check(per_seed: Sequence[Mapping[str, Any]], *, role: str | None = None,
                    unit: str = "master seed") -> dict[str, Any]:
    """One check over seeds: the first seed's declaration, the mean value, its interval, the verdict.

    ``per_seed``: the check's dict from each seed's result (same id, op and target). When every
    seed's dict carries ``units`` (the values of the independent draws inside that seed), the
    interval is over the pooled draws and ``unit`` names them; otherwise it is over the seeds.
    ``role`` (default: the first seed's, else ``"supporting"``) comes from the paper's declaration.
    """
    first = per_seed[0]
    for other in per_seed[1:]:
        if (other.get("id"), other["op"], other["target"]) != (first.get("id"), first["op"], first["target"]):
            raise ValueError(f"check {first.get('id') or first['name']!r} differs between seeds")
    pooled = all(isinstance(c.get("units"), list) for c in per_seed)
    values = [u for c in per_seed for u in c["units"]] if pooled else [c.get("value") for c in per_seed]
    stats = mean_interval(values)
    rule = verdict(first["op"], first["target"], stats["ci_low"], stats["ci_high"])
    out = {k: first[k] for k in ("id", "name", "op", "target", "source", "ref") if k in first}
    half = (stats["ci_high"] - stats["mean"]) if stats["n"] and stats["mean"] is not None else None
    out.update({
        "role": role or first.get("role") or "supporting",
        "value": stats["mean"],
        "ci": [stats["ci_low"], stats["ci_high"]] if stats["n"] else None,
        "sd": stats["sd"],
        "n": stats["n"],
        "unit": unit if pooled else "master seed",
        "half_width": half,
        "n_to_resolve": (n_to_resolve(first["op"], first["target"], stats["mean"], stats["sd"])
                         if rule == "unresolved" else None),
        "held_on": int(sum(bool(c["passed"]) for c in per_seed)),
        "seeds": len(per_seed),
        "verdict": rule,
        "passed": rule == "held",
    })
    return out


def _own_verdict(c: Mapping[str, Any]) -> str:
    """The check's verdict from its own value or interval, preconditions aside."""
    return c["verdict"] if "verdict" in c else ("held" if c["passed"] else "not held")


def effective_verdict(c: Mapping[str, Any]) -> str:
    """``"gated"`` when a precondition of the check did not hold (:func:`gate`), else its own verdict
    (``"held"``, ``"not held"`` or, over seeds, ``"unresolved"``)."""
    return "gated" if c.get("gated_by") else _own_verdict(c)


def failed_preconditions(c: Mapping[str, Any], checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids among ``c``'s ``requires`` whose own verdict in ``checks`` is not *held* (a precondition
    missing from the result counts as not held)."""
    own = {(x.get("id") or x["name"]): _own_verdict(x) for x in checks}
    return [r for r in c.get("requires", ()) if own.get(r) != "held"]


def gate(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark, in place, each check whose preconditions (its ``requires``) did not all hold: ``gated_by``
    lists them, and :func:`effective_verdict` then reads ``"gated"``. A check whose preconditions hold
    loses any stale ``gated_by``. Returns ``checks``."""
    for c in checks:
        failed = failed_preconditions(c, checks)
        if failed:
            c["gated_by"] = failed
        else:
            c.pop("gated_by", None)
    return checks


def role_counts(checks: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{role: {"held", "not held", "unresolved"}}`` over a result's checks (a missing role counts as
    ``supporting``), with a ``"gated"`` count in a role only where a check of it is gated."""
    counts = {r: {"held": 0, "not held": 0, "unresolved": 0} for r in ROLES}
    for c in checks:
        role = counts[c.get("role") or "supporting"]
        v = effective_verdict(c)
        role[v] = role.get(v, 0) + 1
    return counts


def _describe(c: Mapping[str, Any]) -> str:
    value = c.get("value")
    text = f"{c.get('id') or c['name']} " + ("not measured" if value is None else f"{value:.4g}")
    ci = c.get("ci")
    if ci and c.get("n", 0) >= 2:
        text += f" [{ci[0]:.4g}, {ci[1]:.4g}]"
    return text + f" vs {c['op']} {c['target']:g}"


def claim_status(checks: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """``(status, reason)`` of a claim from its checks' verdicts (the rule is :data:`CLAIM_RULE`).

    ``status`` is ``"supported"``, ``"refuted"`` or ``"inconclusive"``; ``reason`` is one line
    naming the headline checks that decided it.
    """
    headline = [c for c in checks if c.get("role") == "headline"]
    if not headline:
        return "inconclusive", "no headline check is measured in this run, so nothing in it decides the claim"
    failed = [c for c in headline if effective_verdict(c) == "not held"]
    if failed:
        return "refuted", "headline not held: " + "; ".join(_describe(c) for c in failed)
    gated = [c for c in headline if effective_verdict(c) == "gated"]
    gated_text = "gated (a precondition did not hold): " + "; ".join(
        _describe(c) + f" (requires {', '.join(c['gated_by'])})" for c in gated)
    open_ = [c for c in headline if effective_verdict(c) == "unresolved"]
    if open_:
        parts = []
        for c in open_:
            need = c.get("n_to_resolve")
            unit = c.get("unit", "master seed")
            parts.append(_describe(c) + f" (n = {c.get('n')} {unit}s; "
                         + (f"about {need} would resolve it at this spread)" if need else "more units alone would "
                            "not resolve it at this mean)"))
        return "inconclusive", "headline unresolved: " + "; ".join(parts) + (f"; {gated_text}" if gated else "")
    if gated:
        return "inconclusive", f"headline {gated_text}"
    return "supported", "every headline check held: " + "; ".join(_describe(c) for c in headline)


def aggregate_curves(curves_per_seed: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Mean curves with 95 % bands (``"bands": {arm: [lower, upper]}``) where every seed has the
    same ``x`` and arms; the other curves are dropped and named in the second return value."""
    out: dict[str, Any] = {}
    dropped: list[str] = []
    for name, first in curves_per_seed[0].items():
        group = [c.get(name) for c in curves_per_seed]
        if any(g is None or g.get("x") != first["x"] or set(g["series"]) != set(first["series"]) for g in group):
            dropped.append(name)
            continue
        series, bands = {}, {}
        for arm in first["series"]:
            rows = [[np.nan if v is None else float(v) for v in g["series"][arm]] for g in group]
            cols = list(zip(*rows)) if rows and rows[0] else []
            stats = [mean_interval(col) for col in cols]
            series[arm] = [s["mean"] for s in stats]
            bands[arm] = [[s["ci_low"] for s in stats], [s["ci_high"] for s in stats]]
        out[name] = {**first, "series": series}
        if len(group) > 1:
            out[name]["bands"] = bands
    return out, dropped


def aggregate_results(results: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]] = (), *,
                      declared: Mapping[str, Any] | None = None, unit: str = "master seed") -> dict[str, Any]:
    """The aggregate ``result.json`` of several seeds' results (same paper, setting and config).

    ``failed``: ``[{"seed", "error"}]`` for seeds that crashed; they are recorded, not counted.
    ``declared``: the paper's ``{id: CheckSpec}``; each check's role comes from it (else from the
    seeds' results). ``unit``: what a pooled unit is (the paper's ``REPLICATION.unit``), used for
    checks whose seeds carry per-unit values.
    """
    if not results:
        raise ValueError("no seed finished: nothing to aggregate")
    first = results[0]
    for r in results[1:]:
        for field in ("paper", "setting", "config"):
            if r[field] != first[field]:
                raise ValueError(f"seeds disagree on {field!r}: cannot aggregate")
    seeds = [int(r["seed"]) for r in results]
    metric_stats: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, float]] = {}
    for arm, values in first["metrics"].items():
        metric_stats[arm], metrics[arm] = {}, {}
        for name in values:
            stats = mean_interval(r["metrics"].get(arm, {}).get(name) for r in results)
            metric_stats[arm][name] = stats
            if stats["mean"] is not None:
                metrics[arm][name] = stats["mean"]
        if not metrics[arm]:
            del metrics[arm]
    checks = []
    ids = [c.get("id") or c["name"] for c in first["claim"]["checks"]]
    for key in ids:
        per_seed = [next(c for c in r["claim"]["checks"] if (c.get("id") or c["name"]) == key) for r in results]
        spec = (declared or {}).get(key)
        checks.append(aggregate_check(per_seed, role=getattr(spec, "role", None), unit=unit))
        budget = getattr(spec, "budget", None) if spec is not None else per_seed[0].get("budget")
        if budget:  # the training-budget field the report reads a further run's budget from
            checks[-1]["budget"] = budget
        requires = tuple(spec.requires) if spec is not None else tuple(per_seed[0].get("requires", ()))
        if requires:
            checks[-1]["requires"] = list(requires)
    gate(checks)  # preconditions read at the aggregate's verdicts, not per seed
    curves, dropped = aggregate_curves([r["curves"] for r in results])
    notes = [f"Aggregate of {len(results)} seed(s) {seeds}. {VERDICT_RULE}"]
    if failed:
        notes.append("Seeds that failed and are not counted: "
                     + "; ".join(f"{f['seed']} ({f['error']})" for f in failed))
    if dropped:
        notes.append(f"Curves not averaged (they differ between seeds; see each seed's result): {', '.join(dropped)}")
    notes += [f"seed {seeds[0]}: {n}" for n in first.get("notes", [])]
    prov = dict(first["provenance"])
    prov["wall_time_s"] = round(sum(r["provenance"]["wall_time_s"] for r in results), 3)
    prov["seed_wall_times_s"] = {str(r["seed"]): r["provenance"]["wall_time_s"] for r in results}
    stages = [r["provenance"].get("stage_seconds") for r in results]
    prov.pop("stage_seconds", None)
    if stages and all(stages):  # summed over the seeds, as wall_time_s is (a seed without them: none)
        names = list(dict.fromkeys(name for s in stages for name in s))
        prov["stage_seconds"] = {name: round(sum(s.get(name, 0.0) for s in stages), 3) for name in names}
    status, reason = claim_status(checks)
    out = {
        "schema": max(int(first["schema"]), 3),
        "paper": first["paper"],
        "quick": first["quick"],
        "setting": first["setting"],
        "seed": seeds[0],
        "seeds": seeds,
        "failed_seeds": [dict(f) for f in failed],
        "config": first["config"],
        "metrics": metrics,
        "metric_stats": metric_stats,
        "claim": {"text": first["claim"]["text"], "checks": checks, "rule": VERDICT_RULE,
                  "claim_rule": CLAIM_RULE, "status": status, "reason": reason, "counts": role_counts(checks),
                  "passed": status == "supported"},
        "curves": curves,
        "figures": [],
        "notes": notes,
        "provenance": prov,
    }
    for field in ("arms", "config_hash"):
        if field in first:
            out[field] = first[field]
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def check_aggregate(data: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first field of an aggregate (a result with ``seeds``) that its
    own numbers contradict, so that a hand-edited aggregate cannot claim more than its seeds gave.

    Checked: the seed list (distinct) against ``failed_seeds`` (disjoint) and every count (``held_on`` and
    a check's ``seeds`` within the list; ``n`` within it when the unit is the master seed);
    ``metric_stats`` against ``metrics`` (equal means, ``n`` within the seeds); each aggregated check's
    interval against its mean, ``sd`` and ``n`` (the t interval), and its ``half_width``.
    The verdict and the claim status are recomputed by :func:`icml26.results.validate`.
    """
    seeds = data["seeds"]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"field 'seeds' lists a seed twice: {seeds}")
    failed = data.get("failed_seeds", [])
    if not isinstance(failed, list) or not all(
            isinstance(f, Mapping) and _is_count(f.get("seed")) and isinstance(f.get("error"), str) for f in failed):
        raise ValueError("field 'failed_seeds' must be a list of {seed: non-negative integer, error: text}")
    both = sorted({f["seed"] for f in failed} & set(seeds))
    if both:
        raise ValueError(f"field 'failed_seeds' names seed(s) {both} that 'seeds' counts")
    stats = data.get("metric_stats", {})
    if not isinstance(stats, Mapping):
        raise ValueError("field 'metric_stats' must be an object")
    for arm, by_metric in stats.items():
        if not isinstance(by_metric, Mapping):
            raise ValueError(f"field 'metric_stats.{arm}' must be an object")
        for metric, st in by_metric.items():
            where = f"field 'metric_stats.{arm}.{metric}'"
            if not isinstance(st, Mapping) or not _is_count(st.get("n")) or st["n"] > len(seeds):
                raise ValueError(f"{where} needs a count 'n' of at most {len(seeds)} seeds")
            for name in ("mean", "sd", "ci_low", "ci_high"):
                if st.get(name) is not None and not _is_num(st[name]):
                    raise ValueError(f"{where}.{name}' must be a finite number or null")
            reported = data["metrics"].get(arm, {}).get(metric)
            if (st.get("mean") is None) != (reported is None) or (
                    reported is not None and not _close(reported, st["mean"])):
                raise ValueError(f"{where}.mean' is {st.get('mean')} but 'metrics.{arm}.{metric}' is {reported}")
    for i, c in enumerate(data["claim"]["checks"]):
        if "verdict" not in c:
            continue
        where = f"field 'claim.checks[{i}]"
        for name in ("held_on", "seeds", "n"):
            if not _is_count(c.get(name)):
                raise ValueError(f"{where}.{name}' must be a non-negative integer")
        if c["seeds"] != len(seeds) or c["held_on"] > c["seeds"]:
            raise ValueError(f"{where}' counts held_on {c['held_on']} of {c['seeds']} seeds; the result lists "
                             f"{len(seeds)} seeds")
        if c.get("unit", "master seed") == "master seed" and c["n"] > len(seeds):
            raise ValueError(f"{where}.n' is {c['n']} master seeds but the result lists {len(seeds)}")
        for name in ("sd", "half_width"):
            if c.get(name) is not None and (not _is_num(c[name]) or c[name] < 0):
                raise ValueError(f"{where}.{name}' must be a non-negative number or null")
        if c.get("n_to_resolve") is not None and not _is_count(c["n_to_resolve"]):
            raise ValueError(f"{where}.n_to_resolve' must be a non-negative integer or null")
        for name in ("unit", "budget"):
            if name in c and not isinstance(c[name], str):
                raise ValueError(f"{where}.{name}' must be a string")
        value, ci, sd, n = c.get("value"), c.get("ci"), c.get("sd"), c["n"]
        if value is None or ci is None:
            continue
        half = t_half_width(sd, n, CONFIDENCE) if (n >= 2 and sd is not None) else 0.0
        if n >= 2 and sd is None:
            raise ValueError(f"{where}.sd' is missing for a mean of {n} units")
        if not (_close(ci[0], value - half) and _close(ci[1], value + half)):
            raise ValueError(f"{where}.ci' {ci} is not the {CONFIDENCE:.0%} t interval of its mean {value}, "
                             f"sd {sd} and n {n}")
        if c.get("half_width") is not None and not _close(c["half_width"], half):
            raise ValueError(f"{where}.half_width' is {c['half_width']}, its interval gives {half}")


def check_against_seeds(data: Mapping[str, Any], per_seed: Mapping[int, Mapping[str, Any]]) -> None:
    """Raise ``ValueError`` when an aggregate disagrees with its seeds' own results (``per_seed``: seed
    -> result, those kept beside it): every listed seed must be there, and each check's mean, interval
    and held-on count must be what :func:`aggregate_check` gives over them."""
    missing = [s for s in data["seeds"] if s not in per_seed]
    if missing:
        raise ValueError(f"field 'seeds' lists seed(s) {missing} with no result in seeds/")
    results = [per_seed[s] for s in data["seeds"]]
    for i, c in enumerate(data["claim"]["checks"]):
        if "verdict" not in c:
            continue
        key = c.get("id") or c["name"]
        try:
            mine = [next(x for x in r["claim"]["checks"] if (x.get("id") or x["name"]) == key) for r in results]
        except StopIteration:
            raise ValueError(f"check {key!r} is missing from a seed's result") from None
        again = aggregate_check(mine)
        for name in ("value", "held_on", "n"):
            a, b = c.get(name), again[name]
            if (a is None) != (b is None) or (a is not None and not _close(a, b)):
                raise ValueError(f"field 'claim.checks[{i}].{name}' ({key}) is {a}; its seeds give {b}")
