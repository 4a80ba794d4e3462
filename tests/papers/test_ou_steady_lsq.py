"""The ADMM under ou_steady's penalised and constrained least squares: its closed forms, and the bits of the
formulation the committed runs used (scipy's ``lu_solve`` and numpy's ``norm`` in the loop)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from icml26.papers.ou_steady.lsq import _admm


def _admm_as_committed(gram, linear, z0, *, l1_mask, l1, nonneg_mask, equality, max_iter, tol):
    """The loop as the committed runs ran it (before LAPACK's getrs was called directly)."""
    size = gram.shape[0]
    rho = max(float(np.mean(np.diag(gram))) * 2.0, 1e-12)
    if equality is not None:
        a, total = equality
        kkt = np.block([[2.0 * gram + rho * np.eye(size), a[:, None]], [a[None, :], np.zeros((1, 1))]])
    else:
        kkt = 2.0 * gram + rho * np.eye(size)
    lu = scipy.linalg.lu_factor(kkt)
    w, u, z = z0.copy(), np.zeros(size), z0.copy()
    for _ in range(max_iter):
        rhs = 2.0 * linear + rho * (w - u)
        if equality is not None:
            z = scipy.linalg.lu_solve(lu, np.append(rhs, total))[:size]
        else:
            z = scipy.linalg.lu_solve(lu, rhs)
        v = z + u
        w_new = v.copy()
        w_new[l1_mask] = np.sign(v[l1_mask]) * np.maximum(np.abs(v[l1_mask]) - l1 / rho, 0.0)
        w_new[nonneg_mask] = np.maximum(v[nonneg_mask], 0.0)
        dual = rho * np.linalg.norm(w_new - w)
        w = w_new
        u += z - w
        primal = np.linalg.norm(z - w)
        scale = 1.0 + np.linalg.norm(z)
        if primal <= tol * scale and dual <= tol * scale:
            break
    return w


def _problem(rng, size):
    m = rng.standard_normal((3 * size, size)) * rng.uniform(0.1, 10.0, size)  # ill-conditioned columns
    gram = m.T @ m
    return gram, rng.standard_normal(size) * rng.uniform(0.1, 10.0), rng.standard_normal(size)


@pytest.mark.parametrize("equality", [False, True])
def test_admm_gives_the_committed_runs_bits(equality):
    rng = np.random.default_rng(0)
    for trial in range(60):
        size = int(rng.integers(2, 40))
        gram, linear, z0 = _problem(rng, size)
        l1_mask = rng.random(size) < rng.uniform(0.0, 1.0)
        nonneg_mask = rng.random(size) < rng.uniform(0.0, 0.6)
        kwargs = dict(l1_mask=l1_mask, l1=float(rng.choice([0.0, 1e-4, 1e-2, 1.0])), nonneg_mask=nonneg_mask,
                      equality=(np.ones(size), float(size)) if equality else None,
                      max_iter=int(rng.choice([1, 7, 300, 3000])), tol=float(rng.choice([1e-12, 1e-7, 1e-3])))
        got = _admm(gram, linear, z0, **kwargs)
        want = _admm_as_committed(gram, linear, z0, **kwargs)
        assert got.tobytes() == want.tobytes(), f"trial {trial}: max difference {np.abs(got - want).max()}"


def test_admm_soft_thresholds_and_clips_in_closed_form():
    # zᵀz − 2bᵀz + λ‖z‖₁ is minimised by soft(b, λ/2); with z ≥ 0 instead by max(b, 0)
    b = np.array([3.0, -2.0, 0.2, -0.1, 0.0, 1.5])
    size = b.size
    lasso = _admm(np.eye(size), b, np.zeros(size), l1_mask=np.ones(size, bool), l1=1.0,
                  nonneg_mask=np.zeros(size, bool), equality=None, max_iter=5_000, tol=1e-13)
    np.testing.assert_allclose(lasso, np.sign(b) * np.maximum(np.abs(b) - 0.5, 0.0), atol=1e-10)
    clipped = _admm(np.eye(size), b, np.zeros(size), l1_mask=np.zeros(size, bool), l1=0.0,
                    nonneg_mask=np.ones(size, bool), equality=None, max_iter=5_000, tol=1e-13)
    np.testing.assert_allclose(clipped, np.maximum(b, 0.0), atol=1e-10)
    # with Σ z = s and z ≥ 0 on the identity: the projection of b on the simplex scaled to s
    s = 4.0
    simplex = _admm(np.eye(size), b, np.zeros(size), l1_mask=np.zeros(size, bool), l1=0.0,
                    nonneg_mask=np.ones(size, bool), equality=(np.ones(size), s), max_iter=20_000, tol=1e-14)
    theta = 0.25  # Σ max(b − θ, 0) = 2.75 + 1.25 = 4
    np.testing.assert_allclose(simplex, np.maximum(b - theta, 0.0), atol=1e-8)


def test_admm_refuses_to_return_non_finite_values():
    size = 4
    with pytest.raises(ValueError, match="non-finite"):
        _admm(np.eye(size), np.array([1.0, np.nan, 0.0, 2.0]), np.zeros(size), l1_mask=np.ones(size, bool),
              l1=0.1, nonneg_mask=np.zeros(size, bool), equality=None, max_iter=5, tol=1e-9)
