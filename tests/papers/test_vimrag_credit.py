"""VimRAG (B), the credit-assignment comparison: GGPO's two reductions, the area under the success curve
and how the run pairs the arms over the learning-rate grid.

Numbers from outside the code: hand-worked losses and areas, and GRPO's own gradient (the described
GGPO must give the kept steps exactly GRPO's gradient, the renormalised one must not).
"""

from __future__ import annotations

import pytest
import torch

from icml26.contract import RunContext
from icml26.papers.vimrag import experiment, sections
from icml26.papers.vimrag.analysis import area_gain
from icml26.papers.vimrag.baselines import grpo_loss
from icml26.papers.vimrag.config import Config
from icml26.papers.vimrag.ggpo import ggpo_loss
from icml26.papers.vimrag.search_task import TrainCurve


def test_generated_reduction_by_hand():
    # one rollout of two steps, log-ratios 0 (on-policy): per-step losses -A = -2 each; step 1 masked
    lp = torch.tensor([[-0.2, -0.8]])
    steps = torch.tensor([[0, 1]])
    mask = torch.tensor([[False, True]])
    kw = dict(advantages=torch.tensor([2.0]), token_step=steps, mask=mask)
    # described: the kept term over both generated steps; renormalised: over the one kept step
    assert float(ggpo_loss(lp, lp, reduction="generated", **kw)) == pytest.approx(-1.0)
    assert float(ggpo_loss(lp, lp, reduction="sequence", **kw)) == pytest.approx(-2.0)
    # two rollouts, the second fully masked: it still counts in the mean over rollouts (0 loss), unlike "sequence"
    lp2 = torch.tensor([[-0.2, -0.8], [-0.5, -0.5]])
    kw2 = dict(advantages=torch.tensor([2.0, 1.0]), token_step=torch.tensor([[0, 1], [0, 1]]),
               mask=torch.tensor([[False, True], [True, True]]))
    assert float(ggpo_loss(lp2, lp2, reduction="generated", **kw2)) == pytest.approx(-0.5)
    assert float(ggpo_loss(lp2, lp2, reduction="sequence", **kw2)) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="generated"):
        ggpo_loss(lp, lp, reduction="mean", **kw)


def test_generated_reduction_gives_kept_steps_grpo_gradient():
    g = torch.Generator().manual_seed(3)
    lp = (-3 * torch.rand(6, 8, generator=g) - 0.3).requires_grad_()
    old = lp.detach() + 0.1 * torch.randn(6, 8, generator=g).clamp(-1, 1)
    steps = torch.randint(-1, 4, (6, 8), generator=g)
    steps[:, 0] = 0  # every rollout generated something
    adv = torch.randn(6, generator=g)
    mask = torch.rand(6, 4, generator=g) < 0.4
    keep = (steps >= 0) & ~torch.gather(mask, 1, steps.clamp(min=0))
    (g_grpo,) = torch.autograd.grad(grpo_loss(lp, old, adv, steps), lp)
    for reduction, same in (("generated", True), ("sequence", False)):
        (grad,) = torch.autograd.grad(ggpo_loss(lp, old, adv, steps, mask, reduction=reduction), lp)
        assert torch.equal(grad[~keep], torch.zeros_like(grad[~keep]))
        assert torch.allclose(grad[keep], g_grpo[keep], atol=1e-7) == same
    # no mask: the two reductions are one loss, so one GRPO run pairs with both GGPO arms
    none = torch.zeros(6, 4, dtype=torch.bool)
    assert torch.equal(ggpo_loss(lp, old, adv, steps, none, reduction="generated"),
                       ggpo_loss(lp, old, adv, steps, none, reduction="sequence"))


def test_area_gain_by_hand():
    # pair 1: means 0.5 vs 0.25 (+25 points); pair 2: 0.5 vs 0.75 (-25 points); mean 0
    assert area_gain([[0, 1], [1, 0]], [[0, 0.5], [0.5, 1]]) == pytest.approx(0.0)
    assert area_gain([[1, 1, 1]], [[0, 0.5, 1]]) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        area_gain([[1, 1]], [[1, 1, 1]])
    with pytest.raises(ValueError):
        area_gain([[1.0]], [])


def _curve(level: float, n: int = 4) -> TrainCurve:
    return TrainCurve(success=[level] * n, redundant=[1.0] * n, searches=[2.0] * n, masked_share=[0.0] * n)


def test_area_checks_average_over_the_whole_lr_grid():
    # main lr: dropped +10, renorm -10 points over GRPO; extra lr: +30 and +10: means +20 and 0
    runs = {"ggpo_dropped": [_curve(0.6)], "ggpo": [_curve(0.4)], "grpo": [_curve(0.5)]}
    extra = {"ggpo_dropped": [_curve(0.8)], "ggpo": [_curve(0.6)], "grpo": [_curve(0.5)]}
    credit = sections.Credit(runs=runs, by_lr=[(0.01, extra)], seconds=0.0)
    assert experiment._area_gain(credit, "ggpo_dropped") == pytest.approx(20.0)
    assert experiment._area_gain(credit, "ggpo") == pytest.approx(0.0)


def test_credit_trains_every_arm_at_every_lr_on_shared_streams(monkeypatch):
    calls = []

    def fake_train(task, method, *, lr, reduction, gen, **kw):
        calls.append((method, reduction, lr, gen.initial_seed()))
        return _curve(0.5, kw["iterations"])

    monkeypatch.setattr(sections, "train", fake_train)
    config = Config.tiny()
    config.replicates, config.extra_lrs = 2, (0.01, 0.02)
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    out = sections.credit(config, ctx)
    assert set(out.runs) == {"ggpo", "ggpo_dropped", "grpo"} and [lr for lr, _ in out.by_lr] == [0.01, 0.02]
    assert {(m, r) for m, r, _, _ in calls} == {("ggpo", "sequence"), ("ggpo", "generated"), ("grpo", "sequence")}
    assert len(calls) == 3 * 3 * 2
    for lr in (0.05, 0.01, 0.02):
        seeds = [s for _, _, x, s in calls if x == lr]
        # per replicate, one question stream shared by the three arms; the replicates' streams differ
        assert len(set(seeds)) == 2 and all(seeds.count(s) == 3 for s in seeds)
    with pytest.raises(ValueError, match="extra_lrs"):
        Config(extra_lrs=(0.01, 0.05))
