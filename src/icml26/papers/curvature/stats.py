"""Correlations with controls, and the paired test of the perturbation experiment.

* Pearson ``r``; Spearman ``rho`` (Pearson of average ranks);
* partial correlation of ``x`` and ``y`` given covariates ``Z``: the Pearson correlation of
  the least-squares residuals of ``x`` and ``y`` on ``[1, Z]`` (for Spearman, of ranks on
  ranks);
* a paired t-test of ``Delta H`` against 0.
"""

from __future__ import annotations

import dataclasses

from typing import Literal

import numpy as np
from scipy import stats as _stats

__all__ = ["PairedTest", "cluster_bootstrap_spearman", "paired_test", "partial_correlation", "pearson", "spearman"]

Method = Literal["pearson", "spearman"]


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    try:
        x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise TypeError("x and y must be numbers (arrays or tensors)") from None
    if x.shape != y.shape:
        raise ValueError(f"x has {x.size} values and y has {y.size}; they must be paired")
    return x, y


def pearson(x, y) -> float:
    """Pearson correlation (NaN if fewer than 3 pairs, a constant input, or any NaN: NaN in, NaN out)."""
    x, y = _pair(x, y)
    if x.size < 3:
        return float("nan")
    xc, yc = x - x.mean(), y - y.mean()
    denom = np.sqrt((xc @ xc) * (yc @ yc))
    # r = sum (x - x_bar)(y - y_bar) / sqrt(sum (x - x_bar)^2 sum (y - y_bar)^2)
    return float(xc @ yc / denom) if denom > 0 else float("nan")


def spearman(x, y) -> float:
    """Spearman rank correlation (ties get average ranks; NaN in, NaN out)."""
    x, y = _pair(x, y)
    return pearson(_stats.rankdata(x), _stats.rankdata(y))


