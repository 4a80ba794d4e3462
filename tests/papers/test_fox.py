"""Fox: the probe, the saturation, the fusion, the HF plumbing on real LLaVA / Qwen2-VL classes, the baselines."""

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
    cfg_combine,
    chair,
    conflict_gated_fusion,
    default_fox_layers,
    diffusion_alphas_cumprod,
    diffusion_noise,
    fox_generate,
    fox_logits_processor,
    fusion_weight,
    js_divergence,
    key_sets,
    max_entropy,
    mentioned_objects,
    num_risky_heads,
    pai_generate,
    plausibility_mask,
    pope_scores,
    precision_at_k,
    saturate_logits,
    select_risky_heads,
    sid_generate,
    sid_keep_mask,
    text_only_inputs,
    top_k_mask,
    use_fox_attention,
    vanilla_generate,
    vcd_combine,
    vcd_generate,
    visual_entropy_probe,
)
from icml26.papers.fox.analysis import relative_reduction
from icml26.papers.fox.model import build_tiny_llava, build_tiny_qwen2vl
from icml26.papers.fox.scenes import (
    ANCHORS,
    PARTNER,
    SHAPES,
    caption_tokens,
    pope_questions,
    sample_adversarial_scenes,
    sample_scenes,
)

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


# -- the probe ----------------------------------------------------------------------------------

def test_probe_uniform_attention_over_the_image_has_entropy_ln_v():
    n_sys, n_vis, n_text = 3, 16, 5
    row = torch.zeros(n_sys + n_vis + n_text, dtype=torch.float64)
    row[n_sys: n_sys + n_vis] = 0.5 / n_vis
    row[:n_sys] = 0.3 / n_sys
    row[n_sys + n_vis:] = 0.2 / n_text
    vis = torch.zeros_like(row, dtype=torch.bool)
    vis[n_sys: n_sys + n_vis] = True
    sys_ = torch.zeros_like(vis)
    sys_[:n_sys] = True
    stats = visual_entropy_probe(row, vis, sys_)
    assert float(stats.h_vis) == pytest.approx(math.log(16), abs=1e-9)
    assert float(stats.h_vis) == pytest.approx(max_entropy(16), abs=1e-9)
    assert float(stats.m_vis) == pytest.approx(0.5, abs=1e-12)
    assert float(stats.m_sys) == pytest.approx(0.3, abs=1e-12)
    assert float(stats.score) == pytest.approx(0.3 * math.log(16), abs=1e-9)
    assert float(visual_entropy_probe(row, vis, sys_, score="entropy").score) == pytest.approx(math.log(16))


def test_probe_one_hot_visual_attention_has_zero_entropy_and_masses_sum_to_one():
    g = torch.Generator().manual_seed(0)
    attn = torch.softmax(torch.randn(3, 8, 30, generator=g), -1)  # (batch, heads, keys)
    vis = torch.zeros(30, dtype=torch.bool)
    vis[4:20] = True
    sys_ = torch.zeros(30, dtype=torch.bool)
    sys_[:4] = True
    stats = visual_entropy_probe(attn, vis, sys_)
    m_text = attn[..., 20:].sum(-1)
    torch.testing.assert_close(stats.m_sys + stats.m_vis + m_text, torch.ones(3, 8), atol=1e-6, rtol=0)
    assert bool((stats.h_vis <= math.log(16) + 1e-6).all())
    one_hot = torch.zeros(30)
    one_hot[0], one_hot[7] = 0.6, 0.4  # all visual mass on key 7
    assert float(visual_entropy_probe(one_hot, vis, sys_).h_vis) == pytest.approx(0.0, abs=1e-9)
    # index form of the key sets gives the same statistics
    again = visual_entropy_probe(attn, torch.arange(4, 20), torch.arange(4))
    torch.testing.assert_close(again.score, stats.score)


def test_probe_two_hand_built_heads_give_the_expected_top_k():
    # keys: [sys, v1, v2, text]; head 0 parks 0.6 on the sink and splits 0.4 evenly over the image
    # (m_sys·H = 0.6·ln 2 = 0.416); head 1 puts 0.1 on the sink, 0.8 on one image key (score 0.1·0 = 0)
    attn = torch.tensor([[0.6, 0.2, 0.2, 0.0], [0.1, 0.8, 0.0, 0.1]], dtype=torch.float64)
    vis = torch.tensor([False, True, True, False])
    sys_ = torch.tensor([True, False, False, False])
    stats = visual_entropy_probe(attn, vis, sys_)
    torch.testing.assert_close(stats.score, torch.tensor([0.6 * math.log(2), 0.0], dtype=torch.float64))
    assert select_risky_heads(stats.score, 0.35).tolist() == [True, False]
    # InstructBLIP's entropy-only score ranks the same way here
    assert select_risky_heads(visual_entropy_probe(attn, vis, sys_, score="entropy").score, 0.4).tolist() == [True, False]


