"""By-hand tests of asym_perturb's pure metric functions (:mod:`icml26.papers.asym_perturb.analysis`).

Each figure in a check comes from one of these functions; each test writes the expected value out
by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.papers.asym_perturb.analysis import (
    half_gaps,
    iterations_to,
    quantile_bands,
    speedup,
    summarize,
)


def test_iterations_to_and_speedup_by_hand():
    curves = np.array([[1.0, 1e-3, 1e-7, 1e-9], [1.0, 0.5, 0.4, 0.3]])
    # row 0 first reaches ≤ 1e-6 at t = 2; row 1 never: T + 1 = 4
    assert iterations_to(curves, 1e-6).tolist() == [2, 4]
    assert speedup([400.0, 300.0], 100.0) == 3.0
    # T = 3000: a side that never reached counts as 3001; both sides unreached: no ratio (NaN)
    assert speedup([3001.0], 1500.0, unreached=3001) == pytest.approx(3001 / 1500)
    assert speedup([1500.0, 3001.0], 3001.0, unreached=3001) == pytest.approx(1500 / 3001)
    assert math.isnan(speedup([3001.0, 3001.0], 3001.0, unreached=3001))
    assert speedup([3001.0], 3001.0) == 1.0  # without `unreached` the plain ratio


def test_summarize_by_hand():
    # two seeds, T = 29: a geometric run that halves every step from 1e-3, and a flat one
    geometric = 1e-3 * 0.5 ** np.arange(30)
    flat = np.full(30, 0.02)
    stats = summarize(np.stack([geometric, flat]), evaluations_per_iteration=2)
    assert stats["frac_below_1e-8"] == 0.5                 # 1e-3 · 2^-29 ≈ 1.9e-12 < 1e-8; 0.02 is not
    # iterations to 1e-6: 1e-3·2^-t ≤ 1e-6 ⇔ t ≥ log2(1000) = 9.97 → 10; flat never → 30; median 20
    assert stats["median_iters_to_1e-6"] == 20.0 and stats["median_grad_evals_to_1e-6"] == 40.0
    assert stats["frac_reaching_1e-6"] == 0.5
    assert stats["median_final_nashconv"] == pytest.approx((geometric[-1] + 0.02) / 2)
    # NashConv(29)/NashConv(14): 2^-15 for the geometric run, 1 for the flat one → median (2^-15 + 1)/2
    assert stats["median_final_over_half"] == pytest.approx((0.5 ** 15 + 1) / 2, rel=1e-12)
    # only the geometric run has a tail (≥ 10 points ≤ 1e-3): a perfect line with rate 1/2
    assert stats["frac_with_tail"] == 0.5
    assert stats["median_tail_r2"] == pytest.approx(1.0) and stats["median_tail_rate"] == pytest.approx(0.5)


def test_half_gaps_and_quantile_bands_by_hand():
    values = np.array([0.0, 0.5])
    halves = half_gaps(values, best_y_value=np.array([1e-9, 0.6]), best_x_value=np.array([-0.2, 0.5 - 1e-12]))
    # x-gaps 1e-9, 0.1; y-gaps 0.2, 1e-12
    assert halves["frac_x_half_below_1e-8"] == 0.5 and halves["frac_y_half_below_1e-8"] == 0.5
    assert halves["median_final_x_gap"] == pytest.approx((1e-9 + 0.1) / 2)
    curves = np.array([[4.0, 2.0, 1.0], [8.0, 4.0, 0.0], [0.0, 6.0, 3.0], [4.0, 8.0, 2.0]])
    x, lo, mid, hi = quantile_bands(curves, points=3)
    assert x.tolist() == [0, 1, 2]
    # column 1 sorted: 2, 4, 6, 8 → quartiles 3.5, 5, 6.5 (linear interpolation); 0 is clipped to 1e-16
    assert (lo[1], mid[1], hi[1]) == (3.5, 5.0, 6.5)
    assert mid[2] == 1.5 and lo[0] == pytest.approx(3.0)


def test_pick_setting_fixed_mu_seconds_by_hand():
    from icml26.papers.asym_perturb.analysis import fixed_mu_per_game, pick_setting, seconds_to, threshold_summary

    # medians of iterations: 30, 20, 20 -> tie between 1 and 2, broken by final medians 1e-3 > 1e-9
    iters = np.array([[10, 30, 50], [20, 20, 99], [5, 20, 21]])
    finals = np.array([[1e-9] * 3, [1e-3, 1e-3, 1.0], [1e-9, 1e-9, 1e-9]])
    assert pick_setting(iters, finals) == 2
    assert pick_setting(iters[:2], finals[:2]) == 1
    assert pick_setting(np.array([[4, 4], [4, 4]]), np.zeros((2, 2))) == 0  # full tie: the first
    with pytest.raises(ValueError, match="K, G"):
        pick_setting(np.ones(3), np.ones(3))
    np.testing.assert_allclose(fixed_mu_per_game([0.4, np.inf, 0.0], [0.1, np.inf, 5.0], 0.5, 1.0),
                               [0.05, 1.0, 1e-4])
    s = threshold_summary(np.array([0.1, 0.5, np.inf]), np.array([0.4, 0.2, 0.6]))
    assert s["median_mu_bar_x"] == 0.5 and s["min_mu_bar_x"] == 0.1 and s["max_finite_mu_bar_x"] == 0.5
    assert s["frac_infinite_mu_bar_x"] == pytest.approx(1 / 3)
    assert s["median_mu_bar_pair"] == pytest.approx(0.2) and s["frac_pair_above_0.3"] == pytest.approx(1 / 3)
    assert seconds_to(250, 10.0, 1000) == 2.5 and math.isnan(seconds_to(1001, 10.0, 1000))
