"""Artifact integrity: every corrupted result gives a one-line error naming the file and the field
(or is a documented acceptance), report writes nothing when one result is bad, notes and names
cannot break the markdown, figure links stay inside the results folder."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from icml26.aggregate import aggregate_results
from icml26.cli import main
from icml26.results import ResultError, collect, config_hash, load_result, md_escape, report

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


def _fixture_with_run(tmp_path, name="longer", figure=True):
    results = tmp_path / "results"
    (results / "zz_fixture" / name).mkdir(parents=True)
    shutil.copy(FIXTURE, results / "zz_fixture" / "result.json")
    run = copy.deepcopy(GOOD)
    run["notes"] = ["the longer run's own note"]
    if figure:
        run["figures"] = ["curve.png"]
        (results / "zz_fixture" / name / "curve.png").write_bytes(b"png")
    (results / "zz_fixture" / name / "result.json").write_text(json.dumps(run))
    return results


def test_further_runs_are_reported_with_their_own_figures(tmp_path):
    from icml26.results import collect, collect_extra

    results = _fixture_with_run(tmp_path)
    (results / "zz_fixture" / "seeds" / "1").mkdir(parents=True)  # per-seed results are not further runs
    shutil.copy(FIXTURE, results / "zz_fixture" / "seeds" / "1" / "result.json")
    assert list(collect(results)) == ["zz_fixture"]
    assert {k: list(v) for k, v in collect_extra(results).items()} == {"zz_fixture": ["longer"]}
    assert {k: list(v) for k, v in collect_extra(results, paper="zz_fixture").items()} == {"zz_fixture": ["longer"]}
    assert collect_extra(results, paper="other") == {}
    with pytest.raises(ValueError, match="paper="):
        collect_extra(results, paper="../zz_fixture")
    report(results)
    page = (results / "README.md").read_text()
    assert "### zz_fixture · longer" in page and "the longer run's own note" in page
    assert "](zz_fixture/longer/curve.png)" in page


def test_a_corrupt_further_run_stops_the_report_before_any_write(tmp_path):
    results = _fixture_with_run(tmp_path)
    (results / "zz_fixture" / "longer" / "result.json").write_text("{ not json")
    with pytest.raises(ResultError, match="longer"):
        report(results)
    assert not (results / "README.md").exists()


def test_a_further_run_under_another_papers_folder_is_rejected(tmp_path):
    results = _fixture_with_run(tmp_path)
    data = copy.deepcopy(GOOD)
    data["paper"] = "other"
    (results / "zz_fixture" / "longer" / "result.json").write_text(json.dumps(data))
    with pytest.raises(ResultError, match="folder says 'zz_fixture'"):
        report(results)


def test_a_further_run_needs_a_plain_name_and_its_main_result(tmp_path):
    results = _fixture_with_run(tmp_path, name="bad|name", figure=False)
    with pytest.raises(ResultError, match=re.escape("rename 'bad|name'")):
        report(results)
    shutil.rmtree(results / "zz_fixture" / "bad|name")
    results = _fixture_with_run(tmp_path, name="orphan", figure=False)
    (results / "zz_fixture" / "result.json").unlink()
    with pytest.raises(ResultError, match="without its main result"):
        report(results)
    assert not (results / "README.md").exists()


def test_paper_readme_markers_get_the_further_run_and_stale_markers_raise(tmp_path):
    from icml26.results import collect, collect_extra, extra_markers, fill_paper_readme

    results = _fixture_with_run(tmp_path)
    start, end = extra_markers("longer")
    text = f"intro\n<!-- results:start -->\nold\n<!-- results:end -->\nprose\n{start}\nstale\n{end}\nafter\n"
    main_result = collect(results)["zz_fixture"]
    runs = collect_extra(results)["zz_fixture"]
    out = fill_paper_readme(text, main_result, runs, results, tmp_path)
    assert "stale" not in out and "old" not in out and out.endswith("after\n")
    longer = out[out.index(start):out.index(end)]
    assert "results/zz_fixture/longer/result.json" in longer and "the longer run's own note" in longer
    assert "(results/zz_fixture/longer/curve.png)" in longer
    assert "the longer run's own note" not in out[:out.index(start)]  # the main section keeps its own notes
    s2, e2 = extra_markers("missing")
    with pytest.raises(ResultError, match="'missing'.*remove the markers"):
        fill_paper_readme(text + f"{s2}\n{e2}\n", main_result, runs, results, tmp_path)


def test_every_marked_further_run_in_the_package_readmes_exists():
    from icml26 import registry
    from icml26.results import REPO_RESULTS, _EXTRA_START

    for key in registry.keys(status="implemented"):
        text = (registry.get(key).folder / "README.md").read_text(encoding="utf-8")
        for name in _EXTRA_START.findall(text):
            assert (REPO_RESULTS / key / name / "result.json").is_file(), (key, name)


def test_every_headline_check_read_in_a_further_run_is_measured_there_as_a_headline():
    """A declared ``run`` (CheckSpec.run) names a committed further run that measures the check, with the
    role the declarations give it: otherwise the paper's claim could not be read from it."""
    from icml26 import registry
    from icml26.budgets import headline_runs
    from icml26.results import REPO_RESULTS

    for key in registry.keys(status="implemented"):
        for cid, name in headline_runs(key).items():
            path = REPO_RESULTS / key / name / "result.json"
            assert path.is_file(), (key, cid, name)
            checks = {c.get("id"): c for c in load_result(path)["claim"]["checks"]}
            assert cid in checks and checks[cid].get("value") is not None, (key, cid, name)
            assert checks[cid].get("role") == "headline", f"{key}/{name}: rerun `icml26 aggregate {key} --run {name}`"


