"""Fox's pathway measurements: the saturation of chosen heads (HeadSaturation), the saturation effects on
p(yes | absent), the streams along vanilla's captions, the development POPE stop and the pathology
testbed's checks and driver.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from icml26.papers.fox import (
    FoxConfig,
    FoxIntervention,
    HeadSaturation,
    active_intervention,
    conflict_gated_fusion,
    fox_logits_processor,
    key_sets,
    saturate_logits,
    use_fox_attention,
)
from icml26.papers.fox.analysis import object_steps
from icml26.papers.fox.model import build_tiny_llava, caption_prompt, scene_inputs
from icml26.papers.fox.pathway import (
    random_head_masks,
    saturation_effects,
    stream_disagreement,
    teacher_forced_streams,
)
from icml26.papers.fox.scenes import SceneConfig, ShapeVocab, render_scenes, sample_adversarial_scenes
from icml26.papers.fox.training import TrainConfig, _train_key, train_tiny_llava
from tests.papers._fox_helpers import _scores_and_keys

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def llava():
    """A random tiny LLaVA with peaked decoder attention (near-uniform attention would make every
    intervention a no-op, and the equality tests could not fail)."""
    model = build_tiny_llava(seed=0)
    with torch.no_grad():
        for module in model.modules():
            if hasattr(module, "layer_idx") and hasattr(module, "q_proj"):
                module.q_proj.weight.mul_(8.0)
    return model


@pytest.fixture(scope="module")
def scenes():
    config = SceneConfig()
    drawn = sample_adversarial_scenes(12, np.random.default_rng(5), config)
    return drawn, render_scenes(drawn, config, size=32)


# -- HeadSaturation -------------------------------------------------------------------------------

def test_head_saturation_changes_only_the_chosen_heads_on_the_intervened_rows():
    scores, keys = _scores_and_keys(q=3)
    scores = scores * 10 + 3.0  # spread over several 8-wide bins
    out = HeadSaturation(keys=keys, heads={1: [0, 3]}).edit_scores(1, scores, None)
    first = keys.first_row(3, scores.shape[-1])
    want = scores.clone()
    want[:, [0, 3], first:] = saturate_logits(scores[:, [0, 3], first:])
    assert torch.equal(out, want)
    assert not torch.equal(out, scores)
    assert torch.equal(HeadSaturation(keys=keys, heads={1: [0, 3]}).edit_scores(0, scores, None), scores)


def test_head_saturation_takes_a_per_sample_mask():
    scores, keys = _scores_and_keys(q=1)
    scores = scores * 10
    mask = torch.tensor([[True] + [False] * 7, [False] * 7 + [True]])
    out = HeadSaturation(keys=keys, heads={2: mask}).edit_scores(2, scores, None)
    assert torch.equal(out[0, 0], saturate_logits(scores[0, 0])) and torch.equal(out[0, 1:], scores[0, 1:])
    assert torch.equal(out[1, 7], saturate_logits(scores[1, 7])) and torch.equal(out[1, :7], scores[1, :7])


def test_head_saturation_refuses_bad_heads():
    scores, keys = _scores_and_keys()
    with pytest.raises(ValueError, match="heads"):
        HeadSaturation(keys=keys, heads={1: [8]}).edit_scores(1, scores, None)
    with pytest.raises(ValueError, match="heads"):
        HeadSaturation(keys=keys, heads={1: torch.ones(3, 8, dtype=torch.bool)})
    with pytest.raises(TypeError, match="heads"):
        HeadSaturation(keys=keys, heads=[(1, 0)])
    with pytest.raises(ValueError, match="saturation"):
        HeadSaturation(keys=keys, heads={1: [0]}, saturation="bf16")


def test_head_saturation_of_the_probes_heads_is_foxs_stream(llava, scenes):
    """Two code paths, one answer: saturating the heads the probe selected reproduces Fox's stream."""
    drawn, images = scenes
    vocab = ShapeVocab()
    inputs = scene_inputs([caption_prompt()] * len(drawn), images, vocab)
    keys = key_sets(inputs["input_ids"], vocab[vocab.IMAGE])
    fox = FoxIntervention(keys=keys, layers={1, 2}, rho=0.35, record=True)
    with torch.no_grad(), use_fox_attention(llava):
        plain = llava(**inputs).logits[:, -1]
        with active_intervention(fox):
            want = llava(**inputs).logits[:, -1]
        chosen = {r.layer: r.selected[:, -1, :] for r in fox.records}
        with active_intervention(HeadSaturation(keys=keys, heads=chosen)):
            got = llava(**inputs).logits[:, -1]
    assert float((want - plain).abs().max()) > 1e-3  # the intervention matters on this model
    assert torch.equal(got, want)


