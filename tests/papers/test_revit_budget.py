"""ReViT's budget controls: the learning rate chosen per arm on the validation split, the
equal-wall-clock ViT+aug arm and the budget curve (experiment.py), with training and evaluation
replaced by stubs whose results are known, so each wiring mistake changes a number."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.contract import RunContext
from icml26.papers.revit import experiment as exp
from icml26.papers.revit.config import Config
from icml26.papers.revit.training import FieldFitResult


def _ctx() -> RunContext:
    return RunContext(seed=3, device=torch.device("cpu"), setting="tiny", threads=1, streams=exp.STREAMS)


class _Stub:
    """Replaces ``fit`` and ``_mse``: records every fit, and gives each (arm, lr, steps, split) a
    known MSE. Validation prefers lr 1e-3 for every arm; the test split prefers 4e-3."""

    def __init__(self, monkeypatch):
        self.fits: list[dict] = []
        monkeypatch.setattr(exp, "fit", self.fit)
        monkeypatch.setattr(exp, "_mse", self.mse)
        monkeypatch.setattr(exp, "_equivariance_error", lambda model, x: 0.0)

    def fit(self, model, inputs, targets, *, steps, batch_size, lr, weight_decay, augment, generator,
            show_progress, desc):
        model._stub = dict(kind=type(model).__name__, lr=lr, steps=steps, augment=augment,
                           init=[p.detach().clone() for p in model.parameters()][0])
        self.fits.append({**model._stub, "desc": desc})
        return FieldFitResult(losses=[1.0] * steps, seconds=1.0)

    def mse(self, model, x, y, u_scale):
        s = model._stub
        base = {"ReViT2d": 1.0, "PlainViT": 2.0}[s["kind"]] * (0.5 if s["augment"] else 1.0)
        base /= math.sqrt(s["steps"])
        validation = x.shape[0] == self.val_pairs
        lr_factor = {1e-3: 1.0, 2e-3: 1.5, 4e-3: 2.0}[s["lr"]]
        if not validation:
            lr_factor = 1.0 / lr_factor
        per_rot = [base * lr_factor * (1 if s["kind"] == "ReViT2d" or s["augment"] else 1 + k) for k in range(4)]
        return per_rot


def _tiny(**kw) -> Config:
    return Config.tiny().__class__(**{**Config.tiny().__dict__, "test_trajectories": 2, "val_trajectories": 1, **kw})


def test_validation_score_reads_each_arms_training_distribution():
    assert exp.validation_score("ViT", [1.0, 5.0, 9.0, 5.0]) == 1.0
    assert exp.validation_score("ViT+aug", [1.0, 5.0, 9.0, 5.0]) == 5.0
    assert exp.validation_score("ReViT", [2.0, 2.0, 2.0, 2.0]) == 2.0


def test_equal_time_steps_and_lr_grid():
    assert exp.equal_time_steps(Config.quick()) == 800
    assert exp.equal_time_steps(_tiny(steps=3, equal_time_factor=1.9)) == 6
    assert exp.lr_grid(Config.quick()) == (2e-3,)
    assert exp.lr_grid(_tiny(lrs=(1e-3, 4e-3))) == (1e-3, 4e-3)


@pytest.mark.parametrize("bad", [dict(budgets=(3,)), dict(budgets=(5, 5)), dict(budgets=(0,)), dict(lrs=(0.0,)),
                                 dict(equal_time_factor=0.0)])
def test_config_refuses_bad_budget_settings(bad):
    with pytest.raises(ValueError):
        _tiny(steps=3, **bad)


def test_crossover_is_where_revit_stays_behind():
    steps = (400, 1200, 2400)
    assert exp.crossover_steps(steps, [0.9, 1.1, 1.3]) == 1200
    assert exp.crossover_steps(steps, [1.1, 0.9, 1.2]) == 2400
    assert exp.crossover_steps(steps, [1.1, 1.2, 0.9]) is None
    assert exp.crossover_steps(steps, [1.1, 1.2, 1.3]) == 400
    assert exp.crossover_steps(steps, [1.1, 1.2, 1.0]) is None


def test_rates_are_chosen_on_validation_and_reused_by_equal_time_and_budgets(monkeypatch):
    stub = _Stub(monkeypatch)
    config = _tiny(steps=3, lrs=(1e-3, 2e-3, 4e-3), budgets=(5,), equal_time_factor=2.0)
    ctx = _ctx()
    data = exp._data(config, ctx)
    stub.val_pairs = data.x_val.shape[0]
    assert stub.val_pairs != data.x_test.shape[0]
    runs = exp._train_arms(config, ctx, data)
    # Validation prefers 1e-3 (the test split would prefer 4e-3): every arm gets 1e-3.
    assert {arm: runs[arm].lr for arm in exp.ARMS} == {arm: [1e-3] for arm in exp.ARMS}
    assert runs[exp.EQUAL_TIME].lr == [1e-3]
    main = [f for f in stub.fits if f["steps"] == 3]
    assert len(main) == 3 * 3  # three arms x three rates
    equal = [f for f in stub.fits if f["steps"] == 6]
    assert len(equal) == 1 and equal[0]["augment"] and equal[0]["kind"] == "PlainViT" and equal[0]["lr"] == 1e-3
    vit_aug = [f for f in main if f["augment"] and f["lr"] == 1e-3][0]
    assert torch.equal(equal[0]["init"], vit_aug["init"])  # same initialisation as ViT+aug
    budget = [f for f in stub.fits if f["steps"] == 5]
    assert sorted((f["kind"], f["augment"], f["lr"]) for f in budget) == [("PlainViT", True, 1e-3),
                                                                            ("ReViT2d", False, 1e-3)]
    # The budget curve's MSE is the rotated test MSE of the 5-step runs (test factor 1/1 at 1e-3).
    assert runs["ReViT"].budget_rotated[5] == [pytest.approx(1.0 / math.sqrt(5))]
    assert runs["ViT+aug"].budget_rotated[5] == [pytest.approx(1.0 / math.sqrt(5))]
    tuned = ctx.tuning
    assert set(tuned) == {"revit", "vit", "vit_aug"}
    assert all(len(entry["calls"]) == 1 for entry in tuned.values())


def test_checks_read_the_right_arms(monkeypatch):
    stub = _Stub(monkeypatch)
    config = _tiny(steps=4, budgets=(16,), equal_time_factor=4.0)
    ctx = _ctx()
    stub.val_pairs = config.val_trajectories * config.pairs_per_trajectory
    out = exp.run(config, ctx)
    checks = {c.id: c.value for c in out.checks}
    # Test MSE at lr 2e-3 (factor 1/1.5): ReViT 1/sqrt(4), ViT+aug 0.5·2/sqrt(4), its equal-time run
    # (16 steps) 0.5·2/sqrt(16), the plain ViT 2/sqrt(4)·(1 + k) at rotation k.
    revit, aug, aug_equal = 1 / 2 / 1.5, 1 / 2 / 1.5, 1 / 4 / 1.5
    vit_rotated = 2 / 2 / 1.5 * (2 + 3 + 4) / 3
    assert checks["rotated_vs_vit_aug"] == pytest.approx(revit / aug)
    assert checks["rotated_vs_vit_aug_equal_time"] == pytest.approx(revit / aug_equal)
    assert checks["rotated_mse_ratio"] == pytest.approx(revit / vit_rotated)
    assert out.metrics[exp.EQUAL_TIME]["steps"] == 16
    assert out.metrics["ReViT"]["rotated_over_vit_aug_steps16"] == pytest.approx(1.0)
    assert out.curves["budget_curve"].x == [4, 16]
    assert out.curves["budget_curve"].series["ReViT rotated MSE"] == pytest.approx([revit, 1 / 4 / 1.5])
