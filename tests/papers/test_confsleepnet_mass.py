"""ConfSleepNet: set-valued Dempster-Shafer (the baseline of ``mass.py``) and the detectable mask.

Hand computations, a brute-force power-set Dempster over frozensets from each view's native
evidence, and the reduced rule as the special case of five-class views.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import torch

from icml26.papers.confsleepnet import (
    FIVE_TO_THREE,
    THREE_TO_FIVE,
    Opinion,
    aggregate,
    combine_masses,
    fuse_dempster_sets,
    lift,
    view_masses,
)
from icml26.papers.confsleepnet.analysis import view_flags_corruption

DT = torch.float64
FIVE = tuple(range(5))
THETA = frozenset(range(5))


def _eeg(e5) -> Opinion:
    return Opinion.from_evidence(torch.tensor([e5], dtype=DT))


def _hybrid(e3) -> Opinion:
    """A hybrid view's opinion as the model gives it: lifted to the five stages."""
    return Opinion.from_evidence(lift(torch.tensor([e3], dtype=DT), THREE_TO_FIVE))


def test_agreeing_eeg_and_eog_by_hand_keep_the_eog_mass_on_nrem():
    # EEG e = (0,0,8,0,0): S = 13, m({N2}) = 8/13, m(Theta) = 5/13; EOG e = (0,6,0): S = 9 (its own K = 3),
    # m({N1,N2,N3}) = 6/9, m(Theta) = 3/9. No disjoint pair: m({N2}) = 8/13, m(NREM) = 30/117, m(Theta) = 15/117;
    # pignistic: b_N2 = 8/13 + 10/117 = 82/117, b_N1 = b_N3 = 10/117, u = 15/117
    fused = fuse_dempster_sets([_eeg([0, 0, 8, 0, 0]), _hybrid([0, 6, 0])], [FIVE, FIVE_TO_THREE])
    expected = torch.tensor([[0, 10, 82, 10, 0]], dtype=DT) / 117
    torch.testing.assert_close(fused.opinion.belief, expected)
    assert float(fused.opinion.uncertainty) == pytest.approx(15 / 117)
    assert float(fused.conflict) == pytest.approx(0.0, abs=1e-15)
    assert float(fused.masses[0, 0b01110]) == pytest.approx(30 / 117)
    assert int(fused.opinion.prediction()) == 2
    # TMC on the lifted EOG would instead see 2/3 of the EOG's NREM mass clash with N2
    tmc = aggregate([_eeg([0, 0, 8, 0, 0]), _hybrid([0, 6, 0])], rule="dempster", order="given")
    assert float(tmc.uncertainty) != pytest.approx(15 / 117)


def test_clashing_eeg_and_eog_by_hand():
    # EEG sure of W (8/13, Theta 5/13), EOG sure of REM (6/9, Theta 3/9): kappa = 8/13 * 6/9 = 48/117;
    # unnormalised W 24/117, REM 30/117, Theta 15/117; normalised by 69/117
    fused = fuse_dempster_sets([_eeg([8, 0, 0, 0, 0]), _hybrid([0, 0, 6])], [FIVE, FIVE_TO_THREE])
    torch.testing.assert_close(fused.opinion.belief, torch.tensor([[24, 0, 0, 0, 30]], dtype=DT) / 69)
    assert float(fused.opinion.uncertainty) == pytest.approx(15 / 69)
    assert float(fused.conflict) == pytest.approx(48 / 117)


def _brute_force(native_evidence, label_maps):
    """Dempster's rule over frozensets of stages, in exact fractions, from each view's native evidence."""
    fused, empty_total = None, Fraction(0)
    for evidence, label_map in zip(native_evidence, label_maps):
        k_view = max(label_map) + 1
        strength = sum(Fraction(e) for e in evidence) + k_view
        m = {THETA: Fraction(k_view) / strength}
        for c, e in enumerate(evidence):
            focal = frozenset(s for s in range(5) if label_map[s] == c)
            m[focal] = m.get(focal, Fraction(0)) + Fraction(e) / strength
        if fused is None:
            fused = m
            continue
        joint: dict[frozenset, Fraction] = {}
        for (a, x), (b, y) in itertools.product(fused.items(), m.items()):
            joint[a & b] = joint.get(a & b, Fraction(0)) + x * y
        kappa = joint.pop(frozenset(), Fraction(0))
        empty_total = empty_total + (1 - empty_total) * kappa
        fused = {a: v / (1 - kappa) for a, v in joint.items()}
    belief = [sum((v / len(a) for a, v in fused.items() if s in a and a != THETA), Fraction(0)) for s in range(5)]
    return fused, belief, fused.get(THETA, Fraction(0)), empty_total