def test_random_head_masks_draw_k_heads_uniformly():
    masks = random_head_masks(np.random.default_rng(0), 20000, 8, 3).numpy()
    assert (masks.sum(1) == 3).all()
    rate = masks.mean(0)
    assert np.abs(rate - 3 / 8).max() < 3 * math.sqrt(3 / 8 * 5 / 8 / 20000) * 1.5
    with pytest.raises(ValueError, match="k"):
        random_head_masks(np.random.default_rng(0), 2, 8, 9)


# -- the saturation effects -----------------------------------------------------------------------

def test_saturation_effects_vanish_for_the_literal_shift_in_fp32(llava, scenes):
    """The authors' literal line is a no-op in fp32, so every saturation drop is ~0 while ablations are not;
    with the fp16 saturation the effects are not all zero, and the probe's selection rates sum to k."""
    drawn, images = scenes
    common = dict(fox_layers=(1,), rho=0.35, n_image_tokens=16, device="cpu", min_p_yes=0.0)
    lit = saturation_effects(llava, ShapeVocab(), drawn, images, rng=np.random.default_rng(0), saturation="literal",
                             **common)
    assert np.abs(lit.head_saturation).max() < 1e-4 and abs(lit.fox_drop) < 1e-4 and abs(lit.random_drop) < 1e-4
    assert max(abs(v) for v in lit.layer_sets.values()) < 1e-4
    assert np.abs(lit.head_ablation).max() > 1e-3
    fp16 = saturation_effects(llava, ShapeVocab(), drawn, images, rng=np.random.default_rng(0), **common)
    assert np.abs(fp16.head_saturation).max() > 1e-4
    assert np.allclose(fp16.probe_selected.sum(1), 3)  # k = 3 of 8 heads per image and layer
    assert fp16.head_saturation.shape == (4, 8) and fp16.n_samples == len(drawn)
    assert set(fp16.layer_sets) == {"layer 0", "layer 1", "layer 2", "layer 3", "Fox's layers", "all layers"}
    assert fp16.layer_sets["Fox's layers"] == pytest.approx(fp16.layer_sets["layer 1"])
    assert fp16.probe_gain == pytest.approx(fp16.fox_drop - fp16.random_drop)


# -- the streams along vanilla's captions ---------------------------------------------------------

def test_object_steps_by_hand():
    words = ["a", "red", "circle", "and", "a", "blue", "cross", "."]
    assert object_steps(words, {"circle"}, {"circle", "cross", "ring"}) == [(2, False), (6, True)]
    assert object_steps([], {"circle"}, {"circle"}) == []
    with pytest.raises(TypeError):
        object_steps("a circle", {"circle"}, {"circle"})


def test_a_token_both_streams_rank_first_survives_the_fusion():
    """Why the disagreement bar: with w > 0 the fused argmax keeps a token both streams rank first."""
    g = torch.Generator().manual_seed(0)
    l_o = torch.randn(2000, 20, generator=g) * 3
    l_i = torch.randn(2000, 20, generator=g) * 3
    top = l_o.argmax(-1)
    l_i[torch.arange(2000), top] = l_i.max(-1).values + torch.rand(2000, generator=g)  # same argmax
    assert torch.equal(conflict_gated_fusion(l_o, l_i).argmax(-1), top)


