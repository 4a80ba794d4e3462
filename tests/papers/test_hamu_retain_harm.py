"""HAMU: the retain harm where it lives (the forget class's retained members, KL to the reference on
the retain set), the validation-forget stop rule, and the per-draw units of every check, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26.papers.hamu.analysis import target_stop_index
from icml26.papers.hamu.config import Config
from icml26.papers.hamu.experiment import _outcome
from icml26.papers.hamu.problem import Problem, evaluate, kl_to_reference
from icml26.papers.hamu.sections import MatchedRecord, RhoResult, StepTrace, StopRecord, target_stop


# ----------------------------------------------------------------------------- KL to the reference
def test_kl_to_reference_by_hand():
    p = torch.tensor([[0.5, 0.5], [0.9, 0.1]], dtype=torch.float64)
    q = torch.tensor([[0.25, 0.75], [0.9, 0.1]], dtype=torch.float64)
    # row 0: 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5 ln 2 + 0.5 ln(2/3); row 1: 0
    expected = (0.5 * math.log(2.0) + 0.5 * math.log(2.0 / 3.0)) / 2
    assert kl_to_reference(p.log(), q.log()) == pytest.approx(expected, rel=1e-12)
    assert kl_to_reference(p.log(), p.log()) == 0.0
    # the direction: KL(reference || model), not the reverse
    assert kl_to_reference(p.log(), q.log()) != pytest.approx(kl_to_reference(q.log(), p.log()))
    with pytest.raises(ValueError, match="shapes"):
        kl_to_reference(p.log(), q[:1].log())


# ----------------------------------------------------------------------------- evaluate
def _identity_problem(**extra) -> Problem:
    """A 3-class problem read by a model whose logits are its inputs (its prediction: argmax of x)."""
    e = torch.eye(3)
    return Problem(retain=(e, torch.tensor([0, 1, 2])), forget=(e[:1], torch.tensor([0])),
                   retain_val=(e[1:], torch.tensor([1, 1])), retain_test=(e[1:], torch.tensor([1, 2])),
                   mia_test=(e[:1], torch.tensor([0])), reference_forget_acc=0.0, reference_retain_acc=0.0,
                   reference_auc=0.0, original_forget_acc=1.0, **extra)


def test_evaluate_reads_the_retained_class_the_kl_and_the_validation_forget_target():
    model = nn.Identity()
    e = torch.eye(3)
    # retained class-0 members: predicted 0, 0 and 1 -> 2/3; validation-forget: 1 of 2 right
    kept = (torch.stack([e[0], e[0], e[1]]), torch.tensor([0, 0, 0]))
    val_forget = (torch.stack([e[0], e[2]]), torch.tensor([0, 1]))
    reference = torch.log_softmax(torch.zeros(3, 3), dim=1)  # uniform on the retain set
    out = evaluate(model, _identity_problem(retained_class=kept, reference_retain_log_probs=reference,
                                            val_forget=val_forget))
    assert out["retained_class_acc"] == pytest.approx(2 / 3)
    assert out["val_forget_acc"] == pytest.approx(0.5)
    assert out["retain_acc"] == 1.0  # the retain-test metric (other classes) is unchanged
    # KL(uniform || softmax(e_i)) = ln 3 - H... : sum_k (1/3)(ln(1/3) - log softmax(e_i)_k), the same for each row
    log_q = torch.log_softmax(torch.eye(3), dim=1)[0]
    expected = float(sum((1 / 3) * (math.log(1 / 3) - log_q[k]) for k in range(3)))
    assert out["retain_kl"] == pytest.approx(expected, rel=1e-6)


def test_evaluate_gives_nan_where_the_data_is_absent_or_empty():
    out = evaluate(nn.Identity(), _identity_problem())
    assert math.isnan(out["retained_class_acc"]) and math.isnan(out["retain_kl"]) and math.isnan(out["val_forget_acc"])
    empty = (torch.zeros(0, 3), torch.zeros(0, dtype=torch.long))
    assert math.isnan(evaluate(nn.Identity(), _identity_problem(retained_class=empty))["retained_class_acc"])


# ----------------------------------------------------------------------------- the validation-forget stop rule
def test_target_stop_index_by_hand():
    assert target_stop_index([0.9, 0.7, 0.5, 0.4], [0.6, 0.6, 0.6, 0.6]) == 2
    assert target_stop_index([0.9, 0.6], [0.6, 0.7]) == 1  # equality stops
    assert target_stop_index([0.9, 0.8], [0.6, 0.6]) is None
    assert target_stop_index([0.1, 0.1], [math.nan, 0.5]) == 1  # a NaN target never stops
    with pytest.raises(ValueError, match="one length"):
        target_stop_index([0.1], [0.1, 0.2])


def test_target_stop_scores_the_first_checkpoint_at_its_target_else_the_last():
    config = Config.tiny()
    problem = _identity_problem()
    problem.reference_forget_acc, problem.original_forget_acc = 0.70, 1.0  # window upper end 0.75
    matched = MatchedRecord(retain_acc=0.80, forget_acc=0.72, mia_gap=0.0, hit=True, front_mean=0.8)
    evaluations = [{"step": 4, "forget_acc": 0.95, "val_forget_acc": 0.72, "retain_acc": 0.85},
                   {"step": 8, "forget_acc": 0.70, "val_forget_acc": 0.72, "retain_acc": 0.795},
                   {"step": 12, "forget_acc": 0.50, "val_forget_acc": 0.70, "retain_acc": 0.60}]
    record = target_stop(evaluations, 0.3, problem, config, matched, replicate=3)
    assert (record.step, record.lr, record.replicate, record.forgot) == (8, 0.3, 3, True)
    assert record.cost_points == pytest.approx(0.5)
    never = [dict(e, val_forget_acc=0.0) for e in evaluations]
    record = target_stop(never, 0.3, problem, config, matched)
    assert record.step == 12 and record.cost_points == pytest.approx(20.0) and record.forgot


# ----------------------------------------------------------------------------- the checks, per draw
def _record(retain: float, kept: float, kl: float, front: float = 0.8, kept_front: float = 0.5) -> MatchedRecord:
    return MatchedRecord(retain_acc=retain, forget_acc=0.8, mia_gap=0.0, hit=True, front_mean=front,
                         retained_class_acc=kept, retain_kl=kl, retained_class_front_mean=kept_front)


def _outcome_by_hand():
    """Two draws, two HAMU lrs, rho in {0, 0.5}; numbers chosen so that each check has a hand value."""
    config = Config(hardness=(0.0, 0.5), hamu_lrs=(0.1, 1.0), baseline_lrs=(0.1,), replicates=2, steps=10,
                    arms=("hamu_q_layerwise", "graddiff", "neggrad_plus"))
    arms = ["hamu_q_layerwise", "graddiff", "neggrad_plus"]
    zero = RhoResult(0.0, {a: [] for a in arms}, {a: [] for a in arms},
                     cos0=[-0.5, -0.5, -0.3, -0.3], first_stop=[10, 10, 10, 10])
    half = RhoResult(0.5, {"hamu_q_layerwise": [_record(0.80, 0.60, 0.10, kept_front=0.55),
                                                _record(0.82, 0.50, 0.20, kept_front=0.45)],
                           "graddiff": [_record(0.81, 0.40, 0.30, kept_front=0.50),
                                        _record(0.80, 0.56, 0.10, kept_front=0.40)],
                           "neggrad_plus": [_record(0.79, 0.70, 0.05, kept_front=0.30),
                                            _record(0.80, 0.60, 0.05, kept_front=0.70)]},
                     {a: [] for a in arms},
                     cos0=[0.1, 0.1, 0.2, 0.2], first_stop=[4, 6, 12, 12],
                     guarantee=[np.array([1.0, 0.5]), np.array([1.0, 1.0, 1.0, 0.95])],
                     reference_acc=[0.8, 0.8], reference_forget=[0.75, 0.75], original_forget=[1.0, 1.0],
                     original_acc=[0.82, 0.82], original_kept=[1.0, 1.0], reference_kept=[0.7, 0.7])
    zero.reference_acc, zero.reference_forget, zero.original_forget, zero.original_acc = ([0.8] * 2, [0.0] * 2,
                                                                                          [1.0] * 2, [0.8] * 2)
    stop = dict(lr=0.1, step=3, retain_acc=0.8, forget_acc=0.9)
    half.stops = [StopRecord(cost_points=0.5, forgot=False, replicate=0, **stop),
                  StopRecord(cost_points=0.5, forgot=True, replicate=0, **stop),
                  StopRecord(cost_points=2.0, forgot=True, replicate=1, **stop),
                  StopRecord(cost_points=0.0, forgot=False, replicate=1, **stop)]
    half.target_stops = [StopRecord(cost_points=0.2, forgot=True, replicate=0, **stop),
                         StopRecord(cost_points=0.9, forgot=True, replicate=0, **stop),
                         StopRecord(cost_points=1.5, forgot=True, replicate=1, **stop),
                         StopRecord(cost_points=0.0, forgot=True, replicate=1, **stop)]
    for out in (zero, half):  # the curves need a front per arm and a trajectory (not read by the checks)
        out.pareto = {a: [np.full(51, 0.8)] for a in arms}
        out.traj = {0.1: [StepTrace([0.0] * 10, [0.0] * 10, [0.0] * 10)]}
    return _outcome(config, arms, {0.0: zero, 0.5: half})


def test_every_check_is_measured_per_draw_with_its_hand_value():
    checks = {c.id: c for c in _outcome_by_hand().checks}
    expected = {
        "retained_class_margin": [20.0, -6.0],           # 100 x (HAMU - GradDiff) on the retained members
        "retained_class_margin_neggrad": [-10.0, -10.0],
        # against the best baseline by the retained-class front: NegGrad+ (mean 0.50) over GradDiff (0.45)
        "retained_class_front_margin": [25.0, -25.0],
        "retain_kl_margin": [0.20, -0.10],               # GradDiff's KL - HAMU's, in nats
        "guarantee": [0.5, 1.0],                          # steps reaching 0.9 B, per draw
        "cos_grows": [0.6, 0.5],                          # per draw: median cos at 0.5 minus at 0
        "stop_earlier": [5.0, -2.0],                      # per draw: mean first stop at 0 minus at 0.5
        "stop_rule_cost": [1.0, 0.5],
        "stop_rule_useful": [0.5, 0.0],                  # a stop short of the window does not count
        "target_stop_useful": [1.0, 0.5],
    }
    for name, units in expected.items():
        check = checks[name]
        assert check.units == pytest.approx(tuple(units)), name
        assert check.value == pytest.approx(np.mean(units)), name


def test_the_notes_report_the_harm_where_it_lives():
    notes = " ".join(_outcome_by_hand().notes)
    assert "original 1.000, reference 0.700" in notes
    assert "hamu_q_layerwise 0.550, 0.1500" in notes  # mean retained-class accuracy and KL at the matched point
