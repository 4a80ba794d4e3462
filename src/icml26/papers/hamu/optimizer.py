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

from icml26.common.distributed import all_reduce_, is_sharded, local

from .solver import _EPS, Variant, _number, block_coefficients

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
    return _distribute_bound(bound, retain_norms, forget_norms)


def _distribute_bound(bound: float, retain_norms: Tensor, forget_norms: Tensor) -> Tensor:
    """:func:`distribute_bound` without the checks (for norms the caller computed from finite gradients)."""
    products = retain_norms * forget_norms
    total = float(products.sum())
    if total <= 0.0:
        return torch.full_like(products, bound / max(products.numel(), 1))
    # B_l = B ‖g_r,l‖‖g_f,l‖ / Σ_k ‖g_r,k‖‖g_f,k‖
    return bound * products / total


_CHUNK = 1 << 20


def _dot64(a: Tensor, b: Tensor) -> Tensor:
    """Σ a·b accumulated in float64, in chunks (no float64 copy of a whole tensor)."""
    a, b = a.reshape(-1), b.reshape(-1)
    if a.numel() <= _CHUNK:
        # one chunk: the loop below would add this sum to a zero (kept: it turns -0.0 into +0.0)
        return (a * b).to(torch.float64).sum() + 0.0
    total = torch.zeros((), dtype=torch.float64, device=a.device)
    for x, y in zip(a.split(_CHUNK), b.split(_CHUNK)):
        total += (x * y).to(torch.float64).sum()
    return total


def _in_dtypes(values: Tensor, like: Sequence[Tensor]) -> list[Tensor]:
    """``values[t]`` (float64, one per tensor) as 0-d tensors in ``like[t]``'s dtype: the scalar
    ``values[t].to(like[t].dtype)``, with one conversion for all when the dtypes agree."""
    dtypes = {g.dtype for g in like}
    if len(dtypes) == 1:
        return list(values.to(dtypes.pop()).unbind())
    return [v.to(g.dtype) for v, g in zip(values.unbind(), like)]


def _clip(flat: Tensor, max_norm: float | None) -> Tensor:
    """Scale a flat direction down to norm ``max_norm`` if it is longer (the baselines' clipping)."""
    if max_norm is None:
        return flat
    norm = float(torch.linalg.vector_norm(flat))
    return flat * (max_norm / norm) if norm > max_norm else flat


def _clip_scale(norm_sq: float, max_norm: float | None) -> float:
    """The factor that scales a gradient of squared norm ``norm_sq`` down to ``max_norm`` (1 if shorter)."""
    if max_norm is None:
        return 1.0
    norm = math.sqrt(norm_sq)
    return max_norm / norm if norm > max_norm else 1.0


def _as_param_grad(p: Tensor, g_local: Tensor) -> Tensor:
    """A gradient for ``p`` from this rank's piece: a DTensor with ``p``'s sharding under FSDP2."""
    if not is_sharded(p):
        return g_local
    from torch.distributed.tensor import DTensor

    return DTensor.from_local(g_local, p.device_mesh, p.placements, shape=p.shape, stride=p.stride(),
                              run_check=False)


