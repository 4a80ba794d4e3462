"""The shared further-run helpers (``icml26.further``): overrides, recipes, pruning of unmeasured checks.

The drivers that use them run end to end in their papers' tests (dmanet folding, fox pathology, vimrag
long episodes, spard front).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icml26.further import further_parser, parse_overrides, prune_unmeasured, recipe_config, run_recipe

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_overrides_are_parsed_as_strings_and_a_bad_item_is_named():
    assert parse_overrides(["a=1", "b=x=y", " c =", "d=0.5,1"]) == {"a": "1", "b": "x=y", "c": "", "d": "0.5,1"}
    assert parse_overrides([]) == {}
    for bad in ("novalue", "=3"):
        with pytest.raises(ValueError, match=repr(bad)):
            parse_overrides([bad])


def test_the_parser_has_the_shared_options():
    args = further_parser("First line.\n\nMore.", default_seeds="0-3").parse_args(["--out", "x", "k=v"])
    assert (args.out, args.seeds, args.setting, args.workers, args.overrides) == ("x", "0-3", "quick", 1, ["k=v"])
    assert further_parser("First line.", default_seeds="0").description == "First line."


def _seed_folder(tmp_path: Path, n: int = 2) -> Path:
    """Two copies of a committed seed result (zs_expand: three headline checks, all not held)."""
    folder = tmp_path / "zs_expand"
    for s in range(n):
        (folder / "seeds" / str(s)).mkdir(parents=True)
        shutil.copy(RESULTS / "zs_expand" / "seeds" / "0" / "result.json", folder / "seeds" / str(s) / "result.json")
    return folder


def _load(folder: Path, seed: int) -> dict:
    return json.loads((folder / "seeds" / str(seed) / "result.json").read_text())


def test_prune_drops_only_checks_no_seed_measured_and_recomputes_the_status(tmp_path):
    folder = _seed_folder(tmp_path)
    checks = _load(folder, 0)["claim"]["checks"]
    headline = [c["id"] for c in checks if c.get("role") == "headline"]
    assert len(headline) >= 2 and _load(folder, 0)["claim"]["status"] == "refuted"
    # every headline check unmeasured on seed 0; on seed 1 all but the first headline check too
    for seed, unmeasured in ((0, set(headline)), (1, set(headline[1:]))):
        data = _load(folder, seed)
        for c in data["claim"]["checks"]:
            if c["id"] in unmeasured:
                c.update(value=None, passed=False, note="not measured: this run did not compute it")
        (folder / "seeds" / str(seed) / "result.json").write_text(json.dumps(data))
    dropped = prune_unmeasured(folder)
    assert dropped == sorted(headline[1:])
    for seed in (0, 1):
        kept = [c["id"] for c in _load(folder, seed)["claim"]["checks"]]
        assert kept == [c["id"] for c in checks if c["id"] not in headline[1:]]
    # seed 1 keeps its one measured (not held) headline check: refuted; seed 0 has it unmeasured
    assert _load(folder, 1)["claim"]["counts"]["headline"]["not held"] == 1
    assert prune_unmeasured(folder) == []  # idempotent


def test_prune_refuses_a_folder_without_seeds(tmp_path):
    with pytest.raises(ValueError, match="folder="):
        prune_unmeasured(tmp_path)



def test_recipe_then_command_line_overrides_apply_in_that_order():
    from icml26.papers.hici.config import Config

    config = recipe_config("hici", {"eval_docs": "7", "finetune_steps": "9"}, "tiny", {"eval_docs": "5"})
    assert isinstance(config, Config) and (config.eval_docs, config.finetune_steps) == (5, 9)
    assert config.d_model == Config.tiny().d_model  # the rest is the setting's
    with pytest.raises(ValueError, match="finetune_steps"):
        recipe_config("hici", {"finetune_steps": "0"}, "tiny")


def test_run_recipe_refuses_a_bad_override_before_any_work(tmp_path):
    seen = []
    with pytest.raises(ValueError, match="eval_docs"):
        run_recipe("hici", ["--out", str(tmp_path / "out"), "--setting", "tiny", "eval_docs=0"], doc="Doc.",
                   recipe={"finetune_steps": "2"}, default_seeds="0", note=lambda c, o: seen.append(o) or "")
    assert not (tmp_path / "out").exists() and seen == []  # nothing written, the note never built
