"""ConfSleepNet: fusion rules, EDL loss, lifting, metrics, data, model and EDF loading.

Numbers from outside the code: the closed forms of the issue (b = 1 - u1 u2 on agreement,
C = 7/9 for alpha = [3, 2, 2, 2, 2], C = 1 gives RCML), a brute-force Dempster combination
over the power set, ``torch.distributions.kl_divergence``, scikit-learn's kappa and F1, a
hand-computed EDL loss, and an EDF file written by ``mne.export``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.ndimage import uniform_filter1d

from icml26.papers.confsleepnet import (
    FIVE_TO_THREE,
    THREE_TO_FIVE,
    TRANSITIONS,
    ConfSleepNet,
    Opinion,
    PSGData,
    ViewSpec,
    accuracy_coverage_curve,
    aggregate,
    cohen_kappa,
    common_partition,
    confusion_matrix,
    conflict,
    conflict_in_common_space,
    corrupt_eog,
    default_views,
    edl_loss,
    fit_confsleepnet,
    fuse_average,
    fuse_conflict_aware,
    fuse_dempster,
    kl_to_uniform_dirichlet,
    lift,
    lifting_matrix,
    macro_f1,
    normalize_recordings,
    partition_matrix,
    sample_hypnogram,
    selective_accuracy,
    sort_by_uncertainty,
    synthetic_psg,
)
from icml26.papers.confsleepnet.analysis import (
    auroc_ceiling,
    claim_values,
    detection_scores,
    mean_over_seeds,
    score_epochs,
)

RULES = {"conflict_aware": fuse_conflict_aware, "dempster": fuse_dempster, "average": fuse_average}
DT = torch.float64


def random_opinion(gen: torch.Generator, n: int = 64, k: int = 5, scale: float = 20.0) -> Opinion:
    """Peaked-ish random evidence (Gamma-like via exp of normals)."""
    evidence = scale * torch.rand(n, k, generator=gen, dtype=DT) ** 3
    return Opinion.from_evidence(evidence)


def op(belief, u) -> Opinion:
    return Opinion(torch.tensor([belief], dtype=DT), torch.tensor([u], dtype=DT))


# ---------------------------------------------------------------------------
# Opinions and lifting
# ---------------------------------------------------------------------------
def test_alpha_round_trip_is_exact_and_opinions_are_valid():
    gen = torch.Generator().manual_seed(0)
    alpha = 1 + 30 * torch.rand(100, 5, generator=gen, dtype=DT)
    o = Opinion.from_alpha(alpha)
    assert o.is_valid(atol=1e-12)
    torch.testing.assert_close(o.alpha, alpha, rtol=0, atol=1e-12)
    torch.testing.assert_close(o.strength, alpha.sum(-1))
    torch.testing.assert_close(o.probability, alpha / alpha.sum(-1, keepdim=True))
    # b_k = (alpha_k - 1) / S and u = K / S by hand for one row
    s = float(alpha[0].sum())
    torch.testing.assert_close(o.belief[0], (alpha[0] - 1) / s)
    assert math.isclose(float(o.uncertainty[0]), 5 / s, rel_tol=1e-12)


@pytest.mark.parametrize("rule", list(RULES))
def test_every_rule_returns_valid_opinions(rule):
    gen = torch.Generator().manual_seed(1)
    for scale in (0.1, 5.0, 500.0):
        a, b = random_opinion(gen, scale=scale), random_opinion(gen, scale=scale)
        fused = RULES[rule](a, b)
        assert fused.is_valid(atol=1e-10), rule
        torch.testing.assert_close(Opinion.from_alpha(fused.alpha).belief, fused.belief)
        four = aggregate([random_opinion(gen, scale=scale) for _ in range(4)], rule=rule)
        assert four.is_valid(atol=1e-10)


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="evidence must be finite and >= 0"):
        Opinion.from_evidence(torch.tensor([[1.0, -0.5]]))
    with pytest.raises(ValueError, match="alpha must be >= 1"):
        Opinion.from_alpha(torch.tensor([[0.5, 2.0]]))
    with pytest.raises(ValueError, match="cannot be fused"):
        fuse_conflict_aware(Opinion.from_evidence(torch.ones(2, 3)), Opinion.from_evidence(torch.ones(2, 5)))
    with pytest.raises(ValueError, match="rule="):
        aggregate([Opinion.from_evidence(torch.ones(2, 5))], rule="yager")
    with pytest.raises(ValueError, match="order="):
        aggregate([Opinion.from_evidence(torch.ones(2, 5))], order="random")
    with pytest.raises(ValueError, match="rows summing to 1"):
        lift(torch.ones(2, 3), torch.ones(3, 5))
    with pytest.raises(ValueError, match="never uses categories"):
        lifting_matrix((0, 2, 2, 2, 3))
    with pytest.raises(ValueError, match="labels must lie"):
        edl_loss(torch.ones(2, 3), torch.tensor([0, 3]), 0)


def test_lifting_is_the_authors_matrix_and_preserves_evidence():
    assert torch.equal(lifting_matrix(FIVE_TO_THREE, dtype=DT), torch.tensor(THREE_TO_FIVE, dtype=DT))
    assert torch.equal(lifting_matrix(range(5)), torch.eye(5))
    gen = torch.Generator().manual_seed(2)
    e3 = 10 * torch.rand(50, 3, generator=gen, dtype=DT)
    e5 = lift(e3, THREE_TO_FIVE)
    torch.testing.assert_close(e5.sum(-1), e3.sum(-1))
    torch.testing.assert_close(Opinion.from_evidence(e5).strength - 5, Opinion.from_evidence(e3).strength - 3)
    torch.testing.assert_close(e5[:, 1], e3[:, 1] / 3)  # NREM evidence split evenly over N1..N3
    e3[:, 1] = 0
    assert torch.equal(lift(e3, THREE_TO_FIVE)[:, 1:4], torch.zeros(50, 3, dtype=DT))


# ---------------------------------------------------------------------------
# Closed forms of the fusion rules
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("rule", ["conflict_aware", "dempster"])
def test_agreement_on_one_class_gives_b_one_minus_u1u2(rule):
    # u1 = 0.3, u2 = 0.2, all belief on class 2: b = 1 - 0.06 = 0.94, u = 0.06
    fused = RULES[rule](op([0, 0, 0.7, 0, 0], 0.3), op([0, 0, 0.8, 0, 0], 0.2))
    torch.testing.assert_close(fused.belief, torch.tensor([[0, 0, 0.94, 0, 0]], dtype=DT))
    torch.testing.assert_close(fused.uncertainty, torch.tensor([0.06], dtype=DT))


def test_total_conflict_gives_exactly_the_rcml_rule():
    a, b = op([0.6, 0, 0, 0, 0], 0.4), op([0, 0.3, 0.2, 0, 0], 0.5)
    assert float(conflict(a, b)) == 1.0
    ca, rcml = fuse_conflict_aware(a, b), fuse_average(a, b)
    torch.testing.assert_close(ca.belief, rcml.belief, rtol=0, atol=1e-15)
    torch.testing.assert_close(ca.uncertainty, rcml.uncertainty, rtol=0, atol=1e-15)
    # RCML by hand: b = (u2 b1 + u1 b2)/(u1 + u2), u = 2 u1 u2 / (u1 + u2)
    torch.testing.assert_close(rcml.belief, torch.tensor([[0.5 * 0.6 / 0.9, 0.4 * 0.3 / 0.9, 0.4 * 0.2 / 0.9, 0, 0]],
                                                         dtype=DT))
    torch.testing.assert_close(rcml.uncertainty, torch.tensor([2 * 0.4 * 0.5 / 0.9], dtype=DT))


def test_rcml_is_the_alpha_average():
    gen = torch.Generator().manual_seed(3)
    a, b = random_opinion(gen), random_opinion(gen)
    torch.testing.assert_close(fuse_average(a, b).alpha, (a.alpha + b.alpha) / 2)


def test_conflict_of_identical_opinions_is_one_minus_norm_p_squared():
    alpha = torch.tensor([[3.0, 2, 2, 2, 2]], dtype=DT)
    c = conflict(Opinion.from_alpha(alpha), Opinion.from_alpha(alpha))
    # p = [2, 1, 1, 1, 1] / 6, ||p||^2 = 8/36, C = 7/9
    assert math.isclose(float(c), 7 / 9, rel_tol=1e-12)


def test_conflict_aware_is_a_conflict_weighted_mix_of_rcml_and_r0():
    gen = torch.Generator().manual_seed(4)
    a, b = random_opinion(gen), random_opinion(gen)
    c = conflict(a, b).unsqueeze(-1)
    u1, u2 = a.uncertainty.unsqueeze(-1), b.uncertainty.unsqueeze(-1)
    r0_b = (u1 * b.belief + u2 * a.belief + u1 * u2 * (a.belief + b.belief)) / (u1 + u2)
    r0_u = u1 * u2
    rcml = fuse_average(a, b)
    ca = fuse_conflict_aware(a, b)
    torch.testing.assert_close(ca.belief, c * rcml.belief + (1 - c) * r0_b)
    torch.testing.assert_close(ca.uncertainty.unsqueeze(-1), c * rcml.uncertainty.unsqueeze(-1) + (1 - c) * r0_u)
    assert bool(((c >= 0) & (c <= 1)).all())


def test_vacuous_opinion_is_the_identity_of_conflict_aware_and_dempster():
    gen = torch.Generator().manual_seed(5)
    a = random_opinion(gen, n=8)
    vacuous = Opinion.from_evidence(torch.zeros(8, 5, dtype=DT))
    assert torch.equal(conflict(vacuous, a), torch.zeros(8, dtype=DT))
    for rule in (fuse_conflict_aware, fuse_dempster):
        fused = rule(vacuous, a)
        torch.testing.assert_close(fused.belief, a.belief)
        torch.testing.assert_close(fused.uncertainty, a.uncertainty)


@pytest.mark.parametrize("rule", list(RULES))
def test_rules_are_symmetric(rule):
    gen = torch.Generator().manual_seed(6)
    a, b = random_opinion(gen), random_opinion(gen)
    ab, ba = RULES[rule](a, b), RULES[rule](b, a)
    torch.testing.assert_close(ab.belief, ba.belief, rtol=0, atol=1e-14)
    torch.testing.assert_close(ab.uncertainty, ba.uncertainty, rtol=0, atol=1e-14)


def test_conflict_aware_is_not_associative_but_dempster_is():
    """Documented behaviour: the fold order of the conflict-aware rule changes the result, which
    is why the views are sorted by uncertainty; Dempster's rule does not care."""
    a = Opinion.from_alpha(torch.tensor([[40.0, 2, 1, 1, 1]], dtype=DT))
    b = Opinion.from_alpha(torch.tensor([[1.0, 30, 1, 1, 1]], dtype=DT))
    c = Opinion.from_alpha(torch.tensor([[5.0, 5, 1, 1, 1]], dtype=DT))
    left = fuse_conflict_aware(fuse_conflict_aware(a, b), c)
    right = fuse_conflict_aware(a, fuse_conflict_aware(b, c))
    assert float((left.alpha - right.alpha).abs().max()) > 1.0
    ds_left, ds_right = fuse_dempster(fuse_dempster(a, b), c), fuse_dempster(a, fuse_dempster(b, c))
    torch.testing.assert_close(ds_left.alpha, ds_right.alpha)


