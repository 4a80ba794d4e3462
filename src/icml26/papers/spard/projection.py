"""SPAG's safety step: a projection onto the linearised safety half-space.

Constrained fine-tuning ``min L_task(θ) s.t. L_safe(θ) ≤ τ``. After each utility step, on a
safety mini-batch with loss ``ℓ`` and gradient ``g``:

1. if ``ℓ ≤ τ + tol``: do nothing (hysteresis: the trigger is ``τ + tol``, the target ``τ``);
2. else move to the nearest point of ``{θ' : ℓ + gᵀ(θ' − θ) ≤ τ}`` within a trust region of
   radius ``r``: ``Δ = −min((ℓ − τ)/‖g‖², r/‖g‖) · g`` (``mode="closed_form"``, the paper's
   framing as reconstructed in the brief; ``‖Δ‖ = min((ℓ − τ)/‖g‖, r)``).

``mode="reference_adamw"`` does what the authors' ``SPAGOptimizerTrainer`` does instead: clip
``g`` to global norm 1, scale each parameter tensor's gradient by
``α_p = min((ℓ − τ)/‖g_p‖, α_max)`` (``α_max`` = ``trust_radius``) and call the *same* AdamW
that takes the utility steps (shared moments, scheduled learning rate). AdamW's normalisation
largely undoes the ``α`` scaling, so this is a safety-gradient step of about ``lr`` per
coordinate, not a projection.

``τ`` from the base model's own safety loss ``L_b`` (the model's mean safety loss when the
projection is built, i.e. the aligned base model's): ``tau="base"`` sets ``τ = L_b`` (the authors'
README sets ``τ`` "by referencing the pretrained model's safety loss"): fine-tuning may not make the
safety data more than ``tol`` costlier than the base model found it. ``tau="auto"`` (ours, the brief's
resolution of the loss-scale question) sets ``max(0.2, 1.5 · L_b)``; on a model whose ``L_b`` is large
(an LLM scored on its own refusals) it leaves room for the safety loss to grow by half before anything
happens, and a run in which no projection fires is plain fine-tuning (:func:`spag_finetune` warns).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from typing import Any, Callable, Iterable, Iterator, Literal

import numpy as np
import torch
from torch import nn

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite
from icml26.common.distributed import all_reduce_, is_distributed, is_sharded, local

__all__ = [
    "AUTO_TAU_FACTOR",
    "AUTO_TAU_FLOOR",
    "LossFn",
    "ProjectionStep",
    "SafetyProjection",
    "auto_tau",
    "cycle",
    "default_loss",
    "safety_step",
    "trainable_parameters",
]

log = logging.getLogger(__name__)

AUTO_TAU_FACTOR = 1.5
"""``tau="auto"`` = ``max(AUTO_TAU_FLOOR, AUTO_TAU_FACTOR × base safety loss)``."""
AUTO_TAU_FLOOR = 0.2
"""The authors' default ``τ`` (0.2), used as the floor of ``tau="auto"``."""

LossFn = Callable[[nn.Module, Any], torch.Tensor]
"""``loss_fn(model, batch) -> scalar tensor`` (differentiable)."""


# ---------------------------------------------------------------------------
# The closed form on a flat gradient
# ---------------------------------------------------------------------------
def _check_threshold(tau: Any, tol: Any, trust_radius: Any) -> tuple[float, float, float]:
    tau = check_real(tau, "tau", low=0.0)
    tol = check_real(tol, "tol", low=0.0)
    if isinstance(trust_radius, (int, float)) and not isinstance(trust_radius, bool) and trust_radius == math.inf:
        radius = math.inf
    else:
        radius = check_real(trust_radius, "trust_radius", low=0.0, low_open=True)
    return tau, tol, radius


def _coefficient(loss: float, grad_norm: float, tau: float, radius: float) -> float:
    """``c`` in ``Δ = −c·g``: ``min((ℓ − τ)/‖g‖², r/‖g‖)`` (0 for a zero gradient)."""
    if grad_norm == 0.0:
        return 0.0
    return min((loss - tau) / grad_norm**2, radius / grad_norm)


