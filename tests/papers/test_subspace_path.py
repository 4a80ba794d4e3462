"""SubspacePath Pruner: head removal, importance algebra, breadth, compiler, probes, DBS, baselines.

Numbers from outside the code: closed forms (entropy of q, Bessel's inequality, per-layer
top-k), two code paths with one answer (pre-hook = zeroed weights = sliced model; the gated
gradient = a per-example loop; pooled head writes = the attention output; exact budget =
the union of top-k sets), scipy's Mann–Whitney U, hand-computed metrics.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers.subspace_path import (  # noqa: E402
    BASELINES,
    DomainOraclePruner,
    GlobalGradientPruner,
    RandomPruner,
    SubspacePathPruner,
    WandaSPPruner,
    as_batch,
    attention_layout,
    breadth,
    collect_activations,
    compile_mask,
    count_heads,
    domain_axes,
    fit_probes,
    gradient_head_importance,
    head_alignment,
    head_importance,
    head_writes,
    mask_heads,
    mask_output_blocks,
    prune_heads,
    reference_compile,
    scale_heads,
    select_heads,
    similarity,
    synthesize_basis,
    wanda_sp_scores,
    whitelist_heads,
)
from icml26.papers.subspace_path.analysis import (  # noqa: E402
    fraction_of_dense,
    gap_points,
    pruned_fraction,
    speedup,
    split_accuracy,
)
from icml26.papers.subspace_path.baselines import _per_example_loss  # noqa: E402
from icml26.papers.subspace_path.skills import (  # noqa: E402
    SEP,
    SKILLS,
    exact_match,
    make_skill_set,
    planted_pathways,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _llama(heads: int = 8, kv: int | None = None, layers: int = 2, seed: int = 0):
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=layers,
                                   num_attention_heads=heads, num_key_value_heads=kv or heads,
                                   max_position_embeddings=64)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval()


def _qwen(cls_name: str, seed: int = 0):
    cls = getattr(transformers, cls_name)
    cfg = cls(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=8,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=64)
    torch.manual_seed(seed)
    return getattr(transformers, cls_name.replace("Config", "ForCausalLM"))(cfg).eval()


def _ids(n=3, t=10, seed=0):
    return torch.randint(0, 64, (n, t), generator=torch.Generator().manual_seed(seed))


def _zeroed(model, keep):
    """Third code path: zero W_O[:, h-block] of the removed heads in a copy."""
    out = copy.deepcopy(model)
    for attn, row, lay in zip([b.self_attn for b in out.model.layers], keep, attention_layout(out)):
        with torch.no_grad():
            cols = (~row).repeat_interleave(lay.head_dim)
            attn.o_proj.weight[:, cols] = 0.0
    return out


# ---------------------------------------------------------------------------------------------
# 1. head removal: three implementations, one answer; the authors' masking is different
# ---------------------------------------------------------------------------------------------
MODELS = {
    "llama": lambda: _llama(),
    "qwen2_gqa": lambda: _qwen("Qwen2Config"),
    "qwen3_gqa": lambda: _qwen("Qwen3Config"),
}
MASKS = {
    "scattered": [[1, 0, 1, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1, 1, 0]],
    "whole_groups": [[1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]],  # GQA: groups of 4
    "uniform_partial": [[1, 1, 0, 0, 1, 1, 0, 0], [0, 1, 1, 1, 1, 1, 1, 0]],
}


@pytest.mark.parametrize("arch", list(MODELS))
@pytest.mark.parametrize("pattern", list(MASKS))
def test_masked_equals_zeroed_equals_sliced(arch, pattern):
    model = MODELS[arch]()
    keep = torch.tensor(MASKS[pattern], dtype=torch.bool)
    x = _ids()
    with torch.no_grad():
        with mask_heads(model, keep):
            masked = model(x).logits
        zeroed = _zeroed(model, keep)(x).logits
        sliced_model = prune_heads(copy.deepcopy(model), keep)
        sliced = sliced_model(x).logits
    assert torch.allclose(masked, zeroed, atol=1e-5)
    assert torch.allclose(masked, sliced, atol=1e-5)
    assert count_heads(sliced_model) == int(keep.sum())
    # the context manager leaves nothing behind
    with torch.no_grad():
        assert not torch.allclose(model(x).logits, masked, atol=1e-3)


def test_prune_heads_gqa_key_value_layout():
    model = _qwen("Qwen2Config")
    keep = torch.tensor(MASKS["whole_groups"], dtype=torch.bool)
    pruned = prune_heads(copy.deepcopy(model), keep)
    lay = attention_layout(pruned)
    assert [(x.n_heads, x.n_kv_heads) for x in lay] == [(4, 1), (4, 1)]  # whole groups: k/v rows of one group
    assert [b.self_attn.num_key_value_groups for b in pruned.model.layers] == [4, 4]
    keep = torch.tensor(MASKS["scattered"], dtype=torch.bool)
    pruned = prune_heads(copy.deepcopy(model), keep)
    # layer 0 keeps 3 heads of each group (k/v of both groups, 3 queries each); layer 1 keeps 1 and 3:
    # unequal, so one k/v copy per kept head and num_key_value_groups = 1
    assert [(x.n_heads, x.n_kv_heads) for x in attention_layout(pruned)] == [(6, 2), (4, 4)]
    assert [b.self_attn.num_key_value_groups for b in pruned.model.layers] == [3, 1]


def test_sliced_model_generates_like_the_masked_one():
    model = _qwen("Qwen2Config")
    keep = torch.tensor(MASKS["scattered"], dtype=torch.bool)
    x = _ids(1, 6)
    with torch.no_grad(), mask_heads(model, keep):
        a = model.generate(x, max_new_tokens=8, do_sample=False, pad_token_id=0)
    b = prune_heads(copy.deepcopy(model), keep).generate(x, max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert torch.equal(a, b)


def test_output_channel_masking_is_not_head_removal():
    model = _qwen("Qwen2Config")
    keep = torch.tensor(MASKS["scattered"], dtype=torch.bool)
    x = _ids()
    with torch.no_grad():
        with mask_heads(model, keep):
            removed = model(x).logits
        with mask_output_blocks(model, keep):
            authors = model(x).logits
    assert (removed - authors).abs().max() > 0.05


def test_scale_heads_with_ones_is_the_identity_and_zero_is_removal():
    model = _llama()
    x = _ids()
    keep = torch.tensor(MASKS["scattered"], dtype=torch.bool)
    with torch.no_grad():
        dense = model(x).logits
        with scale_heads(model, torch.ones(2, 8)):
            same = model(x).logits
        with scale_heads(model, keep.float().expand(3, -1, -1).contiguous()):
            gated = model(x).logits
        with mask_heads(model, keep):
            masked = model(x).logits
    assert torch.equal(dense, same)
    assert torch.allclose(gated, masked, atol=1e-6)


@pytest.mark.parametrize("bad,exc,match", [
    (torch.ones(2, 7, dtype=torch.bool), ValueError, "shape"),
    (torch.ones(3, 8, dtype=torch.bool), ValueError, "shape"),
    (torch.ones(2, 8), TypeError, "boolean"),
    (torch.tensor([[0] * 8, [1] * 8], dtype=torch.bool), ValueError, "layer"),
])
def test_bad_masks_are_refused(bad, exc, match):
    model = _llama()
    with pytest.raises(exc, match=match):
        prune_heads(model, bad)
    with pytest.raises(exc, match=match):
        with mask_heads(model, bad):
            pass


# ---------------------------------------------------------------------------------------------
# 2. capture and importance algebra
# ---------------------------------------------------------------------------------------------
def test_pooled_head_writes_sum_to_the_attention_output():
    model = _qwen("Qwen2Config")
    data = as_batch({"input_ids": _ids(4, 9), "attention_mask": torch.tensor([[1] * 9] * 3 + [[1] * 5 + [0] * 4])})
    acts = collect_activations(model, data, batch_size=3)
    writes = head_writes(model, acts.head_outputs)  # (N, L, H, d)
    captured = []
    hooks = [b.self_attn.register_forward_hook(lambda _m, _a, out: captured.append(out[0]))
             for b in model.model.layers]
    with torch.no_grad():
        model(input_ids=data.input_ids, attention_mask=data.attention_mask)
    for h in hooks:
        h.remove()
    m = data.attention_mask.unsqueeze(-1).float()
    for layer, out in enumerate(captured):
        pooled = (out * m).sum(1) / m.sum(1)  # the attention output, mean-pooled over real tokens
        assert torch.allclose(writes[:, layer].sum(dim=1), pooled, atol=1e-5)


def test_alignment_in_unit_interval_and_bessel_over_orthonormal_axes():
    g = torch.Generator().manual_seed(0)
    writes = torch.randn(20, 3, 4, 6, generator=g)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g))
    axes = q.T[:3]  # 3 orthonormal axes in R^6
    a = head_alignment(writes, axes)
    assert float(a.min()) >= 0 and float(a.max()) <= 1
    assert bool((a.sum(-1) <= 1 + 1e-6).all())  # Σ_k cos² ≤ 1 (Bessel)
    in_span = torch.einsum("nlhk,kd->nlhd", torch.randn(20, 3, 4, 3, generator=g), axes)
    assert torch.allclose(head_alignment(in_span, axes, eps=1e-12).sum(-1), torch.ones(20, 3, 4), atol=1e-5)
    # hand value: w = (3, 4, 0, …), u = e_1  ->  9 / 25
    w = torch.zeros(1, 1, 1, 6)
    w[..., 0], w[..., 1] = 3.0, 4.0
    assert head_alignment(w, torch.eye(6)[:1], eps=1e-12).item() == pytest.approx(9 / 25)


def test_importance_is_invariant_to_rescaling_w_o():
    model = _llama()
    data = as_batch(_ids(12, 8))
    labels = torch.arange(12) % 3
    axes = torch.nn.functional.normalize(torch.randn(3, 64, generator=torch.Generator().manual_seed(1)), dim=-1)
    before = head_importance(head_writes(model, collect_activations(model, data).head_outputs), axes, labels, eps=1e-14)

    def rescaled(layer, head, factor):
        scaled = copy.deepcopy(model)
        with torch.no_grad():
            scaled.model.layers[layer].self_attn.o_proj.weight[:, 8 * head:8 * head + 8] *= factor
        return head_importance(head_writes(scaled, collect_activations(scaled, data).head_outputs), axes, labels,
                               eps=1e-14)

    # the last layer's head: nothing upstream changes, so every I is unchanged
    assert torch.allclose(rescaled(1, 2, 7.5), before, atol=1e-5)
    # a layer-0 head: layer 0's I is unchanged (layer 1 sees a different residual stream)
    after = rescaled(0, 0, 0.01)
    assert torch.allclose(after[0], before[0], atol=1e-5)
    assert not torch.allclose(after[1], before[1], atol=1e-5)


def test_planted_heads_rank_first():
    g = torch.Generator().manual_seed(0)
    n, n_layers, n_heads, d, k = 60, 3, 5, 16, 3
    axes = torch.eye(d)[:k]
    labels = torch.arange(n) % k
    writes = torch.randn(n, n_layers, n_heads, d, generator=g)
    planted = {0: (1, 3), 1: (2, 0), 2: (0, 4)}  # domain -> (layer, head) that writes along u_k on P_k
    for dom, (layer, head) in planted.items():
        rows = labels == dom
        writes[rows, layer, head] = 2.0 * axes[dom] + 0.01 * torch.randn(int(rows.sum()), d, generator=g)
    imp = head_importance(writes, axes, labels)
    for dom, (layer, head) in planted.items():
        flat = int(imp[:, :, dom].argmax())
        assert divmod(flat, n_heads) == (layer, head)
        assert imp[layer, head, dom] > 0.99


def test_whitelist_finds_the_backbone_head_and_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(0)
    n, k, d = 90, 3, 8
    axes = torch.eye(d)[:k]
    labels = torch.arange(n) % k
    writes = torch.randn(n, 2, 3, d, generator=g)
    for dom in range(k):  # head (1, 1) aligns with the axis of every domain: a backbone head
        rows = labels == dom
        writes[rows, 1, 1] = axes[dom] + 0.05 * torch.randn(int(rows.sum()), d, generator=g)
    rows = labels == 0  # head (0, 2) aligns only in domain 0: domain-specific, not invariant
    writes[rows, 0, 2] = axes[0] + 0.05 * torch.randn(int(rows.sum()), d, generator=g)
    wl = whitelist_heads(writes, axes, labels, alpha=1e-3)
    assert wl.mask.nonzero().tolist() == [[1, 1]]
    a = head_alignment(writes, axes)
    x = a[labels == 2, 0, 2, 2].double().numpy()
    others = np.delete(a[labels == 2, :, :, 2].double().numpy().reshape(-1, 6), 2, axis=1).reshape(-1)
    p = stats.mannwhitneyu(x, others, alternative="greater", method="asymptotic").pvalue
    assert float(wl.p_values[0, 2]) >= p - 1e-12  # the max over domains includes this one


def test_magnitude_importance_is_the_squared_projection_and_sees_write_size():
    """normalize=False gives (uᵀw̃)² itself (hand value 9 for w = (3, 4), u = e_1); scaling one head's writes by c
    scales its magnitude importance by c² and leaves its alignment importance unchanged."""
    w = torch.zeros(1, 1, 1, 6)
    w[..., 0], w[..., 1] = 3.0, 4.0
    assert head_alignment(w, torch.eye(6)[:1], normalize=False).item() == pytest.approx(9.0)
    g = torch.Generator().manual_seed(2)
    writes, labels, axes = torch.randn(30, 2, 3, 8, generator=g), torch.arange(30) % 3, torch.eye(8)[:3]
    scaled = writes.clone()
    scaled[:, 1, 2] *= 0.1
    for normalize, factor in ((True, 1.0), (False, 0.01)):
        before = head_importance(writes, axes, labels, normalize=normalize)
        after = head_importance(scaled, axes, labels, normalize=normalize)
        torch.testing.assert_close(after[1, 2], factor * before[1, 2], rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(after[0], before[0])


def test_a_whitelist_share_takes_the_strongest_per_domain_tests():
    """share=s whitelists floor(s·L·H) heads, ordered by the largest-over-domains p-value: the planted backbone
    head first; alpha no longer gates; a share above the cap is refused."""
    g = torch.Generator().manual_seed(0)
    n, k, d = 90, 3, 8
    axes, labels = torch.eye(d)[:k], torch.arange(n) % k
    writes = torch.randn(n, 2, 3, d, generator=g)
    for dom in range(k):
        rows = labels == dom
        writes[rows, 1, 1] = axes[dom] + 0.05 * torch.randn(int(rows.sum()), d, generator=g)
    by_alpha = whitelist_heads(writes, axes, labels, alpha=1e-3)
    shared = whitelist_heads(writes, axes, labels, alpha=1e-3, share=0.5)
    assert by_alpha.count == 1 and shared.count == 3 and bool(shared.mask[1, 1])
    p = shared.p_values.reshape(-1)
    chosen = shared.mask.reshape(-1)
    assert float(p[chosen].max()) <= float(p[~chosen].min())  # the three smallest p-values
    with pytest.raises(ValueError, match="exceeds max_fraction"):
        whitelist_heads(writes, axes, labels, share=0.5, max_fraction=0.25)


# ---------------------------------------------------------------------------------------------
# 3. breadth and similarity
# ---------------------------------------------------------------------------------------------
def test_breadth_closed_forms():
    assert breadth(torch.tensor([0.0, 0.9, 0.0, 0.0])) == 0.0
    assert breadth(torch.tensor([0.3, 0.3, 0.3, 0.3])) == pytest.approx(1.0)
    assert breadth(torch.tensor([0.5, 0.5, 0.0, 0.0])) == pytest.approx(math.log(2) / math.log(4))
    q = torch.tensor([0.1, 0.6, 0.3])
    h = -sum(v * math.log(v) for v in (0.1, 0.6, 0.3)) / math.log(3)
    assert breadth(q) == pytest.approx(h)
    assert 0 < breadth(q) < 1
    assert breadth(q[[2, 0, 1]]) == pytest.approx(breadth(q))
    # (L, K) probabilities: q is the layer mean
    p = torch.tensor([[0.2, 0.8, 0.0], [0.0, 0.4, 0.6]])
    assert breadth(p) == pytest.approx(breadth(torch.tensor([0.1, 0.6, 0.3])))
    assert torch.equal(similarity(p), torch.tensor([0.2, 0.8, 0.6]))


# ---------------------------------------------------------------------------------------------
# 4. compiler
# ---------------------------------------------------------------------------------------------
def _instance(seed=0, n_layers=4, n_heads=8, k=3):
    g = torch.Generator().manual_seed(seed)
    imp = torch.rand(n_layers, n_heads, k, generator=g)
    wl = torch.zeros(n_layers, n_heads, dtype=torch.bool)
    wl[0, 1] = wl[2, 5] = True
    return imp, wl


def _brute_force(s, c, imp, wl, eta, floors_off=True, min_sim=0.1, rho_min=0.1):
    """The paper's description, literally: union of per-domain top-⌊LHρs_k⌋ sets plus the whitelist."""
    n_layers, n_heads, k = imp.shape
    rho = min(1.0, rho_min + eta * c)
    keep = wl.clone()
    for j in range(k):
        if s[j] < min_sim:
            continue
        count = math.floor(n_layers * n_heads * rho * float(s[j]) + 1e-9)
        flat = (s[j] * imp[:, :, j]).reshape(-1)
        top = sorted(range(flat.numel()), key=lambda i: (-float(flat[i]), i))[:count]
        keep.view(-1)[top] = True
    return keep


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_strength_mode_equals_the_union_of_top_k_sets(seed):
    imp, wl = _instance(seed)
    s = torch.tensor([0.9, 0.05, 0.4])
    for eta in (0.0, 0.3, 0.7, 1.5, 3.0):
        got = compile_mask(s, 0.6, imp, wl, strength=eta, floors=(0, 0.0, 0.0))
        assert torch.equal(got, _brute_force(s, 0.6, imp, wl, eta))


