"""Fox on tiny real LLaVA / Qwen2-VL models: the planted mediator heads are the ones the probe selects,
the baselines' pieces (VCD noise, SID, PAI) and the HF plumbing (null intervention = eager attention,
cached = recomputed streams, step-by-step fusion, reproducible sampling).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.fox import (
    DecodingConfig,
    FoxConfig,
    FoxIntervention,
    PAIConfig,
    PAIIntervention,
    SIDIntervention,
    VCDConfig,
    active_intervention,
    conflict_gated_fusion,
    default_fox_layers,
    diffusion_alphas_cumprod,
    diffusion_noise,
    fox_generate,
    fox_logits_processor,
    key_sets,
    pai_generate,
    precision_at_k,
    sid_generate,
    sid_keep_mask,
    text_only_inputs,
    use_fox_attention,
    vanilla_generate,
    vcd_generate,
)
from icml26.papers.fox.model import build_tiny_llava, build_tiny_qwen2vl
from tests.papers._fox_helpers import _scores_and_keys


pytestmark = pytest.mark.usefixtures("one_thread")


# -- fixtures: tiny real HF models --------------------------------------------------------------

def _sharpen(model, factor: float = 8.0) -> None:
    """Scale every decoder query so attention is peaked (a random model's is near uniform, where the
    intervention barely matters and an equality test could not fail)."""
    with torch.no_grad():
        for module in model.modules():
            if hasattr(module, "layer_idx") and hasattr(module, "q_proj"):
                module.q_proj.weight.mul_(factor)


@pytest.fixture(scope="module")
def llava():
    model = build_tiny_llava(seed=0)
    _sharpen(model)
    g = torch.Generator().manual_seed(1)
    ids = torch.tensor([[1, 4, 5, 6] + [3] * 16 + [7, 6]] * 2)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
              "pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
    return model, inputs


@pytest.fixture(scope="module")
def qwen():
    model = build_tiny_qwen2vl(seed=0)
    _sharpen(model)
    g = torch.Generator().manual_seed(1)
    ids = torch.tensor([[1, 7, 8, 5] + [3] * 16 + [6, 9, 10]] * 2)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
              "pixel_values": torch.randn(2 * 64, 3 * 2 * 8 * 8, generator=g),
              "image_grid_thw": torch.tensor([[1, 8, 8]] * 2), "mm_token_type_ids": (ids == 3).long()}
    return model, inputs


MODELS = ["llava", "qwen"]


class _PlantedPrior:
    """Forces heads 2, 5, 6 of layer 1 to carry the prior (a +6 bias on the prefix keys: the attention sink,
    with the visual attention left as it is) and every other head to look at one image token (+10), on the
    last query row, then hands the scores to Fox's probe."""

    planted = (2, 5, 6)

    def __init__(self, fox: FoxIntervention):
        self.fox = fox

    def edit_scores(self, layer, scores, mask):
        if layer == 1:
            batch, heads, _, n_keys = scores.shape
            visual, system = self.fox.keys.masks(n_keys, batch)
            target = torch.zeros(batch, heads, n_keys)
            looked_at = torch.randint(0, 16, (batch, heads), generator=torch.Generator().manual_seed(0))
            image_keys = visual[0].nonzero().flatten()
            target.scatter_(2, image_keys[looked_at].unsqueeze(-1), 10.0)
            target[:, list(self.planted)] = 6.0 * system[:, None, :].float()
            scores = scores.clone()
            scores[:, :, -1, :] += target
        return self.fox.edit_scores(layer, scores, mask)

    def edit_probs(self, layer, probs):
        return probs