def test_teacher_forced_stream_equals_the_cached_second_stream(llava, scenes):
    """Fox's stream over a forced caption in one forward equals its cached decoding, step by step."""
    drawn, images = scenes
    vocab = ShapeVocab()
    captions = [["a", "red", "circle", "and", "a", "blue", "cross"]] * 3
    config = FoxConfig(layers=(1, 2))
    l_o, l_i = teacher_forced_streams(llava, vocab, captions, images[:3], config, n_image_tokens=16, device="cpu")
    inputs = scene_inputs([caption_prompt()] * 3, images[:3], vocab)
    processor = fox_logits_processor(llava, inputs, config)
    forced = torch.tensor([vocab.encode(c) for c in captions])
    length = inputs["input_ids"].shape[1]
    with use_fox_attention(llava):
        for t in range(forced.shape[1]):
            step = processor.stream_logits(forced[:, :t]).float()
            assert torch.allclose(step, l_i[:, length - 1 + t], atol=1e-4), t
            vanilla = llava(input_ids=torch.cat([inputs["input_ids"], forced[:, :t]], 1),
                            pixel_values=inputs["pixel_values"]).logits[:, -1].float()
            assert torch.allclose(vanilla, l_o[:, length - 1 + t], atol=1e-4), t
    assert float((l_o - l_i).abs().max()) > 1e-3


def test_stream_disagreement_counts_mentions_and_is_zero_for_the_null_intervention(llava, scenes):
    drawn, images = scenes
    vocab = ShapeVocab()
    captions = [["a", "red", "circle", "and", "a", "blue", "cross"], ["a", "green", "ring"], []]
    truths = [("circle",), ("square",), ("bar",)]
    null = stream_disagreement(llava, vocab, captions, truths, images[:3], FoxConfig(layers=()), n_image_tokens=16,
                               device="cpu", batch=2)
    assert (null.n_hallucinated, null.n_correct) == (2, 1)
    assert null.disagree_hallucinated == 0.0 and null.disagree_correct == 0.0 and null.js_hallucinated < 1e-6
    fox = stream_disagreement(llava, vocab, captions, truths, images[:3], FoxConfig(layers=(0, 1, 2, 3)),
                              n_image_tokens=16, device="cpu")
    l_o, l_i = teacher_forced_streams(llava, vocab, captions[:2], images[:2], FoxConfig(layers=(0, 1, 2, 3)),
                                      n_image_tokens=16, device="cpu")
    length = len(caption_prompt())
    rows = [(0, length - 1 + 6), (1, length - 1 + 2)]  # the rows predicting the hallucinated "cross" and "ring"
    want = np.mean([float(l_o[b, r].argmax() != l_i[b, r].argmax()) for b, r in rows])
    assert fox.disagree_hallucinated == pytest.approx(want)
    with pytest.raises(ValueError, match="captions"):
        stream_disagreement(llava, vocab, captions, truths[:2], images[:3], FoxConfig(), n_image_tokens=16,
                            device="cpu")


# -- training until POPE is answered --------------------------------------------------------------

def test_cache_key_of_the_default_training_is_unchanged():
    """Models cached before the POPE stop existed keep their key; a POPE target changes it."""
    added = ("stop_pope_accuracy", "check_every", "check_on", "check_scenes")
    old = {k: v for k, v in dataclasses.asdict(TrainConfig()).items() if k not in added}
    assert _train_key(TrainConfig()) == old
    assert _train_key(TrainConfig(stop_pope_accuracy=0.8)) == {**old, "stop_pope_accuracy": 0.8}
    assert _train_key(TrainConfig(stop_pope_accuracy=0.8, check_every=100))["check_every"] == 100
    # the check's set and size enter the key only when they differ from what the committed runs used
    assert _train_key(TrainConfig(stop_pope_accuracy=0.8, check_on="evaluation", check_scenes=1000)) == \
        {**old, "stop_pope_accuracy": 0.8, "check_on": "evaluation", "check_scenes": 1000}
    with pytest.raises(ValueError, match="check_on"):
        TrainConfig(check_on="dev")


