"""Artifact integrity: every corrupted result gives a one-line error naming the file and the field
(or is a documented acceptance), report writes nothing when one result is bad, notes and names
cannot break the markdown, figure links stay inside the results folder."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from icml26.cli import main
from icml26.results import ResultError, load_result, md_escape, report

FIXTURE = Path(__file__).parent / "fixtures" / "result_fixture.json"
GOOD = json.loads(FIXTURE.read_text())


def _mutate(fn):
    data = copy.deepcopy(GOOD)
    fn(data)
    return json.dumps(data)


# (name, file text, what the one-line error must mention)
CORRUPT = [
    ("not json", "{ this is not json", "not valid JSON"),
    ("empty file", "", "not valid JSON"),
    ("top level a list", "[1, 2]", "top level"),
    ("NaN literal", json.dumps(GOOD).replace('"value": 0.03', '"value": NaN'), "NaN"),
    ("missing field", _mutate(lambda d: d.pop("metrics")), "'metrics'"),
    ("wrong type", _mutate(lambda d: d.update(seed="zero")), "'seed'"),
    ("unknown schema", _mutate(lambda d: d.update(schema=99)), "'schema'"),
    ("string target", _mutate(lambda d: d["claim"]["checks"][0].update(target="0.02")), "target"),
    ("passed contradicts value", _mutate(lambda d: d["claim"]["checks"][0].update(value=0.0)), "passed"),
    ("claim.passed contradicts checks", _mutate(lambda d: d["claim"].update(passed=False)), "claim.passed"),
    ("figure outside the folder", _mutate(lambda d: d.update(figures=["../../../etc/passwd.png"])), "figures[0]"),
    ("figure not a png name", _mutate(lambda d: d.update(figures=["/abs/x.png"])), "figures[0]"),
    ("unknown op", _mutate(lambda d: d["claim"]["checks"][0].update(op="~")), ".op"),
    ("metric not a number", _mutate(lambda d: d["metrics"]["HAMU-Q"].update(retain_acc="high")), "retain_acc"),
    ("curve length mismatch", _mutate(lambda d: d.update(curves={"c": {"x": [1, 2], "series": {"a": [1]}}})), "curves.c"),
    ("provenance field missing", _mutate(lambda d: d["provenance"].pop("torch")), "provenance.torch"),
    ("notes not strings", _mutate(lambda d: d.update(notes=[{"x": 1}])), "notes"),
    ("paper differs from folder", _mutate(lambda d: d.update(paper="other")), "folder says"),
]


@pytest.mark.parametrize("name,text,needle", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_result_is_one_line_naming_file_and_field(name, text, needle, tmp_path, capsys):
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    path = results / "zz_fixture" / "result.json"
    path.write_text(text)
    readme = tmp_path / "README.md"
    readme.write_text("<!-- results:start -->\nold\n<!-- results:end -->\n<!-- papers:start -->\nold\n<!-- papers:end -->\n")
    assert main(["report", "--results", str(results), "--readme", str(readme)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err and needle in err, err
    assert not (results / "README.md").exists(), "report must write nothing when a result is bad"
    assert "old" in readme.read_text()


def test_markdown_breaking_notes_and_names_are_escaped(tmp_path):
    data = copy.deepcopy(GOOD)
    data["notes"] = ["a | b\n\n# heading <!-- results:end --> <img src=x onerror=alert(1)>"]
    data["claim"]["checks"][0]["name"] = "gap | with pipe\nand newline"
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    (results / "zz_fixture" / "result.json").write_text(json.dumps(data))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- results:start -->\n<!-- results:end -->\n<!-- papers:start -->\n<!-- papers:end -->\n")
    report(results, readme=readme)
    page = (results / "README.md").read_text()
    assert "<!-- results:end -->" not in page and "<img" not in page
    assert "gap \\| with pipe and newline" in page
    assert "> a \\| b # heading &lt;!-- results:end --&gt;".replace("--&gt;", "-->") in page
    text = readme.read_text()
    assert text.count("<!-- results:end -->") == 1


def test_md_escape_keeps_comparisons_readable():
    assert md_escape("ratio < 0.5 and x <= 2") == "ratio < 0.5 and x <= 2"
    assert md_escape("<script>") == "&lt;script>"


def test_figure_links_stay_inside_the_results_folder(tmp_path):
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    (results / "zz_fixture" / "ok.png").write_bytes(b"png")
    data = copy.deepcopy(GOOD)
    data["figures"] = ["ok.png"]
    (results / "zz_fixture" / "result.json").write_text(json.dumps(data))
    report(results)
    page = (results / "README.md").read_text()
    assert "](zz_fixture/ok.png)" in page


def test_load_result_unreadable_path(tmp_path):
    with pytest.raises(ResultError, match="cannot be read"):
        load_result(tmp_path / "missing.json")


def test_report_leaves_package_readmes_alone_for_a_foreign_folder(tmp_path):
    from icml26 import registry

    before = {k: (registry.get(k).folder / "README.md").read_text() for k in registry.keys(status="implemented")}
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    shutil.copy(FIXTURE, results / "zz_fixture" / "result.json")
    report(results)
    after = {k: (registry.get(k).folder / "README.md").read_text() for k in before}
    assert before == after
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["README.md", "result.json"]
