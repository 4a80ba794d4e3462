"""SPARD's tuned front: the Pareto and matched-accuracy readings by hand, the shared tuning rule, and the
front on the tiny digits run (its grid points at our defaults are the main arms, two code paths one answer;
the choice follows the rule from the development figures; development replicates are their own draws)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from icml26.papers.spard.analysis import asr_at_accuracy, matched_score, pareto_front, refusals_kept
from icml26.papers.spard.config import Config
from tests.papers._spard_helpers import _one  # noqa: F401 (fixtures)


def test_pareto_front_and_matched_accuracy_by_hand():
    acc = [0.90, 0.85, 0.80, 0.85, 0.70]
    asr = [0.50, 0.20, 0.30, 0.20, 0.10]
    # 2 is dominated by 1 (more accurate, lower ASR); 3 duplicates 1 (the first stays)
    assert pareto_front(acc, asr).tolist() == [4, 1, 0]
    assert asr_at_accuracy(acc, asr, 0.84) == 0.20  # settings 0, 1, 3 reach 0.84; the lowest ASR is 0.20
    assert asr_at_accuracy(acc, asr, 0.70) == 0.10
    assert math.isnan(asr_at_accuracy(acc, asr, 0.95))  # no setting keeps that much accuracy
    with pytest.raises(ValueError, match="task_acc"):
        pareto_front([0.9], [0.1, 0.2])


def test_matched_score_ranks_every_setting_inside_the_budget_first():
    assert matched_score(0.3, 0.78, 0.80, 3.0) == 0.3  # 2 points lost: inside, scored by its ASR
    assert matched_score(0.0, 0.70, 0.80, 3.0) == pytest.approx(1.07)  # 10 points lost: 1 + 7/100
    assert matched_score(0.9, 0.771, 0.80, 3.0) < matched_score(0.0, 0.769, 0.80, 3.0)
    with pytest.raises(ValueError, match="asr"):
        matched_score(1.5, 0.8, 0.8, 3.0)


def test_refusals_kept_counts_only_the_base_models_refusals():
    base = np.array([True, True, False, True, False])
    now = np.array([True, False, True, True, False])
    assert refusals_kept(now, base) == pytest.approx(2 / 3)  # the third prompt was never the base's refusal
    assert math.isnan(refusals_kept(now, np.zeros(5, dtype=bool)))
    with pytest.raises(TypeError, match="refused"):
        refusals_kept([1, 0, 1, 1, 0], base)


def test_front_config_adds_the_front_to_a_settings_config():
    from icml26.common.config import config_to_dict
    from icml26.papers.spard.front_run import front_config

    with pytest.raises(ValueError, match="one length"):
        Config(front_lam=(1.0, 10.0))
    with pytest.raises(ValueError, match="front_tau_factor"):
        Config(front_tau_factor=(3.0, 2.0, 1.5, 1.0, 0.0))
    with pytest.raises(ValueError, match="match_points"):
        Config(match_points=float("nan"))
    quick = front_config("quick", {"dev_replicates": "2"})
    assert quick.replicates == 3 and quick.dev_replicates == 2 and quick.front_lam == (0.3, 1.0, 3.0, 10.0, 30.0)
    assert quick.front and not Config.quick().front
    # the committed runs' config is unchanged: the front's fields at their defaults are not recorded
    assert not {"front", "front_lam", "dev_replicates"} & set(config_to_dict(Config.quick()))
    assert {"front", "dev_replicates"} <= set(config_to_dict(quick)) and "front_lam" not in config_to_dict(quick)


@pytest.fixture(scope="module")
def tiny_front():
    from icml26.contract import RunContext
    from icml26.papers.spard import experiment
    from icml26.papers.spard.digits import make_data

    cfg = dataclasses.replace(Config.tiny(), front=True)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False)
    n_user = len(make_data(cfg, ctx, 0).user_x)
    k = int(cfg.headline_ratio * n_user)
    # SafeInstr's default: one pass of each loader per epoch
    default_mix = max(1, round(math.ceil(n_user / cfg.batch_size) / math.ceil(k / cfg.safety_batch)))
    cfg.front_mix_every, cfg.front_lam, cfg.front_rho, cfg.front_tau_factor = (
        (default_mix, 1), (1.0, 10.0), (1.0, 10.0), (1.5, 0.5))
    return cfg, ctx, experiment.run(cfg, ctx), default_mix


def test_front_points_at_our_defaults_are_the_main_arms(tiny_front):
    cfg, _, out, default_mix = tiny_front
    m = out.metrics
    pairs = {"SPARD p=3%": "front SPARD tau_factor=1.5", "SPAG+random p=3%": "front SPAG+random tau_factor=1.5",
             "penalty (random data)": "front penalty (random data) lam=1",
             "Lisa (random data)": "front Lisa (random data) rho=1",
             "SafeInstr (random data)": f"front SafeInstr (random data) mix_every={default_mix}"}
    for main, point in pairs.items():
        assert (m[point]["asr"], m[point]["task_acc"]) == (m[main]["asr"], m[main]["task_acc"]), main


def test_front_choice_follows_the_rule_from_the_development_figures(tiny_front):
    cfg, _, out, _ = tiny_front
    m = out.metrics
    dev_sft = m["front summary"]["dev_sft_task_acc"]
    knobs = {"SPARD": "tau_factor", "SPAG+random": "tau_factor", "penalty (random data)": "lam",
             "Lisa (random data)": "rho", "SafeInstr (random data)": "mix_every"}
    for arm, knob in knobs.items():
        rows = {float(k.split("=")[-1]): v for k, v in m.items() if k.startswith(f"front {arm} {knob}=")}
        assert len(rows) == 2
        inside = [v for v, r in rows.items() if 100 * (dev_sft - r["dev_task_acc"]) <= cfg.match_points + 1e-9]
        if inside:  # lowest development ASR inside the budget; ties: the earlier grid point
            want = min(inside, key=lambda v: (rows[v]["dev_asr"], list(rows).index(v)))
        else:  # none inside: the smallest accuracy loss
            want = max(rows, key=lambda v: (rows[v]["dev_task_acc"], -list(rows).index(v)))
        assert m[f"tuned {arm}"][knob] == want, arm
        assert m[f"tuned {arm}"]["asr"] == rows[want]["asr"]
    summary = m["front summary"]
    assert summary["matched_task_acc"] == pytest.approx(m["SFT"]["task_acc"] - cfg.match_points / 100)
    assert "front_asr" in out.curves and "front_task_acc" in out.curves


def test_development_replicates_are_their_own_draws(tiny_front):
    from icml26.papers.spard.digits import make_data
    from icml26.papers.spard.front import DEV_OFFSET

    cfg, ctx, _, _ = tiny_front
    dev, scored = make_data(cfg, ctx, DEV_OFFSET), make_data(cfg, ctx, 0)
    assert len(dev.user_x) == len(scored.user_x) and not np.array_equal(dev.user_x, scored.user_x)
    assert not np.array_equal(dev.pool_x, scored.pool_x)


def test_front_run_writes_a_valid_result_with_the_front(tmp_path):
    """The further run's entry point, one tiny seed: the config records the grids, the result validates."""
    import json

    from icml26.papers.spard.front_run import front_config, main

    grids = ["front_mix_every=4,1", "front_lam=1,10", "front_rho=1,10", "front_tau_factor=1.5,0.5"]
    cfg = front_config("tiny", dict(g.split("=") for g in grids))
    assert cfg.front and cfg.front_lam == (1.0, 10.0) and cfg.replicates == 1
    path = main(["--out", str(tmp_path), "--seeds", "0", "--setting", "tiny", *grids])
    data = json.loads(path.read_text())
    assert data["config"]["front_tau_factor"] == [1.5, 0.5]
    assert {"tuned SPARD", "front summary"} <= set(data["metrics"]) and "front.png" in data["figures"]
