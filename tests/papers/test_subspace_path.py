"""SubspacePath Pruner: head removal (pre-hook = zeroed weights = sliced model; the authors' masking
is different), data, exact match under teacher forcing, the analysis by hand, saving a pruned model.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers.subspace_path import (  # noqa: E402
    attention_layout,
    count_heads,
    mask_heads,
    mask_output_blocks,
    prune_heads,
    scale_heads,
)
from icml26.papers.subspace_path.analysis import (  # noqa: E402
    fraction_of_dense,
    gap_points,
    pruned_fraction,
    speedup,
    split_accuracy,
)
from icml26.papers.subspace_path.skills import (  # noqa: E402
    SEP,
    SKILLS,
    exact_match,
    make_skill_set,
    planted_pathways,
)
from tests.papers._subspace_path_helpers import _ids, _llama, _qwen  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_thread")


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
