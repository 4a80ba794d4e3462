"""Baselines DMANet is compared with, re-implemented small: DLinear and PatchTST.

Each is a sibling of :class:`~icml26.papers.dmanet.model.DMANet` with the same call:
``Model(seq_len, pred_len, n_channels, …)`` and ``forward(x: (batch, L, C)) -> (batch, H, C)``.
The two other baselines of the paper's ablations are DMANet itself with
``anti_alias=False`` (no filter) and with ``downsampler="avgpool", anti_alias=False``
(TimeMixer-style average pooling).

* DLinear (Zeng et al., AAAI 2023): moving-average trend/seasonal split, one linear map
  ``L -> H`` per component, shared across channels; weights start at ``1/L`` as in the
  Time-Series-Library implementation.
* PatchTST (Nie et al., ICLR 2023): RevIN, channel-independent patches of ``patch_len``
  with stride ``patch_stride`` (end replicate-padded by one stride), linear patch
  embedding plus learned positions, a Transformer encoder, a flatten-linear head.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.dmanet.layers import RevIN

__all__ = ["DLinear", "PatchTST", "moving_average"]


def moving_average(x: Tensor, kernel_size: int) -> Tensor:
    """Centred moving average over time with replicate padding.

    ``x: (batch, L, C)`` → ``(batch, L, C)``; ``kernel_size`` must be odd. NaN makes the means
    of the windows holding it NaN (this runs in DLinear's forward, on every batch).
    """
    if check_int(kernel_size, "kernel_size", low=1) % 2 == 0:
        raise ValueError(f"kernel_size={kernel_size} must be a positive odd integer")
    if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[1] < 1:
        raise ValueError(f"x must be (batch, L, C) with L >= 1, got "
                         f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
    pad = (kernel_size - 1) // 2
    padded = torch.cat([x[:, :1].expand(-1, pad, -1), x, x[:, -1:].expand(-1, pad, -1)], dim=1)
    # trend_t = mean(x_{t-pad .. t+pad})
    return padded.unfold(1, kernel_size, 1).mean(-1)


def _check_input(x: Tensor, seq_len: int, n_channels: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor (batch, L, C), got {type(x).__name__}")
    if x.ndim != 3 or x.shape[1] != seq_len or x.shape[2] != n_channels:
        raise ValueError(f"expected input (batch, {seq_len}, {n_channels}), got {tuple(x.shape)}")


class DLinear(nn.Module):
    """Decomposition-linear forecaster.

    Args:
        seq_len: ``L``. pred_len: ``H``. n_channels: ``C``.
        moving_avg: trend kernel (25, the DLinear default).
        individual: one pair of linear maps per channel instead of a shared pair.
    """

    def __init__(self, seq_len: int, pred_len: int, n_channels: int, *, moving_avg: int = 25,
                 individual: bool = False) -> None:
        super().__init__()
        for name, value in (("seq_len", seq_len), ("pred_len", pred_len), ("n_channels", n_channels)):
            check_int(value, name, low=1)
        if check_int(moving_avg, "moving_avg", low=1) % 2 == 0:
            raise ValueError(f"moving_avg={moving_avg} must be a positive odd integer")
        self.seq_len, self.pred_len, self.n_channels = seq_len, pred_len, n_channels
        self.moving_avg = moving_avg
        copies = n_channels if individual else 1
        self.individual = individual
        self.seasonal = nn.ModuleList(nn.Linear(seq_len, pred_len) for _ in range(copies))
        self.trend = nn.ModuleList(nn.Linear(seq_len, pred_len) for _ in range(copies))
        with torch.no_grad():
            for layer in (*self.seasonal, *self.trend):
                layer.weight.fill_(1.0 / seq_len)

    def forward(self, x: Tensor) -> Tensor:
        """``x: (batch, L, C)`` → ``(batch, H, C)``."""
        _check_input(x, self.seq_len, self.n_channels)
        trend = moving_average(x, self.moving_avg)
        seasonal = (x - trend).transpose(1, 2)  # (B, C, L)
        trend = trend.transpose(1, 2)
        if self.individual:
            out = torch.stack([self.seasonal[c](seasonal[:, c]) + self.trend[c](trend[:, c])
                               for c in range(self.n_channels)], dim=1)
        else:
            out = self.seasonal[0](seasonal) + self.trend[0](trend)
        return out.transpose(1, 2)


class PatchTST(nn.Module):
    """A small channel-independent patch Transformer.

    Args:
        seq_len: ``L``. pred_len: ``H``. n_channels: ``C``.
        patch_len: samples per patch (16). patch_stride: hop between patches (8).
        d_model: token width. n_heads: attention heads. n_layers: encoder layers.
        d_ff: feed-forward width. dropout: dropout in the encoder and head.
    """

    def __init__(self, seq_len: int, pred_len: int, n_channels: int, *, patch_len: int = 16,
                 patch_stride: int = 8, d_model: int = 64, n_heads: int = 4, n_layers: int = 2,
                 d_ff: int = 128, dropout: float = 0.1) -> None:
        super().__init__()
        for name, value in (("seq_len", seq_len), ("pred_len", pred_len), ("n_channels", n_channels),
                            ("patch_len", patch_len), ("patch_stride", patch_stride), ("d_model", d_model),
                            ("n_heads", n_heads), ("n_layers", n_layers), ("d_ff", d_ff)):
            check_int(value, name, low=1)
        check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        if patch_len > seq_len or patch_stride < 1:
            raise ValueError(f"patch_len={patch_len} must be <= seq_len={seq_len} and patch_stride >= 1")
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.seq_len, self.pred_len, self.n_channels = seq_len, pred_len, n_channels
        self.patch_len, self.patch_stride = patch_len, patch_stride
        self.n_patches = (seq_len - patch_len) // patch_stride + 2  # +1 from the end padding
        self.revin = RevIN(n_channels, affine=True)
        self.embed = nn.Linear(patch_len, d_model)
        self.position = nn.Parameter(torch.empty(1, self.n_patches, d_model).uniform_(-0.02, 0.02))
        layer = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout, batch_first=True,
                                           activation="gelu", norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Flatten(-2), nn.Dropout(dropout),
                                  nn.Linear(self.n_patches * d_model, pred_len))

    def forward(self, x: Tensor) -> Tensor:
        """``x: (batch, L, C)`` → ``(batch, H, C)``."""
        _check_input(x, self.seq_len, self.n_channels)
        x_hat, stats = self.revin.normalize(x)
        b, _, c = x_hat.shape
        series = x_hat.transpose(1, 2).reshape(b * c, self.seq_len)
        series = torch.cat([series, series[:, -1:].expand(-1, self.patch_stride)], dim=1)
        patches = series.unfold(1, self.patch_len, self.patch_stride)  # (B*C, N, P)
        tokens = self.encoder(self.embed(patches) + self.position)
        out = self.head(tokens).reshape(b, c, self.pred_len).transpose(1, 2)
        return self.revin.denormalize(out, stats)
