"""A sweep under faults: a worker that dies costs only the job it ran, the pool is replaced and the
others finish; workers do not outlive a killed driver."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from icml26.sweep import WorkerDied, run_jobs


def _die_on_two(x: int) -> int:
    """A job: the one for x == 2 kills its own process (as the kernel's OOM killer would)."""
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)
    return 10 * x


def _raise_on_one(x: int) -> int:
    if x == 1:
        raise ValueError("bad input 1")
    return x


def test_a_dead_worker_costs_only_its_job():
    done = {}
    run_jobs([(i, (i,)) for i in range(4)], 2, lambda tag, value, error: done.__setitem__(tag, (value, error)),
             fn=_die_on_two)
    assert sorted(done) == [0, 1, 2, 3]
    assert [done[i][0] for i in (0, 1, 3)] == [0, 10, 30] and all(done[i][1] is None for i in (0, 1, 3))
    assert isinstance(done[2][1], WorkerDied) and "signal 9 (SIGKILL)" in str(done[2][1])


def test_began_tells_each_job_as_a_worker_starts_it_and_before_its_end():
    events = []
    run_jobs([(i, (i,)) for i in range(3)], 2, lambda tag, value, error: events.append(("end", tag)),
             fn=_raise_on_one, began=lambda tag: events.append(("start", tag)))
    assert sorted(events) == [("end", 0), ("end", 1), ("end", 2), ("start", 0), ("start", 1), ("start", 2)]
    for tag in range(3):
        assert events.index(("start", tag)) < events.index(("end", tag))


def test_a_dead_worker_is_still_told_as_started():
    started, done = [], {}
    run_jobs([(i, (i,)) for i in range(4)], 2, lambda tag, value, error: done.__setitem__(tag, (value, error)),
             fn=_die_on_two, began=started.append)
    assert sorted(done) == [0, 1, 2, 3] and isinstance(done[2][1], WorkerDied)
    assert set(started) >= {0, 1, 2, 3}  # a job run again after the pool was replaced is told again


def test_a_job_that_raises_is_reported_and_the_rest_finish():
    done = {}
    run_jobs([(i, (i,)) for i in range(3)], 2, lambda tag, value, error: done.__setitem__(tag, (value, error)),
             fn=_raise_on_one)
    assert done[0] == (0, None) and done[2] == (2, None)
    assert isinstance(done[1][1], ValueError) and "bad input 1" in str(done[1][1])


DRIVER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from icml26.sweep import run_jobs
    from tests.test_sweep_faults import _sleep_and_record

    run_jobs([(i, ({out!r}, i)) for i in range(2)], 2, lambda *a: None, fn=_sleep_and_record)
