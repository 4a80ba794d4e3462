"""The report built from the result files (:mod:`icml26.results`).

:func:`report` rebuilds ``results/README.md`` (every result and further run), the results table of
the top-level README, and the generated sections of the paper READMEs from the JSON alone;
:func:`verdict_table` is the plain-text verdict printed after a run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from icml26.aggregate import claim_status as _claim_status
from icml26.aggregate import effective_verdict as _effective_verdict
from icml26.aggregate import role_counts as _role_counts
from icml26.budgets import claim_across_budgets, claim_across_runs, with_headline_runs
from icml26.results import (
    ResultError,
    _is_number,
    _reject_constant,
    atomic_write_text,
    collect,
    collect_extra,
)

__all__ = ["report", "verdict_table"]


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
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
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


_VERDICT_MARK = {"held": "✅", "not held": "❌", "unresolved": "❔", "gated": "⏸"}
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
                 + _verdict_text(c), _source_text(c)] for c in checks]
        return _markdown_table(["role", "check", "mean [95% CI]", "target", "units", "held on seeds", "verdict",
                                "target's source"], rows)
    rows = [
        [c.get("role", "–"), c["name"], c.get("value"), f"{c['op']} {_fmt(c['target'])}",
         ("(diagnostic) " if c.get("role") == "diagnostic" else "") + (
             _verdict_text(c) if c.get("gated_by") else ("✅" if c["passed"] else "❌")),
         _source_text(c)]
        for c in checks
    ]
    return _markdown_table(["role", "check", "measured", "target", "held", "target's source"], rows)


def _verdict_text(c: Mapping[str, Any]) -> str:
    """``✅ held`` …, or for a check whose precondition did not hold ``⏸ gated (requires …)``."""
    v = _effective_verdict(c)
    text = f"{_VERDICT_MARK[v]} {v}"
    return text + f" (requires {', '.join(c['gated_by'])})" if v == "gated" else text


def claim_line(data: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """One line: the claim's status and why (with the headline checks a further run measures and the budget
    cross-check where a further run has one; ``runs=None``: the run's own status only, as for a further run)."""
    if runs is None:
        claim = data["claim"]
        status, reason = claim.get("status"), claim.get("reason")
        if not status or not reason:
            status, reason = _claim_status(claim["checks"])
        return f"{_STATUS_MARK.get(status, status)}: {md_escape(reason)}"
    status, reason = claim_across_runs(data, runs)
    return f"{_STATUS_MARK.get(status, status)}: {md_escape(reason)}"


def counts_text(data: Mapping[str, Any]) -> str:
    """``headline 1/2 · supporting 3/5 (1 unresolved) · diagnostic 2`` for a result."""
    counts = data["claim"].get("counts") or _role_counts(data["claim"]["checks"])
    parts = []
    for role in ("headline", "supporting"):
        c = counts.get(role, {})
        total = sum(c.values())
        if total:
            open_ = [f"{c[v]} {v}" for v in ("unresolved", "gated") if c.get(v)]
            parts.append(f"{role} {c.get('held', 0)}/{total}" + (f" ({', '.join(open_)})" if open_ else ""))
    diag = sum(counts.get("diagnostic", {}).values())
    if diag:
        parts.append(f"diagnostic {diag}")
    return " · ".join(parts)


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
            mark = {"held": "PASS", "not held": "FAIL", "unresolved": "UNRESOLVED", "gated": "GATED"}[
                _effective_verdict(c)]
            lines.append(f"  {role} [{mark}] {c['name']}: {_measured(c)} {c['op']} {_fmt(c['target'])} "
                         f"(held on {c['held_on']}/{c['seeds']} seeds; {_units_text(c)})")
        else:
            mark = "GATED" if c.get("gated_by") else ("PASS" if c["passed"] else "FAIL")
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


def _read_json(path: Path) -> Any:
    """The JSON in ``path``; an unreadable or malformed file (NaN included) raises :class:`ResultError`."""
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ResultError(f"{path}: not a readable JSON file ({exc})") from None