def test_planted_mediator_heads_are_the_ones_selected(llava):
    """Inside the real model (layer index, head order, batch rows), the probe selects exactly the heads
    forced to carry the prior: precision@k = 1 (chance 3/8)."""
    model, inputs = llava
    keys = key_sets(inputs["input_ids"], 3)
    fox = FoxIntervention(keys, {1}, rho=0.35, record=True)
    with torch.no_grad(), use_fox_attention(model), active_intervention(_PlantedPrior(fox)):
        model(**inputs)
    selected = fox.records[0].selected[:, -1, :].numpy()
    reference = np.zeros_like(selected)
    reference[:, list(_PlantedPrior.planted)] = True
    assert precision_at_k(selected, reference) == 1.0
    # without the forcing, the probe's choice is something else
    plain = FoxIntervention(keys, {1}, rho=0.35, record=True)
    with torch.no_grad(), use_fox_attention(model), active_intervention(plain):
        model(**inputs)
    assert precision_at_k(plain.records[0].selected[:, -1, :].numpy(), reference) < 1.0


# -- baselines' pieces --------------------------------------------------------------------------

def test_vcd_noise_has_the_forward_diffusion_moments():
    # ᾱ_500 from an independent float64 product of (1 − β_t), β_t = sigmoid(linspace(−6, 6))·(5e-3 − 1e-5) + 1e-5
    betas = 1 / (1 + np.exp(-np.linspace(-6, 6, 1000))) * (5e-3 - 1e-5) + 1e-5
    a = float(np.prod(1 - betas[:501]))
    assert float(diffusion_alphas_cumprod()[500]) == pytest.approx(a, rel=1e-12)
    n, c = 100_000, 0.7
    x = diffusion_noise(torch.full((n,), c), 500, generator=torch.Generator().manual_seed(0)).double()
    sd = math.sqrt(1 - a)
    assert abs(float(x.mean()) - math.sqrt(a) * c) < 3 * sd / math.sqrt(n)
    assert abs(float(x.std()) - sd) < 3 * sd / math.sqrt(2 * n)


def test_sid_keeps_exactly_the_k_least_attended_image_tokens():
    g = torch.Generator().manual_seed(0)
    attn = torch.softmax(torch.randn(3, 30, generator=g), -1)
    visual = torch.zeros(3, 30, dtype=torch.bool)
    visual[:, 4:20] = True
    kept = sid_keep_mask(attn, visual, 5)
    for b in range(3):
        order = np.argsort(attn[b, 4:20].numpy(), kind="stable")[:5] + 4
        assert sorted(kept[b].nonzero().flatten().tolist()) == sorted(order.tolist())


def test_sid_stream_masks_the_dropped_tokens_in_the_model(llava):
    """In the model, the kept set is the k least-attended image tokens of layer 0's last row (head mean, read
    from eager attention weights), and from layer 1 on no query attends to the dropped ones."""
    model, inputs = llava
    keys = key_sets(inputs["input_ids"], 3)
    sid = SIDIntervention(keys, agg_layer=1, keep=3)
    with torch.no_grad(), use_fox_attention(model), active_intervention(sid):
        out = model(**inputs, output_attentions=True)
    eager = out.attentions[0][:, :, -1, :].mean(1)
    want = sid_keep_mask(eager, keys.visual, 3)
    assert torch.equal(sid.kept, want) and int(want.sum()) == 6
    dropped = keys.visual & ~want
    later = out.attentions[2]  # layer 2 >= agg_layer: zero attention to dropped image tokens
    assert float(later.permute(0, 2, 1, 3)[dropped[:, None, None, :].expand(-1, later.shape[2], 8, -1)].abs().max()) == 0.0


def test_pai_amplifies_image_logits_of_the_intervened_rows():
    scores, keys = _scores_and_keys()
    out = PAIIntervention(keys, {0}, alpha=0.2).edit_scores(0, scores, None)
    first = keys.prompt_length - 1 - (scores.shape[-1] - scores.shape[-2])
    vis = keys.masks(scores.shape[-1], 2)[0][:, None, None, :]
    rows = scores[:, :, first:]
    torch.testing.assert_close(out[:, :, first:], torch.where(vis, rows + 0.2 * rows.abs(), rows))
    assert torch.equal(out[:, :, :first], scores[:, :, :first])


