"""stream_spr (issue #38): α_SPR tuned by the shared tuner on development seeds, the authors' configuration
as an arm, and the naive-SPR checks (return ratio, steps to an SPR loss of -0.8)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from icml26.contract import RunContext
from icml26.papers.stream_spr import experiment, spr_agent
from icml26.papers.stream_spr.analysis import crossing_ratio
from icml26.papers.stream_spr.config import Config
from icml26.papers.stream_spr.runs import ARMS, AUTHORS, RunSummary, run_one

pytest.importorskip("gymnasium")


def test_crossing_ratio_by_hand():
    edges = [10, 20, 30, 40]
    naive = [-0.5, -0.81, -0.9, -0.9]  # first below -0.8 at 20
    assert crossing_ratio(edges, [-0.1, -0.5, -0.7, -0.85], naive, -0.8) == 40 / 20
    assert crossing_ratio(edges, [-0.9, None, -0.9, -0.9], naive, -0.8) == 10 / 20
    # a method that never crosses counts as crossing at the last edge: a lower bound
    assert crossing_ratio(edges, [-0.1, -0.2, -0.3, -0.4], naive, -0.8) == 40 / 20
    # the reference never crossing leaves nothing to compare with
    assert math.isnan(crossing_ratio(edges, [-0.9] * 4, [-0.1] * 4, -0.8))
    with pytest.raises(ValueError, match="one length"):
        crossing_ratio(edges, [-0.9] * 3, naive, -0.8)
    with pytest.raises(ValueError, match="threshold"):
        crossing_ratio(edges, naive, naive, float("nan"))


def test_config_refuses_a_half_given_or_conflicting_tuning_request():
    base = Config.tiny()
    with pytest.raises(ValueError, match="give both"):
        dataclasses.replace(base, spr_lr_grid=(1e-4, 1e-3))
    with pytest.raises(ValueError, match="give both"):
        dataclasses.replace(base, tune_seeds=2)
    with pytest.raises(ValueError, match="not both"):
        dataclasses.replace(base, spr_lr=3e-4, spr_lr_grid=(1e-4,), tune_seeds=1)
    with pytest.raises(ValueError, match="positive, finite step sizes"):
        dataclasses.replace(base, spr_lr_grid=(1e-4, 0.0), tune_seeds=1)
    with pytest.raises(ValueError, match="spr_lr_grid"):  # the shared number check refuses it first
        dataclasses.replace(base, spr_lr_grid=(float("inf"),), tune_seeds=1)
    with pytest.raises(ValueError, match="spr_lr"):
        dataclasses.replace(base, spr_lr=-1e-4)
    with pytest.raises(ValueError, match="tune_steps"):
        dataclasses.replace(base, spr_lr_grid=(1e-4,), tune_seeds=1, tune_steps=2)


def test_neutral_fields_leave_the_committed_configuration_alone():
    from icml26.common.config import config_to_dict

    d = config_to_dict(Config.quick())
    assert not {"spr_lr", "spr_lr_grid", "tune_seeds", "tune_steps"} & set(d)
    assert "spr_lr" in config_to_dict(dataclasses.replace(Config.quick(), spr_lr=3e-4))


class _Built(Exception):
    pass


@pytest.mark.parametrize("arm, job_lr, expected", [
    ("spr_orth2", None, {"spr_lr": None, "lr_preset": "elsayed", "action_alignment": "correct"}),
    ("spr_naive", 3e-4, {"spr_lr": 3e-4, "orth": False, "orth2": False}),
    ("spr_orth2", 1e-3, {"spr_lr": 1e-3, "target_init": "copy", "head_activation": "layernorm_leaky_relu"}),
    # the authors' arm keeps stream-rep-rl's own step sizes whatever the run tunes
    ("spr_authors", 1e-3, {**AUTHORS, "orth": True, "orth2": True}),
])
def test_each_spr_arm_builds_its_agent_with_its_own_settings(monkeypatch, arm, job_lr, expected):
    seen = {}

    def fake(env, **kwargs):
        seen.update(kwargs)
        raise _Built

    monkeypatch.setattr(spr_agent, "StreamQSPR", fake)
    job = {"config": Config.tiny(), "game": "breakout", "seed_index": 0, "arm": arm, "seed": 1, "probe": None,
           "device": "cpu", "progress": False, "position": 0, "threads": 1}
    if job_lr is not None:
        job["spr_lr"] = job_lr
    with pytest.raises(_Built):
        run_one(job)
    assert {k: seen.get(k, "missing") for k in expected} == expected
    if arm == "spr_authors":
        assert "spr_lr" not in seen and spr_agent.LR_PRESETS[seen["lr_preset"]].spr == 1e-4


def _fake_summary(job):
    """A run whose last-10 % return is a known function of (arm, α_SPR, development or scored seed)."""
    lr = job.get("spr_lr")
    score = {1e-4: 1.0, 3e-4: 3.0, 1e-3: 2.0}.get(lr, 0.5) if job["arm"] == "spr_orth2" else \
        {1e-4: 2.0, 3e-4: 1.0, 1e-3: 0.0}.get(lr, 0.5)
    if "total_steps" not in job:  # a scored run: the return no longer depends on the tuning
        score = {"spr_orth2": 4.0, "spr_naive": 2.0, "spr_authors": 1.0, "stream_q": 5.0}[job["arm"]]
    spr = ARMS[job["arm"]]["spr"]
    loss = {"spr_orth2": [-0.5, -0.7, -0.85], "spr_naive": [-0.6, -0.9, -0.9]}.get(job["arm"], [-0.9] * 3)
    return RunSummary(
        game=job["game"], seed_index=job["seed_index"], arm=job["arm"], edges=[100, 200, 300],
        return_last10=score, episodes=3, return_curve=[score] * 3, srank_latent=1, erank_latent=1.0,
        srank_hidden=1, erank_hidden=1.0, spr_loss_curve=loss if spr else [None] * 3,
        spr_loss_early_min=min(loss) if spr else math.nan, spr_loss_last10=loss[-1] if spr else math.nan,
        spr_steps=100 if spr else 0, cos_before_curve=[0.1] * 3, cos_after_curve=[0.0] * 3,
        mean_abs_cos_before=0.1, max_abs_cos_after=0.0, nonfinite=0, wall_s=1.0, steps_per_s=300.0)


def test_the_shared_tuner_picks_each_arms_best_development_alpha_and_the_scored_runs_use_it(monkeypatch):
    jobs = []

    def fake_run_one(job):
        jobs.append(job)
        return _fake_summary(job)

    monkeypatch.setattr(experiment, "run_one", fake_run_one)
    monkeypatch.setattr(experiment, "collect_probe_states", lambda *a, **k: None)
    cfg = dataclasses.replace(Config.tiny(), arms=("spr_orth2", "spr_naive", "spr_authors", "stream_q"),
                              spr_lr_grid=(1e-4, 3e-4, 1e-3), tune_seeds=2, tune_steps=300, total_steps=900,
                              curve_points=3, loss_window=900)
    ctx = RunContext(seed=5, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    out = experiment.run(cfg, ctx)

    tuning = [j for j in jobs if "total_steps" in j]
    scored = [j for j in jobs if "total_steps" not in j]
    # every grid value of both tunable arms on both development seeds, at the tuning budget; no other arm
    assert sorted((j["arm"], j["spr_lr"], j["seed_index"]) for j in tuning) == sorted(
        (a, lr, d) for a in ("spr_orth2", "spr_naive") for lr in cfg.spr_lr_grid for d in range(2))
    assert {j["total_steps"] for j in tuning} == {300}
    # development seeds never coincide with scored ones
    assert not {j["seed"] for j in tuning} & {j["seed"] for j in scored}
    # chosen: the best mean development return (orth2 3e-4, naive 1e-4); the authors' arm is not tuned
    assert {j["arm"]: j.get("spr_lr") for j in scored} == {"spr_orth2": 3e-4, "spr_naive": 1e-4,
                                                           "spr_authors": None, "stream_q": None}
    assert out.metrics["spr_orth2"]["alpha_spr"] == 3e-4 and out.metrics["spr_naive"]["alpha_spr"] == 1e-4
    assert "alpha_spr" not in out.metrics["spr_authors"]
    calls = ctx.tuning["spr_orth2"]["calls"]
    assert [t["score"] for t in calls[0]["trials"]] == [1.0, 3.0, 2.0]
    # the naive-SPR checks: returns 4 / 2, and steps to -0.8 300 (orth2) over 200 (naive)
    checks = {c.id: c.value for c in out.checks}
    assert checks["return_ratio_naive"] == 2.0 and checks["return_ratio"] == 4.0 / 5.0
    assert checks["spr_loss_crossing_ratio"] == 300 / 200
    assert any("authors' configuration" in n and "1.00" in n for n in out.notes)


def test_without_naive_spr_a_quick_run_records_exactly_the_quick_checks(monkeypatch):
    monkeypatch.setattr(experiment, "run_one", _fake_summary)
    monkeypatch.setattr(experiment, "collect_probe_states", lambda *a, **k: None)
    cfg = dataclasses.replace(Config.tiny(), total_steps=900, curve_points=3, loss_window=900)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    out = experiment.run(cfg, ctx)
    declared = [c.id for c in experiment.CHECKS.values() if "tiny" in c.settings]
    assert [c.id for c in out.checks] == declared


def _drawn_seeds(monkeypatch, games):
    """(game, arm, kind, seed index, spr_lr) -> agent seed, and game -> probe seed, of a run of ``games``."""
    jobs, probes = [], {}

    def fake_run_one(job):
        jobs.append(job)
        return _fake_summary(job)

    def fake_probes(game, n, seed, sticky):
        probes[game] = seed

    monkeypatch.setattr(experiment, "run_one", fake_run_one)
    monkeypatch.setattr(experiment, "collect_probe_states", fake_probes)
    cfg = dataclasses.replace(Config.tiny(), games=games, seeds=2, arms=("spr_orth2", "spr_naive", "stream_q"),
                              spr_lr_grid=(1e-4, 1e-3), tune_seeds=1, tune_steps=300, total_steps=900,
                              curve_points=3, loss_window=900)
    ctx = RunContext(seed=3, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    experiment.run(cfg, ctx)
    seeds = {(j["game"], j["arm"], "total_steps" in j, j["seed_index"], j.get("spr_lr")): j["seed"] for j in jobs}
    return seeds, probes


def test_a_one_game_run_draws_what_that_game_draws_in_a_run_of_several(monkeypatch):
    """Runs of single games compose into the full mode's three-game run: each game's probe and agent seeds
    (development and scored) come from the game's own index, not its place in ``games``."""
    all_seeds, all_probes = _drawn_seeds(monkeypatch, ("breakout", "space_invaders", "freeway"))
    for game in ("breakout", "space_invaders", "freeway"):
        one_seeds, one_probes = _drawn_seeds(monkeypatch, (game,))
        assert one_probes == {game: all_probes[game]}
        assert {k: v for k, v in all_seeds.items() if k[0] == game} == one_seeds
    reordered, reordered_probes = _drawn_seeds(monkeypatch, ("freeway", "breakout"))
    assert reordered_probes == {g: all_probes[g] for g in ("freeway", "breakout")}
    # different games and seed indices never share a seed
    assert len(set(all_seeds.values())) == len({(k[0], k[2], k[3]) for k in all_seeds})


