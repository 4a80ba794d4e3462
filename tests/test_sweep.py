"""Several seeds, aggregated honestly: statistics against scipy closed forms, the verdict rule,
identical results whatever the worker count or backend, crashes recorded, finished seeds kept."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from icml26.aggregate import aggregate_check, aggregate_curves, aggregate_results, mean_interval, verdict
from icml26.sweep import parse_seeds, sweep

PAPER = "ou_steady"  # the cheapest real tiny setting (~1 s a seed), importable by spawned workers


def test_mean_interval_matches_scipy():
    x = [0.3, 0.1, 0.45, 0.2, 0.33]
    got = mean_interval(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
    assert got["n"] == 5 and got["mean"] == pytest.approx(np.mean(x))
    assert got["sd"] == pytest.approx(np.std(x, ddof=1))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi))
    # NaN / None entries (a seed that did not measure) do not count
    assert mean_interval([1.0, None, float("nan"), 3.0])["n"] == 2
    assert mean_interval([2.0]) == {"mean": 2.0, "sd": None, "n": 1, "ci_low": 2.0, "ci_high": 2.0}
    assert mean_interval([])["mean"] is None


def test_paired_interval_is_the_interval_of_the_differences():
    method = np.array([0.91, 0.88, 0.93, 0.90])
    baseline = np.array([0.89, 0.87, 0.90, 0.86])
    got = mean_interval(method - baseline)
    ref = stats.ttest_rel(method, baseline).confidence_interval(0.95)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((ref.low, ref.high))


@pytest.mark.parametrize("op,target,low,high,want", [
    (">=", 1.0, 1.2, 1.5, "held"), (">=", 1.0, 0.5, 0.9, "not held"), (">=", 1.0, 0.9, 1.1, "unresolved"),
    (">=", 1.0, 1.0, 1.3, "held"), (">", 1.0, 1.0, 1.3, "unresolved"), ("<", 0.5, 0.1, 0.4, "held"),
    ("<=", 0.5, 0.6, 0.7, "not held"), ("abs<=", 0.7, -0.6, 0.5, "held"), ("abs<=", 0.7, -0.9, 0.2, "unresolved"),
    ("abs<=", 0.7, 0.8, 0.9, "not held"), ("abs<=", 0.7, -0.9, -0.8, "not held"), (">=", 1.0, None, None, "not held"),
])
def test_verdict_rule(op, target, low, high, want):
    assert verdict(op, target, low, high) == want


def _check(value, passed, target=0.0):
    return {"id": "c", "name": "c", "op": ">", "target": target, "value": value, "passed": passed,
            "source": "ours", "ref": "r"}


def test_aggregate_check_counts_seeds_and_decides_by_the_interval():
    agg = aggregate_check([_check(0.3, True), _check(0.1, True), _check(-0.05, False)])
    assert agg["held_on"] == 2 and agg["seeds"] == 3 and agg["n"] == 3
    assert agg["verdict"] == "unresolved" and agg["passed"] is False
    agg = aggregate_check([_check(0.3, True), _check(0.32, True), _check(0.29, True)])
    assert agg["verdict"] == "held" and agg["passed"] is True
    with pytest.raises(ValueError, match="differs"):
        aggregate_check([_check(0.3, True), _check(0.3, True, target=1.0)])


def test_aggregate_curves_means_and_bands():
    c1 = {"k": {"x": [1, 2], "series": {"a": [1.0, 2.0]}}, "odd": {"x": [1], "series": {"a": [0.0]}}}
    c2 = {"k": {"x": [1, 2], "series": {"a": [3.0, None]}}, "odd": {"x": [1, 2], "series": {"a": [0.0, 1.0]}}}
    out, dropped = aggregate_curves([c1, c2])
    assert out["k"]["series"]["a"] == [2.0, 2.0] and dropped == ["odd"]
    lo, hi = out["k"]["bands"]["a"]
    assert lo[1] == hi[1] == 2.0  # one finite seed: no spread
    assert lo[0] == pytest.approx(2.0 - stats.t.ppf(0.975, 1) * np.std([1, 3], ddof=1) / math.sqrt(2))


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("0-1, 5") == [0, 1, 5]
    for bad in ["", "a", "3-1", "0,0", "-1"]:
        with pytest.raises(ValueError, match="seed"):
            parse_seeds(bad)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    out = tmp_path_factory.mktemp("w1")
    return sweep(PAPER, "0-2", setting="tiny", out=out, workers=1, progress=False), out


def test_sweep_layout_and_aggregate(one_worker):
    done, out = one_worker
    folder = out / PAPER
    for s in (0, 1, 2):
        data = json.loads((folder / "seeds" / str(s) / "result.json").read_text())
        assert data["seed"] == s
    agg = json.loads((folder / "result.json").read_text())
    assert agg["seeds"] == [0, 1, 2] and agg["failed_seeds"] == []
    per = [done.per_seed[s].data for s in (0, 1, 2)]
    arm = next(iter(agg["metric_stats"]))
    name = next(iter(agg["metric_stats"][arm]))
    values = [p["metrics"][arm][name] for p in per]
    assert agg["metric_stats"][arm][name]["mean"] == pytest.approx(np.mean(values))
    for c in agg["claim"]["checks"]:
        assert c["held_on"] == sum(next(x for x in p["claim"]["checks"] if x["name"] == c["name"])["passed"]
                                   for p in per)


def test_sweep_is_identical_whatever_the_worker_count(one_worker, tmp_path):
    done, _ = one_worker
    two = sweep(PAPER, "0-2", setting="tiny", out=tmp_path, workers=2, progress=False)
    for s in (0, 1, 2):
        assert two.per_seed[s].data["metrics"] == done.per_seed[s].data["metrics"]
    assert two.aggregate.data["metric_stats"] == done.aggregate.data["metric_stats"]


def test_a_crashing_seed_is_recorded_and_the_others_kept(tmp_path, monkeypatch):
    import icml26.sweep as sw

    real = sw._job

    def flaky(plan, seed, *rest):
        if seed == 1:
            raise RuntimeError("boom on seed 1")
        return real(plan, seed, *rest)

    monkeypatch.setattr(sw, "_job", flaky)
    done = sweep(PAPER, "0-2", setting="tiny", out=tmp_path, workers=1, progress=False)
    assert sorted(done.per_seed) == [0, 2]
    assert done.aggregate.data["failed_seeds"] == [{"seed": 1, "error": "RuntimeError: boom on seed 1"}]
    assert (tmp_path / PAPER / "seeds" / "0" / "result.json").exists()
    assert not (tmp_path / PAPER / "seeds" / "1").exists()


def test_one_worker_runs_blas_at_one_thread_like_the_spawned_workers(tmp_path, monkeypatch):
    """With ``workers=1`` the seeds run in this process; NumPy's BLAS must then use one thread, as the
    spawned workers do, or a seed's float sums depend on the worker count (seen on zs_expand's ridge
    solves when the parent had OMP_NUM_THREADS=2)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from icml26 import registry

    experiment = registry.get(PAPER).load_experiment()
    real = experiment.run
    seen = []

    def recording(config, ctx):
        seen.append(max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"))
        return real(config, ctx)

    monkeypatch.setattr(experiment, "run", recording)
    with threadpool_limits(limits=2, user_api="blas"):
        sweep(PAPER, "0-1", setting="tiny", out=tmp_path, workers=1, progress=False)
        assert max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas") <= 2  # restored
    assert seen == [1, 1]


def test_an_interrupted_sweep_keeps_the_finished_seeds(tmp_path, monkeypatch):
    import icml26.sweep as sw

    real = sw._job

    def interrupted(plan, seed, *rest):
        if seed == 2:
            raise KeyboardInterrupt
        return real(plan, seed, *rest)

    monkeypatch.setattr(sw, "_job", interrupted)
    with pytest.raises(sw.SweepInterrupted) as stopped:  # a KeyboardInterrupt naming what was kept
        sweep(PAPER, "0-2", setting="tiny", out=tmp_path, workers=1, progress=False)
    assert isinstance(stopped.value, KeyboardInterrupt) and stopped.value.kept == [0, 1]
    assert "seeds [0, 1] are kept" in str(stopped.value) and "--resume" in str(stopped.value)
    assert (tmp_path / PAPER / "seeds" / "0" / "result.json").exists()
    assert (tmp_path / PAPER / "seeds" / "1" / "result.json").exists()
    assert not (tmp_path / PAPER / "seeds" / "2").exists()
    assert json.loads((tmp_path / PAPER / "result.json").read_text())["seeds"] == [0, 1]  # the finished seeds

    ran = []

    def recording(plan, seed, *rest):
        ran.append(seed)
        return real(plan, seed, *rest)

    monkeypatch.setattr(sw, "_job", recording)
    done = sweep(PAPER, "0-2", setting="tiny", out=tmp_path, workers=1, progress=False, resume=True)
    assert ran == [2] and done.aggregate.data["seeds"] == [0, 1, 2]
    again = sweep(PAPER, "0-2", setting="tiny", out=tmp_path, workers=1, progress=False, resume=True)
    assert ran == [2] and again.aggregate.data["seeds"] == [0, 1, 2]  # nothing left to run: aggregated only


def test_aggregate_results_refuses_mixed_configs(one_worker):
    done, _ = one_worker
    a = dict(done.per_seed[0].data)
    b = dict(done.per_seed[1].data, config={**done.per_seed[1].data["config"], "x": 1})
    with pytest.raises(ValueError, match="config"):
        aggregate_results([a, b])


def test_an_aggregate_sums_its_seeds_stage_seconds_as_it_sums_their_wall_times(one_worker):
    import copy

    done, _ = one_worker
    seeds = [copy.deepcopy(done.per_seed[s].data) for s in (0, 1)]
    seeds[0]["provenance"].update(wall_time_s=3.0, stage_seconds={"load": 1.0, "train": 2.0})
    seeds[1]["provenance"].update(wall_time_s=5.5, stage_seconds={"load": 0.5, "train": 4.0, "extra": 1.0})
    prov = aggregate_results(seeds)["provenance"]
    assert prov["stage_seconds"] == {"load": 1.5, "train": 6.0, "extra": 1.0}
    assert sum(prov["stage_seconds"].values()) == prov["wall_time_s"] == 8.5
    del seeds[1]["provenance"]["stage_seconds"]  # a seed that recorded none: the aggregate claims none
    assert "stage_seconds" not in aggregate_results(seeds)["provenance"]


def test_ray_backend_gives_the_process_backend_results(one_worker, tmp_path):
    ray = pytest.importorskip("ray")
    done, _ = one_worker
    try:
        on_ray = sweep(PAPER, "0-1", setting="tiny", out=tmp_path, workers=2, backend="ray", progress=False)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    for s in (0, 1):
        assert on_ray.per_seed[s].data["metrics"] == done.per_seed[s].data["metrics"]


def test_curves_with_categorical_x_are_drawn_with_bands():
    """A curve over categories (e.g. corruption modes), aggregated over seeds, renders by the fallback
    plotter with the categories as tick labels (it crashed converting the strings to floats)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.plotting import draw_curve

    per_seed = [{"auroc": {"x": ["shift", "pop", "swap"], "series": {"CA": [0.7 + s / 100, 0.6, 0.5]}}}
                for s in range(3)]
    out, dropped = aggregate_curves(per_seed)
    assert not dropped
    curve = out["auroc"]
    fig, ax = plt.subplots()
    draw_curve(ax, curve)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["shift", "pop", "swap"]
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0]
    assert line.get_ydata()[0] == pytest.approx(0.71)
    assert len(ax.collections) == 1  # the band
    plt.close(fig)


def test_off_a_terminal_a_sweep_prints_a_heartbeat_naming_the_remaining_seeds(tmp_path, monkeypatch, capsys):
    import time

    import icml26.sweep as sw

    real = sw._job

    def slow(plan, seed, *rest):
        time.sleep(0.6)
        return real(plan, seed, *rest)

    monkeypatch.setattr(sw, "_job", slow)
    monkeypatch.setattr(sw, "HEARTBEAT_S", 0.2)
    sweep(PAPER, "0-1", setting="tiny", out=tmp_path, workers=1, progress=False)
    err = capsys.readouterr().err
    assert f"{PAPER}: 2 seed(s) [0, 1], 1 worker(s)" in err  # the start line
    assert re.search(r"0/2 seeds finished; running: 0 \(\d+ s\); queued: \[1\]", err)  # seed 0 runs, 1 waits
    assert re.search(r"1/2 seeds finished; running: 1 \(\d+ s\); queued: \[\]", err)