def test_text_only_inputs_drop_the_image_and_left_pad(qwen):
    model, inputs = qwen
    ids = inputs["input_ids"].clone()
    ids[1, 21] = 0  # one row one token shorter after dropping (a pad inside the mask)
    mask = torch.ones_like(ids)
    mask[1, 21] = 0
    out = text_only_inputs(model, {"input_ids": ids, "attention_mask": mask})
    assert out["input_ids"][0].tolist() == [1, 7, 8, 9, 10]  # vision start/end and image tokens gone
    assert out["input_ids"][1].tolist() == [0, 1, 7, 8, 10] and out["attention_mask"][1].tolist() == [0, 1, 1, 1, 1]


# -- the HF plumbing ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_null_intervention_equals_eager_attention_in_prefill_and_cached_decode(name, request):
    model, inputs = request.getfixturevalue(name)
    keys = key_sets(inputs["input_ids"], 3)
    null = FoxIntervention(keys, set(), rho=0.35)  # an empty layer set: stream I = stream O
    step = torch.full((2, 1), 9)
    full = torch.cat([inputs["input_ids"], step], 1)
    mask = torch.ones_like(full)
    extras = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask", "pixel_values")}
    if "mm_token_type_ids" in extras:
        extras["mm_token_type_ids"] = torch.cat([extras["mm_token_type_ids"], torch.zeros(2, 1, dtype=torch.long)], 1)
    positions = model._prepare_position_ids_for_generation(full, {"input_ids": full, "attention_mask": mask, **extras})
    model.set_attn_implementation("eager")
    with torch.no_grad():
        ref = model(**inputs, use_cache=True)
        ref_next = model(input_ids=step, attention_mask=mask, cache=ref.cache, position_ids=positions[..., -1:]).logits
    with torch.no_grad(), use_fox_attention(model), active_intervention(null):
        got = model(**inputs, use_cache=True)
        got_next = model(input_ids=step, attention_mask=mask, cache=got.cache, position_ids=positions[..., -1:]).logits
    model.set_attn_implementation("sdpa")
    torch.testing.assert_close(got.logits, ref.logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(got_next, ref_next, atol=1e-6, rtol=0)
    assert model.model.language_model.config._attn_implementation == "sdpa"  # restored
    vanilla = vanilla_generate(model, inputs, DecodingConfig(max_new_tokens=6))
    fox = fox_generate(model, inputs, FoxConfig(max_new_tokens=6, layers=()))
    assert torch.equal(fox.sequences, vanilla.sequences)
    assert float(fox.js.max()) < 1e-6


def test_without_the_mask_registration_prefill_loses_its_causal_mask(llava):
    """Why register_fox_attention also registers eager_mask: the same attention function under a name
    without a mask function gets attention_mask=None in prefill and its logits are off."""
    from transformers import AttentionInterface

    from icml26.papers.fox import fox_attention_forward

    model, inputs = llava
    AttentionInterface.register("icml26_fox_test_nomask", fox_attention_forward)
    decoder = model.model.language_model
    with torch.no_grad():
        decoder.set_attn_implementation("eager")
        ref = model(**inputs).logits
        decoder.set_attn_implementation("icml26_fox_test_nomask")
        unmasked = model(**inputs).logits
        decoder.set_attn_implementation("sdpa")
        with use_fox_attention(model):
            ours = model(**inputs).logits
    assert float((unmasked - ref).abs().max()) > 0.05
    assert float((ours - ref).abs().max()) < 1e-5


@pytest.mark.parametrize("name", MODELS)
def test_cached_stream_equals_the_recomputed_stream(name, request):
    model, inputs = request.getfixturevalue(name)
    generated = vanilla_generate(model, inputs, DecodingConfig(max_new_tokens=5)).new_tokens
    logits = {}
    for mode in ("cached", "recompute", "last_row"):
        processor = fox_logits_processor(model, inputs, FoxConfig(layers=(1, 2), cache_mode=mode))
        with use_fox_attention(model):
            logits[mode] = torch.stack([processor.stream_logits(generated[:, :t]) for t in range(5)], 1)
    processor = fox_logits_processor(model, inputs, FoxConfig(layers=()))
    with use_fox_attention(model):
        null = torch.stack([processor.stream_logits(generated[:, :t]) for t in range(5)], 1)
    assert float((logits["cached"] - null).abs().max()) > 1e-2  # the intervention matters here
    torch.testing.assert_close(logits["cached"], logits["recompute"], atol=2e-5, rtol=0)
    # intervening on the last row only (the authors' no-cache path) agrees at the first step only
    torch.testing.assert_close(logits["last_row"][:, 0], logits["cached"][:, 0], atol=2e-5, rtol=0)
    assert float((logits["last_row"][:, 2:] - logits["cached"][:, 2:]).abs().max()) > 1e-4
    a = fox_generate(model, inputs, FoxConfig(layers=(1, 2), max_new_tokens=5))
    b = fox_generate(model, inputs, FoxConfig(layers=(1, 2), max_new_tokens=5, cache_mode="recompute"))
    assert torch.equal(a.sequences, b.sequences)


def test_fox_generate_fuses_the_streams_step_by_step(llava):
    """Two code paths: fox_generate's tokens equal a hand loop of argmax(conflict_gated_fusion(l_o, l_i))."""
    model, inputs = llava
    config = FoxConfig(layers=(1, 2), max_new_tokens=4)
    out = fox_generate(model, inputs, config)
    seq = inputs["input_ids"]
    processor = fox_logits_processor(model, inputs, config)
    with torch.no_grad(), use_fox_attention(model):
        for t in range(4):
            l_o = model(input_ids=seq, attention_mask=torch.ones_like(seq), pixel_values=inputs["pixel_values"]).logits[:, -1]
            l_i = processor.stream_logits(seq[:, inputs["input_ids"].shape[1]:])
            nxt = conflict_gated_fusion(l_o, l_i).argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], 1)
    assert torch.equal(out.sequences, seq)
    assert out.js.shape == (2, 4)
    # the authors' greedy path: argmax of the unmasked fusion
    raw = fox_generate(model, inputs, FoxConfig(layers=(1, 2), max_new_tokens=1, mask_before_argmax=False))
    with torch.no_grad(), use_fox_attention(model):
        l_o = model(**inputs).logits[:, -1]
        l_i = fox_logits_processor(model, inputs, config).stream_logits(seq[:, :0])
    assert torch.equal(raw.new_tokens[:, 0], conflict_gated_fusion(l_o, l_i, mask=False).argmax(-1))


def test_sampling_is_reproducible_and_leaves_the_global_rng_alone(llava):
    model, inputs = llava
    state = torch.random.get_rng_state()
    a = fox_generate(model, inputs, FoxConfig(layers=(1,), max_new_tokens=5, do_sample=True, seed=7))
    b = fox_generate(model, inputs, FoxConfig(layers=(1,), max_new_tokens=5, do_sample=True, seed=7))
    assert torch.equal(a.sequences, b.sequences)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_baselines_run_on_llava_and_qwen2vl(llava, qwen):
    for model, inputs in (llava, qwen):
        for generate, config in ((vcd_generate, VCDConfig(max_new_tokens=3)), (pai_generate, PAIConfig(max_new_tokens=3)),
                                 (sid_generate, None)):
            out = generate(model, inputs, config) if config else generate(model, inputs)
            assert out.new_tokens.shape[0] == 2 and out.js is not None and bool(torch.isfinite(out.js).all())


def test_default_layers_follow_the_authors_range():
    assert default_fox_layers(32) == tuple(range(2, 16))
    assert default_fox_layers(4) == (1,)
    assert default_fox_layers(8) == (1, 2, 3)
