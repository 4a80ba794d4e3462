"""DMANet, the Dynamic Multiscale Anti-Aliasing Network, as a forecasting ``nn.Module``.

Paper: *Anti-Aliasing Matters: A Dynamic Network for Time Series Forecasting*
(DMANet, ICML 2026); architecture as in the authors' pre-release ``models/DMANet.py``.

Forward pass for ``x: (batch, L, C)``:

1. RevIN: ``x_hat = (x - mu) / sigma * gamma + beta`` per instance and channel.
2. Temporal embedding ``Z = Linear_{L->D}(x_hat^T) + p`` (``p`` learned, ``U(-0.02, 0.02)``).
3. ``e_layers`` residual encoder blocks ``Z <- MSEnc(Z) + Z`` (:class:`.layers.MultiScaleEncoder`).
   ``filter_axis="latent"`` (authors' code) runs them on the embedded length-``D``
   axis, after step 2; ``filter_axis="time"`` (the paper's narrative) runs them on the
   raw length-``L`` time axis, before step 2.
4. Decoder ``LayerNorm_D -> Linear(D, D*d_ff) -> LeakyReLU -> Linear(D*d_ff, H)``,
   transpose, RevIN inverse: ``(batch, H, C)``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.dmanet.layers import Downsampler, MultiScaleEncoder, RevIN
from icml26.papers.dmanet.spectral import InterpNorm

__all__ = ["DMANet", "FilterAxis"]

FilterAxis = Literal["latent", "time"]


class DMANet(nn.Module):
    """Dynamic Multiscale Anti-Aliasing Network.

    Args:
        seq_len: ``L``, input length (96 in the paper).
        pred_len: ``H``, horizon.
        n_channels: ``C``, number of variables.
        d_model: ``D``, latent length (512, ``run.py``); divisible by ``stride**levels``.
        levels: ``M``, downsampling levels (``down_sampling_layers = 3``).
        e_layers: encoder blocks (1 for ETT/Weather, 2 for ECL).
        d_ff: decoder expansion (2).
        kernel_size: ``k`` of the depthwise conv (3).
        stride: ``s`` (``down_sampling_window = 2``).
        channel_factor: ``c`` (``down_sampling_c = 0.5``).
        filter_axis: ``"latent"`` or ``"time"`` (see the module docstring).
        anti_alias: the pre-sampling low-pass; ``False`` is the no-filter ablation.
        cutoff_ratio: rho for the low-pass at every level; ``None`` is the authors'
            per-level ``min(C_l / C_{l-1}, k) / s``, ``2 / stride`` the Nyquist cutoff.
        downsampler: ``"conv"`` (the paper) or ``"avgpool"`` (TimeMixer-style pooling).
        interp_norm: ``"exact"`` (exact band-limited upsampling of a circular
            convolution) or ``"backward"`` (the authors' FFT scaling, ``sqrt(m)/D`` smaller).
        dropout: dropout inside the downsamplers (0.1).
        revin_affine: learn RevIN's ``gamma``, ``beta``.
        legacy_real_cast: keep only the real part of the interpolation spectrum (the
            pre-release code's complex-to-real cast).
        legacy_double_gelu: a second GELU instead of dropout (the pre-release code).

    ``forward(x)`` takes ``(batch, seq_len, n_channels)`` and returns
    ``(batch, pred_len, n_channels)`` on ``x``'s device.
    """

    def __init__(
        self,
        seq_len: int,
        pred_len: int,
        n_channels: int,
        d_model: int = 512,
        levels: int = 3,
        *,
        e_layers: int = 1,
        d_ff: int = 2,
        kernel_size: int = 3,
        stride: int = 2,
        channel_factor: float = 0.5,
        filter_axis: FilterAxis = "latent",
        anti_alias: bool = True,
        cutoff_ratio: float | None = None,
        downsampler: Downsampler = "conv",
        interp_norm: InterpNorm = "exact",
        dropout: float = 0.1,
        revin_affine: bool = True,
        legacy_real_cast: bool = False,
        legacy_double_gelu: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("seq_len", seq_len), ("pred_len", pred_len), ("n_channels", n_channels),
                            ("d_model", d_model), ("levels", levels), ("e_layers", e_layers),
                            ("d_ff", d_ff), ("kernel_size", kernel_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        check_int(stride, "stride", low=2)
        check_real(channel_factor, "channel_factor", low=0.0, high=1.0, low_open=True)
        check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        if filter_axis not in ("latent", "time"):
            raise ValueError(f"filter_axis={filter_axis!r} must be 'latent' (authors' code) or 'time'")
        self.seq_len, self.pred_len, self.n_channels = seq_len, pred_len, n_channels
        self.d_model = d_model
        self.filter_axis = filter_axis
        length = d_model if filter_axis == "latent" else seq_len
        if length % (stride ** levels) != 0:
            axis = "d_model" if filter_axis == "latent" else "seq_len"
            raise ValueError(
                f"{axis}={length} must be divisible by stride**levels = {stride ** levels} "
                f"(filter_axis={filter_axis!r}); change {axis} or levels"
            )
        self.revin = RevIN(n_channels, affine=revin_affine)
        self.embedding = nn.Linear(seq_len, d_model)
        self.position = nn.Parameter(torch.empty(1, 1, d_model).uniform_(-0.02, 0.02))
        self.encoders = nn.ModuleList(
            MultiScaleEncoder(
                n_channels, length, levels=levels, kernel_size=kernel_size, stride=stride,
                channel_factor=channel_factor, anti_alias=anti_alias, cutoff_ratio=cutoff_ratio,
                downsampler=downsampler, dropout=dropout, interp_norm=interp_norm,
                legacy_real_cast=legacy_real_cast, legacy_double_gelu=legacy_double_gelu,
            )
            for _ in range(e_layers)
        )
        self.head_norm = nn.LayerNorm(d_model)
        self.decoder = nn.Sequential(
            nn.Linear(d_model, d_model * d_ff),
            nn.LeakyReLU(),
            nn.Linear(d_model * d_ff, pred_len),
        )

    @property
    def channel_schedule(self) -> list[int]:
        """``[C, C_1, …, C_M]`` of the encoder blocks."""
        return list(self.encoders[0].schedule)

    def _encode(self, z: Tensor) -> Tensor:
        for encoder in self.encoders:
            # Z <- MSEnc(Z) + Z
            z = encoder(z) + z
        return z

    def forward(self, x: Tensor) -> Tensor:
        """``x: (batch, seq_len, n_channels)`` → ``(batch, pred_len, n_channels)``.

        Non-finite input is a ``ValueError`` (the Fourier layers would spread one NaN over the
        whole series, and RevIN over its channel).
        """
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor (batch, seq_len, n_channels), got {type(x).__name__}")
        if x.ndim != 3 or x.shape[1] != self.seq_len or x.shape[2] != self.n_channels:
            raise ValueError(
                f"expected input (batch, {self.seq_len}, {self.n_channels}), got {tuple(x.shape)}"
            )
        if not x.is_floating_point():
            raise TypeError(f"x must be floating point, got {x.dtype}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or inf; fill or drop them before forecasting")
        x_hat, stats = self.revin.normalize(x)
        z = x_hat.transpose(1, 2)  # (B, C, L)
        if self.filter_axis == "time":
            z = self._encode(z)
        # Z = Linear_{L->D}(X^T) + p
        z = self.embedding(z) + self.position
        if self.filter_axis == "latent":
            z = self._encode(z)
        out = self.decoder(self.head_norm(z))  # (B, C, H)
        return self.revin.denormalize(out.transpose(1, 2), stats)
