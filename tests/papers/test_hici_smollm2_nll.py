"""The SmolLM2 NLL further run's driver on a tiny random Llama: every arm trains under one LoRA budget
and is scored; a closed gate makes HiCI score exactly as chunked attention; the summary's paired
differences are the per-window differences; settings that cannot run are refused."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("peft")

from icml26.papers.hici.smollm2_nll import (ARMS, NLLSettings, lora_arm, run_seed, summarize,  # noqa: E402
                                           window_nll)


def llama():
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


SETTINGS = NLLSettings(length=32, segment=8, steps=3, eval_windows=3, max_overhead=0.4)


def streams():
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 50, (400,), generator=g), torch.randint(0, 50, (200,), generator=g)


@pytest.fixture(scope="module")
def run():
    return run_seed(0, SETTINGS, lm=llama(), streams=streams(), progress=False)


def test_every_arm_is_scored_in_its_own_mode_and_in_full_mode(run):
    assert set(run["nll"]) == {"base", *ARMS}
    assert set(run["nll"]["base"]) == {"full", "chunked"} and set(run["nll"]["full_ft"]) == {"full"}
    for arm in ("chunked", "hici", "s2attn"):
        assert set(run["nll"][arm]) == {"chunked", "full"}
    for arm in run["nll"].values():
        for mode in arm.values():
            assert len(mode["late"]) == SETTINGS.eval_windows and np.isfinite(mode["late"]).all()
    assert 0 < run["hici_parameters"] <= 0.4 * (run["hici_parameters"] + run["base_parameters"])


def test_a_closed_gate_is_chunked_attention_and_lora_starts_at_the_base():
    model = llama()
    windows = torch.randint(0, 50, (2, SETTINGS.length + 1), generator=torch.Generator().manual_seed(2))
    hici_model, _, _ = lora_arm(copy.deepcopy(model), "hici", SETTINGS, seed=0)
    chunked_model, _, _ = lora_arm(copy.deepcopy(model), "chunked", SETTINGS)
    full_model, _, _ = lora_arm(copy.deepcopy(model), "full_ft", SETTINGS)
    h, c = window_nll(hici_model, windows, skip=SETTINGS.segment), window_nll(chunked_model, windows, skip=SETTINGS.segment)
    assert np.array_equal(h[0], c[0]) and np.array_equal(h[1], c[1])
    f, base = window_nll(full_model, windows, skip=0), window_nll(model, windows, skip=0)
    np.testing.assert_allclose(f[0], base[0], rtol=1e-6)  # LoRA's B starts at zero
    assert not np.allclose(c[0], window_nll(model, windows, skip=SETTINGS.segment)[0])  # chunking drops context


def test_only_lora_and_hici_modules_train():
    from icml26.papers.hici.patch import hici_parameters

    model, optimizer, extra = lora_arm(llama(), "hici", SETTINGS)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    lora = {id(p) for n, p in model.named_parameters() if "lora_" in n}
    modules = {id(p) for p in hici_parameters(model)}
    assert trainable == lora | modules and lora and modules
    assert [id(p) for p in optimizer.param_groups[1]["params"]] == [id(p) for p in hici_parameters(model)]
    assert sum(p.numel() for p in hici_parameters(model)) == extra
    lora_count = {arm: sum(p.numel() for n, p in lora_arm(llama(), arm, SETTINGS)[0].named_parameters() if "lora_" in n)
                  for arm in ARMS}
    assert len(set(lora_count.values())) == 1, lora_count  # one LoRA budget for every arm
    _, plain, none = lora_arm(llama(), "chunked", SETTINGS)
    assert none == 0 and len(plain.param_groups) == 1


def test_summary_differences_are_the_paired_window_differences(run):
    other = copy.deepcopy(run)
    other["seed"] = 1
    summary = summarize([run, other])
    c = summary["comparisons"]["HiCI - chunked (own modes)"]
    expect = np.array(run["nll"]["hici"]["chunked"]["late"]) - np.array(run["nll"]["chunked"]["chunked"]["late"])
    assert c["per_seed"] == pytest.approx([expect.mean()] * 2)
    assert c["windows"][0] == pytest.approx(expect.mean()) and c["n_windows"] == 2 * expect.size
    assert summary["mean_nll"]["base/full"] == pytest.approx(np.mean(run["nll"]["base"]["full"]["late"]))
    with pytest.raises(ValueError, match="runs is empty"):
        summarize([])


def test_settings_that_cannot_run_are_refused():
    with pytest.raises(ValueError, match="multiple of segment"):
        NLLSettings(length=30, segment=8)
    with pytest.raises(ValueError, match="at least 2 segments"):
        NLLSettings(length=8, segment=8)
    with pytest.raises(ValueError, match="skip"):
        window_nll(llama(), torch.zeros(2, 9, dtype=torch.long), skip=8)  # no target at or after position 8
    with pytest.raises(ValueError, match="windows must be"):
        window_nll(llama(), torch.zeros(9, dtype=torch.long), skip=0)
    with pytest.raises(ValueError, match="arm='dense'"):
        lora_arm(llama(), "dense", dataclasses.replace(SETTINGS))


def test_the_committed_summary_is_rebuilt_from_the_committed_seeds():
    import json
    from pathlib import Path

    from icml26.papers.hici.smollm2_nll import summary_markdown

    folder = Path(__file__).resolve().parents[2] / "results" / "hici" / "smollm2_nll"
    if not (folder / "summary.json").exists():
        pytest.skip("no committed SmolLM2 run")
    stored = json.loads((folder / "summary.json").read_text())
    runs = [json.loads((folder / f"seed{s}.json").read_text()) for s in stored["seeds"]]
    rebuilt = json.loads(json.dumps(summarize(runs)))
    assert rebuilt == stored
    assert summary_markdown(rebuilt) == (folder / "summary.md").read_text()
