"""Multivariate Ornstein–Uhlenbeck processes, interventions on them, and their moments.

Model (paper, abstract 3):

    dX_t = (B X_t + c) dt + D^{1/2} dW_t,   B Hurwitz,   D = diag(d), d ≥ 0.

Its stationary law is Gaussian with mean m and covariance Σ given by

    B m + c = 0,                     (stationary mean)
    B Σ + Σ Bᵀ + D = 0,              (continuous Lyapunov equation)

both linear in θ = (B, c, d) once (m, Σ) are known. Interventions change θ in a known
way up to an unknown scalar strength (see :class:`Intervention`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Sequence

import numpy as np
import scipy.linalg

__all__ = [
    "INTERVENTION_KINDS",
    "Intervention",
    "OUProcess",
    "Regime",
    "random_scc_system",
]

InterventionKind = Literal["soft_drift", "noise", "knockout", "shift"]

#: The kinds of intervention the library models, and what each does to θ = (B, c, d).
INTERVENTION_KINDS: dict[str, str] = {
    "soft_drift": "B -> B - kappa e_i e_i^T (extra degradation of node i, kappa unknown; the default)",
    "noise": "d_i -> d_i + gamma (extra noise on node i, gamma unknown)",
    "knockout": "X_i clamped to 0: node i's row becomes -e_i^T, c_i = 0, d_i = 0 (no strength)",
    "shift": "c_i -> c_i + delta (shifts the mean only; the covariance is unchanged, so shift-only "
             "data cannot identify the process)",
}


@dataclasses.dataclass(frozen=True)
class Intervention:
    """A single-node intervention.

    Attributes:
        target: index of the intervened node.
        kind: one of :data:`INTERVENTION_KINDS` (default ``"soft_drift"``).
        strength: κ, γ or δ; used to *generate* data and, in :func:`predict`, read in the
            estimate's own scale. Estimators treat it as unknown. ``None`` (the default)
            means 1.0 for the kinds that carry a strength; a ``knockout`` has none, and
            whatever is passed for it is stored as ``None``. Any finite real number is
            accepted (a negative κ is an up-regulation; whether the intervened process is
            still stable is checked by :meth:`OUProcess.intervene`).
    """

    target: int
    kind: InterventionKind = "soft_drift"
    strength: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in INTERVENTION_KINDS:
            raise ValueError(
                f"intervention kind {self.kind!r} is not one of {', '.join(INTERVENTION_KINDS)}"
            )
        if isinstance(self.target, bool) or not isinstance(self.target, (int, np.integer)) or self.target < 0:
            raise ValueError(f"intervention target {self.target!r} must be a non-negative node index")
        object.__setattr__(self, "target", int(self.target))
        if self.kind == "knockout":
            object.__setattr__(self, "strength", None)  # a knockout clamps the node: no strength
            return
        strength = 1.0 if self.strength is None else self.strength
        if isinstance(strength, bool) or not isinstance(strength, (int, float, np.integer, np.floating)):
            raise TypeError(f"intervention strength {strength!r} must be a real number (or None for 1.0)")
        if not np.isfinite(strength):
            raise ValueError(f"intervention strength {strength!r} must be finite")
        object.__setattr__(self, "strength", float(strength))

    @property
    def has_strength(self) -> bool:
        """Whether the intervention carries an unknown scalar strength."""
        return self.kind != "knockout"

    @property
    def changes_covariance(self) -> bool:
        """Shift interventions move only the mean; every other kind changes Σ."""
        return self.kind != "shift"

    def check_target(self, n: int) -> None:
        """``ValueError`` unless ``target`` is a node of an ``n``-node process."""
        if self.target >= n:
            raise ValueError(f"intervention target {self.target} is out of range for {n} nodes (0..{n - 1})")


def _float_array(name: str, value, ndim: int) -> np.ndarray:
    """``value`` as a float64 array of ``ndim`` dimensions, or a ``ValueError`` naming ``name``."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}") from None
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    return array