""")


def _sleep_and_record(folder: str, i: int) -> None:
    Path(folder, f"worker-{i}.pid").write_text(str(os.getpid()))
    time.sleep(120)


def _children(parent: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_exit_when_their_driver_is_killed(tmp_path):
    root = str(Path(__file__).resolve().parents[1])
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(root=root, out=str(tmp_path))],
                              env={**os.environ, "PYTHONPATH": root})
    try:
        deadline = time.time() + 60
        while len(list(tmp_path.glob("worker-*.pid"))) < 2 and time.time() < deadline:
            time.sleep(0.2)
        pids = [int(p.read_text()) for p in tmp_path.glob("worker-*.pid")]
        assert len(pids) == 2, "the workers did not start"
        pids += _children(driver.pid)  # the resource tracker too
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.time() + 15
        while any(_alive(p) for p in pids) and time.time() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids), "a worker outlived its killed driver"
    finally:
        if driver.poll() is None:
            driver.kill()


def test_run_all_runs_papers_in_parallel_and_merges_into_a_sweep(tmp_path):
    """Two real tiny settings on two workers; a paper whose folder holds a sweep gets the seed merged
    into its aggregate instead of being replaced by a single seed."""
    import json

    from icml26.sweep import run_all, sweep

    sweep("ou_steady", "1-2", setting="tiny", out=tmp_path, workers=1, progress=False)
    lines = []
    done = run_all(["zs_expand", "ou_steady"], setting="tiny", seed=0, out=tmp_path, workers=2, progress=False,
                   echo=lambda text, **_: lines.append(text))
    assert [r["status"] for r in done.rows] == ["ok", "ok"] and done.workers == 2
    merged = json.loads((tmp_path / "ou_steady" / "result.json").read_text())
    assert merged["seeds"] == [0, 1, 2] and (tmp_path / "ou_steady" / "seeds" / "0" / "result.json").exists()
    single = json.loads((tmp_path / "zs_expand" / "result.json").read_text())
    assert single["seed"] == 0 and "seeds" not in single
    assert lines[0].startswith("running 2 paper(s)") and any("merged into the 3-seed aggregate" in t for t in lines)
    stages = {r["paper"]: r.get("stage_seconds") for r in done.rows}  # each row says where its time went
    assert stages["zs_expand"] and sum(stages["zs_expand"].values()) == pytest.approx(
        next(r["wall_time_s"] for r in done.rows if r["paper"] == "zs_expand"), abs=0.01)
    assert stages["zs_expand"] == single["provenance"]["stage_seconds"]
    speed = done.to_dict()["machine_speed"]  # the machine's one-thread rates, before and after the papers
    assert set(speed) == {"before", "after"} and all(v["gemm_gflops"] > 0 and v["small_steps_per_s"] > 0
                                                     for v in speed.values())


def test_a_sweep_never_mixes_configurations_and_a_single_seed_joins_a_sweep(fake_paper, tmp_path):
    import json

    from icml26 import runner
    from icml26.cli import main
    from icml26.sweep import sweep

    sweep("zz_fake", "0-1", setting="quick", out=tmp_path, workers=1, progress=False)
    folder = tmp_path / "zz_fake"
    # another configuration into the same folder: refused before anything runs
    with pytest.raises(ValueError, match="another configuration"):
        sweep("zz_fake", "2", setting="quick", overrides={"scale": "2"}, out=tmp_path, workers=1, progress=False)
    with pytest.raises(ValueError, match="another configuration"):
        runner.run("zz_fake", seed=5, overrides={"scale": 2}, out=tmp_path)
    assert not (folder / "seeds" / "2").exists() and not (folder / "seeds" / "5").exists()
    # more seeds of the same configuration extend the aggregate
    sweep("zz_fake", "2", setting="quick", out=tmp_path, workers=1, progress=False)
    assert json.loads((folder / "result.json").read_text())["seeds"] == [0, 1, 2]
    # a single --seed run joins the sweep instead of replacing the aggregate
    result = runner.run("zz_fake", seed=3, out=tmp_path)
    assert result.data["seeds"] == [0, 1, 2, 3] and (folder / "seeds" / "3" / "result.json").exists()
    # `icml26 aggregate` rebuilds the same aggregate from the seeds
    before = json.loads((folder / "result.json").read_text())
    assert main(["aggregate", "zz_fake", "--out", str(tmp_path)]) == 0
    after = json.loads((folder / "result.json").read_text())
    assert after["claim"] == before["claim"] and after["seeds"] == before["seeds"]


def _full_disk_for_seed(monkeypatch, seed: int) -> None:
    """Writing seed ``seed``'s result raises ENOSPC (as a full disk would); every other write goes through."""
    import errno

    import icml26.runner as runner_module
    import icml26.sweep as sw

    real_write = runner_module.write_result

    def full_disk(folder, data, figures):
        if folder.name == str(seed):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(folder, data, figures)

    monkeypatch.setattr(sw, "write_result", full_disk, raising=False)
    monkeypatch.setattr(runner_module, "write_result", full_disk)


def test_a_seed_that_cannot_be_written_is_recorded_and_the_others_kept(fake_paper, tmp_path, monkeypatch):
    import icml26.sweep as sw

    _full_disk_for_seed(monkeypatch, 1)
    done = sw.sweep("zz_fake", "0-2", setting="quick", out=tmp_path, workers=1, progress=False)
    assert [f["seed"] for f in done.failed] == [1] and "No space left" in done.failed[0]["error"]
    assert done.aggregate.data["seeds"] == [0, 2]


def test_a_seed_that_fails_now_is_not_counted_from_its_older_result(fake_paper, tmp_path, monkeypatch):
    import icml26.sweep as sw

    sw.sweep("zz_fake", "0-1", setting="quick", out=tmp_path, workers=1, progress=False)
    _full_disk_for_seed(monkeypatch, 1)
    done = sw.sweep("zz_fake", "1-2", setting="quick", out=tmp_path, workers=1, progress=False)
    data = done.aggregate.data
    assert data["seeds"] == [0, 2] and [f["seed"] for f in data["failed_seeds"]] == [1]


def test_a_single_seed_of_another_configuration_never_overwrites_a_swept_seed(fake_paper, tmp_path):
    from icml26 import runner
    from icml26.sweep import sweep

    sweep("zz_fake", "0-1", setting="quick", out=tmp_path, workers=1, progress=False)
    seed0 = tmp_path / "zz_fake" / "seeds" / "0" / "result.json"
    before = seed0.read_bytes()
    data, figures = runner.execute("zz_fake", "tiny", 0, render=False, progress=False)
    with pytest.raises(ValueError, match="another configuration"):
        runner.write_run(tmp_path / "zz_fake", data, figures)
    assert seed0.read_bytes() == before


