"""Hugging Face ``Trainer`` integration of the training-time methods (needs the ``lm`` extra).

* **LLR** — :func:`llr_optimizer` builds the per-layer AdamW the method needs (pass it as
  ``Trainer(optimizers=(optimizer, None))``) and :class:`LLRCallback` refits the layer
  multipliers every ``every`` steps (``Trainer(callbacks=[LLRCallback(...)])``);
* **curvature regulariser** — :func:`curvature_trainer` returns a ``Trainer`` whose loss is
  ``CE + λ·mean_l (1 − cos)`` over the chosen hidden-state layers (the forward pass runs with
  ``output_hidden_states=True``; padded positions are masked);
* **HAMU** — :func:`hamu_trainer` returns a ``Trainer`` whose every step draws one retain batch
  (the train set) and one forget batch and takes HAMU's constrained step; both gradients go
  through ``backward`` (``accelerator.backward``), so DDP / accelerate average them across ranks;
* **LMCleaner** — :func:`lmcleaner_trainer` returns a ``Trainer`` (plain SGD) that records every
  optimizer step's batch ids and update in ``trainer.recorder``, the trajectory LMCleaner's
  corrections read when a batch is later deleted.

Everything runs under ``accelerate`` / ``torchrun`` as the ``Trainer`` does: LLR's fits are
split across ranks (see :func:`icml26.papers.llr.layer_alphas`).

``transformers`` is imported when a function is called, not when this module is imported.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import numpy as np
import torch

from icml26.common.extras import require

__all__ = ["LLRCallback", "curvature_trainer", "hamu_trainer", "llr_optimizer", "lmcleaner_trainer"]


LLR_STATE_NAME = "llr_state.json"


def _transformers():
    return require("transformers", "lm")


def llr_optimizer(model: torch.nn.Module, *, lr: float, weight_decay: float = 0.0,
                  betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                  exclude: Iterable[str] = ("embed", "head", "lm_head")) -> torch.optim.AdamW:
    """AdamW over LLR's per-layer parameter groups (:func:`icml26.papers.llr.layerwise_param_groups`).

    Use the ``TrainingArguments``' values, e.g. ``llr_optimizer(model, lr=args.learning_rate,
    weight_decay=args.weight_decay)``, and hand it to ``Trainer(optimizers=(optimizer, None))``
    so that the Trainer still builds its learning-rate schedule.
    """
    from icml26.papers.llr import layerwise_param_groups

    groups = layerwise_param_groups(model, weight_decay=weight_decay, exclude=exclude)
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)


def _base_optimizer(optimizer: Any) -> torch.optim.Optimizer:
    # accelerate wraps the optimizer (AcceleratedOptimizer.optimizer); hooks go on the real one
    inner = getattr(optimizer, "optimizer", optimizer)
    if not isinstance(inner, torch.optim.Optimizer):
        raise TypeError(f"the Trainer's optimizer is a {type(optimizer).__name__}, not a torch optimizer")
    return inner


def LLRCallback(**llr_kwargs: Any):  # noqa: N802 - a class factory that reads like a class
    """A ``TrainerCallback`` running :class:`icml26.papers.llr.LayerwiseLR` inside a ``Trainer``.

    ``llr_kwargs`` are :class:`~icml26.papers.llr.LayerwiseLR`'s keyword arguments (``r_min``,
    ``r_max``, ``every``, ``ramp_steps``, ``active_fraction``, …); ``total_steps`` is the
    Trainer's ``max_steps``. The Trainer's optimizer must hold one parameter group per layer:
    build it with :func:`llr_optimizer`. After training, ``callback.llr`` holds the multipliers
    and their history. Every checkpoint the Trainer saves gets LLR's state (``llr_state.json``), and
    ``trainer.train(resume_from_checkpoint=...)`` restores it, so a resumed run equals an
    uninterrupted one.
    """
    transformers = _transformers()

    class _LLRCallback(transformers.TrainerCallback):
        def __init__(self) -> None:
            self.kwargs = dict(llr_kwargs)
            self.llr = None

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
            from icml26.papers.llr import LayerwiseLR

            if model is None or optimizer is None:
                raise RuntimeError("LLRCallback needs the Trainer's model and optimizer at on_train_begin")
            base = _base_optimizer(optimizer)
            if len(base.param_groups) < 2:
                raise ValueError("the Trainer's optimizer has one parameter group; LLR needs one per layer: "
                                 "pass Trainer(optimizers=(llr_optimizer(model, lr=...), None))")
            self.llr = LayerwiseLR(model, base, total_steps=max(1, state.max_steps), **self.kwargs)
            if state.global_step > 0:  # resuming: the Trainer has loaded the checkpoint's state
                path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", LLR_STATE_NAME)
                if not os.path.isfile(path):
                    raise FileNotFoundError(
                        f"resuming at step {state.global_step}, but {path} does not exist: LLR's multipliers "
                        "and fit history are saved with each checkpoint by LLRCallback; resume from one it saved")
                with open(path, encoding="utf-8") as f:
                    self.llr.load_state_dict(json.load(f))

        def on_step_end(self, args, state, control, **kwargs):
            if self.llr is not None:
                self.llr.step()

        def on_log(self, args, state, control, logs=None, **kwargs):
            # LLR's multipliers and last fitted alphas beside the Trainer's loss (in the dict the reporters
            # after this callback receive, and in state.log_history)
            if self.llr is None or logs is None or "loss" not in logs:
                return
            mult = np.asarray(list(self.llr.multipliers.values()), dtype=float)
            alphas = np.asarray([a[-1] for a in self.llr.history.alpha.values() if a], dtype=float)
            extra = {"llr_multiplier_min": float(mult.min()), "llr_multiplier_max": float(mult.max()),
                     "llr_multiplier_mean": float(mult.mean())}
            if alphas.size and np.isfinite(alphas).any():
                extra["llr_alpha_mean"] = float(np.nanmean(alphas))
            logs.update(extra)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(extra)

        def on_save(self, args, state, control, **kwargs):
            if self.llr is not None and state.is_world_process_zero:
                folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
                os.makedirs(folder, exist_ok=True)
                tmp = os.path.join(folder, LLR_STATE_NAME + ".tmp")
                with open(tmp, "w", encoding="utf-8") as f:
                    json.dump(self.llr.state_dict(), f)
                os.replace(tmp, os.path.join(folder, LLR_STATE_NAME))

        def on_train_end(self, args, state, control, **kwargs):
            if self.llr is not None:
                self.llr.remove()

    return _LLRCallback()


def curvature_trainer(curvature_loss: Any, **trainer_kwargs: Any):
    """A ``transformers.Trainer`` whose loss adds the curvature regulariser.

    Args:
        curvature_loss: an :class:`icml26.papers.curvature.CurvatureLoss` (layers, weight λ).
        trainer_kwargs: everything ``Trainer(...)`` takes (model, args, datasets, collator …).

    The loss of a batch is the model's own loss (``labels`` in the batch) plus
    ``curvature_loss(outputs, input_ids, attention_mask)``; the two parts of the last step are in
    ``trainer.last_losses``. Gradient accumulation follows the Trainer's ``num_items_in_batch``
    convention, so accumulating k micro-batches gives the update of one k-times-larger batch.
    """
    from icml26.papers.curvature import CurvatureLoss

    if not isinstance(curvature_loss, CurvatureLoss):
        raise TypeError(f"curvature_loss must be a CurvatureLoss, got {type(curvature_loss).__name__}")
    transformers = _transformers()

    class CurvatureTrainer(transformers.Trainer):
        last_losses: dict[str, float] = {}

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if "labels" not in inputs:
                raise ValueError("the batch has no labels; the curvature Trainer adds to the model's own loss")
            scaled = self.model_accepts_loss_kwargs and num_items_in_batch is not None
            kwargs = {"num_items_in_batch": num_items_in_batch} if scaled else {}
            outputs = model(**inputs, output_hidden_states=True, **kwargs)
            aux = curvature_loss(outputs, inputs.get("input_ids"), inputs.get("attention_mask"))
            self.last_losses = {"lm": float(outputs.loss.detach()), "curvature": float(aux.detach())}
            if scaled:
                # The Trainer's convention under gradient accumulation: the model's loss is a sum over the
                # micro-batch's label tokens divided by the whole accumulated batch's count, and the Trainer
                # does not divide again. The regulariser (a mean over this micro-batch) gets the same
                # weight: its share of the accumulated batch's label tokens.
                labels = inputs["labels"]
                shifts = getattr(self, "_loss_shifts_labels", True)  # a causal LM predicts labels[1:]
                items = (labels[..., 1:] if shifts else labels).ne(-100).sum()
                aux = aux * items.to(aux.dtype) / torch.as_tensor(num_items_in_batch, dtype=aux.dtype,
                                                                   device=aux.device)
            loss = outputs.loss + aux
            if scaled and self.args.average_tokens_across_devices:
                loss = loss * (self.accelerator.num_processes // self.get_tp_size())  # as Trainer.compute_loss does
            return (loss, outputs) if return_outputs else loss

        def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
            if self.last_losses and "loss" in logs:  # a training log: add the two parts of the last step
                logs = {**logs, "curvature_lm_loss": self.last_losses["lm"],
                        "curvature_regularizer": self.last_losses["curvature"]}
            super().log(logs, *args, **kwargs)

    return CurvatureTrainer(**trainer_kwargs)


def hamu_trainer(forget_dataset: Any, *, hamu: dict[str, Any] | None = None, stop_on_criterion: bool = False,
                 **trainer_kwargs: Any):
    """A ``transformers.Trainer`` for HAMU's paired retain/forget unlearning steps.

    Args:
        forget_dataset: the forget set (``train_dataset`` in ``trainer_kwargs`` is the retain set);
            it is cycled without shuffling, through the Trainer's collator.
        hamu: :class:`icml26.papers.hamu.HamuOptimizer` keyword arguments (``bound``,
            ``bound_mode``, ``variant``, ``layerwise``, ``max_grad_norm`` …); its ``lr`` is the
            ``TrainingArguments.learning_rate``.
        stop_on_criterion: end training once HAMU's stop flag fires (retain harm unavoidable).
        trainer_kwargs: everything ``Trainer(...)`` takes.

    Each step: the retain loss's gradient, then the forget loss's, each through
    ``accelerator.backward`` (so DDP / accelerate average them over ranks); HAMU's update θ ← θ + δ
    (an SGD step on −δ/lr inside :class:`~icml26.papers.hamu.HamuOptimizer`). The Trainer's own
    optimizer sees no gradient and leaves the parameters alone. With ``gradient_accumulation_steps = k``
    both gradients are averaged over the k micro-batches and HAMU takes one step per optimizer step (the
    update of one k-times-larger batch); ``lr`` follows the Trainer's scheduler (warm-up, decay) step by
    step, and a step at rate 0 is skipped. The forget set is batched with
    ``per_device_eval_batch_size``, one forget batch per micro-batch. The step logs are in
    ``trainer.hamu_logs`` (and the rates in ``trainer.hamu_lrs``); the reported training loss is the
    retain loss.
    """
    transformers = _transformers()
    from icml26.papers.hamu import HamuOptimizer

    hamu_kwargs = dict(hamu or {})
    if "lr" in hamu_kwargs:
        raise ValueError("hamu={'lr': ...}: HAMU's lr is TrainingArguments.learning_rate")
    if forget_dataset is None or len(forget_dataset) == 0:
        raise ValueError("forget_dataset is empty; pass the examples to unlearn")

    class _StopCallback(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if stop_on_criterion and trainer.hamu is not None and trainer.hamu.stopped:
                control.should_training_stop = True

    class HamuTrainer(transformers.Trainer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.hamu = None
            self.hamu_logs: list[Any] = []
            self.hamu_lrs: list[float] = []
            self._forget_iter = None
            self._sums = None
            self._retain_loss = self._forget_loss = 0.0

        def _next_forget(self):
            if self._forget_iter is None:
                def cycle():
                    while True:
                        yield from self.get_eval_dataloader(forget_dataset)
                self._forget_iter = cycle()
            return self._prepare_inputs(next(self._forget_iter))

        def training_step(self, model, inputs, num_items_in_batch=None):
            model.train()
            if self.hamu is None:
                params = [p for p in model.parameters() if p.requires_grad]
                self.hamu = HamuOptimizer(params, lr=self.args.learning_rate,
                                          stop_on_criterion=stop_on_criterion, **hamu_kwargs)
            if self.hamu.stopped:
                return torch.zeros((), device=self.args.device)
            # Gradient accumulation: each of the k micro-batches adds 1/k of its retain and its forget
            # gradient to two running sums (restored into .grad before each backward, so DDP's no_sync
            # accumulates and the last micro-batch's backward all-reduces the sums); one HAMU step per
            # optimizer step, on the last micro-batch.
            k = max(1, int(getattr(self, "current_gradient_accumulation_steps", 1) or 1))
            if self._sums is None:
                self._sums = [[None] * len(self.hamu.params), [None] * len(self.hamu.params)]
            losses = []
            for side, batch in enumerate((self._prepare_inputs(inputs), self._next_forget())):
                for p, g in zip(self.hamu.params, self._sums[side]):
                    p.grad = g
                loss = self.compute_loss(model, batch)
                self.accelerator.backward(loss / k)
                losses.append(loss.detach())
                self._sums[side] = [torch.zeros_like(p) if p.grad is None else p.grad for p in self.hamu.params]
                for p in self.hamu.params:
                    p.grad = None
            self._retain_loss += float(losses[0]) / k
            self._forget_loss += float(losses[1]) / k
            if self.accelerator.sync_gradients:
                retain, forget = self._sums
                self._sums = None
                lr = self.lr_scheduler.get_last_lr()[0] if self.lr_scheduler is not None else self.args.learning_rate
                if lr > 0.0:  # a zero rate (the first warm-up step) moves nothing, as for any optimizer
                    self.hamu.set_lr(lr)
                    info = self.hamu.apply(retain, forget)
                    info.retain_loss, info.forget_loss = self._retain_loss, self._forget_loss
                    self.hamu_logs.append(info)
                    self.hamu_lrs.append(lr)
                self._retain_loss = self._forget_loss = 0.0
            return losses[0] / k

        def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
            if self.hamu_logs and "loss" in logs:  # a training log: HAMU's quantities at its last step
                last = self.hamu_logs[-1]
                logs = {**logs, "hamu_retain_loss": last.retain_loss, "hamu_forget_loss": last.forget_loss,
                        "hamu_hardness": last.hardness, "hamu_cosine": last.cosine, "hamu_bound": last.bound,
                        "hamu_step_norm": last.step_norm, "hamu_infeasible_blocks": last.n_infeasible,
                        "hamu_lr": self.hamu_lrs[-1]}
            super().log(logs, *args, **kwargs)

    trainer = HamuTrainer(**trainer_kwargs)
    trainer.add_callback(_StopCallback())
    return trainer


def lmcleaner_trainer(*, id_column: str = "sample_id", recorder: dict[str, Any] | None = None, **trainer_kwargs: Any):
    """A ``transformers.Trainer`` that records its SGD run for LMCleaner's later batch deletion.

    Args:
        id_column: the training set's column of integer sample ids (the rows' identities in the
            :class:`~icml26.papers.lmcleaner.SupervisedProblem` used for the corrections), e.g.
            ``dataset.map(lambda row, i: {"sample_id": i}, with_indices=True)``. It is kept through the
            Trainer's column pruning and taken out of every batch before the model's forward.
        recorder: :class:`~icml26.papers.lmcleaner.TrajectoryRecorder` keyword arguments
            (``checkpoint_every`` with ``problem``, ``storage_device``, ``allow_approximation``).
        trainer_kwargs: everything ``Trainer(...)`` takes. The run must be plain SGD, as LMCleaner's
            propagator I − η·H assumes: ``TrainingArguments(optim="sgd", max_grad_norm=0.0)`` (the
            Trainer's default AdamW and its gradient clipping at 1.0 are refused when training starts,
            unless ``recorder={"allow_approximation": True}``), one weight decay for every parameter
            (the Trainer's default groups exempt biases and norms), and, under ``torchrun``, equal
            per-rank batches (``dataloader_drop_last=True``).

    One recorded step per optimizer step: its batch is the union of the accumulated micro-batches'
    ids (gathered over ranks under DDP) and its η is the scheduler's rate for that step. After
    training, ``trainer.recorder`` is the :class:`~icml26.papers.lmcleaner.TrajectoryRecorder` that
    :func:`~icml26.papers.lmcleaner.lmcleaner_unlearn` and the other removers take::

        trainer = lmcleaner_trainer(model=model, args=args, train_dataset=train)   # train has "sample_id"
        trainer.train()
        result = lmcleaner_unlearn(problem, trainer.recorder, trainer.recorder.current_params(),
                                   forget_ids, trainer.recorder.num_steps, window=16, hvp=make_hvp(problem))
    """
    transformers = _transformers()
    from icml26.papers.lmcleaner import TrajectoryRecorder

    if recorder is not None and not isinstance(recorder, dict):
        raise TypeError(f"recorder must be a dict of TrajectoryRecorder keyword arguments, got {type(recorder).__name__}")
    recorder_kwargs = dict(recorder or {})
    for key in ("model", "optimizer"):
        if key in recorder_kwargs:
            raise ValueError(f"recorder={{{key!r}: ...}}: the Trainer's {key} is recorded; leave it out")
    if not isinstance(id_column, str) or not id_column:
        raise ValueError(f"id_column={id_column!r} must name the dataset's column of sample ids")
    approximate = bool(recorder_kwargs.get("allow_approximation", False))

    class _Record(transformers.TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            trainer._open_step()

        def on_optimizer_step(self, args, state, control, **kwargs):
            trainer._close_step()

    class LMCleanerTrainer(transformers.Trainer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.recorder: TrajectoryRecorder | None = None
            self._ids: list[torch.Tensor] = []
            self._step_context = None

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if id_column not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, id_column]

        def _take_ids(self, inputs: dict[str, Any]) -> torch.Tensor:
            if id_column not in inputs:
                raise ValueError(f"the batch has no {id_column!r} column (it has {sorted(inputs)}); add the rows' "
                                 f"sample ids, e.g. dataset.map(lambda row, i: {{{id_column!r}: i}}, with_indices=True)")
            return torch.as_tensor(inputs.pop(id_column)).reshape(-1).cpu()

        def training_step(self, model, inputs, num_items_in_batch=None):
            self._ids.append(self._take_ids(inputs))
            return super().training_step(model, inputs, num_items_in_batch)

        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            inputs = dict(inputs)
            inputs.pop(id_column, None)
            return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)

        def _open_step(self) -> None:
            if self.recorder is None:
                if self.args.max_grad_norm and self.args.max_grad_norm > 0 and not approximate:
                    raise ValueError(f"max_grad_norm={self.args.max_grad_norm}: gradient clipping rescales the SGD "
                                     "step, so P[t] = I − η·H does not hold; set TrainingArguments(max_grad_norm=0.0)")
                optimizer = _base_optimizer(self.optimizer)
                decays = {float(g.get("weight_decay", 0.0)) for g in optimizer.param_groups}
                if len(decays) > 1 and not approximate:
                    raise ValueError(f"the optimizer's parameter groups have weight decays {sorted(decays)}; LMCleaner "
                                     "needs one λ for every parameter (TrainingArguments(weight_decay=0.0), or one "
                                     "torch.optim.SGD passed as optimizers=(sgd, None))")
                try:
                    self.recorder = TrajectoryRecorder(self.model, optimizer, **recorder_kwargs)
                except ValueError as error:
                    raise ValueError(f"{error} (with a Trainer: TrainingArguments(optim='sgd'))") from None
            ids, self._ids = torch.cat(self._ids), []
            self._step_context = self.recorder.step(ids)
            self._step_context.__enter__()

        def _close_step(self) -> None:
            context, self._step_context = self._step_context, None
            context.__exit__(None, None, None)

    trainer = LMCleanerTrainer(**trainer_kwargs)
    trainer.add_callback(_Record())
    return trainer
