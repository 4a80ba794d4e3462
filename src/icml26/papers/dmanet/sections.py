"""Pieces of the DMANet reproduction: building an arm, and the ``filter_axis="time"`` family."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from icml26.contract import RunContext
from icml26.papers.dmanet.analysis import PairedRatio, paired_ratio
from icml26.papers.dmanet.baselines import DLinear, PatchTST
from icml26.papers.dmanet.model import DMANet
from icml26.papers.dmanet.training import fit_forecaster

__all__ = ["TimeFamily", "build_model", "time_family"]


def build_model(name: str, seq_len: int, pred_len: int, channels: int, config: Any,
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
class TimeFamily:
    """The ``filter_axis="time"`` family: per-seed chaotic test MSE (mean over horizons) of DMANet
    (``method``) and its no-filter ablation (``baseline``), and their :class:`PairedRatio`."""

    method: tuple[float, ...]
    baseline: tuple[float, ...]
    paired: PairedRatio


def time_family(config: Any, ctx: RunContext, splits, series) -> TimeFamily:
    data, seq_len = splits["chaotic"], series["chaotic"][1]
    mse: dict[str, list[list[float]]] = {"dmanet": [], "dmanet_no_filter": []}
    jobs = [(m, s) for s in range(config.time_family_seeds) for m in mse]
    for model_name, seed_index in ctx.progress(jobs, desc="time-axis family"):
        per_h = []
        for horizon in config.horizons:
            torch.manual_seed(ctx.seed * 1000 + 500 + seed_index)  # same initial seed for both arms
            model = build_model(model_name, seq_len, horizon, data.n_channels, config, filter_axis="time").to(ctx.device)
            fit = fit_forecaster(
                model, data, horizon, epochs=config.epochs, batch_size=config.batch_size, lr=config.lr,
                loss=config.loss, patience=config.patience, train_step=config.train_step,
                max_batches_per_epoch=config.max_batches_per_epoch or None,
                generator=ctx.torch_generator("time_batches", seed_index), device=ctx.device)
            per_h.append(fit.test_mse)
        mse[model_name].append(float(np.mean(per_h)))
    method, baseline = tuple(mse["dmanet"]), tuple(mse["dmanet_no_filter"])
    return TimeFamily(method, baseline, paired_ratio(method, baseline))
