"""Overshooting-bounded gradient descent with eligibility traces (ObGD).

From Elsayed, Vasan & Mahmood 2024, *Streaming Deep RL Finally Works* (arXiv 2410.14606,
Algorithm 3), the optimizer inside every agent of Nilaksh et al. 2026, *Squeezing more from
the stream* (arXiv 2602.09396). One call of :meth:`ObGD.step` does, for the TD error δ:

1. trace:      z ← γλ·z + ∇_θ v                       (``p.grad`` holds ∇_θ v, the
   gradient of the *prediction* v = q(s, a) or v(s), not of a loss)
2. bound:      δ̄ = max(|δ|, 1),  M = α·κ·δ̄·‖z‖₁
3. step size:  α̂ = α / max(M, 1)
4. update:     θ ← θ + α̂·δ·z
5. reset:      z ← 0 *after* the update when ``reset`` is true (episode end, or a
   non-greedy action in Watkins Q(λ)).

The bound makes one update move the prediction by at most |δ|/κ on the sample it was
computed from (for a model linear in θ), so the step cannot overshoot the target
whatever α is. :class:`AdaptiveObGD` divides the trace by a running RMS of δ·z (Adam's
second moment) inside both the bound and the step; :class:`TraceSGD` is SGD(λ) with no
bound (the authors' ``sgd_with_traces``), kept as the control that does overshoot.

Sign convention (the authors' JAX code; Elsayed's PyTorch code back-propagates −v
instead): call ``prediction.backward()`` and then ``optimizer.step(td_error, reset)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable

import torch

from icml26.common.argcheck import check_real

__all__ = ["AdaptiveObGD", "ObGD", "ObGDStep", "TraceSGD"]


@dataclasses.dataclass(frozen=True)
class ObGDStep:
    """What one optimizer step did.

    Attributes:
        step_size: α̂, the step size actually used.
        bound: M = α·κ·δ̄·‖z‖₁ (``0`` for :class:`TraceSGD`); the bound binds when M > 1.
        td_error: δ.
        updates: ``{parameter: Δθ}`` with Δθ = α̂·δ·z, only when ``return_updates=True``
            (tensors are keyed by identity).
    """

    step_size: float
    bound: float
    td_error: float
    updates: dict[torch.Tensor, torch.Tensor] | None = None

    @property
    def bound_binds(self) -> bool:
        return self.bound > 1.0


def _check(name: str, value: float, low: float, high: float | None = None, *, open_low: bool = False) -> None:
    """``value`` is a finite real number in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    check_real(value, name, low=low, high=high, low_open=open_low)


