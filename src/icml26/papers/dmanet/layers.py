"""Building blocks of DMANet: RevIN, the anti-aliased downsampler, the multiscale encoder.

Paper: *Anti-Aliasing Matters: A Dynamic Network for Time Series Forecasting*
(DMANet). One encoder block ("MSEnc", Decomposition–Prevention–Fusion) does, for a
feature map ``Z: (batch, C, n)``:

1. ``H_0 = LayerNorm_n(Z)``, ``C_0 = C``.
2. For levels ``l = 1..M``: channels ``C_l = max(1, floor(C_{l-1} * c))``;
   Prevention: ideal low-pass at bin ``floor(n_f * rho_l / 2)``,
   ``rho_l = min(C_l / C_{l-1}, k) / s``; Decomposition: depthwise stride-``s``
   convolution (kernel ``k``), pointwise ``C_{l-1} -> C_l``, GELU, dropout.
3. Post-sampling interpolation of each ``H_l`` back to ``n`` samples with learned
   per-frequency mixing ``W_l: (C, C_l, n / s^l)`` (see :func:`.spectral.joint_interpolation`).
4. Fusion ``sum_l softmax(theta)_l U_l``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.dmanet.spectral import (
    InterpNorm,
    _low_pass,
    capacity_ratio,
    cutoff_bin,
    joint_interpolation,
)

__all__ = ["AntiAliasDownsample", "MultiScaleEncoder", "RevIN", "channel_schedule"]

Downsampler = Literal["conv", "avgpool"]


class RevIN(nn.Module):
    """Reversible instance normalisation (Kim et al., 2022), as in the authors' ``layers/RevIN.py``.

    ``normalize``: ``x_hat = (x - mu) / sigma * gamma + beta`` with per-instance,
    per-channel ``mu``, ``sigma`` over time; ``denormalize`` inverts it with the same
    statistics. The statistics are returned, not stored on the module.
    """

    def __init__(self, n_channels: int, *, eps: float = 1e-5, affine: bool = True) -> None:
        super().__init__()
        check_int(n_channels, "n_channels", low=1)
        self.eps = check_real(eps, "eps", low=0.0)
        self.n_channels = n_channels
        self.affine = affine
        if affine:
            self.gamma = nn.Parameter(torch.ones(n_channels))
            self.beta = nn.Parameter(torch.zeros(n_channels))

    def normalize(self, x: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``x: (batch, time, channels)`` → (normalised ``x``, ``(mean, std)`` each ``(batch, 1, channels)``).

        NaN propagates through its own channel (mean and std are per instance and channel).
        """
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[2] != self.n_channels or not x.is_floating_point():
            raise ValueError(f"x must be a floating (batch, time, {self.n_channels}) tensor, got "
                             f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
        mean = x.mean(dim=1, keepdim=True).detach()
        std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps).detach()
        # x_hat = (x - mu) / sigma * gamma + beta
        out = (x - mean) / std
        if self.affine:
            out = out * self.gamma + self.beta
        return out, (mean, std)

    def denormalize(self, y: Tensor, stats: tuple[Tensor, Tensor]) -> Tensor:
        """``y: (batch, horizon, channels)`` back to the input's scale."""
        mean, std = stats
        if self.affine:
            # y = (y_hat - beta) / gamma  (eps^2 guards gamma = 0, as in the reference RevIN)
            y = (y - self.beta) / (self.gamma + self.eps * self.eps)
        return y * std + mean


def channel_schedule(n_channels: int, levels: int, factor: float) -> list[int]:
    """``[C_0, C_1, …, C_M]`` with ``C_l = max(1, floor(C_{l-1} * factor))`` (7 → 3 → 1 → 1)."""
    check_int(n_channels, "n_channels", low=1)
    check_int(levels, "levels", low=1)
    check_real(factor, "factor")
    if not 0 < factor <= 1:
        raise ValueError(f"channel factor {factor} must lie in (0, 1]; the authors use 0.5")
    schedule = [n_channels]
    for _ in range(levels):
        schedule.append(max(1, int(schedule[-1] * factor)))
    return schedule


