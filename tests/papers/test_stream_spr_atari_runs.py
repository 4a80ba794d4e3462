"""stream_spr's Atari further run: human-normalised scores, their IQM aggregate, and a resumable
sweep on the real ROMs (skipped with the install line without the ``atari`` extra)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from icml26.common.extras import extra_installed, install_hint
from icml26.common.stats import interquartile_mean
from icml26.papers.stream_spr.atari_scores import (REFERENCE_SCORES, human_normalized, iqm_difference,
                                                   iqm_interval, score_table)

needs_atari = pytest.mark.skipif(not extra_installed("atari"), reason=f"needs the atari extra: {install_hint('atari')}")


def test_human_normalized_maps_random_to_0_and_human_to_1():
    assert len(REFERENCE_SCORES) == 26  # the Atari-100k games
    assert human_normalized("breakout", 1.7) == 0.0 and human_normalized("breakout", 30.5) == pytest.approx(1.0)
    assert human_normalized("pong", -20.7) == 0.0 and human_normalized("pong", -3.05) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="game='space_invaders'"):
        human_normalized("space_invaders", 100.0)
    with pytest.raises(ValueError, match="score"):
        human_normalized("pong", float("nan"))


def test_score_table_is_seeds_by_games_in_the_order_given():
    table = score_table({"pong": [-20.7, 14.6], "breakout": [30.5, 1.7]}, ["breakout", "pong"])
    assert table.shape == (2, 2)
    assert table[:, 0] == pytest.approx([1.0, 0.0]) and table[:, 1] == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError, match="same, non-zero number of seeds"):
        score_table({"pong": [0.0], "breakout": [1.0, 2.0]}, ["breakout", "pong"])


def test_iqm_difference_of_a_shifted_table_is_the_shift():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(5, 4))
    diff = iqm_difference(base + 0.3, base, reps=500)
    assert diff.point == pytest.approx(0.3)
    assert iqm_interval(base, reps=200).point == pytest.approx(interquartile_mean(base))
    with pytest.raises(ValueError, match="one shape"):
        iqm_difference(base, base[:, :3])


def test_sweep_settings_refuse_a_scored_tuning_game_and_unknown_arms():
    from icml26.papers.stream_spr.atari_runs import AtariSweep

    with pytest.raises(ValueError, match="tune_game='breakout' is scored"):
        AtariSweep(games=("breakout", "pong"), tune_game="breakout")
    with pytest.raises(ValueError, match="arms"):
        AtariSweep(arms=("stream_q",))
    with pytest.raises(ValueError, match="games"):
        AtariSweep(games=("space_invaders",))
    with pytest.raises(ValueError, match="tune_seeds=\\(0, 0\\) must be distinct"):
        AtariSweep(tune_game="pong", tune_seeds=(0, 0))


def test_tuning_reads_only_the_tuning_seeds_and_keeps_each_arms_best_preset(tmp_path):
    from icml26.papers.stream_spr.atari_runs import PRESETS, AtariSweep, _tune

    sweep = AtariSweep(games=("breakout",), arms=("spr_orth2", "stream_q"), seeds=(0, 1, 2), tune_game="boxing",
                       tune_steps=10, tune_seeds=(5,))
    settings = {"steps": 10, "exploration_fraction": 0.10, "curve_points": 50}
    scores = {("spr_orth2", "elsayed"): 1.0, ("spr_orth2", "official"): 3.0,
              ("stream_q", "elsayed"): 2.0, ("stream_q", "official"): 2.0}  # a tie keeps the first preset
    for (arm, preset), score in scores.items():
        path = tmp_path / "tuning" / "runs" / "boxing" / arm / preset / "seed5.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"score": score, "lr_preset": preset, "settings": settings}))
    assert PRESETS[0] == "elsayed"
    assert _tune(sweep, tmp_path, workers=1) == {"spr_orth2": "official", "stream_q": "elsayed"}
    choice = json.loads((tmp_path / "tuning" / "choice.json").read_text())
    assert choice["seeds"] == [5] and choice["mean_score"]["spr_orth2"] == {"elsayed": 1.0, "official": 3.0}


@needs_atari
def test_a_sweep_keeps_each_run_resumes_and_refuses_other_settings(tmp_path, capsys):
    from icml26.papers.stream_spr.atari_runs import AtariSweep, run_sweep

    sweep = AtariSweep(games=("breakout",), arms=("spr_orth2", "stream_q"), seeds=(0,), steps=120, curve_points=4)
    result = run_sweep(sweep, tmp_path)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["iqm.png", "learning_curve_breakout.png", "runs/breakout/spr_orth2/seed0.json",
                     "runs/breakout/stream_q/seed0.json", "summary.json", "summary.md"]
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(result))
    table = (tmp_path / "summary.md").read_text()
    score = result["per_game"]["breakout"]["stream_q"]["score"]["mean"]
    assert "| breakout | " in table and f"{score:.3g}" in table and "SPR+orth² − Stream Q(λ)" in table
    run = json.loads((tmp_path / "runs/breakout/stream_q/seed0.json").read_text())
    assert run["settings"] == sweep.run_settings() and run["lr_preset"] == "elsayed"
    assert set(result["comparisons"]) == {"spr_orth2 - stream_q"}
    assert result["per_game"]["breakout"]["stream_q"]["scores"] == [run["score"]]
    capsys.readouterr()
    again = run_sweep(sweep, tmp_path)  # nothing reruns; the summary is rebuilt from the same files
    assert "2 of 2 runs already done" in capsys.readouterr().out
    assert again["per_game"] == result["per_game"]
    with pytest.raises(ValueError, match="seed0.json was written with other settings"):
        run_sweep(AtariSweep(games=("breakout",), arms=("spr_orth2", "stream_q"), seeds=(0,), steps=130,
                             curve_points=4), tmp_path)


def test_summary_refuses_missing_runs_and_runs_without_a_finished_game(tmp_path):
    from icml26.papers.stream_spr.atari_runs import AtariSweep, summarize

    sweep = AtariSweep(games=("pong",), arms=("spr_orth2", "stream_q"), seeds=(0,), steps=10, curve_points=2)
    with pytest.raises(FileNotFoundError, match="2 runs are missing"):
        summarize(sweep, tmp_path)
    for arm, score in (("spr_orth2", float("nan")), ("stream_q", -21.0)):
        path = tmp_path / "runs" / "pong" / arm / "seed0.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"game": "pong", "arm": arm, "seed": 0, "score": score, "lr_preset": "elsayed",
                                    "steps_per_s": 1.0, "games_played": 0, "curve_edges": [5, 10],
                                    "return_curve": [None, None]}))
    with pytest.raises(ValueError, match="finished no game have no score: pong/spr_orth2/seed0"):
        summarize(sweep, tmp_path)
    assert not (tmp_path / "summary.json").exists()


def test_the_committed_atari_summary_is_rebuilt_from_the_committed_runs(tmp_path):
    """summary.json and summary.md under results/stream_spr/atari_50k are what the committed runs give."""
    import shutil
    from pathlib import Path

    from icml26.papers.stream_spr.atari_runs import AtariSweep, summarize

    committed = Path(__file__).resolve().parents[2] / "results" / "stream_spr" / "atari_50k"
    if not (committed / "summary.json").exists():
        pytest.skip("no committed Atari run")
    stored = json.loads((committed / "summary.json").read_text())
    settings = stored["settings"]
    shutil.copytree(committed / "runs", tmp_path / "runs")
    shutil.copytree(committed / "tuning", tmp_path / "tuning")
    sweep = AtariSweep(games=tuple(stored["games"]), arms=tuple(stored["arms"]), seeds=tuple(stored["seeds"]),
                       steps=settings["steps"], exploration_fraction=settings["exploration_fraction"],
                       curve_points=settings["curve_points"], tune_game=settings["tune_game"],
                       tune_steps=settings["tune_steps"], tune_seeds=(10,))
    rebuilt = summarize(sweep, tmp_path)
    assert json.loads(json.dumps(rebuilt)) == stored
    assert (tmp_path / "summary.md").read_text() == (committed / "summary.md").read_text()