def _dempster_power_set(m1: dict[int, float], m2: dict[int, float]) -> dict[int, float]:
    """Dempster's rule for mass functions over subsets (bitmasks) of a frame, by enumeration."""
    joint: dict[int, float] = {}
    clash = 0.0
    for (set1, w1), (set2, w2) in itertools.product(m1.items(), m2.items()):
        inter = set1 & set2
        if inter == 0:
            clash += w1 * w2
        else:
            joint[inter] = joint.get(inter, 0.0) + w1 * w2
    return {s: w / (1 - clash) for s, w in joint.items()}


def test_dempster_matches_a_brute_force_power_set_combination():
    k, frame = 5, (1 << 5) - 1
    gen = torch.Generator().manual_seed(7)
    a, b = random_opinion(gen, n=20, scale=4.0), random_opinion(gen, n=20, scale=4.0)
    fused = fuse_dempster(a, b)
    for i in range(20):
        # every subset of the frame, with mass on the singletons and on the frame only
        masses = []
        for o in (a, b):
            m = {subset: 0.0 for subset in range(1, frame + 1)}
            for c in range(k):
                m[1 << c] = float(o.belief[i, c])
            m[frame] = float(o.uncertainty[i])
            masses.append(m)
        ref = _dempster_power_set(*masses)
        assert set(s for s, w in ref.items() if w > 0) <= {1 << c for c in range(k)} | {frame}
        for c in range(k):
            assert math.isclose(float(fused.belief[i, c]), ref.get(1 << c, 0.0), rel_tol=1e-10, abs_tol=1e-14)
        assert math.isclose(float(fused.uncertainty[i]), ref[frame], rel_tol=1e-10)


