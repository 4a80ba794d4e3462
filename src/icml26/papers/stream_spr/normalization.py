"""Running statistics behind the streaming normalizers (Elsayed et al. 2024, arXiv 2410.14606).

* :class:`WelfordStats`: per-feature running mean and variance by Welford's method,
  n ← n+1;  μ ← μ + (x−μ)/n;  p ← p + (x−μ_old)(x−μ_new);  σ² = p/(n−1), or 1 while n < 2.
* :class:`RewardScaler`: r̃ = r/√(Var(u)+ε) with the discounted-return trace
  u ← γ(1−done)·u + r, the statistics of u updated *before* each reward is scaled;
  no mean is subtracted.

Both are plain NumPy so they can be tested against ``np.mean`` / ``np.var(ddof=1)``; the
gymnasium wrappers :class:`~icml26.papers.stream_spr.wrappers.RunningNorm` and
:class:`~icml26.papers.stream_spr.wrappers.ScaleReward` hold one each.
"""

from __future__ import annotations

from typing import Sequence

import math

import numpy as np

from icml26.common.argcheck import check_int, check_real

__all__ = ["RewardScaler", "WelfordStats"]


class WelfordStats:
    """Running mean and unbiased variance of a stream of arrays of one shape."""

    def __init__(self, shape: Sequence[int] = ()) -> None:
        self.shape = tuple(check_int(s, "shape", low=0) for s in shape)
        self.count = 0
        self.mean = np.zeros(self.shape, dtype=np.float64)
        self._p = np.zeros(self.shape, dtype=np.float64)

    @property
    def var(self) -> np.ndarray:
        """σ² = p/(n−1), or ones while fewer than two samples were seen."""
        if self.count < 2:
            return np.ones(self.shape, dtype=np.float64)
        return self._p / (self.count - 1)

    def update(self, x: np.ndarray) -> None:
        """Add one sample ``x`` of shape ``shape``; NaN or inf is a ``ValueError`` (it would poison
        the mean and variance for good)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != self.shape:
            raise ValueError(f"sample of shape {x.shape} does not match the statistics' shape {self.shape}")
        if not np.isfinite(x).all():
            raise ValueError("sample x contains NaN or inf; the running statistics would stay NaN")
        self.count += 1
        old = self.mean
        # μ ← μ + (x − μ)/n
        self.mean = old + (x - old) / self.count
        # p ← p + (x − μ_old)(x − μ_new)
        self._p = self._p + (x - old) * (x - self.mean)

    def normalize(self, x: np.ndarray, epsilon: float = 1e-8) -> np.ndarray:
        """(x − μ)/√(σ² + ε) with the current statistics (no update); NaN in ``x`` propagates."""
        check_real(epsilon, "epsilon", low=0.0)
        return (np.asarray(x, dtype=np.float64) - self.mean) / np.sqrt(self.var + epsilon)

    def state_dict(self) -> dict:
        return {"count": self.count, "mean": self.mean.copy(), "p": self._p.copy()}


class RewardScaler:
    """Scale rewards by the running standard deviation of the discounted return."""

    def __init__(self, gamma: float = 0.99, epsilon: float = 1e-8) -> None:
        check_real(gamma, "gamma", low=0.0, high=1.0)
        self.gamma = gamma
        self.epsilon = check_real(epsilon, "epsilon", low=0.0)
        self.trace = 0.0
        self.stats = WelfordStats(())

    def scale(self, reward: float, done: bool) -> float:
        """Update the trace and its statistics with ``reward``; return r/√(Var(u)+ε).

        A non-finite reward is a ``ValueError`` (it would poison the statistics for good).
        """
        if not math.isfinite(float(reward)):
            raise ValueError(f"reward={reward} is not finite; check the environment")
        # u ← γ(1 − done)·u + r   (done = terminated or truncated, as in both codes)
        self.trace = self.trace * self.gamma * (1.0 - float(done)) + float(reward)
        self.stats.update(np.asarray(self.trace))
        return float(reward) / float(np.sqrt(self.stats.var + self.epsilon))
