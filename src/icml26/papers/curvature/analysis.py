"""The curvature reproduction's verdicts from per-layer statistics (pure NumPy, tested by hand).

The library's model analysis is :func:`~icml26.papers.curvature.layerwise.layerwise_curvature_entropy`
(this module was its home before the reproduction's verdict functions moved in; the library
part now lives in :mod:`icml26.papers.curvature.layerwise`).

* :func:`best_inner_layer`: the inner layer (``1 .. L-1``) of maximal Spearman rho;
* :func:`straightening_summary`: curvature at layer 0, at the flattest later layer, and the drop;
* :func:`correlation_summary`: the correlations at the layer of maximal Spearman rho;
* :func:`fraction_removed`, :func:`relative_change`, :func:`effect_ratio`: the regulariser's and the control's check values.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["CorrelationSummary", "StraighteningSummary", "best_inner_layer", "correlation_summary",
           "effect_ratio", "fraction_removed", "relative_change", "straightening_summary"]


def _finite_argmax(values: np.ndarray, name: str) -> int:
    if not np.isfinite(values).any():
        raise ValueError(f"no layer has a finite {name}")
    return int(np.nanargmax(values))


def best_inner_layer(spearman) -> int:
    """The inner layer ``1 .. L-1`` with the largest Spearman rho (over all layers if there is no
    finite inner one, e.g. ``L = 1``)."""
    rho = np.asarray(spearman, dtype=float)
    inner = rho[1:-1]
    if inner.size == 0 or not np.isfinite(inner).any():
        return _finite_argmax(rho, "spearman")
    return 1 + int(np.nanargmax(inner))


@dataclasses.dataclass(frozen=True)
class StraighteningSummary:
    """Mean turning angle (rad) at layer 0, at the flattest layer after it, and the drop between them."""

    curvature_layer0: float
    curvature_min: float
    min_curvature_layer: float
    curvature_drop: float


def straightening_summary(mean_curvature) -> StraighteningSummary:
    """From the per-layer mean curvature ``(L + 1,)``: the flattest layer among ``1 .. L``."""
    curv = np.asarray(mean_curvature, dtype=float)
    if curv.size < 2:
        raise ValueError(f"mean_curvature needs layers 0 .. L with L >= 1, got {curv.size} values")
    deepest = 1 + _finite_argmin(curv[1:])
    return StraighteningSummary(curvature_layer0=float(curv[0]), curvature_min=float(curv[deepest]),
                                min_curvature_layer=float(deepest), curvature_drop=float(curv[0] - curv[deepest]))


def _finite_argmin(values: np.ndarray) -> int:
    if not np.isfinite(values).any():
        raise ValueError("no layer after 0 has a finite mean curvature")
    return int(np.nanargmin(values))


@dataclasses.dataclass(frozen=True)
class CorrelationSummary:
    """Correlations of ``kappa`` with ``H`` at the layer of maximal Spearman rho, and the largest ``|rho|``."""

    best_layer: float
    best_spearman: float
    best_pearson: float
    best_partial_spearman: float
    max_abs_spearman: float


def correlation_summary(spearman, pearson, partial_spearman) -> CorrelationSummary:
    """The per-layer statistics ``(L + 1,)`` read at ``argmax spearman``."""
    rho = np.asarray(spearman, dtype=float)
    best = _finite_argmax(rho, "spearman")
    return CorrelationSummary(best_layer=float(best), best_spearman=float(rho[best]),
                              best_pearson=float(np.asarray(pearson, dtype=float)[best]),
                              best_partial_spearman=float(np.asarray(partial_spearman, dtype=float)[best]),
                              max_abs_spearman=float(np.nanmax(np.abs(rho))))


def relative_change(new: float, old: float) -> float:
    """``new / old - 1`` (a cut is negative; ``-relative_change`` is the fraction removed)."""
    if old == 0:
        raise ValueError("old=0: a relative change from 0 is undefined")
    return new / old - 1.0


def fraction_removed(new: float, old: float) -> float:
    """``1 - new / old``: the fraction of ``old`` that ``new`` removes (negative when it adds)."""
    if old == 0:
        raise ValueError("old=0: a fraction of 0 is undefined")
    return 1.0 - new / old


def effect_ratio(control_mean: float, effect_mean: float) -> float:
    """``|control| / |effect|`` (``inf`` when the effect is exactly 0)."""
    effect = abs(effect_mean)
    return abs(control_mean) / effect if effect > 0 else math.inf
