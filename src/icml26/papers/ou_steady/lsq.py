"""The linear algebra under the estimators (:mod:`.estimators`) and the baselines: the weighted Gram
matrix of a moment system, and the least squares over it with the diffusion fixed or summing to
``n`` (its KKT system), by ADMM when an ℓ1 penalty or ``d ≥ 0`` is active.
"""

from __future__ import annotations

import logging
import math

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
    lu, piv = scipy.linalg.lu_factor(kkt)
    # the loop runs thousands of times on a system of a few dozen unknowns, where the wrappers of
    # scipy's lu_solve and numpy's norm cost more than the arithmetic: LAPACK's getrs is called
    # directly (lu_solve's own call: same routine, same bits) and a norm is sqrt(x·x) (numpy's own
    # formula for a vector); lu_factor checks the matrix, and a non-finite right-hand side, which
    # lu_solve refused at once, leaves a non-finite result that is refused after the loop
    getrs, = scipy.linalg.get_lapack_funcs(("getrs",), (lu,))
    twice_linear = 2.0 * linear
    l1_idx, nonneg_idx = np.flatnonzero(l1_mask), np.flatnonzero(nonneg_mask)
    threshold = l1 / rho
    w = z0.copy()
    u = np.zeros(size)
    z = z0.copy()
    for it in range(max_iter):
        rhs = twice_linear + rho * (w - u)
        if equality is not None:
            b = np.empty(size + 1)
            b[:size] = rhs
            b[size] = total
            z = getrs(lu, piv, b, overwrite_b=True)[0][:size]
        else:
            z = getrs(lu, piv, rhs, overwrite_b=True)[0]
        v = z + u
        w_new = v.copy()
        # prox of (λ/ρ)|·| on the penalised entries, projection on the non-negative ones
        if l1_idx.size:
            v_l1 = v[l1_idx]
            w_new[l1_idx] = np.sign(v_l1) * np.maximum(np.abs(v_l1) - threshold, 0.0)
        if nonneg_idx.size:
            w_new[nonneg_idx] = np.maximum(v[nonneg_idx], 0.0)
        step = w_new - w
        dual = rho * math.sqrt(step.dot(step))
        w = w_new
        gap = z - w
        u += gap
        primal = math.sqrt(gap.dot(gap))
        scale = 1.0 + math.sqrt(z.dot(z))
        if primal <= tol * scale and dual <= tol * scale:
            log.debug("ADMM converged after %d iterations", it + 1)
            break
    if not np.isfinite(w).all():
        raise ValueError("ADMM diverged to non-finite values: check that the moment system is finite")
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