def safety_step(loss: Any, grad: Any, *, tau: float, tol: float = 0.1, trust_radius: float) -> torch.Tensor:
    """The closed-form SPAG safety step ``Δ`` for one safety loss ``ℓ`` and its gradient ``g``.

    ``Δ = 0`` when ``ℓ ≤ τ + tol``; otherwise ``Δ = −min((ℓ − τ)/‖g‖², r/‖g‖) · g``, the
    minimum-norm step onto the linearised half-space ``{ℓ + gᵀΔ ≤ τ}``, shortened to the
    trust radius ``r``. A zero gradient gives ``Δ = 0`` (the linearised constraint cannot
    be met; logged).

    Args:
        loss: ``ℓ``, a finite number (or a one-element tensor).
        grad: ``g``, any shape (tensor, array or list); ``Δ`` has its shape, dtype and device.
        tau: target ``τ ≥ 0``.
        tol: hysteresis ``tol ≥ 0``: the step triggers only above ``τ + tol``.
        trust_radius: ``r > 0``; ``math.inf`` for no cap.
    """
    tau, tol, radius = _check_threshold(tau, tol, trust_radius)
    if isinstance(loss, torch.Tensor):
        if loss.numel() != 1:
            raise ValueError(f"loss must be a scalar, got a tensor of shape {tuple(loss.shape)}")
        loss = loss.item()
    loss = check_real(loss, "loss")
    g = as_tensor(grad, "grad")
    require_finite(g, "grad")
    if loss <= tau + tol:
        return torch.zeros_like(g)
    norm = float(torch.linalg.vector_norm(g.double()))
    if norm == 0.0:
        log.warning("safety loss %.4g is above tau + tol but the gradient is zero: no step", loss)
    # Δ = −min((ℓ − τ)/‖g‖², r/‖g‖) · g
    return -_coefficient(loss, norm, tau, radius) * g


# ---------------------------------------------------------------------------
# Helpers shared with the fine-tuning loops
# ---------------------------------------------------------------------------
def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(v, device) for v in batch)
    if hasattr(batch, "keys") and hasattr(batch, "__getitem__"):  # transformers.BatchEncoding
        return {k: _to_device(batch[k], device) for k in batch.keys()}
    return batch