# ---------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------
def test_aggregate_folds_from_most_to_least_uncertain():
    gen = torch.Generator().manual_seed(8)
    views = [random_opinion(gen, n=16, scale=s) for s in (2.0, 50.0, 10.0, 200.0)]
    fused = aggregate(views, rule="conflict_aware", order="uncertainty")
    for i in range(16):
        row = [v[i:i + 1] for v in views]
        row.sort(key=lambda o: -float(o.uncertainty))
        ref = row[0]
        for o in row[1:]:
            ref = fuse_conflict_aware(ref, o)
        torch.testing.assert_close(fused.belief[i], ref.belief[0])
        torch.testing.assert_close(fused.uncertainty[i], ref.uncertainty[0])
    ordered = sort_by_uncertainty(views)
    us = torch.stack([o.uncertainty for o in ordered])
    assert bool((us[:-1] >= us[1:]).all())


@pytest.mark.parametrize("rule", list(RULES))
def test_aggregate_is_invariant_to_the_order_views_are_given_in(rule):
    gen = torch.Generator().manual_seed(9)
    views = [random_opinion(gen, n=32, scale=s) for s in (3.0, 30.0, 10.0, 100.0)]
    ref = aggregate(views, rule=rule)
    for perm in itertools.permutations(range(4)):
        out = aggregate([views[p] for p in perm], rule=rule)
        torch.testing.assert_close(out.belief, ref.belief, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(out.uncertainty, ref.uncertainty, rtol=1e-12, atol=1e-14)
    given = [aggregate([views[p] for p in perm], rule=rule, order="given") for perm in ((0, 1, 2, 3), (3, 2, 1, 0))]
    if rule == "dempster":
        torch.testing.assert_close(given[0].belief, given[1].belief)
    else:  # without sorting, the non-associative rules depend on the order
        assert float((given[0].belief - given[1].belief).abs().max()) > 1e-3


def test_conflict_raises_fused_uncertainty_more_under_conflict_aware_than_dempster():
    """The mechanism the reliability claim rests on: for two confident views that disagree,
    Dempster's fused u stays near u1 u2 / (1 - kappa), the conflict-aware u near the harmonic mean."""
    agree = (op([0.9, 0, 0, 0, 0], 0.1), op([0.9, 0, 0, 0, 0], 0.1))
    clash = (op([0.9, 0, 0, 0, 0], 0.1), op([0, 0, 0, 0, 0.9], 0.1))
    for rule in (fuse_conflict_aware, fuse_dempster):
        assert float(rule(*clash).uncertainty) > float(rule(*agree).uncertainty)
    ratio_ca = float(fuse_conflict_aware(*clash).uncertainty / fuse_conflict_aware(*agree).uncertainty)
    ratio_ds = float(fuse_dempster(*clash).uncertainty / fuse_dempster(*agree).uncertainty)
    # CA: 0.1 (C ~= 1) vs 0.01; DS: 0.01 / (1 - 0.81) vs 0.01
    assert math.isclose(ratio_ca, 10.0, rel_tol=1e-9) and math.isclose(ratio_ds, 1 / 0.19, rel_tol=1e-9)


# ---------------------------------------------------------------------------
# EDL loss
# ---------------------------------------------------------------------------
def test_kl_term_matches_torch_distributions():
    gen = torch.Generator().manual_seed(10)
    alpha = 1 + 20 * torch.rand(40, 5, generator=gen, dtype=DT) ** 2
    ref = torch.distributions.kl_divergence(torch.distributions.Dirichlet(alpha),
                                            torch.distributions.Dirichlet(torch.ones(5, dtype=DT)))
    torch.testing.assert_close(kl_to_uniform_dirichlet(alpha), ref)
    assert torch.equal(kl_to_uniform_dirichlet(torch.ones(3, 5, dtype=DT)), torch.zeros(3, dtype=DT))


def test_edl_loss_by_hand_and_kl_zero_without_wrong_evidence():
    # K = 2, e = [1, 0], y = 0: alpha = [2, 1], S = 3, p = [2/3, 1/3]
    # (y - p)^2 = 2/9, p(1-p)/(S+1) = 1/9, KL(alpha~ = [1, 1]) = 0: loss = 1/3 for every lambda
    e, y = torch.tensor([[1.0, 0.0]], dtype=DT), torch.tensor([0])
    for epoch in (0, 5, 50):
        assert math.isclose(float(edl_loss(e, y, epoch)), 1 / 3, rel_tol=1e-12)
    # with wrong-class evidence the KL term enters, scaled by lambda_t = min(1, epoch / 10)
    e2 = torch.tensor([[1.0, 2.0]], dtype=DT)
    kl = float(kl_to_uniform_dirichlet(torch.tensor([[1.0, 3.0]], dtype=DT)))
    base = float(edl_loss(e2, y, 0))
    assert math.isclose(float(edl_loss(e2, y, 5)) - base, 0.5 * kl, rel_tol=1e-12)
    assert math.isclose(float(edl_loss(e2, y, 30)) - base, kl, rel_tol=1e-12)
    one_hot = torch.nn.functional.one_hot(y, 2).to(DT)
    assert float(edl_loss(e2, one_hot, 7)) == float(edl_loss(e2, y, 7))


def test_edl_loss_decreases_as_true_class_evidence_grows():
    target = torch.tensor([2])
    values = [float(edl_loss(torch.tensor([[0.5, 1.0, e, 0.2, 0.3]], dtype=DT), target, 20))
              for e in (0.0, 1.0, 5.0, 20.0, 100.0)]
    assert all(a > b for a, b in zip(values, values[1:]))


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
# Model and training
# ---------------------------------------------------------------------------
def test_model_shapes_nonnegative_evidence_and_gradients():
    model = ConfSleepNet(sampling_rate=50.0, width=4)
    x = torch.randn(6, 3, 1500)
    evidence = model.evidence(x)
    assert {k: tuple(v.shape) for k, v in evidence.items()} == {"eeg": (6, 5), "eog": (6, 3), "emg": (6, 3),
                                                                "fused": (6, 5)}
    assert all(bool((v >= 0).all()) for v in evidence.values())
    opinions = model.opinions(evidence=evidence)
    assert all(o.num_classes == 5 and o.is_valid() for o in opinions.values())
    # lifted EOG keeps the total evidence, so the same uncertainty K/S ... over 5 + sum e
    torch.testing.assert_close(opinions["eog"].strength, evidence["eog"].sum(-1) + 5)
    fused = model(x)
    assert fused.belief.shape == (6, 5) and fused.is_valid()
    loss = sum(edl_loss(evidence[v.name], torch.as_tensor(v.label_map)[torch.arange(6) % 5], 3) for v in model.views)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_joint_training_equals_training_each_view_alone():
    """Two code paths, one answer: the summed-loss loop trains every view as if alone."""
    data = synthetic_psg(2, 40, rng=np.random.default_rng(17), sampling_rate=50.0)
    x = normalize_recordings(data.signals).reshape(-1, 3, 1500)
    y = data.stages.reshape(-1)
    views = default_views()
    kwargs = dict(epochs=2, batch_size=32, lr=1e-2)
    torch.manual_seed(0)
    joint = ConfSleepNet(views, sampling_rate=50.0, width=4, dropout=0.0)
    init = {k: v.clone() for k, v in joint.state_dict().items()}
    fit_confsleepnet(joint, x, y, generator=torch.Generator().manual_seed(1), **kwargs)
    alone = ConfSleepNet(views[1:2], sampling_rate=50.0, width=4, dropout=0.0)  # the EOG view only
    alone.load_state_dict({k: v for k, v in init.items() if k.startswith("nets.eog.")})
    fit_confsleepnet(alone, x, y, generator=torch.Generator().manual_seed(1), **kwargs)
    for k, v in alone.state_dict().items():
        torch.testing.assert_close(v, joint.state_dict()[k], rtol=1e-5, atol=1e-6)


def test_view_spec_validation():
    with pytest.raises(ValueError, match="channels"):
        ViewSpec("eeg", ())
    with pytest.raises(ValueError, match="unique names"):
        ConfSleepNet([ViewSpec.five_class("a", (0,)), ViewSpec.hybrid("a", (1,))])
    assert ViewSpec.hybrid("eog", (1,)).num_categories == 3


def test_experiment_config_validation():
    from icml26.papers.confsleepnet.experiment import Config

    with pytest.raises(ValueError, match="include 0"):
        Config(corruption_fractions=(0.2, 0.4))
    with pytest.raises(ValueError, match="corruption_modes"):
        Config(corruption_modes=("drift",))
    with pytest.raises(ValueError, match="sampling_rate"):
        Config(sampling_rate=20.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fusion_and_model_run_on_cuda():
    gen = torch.Generator().manual_seed(18)
    views = [random_opinion(gen).to("cuda") for _ in range(4)]
    for rule in RULES:
        fused = aggregate(views, rule=rule)
        assert fused.belief.device.type == "cuda" and fused.is_valid(atol=1e-10)
    model = ConfSleepNet(sampling_rate=50.0, width=4).to("cuda")
    assert model(torch.randn(4, 3, 1500, device="cuda")).uncertainty.device.type == "cuda"


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
# Subjective-logic names, validation, lifting and u (issues #18, #29)
# ---------------------------------------------------------------------------
def test_b_u_and_from_dirichlet_are_the_subjective_logic_names():
    alpha = torch.tensor([[3.0, 2.0, 2.0, 2.0, 2.0]], dtype=DT)
    o = Opinion.from_dirichlet(alpha)
    assert o.b is o.belief and o.u is o.uncertainty
    # S = 11, b_k = (alpha_k - 1) / S, u = K / S
    torch.testing.assert_close(o.b, torch.tensor([[2, 1, 1, 1, 1]], dtype=DT) / 11)
    torch.testing.assert_close(o.u, torch.tensor([5 / 11], dtype=DT))
    torch.testing.assert_close(o.alpha, alpha)


def test_invalid_opinions_are_refused_at_construction():
    with pytest.raises(ValueError, match=">= 0"):
        op([-0.1, 0.6], 0.5)
    with pytest.raises(ValueError, match="must be 1"):
        op([0.6, 0.6], 0.3)  # total mass 1.5
    with pytest.raises(ValueError, match="uncertainty"):
        op([0.5, 0.5], 0.0)
    with pytest.raises(ValueError, match="finite"):
        op([float("nan"), 0.5], 0.5)
    with pytest.raises(TypeError, match="op2"):
        fuse_conflict_aware(op([0.5, 0.0], 0.5), (torch.ones(1, 2), torch.ones(1)))


def test_lifting_keeps_total_evidence_but_not_u():
    e3 = torch.tensor([[6.0, 0.0, 0.0]], dtype=DT)  # E = 6 on K = 3 categories
    u3 = float(Opinion.from_evidence(e3).u)
    u5 = float(Opinion.from_evidence(lift(e3, THREE_TO_FIVE)).u)
    assert math.isclose(u3, 3 / 9, rel_tol=1e-12) and math.isclose(u5, 5 / 11, rel_tol=1e-12)
    assert float(lift(e3, THREE_TO_FIVE).sum()) == 6.0


def test_metrics_refuse_fractional_and_nan_labels():
    with pytest.raises(ValueError, match="y_true"):
        macro_f1([0.5, 1.0], [0, 1])
    with pytest.raises(ValueError, match="uncertainty"):
        selective_accuracy([True, True], [float("nan"), 0.1], 0.5)
    assert macro_f1(np.array([0.0, 1.0]), np.array([0, 1])) == 1.0  # integral floats are labels


# ---------------------------------------------------------------------------
# Property tests of the opinion algebra (hypothesis)
# ---------------------------------------------------------------------------
_evidence = st.lists(st.floats(0.0, 1e3, allow_subnormal=False), min_size=5, max_size=5)


def _from(evidence: list[float]) -> Opinion:
    return Opinion.from_evidence(torch.tensor([evidence], dtype=DT))


@settings(max_examples=60, deadline=None)
@given(e1=_evidence, e2=_evidence, e3=_evidence, rule=st.sampled_from(list(RULES)))
def test_every_rule_is_symmetric_and_valid_for_any_evidence(e1, e2, e3, rule):
    a, b, c = _from(e1), _from(e2), _from(e3)
    ab, ba = RULES[rule](a, b), RULES[rule](b, a)
    torch.testing.assert_close(ab.b, ba.b, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ab.u, ba.u, rtol=1e-10, atol=1e-12)
    assert ab.is_valid(atol=1e-9) and RULES[rule](ab, c).is_valid(atol=1e-9)
    # fusing never makes an opinion more uncertain than the less uncertain input
    assert float(ab.u) <= max(float(a.u), float(b.u)) * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(e1=_evidence, e2=_evidence)
def test_conflict_aware_is_the_conflict_weighted_mix_of_rcml_and_r0(e1, e2):
    a, b = _from(e1), _from(e2)
    c = conflict(a, b)
    assert 0.0 <= float(c) <= 1.0
    ca, rcml = fuse_conflict_aware(a, b), fuse_average(a, b)
    r0 = fuse_conflict_aware(a, b, conflict_fn=lambda x, y: torch.zeros_like(x.u))
    torch.testing.assert_close(ca.b, c.unsqueeze(-1) * rcml.b + (1 - c).unsqueeze(-1) * r0.b, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(ca.u, c * rcml.u + (1 - c) * r0.u, rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(e=st.lists(st.floats(0.0, 1e3, allow_subnormal=False), min_size=2, max_size=8))
def test_dirichlet_round_trip_and_probability_for_any_evidence(e):
    o = Opinion.from_evidence(torch.tensor([e], dtype=DT))
    alpha = torch.tensor([e], dtype=DT) + 1
    torch.testing.assert_close(o.alpha, alpha, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(o.probability, alpha / alpha.sum(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(Opinion.from_dirichlet(o.alpha).b, o.b, rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(views=st.lists(_evidence, min_size=2, max_size=4), seed=st.integers(0, 1000))
def test_aggregate_is_invariant_to_the_order_views_are_given_in_for_any_evidence(views, seed):
    ops = [_from(v) for v in views]
    perm = np.random.default_rng(seed).permutation(len(ops))
    ref = aggregate(ops, rule="conflict_aware")
    shuffled = aggregate([ops[i] for i in perm], rule="conflict_aware")
    # ties in u may fold in another order (the rule is not associative), so compare when u is distinct
    us = [float(o.u) for o in ops]
    if len(set(us)) == len(us):
        torch.testing.assert_close(shuffled.b, ref.b, rtol=1e-12, atol=1e-14)


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


# ---------------------------------------------------------------------------
# Conflict in the common category space (ours), on lifted opinions
# ---------------------------------------------------------------------------
FIVE = tuple(range(5))


def _lifted(e3) -> Opinion:
    return Opinion.from_evidence(lift(torch.as_tensor(e3, dtype=DT), THREE_TO_FIVE))


def test_stage_space_conflict_is_blind_on_lifted_opinions_and_the_common_space_one_is_not():
    eeg_n2 = Opinion.from_evidence(torch.tensor([[0.0, 0.0, 50.0, 0.0, 0.0]], dtype=DT))
    eog_nrem, eog_rem = _lifted([[0.0, 50.0, 0.0]]), _lifted([[0.0, 0.0, 50.0]])
    eye, hybrid = partition_matrix(FIVE, dtype=DT), partition_matrix(FIVE_TO_THREE, dtype=DT)
    # by hand: p_EEG = e_N2, p_EOG = (0, 1/3, 1/3, 1/3, 0): <p1, p2> = 1/3, so C = 2/3 though both agree
    assert float(conflict(eeg_n2, eog_nrem)) == pytest.approx(2 / 3)
    assert float(conflict_in_common_space(eeg_n2, eog_nrem, eye, hybrid)) == pytest.approx(0.0, abs=1e-15)
    assert float(conflict_in_common_space(eeg_n2, eog_rem, eye, hybrid)) == pytest.approx(1.0)
    # a mixed case by hand: p1 = (.2, 0, .6, 0, .2) -> W/NREM/REM (.2, .6, .2); p2 = (.5, .5, 0): 1 - .1 - .3
    eeg = Opinion.from_evidence(torch.tensor([[10.0, 0.0, 30.0, 0.0, 10.0]], dtype=DT))
    assert float(conflict_in_common_space(eeg, _lifted([[20.0, 20.0, 0.0]]), eye, hybrid)) == pytest.approx(0.6)
    # the conflict mechanism on lifted opinions: agreement now fuses like Dempster (u shrinks to ~u1 u2)
    agree_stage = aggregate([eeg_n2, eog_nrem])
    agree_common = aggregate([eeg_n2, eog_nrem], label_maps=[FIVE, FIVE_TO_THREE])
    assert float(agree_common.u) == pytest.approx(float(eeg_n2.u * eog_nrem.u))
    assert float(agree_common.u) < 0.2 * float(agree_stage.u)
    # total conflict: both are the RCML average, u = 2 u1 u2 / (u1 + u2)
    clash = aggregate([eeg_n2, eog_rem], label_maps=[FIVE, FIVE_TO_THREE])
    u1, u2 = float(eeg_n2.u), float(eog_rem.u)
    assert float(clash.u) == pytest.approx(2 * u1 * u2 / (u1 + u2))


def test_common_space_conflict_of_lifted_opinions_is_the_native_conflict_in_the_coarse_space():
    """Two code paths: lift the EOG, compute C in the common space; or project the EEG's evidence
    to W / NREM / REM and take the authors' C of two native three-class opinions."""
    g = torch.Generator().manual_seed(3)
    e5 = torch.rand(64, 5, generator=g, dtype=DT) * 30
    e3 = torch.rand(64, 3, generator=g, dtype=DT) * 30
    coarse = e5 @ lifting_matrix(FIVE_TO_THREE, dtype=DT).T.gt(0).to(DT)  # sum within each category
    native = conflict(Opinion.from_evidence(coarse), Opinion.from_evidence(e3))
    lifted = conflict_in_common_space(Opinion.from_evidence(e5), _lifted(e3), partition_matrix(FIVE, dtype=DT),
                                      partition_matrix(FIVE_TO_THREE, dtype=DT))
    torch.testing.assert_close(lifted, native, rtol=1e-12, atol=1e-12)
    # identity partitions give the authors' conflict
    a, b = Opinion.from_evidence(e5), Opinion.from_evidence(e5.flip(0))
    eye = partition_matrix(FIVE, dtype=DT)
    torch.testing.assert_close(conflict_in_common_space(a, b, eye, eye), conflict(a, b), rtol=1e-12, atol=1e-12)


def test_common_partition_is_the_join_by_hand():
    m1 = partition_matrix((0, 0, 1, 2))  # {0, 1} {2} {3}
    m2 = partition_matrix((0, 1, 1, 2))  # {0} {1, 2} {3}
    assert torch.equal(common_partition(m1, m2), partition_matrix((0, 0, 0, 1)))  # {0, 1, 2} {3}
    chain = common_partition(partition_matrix((0, 0, 1, 2, 3, 3)), partition_matrix((0, 1, 1, 2, 2, 4)))
    # m1: {0, 1} {2} {3} {4, 5}; m2: {0} {1, 2} {3, 4} {5}; chains 0-1-2 and 3-4-5
    assert torch.equal(chain, partition_matrix((0, 0, 0, 1, 1, 1)))
    with pytest.raises(ValueError, match="partition"):
        common_partition(torch.eye(3), torch.eye(4))


def test_aggregate_in_the_common_space_folds_with_the_meet_of_partitions():
    """Three views on one epoch, folded by hand: most uncertain first; after fusing a five-class
    view the fused opinion resolves stages, so the third conflict is computed over stages."""
    eog = _lifted([[2.0, 1.0, 0.5]])                                              # most uncertain
    emg = _lifted([[1.0, 9.0, 1.0]])
    eeg = Opinion.from_evidence(torch.tensor([[1.0, 2.0, 30.0, 4.0, 1.0]], dtype=DT))  # least uncertain
    assert float(eog.u) > float(emg.u) > float(eeg.u)
    eye, hyb = partition_matrix(FIVE, dtype=DT), partition_matrix(FIVE_TO_THREE, dtype=DT)
    first = fuse_conflict_aware(eog, emg, conflict_fn=lambda a, b: conflict_in_common_space(a, b, hyb, hyb))
    meet = hyb * hyb
    ref = fuse_conflict_aware(first, eeg, conflict_fn=lambda a, b: conflict_in_common_space(a, b, meet, eye))
    got = aggregate([eeg, emg, eog], label_maps=[FIVE, FIVE_TO_THREE, FIVE_TO_THREE])
    torch.testing.assert_close(got.b, ref.b, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(got.u, ref.u, rtol=1e-12, atol=1e-14)
    # all five-class label maps: the authors' aggregation exactly
    plain = aggregate([eeg, emg, eog])
    same = aggregate([eeg, emg, eog], label_maps=[FIVE] * 3)
    torch.testing.assert_close(same.b, plain.b, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="conflict_aware"):
        aggregate([eeg, emg], rule="average", label_maps=[FIVE, FIVE_TO_THREE])
    with pytest.raises(ValueError, match="one label_map per view"):
        aggregate([eeg, emg], label_maps=[FIVE])


def test_model_fuse_in_the_common_space_uses_each_views_label_map():
    torch.manual_seed(0)
    model = ConfSleepNet(default_views(), sampling_rate=50.0, width=4)
    x = torch.randn(6, 3, 1500)
    with torch.no_grad():
        ops = model.opinions(x)
        got = model.fuse(ops, conflict_space="common")
    maps = [v.label_map for v in model.views]
    ref = aggregate([ops[v.name] for v in model.views], label_maps=maps)
    torch.testing.assert_close(got.b, ref.b)
    with pytest.raises(ValueError, match="conflict_space"):
        model.fuse(ops, conflict_space="coarse")


# ---------------------------------------------------------------------------
# Dempster's rule with the conflict in the common category space (ours)
# ---------------------------------------------------------------------------
def _dempster_common_by_hand(b1, u1, b2, u2, m):
    """Loop version: pairs in one common category keep their mass (split between the two stages)."""
    k = len(b1)
    out, kappa = [0.0] * k, 0.0
    for i in range(k):
        out[i] += b1[i] * u2 + b2[i] * u1
        for j in range(k):
            mass = b1[i] * b2[j]
            if m[i][j]:
                out[i] += mass / 2
                out[j] += mass / 2
            else:
                kappa += mass
    return [x / (1 - kappa) for x in out], u1 * u2 / (1 - kappa)


def test_dempster_in_the_common_space_by_hand_and_identity_partitions_give_tmc():
    eye, hyb = partition_matrix(FIVE, dtype=DT), partition_matrix(FIVE_TO_THREE, dtype=DT)
    eeg = Opinion.from_evidence(torch.tensor([[10.0, 3.0, 30.0, 0.0, 10.0]], dtype=DT))
    eog = _lifted([[5.0, 20.0, 2.0]])
    got = aggregate([eeg, eog], rule="dempster", order="given", label_maps=[FIVE, FIVE_TO_THREE])
    b, u = _dempster_common_by_hand(eeg.b[0].tolist(), float(eeg.u), eog.b[0].tolist(), float(eog.u),
                                    common_partition(eye, hyb).tolist())
    torch.testing.assert_close(got.b[0], torch.tensor(b, dtype=DT), rtol=1e-12, atol=1e-14)
    assert float(got.u) == pytest.approx(u, rel=1e-12)
    assert float(got.b.sum() + got.u) == pytest.approx(1.0, abs=1e-12)
    same = aggregate([eeg, eog], rule="dempster", order="given", label_maps=[FIVE, FIVE])
    ref = fuse_dempster(eeg, eog)
    torch.testing.assert_close(same.b, ref.b, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(same.u, ref.u, rtol=1e-12, atol=1e-14)


def test_dempster_in_the_common_space_sees_lifted_agreement_and_keeps_the_clash():
    eeg_n2 = Opinion.from_evidence(torch.tensor([[0.0, 0.0, 50.0, 0.0, 0.0]], dtype=DT))
    eog_nrem, eog_rem = _lifted([[0.0, 50.0, 0.0]]), _lifted([[0.0, 0.0, 50.0]])
    maps = [FIVE, FIVE_TO_THREE]
    # agreement in W / NREM / REM: no conflict, so u = u1 u2 exactly; TMC reads 2/3 of the mass as conflict
    agree = aggregate([eeg_n2, eog_nrem], rule="dempster", order="given", label_maps=maps)
    assert float(agree.u) == pytest.approx(float(eeg_n2.u * eog_nrem.u), rel=1e-12)
    assert float(agree.u) < float(fuse_dempster(eeg_n2, eog_nrem).u)
    assert int(agree.b.argmax()) == 2
    # a real clash (N2 against REM) is the same conflict in both spaces
    clash = aggregate([eeg_n2, eog_rem], rule="dempster", order="given", label_maps=maps)
    torch.testing.assert_close(clash.u, fuse_dempster(eeg_n2, eog_rem).u, rtol=1e-12, atol=1e-14)


def test_model_fuse_gives_dempster_the_common_space_conflict():
    torch.manual_seed(0)
    model = ConfSleepNet(default_views(), sampling_rate=50.0, width=4)
    x = torch.randn(6, 3, 1500)
    with torch.no_grad():
        ops = model.opinions(x)
        got = model.fuse(ops, rule="dempster", order="given", conflict_space="common")
        names = [v.name for v in model.views]
        ref = aggregate([ops[n] for n in names], rule="dempster", order="given",
                        label_maps=[v.label_map for v in model.views])
        plain = model.fuse(ops, rule="dempster", order="given")
    torch.testing.assert_close(got.u, ref.u)
    assert not torch.allclose(got.u, plain.u)
