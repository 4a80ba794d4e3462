"""Configuration of the HAMU reproduction: the data, the hardness grid, the arms and their
learning-rate grids, the matched-accuracy window, with the range each field accepts."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from icml26.common.config import validate_numbers

from .problem import DATASETS

__all__ = ["BASELINE_ARMS", "HAMU_ARMS", "Config"]

HAMU_ARMS = ("hamu_q_layerwise", "hamu_q_global")
BASELINE_ARMS = ("graddiff", "finetune", "gradient_ascent", "neggrad_plus", "scrub", "pcgrad", "gru")


@dataclasses.dataclass
class Config:
    """HAMU-Q vs baselines (full scale: the brief's CPU plan, §4, on Animal-MNIST; the paper's ρ grid)."""

    dataset: Literal["animal_mnist", "digits"] = "animal_mnist"
    """Data set (:data:`~icml26.papers.hamu.problem.DATASETS`): Animal-MNIST (original and
    reference differ by ≥ 10 points of forget accuracy, so a matched window exists) or digits (~1 point)."""
    n_train: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Training samples per replicate (stratified; original and references train on them)."""
    n_val: int = dataclasses.field(default=1000, metadata={"min": 1})
    """Validation samples (checkpoint and learning-rate selection)."""
    n_test: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Test samples (reported retain accuracy; MIA non-members)."""
    hardness: tuple[float, ...] = dataclasses.field(default=(0.0, 0.25, 0.5, 0.75, 1.0),
                                                    metadata={"min": 0.0, "max": 1.0})
    """Hardness ρ of the forget sets (paper: {0, 0.25, 0.5, 0.75, 1}); must include 0.5."""
    forget_class: int = dataclasses.field(default=0, metadata={"min": 0, "max": 9})
    """Class c whose size (and, at ρ < 1, samples) make the forget set (paper: class 0)."""
    replicates: int = dataclasses.field(default=1, metadata={"min": 1})
    """Independent replicates inside one run (data split, models, forget sets); 1 = one replicate per
    master seed (``--seeds`` runs more and aggregates them)."""
    steps: int = dataclasses.field(default=300, metadata={"min": 1})
    """Full-batch paired unlearning steps per run (brief §4.2: 300)."""
    hamu_lrs: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0)
    """Learning-rate grid of the HAMU arms (HAMU's step norm is lr·‖g_r‖). On Animal-MNIST the
    forget accuracy crosses the matched window within 120 steps from lr ≈ 0.1 (on digits, where
    ‖g_r‖ ≈ 1e-3 on the converged MLP, from lr ≈ 1)."""
    baseline_lrs: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
    """Learning-rate grid of the baselines (directions clipped to norm 1; GradDiff crosses the window
    from lr ≈ 0.01, NegGrad+ from 0.1 to 1 depending on ρ)."""
    arms: tuple[str, ...] = HAMU_ARMS + BASELINE_ARMS
    """Arms to run; ``hamu_q_layerwise``, ``graddiff`` and ``neggrad_plus`` are required."""
    baselines_at: tuple[float, ...] = ()
    """Hardness levels at which the arms other than HAMU-Q layer-wise, and the float64 guarantee
    probe, run (() = every ρ). HAMU-Q layer-wise runs at every ρ (the cos and stop-flag checks read
    all of them); the comparisons are read at ρ = 0.5, which must be included."""
    bound_ratio: float = dataclasses.field(default=0.5, metadata={"min": 0.0, "max": 1.0})
    """Relative bound c: B = c·lr·Σ_l‖g_r,l‖‖g_f,l‖ (the authors' constraint ratio 0.5)."""
    neggrad_beta: float = dataclasses.field(default=0.9, metadata={"min": 0.0, "max": 1.0})
    """Retain weight β of NegGrad+ (ours; Kurmanji et al. tune it)."""
    max_grad_norm: float = 1.0
    """Gradient clipping (authors: HF Trainer's max_grad_norm = 1)."""
    hidden: tuple[int, ...] = (128, 64)
    """Hidden widths of the MLP features-128-64-10 (brief §4.1)."""
    train_epochs: int = dataclasses.field(default=40, metadata={"min": 1})
    """Adam epochs for the original and the reference models (100 % train accuracy here)."""
    train_batch: int = dataclasses.field(default=128, metadata={"min": 1})
    """Mini-batch of that training."""
    train_lr: float = 1e-3
    """Adam learning rate of that training."""
    eval_every: int = dataclasses.field(default=1, metadata={"min": 1})
    """Steps between evaluations (checkpoints of the Pareto fronts and of the matched point)."""
    match_window: float = 0.05
    """Matched forget accuracy: within this of the reference's, and at least this below the
    original's (5 points)."""
    stop_cost_points: float = 1.0
    """The stop rule "costs nothing" when the stopped model's retain-test accuracy is within this
    many points of the best in-window checkpoint's (1 point)."""
    guarantee_lr: float = 0.1
    """Learning rate of the float64 guarantee probe (HAMU-Q layer-wise at the smallest rate of the quick
    grid that unlearns: the guarantee is first order, so it is read at small lr)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset={self.dataset!r} must be one of {DATASETS}")
        if not self.hardness:
            raise ValueError(f"hardness={self.hardness} must be a non-empty tuple of values in [0, 1]")
        if list(self.hardness) != sorted(set(self.hardness)):
            raise ValueError(f"hardness={self.hardness} must be strictly increasing")
        for name in ("hamu_lrs", "baseline_lrs"):
            lrs = getattr(self, name)
            if not lrs or any(not (lr > 0 and math.isfinite(lr)) for lr in lrs):
                raise ValueError(f"{name}={lrs} must be a non-empty tuple of positive rates")
        unknown = set(self.arms) - set(HAMU_ARMS + BASELINE_ARMS)
        if unknown:
            raise ValueError(f"arms {sorted(unknown)} unknown; pick from {HAMU_ARMS + BASELINE_ARMS}")
        if self.baselines_at and (not set(self.baselines_at) <= set(self.hardness)
                                  or (0.5 in self.hardness and 0.5 not in self.baselines_at)):
            raise ValueError(f"baselines_at={self.baselines_at} must be a subset of hardness={self.hardness} "
                             "holding 0.5 (where the comparisons are read), or () for every hardness")
        missing = {"hamu_q_layerwise", "graddiff", "neggrad_plus"} - set(self.arms)
        if missing:
            raise ValueError(f"arms must include {sorted(missing)} (the method, and the baselines of the headline)")
        if not 0.0 < self.match_window < 1.0:
            raise ValueError(f"match_window={self.match_window} must be in (0, 1)")
        for name in ("max_grad_norm", "train_lr", "guarantee_lr", "stop_cost_points"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name}={getattr(self, name)} must be > 0")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction (ρ ∈ {0, 0.5, 1}, a small lr grid): 5 replicates
        (independent data splits, models and forget sets) inside one master seed, the baselines at
        ρ = 0.5 only (where the comparisons are read; the guarantee probe too), 100 steps with a
        checkpoint every 4th (5 replicates in ~4.5 minutes on one core: every check is measured per
        replicate, so the evidence is the replicates pooled over master seeds, 20 at seeds 0-3); the
        full setting keeps every arm at every ρ. Dropped here: finetune (never reaches the matched
        window), gradient ascent (NegGrad+ with β = 0) and HAMU-Q global (an ablation)."""
        return cls(hardness=(0.0, 0.5, 1.0), steps=100, hamu_lrs=(0.1, 0.3, 1.0, 3.0),
                   baseline_lrs=(0.01, 0.03, 0.1, 0.3, 1.0), replicates=5, baselines_at=(0.5,), eval_every=4,
                   arms=("hamu_q_layerwise", "graddiff", "neggrad_plus", "scrub", "pcgrad", "gru"))

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(hardness=(0.0, 0.5), steps=4, hamu_lrs=(1.0,), baseline_lrs=(0.3,), train_epochs=3,
                   n_train=400, n_val=200, n_test=400)