@pytest.mark.parametrize("heads,rho,k", [(2, 0.35, 1), (4, 0.35, 1), (8, 0.35, 3), (32, 0.35, 11), (32, 0.4, 13),
                                         (1, 0.35, 1), (8, 1.0, 4)])
def test_number_of_risky_heads(heads, rho, k):
    assert num_risky_heads(heads, rho) == k
    scores = torch.randn(5, heads, generator=torch.Generator().manual_seed(heads))
    chosen = select_risky_heads(scores, rho)
    assert (chosen.sum(-1) == k).all()
    # the chosen heads are the k largest
    kth = scores.sort(-1, descending=True).values[:, k - 1: k]
    assert bool((scores[chosen].view(5, k) >= kth).all())


def test_select_risky_heads_breaks_ties_to_the_lower_index():
    assert select_risky_heads(torch.tensor([1.0, 2.0, 2.0, 2.0]), 0.5).tolist() == [False, True, True, False]


# -- the saturation -----------------------------------------------------------------------------

def test_fp16_saturation_is_the_cast_bit_for_bit_and_the_grid_quantiser():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 257, generator=g) * 12.0
    x[0, :5] = torch.tensor([4.0, 12.0, -4.0, 3.999, 20.0])  # round-half-even cases on the 8-grid
    out = saturate_logits(x)
    assert torch.equal(out, (x - 1e4).half().float() + 1e4)
    assert torch.equal(saturate_logits(x, mode="grid"), out)  # Δ = 2^(⌊log2 1e4⌋ − 10) = 8
    assert bool(((out / 8) == torch.round(out / 8)).all())  # multiples of 8 in raw-logit units
    assert out[0, :5].tolist() == [0.0, 16.0, 0.0, 0.0, 16.0]
    # invariant to adding 8n to a row
    n = torch.randint(-5, 6, (64, 1), generator=g).float()
    assert torch.equal(saturate_logits(x + 8 * n), out + 8 * n)


def test_saturation_makes_a_dominant_sink_uniform_over_its_bin():
    # a row whose keys all sit in the top 8-bin: the head attends to them uniformly
    # sink logit 3.88, six keys at -0.5: p(sink) = 0.93; all seven round to 0 on the 8-grid
    logits = torch.tensor([math.log(0.93 / 0.07 * 6) - 0.5] + [-0.5] * 6)
    assert float(torch.softmax(logits, -1)[0]) == pytest.approx(0.93, abs=1e-6)
    after = torch.softmax(saturate_logits(logits), -1)
    torch.testing.assert_close(after, torch.full((7,), 1 / 7))
    # the literal line is a no-op in float32 (the authors' code relies on float16)
    literal = torch.softmax(saturate_logits(logits, mode="literal"), -1)
    assert float((literal - torch.softmax(logits, -1)).abs().max()) < 1e-3
    assert torch.equal(torch.softmax(saturate_logits(logits.half(), mode="literal").float(), -1),
                       torch.softmax(saturate_logits(logits.half()).float(), -1))


def test_literal_saturation_changes_float32_attention_by_less_than_1e3():
    x = torch.randn(128, 64, generator=torch.Generator().manual_seed(3)) * 4
    diff = (torch.softmax(saturate_logits(x, mode="literal"), -1) - torch.softmax(x, -1)).abs().max()
    assert float(diff) < 1e-3


def _scores_and_keys(batch=2, heads=8, keys=24, q=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, q, keys, generator=g) * 3
    ids = torch.tensor([[1, 4, 5, 6] + [3] * 16 + [7, 6, 8, 9][: keys - 20 - (q - 1)]] * batch)
    return scores, key_sets(ids, 3)


