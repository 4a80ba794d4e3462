"""How small μ must be: the thresholds (μ̄_x, μ̄_y) of a matrix game, by linear programming.

The x-perturbed game f_μ(x, y) = xᵀAy + (μ/2)‖x − σ‖² has, as its x-part, the minimiser of

    F_μ(x) = g(x) + (μ/2)‖x − σ‖²  over the simplex,   g(x) = max_j (Aᵀx)_j.

Its minimiser is an *exact* equilibrium strategy iff it is x̂ = proj_{X*}(σ), the equilibrium
strategy nearest σ (no other point of X* can minimise F_μ, since on X* F_μ − v* is the
distance to σ). With f = g + ι_Δ (polyhedral, minimised on X*), x̂ minimises F_μ iff

    μ (σ − x̂) ∈ ∂f(x̂) = { A y + λ1 − ν :  y ∈ Δ_m, y_j = 0 unless (Aᵀx̂)_j = v*,
                                          ν ≥ 0, ν_i = 0 where x̂_i > 0 }.

∂f(x̂) is a convex set holding 0 (x̂ is optimal), so the μ ≥ 0 that satisfy it form an
interval [0, μ̄_x]; μ̄_x is the optimum of the linear programme "maximise μ subject to the
inclusion above" (``inf`` when σ ∈ X* or the programme is unbounded). For μ ≤ μ̄_x the
x-perturbed instance's fixed point is exact, for μ > μ̄_x it is not. μ̄_y is the same for
the mirrored (y-perturbed) instance: the game −Aᵀ with reference σ_y.

x̂ itself is a projection onto a polytope (a quadratic programme): SciPy's SLSQP gives it to
~1e-9, and the active sets it identifies are then solved exactly (an equality-constrained
least-squares step), so the LP sees the exact active columns and support.

Worked example (tested): A = [[0, 0], [0, 0], [1, 1]] (x's third action always loses 1),
σ uniform: X* = {x₃ = 0}, x̂ = (½, ½, 0) and μ̄_x = 2, which also follows from
d/dx₃ F_μ = 1 − μ/2 at x₃ = 0.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import torch

from icml26.common.argcheck import check_real
from icml26.papers.asym_perturb.games import _as_tensor, solve_lp

__all__ = ["ACTIVE_TOL", "PerturbationThresholds", "perturbation_thresholds", "projection_onto_equilibria",
           "threshold_lp"]

log = logging.getLogger(__name__)

ACTIVE_TOL = 1e-7
"""A coordinate ≤ this is at zero, a column within this of v* is a best response (active sets)."""


@dataclasses.dataclass(frozen=True)
class PerturbationThresholds:
    """The thresholds of one matrix game (see the module docstring).

    Attributes:
        mu_x: μ̄_x, the largest μ at which the x-perturbed instance's fixed point is exact
            (``inf``: any μ).
        mu_y: μ̄_y, the same for the y-perturbed (mirrored) instance.
        x_hat: (n,) proj_{X*}(σ_x), the x-part of the fixed point for μ ≤ μ̄_x.
        y_hat: (m,) proj_{Y*}(σ_y).
        value: v* = min_x max_y xᵀAy.
    """

    mu_x: float
    mu_y: float
    x_hat: np.ndarray
    y_hat: np.ndarray
    value: float

    @property
    def mu_pair(self) -> float:
        """min(μ̄_x, μ̄_y): the largest μ at which the paired fixed-σ method is exact."""
        return min(self.mu_x, self.mu_y)


def _matrix(A) -> np.ndarray:
    A_t = _as_tensor(A, device="cpu", name="A")
    if A_t.dim() != 2 or 0 in A_t.shape:
        raise ValueError(f"A must be one non-empty (n, m) matrix, got shape {tuple(A_t.shape)}; "
                         "loop over a batch")
    if not torch.isfinite(A_t).all():
        raise ValueError("A has NaN or infinite entries")
    return A_t.numpy()


def _reference(sigma, n: int, name: str) -> np.ndarray:
    if sigma is None:
        return np.full(n, 1.0 / n)
    try:
        s = np.asarray(sigma.detach().cpu() if isinstance(sigma, torch.Tensor) else sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers or None (uniform)") from None
    if s.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {s.shape}")
    if not np.isfinite(s).all() or s.min() < -1e-12 or abs(s.sum() - 1) > 1e-9:
        raise ValueError(f"{name} must be a probability vector (finite, >= 0, summing to 1)")
    return s


def _active_sets(A: np.ndarray, x: np.ndarray, value: float) -> tuple[np.ndarray, np.ndarray]:
    """(zero coordinates of x, columns j with (Aᵀx)_j = v*), at :data:`ACTIVE_TOL`."""
    return x <= ACTIVE_TOL, A.T @ x >= value - ACTIVE_TOL


def _affine_projection(sigma: np.ndarray, C: np.ndarray, c: np.ndarray) -> np.ndarray:
    # x = σ − Cᵀ (C Cᵀ)⁺ (C σ − c): the nearest point of {C x = c} (C may be rank deficient)
    return sigma - C.T @ (np.linalg.pinv(C @ C.T) @ (C @ sigma - c))


def projection_onto_equilibria(A, sigma=None, *, value: float | None = None) -> np.ndarray:
    """proj_{X*}(σ): the minimiser's equilibrium strategy nearest σ (Euclidean).

    X* = {x ∈ Δ_n : Aᵀx ≤ v*}. Solved by SLSQP, then polished: with the active sets SLSQP
    identifies (x_i = 0, (Aᵀx)_j = v*) the projection onto their affine hull is exact; it is
    kept when it stays feasible to 1e-10 (else SLSQP's point is returned).

    Args:
        A: (n, m) loss of the minimiser x.
        sigma: (n,) reference (default uniform).
        value: v* if known (default: from :func:`~.games.solve_lp`).

    Returns:
        (n,) NumPy array.
    """
    from scipy.optimize import minimize

    A = _matrix(A)
    n = A.shape[0]
    sigma = _reference(sigma, n, "sigma")
    v, start = solve_lp(A)
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not math.isfinite(value):
            raise ValueError(f"value={value!r} must be a finite number (the game's value v*)")
        v = float(value)
    cons = [{"type": "ineq", "fun": lambda x: v - A.T @ x, "jac": lambda x: -A.T},
            {"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones((1, n))}]
    res = minimize(lambda x: 0.5 * ((x - sigma) ** 2).sum(), start, jac=lambda x: x - sigma,
                   constraints=cons, bounds=[(0.0, None)] * n, method="SLSQP",
                   options={"ftol": 1e-16, "maxiter": 2000})
    x = np.clip(res.x, 0.0, None)
    x /= x.sum()
    zero, active = _active_sets(A, x, v)
    rows = [np.ones((1, n)), np.eye(n)[zero], A.T[active]]
    rhs = [np.ones(1), np.zeros(int(zero.sum())), np.full(int(active.sum()), v)]
    polished = _affine_projection(sigma, np.vstack(rows), np.concatenate(rhs))
    if polished.min() >= -1e-10 and (A.T @ polished).max() <= v + 1e-10:
        return np.clip(polished, 0.0, None)
    log.debug("projection_onto_equilibria: polishing left the polytope; keeping SLSQP's point")
    return x


def threshold_lp(A, x_hat, sigma, value: float) -> float:
    """μ̄ = max{μ ≥ 0 : μ(σ − x̂) ∈ ∂(g + ι_Δ)(x̂)}, by linear programming (SciPy HiGHS).

    Variables (μ, y_J, λ, ν_I): μ(σ − x̂) − A_J y_J − λ1 + ν_I = 0, 1ᵀy_J = 1, y, ν, μ ≥ 0,
    with J the active columns and I the zero coordinates of x̂. ``inf`` when σ = x̂ (to 1e-12)
    or the LP is unbounded; 0.0 (logged) when even μ = 0 is infeasible, i.e. x̂ is not optimal
    to :data:`ACTIVE_TOL`.

    Args:
        A: (n, m) loss of x.
        x_hat: (n,) proj_{X*}(σ).
        sigma: (n,) reference.
        value: v*.
    """
    from scipy.optimize import linprog

    A = _matrix(A)
    n = A.shape[0]
    x_hat = _reference(x_hat, n, "x_hat")
    sigma = _reference(sigma, n, "sigma")
    value = check_real(value, "value")
    d = sigma - x_hat
    if np.abs(d).max() <= 1e-12:
        return math.inf
    zero, active = _active_sets(A, x_hat, float(value))
    AJ = A[:, active]
    k, z = AJ.shape[1], int(zero.sum())
    # columns: μ | y_J (k) | λ (free) | ν_I (z)
    nu = np.eye(n)[:, zero]
    a_eq = np.vstack([np.hstack([d[:, None], -AJ, -np.ones((n, 1)), nu]),
                      np.hstack([np.zeros((1, 1)), np.ones((1, k)), np.zeros((1, 1 + z))])])
    b_eq = np.r_[np.zeros(n), 1.0]
    cost = np.r_[-1.0, np.zeros(k + 1 + z)]
    bounds = [(0, None)] + [(0, None)] * k + [(None, None)] + [(0, None)] * z
    res = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status == 3:
        return math.inf
    if res.status != 0:
        log.warning("threshold LP: %s (x_hat is not optimal to %.0e); returning 0", res.message, ACTIVE_TOL)
        return 0.0
    return float(res.x[0])


def perturbation_thresholds(A, sigma_x=None, sigma_y=None) -> PerturbationThresholds:
    """(μ̄_x, μ̄_y) of the matrix game min_x max_y xᵀAy for references σ_x, σ_y.

    The x-perturbed instance of :func:`~.asymp_gda.asymmetric` has an exact x-part for every
    μ ≤ μ̄_x, the y-perturbed one an exact y-part for μ ≤ μ̄_y; the pair is exact for
    μ ≤ min(μ̄_x, μ̄_y) (:attr:`PerturbationThresholds.mu_pair`).

    Args:
        A: (n, m) loss of x (a NumPy array or tensor; one game — loop over a batch).
        sigma_x, sigma_y: the references (default uniform, the solvers' default start).

    Returns:
        :class:`PerturbationThresholds`.
    """
    A = _matrix(A)
    n, m = A.shape
    sx, sy = _reference(sigma_x, n, "sigma_x"), _reference(sigma_y, m, "sigma_y")
    value = solve_lp(A)[0]
    x_hat = projection_onto_equilibria(A, sx, value=value)
    # the mirrored instance: y minimises yᵀ(−Aᵀ)x, whose value is −v*
    y_hat = projection_onto_equilibria(-A.T, sy, value=-value)
    return PerturbationThresholds(mu_x=threshold_lp(A, x_hat, sx, value),
                                  mu_y=threshold_lp(-A.T, y_hat, sy, -value),
                                  x_hat=x_hat, y_hat=y_hat, value=value)