def test_timing_table_reads_run_all_json_and_refuses_a_malformed_one(tmp_path):
    from icml26.results import timing_table

    path = tmp_path / "run_all.json"
    assert "No timing yet" in timing_table(path)
    good = {"wall_time_s": 1500.4, "serial_time_s": 2900.0, "workers": 2, "cpu": "AMD EPYC <b>",
            "papers": [{"paper": "hamu", "status": "ok", "claim_status": "refuted", "wall_time_s": 512.3,
                        "stage_seconds": {"load": 12.0, "unlearn <all>": 400.6, "score": 99.7}},
                       {"paper": "fox", "status": "failed", "error": "x", "wall_time_s": None}]}
    path.write_text(json.dumps(good))
    text = timing_table(path)
    assert "| hamu | refuted | 512 | unlearn &lt;all> (401 s) |" in text and "| fox | failed | – | – |" in text
    assert "1500 s of wall time on 2 worker(s)" in text and "<b>" not in text
    fast = {"gemm_gflops": 52.6, "small_steps_per_s": 730.0}
    path.write_text(json.dumps({**good, "cpu_capability": "AVX2", "machine_speed": {"before": fast, "after": fast}}))
    assert ("(AMD EPYC &lt;b>, AVX2; one thread before: 53 GFLOP/s in float32 products and 730 small training "
            "steps/s, after:") in timing_table(path)
    for bad in ({**good, "workers": 0}, {**good, "wall_time_s": "fast"}, {**good, "papers": [{"paper": 1}]},
                {**good, "papers": [{"paper": "a", "status": "ok", "wall_time_s": -1}]},
                {**good, "papers": [{"paper": "a", "status": "ok", "wall_time_s": 1, "stage_seconds": {"x": -1}}]},
                {**good, "papers": [{"paper": "a", "status": "ok", "wall_time_s": 1, "stage_seconds": [1]}]},
                {**good, "machine_speed": {"before": {"gemm_gflops": 0, "small_steps_per_s": 1}}},
                {**good, "machine_speed": {"during": {"gemm_gflops": 1, "small_steps_per_s": 1}}}):
        path.write_text(json.dumps(bad))
        with pytest.raises(ResultError, match="run_all.json"):
            timing_table(path)


