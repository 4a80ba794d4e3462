"""HiCI's long-context further run: the recipe changes only the extension and evaluation
lengths and the number of evaluation documents; the checks named after the quick length read the run's own
extension length; the aggregate's note names the lengths it was measured at."""

from __future__ import annotations

import json

import pytest

from icml26.common.config import config_to_dict
from icml26.papers.hici import long_run
from icml26.papers.hici.config import Config


def test_long_config_changes_only_the_lengths_and_the_documents():
    quick = config_to_dict(Config.quick())
    long = config_to_dict(long_run.long_config("quick"))
    changed = {k for k in quick if quick[k] != long[k]}
    assert changed == {"extension_factor", "eval_extrapolation", "eval_docs"}
    config = long_run.long_config("quick")
    assert config.extension_factor * config.segment_tokens == 2048
    assert config.eval_extrapolation * config.segment_tokens == 4096
    assert config.interpolation_factor == 16.0  # 2,048 / the 128-token pretraining context
    assert Config.quick().interpolation_factor == 4.0  # the committed recipe is untouched
    assert long_run.long_config("quick", {"eval_docs": "7"}).eval_docs == 7
    with pytest.raises(ValueError, match="eval_extrapolation"):
        long_run.long_config("quick", {"eval_extrapolation": "8"})  # not longer than the x16 extension


def test_driver_scores_the_checks_at_its_own_extension_length(tmp_path):
    path = long_run.main(["--out", str(tmp_path), "--seeds", "0", "--setting", "tiny", "eval_docs=4",
                          "extension_factor=4", "eval_extrapolation=8"])
    data = json.loads(path.read_text())
    assert data["config"]["extension_factor"] == 4 and data["config"]["eval_docs"] == 4
    note = next(n for n in data["notes"] if n.startswith("A further run at long context"))
    assert "64 tokens" in note and "128 tokens" in note and "x4" in note  # tiny: G = 16, context 16
    seed = json.loads((tmp_path / "hici" / "seeds" / "0" / "result.json").read_text())
    m = seed["metrics"]
    assert "acc_64_chunked" in m["hici"] and "acc_128_full" in m["full_ft"]
    checks = {c["id"]: c for c in seed["claim"]["checks"]}
    # the check named after the quick length 512 reads this run's extension length, 64 tokens
    assert checks["hici_minus_full_ft_512"]["value"] == pytest.approx(
        m["hici"]["acc_64_chunked"] - m["full_ft"]["acc_64_full"])
    assert checks["pi_only_acc_512_full"]["value"] == pytest.approx(m["pi_only"]["acc_64_full"])
