"""Baselines of SPARD, drop-in for :func:`~icml26.papers.spard.training.spag_finetune`.

Every function takes ``(model, task_loader, safety_loader, *, steps, optimizer, …)``, runs
``steps`` utility steps on the task batches (clipped to ``max_grad_norm``, the scheduler
stepped once per task step) and returns a :class:`FinetuneHistory`:

* :func:`sft_finetune`: plain fine-tuning (``safety_loader`` is ignored and may be ``None``);
* :func:`safeinstr_finetune`: SafeInstr (Bianchi et al. 2024): the safety examples are mixed
  into the fine-tuning data: one safety batch after every ``mix_every`` task batches;
* :func:`penalty_finetune`: ``L_task + λ · L_safe`` on a task and a safety batch each step;
* :func:`lisa_finetune`: Lisa-style bi-state alternation (Huang et al. 2024): ``task_phase``
  task steps, then ``safety_phase`` safety steps, each loss plus the proximal term
  ``ρ/2 · ‖θ − θ_switch‖²`` towards the weights at the last switch.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.progress import progress as make_progress
from icml26.papers.spard.projection import LossFn, cycle, default_loss, trainable_parameters
from icml26.papers.spard.training import FinetuneHistory, check_finetune_args, utility_step

__all__ = ["lisa_finetune", "penalty_finetune", "safeinstr_finetune", "sft_finetune"]


class _Loop:
    """Shared set-up: argument checks, the task stream, train mode and its restoration."""

    def __init__(self, model, task_loader, optimizer, steps, scheduler, loss_fn, max_grad_norm, progress, desc):
        self.steps, self.max_grad_norm = check_finetune_args(model, optimizer, steps, scheduler, loss_fn,
                                                             max_grad_norm)
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.loss_fn: LossFn = loss_fn or default_loss
        self.params = trainable_parameters(model)
        self.tasks = cycle(task_loader, "task_loader")
        self.history = FinetuneHistory()
        self.progress, self.desc = progress, desc

    def __iter__(self):
        was_training = self.model.training
        self.model.train()
        try:
            yield from make_progress(range(self.steps), enabled=self.progress, desc=self.desc)
        finally:
            self.model.train(was_training)

    def step(self, loss: torch.Tensor) -> float:
        return utility_step(self.model, self.optimizer, loss, self.params, self.max_grad_norm)

    def task_step(self, extra: torch.Tensor | None = None) -> None:
        self.history.lr.append(float(self.optimizer.param_groups[0]["lr"]))
        loss = self.loss_fn(self.model, next(self.tasks))
        value = float(loss.detach())
        self.step(loss if extra is None else loss + extra)
        self.history.task_loss.append(value)

    def schedule(self) -> None:
        if self.scheduler is not None:
            self.scheduler.step()


def _safety_stream(safety_loader: Any) -> Any:
    if safety_loader is None:
        raise ValueError("safety_loader is None; this baseline trains on safety data: pass a loader")
    return cycle(safety_loader, "safety_loader")


def sft_finetune(model: nn.Module, task_loader: Iterable, safety_loader: Iterable | None, *, steps: int,
                 optimizer: torch.optim.Optimizer, scheduler: Any = None, loss_fn: LossFn | None = None,
                 max_grad_norm: float = 1.0, progress: bool | None = None) -> FinetuneHistory:
    """Plain supervised fine-tuning on the task batches; ``safety_loader`` is not used."""
    loop = _Loop(model, task_loader, optimizer, steps, scheduler, loss_fn, max_grad_norm, progress, "SFT")
    for _ in loop:
        loop.task_step()
        loop.schedule()
    return loop.history


def safeinstr_finetune(model: nn.Module, task_loader: Iterable, safety_loader: Iterable, *, steps: int,
                       optimizer: torch.optim.Optimizer, mix_every: int | None = None, scheduler: Any = None,
                       loss_fn: LossFn | None = None, max_grad_norm: float = 1.0,
                       progress: bool | None = None) -> FinetuneHistory:
    """SafeInstr: safety examples mixed into the fine-tuning stream.

    One safety batch (an ordinary training step on refusals) follows every ``mix_every`` task
    batches. Default: ``max(1, round(len(task_loader) / len(safety_loader)))``, i.e. one pass
    over each per epoch, as if the two data sets were concatenated and shuffled.
    """
    safeties = _safety_stream(safety_loader)
    if mix_every is None:
        try:
            mix_every = max(1, round(len(task_loader) / len(safety_loader)))  # type: ignore[arg-type]
        except TypeError:
            raise ValueError("mix_every is needed when the loaders have no len()") from None
    mix_every = check_int(mix_every, "mix_every", low=1)
    loop = _Loop(model, task_loader, optimizer, steps, scheduler, loss_fn, max_grad_norm, progress, "SafeInstr")
    for i in loop:
        loop.task_step()
        if (i + 1) % mix_every == 0:
            loss = loop.loss_fn(model, next(safeties))
            loop.history.safety_loss.append(loop.step(loss))
            loop.history.projected.append(True)
            loop.history.step_norm.append(math.nan)
        loop.schedule()
    return loop.history


def penalty_finetune(model: nn.Module, task_loader: Iterable, safety_loader: Iterable, *, steps: int,
                     optimizer: torch.optim.Optimizer, lam: float = 1.0, scheduler: Any = None,
                     loss_fn: LossFn | None = None, max_grad_norm: float = 1.0,
                     progress: bool | None = None) -> FinetuneHistory:
    """Penalty: one step on ``L_task + λ · L_safe`` per (task batch, safety batch); ``lam`` = ``λ ≥ 0``."""
    lam = check_real(lam, "lam", low=0.0)
    safeties = _safety_stream(safety_loader)
    loop = _Loop(model, task_loader, optimizer, steps, scheduler, loss_fn, max_grad_norm, progress, "penalty")
    for _ in loop:
        safe = loop.loss_fn(model, next(safeties))
        loop.history.safety_loss.append(float(safe.detach()))
        loop.history.projected.append(True)
        loop.history.step_norm.append(math.nan)
        # L = L_task + λ L_safe
        loop.task_step(extra=lam * safe)
        loop.schedule()
    return loop.history


def lisa_finetune(model: nn.Module, task_loader: Iterable, safety_loader: Iterable, *, steps: int,
                  optimizer: torch.optim.Optimizer, rho: float = 1.0, task_phase: int = 10, safety_phase: int = 10,
                  scheduler: Any = None, loss_fn: LossFn | None = None, max_grad_norm: float = 1.0,
                  progress: bool | None = None) -> FinetuneHistory:
    """Lisa-style bi-state optimisation with a proximal term.

    Cycles of ``task_phase`` task steps then ``safety_phase`` safety steps (``steps`` counts
    the task steps; by default as many safety steps as SPAG's). Every step minimises its
    loss plus ``ρ/2 · ‖θ − θ_switch‖²``, where ``θ_switch`` are the trainable weights at the
    last switch of state (Huang et al. 2024's proximal term; ``rho`` = ``ρ ≥ 0``).
    """
    rho = check_real(rho, "rho", low=0.0)
    task_phase = check_int(task_phase, "task_phase", low=1)
    safety_phase = check_int(safety_phase, "safety_phase", low=0)
    safeties = _safety_stream(safety_loader)
    loop = _Loop(model, task_loader, optimizer, steps, scheduler, loss_fn, max_grad_norm, progress, "Lisa")
    anchor = [p.detach().clone() for p in loop.params]

    def proximal() -> torch.Tensor:
        # ρ/2 ‖θ − θ_switch‖²
        return 0.5 * rho * sum(((p - a) ** 2).sum() for p, a in zip(loop.params, anchor))

    for i in loop:
        loop.task_step(extra=proximal() if rho > 0 else None)
        loop.schedule()
        if (i + 1) % task_phase == 0 and safety_phase > 0:
            anchor = [p.detach().clone() for p in loop.params]  # switch: task state -> safety state
            for _ in range(safety_phase):
                safe = loop.loss_fn(model, next(safeties))
                loop.history.safety_loss.append(float(safe.detach()))
                loop.step(safe + proximal() if rho > 0 else safe)
                loop.history.projected.append(True)
                loop.history.step_norm.append(math.nan)
            anchor = [p.detach().clone() for p in loop.params]  # switch back: safety state -> task state
    return loop.history
