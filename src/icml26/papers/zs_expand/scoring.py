"""ZSL and GZSL scores of synthesised unseen-class rows, shared by the benchmark and the real section."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icml26.papers.zs_expand.analysis import gzsl_scores, per_class_accuracy, restricted_predictions
from icml26.papers.zs_expand.head import inject

__all__ = ["score_rows"]


def score_rows(rows: np.ndarray, head: torch.nn.Linear, x_test: np.ndarray, y_test: np.ndarray,
               seen: np.ndarray, unseen: np.ndarray, similar: np.ndarray, distinct: np.ndarray) -> dict[str, Any]:
    """ZSL and GZSL figures of synthesised unseen rows ``[w | b]`` ``(U, D+1)`` for a seen ``head``."""
    d = x_test.shape[1]
    test_unseen = np.isin(y_test, unseen)
    logits_u = x_test[test_unseen] @ rows[:, :d].T + rows[:, d]
    preds = restricted_predictions(logits_u, np.arange(len(unseen)), unseen)
    acc = per_class_accuracy(preds, y_test[test_unseen], unseen)
    pos = {c: i for i, c in enumerate(unseen)}
    extended = inject(head, torch.as_tensor(rows[:, :d]), bias=torch.as_tensor(rows[:, d]))
    with torch.no_grad():
        logits = extended(torch.as_tensor(x_test, dtype=extended.weight.dtype)).numpy()
    ids = np.concatenate([seen, unseen])
    known = np.isin(y_test, ids)  # samples of classes not in the head yet (a later expansion round) do not count
    s, u, h = gzsl_scores(ids[logits[known].argmax(1)], y_test[known], seen, unseen)
    return {"zsl": float(acc.mean()),
            "zsl_similar": float(np.mean([acc[pos[c]] for c in similar])) if len(similar) else math.nan,
            "zsl_distinct": float(np.mean([acc[pos[c]] for c in distinct])) if len(distinct) else math.nan,
            "gzsl_seen": s, "gzsl_unseen": u, "gzsl_h": h, "per_class": acc.tolist()}