def test_one_hot_similarity_keeps_the_top_heads_of_that_domain():
    imp, _ = _instance(3)
    s = torch.tensor([0.0, 1.0, 0.0])
    n_total = 32
    for eta in (0.2, 0.5, 0.9):
        rho = min(1.0, 0.1 + eta * 1.0)
        keep = compile_mask(s, 1.0, imp, None, strength=eta, floors=(0, 0.0, 0.0))
        top = torch.topk(imp[:, :, 1].reshape(-1), math.floor(n_total * rho + 1e-9)).indices
        expected = torch.zeros(n_total, dtype=torch.bool)
        expected[top] = True
        assert torch.equal(keep.view(-1), expected)


def test_exact_budget_whitelist_floors_and_monotonicity():
    imp, wl = _instance(4)
    s = torch.tensor([0.8, 0.3, 0.0])
    for ratio in (0.0, 0.2, 0.3, 0.5, 0.7, 0.8):
        keep = compile_mask(s, 0.5, imp, wl, target_prune_ratio=ratio)
        assert int((~keep).sum()) == round(ratio * 32)
        assert bool(keep[wl].all())  # the whitelist is kept
        assert bool((keep.sum(dim=1) >= 1).all())  # ≥ 1 head and ≥ ⌈10 %⌉ of each layer
        assert int(keep.sum()) >= math.ceil(0.05 * 32)
    counts = [int(compile_mask(s, 0.5, imp, wl, strength=eta).sum()) for eta in np.linspace(0, 3, 13)]
    assert counts == sorted(counts)  # monotone in the strength
    # the exact budget is the strength mask whenever the strength hits that count
    for eta in np.linspace(0, 2, 9):
        by_strength = compile_mask(s, 0.5, imp, wl, strength=float(eta))
        ratio = 1 - int(by_strength.sum()) / 32
        assert torch.equal(compile_mask(s, 0.5, imp, wl, target_prune_ratio=ratio), by_strength)
    # nested: a smaller budget keeps a subset
    a = compile_mask(s, 0.5, imp, wl, target_prune_ratio=0.6)
    b = compile_mask(s, 0.5, imp, wl, target_prune_ratio=0.3)
    assert bool((a <= b).all())