def _shard_group(params: Sequence[Tensor]):
    """The process group over which FSDP2 shards ``params`` (``None``: nothing is sharded)."""
    for p in params:
        if is_sharded(p):
            mesh = p.device_mesh
            return mesh.get_group() if mesh.ndim == 1 else mesh.get_group(0)
    return None


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
        max_grad_norm: clip g_r and g_f each to this global norm first (``None`` or ``inf``: no clipping).
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
        self._group = _shard_group(self.params)
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
        # Work on this rank's shards (the whole tensors without FSDP2); every per-block scalar is a
        # sum over entries, so summing the shards' sums (all_reduce over the shard group) gives the
        # full model's value, and δ is formed shard by shard. Memory: the gradients' own dtype, no
        # flattened or float64 copy of the model.
        raw_r = [local(g).detach() for g in retain_grads]
        raw_f = [local(g).detach() for g in forget_grads]
        group = self._group
        n = len(self.params)
        # per tensor: ‖g_r‖², ‖g_f‖², g_r·g_f (columns 3-4, once non-finite flags, stay zero: a NaN or
        # inf entry makes its tensor's float64 sum of squares NaN or inf, which the check below sees)
        stats = torch.zeros(n, 5, dtype=torch.float64, device=raw_r[0].device)
        stats[:, :3] = torch.stack([torch.stack((_dot64(r, r), _dot64(f, f), _dot64(r, f)))
                                    for r, f in zip(raw_r, raw_f)])
        if group is not None:
            all_reduce_(stats, group=group)
        for name, column in (("retain", 0), ("forget", 1)):
            if not bool(torch.isfinite(stats[:, column]).all()):
                raise ValueError(f"the {name} gradient holds NaN or inf (is the {name} loss finite?); "
                                 "no step was taken and the parameters are unchanged")
        # clip g_r and g_f each to global norm ≤ max_grad_norm: scale factors s_r, s_f
        scale_r = _clip_scale(float(stats[:, 0].sum()), self.max_grad_norm)
        scale_f = _clip_scale(float(stats[:, 1].sum()), self.max_grad_norm)
        rr, ff, rf = stats[:, 0] * scale_r**2, stats[:, 1] * scale_f**2, stats[:, 2] * (scale_r * scale_f)
        # effective gradients g_r = s_r·raw_r, g_f = s_f·raw_f; HAMU-U swaps to (−g_f, −g_r)
        swap = self.variant == "U"
        if swap:
            rr, ff = ff, rr
        n_blocks = n if self.layerwise else 1
        block = torch.arange(n, device=stats.device) if self.layerwise else torch.zeros(n, dtype=torch.long,
                                                                                        device=stats.device)

        def per_block(values: Tensor) -> Tensor:
            return torch.zeros(n_blocks, dtype=torch.float64, device=values.device).index_add_(0, block, values)

        retain_sq, forget_sq, kappa_blocks = per_block(rr), per_block(ff), per_block(rf)
        retain_norm, forget_norm = retain_sq.sqrt(), forget_sq.sqrt()
        products = retain_norm * forget_norm
        # relative: B = c · lr · Σ_l ‖g_r,l‖‖g_f,l‖ (global: c · lr · ‖g_r‖‖g_f‖)
        bound = self.bound * self.lr * float(products.sum()) if self.bound_mode == "relative" else self.bound
        bounds = _distribute_bound(bound, retain_norm, forget_norm)
        # R_l = lr ‖g_r,l‖
        radii = self.lr * retain_norm

        def effective(t: int) -> tuple[Tensor, Tensor]:
            # scaling by 1 is exact, so unclipped gradients are used as they are (no copy)
            r = raw_r[t] if scale_r == 1.0 else raw_r[t] * scale_r
            f = raw_f[t] if scale_f == 1.0 else raw_f[t] * scale_f
            return (-f, -r) if swap else (r, f)

        # g_⊥,l = g_r − (κ/‖g_f‖²)·g_f, then a second Gram–Schmidt pass against what rounding left
        # along g_f (as hamu_update does), and its norm from the vector itself. Each pass recomputes
        # g_⊥ tensor by tensor (no stored copy); the per-block sums are all-reduced over shards.
        safe_forget_sq = forget_sq.clamp_min(_EPS**2)
        first = _in_dtypes((kappa_blocks / safe_forget_sq)[block], raw_r)
        leftover_parts = []
        for t in range(n):
            g_r, g_f = effective(t)
            leftover_parts.append(_dot64(g_r - first[t] * g_f, g_f))
        leftover = torch.stack(leftover_parts)
        if group is not None:
            all_reduce_(leftover, group=group)
        second = _in_dtypes((per_block(leftover) / safe_forget_sq)[block], raw_r)

        def g_perp(t: int) -> Tensor:
            g_r, g_f = effective(t)
            return (g_r - first[t] * g_f) - second[t] * g_f

        perp = torch.stack([_dot64(residual, residual) for residual in map(g_perp, range(n))])
        if group is not None:
            all_reduce_(perp, group=group)
        perp_norm = per_block(perp).sqrt()
        solved = block_coefficients(retain_sq, forget_sq, kappa_blocks, perp_norm, bounds=bounds, radii=radii)

        n_infeasible = int((solved.branch == 2).sum())
        applied = True
        if n_infeasible and self.infeasible != "min_norm":
            applied = False
            self.stopped = self.stopped or self.infeasible == "stop"
        # δ_l = a_l·g_f,l + b_l·g_r,l − c_l·g_⊥,l, formed tensor by tensor (on this rank's shard)
        coef_c64 = solved.perp_coef[block]
        coef_a, coef_b = _in_dtypes(solved.ascent[block], raw_r), _in_dtypes(solved.retain_coef[block], raw_r)
        coef_c = _in_dtypes(coef_c64, raw_r)
        rectified = (coef_c64 != 0).tolist()  # one host sync, not one per tensor
        deltas_local: list[Tensor] = []
        dot_rows = []  # per tensor: g_r·δ (effective), raw_f·δ, raw_r·δ, δ·δ
        for t in range(n):
            g_r, g_f = effective(t)
            d = coef_a[t] * g_f + coef_b[t] * g_r
            if rectified[t]:
                d = d - coef_c[t] * g_perp(t)
            dot_rows.append(torch.stack((_dot64(g_r, d), _dot64(raw_f[t], d), _dot64(raw_r[t], d), _dot64(d, d))))
            deltas_local.append(d)
        dots = torch.stack(dot_rows)
        if group is not None:
            all_reduce_(dots, group=group)
        # Stop: the optimum's effective retain change Σ_l g_r,l·δ_l is ≥ 0.
        stop = n_infeasible == 0 and float(dots[:, 0].sum()) >= 0.0
        # The authors' rule: B > Σ_l R_l √(‖g_r,l‖²‖g_f,l‖² − κ_l²)/‖g_r,l‖
        sin_part = (products**2 - kappa_blocks**2).clamp_min(0.0).sqrt()
        reference_rhs = float((radii * sin_part / retain_norm.clamp_min(1e-300)).sum())
        if stop and self.stop_on_criterion:
            applied = False
            self.stopped = True
        if not applied:
            deltas_local = [torch.zeros_like(d) for d in deltas_local]
            dots.zero_()

        kappa = float(kappa_blocks.sum())
        norms = math.sqrt(float(retain_sq.sum())) * math.sqrt(float(forget_sq.sum()))
        info = HamuStepLog(
            hardness=kappa,
            cosine=kappa / norms if norms > 0.0 else math.nan,
            bound=bound,
            n_direct=int((solved.branch == 0).sum()),
            n_rectified=int((solved.branch == 1).sum()),
            n_infeasible=n_infeasible,
            stop=stop,
            stop_reference=bound > reference_rhs,
            predicted_forget_change=float(dots[:, 1].sum()),
            predicted_retain_change=float(dots[:, 2].sum()),
            step_norm=math.sqrt(float(dots[:, 3].sum())),
            applied=applied,
        )
        deltas = [d.reshape(local(p).shape).to(p.dtype) for d, p in zip(deltas_local, self.params)]
        return deltas, info

    # --------------------------------------------------------------------- applying it
    def set_lr(self, lr: float) -> None:
        """Use ``lr`` from the next step on (a learning-rate schedule): the radius ``R_l = lr·‖g_r,l‖``
        and the wrapped optimizer's rate, which must be the same for ``θ ← θ + δ`` to hold."""
        lr = _number("lr", lr)
        if not (math.isfinite(lr) and lr > 0.0):
            raise ValueError(f"lr={lr} must be a positive number (skip the step instead of a zero rate)")
        self.lr = float(lr)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr

    def apply(self, retain_grads: Sequence[Tensor], forget_grads: Sequence[Tensor]) -> HamuStepLog:
        """Transform the paired gradients and step the wrapped optimizer with grad = −δ/lr."""
        if self.stopped:
            raise RuntimeError("this HamuOptimizer has stopped (see .logs[-1]); create a new one to go on")
        deltas, info = self.transform(retain_grads, forget_grads)
        if info.applied:
            for p, d in zip(self.params, deltas):
                # grad = −δ / lr, so SGD's θ − lr·grad is θ + δ (in δ's own storage: no second copy)
                p.grad = _as_param_grad(p, d.div_(-self.lr).to(p.dtype))
            self.optimizer.step()
            for p in self.params:
                p.grad = None
        self.logs.append(info)
        return info

    def _backward_grads(self, loss: Tensor) -> list[Tensor]:
        """∇loss per parameter through ``loss.backward()``, so that DDP, FSDP2 and accelerate
        synchronise it across ranks exactly as they do for training (``autograd.grad`` bypasses
        DDP's all-reduce). ``.grad`` is cleared before and after; a parameter the loss does not
        reach gets zeros."""
        for p in self.params:
            p.grad = None
        loss.backward()
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in self.params]
        for p in self.params:
            p.grad = None
        return grads

    def step(
        self,
        retain_closure: Callable[[], Tensor],
        forget_closure: Callable[[], Tensor],
        *,
        measure: bool = False,
    ) -> HamuStepLog:
        """One paired step: gradients of both closures' losses, transform, optimizer step.

        Both gradients come from ``loss.backward()``, so under ``DistributedDataParallel`` (or FSDP2,
        or ``accelerate``) they are averaged over ranks like training gradients, and every rank
        takes the same step. (:meth:`apply` takes gradients you computed yourself: average them
        across ranks first.)

        Args:
            retain_closure, forget_closure: compute the retain and forget loss (scalars) on the
                current batches; they are called once each (twice with ``measure``).
            measure: evaluate both losses again after the step (without gradients) and log
                the realised changes L(θ + δ) − L(θ).
        """
        retain_loss = retain_closure()
        retain_grads = self._backward_grads(retain_loss)
        forget_loss = forget_closure()
        forget_grads = self._backward_grads(forget_loss)
        info = self.apply(retain_grads, forget_grads)
        info.retain_loss, info.forget_loss = float(retain_loss.detach()), float(forget_loss.detach())
        if measure:
            with torch.no_grad():
                info.realised_forget_change = float(forget_closure()) - info.forget_loss
                info.realised_retain_change = float(retain_closure()) - info.retain_loss
        return info


def _grads(loss: Tensor, params: Sequence[Tensor], *, retain_graph: bool = False) -> list[Tensor]:
    """∇loss for each parameter (zeros for parameters the loss does not touch), without touching
    ``.grad``; no gradient synchronisation (use :meth:`HamuOptimizer._backward_grads` under DDP).
    ``retain_graph``: keep the graph for another loss on the same forward pass."""
    grads = torch.autograd.grad(loss, params, allow_unused=True, retain_graph=retain_graph)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
