"""Soft-capped attention logits of the tiny LLaVA (``TinyVLMConfig.logit_cap``): ``c·tanh(s/c)`` in the capped
layers, before the mask and any intervention; with ``c ≤ 4`` Fox's saturation leaves a capped head uniform."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch

from icml26.papers.fox.attention import (
    LOGIT_CAP_ATTR,
    active_intervention,
    cap_attention_logits,
    fox_attention_forward,
    key_sets,
    use_fox_attention,
)
from icml26.papers.fox.config import Config
from icml26.papers.fox.interventions import HeadSaturation
from icml26.papers.fox.model import TinyVLMConfig, build_tiny_llava

pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_thread")


def _inputs(batch=2, seed=1):
    ids = torch.tensor([[1, 4, 5, 6] + [3] * 16 + [7, 6, 9]] * batch)
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": torch.randn(batch, 3, 32, 32, generator=g)}


def _sharpened(config: TinyVLMConfig):
    model = build_tiny_llava(config, seed=0)
    with torch.no_grad():  # peaked logits, far beyond one 8-wide saturation bin when uncapped
        for module in model.modules():
            if hasattr(module, "layer_idx") and hasattr(module, "q_proj"):
                module.q_proj.weight.mul_(40.0)
    return model


def test_capped_probabilities_are_the_softmax_of_the_capped_logits_by_hand():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=g) * 3 for _ in range(3))
    causal = torch.full((5, 5), float("-inf")).triu(1)[None, None]
    module = SimpleNamespace(training=False, layer_idx=0, **{LOGIT_CAP_ATTR: 1.5})
    out, probs = fox_attention_forward(module, q, k, v, causal, scaling=0.5)
    s = (q @ k.transpose(2, 3)) * 0.5
    want = torch.softmax(1.5 * torch.tanh(s / 1.5) + causal, dim=-1)
    torch.testing.assert_close(probs, want, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, (want @ v).transpose(1, 2), atol=1e-5, rtol=0)
    # the cap is binding here: uncapped attention differs
    assert float((torch.softmax(s + causal, -1) - want).abs().max()) > 0.05
    # a row's largest probability ratio is bounded by exp(2c)
    ratio = want[0, :, -1].max(-1).values / want[0, :, -1].min(-1).values
    assert float(ratio.max()) <= math.exp(3.0) + 1e-4


def test_a_very_large_cap_is_the_uncapped_model():
    x = _inputs()
    plain = build_tiny_llava(TinyVLMConfig(), seed=0)
    capped = build_tiny_llava(TinyVLMConfig(logit_cap=1e6), seed=0)
    with torch.no_grad():
        torch.testing.assert_close(capped(**x).logits, plain(**x).logits, atol=1e-5, rtol=0)


def _last_row_attention(model, layer, head, saturate):
    x = _inputs()
    keys = key_sets(x["input_ids"], image_token=3)
    intervention = HeadSaturation(keys, {layer: [head]}) if saturate else None
    with torch.no_grad(), use_fox_attention(model), active_intervention(intervention):
        return model(**x, output_attentions=True).attentions[layer][:, head, -1]


def test_saturation_leaves_a_capped_head_uniform_and_an_uncapped_one_routed():
    capped = _sharpened(TinyVLMConfig(logit_cap=3.9, cap_layers=(1,)))
    uncapped = _sharpened(TinyVLMConfig())
    routed = _last_row_attention(capped, 1, 2, saturate=False)
    assert float(routed.max() / routed.min()) > 20  # the capped head routes (logits spread over ~7.8)
    flat = _last_row_attention(capped, 1, 2, saturate=True)
    torch.testing.assert_close(flat, torch.full_like(flat, 1.0 / flat.shape[-1]), atol=1e-6, rtol=0)
    still = _last_row_attention(uncapped, 1, 2, saturate=True)  # a sample whose top bin keeps a few keys
    assert float(still.max()) > 4.0 / still.shape[-1]


def test_only_the_named_layers_are_capped():
    model = build_tiny_llava(TinyVLMConfig(logit_cap=2.0, cap_layers=(0, 3)), seed=0)
    marks = {m.layer_idx: getattr(m, LOGIT_CAP_ATTR) for m in model.modules()
             if isinstance(getattr(m, "layer_idx", None), int) and hasattr(m, "q_proj")}
    assert marks == {0: 2.0, 1: None, 2: None, 3: 2.0}
    every = build_tiny_llava(TinyVLMConfig(logit_cap=2.0), seed=0)
    assert {getattr(m, LOGIT_CAP_ATTR) for m in every.modules()
            if isinstance(getattr(m, "layer_idx", None), int) and hasattr(m, "q_proj")} == {2.0}


def test_bad_caps_are_refused_with_the_argument_named():
    model = build_tiny_llava(TinyVLMConfig(), seed=0)
    with pytest.raises(ValueError, match="cap"):
        cap_attention_logits(model, cap=0.0)
    with pytest.raises(ValueError, match="out of range"):
        cap_attention_logits(model, cap=1.0, layers=(4,))
    with pytest.raises(TypeError, match="layers"):
        cap_attention_logits(model, cap=1.0, layers="1")
    with pytest.raises(ValueError, match="logit_cap"):
        TinyVLMConfig(logit_cap=-1.0)
    with pytest.raises(ValueError, match="logit_cap"):
        TinyVLMConfig(cap_layers=(1,))
    with pytest.raises(ValueError, match="out of range"):
        TinyVLMConfig(logit_cap=2.0, cap_layers=(4,))
    with pytest.raises(ValueError, match="logit_cap"):
        Config(cap_layers=(1,))
    with pytest.raises(ValueError, match="cap_layers"):
        Config(logit_cap=2.0, cap_layers=(0, 4))


def test_the_committed_configuration_and_cache_keys_are_unchanged(monkeypatch):
    from icml26.common.config import config_to_dict
    from icml26.papers.fox import training

    quick = config_to_dict(Config.quick())
    assert "logit_cap" not in quick and "cap_layers" not in quick
    capped = config_to_dict(dataclasses.replace(Config.quick(), logit_cap=3.9, cap_layers=(1, 2, 3)))
    assert capped["logit_cap"] == 3.9 and capped["cap_layers"] == [1, 2, 3]
    seen = []

    def stop(kind, key, config=None):
        seen.append(config["model"])
        raise RuntimeError("stop")

    monkeypatch.setattr(training, "entry", stop)
    for cfg in (TinyVLMConfig(), TinyVLMConfig(logit_cap=3.9, cap_layers=(1,))):
        with pytest.raises(RuntimeError, match="stop"):
            training.trained_tiny_llava(cfg, seed=0)
    assert not {"logit_cap", "cap_layers"} & set(seen[0])
    assert seen[1]["logit_cap"] == 3.9 and seen[1]["cap_layers"] == (1,)