def test_floors_hold_with_a_layer_the_importance_ignores():
    imp, _ = _instance(5)
    imp[3] = 0.0  # nothing in layer 3 matters to any domain
    keep = compile_mask(torch.tensor([1.0, 0.0, 0.0]), 0.0, imp, None, target_prune_ratio=0.75, floors=(2, 0.1, 0.05))
    assert int(keep[3].sum()) == 2
    keep = compile_mask(torch.tensor([1.0, 0.0, 0.0]), 0.0, imp, None, strength=0.0, floors=(1, 0.3, 0.5))
    assert bool((keep.sum(dim=1) >= 3).all()) and int(keep.sum()) >= 16


def test_infeasible_budget_raises():
    imp, _ = _instance(6)
    wl = torch.zeros(4, 8, dtype=torch.bool)
    wl[:, :5] = True  # 20 whitelisted heads
    with pytest.raises(ValueError, match="whitelist"):
        compile_mask(torch.tensor([1.0, 0.0, 0.0]), 0.0, imp, wl, target_prune_ratio=0.5)
    with pytest.raises(ValueError, match="floors"):
        compile_mask(torch.tensor([1.0, 0.0, 0.0]), 0.0, imp, None, target_prune_ratio=0.9, floors=(3, 0.1, 0.05))


