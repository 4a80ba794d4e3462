"""Text routing of the tiny LLaVA (``TinyVLMConfig.text_layers``): in a blocked layer a text token after the
image sees the prompt up to the end of the image block and itself, never earlier text."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from icml26.papers.fox import (
    DecodingConfig,
    FoxConfig,
    active_intervention,
    fox_generate,
    use_fox_attention,
    vanilla_generate,
)
from icml26.papers.fox.attention import TEXT_ROUTING_ATTR, text_routing_mask
from icml26.papers.fox.config import Config
from icml26.papers.fox.model import TinyVLMConfig, build_tiny_llava
from icml26.papers.fox.scenes import PREFIX

pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_thread")

TEXT_START = len(PREFIX) + 16  # ShapeScenes: <s> look at : then 16 image tokens


def _inputs(tail, batch=2, seed=1):
    ids = torch.tensor([[1, 4, 5, 6] + [3] * 16 + list(tail)] * batch)
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": torch.randn(batch, 3, 32, 32,
                                                                                                   generator=g)}


def _sharpened(config: TinyVLMConfig, seed: int = 0):
    model = build_tiny_llava(config, seed=seed)
    with torch.no_grad():  # peaked attention, so that a mask that lets text through would show
        for module in model.modules():
            if hasattr(module, "layer_idx") and hasattr(module, "q_proj"):
                module.q_proj.weight.mul_(8.0)
    return model


def test_the_mask_by_hand():
    m = text_routing_mask(3, 6, 4)[0, 0]  # queries at 3, 4, 5 of keys 0..5
    allowed = torch.isfinite(m)
    # q = 3 comes before the text (causality is the causal mask's business); q = 4 sees itself; q = 5 not 4
    assert allowed.tolist() == [[True, True, True, True, True, True],
                                [True, True, True, True, True, False],
                                [True, True, True, True, False, True]]
    assert float(m[allowed].abs().max()) == 0.0
    with pytest.raises(ValueError, match="n_keys"):
        text_routing_mask(4, 3, 1)  # more queries than keys
    with pytest.raises(ValueError, match="text_start"):
        text_routing_mask(1, 3, -1)


def test_with_every_layer_blocked_earlier_text_cannot_reach_a_later_token():
    blocked = _sharpened(TinyVLMConfig(text_layers=()))
    plain = _sharpened(TinyVLMConfig())
    a, b = _inputs([7, 6, 9, 8]), _inputs([10, 11, 9, 8])  # the same last two tokens, other text before them
    with torch.no_grad():
        la, lb = blocked(**a).logits, blocked(**b).logits
        pa, pb = plain(**a).logits, plain(**b).logits
    # the prompt up to the image block is shared: identical there and at every text position's own token ...
    torch.testing.assert_close(la[:, -2:], lb[:, -2:], atol=1e-6, rtol=0)
    torch.testing.assert_close(la[:, :TEXT_START], lb[:, :TEXT_START], atol=0, rtol=0)
    # ... while the plain decoder reads the earlier text
    assert float((pa[:, -2:] - pb[:, -2:]).abs().max()) > 1e-2


def test_a_layer_allowed_to_read_text_carries_it_and_only_the_blocked_layers_are_marked():
    model = _sharpened(TinyVLMConfig(text_layers=(1,)))
    marks = {m.layer_idx: getattr(m, TEXT_ROUTING_ATTR) for m in model.modules()
             if isinstance(getattr(m, "layer_idx", None), int) and hasattr(m, "q_proj")}
    assert marks == {0: TEXT_START, 1: None, 2: TEXT_START, 3: TEXT_START}
    a, b = _inputs([7, 6, 9, 8]), _inputs([10, 11, 9, 8])
    with torch.no_grad():
        diff = (model(**a).logits[:, -1] - model(**b).logits[:, -1]).abs().max()
    assert float(diff) > 1e-2


def test_the_plain_decoder_is_unchanged():
    plain = build_tiny_llava(TinyVLMConfig(), seed=0)
    routed_nowhere = build_tiny_llava(TinyVLMConfig(text_layers=(0, 1, 2, 3)), seed=0)
    x = _inputs([7, 6, 9])
    with torch.no_grad():
        ref = plain(**x).logits
        got = routed_nowhere(**x).logits  # fox attention with nothing blocked: eager attention
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    assert plain.model.language_model.config._attn_implementation != "icml26_fox"


def test_cached_decoding_equals_recomputing_the_sequence_and_fox_runs_on_the_routed_model():
    model = _sharpened(TinyVLMConfig(text_layers=(1,)))
    inputs = _inputs([7, 6])
    steps = [torch.full((2, 1), t) for t in (9, 8, 10)]
    full = torch.cat([inputs["input_ids"], *steps], 1)
    mask = torch.ones_like(full)
    positions = model._prepare_position_ids_for_generation(full, {"input_ids": full, "attention_mask": mask})
    n = inputs["input_ids"].shape[1]
    with torch.no_grad():
        out = model(**inputs, use_cache=True)
        cached = []
        for i, step in enumerate(steps):  # one new query row against the cached keys: queries are the LAST rows
            out = model(input_ids=step, attention_mask=mask[:, : n + i + 1], cache=out.cache,
                        position_ids=positions[..., n + i: n + i + 1])
            cached.append(out.logits[:, -1])
        recomputed = model(input_ids=full, attention_mask=mask, pixel_values=inputs["pixel_values"]).logits
    torch.testing.assert_close(torch.stack(cached, 1), recomputed[:, n:], atol=2e-5, rtol=0)
    vanilla = vanilla_generate(model, inputs, DecodingConfig(max_new_tokens=5))
    fox = fox_generate(model, inputs, FoxConfig(layers=(1,), max_new_tokens=5))
    assert fox.sequences.shape == vanilla.sequences.shape
    with use_fox_attention(model), active_intervention(None):
        pass
    assert model.model.language_model.config._attn_implementation == "icml26_fox"  # routing stays on


def test_config_validation_and_the_neutral_default():
    with pytest.raises(ValueError, match="out of range"):
        TinyVLMConfig(text_layers=(4,))
    with pytest.raises(ValueError, match="text_layers"):
        Config(text_layers=(0, 4))
    from icml26.common.config import config_to_dict

    assert "text_layers" not in config_to_dict(Config.quick())  # the committed runs' configuration is unchanged
    routed = dataclasses.replace(Config.quick(), decoder_layers=8, text_layers=(1, 2, 3))
    assert config_to_dict(routed)["text_layers"] == [1, 2, 3]


def test_a_plain_models_cache_key_is_what_it_was(monkeypatch, tmp_path):
    """Models trained before the field existed keep their cache entries: the key leaves it out at None."""
    from icml26.papers.fox import training

    seen = []
    monkeypatch.setattr(training, "entry", lambda kind, key, config=None: (_ for _ in ()).throw(_Stop(key, config)))
    for cfg in (TinyVLMConfig(), TinyVLMConfig(text_layers=(1,))):
        with pytest.raises(_Stop) as stop:
            training.trained_tiny_llava(cfg, seed=0)
        seen.append(stop.value.config["model"])
    assert "text_layers" not in seen[0] and seen[1]["text_layers"] == (1,)


class _Stop(Exception):
    def __init__(self, key, config):
        super().__init__(key)
        self.key, self.config = key, config
