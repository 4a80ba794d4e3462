"""Result files and the report built from them.

A run writes ``<out>/<key>/result.json`` (plus PNG plots beside it). Its fields:

``schema``      version of this layout (an int)
``paper``       the paper key
``quick``       whether the quick (CPU) setting produced it; ``setting`` says which
``setting``     ``"full"``, ``"quick"`` or ``"tiny"``
``seed``        the seed
``config``      every config field that produced it
``metrics``     ``{arm: {metric: number}}`` — the method and each baseline by name
``claim``       ``{"text", "checks": [{"name", "value", "op", "target", "passed"}], "passed"}``
``curves``      optional plot series ``{name: {"x", "series": {arm: [...]}, ...}}``
``figures``     PNG file names written beside the JSON
``provenance``  icml26 version, git commit, python/torch/numpy versions, platform,
                threads, device, wall time, UTC time

:func:`validate` checks a loaded dict and names the first bad field; :func:`report`
rebuilds ``results/README.md`` and the results table of the top-level README from the
JSON alone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

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

SCHEMA_VERSION = 1
Op = Literal["<", "<=", ">", ">=", "==", "abs<="]
_OPS = {
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "==": lambda v, t: v == t,
    "abs<=": lambda v, t: abs(v) <= t,
}


class ResultError(ValueError):
    """A result file does not follow the schema; the message names the field."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One figure of a claim: ``value op target``, e.g. ``ratio <= 0.5``."""

    name: str
    value: float
    op: Op
    target: float
    note: str = ""

    @property
    def passed(self) -> bool:
        if not (math.isfinite(self.value) and math.isfinite(self.target)):
            return False
        return bool(_OPS[self.op](self.value, self.target))

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "value": _finite_or_none(self.value), "op": self.op,
               "target": self.target, "passed": self.passed}
        if self.note:
            out["note"] = self.note
        return out


def check(name: str, value: float, op: Op, target: float, note: str = "") -> Check:
    """Shorthand for :class:`Check` that validates the operator and coerces numbers."""
    if op not in _OPS:
        raise ValueError(f"check {name!r}: op {op!r} must be one of {', '.join(_OPS)}")
    return Check(name=name, value=float(value), op=op, target=float(target), note=note)


@dataclasses.dataclass
class Outcome:
    """What an experiment returns to the runner.

    Attributes:
        metrics: ``{arm: {metric: value}}``; the method's arm first, then baselines.
        checks: the figures of the claim, each a :class:`Check`.
        curves: plot series, ``{name: {"x": [...], "series": {arm: [...]}, "xlabel": …}}``.
        notes: free text shown in the report (what did not reproduce, and why).
    """

    metrics: dict[str, dict[str, float]]
    checks: list[Check]
    curves: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)


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


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


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
    if data["schema"] != SCHEMA_VERSION:
        raise ResultError(f"{source}: field 'schema' is {data['schema']}, expected {SCHEMA_VERSION}")
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
        if not isinstance(item, Mapping):
            raise ResultError(f"{source}: field 'claim.checks[{i}]' must be an object")
        for name in ("name", "op", "target", "passed"):
            if name not in item:
                raise ResultError(f"{source}: field 'claim.checks[{i}].{name}' is missing")
        if item["op"] not in _OPS:
            raise ResultError(f"{source}: field 'claim.checks[{i}].op' is {item['op']!r}")
        if item.get("value") is not None and not _is_number(item["value"]):
            raise ResultError(f"{source}: field 'claim.checks[{i}].value' must be a number or null")
    expected = bool(claim["checks"]) and all(c["passed"] for c in claim["checks"])
    if claim["passed"] != expected:
        raise ResultError(f"{source}: field 'claim.passed' disagrees with its checks")
    for name in _PROVENANCE:
        if name not in data["provenance"]:
            raise ResultError(f"{source}: field 'provenance.{name}' is missing")
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
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: not valid JSON ({exc})") from None
    validate(data, source=str(path))
    return data


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


def _markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(c) for c in row) + " |")
    return "\n".join(lines)


def metrics_table(data: Mapping[str, Any]) -> str:
    """Markdown table: one row per arm, one column per metric (union over arms)."""
    metrics = data["metrics"]
    columns: list[str] = []
    for values in metrics.values():
        for name in values:
            if name not in columns:
                columns.append(name)
    rows = [[arm] + [values.get(c) for c in columns] for arm, values in metrics.items()]
    return _markdown_table(["arm"] + columns, rows)


def checks_table(data: Mapping[str, Any]) -> str:
    """Markdown table of the claim's checks."""
    rows = [
        [c["name"], c.get("value"), f"{c['op']} {_fmt(c['target'])}", "✅" if c["passed"] else "❌"]
        for c in data["claim"]["checks"]
    ]
    return _markdown_table(["check", "measured", "target", "held"], rows)


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
    for c in data["claim"]["checks"]:
        mark = "PASS" if c["passed"] else "FAIL"
        lines.append(f"  [{mark}] {c['name']}: {_fmt(c.get('value'))} {c['op']} {_fmt(c['target'])}")
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
    return _markdown_table(["key", "paper", "area", "status"], rows)


