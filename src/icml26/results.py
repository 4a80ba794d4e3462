"""Result files and the report built from them.

A run writes ``<out>/<key>/result.json`` (plus PNG plots beside it). Its fields:

``schema``      version of this layout (an int)
``paper``       the paper key
``quick``       whether the quick (CPU) setting produced it; ``setting`` says which
``setting``     ``"full"``, ``"quick"`` or ``"tiny"``
``seed``        the seed
``config``      every config field that produced it
``metrics``     ``{arm: {metric: number}}`` — the method and each baseline by name
``claim``       ``{"text", "checks": [{"id", "name", "value", "op", "target", "passed", "source",
                "ref", "note"?}], "passed"}`` (``id``/``source``/``ref`` from the paper's
                ``claims.py``; schema 1 results lack them)
``curves``      optional plot series ``{name: {"x", "series": {arm: [...]}, ...}}``
``figures``     PNG file names written beside the JSON
``provenance``  icml26 version, git commit, python/torch/numpy versions, platform,
                threads, device, wall time, UTC time

A further run of a paper (another setting, a longer budget, a diagnostic) lives in
``results/<key>/<name>/result.json`` with the same layout (``seeds/`` holds per-seed results instead).

:func:`validate` checks a loaded dict and names the first bad field; :func:`report`
rebuilds ``results/README.md`` (every result and further run), the results table of the
top-level README, and the generated sections of the paper READMEs from the JSON alone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from icml26.aggregate import claim_status as _claim_status
from icml26.aggregate import role_counts as _role_counts
from icml26.aggregate import verdict as _verdict
from icml26.contract import OPS, ROLES, Check, Outcome, check

__all__ = [
    "Check",
    "Outcome",
    "Result",
    "ResultError",
    "SCHEMA_VERSION",
    "atomic_write_bytes",
    "atomic_write_text",
    "check",
    "load_result",
    "report",
    "validate",
    "verdict_table",
]

SCHEMA_VERSION = 3
#: Schema versions :func:`validate` accepts (1: before checks carried id/source/ref; 2: before the
#: claim carried a status decided by headline checks, checks a role, results their arms).
READABLE_SCHEMAS = (1, 2, 3)
_OPS = OPS


class ResultError(ValueError):
    """A result file does not follow the schema; the message names the file and the field."""


@dataclasses.dataclass(frozen=True)
class Result:
    """A validated result, as written to ``result.json``.

    ``data`` is the JSON object itself; the properties are shortcuts into it.
    ``path`` is where it was written (``None`` if it was not).
    """

    data: dict[str, Any]
    path: Path | None = None

    def __post_init__(self) -> None:
        validate(self.data)

    @property
    def paper(self) -> str:
        return self.data["paper"]

    @property
    def metrics(self) -> dict[str, dict[str, float]]:
        return self.data["metrics"]

    @property
    def passed(self) -> bool:
        """Whether every check of the claim held."""
        return self.data["claim"]["passed"]

    @property
    def config(self) -> dict[str, Any]:
        return self.data["config"]

    def verdict(self) -> str:
        """The plain-text verdict table."""
        return verdict_table(self.data)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------
def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; a result file is meant to be read by everyone (umask applies)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema": int,
    "paper": str,
    "quick": bool,
    "setting": str,
    "seed": int,
    "config": dict,
    "metrics": dict,
    "claim": dict,
    "curves": dict,
    "figures": list,
    "provenance": dict,
}
_PROVENANCE = ("icml26", "python", "numpy", "torch", "platform", "threads", "device",
               "wall_time_s", "utc")


_SAFE_FIGURE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.png$")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def validate(data: Mapping[str, Any], *, source: str = "result") -> None:
    """Raise :class:`ResultError` naming the first field that breaks the schema."""
    if not isinstance(data, Mapping):
        raise ResultError(f"{source}: top level must be an object")
    for name, tp in _REQUIRED.items():
        if name not in data:
            raise ResultError(f"{source}: missing field {name!r}")
        if not isinstance(data[name], tp) or (tp is int and isinstance(data[name], bool)):
            raise ResultError(f"{source}: field {name!r} must be {getattr(tp, '__name__', tp)}")
    if data["schema"] not in READABLE_SCHEMAS:
        raise ResultError(f"{source}: field 'schema' is {data['schema']}, expected one of {READABLE_SCHEMAS}")
    if "seeds" in data:
        seeds = data["seeds"]
        if (not isinstance(seeds, list) or not seeds
                or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds)):
            raise ResultError(f"{source}: field 'seeds' must be a non-empty list of non-negative integers")
    if data["setting"] not in ("full", "quick", "tiny"):
        raise ResultError(f"{source}: field 'setting' must be full, quick or tiny")
    if not data["metrics"]:
        raise ResultError(f"{source}: field 'metrics' is empty")
    for arm, values in data["metrics"].items():
        if not isinstance(values, Mapping) or not values:
            raise ResultError(f"{source}: field 'metrics.{arm}' must be a non-empty object")
        for metric, value in values.items():
            if not _is_number(value):
                raise ResultError(
                    f"{source}: field 'metrics.{arm}.{metric}' must be a finite number, got {value!r}"
                )
            if not math.isfinite(value):
                raise ResultError(f"{source}: field 'metrics.{arm}.{metric}' is not finite")
    claim = data["claim"]
    for name, tp in (("text", str), ("checks", list), ("passed", bool)):
        if not isinstance(claim.get(name), tp):
            raise ResultError(f"{source}: field 'claim.{name}' must be {tp.__name__}")
    for i, item in enumerate(claim["checks"]):
        where = f"{source}: field 'claim.checks[{i}]"
        if not isinstance(item, Mapping):
            raise ResultError(f"{where}' must be an object")
        required = ("name", "op", "target", "passed") + (("id", "source", "ref") if data["schema"] >= 2 else ())
        for name in required:
            if name not in item:
                raise ResultError(f"{where}.{name}' is missing")
        for name in ("name", "id", "source", "ref", "note"):
            if name in item and not isinstance(item[name], str):
                raise ResultError(f"{where}.{name}' must be a string")
        if item["op"] not in _OPS:
            raise ResultError(f"{where}.op' is {item['op']!r}, not one of {', '.join(_OPS)}")
        if not _is_number(item["target"]) or not math.isfinite(item["target"]):
            raise ResultError(f"{where}.target' must be a finite number, got {item['target']!r}")
        value = item.get("value")
        if value is not None and (not _is_number(value) or not math.isfinite(value)):
            raise ResultError(f"{where}.value' must be a finite number or null, got {value!r}")
        if not isinstance(item["passed"], bool):
            raise ResultError(f"{where}.passed' must be true or false")
        if "role" in item and item["role"] not in ROLES:
            raise ResultError(f"{where}.role' must be one of {', '.join(ROLES)}, got {item['role']!r}")
        if data["schema"] >= 3 and "role" not in item:
            raise ResultError(f"{where}.role' is missing")
        units = item.get("units")
        if units is not None and (not isinstance(units, list) or not units
                                  or not all(u is None or (_is_number(u) and math.isfinite(u)) for u in units)):
            raise ResultError(f"{where}.units' must be a non-empty list of finite numbers or nulls")
        if "verdict" in item:  # an aggregate over seeds: the interval decides (icml26.aggregate)
            if item["verdict"] not in ("held", "not held", "unresolved"):
                raise ResultError(f"{where}.verdict' must be held, not held or unresolved, got {item['verdict']!r}")
            if item["passed"] != (item["verdict"] == "held"):
                raise ResultError(f"{where}.passed' is {item['passed']} but its verdict is {item['verdict']!r}")
            ci = item.get("ci")
            if ci is not None and (not isinstance(ci, list) or len(ci) != 2 or not all(_is_number(v) for v in ci)):
                raise ResultError(f"{where}.ci' must be [low, high] or null")
            for name in ("held_on", "seeds", "n"):
                if name in item and (not isinstance(item[name], int) or isinstance(item[name], bool) or item[name] < 0):
                    raise ResultError(f"{where}.{name}' must be a non-negative integer")
            if "held_on" in item and "seeds" in item and item["held_on"] > item["seeds"]:
                raise ResultError(f"{where}.held_on' is {item['held_on']} of {item['seeds']} seeds")
            if isinstance(data.get("seeds"), list) and item.get("seeds", len(data["seeds"])) != len(data["seeds"]):
                raise ResultError(f"{where}.seeds' is {item.get('seeds')} but the result lists "
                                  f"{len(data['seeds'])} seeds")
            if ci is not None and ci[0] > ci[1]:
                raise ResultError(f"{where}.ci' runs backwards")
            if ci is not None and value is not None and not (ci[0] - 1e-9 * max(1.0, abs(value)) <= value
                                                             <= ci[1] + 1e-9 * max(1.0, abs(value))):
                raise ResultError(f"{where}.value' {value} lies outside its interval {ci}")
            if ci is None and value is not None:
                raise ResultError(f"{where}.ci' is missing for a measured value")
            # the verdict is recomputed from the interval and the target: a hand-edited verdict is refused
            rule = _verdict(item["op"], item["target"], *(ci if ci is not None else (None, None)))
            if data["schema"] >= 3 and rule != item["verdict"]:
                raise ResultError(f"{where}.verdict' is {item['verdict']!r} but its interval {ci} against "
                                  f"{item['op']} {item['target']} gives {rule!r}")
        else:
            held = value is not None and bool(_OPS[item["op"]](value, item["target"]))
            if item["passed"] != held:
                raise ResultError(f"{where}.passed' is {item['passed']} but {value} {item['op']} "
                                  f"{item['target']} is {held}")
        if "source" in item and item["source"] not in ("paper", "issue", "ours"):
            raise ResultError(f"{where}.source' must be paper, issue or ours, got {item['source']!r}")
    if data["schema"] >= 3:
        status, _ = _claim_status(claim["checks"])
        if claim.get("status") != status:
            raise ResultError(f"{source}: field 'claim.status' is {claim.get('status')!r} but its headline checks "
                              f"give {status!r}")
        if not isinstance(claim.get("reason"), str):
            raise ResultError(f"{source}: field 'claim.reason' must be a string")
        if claim.get("counts") != _role_counts(claim["checks"]):
            raise ResultError(f"{source}: field 'claim.counts' disagrees with its checks")
        expected = status == "supported"
    else:
        expected = bool(claim["checks"]) and all(c["passed"] for c in claim["checks"])
    if claim["passed"] != expected:
        raise ResultError(f"{source}: field 'claim.passed' disagrees with its checks")
    arms = data.get("arms", {})
    if not isinstance(arms, Mapping):
        raise ResultError(f"{source}: field 'arms' must be an object")
    for arm_id, arm in arms.items():
        if (not isinstance(arm, Mapping) or arm.get("role") not in ("method", "baseline", "control")
                or not isinstance(arm.get("space"), Mapping) or not isinstance(arm.get("trials"), int)):
            raise ResultError(f"{source}: field 'arms.{arm_id}' needs a role, a space and an integer trials")
    if "config_hash" in data and not (isinstance(data["config_hash"], str)
                                      and re.fullmatch(r"[0-9a-f]{16}", data["config_hash"])):
        raise ResultError(f"{source}: field 'config_hash' must be 16 hexadecimal digits")
    if isinstance(data.get("seeds"), list) and data["seed"] != data["seeds"][0]:
        raise ResultError(f"{source}: field 'seed' is {data['seed']} but 'seeds' starts with {data['seeds'][0]}")
    for name in _PROVENANCE:
        if name not in data["provenance"]:
            raise ResultError(f"{source}: field 'provenance.{name}' is missing")
    prov = data["provenance"]
    if not _is_number(prov["wall_time_s"]) or not math.isfinite(prov["wall_time_s"]) or prov["wall_time_s"] < 0:
        raise ResultError(f"{source}: field 'provenance.wall_time_s' must be a non-negative number of seconds")
    if not isinstance(prov["threads"], int) or isinstance(prov["threads"], bool) or prov["threads"] < 1:
        raise ResultError(f"{source}: field 'provenance.threads' must be a positive integer")
    for name in ("icml26", "python", "numpy", "torch", "platform", "device", "utc"):
        if not isinstance(prov[name], str):
            raise ResultError(f"{source}: field 'provenance.{name}' must be a string")
    for i, fig in enumerate(data["figures"]):
        if not isinstance(fig, str) or not _SAFE_FIGURE.match(fig):
            raise ResultError(f"{source}: field 'figures[{i}]' must be a plain PNG file name beside the result "
                              f"(letters, digits, '_', '-', '.'), got {fig!r}")
    if not isinstance(data.get("notes", []), list) or not all(isinstance(n, str) for n in data.get("notes", [])):
        raise ResultError(f"{source}: field 'notes' must be a list of strings")
    for name, curve in data["curves"].items():
        if not isinstance(curve, Mapping) or "x" not in curve or "series" not in curve:
            raise ResultError(f"{source}: field 'curves.{name}' needs 'x' and 'series'")
        for arm, ys in curve["series"].items():
            if len(ys) != len(curve["x"]):
                raise ResultError(
                    f"{source}: field 'curves.{name}.series.{arm}' has {len(ys)} points "
                    f"but x has {len(curve['x'])}"
                )


def load_result(path: str | os.PathLike) -> dict[str, Any]:
    """Load and validate one ``result.json``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: not valid JSON ({exc})") from None
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}") from None
    except UnicodeDecodeError:
        raise ResultError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ResultError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    validate(data, source=str(path))
    return data


