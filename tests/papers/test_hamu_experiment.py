"""HAMU's baselines (PCGrad, GRU and the formulas), forget splits and the unlearning loop, and the
analysis by hand: matched point, Pareto front and area, check values, the validation-selected front,
the stratified split, the stop-on-criterion prefix and the paired interval.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26.papers.hamu import (
    BASELINES,
    forget_split,
    graddiff,
    gru,
    pcgrad,
    unlearn,
)
from icml26.papers.hamu.analysis import (
    guarantee_share,
    matched_point,
    matched_window,
    pareto_area,
    pareto_front,
    retain_margin_points,
    smallest_decrease,
    smallest_increase,
)
from icml26.papers.hamu.analysis import share_at_most, window_front_mean
from icml26.papers.hamu.problem import load_split
from tests.papers._hamu_helpers import DT


# ----------------------------------------------------------------------------- baselines
def test_pcgrad_and_gru_leave_non_conflicting_gradients_untouched():
    rng = np.random.default_rng(12)
    for _ in range(50):
        g_r = torch.tensor(rng.normal(size=10), dtype=DT)
        g_f = torch.tensor(rng.normal(size=10), dtype=DT)
        if float(g_r @ g_f) > 0:
            g_f = g_f - 2 * (g_r @ g_f) / (g_r @ g_r) * g_r  # reflect: κ < 0, no conflict
        assert float(g_r @ g_f) < 0
        # (the authors' code would project here)
        torch.testing.assert_close(pcgrad(g_r, g_f), graddiff(g_r, g_f), rtol=0, atol=0)
        torch.testing.assert_close(gru(g_r, g_f), -g_f, rtol=0, atol=0)


def test_pcgrad_and_gru_project_on_conflict():
    rng = np.random.default_rng(13)
    for _ in range(50):
        g_r = torch.tensor(rng.normal(size=10), dtype=DT)
        g_f = torch.tensor(rng.normal(size=10), dtype=DT) + 2 * g_r  # κ > 0: ascent conflicts with descent
        assert float(g_r @ g_f) > 0
        d = pcgrad(g_r, g_f)
        assert not torch.allclose(d, graddiff(g_r, g_f))
        # the PCGrad direction agrees with both retain descent and forget ascent
        assert float(d @ g_r) >= -1e-12 and float(d @ -g_f) >= -1e-12
        # GRU: forget ascent without first-order retain change
        assert abs(float(gru(g_r, g_f) @ g_r)) < 1e-10
        assert float(gru(g_r, g_f) @ -g_f) > 0


def test_baseline_formulas():
    g_r, g_f = torch.tensor([1.0, 2.0]), torch.tensor([3.0, -1.0])
    kl_r, kl_f = torch.tensor([0.5, 0.5]), torch.tensor([-1.0, 1.0])
    assert BASELINES["finetune"](g_r, g_f).tolist() == [1.0, 2.0]
    assert BASELINES["gradient_ascent"](g_r, g_f).tolist() == [-3.0, 1.0]
    assert BASELINES["graddiff"](g_r, g_f).tolist() == [-1.0, 1.5]
    assert BASELINES["neggrad_plus"](g_r, g_f, beta=0.75).tolist() == [0.0, 1.75]
    assert BASELINES["kl"](g_r, g_f, g_retain_kl=kl_r).tolist() == [-1.25, 0.75]
    torch.testing.assert_close(BASELINES["scrub"](g_r, g_f, g_retain_kl=kl_r, g_forget_kl=kl_f, alpha=0.5, gamma=1.0),
                               torch.tensor([(0.25 + 1 + 1) / 2, (0.25 + 2 - 1) / 2]))


# ----------------------------------------------------------------------------- splits and the loop
def test_forget_split_hardness():
    labels = np.repeat(np.arange(10), 50)
    for rho in (0.0, 0.5, 1.0):
        forget, retain = forget_split(labels, 3, rho, rng=0)
        assert len(forget) == 50 and np.array_equal(np.sort(np.concatenate([forget, retain])), np.arange(500))
        from_class = int((labels[forget] == 3).sum())
        if rho == 0.0:
            assert from_class == 50
        else:  # 1 − ρ of the forget set from the class, the rest random (class 3 included)
            assert from_class >= 50 - int(rho * 50)
            assert (labels[forget] != 3).sum() > 0
    assert np.array_equal(forget_split(labels, 3, 0.5, rng=1)[0], forget_split(labels, 3, 0.5, rng=1)[0])
    with pytest.raises(ValueError, match="hardness"):
        forget_split(labels, 3, 1.5)
    with pytest.raises(ValueError, match="does not occur"):
        forget_split(labels, 11, 0.5)


@pytest.mark.parametrize("method", ["hamu_q", "hamu_u", *BASELINES])
def test_unlearn_runs_every_method_deterministically(method):
    def once():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
        gen = torch.Generator().manual_seed(1)
        x, y = torch.randn(40, 4, generator=gen), torch.randint(0, 3, (40,), generator=gen)
        history = unlearn(model, [(x[:30], y[:30])], [(x[30:], y[30:])], steps=3, lr=0.5, method=method,
                          eval_fn=lambda m: {"acc": float((m(x).argmax(1) == y).float().mean())}, eval_every=2)
        return history, [p.detach().clone() for p in model.parameters()]

    (h1, p1), (h2, p2) = once(), once()
    assert h1.steps_run == 3 and [e["step"] for e in h1.evaluations] == [0, 2, 3]
    assert all(torch.equal(a, b) for a, b in zip(p1, p2))
    assert h1.forget_losses == h2.forget_losses
    torch.manual_seed(0)
    start = [p.detach() for p in nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)).parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(start, p1))


def test_unlearn_stops_on_criterion():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = torch.randn(10, 3), torch.randint(0, 2, (10,))
    # identical retain and forget batches: every step would harm retain
    history = unlearn(model, [(x, y)], [(x, y)], steps=5, lr=0.1, method="hamu_q", stop_on_criterion=True)
    assert history.stopped and history.steps_run == 1 and history.hamu_logs[0].stop


# ----------------------------------------------------------------------------- analysis (hand computations)
def test_matched_point_by_hand():
    # reference forgets to 0.10, the original to 0.90, window 0.05 → matched window [0.05, 0.15]
    assert matched_window(0.10, 0.90, 0.05) == (pytest.approx(0.05), pytest.approx(0.15))
    forget = [0.50, 0.12, 0.06, 0.14, 0.00]
    retain = [0.99, 0.90, 0.95, 0.95, 0.99]
    chosen = matched_point(forget, retain, reference_forget=0.10, original_forget=0.90, window=0.05)
    # inside the window: checkpoints 1, 2, 3; best retain 0.95, first of the tie is 2
    assert (chosen.index, chosen.hit) == (2, True)
    # nothing inside [0.125, 0.375] (binary-exact numbers): 0.5 and 0.0 are both 0.125 away,
    # 0.75 is 0.375 away; of the two nearest the better retain is checkpoint 1
    chosen = matched_point([0.5, 0.0, 0.75], [0.80, 0.85, 0.99], reference_forget=0.25, original_forget=1.0,
                           window=0.125)
    assert (chosen.index, chosen.hit) == (1, False)
    # a reference that forgets less than the original (0.5 > 0.25): the window collapses onto it
    assert matched_window(0.5, 0.25, 0.125) == (0.5, 0.5)
    # otherwise it is capped a window below the original: [0.375, min(0.625, 0.875 − 0.125)]
    assert matched_window(0.5, 0.875, 0.125) == (0.375, 0.625)
    with pytest.raises(ValueError, match="non-empty"):
        matched_point([], [], reference_forget=0.1, original_forget=0.9, window=0.05)


def test_pareto_front_and_area_by_hand():
    forget = [0.9, 0.5, 0.2, 0.6]
    retain = [0.99, 0.95, 0.80, 0.97]
    front = pareto_front(forget, retain, [0.0, 0.2, 0.5, 0.6, 1.0])
    # nothing forgets down to 0; ≤ 0.2: 0.80; ≤ 0.5: max(0.95, 0.80); ≤ 0.6: 0.97; ≤ 1: 0.99
    assert np.isnan(front[0]) and front[1:].tolist() == [0.80, 0.95, 0.97, 0.99]
    # trapezoids on x = 0, 0.5, 1 with y = 0.4, 0.8, 1.0: 0.5·(0.4+0.8)/2 + 0.5·(0.8+1.0)/2 = 0.75
    assert pareto_area([0.0, 0.5, 1.0], [0.4, 0.8, 1.0]) == pytest.approx(0.75)
    assert pareto_area([0.0, 1.0], [1.0, 1.0]) == pytest.approx(1.0)
    # a NaN stretch counts as 0: 0.5·(0 + 1)/2 + 0.5·(1 + 1)/2 = 0.75
    assert pareto_area([0.0, 0.5, 1.0], [np.nan, 1.0, 1.0]) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="increasing"):
        pareto_area([0.0, 0.0], [1.0, 1.0])


def test_check_values_by_hand():
    assert guarantee_share(np.array([1.2, 0.95, 0.9, 0.5])) == 0.75  # 0.9 counts as reaching 0.9
    assert np.isnan(guarantee_share(np.array([])))
    assert retain_margin_points([0.97, 0.99], [0.96, 0.96]) == pytest.approx(2.0)
    assert smallest_increase([-0.4, -0.25, -0.15]) == pytest.approx(0.10)
    assert smallest_increase([0.1, 0.3, 0.2]) == pytest.approx(-0.1)
    assert smallest_decrease([120.0, 12.0, 5.5]) == pytest.approx(6.5)
    assert smallest_decrease([5.0, 6.0]) == -1.0


def test_validation_selected_front_and_its_mean_height_by_hand():
    forget = [0.9, 0.5, 0.2, 0.6, 0.4]
    val = [0.99, 0.95, 0.80, 0.97, 0.96]
    test = [0.98, 0.90, 0.85, 0.93, 0.91]
    # chosen on validation, reported on test: ≤ 0.5 → val picks 0.96 (forget 0.4) → test 0.91
    front = pareto_front(forget, val, [0.1, 0.2, 0.5, 0.6, 1.0], report=test)
    assert np.isnan(front[0]) and front[1:].tolist() == [0.85, 0.91, 0.93, 0.98]
    # mean height over [0.25, 1.0] on the grid 0, 0.25, 0.5, 0.75, 1 with front NaN, 0.6, 0.8, 0.8, 1.0:
    # trapezoids over 0.25..1: 0.25·(0.7 + 0.8 + 0.9) = 0.6, divided by the span 0.75 → 0.8
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    assert window_front_mean(grid, [np.nan, 0.6, 0.8, 0.8, 1.0], 0.25, 1.0) == pytest.approx(0.8)
    # a NaN inside the range counts as 0: over [0, 0.5]: 0.25·(0 + 0.6)/2 + 0.25·(0.6 + 0.8)/2 = 0.25 → /0.5
    assert window_front_mean(grid, [np.nan, 0.6, 0.8, 0.8, 1.0], -0.1, 0.5) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two grid points"):
        window_front_mean(grid, [1.0] * 5, 0.3, 0.4)
    assert share_at_most([0.5, 1.0, 1.5, np.nan], 1.0) == 0.5
    assert np.isnan(share_at_most([], 1.0))


@pytest.mark.parametrize("dataset,features", [("digits", 64), ("animal_mnist", 196)])
def test_load_split_is_stratified_disjoint_and_standardised(dataset, features):
    rng = np.random.default_rng(0)
    split = load_split(dataset, 200, 100, 300, rng)
    assert split.x_train.shape == (200, features) and split.x_val.shape == (100, features)
    assert np.bincount(split.y_train, minlength=10).tolist() == [20] * 10
    assert np.bincount(split.y_test, minlength=10).tolist() == [30] * 10
    np.testing.assert_allclose(split.x_train.mean(axis=0), 0.0, atol=1e-4)
    # disjoint (and Animal-MNIST's duplicate images dropped): no training row appears among the test rows
    rows = {r.tobytes() for r in split.x_train}
    assert not any(r.tobytes() in rows for r in split.x_test)
    with pytest.raises(ValueError, match="dataset"):
        load_split("cifar", 10, 10, 10, rng)


def test_stopping_on_the_criterion_is_a_prefix_of_the_full_run():
    """The stop rule as a decision rule: the stopped model is the full run's checkpoint at the first
    step whose flag fires (no step is applied there)."""
    torch.manual_seed(0)
    x, y = torch.randn(40, 5), torch.randint(0, 3, (40,))
    xf, yf = x[:8], (y[:8] + 1) % 3
    base = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    full_model, stop_model = copy.deepcopy(base), copy.deepcopy(base)
    full = unlearn(full_model, [(x, y)], [(xf, yf)], steps=60, lr=2.0, method="hamu_q", progress=False,
                   eval_fn=lambda m: {"params": [p.detach().clone() for p in m.parameters()]}, eval_every=1)
    first = next((i for i, info in enumerate(full.hamu_logs) if info.stop), None)
    assert first is not None and first > 0
    stopped = unlearn(stop_model, [(x, y)], [(xf, yf)], steps=60, lr=2.0, method="hamu_q", progress=False,
                      stop_on_criterion=True)
    assert stopped.stopped and stopped.steps_run == first + 1
    checkpoint = next(e["params"] for e in full.evaluations if e["step"] == first)
    for a, b in zip(stop_model.parameters(), checkpoint):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_paired_interval_by_hand():
    from icml26.papers.hamu.analysis import paired_interval

    # differences 1, 2, 3 (scale 1): mean 2, sd 1, t_{0.975, 2} = 4.302652729911275 (tables)
    mean, low, high = paired_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], scale=1.0)
    half = 4.302652729911275 / math.sqrt(3.0)
    assert mean == pytest.approx(2.0) and low == pytest.approx(2.0 - half) and high == pytest.approx(2.0 + half)
    # points (scale 100), pairing: a common per-replicate offset cancels
    mean, low, high = paired_interval([0.9, 0.7, 0.5], [0.89, 0.69, 0.49])
    assert (mean, low, high) == pytest.approx((1.0, 1.0, 1.0))
    # NaN pairs dropped; one pair: the value itself; none: NaN
    assert paired_interval([0.5, math.nan], [0.4, 0.1]) == pytest.approx((10.0, 10.0, 10.0))
    assert all(math.isnan(v) for v in paired_interval([math.nan], [0.0]))
    with pytest.raises(ValueError, match="one length"):
        paired_interval([1.0], [1.0, 2.0])
