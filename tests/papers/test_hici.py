"""Tests of icml26.papers.hici: reductions to the base model, brute-force references, strict
causality (and the authors' leaking modes detected), exact global statistics, the parameter
formula, S²-Attn, PEFT round trip, position interpolation, data and analysis by hand."""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers import hici  # noqa: E402
from icml26.papers.hici import (  # noqa: E402
    GlobalIntegrator,
    HiCIConfig,
    LocalConstructor,
    TopicRetrievalTask,
    cumulative_statistics,
    pooled_statistics,
    s2attn,
)
from icml26.papers.hici.attention import apply_rope, repeat_kv  # noqa: E402

SMALL = dict(bottleneck=16, stat_dim=8, num_heads=4, num_slots=3, num_global=2)


def llama(kv_heads: int = 4, layers: int = 2, seed: int = 0):
    config = transformers.LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                                      num_attention_heads=4, num_key_value_heads=kv_heads,
                                      max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(config).eval()


def qwen3(kv_heads: int = 2, seed: int = 0):
    config = transformers.Qwen3Config(vocab_size=40, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=kv_heads, head_dim=8,
                                      max_position_embeddings=256, use_sliding_window=False)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return transformers.Qwen3ForCausalLM(config).eval()


def ids(n: int = 32, batch: int = 2, seed: int = 0):
    return torch.randint(0, 40, (batch, n), generator=torch.Generator().manual_seed(seed))


def logits(model, x):
    with torch.no_grad():
        return model(input_ids=x, use_cache=False).logits


# ---------------------------------------------------------------------------------------------
# reductions to the base model and brute-force references
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [lambda: llama(4), lambda: llama(2), lambda: qwen3(4), lambda: qwen3(2)],
                         ids=["llama", "llama-gqa", "qwen3", "qwen3-gqa"])
def test_no_slots_one_segment_equals_base_model(build, one_thread):
    base = build()
    x = ids()
    patched = hici.patch(copy.deepcopy(base), HiCIConfig(num_slots=0, num_global=0, num_segments=1))
    torch.testing.assert_close(logits(patched, x), logits(base, x), atol=1e-5, rtol=0)


@pytest.mark.parametrize("mode", ["causal_shift", "causal_shift_g"])
def test_shift_modes_one_segment_equal_base_model(mode, one_thread):
    """With S = 1 the shift modes mask every slot: the model is the base model whatever the slots hold."""
    base = llama(2)
    patched = hici.patch(copy.deepcopy(base), HiCIConfig(num_segments=1, causal_mode=mode, **SMALL), seed=0)
    torch.testing.assert_close(logits(patched, ids()), logits(base, ids()), atol=1e-5, rtol=0)


@pytest.mark.parametrize("build", [lambda: llama(2), lambda: qwen3(2)], ids=["llama-gqa", "qwen3-gqa"])
def test_no_slots_many_segments_equals_segments_run_separately(build, one_thread):
    """Block-local attention == each segment through the unpatched model at its global positions."""
    base = build()
    x, g = ids(48), 16
    patched = hici.patch(copy.deepcopy(base), HiCIConfig(num_slots=0, num_global=0, segment_size=g))
    with torch.no_grad():
        pieces = [base(input_ids=x[:, i:i + g], position_ids=torch.arange(i, i + g)[None].expand(2, -1),
                       use_cache=False).logits for i in range(0, 48, g)]
    torch.testing.assert_close(logits(patched, x), torch.cat(pieces, dim=1), atol=1e-5, rtol=0)


