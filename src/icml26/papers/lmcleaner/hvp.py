"""Hessian-vector product backends for LMCleaner's propagator P[s] = I − η_s·H[s].

Each backend is called as ``hvp(params, batch_ids, vector)`` with the *historical*
parameters θ[s] ``(p,)``, the sample ids of batch S_s and a direction v ``(p,)``,
and returns an approximation of H[s]·v ``(p,)``, where H[s] is the Hessian of the
mini-batch objective L_S(θ) = mean_i ℓ_i(θ) + λ/2·‖θ‖² at θ[s]:

* :class:`ExactHVP`: ∇²L_S(θ)·v by reverse-over-reverse differentiation (``torch.autograd``
  double backward); measured about two SGD steps of cost on the reproduction's models (``torch.func``
  forward-over-reverse measured ~4-5 on them, overhead-bound).
* :class:`GaussNewtonHVP`: (1/B) Σ_i J_iᵀ·∇²_f ℓ_i·J_i·v + λv, the generalised
  Gauss–Newton product (a JVP through the model, the Hessian of the loss in the
  outputs, a VJP back); positive semi-definite for convex losses.
* :class:`EmpiricalFisherHVP`: (1/B) Σ_i g_i·(g_iᵀv) + λv with per-sample gradients
  g_i from ``torch.func.vmap``; memory B·p.
* :class:`BatchMeanFisherHVP`: ḡ·(ḡᵀv) + λv with the batch-mean gradient ḡ of the
  loss: the rank-one product of the authors' code and of the paper's Algorithm 1.
  Near a minimum ḡ → 0 and P → I, so the correction degenerates to subtracting u.

``grad_equivalents`` is the cost of one call counted in mini-batch gradients
(the convention 1 HVP ≈ 2 gradients), used for compute accounting.
"""

from __future__ import annotations

from typing import Literal, Protocol

import torch
from torch import Tensor
from torch.func import grad, jvp, vjp

from .problem import SupervisedProblem

__all__ = [
    "BatchMeanFisherHVP",
    "EmpiricalFisherHVP",
    "ExactHVP",
    "GaussNewtonHVP",
    "HVP",
    "HVPKind",
    "make_hvp",
]

HVPKind = Literal["exact", "gauss_newton", "empirical_fisher", "batch_mean_fisher"]


class HVP(Protocol):
    """``hvp(params (p,), batch_ids (B,), vector (p,)) -> H·vector (p,)``."""

    grad_equivalents: float

    def __call__(self, params: Tensor, batch_ids: Tensor, vector: Tensor) -> Tensor: ...


def _check(params: Tensor, vector: Tensor, batch_ids=None) -> None:
    """Shapes and dtypes of an HVP call. NaN in ``vector`` or ``params`` propagates (NaN out): the
    backends sit in the propagation loop and do not synchronise a device to look for it."""
    if not isinstance(params, Tensor) or not isinstance(vector, Tensor):
        raise TypeError("params and vector must be torch tensors (p,)")
    if params.shape != vector.shape or params.ndim != 1:
        raise ValueError(f"params and vector must both be (p,), got {tuple(params.shape)} and {tuple(vector.shape)}")
    if params.dtype != vector.dtype:
        raise ValueError(f"params ({params.dtype}) and vector ({vector.dtype}) must have one dtype")
    if batch_ids is not None and torch.as_tensor(batch_ids).numel() == 0:
        raise ValueError("batch_ids is empty: a Hessian needs at least one sample")


class ExactHVP:
    """H·v with H = ∇²L_S(θ), by double differentiation (``torch.func``).

    With a clipping problem (``clip_norm``) it is the Jacobian of the clipped update direction
    (not symmetric where a sample is clipped), i.e. the exact propagator of clipped SGD; the other
    backends ignore clipping."""

    grad_equivalents = 2.0

    def __init__(self, problem: SupervisedProblem) -> None:
        if not isinstance(problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
        self.problem = problem

    def __call__(self, params: Tensor, batch_ids: Tensor, vector: Tensor) -> Tensor:
        _check(params, vector, batch_ids)
        if self.problem.clip_norm is not None:
            # the Jacobian of the clipped update direction, d/dr g_clip(θ + r v) at r = 0
            return jvp(lambda th: self.problem.clipped_gradient(th, batch_ids), (params.detach(),),
                       (vector.detach(),))[1]
        # H v = ∇(∇L(θ)·v): reverse over reverse with torch.autograd (the same H v as torch.func's
        # forward-over-reverse to rounding, ~4x cheaper on small models: about two SGD steps)
        with torch.enable_grad():
            th = params.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self.problem.objective(th, batch_ids), th, create_graph=True, allow_unused=True)
            if g is None or not g.requires_grad:  # the objective is at most linear in θ: H = 0
                return torch.zeros_like(vector)
            (hv,) = torch.autograd.grad(g, th, vector.detach(), allow_unused=True)
        return torch.zeros_like(vector) if hv is None else hv