def test_timing_table_sets_each_paper_beside_its_seconds_before(tmp_path):
    from icml26.results import timing_table

    path, before = tmp_path / "run_all.json", tmp_path / "run_all_before.json"
    path.write_text(json.dumps({"wall_time_s": 900.0, "serial_time_s": 1700.0, "workers": 2, "papers": [
        {"paper": "hamu", "status": "ok", "claim_status": "refuted", "wall_time_s": 250.0},
        {"paper": "fox", "status": "ok", "wall_time_s": 1450.0},
        {"paper": "new", "status": "failed", "wall_time_s": None}]}))
    assert "seconds before" not in timing_table(path, before)  # no file: the table as before
    good = {"commit": "bdf1e51179d1ab36f0106db61bd724c68f0857d1", "serial_time_s": 1500.0,
            "papers": [{"paper": "hamu", "wall_time_s": 500.0}, {"paper": "fox", "wall_time_s": 1000.0}]}
    before.write_text(json.dumps(good))
    text = timing_table(path, before)
    assert "| paper | claim (this run) | seconds (one thread) | seconds before | now / before |" in text
    assert "| hamu | refuted | 250 | 500 | 0.50 | – |" in text and "| fox | ok | 1450 | 1000 | 1.45 | – |" in text
    assert "| new | failed | – | – | – | – |" in text
    assert "Before: 1500 s run one after another (each paper's mean committed seed at bdf1e51" in text
    for bad in ({**good, "commit": None}, {**good, "serial_time_s": -1}, {**good, "papers": {}},
                {**good, "papers": [{"paper": "hamu", "wall_time_s": "slow"}]},
                {**good, "papers": [{"paper": "hamu", "wall_time_s": 1.0}, {"paper": "hamu", "wall_time_s": 2.0}]}):
        before.write_text(json.dumps(bad))
        with pytest.raises(ResultError, match="run_all_before.json"):
            timing_table(path, before)


def test_the_committed_seconds_before_are_the_committed_seeds_at_their_commit():
    """results/run_all_before.json against git: each paper's mean provenance.wall_time_s over its seeds at the
    commit the file names (skipped where that commit is not in the clone's history)."""
    import statistics
    import subprocess

    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "results" / "run_all_before.json").read_text())
    commit = data["commit"]

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    if shutil.which("git") is None or git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {commit[:7]} is not in this clone's history")
    names = git("ls-tree", "-r", "--name-only", commit, "results/").stdout.split()
    seeds: dict[str, dict[str, float]] = {}
    for name in names:
        parts = name.split("/")
        if len(parts) == 5 and parts[2] == "seeds" and parts[4] == "result.json":
            provenance = json.loads(git("show", f"{commit}:{name}").stdout)["provenance"]
            seeds.setdefault(parts[1], {})[parts[3]] = provenance["wall_time_s"]
    rows = {row["paper"]: row for row in data["papers"]}
    assert set(rows) == set(seeds)
    for paper, row in rows.items():
        assert row["seeds"] == seeds[paper], paper
        assert row["wall_time_s"] == pytest.approx(statistics.mean(seeds[paper].values()), abs=0.005), paper
    assert data["serial_time_s"] == pytest.approx(sum(statistics.mean(s.values()) for s in seeds.values()), abs=0.01)
    assert round(data["serial_time_s"]) == 6489  # the figure the timing goal quotes


# ---------------------------------------------------------------------------
# An aggregate must agree with the seed results kept beside it
# ---------------------------------------------------------------------------
def _seed(seed, value):
    head = {"id": "h", "name": "h", "op": ">=", "target": 0.0, "value": value, "passed": value >= 0.0,
            "source": "ours", "ref": "r", "role": "headline"}
    return {"schema": 2, "paper": "zz", "quick": True, "setting": "quick", "seed": seed, "config": {"steps": 1},
            "config_hash": config_hash("zz", "quick", {"steps": 1}),
            "metrics": {"m": {"x": value}}, "claim": {"text": "t", "checks": [head], "passed": value >= 0.0},
            "curves": {}, "figures": [], "notes": [],
            "provenance": {"icml26": "0", "python": "3", "numpy": "2", "torch": "2", "platform": "p", "threads": 1,
                           "device": "cpu", "wall_time_s": 1.0, "utc": "u"}}


