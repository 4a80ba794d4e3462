"""Pieces of the DMANet reproduction: building an arm, the forecasting fits, the
``filter_axis="time"`` family, and the strided-only diagnostic (:class:`StridedOnlyDMANet`). Each
section returns a dataclass."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np
import torch

from icml26.contract import RunContext
from icml26.papers.dmanet.analysis import PairedRatio, paired_ratio
from icml26.papers.dmanet.baselines import DLinear, PatchTST
from icml26.papers.dmanet.config import Config
from icml26.papers.dmanet.model import DMANet
from icml26.papers.dmanet.data import sliding_windows
from icml26.papers.dmanet.training import ForecastFitResult, fit_forecaster

__all__ = ["Forecasts", "StridedOnly", "StridedOnlyDMANet", "TimeFamily", "build_model", "forecasts", "strided_only",
           "time_family"]

log = logging.getLogger(__name__)


def build_model(name: str, seq_len: int, pred_len: int, channels: int, config: Config,
           filter_axis: str | None = None) -> torch.nn.Module:
    common = dict(d_model=config.d_model, levels=config.levels, e_layers=config.e_layers,
                  filter_axis=filter_axis or config.filter_axis, dropout=config.dropout)
    if name == "dmanet":
        return DMANet(seq_len, pred_len, channels, **common)
    if name == "dmanet_no_filter":
        return DMANet(seq_len, pred_len, channels, anti_alias=False, **common)
    if name == "dmanet_nyquist":  # cutoff at the new Nyquist bin instead of the capacity ratio
        return DMANet(seq_len, pred_len, channels, cutoff_ratio=2.0 / 2, **common)
    if name == "timemixer_pool":
        return DMANet(seq_len, pred_len, channels, anti_alias=False, downsampler="avgpool", **common)
    if name == "dlinear":
        return DLinear(seq_len, pred_len, channels)
    if name == "patchtst":
        heads = 4 if config.patchtst_d_model % 4 == 0 else 1
        return PatchTST(seq_len, pred_len, channels, d_model=config.patchtst_d_model, n_heads=heads,
                        n_layers=config.patchtst_layers, d_ff=2 * config.patchtst_d_model,
                        dropout=config.dropout)
    raise ValueError(f"unknown model {name!r}")


@dataclasses.dataclass(frozen=True)
class Forecasts:
    """Every forecasting fit, ``fits[(dataset, model, horizon)]`` one per seed index, and one test
    window's forecasts (``example``: ``history``, ``truth`` and one series per model shown)."""

    fits: dict[tuple[str, str, int], list[ForecastFitResult]]
    example: dict[str, Any]


EXAMPLE_MODELS = ("dmanet", "dmanet_no_filter", "dlinear")


def forecasts(config: Config, ctx: RunContext, splits, series) -> Forecasts:
    """Fit every (dataset, horizon, model, seed index) with one loop; every arm starts from the same
    torch seed ``1000 · seed + seed index`` and sees the same batch order."""
    fits: dict[tuple[str, str, int], list[ForecastFitResult]] = {}
    example: dict[str, Any] = {}
    jobs = [(d, h, m, s) for d in config.datasets for h in config.horizons for m in config.models
            for s in range(config.seeds)]
    for dataset, horizon, model_name, seed_index in ctx.progress(jobs, desc="fits"):
        data, seq_len = splits[dataset], series[dataset][1]
        torch.manual_seed(ctx.seed * 1000 + seed_index)  # same initial seed for every arm
        model = build_model(model_name, seq_len, horizon, data.n_channels, config).to(ctx.device)
        fit = fit_forecaster(
            model, data, horizon, epochs=config.epochs, batch_size=config.batch_size, lr=config.lr,
            loss=config.loss, patience=config.patience, train_step=config.train_step,
            max_batches_per_epoch=config.max_batches_per_epoch or None,
            generator=ctx.torch_generator("batches", seed_index), device=ctx.device,
        )
        fits.setdefault((dataset, model_name, horizon), []).append(fit)
        log.info("%s H=%d %s seed %d: test mse %.4f (%.1f s)", dataset, horizon, model_name, seed_index,
                 fit.test_mse, fit.train_seconds)
        if seed_index == 0 and horizon == config.horizons[0] and dataset == config.datasets[0] \
                and model_name in EXAMPLE_MODELS:
            x, y = sliding_windows(data.test, seq_len, horizon, step=max(1, horizon))
            pick = min(len(x) - 1, 3)
            model.eval()
            with torch.no_grad():
                pred = model(torch.as_tensor(x[pick: pick + 1], device=ctx.device)).cpu().numpy()[0, :, 0]
            example.setdefault("history", x[pick, :, 0].tolist())
            example.setdefault("truth", y[pick, :, 0].tolist())
            example[model_name] = pred.tolist()
    return Forecasts(fits, example)


@dataclasses.dataclass(frozen=True)
class TimeFamily:
    """The ``filter_axis="time"`` family on the ``synthetic`` set: per-seed test MSE (mean over horizons) of
    DMANet with the authors' cutoff (``method``) and its no-filter ablation (``baseline``), and their
    :class:`PairedRatio`; with ``"nyquist"`` in ``config.time_cutoffs`` (the folding tones) also DMANet with the cutoff at the new Nyquist
    bin (``nyquist``), paired with the no-filter arm (``nyquist_paired``) and with the authors' cutoff
    (``nyquist_vs_authors``: Nyquist / authors)."""

    method: tuple[float, ...]
    baseline: tuple[float, ...]
    paired: PairedRatio
    nyquist: tuple[float, ...] | None = None
    nyquist_paired: PairedRatio | None = None
    nyquist_vs_authors: PairedRatio | None = None