def partial_correlation(x, y, covariates, method: Method = "pearson") -> float:
    """Correlation of ``x`` and ``y`` after regressing both on ``[1, covariates]`` (NaN if any input is).

    Args:
        x, y: ``(n,)`` paired values.
        covariates: ``(n,)`` or ``(n, k)`` controls (e.g. token position, log frequency).
        method: ``"pearson"`` or ``"spearman"`` (ranks every variable first).
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method={method!r} must be 'pearson' or 'spearman'")
    x, y = _pair(x, y)
    z = np.asarray(covariates, dtype=np.float64)
    z = z.reshape(-1, 1) if z.ndim == 1 else z
    if z.ndim != 2 or z.shape[0] != x.size:
        raise ValueError(f"covariates must be (n,) or (n, k) with n = {x.size} rows, got shape {z.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all() and np.isfinite(z).all()):
        return float("nan")  # NaN in, NaN out (as pearson and spearman)
    if method == "spearman":
        x, y = _stats.rankdata(x), _stats.rankdata(y)
        z = np.column_stack([_stats.rankdata(col) for col in z.T]) if z.shape[1] else z
    design = np.column_stack([np.ones_like(x), z])
    coef, *_ = np.linalg.lstsq(design, np.column_stack([x, y]), rcond=None)
    residuals = np.column_stack([x, y]) - design @ coef
    return pearson(residuals[:, 0], residuals[:, 1])


@dataclasses.dataclass(frozen=True)
class PairedTest:
    """A paired t-test of differences against 0 (:func:`paired_test`).

    Also readable as a mapping (``result["mean"]``), as the function returned a dict before.
    """

    mean: float
    sem: float
    """Standard error of the mean (``ddof = 1``)."""
    t: float
    p: float
    """Two-sided p-value."""
    p_less: float
    """One-sided p-value for the alternative ``mean < 0``."""
    frac_negative: float
    n: float
    """Finite differences tested."""
    n_nonfinite: float = 0.0
    """Non-finite differences left out (e.g. from a patched forward pass that diverged)."""

    def __getitem__(self, key: str) -> float:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def paired_test(delta) -> PairedTest:
    """Paired t-test of per-position differences against 0 (two-sided and one-sided ``< 0``).

    Non-finite differences are left out and counted in ``n_nonfinite``; fewer than 2
    finite ones is a ``ValueError``.
    """
    d = np.asarray(delta, dtype=np.float64).ravel()
    finite = np.isfinite(d)
    n_nonfinite = float((~finite).sum())
    d = d[finite]
    if d.size < 2:
        raise ValueError(f"a paired test needs at least 2 finite differences, got {d.size}")
    test = _stats.ttest_1samp(d, 0.0)
    less = _stats.ttest_1samp(d, 0.0, alternative="less")
    return PairedTest(mean=float(d.mean()), sem=float(d.std(ddof=1) / np.sqrt(d.size)),
                      t=float(test.statistic), p=float(test.pvalue), p_less=float(less.pvalue),
                      frac_negative=float((d < 0).mean()), n=float(d.size), n_nonfinite=n_nonfinite)


def cluster_bootstrap_spearman(x, y, clusters, *, n_boot: int = 1000, level: float = 0.95,
                               rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of Spearman rho, resampling whole clusters (e.g. text windows).

    Tokens of one window share their context (and ``kappa(t; W)`` overlaps between neighbours), so
    they are not independent; resampling windows keeps that dependence. The ranks are those of the
    full sample (a resample is not re-ranked), so each replicate is a weighted Pearson correlation of
    fixed ranks, with weights = how often each token's cluster was drawn.

    Args:
        x: ``(n,)`` or ``(k, n)`` (e.g. one row per layer); y: ``(n,)``; clusters: ``(n,)`` labels.
            Non-finite pairs are left out of each row.
        n_boot: resamples; level: coverage of the interval.
        rng: NumPy generator (default: seed 0).

    Returns:
        ``(low, high)``, each ``()`` or ``(k,)``.
    """
    xs = np.asarray(x, dtype=np.float64)
    single = xs.ndim == 1
    xs = np.atleast_2d(xs)
    ys = np.asarray(y, dtype=np.float64).ravel()
    labels = np.asarray(clusters).ravel()
    if xs.ndim != 2 or xs.shape[1] != ys.size or labels.size != ys.size:
        raise ValueError(f"x {np.shape(x)}, y {np.shape(y)} and clusters {np.shape(clusters)} must share their "
                         f"last axis")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"n_boot={n_boot!r} must be an integer >= 2")
    if not 0 < level < 1:
        raise ValueError(f"level={level} must lie in (0, 1)")
    rng = np.random.default_rng(0) if rng is None else rng
    _, index = np.unique(labels, return_inverse=True)
    n_clusters = int(index.max()) + 1
    # cluster draw counts: (n_boot, n_clusters) -> per-token weights (n_boot, n)
    counts = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(np.float64)
    low, high = np.full(len(xs), np.nan), np.full(len(xs), np.nan)
    q = (1 - level) / 2
    shared: tuple | None = None  # what depends on the kept tokens only, reused by rows that keep the same ones
    for row, xr in enumerate(xs):
        ok = np.isfinite(xr) & np.isfinite(ys)
        if ok.sum() < 3:
            continue
        if shared is None or not np.array_equal(ok, shared[0]):
            # (n_boot, kept tokens) weights: the largest array here (480 MB for 60k tokens), built once
            # for all the rows (layers) with the same finite tokens instead of once per row
            ry = _stats.rankdata(ys[ok])
            w = counts[:, index[ok]]
            total = w.sum(axis=1)
            my = (w @ ry) / total
            shared = (ok, ry, w, total, my, (w @ (ry * ry)) / total - my**2)
        _, ry, w, total, my, vy = shared
        rx = _stats.rankdata(xr[ok])
        mx = (w @ rx) / total
        # weighted Pearson of the ranks: cov_w / sqrt(var_w(x) var_w(y))
        cov = (w @ (rx * ry)) / total - mx * my
        vx = (w @ (rx * rx)) / total - mx**2
        rho = cov / np.sqrt(vx * vy)
        low[row], high[row] = np.quantile(rho, [q, 1 - q])
    return (low[0], high[0]) if single else (low, high)