def _as_generator(rng, name: str = "rng") -> np.random.Generator:
    """A NumPy generator from ``rng`` (a ``Generator``, returned as is, or an integer seed)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise TypeError(f"{name}={rng!r} must be a numpy Generator (np.random.default_rng(seed)) or a seed >= 0")


def _is_hurwitz(drift: np.ndarray) -> bool:
    return bool(np.max(np.linalg.eigvals(drift).real) < 0)


@dataclasses.dataclass(frozen=True)
class OUProcess:
    """An OU process dX = (B X + c) dt + diag(d)^{1/2} dW.

    Attributes:
        drift: B, ``(n, n)``, Hurwitz.
        const: c, ``(n,)``.
        diffusion: d, ``(n,)``, non-negative (diagonal of D).
    """

    drift: np.ndarray
    const: np.ndarray
    diffusion: np.ndarray

    def __post_init__(self) -> None:
        drift = _float_array("drift", self.drift, 2)
        const = _float_array("const", self.const, 1)
        diffusion = _float_array("diffusion", self.diffusion, 1)
        if drift.shape[0] != drift.shape[1] or drift.shape[0] == 0:
            raise ValueError(f"drift must be a non-empty square matrix, got shape {drift.shape}")
        n = drift.shape[0]
        if const.shape != (n,) or diffusion.shape != (n,):
            raise ValueError(
                f"const and diffusion must have shape ({n},), got {const.shape} and {diffusion.shape}"
            )
        if not (np.isfinite(drift).all() and np.isfinite(const).all() and np.isfinite(diffusion).all()):
            raise ValueError("drift, const and diffusion must be finite")
        if not _is_hurwitz(drift):
            raise ValueError(
                "drift is not Hurwitz (an eigenvalue has real part >= 0), so there is no stationary "
                "law; shift its diagonal down, e.g. B - (max Re eig + 0.5) I"
            )
        if (diffusion < 0).any():
            raise ValueError(f"diffusion must be non-negative, got {diffusion}")
        object.__setattr__(self, "drift", drift)
        object.__setattr__(self, "const", const)
        object.__setattr__(self, "diffusion", diffusion)

    @property
    def n(self) -> int:
        return self.drift.shape[0]

    def stationary_mean(self) -> np.ndarray:
        """m = −B⁻¹ c."""
        # B m + c = 0
        return np.linalg.solve(self.drift, -self.const)

    def stationary_cov(self) -> np.ndarray:
        """Σ solving B Σ + Σ Bᵀ + D = 0 (``scipy.linalg.solve_continuous_lyapunov``)."""
        # B Σ + Σ Bᵀ = −D
        sigma = scipy.linalg.solve_continuous_lyapunov(self.drift, -np.diag(self.diffusion))
        return 0.5 * (sigma + sigma.T)

    def sample(self, n_samples: int, rng: np.random.Generator | int) -> np.ndarray:
        """Exact stationary draws, ``(n_samples, n)`` (no time discretisation).

        ``rng``: a NumPy ``Generator`` (or an integer seed).
        """
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
            raise ValueError(f"n_samples={n_samples!r} must be a positive integer")
        rng = _as_generator(rng)
        mean, cov = self.stationary_mean(), self.stationary_cov()
        # Σ = V diag(w) Vᵀ; a square root that also handles the singular Σ of a knockout.
        w, v = np.linalg.eigh(cov)
        root = v * np.sqrt(np.clip(w, 0.0, None))
        return mean + rng.standard_normal((n_samples, self.n)) @ root.T

    def intervene(self, intervention: Intervention | None) -> "OUProcess":
        """The process under ``intervention`` (with its true strength); ``None`` (observational) is ``self``."""
        if intervention is None:
            return self
        if not isinstance(intervention, Intervention):
            raise TypeError(f"intervention must be an Intervention or None, got {type(intervention).__name__}")
        intervention.check_target(self.n)
        i = intervention.target
        drift, const, diffusion = self.drift.copy(), self.const.copy(), self.diffusion.copy()
        if intervention.kind == "soft_drift":
            # B' = B − κ e_i e_iᵀ
            drift[i, i] -= intervention.strength
        elif intervention.kind == "noise":
            # d'_i = d_i + γ
            diffusion[i] += intervention.strength
        elif intervention.kind == "shift":
            # c'_i = c_i + δ
            const[i] += intervention.strength
        else:  # knockout: X_i relaxes to 0 deterministically
            drift[i, :] = 0.0
            drift[i, i] = -1.0
            const[i] = 0.0
            diffusion[i] = 0.0
        return OUProcess(drift, const, diffusion)

    def regime(self, n_samples: int | None = None, rng: np.random.Generator | None = None) -> "Regime":
        """Exact moments (``n_samples=None``) or the moments of ``n_samples`` stationary draws."""
        if n_samples is None:
            return Regime(self.stationary_mean(), self.stationary_cov(), None)
        if rng is None:
            raise ValueError("rng=None: pass rng (a numpy Generator or a seed) to draw samples")
        return Regime.from_samples(self.sample(n_samples, rng))


@dataclasses.dataclass(frozen=True)
class Regime:
    """The moments of one observational or interventional data set.

    Attributes:
        mean: ``(n,)`` sample (or exact) mean.
        cov: ``(n, n)`` symmetric positive semi-definite covariance.
        n_samples: how many samples produced it; ``None`` for exact moments.
    """

    mean: np.ndarray
    cov: np.ndarray
    n_samples: int | None = None

    def __post_init__(self) -> None:
        mean = _float_array("mean", self.mean, 1)
        cov = _float_array("cov", self.cov, 2)
        if mean.size == 0 or cov.shape != (mean.size, mean.size):
            raise ValueError(f"mean must be (n,) with n >= 1 and cov (n, n); got {mean.shape} and {cov.shape}")
        if not (np.isfinite(mean).all() and np.isfinite(cov).all()):
            raise ValueError("mean and cov must be finite")
        if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(cov).max())):
            raise ValueError("cov is not symmetric")
        w = np.linalg.eigvalsh(cov)
        if w.min() < -1e-9 * max(1.0, w.max()):
            raise ValueError(f"cov is not positive semi-definite (smallest eigenvalue {w.min():.3g})")
        if self.n_samples is not None and (isinstance(self.n_samples, bool) or not isinstance(
                self.n_samples, (int, np.integer)) or self.n_samples < 2):
            raise ValueError(f"n_samples={self.n_samples!r} must be an integer >= 2 (or None for exact moments)")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "cov", 0.5 * (cov + cov.T))

    @property
    def n(self) -> int:
        return self.mean.size

    @classmethod
    def from_samples(cls, samples: np.ndarray) -> "Regime":
        """Sample mean and unbiased covariance of ``samples``: ``(n_samples, n)``."""
        try:
            x = np.asarray(samples, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"samples must be an array of real numbers, got {type(samples).__name__}") from None
        if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
            raise ValueError(f"samples must be (n_samples >= 2, n), got shape {x.shape}")
        return cls(x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False)), x.shape[0])


def random_scc_system(
    rng: np.random.Generator | int,
    scc_sizes: Sequence[int] = (3, 3, 2),
    *,
    condensation: Literal["chain", "v"] = "chain",
    cross_edges: int = 1,
    skew: float = 2.0,
    symmetric: float = 0.3,
    cross_scale: float = 1.0,
    margin: float = 0.5,
) -> tuple[OUProcess, np.ndarray, list[list[int]]]:
    """A random OU process whose drift graph has the given strongly connected components.

    Each component is a dense block (every within-component edge present) with weights
    ``skew * (G − Gᵀ)/2 + symmetric * (G + Gᵀ)/2``, G ~ N(0, 1); components are joined by
    ``cross_edges`` edges of weight N(0, 1)·``cross_scale`` per condensation edge, along a
    chain (0 → 1 → 2 → …) or a V (0 → 1, 0 → 2, …) rooted at component 0. Then
    B ← B − (max Re λ(B) + margin) I; c ~ N(0, 1), d ~ U(0.5, 2).

    Why mostly antisymmetric coupling: the stationary law of a *reversible* OU process
    (B Σ symmetric) does not pin down each node's time scale, so the moment equations are
    nearly degenerate for nearly reversible systems, and finite-sample estimates are poor
    (measured here: with weights N(0, 1)/√n the second-smallest singular value of the
    stacked system is ~3e-4 of the largest and the N = 10⁵ drift error ~0.3-0.9; with
    ``skew=2`` it is ~4e-3 and the error ~0.03). ``skew=0, symmetric=1/√n`` gives the plain
    Gaussian draw.

    ``rng`` is a NumPy ``Generator`` (or an integer seed).

    Returns ``(process, support, components)``: ``support[i, j]`` is True when B_ij may be
    non-zero (the diagonal always), ``components`` lists the node indices of each SCC in
    topological order.
    """
    rng = _as_generator(rng)
    if isinstance(scc_sizes, (str, bytes)) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in scc_sizes):
        raise ValueError(f"scc_sizes={scc_sizes!r} must be positive integers")
    sizes = [int(s) for s in scc_sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"scc_sizes={scc_sizes!r} must be positive integers")
    for name, value in (("skew", skew), ("symmetric", symmetric), ("cross_scale", cross_scale), ("margin", margin)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"{name}={value!r} must be a finite number")
    if margin <= 0:
        raise ValueError(f"margin={margin} must be positive (it is the distance of B's spectrum from 0)")
    if isinstance(cross_edges, bool) or not isinstance(cross_edges, (int, np.integer)) or cross_edges < 0:
        raise ValueError(f"cross_edges={cross_edges!r} must be a non-negative integer")
    n = sum(sizes)
    bounds = np.cumsum([0] + sizes)
    components = [list(range(bounds[k], bounds[k + 1])) for k in range(len(sizes))]
    if condensation == "chain":
        parents = [(k - 1, k) for k in range(1, len(sizes))]
    elif condensation == "v":
        parents = [(0, k) for k in range(1, len(sizes))]
    else:
        raise ValueError(f"condensation={condensation!r} must be 'chain' or 'v'")
    g = rng.standard_normal((n, n))
    block = skew * (g - g.T) / 2 + symmetric * (g + g.T) / 2
    support = np.zeros((n, n), dtype=bool)
    drift = np.zeros((n, n))
    for comp in components:
        idx = np.ix_(comp, comp)
        support[idx] = True
        drift[idx] = block[idx]
    for up, down in parents:
        for _ in range(cross_edges):
            # an edge j -> i means B_ij != 0: node i (downstream) is driven by node j (upstream)
            i = int(rng.choice(components[down]))
            j = int(rng.choice(components[up]))
            support[i, j] = True
            drift[i, j] = cross_scale * g[i, j]
    drift -= (np.max(np.linalg.eigvals(drift).real) + margin) * np.eye(n)
    const = rng.standard_normal(n)
    diffusion = rng.uniform(0.5, 2.0, n)
    return OUProcess(drift, const, diffusion), support, components