def _reject_constant(name: str) -> Any:
    raise ResultError(f"the JSON holds {name}, which a result never contains (non-finite values are null)")


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------
def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if _is_number(x):
        x = float(x)
        if x == 0:
            return "0"
        if x.is_integer() and abs(x) < 1e7:
            return str(int(x))
        if abs(x) >= 1e4 or abs(x) < 1e-3:
            return f"{x:.3g}"
        return f"{x:.4g}"
    return str(x)


def md_escape(text: Any) -> str:
    """Text that stays inside one markdown table cell or quote line: no line breaks, no ``|``,
    no HTML (so a note cannot close the report's marker comments or inject markup)."""
    text = " ".join(str(text).split())
    # "<" only where it could open a tag or a comment ("<!--", "<img", "</"); "x < 0.5" stays readable
    text = re.sub(r"<(?=[A-Za-z!/?])", "&lt;", text)
    return text.replace("|", "\\|")


def _markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, raw: Sequence[int] = ()) -> str:
    """A markdown table; cells are formatted and escaped except the columns in ``raw`` (our own links)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(c) if i in raw else md_escape(_fmt(c)) for i, c in enumerate(row)) + " |")
    return "\n".join(lines)


def metrics_table(data: Mapping[str, Any]) -> str:
    """Markdown table: one row per arm, one column per metric (union over arms)."""
    metrics = data["metrics"]
    columns: list[str] = []
    for values in metrics.values():
        for name in values:
            if name not in columns:
                columns.append(name)
    stats = data.get("metric_stats")
    if stats:  # an aggregate: mean ± half-width of the 95 % interval over seeds
        rows = [[arm] + [_pm(stats.get(arm, {}).get(c)) for c in columns] for arm in metrics]
    else:
        rows = [[arm] + [values.get(c) for c in columns] for arm, values in metrics.items()]
    return _markdown_table(["arm"] + columns, rows)


def _pm(stat: Mapping[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    if stat.get("n", 0) < 2:
        return _fmt(stat["mean"])
    return f"{_fmt(stat['mean'])} ± {_fmt(stat['ci_high'] - stat['mean'])}"


def _measured(c: Mapping[str, Any]) -> str:
    """A check's measured value: the value, or for an aggregate the mean and its 95 % interval."""
    if "verdict" not in c:
        return _fmt(c.get("value"))
    if c.get("value") is None:
        return "–"
    ci = c.get("ci")
    if not ci or c.get("n", 0) < 2:
        return _fmt(c["value"])
    return f"{_fmt(c['value'])} [{_fmt(ci[0])}, {_fmt(ci[1])}]"