def _model_device(model: nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def default_loss(model: nn.Module, batch: Any) -> torch.Tensor:
    """The loss of one batch, for the two kinds of model the package supports.

    * a mapping (``{"input_ids", "attention_mask", "labels"}``, a Hugging Face batch):
      ``model(**batch).loss``; the batch must hold ``labels``;
    * a pair ``(inputs, targets)``: cross-entropy of ``model(inputs)`` (or its ``.logits``)
      against integer ``targets``.

    Tensors are moved to the model's device.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    batch = _to_device(batch, _model_device(model))
    if isinstance(batch, dict):
        out = model(**batch)
        loss = getattr(out, "loss", None)
        if loss is None:
            raise ValueError("the model returned no loss for this batch; a Hugging Face batch must hold 'labels' "
                             "(or pass loss_fn=)")
        return loss
    if isinstance(batch, (list, tuple)) and len(batch) == 2:
        inputs, targets = batch
        out = model(inputs)
        logits = getattr(out, "logits", out)
        return nn.functional.cross_entropy(logits, targets)
    raise TypeError(f"batch must be a dict (Hugging Face) or an (inputs, targets) pair, got {type(batch).__name__}; "
                    "or pass loss_fn=")


def trainable_parameters(model: nn.Module) -> list[torch.nn.Parameter]:
    """Parameters with ``requires_grad`` (e.g. only the LoRA adapters of a PEFT model)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters (requires_grad=False everywhere)")
    return params


def cycle(loader: Iterable, name: str = "loader") -> Iterator:
    """Batches of ``loader`` forever: re-iterated (re-shuffled, for a ``DataLoader``) when exhausted."""
    if not isinstance(loader, Iterable):
        raise TypeError(f"{name} must be an iterable of batches (a DataLoader, a list …), got {type(loader).__name__}")
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError(f"{name} yielded no batch")
        if iter(loader) is loader:  # a one-shot iterator cannot be re-iterated: stop after one pass
            raise ValueError(f"{name} is a one-shot iterator and ran out; pass a re-iterable loader (a DataLoader, a list)")


def _squared_norm(tensors: list[torch.Tensor]) -> float:
    """``Σ ‖t‖²`` in float64, summed over FSDP2 shards when parameters are sharded."""
    if not tensors:
        return 0.0
    total = torch.zeros((), dtype=torch.float64, device=local(tensors[0]).device)
    for t in tensors:
        total += local(t).detach().double().pow(2).sum()
    if any(is_sharded(t) for t in tensors):
        all_reduce_(total, "sum")
    return float(total)


def auto_tau(base_loss: float, *, floor: float = AUTO_TAU_FLOOR, factor: float = AUTO_TAU_FACTOR) -> float:
    """``tau="auto"``: ``max(floor, factor × base_loss)``, by default ``max(0.2, 1.5 × base_loss)``.

    The brief's resolution of the loss-scale question; the authors fix ``τ = 0.2`` "by referencing
    the pretrained model's safety loss" (an LLM's token loss on refusals). On another loss scale
    (a classifier whose base safety loss is 0.03) pass ``floor=0`` to keep ``τ`` near the base loss.
    """
    base_loss = check_real(base_loss, "base_loss", low=0.0)
    floor = check_real(floor, "floor", low=0.0)
    factor = check_real(factor, "factor", low=0.0, low_open=True)
    # τ = max(floor, factor · L_safe(θ_base))
    return max(floor, factor * base_loss)


# ---------------------------------------------------------------------------
# The projection on a model
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ProjectionStep:
    """What one :meth:`SafetyProjection.step` did.

    Attributes:
        loss: the safety loss ``ℓ`` before the step.
        projected: whether ``ℓ > τ + tol`` triggered a step.
        step_norm: ``‖Δ‖`` of the parameter change (0 when not projected; for
            ``reference_adamw``, measured after the optimizer step).
    """

    loss: float
    projected: bool
    step_norm: float


class SafetyProjection:
    """SPAG's safety projection on a model's trainable parameters, fed by a safety loader.

    Args:
        model: any ``nn.Module`` (only parameters with ``requires_grad`` move; a PEFT model
            moves its adapters only).
        safety_loader: re-iterable batches of (harmful prompt, refusal) examples; cycled forever.
        tau: ``τ ≥ 0``; ``"base"`` = the model's mean safety loss ``L_b`` over (up to
            ``auto_batches`` of) ``safety_loader`` when the projection is built; or ``"auto"`` =
            ``max(tau_floor, tau_factor · L_b)``.
        tol: hysteresis: steps only when ``ℓ > τ + tol`` (authors: 0.1).
        trust_radius: ``closed_form``: the radius ``r > 0`` of ``‖Δ‖`` (``math.inf``: none);
            ``reference_adamw``: ``α_max`` (authors: 1).
        mode: ``"closed_form"`` (default) or ``"reference_adamw"`` (the authors' code).
        loss_fn: ``loss_fn(model, batch) -> scalar``; default :func:`default_loss`.
        accumulation: safety batches averaged per step (authors: batch 1 × 4).
        max_grad_norm: ``reference_adamw`` only: global clip before the ``α`` scaling (authors: 1).
        auto_batches: batches that ``tau="auto"`` averages (default: one pass, at most 64).
        tau_floor: the floor of ``tau="auto"`` (default 0.2, the authors' LLM-scale ``τ``; see
            :func:`auto_tau`).
        tau_factor: the factor of ``tau="auto"`` (default :data:`AUTO_TAU_FACTOR` = 1.5).

    ``step(optimizer)`` needs the utility optimizer in ``reference_adamw`` mode. The safety
    loss is averaged over ranks under ``torch.distributed`` (every rank takes the same
    decision; DDP averages the gradients).
    """

    def __init__(self, model: nn.Module, safety_loader: Iterable, tau: float | Literal["auto", "base"] = "auto",
                 tol: float = 0.1, trust_radius: float = 1.0,
                 mode: Literal["closed_form", "reference_adamw"] = "closed_form", *,
                 loss_fn: LossFn | None = None, accumulation: int = 1, max_grad_norm: float = 1.0,
                 auto_batches: int | None = None, tau_floor: float = AUTO_TAU_FLOOR,
                 tau_factor: float = AUTO_TAU_FACTOR) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if mode not in ("closed_form", "reference_adamw"):
            raise ValueError(f"mode={mode!r} must be 'closed_form' or 'reference_adamw'")
        if isinstance(tau, str) and tau not in ("auto", "base"):
            raise ValueError(f"tau={tau!r} must be a non-negative number, 'base' or 'auto'")
        _, self.tol, self.trust_radius = _check_threshold(0.0 if isinstance(tau, str) else tau, tol, trust_radius)
        tau_floor = check_real(tau_floor, "tau_floor", low=0.0)
        tau_factor = check_real(tau_factor, "tau_factor", low=0.0, low_open=True)
        if mode == "reference_adamw" and self.trust_radius == math.inf:
            raise ValueError("trust_radius (alpha_max) must be finite in mode='reference_adamw'")
        self.accumulation = check_int(accumulation, "accumulation", low=1)
        self.max_grad_norm = check_real(max_grad_norm, "max_grad_norm", low=0.0, low_open=True)
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable loss_fn(model, batch), got {type(loss_fn).__name__}")
        if auto_batches is not None:
            auto_batches = check_int(auto_batches, "auto_batches", low=1)
        self.model = model
        self.mode = mode
        self.loss_fn: LossFn = loss_fn or default_loss
        self.params = trainable_parameters(model)
        self._loader = safety_loader
        self._batches = cycle(safety_loader, "safety_loader")
        self.base_loss = float("nan")
        if isinstance(tau, str):
            self.base_loss = self.mean_loss(auto_batches)
            # 'base': τ = L_b ;  'auto': τ = max(floor, factor · L_b)
            self.tau = self.base_loss if tau == "base" else auto_tau(self.base_loss, floor=tau_floor,
                                                                     factor=tau_factor)
            log.info("tau=%r: base safety loss %.4f -> tau %.4f", tau, self.base_loss, self.tau)
        else:
            self.tau = float(check_real(tau, "tau", low=0.0))

    @torch.no_grad()
    def mean_loss(self, max_batches: int | None = None) -> float:
        """The model's mean safety loss over one pass of the safety loader (at most ``max_batches``,
        default 64), in the model's current mode."""
        limit = 64 if max_batches is None else check_int(max_batches, "max_batches", low=1)
        losses = [float(self.loss_fn(self.model, batch)) for batch in itertools.islice(self._loader, limit)]
        if not losses:
            raise ValueError("safety_loader yielded no batch")
        value = torch.tensor(float(np.mean(losses)), dtype=torch.float64, device=_model_device(self.model))
        value = float(all_reduce_(value, "mean"))
        if not math.isfinite(value):
            raise ValueError(f"the safety loss is {value}; check the model and the safety data")
        return value

    def _safety_loss_and_grad(self) -> float:
        for p in self.params:
            p.grad = None
        total = 0.0
        for _ in range(self.accumulation):
            loss = self.loss_fn(self.model, next(self._batches)) / self.accumulation
            if loss.ndim != 0:
                raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
            loss.backward()
            total += float(loss.detach())
        if is_distributed():
            value = torch.tensor(total, dtype=torch.float64, device=_model_device(self.model))
            total = float(all_reduce_(value, "mean"))
        if not math.isfinite(total):
            raise ValueError(f"the safety loss is {total}: training diverged (lower the learning rate)")
        return total

    def step(self, optimizer: torch.optim.Optimizer | None = None) -> ProjectionStep:
        """One safety step on the next safety batch(es); see the class docs.

        ``optimizer``: the utility optimizer (required in ``reference_adamw`` mode, unused otherwise).
        """
        if self.mode == "reference_adamw" and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("mode='reference_adamw' steps the utility optimizer: pass step(optimizer)")
        loss = self._safety_loss_and_grad()
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if loss <= self.tau + self.tol:
            for p in self.params:
                p.grad = None
            return ProjectionStep(loss=loss, projected=False, step_norm=0.0)
        if self.mode == "closed_form":
            norm = math.sqrt(_squared_norm(grads))
            # Δ = −min((ℓ − τ)/‖g‖², r/‖g‖) · g   (one coefficient for every tensor: a global projection)
            coef = _coefficient(loss, norm, self.tau, self.trust_radius)
            with torch.no_grad():
                for p, g in zip(self.params, grads):
                    p.add_(g, alpha=-coef)
            step_norm = coef * norm
        else:
            before = [p.detach().clone() for p in self.params]
            torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
            with torch.no_grad():
                for p in self.params:
                    if p.grad is None:
                        continue
                    # α_p = min((ℓ − τ)/‖g_p‖, α_max)   (authors: per tensor, +1e-8 in the denominator)
                    alpha = min((loss - self.tau) / (math.sqrt(_squared_norm([p.grad])) + 1e-8), self.trust_radius)
                    p.grad.mul_(alpha)
            optimizer.step()
            step_norm = math.sqrt(_squared_norm([p.detach() - b for p, b in zip(self.params, before)]))
        for p in self.params:
            p.grad = None
        return ProjectionStep(loss=loss, projected=True, step_norm=step_norm)