class _TraceOptimizer(torch.optim.Optimizer):
    """Shared bookkeeping: one hyper-parameter set, one eligibility trace per parameter."""

    def __init__(self, params: Iterable[torch.Tensor] | Iterable[dict], defaults: dict) -> None:
        super().__init__(params, defaults)
        first = {k: self.param_groups[0][k] for k in defaults}
        for group in self.param_groups[1:]:
            if any(group[k] != v for k, v in first.items()):
                raise ValueError(
                    f"{type(self).__name__} uses one bound for all parameters: every parameter group "
                    f"must share {sorted(defaults)}; make one optimizer per network instead")

    @property
    def params(self) -> list[torch.Tensor]:
        """Every parameter, in group order."""
        return [p for group in self.param_groups for p in group["params"]]

    def _hyper(self, name: str) -> float:
        return self.param_groups[0][name]

    def traces(self) -> list[torch.Tensor]:
        """The eligibility traces z, one per parameter (created on first use)."""
        out = []
        for p in self.params:
            state = self.state[p]
            if "trace" not in state:
                state["trace"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            out.append(state["trace"])
        return out

    def zero_grad(self, set_to_none: bool = True) -> None:
        """As :meth:`torch.optim.Optimizer.zero_grad`, with a faster ``set_to_none=False``.

        The agents zero the gradients in place every step (``set_to_none=False``, so ``backward``
        accumulates into the same tensors); that path detaches the gradients as the base class does
        and zeroes them all with one ``torch._foreach_zero_`` (the base class zeroes them one at a
        time inside a profiler range, several times slower for these small networks). The
        gradients end as the same zeros either way.
        """
        if set_to_none:
            super().zero_grad(set_to_none=True)
            return
        dense = []
        for p in self.params:
            grad = p.grad
            if grad is None:
                continue
            if grad.grad_fn is not None:
                grad.detach_()
            else:
                grad.requires_grad_(False)
            if grad.is_sparse:
                grad.zero_()
            else:
                dense.append(grad)
        if dense:
            torch._foreach_zero_(dense)

    def reset_traces(self) -> None:
        """z ← 0 (for example when an episode is cut short outside :meth:`step`)."""
        for z in self.traces():
            z.zero_()

    def _accumulate(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        params = self.params
        traces = self.traces()
        grads = []
        for p in params:
            if p.grad is None:
                raise ValueError("a parameter has no .grad: call prediction.backward() before step()")
            grads.append(p.grad)
        # z ← γλ·z + ∇θ v
        torch._foreach_mul_(traces, self._hyper("gamma") * self._hyper("lamda"))
        torch._foreach_add_(traces, grads)
        return params, traces

    @staticmethod
    def _apply(params, directions, scale: float, reset: bool, traces, return_updates: bool):
        updates = None
        if return_updates:
            deltas = torch._foreach_mul(directions, scale)
            torch._foreach_add_(params, deltas)
            updates = dict(zip(params, deltas))
        else:
            torch._foreach_add_(params, directions, alpha=scale)
        if reset:
            for z in traces:
                z.zero_()
        return updates


class ObGD(_TraceOptimizer):
    """ObGD (Elsayed et al. 2024, Alg. 3) as a torch optimizer driven by the TD error.

    Args:
        params: the parameters (or parameter groups, all with the same hyper-parameters).
        lr: α, the nominal step size (Elsayed: 1.0; the stream-rep-rl code: 1e-4).
        gamma: γ, the discount.
        lamda: λ, the trace decay.
        kappa: κ ≥ 1 keeps the no-overshoot guarantee (Elsayed: 2 for values, 3 for policies).

    Usage::

        q_sa.backward()                       # p.grad = ∇θ q(s, a)
        info = opt.step(td_error, reset=done or nongreedy)
        opt.zero_grad()
    """

    def __init__(self, params, lr: float = 1.0, gamma: float = 0.99, lamda: float = 0.8,
                 kappa: float = 2.0) -> None:
        _check("lr", lr, 0.0, open_low=True)
        _check("gamma", gamma, 0.0, 1.0)
        _check("lamda", lamda, 0.0, 1.0)
        _check("kappa", kappa, 0.0, open_low=True)
        super().__init__(params, dict(lr=lr, gamma=gamma, lamda=lamda, kappa=kappa))

    @torch.no_grad()
    def step(self, td_error: float, reset: bool = False, *, return_updates: bool = False) -> ObGDStep:  # type: ignore[override]
        """Accumulate the trace, take the bounded step θ ← θ + α̂·δ·z, then reset if asked."""
        delta = float(td_error)
        if not math.isfinite(delta):
            raise ValueError(f"td_error={td_error!r} is not finite; check rewards and observations")
        params, traces = self._accumulate()
        lr, kappa = self._hyper("lr"), self._hyper("kappa")
        z_l1 = float(torch.stack(torch._foreach_norm(traces, 1)).sum()) if traces else 0.0
        # δ̄ = max(|δ|, 1);  M = α κ δ̄ ‖z‖₁;  α̂ = α / max(M, 1)
        bound = lr * kappa * max(abs(delta), 1.0) * z_l1
        step_size = lr / max(bound, 1.0)
        # θ ← θ + α̂ δ z
        updates = self._apply(params, traces, step_size * delta, reset, traces, return_updates)
        return ObGDStep(step_size=step_size, bound=bound, td_error=delta, updates=updates)


class AdaptiveObGD(_TraceOptimizer):
    """ObGD with an Adam-style second moment (Elsayed et al. 2024, ``AdaptiveObGD``).

    v ← β₂v + (1−β₂)(δz)²,  v̂ = v/(1−β₂ⁿ),  z̃ = z/(√v̂ + ε);
    M = α·κ·δ̄·‖z̃‖₁,  θ ← θ + (α/max(M,1))·δ·z̃.
    """

    def __init__(self, params, lr: float = 1.0, gamma: float = 0.99, lamda: float = 0.8,
                 kappa: float = 2.0, beta2: float = 0.999, eps: float = 1e-8) -> None:
        _check("lr", lr, 0.0, open_low=True)
        _check("gamma", gamma, 0.0, 1.0)
        _check("lamda", lamda, 0.0, 1.0)
        _check("kappa", kappa, 0.0, open_low=True)
        _check("beta2", beta2, 0.0, 1.0)
        if beta2 >= 1.0:
            raise ValueError(f"beta2={beta2} must be below 1 (the bias correction divides by 1-beta2^n)")
        _check("eps", eps, 0.0, open_low=True)
        super().__init__(params, dict(lr=lr, gamma=gamma, lamda=lamda, kappa=kappa, beta2=beta2, eps=eps))
        self.counter = 0

    @torch.no_grad()
    def step(self, td_error: float, reset: bool = False, *, return_updates: bool = False) -> ObGDStep:  # type: ignore[override]
        delta = float(td_error)
        if not math.isfinite(delta):
            raise ValueError(f"td_error={td_error!r} is not finite; check rewards and observations")
        params, traces = self._accumulate()
        beta2, eps = self._hyper("beta2"), self._hyper("eps")
        self.counter += 1
        second = []
        for p, z in zip(params, traces):
            state = self.state[p]
            if "v" not in state:
                state["v"] = torch.zeros_like(p)
            # v ← β₂ v + (1−β₂)(δ z)²
            state["v"].mul_(beta2).addcmul_(z, z, value=(1.0 - beta2) * delta * delta)
            second.append(state["v"])
        correction = 1.0 - beta2 ** self.counter
        # z̃ = z / (√(v / (1−β₂ⁿ)) + ε)
        denominators = torch._foreach_add(torch._foreach_sqrt(torch._foreach_div(second, correction)), eps)
        scaled = torch._foreach_div(traces, denominators)
        lr, kappa = self._hyper("lr"), self._hyper("kappa")
        z_l1 = float(torch.stack(torch._foreach_norm(scaled, 1)).sum()) if scaled else 0.0
        bound = lr * kappa * max(abs(delta), 1.0) * z_l1
        step_size = lr / max(bound, 1.0)
        updates = self._apply(params, scaled, step_size * delta, reset, traces, return_updates)
        return ObGDStep(step_size=step_size, bound=bound, td_error=delta, updates=updates)


class TraceSGD(_TraceOptimizer):
    """SGD(λ) with no bound: θ ← θ + α·δ·z (the authors' ``sgd_with_traces``).

    It overshoots when α·‖z‖² > 2 on a linear model; kept as the control for ObGD.
    """

    def __init__(self, params, lr: float = 1e-4, gamma: float = 0.99, lamda: float = 0.8) -> None:
        _check("lr", lr, 0.0, open_low=True)
        _check("gamma", gamma, 0.0, 1.0)
        _check("lamda", lamda, 0.0, 1.0)
        super().__init__(params, dict(lr=lr, gamma=gamma, lamda=lamda))

    @torch.no_grad()
    def step(self, td_error: float, reset: bool = False, *, return_updates: bool = False) -> ObGDStep:  # type: ignore[override]
        delta = float(td_error)
        if not math.isfinite(delta):
            raise ValueError(f"td_error={td_error!r} is not finite; check rewards and observations")
        params, traces = self._accumulate()
        lr = self._hyper("lr")
        updates = self._apply(params, traces, lr * delta, reset, traces, return_updates)
        return ObGDStep(step_size=lr, bound=0.0, td_error=delta, updates=updates)
