"""The stacked steady-state moment equations, linear in the unknowns.

For regime k with moments (m_k, Σ_k) and intervened parameters (B_k, c_k, d_k):

    r_mean[k, i]   = (B_k m_k)_i + c_{k,i}                                  = 0
    r_cov[k, i, j] = (B_k Σ_k)_ij + (Σ_k B_kᵀ)_ij + δ_ij d_{k,i},  i ≤ j     = 0

Every intervention kind maps (B, c, d) and its unknown strength ξ_k to (B_k, c_k, d_k)
linearly, so the residuals are a homogeneous linear map r = M z of the unknown vector

    z = (B_ij for (i, j) in the support, c, d, ξ_1 … ξ_K).

The null space of M is the set of parameters the data cannot tell apart; a null space of
dimension 1 (spanned by the truth) means identified up to the global scale.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import scipy.sparse

from icml26.papers.ou_steady.process import Intervention, Regime

__all__ = ["MomentSystem", "ParameterLayout", "identifiability_nullity", "moment_system"]


@dataclasses.dataclass(frozen=True)
class ParameterLayout:
    """Where each unknown sits in z.

    Attributes:
        n: number of nodes.
        support: ``(n, n)`` bool, True where B_ij is a free unknown (diagonal always).
        pairs: ``(p, 2)`` the (i, j) of each free drift entry, row-major.
        strength_of: for each regime, the column of its strength, or -1.
    """

    n: int
    support: np.ndarray
    pairs: np.ndarray
    strength_of: tuple[int, ...]

    @property
    def n_drift(self) -> int:
        return len(self.pairs)

    @property
    def const_cols(self) -> np.ndarray:
        return self.n_drift + np.arange(self.n)

    @property
    def diffusion_cols(self) -> np.ndarray:
        return self.n_drift + self.n + np.arange(self.n)

    @property
    def size(self) -> int:
        return self.n_drift + 2 * self.n + sum(s >= 0 for s in self.strength_of)

    def drift_cols_of_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Columns of z holding row i of B, and the matching column indices j of B."""
        idx = np.flatnonzero(self.pairs[:, 0] == i)
        return idx, self.pairs[idx, 1]

    def unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float | None]]:
        """(B, c, d, strengths) from a vector z."""
        drift = np.zeros((self.n, self.n))
        drift[self.pairs[:, 0], self.pairs[:, 1]] = z[: self.n_drift]
        strengths = [None if s < 0 else float(z[s]) for s in self.strength_of]
        return drift, z[self.const_cols].copy(), z[self.diffusion_cols].copy(), strengths

    def pack(self, drift: np.ndarray, const: np.ndarray, diffusion: np.ndarray,
             strengths: Sequence[float | None]) -> np.ndarray:
        """The vector z of given parameters (drift entries outside the support are dropped)."""
        z = np.zeros(self.size)
        z[: self.n_drift] = drift[self.pairs[:, 0], self.pairs[:, 1]]
        z[self.const_cols] = const
        z[self.diffusion_cols] = diffusion
        for col, value in zip(self.strength_of, strengths):
            if col >= 0:
                z[col] = 0.0 if value is None else value
        return z


@dataclasses.dataclass(frozen=True)
class MomentSystem:
    """M (sparse, one row per equation) with what each row is.

    ``regime[r]``, ``row_i[r]``, ``row_j[r]`` (``row_j = -1`` for a mean equation) say which
    equation row r is; ``weight[r]`` is its weight in a weighted least-squares fit
    (1/number of equations of its regime, ×2 for an off-diagonal covariance entry, which
    stands for two entries of the symmetric residual matrix).
    """

    matrix: scipy.sparse.csr_matrix
    layout: ParameterLayout
    regime: np.ndarray
    row_i: np.ndarray
    row_j: np.ndarray
    weight: np.ndarray


#: A knockout regime must show its target clamped: |m_t| and Σ_tt at most this share of the scale.
KNOCKOUT_TOL = 1e-8


