"""Tests of HiCI's zero-gated prefix (a closed gate is chunked attention, bit for bit; the gate opens
under training; a brute-force loop agrees with the fast path) and of the module-sizing helper (closed
form against the patched modules' ``numel``; the issue's SmolLM2 figures by hand)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers import hici  # noqa: E402
from icml26.papers.hici import HiCIConfig  # noqa: E402
from icml26.papers.hici.attention import repeat_kv  # noqa: E402

SMALL = dict(bottleneck=16, stat_dim=8, num_heads=4, num_slots=3, num_global=2)
CHUNKED = dict(num_slots=0, num_global=0)


def llama(kv_heads: int = 2, layers: int = 2, seed: int = 0):
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


def ids(n: int = 48, batch: int = 2, seed: int = 0):
    return torch.randint(0, 40, (batch, n), generator=torch.Generator().manual_seed(seed))


def logits(model, x):
    with torch.no_grad():
        return model(input_ids=x, use_cache=False).logits


def open_gates(model, value: float = 0.7) -> None:
    with torch.no_grad():
        for attn in hici.attention_layers(model):
            attn.prefix_gate.alpha.copy_(torch.linspace(-value, value, attn.prefix_gate.alpha.numel()))


@pytest.mark.parametrize("mode", ["causal_shift", "causal_shift_g", "none", "causal_gi"])
@pytest.mark.parametrize("build", [llama, qwen3], ids=["llama-gqa", "qwen3-gqa"])
def test_closed_gate_equals_the_chunked_model_exactly(mode, build, one_thread):
    """At initialisation (alpha = 0) the gated HiCI model *is* chunked attention: identical logits,
    while the authors' ungated prefix already moves them."""
    base, x = build(), ids()
    chunked = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=16, **CHUNKED))
    gated = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=16, causal_mode=mode, gated_prefix=True,
                                                       **SMALL), seed=0)
    ungated = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=16, causal_mode=mode, **SMALL), seed=0)
    assert torch.equal(logits(gated, x), logits(chunked, x))
    assert (logits(ungated, x) - logits(chunked, x)).abs().max() > 1e-3