def _before_seconds(path: Path) -> tuple[dict[str, float], Mapping[str, Any]] | None:
    """Per paper its seconds a seed took before the timing work (``run_all_before.json``: the mean
    committed seed of each paper at one commit), or ``None`` when the file is absent."""
    if not path.is_file():
        return None
    data = _read_json(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("papers"), list) or not isinstance(
            data.get("commit"), str) or not _is_number(data.get("serial_time_s")) or data["serial_time_s"] < 0:
        raise ResultError(f"{path}: needs 'commit', a non-negative 'serial_time_s' and a list 'papers'")
    seconds: dict[str, float] = {}
    for i, row in enumerate(data["papers"]):
        if not isinstance(row, Mapping) or not isinstance(row.get("paper"), str) or not _is_number(
                row.get("wall_time_s")) or row["wall_time_s"] < 0 or row["paper"] in seconds:
            raise ResultError(f"{path}: field 'papers[{i}]' needs a paper name (once) and a non-negative wall_time_s")
        seconds[row["paper"]] = float(row["wall_time_s"])
    return seconds, data


def timing_table(path: str | os.PathLike, before: str | os.PathLike | None = None) -> str:
    """The main job's timing from ``run_all.json`` (written by ``icml26 run all``): per paper its status,
    seconds on one thread and its longest announced stage (``stage_seconds``), then the wall time of the
    whole job beside the serial sum, on which machine. With ``before`` (a ``run_all_before.json`` that
    exists: per paper the seconds of a seed at an earlier commit) each row also shows those seconds and
    the ratio now / before. Every field is checked; a malformed file raises :class:`ResultError`."""
    path = Path(path)
    if not path.is_file():
        return "_No timing yet: `make run` writes `results/run_all.json`._"
    earlier = None if before is None else _before_seconds(Path(before))
    data = _read_json(path)
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
        stages = row.get("stage_seconds")
        if stages is not None and (not isinstance(stages, Mapping) or not all(
                isinstance(k, str) and _is_number(v) and v >= 0 for k, v in stages.items())):
            raise ResultError(f"{path}: field 'papers[{i}].stage_seconds' must map stage names to seconds")
        largest = max(stages.items(), key=lambda kv: kv[1]) if stages else None
        cells = [row["paper"], row.get("claim_status") or row["status"], "–" if seconds is None else f"{seconds:.0f}"]
        if earlier is not None:
            then = earlier[0].get(row["paper"])
            cells += ["–" if then is None else f"{then:.0f}",
                      "–" if then is None or seconds is None or then == 0 else f"{seconds / then:.2f}"]
        rows.append(cells + ["–" if largest is None else md_escape(f"{largest[0]} ({largest[1]:.0f} s)")])
    speed = data.get("machine_speed")
    machine = ""
    if speed is not None:
        names = ("gemm_gflops", "small_steps_per_s")
        if not (isinstance(speed, Mapping) and set(speed) <= {"before", "after"} and speed and all(
                isinstance(v, Mapping) and all(_is_number(v.get(n)) and v[n] > 0 for n in names)
                for v in speed.values())):
            raise ResultError(f"{path}: field 'machine_speed' must hold 'before' and/or 'after', each with positive "
                              f"{' and '.join(names)}")
        machine = "; one thread " + ", ".join(
            f"{when}: {v['gemm_gflops']:.0f} GFLOP/s in float32 products and {v['small_steps_per_s']:.0f} small "
            f"training steps/s" for when, v in speed.items())
    head = ["paper", "claim (this run)", "seconds (one thread)"]
    if earlier is not None:
        head += ["seconds before", "now / before"]
    table = _markdown_table(head + ["its longest stage"], rows)
    cpu = data.get("cpu", "unknown CPU") + (f", {data['cpu_capability']}" if data.get("cpu_capability") else "")
    text = md_escape(f"Whole job: {data['wall_time_s']:.0f} s of wall time on {data['workers']} "
                     f"worker(s) ({cpu}{machine}), against {data['serial_time_s']:.0f} s run one after another.")
    if earlier is not None:
        text += " " + md_escape(f"Before: {earlier[1]['serial_time_s']:.0f} s run one after another (each paper's "
                                f"mean committed seed at {earlier[1]['commit'][:7]}, `{Path(before).name}`).")
    return table + "\n\n" + text


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
    seeds = len(data["seeds"]) if "seeds" in data else 1
    pooled = sorted({(c.get("unit"), c.get("n")) for c in checks if c.get("unit") not in (None, "master seed")},
                    key=lambda t: -(t[1] or 0))
    if pooled:
        unit, n = pooled[0]
        return f"{seeds} seeds × {_plural(unit)} (n = {n})"
    return str(seeds)


