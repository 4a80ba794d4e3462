"""The runner and result files, exercised through an in-memory fake paper."""

import json

import pytest

from icml26 import runner
from icml26.results import Result, ResultError, load_result, validate


def test_run_writes_valid_result_and_plot(fake_paper, tmp_path):
    result = runner.run("zz_fake", quick=True, seed=3, out=tmp_path, progress=False)
    data = load_result(tmp_path / "zz_fake" / "result.json")
    assert data == result.data
    assert data["setting"] == "quick" and data["quick"] is True and data["seed"] == 3
    assert data["config"]["steps"] == 10
    assert data["figures"] == ["score.png"]
    assert (tmp_path / "zz_fake" / "score.png").read_bytes()[:4] == b"\x89PNG"
    assert data["curves"]["score"]["series"]["method"][2] is None  # NaN became a gap
    prov = data["provenance"]
    assert prov["wall_time_s"] >= 0 and prov["threads"] >= 1 and prov["device"] == "cpu"
    assert not list((tmp_path / "zz_fake").glob("*.tmp"))


def test_same_seed_same_numbers_other_seed_other(fake_paper):
    a = runner.run("zz_fake", seed=1, out=None)
    b = runner.run("zz_fake", seed=1, out=None)
    c = runner.run("zz_fake", seed=2, out=None)
    assert a.metrics == b.metrics
    assert a.metrics != c.metrics


def test_overrides_and_settings(fake_paper):
    assert runner.run("zz_fake", overrides={"steps": "42"}, out=None).config["steps"] == 42
    assert runner.run("zz_fake", quick=False, out=None).config["steps"] == 100
    assert runner.run("zz_fake", tiny=True, out=None).data["setting"] == "tiny"
    with pytest.raises(ValueError, match="valid fields"):
        runner.run("zz_fake", overrides={"stepz": "1"}, out=None)


def test_failed_run_leaves_nothing_and_keeps_old_result(fake_paper, tmp_path):
    runner.run("zz_fake", out=tmp_path)
    before = (tmp_path / "zz_fake" / "result.json").read_text()
    with pytest.raises(RuntimeError, match="asked to fail"):
        runner.run("zz_fake", overrides={"fail": True, "steps": 5}, out=tmp_path)
    assert (tmp_path / "zz_fake" / "result.json").read_text() == before
    assert sorted(p.name for p in (tmp_path / "zz_fake").iterdir()) == ["result.json", "score.png"]


def test_planned_paper_is_a_clear_error(planned_paper):
    with pytest.raises(runner.PaperNotImplementedError, match="not implemented yet"):
        runner.run("zz_planned", out=None)


def test_validate_names_the_bad_field(fake_paper):
    data = runner.run("zz_fake", out=None).data
    for mutate, field in [
        (lambda d: d.pop("seed"), "'seed'"),
        (lambda d: d["metrics"]["method"].update(score="high"), "metrics.method.score"),
        (lambda d: d["metrics"]["method"].update(score=float("inf")), "metrics.method.score"),
        (lambda d: d["claim"].update(passed=not d["claim"]["passed"]), "claim.passed"),
        (lambda d: d["provenance"].pop("torch"), "provenance.torch"),
        (lambda d: d["curves"]["score"]["series"]["method"].pop(), "curves.score.series.method"),
    ]:
        broken = json.loads(json.dumps(data))
        mutate(broken)
        with pytest.raises(ResultError, match=field.replace(".", r"\.")):
            validate(broken)
    Result(data)  # the original is valid


def test_check_fails_on_nan():
    from icml26.results import check

    assert not check("x", float("nan"), "<", 1.0).passed
    assert check("x", -0.5, "abs<=", 0.5).passed
    with pytest.raises(ValueError, match="op"):
        check("x", 1.0, "=<", 1.0)


def test_atomic_write_gives_files_the_usual_permissions(tmp_path):
    import os

    from icml26.results import atomic_write_text

    umask = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(umask)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "r.json").read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_provenance_names_the_commit_the_run_started_on(fake_paper, monkeypatch):
    states = iter([("a" * 40, False), ("b" * 40, True)])  # HEAD moves while the run goes on
    monkeypatch.setattr(runner, "_git_commit", lambda: next(states))
    prov = runner.run("zz_fake", seed=1, out=None).data["provenance"]
    assert (prov["git_commit"], prov["git_dirty"]) == ("a" * 40, False)
    assert (prov["git_commit_at_end"], prov["git_dirty_at_end"]) == ("b" * 40, True)
    monkeypatch.setattr(runner, "_git_commit", lambda: ("c" * 40, False))
    prov = runner.run("zz_fake", seed=1, out=None).data["provenance"]
    assert prov["git_commit"] == "c" * 40 and "git_commit_at_end" not in prov
