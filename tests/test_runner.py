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
    import torch

    assert prov["cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # AVX2 / AVX512 …
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
    from icml26 import provenance

    states = iter([("a" * 40, False), ("b" * 40, True)])  # HEAD moves while the run goes on
    monkeypatch.setattr(provenance, "git_commit", lambda: next(states))
    prov = runner.run("zz_fake", seed=1, out=None).data["provenance"]
    assert (prov["git_commit"], prov["git_dirty"]) == ("a" * 40, False)
    assert (prov["git_commit_at_end"], prov["git_dirty_at_end"]) == ("b" * 40, True)
    monkeypatch.setattr(provenance, "git_commit", lambda: ("c" * 40, False))
    prov = runner.run("zz_fake", seed=1, out=None).data["provenance"]
    assert prov["git_commit"] == "c" * 40 and "git_commit_at_end" not in prov


def test_a_run_plan_is_built_once_validated_and_picklable(fake_paper, tmp_path):
    import pickle

    from icml26.runner import RunPlan, build_config, execute, execute_plan

    plan = RunPlan.build("zz_fake", setting="quick", seeds="0-2", overrides={"steps": "7"}, threads=2, out=tmp_path)
    assert plan.seeds == (0, 1, 2) and plan.config == build_config("zz_fake", "quick", {"steps": 7})
    assert plan.folder == tmp_path / "zz_fake" and plan.folder.is_dir() and plan.threads == 2
    assert pickle.loads(pickle.dumps(plan)) == plan
    data, _ = execute_plan(plan.replace(threads=1), 1, render=False)
    assert data["metrics"] == execute("zz_fake", "quick", 1, {"steps": 7}, threads=1, render=False)[0]["metrics"]
    assert data["provenance"]["threads"] == 1
    for bad, match in [({"setting": "fast"}, "setting"), ({"threads": 0}, "threads"), ({"seeds": "2-1"}, "seed"),
                       ({"overrides": {"nope": 1}}, "nope"), ({"device": "tpu"}, "tpu")]:
        with pytest.raises(ValueError, match=match):
            RunPlan.build("zz_fake", out=None, **bad)
    with pytest.raises(ValueError, match="one seed"):
        from icml26.runner import run_plan

        run_plan(plan)


def test_the_runner_alone_sets_threads_capped_by_what_the_experiment_declares(fake_paper, monkeypatch):
    import sys

    import torch

    from icml26.runner import RunPlan, execute_plan

    experiment = sys.modules["icml26.papers.zz_fake.experiment"]
    assert RunPlan.build("zz_fake", threads=2, out=None).threads == 2
    monkeypatch.setattr(experiment, "THREADS", 1, raising=False)
    plan = RunPlan.build("zz_fake", threads=2, out=None)
    assert plan.threads == 1
    seen = []
    real = experiment.run

    def recording(config, ctx):
        seen.append((torch.get_num_threads(), ctx.threads))
        return real(config, ctx)

    monkeypatch.setattr(experiment, "run", recording)
    execute_plan(plan, 0, render=False)
    assert seen == [(1, 1)]


def test_numpys_blas_runs_at_the_runs_threads_as_in_a_sweeps_workers(fake_paper, monkeypatch):
    """A seed run at one thread sums in NumPy's BLAS on one thread, as a sweep's workers do; the limit
    is lifted after the run."""
    import sys

    from threadpoolctl import threadpool_info

    from icml26.runner import RunPlan, execute_plan

    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    if not blas or max(p["num_threads"] for p in blas) < 2:
        pytest.skip("NumPy's BLAS already runs at one thread here")
    outside = {p["filepath"]: p["num_threads"] for p in blas}
    experiment = sys.modules["icml26.papers.zz_fake.experiment"]
    seen = []
    real = experiment.run

    def recording(config, ctx):
        seen.append(sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}))
        return real(config, ctx)

    monkeypatch.setattr(experiment, "run", recording)
    execute_plan(RunPlan.build("zz_fake", threads=1, out=None), 0, render=False)
    assert seen == [[1]]
    assert {p["filepath"]: p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == outside


def test_no_paper_sets_torch_threads_itself():
    """The runner sets threads (an experiment declares THREADS or a config field ``threads``); the two
    exceptions are measurement protocols: stream_spr's own worker processes, its Atari CPU benchmark and its
    Atari further run (one process per arm or run, one thread each), subspace_path's timings."""
    import re
    from pathlib import Path

    import icml26

    allowed = {("stream_spr", "runs.py"), ("stream_spr", "experiment.py"), ("stream_spr", "atari_bench.py"),
               ("stream_spr", "atari_runs.py"), ("subspace_path", "experiment.py")}
    found = set()
    for path in (Path(icml26.__file__).parent / "papers").rglob("*.py"):
        if re.search(r"set_num_threads\(|torch_threads\(", path.read_text(encoding="utf-8")):
            found.add((path.parent.name, path.name))
    assert found <= allowed, sorted(found - allowed)


def test_stage_seconds_splits_the_run_at_each_announced_stage():
    from icml26.contract import RunContext

    ctx = RunContext(seed=0, device="cpu", setting="quick", threads=1, show_progress=False)
    assert ctx.stage_seconds(10.0, 12.5) == {"(before the first stage)": 2.5}
    ctx.stage_marks[:] = [("load", 11.0), ("train", 12.0), ("eval", 15.5), ("train", 16.0)]
    # 10-11 before, load 11-12, train 12-15.5 and 16-17, eval 15.5-16
    assert ctx.stage_seconds(10.0, 17.0) == {"(before the first stage)": 1.0, "load": 1.0, "train": 4.5, "eval": 0.5}
    assert sum(ctx.stage_seconds(10.0, 17.0).values()) == pytest.approx(7.0)
    ctx.stage_marks[:] = [("load", 10.0)]  # a stage announced at the start leaves no "before"
    assert ctx.stage_seconds(10.0, 11.0) == {"load": 1.0}
    with pytest.raises(ValueError, match="before start"):
        ctx.stage_seconds(2.0, 1.0)


def test_a_run_records_where_its_time_went(fake_paper, monkeypatch):
    import sys
    import time

    experiment = sys.modules["icml26.papers.zz_fake.experiment"]
    plain = experiment.run

    def staged(config, ctx):
        ctx.stage("warm-up")
        time.sleep(0.05)
        ctx.stage("measure")
        return plain(config, ctx)

    monkeypatch.setattr(experiment, "run", staged)
    prov = runner.run("zz_fake", seed=1, out=None, progress=False).data["provenance"]
    stages = prov["stage_seconds"]
    assert list(stages) in (["warm-up", "measure"], ["(before the first stage)", "warm-up", "measure"])
    assert stages["warm-up"] >= 0.05
    assert sum(stages.values()) == pytest.approx(prov["wall_time_s"], abs=0.01)
    monkeypatch.setattr(experiment, "run", plain)  # an experiment that announces nothing records nothing
    assert "stage_seconds" not in runner.run("zz_fake", seed=1, out=None).data["provenance"]


def test_machine_speed_measures_one_thread_and_leaves_the_process_as_it_found_it():
    import torch

    from icml26.provenance import machine_speed

    threads = torch.get_num_threads()
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    speed = machine_speed(repeats=1)
    assert set(speed) == {"gemm_gflops", "small_steps_per_s"} and all(v > 0 for v in speed.values())
    assert torch.get_num_threads() == threads and torch.equal(torch.rand(3), expected)  # global RNG untouched
    with pytest.raises(ValueError, match="repeats"):
        machine_speed(repeats=0)
