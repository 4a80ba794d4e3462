"""Training losses: the frequency-domain loss the DMANet authors train with, and MSE.

The authors' training loop (``exp/exp_long_term_forecasting.py``, defaults of
``run.py``: ``auxi_mode="fft"``, ``auxi_loss="MAE"``, ``module_first=1``,
``auxi_lambda=1``, ``rec_lambda=0``) minimises only

    L = lambda * mean_{b, k, c} |FFT_t(Y_hat)[b, k, c] - FFT_t(Y)[b, k, c]|,

the full complex FFT along the horizon axis and the modulus of each bin's error, i.e.
FreDF's loss with alpha = 1. :func:`fredf_loss` blends it with MSE for alpha < 1.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icml26.common.argcheck import check_int, check_real

__all__ = ["fredf_loss", "frequency_loss", "mse_loss"]


def _check_pair(pred: Tensor, target: Tensor) -> None:
    if not isinstance(pred, Tensor) or not isinstance(target, Tensor):
        raise TypeError("pred and target must be torch.Tensors")
    if pred.numel() == 0:
        raise ValueError("pred is empty")
    if pred.shape != target.shape:
        raise ValueError(f"prediction {tuple(pred.shape)} and target {tuple(target.shape)} differ in shape")


def frequency_loss(pred: Tensor, target: Tensor, *, dim: int = 1, weight: float = 1.0,
                   power: int = 1) -> Tensor:
    """``weight * mean |FFT(pred - target)|^power`` along ``dim`` (the horizon).

    Args:
        pred, target: ``(batch, horizon, channels)`` (or any shape with time on ``dim``).
        dim: the time axis.
        weight: ``lambda`` (``auxi_lambda``; 1, or 0.5 for Exchange).
        power: 1 is the authors' loss (mean modulus); 2 the squared modulus, which by
            Parseval equals ``n * mean((pred - target)^2)`` for ``n`` steps on ``dim``.

    NaN in ``pred`` or ``target`` gives a NaN loss (as any torch loss).
    """
    _check_pair(pred, target)
    check_int(dim, "dim")
    if not -pred.ndim <= dim < pred.ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {pred.ndim} dimension(s)")
    check_real(weight, "weight", low=0.0)
    if power not in (1, 2):
        raise ValueError(f"power={power} must be 1 (authors' MAE of the modulus) or 2")
    # FFT is linear: FFT(Y_hat) - FFT(Y) = FFT(Y_hat - Y)
    err = torch.fft.fft(pred - target, dim=dim).abs()
    return weight * (err.mean() if power == 1 else err.pow(2).mean())


def mse_loss(pred: Tensor, target: Tensor) -> Tensor:
    """``mean((pred - target)^2)``."""
    _check_pair(pred, target)
    return (pred - target).pow(2).mean()


def fredf_loss(pred: Tensor, target: Tensor, *, alpha: float = 1.0, dim: int = 1) -> Tensor:
    """FreDF: ``alpha * frequency_loss + (1 - alpha) * mse``; ``alpha = 1`` is DMANet's setting."""
    check_real(alpha, "alpha")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha} must lie in [0, 1]")
    loss = alpha * frequency_loss(pred, target, dim=dim) if alpha > 0 else pred.new_zeros(())
    if alpha < 1:
        loss = loss + (1 - alpha) * mse_loss(pred, target)
    return loss
