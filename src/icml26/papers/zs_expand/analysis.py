"""Metrics of the reproduction, from raw arrays (pure NumPy; each tested against a hand computation).

* :func:`per_class_accuracy`: the accuracy of each class (Xian et al.'s per-class mean is its mean);
* :func:`gzsl_scores`: GZSL seen accuracy ``S``, unseen accuracy ``U`` and ``H = 2SU/(S+U)``;
* :func:`harmonic_mean`;
* :func:`restricted_predictions`: the argmax over a subset of a head's classes (ZSL: unseen only);
* :func:`intervention_variance`: the variance of synthesised weights across nuisance interventions,
  relative to their mean squared norm;
* :func:`ratio`: a guarded quotient for check values.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from icml26.common.stats import ratio

__all__ = ["gzsl_scores", "harmonic_mean", "intervention_variance", "per_class_accuracy", "ratio",
           "restricted_predictions"]


def _int_array(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {a.dtype}")
    return a.astype(np.int64)


def per_class_accuracy(preds: Any, labels: Any, classes: Any) -> np.ndarray:
    """``acc_c = #{i : labels_i = c, preds_i = c} / #{i : labels_i = c}`` for each ``c`` in ``classes``.

    ``preds``, ``labels``: ``(n,)`` integer class ids; ``classes``: the ids to score, in the order
    returned. ``ValueError`` when a class in ``classes`` has no sample.
    """
    preds, labels, classes = _int_array(preds, "preds"), _int_array(labels, "labels"), _int_array(classes, "classes")
    if preds.shape != labels.shape:
        raise ValueError(f"preds {preds.shape} and labels {labels.shape} must have the same length")
    out = np.empty(len(classes))
    for i, c in enumerate(classes):
        mask = labels == c
        if not mask.any():
            raise ValueError(f"class {c} has no sample in labels; drop it from classes")
        out[i] = float((preds[mask] == c).mean())
    return out


def harmonic_mean(seen: float, unseen: float) -> float:
    """``H = 2 S U / (S + U)``; 0 when ``S + U = 0``; NaN (an accuracy not measured) propagates."""
    for name, value in (("seen", seen), ("unseen", unseen)):
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"{name}={value!r} must be an accuracy (a real number)")
    s, u = float(seen), float(unseen)
    if math.isnan(s) or math.isnan(u):
        return math.nan
    if s < 0 or u < 0:
        raise ValueError(f"seen={s} and unseen={u} must be non-negative accuracies")
    if math.isinf(s) or math.isinf(u):
        raise ValueError(f"seen={s} and unseen={u} must be finite accuracies")
    return 0.0 if s + u == 0 else 2 * s * u / (s + u)


def gzsl_scores(preds: Any, labels: Any, seen: Any, unseen: Any) -> tuple[float, float, float]:
    """Generalised ZSL: ``(S, U, H)`` from predictions of the extended head over seen ∪ unseen.

    ``S`` is the per-class mean accuracy over the ``seen`` classes (on their samples), ``U`` over
    the ``unseen`` ones, ``H = 2SU/(S+U)`` (Xian et al., 2018). ``preds``, ``labels``: ``(n,)`` ids;
    ``seen``, ``unseen``: disjoint id lists, each class with at least one sample; every label must be in
    one of them (a sample of neither split would be silently ignored: restrict the samples first).
    """
    seen, unseen = _int_array(seen, "seen"), _int_array(unseen, "unseen")
    if len(seen) == 0 or len(unseen) == 0:
        raise ValueError("seen and unseen must each name at least one class")
    if np.intersect1d(seen, unseen).size:
        raise ValueError(f"seen and unseen share classes {np.intersect1d(seen, unseen).tolist()}; they must be disjoint")
    stray = np.setdiff1d(_int_array(labels, "labels"), np.concatenate([seen, unseen]))
    if stray.size:
        raise ValueError(f"labels hold classes in neither seen nor unseen ({stray[:5].tolist()}); keep only the "
                         "samples of the scored classes")
    s = float(per_class_accuracy(preds, labels, seen).mean())
    u = float(per_class_accuracy(preds, labels, unseen).mean())
    return s, u, harmonic_mean(s, u)


def restricted_predictions(logits: Any, columns: Any, class_ids: Any = None) -> np.ndarray:
    """Predicted ids when only ``columns`` of ``logits`` ``(n, K)`` compete: ``class_ids[argmax_j logits[:, columns[j]]]``.

    ``class_ids`` (default ``columns``) names the class of each kept column. Ties go to the first.
    """
    z = np.asarray(logits.detach().cpu() if hasattr(logits, "detach") else logits, dtype=np.float64)
    cols = _int_array(columns, "columns")
    ids = cols if class_ids is None else _int_array(class_ids, "class_ids")
    if z.ndim != 2:
        raise ValueError(f"logits must be (n, K), got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ValueError("logits contains NaN or inf: the argmax would be arbitrary")
    if len(cols) == 0 or cols.min() < 0 or cols.max() >= z.shape[1]:
        raise ValueError(f"columns must be non-empty indices into the {z.shape[1]} logits")
    if len(ids) != len(cols):
        raise ValueError(f"class_ids has {len(ids)} entries for {len(cols)} columns")
    return ids[z[:, cols].argmax(1)]


def intervention_variance(view_weights: Any) -> float:
    """Relative variance of synthesised weights across nuisance interventions.

    ``view_weights``: ``(C, M, N, D)``, the rows synthesised from each single view ``s_c^(m,n)``.
    Returns ``mean_(c,m) Σ_k Var_n[ŵ_k] / mean_(c,m,n) ‖ŵ‖²`` (population variance over ``N``):
    scale-free, so shrinking every row cannot lower it. 0 when every view gives the same rows.
    """
    w = np.asarray(view_weights.detach().cpu() if hasattr(view_weights, "detach") else view_weights,
                   dtype=np.float64)
    if w.ndim != 4:
        raise ValueError(f"view_weights must be (C, M, N, D), got shape {w.shape}")
    if w.shape[2] < 2:
        raise ValueError("view_weights needs at least 2 nuisance views (axis 2) to have a variance")
    if not np.isfinite(w).all():
        raise ValueError("view_weights contains NaN or inf")
    power = float((w ** 2).sum(-1).mean())
    if power == 0:
        raise ValueError("view_weights is all zero: the relative variance is undefined")
    return float(w.var(axis=2).sum(-1).mean() / power)