def _plural(noun: str) -> str:
    """English plural of a unit's name ("prefix" -> "prefixes", "draw" -> "draws"); a parenthetical after
    the name stays as it is ("game (fraction checks)" -> "games (fraction checks)")."""
    head, sep, rest = noun.partition(" (")
    return head + ("es" if head.endswith(("s", "x", "z", "ch", "sh")) else "s") + sep + rest


def _deciding(data: Mapping[str, Any], status: str) -> str:
    """The ids of the headline checks that decided a status (for the summary table)."""
    want = {"supported": "held", "refuted": "not held", "inconclusive": "unresolved"}.get(status)
    ids = []
    for c in data["claim"]["checks"]:
        if c.get("role") != "headline":
            continue
        v = _effective_verdict(c)
        if want is None or v == want or (status == "inconclusive" and v == "gated"):
            ids.append(str(c.get("id") or c["name"]))
    return ", ".join(ids)


def _summary_table(results: Mapping[str, Mapping[str, Any]],
                   extra: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None) -> str:
    if not results:
        return "_No results yet: run `icml26 run all --quick`, then `icml26 report`._"
    rows = []
    tally = dict.fromkeys(("supported", "refuted", "inconclusive", "budget-dependent"), 0)
    for key, data in results.items():
        runs = (extra or {}).get(key, {})
        whole = with_headline_runs(data, runs)  # with the headline checks further runs measure
        status, why = claim_across_budgets(whole, runs)
        tally[status] = tally.get(status, 0) + 1
        # read at two budgets when any headline budget check was compared with a budget_x<k> run
        budgets = (" (one budget)" if "(one budget only:" in why
                   else " (two budgets)" if status != "budget-dependent" and "budget_x" in why else "")
        rows.append([
            f"[{key}](results/README.md#{key})",
            data["setting"],
            _units_of(data),
            _STATUS_MARK.get(status, status) + budgets,
            _deciding(whole, status if status != "budget-dependent" else ""),
            counts_text(whole),
            f"{data['provenance']['wall_time_s']:.0f} s",
        ])
    n = len(results)
    table = _markdown_table(["paper", "setting", "units", "claim", "decided by (headline checks)",
                             "checks held, by role", "wall time (all seeds)"], rows, raw=(0,))
    return (table + "\n\n" + f"{n} papers: " + ", ".join(f"{v} {k}" for k, v in tally.items() if v)
            + ". " + md_escape(CLAIM_TEXT))


#: How the claim column is decided, printed under the summary table.
CLAIM_TEXT = ("A paper's claim is decided by its headline checks only (the abstract's central claim): supported "
              "when every one holds, refuted when one does not, inconclusive otherwise; budget-dependent when a "
              "headline comparison of trained models changes verdict at >= 3x the training budget. Supporting "
              "checks are scored but do not decide it; diagnostics are never scored.")


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
        f"Claim: {claim_line(data, (runs or {}) if name is None else None)} · checks held: "
        f"{counts_text(with_headline_runs(data, runs or {}) if name is None else data)}",
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
        whole = with_headline_runs(data, extra.get(key, {}))  # with the headline checks further runs measure
        parts += [
            f"## {key}",
            "",
            f"**{spec.title if spec else key}**",
            "",
            f"Claim: {md_escape(data['claim']['text'])}",
            "",
            f"Claim: {claim_line(data, extra.get(key, {}))}",
            "",
            f"Checks held: {counts_text(whole)} · setting `{data['setting']}` · "
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
            timing = timing_table(results_dir / "run_all.json", results_dir / "run_all_before.json")
            text = _replace_between(text, TIMING_START, TIMING_END, timing)
        writes.append((readme, text))
    # everything was built and checked; now write
    for path, text in writes:
        atomic_write_text(path, text)
    return out
