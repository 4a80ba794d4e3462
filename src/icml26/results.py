"""Result files: their schema, its validation, and reading and writing them.

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

:func:`validate` checks a loaded dict and names the first bad field. The report built from
the files (:func:`report`, the tables) is :mod:`icml26.report`, the claim read at two training
budgets :mod:`icml26.budgets`; their names still import from here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from icml26.aggregate import check_aggregate as _check_aggregate
from icml26.aggregate import claim_status as _claim_status
from icml26.aggregate import failed_preconditions as _failed_preconditions
from icml26.aggregate import role_counts as _role_counts
from icml26.aggregate import verdict as _verdict
from icml26.atomic import (
    WrittenBeforeStop,
    atomic_write_bytes,
    atomic_write_text,
    write_together,
)
from icml26.contract import OPS, ROLES, Check, Outcome, check

if TYPE_CHECKING:  # served by __getattr__ at the bottom (icml26.report imports this module)
    from icml26.report import report, verdict_table

__all__ = [
    "Check",
    "Outcome",
    "Result",
    "ResultError",
    "SCHEMA_VERSION",
    "WrittenBeforeStop",
    "atomic_write_bytes",
    "atomic_write_text",
    "write_together",
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
        from icml26.report import verdict_table

        return verdict_table(self.data)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------
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
    if data["quick"] != (data["setting"] != "full"):
        raise ResultError(f"{source}: field 'quick' is {data['quick']} but the setting is {data['setting']!r}")
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
        for name in ("requires", "gated_by"):
            if name in item and not (isinstance(item[name], list) and all(isinstance(r, str) for r in item[name])):
                raise ResultError(f"{where}.{name}' must be a list of check ids")
        # a precondition's verdict is recomputed: a gate cannot be added or dropped by hand
        gated = _failed_preconditions(item, claim["checks"])
        if item.get("gated_by", []) != gated:
            raise ResultError(f"{where}.gated_by' is {item.get('gated_by', [])} but its preconditions "
                              f"{item.get('requires', [])} give {gated}")
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
    if "config_hash" in data and data["config_hash"] != config_hash(data["paper"], data["setting"], data["config"]):
        raise ResultError(f"{source}: field 'config_hash' is not the hash of its paper, setting and config "
                          "(the config was edited after the run)")
    if isinstance(data.get("seeds"), list):
        try:
            _check_aggregate(data)
        except ValueError as exc:
            raise ResultError(f"{source}: {exc}") from None
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
        if not isinstance(curve["x"], list) or not all(_is_number(x) or isinstance(x, str) for x in curve["x"]):
            raise ResultError(f"{source}: field 'curves.{name}.x' must be a list of numbers or category names")
        if not isinstance(curve["series"], Mapping):
            raise ResultError(f"{source}: field 'curves.{name}.series' must be an object")
        for arm, ys in curve["series"].items():
            if not isinstance(ys, list) or not all(y is None or _is_number(y) for y in ys):
                raise ResultError(f"{source}: field 'curves.{name}.series.{arm}' must be a list of numbers or nulls")
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
# Reading
# ---------------------------------------------------------------------------
def collect(results_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Load every ``<results_dir>/<key>/result.json``, validated, in registry order."""
    from icml26 import registry

    results_dir = Path(results_dir)
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(results_dir.glob("*/result.json")):
        data = load_result(path)
        if data["paper"] != path.parent.name:
            raise ResultError(f"{path}: field 'paper' is {data['paper']!r}, folder says {path.parent.name!r}")
        _check_seed_folder(path, data)
        found[data["paper"]] = data
    order = {k: i for i, k in enumerate(registry.keys())}
    return dict(sorted(found.items(), key=lambda kv: order.get(kv[0], len(order))))


def _check_seed_folder(path: Path, data: Mapping[str, Any]) -> None:
    """An aggregate beside its ``seeds/`` must agree with them (:func:`icml26.seeds.check_seed_folder`)."""
    from icml26.seeds import check_seed_folder

    try:
        check_seed_folder(path.parent, data)
    except ResultError:
        raise
    except ValueError as exc:
        raise ResultError(f"{path}: {exc}") from None


_RUN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def collect_extra(results_dir: str | os.PathLike, paper: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """Load every further run ``<results_dir>/<key>/<name>/result.json`` (not ``seeds/``), validated.

    These are runs beside a paper's main result (another setting, a longer budget, a diagnostic);
    returned as ``{key: {name: result}}`` with names sorted. ``paper``: read only that paper's folder.
    """
    results_dir = Path(results_dir)
    if paper is not None and not _RUN_NAME.fullmatch(paper):
        raise ValueError(f"paper={paper!r} must be a paper key (letters, digits, '_', '.' or '-')")
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(results_dir.glob(f"{paper or '*'}/*/result.json")):
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
        _check_seed_folder(path, data)
        found.setdefault(key, {})[name] = data
    return found


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


# ---------------------------------------------------------------------------
# Names that moved to icml26.report and icml26.budgets, still importable from here
# ---------------------------------------------------------------------------
_MOVED = {
    "icml26.report": (
        "_fmt", "md_escape", "_markdown_table", "metrics_table", "_pm", "_measured", "_VERDICT_MARK",
        "_STATUS_MARK", "_ROLE_ORDER", "_by_role", "_units_text", "checks_table", "claim_line",
        "counts_text", "_source_text", "verdict_table", "RESULTS_START", "RESULTS_END", "PAPERS_START",
        "PAPERS_END", "TIMING_START", "TIMING_END", "timing_table", "_replace_between", "_papers_table",
        "_units_of", "_deciding", "_summary_table", "CLAIM_TEXT", "extra_markers", "_EXTRA_START",
        "fill_paper_readme", "_seed_text", "_paper_section", "_tables_notes_figures", "REPO_RESULTS",
        "report",
    ),
    "icml26.budgets": (
        "BUDGET_RUN", "BUDGET_FACTOR", "budget_runs", "budget_checks", "claim_across_budgets",
        "_verdict_of_check", "_holds",
    ),
}


def __getattr__(name: str) -> Any:
    # imported on first use: icml26.report and icml26.budgets import this module, not the reverse
    for module, moved in _MOVED.items():
        if name in moved:
            return getattr(import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------
# A configuration's identity
# ---------------------------------------------------------------------------
def config_hash(key: str, setting: str, config: Mapping[str, Any]) -> str:
    """A short hash of what a seed's numbers depend on besides the seed and the code: the paper,
    the setting and every resolved config field. Seeds are aggregated only when it is equal."""
    text = json.dumps({"paper": key, "setting": setting, "config": config}, sort_keys=True,
                      default=_json_default, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "detach"):  # a tensor
        return obj.detach().cpu().tolist()
    raise TypeError(f"cannot write {type(obj).__name__} to a result; convert it to numbers first")
