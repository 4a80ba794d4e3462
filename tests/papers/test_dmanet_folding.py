"""DMANet on a series where aliasing hurts (issue #38): the folding tones, the time-axis Nyquist arm,
the folding further run, and the units needed to resolve a ratio.

Numbers from outside the code: the alias identity cos(2 pi (1/s - f) S n + phi) = cos(2 pi f S n - phi)
for every S that s divides (trigonometry), FFT bins computed by hand (f * N), Student-t quantiles
t_{0.975,3} = 3.182446, t_{0.975,4} = 2.776445 (tables), and the harness's own n_to_resolve.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from icml26.papers.dmanet import (
    DMANet,
    alias_frequency,
    cutoff_bin,
    filtered_downsample,
    folding_tones,
    nyquist_bin,
    standardized_splits,
)
from icml26.papers.dmanet.analysis import ridge_aliasing_check, units_to_exclude


def _pure(fast_scale: float, fold_strides=(8,), n: int = 768) -> np.ndarray:
    """Folding tones with (nearly) constant envelopes and no noise: one channel, ``(n,)``."""
    return folding_tones(n, channels=1, fast_scale=fast_scale, fold_strides=fold_strides, noise=0.0,
                         slow_coherence=1e12, fast_coherence=1e12, rng=np.random.default_rng(3))[:, 0]


def test_alias_frequency_by_hand():
    # f_s = 1/48; the stride-8 fast tone 1/8 - 1/48 = 5/48: 5/48 * 8 = 5/6 -> |5/6 - 1| = 1/6 = 8/48
    assert alias_frequency(5 / 48, 8) == pytest.approx(1 / 6)
    assert alias_frequency(1 / 48, 8) == pytest.approx(1 / 6)
    # the stride-2 tone 23/48 lands on 2/48 at stride 2 and on 4/48 at stride 4 (= f_s S both times)
    assert alias_frequency(23 / 48, 2) == pytest.approx(2 / 48)
    assert alias_frequency(23 / 48, 4) == pytest.approx(4 / 48)
    # below the new Nyquist limit nothing folds: 5/48 * 4 = 5/12 < 1/2
    assert alias_frequency(5 / 48, 4) == pytest.approx(5 / 12)


@pytest.mark.parametrize("s,big_s", [(2, 2), (2, 8), (4, 4), (4, 8), (8, 8)])
def test_fast_tone_folds_exactly_onto_the_slow_tone_with_the_conjugate_phase(s, big_s):
    """cos(2 pi (1/s - f) t + phi) sampled at t = S n (s divides S) is cos(2 pi f S n - phi): the identity the
    generator is built on (module docstring of folding.py)."""
    f, phi, n = 1 / 48, 0.7, np.arange(64)
    fast_strided = np.cos(2 * np.pi * (1 / s - f) * big_s * n + phi)
    np.testing.assert_allclose(fast_strided, np.cos(2 * np.pi * f * big_s * n - phi), atol=1e-9)


def test_subsampling_maps_the_fast_tone_onto_the_slow_bin_and_the_filter_removes_it():
    """N = 768, f_s = 1/48 (bin 16 of 768), fast tone 5/48 (bin 80). After x[::8] (96 samples) the slow tone
    sits at bin 16 * 8 * 96 / 768 = 16 and so does the folded fast tone (96 - 80 = 16); filter+stride keeps the
    slow tone and removes the fast one."""
    slow = _pure(0.0)
    fast = _pure(1.0) - slow  # same draws: the slow envelope comes first in both
    full = np.abs(np.fft.rfft(fast))
    assert int(np.argmax(full)) == 80 and int(np.argmax(np.abs(np.fft.rfft(slow)))) == 16
    for part in (slow, fast):
        spec = np.abs(np.fft.rfft(part[::8])) ** 2
        assert int(np.argmax(spec)) == 16
        assert spec[16] / spec.sum() > 0.999
    # filter at the new Nyquist bin, then stride: the fast tone is gone, the slow one is untouched
    fast_f = filtered_downsample(fast, 8)
    slow_f = filtered_downsample(slow, 8)
    assert np.sum(fast_f ** 2) < 1e-6 * np.sum(fast[::8] ** 2)
    np.testing.assert_allclose(slow_f, slow[::8], atol=1e-3 * np.abs(slow).max())
    # the stride-8 fast tone does not fold at stride 4 (5/48 < 1/8): x[::4] keeps it at its own bin 80 * 4 / 4
    spec4 = np.abs(np.fft.rfft(fast[::4])) ** 2
    assert int(np.argmax(spec4)) == 80


def test_fast_tones_fold_level_by_level():
    """fold_strides (2, 4, 8): the tone of stride s folds from stride s on, so slicing leaks more at every level:
    leakage at stride 2 is one fast tone's power, at 4 two, at 8 three (equal expected powers)."""
    x = folding_tones(20000, channels=4, noise=0.0, fast_scale=0.5, rng=np.random.default_rng(0))
    slow = folding_tones(20000, channels=4, noise=0.0, fast_scale=0.0, rng=np.random.default_rng(0))
    fast_power = np.mean((x - slow) ** 2)
    # each fast tone has power fast_scale^2 / 2 = 0.125 in expectation, the slow tone 0.5
    assert fast_power == pytest.approx(3 * 0.125, rel=0.25)
    assert np.mean(slow ** 2) == pytest.approx(0.5, rel=0.3)
    shares = []
    for stride in (2, 4, 8):
        naive = x[::stride]
        filtered = filtered_downsample(np.ascontiguousarray(x.T), stride).T
        shares.append(np.sum((naive - filtered) ** 2) / np.sum(naive ** 2))
    assert shares[0] < shares[1] < shares[2]
    assert shares[2] > 0.3


