"""The curvature reproduction's verdicts from per-layer statistics (pure NumPy, tested by hand).

The library's model analysis is :func:`~icml26.papers.curvature.layerwise.layerwise_curvature_entropy`
(this module was its home before the reproduction's verdict functions moved in; the library
part now lives in :mod:`icml26.papers.curvature.layerwise`).

* :func:`best_inner_layer`: the inner layer (``1 .. L-1``) of maximal Spearman rho;
* :func:`straightening_summary`: curvature at layer 0, at the flattest later layer, and the drop;
* :func:`correlation_summary`: the correlations at the layer of maximal Spearman rho;
* :func:`fraction_removed`, :func:`relative_change`, :func:`effect_ratio`: the regulariser's and the control's check values;
* :func:`initial_slope`: ``d Delta H / d epsilon`` at 0 from a through-origin quadratic fit per prefix;
* :func:`entropy_per_angle`: per prefix, the through-origin regression of entropy slopes on angle slopes
  over directions (nats per radian of the last turning angle, at a fixed step size);
* :func:`interpolated_bigram`: the validation loss of an interpolated bigram (the bar a model must beat
  before its correlations mean anything).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["BigramFit", "CorrelationSummary", "StraighteningSummary", "best_inner_layer", "correlation_summary",
           "effect_ratio", "entropy_per_angle", "fraction_removed", "initial_slope", "interpolated_bigram",
           "relative_change",
           "straightening_summary"]


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


def initial_slope(epsilons, delta) -> np.ndarray:
    """Per row, the initial slope ``a`` of ``Delta H(epsilon) = a epsilon + b epsilon^2`` (least squares).

    ``Delta H(0) = 0`` by construction, so the fit has no intercept; the quadratic term absorbs the
    curvature of ``H`` along the direction, leaving ``a`` = the first-order effect ``dH/d epsilon``
    at 0. With one size the slope is ``Delta H / epsilon``.

    Args:
        epsilons: ``(k,)`` distinct positive sizes.
        delta: ``(k,)`` or ``(k, n)``: ``Delta H`` at each size (rows of
            :class:`~icml26.papers.curvature.perturb.PerturbationSweep`).

    Returns:
        ``()`` or ``(n,)`` slopes (NaN for a column with a non-finite value).
    """
    e = np.asarray(epsilons, dtype=np.float64).ravel()
    d = np.asarray(delta, dtype=np.float64)
    if e.size == 0 or not np.all(np.isfinite(e)) or np.any(e <= 0) or np.unique(e).size != e.size:
        raise ValueError(f"epsilons={epsilons!r} must be distinct positive finite sizes")
    if d.shape[:1] != e.shape:
        raise ValueError(f"delta has shape {d.shape}; its first axis must match the {e.size} epsilons")
    design = np.column_stack([e, e**2]) if e.size >= 2 else e[:, None]
    flat = d.reshape(e.size, -1)
    coef, *_ = np.linalg.lstsq(design, np.nan_to_num(flat), rcond=None)
    slopes = coef[0]
    slopes[~np.all(np.isfinite(flat), axis=0)] = np.nan
    return slopes.reshape(d.shape[1:]) if d.ndim > 1 else np.float64(slopes[0])


def entropy_per_angle(entropy_slopes, angle_slopes) -> np.ndarray:
    """Per prefix, ``beta = sum_k h_k phi_k / sum_k phi_k^2``: the least-squares line through the origin
    of the entropy slopes ``h_k = dH/d epsilon`` on the angle slopes ``phi_k = d phi_{t-1}/d epsilon``
    over directions ``k`` of one step size.

    Both slopes are linear in the direction at small ``epsilon`` (``h_k = <g_H, d_k>``,
    ``phi_k = <g_phi, d_k>``), so over isotropic directions ``beta`` estimates
    ``<g_H, g_phi> / |g_phi|^2``: the entropy change per radian of angle change, with the parts of the
    step that leave the angle unchanged (its length, its norm) averaged out. No intercept: a direction
    and its opposite give opposite slopes.

    Args:
        entropy_slopes: ``(directions, prefixes)`` nats per unit ``epsilon``.
        angle_slopes: ``(directions, prefixes)`` radians per unit ``epsilon``.

    Returns:
        ``(prefixes,)`` nats per radian; NaN for a prefix with a non-finite slope or no angle change.
    """
    h = np.asarray(entropy_slopes, dtype=np.float64)
    phi = np.asarray(angle_slopes, dtype=np.float64)
    if h.shape != phi.shape or h.ndim != 2:
        raise ValueError(f"entropy_slopes {h.shape} and angle_slopes {phi.shape} must both be (directions, prefixes)")
    ok = np.all(np.isfinite(h), axis=0) & np.all(np.isfinite(phi), axis=0)
    hz, pz = np.where(ok, h, 0.0), np.where(ok, phi, 0.0)
    den = (pz * pz).sum(0)
    # beta = sum_k h_k phi_k / sum_k phi_k^2
    return np.where(ok & (den > 0), (hz * pz).sum(0) / np.where(den > 0, den, 1.0), np.nan)


@dataclasses.dataclass(frozen=True)
class BigramFit:
    """An interpolated bigram's loss on held-out ids (:func:`interpolated_bigram`)."""

    loss: float
    """Mean next-token cross-entropy on the evaluation ids (nats)."""
    weight: float
    """``lambda`` of the bigram term, chosen on a held-out tail of the training ids."""
    tuning_loss: float
    """The loss at ``weight`` on that held-out tail (NaN when ``weights`` held one value: no choice made)."""


