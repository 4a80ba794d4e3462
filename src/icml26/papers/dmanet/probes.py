"""DMANet's tiny modules for the module matrix and its hostile-input probes."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.dmanet import (
    AntiAliasDownsample,
    DLinear,
    DMANet,
    ForecastFitResult,
    ForecastSplits,
    MultiScaleEncoder,
    PatchTST,
    RevIN,
    alias_frequency,
    aliasing_leakage,
    aliasing_lorenz,
    anti_alias_filter,
    avgpool_downsample,
    capacity_ratio,
    channel_schedule,
    cutoff_bin,
    evaluate,
    filtered_downsample,
    fit_forecaster,
    folding_tones,
    fourier_upsample,
    fredf_loss,
    frequency_loss,
    joint_interpolation,
    load_sunspots,
    load_taylor,
    lorenz63,
    moving_average,
    mse_loss,
    naive_downsample,
    nyquist_bin,
    sliding_windows,
    spectral_mix,
    standardized_splits,
)


def _series(g: torch.Generator, batch: int = 2, length: int = 32, channels: int = 3) -> torch.Tensor:
    return torch.randn(batch, length, channels, generator=g)


def _nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[0] = float("nan")
    return x


class _RevINRoundTrip(torch.nn.Module):
    """RevIN as a module the matrix can call: normalise, then denormalise a shifted copy."""

    def __init__(self) -> None:
        super().__init__()
        self.revin = RevIN(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_hat, stats = self.revin.normalize(x)
        return self.revin.denormalize(x_hat * 0.5, stats)


_SMALL = dict(d_model=16, levels=2, dropout=0.0)
_SPLITS = standardized_splits(np.sin(np.arange(400) / 5.0)[:, None], 24)

MODULES = [
    ModuleCase("DMANet", build=lambda: DMANet(32, 8, 3, **_SMALL), inputs=lambda g: (_series(g),)),
    ModuleCase("AntiAliasDownsample", build=lambda: AntiAliasDownsample(4, 2, dropout=0.0),
               inputs=lambda g: (torch.randn(2, 4, 16, generator=g),)),
    ModuleCase("MultiScaleEncoder", build=lambda: MultiScaleEncoder(3, 16, levels=2, dropout=0.0),
               inputs=lambda g: (torch.randn(2, 3, 16, generator=g),)),
    # RevIN holds only gamma and beta; a round trip through both directions gives each a gradient
    ModuleCase("RevIN", build=_RevINRoundTrip, inputs=lambda g: (_series(g),)),
    ModuleCase("DLinear", build=lambda: DLinear(32, 8, 3), inputs=lambda g: (_series(g),)),
    ModuleCase("PatchTST", build=lambda: PatchTST(32, 8, 3, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                                  dropout=0.0), inputs=lambda g: (_series(g),)),
]

HOSTILE = [
    # Fourier operators (non-finite input rejected)
    Probe("anti_alias_filter with NaN", lambda: anti_alias_filter(_nan(torch.randn(16)), cutoff=3), match="NaN"),
    Probe("anti_alias_filter with inf", lambda: anti_alias_filter(torch.tensor([1.0, math.inf, 0.0, 1.0]), 0.5),
          match="NaN or inf"),
    Probe("anti_alias_filter ratio and cutoff together", lambda: anti_alias_filter(torch.randn(16), 0.5, cutoff=3),
          match="exactly one"),
    Probe("anti_alias_filter cutoff=2.5", lambda: anti_alias_filter(torch.randn(16), cutoff=2.5), raises=TypeError,
          match="cutoff"),
    Probe("anti_alias_filter cutoff past the spectrum", lambda: anti_alias_filter(torch.randn(16), cutoff=20),
          match="cutoff"),
    Probe("anti_alias_filter ratio=inf", lambda: anti_alias_filter(torch.randn(16), math.inf), match="ratio"),
    Probe("anti_alias_filter dim=3 on a vector", lambda: anti_alias_filter(torch.randn(16), 0.5, dim=3), match="dim"),
    Probe("anti_alias_filter of an integer tensor", lambda: anti_alias_filter(torch.arange(16), cutoff=2),
          raises=TypeError, match="floating"),
    Probe("anti_alias_filter of an empty axis", lambda: anti_alias_filter(torch.zeros(2, 0), cutoff=0), match="empty"),
    Probe("anti_alias_filter on NumPy returns NumPy", lambda: anti_alias_filter(np.ones(8), cutoff=1),
          returns=lambda v: isinstance(v, np.ndarray) and np.allclose(v, 1.0),
          doc="NumPy in, NumPy out; a constant keeps its DC bin"),
    Probe("fourier_upsample with NaN", lambda: fourier_upsample(_nan(torch.randn(8)), 16), match="NaN"),
    Probe("fourier_upsample to a shorter length", lambda: fourier_upsample(torch.randn(8), 4), match="length"),
    Probe("fourier_upsample length=12.5", lambda: fourier_upsample(torch.randn(8), 12.5), raises=TypeError,
          match="length"),
    Probe("filtered_downsample with NaN", lambda: filtered_downsample(_nan(torch.randn(16)), 2), match="NaN"),
    Probe("filtered_downsample stride=0", lambda: filtered_downsample(torch.randn(16), 0), match="stride"),
    Probe("naive_downsample stride=1.5", lambda: naive_downsample(torch.randn(16), 1.5), raises=TypeError,
          match="stride"),
    Probe("naive_downsample keeps NaN in place", lambda: naive_downsample(_nan(torch.zeros(8)), 2),
          returns=lambda v: bool(torch.isnan(v[0])) and not bool(torch.isnan(v[1:]).any()),
          doc="slicing moves no value; NaN stays where it was"),
    Probe("avgpool_downsample shorter than the stride", lambda: avgpool_downsample(torch.randn(3), 4),
          match="shorter"),
    Probe("avgpool_downsample of a list", lambda: avgpool_downsample([1.0, 2.0], 2), raises=TypeError, match="x"),
    Probe("aliasing_leakage of a zero signal", lambda: aliasing_leakage(torch.zeros(16), lambda x: x[..., ::2]),
          match="zero energy"),
    Probe("aliasing_leakage with NaN", lambda: aliasing_leakage(_nan(torch.randn(16)), lambda x: x[..., ::2]),
          match="NaN"),
    Probe("aliasing_leakage with a lengthening operator",
          lambda: aliasing_leakage(torch.randn(16), lambda x: torch.cat([x, x], -1)), match="shorten"),
    Probe("aliasing_leakage downsample=None", lambda: aliasing_leakage(torch.randn(16), None), raises=TypeError,
          match="downsample"),
    Probe("cutoff_bin ratio=0", lambda: cutoff_bin(16, 0.0), match="ratio"),
    Probe("cutoff_bin length=0", lambda: cutoff_bin(0, 0.5), match="length"),
    Probe("capacity_ratio stride=0", lambda: capacity_ratio(4, 2, 3, 0), match="stride"),
    Probe("capacity_ratio in_channels=1.5", lambda: capacity_ratio(1.5, 2, 3, 2), raises=TypeError,
          match="in_channels"),
    Probe("nyquist_bin stride=-1", lambda: nyquist_bin(16, -1), match="stride"),
    Probe("spectral_mix of 2-D spectra", lambda: spectral_mix(torch.ones(3, 5, dtype=torch.cfloat),
                                                              torch.ones(3, 5, dtype=torch.cfloat)), match="h_freq"),
    Probe("spectral_mix with mismatched bins", lambda: spectral_mix(torch.ones(1, 3, 5, dtype=torch.cfloat),
                                                                    torch.ones(2, 3, 4, dtype=torch.cfloat)),
          match="same"),
    Probe("joint_interpolation to a shorter length", lambda: joint_interpolation(torch.randn(1, 2, 8),
                                                                                 torch.randn(3, 2, 8), 4),
          match="length"),
    Probe("joint_interpolation norm='ortho'", lambda: joint_interpolation(torch.randn(1, 2, 8), torch.randn(3, 2, 8),
                                                                          16, norm="ortho"), match="norm"),
    # layers and models
    Probe("DMANet forward with NaN", lambda: DMANet(32, 8, 3, **_SMALL)(_nan(torch.randn(2, 32, 3))),
          match="NaN"),
    Probe("DMANet forward with inf", lambda: DMANet(32, 8, 3, **_SMALL)(torch.full((2, 32, 3), math.inf)),
          match="NaN or inf"),
    Probe("DMANet forward with the wrong shape", lambda: DMANet(32, 8, 3, **_SMALL)(torch.randn(2, 3, 32)),
          match="expected input"),
    Probe("DMANet forward on NumPy", lambda: DMANet(32, 8, 3, **_SMALL)(np.zeros((2, 32, 3))), raises=TypeError,
          match="torch.Tensor"),
    Probe("DMANet d_model not divisible by 2**levels", lambda: DMANet(32, 8, 3, d_model=20, levels=3),
          match="divisible"),
    Probe("DMANet seq_len=0", lambda: DMANet(0, 8, 3), match="seq_len"),
    Probe("DMANet stride=1", lambda: DMANet(32, 8, 3, stride=1), match="stride"),
    Probe("DMANet dropout=1", lambda: DMANet(32, 8, 3, dropout=1.0), match="dropout"),
    Probe("DMANet filter_axis='freq'", lambda: DMANet(32, 8, 3, filter_axis="freq"), match="filter_axis"),
    Probe("AntiAliasDownsample cutoff_ratio=inf", lambda: AntiAliasDownsample(4, 2, cutoff_ratio=math.inf),
          match="cutoff_ratio"),
    Probe("AntiAliasDownsample on the wrong channels", lambda: AntiAliasDownsample(4, 2)(torch.randn(1, 3, 16)),
          match="expected"),
    Probe("AntiAliasDownsample downsampler='max'", lambda: AntiAliasDownsample(4, 2, downsampler="max"),
          match="downsampler"),
    Probe("MultiScaleEncoder length not divisible", lambda: MultiScaleEncoder(3, 20, levels=3), match="divisible"),
    Probe("MultiScaleEncoder stride=1.5", lambda: MultiScaleEncoder(3, 16, stride=1.5), raises=TypeError,
          match="stride"),
    Probe("channel_schedule factor=1.5", lambda: channel_schedule(7, 3, 1.5), match="factor"),
    Probe("channel_schedule levels=0", lambda: channel_schedule(7, 0, 0.5), match="levels"),
    Probe("RevIN eps=-1", lambda: RevIN(3, eps=-1.0), match="eps"),
    Probe("RevIN normalize with the wrong channels", lambda: RevIN(3).normalize(torch.randn(2, 8, 4)), match="x"),
    Probe("DLinear even moving_avg", lambda: DLinear(32, 8, 3, moving_avg=24), match="moving_avg"),
    Probe("DLinear forward with the wrong shape", lambda: DLinear(32, 8, 3)(torch.randn(2, 16, 3)),
          match="expected input"),
    Probe("PatchTST n_heads=0", lambda: PatchTST(32, 8, 3, n_heads=0), match="n_heads"),
    Probe("PatchTST patch longer than the input", lambda: PatchTST(8, 4, 1, patch_len=16), match="patch_len"),
    Probe("moving_average even kernel", lambda: moving_average(torch.randn(1, 8, 1), 4), match="kernel_size"),
    # losses
    Probe("frequency_loss with mismatched shapes", lambda: frequency_loss(torch.randn(2, 8, 1), torch.randn(2, 4, 1)),
          match="shape"),
    Probe("frequency_loss power=3", lambda: frequency_loss(torch.randn(2, 8, 1), torch.randn(2, 8, 1), power=3),
          match="power"),
    Probe("frequency_loss dim=5", lambda: frequency_loss(torch.randn(2, 8, 1), torch.randn(2, 8, 1), dim=5),
          match="dim"),
    Probe("frequency_loss weight=nan", lambda: frequency_loss(torch.randn(2, 8, 1), torch.randn(2, 8, 1),
                                                              weight=math.nan), match="weight"),
    Probe("frequency_loss NaN gives NaN", lambda: frequency_loss(_nan(torch.randn(2, 8, 1)), torch.randn(2, 8, 1)),
          returns=lambda v: bool(torch.isnan(v)), doc="NaN propagates, as in any torch loss"),
    Probe("mse_loss of arrays", lambda: mse_loss(np.ones(3), np.ones(3)), raises=TypeError, match="Tensor"),
    Probe("fredf_loss alpha=1.5", lambda: fredf_loss(torch.randn(2, 8, 1), torch.randn(2, 8, 1), alpha=1.5),
          match="alpha"),
    # training
    Probe("fit_forecaster lr=nan", lambda: fit_forecaster(DLinear(24, 4, 1), _SPLITS, 4, lr=math.nan), match="lr"),
    Probe("fit_forecaster epochs=0", lambda: fit_forecaster(DLinear(24, 4, 1), _SPLITS, 4, epochs=0),
          match="epochs"),
    Probe("fit_forecaster loss='mae'", lambda: fit_forecaster(DLinear(24, 4, 1), _SPLITS, 4, loss="mae"),
          match="loss"),
    Probe("fit_forecaster on a raw array", lambda: fit_forecaster(DLinear(24, 4, 1), np.zeros((400, 1)), 4),
          raises=TypeError, match="ForecastSplits"),
    Probe("fit_forecaster max_batches_per_epoch=0", lambda: fit_forecaster(DLinear(24, 4, 1), _SPLITS, 4,
                                                                           max_batches_per_epoch=0),
          match="max_batches_per_epoch"),
    Probe("evaluate batch_size=0", lambda: evaluate(DLinear(8, 2, 1), torch.zeros(3, 8, 1), torch.zeros(3, 2, 1),
                                                    batch_size=0), match="batch_size"),
    Probe("evaluate on no windows", lambda: evaluate(DLinear(8, 2, 1), torch.zeros(0, 8, 1), torch.zeros(0, 2, 1)),
          match="non-empty"),
    Probe("ForecastFitResult is a frozen record",
          lambda: ForecastFitResult(1.0, 1.0, 1.0, 1, 1, 0.1, 10).__setattr__("test_mse", 0.0),
          raises=AttributeError),
    # data
    Probe("lorenz63 dt=nan", lambda: lorenz63(10, math.nan), match="dt"),
    Probe("lorenz63 n_samples=2.5", lambda: lorenz63(2.5, 0.01), raises=TypeError, match="n_samples"),
    Probe("lorenz63 NaN initial state", lambda: lorenz63(10, 0.01, initial=(math.nan, 1.0, 1.0)), match="initial"),
    Probe("aliasing_lorenz length=8", lambda: aliasing_lorenz(8), match="length"),
    Probe("aliasing_lorenz with a seed instead of a generator", lambda: aliasing_lorenz(100, rng=0),
          raises=TypeError, match="rng"),
    Probe("folding_tones slow_period below twice the coarsest stride", lambda: folding_tones(100, slow_period=16.0),
          match="slow_period"),
    Probe("folding_tones fold_strides=()", lambda: folding_tones(100, fold_strides=()), match="fold_strides"),
    Probe("folding_tones stride 1", lambda: folding_tones(100, fold_strides=(1, 2)), match="fold_strides"),
    Probe("folding_tones with a seed instead of a generator", lambda: folding_tones(100, rng=0),
          raises=TypeError, match="rng"),
    Probe("alias_frequency stride=0", lambda: alias_frequency(0.1, 0), match="stride"),
    Probe("standardized_splits with NaN", lambda: standardized_splits(np.full((100, 1), np.nan), 8), match="NaN"),
    Probe("standardized_splits too short", lambda: standardized_splits(np.ones((20, 1)), 16), match="too short"),
    Probe("standardized_splits seq_len=0", lambda: standardized_splits(np.ones((100, 1)), 0), match="seq_len"),
    Probe("standardized_splits train_fraction=nan",
          lambda: standardized_splits(np.ones((100, 1)), 8, train_fraction=math.nan), match="train_fraction"),
    Probe("sliding_windows of a 1-D series", lambda: sliding_windows(np.arange(20.0), 4, 2), match="segment"),
    Probe("sliding_windows step=0", lambda: sliding_windows(np.zeros((20, 1)), 4, 2, step=0), match="step"),
    Probe("sliding_windows too short", lambda: sliding_windows(np.zeros((5, 1)), 4, 2), match="no window"),
    Probe("ForecastSplits with mismatched channels",
          lambda: ForecastSplits(np.zeros((10, 2)), np.zeros((5, 1)), np.zeros((5, 2)), np.zeros(2), np.ones(2), 4),
          match="same C"),
    Probe("load_taylor shape", lambda: load_taylor().shape, returns=lambda s: s == (4032, 1),
          doc="half-hourly demand, one channel (no argument to misuse)"),
    Probe("load_sunspots is finite", lambda: load_sunspots(), returns=lambda v: bool(np.isfinite(v).all()),
          doc="monthly sunspot numbers (no argument to misuse)"),
]


def _r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _splits_args() -> tuple[tuple, dict]:
    s = _SPLITS
    return (s.train.copy(), s.val.copy(), s.test.copy(), s.mean.copy(), s.std.copy(), s.seq_len), {}


VALID = {
    "AntiAliasDownsample": lambda: ((4, 2), {"dropout": 0.0, "cutoff_ratio": 0.5}),
    "DLinear": lambda: ((32, 8, 3), {"moving_avg": 5}),
    "DMANet": lambda: ((32, 8, 3), {**_SMALL, "cutoff_ratio": 0.5}),
    "ForecastSplits": _splits_args,
    "MultiScaleEncoder": lambda: ((3, 16), {"levels": 2, "dropout": 0.0, "cutoff_ratio": 0.5}),
    "PatchTST": lambda: ((32, 8, 3), {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "dropout": 0.0}),
    "RevIN": lambda: ((3,), {}),
    "alias_frequency": lambda: ((0.1, 4), {}),
    "aliasing_leakage": lambda: ((_r(16), lambda x: x[..., ::2]), {"stride": 2.0}),
    "aliasing_lorenz": lambda: ((64,), {"rng": np.random.default_rng(0)}),
    "anti_alias_filter": lambda: ((_r(16), 0.5), {}),
    "avgpool_downsample": lambda: ((_r(16), 2), {}),
    "capacity_ratio": lambda: ((4, 2, 3, 2), {}),
    "channel_schedule": lambda: ((8, 2, 0.5), {}),
    "cutoff_bin": lambda: ((16, 0.5), {}),
    "evaluate": lambda: ((DLinear(8, 2, 1), _r(3, 8, 1), _r(3, 2, 1)), {"batch_size": 2}),
    "filtered_downsample": lambda: ((_r(16), 2), {"ratio": 0.5}),
    "fit_forecaster": lambda: ((DLinear(24, 4, 1), _SPLITS, 4), {"epochs": 1, "batch_size": 4,
                                                                 "max_batches_per_epoch": 1}),
    "folding_tones": lambda: ((64,), {"rng": np.random.default_rng(0)}),
    "fourier_upsample": lambda: ((_r(8), 16), {}),
    "fredf_loss": lambda: ((_r(2, 8, 1), _r(2, 8, 1)), {"alpha": 0.5}),
    "frequency_loss": lambda: ((_r(2, 8, 1), _r(2, 8, 1)), {}),
    "joint_interpolation": lambda: ((_r(1, 2, 8), _r(3, 2, 8), 16), {}),
    "lorenz63": lambda: ((10, 0.01), {"burn_in": 10}),
    "moving_average": lambda: ((_r(1, 8, 1), 3), {}),
    "mse_loss": lambda: ((_r(2, 8, 1), _r(2, 8, 1)), {}),
    "naive_downsample": lambda: ((_r(16), 2), {}),
    "nyquist_bin": lambda: ((16, 2), {}),
    "sliding_windows": lambda: ((np.zeros((20, 1)), 4, 2), {}),
    "spectral_mix": lambda: ((torch.ones(1, 3, 5, dtype=torch.cfloat), torch.ones(2, 3, 5, dtype=torch.cfloat)), {}),
    "standardized_splits": lambda: ((np.sin(np.arange(100) / 5.0)[:, None], 8), {}),
}

NOT_WALKED = {
    "ForecastFitResult": "a frozen result record filled by fit_forecaster() (walked); HOSTILE 'ForecastFitResult "
                         "is a frozen record' checks it cannot be changed",
}

_LOSS_HOT = ("a training loss, called on every batch (fit_forecaster), where a finiteness check would cost a "
             "device sync per step; NaN gives a NaN loss as in any torch loss (documented; HOSTILE "
             "'frequency_loss NaN gives NaN')")
_NET_HOT = ("runs inside the network's forward at every level and batch, where a finiteness check would cost a "
            "device sync per step; NaN propagates (documented) and DMANet's forward refuses a NaN input")
_NEG_DIM = "a negative dim counts from the last axis, as in torch (-1 is the channel axis of (B, H, C))"
ALLOWED = {
    "frequency_loss.pred:nan": _LOSS_HOT,
    "frequency_loss.target:nan": _LOSS_HOT,
    "frequency_loss.dim:negative": _NEG_DIM,
    "fredf_loss.pred:nan": _LOSS_HOT,
    "fredf_loss.target:nan": _LOSS_HOT,
    "fredf_loss.dim:negative": _NEG_DIM,
    "mse_loss.pred:nan": _LOSS_HOT,
    "mse_loss.target:nan": _LOSS_HOT,
    "joint_interpolation.h:nan": _NET_HOT,
    "joint_interpolation.weight:nan": _NET_HOT,
    "moving_average.x:nan": "DLinear's trend on every forward (a device sync per step to check it); NaN makes "
                            "only the means of the windows holding it NaN (documented)",
    "naive_downsample.x:nan": "slicing moves no value: NaN stays at its own sample and no other (documented; "
                              "HOSTILE 'naive_downsample keeps NaN in place'), the local operator the filtered "
                              "one is compared against",
    "avgpool_downsample.x:nan": "a local operator by design: NaN makes its own window's mean NaN and no other "
                                "(documented), the contrast to the Fourier filter, which refuses NaN because it "
                                "would spread over the whole axis",
}
