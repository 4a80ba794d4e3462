"""Metrics shared by several papers."""

from __future__ import annotations

import numpy as np

__all__ = ["binary_auc", "loss_threshold_mia_auc"]


def binary_auc(scores_positive, scores_negative) -> float:
    """Area under the ROC curve for telling positives (higher scores) from negatives.

    Equals P(s⁺ > s⁻) + ½·P(s⁺ = s⁻) over independent draws (the Mann–Whitney
    statistic); computed with scikit-learn's ``roc_auc_score``.
    """
    from sklearn.metrics import roc_auc_score

    pos = np.asarray(scores_positive, dtype=np.float64).ravel()
    neg = np.asarray(scores_negative, dtype=np.float64).ravel()
    if pos.size == 0 or neg.size == 0:
        raise ValueError(f"need scores for both groups, got {pos.size} positives and {neg.size} negatives")
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise ValueError("scores must be finite")
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    return float(roc_auc_score(labels, np.concatenate([pos, neg])))


def loss_threshold_mia_auc(member_losses, nonmember_losses) -> float:
    """AUC of the loss-threshold membership-inference attack (Yeom et al., 2018).

    The attacker calls a sample a member when its loss is low, so the score is the
    negative loss. 0.5 means the attacker cannot tell members from non-members; compare
    an unlearned model's AUC with a retrained reference's, ``|AUC - AUC_ref|``, rather
    than reading lower as better.
    """
    return binary_auc(-np.asarray(member_losses, dtype=np.float64), -np.asarray(nonmember_losses, dtype=np.float64))
