"""DMANet reproduction: the model-free leakage table and the forecast summaries (tested by hand).

* :func:`cascade_leakage`: the leakage of a stride-2 downsampler applied ``l`` times,
  ``l = 1..levels`` (total stride ``2^l``), via :func:`~icml26.papers.dmanet.spectral.aliasing_leakage`;
* :func:`spectrum_bands`: the power share of a ``(T, C)`` series in log-spaced frequency bands;
* :func:`summarize_fits`: mean and spread of test MSE/MAE over seeds, per horizon;
* :func:`mse_ratio`: a method's mean MSE over a baseline's;
* :func:`paired_ratio`: the geometric-mean ratio of per-seed errors with its paired 95 % interval;
* :func:`ridge_aliasing_check` (with :func:`ridge_fit`): the model-free aliasing check:
  ridge forecasters on naively strided vs filtered-then-strided input windows;
* :func:`units_to_exclude`: how many units a per-unit mean needs before its t interval leaves a
  reference value (e.g. a ratio of 1), at the observed mean and spread.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from icml26.common.stats import log_ratio_interval, ratio
from icml26.papers.dmanet.spectral import aliasing_leakage

__all__ = ["HorizonSummary", "PairedRatio", "RidgeAliasing", "cascade_leakage", "mse_ratio", "paired_ratio",
           "ridge_aliasing_check", "ridge_fit", "spectrum_bands", "summarize_fits", "units_to_exclude"]


def cascade_leakage(signal: torch.Tensor, operators: Mapping[str, Callable], levels: int) -> dict[str, list[float]]:
    """``{operator name: [leakage at level 1, …, levels]}`` of each ``op(x, 2)`` cascaded ``l`` times.

    ``signal``: ``(…, T)`` with time last; each operator is ``op(x, stride) -> x_down``.
    """
    if levels < 1:
        raise ValueError(f"levels={levels} must be at least 1")
    out: dict[str, list[float]] = {}
    for name, op in operators.items():
        values = []
        for level in range(1, levels + 1):
            def cascade(x: torch.Tensor, level: int = level, op=op) -> torch.Tensor:
                for _ in range(level):
                    x = op(x, 2)
                return x
            values.append(aliasing_leakage(signal, cascade, stride=2 ** level))
        out[name] = values
    return out


def spectrum_bands(series: np.ndarray, bins: int = 128) -> tuple[list[float], list[float]]:
    """Mean frequency (cycles per sample) and mean power share of each log-spaced band of a ``(T, C)``
    series (the mean over channels of the demeaned power spectrum, normalised to sum 1 over bins)."""
    series = np.asarray(series, dtype=np.float64)
    if series.ndim != 2 or series.shape[0] < 4:
        raise ValueError(f"series must be (T, C) with T >= 4, got {series.shape}")
    power = (np.abs(np.fft.rfft(series - series.mean(0), axis=0)) ** 2).mean(1)
    freqs = np.fft.rfftfreq(series.shape[0])
    edges = np.unique(np.geomspace(1, len(freqs) - 1, bins + 1).astype(int))
    x, y = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        x.append(float(freqs[lo:hi].mean()))
        y.append(float(power[lo:hi].mean() / power.sum()))
    return x, y


@dataclasses.dataclass(frozen=True)
class HorizonSummary:
    """Test errors of one model at one horizon over seeds (standardised scale)."""

    mse: float
    mse_std: float
    mae: float


def summarize_fits(mse: Sequence[float], mae: Sequence[float]) -> HorizonSummary:
    """Mean MSE, its (population) standard deviation over seeds, and mean MAE."""
    mse_arr, mae_arr = np.asarray(mse, dtype=float), np.asarray(mae, dtype=float)
    if mse_arr.size == 0 or mse_arr.shape != mae_arr.shape:
        raise ValueError("mse and mae must be non-empty and of equal length (one per seed)")
    return HorizonSummary(mse=float(mse_arr.mean()), mse_std=float(mse_arr.std()), mae=float(mae_arr.mean()))


def mse_ratio(method: float, baseline: float) -> float:
    """``method / baseline`` (below 1: the method's error is lower): :func:`icml26.common.stats.ratio`,
    NaN when either is missing or the baseline is 0."""
    return ratio(method, baseline)


@dataclasses.dataclass(frozen=True)
class RidgeAliasing:
    """Model-free aliasing check: ridge forecasters fed a strided input window.

    Per level ``l`` (stride ``2^l``): ``naive_mse`` with the window sliced (``x[::s]``),
    ``filtered_mse`` with it low-passed at the new Nyquist bin first (:func:`filtered_downsample`,
    per window); ``full_mse``: the same ridge on the full-resolution window (reference).
    ``alphas``: the ridge penalty chosen on the validation split for each arm (naive, filtered).
    """

    strides: tuple[int, ...]
    naive_mse: tuple[float, ...]
    filtered_mse: tuple[float, ...]
    full_mse: float
    alphas: tuple[tuple[float, float], ...]

    @property
    def ratios(self) -> tuple[float, ...]:
        """filtered / naive test MSE per level (below 1: aliasing hurts the naive input)."""
        return tuple(mse_ratio(f, n) for f, n in zip(self.filtered_mse, self.naive_mse))


def ridge_fit(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression with an unpenalised intercept: ``W = (X_c^T X_c + alpha I)^{-1} X_c^T Y_c``
    on centred ``x (n, p)`` and ``y (n, q)``; returns ``(W (p, q), b (q,))`` with ``y ≈ x W + b``."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"x (n, p) and y (n, q) must share n >= 2 rows, got {x.shape} and {y.shape}")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha={alpha} must be finite and >= 0")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    mx, my = x.mean(0), y.mean(0)
    xc, yc = x - mx, y - my
    # W = (X^T X + alpha I)^{-1} X^T Y
    w = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ yc)
    return w, my - mx @ w


def ridge_aliasing_check(train: np.ndarray, val: np.ndarray, test: np.ndarray, seq_len: int, horizon: int,
                         levels: int, *, alphas: Sequence[float] = (1e-1, 1.0, 10.0, 100.0, 1e3, 1e4),
                         step: int = 1) -> RidgeAliasing:
    """Ridge forecasts of the next ``horizon`` steps (every channel) from the window's last
    ``seq_len`` steps, strided by ``2^l`` naively or after the anti-aliasing filter, ``l = 1..levels``.

    ``train``, ``val``, ``test``: ``(T, C)`` segments (e.g. :func:`standardized_splits`); the ridge
    penalty of each arm and level is chosen from ``alphas`` on ``val``, the MSE is measured on
    ``test``. Both arms see the same windows and the same number of features.
    """
    from icml26.papers.dmanet.data import sliding_windows
    from icml26.papers.dmanet.spectral import filtered_downsample, naive_downsample

    if levels < 1 or seq_len % 2 ** levels:
        raise ValueError(f"seq_len={seq_len} must be divisible by 2**levels = {2 ** levels} (levels >= 1)")
    if not alphas:
        raise ValueError("alphas must list at least one ridge penalty")
    windows = {name: sliding_windows(seg, seq_len, horizon, step=step)
               for name, seg in (("train", train), ("val", val), ("test", test))}

    def features(x: np.ndarray, op, stride: int) -> np.ndarray:
        down = x if op is None else op(np.ascontiguousarray(x.transpose(0, 2, 1)), stride)  # (N, C, L/s)
        return np.asarray(down).reshape(len(x), -1)

    def fit_score(op, stride: int) -> tuple[float, float]:
        xs = {k: features(v[0].astype(np.float64), op, stride) for k, v in windows.items()}
        ys = {k: v[1].reshape(len(v[1]), -1).astype(np.float64) for k, v in windows.items()}
        mx, my = xs["train"].mean(0), ys["train"].mean(0)
        xc, yc = xs["train"] - mx, ys["train"] - my
        gram, cross = xc.T @ xc, xc.T @ yc
        best = None
        for alpha in alphas:
            # the closed form of ridge_fit, with X^T X and X^T Y computed once per arm
            w = np.linalg.solve(gram + alpha * np.eye(len(gram)), cross)
            b = my - mx @ w
            val_mse = float(np.mean((xs["val"] @ w + b - ys["val"]) ** 2))
            if best is None or val_mse < best[0]:
                best = (val_mse, alpha, w, b)
        _, alpha, w, b = best
        return float(np.mean((xs["test"] @ w + b - ys["test"]) ** 2)), float(alpha)

    full_mse, _ = fit_score(None, 1)
    strides, naive, filtered, chosen = [], [], [], []
    for level in range(1, levels + 1):
        s = 2 ** level
        n_mse, n_alpha = fit_score(naive_downsample, s)
        f_mse, f_alpha = fit_score(filtered_downsample, s)
        strides.append(s)
        naive.append(n_mse)
        filtered.append(f_mse)
        chosen.append((n_alpha, f_alpha))
    return RidgeAliasing(tuple(strides), tuple(naive), tuple(filtered), full_mse, tuple(chosen))


@dataclasses.dataclass(frozen=True)
class PairedRatio:
    """A method's MSE over a baseline's, paired by seed.

    ``ratio``: the geometric mean of the per-seed ratios, ``exp(mean log r_s)``; ``ci``: its
    95 % interval, ``exp(mean ± t_{0.975, n-1} sd / sqrt n)`` of ``log r_s`` (``None`` for one
    seed); ``wins``: seeds on which the method's MSE is lower; ``n``: seeds.
    """

    ratio: float
    ci: tuple[float, float] | None
    wins: int
    n: int


def paired_ratio(method: Sequence[float], baseline: Sequence[float], confidence: float = 0.95) -> PairedRatio:
    """:class:`PairedRatio` of per-seed errors ``method[s]`` and ``baseline[s]`` (same seed, same data)."""
    a, b = np.asarray(method, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("method and baseline must be equal-length, non-empty sequences (one value per seed)")
    if not (np.all(a > 0) and np.all(b > 0) and np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("errors must be finite and positive")
    interval = log_ratio_interval(a, b, confidence)
    ci = (interval.low, interval.high) if interval.n > 1 else None
    return PairedRatio(ratio=interval.mean, ci=ci, wins=int((a < b).sum()), n=interval.n)


def units_to_exclude(values: Sequence[float], reference: float = 1.0, confidence: float = 0.95,
                     limit: int = 100_000) -> int | None:
    """The fewest units ``n >= 2`` whose Student-t interval excludes ``reference``, if the mean and the
    standard deviation (``ddof = 1``) of ``values`` stayed as observed.

    ``n`` is the smallest with ``t_{(1+confidence)/2, n-1} * sd / sqrt(n) < |mean - reference|``;
    ``None`` when the mean equals the reference or more than ``limit`` units would be needed. E.g. the
    per-seed ratios 1.028, 1.100, 1.168 (mean 1.099, sd 0.070) need 5 units to exclude 1.
    """
    from scipy import stats as _stats

    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or not np.isfinite(x).all():
        raise ValueError("values must be at least two finite numbers (one per unit)")
    if not (math.isfinite(reference) and 0.0 < confidence < 1.0):
        raise ValueError(f"reference={reference} must be finite and confidence={confidence} in (0, 1)")
    distance, sd = abs(float(x.mean()) - reference), float(x.std(ddof=1))
    if distance == 0.0:
        return None
    n = np.arange(2, max(2, int(limit)) + 1)
    # half-width t_{q, n-1} sd / sqrt(n), q = (1 + confidence) / 2
    half = _stats.t.ppf((1.0 + confidence) / 2.0, n - 1) * sd / np.sqrt(n)
    enough = np.flatnonzero(half < distance)
    return int(n[enough[0]]) if enough.size else None
