"""Calibrated noise that turns LMCleaner's correction into an (ε, δ) certificate.

After the correction, the released model θ̂ + ξ must be (ε, δ)-indistinguishable
from θ_ideal + ξ. With r = θ̂ − θ_ideal and a public bound Δ̄ ≥ ‖Π r‖:

* isotropic noise (the paper's draft): ξ ~ N(0, σ²I) with
  σ = (Δ̄/ε)·√(2·ln(1.25/δ))  (the classical Gaussian mechanism);
* subspace-aware noise (the camera-ready, known from the authors' code): with a
  public orthonormal basis Q ``(p, k)`` and Π = QQᵀ,
  ξ = ξ_∥ + ξ_⊥, ξ_∥ ~ N(0, σ_∥²Π), ξ_⊥ ~ N(0, σ_⊥²(I − Π)),
  σ_∥ = (2Δ̄/ε)·√(2·ln(2.5/δ))  (each block gets (ε/2, δ/2)), σ_⊥ = β·σ_∥.
  This is valid under the *concentration assumption* ‖(I − Π) r‖ ≤ β·Δ̄, which
  the library cannot verify without θ_ideal; :func:`concentration` measures the
  empirical β̂ = ‖(I − Π) r‖/Δ̄ where θ_ideal is known.

Both mechanisms are Gaussian, so their exact privacy curve is that of a Gaussian
shift with Mahalanobis length μ = √(‖Πr‖²/σ_∥² + ‖(I−Π)r‖²/σ_⊥²) (Balle & Wang,
2018, Theorem 8):

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ).

Under the assumptions the calibration gives μ ≤ ε/√(4·ln(2.5/δ)).

Bases: :func:`random_basis` (public, data-independent; the authors' choice) or
:func:`hessian_basis`, the top-k eigenvectors of a Hessian on public data by
Lanczos iteration (:func:`lanczos_top_eigenvectors`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from .hvp import ExactHVP
from .lanczos import lanczos
from ._checks import finite_vector, integer, number
from .problem import SupervisedProblem

__all__ = [
    "Certificate",
    "NoisyRelease",
    "add_isotropic_noise",
    "add_subspace_noise",
    "concentration",
    "gaussian_delta",
    "gaussian_epsilon",
    "hessian_band_basis",
    "hessian_basis",
    "hessian_flat_basis",
    "isotropic_noise_scale",
    "lanczos_top_eigenvectors",
    "mahalanobis_shift",
    "random_basis",
    "sample_subspace_noise",
    "subspace_noise_scales",
]


def _check_budget(sensitivity: float | None, epsilon: float, delta: float) -> float:
    if sensitivity is None:
        raise ValueError(
            "no certificate without a public sensitivity bound Δ̄ ≥ ‖θ̂ − θ_ideal‖: pass "
            "sensitivity=... (e.g. η_max × gradient clip norm, or the largest logged ‖u[t]‖)"
        )
    sensitivity = number("sensitivity", sensitivity, low=0.0, strict=True)
    number("epsilon", epsilon, low=0.0, strict=True)
    number("delta", delta, low=0.0, strict=True, high=1.0, high_strict=True)
    return sensitivity


def isotropic_noise_scale(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ = (Δ̄/ε)·√(2·ln(1.25/δ)), the draft's isotropic Gaussian mechanism."""
    sensitivity = _check_budget(sensitivity, epsilon, delta)
    # σ = Δ̄/ε · √(2 ln(1.25/δ))
    return sensitivity / epsilon * math.sqrt(2.0 * math.log(1.25 / delta))


def subspace_noise_scales(sensitivity: float, epsilon: float, delta: float, beta: float) -> tuple[float, float]:
    """(σ_∥, σ_⊥) of subspace-aware noise, the budget split (ε/2, δ/2) per block.

    Args:
        sensitivity: Δ̄, a public bound on ‖Π(θ̂ − θ_ideal)‖ (required).
        epsilon, delta: the target (ε, δ).
        beta: concentration factor β ∈ (0, 1], assumed ‖(I − Π)(θ̂ − θ_ideal)‖ ≤ β·Δ̄.
    """
    sensitivity = _check_budget(sensitivity, epsilon, delta)
    beta = number("beta", beta, low=0.0, strict=True, high=1.0)
    # σ_∥ = (2 Δ̄/ε) · √(2 ln(2.5/δ))
    sigma_parallel = 2.0 * sensitivity / epsilon * math.sqrt(2.0 * math.log(2.5 / delta))
    # σ_⊥ = β σ_∥
    return sigma_parallel, beta * sigma_parallel


