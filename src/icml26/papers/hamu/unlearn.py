"""A convenience loop: unlearn a forget set from any torch model with HAMU or a baseline.

Each step pairs one retain batch with one forget batch (both iterables are cycled), computes the
gradients the method needs and takes one step:

* ``"hamu_q"`` / ``"hamu_u"``: :class:`~.optimizer.HamuOptimizer` (layer-wise by default);
* a name in :data:`~.baselines.BASELINES`: the baseline's direction d, clipped to global norm
  ``max_grad_norm``, applied by SGD, θ ← θ − lr·d. ``"kl"`` and ``"scrub"`` also need
  ∇KL(original ‖ model) on both batches; the original is a frozen copy of the model taken at
  the start (or ``reference_model``).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Callable, Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.common.progress import progress as _progress

from .baselines import BASELINES
from .optimizer import BoundMode, HamuOptimizer, HamuStepLog, InfeasiblePolicy, _clip, _grads
from .solver import _number

__all__ = ["UNLEARN_METHODS", "UnlearnHistory", "unlearn"]

UNLEARN_METHODS: tuple[str, ...] = ("hamu_q", "hamu_u", *BASELINES)
"""Every method name :func:`unlearn` accepts (renamed from ``METHODS``: asym_perturb's
``DYNAMICS`` is a dict of callables; one meaning per name across the package)."""

Batch = tuple[Tensor, Tensor]


@dataclasses.dataclass
class UnlearnHistory:
    """What :func:`unlearn` did.

    Attributes:
        method: the method's name.
        steps_run: steps taken (fewer than asked when HAMU stopped).
        stopped: HAMU stopped (infeasible with ``infeasible="stop"`` or the stop criterion with
            ``stop_on_criterion``).
        retain_losses, forget_losses: the batch losses at each step, before the step.
        hamu_logs: one :class:`~.optimizer.HamuStepLog` per step (HAMU only).
        evaluations: ``{"step": t, **eval_fn(model)}`` at step 0, every ``eval_every`` steps
            and at the end.
    """

    method: str
    steps_run: int = 0
    stopped: bool = False
    retain_losses: list[float] = dataclasses.field(default_factory=list)
    forget_losses: list[float] = dataclasses.field(default_factory=list)
    hamu_logs: list[HamuStepLog] = dataclasses.field(default_factory=list)
    evaluations: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.method not in UNLEARN_METHODS:
            raise ValueError(f"method={self.method!r} is not one of {', '.join(UNLEARN_METHODS)}")


def _cycle(batches: Iterable[Batch]) -> Iterator[Batch]:
    """Iterate again and again (a DataLoader reshuffles on each pass)."""
    while True:
        empty = True
        for batch in batches:
            empty = False
            if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
                raise ValueError(f"each batch must be an (inputs, targets) pair, got {type(batch).__name__}"
                                 + (f" of length {len(batch)}" if hasattr(batch, "__len__") else ""))
            yield batch
        if empty:
            raise ValueError("a batch iterable is empty; pass at least one (inputs, targets) batch")


def _kl_to_target(logits: Tensor, target: Tensor) -> Tensor:
    """KL(p_reference ‖ p_model) from the model's logits and the reference's log-probabilities, batch mean."""
    return F.kl_div(F.log_softmax(logits, dim=-1), target, log_target=True, reduction="batchmean")


class _ReferenceLogProbs:
    """log p_reference(x) of the frozen reference model, kept for the batch seen last at each slot.

    The reference never changes during :func:`unlearn`, so a batch that comes again (full-batch
    unlearning sees the same tensors at every step) gets the log-probabilities computed the first
    time, which are what recomputing them would give.
    """

    def __init__(self, reference: torch.nn.Module) -> None:
        self.reference = reference
        self._last: dict[str, tuple[Tensor, Tensor]] = {}

    def __call__(self, slot: str, x: Tensor) -> Tensor:
        last = self._last.get(slot)
        if last is not None and last[0] is x:
            return last[1]
        with torch.no_grad():
            target = F.log_softmax(self.reference(x), dim=-1)
        self._last[slot] = (x, target)  # holding x keeps its identity unique while it is cached
        return target


def unlearn(
    model: torch.nn.Module,
    retain_batches: Iterable[Batch],
    forget_batches: Iterable[Batch],
    *,
    steps: int,
    lr: float,
    method: str = "hamu_q",
    loss_fn: Callable[[Tensor, Tensor], Tensor] = F.cross_entropy,
    bound: float = 0.5,
    bound_mode: BoundMode = "relative",
    layerwise: bool = True,
    infeasible: InfeasiblePolicy = "min_norm",
    stop_on_criterion: bool = False,
    max_grad_norm: float | None = 1.0,
    baseline_kwargs: dict[str, Any] | None = None,
    reference_model: torch.nn.Module | None = None,
    eval_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    eval_every: int = 0,
    measure: bool = False,
    progress: bool | None = None,
) -> UnlearnHistory:
    """Unlearn in place for ``steps`` paired steps and return the history.

    Args:
        model: any module mapping inputs to logits; its parameters change in place.
        retain_batches, forget_batches: iterables of ``(inputs, targets)``; cycled. Inputs are
            moved to the model's device.
        steps: number of paired steps.
        lr: SGD learning rate (for HAMU also the radius scale R = lr·‖g_r‖).
        method: ``"hamu_q"``, ``"hamu_u"`` or a baseline name (:data:`UNLEARN_METHODS`).
        loss_fn: ``loss_fn(logits, targets) -> scalar``; cross-entropy by default.
        bound, bound_mode, layerwise, infeasible, stop_on_criterion: HAMU options
            (:class:`~.optimizer.HamuOptimizer`).
        max_grad_norm: gradient clipping (HAMU: each gradient; baselines: the direction); ``None`` or
            ``inf``: no clipping.
        baseline_kwargs: keyword arguments of the baseline function (e.g. ``{"beta": 0.8}``).
        reference_model: the original model for ``"kl"``/``"scrub"`` (default: a frozen copy).
        eval_fn: called with the model (in eval mode, without gradients) at step 0, every
            ``eval_every`` steps (0: only at the ends) and after the last step.
        measure: HAMU only: log realised loss changes per step (two extra forward passes).
        progress: show a progress bar (default: only on a terminal).

    A loss that turns NaN or inf raises a ``ValueError`` naming the step, before that step
    changes any parameter (the model keeps the previous step's parameters).
    """
    if method not in UNLEARN_METHODS:
        raise ValueError(f"method={method!r} is not known; pick one of {', '.join(UNLEARN_METHODS)}")
    for name, value in (("steps", steps), ("eval_every", eval_every)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}={value!r} must be an integer")
    if steps < 0:
        raise ValueError(f"steps={steps} must be >= 0")
    lr = _number("lr", lr)
    if not (math.isfinite(lr) and lr > 0.0):
        raise ValueError(f"lr={lr} must be a positive number")
    if eval_every < 0:
        raise ValueError(f"eval_every={eval_every} must be >= 0 (0 evaluates only at the ends)")
    if max_grad_norm is not None and not _number("max_grad_norm", max_grad_norm) > 0.0:
        raise ValueError(f"max_grad_norm={max_grad_norm} must be positive or None (inf: no clipping)")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no parameter that requires grad; nothing to unlearn")
    device = params[0].device
    history = UnlearnHistory(method=method)
    baseline_kwargs = dict(baseline_kwargs or {})

    def evaluate(step: int) -> None:
        if eval_fn is None:
            return
        was_training = model.training
        model.eval()
        with torch.no_grad():
            history.evaluations.append({"step": step, **eval_fn(model)})
        model.train(was_training)

    hamu = None
    if method.startswith("hamu"):
        hamu = HamuOptimizer(params, lr=lr, bound=bound, bound_mode=bound_mode,
                             variant="Q" if method == "hamu_q" else "U", layerwise=layerwise,
                             infeasible=infeasible, stop_on_criterion=stop_on_criterion,
                             max_grad_norm=max_grad_norm)
    else:
        sgd = torch.optim.SGD(params, lr=lr, momentum=0.0)
        needs_kl = method in ("kl", "scrub")
        if needs_kl and reference_model is None:
            reference_model = copy.deepcopy(model).eval()
            for p in reference_model.parameters():
                p.requires_grad_(False)
        reference_log_probs = _ReferenceLogProbs(reference_model) if needs_kl else None

    retain_iter, forget_iter = _cycle(retain_batches), _cycle(forget_batches)
    evaluate(0)
    for step in _progress(range(steps), enabled=progress, desc=method):
        (xr, yr), (xf, yf) = next(retain_iter), next(forget_iter)
        xr, yr, xf, yf = xr.to(device), yr.to(device), xf.to(device), yf.to(device)

        def retain_closure() -> Tensor:
            return loss_fn(model(xr), yr)

        def forget_closure() -> Tensor:
            return loss_fn(model(xf), yf)

        if hamu is not None:
            try:
                info = hamu.step(retain_closure, forget_closure, measure=measure)
            except ValueError as exc:
                raise ValueError(f"step {step}: {exc}") from None
            history.hamu_logs.append(info)
            history.retain_losses.append(info.retain_loss)
            history.forget_losses.append(info.forget_loss)
            history.steps_run = step + 1
            if hamu.stopped:
                history.stopped = True
                break
        else:
            extra = {}
            if reference_log_probs is not None:
                # one forward pass per batch serves its loss and its KL term (each gradient from its own
                # backward pass through the shared graph: the same numbers as two forward passes)
                logits_r, logits_f = model(xr), model(xf)
                retain_loss, forget_loss = loss_fn(logits_r, yr), loss_fn(logits_f, yf)
                extra["g_retain_kl"] = _flat(_grads(_kl_to_target(logits_r, reference_log_probs("retain", xr)), params,
                                                    retain_graph=True))
                if method == "scrub":
                    extra["g_forget_kl"] = _flat(_grads(_kl_to_target(logits_f, reference_log_probs("forget", xf)),
                                                        params, retain_graph=True))
            else:
                retain_loss, forget_loss = retain_closure(), forget_closure()
            try:
                direction = BASELINES[method](_flat(_grads(retain_loss, params)), _flat(_grads(forget_loss, params)),
                                              **extra, **baseline_kwargs)
            except ValueError as exc:
                raise ValueError(f"step {step}: {exc}; the parameters are those before this step") from None
            direction = _clip(direction, max_grad_norm)
            for p, d in zip(params, torch.split(direction, [p.numel() for p in params])):
                p.grad = d.reshape(p.shape)
            sgd.step()
            sgd.zero_grad(set_to_none=True)
            history.retain_losses.append(float(retain_loss.detach()))
            history.forget_losses.append(float(forget_loss.detach()))
            history.steps_run = step + 1
        if eval_every and (step + 1) % eval_every == 0 and step + 1 < steps:
            evaluate(step + 1)
    evaluate(history.steps_run)
    return history


def _flat(grads: Iterable[Tensor]) -> Tensor:
    return torch.cat([g.reshape(-1) for g in grads])