class _Answers(torch.nn.Module):
    """A stand-in model: answers ``token`` to every question, or, with ``scenes``, the truth (row ``r`` asks
    about scene ``r // 2``; the shape asked is the token before "?")."""

    def __init__(self, token: int, vocab: ShapeVocab, scenes=None):
        super().__init__()
        self.token, self.vocab, self.scenes = token, vocab, scenes
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask=None, pixel_values=None):
        logits = torch.zeros(*input_ids.shape, len(self.vocab))
        for r in range(input_ids.shape[0]):
            token = self.token
            if self.scenes is not None:
                asked = self.vocab.decode([int(input_ids[r, -2])])[0]
                token = self.vocab["yes" if asked in self.scenes[r // 2].shapes else "no"]
            logits[r, -1, token] = 1.0
        return type("Out", (), {"logits": logits})()


def test_pope_random_accuracy_pairs_one_yes_and_one_no_per_scene():
    from icml26.papers.fox.training import pope_random_accuracy

    vocab = ShapeVocab()
    drawn = sample_adversarial_scenes(7, np.random.default_rng(1), SceneConfig())
    images = render_scenes(drawn, SceneConfig(), size=32)
    for model, want in ((_Answers(vocab["yes"], vocab), 0.5), (_Answers(vocab["circle"], vocab), 0.5),
                        (_Answers(0, vocab, scenes=drawn), 1.0)):
        model.train()
        got = pope_random_accuracy(model, vocab, drawn, images, np.random.default_rng(0), n_image_tokens=16)
        assert got == want and model.training


def test_pope_random_accuracy_can_ask_as_the_run_scores_pope():
    """protocol='pope': every present shape and as many random absent ones (pope_questions 'random'), so an
    always-yes model scores the share of present-shape questions."""
    from icml26.papers.fox.scenes import pope_questions
    from icml26.papers.fox.training import pope_random_accuracy

    vocab = ShapeVocab()
    drawn = sample_adversarial_scenes(9, np.random.default_rng(2), SceneConfig())
    images = render_scenes(drawn, SceneConfig(), size=32)
    questions = pope_questions(drawn, "random", np.random.default_rng(0))
    assert len(questions) > 2 * len(drawn)  # scenes with 2-3 objects ask more than one yes
    yes_share = sum(a for _, _, a in questions) / len(questions)
    assert pope_random_accuracy(_Answers(vocab["yes"], vocab), vocab, drawn, images, np.random.default_rng(0),
                                n_image_tokens=16, protocol="pope") == pytest.approx(yes_share)
    truth = _Scripted([answer for _, _, answer in questions], vocab)
    assert pope_random_accuracy(truth, vocab, drawn, images, np.random.default_rng(0), n_image_tokens=16,
                                protocol="pope") == 1.0
    with pytest.raises(ValueError, match="protocol"):
        pope_random_accuracy(truth, vocab, drawn, images, np.random.default_rng(0), n_image_tokens=16, protocol="x")


class _Scripted(torch.nn.Module):
    """A stand-in model that answers row ``r`` with ``answers[r]`` (yes for True)."""

    def __init__(self, answers, vocab: ShapeVocab):
        super().__init__()
        self.answers, self.vocab = answers, vocab
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask=None, pixel_values=None):
        logits = torch.zeros(*input_ids.shape, len(self.vocab))
        for r, answer in enumerate(self.answers):
            logits[r, -1, self.vocab["yes" if answer else "no"]] = 1.0
        return type("Out", (), {"logits": logits})()


def test_training_stops_at_the_first_check_that_reaches_the_pope_target():
    from icml26.papers.fox.model import TinyVLMConfig

    small = TinyVLMConfig(hidden=32, layers=1, intermediate=64, vision_hidden=16, vision_layers=1)
    base = dict(steps=12, batch_size=4, n_scenes=32, vision_pretrain_steps=0, warmup=2, check_every=5)
    _, logs = train_tiny_llava(small, SceneConfig(), TrainConfig(stop_pope_accuracy=1e-9, **base), seed=0)
    assert logs["steps_trained"] == [5.0] and len(logs["pope_dev_accuracy"]) == 1
    assert 0.0 < logs["pope_dev_accuracy"][0] <= 1.0
    _, logs = train_tiny_llava(small, SceneConfig(), TrainConfig(**base), seed=0)
    assert logs["steps_trained"] == [12.0] and "pope_dev_accuracy" not in logs
    _, logs = train_tiny_llava(small, SceneConfig(), TrainConfig(stop_pope_accuracy=1.0, check_on="evaluation",
                                                                 check_scenes=20, **base), seed=0)
    assert len(logs["pope_dev_accuracy"]) == 2 and logs["steps_trained"] == [12.0]  # checks at 5, 10; never 1.0


# -- the pathology testbed ------------------------------------------------------------------------

def test_the_committed_config_records_no_pathology_fields_and_the_further_run_has_the_recipe():
    from icml26.common.config import config_to_dict
    from icml26.papers.fox.config import Config
    from icml26.papers.fox.pathology_run import OVERRIDES, pathology_config

    fields = ("testbed", "pope_target_accuracy", "pope_check_every", "pope_check_on", "pope_check_scenes",
              "text_layers")
    assert not set(fields) & set(config_to_dict(Config.quick()))  # neutral at their defaults: not recorded
    assert Config.quick().testbed == "default" and Config.quick().pope_target_accuracy == 0.0
    config = pathology_config("quick")
    assert {"testbed", "pope_target_accuracy"} <= set(config_to_dict(config))
    assert (config.testbed, config.decoder_layers, config.pope_target_accuracy, config.train_steps) == \
        ("pathology", 8, 0.8, 8000)
    assert {k: str(getattr(config, k)) for k in OVERRIDES} == OVERRIDES
    with pytest.raises(ValueError, match="mechanism"):
        pathology_config("quick", {"mechanism": "false"})
    with pytest.raises(ValueError, match="testbed"):
        pathology_config("quick", {"testbed": "other"})


def test_pathology_run_scores_the_gated_checks(tmp_path, monkeypatch):
    """The tiny pathology run through the further-run driver: the default testbed's ungated checks are left
    out, the preconditions are measured and the gated checks name them."""
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    from icml26.papers.fox.pathology_run import main

    path = main(["--out", str(tmp_path / "out"), "--seeds", "0", "--setting", "tiny", "mechanism=true",
                 "decoder_layers=2", "train_steps=40", "pope_target_accuracy=0"])
    data = json.loads(path.read_text())
    ids = [c["id"] for c in data["claim"]["checks"]]
    assert {"pathology_chair_i_ratio", "pathology_pope_f1_gain", "streams_disagree_hallucinated",
            "probe_saturation_over_random", "pope_random_accuracy", "recall_drop"} <= set(ids)
    assert not {"fox_chair_i_ratio", "pope_f1_gain", "probe_precision_over_chance"} & set(ids)
    gated = {c["id"]: c.get("requires", []) for c in data["claim"]["checks"]}
    assert gated["pathology_chair_i_ratio"] == ["streams_disagree_hallucinated", "probe_saturation_over_random"]
    verdict = {c["id"]: c["verdict"] for c in data["claim"]["checks"]}
    for c in data["claim"]["checks"]:
        failed = [r for r in c.get("requires", []) if verdict[r] != "held"]
        assert c.get("gated_by", []) == failed, c["id"]
    fox = data["metrics"]["Fox"]
    assert {"sat_fox_drop", "sat_probe_gain", "disagree_hallucinated"} <= set(fox)