def test_fox_intervention_leaves_unselected_heads_and_other_rows_bit_for_bit():
    scores, keys = _scores_and_keys()
    fox = FoxIntervention(keys, {1}, rho=0.35, record=True)
    out = fox.edit_scores(1, scores, None)
    rec = fox.records[0]
    first = keys.prompt_length - 1 - (scores.shape[-1] - scores.shape[-2])  # rows >= P - 1 are intervened
    assert rec.positions.tolist() == list(range(keys.prompt_length - 1, scores.shape[-1]))
    assert torch.equal(out[:, :, :first], scores[:, :, :first])
    chosen = rec.selected.transpose(1, 2)  # (B, H, R)
    assert (chosen.sum(1) == 3).all()
    rows_in, rows_out = scores[:, :, first:], out[:, :, first:]
    assert torch.equal(rows_out[~chosen], rows_in[~chosen])
    assert torch.equal(rows_out[chosen], saturate_logits(rows_in[chosen]))
    assert torch.equal(fox.edit_scores(0, scores, None), scores)  # a layer outside the set


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


# -- the fusion ---------------------------------------------------------------------------------

def test_js_divergence_against_scipy_and_its_bounds():
    from scipy.spatial.distance import jensenshannon

    g = torch.Generator().manual_seed(0)
    lp, lq = torch.randn(6, 10, generator=g, dtype=torch.float64), torch.randn(6, 10, generator=g, dtype=torch.float64)
    js = js_divergence(lp, lq)
    p, q = torch.softmax(lp, -1).numpy(), torch.softmax(lq, -1).numpy()
    want = np.array([jensenshannon(a, b) ** 2 for a, b in zip(p, q)])  # scipy: the distance, natural log
    np.testing.assert_allclose(js.numpy(), want, atol=1e-10)
    torch.testing.assert_close(js, js_divergence(lq, lp), atol=1e-12, rtol=0)  # symmetric
    assert float(js_divergence(lp, lp).abs().max()) < 1e-12  # zero when p = q
    assert bool((js > 1e-6).all())  # and only then
    disjoint = js_divergence(torch.tensor([[30.0, -30.0]]), torch.tensor([[-30.0, 30.0]]))
    assert float(disjoint) <= math.log(2) and float(disjoint) == pytest.approx(math.log(2), abs=1e-5)