@pytest.mark.parametrize("ratio", [-0.1, 1.0, 1.5, float("nan")])
def test_ratio_outside_unit_interval_raises(ratio):
    imp, wl = _instance()
    with pytest.raises(ValueError, match="target_prune_ratio"):
        compile_mask(torch.tensor([1.0, 0.0, 0.0]), 0.0, imp, wl, target_prune_ratio=ratio)
    with pytest.raises(ValueError, match="target_prune_ratio"):
        select_heads(imp[:, :, 0], target_prune_ratio=ratio)


def test_select_heads_keeps_the_top_scores():
    scores = torch.arange(32, dtype=torch.float32).view(4, 8)  # layer 3 best, layer 0 worst
    keep = select_heads(scores, target_prune_ratio=0.5, floors=(1, 0.1, 0.05))
    # floors first (the best head of each lower layer), then the top scores: all of layer 3 and 2, less
    assert keep[0].tolist() == [False] * 7 + [True] and keep[1].tolist() == [False] * 7 + [True]
    assert int(keep.sum()) == 16 and bool(keep[3].all()) and int(keep[2].sum()) == 6


def test_reference_compile_heuristics():
    imp, wl = _instance(7)
    p_single = torch.tensor([[0.95, 0.02, 0.01]] * 4)  # one domain: breadth ≈ 0, ρ ≈ ρ_min
    keep = reference_compile(p_single, imp, None, strength=1.0, floors=(0, 0.0, 0.0))
    c = breadth(p_single)
    rho = min(1.0, 0.1 + c)
    expected = torch.zeros(32, dtype=torch.bool)
    expected[torch.topk(imp[:, :, 0].reshape(-1), math.floor(32 * rho * 0.95 + 1e-9)).indices] = True
    assert torch.equal(keep.view(-1), expected)
    # a cross-domain profile keeps the union; without mixing only the top domain
    p_cross = torch.tensor([[0.9, 0.7, 0.01]] * 4)
    mixed = reference_compile(p_cross, imp, wl, strength=1.0)
    single = reference_compile(p_cross, imp, wl, strength=1.0, use_multi_domain_mixing=False)
    assert bool((single <= mixed).all()) and int(mixed.sum()) > int(single.sum())
    assert bool(mixed[wl].all())
    # as coded, a larger η keeps more heads (the README says the opposite)
    assert int(reference_compile(p_cross, imp, wl, strength=2.0).sum()) >= int(mixed.sum())