def _check_inputs(regimes: Sequence[Regime], interventions: Sequence[Intervention | None]) -> int:
    """The node count, after checking the regimes and interventions (one per regime).

    Both lists must have one entry per regime, ``None`` for an observational regime (the
    observational regime may sit anywhere). A list of the interventional regimes' interventions
    only (one entry short) is refused with a message saying how to mark the observational one.
    A knockout's regime must show its target clamped at 0 (mean and variance ≈ 0): a partial
    knock-down is a ``soft_drift``.
    """
    if isinstance(regimes, Regime) or isinstance(interventions, Intervention):
        raise TypeError("regimes and interventions must be sequences (one intervention per regime)")
    regimes, interventions = list(regimes), list(interventions)
    if len(regimes) == 0:
        raise ValueError("no regimes given; pass at least the observational one")
    for k, regime in enumerate(regimes):
        if not isinstance(regime, Regime):
            raise TypeError(f"regimes[{k}] is a {type(regime).__name__}, expected a Regime "
                            "(Regime.from_samples(x) or Regime(mean, cov))")
    for k, intervention in enumerate(interventions):
        if intervention is not None and not isinstance(intervention, Intervention):
            raise TypeError(f"interventions[{k}] is a {type(intervention).__name__}, expected an "
                            "Intervention or None (observational)")
    if len(regimes) != len(interventions):
        hint = ""
        if len(interventions) == len(regimes) - 1 and all(iv is not None for iv in interventions):
            hint = ("; it looks like the observational regime has no entry: mark it with None in its place, "
                    "e.g. [None] + interventions when regimes[0] is observational")
        raise ValueError(
            f"{len(regimes)} regimes but {len(interventions)} interventions; give one intervention per "
            f"regime, None for an observational regime{hint}"
        )
    n = regimes[0].n
    for k, regime in enumerate(regimes):
        if regime.n != n:
            raise ValueError(f"regimes[{k}] has {regime.n} nodes, regimes[0] has {n}")
    for k, (regime, intervention) in enumerate(zip(regimes, interventions)):
        if intervention is None:
            continue
        intervention.check_target(n)
        if intervention.kind == "knockout":
            t = intervention.target
            scale_var = float(np.max(np.diag(regime.cov)))
            scale_mean = float(np.max(np.abs(regime.mean))) + np.sqrt(scale_var)
            if regime.cov[t, t] > KNOCKOUT_TOL * scale_var or abs(regime.mean[t]) > KNOCKOUT_TOL * scale_mean:
                raise ValueError(
                    f"regimes[{k}] is paired with a knockout of node {t}, but node {t} is not clamped at 0 there "
                    f"(mean {regime.mean[t]:.3g}, variance {regime.cov[t, t]:.3g}); check the pairing of "
                    "regimes and interventions, or model a partial knock-down as kind='soft_drift'"
                )
    return n


def _layout(n: int, support: np.ndarray | None, interventions: Sequence[Intervention | None]) -> ParameterLayout:
    if support is None:
        support = np.ones((n, n), dtype=bool)
    support = np.asarray(support)
    if support.dtype != bool and not np.isin(support, (0, 1)).all():
        raise ValueError("support must be a boolean (n, n) mask (True where B_ij may be non-zero)")
    support = support.astype(bool)
    if support.shape != (n, n):
        raise ValueError(f"support must be ({n}, {n}), got {support.shape}")
    support = support | np.eye(n, dtype=bool)
    pairs = np.argwhere(support)  # row-major
    col = len(pairs) + 2 * n
    strength_of = []
    for intervention in interventions:
        if intervention is not None and intervention.has_strength:
            strength_of.append(col)
            col += 1
        else:
            strength_of.append(-1)
    return ParameterLayout(n=n, support=support, pairs=pairs, strength_of=tuple(strength_of))


