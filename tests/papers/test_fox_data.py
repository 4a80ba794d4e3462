"""Fox: the data (planted priors, POPE's adversarial negatives) and the analysis by hand (CHAIR, POPE
scores against sklearn, precision at k).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.papers.fox import (
    chair,
    mentioned_objects,
    pope_scores,
    precision_at_k,
    top_k_mask,
)
from icml26.papers.fox.analysis import relative_reduction
from icml26.papers.fox.scenes import (
    ANCHORS,
    PARTNER,
    SHAPES,
    caption_tokens,
    pope_questions,
    sample_adversarial_scenes,
    sample_scenes,
)


pytestmark = pytest.mark.usefixtures("one_thread")


# -- the data -----------------------------------------------------------------------------------

def test_scenes_plant_the_prior_and_the_adversarial_set_lacks_the_partner():
    rng = np.random.default_rng(0)
    scenes = sample_scenes(4000, rng)
    with_anchor = [s for s in scenes if any(a in s.shapes for a in ANCHORS)]
    rate = np.mean([PARTNER[next(a for a in s.shapes if a in ANCHORS)] in s.shapes for s in with_anchor])
    assert abs(rate - 0.85) < 3 * math.sqrt(0.85 * 0.15 / len(with_anchor))
    adversarial = sample_adversarial_scenes(500, rng)
    for s in adversarial:
        anchor = next(a for a in s.shapes if a in ANCHORS)
        assert PARTNER[anchor] not in s.shapes and 1 <= len(s.shapes) <= 3
    # captions name objects in shape order, so an anchor comes before any partner
    s = next(s for s in scenes if "circle" in s.shapes and "cross" in s.shapes)
    words = caption_tokens(s)
    assert words.index("circle") < words.index("cross") and words[-1] == "."


def test_pope_adversarial_negatives_are_the_co_occurring_partner():
    rng = np.random.default_rng(1)
    train = sample_scenes(3000, rng)
    freq = {x: float(sum(x in s.shapes for s in train)) for x in SHAPES}
    co = {}
    for s in train:
        for a in s.shapes:
            for b in s.shapes:
                if a != b:
                    co[(a, b)] = co.get((a, b), 0.0) + 1
    scenes = [sc for sc in sample_adversarial_scenes(50, rng) if len(sc.shapes) == 1]
    qs = pope_questions(scenes, "adversarial", rng, freq, co)
    for (i, shape, answer) in qs:
        assert answer == (shape in scenes[i].shapes)
        if not answer:
            assert shape == PARTNER[scenes[i].shapes[0]]
    assert sum(a for _, _, a in qs) * 2 == len(qs)


# -- analysis (hand computations) ---------------------------------------------------------------

def test_chair_by_hand():
    mentions = [mentioned_objects("a red circle and a blue cross".split(), SHAPES), ["square"], ["ring", "ring"]]
    truths = [{"circle"}, {"square", "bar"}, {"ring", "frame"}]
    s = chair(mentions, truths)
    # mentions: 2 + 1 + 2 = 5, hallucinated: cross = 1 -> CHAIR_I = 1/5; captions with one: 1/3
    # recall: circle, square, ring of 5 ground-truth objects = 3/5
    assert (s.chair_i, s.chair_s, s.recall) == pytest.approx((0.2, 1 / 3, 0.6))
    assert relative_reduction(0.71, 1.0) == pytest.approx(0.29)


def test_pope_scores_against_sklearn():
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    rng = np.random.default_rng(0)
    pred, true = rng.random(200) < 0.6, rng.random(200) < 0.5
    got = pope_scores(pred, true)
    assert got["f1"] == pytest.approx(f1_score(true, pred))
    assert got["precision"] == pytest.approx(precision_score(true, pred))
    assert got["recall"] == pytest.approx(recall_score(true, pred))
    assert got["accuracy"] == pytest.approx(accuracy_score(true, pred))
    assert got["yes_ratio"] == pytest.approx(pred.mean())


def test_precision_at_k_and_top_k_by_hand():
    assert top_k_mask(np.array([[0.1, 0.5, 0.3, 0.5]]), 2).tolist() == [[False, True, False, True]]
    sel = np.array([[True, True, False, False], [False, True, True, False]])
    ref = np.array([[True, False, True, False], [False, True, True, False]])
    assert precision_at_k(sel, ref) == pytest.approx((1 / 2 + 2 / 2) / 2)
