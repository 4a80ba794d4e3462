"""Baseline: observational-only Lyapunov least squares with a known diffusion.

The estimator the paper improves on (GCLM-style, after Dettling et al.'s graphical
continuous Lyapunov models): with only the observational covariance Σ̂ and the
diffusion assumed known (D = I unless given),

    min_B  ‖B Σ̂ + Σ̂ Bᵀ + D‖_F² + λ ‖offdiag B‖₁,     c = −B m̂.

It needs no intervention, but when the true D is not the assumed one its drift is
biased however many samples there are.
"""

from __future__ import annotations

import numpy as np

from icml26.papers.ou_steady.equations import moment_system
from icml26.papers.ou_steady.estimators import OUEstimate, _check_l1, _check_positive, _solve_lsq
from icml26.papers.ou_steady.process import Regime

__all__ = ["fit_observational_lyapunov"]


def fit_observational_lyapunov(
    regime: Regime,
    *,
    diffusion: np.ndarray | None = None,
    l1: float = 0.0,
    support: np.ndarray | None = None,
    max_iter: int = 5_000,
    tol: float = 1e-9,
) -> OUEstimate:
    """Fit B (and c = −B m̂) from the observational moments with the diffusion held known.

    Args:
        regime: the observational moments.
        diffusion: the assumed d (default: all ones, i.e. D = I).
        l1: λ on the off-diagonal drift, as in :func:`~icml26.papers.ou_steady.fit_lsq`.
        support: optional known zero pattern of B.
    """
    if not isinstance(regime, Regime):
        raise TypeError(f"regime must be the observational Regime (one, not a list), got {type(regime).__name__}")
    _check_l1(l1)
    _check_positive("max_iter", max_iter, integer=True)
    _check_positive("tol", tol)
    d = np.ones(regime.n) if diffusion is None else np.asarray(diffusion, dtype=np.float64)
    if d.shape != (regime.n,) or not (np.isfinite(d).all() and (d > 0).all()):
        raise ValueError(f"diffusion must be {regime.n} positive finite numbers, got {diffusion!r}")
    system = moment_system([regime], [None], support)
    z = _solve_lsq(system, l1=l1, fixed_diffusion=d, max_iter=max_iter, tol=tol)
    drift, const, diffusion_hat, strengths = system.layout.unpack(z)
    return OUEstimate(drift, const, diffusion_hat, tuple(strengths), "observational_lyapunov")
