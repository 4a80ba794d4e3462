"""VimRAG's GGPO: the mask's truth table, group advantages and losses by hand, a zero mask equals GRPO,
a tabular policy's exact zero gradient, and on a tiny random ``Qwen2ForCausalLM`` the GGPO gradient
equals the GRPO gradient of the trajectory without the masked tokens (= an explicit per-token loop).
"""

from __future__ import annotations

import math

import pytest
import torch

from icml26.papers.vimrag import (
    ggpo_loss,
    ggpo_mask,
    ggpo_mask_from_membership,
    grpo_advantages,
    grpo_loss,
    token_logprobs,
    token_steps,
    tokenize_trajectory,
)
from tests.papers._vimrag_helpers import chain_with_dead_end


# ---------------------------------------------------------------------------
# GGPO
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("reward,on_path,valuable,masked", [
    (1, True, False, False), (1, False, False, True),   # success: only dead ends are masked
    (1, True, True, False), (1, False, True, True),
    (0, True, True, True), (0, False, True, True),      # failure: only valuable retrievals are masked
    (0, True, False, False), (0, False, False, False),
])
def test_mask_truth_table(reward, on_path, valuable, masked):
    mu = ggpo_mask(["v"], reward, {"v"} if on_path else set(), {"v"} if valuable else set())
    assert mu.tolist() == [masked]
    batch = ggpo_mask_from_membership(torch.tensor([[on_path]]), torch.tensor([[valuable]]), torch.tensor([reward]))
    assert batch.tolist() == [[masked]]


def test_mask_worked_example():
    g, a, b, c, ans = chain_with_dead_end()
    steps = [a, c, b, ans]
    assert ggpo_mask(steps, 1, g.answer_path(), valuable=set()).tolist() == [False, True, False, False]   # {c}
    assert ggpo_mask(steps, 0, g.answer_path(), valuable={a}).tolist() == [True, False, False, False]     # {a}


def test_group_advantages_by_hand():
    adv = grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]))
    s = math.sqrt(1 / 3)                          # unbiased std of (1, 0, 0, 1)
    assert torch.allclose(adv[0], torch.tensor([0.5, -0.5, -0.5, 0.5]) / (s + 1e-6))
    assert (adv[1] == 0).all()
    r = torch.rand(6, 8, generator=torch.Generator().manual_seed(0)).round()
    assert grpo_advantages(r).sum(-1).abs().max() < 1e-5
    assert torch.allclose(grpo_advantages(r, scale=False), r - r.mean(-1, keepdim=True))
    # equal rewards at eps = 0: zeros as documented, not 0/0 = NaN
    assert torch.equal(grpo_advantages(torch.tensor([1.0, 1.0, 1.0]), eps=0.0), torch.zeros(3))
    torch.testing.assert_close(grpo_advantages(torch.tensor([1.0, 0.0]), eps=0.0),
                               torch.tensor([0.5, -0.5]) / math.sqrt(0.5))


def test_token_and_sequence_ratio_losses_by_hand():
    lp = torch.tensor([[-0.2, -0.8]], requires_grad=True)  # log-ratios 0.1, -0.5 against the old policy
    old = torch.full((1, 2), -0.3)
    steps = torch.tensor([[0, 1]])
    no_mask = torch.zeros(1, 2, dtype=torch.bool)
    # token ratio: r = (e^0.1, e^-0.5), A = 2: min(2r, 2 clip(r, .8, 1.2)) = (2e^0.1, 2e^-0.5); mean over tokens
    loss = ggpo_loss(lp, old, torch.tensor([2.0]), steps, no_mask, 0.2)
    assert float(loss.detach()) == pytest.approx(-(2 * math.exp(0.1) + 2 * math.exp(-0.5)) / 2)
    # GSPO: s = exp(mean(0.1, -0.5)) = e^-0.2; A = -1, clip 0.1: min(-s, -clip(s)) = -max(s, 0.9) = -0.9
    loss = ggpo_loss(lp, old, torch.tensor([-1.0]), steps, no_mask, 0.1, ratio="sequence")
    assert float(loss.detach()) == pytest.approx(0.9)
    loss.backward()
    assert torch.equal(lp.grad, torch.zeros(1, 2))   # clipped: no gradient
    # masking step 1 leaves the sequence ratio of step 0 alone: s = e^0.1, A = 1, clip 0.2: min(s, 1.2) = e^0.1
    loss = ggpo_loss(lp, old, torch.tensor([1.0]), steps, torch.tensor([[False, True]]), 0.2, ratio="sequence")
    assert float(loss.detach()) == pytest.approx(-math.exp(0.1))
    # reductions: per-token losses (-2e^0.1, -2e^-0.5) of one sequence; sum, token mean
    kw = dict(advantages=torch.tensor([2.0]), token_step=steps, mask=no_mask)
    total = float(ggpo_loss(lp, old, reduction="sum", **kw).detach())
    assert total == pytest.approx(-2 * (math.exp(0.1) + math.exp(-0.5)))
    with pytest.raises(ValueError, match="log-probabilities"):  # probabilities passed as log-probabilities
        ggpo_loss(lp.detach().exp(), old, **kw)