def brute_segment_attention(q, k, v, pk, pv, valid, g):
    """Loop over batch, head, segment and query: softmax over [valid slots ; tokens <= query]."""
    b, h, n, hd = q.shape
    k, v = repeat_kv(k, h // k.shape[1]), repeat_kv(v, h // v.shape[1])
    pk, pv = repeat_kv(pk, h // pk.shape[1]), repeat_kv(pv, h // pv.shape[1])
    out = torch.zeros_like(q)
    for bi in range(b):
        for hi in range(h):
            for s in range(n // g):
                for i in range(g):
                    t = s * g + i
                    keys = [pk[bi, hi, s, j] for j in range(pk.shape[3]) if valid[s, j]]
                    vals = [pv[bi, hi, s, j] for j in range(pk.shape[3]) if valid[s, j]]
                    keys += [k[bi, hi, s * g + j] for j in range(i + 1)]
                    vals += [v[bi, hi, s * g + j] for j in range(i + 1)]
                    scores = torch.stack(keys) @ q[bi, hi, t] / math.sqrt(hd)
                    out[bi, hi, t] = torch.softmax(scores, 0) @ torch.stack(vals)
    return out


def test_segment_attention_equals_brute_force_loop():
    gen = torch.Generator().manual_seed(1)
    b, h, h_kv, n, g, p, hd = 2, 4, 2, 12, 4, 3, 5
    q, k, v = (torch.randn(b, hh, n, hd, generator=gen, dtype=torch.float64) for hh in (h, h_kv, h_kv))
    pk, pv = (torch.randn(b, h_kv, n // g, p, hd, generator=gen, dtype=torch.float64) for _ in range(2))
    valid = torch.tensor([[False] * p, [True, False, True], [True] * p])
    got = hici.segment_attention(q, k, v, segment_size=g, prefix_key=pk, prefix_value=pv, prefix_valid=valid)
    torch.testing.assert_close(got, brute_segment_attention(q, k, v, pk, pv, valid, g), atol=1e-12, rtol=0)


def test_first_token_of_every_segment_puts_mass_on_the_slots():
    """Values: 1 on the slots, 0 on the tokens, so the output is the attention mass on the slots.

    SDPA's is_causal=True with kv_len = P + G would align the triangle top-left and give the first
    query of a segment only the first slot; the explicit mask gives it every slot and itself."""
    b, h, n, g, p, hd = 1, 2, 8, 4, 3, 4
    q = torch.zeros(b, h, n, hd)  # equal scores: the mass on the slots is P / (P + i + 1) exactly
    k = torch.zeros(b, h, n, hd)
    v = torch.zeros(b, h, n, hd)
    pk = torch.zeros(b, h, n // g, p, hd)
    pv = torch.ones(b, h, n // g, p, hd)
    mass = hici.segment_attention(q, k, v, segment_size=g, prefix_key=pk, prefix_value=pv)[0, 0, :, 0]
    expected = torch.tensor([p / (p + i + 1) for i in range(g)] * (n // g))
    torch.testing.assert_close(mass, expected)
    assert (mass[::g] > 0).all()
    mask = hici.segment_mask(g, torch.ones(n // g, p, dtype=torch.bool))
    assert mask[:, 0, :p].all() and mask[:, 0, p].all() and not mask[:, 0, p + 1:].any()


def test_trained_layout_first_token_attends_to_slots_in_a_patched_model(one_thread):
    """In the patched model (mode none), zeroing the slot values changes every segment's first output."""
    model = hici.patch(llama(4, layers=1), HiCIConfig(num_segments=4, causal_mode="none", **SMALL), seed=0)
    x = ids(32)
    attn = model.model.layers[0].self_attn
    hidden = model.model.embed_tokens(x)
    cos_sin = model.model.rotary_emb(hidden, torch.arange(32)[None])
    with torch.no_grad():
        out, _ = attn(hidden, position_embeddings=cos_sin)
        attn.local_constructor.o_proj.weight.zero_()
        attn.global_integrator.expand.weight.zero_()
        zeroed, _ = attn(hidden, position_embeddings=cos_sin)
    assert (out - zeroed)[:, ::8].abs().amax(dim=-1).min() > 0


# ---------------------------------------------------------------------------------------------
# causality
# ---------------------------------------------------------------------------------------------
def _leak(mode: str, build=llama) -> float:
    torch.manual_seed(0)
    model = hici.patch(build(), HiCIConfig(num_segments=4, causal_mode=mode, **SMALL), seed=0)
    with torch.no_grad():  # a larger gate, so that any leak is far above rounding
        for attn in hici.attention_layers(model):
            attn.global_integrator.gate_param.fill_(2.0)
            attn.global_integrator.expand.weight.mul_(100)
    x = ids(32)
    y = x.clone()
    t = 13  # inside segment 1 (G = 8)
    y[:, t + 1:] = (y[:, t + 1:] + 7) % 40
    return float((logits(model, x)[:, :t + 1] - logits(model, y)[:, :t + 1]).abs().max())


@pytest.mark.parametrize("mode", ["causal_shift", "causal_shift_g"])
@pytest.mark.parametrize("build", [llama, qwen3], ids=["llama", "qwen3"])
def test_strictly_causal_modes(mode, build, one_thread):
    assert _leak(mode, build) < 1e-6


@pytest.mark.parametrize("mode", ["none", "causal_gi"])
def test_leaking_modes_are_detected(mode, one_thread):
    assert mode in hici.LEAKING_MODES and HiCIConfig(causal_mode=mode).leaks
    assert _leak(mode) > 1e-3


# ---------------------------------------------------------------------------------------------
# global integration
# ---------------------------------------------------------------------------------------------
def test_global_integration_is_permutation_invariant():
    torch.manual_seed(0)
    glob = GlobalIntegrator(12, num_global=3, bottleneck=16, stat_dim=8, num_heads=4).double()
    slots = torch.randn(2, 4, 5, 12, dtype=torch.float64)
    perm = torch.randperm(20)
    shuffled = slots.reshape(2, 20, 12)[:, perm].reshape(2, 4, 5, 12)
    torch.testing.assert_close(glob(shuffled), glob(slots), atol=1e-12, rtol=0)
    # and not invariant to changing one slot's value
    changed = slots.clone()
    changed[0, 1, 2] += 1.0
    assert (glob(changed)[0] - glob(slots)[0]).abs().max() > 1e-6


def test_cumulative_statistics_equal_batch_statistics():
    torch.manual_seed(0)
    slots = torch.randn(2, 5, 4, 16) * 3 + 10  # a large mean: the stable variance matters
    cumulative = cumulative_statistics(slots)
    for i in range(5):
        torch.testing.assert_close(cumulative[:, i], pooled_statistics(slots[:, :i + 1]), atol=1e-5, rtol=0)
    # the statistics themselves, by hand from numpy
    flat = slots.reshape(2, 20, 16).numpy().astype(np.float64)
    mean = flat.mean(1)
    want = np.stack([mean, flat.max(1), flat.min(1), flat.std(1), mean / np.linalg.norm(mean, axis=-1, keepdims=True)],
                    axis=1)
    np.testing.assert_allclose(pooled_statistics(slots).numpy(), want, atol=1e-4)


def test_forward_causal_equals_forward_on_prefixes():
    torch.manual_seed(0)
    glob = GlobalIntegrator(12, num_global=3, bottleneck=16, stat_dim=8, num_heads=4)
    slots = torch.randn(2, 4, 5, 12)
    causal = glob.forward_causal(slots)
    for i in range(4):
        torch.testing.assert_close(causal[:, i], glob(slots[:, :i + 1]), atol=1e-5, rtol=0)


def test_gate_starts_at_one_tenth_and_local_constructor_is_a_softmax_pool():
    glob = GlobalIntegrator(12, num_global=3, bottleneck=16, stat_dim=8, num_heads=4)
    assert float(glob.gate) == pytest.approx(0.1, abs=1e-6)
    local = LocalConstructor(6, num_slots=2, bottleneck=4, num_heads=2)
    with torch.no_grad():  # identity-like maps and zero queries: every slot is the segment mean
        local.q_proj.weight.zero_()
        local.k_proj.weight.copy_(torch.eye(4, 6))
        local.v_proj.weight.copy_(torch.eye(4, 6))
        local.o_proj.weight.copy_(torch.eye(6, 4))
    x = torch.randn(1, 3, 5, 6)
    out = local(x)
    want = torch.cat([x[..., :4].mean(2, keepdim=True).expand(1, 3, 2, 4), torch.zeros(1, 3, 2, 2)], dim=-1)
    torch.testing.assert_close(out, want, atol=1e-6, rtol=0)


# ---------------------------------------------------------------------------------------------
# parameter count
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d,m,k,b,s", [(32, 3, 2, 16, 8), (48, 8, 4, 64, 16), (64, 1, 1, 8, 8), (40, 5, 3, 20, 12)])
def test_parameter_count_formula(d, m, k, b, s):
    local = LocalConstructor(d, m, b, num_heads=4)
    glob = GlobalIntegrator(d, k, b, s, num_heads=4)
    counted = sum(p.numel() for p in [*local.parameters(), *glob.parameters()])
    # M d + 3 d B + B d + d s + 2 s + s c + 2 c + K c + 4 c^2 + c d + 1, written out (c = B)
    by_hand = m * d + 3 * d * b + b * d + d * s + 2 * s + s * b + 2 * b + k * b + 4 * b * b + b * d + 1
    assert counted == by_hand == hici.hici_parameter_count(d, m, k, b, s)


def test_parameter_count_llama2_7b_from_the_brief():
    """12,160,257 per layer at d = 4096 (M = 8, K = 4, B = c = 512, s = 128); 5.46 % of 6.74 B + HiCI."""
    per_layer = hici.hici_parameter_count(4096, 8, 4, 512, 128)
    assert per_layer == 12_160_257
    assert hici.parameter_overhead(32 * per_layer, 6_738_415_616) == pytest.approx(0.0546, abs=5e-4)


def test_patched_model_counts_and_hici_parameters(one_thread):
    model = hici.patch(llama(2), HiCIConfig(num_segments=2, **SMALL), seed=0)
    params = hici.hici_parameters(model)
    assert sum(p.numel() for p in params) == 2 * hici.hici_parameter_count(32, 3, 2, 16, 8)
    keys = [k for k in model.state_dict() if "local_constructor" in k or "global_integrator" in k]
    assert keys and all(k.startswith("model.layers.") and ".self_attn." in k for k in keys)


# ---------------------------------------------------------------------------------------------
# S²-Attn
# ---------------------------------------------------------------------------------------------
def test_s2attn_without_shift_and_one_group_equals_full_attention(one_thread):
    base = llama(2)
    x = ids(32)
    patched = s2attn.patch(copy.deepcopy(base), 32, shift=False)
    torch.testing.assert_close(logits(patched, x), logits(base, x), atol=1e-5, rtol=0)
    # and with the shift but full mode
    shifted = s2attn.set_inference_mode(s2attn.patch(copy.deepcopy(base), 8), "full")
    torch.testing.assert_close(logits(shifted, x), logits(base, x), atol=0, rtol=0)


def masked_attention(q, k, v, allowed):
    k, v = repeat_kv(k, q.shape[1] // k.shape[1]), repeat_kv(v, q.shape[1] // v.shape[1])
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1) @ v


@pytest.mark.parametrize("roll", [False, True])
def test_s2attn_shifted_heads_equal_full_attention_in_shifted_windows(roll):
    gen = torch.Generator().manual_seed(2)
    b, h, n, g, hd = 1, 4, 16, 8, 4
    q, k, v = (torch.randn(b, h, n, hd, generator=gen, dtype=torch.float64) for _ in range(3))
    out = hici.s2_attention(q, k, v, group_size=g, roll=roll)
    i = torch.arange(n)
    causal = i[None, :] <= i[:, None]
    plain = (i[:, None] // g == i[None, :] // g) & causal
    if roll:  # roll by -G/2: rolled position r = (i - G/2) mod N, grouped, causal in rolled order
        r = (i - g // 2) % n
        shifted = (r[:, None] // g == r[None, :] // g) & (r[None, :] <= r[:, None])
    else:
        shifted = ((i[:, None] + g // 2) // g == (i[None, :] + g // 2) // g) & causal
    torch.testing.assert_close(out[:, :2], masked_attention(q[:, :2], k[:, :2], v[:, :2], plain), atol=1e-12, rtol=0)
    torch.testing.assert_close(out[:, 2:], masked_attention(q[:, 2:], k[:, 2:], v[:, 2:], shifted), atol=1e-12,
                               rtol=0)
    # the roll makes the first G/2 tokens see the last ones (LongLoRA #15/#90); the partition does not
    assert bool((shifted & ~causal).any()) == roll


@pytest.mark.parametrize("h, h_kv", [(9, 3), (5, 5), (6, 3)])
def test_s2attn_with_odd_head_counts_shifts_the_last_ceil_half_of_the_query_heads(h, h_kv):
    """SmolLM2 has 9 query heads over 3 key/value heads: the halves cannot keep a query group together, so each
    query head gets its own copy of its key/value head, the first floor(H/2) stay plain, the rest shift."""
    gen = torch.Generator().manual_seed(3)
    n, g, hd = 16, 8, 4
    q = torch.randn(1, h, n, hd, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(1, h_kv, n, hd, generator=gen, dtype=torch.float64) for _ in range(2))
    out = hici.s2_attention(q, k, v, group_size=g)
    i = torch.arange(n)
    causal = i[None, :] <= i[:, None]
    plain = (i[:, None] // g == i[None, :] // g) & causal
    shifted = ((i[:, None] + g // 2) // g == (i[None, :] + g // 2) // g) & causal
    k_full, v_full = repeat_kv(k, h // h_kv), repeat_kv(v, h // h_kv)
    half = h // 2
    torch.testing.assert_close(out[:, :half], masked_attention(q[:, :half], k_full[:, :half], v_full[:, :half], plain),
                               atol=1e-12, rtol=0)
    torch.testing.assert_close(out[:, half:], masked_attention(q[:, half:], k_full[:, half:], v_full[:, half:],
                                                               shifted), atol=1e-12, rtol=0)
    if h % 2 == 0:  # even query heads over an odd key/value count: the same as the repeated heads given directly
        torch.testing.assert_close(out, hici.s2_attention(q, k_full, v_full, group_size=g), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        hici.s2_attention(q[:, :4], k[:, :3] if h_kv >= 3 else k, v[:, :3] if h_kv >= 3 else v, group_size=g)


def test_s2attn_partition_is_causal_and_roll_leaks(one_thread):
    for roll, leaks in ((False, False), (True, True)):
        model = s2attn.patch(llama(2), 8, roll=roll)
        x = ids(32)
        y = x.clone()
        y[:, 28:] = (y[:, 28:] + 3) % 40
        diff = float((logits(model, x)[:, :28] - logits(model, y)[:, :28]).abs().max())
        assert (diff > 1e-4) == leaks, (roll, diff)


def last_logits(model, x, start: int = 0):
    """Logits at the last token of ``x[:, start:]`` fed at its original positions."""
    extra = {"position_ids": torch.arange(start, x.shape[1]).unsqueeze(0)} if start else {}
    with torch.no_grad():
        return model(input_ids=x[:, start:], use_cache=False, logits_to_keep=1, **extra).logits[:, -1]


@pytest.mark.parametrize("layers", [1, 2, 3, 4])
@pytest.mark.parametrize("g", [8, 7])
def test_s2attn_receptive_field_is_exact_and_tight(layers, g, one_thread):
    """Cut to receptive_field(G, L) trailing tokens: the last logits are unchanged; one group less changes them."""
    model = s2attn.patch(llama(2, layers=layers, seed=layers), g)
    x = ids(8 * g, seed=layers)
    c = s2attn.receptive_field(g, layers)
    assert c % g == 0 and c == g * (layers // 2 + 1)
    whole = last_logits(model, x)
    torch.testing.assert_close(last_logits(model, x, 8 * g - c), whole, atol=1e-6, rtol=0)
    if c > g:  # one group less reaches back to tokens that changed
        assert float((last_logits(model, x, 8 * g - c + g) - whole).abs().max()) > 1e-4
    # block-local attention (no shift): one group
    assert s2attn.receptive_field(g, layers, shift=False) == g
    local = hici.patch(llama(2, layers=layers, seed=layers), HiCIConfig(num_slots=0, num_global=0, segment_size=g))
    torch.testing.assert_close(last_logits(local, x, 7 * g), last_logits(local, x), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="num_layers"):
        s2attn.receptive_field(g, 0)


def test_topic_accuracy_shortcuts_give_the_same_hits(one_thread):
    """topic_accuracy's receptive-field cut (S²-Attn, block-local), batch size and last-layer window: same hits."""
    from icml26.papers.hici.training import topic_accuracy

    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=8, topic_tokens_each=6)
    docs = task.sample(12, 6, np.random.default_rng(0))
    config = transformers.LlamaConfig(vocab_size=task.vocab_size, hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(config).eval()
    for model, c in ((s2attn.patch(copy.deepcopy(base), 8), s2attn.receptive_field(8, 3)),
                     (hici.patch(copy.deepcopy(base), HiCIConfig(num_slots=0, num_global=0, segment_size=8)), 8)):
        whole = last_logits(model, docs.input_ids)
        torch.testing.assert_close(last_logits(model, docs.input_ids, 48 - c), whole, atol=1e-6, rtol=0)
        np.testing.assert_array_equal(topic_accuracy(model, docs, task, batch_size=5, context=c),
                                      topic_accuracy(model, docs, task, batch_size=5))
    assert topic_accuracy(base, docs, task, context=1000).shape == (12,)  # longer than the documents: all of them
    with pytest.raises(ValueError, match="context"):
        topic_accuracy(base, docs, task, context=0)
    # the batch size changes only the speed (documents are independent), and so does the last-layer window
    patched = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=8, **SMALL), seed=0)
    for model in (base, patched):
        hits = topic_accuracy(model, docs, task, batch_size=1)
        for size in (5, 12, None):
            np.testing.assert_array_equal(topic_accuracy(model, docs, task, batch_size=size), hits)
        for window in (8, 16, 48):
            np.testing.assert_array_equal(topic_accuracy(model, docs, task, window=window), hits)
    with pytest.raises(ValueError, match="batch_size"):
        topic_accuracy(base, docs, task, batch_size=0)


@pytest.mark.parametrize("build", [lambda: llama(4), lambda: llama(2), lambda: qwen3(2)],
                         ids=["llama", "llama-gqa", "qwen3-gqa"])
def test_last_layer_window_gives_the_last_rows_of_the_whole_forward(build, one_thread):
    """The last layer on the last `window` positions: the same logits there, in every attention mode."""
    from icml26.papers.hici.readout import last_layer_window

    base = build()
    x = ids(32)
    hici_model = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=8, **SMALL), seed=0)
    models = {"full": base, "hici": hici_model, "s2": s2attn.patch(copy.deepcopy(base), 8),
              "hici-full": hici.set_inference_mode(copy.deepcopy(hici_model), "full")}
    for name, model in models.items():
        whole = logits(model, x)
        for window in (8, 16, 32, 40):
            with last_layer_window(model, window):
                part = logits(model, x)
            assert part.shape[1] == min(window, 32), name
            torch.testing.assert_close(part, whole[:, -part.shape[1]:], atol=1e-6, rtol=0, msg=name)
        torch.testing.assert_close(logits(model, x), whole, atol=0, rtol=0)  # the layer is restored
    with last_layer_window(hici_model, 12), pytest.raises(ValueError, match="multiple of the segment length"):
        logits(hici_model, x)
    with last_layer_window(base, 8), pytest.raises(ValueError, match="KV cache"):
        base(input_ids=x, use_cache=True)
    with pytest.raises(ValueError, match="window"):
        with last_layer_window(base, 0):
            pass


# ---------------------------------------------------------------------------------------------
# modes, PEFT, position interpolation, bad input
# ---------------------------------------------------------------------------------------------
def test_full_mode_equals_unpatched_model(one_thread):
    base = qwen3(2)
    patched = hici.patch(copy.deepcopy(base), HiCIConfig(num_segments=4, **SMALL), seed=0)
    x = ids(32)
    assert (logits(patched, x) - logits(base, x)).abs().max() > 1e-4  # hici mode differs
    hici.set_inference_mode(patched, "full")
    torch.testing.assert_close(logits(patched, x), logits(base, x), atol=0, rtol=0)
    with hici.inference_mode(patched, "hici"):
        assert (logits(patched, x) - logits(base, x)).abs().max() > 1e-4
    torch.testing.assert_close(logits(patched, x), logits(base, x), atol=0, rtol=0)


def test_qwen3_slot_keys_go_through_k_norm_when_asked(one_thread):
    x = ids(32)
    outs = []
    for flag in (True, False):
        model = hici.patch(qwen3(2), HiCIConfig(num_segments=4, slot_qk_norm=flag, causal_mode="none", **SMALL),
                           seed=0)
        with torch.no_grad():
            for attn in hici.attention_layers(model):
                attn.k_norm.weight.mul_(3.0)
        outs.append(logits(model, x))
    assert (outs[0] - outs[1]).abs().max() > 1e-5


def test_peft_lora_round_trip(tmp_path, one_thread):
    peft = pytest.importorskip("peft")
    config = HiCIConfig(num_segments=4, **SMALL)
    model = hici.patch(llama(2), config, seed=0)
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                           modules_to_save=["local_constructor", "global_integrator"], init_lora_weights=False)
    wrapped = peft.get_peft_model(model, lora)
    with torch.no_grad():  # move the HiCI copies away from their initialisation
        for name, p in wrapped.named_parameters():
            if "modules_to_save" in name:
                p.add_(0.01 * torch.randn_like(p))
    x = ids(32)
    before = wrapped(input_ids=x, use_cache=False).logits.detach()
    wrapped.save_pretrained(tmp_path)
    fresh = hici.patch(llama(2), config, seed=1)  # other HiCI init: the adapter must restore it
    reloaded = peft.PeftModel.from_pretrained(fresh, tmp_path).eval()
    torch.testing.assert_close(reloaded(input_ids=x, use_cache=False).logits, before, atol=0, rtol=0)


def test_position_interpolation_maps_position_m_times_factor_to_m(one_thread):
    base = llama(2)
    x = torch.zeros(1, 8, 32)
    cos0, _ = base.model.rotary_emb(x, torch.arange(8)[None])
    hici.position_interpolation(base, 4)
    cos4, sin4 = base.model.rotary_emb(x, (4 * torch.arange(8))[None])
    torch.testing.assert_close(cos4, cos0, atol=1e-5, rtol=0)
    assert base.config.rope_parameters["rope_type"] == "linear" and base.config.rope_parameters["factor"] == 4.0
    assert base.config.max_position_embeddings == 1024


def test_apply_rope_matches_transformers():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 6, 8, generator=gen), torch.randn(2, 2, 6, 8, generator=gen)
    cos, sin = torch.randn(2, 6, 8, generator=gen), torch.randn(2, 6, 8, generator=gen)
    for a, b in zip(apply_rope(q, k, cos, sin), apply_rotary_pos_emb(q, k, cos, sin)):
        torch.testing.assert_close(a, b)


def test_bad_input_raises_value_error(one_thread):
    model = hici.patch(llama(2), HiCIConfig(segment_size=8, **SMALL), seed=0)
    with pytest.raises(ValueError, match="not divisible by segment_size"):
        model(input_ids=ids(20), use_cache=False)
    with pytest.raises(ValueError, match="causal_mode"):
        HiCIConfig(causal_mode="future")
    with pytest.raises(ValueError, match="mode"):
        hici.set_inference_mode(model, "chunked")
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=10, bos_token_id=0, eos_token_id=0))
    with pytest.raises(ValueError, match="LlamaForCausalLM"):
        hici.patch(gpt2, HiCIConfig())
    with pytest.raises(ValueError, match="already patched"):
        hici.patch(model, HiCIConfig())
    with pytest.raises(ValueError, match="num_slots"):
        HiCIConfig(num_slots=0, num_global=2)
    with pytest.raises(ValueError, match="KV cache"):
        model.generate(ids(8), max_new_tokens=2, do_sample=False)


def test_generation_in_full_mode_works(one_thread):
    model = hici.set_inference_mode(hici.patch(llama(2), HiCIConfig(segment_size=8, **SMALL), seed=0), "full")
    out = model.generate(ids(8, batch=1), max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 11)


# ---------------------------------------------------------------------------------------------
# data and analysis
# ---------------------------------------------------------------------------------------------
def test_documents_layout():
    task = TopicRetrievalTask(segment_tokens=16)
    docs = task.sample(50, 4, np.random.default_rng(0))
    x = docs.input_ids.numpy()
    assert x.shape == (50, 64)
    assert (x[:, -1] == task.query).all()
    assert ((x == task.mark).sum(1) == 1).all()
    where = np.argwhere(x == task.mark)[:, 1]
    assert (where % 16 == 0).all() and (where // 16 == docs.marked.numpy()).all()
    assert (docs.answer.numpy() == task.topic_tokens[docs.topics.numpy()[np.arange(50), docs.marked.numpy()]]).all()
    assert set(docs.marked.numpy()) == {0, 1, 2, 3}  # the first segment too
    starts = x[:, ::16]
    assert ((starts == task.mark) | (starts == task.sep)).all() and ((starts == task.sep).sum(1) == 3).all()
    body = np.delete(x, list(range(0, 64, 16)) + [63], axis=1)
    assert body.max() < task.content_vocab
    # disjoint vocabularies: every content token of segment j lies in its topic's block of 12
    blocks = x.reshape(50, 4, 16)[:, :, 1:] // 12
    last = blocks[:, 3, :-1]
    assert (blocks[:, :3] == docs.topics.numpy()[:, :3, None]).all()
    assert (last == docs.topics.numpy()[:, 3, None]).all()
    np.testing.assert_array_equal(task.sample(5, 2, np.random.default_rng(3)).input_ids,
                                  task.sample(5, 2, np.random.default_rng(3)).input_ids)


def test_topic_chains_follow_their_transition_matrix():
    task = TopicRetrievalTask(num_topics=2, content_vocab=6, segment_tokens=2000, concentration=1.0,
                              topic_tokens_each=None)
    docs = task.sample(2, 1, np.random.default_rng(0))
    _, trans = task.chains()
    for row, topic in zip(docs.input_ids.numpy(), docs.topics.numpy()[:, 0]):
        seq = row[1:-1]
        counts = np.zeros((6, 6))
        np.add.at(counts, (seq[:-1], seq[1:]), 1)
        freq = counts / counts.sum(1, keepdims=True)
        assert np.abs(freq - trans[topic]).max() < 0.12


def test_attention_benchmark_keeps_the_fastest_interleaved_run(monkeypatch, one_thread):
    """One untimed warm-up per arm, then `repeats` rounds of the arms in turn; each arm keeps its minimum."""
    from icml26.papers.hici import benchmark

    calls: list[int] = []
    fake = iter([9.0, 9.0, 9.0,                  # warm-up, every arm at the smallest N (not kept)
                 0.5, 0.7, 0.9, 0.4, 0.8, 0.6,   # N = 64: two rounds of full, hici_fixed_g, hici_ratio
                 2.0, 3.0, 4.0, 1.0, 5.0, 3.5])  # N = 128

    def timed(model, x, device):
        calls.append(x.shape[1])
        return next(fake)

    monkeypatch.setattr(benchmark, "_forward_backward", timed)
    small = HiCIConfig(**SMALL)
    out = benchmark.time_attention_blocks((64, 128), hidden=32, heads=4, segment_size=16, hici=small, repeats=2)
    assert calls == [64] * 3 + [64] * 6 + [128] * 6
    assert out.sizes == [64, 128]
    assert out.seconds == {"full": [0.4, 1.0], "hici_fixed_g": [0.7, 3.0], "hici_ratio": [0.6, 3.5]}
    monkeypatch.undo()
    real = benchmark.time_attention_blocks((64, 128), hidden=32, heads=4, segment_size=16, hici=small, repeats=1)
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in real.seconds.values())
    with pytest.raises(ValueError, match="repeats"):
        benchmark.time_attention_blocks((64,), hidden=32, repeats=0)


def test_analysis_by_hand():
    assert hici.accuracy([1, 2, 3, 4], [1, 0, 3, 0]) == 0.5
    sizes = [1024, 2048, 4096, 8192]
    assert hici.loglog_slope(sizes, [3e-9 * n * n for n in sizes]) == pytest.approx(2.0)
    # t = 1, 2, 4, 4 at N = 1, 2, 4, 8: x = 0, 1, 2, 3 and y = 0, 1, 2, 2 (units of log 2);
    # sum (x - 1.5)(y - 1.25) = 1.875 + 0.125 + 0.375 + 1.125 = 3.5, sum (x - 1.5)^2 = 5  ->  b = 0.7
    assert hici.loglog_slope([1, 2, 4, 8], [1, 2, 4, 4]) == pytest.approx(0.7)
    assert hici.chunked_ceiling(4, 8) == pytest.approx(0.25 + 0.75 / 8)  # 0.34375
    assert hici.chunked_ceiling(8, 8) == pytest.approx(0.125 + 0.875 / 8)
    assert hici.parameter_overhead(5, 95) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        hici.loglog_slope([1, 1], [1, 2])


def test_config_validation_names_fields():
    for kwargs, field in [(dict(num_heads=0), "num_heads"), (dict(bottleneck=30, num_heads=8), "bottleneck"),
                          (dict(segment_size=0), "segment_size"), (dict(inference_mode="chunk"), "inference_mode")]:
        with pytest.raises(ValueError, match=field):
            HiCIConfig(**kwargs)
    assert HiCIConfig().num_prefix() == 12 and HiCIConfig(causal_mode="causal_shift_g").num_prefix() == 4
    assert dataclasses.replace(HiCIConfig(), segment_size=64).segment_length(256) == 64


@pytest.mark.parametrize("build", [llama, qwen3])
def test_save_and_reload_keeps_the_patch_the_weights_and_the_interpolation(build, tmp_path, one_thread):
    import dataclasses as dc

    model = build()
    hici.position_interpolation(model, 2.0)
    hici.patch(model, HiCIConfig(segment_size=8, **SMALL), seed=3)
    with torch.no_grad():  # move the HiCI weights off their initialisation, as training would
        for p in hici.hici_parameters(model):
            p.add_(0.01 * torch.randn_like(p))
    hici.set_inference_mode(model, "hici")
    ids = torch.randint(0, 40, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(input_ids=ids).logits
    hici.save_pretrained(model, tmp_path / "m")
    assert not hasattr(model.config, "hici")  # the live model's config is left as it was
    reloaded = hici.from_pretrained(tmp_path / "m").eval()
    assert hici.is_patched(reloaded) == "hici"
    assert hici.attention_layers(reloaded)[0].hici_config == hici.attention_layers(model)[0].hici_config
    with torch.no_grad():
        after = reloaded(input_ids=ids).logits
    assert float((after - before).abs().max()) == 0.0

    # a plain save of an unpatched model, or HiCI weights that do not match the stored configuration: refused
    plain = build()
    plain.save_pretrained(tmp_path / "plain")
    with pytest.raises(ValueError, match="no HiCI configuration"):
        hici.from_pretrained(tmp_path / "plain")
    with pytest.raises(ValueError, match="not patched with HiCI"):
        hici.save_pretrained(plain, tmp_path / "p2")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["hici"] = dc.asdict(dc.replace(HiCIConfig(**cfg["hici"]), num_global=0))
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="do not match"):
        hici.from_pretrained(tmp_path / "m")
