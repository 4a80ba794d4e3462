"""ou_steady: the analysis functions (metrics and check values from raw error arrays), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.ou_steady.analysis import (
    arm_metrics,
    error_ratio,
    loglog_slope,
    median_errors,
    nullity_summary,
    oracle_choice,
    relative_error,
    sample_size_tag,
)

def test_loglog_slope_by_hand():
    # error = 3 N^-1/2 exactly: slope -1/2; error = 2 N^-1: slope -1
    sizes = [100, 10_000, 1_000_000]
    assert loglog_slope(sizes, [3 / 10, 3 / 100, 3 / 1000]) == pytest.approx(-0.5, abs=1e-12)
    assert loglog_slope([10, 100], [0.2, 0.02]) == pytest.approx(-1.0, abs=1e-12)
    # two points: slope = (ln 0.5 - ln 1) / (ln 40 - ln 10) = -ln 2 / ln 4 = -1/2
    assert loglog_slope([10, 40], [1.0, 0.5]) == pytest.approx(-0.5, abs=1e-12)
    assert np.isnan(loglog_slope([10, 100], [0.0, 1.0]))
    with pytest.raises(ValueError, match="sizes"):
        loglog_slope([10], [1.0])


def test_median_ratio_and_relative_error_by_hand():
    errors = np.array([[1.0, 5.0, 3.0], [2.0, 4.0, 10.0]])
    assert median_errors(errors).tolist() == [3.0, 4.0]
    assert median_errors(np.array([1.0, 2.0, 3.0, 10.0])) == 2.5
    assert error_ratio(0.6, 0.2) == pytest.approx(3.0)
    assert error_ratio(1.0, 0.0) == float("inf") and np.isnan(error_ratio(0.0, 0.0))
    # ‖(3, 4) − (0, 0)‖ / ‖(0, 5)‖ = 5 / 5
    assert relative_error(np.array([3.0, 4.0]), np.array([0.0, 5.0])) == pytest.approx(np.sqrt(9 + 1) / 5)
    assert relative_error(np.eye(2), 2 * np.eye(2)) == pytest.approx(0.5)
    assert sample_size_tag(100_000) == "N1e5" and sample_size_tag(1_000) == "N1e3"


def test_arm_metrics_by_hand():
    # exact row, then N = 100 and N = 10000 with medians 0.1 and 0.01: slope ln(0.1)/ln(100) = -1/2
    errors = np.array([[1e-12, 3e-12, 2e-12], [0.1, 0.2, 0.05], [0.01, 0.03, 0.005]])
    row = arm_metrics(errors, [100, 10_000], np.array([0.1, np.nan, 0.3]), np.array([0.2, np.nan, 0.4]))
    assert row["err_exact"] == 2e-12 and row["err_N1e2"] == 0.1 and row["err_N1e4"] == 0.01
    assert row["slope"] == pytest.approx(-0.5, abs=1e-12)
    assert row["heldout_mean_err"] == pytest.approx(0.2) and row["heldout_cov_err"] == pytest.approx(0.3)
    assert row["heldout_unstable"] == 1.0


def test_nullity_summary_oracle_choice_and_slope_window_by_hand():
    assert nullity_summary([1, 3, 2, 1]) == {"min": 1.0, "median": 1.5, "max": 3.0}
    with pytest.raises(ValueError):
        nullity_summary([])
    assert oracle_choice([0.3, 0.1, 0.2, 0.1]) == 1
    assert oracle_choice([np.nan, 0.5, np.nan]) == 1
    assert oracle_choice([np.nan, np.nan]) == 0
    # errors saturate at N = 100 (0.12), then fall as N^-1/2 from N = 1000: the slope over N >= 1000 is -1/2,
    # and the saturated point flattens the slope over every N
    errors = np.array([[1e-12], [0.12], [0.1], [0.1 / np.sqrt(10)], [0.01]])
    row = arm_metrics(errors, [100, 1_000, 10_000, 100_000], np.array([0.1]), np.array([0.2]),
                      slope_sizes=(1_000, 10_000, 100_000))
    assert row["slope"] == pytest.approx(-0.5, abs=1e-12)
    assert arm_metrics(errors, [100, 1_000, 10_000, 100_000], np.array([0.1]), np.array([0.2]))["slope"] > -0.5
