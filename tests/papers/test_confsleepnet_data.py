"""ConfSleepNet's data and scoring: metrics against scikit-learn's kappa and F1, the synthetic PSG and its
corruption, EDF + hypnogram loading through mne (a file written by ``mne.export``), and the
reproduction's analysis by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.ndimage import uniform_filter1d

from icml26.papers.confsleepnet import (
    TRANSITIONS,
    PSGData,
    accuracy_coverage_curve,
    cohen_kappa,
    confusion_matrix,
    corrupt_eog,
    macro_f1,
    normalize_recordings,
    sample_hypnogram,
    selective_accuracy,
    synthetic_psg,
)
from icml26.papers.confsleepnet.analysis import (
    auroc_ceiling,
    claim_values,
    detection_scores,
    mean_over_seeds,
    score_epochs,
)


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------
def test_kappa_f1_and_confusion_match_scikit_learn():
    from sklearn.metrics import cohen_kappa_score, confusion_matrix as sk_confusion, f1_score

    rng = np.random.default_rng(11)
    for missing in (None, 3):
        truth = rng.integers(0, 5, 500)
        pred = np.where(rng.random(500) < 0.6, truth, rng.integers(0, 5, 500))
        if missing is not None:
            truth[truth == missing] = 2
            pred[pred == missing] = 1
        assert math.isclose(cohen_kappa(truth, pred), cohen_kappa_score(truth, pred), rel_tol=1e-12)
        assert math.isclose(macro_f1(truth, pred), f1_score(truth, pred, average="macro"), rel_tol=1e-12)
        assert np.array_equal(confusion_matrix(truth, pred, 5), sk_confusion(truth, pred, labels=range(5)))


def test_selective_accuracy_by_hand():
    correct = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=bool)
    u = np.array([0.1, 0.9, 0.2, 0.3, 0.8, 0.4, 0.7, 0.5, 0.6, 0.05])
    # sorted by u: correct = 1,1,1,1,1,1,1,0,0,0 -> 80 % coverage keeps 8 epochs, 7 right
    assert selective_accuracy(correct, u, 0.8) == 7 / 8
    assert accuracy_coverage_curve(correct, u, [0.5, 1.0]) == [1.0, 0.7]


# ---------------------------------------------------------------------------
# Synthetic PSG and corruption
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def psg() -> PSGData:
    return synthetic_psg(4, 120, rng=np.random.default_rng(12), sampling_rate=50.0)


def _band_power(x: np.ndarray, fs: float, lo: float, hi: float) -> np.ndarray:
    spec = np.abs(np.fft.rfft(x, axis=-1)) ** 2
    f = np.fft.rfftfreq(x.shape[-1], 1 / fs)
    return spec[..., (f >= lo) & (f <= hi)].sum(-1) / spec.sum(-1)


def test_synthetic_psg_is_deterministic_and_stage_dependent(psg):
    again = synthetic_psg(4, 120, rng=np.random.default_rng(12), sampling_rate=50.0)
    assert np.array_equal(psg.signals, again.signals) and np.array_equal(psg.stages, again.stages)
    assert psg.signals.shape == (4, 120, 3, 1500) and psg.signals.dtype == np.float32
    big = synthetic_psg(2, 400, rng=np.random.default_rng(13), sampling_rate=50.0, subject_variability=0.0)
    x, s, fs = big.signals, big.stages, big.sampling_rate
    eeg, eog, emg = x[:, :, 0], x[:, :, 1], x[:, :, 2]
    by = lambda values, stage: float(values[s == stage].mean())  # noqa: E731
    alpha, delta = _band_power(eeg, fs, 8, 12), _band_power(eeg, fs, 0.5, 2)
    assert by(alpha, 0) > 2 * max(by(alpha, k) for k in (2, 3))       # alpha in wake
    assert by(delta, 3) > max(by(delta, k) for k in (0, 1, 4))         # delta in N3
    sigma = _band_power(eeg, fs, 12, 15)
    assert by(sigma, 2) > by(sigma, 3) and by(sigma, 2) > by(sigma, 1)  # spindles in N2
    rms = np.sqrt((emg ** 2).mean(-1))
    tone = [by(rms, k) for k in range(5)]
    assert tone[0] > tone[1] > tone[2] > tone[4] and tone[3] > tone[4]  # atonia in REM
    smooth = uniform_filter1d(eog, 10, axis=-1)                            # rapid eye movements: the
    eye = np.abs(smooth[..., 10:] - smooth[..., :-10]).max(-1)             # largest 0.2-s gaze shift
    assert by(eye, 4) > 2 * by(eye, 2)


def test_hypnogram_follows_the_transition_matrix():
    stages = sample_hypnogram(60_000, np.random.default_rng(14))
    counts = np.zeros((5, 5))
    np.add.at(counts, (stages[:-1], stages[1:]), 1)
    empirical = counts / counts.sum(1, keepdims=True)
    np.testing.assert_allclose(empirical, np.asarray(TRANSITIONS), atol=0.015)
    assert stages[0] == 0


def test_corrupt_eog_changes_exactly_the_chosen_epochs(psg):
    bad, info = corrupt_eog(psg, 0.4, np.random.default_rng(15))
    assert info.mask.sum(1).tolist() == [48] * 4
    assert np.array_equal(bad.signals[:, :, [0, 2]], psg.signals[:, :, [0, 2]])  # EEG and EMG untouched
    assert np.array_equal(bad.signals[~info.mask], psg.signals[~info.mask])
    for s, i in zip(*np.nonzero(info.mask)):
        mode = ("shift", "pop", "swap")[info.mode[s, i]]
        if mode == "pop":
            assert np.abs(bad.signals[s, i, 1] - psg.signals[s, i, 1]).max() > 3 * psg.signals[s, :, 1].std()
            continue
        sources = [j for j in range(120) if np.array_equal(bad.signals[s, i, 1], psg.signals[s, j, 1])]
        assert len(sources) == 1 and sources[0] != i
        j = sources[0]
        assert info.source_stage[s, i] == psg.stages[s, j]
        if mode == "shift":
            assert min((j - i) % 120, (i - j) % 120) <= 3
        else:
            assert psg.stages[s, j] != psg.stages[s, i]
    conflicting = info.conflicting(psg.stages)
    assert conflicting.sum() < info.mask.sum() and not (conflicting & ~info.mask).any()


def test_normalize_recordings_is_robust_to_pops(psg):
    z = normalize_recordings(psg.signals)
    flat = z.transpose(0, 2, 1, 3).reshape(4, 3, -1)
    q25, med, q75 = np.percentile(flat, [25, 50, 75], axis=2)
    np.testing.assert_allclose(med, 0, atol=1e-5)
    np.testing.assert_allclose((q75 - q25) / 1.349, 1, rtol=1e-4)
    bad, info = corrupt_eog(psg, 0.2, np.random.default_rng(16), modes=("pop",))
    zb = normalize_recordings(bad.signals)
    assert np.array_equal(zb[:, :, [0, 2]], z[:, :, [0, 2]])
    inflation = bad.signals[:, :, 1].std() / psg.signals[:, :, 1].std()
    assert inflation > 1.05                          # pops inflate the plain std by 5-10 % here ...
    clean = ~info.mask                               # ... the robust scale moves less than half as much
    robust = zb[:, :, 1][clean].std() / z[:, :, 1][clean].std()
    assert abs(robust - 1) < 0.5 * (1 - 1 / inflation)


# ---------------------------------------------------------------------------
# EDF + hypnogram loading through mne
# ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Limited 1 annotation")  # the last stage runs past the end, on purpose
def test_load_edf_recording_with_a_separate_hypnogram(tmp_path):
    mne = pytest.importorskip("mne")
    pytest.importorskip("edfio")
    from icml26.papers.confsleepnet import load_edf_recording

    fs, seconds = 100, 330
    rng = np.random.default_rng(19)
    data = 20e-6 * rng.standard_normal((4, fs * seconds))
    names = ["EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal", "EMG submental"]
    raw = mne.io.RawArray(data, mne.create_info(names, fs, ["eeg", "eeg", "eog", "emg"]), verbose="error")
    psg = tmp_path / "SC4001E0-PSG.edf"
    mne.export.export_raw(psg, raw, fmt="edf", verbose="error")
    # R&K scoring as in Sleep-EDF: stage 4 merges into N3, "?" and movement are dropped,
    # and the last annotation runs past the end of the signal
    hyp = mne.Annotations(onset=[0, 60, 150, 180, 210, 240, 270, 300],
                          duration=[60, 90, 30, 30, 30, 30, 30, 120],
                          description=["Sleep stage W", "Sleep stage 2", "Sleep stage 4", "Sleep stage ?",
                                       "Sleep stage 3", "Movement time", "Sleep stage 1", "Sleep stage R"])
    hyp_path = tmp_path / "SC4001EC-Hypnogram.csv"
    hyp.save(hyp_path)
    rec = load_edf_recording(psg, hyp_path, channels=("EEG Fpz-Cz", "EOG horizontal", "EMG submental"))
    assert rec.stages.tolist() == [0, 0, 2, 2, 2, 3, 3, 1, 4]
    assert rec.onsets.tolist() == [0, 30, 60, 90, 120, 150, 210, 270, 300]
    assert rec.signals.shape == (9, 3, 3000) and rec.sampling_rate == 100.0
    # the samples are the file's, channel order as asked (EDF stores 16-bit integers)
    ref = data[[0, 2, 3], 210 * fs:240 * fs]
    np.testing.assert_allclose(rec.signals[6], ref, atol=np.abs(data).max() / 2 ** 14)
    # resampled on the way in, and annotations stored in the EDF+ file itself
    raw.set_annotations(hyp)
    embedded = tmp_path / "with-annotations.edf"
    mne.export.export_raw(embedded, raw, fmt="edf", verbose="error")
    rec50 = load_edf_recording(embedded, channels=["EMG submental"], sampling_rate=50)
    assert rec50.stages.tolist() == rec.stages.tolist() and rec50.signals.shape == (9, 1, 1500)
    with pytest.raises(ValueError, match="not in"):
        load_edf_recording(psg, hyp_path, channels=("EEG C3",))


# ---------------------------------------------------------------------------
# The reproduction's analysis, by hand
# ---------------------------------------------------------------------------
def test_score_epochs_by_hand():
    stages = np.array([0, 1, 2, 2, 1, 0])
    pred = np.array([0, 1, 2, 1, 1, 0])
    u = np.array([0.1, 0.2, 0.3, 0.9, 0.15, 0.05])
    corrupted = np.array([False, False, True, True, False, True])
    detectable = np.array([False, False, False, True, False, True])
    mode = np.array([-1, -1, 0, 1, -1, 0])  # shift, pop, -, shift
    s = score_epochs(stages, pred, u, 0.5, corrupted, detectable, mode, modes=("shift", "pop"))
    assert s.acc == 5 / 6
    # per class F1: class 0: 1, class 1: 2*2/(4+1+0) = 4/5, class 2: 2*1/(2+0+1) = 2/3
    assert s.mf1 == pytest.approx((1 + 4 / 5 + 2 / 3) / 3)
    assert s.selacc == 1.0  # the three least uncertain epochs are right
    # clean u = 0.1, 0.2, 0.15; corrupted 0.3 (beats 3), 0.9 (beats 3), 0.05 (beats 0): 6 / 9
    assert s.auroc == pytest.approx(6 / 9)
    assert s.auroc_detectable == pytest.approx(3 / 6)  # 0.9 and 0.05
    assert s.detection.detectable_share == pytest.approx(2 / 3)
    assert s.detection.ceiling == pytest.approx(0.5 + 1 / 3)
    # shift: 0.3 (undetectable), 0.05 (detectable) against the three clean epochs
    assert s.per_mode["shift"].auroc == pytest.approx(3 / 6) and s.per_mode["shift"].auroc_detectable == 0.0
    assert s.per_mode["pop"].auroc == 1.0 and s.per_mode["pop"].detectable_share == 1.0
    assert score_epochs(stages, pred, u, 1.0).auroc is None
    assert set(s.as_metrics("0.4")) == {
        "acc_0.4", "mf1_0.4", "kappa_0.4", "selacc_0.4",
        *(f"{name}{m}_0.4" for name in ("auroc", "auroc_detectable", "detectable_share", "auroc_ceiling")
          for m in ("", "_shift", "_pop"))}


def test_auroc_ceiling_is_reached_by_a_detector_perfect_on_detectable_and_blind_to_the_rest():
    rng = np.random.default_rng(0)
    n_clean, n_det, n_blind = 400, 90, 110
    # blind to the undetectable: their scores are drawn like the clean ones'; perfect on the rest
    clean, blind = rng.integers(0, 10, n_clean), rng.integers(0, 10, n_blind)
    u = np.concatenate([clean, blind, np.full(n_det, 100)])
    corrupted = np.r_[np.zeros(n_clean, bool), np.ones(n_blind + n_det, bool)]
    detectable = np.r_[np.zeros(n_clean + n_blind, bool), np.ones(n_det, bool)]
    d = detection_scores(u, corrupted, detectable)
    share = n_det / (n_det + n_blind)
    assert d.ceiling == auroc_ceiling(share) == 0.5 + share / 2
    assert d.auroc_detectable == 1.0
    # the blind part is at chance only in expectation: AUROC(blind vs clean) measured separately
    from sklearn.metrics import roc_auc_score
    blind_auc = roc_auc_score(np.r_[np.zeros(n_clean), np.ones(n_blind)], np.r_[clean, blind])
    assert d.auroc == pytest.approx(share + (1 - share) * blind_auc)
    assert abs(d.auroc - d.ceiling) < 0.05
    with pytest.raises(ValueError, match="detectable_share"):
        auroc_ceiling(1.5)


def test_mean_over_seeds_averages_a_metric_over_the_replicates_that_have_it():
    per_seed = [{"a": {"x": 1.0, "m": 0.2}}, {"a": {"x": 3.0}}, {"a": {"x": 5.0, "m": 0.6}}]
    assert mean_over_seeds(per_seed) == {"a": {"x": 3.0, "m": pytest.approx(0.4)}}


def test_claim_values_by_hand():
    def arm(acc0, acc4, auroc, selacc, mf1_0, mf1_4):
        return {"acc_0": acc0, "acc_0.4": acc4, "auroc_detectable_0.4": auroc, "selacc_0.4": selacc,
                "mf1_0": mf1_0, "mf1_0.4": mf1_4}

    per_seed = [{"conflict_aware": arm(0.90, 0.80, 0.70, 0.95, 0.6, 0.5),
                 "dempster_tmc": arm(0.91, 0.82, 0.60, 0.90, 0.6, 0.5),
                 "rcml_average": arm(0.85, 0.70, 0.50, 0.80, 0.5, 0.4),
                 "conflict_aware_eog5": arm(0.9, 0.8, 0.7, 0.9, 0.5, 0.5),
                 "conflict_aware_common": arm(0.9, 0.8, 0.88, 0.9, 0.6, 0.5),
                 "dempster_common": arm(0.9, 0.79, 0.75, 0.9, 0.6, 0.5),
                 "dempster_sets": arm(0.9, 0.81, 0.66, 0.9, 0.6, 0.5),
                 "dempster_sets_conflict": arm(0.9, 0.81, 0.73, 0.9, 0.6, 0.5)}] * 2
    v = claim_values(mean_over_seeds(per_seed), [0.0, 0.4])
    # the strongest Dempster variant per metric: plain Dempster's accuracy (0.82 > 0.81 > 0.79), Dempster-common's
    # AUROC (0.75 > 0.73 > 0.66 > 0.60); set-valued DS alone: its conflict score's 0.73
    assert v.corrupted_acc_vs_best_dempster == pytest.approx(0.80 - 0.82)
    assert v.auroc_detectable_vs_best_dempster == pytest.approx(0.70 - 0.75)
    assert v.auroc_detectable_vs_dempster_sets == pytest.approx(0.70 - 0.73)
    sets_best = [{**per_seed[0], "dempster_sets_conflict": arm(0.9, 0.83, 0.90, 0.9, 0.6, 0.5)}]
    v = claim_values(mean_over_seeds(sets_best), [0.0, 0.4])
    assert v.corrupted_acc_vs_best_dempster == pytest.approx(0.80 - 0.83)
    assert v.auroc_detectable_vs_best_dempster == pytest.approx(0.70 - 0.90)
    assert v.common_auroc_detectable_vs_dempster_common == pytest.approx(0.88 - 0.75)
    assert v.clean_acc_vs_dempster == pytest.approx(-0.01)
    assert v.corrupted_acc_vs_dempster == pytest.approx(-0.02)
    assert v.corrupted_acc_vs_rcml == pytest.approx(0.10)
    assert v.auroc_detectable == pytest.approx(0.70) and v.auroc_detectable_vs_dempster == pytest.approx(0.10)
    assert v.selective_acc_vs_dempster == pytest.approx(0.05)
    assert v.hybrid_vs_five_class_eog == pytest.approx(0.55 - 0.50)
    assert v.common_auroc_detectable_vs_dempster == pytest.approx(0.28)
