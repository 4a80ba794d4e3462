"""Training loops: every ConfSleepNet view with the EDL loss, and the late-fusion baseline.

The views are trained independently, as in the authors' code (one network per view, each
on its own labels). One loop does it: the loss is the sum of the views' EDL losses, the
views share no parameter, and AdamW updates each parameter from its own gradient only,
so this equals training each view alone on the same mini-batches.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.common.progress import progress
from icml26.papers.confsleepnet.loss import edl_loss
from icml26.papers.confsleepnet.model import ConfSleepNet

__all__ = ["TrainLog", "fit_confsleepnet", "fit_late_fusion", "predict_in_batches"]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class TrainLog:
    """Mean training loss per epoch (summed over views for ConfSleepNet) and the time taken."""

    losses: list[float]
    seconds: float


def _as_tensors(signals, stages, device, num_classes: int | None = None) -> tuple[Tensor, Tensor]:
    x = torch.as_tensor(np.asarray(signals, dtype=np.float32) if not isinstance(signals, Tensor) else signals)
    y = torch.as_tensor(stages)
    if x.ndim != 3 or y.shape != x.shape[:1] or x.shape[0] == 0:
        raise ValueError(f"signals must be (N, C, T) and stages (N,) with N >= 1, got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    if y.is_floating_point() and not bool((y == y.round()).all()):
        raise ValueError("stages must be integer labels")
    y = y.long()
    top = (num_classes or 5) - 1
    if bool((y < 0).any()) or bool((y > top).any()):
        raise ValueError(f"stages must lie in 0..{top}, got {int(y.min())}..{int(y.max())}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("signals contain NaN or inf; clean them before training")
    return x.to(device, torch.float32), y.to(device)


def _batches(n: int, batch_size: int, generator: torch.Generator | None):
    order = torch.randperm(n, generator=generator)
    for start in range(0, n, batch_size):
        yield order[start:start + batch_size]


def _fit(model: nn.Module, signals, stages, batch_loss, *, epochs: int, batch_size: int, lr: float,
         weight_decay: float, generator: torch.Generator | None, device, show_progress: bool | None,
         desc: str, num_classes: int | None = None) -> TrainLog:
    """AdamW over shuffled mini-batches; ``batch_loss(x, y, epoch)`` gives each batch's loss."""
    check_int(epochs, "epochs", low=1)
    check_int(batch_size, "batch_size", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    check_real(weight_decay, "weight_decay", low=0.0)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    x, y = _as_tensors(signals, stages, device, num_classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses, start = [], time.perf_counter()
    model.train()
    for epoch in progress(range(epochs), enabled=show_progress, desc=desc):
        total = 0.0
        for idx in _batches(len(x), batch_size, generator):
            idx = idx.to(device)
            loss = batch_loss(x[idx], y[idx], epoch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(x))
        log.debug("%s epoch %d: loss %.4f", desc, epoch, losses[-1])
    model.eval()
    return TrainLog(losses, time.perf_counter() - start)


def fit_confsleepnet(model: ConfSleepNet, signals, stages, *, epochs: int = 40, batch_size: int = 320,
                     lr: float = 1e-3, weight_decay: float = 1e-2, annealing_epochs: int = 10,
                     generator: torch.Generator | None = None, device: torch.device | str | None = None,
                     show_progress: bool | None = None) -> TrainLog:
    """Train every view of ``model`` with the EDL loss on its own labels.

    Args:
        model: the :class:`ConfSleepNet` (moved to ``device``).
        signals: ``(N, C, T)`` epochs (normalised per recording, see ``normalize_recordings``).
        stages: ``(N,)`` labels in 0..4.
        epochs, batch_size, lr, weight_decay: AdamW schedule (authors: 40 epochs, batches of
            16 sequences x 20 epochs, lr 1e-3).
        annealing_epochs: KL annealing length of :func:`edl_loss`.
        generator: shuffles the mini-batches (CPU generator).
        device: where to train (default: the model's device).
    """
    if not isinstance(model, ConfSleepNet):
        raise TypeError(f"model must be a ConfSleepNet, got {type(model).__name__}")
    check_int(annealing_epochs, "annealing_epochs", low=1)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    label_maps = {v.name: torch.as_tensor(v.label_map, device=device) for v in model.views}

    def batch_loss(x: Tensor, y: Tensor, epoch: int) -> Tensor:
        evidence = model.evidence(x)
        # L = sum_v EDL(e_v, y_v, epoch): the views share nothing, so each learns alone
        return sum(edl_loss(evidence[name], label_maps[name][y], epoch, annealing_epochs=annealing_epochs)
                   for name in evidence)

    return _fit(model, signals, stages, batch_loss, epochs=epochs, batch_size=batch_size, lr=lr,
                weight_decay=weight_decay, generator=generator, device=device, show_progress=show_progress,
                desc="ConfSleepNet views", num_classes=model.num_stages)


def fit_late_fusion(model: nn.Module, signals, stages, *, epochs: int = 40, batch_size: int = 320,
                    lr: float = 1e-3, weight_decay: float = 1e-2, generator: torch.Generator | None = None,
                    device: torch.device | str | None = None, show_progress: bool | None = None) -> TrainLog:
    """Train a logits model (e.g. :class:`~icml26.papers.confsleepnet.baselines.LateFusionNet`)
    with cross-entropy on the five stages; same schedule as :func:`fit_confsleepnet`."""
    return _fit(model, signals, stages, lambda x, y, epoch: F.cross_entropy(model(x), y), epochs=epochs,
                batch_size=batch_size, lr=lr, weight_decay=weight_decay, generator=generator, device=device,
                show_progress=show_progress, desc="late fusion",
                num_classes=getattr(getattr(model, "head", None), "out_features", None))


@torch.no_grad()
def predict_in_batches(fn, signals, *, batch_size: int = 1024, device: torch.device | str | None = None):
    """Apply ``fn`` to ``(N, C, T)`` signals in chunks and concatenate its tensor (or dict of
    tensors) outputs along the first dimension."""
    batch_size = check_int(batch_size, "batch_size", low=1)
    x = torch.as_tensor(np.asarray(signals, dtype=np.float32) if not isinstance(signals, Tensor) else signals)
    if x.ndim < 1 or len(x) == 0:
        raise ValueError("signals is empty: nothing to predict")
    require_finite(x, "signals", hint="clean them first (normalize_recordings refuses them too)")
    outs = [fn(x[i:i + batch_size].to(device) if device is not None else x[i:i + batch_size])
            for i in range(0, len(x), batch_size)]
    if isinstance(outs[0], dict):
        return {k: torch.cat([o[k] for o in outs]) for k in outs[0]}
    if isinstance(outs[0], tuple):
        return tuple(torch.cat([o[i] for o in outs]) for i in range(len(outs[0])))
    return torch.cat(outs)
