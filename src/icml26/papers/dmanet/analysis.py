"""DMANet reproduction: the model-free leakage table and the forecast summaries (tested by hand).

* :func:`cascade_leakage`: the leakage of a stride-2 downsampler applied ``l`` times,
  ``l = 1..levels`` (total stride ``2^l``), via :func:`~icml26.papers.dmanet.spectral.aliasing_leakage`;
* :func:`spectrum_bands`: the power share of a ``(T, C)`` series in log-spaced frequency bands;
* :func:`summarize_fits`: mean and spread of test MSE/MAE over seeds, per horizon;
* :func:`mse_ratio`: a method's mean MSE over a baseline's.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from icml26.papers.dmanet.spectral import aliasing_leakage

__all__ = ["HorizonSummary", "cascade_leakage", "mse_ratio", "spectrum_bands", "summarize_fits"]


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
    """``method / baseline`` (below 1: the method's error is lower); NaN when either is missing."""
    if not (math.isfinite(method) and math.isfinite(baseline)) or baseline == 0:
        return math.nan
    return method / baseline