def _game_dependent_summary(job):
    """As :func:`_fake_summary`, with development returns that pick a different α_SPR on each game."""
    summary = _fake_summary(job)
    if "total_steps" in job and job["game"] == "freeway":  # on Freeway 1e-3 is orth2's best, 3e-4 naive's
        summary.return_last10 = {1e-4: 0.0, 3e-4: 1.0, 1e-3: 9.0}[job["spr_lr"]] if job["arm"] == "spr_orth2" \
            else {1e-4: 0.0, 3e-4: 9.0, 1e-3: 1.0}[job["spr_lr"]]
    return summary


def _tuned_run(monkeypatch, games, **fields):
    jobs = []

    def fake_run_one(job):
        jobs.append(job)
        return _game_dependent_summary(job)

    monkeypatch.setattr(experiment, "run_one", fake_run_one)
    monkeypatch.setattr(experiment, "collect_probe_states", lambda game, n, seed, sticky: np.full((2, 3), seed % 97))
    cfg = dataclasses.replace(Config.tiny(), games=games, seeds=2, arms=("spr_orth2", "spr_naive", "stream_q"),
                              spr_lr_grid=(1e-4, 3e-4, 1e-3), tune_seeds=1, tune_steps=300, total_steps=900,
                              curve_points=3, loss_window=900, **fields)
    ctx = RunContext(seed=4, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    return experiment.run(cfg, ctx), jobs, ctx


def test_tune_per_game_chooses_each_games_alpha_on_that_games_development_runs(monkeypatch):
    out, jobs, ctx = _tuned_run(monkeypatch, ("breakout", "freeway"), tune_per_game=True)
    scored = {(j["game"], j["arm"]): j.get("spr_lr") for j in jobs if "total_steps" not in j}
    assert scored[("breakout", "spr_orth2")] == 3e-4 and scored[("freeway", "spr_orth2")] == 1e-3
    assert scored[("breakout", "spr_naive")] == 1e-4 and scored[("freeway", "spr_naive")] == 3e-4
    orth2 = out.metrics["spr_orth2"]
    assert orth2["alpha_spr_breakout"] == 3e-4 and orth2["alpha_spr_freeway"] == 1e-3
    assert len(ctx.tuning["spr_orth2"]["calls"]) == 2
    # one value over both games (the default): orth2 by the mean over games, 1e-3 (mean 5.5) over 3e-4 (2.0)
    out, jobs, _ = _tuned_run(monkeypatch, ("breakout", "freeway"))
    assert {j.get("spr_lr") for j in jobs if "total_steps" not in j and j["arm"] == "spr_orth2"} == {1e-3}
    assert out.metrics["spr_orth2"]["alpha_spr"] == 1e-3


def test_the_run_cache_resumes_and_composes_one_game_runs_into_a_run_of_several(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    first, jobs_b, _ = _tuned_run(monkeypatch, ("breakout",), tune_per_game=True, run_cache=True)
    _, jobs_f, _ = _tuned_run(monkeypatch, ("freeway",), tune_per_game=True, run_cache=True)
    both, jobs_both, _ = _tuned_run(monkeypatch, ("breakout", "freeway"), tune_per_game=True, run_cache=True)
    assert jobs_b and jobs_f and jobs_both == []  # every run of the two-game run came from the cache
    fresh, jobs_fresh, _ = _tuned_run(monkeypatch, ("breakout", "freeway"), tune_per_game=True)
    assert len(jobs_fresh) == len(jobs_b) + len(jobs_f)
    assert both.metrics == fresh.metrics
    assert [(c.id, c.value) for c in both.checks] == [(c.id, c.value) for c in fresh.checks]
    # a field one run reads is part of the key; one that only chooses runs (processes) is not
    _, jobs_gamma, _ = _tuned_run(monkeypatch, ("breakout",), tune_per_game=True, run_cache=True, gamma=0.98)
    assert len(jobs_gamma) == len(jobs_b)
    _, jobs_proc, _ = _tuned_run(monkeypatch, ("breakout",), tune_per_game=True, run_cache=True, processes=1)
    assert jobs_proc == []


def test_a_changed_run_module_retires_the_cached_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    job = {"config": Config.tiny(), "game": "breakout", "seed_index": 0, "arm": "stream_q", "seed": 7,
           "probe": np.zeros((2, 3), np.float32), "device": "cpu"}
    key = experiment.run_key(job)
    assert experiment.run_key({**job, "seed": 8}) != key
    assert experiment.run_key({**job, "probe": np.ones((2, 3), np.float32)}) != key
    assert experiment.run_key({**job, "spr_lr": 3e-4}) != key
    monkeypatch.setattr(experiment, "_code_digest", lambda: "another version")
    assert experiment.run_key(job) != key


def test_a_run_killed_midway_keeps_the_runs_that_finished(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    calls = []

    def dies_on_the_fourth(job):
        calls.append(job)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return _fake_summary(job)

    monkeypatch.setattr(experiment, "run_one", dies_on_the_fourth)
    monkeypatch.setattr(experiment, "collect_probe_states", lambda game, n, seed, sticky: np.zeros((2, 3)))
    cfg = dataclasses.replace(Config.tiny(), seeds=3, total_steps=900, curve_points=3, loss_window=900,
                              run_cache=True)
    ctx = RunContext(seed=1, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    with pytest.raises(KeyboardInterrupt):
        experiment.run(cfg, ctx)
    calls.clear()
    monkeypatch.setattr(experiment, "run_one", lambda job: calls.append(job) or _fake_summary(job))
    experiment.run(cfg, ctx)
    assert len(calls) == 6 - 3  # three of the six runs had finished


def test_over_several_games_naive_spr_is_compared_by_the_geometric_mean_of_per_game_ratios(monkeypatch):
    def summary(job):
        s = _fake_summary(job)
        if "total_steps" not in job and job["arm"] == "spr_naive" and job["game"] == "freeway":
            s.return_last10 = 8.0  # orth2 4.0: ratio 0.5 on Freeway, 2.0 on Breakout
        return s

    monkeypatch.setattr(experiment, "run_one", summary)
    monkeypatch.setattr(experiment, "collect_probe_states", lambda *a, **k: None)
    cfg = dataclasses.replace(Config.tiny(), games=("breakout", "freeway"), seeds=2,
                              arms=("spr_orth2", "spr_naive", "spr_authors", "stream_q"), total_steps=900,
                              curve_points=3, loss_window=900)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=experiment.STREAMS)
    out = experiment.run(cfg, ctx)
    check = next(c for c in out.checks if c.id == "return_ratio_naive")
    assert check.value == pytest.approx(1.0)  # sqrt(2.0 * 0.5); the arithmetic ratio of means would be 4 / 5
    assert "breakout 2.000, freeway 0.500" in check.note
    notes = [n for n in out.notes if n.startswith("SPR+orth² minus")]
    assert [n.split(",")[0] for n in notes] == [
        "SPR+orth² minus Stream Q(λ)", "SPR+orth² minus Stream Q(λ)+SPR (naive)", "SPR+orth² minus SPR+orth+orth²"]
    assert "breakout +2.00" in notes[1] and "freeway -4.00" in notes[1]
    # without naive SPR the full mode says why the check is missing
    cfg = dataclasses.replace(cfg, arms=("spr_orth2", "stream_q"))
    out = experiment.run(cfg, ctx)
    check = next(c for c in out.checks if c.id == "return_ratio_naive")
    assert math.isnan(check.value) and "spr_naive is not among the arms" in check.note


def test_in_a_pool_the_runs_that_succeed_are_cached_before_a_failed_one_is_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    cfg = dataclasses.replace(Config.tiny(), seeds=2, total_steps=900, curve_points=3, loss_window=900,
                              run_cache=True)
    jobs = [{"config": cfg, "game": "breakout", "seed_index": s, "arm": arm, "seed": 11 + s,
             "probe": np.zeros((2, 3), np.float32), "device": "cpu", "threads": 1}
            for s in range(2) for arm in ("spr_orth2", "stream_q")]

    class Done:
        def __init__(self, value=None, error=None):
            self.value, self.error = value, error

        def exception(self):
            return self.error

        def result(self):
            return self.value

    class InlinePool:  # a process pool that runs each job at submit time
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, job):
            if job["seed_index"] == 1 and job["arm"] == "spr_orth2":
                return Done(error=RuntimeError("diverged"))
            return Done(value=_fake_summary(job))

    monkeypatch.setattr(experiment.concurrent.futures, "ProcessPoolExecutor", InlinePool)
    monkeypatch.setattr(experiment.concurrent.futures, "as_completed", lambda futures: list(futures))
    with pytest.raises(RuntimeError, match="diverged"):
        experiment._execute(jobs, 2, cache=True)
    assert [experiment._load_run(experiment.run_key(j)) is not None for j in jobs] == [True, True, False, True]