# ---------------------------------------------------------------------------
# Bases
# ---------------------------------------------------------------------------
def random_basis(dim: int, k: int, *, seed: int = 42, dtype: torch.dtype = torch.float32,
                 device: str | torch.device | None = None) -> Tensor:
    """A public random orthonormal basis Q ``(dim, k)`` (QR of a seeded Gaussian matrix).

    The seed is public and the basis is data-independent, as in the authors' code
    (seed 42). The QR costs O(dim·k²).
    """
    dim, k, seed = integer("dim", dim, low=1), integer("k", k, low=1), integer("seed", seed)
    if not 1 <= k <= dim:
        raise ValueError(f"k={k} must lie in 1..dim={dim}")
    generator = torch.Generator().manual_seed(seed)
    gaussian = torch.randn(dim, k, generator=generator, dtype=torch.float64)
    q, _ = torch.linalg.qr(gaussian)
    return q.to(dtype=dtype, device=device)


def lanczos_top_eigenvectors(
    matvec: Callable[[Tensor], Tensor],
    dim: int,
    k: int,
    *,
    num_iters: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device | None = None,
) -> tuple[Tensor, Tensor]:
    """Top-k eigenpairs (by value) of a symmetric operator by Lanczos with full re-orthogonalisation.

    Args:
        matvec: v ``(dim,)`` ↦ A·v ``(dim,)`` for symmetric A.
        dim, k: size of A and number of eigenpairs.
        num_iters: Krylov dimension m (default ``min(dim, max(2k + 20, 40))``).
        seed: seeds the start vector.

    Returns:
        eigenvalues ``(k,)`` in decreasing order and orthonormal eigenvectors ``(dim, k)``.
        A ``matvec`` that returns NaN/inf or the wrong shape is a ``ValueError``.
    """
    if not callable(matvec):
        raise TypeError(f"matvec must be a callable v -> A·v, got {type(matvec).__name__}")
    dim, k, seed = integer("dim", dim, low=1), integer("k", k, low=1), integer("seed", seed)
    if num_iters is not None:
        integer("num_iters", num_iters, low=1)
    if not 1 <= k <= dim:
        raise ValueError(f"k={k} must lie in 1..dim={dim}")
    m = min(dim, num_iters if num_iters is not None else max(2 * k + 20, 40))
    if m < k:
        raise ValueError(f"num_iters={m} must be at least k={k}")
    values, ritz = _lanczos_ritz(matvec, dim, m, seed=seed, dtype=dtype, device=device)
    if values.numel() < k:
        raise ValueError(f"the Krylov space has dimension {values.numel()} < k={k}; A has fewer than k eigenvectors "
                         "to find")
    return values[:k], ritz[:, :k]


