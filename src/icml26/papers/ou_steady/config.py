"""Configuration of the ou_steady reproduction: the random OU systems, the sample-size sweep, the
interventional designs, the arms' settings and the nullity study, with the range each field accepts."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """Synthetic recovery experiment (the brief's CPU plan, §4.1)."""

    n_systems: int = dataclasses.field(default=100, metadata={"min": 1})
    """Random systems per master seed (medians are over them)."""
    scc_sizes: tuple[int, ...] = dataclasses.field(default=(3, 3, 2), metadata={"min": 1})
    """Sizes of the strongly connected components (n = their sum)."""
    condensation: Literal["chain", "v"] = "chain"
    """Shape of the component DAG (single root in both cases)."""
    skew: float = dataclasses.field(default=2.0, metadata={"min": 0.0})
    """Antisymmetric within-component coupling, a magnitude (see ``random_scc_system``: near-reversible systems are nearly unidentifiable)."""
    symmetric: float = dataclasses.field(default=0.3, metadata={"min": 0.0})
    """Symmetric within-component coupling, a magnitude (G ~ N(0, 1) makes its sign irrelevant)."""
    strength_low: float = 0.5
    """Lower end of the soft-intervention strengths κ ~ U(low, high)."""
    strength_high: float = 2.0
    """Upper end of κ."""
    sample_sizes: tuple[int, ...] = dataclasses.field(
        default=(100, 1_000, 2_000, 5_000, 10_000, 100_000, 1_000_000), metadata={"min": 20})
    """Samples per regime (exact moments are always fitted too); 10²–10³ is the range of a
    perturbation screen's cells per regime, and 2·10³ and 5·10³ locate where the interventional
    estimators overtake the observational baselines."""
    slope_sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    """The sizes the log-log slope is fitted over: one per decade from 10³ (below, errors saturate
    near 1), so that every decade weighs the same whatever extra sizes ``sample_sizes`` holds."""
    screen_sizes: tuple[int, int] = (100, 1_000)
    """The realistic cells-per-regime range of perturbation screens, marked on the error curve."""
    l1: float = dataclasses.field(default=0.0, metadata={"min": 0.0})
    """ℓ1 weight for the least-squares estimators and the support-aware baseline (same for all)."""
    baseline_l1_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
    """λ grid of the support-free baseline (the λ with the smallest error *against the truth* is
    used, per system and data setting: an oracle choice, in the baseline's favour)."""
    calibration_fraction: float = 0.1
    """Share of the held-out regime's samples used to fit its unknown strength."""
    bar_samples: int = 100_000
    """The N at which the issue's bars are checked (must be one of ``sample_sizes``)."""
    nullity_systems: int = dataclasses.field(default=20, metadata={"min": 1})
    """Systems (the first ones) on which the oracle's nullity is computed for every design."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if len(self.scc_sizes) < 2:
            raise ValueError(f"scc_sizes={self.scc_sizes} needs at least two components (root and downstream) "
                             "of at least one node each")
        if not self.sample_sizes or list(self.sample_sizes) != sorted(set(self.sample_sizes)):
            raise ValueError(f"sample_sizes={self.sample_sizes} must be increasing, each at least 20")
        if len(set(self.slope_sizes)) < 2 or not set(self.slope_sizes) <= set(self.sample_sizes):
            raise ValueError(f"slope_sizes={self.slope_sizes} must be at least two distinct sizes of "
                             f"sample_sizes={self.sample_sizes} (for the slope)")
        if not 0 < self.strength_low < self.strength_high:
            raise ValueError(f"strength_low={self.strength_low}, strength_high={self.strength_high}: "
                             "need 0 < strength_low < strength_high")
        if self.bar_samples not in self.sample_sizes:
            raise ValueError(f"bar_samples={self.bar_samples} must be one of sample_sizes={self.sample_sizes}")
        if not 0 < self.calibration_fraction < 1:
            raise ValueError(f"calibration_fraction={self.calibration_fraction} must be in (0, 1)")
        if not self.baseline_l1_grid or min(self.baseline_l1_grid) <= 0:
            raise ValueError(f"baseline_l1_grid={self.baseline_l1_grid} must be non-empty and positive "
                             "(without the support the baseline needs an l1 penalty)")
        if len(self.screen_sizes) != 2 or not 0 < self.screen_sizes[0] < self.screen_sizes[1]:
            raise ValueError(f"screen_sizes={self.screen_sizes} must be (low, high) with 0 < low < high")

    @classmethod
    def quick(cls) -> "Config":
        return cls(n_systems=30)

    @classmethod
    def tiny(cls) -> "Config":
        return cls(n_systems=2, sample_sizes=(1_000, 10_000), slope_sizes=(1_000, 10_000), bar_samples=10_000,
                   nullity_systems=2,
                   baseline_l1_grid=(1e-3,))
