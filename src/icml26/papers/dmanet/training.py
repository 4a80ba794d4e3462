"""One training loop for every forecaster (DMANet, its ablations, DLinear, PatchTST).

As in the authors' ``exp_long_term_forecasting.py``: Adam, the learning rate halved
after every epoch (``lradj="type1"``), training on the frequency loss
(:func:`.losses.frequency_loss`, or MSE), model selection and early stopping on
validation MSE, test MSE and MAE on the standardised scale with the best weights.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.common.progress import progress as _progress
from icml26.papers.dmanet.data import ForecastSplits, sliding_windows
from icml26.papers.dmanet.losses import frequency_loss, mse_loss

__all__ = ["ForecastFitResult", "evaluate", "fit_forecaster"]

log = logging.getLogger(__name__)
LossName = Literal["frequency", "mse"]


@dataclasses.dataclass(frozen=True)
class ForecastFitResult:
    """What :func:`fit_forecaster` measured (MSE/MAE on the standardised scale).

    Renamed from ``FitResult``: revit's field-model fit returns a different record.
    """

    val_mse: float
    test_mse: float
    test_mae: float
    epochs: int
    best_epoch: int
    train_seconds: float
    n_parameters: int


def evaluate(model: nn.Module, x: Tensor, y: Tensor, *, batch_size: int = 256) -> tuple[float, float]:
    """Mean squared and absolute error of ``model`` on windows ``x: (N, L, C)``, ``y: (N, H, C)``."""
    batch_size = check_int(batch_size, "batch_size", low=1)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError("x and y must be torch.Tensors of windows")
    if x.shape[0] == 0 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x ({x.shape[0]} windows) and y ({y.shape[0]}) must be non-empty and paired")
    require_finite(x, "x", hint="the error of a NaN window is NaN")
    require_finite(y, "y", hint="the error against a NaN target is NaN")
    return _errors(model, x, y, batch_size)


@torch.inference_mode()
def _errors(model: nn.Module, x: Tensor, y: Tensor, batch_size: int) -> tuple[float, float]:
    """:func:`evaluate` without the argument checks: :func:`fit_forecaster` checks its windows once and
    calls this every epoch. Inference mode records no autograd state (the same numbers as ``no_grad``)."""
    was_training = model.training
    model.eval()
    sq, ab, count = 0.0, 0.0, 0
    for start in range(0, x.shape[0], batch_size):
        pred = model(x[start: start + batch_size])
        err = pred - y[start: start + batch_size]
        sq += float(err.double().pow(2).sum())
        ab += float(err.double().abs().sum())
        count += err.numel()
    model.train(was_training)
    return sq / count, ab / count


def fit_forecaster(
    model: nn.Module,
    data: ForecastSplits,
    pred_len: int,
    *,
    epochs: int = 15,
    batch_size: int = 16,
    lr: float = 2e-4,
    loss: LossName = "frequency",
    patience: int = 3,
    lr_decay: float = 0.5,
    train_step: int = 1,
    max_batches_per_epoch: int | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    show_progress: bool | None = False,
) -> ForecastFitResult:
    """Train ``model`` on ``data``'s training windows; keep the weights with the best validation MSE.

    Args:
        model: maps ``(batch, data.seq_len, C)`` to ``(batch, pred_len, C)``; trained in place
            and left holding its best weights.
        data: standardised splits (:func:`.data.standardized_splits`).
        pred_len: horizon ``H``.
        epochs: at most this many passes (15 in the authors' scripts).
        batch_size: windows per step.
        lr: Adam's initial learning rate, multiplied by ``lr_decay`` after every epoch.
        loss: ``"frequency"`` (the authors') or ``"mse"``.
        patience: stop after this many epochs without a better validation MSE.
        train_step: hop between training windows (1 uses every window).
        max_batches_per_epoch: cap on steps per epoch (``None``: the whole training set).
        generator: torch generator for the shuffling (reproducible runs).
        device: where to train (default: the model's device).
        show_progress: progress bar over epochs.
    """
    if loss not in ("frequency", "mse"):
        raise ValueError(f"loss={loss!r} must be 'frequency' or 'mse'")
    if not isinstance(data, ForecastSplits):
        raise TypeError(f"data must be ForecastSplits (standardized_splits(series, seq_len)), got "
                        f"{type(data).__name__}")
    for name, value in (("pred_len", pred_len), ("epochs", epochs), ("batch_size", batch_size),
                        ("patience", patience), ("train_step", train_step)):
        check_int(value, name, low=1)
    if max_batches_per_epoch is not None:
        check_int(max_batches_per_epoch, "max_batches_per_epoch", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    check_real(lr_decay, "lr_decay", low=0.0, high=1.0, low_open=True)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    as_tensor = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
    x_tr, y_tr = map(as_tensor, sliding_windows(data.train, data.seq_len, pred_len, step=train_step))
    x_va, y_va = map(as_tensor, sliding_windows(data.val, data.seq_len, pred_len))
    x_te, y_te = map(as_tensor, sliding_windows(data.test, data.seq_len, pred_len))
    criterion = frequency_loss if loss == "frequency" else mse_loss

    # foreach: one fused call per Adam operation over all parameters instead of one per tensor; the
    # same element-wise arithmetic as the per-tensor loop, so the weights are bit-identical (tested)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    best_val, best_state, best_epoch, stale, epochs_run = float("inf"), None, 0, 0, 0
    start = time.perf_counter()
    for epoch in _progress(range(epochs), enabled=show_progress, desc="epochs"):
        model.train()
        order = torch.randperm(x_tr.shape[0], generator=generator).to(device)
        n_batches = (len(order) + batch_size - 1) // batch_size
        if max_batches_per_epoch is not None:
            n_batches = min(n_batches, max_batches_per_epoch)
        for b in range(n_batches):
            idx = order[b * batch_size: (b + 1) * batch_size]
            optimizer.zero_grad(set_to_none=True)
            value = criterion(model(x_tr.index_select(0, idx)), y_tr.index_select(0, idx))  # = x_tr[idx], cheaper
            value.backward()
            optimizer.step()
        epochs_run = epoch + 1
        val_mse, _ = _errors(model, x_va, y_va, 256)
        log.debug("epoch %d: val mse %.5f", epochs_run, val_mse)
        if not np.isfinite(val_mse):
            raise FloatingPointError(f"validation MSE became {val_mse} in epoch {epochs_run}; lower lr")
        if val_mse < best_val:
            best_val, best_epoch, stale = val_mse, epochs_run, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            stale += 1
            if stale >= patience:
                break
        for group in optimizer.param_groups:
            group["lr"] *= lr_decay  # lradj "type1": lr_e = lr * 0.5^e
    seconds = time.perf_counter() - start
    if best_state is not None:
        model.load_state_dict(best_state)
    test_mse, test_mae = evaluate(model, x_te, y_te)
    return ForecastFitResult(
        val_mse=best_val, test_mse=test_mse, test_mae=test_mae, epochs=epochs_run,
        best_epoch=best_epoch, train_seconds=seconds,
        n_parameters=sum(p.numel() for p in model.parameters()),
    )