# ---------------------------------------------------------------------------------------------
# 5. probes
# ---------------------------------------------------------------------------------------------
def test_probes_recover_planted_axes_and_allow_mixtures():
    g = torch.Generator().manual_seed(0)
    n, n_layers, d, k = 800, 2, 12, 4
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g))
    axes = q.T[:k]
    active = (torch.rand(n, k, generator=g) < 0.5).float()  # independent multi-label activity
    residuals = torch.stack([3.0 * active @ axes + torch.randn(n, d, generator=g) + 5.0 for _ in range(n_layers)], 1)
    probes = fit_probes(residuals, active, epochs=30, lr=1e-2, generator=torch.Generator().manual_seed(1))
    cos = torch.einsum("lkd,kd->lk", probes.axes(), axes)
    assert bool((cos > 0.9).all()), cos
    mixture = (3.0 * (axes[0] + axes[2]) + 5.0).expand(1, n_layers, d)
    p = probes.probabilities(mixture)[0]
    assert bool((p[:, [0, 2]] > 0.5).all()) and bool((p[:, [1, 3]] < 0.5).all())


# ---------------------------------------------------------------------------------------------
# 6. DBS
# ---------------------------------------------------------------------------------------------
def test_dbs_drops_a_near_duplicate():
    g = torch.Generator().manual_seed(0)
    d = 10
    means = torch.eye(d)[:4] * 4.0
    dup = 4.0 * torch.nn.functional.normalize(torch.eye(d)[0] + 0.05 * torch.eye(d)[5], dim=0)
    pools = {f"d{i}": m + 0.3 * torch.randn(50, d, generator=g) for i, m in enumerate(means)}
    pools["dup_of_d0"] = dup + 0.3 * torch.randn(50, d, generator=g)
    assert float((domain_axes(pools)[0] @ domain_axes(pools)[4]).abs()) > 0.95  # the near-duplicate
    basis = synthesize_basis(pools, 4, coverage_weight=0.5)
    assert not {"d0", "dup_of_d0"} <= set(basis.names)
    axes = basis.axes
    cos = (axes @ axes.T).abs()
    assert basis.separation == pytest.approx(float(1 - cos[~torch.eye(4, dtype=torch.bool)].max()), abs=1e-5)
    # centring five pools leaves the survivors at |cos| ≈ 1/4 + noise: separation ≈ 0.5
    assert basis.separation > 0.4
    strict = synthesize_basis(pools, 4, coverage_weight=0.5, min_separation=0.45)
    assert strict.separation >= 0.45 and not {"d0", "dup_of_d0"} <= set(strict.names)
    with pytest.raises(ValueError, match="min_separation"):
        synthesize_basis(pools, 5, min_separation=0.45)


