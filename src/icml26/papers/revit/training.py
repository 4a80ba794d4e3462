"""Training and per-rotation evaluation for grid-field models (ReViT and its baselines).

:func:`fit` trains any model whose ``forward`` maps a field batch to a field batch
(AdamW with a one-cycle learning rate, MSE loss, optional random C4 augmentation);
:func:`rotated_mse` evaluates a model on a test set rotated by ``k·90°`` for each
``k``, the reproduction's test of rotated generalisation.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.common.progress import progress
from icml26.papers.revit.baselines import random_c4_augment
from icml26.papers.revit.group import check_channel_split, rotate_field

__all__ = ["FieldFitResult", "fit", "rotated_mse"]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class FieldFitResult:
    """What :func:`fit` measured (renamed from ``FitResult``: dmanet's forecaster fit has its own).

    Attributes:
        losses: training loss per step.
        seconds: wall time of the optimisation steps.
        steps_per_s: ``len(losses) / seconds`` (NaN when ``seconds`` is 0).
    """

    losses: list[float]
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return len(self.losses) / self.seconds if self.seconds > 0 else float("nan")


def _channel_split(model: nn.Module) -> tuple[int, int, int, int]:
    try:
        return model.n_scalar_in, model.n_vector_in, model.n_scalar_out, model.n_vector_out
    except AttributeError:
        raise ValueError(
            "augment=True needs the model's channel split: give it attributes n_scalar_in, n_vector_in, "
            "n_scalar_out, n_vector_out (ReViT and PlainViT have them)"
        ) from None


def _check_pairs(inputs: Tensor, targets: Tensor) -> None:
    if not isinstance(inputs, Tensor) or not isinstance(targets, Tensor):
        raise TypeError(f"inputs and targets must be torch.Tensors, got {type(inputs).__name__} and "
                        f"{type(targets).__name__}")
    if inputs.ndim < 3 or targets.ndim != inputs.ndim or inputs.shape[0] != targets.shape[0] \
            or inputs.shape[2:] != targets.shape[2:]:
        raise ValueError(f"inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} must pair up: "
                         f"(P, C_in, *spatial) and (P, C_out, *spatial)")
    if inputs.shape[0] == 0:
        raise ValueError("inputs is empty: pass at least one (input, target) pair")
    require_finite(inputs, "inputs")
    require_finite(targets, "targets")


def fit(model: nn.Module, inputs: Tensor, targets: Tensor, *, steps: int, batch_size: int = 32,
        lr: float = 2e-3, weight_decay: float = 1e-4, augment: bool = False,
        generator: torch.Generator | None = None, show_progress: bool | None = None,
        desc: str = "train") -> FieldFitResult:
    """Train ``model`` on ``(inputs, targets)`` pairs with MSE, AdamW and a one-cycle schedule.

    Args:
        model: maps ``(B, C_in, *spatial)`` to ``(B, C_out, *spatial)``.
        inputs: ``(P, C_in, *spatial)`` training inputs (any device; batches move to the
            model's device).
        targets: ``(P, C_out, *spatial)``.
        steps: optimisation steps.
        batch_size: pairs per step, drawn uniformly with replacement.
        lr: peak learning rate of the one-cycle schedule.
        weight_decay: AdamW weight decay.
        augment: rotate every pair by a random multiple of 90° (2D only; the "ViT + aug" baseline).
        generator: CPU generator for batches and augmentation (reproducible runs).

    Non-finite inputs or targets are a ``ValueError`` (they would turn every weight into NaN).
    """
    steps = check_int(steps, "steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    check_real(weight_decay, "weight_decay", low=0.0)
    _check_pairs(inputs, targets)
    split = _channel_split(model) if augment else None
    device = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    model.train()
    losses: list[float] = []
    start = time.perf_counter()
    for _ in progress(range(steps), enabled=show_progress, desc=desc):
        idx = torch.randint(0, inputs.shape[0], (batch_size,), generator=generator)
        x, y = inputs[idx], targets[idx]
        if split is not None:
            x, y = random_c4_augment(x, y, *split, generator=generator)
        x, y = x.to(device), y.to(device)
        loss = torch.mean((model(x) - y) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    seconds = time.perf_counter() - start
    log.info("%s: %d steps in %.1f s, final loss %.3g", desc, steps, seconds, losses[-1])
    return FieldFitResult(losses=losses, seconds=seconds)


@torch.no_grad()
def rotated_mse(model: nn.Module, inputs: Tensor, targets: Tensor, *, n_scalar_in: int, n_vector_in: int,
                n_scalar_out: int, n_vector_out: int, rotations: tuple[int, ...] = (0, 1, 2, 3),
                batch_size: int = 64) -> list[float]:
    """Test MSE of ``model`` on the test set rotated by ``k·90°`` for each ``k`` in ``rotations``.

    Inputs and targets are rotated together (:func:`rotate_field`), so a model that is exactly
    C4-equivariant gets the same MSE at every ``k``. Returns one MSE per rotation.
    """
    _check_pairs(inputs, targets)
    check_channel_split(inputs, "inputs", n_scalar_in, n_vector_in, "n_scalar_in", "n_vector_in")
    check_channel_split(targets, "targets", n_scalar_out, n_vector_out, "n_scalar_out", "n_vector_out")
    batch_size = check_int(batch_size, "batch_size", low=1)
    rotations = tuple(check_int(k, "rotations") for k in rotations)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    for k in rotations:
        total, count = 0.0, 0
        for s in range(0, inputs.shape[0], batch_size):
            x = rotate_field(inputs[s:s + batch_size], k, n_scalar_in, n_vector_in).to(device)
            y = rotate_field(targets[s:s + batch_size], k, n_scalar_out, n_vector_out).to(device)
            total += float(((model(x) - y) ** 2).double().sum())
            count += y.numel()
        out.append(total / count)
    model.train(was_training)
    return out