def _sweep_folder(root, values, *, counted=None):
    folder = root / "zz"
    per_seed = [_seed(s, v) for s, v in enumerate(values)]
    for data in per_seed:
        (folder / "seeds" / str(data["seed"])).mkdir(parents=True)
        (folder / "seeds" / str(data["seed"]) / "result.json").write_text(json.dumps(data))
    agg = aggregate_results([per_seed[s] for s in (counted if counted is not None else range(len(values)))])
    agg["config_hash"] = per_seed[0]["config_hash"]
    (folder / "result.json").write_text(json.dumps(agg))
    return folder


def test_an_aggregate_that_agrees_with_its_seeds_is_read(tmp_path):
    _sweep_folder(tmp_path, [1.0, 1.2, 0.9])
    assert collect(tmp_path)["zz"]["claim"]["checks"][0]["held_on"] == 3


def test_a_stale_aggregate_that_leaves_out_a_seed_of_its_configuration_is_refused(tmp_path):
    _sweep_folder(tmp_path, [1.0, 1.2, 0.9, -3.0], counted=[0, 1, 2])
    with pytest.raises(ResultError, match=r"seed\(s\) \[3\].*icml26 aggregate zz"):
        collect(tmp_path)


def test_an_aggregate_whose_numbers_its_seeds_do_not_give_is_refused(tmp_path):
    folder = _sweep_folder(tmp_path, [1.0, 1.2, 0.9])
    seed = json.loads((folder / "seeds" / "1" / "result.json").read_text())
    seed["claim"]["checks"][0].update(value=-1.0, passed=False)   # a seed edited after the aggregate
    seed["claim"]["passed"] = False
    seed["metrics"]["m"]["x"] = -1.0
    (folder / "seeds" / "1" / "result.json").write_text(json.dumps(seed))
    with pytest.raises(ResultError, match=r"checks\[0\]\.value.*its seeds give"):
        collect(tmp_path)


def test_an_aggregate_listing_a_seed_without_its_result_is_refused(tmp_path):
    folder = _sweep_folder(tmp_path, [1.0, 1.2, 0.9])
    shutil.rmtree(folder / "seeds" / "2")
    with pytest.raises(ResultError, match=r"seed\(s\) \[2\] with no result"):
        collect(tmp_path)


def test_an_aggregate_beside_another_configurations_seed_is_refused(tmp_path):
    folder = _sweep_folder(tmp_path, [1.0, 1.2, 0.9])
    other = _seed(5, 1.0)
    other["config"] = {"steps": 2}
    other["config_hash"] = config_hash("zz", "quick", {"steps": 2})
    (folder / "seeds" / "5").mkdir()
    (folder / "seeds" / "5" / "result.json").write_text(json.dumps(other))
    with pytest.raises(ResultError, match="another configuration"):
        collect(tmp_path)


@pytest.mark.parametrize("edit", [
    lambda d: d["claim"].update(reason="<script>alert(1)</script>"),
    lambda d: d["metrics"].update({"<img src=x>": {"<script>": 1.0}}),
    lambda d: d["provenance"].update(device="<!-- results:end -->", utc="<img src=x>"),
    lambda d: d["claim"].update(text="<!-- results:start --><script>"),
])
def test_no_string_a_result_copies_can_add_markup_or_markers(edit, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    folder = _sweep_folder(results, [1.0, 1.2, 0.9])
    data = json.loads((folder / "result.json").read_text())
    edit(data)
    (folder / "result.json").write_text(json.dumps(data))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- results:start -->\n<!-- results:end -->\n<!-- papers:start -->\n<!-- papers:end -->\n")
    report(results, readme=readme)
    for page in ((results / "README.md").read_text(), readme.read_text()):
        assert "<script" not in page and "<img" not in page
        assert page.count("<!-- results:end -->") <= 1 and page.count("<!-- results:start -->") <= 1