class GaussNewtonHVP:
    """G·v with G = (1/B) Σ_i J_iᵀ ∇²_f ℓ_i J_i + λI (generalised Gauss–Newton)."""

    grad_equivalents = 2.0

    def __init__(self, problem: SupervisedProblem) -> None:
        if not isinstance(problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
        self.problem = problem

    def __call__(self, params: Tensor, batch_ids: Tensor, vector: Tensor) -> Tensor:
        _check(params, vector, batch_ids)
        x, y = self.problem.batch(batch_ids)

        def outputs(th: Tensor) -> Tensor:
            return self.problem.forward(th, x)

        def mean_loss(out: Tensor) -> Tensor:
            return self.problem.loss(out, y).mean()

        out, pullback = vjp(outputs, params.detach())
        # J v: (B, ...) directional derivative of the outputs
        _, jv = jvp(outputs, (params.detach(),), (vector.detach(),))
        # ∇²_f ℓ · J v: Hessian of the (mean) loss in the outputs, applied to J v
        h_jv = jvp(grad(mean_loss), (out.detach(),), (jv,))[1]
        # Jᵀ ∇²_f ℓ J v + λ v
        result = pullback(h_jv)[0]
        if self.problem.l2:
            result = result + self.problem.l2 * vector
        return result


class EmpiricalFisherHVP:
    """F·v with F = (1/B) Σ_i g_i g_iᵀ + λI, from per-sample gradients (memory B·p)."""

    grad_equivalents = 1.0

    def __init__(self, problem: SupervisedProblem) -> None:
        if not isinstance(problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
        self.problem = problem

    def per_sample_gradients(self, params: Tensor, batch_ids: Tensor) -> Tensor:
        """g_i = ∇ℓ_i(θ) for each sample of the batch: ``(B, p)`` (no weight decay)."""
        return self.problem.per_sample_gradients(params, batch_ids)

    def __call__(self, params: Tensor, batch_ids: Tensor, vector: Tensor) -> Tensor:
        _check(params, vector, batch_ids)
        g = self.per_sample_gradients(params, batch_ids)
        # F v = (1/B) Gᵀ (G v) + λ v
        result = g.T @ (g @ vector) / g.shape[0]
        if self.problem.l2:
            result = result + self.problem.l2 * vector
        return result


class BatchMeanFisherHVP:
    """ḡ(ḡᵀv) + λv with ḡ the batch-mean loss gradient (the authors' rank-one product)."""

    grad_equivalents = 1.0

    def __init__(self, problem: SupervisedProblem) -> None:
        if not isinstance(problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem, got {type(problem).__name__}")
        self.problem = problem

    def __call__(self, params: Tensor, batch_ids: Tensor, vector: Tensor) -> Tensor:
        _check(params, vector, batch_ids)
        g = grad(lambda th: self.problem.per_sample_losses(th, batch_ids).mean())(params.detach())
        # ḡ (ḡᵀ v) + λ v
        result = g * torch.dot(g, vector)
        if self.problem.l2:
            result = result + self.problem.l2 * vector
        return result


_KINDS = {
    "exact": ExactHVP,
    "gauss_newton": GaussNewtonHVP,
    "empirical_fisher": EmpiricalFisherHVP,
    "batch_mean_fisher": BatchMeanFisherHVP,
}


def make_hvp(problem: SupervisedProblem, kind: HVPKind = "exact") -> HVP:
    """The HVP backend ``kind`` for ``problem``."""
    if kind not in _KINDS:
        raise ValueError(f"kind={kind!r} is not an HVP backend; choose one of {', '.join(_KINDS)}")
    return _KINDS[kind](problem)