class AntiAliasDownsample(nn.Module):
    """One level of Prevention + Decomposition: low-pass, stride-``s`` conv, channel mixing.

    Args:
        in_channels: ``C_{l-1}``.
        out_channels: ``C_l``.
        kernel_size: ``k`` of the depthwise convolution (3).
        stride: ``s``, the downsampling factor (2).
        anti_alias: apply the pre-sampling low-pass (``False``: the no-filter ablation).
        cutoff_ratio: rho for the low-pass; ``None`` uses the authors' capacity ratio
            ``min(C_l / C_{l-1}, k) / s``. ``2 / s`` puts the cutoff at the new Nyquist bin.
        downsampler: ``"conv"`` (depthwise strided convolution, the paper) or
            ``"avgpool"`` (TimeMixer's average pooling, no filter).
        batch_norm: the code's optional BatchNorm (off by default, as there).
        dropout: dropout after the activation.
        legacy_double_gelu: apply GELU a second time where dropout belongs, as the
            pre-release code does.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        *,
        kernel_size: int = 3,
        stride: int = 2,
        anti_alias: bool = True,
        cutoff_ratio: float | None = None,
        downsampler: Downsampler = "conv",
        batch_norm: bool = False,
        dropout: float = 0.1,
        legacy_double_gelu: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels),
                            ("kernel_size", kernel_size), ("stride", stride)):
            check_int(value, name, low=1)
        if downsampler not in ("conv", "avgpool"):
            raise ValueError(f"downsampler={downsampler!r} must be 'conv' or 'avgpool'")
        if cutoff_ratio is not None:
            check_real(cutoff_ratio, "cutoff_ratio", low=0.0, low_open=True)
        check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.stride = stride
        self.anti_alias = anti_alias
        self.ratio = (capacity_ratio(in_channels, out_channels, kernel_size, stride)
                      if cutoff_ratio is None else float(cutoff_ratio))
        self.downsampler = downsampler
        if downsampler == "conv":
            self.depthwise = nn.Conv1d(in_channels, in_channels, kernel_size, stride=stride,
                                       padding=(kernel_size - 1) // 2, groups=in_channels, bias=False)
        else:
            self.depthwise = nn.AvgPool1d(stride)
        self.pointwise = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        self.bn_in = nn.BatchNorm1d(in_channels) if batch_norm else None
        self.bn_out = nn.BatchNorm1d(out_channels) if batch_norm else None
        self.act = nn.GELU()
        self.legacy_double_gelu = legacy_double_gelu
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: Tensor) -> Tensor:
        """``h: (batch, C_{l-1}, n)`` → ``(batch, C_l, n / s)``. NaN propagates (checked at the network's input)."""
        if not isinstance(h, Tensor) or h.ndim != 3 or h.shape[1] != self.in_channels or h.shape[-1] < 1:
            raise ValueError(f"expected (batch, {self.in_channels}, n) features, got "
                             f"{tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__}")
        if self.anti_alias:
            # Prevention: zero rFFT bins j >= floor(n_f * rho_l / 2)  (anti_alias_filter without the NaN sync)
            h = _low_pass(h, cutoff_bin(h.shape[-1], self.ratio), h.ndim - 1)
        # Decomposition: depthwise stride-s conv (temporal), pointwise conv (channels)
        h = self.depthwise(h)
        if self.bn_in is not None:
            h = self.bn_in(h)
        h = self.act(self.pointwise(h))
        if self.bn_out is not None:
            h = self.bn_out(h)
        return self.act(h) if self.legacy_double_gelu else self.dropout(h)


class MultiScaleEncoder(nn.Module):
    """One MSEnc block: multiscale anti-aliased downsampling, interpolation, softmax fusion.

    Args:
        n_channels: ``C``.
        length: ``n``, the axis that is downsampled (``d_model`` on the latent axis,
            ``seq_len`` on the time axis); must be divisible by ``stride ** levels``.
        levels: ``M`` (3).
        kernel_size, stride, channel_factor: ``k`` (3), ``s`` (2), ``c`` (0.5).
        anti_alias, cutoff_ratio, downsampler, batch_norm, dropout, legacy_double_gelu:
            see :class:`AntiAliasDownsample`.
        interp_norm, legacy_real_cast: see :func:`.spectral.joint_interpolation`.
    """

    def __init__(
        self,
        n_channels: int,
        length: int,
        *,
        levels: int = 3,
        kernel_size: int = 3,
        stride: int = 2,
        channel_factor: float = 0.5,
        anti_alias: bool = True,
        cutoff_ratio: float | None = None,
        downsampler: Downsampler = "conv",
        batch_norm: bool = False,
        dropout: float = 0.1,
        interp_norm: InterpNorm = "exact",
        legacy_real_cast: bool = False,
        legacy_double_gelu: bool = False,
        init_std: float = 0.02,
    ) -> None:
        super().__init__()
        check_int(n_channels, "n_channels", low=1)
        check_int(length, "length", low=1)
        check_int(levels, "levels", low=1)
        check_int(stride, "stride")
        check_real(init_std, "init_std", low=0.0)
        check_real(channel_factor, "channel_factor", low=0.0, high=1.0, low_open=True)
        if stride < 2:
            raise ValueError(f"stride={stride} must be at least 2 to downsample")
        if length % (stride ** levels) != 0:
            raise ValueError(
                f"length {length} must be divisible by stride**levels = {stride ** levels}; "
                "change d_model / seq_len or use fewer levels"
            )
        if interp_norm not in ("exact", "backward"):
            raise ValueError(f"interp_norm={interp_norm!r} must be 'exact' or 'backward'")
        self.length = length
        self.interp_norm = interp_norm
        self.legacy_real_cast = legacy_real_cast
        self.schedule = channel_schedule(n_channels, levels, channel_factor)
        self.norm = nn.LayerNorm(length)
        self.levels = nn.ModuleList(
            AntiAliasDownsample(
                c_in, c_out, kernel_size=kernel_size, stride=stride, anti_alias=anti_alias,
                cutoff_ratio=cutoff_ratio, downsampler=downsampler, batch_norm=batch_norm,
                dropout=dropout, legacy_double_gelu=legacy_double_gelu,
            )
            for c_in, c_out in zip(self.schedule[:-1], self.schedule[1:])
        )
        # W_l ~ N(0, 0.02^2): (C, C_l, n / s^l)
        self.interp_weights = nn.ParameterList(
            nn.Parameter(torch.randn(n_channels, c_l, length // stride ** (i + 1)) * init_std)
            for i, c_l in enumerate(self.schedule[1:])
        )
        # theta in R^M, initialised to ones
        self.fusion_logits = nn.Parameter(torch.ones(levels))

    def fusion_weights(self) -> Tensor:
        """``softmax(theta)``: one weight per level, summing to 1."""
        return torch.softmax(self.fusion_logits, dim=0)

    def forward(self, z: Tensor, *, return_levels: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """``z: (batch, C, n)`` → fused ``(batch, C, n)`` (and the per-level ``U_l`` if asked)."""
        if z.ndim != 3 or z.shape[-1] != self.length or z.shape[1] != self.schedule[0]:
            raise ValueError(
                f"expected (batch, {self.schedule[0]}, {self.length}), got {tuple(z.shape)}"
            )
        current = self.norm(z)
        upsampled = []
        for level, weight in zip(self.levels, self.interp_weights):
            current = level(current)  # levels are cascaded: H_l = level(H_{l-1})
            upsampled.append(joint_interpolation(current, weight, self.length, norm=self.interp_norm,
                                                 legacy_real_cast=self.legacy_real_cast))
        # out = sum_l softmax(theta)_l * U_l
        weights = self.fusion_weights()
        fused = sum(w * u for w, u in zip(weights, upsampled))
        return (fused, upsampled) if return_levels else fused