def _bigram_nll(train: np.ndarray, ids: np.ndarray, vocab_size: int, weights: np.ndarray) -> np.ndarray:
    """Mean NLL of ``ids[..., 1:]`` given ``ids[..., :-1]`` (pairs within each row) for each weight."""
    unigram = (np.bincount(train, minlength=vocab_size) + 1.0) / (train.size + vocab_size)
    keys = train[:-1] * vocab_size + train[1:]
    pairs, pair_counts = np.unique(keys, return_counts=True)
    context_counts = np.bincount(train[:-1], minlength=vocab_size).astype(np.float64)
    prev, nxt = ids[..., :-1].ravel(), ids[..., 1:].ravel()
    query = prev * vocab_size + nxt
    at = np.clip(np.searchsorted(pairs, query), 0, pairs.size - 1)  # train has >= 2 ids: >= 1 pair
    c_pair = np.where(pairs[at] == query, pair_counts[at], 0).astype(np.float64)
    c_ctx = context_counts[prev]
    ml = np.divide(c_pair, c_ctx, out=np.zeros_like(c_pair), where=c_ctx > 0)
    uni = unigram[nxt]
    # p(w | v) = lambda c(v, w) / c(v) + (1 - lambda) p_uni(w);  p_uni(w) = (c(w) + 1) / (N + V)
    # (an unseen context v falls back to p_uni alone)
    lam = np.where(c_ctx[None, :] > 0, weights[:, None], 0.0)
    return -np.log(lam * ml[None, :] + (1.0 - lam) * uni[None, :]).mean(axis=1)


def interpolated_bigram(train_ids, eval_ids, vocab_size: int, *, tune_fraction: float = 0.1,
                        weights=None) -> BigramFit:
    """Cross-entropy of a Jelinek-Mercer interpolated bigram on ``eval_ids``.

    ``p(w | v) = lambda c(v, w) / c(v) + (1 - lambda) (c(w) + 1) / (N + V)`` with counts from
    ``train_ids``. ``lambda`` is chosen on a grid by the loss on the last ``tune_fraction`` of
    ``train_ids`` (counts from the rest), never on ``eval_ids``; the counts are then refitted on
    all of ``train_ids``. Contexts never seen in training use the unigram alone.

    Args:
        train_ids: a flat token-id stream (tensor or array).
        eval_ids: a flat stream ``(n,)``, or windows ``(rows, T)`` whose pairs are taken within each row
            (as a model scoring each window separately).
        vocab_size: ``V``.
        tune_fraction: held-out share of ``train_ids`` for choosing ``lambda``.
        weights: candidate ``lambda`` values in ``[0, 1)`` (default ``0, 0.01, ..., 0.99``); a single
            value is used as given.
    """
    from icml26.common.argcheck import check_int, check_real

    vocab_size = check_int(vocab_size, "vocab_size", low=1)
    check_real(tune_fraction, "tune_fraction", low=0.0, high=1.0, low_open=True, high_open=True)
    streams = []
    for name, ids in (("train_ids", train_ids), ("eval_ids", eval_ids)):
        arr = np.asarray(ids.cpu() if hasattr(ids, "cpu") else ids)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integer token ids, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        arr = arr.ravel() if name == "train_ids" or arr.ndim != 2 else arr
        if arr.shape[-1] < 2:
            raise ValueError(f"{name} has {arr.shape[-1]} tokens per row; a bigram needs at least 2")
        if arr.min() < 0 or arr.max() >= vocab_size:
            raise ValueError(f"{name} must lie in [0, {vocab_size}); got [{arr.min()}, {arr.max()}]")
        streams.append(arr)
    train, evaluation = streams
    grid = np.arange(100) / 100.0 if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if grid.size == 0 or not np.all((grid >= 0) & (grid < 1)):
        raise ValueError(f"weights must be a non-empty grid in [0, 1), got {weights!r}")
    if grid.size == 1:  # nothing to choose
        best, tuning = 0, np.array([math.nan])
    else:
        cut = int(round(train.size * (1.0 - tune_fraction)))
        if cut < 2 or train.size - cut < 2:
            raise ValueError(f"tune_fraction={tune_fraction} leaves fewer than 2 tokens on one side of {train.size}")
        tuning = _bigram_nll(train[:cut], train[cut:], vocab_size, grid)
        best = int(np.argmin(tuning))
    loss = float(_bigram_nll(train, evaluation, vocab_size, grid[best : best + 1])[0])
    return BigramFit(loss=loss, weight=float(grid[best]), tuning_loss=float(tuning[best]))