def test_domain_axes_hand_values():
    pools = [torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 2.0]])]
    # μ̄ = (1, 1); centred means (1, -1) and (-1, 1)
    expected = torch.tensor([[1.0, -1.0], [-1.0, 1.0]]) / math.sqrt(2)
    assert torch.allclose(domain_axes(pools).float(), expected)


# ---------------------------------------------------------------------------------------------
# 7. baselines
# ---------------------------------------------------------------------------------------------
def test_gated_gradient_equals_a_per_example_loop():
    model = _llama(layers=2)
    data = as_batch(_ids(4, 8))
    labels = data.input_ids.clone()
    labels[:, :3] = -100
    got = gradient_head_importance(model, data, labels, batch_size=4, normalize_layers=False)
    total = torch.zeros(2, 8)
    for i in range(4):
        gate = torch.ones(2, 8, requires_grad=True)
        with scale_heads(model, gate):
            logits = model(input_ids=data.input_ids[i:i + 1]).logits
        loss = _per_example_loss(logits, labels[i:i + 1]).sum()
        (grad,) = torch.autograd.grad(loss, gate)
        total += grad.abs()
    assert torch.allclose(got, total / 4, atol=1e-6)
    normed = gradient_head_importance(model, data, labels, batch_size=2, normalize_layers=True)
    assert torch.allclose(normed.norm(dim=1), torch.ones(2), atol=1e-5)


def test_wanda_sp_by_hand():
    model = _llama(layers=1)
    data = as_batch({"input_ids": _ids(2, 6), "attention_mask": torch.tensor([[1] * 6, [1] * 4 + [0] * 2])})
    xs = []
    h = model.model.layers[0].self_attn.o_proj.register_forward_pre_hook(lambda _m, a: xs.append(a[0]))
    with torch.no_grad():
        model(input_ids=data.input_ids, attention_mask=data.attention_mask)
    h.remove()
    x = torch.cat([xs[0][0], xs[0][1, :4]])  # real tokens only, (10, H·d_h)
    col = model.model.layers[0].self_attn.o_proj.weight.abs().sum(0) * x.norm(dim=0)
    expected = col.view(8, 8).sum(1)
    assert torch.allclose(wanda_sp_scores(model, data)[0], expected.detach(), rtol=1e-5)


def test_baselines_share_the_budget_and_interface():
    model = _llama()
    cal = {"a": {"input_ids": _ids(4, 8, 1)}, "b": {"input_ids": _ids(4, 8, 2)}}
    masks = {name: cls(model).fit(cal).compile(_ids(1, 8), target_prune_ratio=0.25)
             for name, cls in BASELINES.items() if name != "oracle"}
    masks["oracle"] = DomainOraclePruner(model).fit(cal).compile(target_prune_ratio=0.25, domains=["a"])
    for name, keep in masks.items():
        assert keep.shape == (2, 8) and int(keep.sum()) == 12, name
    assert not torch.equal(RandomPruner(model, seed=1).fit().compile(target_prune_ratio=0.5),
                           RandomPruner(model, seed=2).fit().compile(target_prune_ratio=0.5))
    with pytest.raises(ValueError, match="domains"):
        DomainOraclePruner(model).fit(cal).compile(target_prune_ratio=0.25)
    assert isinstance(GlobalGradientPruner(model).fit(cal).scores, torch.Tensor)
    assert isinstance(WandaSPPruner(model).fit(cal).scores, torch.Tensor)