def test_identical_streams_give_softmax_of_three_times_the_logits():
    l = torch.randn(4, 12, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    z = conflict_gated_fusion(l, l, beta=0.0)
    torch.testing.assert_close(torch.softmax(z, -1), torch.softmax(3 * l, -1))
    assert torch.equal(z.argmax(-1), l.argmax(-1))


def test_gate_switches_exactly_at_tau():
    lo = torch.tensor([[2.0, 0.0, -1.0]], dtype=torch.float64)
    li = torch.tensor([[0.0, 2.0, -1.0]], dtype=torch.float64)
    js = float(js_divergence(lo, li))
    z_at = conflict_gated_fusion(lo, li, tau=js, beta=0.0)  # JS = τ: conflict, w = JS
    z_above = conflict_gated_fusion(lo, li, tau=math.nextafter(js, 1.0), beta=0.0)  # JS < τ: w = α = 2
    torch.testing.assert_close(z_at, lo + js * li)
    torch.testing.assert_close(z_above, lo + 2.0 * li)
    assert fusion_weight(torch.tensor([0.1, 0.15, 0.2])).tolist() == pytest.approx([2.0, 0.15, 0.2])


def test_plausibility_mask_removes_exactly_the_implausible_tokens():
    p = torch.tensor([[0.5, 0.06, 0.05, 0.049, 0.341]], dtype=torch.float64)  # β·max p = 0.05
    logits = p.log() + 3.0
    assert plausibility_mask(logits, 0.1).tolist() == [[True, True, True, False, True]]
    z = conflict_gated_fusion(logits, logits)
    assert torch.isinf(z[0, 3]) and bool(torch.isfinite(z[0, [0, 1, 2, 4]]).all())


def test_vcd_sid_and_pai_combinations_match_their_closed_forms():
    g = torch.Generator().manual_seed(2)
    l, lcd = torch.randn(3, 7, generator=g, dtype=torch.float64), torch.randn(3, 7, generator=g, dtype=torch.float64)
    torch.testing.assert_close(vcd_combine(l, lcd, alpha=1.0, mask=False), 2 * l - lcd)  # SID: 2l − l_cd
    torch.testing.assert_close(vcd_combine(l, lcd, alpha=0.5, mask=False), 1.5 * l - 0.5 * lcd)
    keep = plausibility_mask(l, 0.1)
    torch.testing.assert_close(vcd_combine(l, lcd)[keep], (2 * l - lcd)[keep])
    assert bool(torch.isinf(vcd_combine(l, lcd)[~keep]).all())
    # PAI: γ = 1 returns the log-softmax unchanged; γ = 1.1 is γ(log p − log p_u) + log p_u
    torch.testing.assert_close(cfg_combine(l, lcd, gamma=1.0, mask=False), torch.log_softmax(l, -1))
    lp, lu = torch.log_softmax(l, -1), torch.log_softmax(lcd, -1)
    torch.testing.assert_close(cfg_combine(l, lcd, mask=False), 1.1 * (lp - lu) + lu)


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


# -- the data -----------------------------------------------------------------------------------

def test_scenes_plant_the_prior_and_the_adversarial_set_lacks_the_partner():
    rng = np.random.default_rng(0)
    scenes = sample_scenes(4000, rng)
    with_anchor = [s for s in scenes if any(a in s.shapes for a in ANCHORS)]
    rate = np.mean([PARTNER[next(a for a in s.shapes if a in ANCHORS)] in s.shapes for s in with_anchor])
    assert abs(rate - 0.85) < 3 * math.sqrt(0.85 * 0.15 / len(with_anchor))
    adversarial = sample_adversarial_scenes(500, rng)
    for s in adversarial:
        anchor = next(a for a in s.shapes if a in ANCHORS)
        assert PARTNER[anchor] not in s.shapes and 1 <= len(s.shapes) <= 3
    # captions name objects in shape order, so an anchor comes before any partner
    s = next(s for s in scenes if "circle" in s.shapes and "cross" in s.shapes)
    words = caption_tokens(s)
    assert words.index("circle") < words.index("cross") and words[-1] == "."


def test_pope_adversarial_negatives_are_the_co_occurring_partner():
    rng = np.random.default_rng(1)
    train = sample_scenes(3000, rng)
    freq = {x: float(sum(x in s.shapes for s in train)) for x in SHAPES}
    co = {}
    for s in train:
        for a in s.shapes:
            for b in s.shapes:
                if a != b:
                    co[(a, b)] = co.get((a, b), 0.0) + 1
    scenes = [sc for sc in sample_adversarial_scenes(50, rng) if len(sc.shapes) == 1]
    qs = pope_questions(scenes, "adversarial", rng, freq, co)
    for (i, shape, answer) in qs:
        assert answer == (shape in scenes[i].shapes)
        if not answer:
            assert shape == PARTNER[scenes[i].shapes[0]]
    assert sum(a for _, _, a in qs) * 2 == len(qs)


# -- analysis (hand computations) ---------------------------------------------------------------

def test_chair_by_hand():
    mentions = [mentioned_objects("a red circle and a blue cross".split(), SHAPES), ["square"], ["ring", "ring"]]
    truths = [{"circle"}, {"square", "bar"}, {"ring", "frame"}]
    s = chair(mentions, truths)
    # mentions: 2 + 1 + 2 = 5, hallucinated: cross = 1 -> CHAIR_I = 1/5; captions with one: 1/3
    # recall: circle, square, ring of 5 ground-truth objects = 3/5
    assert (s.chair_i, s.chair_s, s.recall) == pytest.approx((0.2, 1 / 3, 0.6))
    assert relative_reduction(0.71, 1.0) == pytest.approx(0.29)


def test_pope_scores_against_sklearn():
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    rng = np.random.default_rng(0)
    pred, true = rng.random(200) < 0.6, rng.random(200) < 0.5
    got = pope_scores(pred, true)
    assert got["f1"] == pytest.approx(f1_score(true, pred))
    assert got["precision"] == pytest.approx(precision_score(true, pred))
    assert got["recall"] == pytest.approx(recall_score(true, pred))
    assert got["accuracy"] == pytest.approx(accuracy_score(true, pred))
    assert got["yes_ratio"] == pytest.approx(pred.mean())


def test_precision_at_k_and_top_k_by_hand():
    assert top_k_mask(np.array([[0.1, 0.5, 0.3, 0.5]]), 2).tolist() == [[False, True, False, True]]
    sel = np.array([[True, True, False, False], [False, True, True, False]])
    ref = np.array([[True, False, True, False], [False, True, True, False]])
    assert precision_at_k(sel, ref) == pytest.approx((1 / 2 + 2 / 2) / 2)