def time_family(config: Config, ctx: RunContext, splits, series) -> TimeFamily:
    """Train the time-axis arms ``time_family_seeds`` times on ``config.synthetic``; every arm of one seed
    index starts from the same torch seed and sees the same batches (stream ``time_batches``)."""
    data, seq_len = splits[config.synthetic], series[config.synthetic][1]
    mse: dict[str, list[float]] = {"dmanet": [], "dmanet_no_filter": []}
    if "nyquist" in config.time_cutoffs:
        mse["dmanet_nyquist"] = []  # cutoff_ratio = 2/s: the new Nyquist bin at every level
    jobs = [(m, s) for s in range(config.time_family_seeds) for m in mse]
    for model_name, seed_index in ctx.progress(jobs, desc="time-axis family"):
        per_h = []
        for horizon in config.horizons:
            torch.manual_seed(ctx.seed * 1000 + 500 + seed_index)  # same initial seed for every arm
            model = build_model(model_name, seq_len, horizon, data.n_channels, config, filter_axis="time").to(ctx.device)
            fit = fit_forecaster(
                model, data, horizon, epochs=config.epochs, batch_size=config.batch_size, lr=config.lr,
                loss=config.loss, patience=config.patience, train_step=config.train_step,
                max_batches_per_epoch=config.max_batches_per_epoch or None,
                generator=ctx.torch_generator("time_batches", seed_index), device=ctx.device)
            per_h.append(fit.test_mse)
        mse[model_name].append(float(np.mean(per_h)))
    method, baseline = tuple(mse["dmanet"]), tuple(mse["dmanet_no_filter"])
    if "dmanet_nyquist" not in mse:
        return TimeFamily(method, baseline, paired_ratio(method, baseline))
    nyquist = tuple(mse["dmanet_nyquist"])
    return TimeFamily(method, baseline, paired_ratio(method, baseline), nyquist=nyquist,
                      nyquist_paired=paired_ratio(nyquist, baseline), nyquist_vs_authors=paired_ratio(nyquist, method))


class StridedOnlyDMANet(DMANet):
    """Diagnostic DMANet without a full-resolution path (ours, not the paper's model).

    The multiscale encoder works on the time axis, its residual ``Z + MSEnc(Z)`` is dropped, and only
    the coarsest level's interpolated output ``U_M`` reaches the embedding: every bit of the input
    passes through ``levels`` cascaded stride-2 steps (total stride ``2^levels``). With the residual
    and the finer levels in place (the real DMANet) the network can route around aliased levels; here
    it cannot, so filter vs no-filter shows whether the filter matters where aliasing is forced on it.
    Takes :class:`DMANet`'s arguments except ``filter_axis`` and ``e_layers`` (fixed: ``"time"``, 1).
    """

    def __init__(self, seq_len: int, pred_len: int, n_channels: int, d_model: int = 512, levels: int = 3,
                 **kwargs: Any) -> None:
        for fixed in ("filter_axis", "e_layers"):
            if fixed in kwargs:
                raise TypeError(f"StridedOnlyDMANet fixes {fixed}; do not pass it")
        super().__init__(seq_len, pred_len, n_channels, d_model, levels, filter_axis="time", e_layers=1, **kwargs)

    def _encode(self, z: torch.Tensor) -> torch.Tensor:
        _, upsampled = self.encoders[0](z, return_levels=True)
        return upsampled[-1]


@dataclasses.dataclass(frozen=True)
class StridedOnly:
    """The strided-only diagnostic: per level (total stride ``2^l``), per-seed test MSE (``synthetic`` set) with and
    without the filter (first horizon), and their :class:`PairedRatio`."""

    strides: tuple[int, ...]
    filtered: tuple[tuple[float, ...], ...]
    unfiltered: tuple[tuple[float, ...], ...]
    paired: tuple[PairedRatio, ...]


def strided_only(config: Config, ctx: RunContext, splits, series) -> StridedOnly:
    """Train :class:`StridedOnlyDMANet` at levels ``1 .. config.levels``, with and without the filter,
    ``config.strided_seeds`` seeds each (same initial seed for both arms), on the ``synthetic`` set at the
    first horizon."""
    data, seq_len = splits[config.synthetic], series[config.synthetic][1]
    horizon = config.horizons[0]
    levels = range(1, config.levels + 1)
    mse: dict[tuple[int, bool], list[float]] = {(lv, f): [] for lv in levels for f in (True, False)}
    jobs = [(lv, s, f) for lv in levels for s in range(config.strided_seeds) for f in (True, False)]
    for level, seed_index, filtered in ctx.progress(jobs, desc="strided-only diagnostic"):
        torch.manual_seed(ctx.seed * 1000 + 700 + 10 * level + seed_index)  # same initial seed for both arms
        model = StridedOnlyDMANet(seq_len, horizon, data.n_channels, d_model=config.d_model, levels=level,
                                  anti_alias=filtered, dropout=config.dropout).to(ctx.device)
        fit = fit_forecaster(
            model, data, horizon, epochs=config.epochs, batch_size=config.batch_size, lr=config.lr,
            loss=config.loss, patience=config.patience, train_step=config.train_step,
            max_batches_per_epoch=config.max_batches_per_epoch or None,
            generator=ctx.torch_generator("strided_batches", 10 * level + seed_index), device=ctx.device)
        mse[(level, filtered)].append(fit.test_mse)
    return StridedOnly(
        strides=tuple(2 ** lv for lv in levels),
        filtered=tuple(tuple(mse[(lv, True)]) for lv in levels),
        unfiltered=tuple(tuple(mse[(lv, False)]) for lv in levels),
        paired=tuple(paired_ratio(mse[(lv, True)], mse[(lv, False)]) for lv in levels))