# ---------------------------------------------------------------------------------------------
# 8. the pruner end to end
# ---------------------------------------------------------------------------------------------
def test_pruner_end_to_end_reuse_and_budget():
    model = _llama(layers=2)
    rng = np.random.default_rng(0)
    data = {s: make_skill_set(s, 24, rng).prompts() for s in SKILLS[:3]}
    pruner = SubspacePathPruner(model, probe_epochs=3).fit(data)
    assert pruner.importance.shape == (2, 8, 3)
    assert float(pruner.importance.min()) >= 0 and float(pruner.importance.max()) <= 1
    first = data["copy"].select([0])
    keep = pruner.compile(first, target_prune_ratio=0.5)
    assert int(keep.sum()) == 8 and bool(keep[pruner.whitelist.mask].all())
    assert pruner.compile(first, target_prune_ratio=0.5) is keep  # the same object for later turns
    assert pruner.compile(first, target_prune_ratio=0.25) is not keep
    default = pruner.compile(first)  # the authors' η = 1
    assert default.dtype == torch.bool
    with pytest.raises(RuntimeError, match="fit"):
        SubspacePathPruner(model).compile(first, target_prune_ratio=0.5)
    with pytest.raises(ValueError, match="axes"):
        SubspacePathPruner(model, axes="pca")


def test_pruner_magnitude_importance_and_whitelist_share():
    """importance="magnitude" scores with the squared projections of the same writes on the same axes (probes and
    whitelist unchanged); whitelist_share=0.25 whitelists exactly 4 of 16 heads."""
    model = _llama(layers=2)
    rng = np.random.default_rng(0)
    data = {s: make_skill_set(s, 24, rng).prompts() for s in SKILLS[:3]}
    plain = SubspacePathPruner(model, probe_epochs=3).fit(data)
    magnitude = SubspacePathPruner(model, probe_epochs=3, importance="magnitude").fit(data)
    torch.testing.assert_close(magnitude.axes_, plain.axes_)
    assert torch.equal(magnitude.whitelist.mask, plain.whitelist.mask)
    from icml26.papers.subspace_path.pruner import domain_pools

    _, batch, labels = domain_pools(data)
    writes = head_writes(model, collect_activations(model, batch).head_outputs)
    by_hand = torch.stack([head_importance(writes[:, l:l + 1], magnitude.axes_[l:l + 1], labels, normalize=False)[0]
                           for l in range(2)])
    torch.testing.assert_close(magnitude.importance, by_hand, rtol=1e-4, atol=1e-7)
    assert not torch.allclose(magnitude.importance, plain.importance)
    shared = SubspacePathPruner(model, probe_epochs=3, whitelist_share=0.25).fit(data)
    assert shared.whitelist.count == 4
    with pytest.raises(ValueError, match="importance"):
        SubspacePathPruner(model, importance="norm")


