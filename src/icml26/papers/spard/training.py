"""SPAG fine-tuning: alternating utility steps and safety projections (SPARD's optimizer).

Each of ``steps`` iterations:

1. **utility step**: the loss of the next task batch, gradients clipped to global norm
   ``max_grad_norm`` (authors: 1), ``optimizer.step()``;
2. **safety step**: :meth:`SafetyProjection.step` on the next safety batch (a projection when
   the safety loss exceeds ``τ + tol``, else nothing);
3. ``scheduler.step()`` once per (utility, safety) pair (authors' trainer).

Works on any ``nn.Module`` whose batches :func:`default_loss` understands (or with your
``loss_fn``), including a PEFT-wrapped Hugging Face causal LM (only the adapters move).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Iterable

import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.progress import progress as make_progress
from icml26.papers.spard.projection import LossFn, SafetyProjection, cycle, default_loss, trainable_parameters

__all__ = ["FinetuneHistory", "NoProjectionWarning", "check_finetune_args", "spag_finetune", "utility_step"]


class NoProjectionWarning(UserWarning):
    """A SPAG run in which no safety step fired: it was plain fine-tuning (``τ`` too high for the run)."""


@dataclasses.dataclass
class FinetuneHistory:
    """Per-step record of a fine-tuning run (SPAG or a baseline).

    Attributes:
        task_loss: the task loss of each utility step's batch (before the step).
        safety_loss: the safety loss seen at each safety step (empty for SFT).
        projected: whether each safety step moved the parameters (SPAG) / ran (baselines).
        step_norm: ``‖Δ‖`` of each safety step (0 when skipped).
        lr: the optimizer's first group's learning rate at each utility step.
        tau: SPAG's ``τ`` (``nan`` for baselines).
    """

    task_loss: list[float] = dataclasses.field(default_factory=list)
    safety_loss: list[float] = dataclasses.field(default_factory=list)
    projected: list[bool] = dataclasses.field(default_factory=list)
    step_norm: list[float] = dataclasses.field(default_factory=list)
    lr: list[float] = dataclasses.field(default_factory=list)
    tau: float = float("nan")

    @property
    def projection_rate(self) -> float:
        """Share of safety steps that moved the parameters (``nan`` without safety steps)."""
        return float(sum(self.projected) / len(self.projected)) if self.projected else float("nan")


def check_finetune_args(model: Any, optimizer: Any, steps: Any, scheduler: Any, loss_fn: Any,
                        max_grad_norm: Any) -> tuple[int, float]:
    """The shared argument checks of :func:`spag_finetune` and its baselines; ``(steps, max_grad_norm)``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer over the model's parameters, "
                        f"got {type(optimizer).__name__}")
    owned = {id(p) for p in model.parameters() if p.requires_grad}
    held = [p for group in optimizer.param_groups for p in group["params"]]
    if not any(id(p) in owned for p in held):
        raise ValueError("optimizer holds none of the model's trainable parameters (was it built over another "
                         "model, or a copy?); build it over model.parameters()")
    steps = check_int(steps, "steps", low=1)
    if scheduler is not None and not hasattr(scheduler, "step"):
        raise TypeError(f"scheduler must have a step() method (a torch LR scheduler), got {type(scheduler).__name__}")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable loss_fn(model, batch), got {type(loss_fn).__name__}")
    return steps, check_real(max_grad_norm, "max_grad_norm", low=0.0, low_open=True)


def utility_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, params: list,
                 max_grad_norm: float) -> float:
    """``loss.backward()``, clip to ``max_grad_norm``, ``optimizer.step()``; returns the loss value."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise ValueError(f"the training loss is {value}: training diverged (lower the learning rate)")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return value


def spag_finetune(model: nn.Module, task_loader: Iterable, safety_loader: Iterable, *, steps: int,
                  optimizer: torch.optim.Optimizer, projection: SafetyProjection | None = None,
                  scheduler: Any = None, loss_fn: LossFn | None = None, max_grad_norm: float = 1.0,
                  progress: bool | None = None) -> FinetuneHistory:
    """Fine-tune ``model`` on ``task_loader`` under SPAG's safety projections (in place).

    Args:
        model: any ``nn.Module`` (a PEFT model: only the adapters train).
        task_loader: re-iterable task batches (cycled: ``steps`` may exceed one epoch).
        safety_loader: re-iterable safety batches; used to build the default projection
            (ignored when ``projection`` is given, which carries its own loader).
        steps: utility steps (each followed by one safety step).
        optimizer: the utility optimizer (e.g. AdamW over the trainable parameters).
        projection: a :class:`SafetyProjection`; default ``SafetyProjection(model,
            safety_loader, tau="auto", loss_fn=loss_fn)`` built before the first step.
        scheduler: stepped once per (utility, safety) pair.
        loss_fn: ``loss_fn(model, batch) -> scalar`` for the task batches (default
            :func:`default_loss`).
        max_grad_norm: global clip of the utility gradient (authors: 1).
        progress: a bar on a terminal, log lines in files (``None``), off (``False``).

    Returns:
        :class:`FinetuneHistory`. The model's train/eval mode is restored at the end.

    Warns:
        :class:`NoProjectionWarning` when no safety step fired over the whole run (the safety loss
        never exceeded ``τ + tol``): SPAG then changed nothing against plain fine-tuning; lower
        ``τ``, e.g. ``tau="base"`` (the base model's own safety loss).
    """
    steps, max_grad_norm = check_finetune_args(model, optimizer, steps, scheduler, loss_fn, max_grad_norm)
    loss_fn = loss_fn or default_loss
    if projection is None:
        projection = SafetyProjection(model, safety_loader, loss_fn=loss_fn)
    elif not isinstance(projection, SafetyProjection):
        raise TypeError(f"projection must be a SafetyProjection, got {type(projection).__name__}")
    elif projection.model is not model:
        raise ValueError("projection was built for another model; build it with this model")
    params = trainable_parameters(model)
    tasks = cycle(task_loader, "task_loader")
    history = FinetuneHistory(tau=projection.tau)
    was_training = model.training
    model.train()
    try:
        bar = make_progress(range(steps), enabled=progress, desc="SPAG fine-tuning")
        for _ in bar:
            history.lr.append(float(optimizer.param_groups[0]["lr"]))
            history.task_loss.append(utility_step(model, optimizer, loss_fn(model, next(tasks)), params,
                                                  max_grad_norm))
            safe = projection.step(optimizer)
            history.safety_loss.append(safe.loss)
            history.projected.append(safe.projected)
            history.step_norm.append(safe.step_norm)
            if scheduler is not None:
                scheduler.step()
            if hasattr(bar, "set_postfix") and len(history.task_loss) % 50 == 0:
                bar.set_postfix(task=f"{history.task_loss[-1]:.3f}", safe=f"{safe.loss:.3f}")
    finally:
        model.train(was_training)
    if not any(history.projected):
        message = (f"SPAG took no projection in {steps} safety steps: the safety loss ranged "
                   f"{min(history.safety_loss):.4g}-{max(history.safety_loss):.4g}, never above tau + tol = "
                   f"{projection.tau:.4g} + {projection.tol:.4g}, so this run was plain fine-tuning; lower tau "
                   "(tau='base' keeps the base model's own safety loss)")
        warnings.warn(message, NoProjectionWarning, stacklevel=2)
    return history
