"""One Lanczos run with full re-orthogonalisation, shared by the Hessian bases (:mod:`.privacy`)
and the Krylov tail correction (:mod:`.tail`)."""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

__all__ = ["lanczos"]


def lanczos(matvec: Callable[[Tensor], Tensor], start: Tensor, m: int, *, tol: float,
            label: str = "Lanczos iteration") -> tuple[Tensor, Tensor, Tensor]:
    """At most ``m`` Lanczos steps of a symmetric operator from the unit vector ``start``.

    Every new vector is re-orthogonalised (twice) against all earlier ones; the run stops early when
    the Krylov space closes (``β ≤ tol·max(1, |α|)``), and then its Ritz pairs are exact.

    Returns ``(values, vectors, basis)``: the eigenvalues (ascending) and eigenvectors ``(n, n)`` of the
    ``n × n`` tridiagonal projection, and the Lanczos basis ``(dim, n)``; ``n`` (≤ m) is also the number
    of ``matvec`` calls. ``matvec`` must return a finite tensor of ``start``'s shape (else ``ValueError``).
    """
    basis = [start]
    alphas: list[Tensor] = []
    betas: list[Tensor] = []
    for j in range(m):
        w = matvec(basis[j])
        if not isinstance(w, Tensor) or w.shape != start.shape:
            raise ValueError(f"matvec must return a {tuple(start.shape)} tensor, got {tuple(getattr(w, 'shape', ()))}")
        if not bool(torch.isfinite(w).all()):
            raise ValueError(f"matvec returned NaN or inf at {label} {j}; is the operator (or θ) finite?")
        w = w.to(start.dtype)
        alphas.append(torch.dot(w, basis[j]))
        stacked = torch.stack(basis, dim=1)
        for _ in range(2):  # full re-orthogonalisation, twice for stability
            w = w - stacked @ (stacked.T @ w)
        beta = w.norm()
        if j == m - 1 or float(beta) <= tol * max(1.0, float(abs(alphas[-1]))):
            break
        betas.append(beta)
        basis.append(w / beta)
    n = len(alphas)
    tri = torch.diag(torch.stack(alphas))
    if n > 1:
        off = torch.stack(betas[: n - 1])
        tri = tri + torch.diag(off, 1) + torch.diag(off, -1)
    values, vectors = torch.linalg.eigh(tri)
    return values, vectors, torch.stack(basis[:n], dim=1)
