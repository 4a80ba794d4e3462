"""ConfSleepNet: conflict in the common category space (ours) on lifted opinions, the join of partitions,
aggregation with their meet, and Dempster's rule with the common-space conflict, by hand.
"""

from __future__ import annotations

import pytest
import torch

from icml26.papers.confsleepnet import (
    FIVE_TO_THREE,
    THREE_TO_FIVE,
    ConfSleepNet,
    Opinion,
    aggregate,
    common_partition,
    conflict,
    conflict_in_common_space,
    default_views,
    fuse_conflict_aware,
    fuse_dempster,
    lift,
    lifting_matrix,
    partition_matrix,
)
from tests.papers._confsleepnet_helpers import DT


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