def test_whole_group_compile_removes_key_value_groups_and_prunes_without_copies():
    """GQA (8 query heads in 2 groups per layer): whole_groups=True keeps or drops each group whole, keeps every
    whitelisted head's group, removes round(0.5·4) = 2 groups; prune_heads then drops their k/v rows (no per-head
    copies: num_key_value_groups stays 4) and equals mask_heads."""
    model = _llama(heads=8, kv=2, layers=2)
    rng = np.random.default_rng(0)
    data = {s: make_skill_set(s, 24, rng).prompts() for s in SKILLS[:3]}
    pruner = SubspacePathPruner(model, probe_epochs=3, whitelist_share=0.0625).fit(data)  # 1 head whitelisted
    first = data["copy"].select([0])
    keep = pruner.compile(first, target_prune_ratio=0.5, whole_groups=True)
    groups = keep.reshape(2, 2, 4)
    assert bool((groups.all(-1) | ~groups.any(-1)).all())  # whole groups only
    assert int((~groups.all(-1)).sum()) == 2 and bool(keep[pruner.whitelist.mask].all())
    assert pruner.compile(first, target_prune_ratio=0.5) is not keep  # a separate cache entry
    ids = _ids(2, 10)
    with torch.no_grad(), mask_heads(model, keep):
        masked = model(input_ids=ids).logits
    pruned = prune_heads(copy.deepcopy(model), keep)
    layer_groups = [int(layer.self_attn.num_key_value_groups) for layer in pruned.model.layers]
    assert layer_groups == [4, 4] and sum(x.n_kv_heads for x in attention_layout(pruned)) == 2
    with torch.no_grad():
        torch.testing.assert_close(pruned(input_ids=ids).logits, masked, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# 9. data, exact match and the analysis functions
# ---------------------------------------------------------------------------------------------
def test_skills_answers_by_hand():
    rng = np.random.default_rng(0)
    for skill in SKILLS:
        data = make_skill_set(skill, 20, rng)
        for i in range(20):
            plen = int(data.prompt_length[i])
            ids = data.input_ids[i]
            x = ids[1:plen - 1].tolist()
            y = data.labels[i][data.labels[i] != -100].tolist()
            assert int(ids[plen - 1]) == SEP
            if skill == "copy":
                assert y == x
            elif skill == "offset_copy":
                assert y == x[1:] + x[:1]
            elif skill == "reverse":
                assert y == x[::-1]
            elif skill == "sort":
                assert y == sorted(x)
            elif skill == "add_mod_10":
                digits = [t - 20 for t in x]
                assert y == [20 + (a + b) % 10 for a, b in zip(digits[::2], digits[1::2])]
            else:
                assert len(y) == 4
    pathways = planted_pathways(SKILLS, 4, 8, shared=2, per_skill=2, seed=0)
    assert all(int(p.sum()) == 16 for p in pathways.values())
    shared = torch.stack(list(pathways.values())).all(dim=0)
    assert bool((shared.sum(dim=1) >= 2).all())


def test_exact_match_under_teacher_forcing():
    data = make_skill_set("copy", 4, np.random.default_rng(0))

    class Oracle(torch.nn.Module):
        def __init__(self, wrong_row=None):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.wrong_row = wrong_row

        def forward(self, input_ids, attention_mask=None):
            nxt = torch.roll(data.input_ids, -1, dims=1)  # the true next token everywhere
            if self.wrong_row is not None:
                plen = int(data.prompt_length[self.wrong_row])
                nxt[self.wrong_row, plen] = (nxt[self.wrong_row, plen] + 1) % 64  # one wrong answer token
            logits = torch.nn.functional.one_hot(nxt, 64).float() + self.w

            class Out:
                pass

            out = Out()
            out.logits = logits
            return out

    assert exact_match(Oracle(), data).tolist() == [True] * 4
    assert exact_match(Oracle(wrong_row=2), data).tolist() == [True, True, False, True]


def test_analysis_by_hand():
    assert split_accuracy([1.0, 0.5, 0.0, 0.25], ["a", "b", "a", "b"]) == {"a": 0.5, "b": 0.375}
    assert gap_points(0.62, 0.5) == pytest.approx(12.0)
    assert fraction_of_dense(0.3, 0.6) == pytest.approx(0.5)
    assert math.isnan(fraction_of_dense(0.3, 0.0))
    assert speedup([2.0, 3.0, 10.0], [1.0, 2.0, 2.5]) == pytest.approx(1.5)
    assert pruned_fraction([[True, False], [False, False]]) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        speedup([], [1.0])
    with pytest.raises(ValueError):
        split_accuracy([1.0], ["a", "b"])


@pytest.mark.parametrize("mask", ["whole_groups", "scattered"])
def test_a_pruned_model_saves_and_reloads_exactly(mask, tmp_path):
    from icml26.papers.subspace_path import load_pruned, save_pruned

    model = _qwen("Qwen2Config")
    keep = torch.tensor(MASKS[mask], dtype=torch.bool)
    pruned = prune_heads(copy.deepcopy(model), keep)
    save_pruned(pruned, tmp_path / "p")
    with pytest.raises((RuntimeError, ValueError, OSError)):  # a plain from_pretrained cannot rebuild the shapes
        transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "p")
    reloaded = load_pruned(tmp_path / "p")
    assert [(x.n_heads, x.n_kv_heads) for x in attention_layout(reloaded)] == \
        [(x.n_heads, x.n_kv_heads) for x in attention_layout(pruned)]
    ids = _ids()
    with torch.no_grad():
        assert float((reloaded(input_ids=ids).logits - pruned(input_ids=ids).logits).abs().max()) == 0.0
    with pytest.raises(ValueError, match="not pruned"):
        save_pruned(model, tmp_path / "dense")
    model.save_pretrained(tmp_path / "dense")
    with pytest.raises(ValueError, match="records no kept heads"):
        load_pruned(tmp_path / "dense")


def test_pruning_twice_records_the_heads_of_the_dense_model(tmp_path):
    from icml26.papers.subspace_path import load_pruned, save_pruned

    model = _llama(heads=8, kv=2)
    first = torch.tensor([[True] * 4 + [False] * 4, [False] * 4 + [True] * 4])  # whole groups
    twice = prune_heads(prune_heads(copy.deepcopy(model), first), torch.tensor([[True, False, True, False]] * 2))
    assert twice.config.subspace_path_kept_heads == [[0, 2], [4, 6]]
    once = prune_heads(copy.deepcopy(model), torch.tensor([[h in (0, 2) for h in range(8)],
                                                           [h in (4, 6) for h in range(8)]]))
    ids = _ids()
    save_pruned(twice, tmp_path / "t")
    with torch.no_grad():
        torch.testing.assert_close(load_pruned(tmp_path / "t")(input_ids=ids).logits, once(input_ids=ids).logits)
