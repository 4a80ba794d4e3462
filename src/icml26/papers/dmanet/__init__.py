"""DMANet: Dynamic Multiscale Anti-Aliasing Network for time-series forecasting.

*Anti-Aliasing Matters: A Dynamic Network for Time Series Forecasting* (ICML 2026).
Decomposition–Prevention–Fusion: an ideal low-pass before every stride-``s``
downsampling (Prevention), depthwise-strided plus pointwise convolutions
(Decomposition), exact band-limited interpolation of every scale back to full length
with learned per-frequency mixing, and softmax-weighted fusion of the scales.

Quick use on your own ``(batch, L, C)`` series::

    from icml26.papers.dmanet import DMANet, frequency_loss
    model = DMANet(seq_len=96, pred_len=24, n_channels=7, d_model=128)
    loss = frequency_loss(model(x), y)

``METHOD`` is :class:`DMANet`; ``BASELINES`` holds the forecasters it is compared with, each
built with the same ``(seq_len, pred_len, n_channels)`` (DLinear, PatchTST). The no-filter
and average-pooling ablations are ``DMANet(..., anti_alias=False)`` and
``DMANet(..., anti_alias=False, downsampler="avgpool")``.

See ``README.md`` beside this file for the method, the departures from the authors'
pre-release code, and the reproduction.
"""

from typing import Callable

from icml26.papers.dmanet.baselines import DLinear, PatchTST, moving_average
from icml26.papers.dmanet.data import (
    ForecastSplits,
    aliasing_lorenz,
    load_sunspots,
    load_taylor,
    lorenz63,
    sliding_windows,
    standardized_splits,
)
from icml26.papers.dmanet.folding import alias_frequency, folding_tones
from icml26.papers.dmanet.layers import AntiAliasDownsample, MultiScaleEncoder, RevIN, channel_schedule
from icml26.papers.dmanet.losses import fredf_loss, frequency_loss, mse_loss
from icml26.papers.dmanet.model import DMANet
from icml26.papers.dmanet.spectral import (
    aliasing_leakage,
    anti_alias_filter,
    avgpool_downsample,
    capacity_ratio,
    cutoff_bin,
    filtered_downsample,
    fourier_upsample,
    joint_interpolation,
    naive_downsample,
    nyquist_bin,
    spectral_mix,
)
from icml26.papers.dmanet.training import ForecastFitResult, evaluate, fit_forecaster

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD: Callable = DMANet
"""The paper's forecaster."""
BASELINES: dict[str, Callable] = {"dlinear": DLinear, "patchtst": PatchTST}
"""Drop-in alternatives to :data:`METHOD`: ``(seq_len, pred_len, n_channels, **options)``."""

__all__ = [
    "BASELINES",
    "AntiAliasDownsample",
    "DLinear",
    "DMANet",
    "ForecastFitResult",
    "ForecastSplits",
    "MultiScaleEncoder",
    "PatchTST",
    "RevIN",
    "alias_frequency",
    "aliasing_leakage",
    "aliasing_lorenz",
    "anti_alias_filter",
    "avgpool_downsample",
    "capacity_ratio",
    "channel_schedule",
    "cutoff_bin",
    "evaluate",
    "filtered_downsample",
    "fit_forecaster",
    "folding_tones",
    "fourier_upsample",
    "fredf_loss",
    "frequency_loss",
    "joint_interpolation",
    "load_sunspots",
    "load_taylor",
    "lorenz63",
    "moving_average",
    "mse_loss",
    "naive_downsample",
    "nyquist_bin",
    "sliding_windows",
    "spectral_mix",
    "standardized_splits",
]