def brute_gated(q, k, v, pk, pv, valid, gate, g):
    """Per query: softmax over tokens <= itself in its segment, plus gate_h * softmax over the valid slots."""
    b, h, n, hd = q.shape
    k, v, pk, pv = (repeat_kv(t, h // t.shape[1]) for t in (k, v, pk, pv))
    out = torch.zeros_like(q)
    for bi in range(b):
        for hi in range(h):
            for t in range(n):
                s, i = divmod(t, g)
                keys, vals = k[bi, hi, s * g:t + 1], v[bi, hi, s * g:t + 1]
                out[bi, hi, t] = torch.softmax(keys @ q[bi, hi, t] / math.sqrt(hd), 0) @ vals
                slots = [j for j in range(pk.shape[3]) if valid[s, j]]
                if slots:
                    w = torch.softmax(pk[bi, hi, s, slots] @ q[bi, hi, t] / math.sqrt(hd), 0)
                    out[bi, hi, t] += gate[hi] * (w @ pv[bi, hi, s, slots])
    return out


def test_gated_prefix_attention_equals_brute_force_loop():
    gen = torch.Generator().manual_seed(3)
    b, h, h_kv, n, hd, g, p = 2, 4, 2, 12, 4, 4, 3
    q, k, v = (torch.randn(b, hh, n, hd, generator=gen, dtype=torch.float64) for hh in (h, h_kv, h_kv))
    pk, pv = (torch.randn(b, h_kv, n // g, p, hd, generator=gen, dtype=torch.float64) for _ in range(2))
    valid = torch.ones(n // g, p, dtype=torch.bool)
    valid[0] = False  # segment 0 of the shift modes: no slot, adds nothing
    valid[2, 1] = False
    gate = torch.tensor([0.5, -0.3, 0.0, 0.9], dtype=torch.float64)
    fast = hici.gated_prefix_attention(q, k, v, segment_size=g, prefix_key=pk, prefix_value=pv, gate=gate,
                                       prefix_valid=valid)
    torch.testing.assert_close(fast, brute_gated(q, k, v, pk, pv, valid, gate, g), atol=1e-12, rtol=0)


def test_closed_gate_gets_a_gradient_and_opens(one_thread):
    """tanh'(0) = 1: the first step moves alpha; after it the model is no longer chunked attention."""
    base, x = llama(), ids()
    gated = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=16, gated_prefix=True, **SMALL), seed=0)
    gated.train()
    gated(input_ids=x, labels=x, use_cache=False).loss.backward()
    alphas = [a.prefix_gate.alpha for a in hici.attention_layers(gated)]
    assert all(bool((a.grad.abs() > 0).all()) for a in alphas)
    # with the gate closed the slots' modules get exactly no gradient (their output is multiplied by 0)
    slots = hici.attention_layers(gated)[0].local_constructor.q_proj.weight
    assert slots.grad is None or bool((slots.grad == 0).all())
    torch.optim.SGD(hici.hici_parameters(gated), lr=1.0).step()
    gated.eval()
    chunked = hici.patch(copy.deepcopy(base), HiCIConfig(segment_size=16, **CHUNKED))
    assert (logits(gated, x) - logits(chunked, x)).abs().max() > 1e-6


def test_open_gate_shift_mode_stays_strictly_causal(one_thread):
    model = hici.patch(llama(), HiCIConfig(segment_size=16, gated_prefix=True, **SMALL), seed=0)
    open_gates(model)
    x = ids()
    y = x.clone()
    y[:, 24:] = (y[:, 24:] + 1) % 40
    assert (logits(model, x)[:, :24] - logits(model, y)[:, :24]).abs().max() == 0


def test_gate_parameters_are_counted_trained_and_saved(tmp_path, one_thread):
    model = hici.patch(llama(), HiCIConfig(segment_size=16, gated_prefix=True, **SMALL), seed=0)
    open_gates(model)
    per_layer = hici.module_parameter_count(32, HiCIConfig(gated_prefix=True, **SMALL), attention_heads=4)
    assert sum(p.numel() for p in hici.hici_parameters(model)) == 2 * per_layer
    # the gate adds one parameter per head: H = 4 more than the ungated closed form
    assert per_layer == hici.hici_parameter_count(32, 3, 2, 16, 8) + 4
    hici.save_pretrained(model, tmp_path / "gated")
    again = hici.from_pretrained(tmp_path / "gated")
    assert torch.equal(logits(again, ids()), logits(model, ids()))


# ---------------------------------------------------------------------------------------------
# sizing
# ---------------------------------------------------------------------------------------------
def test_smollm2_figures_of_the_issue_by_hand():
    """d = 576, 30 layers, 134,515,008 base parameters (SmolLM2-135M, tied embeddings), authors' sizes:
    local 8*576 + 4*576*512 = 1,184,256; global 576*128 + 2*128 + 128*512 + 2*512 + 4*512 + 4*512^2
    + 512*576 + 1 = 1,486,081; x 30 layers = 80,110,110 (the issue's 80.1M, 37 % of base + HiCI)."""
    per_layer = hici.module_parameter_count(576, HiCIConfig())
    assert per_layer == 1_184_256 + 1_486_081
    assert 30 * per_layer == 80_110_110
    assert hici.parameter_overhead(30 * per_layer, 134_515_008) == pytest.approx(0.3733, abs=1e-4)


def test_size_modules_is_the_largest_bottleneck_within_the_budget():
    config = hici.size_modules(576, 30, 134_515_008, max_overhead=0.05)
    # B = 64: 30 * (8*576 + 4*576*64 + 576*16 + 32 + 16*64 + 128 + 4*64 + 4*64^2 + 64*576 + 1) = 6,479,070
    assert (config.bottleneck, config.stat_dim) == (64, 16)
    assert 30 * hici.module_parameter_count(576, config) == 6_479_070
    assert hici.parameter_overhead(6_479_070, 134_515_008) <= 0.05
    bigger = HiCIConfig(bottleneck=72, stat_dim=18)
    assert hici.parameter_overhead(30 * hici.module_parameter_count(576, bigger), 134_515_008) > 0.05
    # LLaMA-2-7B at the paper's 5.5 %: the authors' own sizes (the cap)
    seven_b = hici.size_modules(4096, 32, 6_738_415_616, max_overhead=0.055)
    assert (seven_b.bottleneck, seven_b.stat_dim) == (512, 128)


@pytest.mark.parametrize("gated", [False, True])
def test_sized_modules_have_the_counted_numel(gated, one_thread):
    base = llama(layers=3)
    base_params = sum(p.numel() for p in base.parameters())
    config = hici.size_modules_for(base, max_overhead=0.3, num_slots=2, num_global=2, num_heads=4,
                                   segment_size=16, gated_prefix=gated)
    patched = hici.patch(copy.deepcopy(base), config, seed=0)
    added = sum(p.numel() for p in hici.hici_parameters(patched))
    assert added == 3 * hici.module_parameter_count(32, config, attention_heads=4)
    assert added == sum(p.numel() for p in patched.parameters()) - base_params
    assert hici.parameter_overhead(added, base_params) <= 0.3
