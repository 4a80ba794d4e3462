"""The shared statistics and schedule against numbers computed outside the code (scipy, torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from icml26.common.schedule import warmup_cosine
from icml26.common.stats import (Interval, interquartile_mean, log_ratio_interval, paired_interval, ratio,
                                 stratified_bootstrap_interval, t_half_width, t_interval)


def test_ratio_has_one_answer_for_the_undefined_cases():
    assert ratio(3.0, 4.0) == 0.75 and ratio(-1, 2) == -0.5
    for n, d in [(1.0, 0.0), (0.0, 0.0), (-1.0, 0.0), (math.inf, 1.0), (1.0, math.inf), (math.nan, 1.0),
                 (1.0, math.nan), (1.0, -0.0)]:
        assert math.isnan(ratio(n, d)), (n, d)


def test_t_interval_equals_scipys():
    x = np.array([0.3, 1.1, -0.4, 2.5, 0.9, 1.7])
    got = t_interval(x, 0.9)
    low, high = sps.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert got.mean == pytest.approx(x.mean(), abs=1e-15)
    assert (got.low, got.high) == pytest.approx((low, high), rel=1e-12)
    assert got.sd == pytest.approx(x.std(ddof=1)) and got.n == 6
    assert got.half_width == pytest.approx(t_half_width(got.sd, 6, 0.9))


def test_t_interval_leaves_out_missing_values_and_handles_small_n():
    assert t_interval([1.0, None, math.nan, math.inf, 3.0]) == t_interval([1.0, 3.0])
    one = t_interval([2.5])
    assert (one.mean, one.low, one.high, one.n, one.sd) == (2.5, 2.5, 2.5, 1, None)
    none = t_interval([math.nan])
    assert none.n == 0 and math.isnan(none.mean) and none.as_dict() == {
        "mean": None, "sd": None, "n": 0, "ci_low": None, "ci_high": None}
    with pytest.raises(ValueError, match="confidence"):
        t_interval([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="n=1"):
        t_half_width(1.0, 1)


def test_paired_interval_is_the_interval_of_the_differences():
    a, b = np.array([1.0, 2.0, 4.0, math.nan]), np.array([0.5, 2.5, 3.0, 1.0])
    got = paired_interval(a, b, scale=100.0)
    want = t_interval(100.0 * (a[:3] - b[:3]))
    assert got == want
    with pytest.raises(ValueError, match="one length"):
        paired_interval([1.0, 2.0], [1.0])


def test_log_ratio_interval_is_the_geometric_mean_with_a_log_scale_interval():
    a, b = np.array([1.0, 2.0, 0.5]), np.array([2.0, 2.0, 1.0])
    got = log_ratio_interval(a, b)
    logs = np.log(a / b)
    assert got.mean == pytest.approx(math.exp(logs.mean()))
    low, high = sps.t.interval(0.95, 2, loc=logs.mean(), scale=sps.sem(logs))
    assert (got.low, got.high) == pytest.approx((math.exp(low), math.exp(high)))
    assert isinstance(got, Interval) and got.n == 3
    with pytest.raises(ValueError, match="positive"):
        log_ratio_interval([1.0, 0.0], [1.0, 1.0])


def test_warmup_cosine_equals_torchs_cosine_annealing_after_the_warm_up():
    peak, floor, total = 0.3, 0.1, 40
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=peak)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total, eta_min=floor * peak)
    for step in range(total + 5):
        assert warmup_cosine(step, total, floor=floor, peak=peak) == pytest.approx(
            opt.param_groups[0]["lr"] if step <= total else floor * peak, rel=1e-12, abs=1e-15), step
        opt.step()
        sched.step()


def test_warmup_cosine_rises_linearly_then_starts_the_decay_at_the_peak():
    lr = [warmup_cosine(s, 20, warmup=5, floor=0.0, peak=2.0) for s in range(25)]
    assert lr[:5] == pytest.approx([0.4, 0.8, 1.2, 1.6, 2.0])
    assert lr[5] == 2.0 and lr[20] == pytest.approx(0.0, abs=1e-15) and lr[24] == lr[20]
    assert all(x >= y for x, y in zip(lr[5:], lr[6:]))
    with pytest.raises(ValueError, match="floor"):
        warmup_cosine(0, 10, floor=1.5)
    with pytest.raises(ValueError, match="warmup"):
        warmup_cosine(0, 10, warmup=-1)


def test_interquartile_mean_cuts_a_quarter_at_each_end_of_the_pooled_scores():
    assert interquartile_mean(np.arange(1, 9)) == 4.5  # 3, 4, 5, 6
    # ten scores: floor(2.5) = 2 cut at each end, pooled over a (runs, tasks) table
    table = np.array([[9.0, -3.0], [100.0, 1.0], [2.0, 4.0], [5.0, 7.0], [6.0, 8.0]])
    assert interquartile_mean(table) == pytest.approx(np.mean([2.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
    with pytest.raises(ValueError, match="scores"):
        interquartile_mean([1.0, math.nan])


def test_stratified_bootstrap_resamples_runs_within_each_task():
    """Rows [[0, 10], [10, 0]]: resampling each column on its own reaches a mean of 0 and of 10
    (each with probability 1/16, above the 2.5 % tails); resampling whole rows would give 5 always."""
    table = np.array([[0.0, 10.0], [10.0, 0.0]])
    got = stratified_bootstrap_interval(table, np.mean, reps=4000, seed=1)
    assert (got.point, got.low, got.high) == (5.0, 0.0, 10.0) and got.reps == 4000
    # the mean's resampled distribution matches the exact one over the 16 equally likely resamples
    values = []
    for a in range(2):
        for b in range(2):
            for c in range(2):
                for d in range(2):
                    values.append(np.mean([table[a, 0], table[b, 0], table[c, 1], table[d, 1]]))
    exact = np.percentile(values, [25.0, 75.0])
    boot = stratified_bootstrap_interval(table, np.mean, reps=20_000, confidence=0.5, seed=2)
    assert (boot.low, boot.high) == pytest.approx(tuple(exact), abs=1e-12)


def test_stratified_bootstrap_with_one_run_per_task_is_the_table_itself():
    table = np.array([[1.0, 2.0, 3.0, 4.0]])
    got = stratified_bootstrap_interval(table, reps=50)
    assert got.point == got.low == got.high == interquartile_mean(table)
    assert stratified_bootstrap_interval(table * 2.0, seed=3).as_dict()["point"] == 2.0 * got.point


def test_stratified_bootstrap_refuses_what_it_cannot_resample():
    for bad in (np.ones(4), np.ones((0, 3)), np.array([[1.0, math.nan]])):
        with pytest.raises(ValueError, match="scores"):
            stratified_bootstrap_interval(bad)
    with pytest.raises(ValueError, match="reps"):
        stratified_bootstrap_interval(np.ones((2, 2)), reps=0)
    with pytest.raises(ValueError, match="confidence"):
        stratified_bootstrap_interval(np.ones((2, 2)), confidence=1.0)