def test_folding_envelope_is_stationary_with_unit_power():
    """E[x^2] = E|A|^2 / 2 = 1/2 for the slow tone alone (complex AR(1) with E|A|^2 = 1)."""
    x = folding_tones(100000, channels=1, fast_scale=0.0, noise=0.0, slow_coherence=50.0,
                      rng=np.random.default_rng(1))[:, 0]
    assert np.mean(x ** 2) == pytest.approx(0.5, rel=0.05)


def test_folding_tones_validates_its_arguments():
    with pytest.raises(ValueError, match="slow_period"):
        folding_tones(100, slow_period=16.0)  # not above 2 * 8
    with pytest.raises(ValueError, match="fold_strides"):
        folding_tones(100, fold_strides=(2, 2))
    with pytest.raises(TypeError, match="rng"):
        folding_tones(100, rng=1)
    a = folding_tones(300, rng=np.random.default_rng(5))
    b = folding_tones(300, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (300, 3) and np.isfinite(a).all()


def test_aliasing_costs_a_strided_ridge_on_folding_tones_far_more_than_without_the_fast_band():
    """The model-free premise: with the fast tones folded onto the slow one, the naive stride-8 ridge loses most
    of the slow tone (its MSE nears the variance, 1) while the filtered one keeps it; without the fast band the
    two differ only through the weak white noise and the window's last samples (a small gap)."""
    def check(fast_scale):
        x = folding_tones(4000, fast_scale=fast_scale, rng=np.random.default_rng(7))
        d = standardized_splits(x, 96)
        return ridge_aliasing_check(d.train, d.val, d.test, 96, 48, 3)

    with_fast, without = check(0.5), check(0.0)
    assert with_fast.ratios[-1] < 0.8 and with_fast.naive_mse[-1] > 0.8
    gap = with_fast.naive_mse[-1] - with_fast.filtered_mse[-1]
    assert gap > 3 * (without.naive_mse[-1] - without.filtered_mse[-1]) > 0


def test_units_to_exclude_by_hand():
    # 1.028, 1.100, 1.168: mean 1.09867, sd 0.07003 (ddof 1), distance to 1 = 0.09867
    values = [1.028, 1.100, 1.168]
    sd = float(np.std(values, ddof=1))
    assert 3.182446 * sd / math.sqrt(4) > 0.09867 > 2.776445 * sd / math.sqrt(5)
    assert units_to_exclude(values) == 5
    assert units_to_exclude([0.9, 1.1]) is None  # the mean is on the reference
    with pytest.raises(ValueError, match="values"):
        units_to_exclude([1.0])


@pytest.mark.parametrize("seed", range(5))
def test_units_to_exclude_agrees_with_the_harness(seed):
    from icml26.aggregate import n_to_resolve

    v = 1.0 + np.random.default_rng(seed).normal(0.05, 0.08, size=4)
    assert units_to_exclude(v) == n_to_resolve("<=", 1.0, float(v.mean()), float(v.std(ddof=1)))


def test_nyquist_arm_cuts_at_the_new_nyquist_bin_on_the_time_axis():
    from icml26.papers.dmanet.config import Config
    from icml26.papers.dmanet.sections import build_model

    config = Config.tiny()
    nyq = build_model("dmanet_nyquist", 96, 16, 3, config, filter_axis="time")
    authors = build_model("dmanet", 96, 16, 3, config, filter_axis="time")
    assert isinstance(nyq, DMANet) and nyq.filter_axis == "time"
    lengths = [96, 48, 24]  # cascaded levels on the time axis
    for level, n in zip(nyq.encoders[0].levels, lengths):
        assert cutoff_bin(n, level.ratio) == nyquist_bin(n, 2) == n // 4
    # the authors' rho/2 with channels 3 -> 1 -> 1 -> 1: rho = 1/6, 1/2, 1/2, stricter than Nyquist
    assert [lv.ratio for lv in authors.encoders[0].levels] == pytest.approx([1 / 6, 1 / 2, 1 / 2])
    assert [cutoff_bin(n, lv.ratio) for n, lv in zip(lengths, authors.encoders[0].levels)] == [4, 6, 3]


def test_config_selects_the_synthetic_set_and_the_cutoffs_from_datasets():
    from icml26.papers.dmanet.config import Config
    from icml26.runner import build_config

    c = build_config("dmanet", "quick", {"datasets": "folding"})
    assert (c.datasets, c.synthetic, c.time_cutoffs) == (("folding",), "folding", ("authors", "nyquist"))
    assert (Config.quick().synthetic, Config.quick().time_cutoffs) == ("chaotic", ("authors",))
    assert Config(datasets=("taylor", "folding", "chaotic")).synthetic == "folding"  # the first synthetic one
    # properties, not fields: the committed quick run's recorded config is unchanged
    assert {"synthetic", "time_cutoffs"}.isdisjoint(f.name for f in dataclasses.fields(Config))
    with pytest.raises(ValueError, match="time_family_seeds > 0 needs the chaotic or folding"):
        Config(datasets=("taylor",))


def test_folding_further_run_measures_only_its_checks(tmp_path):
    """The folding run (tiny setting, one seed): the folding checks and the leakage diagnostics are measured
    and kept, the aliasing-Lorenz and Taylor checks are dropped (seed file and aggregate), the time family
    carries the Nyquist arm, and leakage on the folding series grows far past the Lorenz bars."""
    from icml26.papers.dmanet.claims import CHECKS
    from icml26.papers.dmanet.folding_run import main

    path = main(["--out", str(tmp_path), "--seeds", "0", "--setting", "tiny"])
    data = json.loads(path.read_text())
    seed = json.loads((tmp_path / "dmanet" / "seeds" / "0" / "result.json").read_text())
    want = [i for i in CHECKS if i.endswith("_folding") or i.startswith(("filter_leakage", "naive_leakage"))]
    assert [c["id"] for c in data["claim"]["checks"]] == want
    assert [c["id"] for c in seed["claim"]["checks"]] == want
    assert all(c["value"] is not None for c in data["claim"]["checks"])
    assert "no_filter_ratio_chaotic" in data["notes"][1]
    assert data["claim"]["status"] == "inconclusive"  # no headline check is measured on this series
    family = data["metrics"]["time_family"]
    assert {"dmanet_folding_mse", "no_filter_folding_mse", "nyquist_folding_mse", "nyquist_vs_authors"} <= set(family)
    # the paired ratio is the geometric mean over the family's inner seeds of the per-seed curves
    curve = data["curves"]["time_family"]["series"]
    nyq, base = np.array(curve["dmanet, Nyquist cutoff (time axis)"]), np.array(curve["no filter (time axis)"])
    assert family["nyquist_ratio"] == pytest.approx(float(np.exp(np.mean(np.log(nyq / base)))))
    assert family["nyquist_folding_mse"] == pytest.approx(float(nyq.mean()))
    leak = {c["id"]: c["value"] for c in data["claim"]["checks"]}
    assert leak["naive_leakage_l3"] > 0.3 and leak["filter_leakage"] < 1e-20