_VERDICT_MARK = {"held": "✅", "not held": "❌", "unresolved": "❔"}
_STATUS_MARK = {"supported": "✅ supported", "refuted": "❌ refuted", "inconclusive": "❔ inconclusive",
                "budget-dependent": "❔ budget-dependent"}
_ROLE_ORDER = {"headline": 0, "supporting": 1, "diagnostic": 2}


def _by_role(checks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Checks with the headline ones first, then supporting, then diagnostics (stable within a role)."""
    return sorted(checks, key=lambda c: _ROLE_ORDER.get(c.get("role") or "supporting", 1))


def _units_text(c: Mapping[str, Any]) -> str:
    text = f"{c.get('n', 0)} {c.get('unit', 'master seed')}s"
    if c.get("verdict") == "unresolved":
        need = c.get("n_to_resolve")
        text += f"; ~{need} to resolve" if need else "; unresolvable at this mean"
    return text


def checks_table(data: Mapping[str, Any]) -> str:
    """Markdown table of the claim's checks (headline first; diagnostics are reported, not scored)."""
    checks = _by_role(data["claim"]["checks"])
    if checks and "verdict" in checks[0]:
        rows = [[c.get("role", "–"), c["name"], _measured(c), f"{c['op']} {_fmt(c['target'])}", _units_text(c),
                 f"{c['held_on']}/{c['seeds']}",
                 ("(diagnostic) " if c.get("role") == "diagnostic" else "")
                 + f"{_VERDICT_MARK[c['verdict']]} {c['verdict']}", _source_text(c)] for c in checks]
        return _markdown_table(["role", "check", "mean [95% CI]", "target", "units", "held on seeds", "verdict",
                                "target's source"], rows)
    rows = [
        [c.get("role", "–"), c["name"], c.get("value"), f"{c['op']} {_fmt(c['target'])}",
         ("(diagnostic) " if c.get("role") == "diagnostic" else "") + ("✅" if c["passed"] else "❌"),
         _source_text(c)]
        for c in checks
    ]
    return _markdown_table(["role", "check", "measured", "target", "held", "target's source"], rows)


def claim_line(data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """One line: the claim's status and why (with the budget cross-check where a further run has one;
    ``runs=None``: the run's own status only, as for a further run that is itself the second budget)."""
    if runs is None:
        claim = data["claim"]
        status, reason = claim.get("status"), claim.get("reason")
        if not status or not reason:
            status, reason = _claim_status(claim["checks"])
        return f"{_STATUS_MARK.get(status, status)}: {reason}"
    status, reason = claim_across_budgets(data, runs)
    return f"{_STATUS_MARK.get(status, status)}: {reason}"


def counts_text(data: Mapping[str, Any]) -> str:
    """``headline 1/2 · supporting 3/5 (1 unresolved) · diagnostic 2`` for a result."""
    counts = data["claim"].get("counts") or _role_counts(data["claim"]["checks"])
    parts = []
    for role in ("headline", "supporting"):
        c = counts.get(role, {})
        total = sum(c.values())
        if total:
            parts.append(f"{role} {c.get('held', 0)}/{total}"
                         + (f" ({c['unresolved']} unresolved)" if c.get("unresolved") else ""))
    diag = sum(counts.get("diagnostic", {}).values())
    if diag:
        parts.append(f"diagnostic {diag}")
    return " · ".join(parts)


# ---------------------------------------------------------------------------
# Budgets: a headline comparison of trained models is also read at a larger budget
# ---------------------------------------------------------------------------
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
            mine, theirs = _verdict_of_check(c), _verdict_of_check(o)
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


def _verdict_of_check(c: Mapping[str, Any]) -> str:
    return c["verdict"] if "verdict" in c else ("held" if c["passed"] else "not held")


def _holds(value: Any, c: Mapping[str, Any]) -> bool | None:
    return None if value is None else bool(_OPS[c["op"]](value, c["target"]))


def _source_text(c: Mapping[str, Any]) -> str:
    if "source" not in c:
        return "–"
    return f"{c['source']}: {c['ref']}"


def verdict_table(data: Mapping[str, Any]) -> str:
    """Plain-text verdict printed after a run: metrics per arm, then each check."""
    metrics = data["metrics"]
    columns: list[str] = []
    for values in metrics.values():
        columns.extend(c for c in values if c not in columns)
    width = max(len(a) for a in metrics) + 2
    lines = [f"{'arm':<{width}}" + "".join(f"{c[:14]:>16}" for c in columns)]
    for arm, values in metrics.items():
        lines.append(f"{arm:<{width}}" + "".join(f"{_fmt(values.get(c)):>16}" for c in columns))
    lines.append("")
    for c in _by_role(data["claim"]["checks"]):
        role = (c.get("role") or "supporting")[:4]
        if "verdict" in c:
            mark = {"held": "PASS", "not held": "FAIL", "unresolved": "UNRESOLVED"}[c["verdict"]]
            lines.append(f"  {role} [{mark}] {c['name']}: {_measured(c)} {c['op']} {_fmt(c['target'])} "
                         f"(held on {c['held_on']}/{c['seeds']} seeds; {_units_text(c)})")
        else:
            mark = "PASS" if c["passed"] else "FAIL"
            lines.append(f"  {role} [{mark}] {c['name']}: {_fmt(c.get('value'))} {c['op']} {_fmt(c['target'])}")
    if "seeds" in data:
        lines.append(f"({len(data['seeds'])} seeds {data['seeds']}; {data['claim'].get('rule', '')})")
    if "status" in data["claim"]:
        lines.append(f"claim {data['claim']['status'].upper()} ({counts_text(data)}): {data['claim']['text']}")
        lines.append(f"  why: {data['claim']['reason']}")
    else:
        overall = "HELD" if data["claim"]["passed"] else "NOT HELD"
        lines.append(f"claim {overall}: {data['claim']['text']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
RESULTS_START = "<!-- results:start -->"
RESULTS_END = "<!-- results:end -->"
PAPERS_START = "<!-- papers:start -->"
PAPERS_END = "<!-- papers:end -->"
TIMING_START = "<!-- timing:start -->"
TIMING_END = "<!-- timing:end -->"


def timing_table(path: str | os.PathLike) -> str:
    """The main job's timing from ``run_all.json`` (written by ``icml26 run all``): per paper its status and
    seconds on one thread, then the wall time of the whole job beside the serial sum. Every field is
    checked; a malformed file raises :class:`ResultError`."""
    path = Path(path)
    if not path.is_file():
        return "_No timing yet: `make run` writes `results/run_all.json`._"
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ResultError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("papers"), list):
        raise ResultError(f"{path}: field 'papers' must be a list")
    for name in ("wall_time_s", "serial_time_s"):
        if not _is_number(data.get(name)) or data[name] < 0:
            raise ResultError(f"{path}: field {name!r} must be a non-negative number")
    if not isinstance(data.get("workers"), int) or isinstance(data.get("workers"), bool) or data["workers"] < 1:
        raise ResultError(f"{path}: field 'workers' must be a positive integer")
    rows = []
    for i, row in enumerate(data["papers"]):
        if not isinstance(row, Mapping) or not isinstance(row.get("paper"), str) or row.get("status") not in ("ok", "failed"):
            raise ResultError(f"{path}: field 'papers[{i}]' needs a paper name and a status ok or failed")
        seconds = row.get("wall_time_s")
        if seconds is not None and (not _is_number(seconds) or seconds < 0):
            raise ResultError(f"{path}: field 'papers[{i}].wall_time_s' must be a non-negative number or null")
        rows.append([row["paper"], row.get("claim_status") or row["status"],
                     "–" if seconds is None else f"{seconds:.0f}"])
    table = _markdown_table(["paper", "claim (this run)", "seconds (one thread)"], rows)
    return (table + "\n\n" + md_escape(f"Whole job: {data['wall_time_s']:.0f} s of wall time on {data['workers']} "
                                       f"worker(s) ({data.get('cpu', 'unknown CPU')}), against "
                                       f"{data['serial_time_s']:.0f} s run one after another."))


def _replace_between(text: str, start: str, end: str, body: str) -> str:
    i, j = text.find(start), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise ResultError(f"README is missing the marker pair {start} … {end}")
    return text[: i + len(start)] + "\n" + body.rstrip() + "\n" + text[j:]


def _papers_table() -> str:
    from icml26 import registry

    rows = []
    for spec in registry.list_papers():
        link = f"[{spec.key}](src/icml26/papers/{spec.key}/README.md)" if spec.implemented else spec.key
        rows.append([link, spec.title, spec.area, spec.status])
    return _markdown_table(["key", "paper", "area", "status"], rows, raw=(0,))


def _units_of(data: Mapping[str, Any]) -> str:
    checks = data["claim"]["checks"]
    seeds = len(data.get("seeds", [data["seed"]]))
    pooled = sorted({(c.get("unit"), c.get("n")) for c in checks if c.get("unit") not in (None, "master seed")},
                    key=lambda t: -(t[1] or 0))
    if pooled:
        unit, n = pooled[0]
        return f"{seeds} seeds × {unit}s (n = {n})"
    return str(seeds)


def _deciding(data: Mapping[str, Any], status: str) -> str:
    """The ids of the headline checks that decided a status (for the summary table)."""
    want = {"supported": "held", "refuted": "not held", "inconclusive": "unresolved"}.get(status)
    ids = []
    for c in data["claim"]["checks"]:
        if c.get("role") != "headline":
            continue
        v = c["verdict"] if "verdict" in c else ("held" if c["passed"] else "not held")
        if want is None or v == want:
            ids.append(str(c.get("id") or c["name"]))
    return ", ".join(ids)


def _summary_table(results: Mapping[str, Mapping[str, Any]],
                   extra: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None) -> str:
    if not results:
        return "_No results yet: run `icml26 run all --quick`, then `icml26 report`._"
    rows = []
    for key, data in results.items():
        status, why = claim_across_budgets(data, (extra or {}).get(key, {}))
        # read at two budgets when any headline budget check was compared with a budget_x<k> run
        budgets = (" (one budget)" if "(one budget only:" in why
                   else " (two budgets)" if status != "budget-dependent" and "budget_x" in why else "")
        rows.append([
            f"[{key}](results/README.md#{key})",
            data["setting"],
            _units_of(data),
            _STATUS_MARK.get(status, status) + budgets,
            _deciding(data, status if status != "budget-dependent" else ""),
            counts_text(data),
            f"{data['provenance']['wall_time_s']:.0f} s",
        ])
    n = len(results)
    tally = {k: sum(claim_across_budgets(d, (extra or {}).get(p, {}))[0] == k for p, d in results.items())
             for k in ("supported", "refuted", "inconclusive", "budget-dependent")}
    table = _markdown_table(["paper", "setting", "units", "claim", "decided by (headline checks)",
                             "checks held, by role", "wall time (all seeds)"], rows, raw=(0,))
    return (table + "\n\n" + f"{n} papers: " + ", ".join(f"{v} {k}" for k, v in tally.items() if v)
            + ". " + md_escape(CLAIM_TEXT))


#: How the claim column is decided, printed under the summary table.
CLAIM_TEXT = ("A paper's claim is decided by its headline checks only (the abstract's central claim): supported "
              "when every one holds, refuted when one does not, inconclusive otherwise; budget-dependent when a "
              "headline comparison of trained models changes verdict at >= 3x the training budget. Supporting "
              "checks are scored but do not decide it; diagnostics are never scored.")


def collect(results_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Load every ``<results_dir>/<key>/result.json``, validated, in registry order."""
    from icml26 import registry

    results_dir = Path(results_dir)
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(results_dir.glob("*/result.json")):
        data = load_result(path)
        if data["paper"] != path.parent.name:
            raise ResultError(f"{path}: field 'paper' is {data['paper']!r}, folder says {path.parent.name!r}")
        found[data["paper"]] = data
    order = {k: i for i, k in enumerate(registry.keys())}
    return dict(sorted(found.items(), key=lambda kv: order.get(kv[0], len(order))))


_RUN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def collect_extra(results_dir: str | os.PathLike) -> dict[str, dict[str, dict[str, Any]]]:
    """Load every further run ``<results_dir>/<key>/<name>/result.json`` (not ``seeds/``), validated.

    These are runs beside a paper's main result (another setting, a longer budget, a diagnostic);
    returned as ``{key: {name: result}}`` with names sorted.
    """
    results_dir = Path(results_dir)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(results_dir.glob("*/*/result.json")):
        key, name = path.parent.parent.name, path.parent.name
        if name == "seeds":
            continue
        if not _RUN_NAME.fullmatch(name):
            raise ResultError(f"{path}: a further run's folder name must be letters, digits, '_', '.' or '-' "
                              f"(it names the run in headings and markers); rename {name!r}")
        if not (results_dir / key / "result.json").is_file():
            raise ResultError(f"{path}: a further run of {key!r} without its main result "
                              f"{results_dir / key / 'result.json'}; commit the main result or move the run")
        data = load_result(path)
        if data["paper"] != key:
            raise ResultError(f"{path}: field 'paper' is {data['paper']!r}, folder says {key!r}")
        found.setdefault(key, {})[name] = data
    return found


def extra_markers(name: str) -> tuple[str, str]:
    """The marker pair a paper README puts around the generated section of the further run ``name``."""
    return f"<!-- results:{name}:start -->", f"<!-- results:{name}:end -->"


_EXTRA_START = re.compile(r"<!-- results:([^:>]+):start -->")


def fill_paper_readme(text: str, data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]],
                      results_dir: Path, readme_dir: Path, *, source: str | os.PathLike = "README") -> str:
    """A paper README's text with its generated sections rebuilt.

    The main result goes between ``<!-- results:start -->`` and ``<!-- results:end -->``; a further
    run ``runs[name]`` between :func:`extra_markers` ``(name)``, where the README has them (a run
    without markers appears in ``results/README.md`` only). Markers naming a run that does not
    exist raise :class:`ResultError`: the section would silently go stale.
    """
    text = _replace_between(text, RESULTS_START, RESULTS_END, _paper_section(data, results_dir, readme_dir,
                                                                             runs=runs))
    for name in _EXTRA_START.findall(text):
        if name not in runs:
            raise ResultError(f"{source}: has the markers of a further run {name!r}, but "
                              f"{Path(results_dir) / data['paper'] / name / 'result.json'} does not exist; "
                              "remove the markers or commit the run")
        start, end = extra_markers(name)
        text = _replace_between(text, start, end, _paper_section(runs[name], results_dir, readme_dir, name))
    return text


def _seed_text(data: Mapping[str, Any]) -> str:
    if "seeds" in data:
        return f"{len(data['seeds'])} seeds {data['seeds']}, verdicts by the rule below"
    return f"seed {data['seed']}"


def _paper_section(data: Mapping[str, Any], results_dir: Path, readme_dir: Path, name: str | None = None,
                   runs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    prov = data["provenance"]
    where = f"results/{data['paper']}/" + (f"{name}/" if name else "") + "result.json"
    lines = [
        f"_Generated by `icml26 report` from `{where}` "
        f"(setting `{data['setting']}`, {_seed_text(data)}, {prov['wall_time_s']:.0f} s on "
        f"{prov['threads']} thread(s), {md_escape(prov['utc'])}); do not edit._",
        "",
        f"Claim: {claim_line(data, (runs or {}) if name is None else None)} · checks held: {counts_text(data)}",
        "",
        *_tables_notes_figures(data, results_dir, readme_dir, alt=lambda fig: fig, name=name),
    ]
    return "\n".join(lines)


def _tables_notes_figures(data: Mapping[str, Any], results_dir: Path, readme_dir: Path,
                          alt: Callable[[str], str], name: str | None = None) -> list[str]:
    """Checks and metrics tables, notes as quotes, and the figures that exist, linked from ``readme_dir``.

    ``name`` is the folder of a further run inside the paper's folder (None: the main result).
    """
    lines = [checks_table(data), ""]
    if "seeds" in data:
        lines += [f"_{md_escape(data['claim'].get('rule', ''))}_", ""]
    lines += [metrics_table(data), ""]
    for note in data.get("notes", []):
        lines += [f"> {md_escape(note)}", ""]
    folder = (Path(results_dir) / data["paper"] / (name or "")).resolve()
    for fig in data["figures"]:
        path = (folder / fig).resolve()
        # validate() admits plain file names only; the check below keeps links inside the folder regardless
        if path.parent == folder and path.exists():
            lines += [f"![{md_escape(alt(fig))}]({Path(os.path.relpath(path, Path(readme_dir).resolve())).as_posix()})", ""]
    return lines


#: The repository's own results folder (beside ``src/``), whose report also updates the READMEs.
REPO_RESULTS = Path(__file__).resolve().parents[2] / "results"


def report(results_dir: str | os.PathLike = "results", readme: str | os.PathLike | None = None, *,
           paper_readmes: bool | None = None) -> Path:
    """Rebuild ``<results_dir>/README.md`` from the JSON files in it, and the README tables.

    What is written, and nothing else:

    * ``<results_dir>/README.md``, always;
    * ``readme`` (between its marker comments), when given; by default the repository's
      ``README.md`` when ``results_dir`` is the repository's own ``results/`` folder;
    * each paper's ``README.md`` in the package (between its markers) when ``paper_readmes``
      is true; by default only for the repository's own ``results/`` folder.

    Every result is validated first: a corrupt one raises :class:`ResultError` naming the
    file and the field, before anything is written. Returns the results README path.
    """
    from icml26 import registry

    results_dir = Path(results_dir)
    own = results_dir.resolve() == REPO_RESULTS
    if paper_readmes is None:
        paper_readmes = own
    if readme is None and own:
        readme = REPO_RESULTS.parent / "README.md"
    results = collect(results_dir)
    extra = collect_extra(results_dir)
    parts = [
        "# Results",
        "",
        "Generated by `icml26 report` from the `result.json` files in this folder; do not edit.",
        "",
    ]
    for key, data in results.items():
        spec = registry.PAPERS.get(key)
        prov = data["provenance"]
        parts += [
            f"## {key}",
            "",
            f"**{spec.title if spec else key}**",
            "",
            f"Claim: {md_escape(data['claim']['text'])}",
            "",
            f"Claim: {claim_line(data, extra.get(key, {}))}",
            "",
            f"Checks held: {counts_text(data)} · setting `{data['setting']}` · "
            f"{_seed_text(data)} · {prov['wall_time_s']:.1f} s on {prov['threads']} thread(s), "
            f"{md_escape(prov['device'])} · icml26 {md_escape(prov['icml26'])} "
            f"({md_escape(str(prov.get('git_commit') or 'no git')[:10])}) · {md_escape(prov['utc'])}",
            "",
            *_tables_notes_figures(data, results_dir, results_dir, alt=lambda fig, key=key: f"{key} {fig}"),
        ]
        for name, run in extra.get(key, {}).items():
            parts += [
                f"### {key} · {name}",
                "",
                f"A further run in `{key}/{name}/` (setting `{run['setting']}`, {_seed_text(run)}, "
                f"{run['provenance']['wall_time_s']:.1f} s on {run['provenance']['threads']} thread(s), "
                f"{md_escape(run['provenance']['utc'])}). Claim in this run: {claim_line(run)} · checks held: "
                f"{counts_text(run)}",
                "",
                *_tables_notes_figures(run, results_dir, results_dir, name=name,
                                       alt=lambda fig, key=key, name=name: f"{key} {name} {fig}"),
            ]
    out = results_dir / "README.md"
    writes: list[tuple[Path, str]] = [(out, "\n".join(parts).rstrip() + "\n")]

    # Each paper's own README carries its tables between the same markers.
    for key, data in (results.items() if paper_readmes else ()):
        spec = registry.PAPERS.get(key)
        paper_readme = spec.folder / "README.md" if spec else None
        if paper_readme is None or not paper_readme.exists():
            continue
        text = paper_readme.read_text(encoding="utf-8")
        if RESULTS_START not in text:
            continue
        writes.append((paper_readme, fill_paper_readme(text, data, extra.get(key, {}), results_dir,
                                                       paper_readme.parent, source=paper_readme)))

    if readme is not None:
        readme = Path(readme)
        if not readme.is_file():
            raise ResultError(f"readme={readme} is not a file; pass an existing README with the marker comments")
        text = readme.read_text(encoding="utf-8")
        text = _replace_between(text, RESULTS_START, RESULTS_END, _summary_table(results, extra))
        text = _replace_between(text, PAPERS_START, PAPERS_END, _papers_table())
        if TIMING_START in text:
            text = _replace_between(text, TIMING_START, TIMING_END, timing_table(results_dir / "run_all.json"))
        writes.append((readme, text))
    # everything was built and checked; now write
    for path, text in writes:
        atomic_write_text(path, text)
    return out


# ---------------------------------------------------------------------------
# Plots (from JSON only)
# ---------------------------------------------------------------------------
def plot_curves(data: Mapping[str, Any], names: Sequence[str] | None = None):
    """One matplotlib figure per curve of a result, as ``{file name: Figure}``.

    A curve is ``{"x": [...], "series": {arm: [...]}, "xlabel", "ylabel", "title",
    "logx", "logy", "bands"}`` (all but the first two optional). ``None`` values are gaps.
    """
    from icml26.plotting import draw_curve, subplots

    figures = {}
    for name, curve in data["curves"].items():
        if names is not None and name not in names:
            continue
        fig, axes = subplots(panel=(6.0, 4.0))
        draw_curve(axes[0, 0], {"ylabel": name, **curve},
                   title=curve.get("title", f"{data['paper']}: {name}"))
        figures[f"{name}.png"] = fig
    return figures
