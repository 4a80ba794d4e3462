"""Fox: the probe (entropy and top-k on hand-built attention), the fp16 saturation and the intervention
(bit for bit), and the fusion (JS divergence against scipy, the gate, the plausibility mask).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.fox import (
    FoxIntervention,
    cfg_combine,
    conflict_gated_fusion,
    fusion_weight,
    js_divergence,
    max_entropy,
    num_risky_heads,
    plausibility_mask,
    saturate_logits,
    select_risky_heads,
    vcd_combine,
    visual_entropy_probe,
)
from tests.papers._fox_helpers import _scores_and_keys


pytestmark = pytest.mark.usefixtures("one_thread")


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
