"""SubspacePath Pruner: the compiler (strength mode = the union of per-layer top-k sets, exact budgets,
floors, infeasible budgets, reference heuristics) and the pruner end to end.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers.subspace_path import (  # noqa: E402
    SubspacePathPruner,
    attention_layout,
    breadth,
    collect_activations,
    compile_mask,
    head_importance,
    head_writes,
    mask_heads,
    prune_heads,
    reference_compile,
    select_heads,
)
from icml26.papers.subspace_path.skills import (  # noqa: E402
    SKILLS,
    make_skill_set,
)
from tests.papers._subspace_path_helpers import _ids, _llama  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_thread")


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
