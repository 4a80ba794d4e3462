"""SubspacePath Pruner: capture and the importance algebra, breadth, probes, DBS and the baselines.

Numbers from outside the code: closed forms (entropy of q, Bessel's inequality), two code paths with
one answer (pooled head writes = the attention output; the gated gradient = a per-example loop),
scipy's Mann–Whitney U.
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
    WandaSPPruner,
    as_batch,
    breadth,
    collect_activations,
    domain_axes,
    fit_probes,
    gradient_head_importance,
    head_alignment,
    head_importance,
    head_writes,
    scale_heads,
    similarity,
    synthesize_basis,
    wanda_sp_scores,
    whitelist_heads,
)
from icml26.papers.subspace_path.baselines import _per_example_loss  # noqa: E402
from tests.papers._subspace_path_helpers import _ids, _llama, _qwen  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_thread")


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
