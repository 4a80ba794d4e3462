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
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from icml26.contract import OPS

__all__ = [
    "CONFIDENCE",
    "VERDICT_RULE",
    "aggregate_check",
    "aggregate_curves",
    "aggregate_results",
    "mean_interval",
    "verdict",
]

CONFIDENCE = 0.95
VERDICT_RULE = (
    "A check holds when its 95% confidence interval over seeds (Student t, paired within each seed) "
    "lies entirely on the holding side of its target, fails when it lies entirely on the other side, "
    "and is unresolved when the interval contains the target; with one seed, the single value decides."
)


def mean_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> dict[str, float | int | None]:
    """``{"mean", "sd", "n", "ci_low", "ci_high"}`` of the finite ``values`` (t interval for the mean).

    ``sd`` uses ``ddof=1``; with ``n = 1`` the interval is the single value and ``sd`` is ``None``;
    with ``n = 0`` every statistic is ``None``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return {"mean": None, "sd": None, "n": 0, "ci_low": None, "ci_high": None}
    mean = float(x.mean())
    if n == 1:
        return {"mean": mean, "sd": None, "n": 1, "ci_low": mean, "ci_high": mean}
    from scipy import stats

    sd = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))
    return {"mean": mean, "sd": sd, "n": n, "ci_low": mean - half, "ci_high": mean + half}


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


def aggregate_check(per_seed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One check over seeds: the first seed's declaration, the mean value, its interval, the verdict.

    ``per_seed``: the check's dict from each seed's result (same id, op and target).
    """
    first = per_seed[0]
    for other in per_seed[1:]:
        if (other.get("id"), other["op"], other["target"]) != (first.get("id"), first["op"], first["target"]):
            raise ValueError(f"check {first.get('id') or first['name']!r} differs between seeds")
    stats = mean_interval(c.get("value") for c in per_seed)
    rule = verdict(first["op"], first["target"], stats["ci_low"], stats["ci_high"])
    out = {k: first[k] for k in ("id", "name", "op", "target", "source", "ref") if k in first}
    out.update({
        "value": stats["mean"],
        "ci": [stats["ci_low"], stats["ci_high"]] if stats["n"] else None,
        "sd": stats["sd"],
        "n": stats["n"],
        "held_on": int(sum(bool(c["passed"]) for c in per_seed)),
        "seeds": len(per_seed),
        "verdict": rule,
        "passed": rule == "held",
    })
    return out


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


def aggregate_results(results: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The aggregate ``result.json`` of several seeds' results (same paper, setting and config).

    ``failed``: ``[{"seed", "error"}]`` for seeds that crashed; they are recorded, not counted.
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
        checks.append(aggregate_check(per_seed))
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
    return {
        "schema": first["schema"],
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
                  "passed": bool(checks) and all(c["passed"] for c in checks)},
        "curves": curves,
        "figures": [],
        "notes": notes,
        "provenance": prov,
    }
