"""Configuration of the asym_perturb reproduction: the matrix-game families, the tuning, the
extensive-form games and the curves, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers
from icml26.papers.asym_perturb.sections import MATRIX_ARMS

__all__ = ["EFG_ARMS", "Config"]

EFG_ARMS = {"kuhn_poker": tuple(MATRIX_ARMS) + ("cfr_plus",),
            "leduc_poker": ("asymmetric_reference", "symmetric_reference", "cfr_plus")}
"""The arms run on each extensive-form game. Leduc, for time: the method, the symmetric-reference
baseline and CFR+, the comparison that tells a method from a solver (the fixed-σ pair, two instances
and 6 ms an iteration, stalled at NashConv 2.2e-2 under the rule in every earlier run)."""


@dataclasses.dataclass
class Config:
    """Settings of the asym_perturb reproduction (defaults: the full scale)."""

    seeds: int = dataclasses.field(default=50, metadata={"min": 1})
    """Random games per matrix family (the authors' APGA experiments use 50 trials)."""
    random_size: int = dataclasses.field(default=50, metadata={"min": 1})
    """Actions per player of the U(−1, 1) random games (50 in the authors' APGA code)."""
    degenerate_base: int = dataclasses.field(default=25, metadata={"min": 1})
    """Size of the random core of a degenerate game (brief: 30×30 degenerate games)."""
    degenerate_duplicates: int = 5
    """Rows and columns of the core copied once more (non-unique equilibria)."""
    iterations: int = dataclasses.field(default=100_000, metadata={"min": 1})
    """Iterations per matrix game."""
    tuning_games: int = dataclasses.field(default=10, metadata={"min": 1})
    """Held-out games per family on which every arm's parameters are chosen (stream ``tuning_games``)."""
    tuning_iterations: int = dataclasses.field(default=50_000, metadata={"min": 1})
    """Iterations of each tuning run."""
    eta_grid: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4)
    """Step sizes of the shared tuning grid (0.05 is the authors' APGA learning rate)."""
    mu_grid: tuple[float, ...] = (0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0)
    """μ of the shared grid for the reference methods: a log grid over [0.01, 10], half a decade
    apart (1.0 is the authors' APGA value), so that no method's best μ sits at an edge."""
    threshold_fraction: float = dataclasses.field(default=0.5, metadata={"min": 0.0, "max": 1.0})
    """μ of the fixed-σ arms on a game = this × min(μ̄_x, μ̄_y) ("half the smaller threshold")."""
    mu_cap: float = 1.0
    """Upper limit of the fixed-σ μ (a threshold may be infinite)."""
    eta: float = 0.05
    """Step size of plain GDA, the one untuned arm (it cycles at any η)."""
    efg_games: tuple[str, ...] = ("kuhn_poker", "leduc_poker")
    """OpenSpiel games solved in sequence form (Kuhn and Leduc, the authors' usual EFGs)."""
    efg_tuning_games: int = dataclasses.field(default=8, metadata={"min": 1})
    """Held-out Kuhn variants (Kuhn's tree, every leaf's payoff resized by U(0.5, 1.5); stream
    ``efg_tuning_games``) on which the reference methods' extensive-form settings are chosen."""
    efg_tuning_iterations: int = dataclasses.field(default=10_000, metadata={"min": 1})
    """Iterations of each extensive-form tuning run."""
    efg_eta_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0)
    """Extensive-form step sizes as multiples of 1/‖A‖₂ (:func:`~.solve.efg_defaults` uses 1.5). On
    the Kuhn variants every reference method is fastest at 4 and diverges at 6 for every μ, so the
    choice is inside the grid."""
    efg_mu_grid: tuple[float, ...] = (0.001, 0.00316, 0.01, 0.0316, 0.1, 0.316, 1.0)
    """Extensive-form μ as multiples of ‖A‖₂, a log grid (0.01: :func:`~.solve.efg_defaults`); scaled
    by the payoff norm, a setting chosen on small games carries over to Leduc's."""
    openspiel_leduc_iterations: int = dataclasses.field(default=100_000, metadata={"min": 0})
    """Iterations of OpenSpiel's C++ ``CFRPlusSolver`` on Leduc (at most ``leduc_iterations``; ≈ 8 ms
    each), the outside reference drawn beside our CFR+; on Kuhn it runs the whole horizon."""
    efg_iterations: int = dataclasses.field(default=100_000, metadata={"min": 1})
    """Iterations on Kuhn poker."""
    leduc_iterations: int = dataclasses.field(default=100_000, metadata={"min": 1})
    """Iterations on Leduc poker (2–3 ms each on one core)."""
    curve_points: int = dataclasses.field(default=201, metadata={"min": 2})
    """Points per NashConv curve written to the result."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not 0 <= self.degenerate_duplicates <= self.degenerate_base:
            raise ValueError(f"degenerate_duplicates={self.degenerate_duplicates} must be in "
                             f"0..degenerate_base={self.degenerate_base}")
        for name in ("eta", "mu_cap"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} must be > 0")
        if not 0 < self.threshold_fraction <= 1:
            raise ValueError(f"threshold_fraction={self.threshold_fraction} must be in (0, 1]")
        for name in ("eta_grid", "mu_grid", "efg_eta_grid", "efg_mu_grid"):
            grid = getattr(self, name)
            if not grid or any(not v > 0 for v in grid):
                raise ValueError(f"{name}={grid!r} must be a non-empty tuple of positive numbers")
        unknown = [g for g in self.efg_games if g not in EFG_ARMS]
        if unknown:
            raise ValueError(f"efg_games {unknown} are not supported here; use kuhn_poker and/or "
                             "leduc_poker (the library's solve_efg takes any zero-sum game)")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: 100 games per family at 2·10⁴ iterations (tuning on 8 held-out
        games at 10⁴), Kuhn with 10⁴ iterations and Leduc with 3,000 (≈ 3–5 ms per iteration and
        arm on one core), the extensive-form settings tuned on 8 Kuhn variants at 3,000."""
        return cls(seeds=100, random_size=10, degenerate_base=5, degenerate_duplicates=2,
                   iterations=20_000, tuning_games=8, tuning_iterations=10_000, efg_iterations=10_000,
                   leduc_iterations=3_000, efg_tuning_iterations=3_000, openspiel_leduc_iterations=1_000)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(seeds=3, random_size=4, degenerate_base=3, degenerate_duplicates=1,
                   iterations=300, tuning_games=2, tuning_iterations=100, eta_grid=(0.1, 0.4), mu_grid=(1.0,),
                   efg_games=("kuhn_poker",), efg_iterations=60, efg_tuning_games=2, efg_tuning_iterations=40,
                   efg_eta_grid=(1.5,), efg_mu_grid=(0.01, 0.1), curve_points=21)