def test_zero_mask_equals_grpo_exactly():
    g = torch.Generator().manual_seed(0)
    lp = (-3 * torch.rand(4, 10, generator=g) - 0.3).requires_grad_()  # log-probabilities, <= 0
    old = lp.detach() + 0.3 * torch.randn(4, 10, generator=g).clamp(-1, 1)
    steps = torch.randint(-1, 3, (4, 10), generator=g)
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 1.0, 0.0]))
    for ratio in ("token", "sequence"):
        for reduction in ("sequence", "token", "sum"):
            a = ggpo_loss(lp, old, adv, steps, torch.zeros(4, 3, dtype=torch.bool), ratio=ratio, reduction=reduction)
            b = grpo_loss(lp, old, adv, steps, ratio=ratio, reduction=reduction)
            assert torch.equal(a, b)


def test_masked_steps_get_exactly_zero_gradient_tabular():
    # a tabular policy: one row of logits per (rollout, step) state
    g = torch.Generator().manual_seed(1)
    B, S, A = 4, 5, 6
    table = torch.randn(B, S, A, generator=g, requires_grad=True)
    actions = torch.randint(A, (B, S), generator=g)
    logp = torch.log_softmax(table, -1).gather(2, actions[..., None]).squeeze(-1)   # (B, S): one token per step
    steps = torch.arange(S).expand(B, S)
    mask = torch.rand(B, S, generator=g) < 0.4
    old = logp.detach() + 0.1 * torch.randn(B, S, generator=g)
    ggpo_loss(logp, old, torch.tensor([1.0, -0.5, 2.0, -1.0]), steps, mask).backward()
    grad_norm = table.grad.abs().sum(-1)
    assert torch.equal(grad_norm[mask], torch.zeros(int(mask.sum())))
    assert (grad_norm[~mask] > 0).all()


def _tiny_qwen2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(cfg).double().eval()


def _loop_loss(lp, old, adv, step, mask, clip, ratio):
    """The clipped objective written token by token (sequence reduction)."""
    total, count = 0.0, 0
    for b in range(lp.shape[0]):
        kept = [t for t in range(lp.shape[1]) if step[b, t] >= 0 and not mask[b, step[b, t]]]
        if not kept:
            continue
        if ratio == "sequence":
            s = torch.exp(sum(lp[b, t] - old[b, t] for t in kept) / len(kept))
            seq = -torch.minimum(s * adv[b], s.clamp(1 - clip, 1 + clip) * adv[b])
        else:
            seq = 0.0
            for t in kept:
                r = torch.exp(lp[b, t] - old[b, t])
                seq = seq - torch.minimum(r * adv[b], r.clamp(1 - clip, 1 + clip) * adv[b])
            seq = seq / len(kept)
        total, count = total + seq, count + 1
    return total / count


@pytest.mark.parametrize("ratio", ["token", "sequence"])
def test_ggpo_gradient_on_a_tiny_qwen2_equals_grpo_without_the_masked_tokens(ratio, one_thread):
    model = _tiny_qwen2()
    params = [p for p in model.parameters() if p.requires_grad]
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(64, (3, 24), generator=g)
    spans = [[(3, 7), (10, 14), (18, 22)], [(2, 6), (9, 12)], [(4, 9), (12, 16), (20, 24)]]
    step = token_steps(spans, 24)
    mask = torch.tensor([[False, True, False], [True, False, False], [False, False, True]])
    adv = torch.tensor([0.7, -1.2, 0.5], dtype=torch.float64)
    lp = token_logprobs(model, ids)
    old = lp.detach() + 0.15 * torch.randn(3, 24, generator=g, dtype=torch.float64)
    g_ggpo = torch.autograd.grad(ggpo_loss(lp, old, adv, step, mask, 0.2, ratio=ratio), params)
    dropped = step.clone()
    dropped[torch.gather(mask, 1, step.clamp(min=0)) & (step >= 0)] = -1
    g_grpo = torch.autograd.grad(grpo_loss(token_logprobs(model, ids), old, adv, dropped, 0.2, ratio=ratio), params)
    g_loop = torch.autograd.grad(_loop_loss(token_logprobs(model, ids), old, adv, step, mask, 0.2, ratio), params)
    g_full = torch.autograd.grad(grpo_loss(token_logprobs(model, ids), old, adv, step, 0.2, ratio=ratio), params)
    for a, b, c in zip(g_ggpo, g_grpo, g_loop):
        assert torch.allclose(a, b, atol=1e-12) and torch.allclose(a, c, atol=1e-10)
    assert any(not torch.allclose(a, f) for a, f in zip(g_ggpo, g_full))   # the mask does change the update


def test_token_logprobs_match_log_softmax_and_trajectory_tokens():
    model = _tiny_qwen2()
    ids = torch.randint(64, (2, 9), generator=torch.Generator().manual_seed(0))
    lp = token_logprobs(model, ids)
    logits = model(ids).logits
    assert lp[0, 0] == 0
    assert torch.allclose(lp[1, 5], torch.log_softmax(logits[1, 4], -1)[ids[1, 5]])
    encode = lambda s: [ord(ch) % 50 for ch in s]  # noqa: E731
    ids, step = tokenize_trajectory(encode, [("Q:", None), ("ab", 0), ("obs", None), ("c", 1)])
    assert ids.tolist() == encode("Q:abobsc") and step.tolist() == [-1, -1, 0, 0, -1, -1, -1, 1]
    assert token_steps([[(2, 4), (7, 8)]], 8).tolist() == [step.tolist()]