def _lanczos_ritz(matvec: Callable[[Tensor], Tensor], dim: int, m: int, *, seed: int, dtype: torch.dtype,
                  device) -> tuple[Tensor, Tensor]:
    """All Ritz pairs of an m-step Lanczos run (full re-orthogonalisation), eigenvalues decreasing.

    The run stops early when the Krylov space closes (then it holds fewer than m pairs, all exact)."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(dim, generator=generator, dtype=dtype).to(device)
    q = q / q.norm()
    values, vectors, basis = lanczos(matvec, q, m, tol=1e-10)
    order = torch.argsort(values, descending=True)
    return values[order], basis @ vectors[:, order]


def hessian_basis(problem: SupervisedProblem, params: Tensor, public_ids: Tensor, k: int, *,
                  num_iters: int | None = None, seed: int = 0) -> Tensor:
    """Top-k eigenvectors Q ``(p, k)`` of the Hessian of L on *public* samples at ``params``.

    ``public_ids`` index ``problem.inputs``; they must hold data whose use is public
    (not training data under deletion), or the basis itself leaks.
    """
    hvp = ExactHVP(problem)
    theta = finite_vector("params", params, problem.num_params)
    _, vectors = lanczos_top_eigenvectors(lambda v: hvp(theta, public_ids, v.to(theta.dtype)),
                                          theta.numel(), k, num_iters=num_iters, seed=seed,
                                          dtype=theta.dtype, device=theta.device)
    return vectors


def _public_spectrum(problem: SupervisedProblem, params: Tensor, public_ids: Tensor, num_iters: int | None,
                     seed: int) -> tuple[Tensor, Tensor]:
    """Eigenpairs of the public Hessian, eigenvalues decreasing: exact (p Hessian-vector products with
    the unit vectors, then ``eigh``, multiplicities included) when ``num_iters`` is None and p ≤
    :data:`DENSE_SPECTRUM_LIMIT`; otherwise ``num_iters`` (default 400) Lanczos steps, which resolve
    one vector per distinct eigenvalue only."""
    hvp = ExactHVP(problem)
    theta = finite_vector("params", params, problem.num_params)
    seed = integer("seed", seed)
    dim = theta.numel()
    if num_iters is None and dim <= DENSE_SPECTRUM_LIMIT:
        eye = torch.eye(dim, dtype=theta.dtype, device=theta.device)
        dense = torch.stack([hvp(theta, public_ids, eye[i]) for i in range(dim)], dim=1)
        values, vectors = torch.linalg.eigh(0.5 * (dense + dense.T))
        return values.flip(0), vectors.flip(1)
    m = min(dim, integer("num_iters", num_iters, low=1) if num_iters is not None else 400)
    return _lanczos_ritz(lambda v: hvp(theta, public_ids, v.to(theta.dtype)), dim, m, seed=seed,
                         dtype=theta.dtype, device=theta.device)


#: Up to this many parameters the public-Hessian bases are computed from the dense Hessian.
DENSE_SPECTRUM_LIMIT = 2000


def hessian_flat_basis(problem: SupervisedProblem, params: Tensor, public_ids: Tensor, k: int, *,
                       num_iters: int | None = None, seed: int = 0) -> Tensor:
    """The k eigenvectors of the public-data Hessian with the *smallest* eigenvalues: ``(p, k)``.

    Noise along them barely moves the loss, so the large block σ_∥ of subspace-aware noise costs
    little accuracy there (ours); the residual then lies mostly off the subspace and the
    certificate's β is about ‖r‖/Δ̄. Exact for p ≤ :data:`DENSE_SPECTRUM_LIMIT` (the dense Hessian);
    for larger p (or with ``num_iters``) by Lanczos, whose smallest *resolved* Ritz values need not be
    the smallest eigenvalues.
    """
    k = integer("k", k, low=1)
    values, vectors = _public_spectrum(problem, params, public_ids, num_iters, seed)
    if vectors.shape[1] < k:
        raise ValueError(f"only {vectors.shape[1]} Ritz vectors were resolved, k={k} asked")
    return vectors[:, -k:]


def hessian_band_basis(problem: SupervisedProblem, params: Tensor, public_ids: Tensor, *, lr: float,
                       window: int, lag: int, max_dim: int | None = None, num_iters: int | None = None,
                       seed: int = 0) -> Tensor:
    """Eigenvectors of the public-data Hessian with η·λ in (1/lag, 1/window): ``(p, k)``.

    This is where the truncated correction leaves its residual: along directions with η·λ ≫ 1/K
    the K propagators already contract the deleted update, along η·λ ≪ 1/L the remaining ones do
    not either, and in between the window stops short of what later SGD healed (so this is a
    basis aimed at the residual). Computed by Lanczos on ``num_iters`` (default min(p, 400)) Krylov
    vectors, so for large p only the upper part of the spectrum is resolved; ``max_dim`` keeps the
    eigenvectors of the largest eigenvalues in the band. ``ValueError`` if the band is empty.
    """
    lr = number("lr", lr, low=0.0, strict=True)
    window, lag = integer("window", window, low=1), integer("lag", lag, low=1)
    if lag <= window:
        raise ValueError(f"lag={lag} must exceed window={window} (the band is (1/lag, 1/window) in η·λ)")
    values, vectors = _public_spectrum(problem, params, public_ids, num_iters, seed)
    inside = (lr * values > 1.0 / lag) & (lr * values < 1.0 / window)
    if not bool(inside.any()):
        raise ValueError(f"no public-Hessian eigenvalue has η·λ in (1/{lag}, 1/{window}) "
                         f"(η·λ spans {float(lr * values.min()):.3g} .. {float(lr * values.max()):.3g})")
    chosen = vectors[:, inside]
    if max_dim is not None:
        chosen = chosen[:, : integer("max_dim", max_dim, low=1)]
    return chosen


# ---------------------------------------------------------------------------
# Noise and certificates
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Certificate:
    """An (ε, δ) statement and what it rests on.

    ``mu`` is the worst-case Mahalanobis shift under the assumptions; the exact
    Gaussian curve gives ``gaussian_delta(mu, epsilon) ≤ delta``.
    """

    epsilon: float
    delta: float
    mu: float
    sensitivity: float
    assumption: str


@dataclasses.dataclass
class NoisyRelease:
    """Parameters after noise, the scales used, and the certificate."""

    params: Tensor
    sigma_parallel: float
    sigma_perp: float
    certificate: Certificate


def _check_basis(basis: Tensor, dim: int) -> None:
    if not isinstance(basis, Tensor):
        raise TypeError(f"basis must be a (p, k) torch tensor, got {type(basis).__name__}")
    if not bool(torch.isfinite(basis).all()):
        raise ValueError("basis holds NaN or inf")
    if basis.ndim != 2 or basis.shape[0] != dim or not 1 <= basis.shape[1] <= dim:
        raise ValueError(f"basis must be (p={dim}, k) with 1 ≤ k ≤ p, got {tuple(basis.shape)}")
    gram = basis.T.double() @ basis.double()
    eye = torch.eye(basis.shape[1], dtype=gram.dtype, device=gram.device)
    if not torch.allclose(gram, eye, atol=1e-4):
        raise ValueError("basis columns must be orthonormal (QᵀQ = I); orthonormalise with torch.linalg.qr")


def _randn(shape: tuple[int, ...], like: Tensor, generator: torch.Generator | None) -> Tensor:
    device = generator.device if generator is not None else like.device
    return torch.randn(shape, generator=generator, dtype=like.dtype, device=device).to(like.device)


def sample_subspace_noise(basis: Tensor, sigma_parallel: float, sigma_perp: float, *, num_samples: int = 1,
                          like: Tensor | None = None, generator: torch.Generator | None = None) -> Tensor:
    """Draws of ξ = ξ_∥ + ξ_⊥ ~ N(0, σ_∥²QQᵀ + σ_⊥²(I − QQᵀ)): shape ``(num_samples, p)``.

    Args:
        basis: Q ``(p, k)`` with orthonormal columns.
        sigma_parallel, sigma_perp: σ_∥ and σ_⊥ (:func:`subspace_noise_scales`).
        like: a tensor whose dtype and device the draws take (default: the basis').
    """
    num_samples = integer("num_samples", num_samples, low=1)
    sigma_parallel = number("sigma_parallel", sigma_parallel, low=0.0)
    sigma_perp = number("sigma_perp", sigma_perp, low=0.0)
    if not isinstance(basis, Tensor):
        raise TypeError(f"basis must be a (p, k) torch tensor, got {type(basis).__name__}")
    like = basis if like is None else like
    q = basis.to(device=like.device, dtype=like.dtype)
    _check_basis(q, q.shape[0])
    z_par = _randn((num_samples, q.shape[1]), like, generator)
    z_full = _randn((num_samples, q.shape[0]), like, generator)
    # ξ_∥ = σ_∥ Q z_k ;  ξ_⊥ = σ_⊥ (I − QQᵀ) z_p
    xi_par = sigma_parallel * (z_par @ q.T)
    xi_perp = sigma_perp * (z_full - (z_full @ q) @ q.T)
    return xi_par + xi_perp


def add_subspace_noise(
    params: Tensor,
    basis: Tensor,
    *,
    sensitivity: float | None,
    epsilon: float,
    delta: float,
    beta: float,
    generator: torch.Generator | None = None,
) -> NoisyRelease:
    """θ̂ + ξ_∥ + ξ_⊥ with ξ_∥ ~ N(0, σ_∥²QQᵀ), ξ_⊥ ~ N(0, σ_⊥²(I − QQᵀ)).

    Args:
        params: θ̂ ``(p,)``.
        basis: Q ``(p, k)`` with orthonormal columns, chosen without private data.
        sensitivity: the public bound Δ̄ (required; ``None`` is refused).
        epsilon, delta, beta: see :func:`subspace_noise_scales`.
        generator: a torch generator for the noise.
    """
    theta = finite_vector("params", params)
    sigma_par, sigma_perp = subspace_noise_scales(sensitivity, epsilon, delta, beta)
    sensitivity = float(sensitivity)
    noise = sample_subspace_noise(basis, sigma_par, sigma_perp, like=theta, generator=generator)
    mu = math.sqrt(sensitivity**2 / sigma_par**2 + (beta * sensitivity) ** 2 / sigma_perp**2)
    cert = Certificate(epsilon=epsilon, delta=delta, mu=mu, sensitivity=float(sensitivity),
                       assumption=f"‖Π r‖ ≤ Δ̄ = {sensitivity:.4g} and ‖(I−Π) r‖ ≤ β·Δ̄ with β = {beta:g}")
    return NoisyRelease(params=theta + noise[0], sigma_parallel=sigma_par, sigma_perp=sigma_perp,
                        certificate=cert)


def add_isotropic_noise(
    params: Tensor,
    *,
    sensitivity: float | None,
    epsilon: float,
    delta: float,
    generator: torch.Generator | None = None,
) -> NoisyRelease:
    """θ̂ + N(0, σ²I) with the draft's σ = (Δ̄/ε)·√(2·ln(1.25/δ))."""
    theta = finite_vector("params", params)
    sigma = isotropic_noise_scale(sensitivity, epsilon, delta)
    sensitivity = float(sensitivity)
    noise = sigma * _randn((theta.numel(),), theta, generator)
    cert = Certificate(epsilon=epsilon, delta=delta, mu=float(sensitivity) / sigma,
                       sensitivity=float(sensitivity), assumption=f"‖r‖ ≤ Δ̄ = {sensitivity:.4g}")
    return NoisyRelease(params=theta + noise, sigma_parallel=sigma, sigma_perp=sigma, certificate=cert)


def _residual_and_basis(residual: Tensor, basis: Tensor) -> tuple[Tensor, Tensor]:
    r = finite_vector("residual", residual)
    _check_basis(basis, r.numel())
    return r, basis.to(device=r.device, dtype=r.dtype)


def mahalanobis_shift(residual: Tensor, basis: Tensor, sigma_parallel: float, sigma_perp: float) -> float:
    """μ = √(‖Πr‖²/σ_∥² + ‖(I−Π)r‖²/σ_⊥²) for a residual r ``(p,)`` (σ_∥, σ_⊥ > 0), Π = QQᵀ for the
    orthonormal basis Q ``(p, k)``."""
    sigma_parallel = number("sigma_parallel", sigma_parallel, low=0.0, strict=True)
    sigma_perp = number("sigma_perp", sigma_perp, low=0.0, strict=True)
    r, q = _residual_and_basis(residual, basis)
    par = q @ (q.T @ r)
    return math.sqrt(float(par.norm()) ** 2 / sigma_parallel**2 + float((r - par).norm()) ** 2 / sigma_perp**2)


def concentration(residual: Tensor, basis: Tensor, sensitivity: float) -> float:
    """β̂ = ‖(I − Π) r‖ / Δ̄: the empirical concentration of a residual r ``(p,)`` in span(Q) (Δ̄ > 0), Q ``(p, k)``
    orthonormal."""
    sensitivity = number("sensitivity", sensitivity, low=0.0, strict=True)
    r, q = _residual_and_basis(residual, basis)
    return float((r - q @ (q.T @ r)).norm()) / sensitivity


def gaussian_delta(mu: float, epsilon: float | np.ndarray) -> float | np.ndarray:
    """Balle & Wang's exact δ(ε) of the Gaussian mechanism with shift μ = Δ/σ.

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ), computed in log space for large ε. μ > 0 finite,
    ε ≥ 0 finite; a scalar ε gives a Python float, an array ε a NumPy array.
    """
    from scipy.special import log_ndtr
    from scipy.stats import norm

    mu = number("mu", mu, low=0.0, strict=True)
    try:
        eps = np.asarray(epsilon.detach().cpu() if hasattr(epsilon, "detach") else epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"epsilon={epsilon!r} must be a number or an array of numbers") from None
    if not np.isfinite(eps).all() or (eps < 0).any():
        raise ValueError(f"epsilon={epsilon!r} must be finite and >= 0")
    first = norm.cdf(mu / 2.0 - eps / mu)
    second = np.exp(eps + log_ndtr(-mu / 2.0 - eps / mu))
    out = np.maximum(first - second, 0.0)
    return float(out) if out.ndim == 0 else out


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ε with :func:`gaussian_delta` (μ, ε) ≤ δ (root of the exact curve)."""
    from scipy.optimize import brentq

    delta = number("delta", delta, low=0.0, strict=True, high=1.0, high_strict=True)
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(mu, hi) > delta:
        hi *= 2.0
    return float(brentq(lambda e: gaussian_delta(mu, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))
