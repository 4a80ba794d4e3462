"""The tail correction: LMCleaner's truncated propagation, completed from public data (ours).

LMCleaner applies only the first K* = min(K, τ − t_z − 1) propagators P[s] = I − η_s·H[s] to
the deleted update u[t_z]. At long lags the remaining ones matter: later SGD steps have already
healed part of the deleted batch's effect (they contract it along stiff directions), and the
truncated correction subtracts it anyway, so the residual grows with the lag at fixed K.

The tail correction (an extension of ours, off unless asked for) approximates the
remaining product by one matrix exponential with a *public-data* Hessian H̄ at θ[τ]:

    Π_{s > t_z + K*} (I − η_s H[s]) v  ≈  exp(−T·(H̄ + λ_damp I)) v,     T = Σ_{s > t_z + K*} η_s

(the sum over the remaining steps that are not themselves deleted or edits), computed with a
Krylov (Lanczos) approximation of dimension m from v, i.e. m Hessian-vector products on the
public batch:

1. Lanczos with full re-orthogonalisation: V = [v/‖v‖, …] (p, m), tridiagonal T_m = Vᵀ H̄ V;
2. exp(−T·H̄) v ≈ ‖v‖ · V exp(−T·T_m) e₁ (eigenvalues of T_m below 0 are treated as 0: a
   negative-curvature direction is not amplified).

The public Hessian reveals nothing about the deleted data beyond θ[τ]; H̄ is an average
Hessian, so the approximation is good when the mini-batch Hessians along the remaining
trajectory stay close to it (single-pass SGD near convergence).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch
from torch import Tensor

from ._checks import finite_vector, integer, number, sample_ids
from .hvp import ExactHVP
from .lanczos import lanczos
from .problem import SupervisedProblem

__all__ = ["TailCorrection", "krylov_expm_multiply"]


def krylov_expm_multiply(matvec: Callable[[Tensor], Tensor], vector: Tensor, time: float, *,
                         krylov_dim: int, shift: float = 0.0) -> tuple[Tensor, int]:
    """exp(−time·(A + shift·I))·v for a symmetric operator A by an m-step Lanczos approximation.

    Args:
        matvec: w ``(p,)`` ↦ A·w ``(p,)``.
        vector: v ``(p,)``.
        time: T ≥ 0.
        krylov_dim: m ≥ 1, the Krylov dimension (m calls of ``matvec`` at most; fewer when the
            Krylov space closes early, in which case the result is exact).
        shift: a scalar added to A (the damping λ_damp), applied exactly as e^{−T·shift}.

    Returns:
        ``(result (p,), matvec calls)``. Eigenvalues of the tridiagonal projection below 0 count as 0.
    """
    if not callable(matvec):
        raise TypeError(f"matvec must be a callable w -> A·w, got {type(matvec).__name__}")
    v = finite_vector("vector", vector)
    time = number("time", time, low=0.0)
    shift = number("shift", shift)
    m = integer("krylov_dim", krylov_dim, low=1)
    norm = v.norm()
    if float(norm) == 0.0 or time == 0.0:
        return v.clone() * math.exp(-time * shift), 0
    values, vectors, basis = lanczos(matvec, v / norm, m, tol=1e-12, label="Krylov step")
    # exp(−T T_m) e₁ = Y exp(−T Λ) Yᵀ e₁
    coef = vectors @ (torch.exp(-time * values.clamp_min(0.0)) * vectors[0])
    result = norm * (basis @ coef)
    return result * math.exp(-time * shift), basis.shape[1]


@dataclasses.dataclass
class TailCorrection:
    """The public-data tail of the propagation (module docstring); pass it as ``tail=`` to
    :func:`~.propagation.truncated_correction`.

    Attributes:
        problem: a :class:`SupervisedProblem` on *public* data with the training model, loss,
            weight decay (and clipping) — its Hessian at θ[τ] is H̄.
        public_ids: the rows of ``problem`` that form the public batch.
        krylov_dim: m, Hessian-vector products on the public batch per deleted batch.
        cost_per_call: one public HVP in mini-batch gradients (default: 2 × |public batch| / the
            recorded batch size, the FLOP convention of :class:`~.hvp.ExactHVP`; the reproduction
            calibrates it by measurement).
    """

    problem: SupervisedProblem
    public_ids: Tensor
    krylov_dim: int = 4
    cost_per_call: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.problem, SupervisedProblem):
            raise TypeError(f"problem must be a SupervisedProblem on public data, got {type(self.problem).__name__}")
        self.public_ids = sample_ids("public_ids", self.public_ids)
        if self.public_ids.numel() == 0:
            raise ValueError("public_ids is empty: the public Hessian needs at least one sample")
        self.krylov_dim = integer("krylov_dim", self.krylov_dim, low=1)
        if self.cost_per_call is not None:
            self.cost_per_call = number("cost_per_call", self.cost_per_call, low=0.0)
        self._hvp = ExactHVP(self.problem)

    def call_cost(self, batch_size: int) -> float:
        """Mini-batch gradients per public HVP (``cost_per_call``, or 2·|public batch|/``batch_size``)."""
        if self.cost_per_call is not None:
            return self.cost_per_call
        return ExactHVP.grad_equivalents * self.public_ids.numel() / max(1, batch_size)

    def apply(self, params_now: Tensor, vector: Tensor, time: float, damping: float = 0.0) -> tuple[Tensor, int]:
        """exp(−time·(H̄ + damping·I))·v with H̄ the public Hessian at ``params_now``; returns (v', HVP calls)."""
        theta = params_now.detach().reshape(-1)
        return krylov_expm_multiply(lambda w: self._hvp(theta, self.public_ids, w.to(theta.dtype)), vector, time,
                                    krylov_dim=self.krylov_dim, shift=damping)
