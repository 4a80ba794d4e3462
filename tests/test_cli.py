"""The CLI through its real entry points: `main([...])` and `python -m icml26`."""

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icml26 import cli, registry
from icml26.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "result_fixture.json"


def test_list_shows_every_registered_paper(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for key in registry.keys():
        assert key in out
    assert f"{len(registry.keys())} papers, {len(registry.keys(status='implemented'))} implemented" in out


def test_list_by_area(capsys):
    assert main(["list", "--area", "games"]) == 0
    out = capsys.readouterr().out
    assert "asym_perturb" in out and "hamu" not in out
    assert main(["list", "--area", "astrology"]) == 2
    assert "unknown area" in capsys.readouterr().err


def test_info_planned_paper(planned_paper, capsys):
    assert main(["info", "zz_planned"]) == 0
    out = capsys.readouterr().out
    assert "arxiv.org/abs/2699.00001" in out and "planned" in out


def test_info_shows_config_fields(fake_paper, capsys):
    assert main(["info", "zz_fake"]) == 0
    out = capsys.readouterr().out
    assert "default=100  quick=10" in out and "Number of steps." in out


def test_bad_key_is_a_clear_error(capsys):
    assert main(["info", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown paper 'nope'" in err and "lmcleaner" in err
    assert main(["run", "nope"]) == 2


def test_planned_key_is_a_clear_error(planned_paper, capsys):
    assert main(["run", "zz_planned", "--quick"]) == 2
    assert "not implemented yet" in capsys.readouterr().err


def test_bad_override_names_valid_fields(fake_paper, capsys, tmp_path):
    assert main(["run", "zz_fake", "--out", str(tmp_path), "stepz=3"]) == 2
    assert "valid fields: steps, scale, mode, sizes, fail" in capsys.readouterr().err
    assert main(["run", "zz_fake", "--out", str(tmp_path), "steps=three"]) == 2
    assert "steps='three' is not an integer" in capsys.readouterr().err
    assert main(["run", "zz_fake", "--out", str(tmp_path), "steps"]) == 2
    assert not (tmp_path / "zz_fake").exists()


def test_run_prints_verdict_and_writes(fake_paper, capsys, tmp_path):
    assert main(["run", "zz_fake", "--quick", "--seed", "1", "--out", str(tmp_path), "scale=2"]) == 0
    out = capsys.readouterr().out
    assert "method score - baseline score" in out and "claim" in out
    data = json.loads((tmp_path / "zz_fake" / "result.json").read_text())
    assert data["config"]["scale"] == 2.0 and data["seed"] == 1


def test_run_all_carries_on_past_a_failure(fake_paper, monkeypatch, capsys, tmp_path):
    import dataclasses
    import sys as _sys
    import types

    from tests.conftest import FakeConfig

    broken = types.ModuleType("icml26.papers.zz_broken.experiment")
    broken.Config = FakeConfig
    broken.run = lambda config, ctx: (_ for _ in ()).throw(RuntimeError("boom"))
    monkeypatch.setitem(_sys.modules, "icml26.papers.zz_broken", types.ModuleType("icml26.papers.zz_broken"))
    monkeypatch.setitem(_sys.modules, broken.__name__, broken)
    # The broken paper comes first, so the fake one must still run after it. Only the two
    # fakes are registered: the real papers' quick runs take minutes each.
    papers = {"zz_broken": dataclasses.replace(fake_paper, key="zz_broken"), "zz_fake": fake_paper}
    monkeypatch.setattr(registry, "PAPERS", papers)
    # one worker: the fakes live in this process only (spawned workers would not see them)
    code = main(["run", "all", "--quick", "--workers", "1", "--out", str(tmp_path)])
    assert code == 1
    summary = json.loads((tmp_path / "run_all.json").read_text())
    status = {row["paper"]: row["status"] for row in summary["papers"]}
    assert status["zz_broken"] == "failed" and status["zz_fake"] == "ok"
    assert "RuntimeError: boom" in next(r["error"] for r in summary["papers"] if r["paper"] == "zz_broken")
    assert summary["workers"] == 1 and summary["wall_time_s"] >= 0
    assert (tmp_path / "zz_fake" / "result.json").exists()


def test_run_all_with_seeds_writes_the_run_all_json_the_report_reads(fake_paper, monkeypatch, tmp_path):
    from icml26.results import timing_table

    monkeypatch.setattr(registry, "PAPERS", {"zz_fake": fake_paper})
    assert main(["run", "all", "--quick", "--seeds", "0-1", "--workers", "1", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    summary = json.loads((tmp_path / "run_all.json").read_text())
    assert [r["paper"] for r in summary["papers"]] == ["zz_fake"] and summary["workers"] == 1
    assert "| zz_fake | ok |" in timing_table(tmp_path / "run_all.json")  # was a bare list it refused


def test_report_on_fixture(tmp_path, capsys):
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    shutil.copy(FIXTURE, results / "zz_fixture" / "result.json")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:start -->\nold\n<!-- results:end -->\n"
                      "<!-- papers:start -->\nold\n<!-- papers:end -->\nend\n")
    assert main(["report", "--results", str(results)]) == 0
    assert "old" in readme.read_text(), "without --readme, report writes only its results folder"
    assert main(["report", "--results", str(results), "--readme", str(readme)]) == 0
    page = (results / "README.md").read_text()
    assert "## zz_fixture" in page and "| HAMU-Q | 0.93 | 0.05 |" in page and "| retain gap | 0.03 | >= 0.02 | ✅ | – |" in page
    top = readme.read_text()
    assert "\nold\n" not in top and "[zz_fixture](results/README.md#zz_fixture)" in top
    # a schema-2 fixture declares no headline check, so nothing decides its claim
    assert "| ❔ inconclusive |  | supporting 1/1 |" in top
    assert top.startswith("intro\n") and top.endswith("end\n")
    papers = top.split("<!-- papers:start -->")[1].split("<!-- papers:end -->")[0]
    rows = [line for line in papers.splitlines() if line.startswith("| ") and "---" not in line][1:]
    keys = [row.split(" | ")[0].removeprefix("| ").removeprefix("[").split("]")[0] for row in rows]
    assert keys == registry.keys()


def test_report_refuses_an_invalid_result(tmp_path, capsys):
    results = tmp_path / "results"
    (results / "zz_fixture").mkdir(parents=True)
    data = json.loads(FIXTURE.read_text())
    del data["provenance"]["torch"]
    (results / "zz_fixture" / "result.json").write_text(json.dumps(data))
    assert main(["report", "--results", str(results)]) == 2
    assert "provenance.torch" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "icml26", "list"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "hamu" in proc.stdout


def test_console_script_entry_point():
    exe = shutil.which("icml26", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the icml26 console script is not installed in this environment")
    proc = subprocess.run([exe, "info", "hamu"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "HAMU" in proc.stdout


def test_report_fills_a_paper_readme(fake_paper, tmp_path, monkeypatch):
    import dataclasses

    from icml26 import runner

    folder = tmp_path / "pkg" / "zz_fake"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("# fake\n<!-- results:start -->\nstale\n<!-- results:end -->\ntail\n")
    spec = dataclasses.replace(fake_paper)
    monkeypatch.setattr(type(spec), "folder", property(lambda self: folder))
    results = tmp_path / "results"
    runner.run("zz_fake", out=results)
    assert main(["report", "--results", str(results)]) == 0
    assert "stale" in (folder / "README.md").read_text(), "a foreign results folder leaves package READMEs alone"
    assert main(["report", "--results", str(results), "--paper-readmes"]) == 0
    text = (folder / "README.md").read_text()
    assert "stale" not in text and "| method score - baseline score |" in text and text.endswith("tail\n")
    assert "](../../results/zz_fake/score.png)" in text


def test_run_seeds_writes_each_seed_and_the_aggregate(tmp_path, capsys):
    assert main(["run", "ou_steady", "--tiny", "--seeds", "0,1", "--workers", "1", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "held on" in out and "2 seeds [0, 1]" in out
    data = json.loads((tmp_path / "ou_steady" / "result.json").read_text())
    assert data["seeds"] == [0, 1]
    assert (tmp_path / "ou_steady" / "seeds" / "1" / "result.json").exists()


@pytest.mark.parametrize("argv,message", [
    (["run", "ou_steady", "--tiny", "--seeds", "3-1"], "backwards"),
    (["run", "ou_steady", "--tiny", "--seeds", "0-1", "--seed", "2"], "not both"),
    (["run", "ou_steady", "--tiny", "--seeds", "0-1", "--workers", "0"], "--workers"),
    (["run", "ou_steady", "--tiny", "--address", "auto"], "--backend ray"),
    (["run", "ou_steady", "--tiny", "--threads", "0"], "--threads"),
])
def test_run_sweep_options_are_checked_before_any_work(argv, message, tmp_path, capsys):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ou_steady" / "result.json").exists()


def test_out_that_is_a_file_fails_before_the_run(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("x")
    assert main(["run", "ou_steady", "--tiny", "--out", str(target)]) == 2
    assert "is a file" in capsys.readouterr().err


def test_version_and_closed_pipe():
    proc = subprocess.run([sys.executable, "-m", "icml26", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("icml26 ")
    proc = subprocess.run(f"{sys.executable} -m icml26 info hamu | head -1", shell=True, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_internal_error_is_not_reported_as_a_user_error(fake_paper, tmp_path, capsys):
    assert main(["run", "zz_fake", "--out", str(tmp_path), "fail=true"]) == 1
    err = capsys.readouterr().err
    assert "internal error" in err and "asked to fail" in err


def test_a_run_that_measured_nothing_is_the_settings_fault_not_a_bug(fake_paper, tmp_path, capsys, monkeypatch):
    """A non-finite metric (e.g. a budget too small for an episode to end) is one line, exit 2, nothing written."""
    experiment = sys.modules["icml26.papers.zz_fake.experiment"]
    measured = experiment.run

    def no_episode_ended(config, ctx):
        out = measured(config, ctx)
        out.metrics["method"]["score"] = float("nan")
        return out

    monkeypatch.setattr(experiment, "run", no_episode_ended)
    assert main(["run", "zz_fake", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "non-finite metrics: method.score=nan" in err and "larger budget" in err
    assert "internal error" not in err and "Traceback" not in err
    assert not (tmp_path / "zz_fake" / "result.json").exists()


@pytest.mark.parametrize("code,text", [(errno.ENOSPC, "No space left on device"),
                                       (errno.EROFS, "Read-only file system"),
                                       (errno.EACCES, "Permission denied")])
def test_a_refusal_of_the_machine_is_one_line_with_its_own_exit_code(code, text, monkeypatch, capsys):
    """A full disk, a read-only or forbidden folder is not a bug of icml26: one line naming the file, exit 3."""
    def refused(args):
        raise OSError(code, text, "/results/x/result.json")

    monkeypatch.setattr(cli, "_cmd_report", refused)
    assert main(["report"]) == cli.EXIT_ENVIRONMENT == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err and "/results/x/result.json" in err and "Traceback" not in err


def test_info_shows_roles_status_units_and_arms(capsys):
    """A real paper: the committed status, checks grouped by role with the units that would resolve
    them, and the declared arms."""
    assert main(["info", "hamu"]) == 0
    out = capsys.readouterr().out
    assert "status:" in out and "in the committed result" in out
    assert out.index("[headline: decides the claim]") < out.index("[supporting: scored]") \
        < out.index("[diagnostic: reported, never scored]")
    assert "forget-set draws" in out and "compares hamu_q_layerwise vs graddiff" in out
    assert "arms (as declared in claims.py" in out and "graddiff (baseline)" in out


def test_info_starts_with_the_library_call_and_list_says_what_each_paper_applies(capsys):
    assert main(["info", "hici"]) == 0
    out = capsys.readouterr().out
    assert "applies: hici.patch(" in out
    usage = out.index("usage (the README's tested example")
    assert "hici.patch(model, HiCIConfig(" in out[usage:] and usage < out.index("checks (")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.count("applies: ") == len(registry.list_papers())


def test_cache_export_and_import_carry_json_entries(tmp_path, monkeypatch, capsys):
    from icml26.common import cache

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "here"))
    bundle = tmp_path / "arms.json"
    assert main(["cache", "export", "arms", str(bundle)]) == 2  # nothing to export
    assert "no finished entries" in capsys.readouterr().err
    cache.write_json_entry("arms", "key1", "arm.json", {"row": {"asr": 0.25}}, {"arm": "SFT"})
    assert main(["cache", "export", "arms", str(bundle)]) == 0
    assert "wrote 1 entries" in capsys.readouterr().out
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "there"))
    assert main(["cache", "import", str(bundle)]) == 0
    assert "1 entries added, 0 already here" in capsys.readouterr().out
    assert cache.read_json_entry("arms", "key1", "arm.json") == {"row": {"asr": 0.25}}
    assert main(["cache", "import", str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"schema": "other"}')
    assert main(["cache", "import", str(tmp_path / "bad.json")]) == 2
    assert "schema" in capsys.readouterr().err
    assert main(["cache", "export", "arms"]) == 2
    assert "needs KIND and FILE" in capsys.readouterr().err
