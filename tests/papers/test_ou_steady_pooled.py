"""ou_steady: the crossover sample size, the bootstrap over systems and the per-system curve."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from icml26.contract import RunContext
from icml26.papers.ou_steady import experiment
from icml26.papers.ou_steady.analysis import crossover_size, system_bootstrap
from icml26.papers.ou_steady.config import Config
from icml26.papers.ou_steady.pooled import POOLED_CHECKS, per_system_table, pooled_bootstrap


# --------------------------------------------------------------------------- crossover
def test_crossover_interpolates_the_log_gap_by_hand():
    # method 0.8 vs baseline 0.4 at N = 1e3 (log gap ln 2), 0.1 vs 0.4 at N = 1e4 (log gap -ln 4):
    # the gap crosses zero a third of the way in log N, at 10^(3 + 1/3)
    sizes = [100, 1_000, 10_000, 100_000]
    n = crossover_size(sizes, [0.9, 0.8, 0.1, 0.01], [0.7, 0.4, 0.4, 0.4])
    assert n == pytest.approx(10 ** (3 + 1 / 3), rel=1e-12)
    # a method that dips below and comes back above crosses at its last entry below for good
    n = crossover_size(sizes, [0.3, 0.8, 0.4, 0.01], [0.4, 0.4, 0.4, 0.4])
    assert n == pytest.approx(1e4, rel=1e-12)  # equal at 1e4 (gap 0), so the crossing is the grid point itself
    # below everywhere: the grid's first size; never below at the end: NaN
    assert crossover_size(sizes, [0.1] * 4, [0.5] * 4) == 100.0
    assert math.isnan(crossover_size(sizes, [0.1, 0.1, 0.1, 0.6], [0.5] * 4))
    assert math.isnan(crossover_size(sizes, [0.1, np.nan, 0.1, 0.1], [0.5] * 4))
    with pytest.raises(ValueError, match="increasing"):
        crossover_size([10, 5], [1, 1], [1, 1])


# --------------------------------------------------------------------------- bootstrap
def test_bootstrap_of_a_median_of_three_matches_the_exact_resampling_law():
    # resampling {1, 2, 3} three times: P(median = 1) = P(median = 3) = 7/27, P(2) = 13/27, so the 2.5 % and
    # 97.5 % percentiles are 1 and 3, and the 30 % and 70 % percentiles are both 2
    table = np.array([[1.0], [2.0], [3.0]])
    median = lambda t: float(np.median(t[:, 0]))  # noqa: E731
    assert system_bootstrap(table, median, reps=4000) == (2.0, 1.0, 3.0)
    assert system_bootstrap(table, median, reps=4000, confidence=0.4) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="reps"):
        system_bootstrap(table, median, reps=0)


def test_bootstrap_keeps_each_systems_columns_paired():
    # baseline = 3 x method on every system: the ratio of medians is 3 in every resample (paired rows);
    # resampling the columns independently would spread it
    rng = np.random.default_rng(0)
    method = rng.lognormal(size=50)
    table = np.stack([3 * method, method], axis=1)
    ratio = lambda t: float(np.median(t[:, 0]) / np.median(t[:, 1]))  # noqa: E731
    point, low, high = system_bootstrap(table, ratio, reps=500)
    assert point == pytest.approx(3.0) and low == pytest.approx(3.0) and high == pytest.approx(3.0)


def _seed_result(seed, values):
    series = {name: list(values[name]) for name in values}
    return {"seed": seed, "curves": {"per_system_at_bar_n": {"x": list(range(len(next(iter(values.values()))))),
                                                            "series": series}}}


def test_pooled_bootstrap_pools_the_seeds_systems_and_reads_each_bar():
    names = {n for cols in POOLED_CHECKS.values() for n in cols}
    base = {n: [0.2, 0.2] for n in names}
    # the refined recursive errors of two seeds: 0.01, 0.02 and 0.03, 0.04 (a NaN entry is left out)
    first = _seed_result(0, {**base, "recursive_refined": [0.01, 0.02]})
    second = _seed_result(1, {**base, "recursive_refined": [0.03, 0.04], "heldout_cov:lsq_known_support": [None, 0.05]})
    table = per_system_table([first, second], ["recursive_refined", "heldout_cov:lsq_known_support"])
    assert table.shape == (4, 2) and np.isnan(table[2, 1])
    out = pooled_bootstrap([first, second], reps=2000)
    refined = out["recursive_refined_at_bar_n"]
    assert refined["systems"] == 4 and refined["value"] == pytest.approx(0.025)
    assert 0.01 <= refined["ci"][0] <= refined["ci"][1] <= 0.04
    assert refined["verdict"] == "held"  # every resampled median <= 0.04 < 0.05
    # held-out ratio: baseline 0.2 over the lsq median of {0.2, 0.2, 0.05} (the NaN left out) = 0.2 / 0.2
    assert out["heldout_cov_ratio"]["value"] == pytest.approx(1.0) and out["heldout_cov_ratio"]["verdict"] != "held"
    assert out["lsq_at_bar_n"]["verdict"] == "not held"  # 0.2 on every system against < 0.05
    with pytest.raises(ValueError, match="per_system_at_bar_n"):
        pooled_bootstrap([{"seed": 3, "curves": {}}])


# --------------------------------------------------------------------------- the run's new outputs
def test_tiny_run_reports_crossovers_and_a_per_system_curve_that_matches_its_medians():
    config = Config.tiny()
    ctx = RunContext(seed=2, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    out = experiment.run(config, ctx)
    per_system = out.curves["per_system_at_bar_n"]
    assert list(per_system.x) == [2 * config.n_systems + i for i in range(config.n_systems)]
    tag = "N1e4"
    for arm in experiment.ARMS:  # the run's medians are the medians of the per-system curve
        assert np.median(per_system.series[arm]) == pytest.approx(out.metrics[arm][f"err_{tag}"], rel=1e-12)
    for arm, baseline in experiment.CROSSOVER.items():
        errs = [out.metrics[a][f"err_N1e{k}"] for a in (arm, baseline) for k in (3, 4)]
        expected = crossover_size([1_000, 10_000], errs[:2], errs[2:])
        got = out.metrics[arm].get("crossover_log10N")
        assert (got is None and math.isnan(expected)) or got == pytest.approx(math.log10(expected), rel=1e-12)


def test_sizes_between_decades_leave_the_decades_draws_unchanged():
    ctx = RunContext(seed=0, device="cpu", setting="tiny", threads=1, streams=experiment.STREAMS)
    coarse, fine = (1_000, 10_000), (1_000, 2_000, 5_000, 10_000)
    for n in coarse:
        a = experiment._sample_rng(ctx, 3, n, coarse).random(3)
        assert np.array_equal(a, experiment._sample_rng(ctx, 3, n, fine).random(3))
    draws = [experiment._sample_rng(ctx, 3, n, fine).random(3) for n in fine]
    assert len({d.tobytes() for d in draws}) == len(fine)


def test_slope_sizes_must_be_sizes_of_the_grid():
    with pytest.raises(ValueError, match="slope_sizes"):
        dataclasses.replace(Config.tiny(), slope_sizes=(1_000, 3_000))
    assert set(Config.quick().slope_sizes) <= set(Config.quick().sample_sizes)
    # the default grid holds sizes between 10^3 and 10^4, where the crossover is located
    assert any(1_000 < n < 10_000 for n in Config.quick().sample_sizes)
