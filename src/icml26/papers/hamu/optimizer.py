"""HAMU as a gradient transform around any torch optimizer (layer-wise or global).

Per step, following the authors' ``HAMUOptimizer`` (``--use_lr_radius
--distribute_constraint_grad_norm``, ``max_grad_norm=1``):

1. clip g_r and g_f each to global norm ≤ ``max_grad_norm``;
2. for HAMU-U swap to the effective gradients (g_r, g_f) → (−g_f, −g_r);
3. layer-wise (default): for every parameter tensor l, radius R_l = lr·‖g_r,l‖ and bound
   B_l = B·‖g_r,l‖‖g_f,l‖ / Σ_k ‖g_r,k‖‖g_f,k‖, then the closed form per tensor (all tensors
   at once by :func:`~.solver.hamu_update_segments`).
   Hence Σ_l B_l = B, ‖δ‖ = lr·‖g_r‖ when no block is infeasible, and B_l/(R_l‖g_f,l‖) =
   B/(lr·Σ_k ‖g_r,k‖‖g_f,k‖) is the same for every block: all blocks are feasible or none is.
   Global (``layerwise=False``, the authors' ``--full_grad``): one problem on the concatenated
   gradients with R = lr·‖g_r‖;
4. the bound is absolute (B as given) or relative, B = c·lr·Σ_l ‖g_r,l‖‖g_f,l‖ (global:
   c·lr·‖g_r‖‖g_f‖), i.e. the fraction c of the largest feasible bound, so that a converged
   small model with tiny gradients is not infeasible at every step;
5. hand δ to the wrapped optimizer as the gradient −δ/lr (plain SGD with this lr then makes
   exactly θ ← θ + δ);
6. stop flag: the optimum of the problem actually solved has (effective) retain change
   Σ_l g_r,l·δ_l ≥ 0 — retain degradation is unavoidable. For one global problem this is
   κ ≥ κ₂.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Callable, Iterable, Literal, Sequence

import torch
from torch import Tensor

from .solver import Variant, _number, hamu_update_segments

__all__ = ["BoundMode", "HamuOptimizer", "HamuStepLog", "InfeasiblePolicy", "distribute_bound"]

log = logging.getLogger(__name__)

BoundMode = Literal["relative", "absolute"]
InfeasiblePolicy = Literal["min_norm", "skip", "stop"]


@dataclasses.dataclass
class HamuStepLog:
    """What one HAMU step did. Changes are first order unless called ``realised``.

    Attributes:
        hardness: κ = g_r·g_f over all parameters (clipped gradients).
        cosine: cos(g_r, g_f) over all parameters (``nan`` if a gradient is zero).
        bound: B, the guaranteed first-order forget increase (clipped-gradient units; for
            HAMU-U the guaranteed retain decrease).
        n_direct, n_rectified, n_infeasible: blocks per branch (one block when global).
        stop: retain degradation unavoidable at the optimum (see the module docstring).
        stop_reference: the authors' code's rule, B > Σ_l R_l·√(‖g_r,l‖²‖g_f,l‖² − κ_l²)/‖g_r,l‖,
            which ignores the sign of κ.
        predicted_forget_change, predicted_retain_change: g_f·δ and g_r·δ with the raw
            (unclipped) gradients.
        step_norm: ‖δ‖.
        applied: whether the step was taken (``False`` when skipped or stopped).
        retain_loss, forget_loss: the losses the gradients came from (if known).
        realised_forget_change, realised_retain_change: L(θ + δ) − L(θ) on the same batches,
            when measured.
    """

    hardness: float
    cosine: float
    bound: float
    n_direct: int
    n_rectified: int
    n_infeasible: int
    stop: bool
    stop_reference: bool
    predicted_forget_change: float
    predicted_retain_change: float
    step_norm: float
    applied: bool
    retain_loss: float | None = None
    forget_loss: float | None = None
    realised_forget_change: float | None = None
    realised_retain_change: float | None = None


def distribute_bound(bound: float, retain_norms: Tensor, forget_norms: Tensor) -> Tensor:
    """B_l = B·‖g_r,l‖‖g_f,l‖ / Σ_k ‖g_r,k‖‖g_f,k‖ (equal shares if every product is zero).

    Args:
        bound: the total bound B (finite, >= 0).
        retain_norms, forget_norms: ``(n_blocks,)`` per-block gradient norms (finite, >= 0).
    """
    bound = _number("bound", bound)
    if not (math.isfinite(bound) and bound >= 0.0):
        raise ValueError(f"bound={bound} must be a finite number >= 0")
    for name, t in (("retain_norms", retain_norms), ("forget_norms", forget_norms)):
        if not isinstance(t, Tensor) or t.dim() != 1 or t.numel() == 0:
            raise ValueError(f"{name} must be a non-empty (n_blocks,) tensor, got {getattr(t, 'shape', type(t).__name__)}")
        if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
            raise ValueError(f"{name} must be finite and >= 0 (they are norms)")
    if retain_norms.shape != forget_norms.shape:
        raise ValueError(f"retain_norms {tuple(retain_norms.shape)} and forget_norms {tuple(forget_norms.shape)} differ")
    products = retain_norms * forget_norms
    total = float(products.sum())
    if total <= 0.0:
        return torch.full_like(products, bound / max(products.numel(), 1))
    # B_l = B ‖g_r,l‖‖g_f,l‖ / Σ_k ‖g_r,k‖‖g_f,k‖
    return bound * products / total


def _flatten(tensors: Sequence[Tensor]) -> Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def _clip(flat: Tensor, max_norm: float | None) -> Tensor:
    """Scale ``flat`` down to norm ``max_norm`` if it is longer (no change for ``None``)."""
    if max_norm is None:
        return flat
    norm = float(torch.linalg.vector_norm(flat))
    return flat * (max_norm / norm) if norm > max_norm else flat


def _segment_norm(flat: Tensor, segments: Tensor, n_segments: int) -> Tensor:
    out = torch.zeros(n_segments, dtype=torch.float64, device=flat.device)
    return out.index_add_(0, segments, (flat * flat).to(torch.float64)).sqrt()


class HamuOptimizer:
    """HAMU-Q / HAMU-U as a gradient transform in front of a torch optimizer.

    Example::

        opt = HamuOptimizer(model.parameters(), lr=1e-2, bound=0.5)
        for (xr, yr), (xf, yf) in zip(retain_batches, forget_batches):
            info = opt.step(lambda: F.cross_entropy(model(xr), yr),
                            lambda: F.cross_entropy(model(xf), yf))
            if info.stop:  # retain harm is now unavoidable
                break

    Args:
        params: the parameters to unlearn; each tensor is one block of the layer-wise problem.
        optimizer: the optimizer that applies the transformed gradient −δ/lr (default plain
            SGD with ``lr``, which makes θ ← θ + δ). It must hold the same parameters.
        lr: sets the radius R_l = lr·‖g_r,l‖ (and the scale of a relative bound).
        bound: B (``bound_mode="absolute"``) or c in [0, 1] (``"relative"``, the default; the
            authors' constraint ratio, 0.5 by default).
        bound_mode: ``"relative"`` (B = c·lr·Σ_l ‖g_r,l‖‖g_f,l‖) or ``"absolute"``.
        variant: ``"Q"`` (guaranteed forgetting) or ``"U"`` (guaranteed retain improvement).
        layerwise: one problem per parameter tensor (default) or one global problem.
        infeasible: when B > R‖g_f‖: ``"min_norm"`` takes the minimum-norm step (B/‖g_f‖²)·g_f
            in each block, ``"skip"`` takes no step, ``"stop"`` takes no step and sets
            :attr:`stopped`.
        stop_on_criterion: take no step and set :attr:`stopped` once the stop flag fires.
        max_grad_norm: clip g_r and g_f each to this global norm first (``None``: no clipping).
    """

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        optimizer: torch.optim.Optimizer | None = None,
        *,
        lr: float,
        bound: float = 0.5,
        bound_mode: BoundMode = "relative",
        variant: Variant = "Q",
        layerwise: bool = True,
        infeasible: InfeasiblePolicy = "min_norm",
        stop_on_criterion: bool = False,
        max_grad_norm: float | None = 1.0,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("params holds no tensor that requires grad; pass model.parameters()")
        lr, bound = _number("lr", lr), _number("bound", bound)
        if not (math.isfinite(lr) and lr > 0.0):
            raise ValueError(f"lr={lr} must be a positive number")
        for name, flag in (("layerwise", layerwise), ("stop_on_criterion", stop_on_criterion)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name}={flag!r} must be True or False")
        if bound_mode not in ("relative", "absolute"):
            raise ValueError(f"bound_mode={bound_mode!r} must be 'relative' or 'absolute'")
        if not (math.isfinite(bound) and bound >= 0.0):
            raise ValueError(f"bound={bound} must be a finite number >= 0")
        if bound_mode == "relative" and bound > 1.0:
            raise ValueError(f"bound={bound} with bound_mode='relative' must be in [0, 1]: above 1 "
                             "every step is infeasible; lower it or use bound_mode='absolute'")
        if variant not in ("Q", "U"):
            raise ValueError(f"variant={variant!r} must be 'Q' or 'U'")
        if infeasible not in ("min_norm", "skip", "stop"):
            raise ValueError(f"infeasible={infeasible!r} must be 'min_norm', 'skip' or 'stop'")
        if max_grad_norm is not None and not _number("max_grad_norm", max_grad_norm) > 0.0:
            raise ValueError(f"max_grad_norm={max_grad_norm} must be positive or None (inf: no clipping)")
        self.lr = float(lr)
        self.bound = float(bound)
        self.bound_mode = bound_mode
        self.variant = variant
        self.layerwise = layerwise
        self.infeasible = infeasible
        self.stop_on_criterion = stop_on_criterion
        self.max_grad_norm = max_grad_norm
        self.optimizer = optimizer if optimizer is not None else torch.optim.SGD(self.params, lr=lr, momentum=0.0)
        self._sizes = [p.numel() for p in self.params]
        self._segment_cache: tuple | None = None
        self.stopped = False
        """Set when a step met ``infeasible="stop"`` or the stop flag with ``stop_on_criterion``."""
        self.logs: list[HamuStepLog] = []
        """One :class:`HamuStepLog` per call of :meth:`apply` or :meth:`step`."""

    # --------------------------------------------------------------------- the transform
    def transform(self, retain_grads: Sequence[Tensor], forget_grads: Sequence[Tensor]) -> tuple[list[Tensor], HamuStepLog]:
        """δ per parameter from the paired gradients; changes nothing.

        Args:
            retain_grads, forget_grads: ∇L_r and ∇L_f, one tensor per parameter, in the order
                of ``params``.

        Returns:
            ``(deltas, log)``; ``deltas`` are zeros when the step is skipped or stopped.

        A gradient holding NaN or inf (a diverged loss) is a ``ValueError``, raised before
        anything changes: :meth:`apply` and :meth:`step` then leave the parameters as they were.
        """
        if len(retain_grads) != len(self.params) or len(forget_grads) != len(self.params):
            raise ValueError(f"need one retain and one forget gradient per parameter ({len(self.params)}), "
                             f"got {len(retain_grads)} and {len(forget_grads)}")
        for p, g_r, g_f in zip(self.params, retain_grads, forget_grads):
            if g_r.shape != p.shape or g_f.shape != p.shape:
                raise ValueError(f"gradient shapes {tuple(g_r.shape)}, {tuple(g_f.shape)} do not match "
                                 f"parameter shape {tuple(p.shape)}")
        raw_r, raw_f = _flatten(retain_grads), _flatten(forget_grads)
        for name, raw in (("retain", raw_r), ("forget", raw_f)):
            if not bool(torch.isfinite(raw).all()):
                raise ValueError(f"the {name} gradient holds NaN or inf (is the {name} loss finite?); "
                                 "no step was taken and the parameters are unchanged")
        gr, gf = _clip(raw_r, self.max_grad_norm), _clip(raw_f, self.max_grad_norm)
        if self.variant == "U":
            gr, gf = -gf, -gr
        segments, n_segments = self._segments(gr.device)

        # Per-block norms decide the radii and the split of the bound.
        retain_norm = _segment_norm(gr, segments, n_segments)
        forget_norm = _segment_norm(gf, segments, n_segments)
        products = retain_norm * forget_norm
        # relative: B = c · lr · Σ_l ‖g_r,l‖‖g_f,l‖ (global: c · lr · ‖g_r‖‖g_f‖)
        bound = self.bound * self.lr * float(products.sum()) if self.bound_mode == "relative" else self.bound
        bounds = distribute_bound(bound, retain_norm, forget_norm)
        # R_l = lr ‖g_r,l‖
        radii = self.lr * retain_norm
        solved = hamu_update_segments(gr, gf, segments, bounds=bounds, radii=radii)
        delta = solved.delta

        n_infeasible = int((solved.branch == 2).sum())
        # Stop: the optimum's effective retain change Σ_l g_r,l·δ_l is ≥ 0.
        stop = n_infeasible == 0 and float(torch.dot(gr, delta)) >= 0.0
        # The authors' rule: B > Σ_l R_l √(‖g_r,l‖²‖g_f,l‖² − κ_l²)/‖g_r,l‖
        sin_part = (products**2 - solved.hardness**2).clamp_min(0.0).sqrt()
        reference_rhs = float((radii * sin_part / retain_norm.clamp_min(1e-300)).sum())
        applied = True
        if n_infeasible and self.infeasible != "min_norm":
            applied = False
            self.stopped = self.stopped or self.infeasible == "stop"
        if stop and self.stop_on_criterion:
            applied = False
            self.stopped = True
        if not applied:
            delta = torch.zeros_like(delta)

        kappa = float(solved.hardness.sum())
        norms = float(torch.linalg.vector_norm(gr)) * float(torch.linalg.vector_norm(gf))
        info = HamuStepLog(
            hardness=kappa,
            cosine=kappa / norms if norms > 0.0 else math.nan,
            bound=bound,
            n_direct=int((solved.branch == 0).sum()),
            n_rectified=int((solved.branch == 1).sum()),
            n_infeasible=n_infeasible,
            stop=stop,
            stop_reference=bound > reference_rhs,
            predicted_forget_change=float(torch.dot(raw_f, delta)),
            predicted_retain_change=float(torch.dot(raw_r, delta)),
            step_norm=float(torch.linalg.vector_norm(delta)),
            applied=applied,
        )
        deltas = [d.reshape(p.shape).to(p.dtype) for d, p in zip(torch.split(delta, self._sizes), self.params)]
        return deltas, info

    def _segments(self, device: torch.device) -> tuple[Tensor, int]:
        """Block index of every entry of the flat gradient: one per tensor, or one in all."""
        key = (device, self.layerwise)
        if self._segment_cache is None or self._segment_cache[0] != key:
            n = len(self.params) if self.layerwise else 1
            sizes = torch.tensor(self._sizes, device=device)
            ids = torch.repeat_interleave(torch.arange(len(self._sizes), device=device), sizes)
            self._segment_cache = (key, ids if self.layerwise else torch.zeros_like(ids), n)
        return self._segment_cache[1], self._segment_cache[2]

    # --------------------------------------------------------------------- applying it
    def apply(self, retain_grads: Sequence[Tensor], forget_grads: Sequence[Tensor]) -> HamuStepLog:
        """Transform the paired gradients and step the wrapped optimizer with grad = −δ/lr."""
        if self.stopped:
            raise RuntimeError("this HamuOptimizer has stopped (see .logs[-1]); create a new one to go on")
        deltas, info = self.transform(retain_grads, forget_grads)
        if info.applied:
            for p, d in zip(self.params, deltas):
                # grad = −δ / lr, so SGD's θ − lr·grad is θ + δ
                p.grad = (-d / self.lr).to(p.dtype)
            self.optimizer.step()
            for p in self.params:
                p.grad = None
        self.logs.append(info)
        return info

    def step(
        self,
        retain_closure: Callable[[], Tensor],
        forget_closure: Callable[[], Tensor],
        *,
        measure: bool = False,
    ) -> HamuStepLog:
        """One paired step: gradients of both closures' losses, transform, optimizer step.

        Args:
            retain_closure, forget_closure: compute the retain and forget loss (scalars) on the
                current batches; they are called once each (twice with ``measure``).
            measure: evaluate both losses again after the step (without gradients) and log
                the realised changes L(θ + δ) − L(θ).
        """
        retain_loss = retain_closure()
        retain_grads = _grads(retain_loss, self.params)
        forget_loss = forget_closure()
        forget_grads = _grads(forget_loss, self.params)
        info = self.apply(retain_grads, forget_grads)
        info.retain_loss, info.forget_loss = float(retain_loss.detach()), float(forget_loss.detach())
        if measure:
            with torch.no_grad():
                info.realised_forget_change = float(forget_closure()) - info.forget_loss
                info.realised_retain_change = float(retain_closure()) - info.retain_loss
        return info


def _grads(loss: Tensor, params: Sequence[Tensor]) -> list[Tensor]:
    """∇loss for each parameter (zeros for parameters the loss does not touch)."""
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
