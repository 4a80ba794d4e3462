"""Configuration of the robust_ntp reproduction: the Markov source, the horizons and their thresholds,
the exact section and the distilled student's budget curve, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """Sticky-RPS robustification (the brief's CPU plan, §4)."""

    stay: float = dataclasses.field(default=0.8, metadata={"min": 0.0, "max": 1.0})
    """Probability that the opponent model repeats its last token."""
    horizons: tuple[int, ...] = dataclasses.field(default=(256, 1024, 4096), metadata={"min": 8})
    """Horizons T for the exact-conditional section."""
    threshold_coef: float = 1.0
    """τ = threshold_coef · √T (our choice; the brief suggests T^{3/4} or εT, see README)."""
    n_model_samples: int = dataclasses.field(default=1000, metadata={"min": 1})
    """Sequences of D used for the trigger rate at each T."""
    n_tv_samples: int = dataclasses.field(default=200, metadata={"min": 2})
    """Sequences of D used for the Monte Carlo TV at each T."""
    window: int = 64
    """Context of the bounded-context variant of D′."""
    distill_horizon: int = dataclasses.field(default=128, metadata={"min": 2})
    """T of the transformer section."""
    distill_sequences: int = dataclasses.field(default=12_000, metadata={"min": 3})
    """Training histories for each student."""
    distill_steps: int = dataclasses.field(default=3000, metadata={"min": 1})
    """Optimiser steps for each student."""
    distill_d_model: int = dataclasses.field(default=64, metadata={"min": 1})
    """Student width (2 layers, 4 heads)."""
    distill_eval_samples: int = dataclasses.field(default=200, metadata={"min": 1})
    """D samples for the students' per-position TV."""
    curve_sequences: tuple[int, ...] = dataclasses.field(default=(), metadata={"min": 3})
    """Budget curve: training histories of each extra robust student (empty: no curve)."""
    curve_steps: tuple[int, ...] = dataclasses.field(default=(), metadata={"min": 1})
    """Budget curve: optimiser steps of each extra robust student (same length as ``curve_sequences``)."""
    curve_seeds: int = dataclasses.field(default=2, metadata={"min": 1})
    """Budget curve: replicates per budget (new histories and initialisation each)."""
    search_population: int = dataclasses.field(default=64, metadata={"min": 2})
    """Searching adversary: candidate sequences per generation (an eighth of them kept as elites)."""
    search_generations: int = dataclasses.field(default=100, metadata={"min": 0})
    """Searching adversary: generations (each one batched regret evaluation per model)."""
    natural_windows: int = dataclasses.field(default=16, metadata={"min": 0})
    """Pretrained LM (SmolLM2-135M): natural-text windows of ``natural_horizon`` tokens (0: no LM section)."""
    natural_samples: int = dataclasses.field(default=16, metadata={"min": 1})
    """Pretrained LM: its own samples for the trigger rate and the Monte Carlo TV."""
    natural_horizon: int = dataclasses.field(default=128, metadata={"min": 2})
    """Pretrained LM: T (β = τ = √T, as everywhere else)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.horizons:
            raise ValueError(f"horizons={self.horizons} must be at least 8 each")
        if self.threshold_coef <= 0:
            raise ValueError(f"threshold_coef={self.threshold_coef} must be positive")
        if self.distill_d_model % 4:
            raise ValueError(f"distill_d_model={self.distill_d_model} must be divisible by the 4 attention heads")
        if len(self.curve_sequences) != len(self.curve_steps):
            raise ValueError(f"curve_sequences={self.curve_sequences} and curve_steps={self.curve_steps} must have "
                             "the same length (one (histories, steps) budget each)")

    @classmethod
    def quick(cls) -> "Config":
        """The students at 6,000 histories and 1,500 steps; everything else as the full setting.

        Half the full setting's distillation budget (12,000 x 3,000), which took 15-17 minutes a
        seed; on the committed budget curve 6,000 x 1,500 gave robust/raw ratios 0.30 and 0.33
        (bar 0.5) and 12,000 x 3,000 gave 0.33-0.35, so the quick seed keeps the claim's test at
        about half the cost. The earlier 3,000 x 1,200 budget (older mixture) gave 0.66."""
        return cls(distill_sequences=6000, distill_steps=1500)

    @classmethod
    def tiny(cls) -> "Config":
        return cls(horizons=(32, 64), n_model_samples=20, n_tv_samples=5, window=16, distill_horizon=24,
                   distill_sequences=30, distill_steps=5, distill_d_model=16, distill_eval_samples=3,
                   search_population=8, search_generations=3, natural_windows=0)
