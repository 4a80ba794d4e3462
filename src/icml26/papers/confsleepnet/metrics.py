"""Sleep-staging metrics: accuracy, macro-F1, Cohen's kappa, and uncertainty-ranked selection.

* macro-F1: the mean over classes of ``F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)``, over the
  classes present in the truth or the predictions (scikit-learn's default);
* Cohen's kappa: ``(p_o - p_e) / (1 - p_e)`` with observed agreement ``p_o`` and chance
  agreement ``p_e = sum_c (row_c / n)(col_c / n)`` of the confusion matrix;
* selective accuracy at coverage ``c``: accuracy on the ``ceil(c n)`` epochs with the
  lowest uncertainty (ties keep the input order).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from icml26.common.argcheck import check_int, check_real

__all__ = ["accuracy", "accuracy_coverage_curve", "cohen_kappa", "confusion_matrix", "macro_f1",
           "selective_accuracy"]


def _as_labels(values, name: str) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    arr = np.asarray(values).ravel()
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
        raise ValueError(f"{name} must hold integer class labels (NaN or fractional values found)")
    return arr.astype(np.int64)


def _labels(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    t = _as_labels(y_true, "y_true")
    p = _as_labels(y_pred, "y_pred")
    if t.shape != p.shape or t.size == 0:
        raise ValueError(f"y_true and y_pred must be non-empty and of equal length, got {t.size} and {p.size}")
    if min(t.min(), p.min()) < 0:
        raise ValueError("labels must be >= 0")
    return t, p


def confusion_matrix(y_true, y_pred, num_classes: int | None = None) -> np.ndarray:
    """``M[i, j]`` = number of epochs of true class ``i`` predicted as ``j``, ``(K, K)``."""
    t, p = _labels(y_true, y_pred)
    if num_classes is not None:
        check_int(num_classes, "num_classes", low=1)
    k = int(max(t.max(), p.max()) + 1) if num_classes is None else int(num_classes)
    if num_classes is not None and k <= max(t.max(), p.max()):
        raise ValueError(f"num_classes={num_classes!r} must be an integer above every label "
                         f"(largest label {max(t.max(), p.max())})")
    return np.bincount(t * k + p, minlength=k * k).reshape(k, k)


def accuracy(y_true, y_pred) -> float:
    """Share of epochs predicted right."""
    t, p = _labels(y_true, y_pred)
    return float((t == p).mean())


def macro_f1(y_true, y_pred) -> float:
    """Unweighted mean of per-class F1 over the classes present in ``y_true`` or ``y_pred``."""
    m = confusion_matrix(y_true, y_pred)
    tp = np.diag(m).astype(np.float64)
    fp, fn = m.sum(0) - tp, m.sum(1) - tp
    present = (m.sum(0) + m.sum(1)) > 0
    # F1_c = 2 TP / (2 TP + FP + FN)
    return float((2 * tp[present] / (2 * tp[present] + fp[present] + fn[present])).mean())


def cohen_kappa(y_true, y_pred) -> float:
    """Cohen's kappa of predictions against the truth."""
    m = confusion_matrix(y_true, y_pred).astype(np.float64)
    n = m.sum()
    p_o = np.trace(m) / n
    # p_e = sum_c (row_c / n)(col_c / n)
    p_e = float((m.sum(1) / n) @ (m.sum(0) / n))
    # kappa = (p_o - p_e) / (1 - p_e)
    return float((p_o - p_e) / (1 - p_e)) if p_e < 1 else 1.0


def selective_accuracy(correct, uncertainty, coverage: float) -> float:
    """Accuracy on the ``ceil(coverage * n)`` least uncertain epochs.

    Args:
        correct: ``(n,)`` bool, whether each epoch was staged right.
        uncertainty: ``(n,)`` the score to rank by (lower = kept first).
        coverage: share kept, in ``(0, 1]``.
    """
    check_real(coverage, "coverage", low=0.0, low_open=True, high=1.0)
    return accuracy_coverage_curve(correct, uncertainty, [coverage])[0]


def accuracy_coverage_curve(correct, uncertainty, coverages: Sequence[float]) -> list[float]:
    """:func:`selective_accuracy` at each coverage."""
    if hasattr(correct, "detach"):
        correct = correct.detach().cpu().numpy()
    if hasattr(uncertainty, "detach"):
        uncertainty = uncertainty.detach().cpu().numpy()
    ok = np.asarray(correct, dtype=np.float64).ravel()
    u = np.asarray(uncertainty, dtype=np.float64).ravel()
    if ok.shape != u.shape or ok.size == 0:
        raise ValueError("correct and uncertainty must be non-empty and of equal length")
    if not np.isfinite(u).all():
        raise ValueError("uncertainty contains NaN or inf; it cannot rank the epochs")
    if not np.isin(ok, (0.0, 1.0)).all():
        raise ValueError("correct must be booleans (or 0/1), one per epoch")
    ranked = ok[np.argsort(u, kind="stable")]
    cumulative = np.cumsum(ranked)
    out = []
    for i, c in enumerate(coverages):
        check_real(c, f"coverages[{i}]", low=0.0, low_open=True, high=1.0)
        keep = max(1, math.ceil(c * ok.size - 1e-9))
        out.append(float(cumulative[keep - 1] / keep))
    return out