def _summary_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    if not results:
        return "_No results yet: run `icml26 run all --quick`, then `icml26 report`._"
    rows = []
    for key, data in results.items():
        checks = data["claim"]["checks"]
        held = sum(c["passed"] for c in checks)
        rows.append([
            f"[{key}](results/README.md#{key})",
            data["setting"],
            f"{held}/{len(checks)}",
            "✅" if data["claim"]["passed"] else "❌",
            f"{data['provenance']['wall_time_s']:.0f} s",
        ])
    return _markdown_table(["paper", "setting", "checks held", "claim", "wall time"], rows)


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


def _paper_section(data: Mapping[str, Any], results_dir: Path, readme_dir: Path) -> str:
    prov = data["provenance"]
    lines = [
        f"_Generated by `icml26 report` from `results/{data['paper']}/result.json` "
        f"(setting `{data['setting']}`, seed {data['seed']}, {prov['wall_time_s']:.0f} s on "
        f"{prov['threads']} thread(s), {prov['utc']}); do not edit._",
        "",
        f"Verdict: {'claim held ✅' if data['claim']['passed'] else 'claim not held ❌'}",
        "",
        *_tables_notes_figures(data, results_dir, readme_dir, alt=lambda fig: fig),
    ]
    return "\n".join(lines)


def _tables_notes_figures(data: Mapping[str, Any], results_dir: Path, readme_dir: Path,
                          alt: Callable[[str], str]) -> list[str]:
    """Checks and metrics tables, notes as quotes, and the figures that exist, linked from ``readme_dir``."""
    lines = [checks_table(data), "", metrics_table(data), ""]
    for note in data.get("notes", []):
        lines += [f"> {note}", ""]
    for fig in data["figures"]:
        path = (Path(results_dir) / data["paper"] / fig).resolve()
        if path.exists():
            lines += [f"![{alt(fig)}]({Path(os.path.relpath(path, Path(readme_dir).resolve())).as_posix()})", ""]
    return lines


def report(results_dir: str | os.PathLike = "results", readme: str | os.PathLike | None = None) -> Path:
    """Rebuild ``<results_dir>/README.md`` and the top-level README's tables from JSON.

    Each paper's own README is updated too, between the same marker comments, when
    it has them. ``readme`` defaults to ``README.md`` beside ``results_dir``; it is updated only
    between the marker comments and only if it exists. Returns the results README path.
    """
    from icml26 import registry

    results_dir = Path(results_dir)
    results = collect(results_dir)
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
            f"Claim: {data['claim']['text']}",
            "",
            f"Verdict: {'held ✅' if data['claim']['passed'] else 'not held ❌'} · setting `{data['setting']}` · "
            f"seed {data['seed']} · {prov['wall_time_s']:.1f} s on {prov['threads']} thread(s), "
            f"{prov['device']} · icml26 {prov['icml26']} ({str(prov.get('git_commit') or 'no git')[:10]}) · {prov['utc']}",
            "",
            *_tables_notes_figures(data, results_dir, results_dir, alt=lambda fig, key=key: f"{key} {fig}"),
        ]
    out = results_dir / "README.md"
    atomic_write_text(out, "\n".join(parts).rstrip() + "\n")

    # Each paper's own README carries its tables between the same markers.
    for key, data in results.items():
        spec = registry.PAPERS.get(key)
        paper_readme = spec.folder / "README.md" if spec else None
        if paper_readme is None or not paper_readme.exists():
            continue
        text = paper_readme.read_text(encoding="utf-8")
        if RESULTS_START not in text:
            continue
        body = _paper_section(data, results_dir, paper_readme.parent)
        atomic_write_text(paper_readme, _replace_between(text, RESULTS_START, RESULTS_END, body))

    readme = Path(readme) if readme is not None else results_dir.resolve().parent / "README.md"
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        text = _replace_between(text, RESULTS_START, RESULTS_END, _summary_table(results))
        text = _replace_between(text, PAPERS_START, PAPERS_END, _papers_table())
        atomic_write_text(readme, text)
    return out


# ---------------------------------------------------------------------------
# Plots (from JSON only)
# ---------------------------------------------------------------------------
def plot_curves(data: Mapping[str, Any], names: Sequence[str] | None = None):
    """One matplotlib figure per curve of a result, as ``{file name: Figure}``.

    A curve is ``{"x": [...], "series": {arm: [...]}, "xlabel", "ylabel", "title",
    "logx", "logy"}`` (the last five optional). ``None`` values are gaps.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    figures = {}
    for name, curve in data["curves"].items():
        if names is not None and name not in names:
            continue
        fig, ax = plt.subplots(figsize=(6.0, 4.0), layout="constrained")
        x = [float("nan") if v is None else v for v in curve["x"]]
        for arm, ys in curve["series"].items():
            ys = [float("nan") if v is None else v for v in ys]
            ax.plot(x, ys, marker="o" if len(x) <= 12 else None, markersize=3, label=arm)
        if curve.get("logx"):
            ax.set_xscale("log")
        if curve.get("logy"):
            ax.set_yscale("log")
        ax.set_xlabel(curve.get("xlabel", "x"))
        ax.set_ylabel(curve.get("ylabel", name))
        ax.set_title(curve.get("title", f"{data['paper']}: {name}"))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        figures[f"{name}.png"] = fig
    return figures
