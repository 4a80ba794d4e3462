"""Fox reproduction: metrics and check values from raw captions, answers and head masks (pure, hand-tested).

* :func:`mentioned_objects`: the object words of a caption, in order (every mention counts);
* :func:`chair`: CHAIR_I = hallucinated mentions / mentions, CHAIR_S = captions with a hallucinated
  mention / captions, recall = ground-truth objects mentioned / ground-truth objects (Rohrbach et
  al. 2018; OPERA's and SID's ``chair.py`` count every mention);
* :func:`pope_scores`: accuracy, precision, recall, F1 (``yes`` is the positive class), yes-ratio;
* :func:`precision_at_k`: mean over rows of ``|selected ∩ reference| / |selected|``;
* :func:`top_k_mask`: the ``k`` largest entries per row (ties to the lower index);
* :func:`relative_reduction`: ``1 − method / baseline``;
* :func:`object_steps`: where a caption names an object, and whether that mention is hallucinated.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Collection, Iterable, Sequence

import numpy as np

from icml26.common.argcheck import check_int

__all__ = [
    "ChairScores",
    "chair",
    "mentioned_objects",
    "object_steps",
    "pope_scores",
    "precision_at_k",
    "relative_reduction",
    "top_k_mask",
]


def mentioned_objects(words: Iterable[str], objects: Collection[str]) -> list[str]:
    """The words of ``words`` that name an object of ``objects``, in order (repeats kept)."""
    objects = set(objects)
    return [w for w in words if w in objects]


@dataclasses.dataclass(frozen=True)
class ChairScores:
    """CHAIR over a set of captions.

    Attributes:
        chair_i: hallucinated object mentions / object mentions (NaN if nothing was mentioned).
        chair_s: captions with at least one hallucinated mention / captions.
        recall: distinct ground-truth objects mentioned / ground-truth objects (NaN if none).
        mentions: object mentions in all captions.
        hallucinated: hallucinated mentions.
        captions: number of captions.
    """

    chair_i: float
    chair_s: float
    recall: float
    mentions: int
    hallucinated: int
    captions: int

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in dataclasses.asdict(self).items()}


def chair(mentions: Sequence[Sequence[str]], truths: Sequence[Collection[str]]) -> ChairScores:
    """CHAIR_I, CHAIR_S and recall of captions' object mentions against each image's objects.

    Args:
        mentions: per caption, the object words it mentions (:func:`mentioned_objects`).
        truths: per caption, the objects in the image.
    """
    if len(mentions) != len(truths):
        raise ValueError(f"mentions ({len(mentions)}) and truths ({len(truths)}) must have one entry per caption")
    if not mentions:
        raise ValueError("chair needs at least one caption")
    n_mentions = n_hall = n_bad_captions = n_truth = n_found = 0
    for said, truth in zip(mentions, truths):
        truth = set(truth)
        wrong = [w for w in said if w not in truth]
        n_mentions += len(said)
        n_hall += len(wrong)
        n_bad_captions += bool(wrong)
        n_truth += len(truth)
        n_found += len(truth & set(said))
    return ChairScores(
        chair_i=n_hall / n_mentions if n_mentions else math.nan,
        chair_s=n_bad_captions / len(mentions),
        recall=n_found / n_truth if n_truth else math.nan,
        mentions=n_mentions, hallucinated=n_hall, captions=len(mentions))


def pope_scores(predicted_yes: Sequence[bool], answer_yes: Sequence[bool]) -> dict[str, float]:
    """POPE's accuracy, precision, recall, F1 (``yes`` positive) and the ratio of ``yes`` predictions.

    Precision (and F1) are 0 when nothing is predicted ``yes``; recall (and F1) 0 when no answer is
    ``yes``.
    """
    pred = np.asarray(predicted_yes, dtype=bool).ravel()
    true = np.asarray(answer_yes, dtype=bool).ravel()
    if pred.shape != true.shape or pred.size == 0:
        raise ValueError(f"predicted_yes ({pred.size}) and answer_yes ({true.size}) must be non-empty and equal-sized")
    tp = int((pred & true).sum())
    fp = int((pred & ~true).sum())
    fn = int((~pred & true).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": float((pred == true).mean()), "precision": precision, "recall": recall, "f1": f1,
            "yes_ratio": float(pred.mean())}


def top_k_mask(values: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the ``k`` largest entries along the last axis (ties go to the lower index)."""
    v = np.asarray(values, dtype=np.float64)
    k = check_int(k, "k")
    if v.ndim < 1 or not 1 <= k <= v.shape[-1]:
        raise ValueError(f"k={k} must lie in [1, {v.shape[-1] if v.ndim else 0}]")
    if not np.isfinite(v).all():
        raise ValueError("values must be finite (they hold NaN or inf)")
    order = np.argsort(-v, axis=-1, kind="stable")[..., :k]
    mask = np.zeros(v.shape, dtype=bool)
    np.put_along_axis(mask, order, True, axis=-1)
    return mask


def precision_at_k(selected: np.ndarray, reference: np.ndarray) -> float:
    """Mean over rows of ``|selected ∩ reference| / |selected|`` (boolean ``(..., H)`` masks).

    With ``|selected| = |reference| = k`` out of ``H``, a random selection scores ``k/H`` in expectation.
    """
    sel = np.asarray(selected, dtype=bool)
    ref = np.asarray(reference, dtype=bool)
    if sel.shape != ref.shape or sel.ndim < 1:
        raise ValueError(f"selected {sel.shape} and reference {ref.shape} must be boolean masks of one shape")
    counts = sel.sum(-1)
    if (counts == 0).any():
        raise ValueError("every row of selected must select at least one head")
    return float(((sel & ref).sum(-1) / counts).mean())


def relative_reduction(method: float, baseline: float) -> float:
    """``1 − method / baseline`` (e.g. 0.291 for "29.1 % lower"); NaN when the baseline is 0."""
    return 1.0 - method / baseline if baseline else math.nan


def object_steps(words: Sequence[str], truth: Collection[str], objects: Collection[str]) -> list[tuple[int, bool]]:
    """``(index in words, hallucinated)`` for every word of ``words`` that names an object of ``objects``;
    a mention is hallucinated when its object is not in ``truth``. The steps at which the two streams must
    disagree for Fox to change a mention (see :mod:`.pathway`)."""
    if isinstance(words, str) or isinstance(truth, str):
        raise TypeError("words and truth must be sequences of words, not a single string")
    objects, truth = set(objects), set(truth)
    return [(i, w not in truth) for i, w in enumerate(words) if w in objects]