def _sweep_until_a_seed_is_written(tmp_path):
    """`icml26 run subspace_path --tiny --seeds 0-3 --workers 2` started, returned once a seed is written."""
    cmd = [sys.executable, "-m", "icml26", "run", "subspace_path", "--tiny", "--seeds", "0-3", "--workers", "2",
           "--out", str(tmp_path), "--no-progress"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seeds = tmp_path / "subspace_path" / "seeds"
    deadline = time.time() + 240
    while not list(seeds.glob("*/result.json")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    return cmd, proc, seeds


def test_ctrl_c_stops_a_sweep_at_once_and_keeps_and_aggregates_the_finished_seeds(tmp_path):
    """SIGINT to `icml26 run … --seeds 0-3 --workers 2` after the first seed is written: the driver exits
    within seconds (running seeds stopped, pending ones cancelled), no worker is left, the finished
    seeds are aggregated and named; --resume then runs only the others."""
    cmd, proc, seeds = _sweep_until_a_seed_is_written(tmp_path)
    assert list(seeds.glob("*/result.json")), "no seed finished"
    workers = _children(proc.pid)
    start = time.time()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    waited = time.time() - start
    assert proc.returncode == 130 and waited < 15, (proc.returncode, waited, err[-500:])
    print(f"interrupt: exited {waited:.1f} s after SIGINT, kept {len(list(seeds.glob('*/result.json')))} seed(s)")
    kept = sorted(int(p.parent.name) for p in seeds.glob("*/result.json"))
    assert f"seeds {kept} are kept" in err and "--resume" in err
    import json

    assert json.loads((tmp_path / "subspace_path" / "result.json").read_text())["seeds"] == kept
    time.sleep(2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in
                Path(f"/proc/{w}/status").read_text().lower()], "a worker outlived the interrupt"
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-800:]
    assert f"{4 - len(kept)} seed(s)" in resumed.stderr
    assert json.loads((tmp_path / "subspace_path" / "result.json").read_text())["seeds"] == list(range(4))


def test_sigterm_unwinds_a_sweep_like_ctrl_c_with_its_own_exit_code(tmp_path):
    """SIGTERM (a scheduler's stop, `timeout`, `kill`) to a sweep's driver: the finished seeds are
    aggregated and named, the workers stopped, no temporary file left, exit 143 and 'terminated'."""
    _, proc, seeds = _sweep_until_a_seed_is_written(tmp_path)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err[-500:])
    kept = sorted(int(p.parent.name) for p in seeds.glob("*/result.json"))
    assert kept and "icml26: terminated;" in err and f"seeds {kept} are kept" in err, err[-500:]
    assert not list(tmp_path.rglob("*.tmp")), "a temporary file was left behind"
    time.sleep(2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in
                Path(f"/proc/{w}/status").read_text().lower()], "a worker outlived SIGTERM"


def test_expected_seconds_takes_the_larger_of_the_committed_seeds_and_the_last_run_all(tmp_path):
    """run all schedules the most expensive first; a committed sweep timed with warm caches must not
    hide what a fresh clone pays (fox: 66-79 s a seed committed, 297 s in a fresh run all)."""
    import json

    from icml26.sweep import expected_seconds

    assert expected_seconds("fox", tmp_path) == 0.0  # nothing known
    (tmp_path / "fox").mkdir()
    (tmp_path / "fox" / "result.json").write_text(json.dumps(
        {"provenance": {"wall_time_s": 140.0, "seed_wall_times_s": {"0": 60.0, "1": 80.0}}}))
    assert expected_seconds("fox", tmp_path) == pytest.approx(70.0)  # the seeds' mean, not the sweep's total
    run_all = tmp_path / "run_all.json"
    run_all.write_text(json.dumps({"papers": [{"paper": "hici", "wall_time_s": 900.0},
                                              {"paper": "fox", "wall_time_s": 297.0}]}))
    assert expected_seconds("fox", tmp_path) == pytest.approx(297.0)
    run_all.write_text(json.dumps({"papers": [{"paper": "fox", "wall_time_s": 20.0}]}))
    assert expected_seconds("fox", tmp_path) == pytest.approx(70.0)  # the larger one
    for bad in ("not json", json.dumps({"papers": "x"}), json.dumps({"papers": [1, {"paper": "fox"}]}),
                json.dumps({"papers": [{"paper": "fox", "wall_time_s": "slow"}]})):
        run_all.write_text(bad)
        assert expected_seconds("fox", tmp_path) == pytest.approx(70.0)  # a malformed file is ignored


def test_run_all_reads_a_claim_as_the_report_does_across_its_further_runs(tmp_path):
    """spard's headline checks are measured in its further run smollm2: its quick result alone is
    inconclusive, read with that run it is refuted (the report's status), which run all's row records."""
    import json
    import shutil

    from icml26.sweep import _claim_status_across_runs

    results = Path(__file__).resolve().parents[1] / "results"
    (tmp_path / "spard").mkdir()
    shutil.copy(results / "spard" / "result.json", tmp_path / "spard" / "result.json")
    data = json.loads((tmp_path / "spard" / "result.json").read_text())
    assert data["claim"]["status"] == "inconclusive"
    assert _claim_status_across_runs("spard", data, tmp_path) == "inconclusive"  # its further run not there
    assert _claim_status_across_runs("spard", data, None) == "inconclusive"
    shutil.copytree(results / "spard" / "smollm2", tmp_path / "spard" / "smollm2",
                    ignore=shutil.ignore_patterns("seeds"))
    assert _claim_status_across_runs("spard", data, tmp_path) == "refuted"
