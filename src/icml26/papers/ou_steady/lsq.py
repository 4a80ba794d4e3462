"""The linear algebra under the estimators (:mod:`.estimators`) and the baselines: the weighted Gram
matrix of a moment system, and the least squares over it with the diffusion fixed or summing to
``n`` (its KKT system), by ADMM when an ℓ1 penalty or ``d ≥ 0`` is active.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg
import scipy.sparse

from icml26.papers.ou_steady.equations import MomentSystem

log = logging.getLogger(__name__)


def _admm(
    gram: np.ndarray,
    linear: np.ndarray,
    z0: np.ndarray,
    *,
    l1_mask: np.ndarray,
    l1: float,
    nonneg_mask: np.ndarray,
    equality: tuple[np.ndarray, float] | None,
    max_iter: int,
    tol: float,
) -> np.ndarray:
    """Minimise zᵀ G z − 2 bᵀ z + λ‖z[l1_mask]‖₁ s.t. z[nonneg_mask] ≥ 0 and aᵀz = s, by ADMM.

    Splitting z = w: the z-step is an equality-constrained quadratic (one LU factorisation,
    reused), the w-step soft-thresholds and clips, so ill-conditioned G does not slow it
    down the way it slows proximal gradient.
    """
    size = gram.shape[0]
    rho = max(float(np.mean(np.diag(gram))) * 2.0, 1e-12)
    if equality is not None:
        a, total = equality
        kkt = np.block([[2.0 * gram + rho * np.eye(size), a[:, None]], [a[None, :], np.zeros((1, 1))]])
    else:
        kkt = 2.0 * gram + rho * np.eye(size)
    lu = scipy.linalg.lu_factor(kkt)
    w = z0.copy()
    u = np.zeros(size)
    z = z0.copy()
    for it in range(max_iter):
        rhs = 2.0 * linear + rho * (w - u)
        if equality is not None:
            z = scipy.linalg.lu_solve(lu, np.append(rhs, total))[:size]
        else:
            z = scipy.linalg.lu_solve(lu, rhs)
        v = z + u
        w_new = v.copy()
        # prox of (λ/ρ)|·| on the penalised entries, projection on the non-negative ones
        w_new[l1_mask] = np.sign(v[l1_mask]) * np.maximum(np.abs(v[l1_mask]) - l1 / rho, 0.0)
        w_new[nonneg_mask] = np.maximum(v[nonneg_mask], 0.0)
        dual = rho * np.linalg.norm(w_new - w)
        w = w_new
        u += z - w
        primal = np.linalg.norm(z - w)
        scale = 1.0 + np.linalg.norm(z)
        if primal <= tol * scale and dual <= tol * scale:
            log.debug("ADMM converged after %d iterations", it + 1)
            break
    return w


def _weighted_gram(system: MomentSystem) -> np.ndarray:
    m = system.matrix
    return (m.T @ scipy.sparse.diags(system.weight) @ m).toarray()


def _solve_lsq(
    system: MomentSystem,
    *,
    l1: float,
    fixed_diffusion: np.ndarray | None,
    max_iter: int,
    tol: float,
) -> np.ndarray:
    layout = system.layout
    n = layout.n
    gram = _weighted_gram(system)
    offdiag = np.zeros(layout.size, dtype=bool)
    offdiag[: layout.n_drift] = layout.pairs[:, 0] != layout.pairs[:, 1]
    d_cols = layout.diffusion_cols

    if fixed_diffusion is not None:
        # d is known: minimise over the rest, with M_d d moved to the right-hand side
        free = np.ones(layout.size, dtype=bool)
        free[d_cols] = False
        g_ff = gram[np.ix_(free, free)]
        lin = -gram[np.ix_(free, ~free)] @ fixed_diffusion
        z_f = np.linalg.lstsq(g_ff, lin, rcond=None)[0]
        if l1 > 0:
            z_f = _admm(g_ff, lin, z_f, l1_mask=offdiag[free], l1=l1,
                        nonneg_mask=np.zeros(free.sum(), dtype=bool), equality=None,
                        max_iter=max_iter, tol=tol)
        z = np.zeros(layout.size)
        z[free] = z_f
        z[d_cols] = fixed_diffusion
        return z

    # Σ d = n: the equality-constrained least squares by its KKT system, then ADMM if the
    # penalty is on or the solution has a negative diffusion
    a = np.zeros(layout.size)
    a[d_cols] = 1.0
    kkt = np.block([[2.0 * gram, a[:, None]], [a[None, :], np.zeros((1, 1))]])
    rhs = np.zeros(layout.size + 1)
    rhs[-1] = n
    z = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:-1]
    if l1 > 0 or (z[d_cols] < 0).any():
        nonneg = np.zeros(layout.size, dtype=bool)
        nonneg[d_cols] = True
        z = _admm(gram, np.zeros(layout.size), z, l1_mask=offdiag, l1=l1, nonneg_mask=nonneg,
                  equality=(a, float(n)), max_iter=max_iter, tol=tol)
    return z
