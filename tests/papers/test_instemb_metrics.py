"""InstEmb's metrics against hand computations: k-means NMI, Inst-STS Spearman and its pairs, instruction
sensitivity, the Spearman ceiling, and an evaluator of a subset reading from full embeddings.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.papers.instemb import (
    inst_sts_pairs,
    inst_sts_spearman,
    instruction_nmi,
    instruction_sensitivity,
    kmeans_nmi,
    spearman_ceiling,
)


pytestmark = pytest.mark.usefixtures("one_thread")


# ----------------------------------------------------------------------------- analysis
def test_kmeans_nmi_hand_cases():
    x = np.array([[0, 0], [0.1, 0], [10, 10], [10.1, 10], [0, 10], [0, 10.1]], dtype=float)
    assert kmeans_nmi(x, [0, 0, 1, 1, 2, 2]) == pytest.approx(1.0)
    # clusters {01}{23}{45} against labels [0,1,0,1,0,1]: independent, NMI = 0
    assert kmeans_nmi(x, [0, 1, 0, 1, 0, 1], n_clusters=3) == pytest.approx(0.0, abs=1e-12)
    # clusters {0,1}{2,3} (k = 2) vs labels [0,0,0,1]: I = H(C) + H(Y) - H(C,Y)
    x4 = np.array([[0.0], [0.1], [5.0], [5.1]])
    hc, hy, hcy = math.log(2), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)), 1.5 * math.log(2)
    mi = hc + hy - hcy
    assert kmeans_nmi(x4, [0, 0, 0, 1], n_clusters=2) == pytest.approx(mi / ((hc + hy) / 2), rel=1e-9)
    per = instruction_nmi(np.stack([x, x]), np.array([[0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]]))
    assert per == pytest.approx([1.0, 0.0], abs=1e-12)


def test_inst_sts_spearman_hand_case():
    from scipy.stats import spearmanr

    e = np.array([[[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]]])
    pairs = np.array([[0, 0, 1, 1], [0, 0, 2, 0], [0, 1, 2, 1], [0, 0, 3, 0]])
    cos = [0.6, 0.0, 0.8, -1.0]  # by hand
    assert inst_sts_spearman(e, pairs) == pytest.approx(spearmanr(cos, [1, 0, 1, 0]).statistic)
    # ranks of cos: 3, 2, 4, 1 against gold 1, 0, 1, 0 (ranks 3.5, 1.5, 3.5, 1.5): Pearson by hand
    r = np.array([3, 2, 4, 1.0]) - 2.5
    gld = np.array([1, -1, 1, -1.0])
    assert inst_sts_spearman(e, pairs) == pytest.approx((r @ gld) / np.sqrt((r @ r) * (gld @ gld)))


def test_inst_sts_pairs_balanced_and_correct():
    labels = np.random.default_rng(0).integers(0, 5, size=(3, 40))
    pairs = inst_sts_pairs(labels, 200, np.random.default_rng(1))
    assert pairs.shape == (200, 4) and pairs[:, 3].sum() == 100
    assert all(int(labels[p[0], p[1]] == labels[p[0], p[2]]) == p[3] and p[1] != p[2] for p in pairs)


def test_instruction_sensitivity_hand_case():
    e = np.array([[[1.0, 0.0], [0.0, 2.0]],      # instruction 0 (group a)
                  [[0.0, 1.0], [0.0, 1.0]],      # instruction 1 (group b)
                  [[1.0, 1.0], [3.0, 0.0]]])     # instruction 2 (group a): not compared with 0
    # pairs (0,1): cos 0 and 1 -> 0.5; (1,2): cos 1/sqrt2 and 0 -> 0.3536
    want = (0.5 + (1 / math.sqrt(2)) / 2) / 2
    assert instruction_sensitivity(e, ["a", "b", "a"]) == pytest.approx(want)


def test_spearman_ceiling_closed_form():
    gold = np.array([0, 1] * 500)
    assert spearman_ceiling(gold) == pytest.approx(math.sqrt(3 * 0.25), abs=1e-3)
    # n = 4 by hand: ranks 1..4 against gold ranks 2, 2, 2, 4 -> Pearson 3 / sqrt(5 * 3)
    assert spearman_ceiling([0, 0, 0, 1]) == pytest.approx(3 / math.sqrt(15), rel=1e-12)


def test_an_evaluator_of_a_subset_reads_those_instructions_from_full_embeddings():
    """An attribute held out: the evaluator of its 3 instructions gives the same metrics from the (12, n, d)
    embeddings as from its own (3, n, d) ones, equal to NMI and Spearman computed by hand on those rows; with
    one attribute the sensitivity is undefined (NaN); unknown instructions are refused."""
    from icml26.papers.instemb import AttrWorld
    from icml26.papers.instemb.analysis import inst_sts_spearman, instruction_nmi
    from icml26.papers.instemb.evaluation import EVAL_INSTRUCTIONS, AttrWorldEval

    world = AttrWorld.sample(40, np.random.default_rng(0))
    subset = [("position", p) for p in range(3)]
    evaluator = AttrWorldEval(world, 200, np.random.default_rng(1), instructions=subset)
    full = np.random.default_rng(2).normal(size=(len(EVAL_INSTRUCTIONS), 40, 8))
    rows = full[[EVAL_INSTRUCTIONS.index(i) for i in subset]]
    a, b = evaluator.metrics(full), evaluator.metrics(rows)
    assert (a.nmi, a.spearman) == (b.nmi, b.spearman) and math.isnan(a.sensitivity)
    labels = np.stack([world.values["position"]] * 3)
    assert a.nmi == pytest.approx(float(instruction_nmi(rows, labels, seed=0).mean()))
    assert a.spearman == pytest.approx(inst_sts_spearman(rows, evaluator.pairs))
    assert int(evaluator.pairs[:, 0].max()) <= 2  # pairs index the subset's instructions
    with pytest.raises(ValueError, match="instructions"):
        AttrWorldEval(world, 10, np.random.default_rng(1), instructions=[("weight", 0)])
    with pytest.raises(ValueError, match="cover 5 instructions"):
        evaluator.metrics(full[:5])