def moment_system(
    regimes: Sequence[Regime],
    interventions: Sequence[Intervention | None],
    support: np.ndarray | None = None,
) -> MomentSystem:
    """Build the stacked linear system M z = 0 of every regime's moment equations.

    ``interventions`` has one entry per regime, ``None`` for an observational one;
    ``support`` is an optional ``(n, n)`` boolean mask of the free drift entries.
    """
    n = _check_inputs(regimes, interventions)
    layout = _layout(n, support, interventions)
    row_cols = [layout.drift_cols_of_row(i) for i in range(n)]
    rows, cols, vals = [], [], []
    info_regime, info_i, info_j, weights = [], [], [], []
    r = 0
    for k, (regime, intervention) in enumerate(zip(regimes, interventions)):
        m, sigma = regime.mean, regime.cov
        active = np.ones(n, dtype=bool)
        t = -1 if intervention is None else intervention.target
        kind = None if intervention is None else intervention.kind
        if kind == "knockout":
            active[t] = False  # the rest follows the sub-OU (B_RR, c_R, d_R)
        xi = layout.strength_of[k]
        nodes = np.flatnonzero(active)
        n_eq = len(nodes) + len(nodes) * (len(nodes) + 1) // 2
        first = r
        # mean rows: Σ_l B_il m_l + c_i (− κ m_i if soft drift on i) (+ δ if shift on i)
        for i in nodes:
            zc, l = row_cols[i]
            rows += [r] * (len(zc) + 1)
            cols += list(zc) + [layout.const_cols[i]]
            vals += list(m[l]) + [1.0]
            if kind == "soft_drift" and i == t:
                rows.append(r), cols.append(xi), vals.append(-m[i])
            if kind == "shift" and i == t:
                rows.append(r), cols.append(xi), vals.append(1.0)
            info_i.append(i), info_j.append(-1), weights.append(1.0)
            r += 1
        # covariance rows (i <= j): Σ_l B_il Σ_lj + Σ_l Σ_il B_jl + δ_ij d_i
        #   (− κ (δ_it Σ_tj + Σ_it δ_jt) if soft drift on t) (+ γ δ_it δ_jt if noise on t)
        for a, i in enumerate(nodes):
            zi, li = row_cols[i]
            for j in nodes[a:]:
                zj, lj = row_cols[j]
                rows += [r] * (len(zi) + len(zj))
                cols += list(zi) + list(zj)
                vals += list(sigma[li, j]) + list(sigma[i, lj])
                if i == j:
                    rows.append(r), cols.append(layout.diffusion_cols[i]), vals.append(1.0)
                if kind == "soft_drift" and t in (i, j):
                    coef = (sigma[t, j] if i == t else 0.0) + (sigma[i, t] if j == t else 0.0)
                    rows.append(r), cols.append(xi), vals.append(-coef)
                if kind == "noise" and i == j == t:
                    rows.append(r), cols.append(xi), vals.append(1.0)
                info_i.append(i), info_j.append(j), weights.append(1.0 if i == j else 2.0)
                r += 1
        info_regime += [k] * (r - first)
        for q in range(first, r):
            weights[q] /= n_eq
    matrix = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(r, layout.size))
    matrix.sum_duplicates()
    return MomentSystem(matrix=matrix, layout=layout, regime=np.asarray(info_regime),
                        row_i=np.asarray(info_i), row_j=np.asarray(info_j), weight=np.asarray(weights))


def identifiability_nullity(
    regimes: Sequence[Regime],
    interventions: Sequence[Intervention | None],
    support: np.ndarray | None = None,
    *,
    rtol: float = 1e-9,
) -> int:
    """Dimension of the null space of the stacked moment equations at the given moments.

    1 means the parameters (B on ``support``, c, d and the intervention strengths) are
    identified up to the global scale; more means the data cannot tell some directions
    apart. Meant for exact moments (``Regime.n_samples is None``): sample moments make M
    full-rank by noise, and the count then depends on ``rtol``, the relative singular-value
    threshold.
    """
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 < rtol < 1:
        raise ValueError(f"rtol={rtol!r} must be a number in (0, 1)")
    system = moment_system(regimes, interventions, support)
    dense = system.matrix.toarray()
    # columns scaled to unit norm so that the rank test does not depend on units
    norms = np.linalg.norm(dense, axis=0)
    norms[norms == 0] = 1.0
    s = np.linalg.svd(dense / norms, compute_uv=False)
    n_unknowns = dense.shape[1]
    rank = int(np.sum(s > rtol * s[0])) if s.size else 0
    return n_unknowns - rank