def test_matches_a_brute_force_power_set_dempster_from_native_evidence():
    rng = np.random.default_rng(3)
    maps = [FIVE, FIVE_TO_THREE, FIVE_TO_THREE, FIVE]
    for _ in range(5):
        native = [rng.integers(0, 9, size=max(m) + 1).tolist() for m in maps]
        ops = [_eeg(e) if len(e) == 5 else _hybrid(e) for e in native]
        fused = fuse_dempster_sets(ops, maps)
        masses, belief, u, empty = _brute_force(native, maps)
        np.testing.assert_allclose(fused.opinion.belief[0].numpy(), [float(b) for b in belief], atol=1e-12)
        assert float(fused.opinion.uncertainty) == pytest.approx(float(u), abs=1e-12)
        assert float(fused.conflict) == pytest.approx(float(empty), abs=1e-12)
        for focal, v in masses.items():
            assert float(fused.masses[0, sum(1 << s for s in focal)]) == pytest.approx(float(v), abs=1e-12)


def test_five_class_views_give_tmcs_reduced_dempster_rule():
    gen = torch.Generator().manual_seed(0)
    ops = [Opinion.from_evidence(20 * torch.rand(32, 5, generator=gen, dtype=DT) ** 3) for _ in range(4)]
    sets = fuse_dempster_sets(ops, [FIVE] * 4).opinion
    tmc = aggregate(ops, rule="dempster", order="given")
    torch.testing.assert_close(sets.belief, tmc.belief)
    torch.testing.assert_close(sets.uncertainty, tmc.uncertainty)


def test_order_of_views_does_not_matter_and_opinions_are_valid():
    gen = torch.Generator().manual_seed(1)
    maps = [FIVE, FIVE_TO_THREE, FIVE_TO_THREE, FIVE]
    ops = [Opinion.from_evidence(lift(10 * torch.rand(16, max(m) + 1, generator=gen, dtype=DT) ** 2,
                                      THREE_TO_FIVE if max(m) == 2 else torch.eye(5, dtype=DT))) for m in maps]
    ref = fuse_dempster_sets(ops, maps)
    assert ref.opinion.is_valid()
    for perm in itertools.permutations(range(4)):
        out = fuse_dempster_sets([ops[i] for i in perm], [maps[i] for i in perm])
        torch.testing.assert_close(out.masses, ref.masses)
        torch.testing.assert_close(out.conflict, ref.conflict)


def test_view_masses_give_the_hybrid_view_its_own_uncertainty_not_the_lifted_one():
    # native e = (2, 4, 0): S = 6 + 3 = 9, u = 3/9 (lifted: 5/11)
    m = view_masses(_hybrid([2, 4, 0]), FIVE_TO_THREE)
    assert float(m[0, 0b11111]) == pytest.approx(3 / 9)
    assert float(m[0, 0b00001]) == pytest.approx(2 / 9) and float(m[0, 0b01110]) == pytest.approx(4 / 9)
    assert float(m.sum()) == pytest.approx(1.0)


def test_combine_masses_refuses_total_conflict_and_bad_masses():
    w, rem = torch.zeros(32, dtype=DT), torch.zeros(32, dtype=DT)
    w[0b00001], rem[0b10000] = 1.0, 1.0
    with pytest.raises(ValueError, match="total conflict"):
        combine_masses(w, rem)
    with pytest.raises(ValueError, match="m2"):
        combine_masses(w, torch.full((32,), float("nan"), dtype=DT))
    with pytest.raises(ValueError, match="2\\*\\*K"):
        combine_masses(torch.ones(3), torch.ones(3))
    with pytest.raises(ValueError, match="label_maps"):
        fuse_dempster_sets([_eeg([1, 0, 0, 0, 0])], [FIVE, FIVE])
    with pytest.raises(ValueError, match="label_map"):
        view_masses(_eeg([1, 0, 0, 0, 0]), (0, 2, 2, 2, 3))


def test_view_flags_corruption_by_hand():
    # stages W N2 N3 REM N1 -> hybrid 0 1 1 2 1; the EOG predicts 0 1 0 0 1; corrupted epochs 1, 2, 3
    pred, stages = np.array([0, 1, 0, 0, 1]), np.array([0, 2, 3, 4, 1])
    corrupted = np.array([False, True, True, True, False])
    flags = view_flags_corruption(pred, stages, FIVE_TO_THREE, corrupted)
    # epoch 1 still right (NREM), epochs 2 and 3 wrong; epoch 4 is right and clean, epoch 0 clean
    assert flags.tolist() == [False, False, True, True, False]
    # a wrong prediction on a clean epoch is not a detectable corruption
    assert not view_flags_corruption(np.array([2]), np.array([0]), FIVE_TO_THREE, np.array([False])).any()
    with pytest.raises(ValueError, match="one entry per epoch"):
        view_flags_corruption(pred[:3], stages, FIVE_TO_THREE, corrupted)
