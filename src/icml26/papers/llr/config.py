"""Configuration of the LLR reproduction: the tiny language model, the arms and their learning-rate
grid, the schedule and the layer-wise rates, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers

__all__ = ["ARM_KINDS", "QUICK_ARMS", "Config"]

ARM_KINDS = ("LLR", "uniform", "uniform-matched", "kind-static", "shuffled", "embed-head", "kind-static-step0",
             "LLR-mean")
QUICK_ARMS = ("LLR", "uniform", "uniform-matched", "kind-static", "shuffled", "embed-head", "kind-static-step0")


@dataclasses.dataclass
class Config:
    """Uniform AdamW vs LLR on a tiny LLaMA (full scale: the brief's CPU plan, §4.3)."""

    base_lrs: tuple[float, ...] = (7.5e-4, 1.5e-3, 3e-3, 6e-3, 1.2e-2)
    """Base learning-rate grid for every arm: the brief's {7.5e-4, 1.5e-3, 3e-3} (§4.4) extended upwards
    so that it brackets uniform AdamW's best rate (our pilot: 3e-3 to 6e-3)."""
    steps: int = dataclasses.field(default=800, metadata={"min": 1})
    """Training steps per run (brief §4.4: at least 800)."""
    batch_size: int = dataclasses.field(default=32, metadata={"min": 1})
    """Sequences per step (brief §4.3: 32)."""
    context: int = dataclasses.field(default=128, metadata={"min": 1})
    """Tokens per sequence."""
    d_model: int = dataclasses.field(default=128, metadata={"min": 1})
    """Width of the tiny LLaMA (brief §4.2: 128)."""
    n_layers: int = dataclasses.field(default=4, metadata={"min": 1})
    """Transformer blocks (brief §4.2: 4)."""
    n_heads: int = dataclasses.field(default=4, metadata={"min": 1})
    """Attention heads."""
    vocab_size: int = 2048
    """BPE vocabulary of the shared tokenizer."""
    warmup_fraction: float = dataclasses.field(default=0.1, metadata={"min": 0.0})
    """Linear warm-up as a fraction of the steps (authors' configs: 10 %)."""
    min_lr_ratio: float = dataclasses.field(default=0.1, metadata={"max": 1.0})
    """Cosine decay ends at this fraction of the peak (authors' ``alpha_f``: 0.1)."""
    weight_decay: float = dataclasses.field(default=0.1, metadata={"min": 0.0})
    """AdamW weight decay on matrices (authors' configs: 0.1)."""
    grad_clip: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Global gradient-norm clip (authors' configs: 1.0)."""
    r_min: float = 1.0
    """Multiplier of the most heavy-tailed layer (shipped yaml configs: 1)."""
    r_max: float = 3.0
    """Multiplier of the least heavy-tailed layer and of embeddings/head (shipped yaml configs: 3)."""
    every: int = dataclasses.field(default=10, metadata={"min": 1})
    """Steps between alpha fits (brief §4.3 at CPU scale; authors: 40 at 3200+ steps)."""
    ramp_steps: int = 5
    """Steps over which a new multiplier is ramped in (brief §4.3; authors: 20)."""
    active_fraction: float = dataclasses.field(default=0.2, metadata={"min": 0.0, "max": 1.0})
    """Alphas are refit only during this first fraction of training (authors' ``LLR_ratio``)."""
    min_eigs: int = 50
    """Layers with fewer ESD eigenvalues are not fitted (authors' ``eigs_thresh``)."""
    arms: tuple[str, ...] = ARM_KINDS
    """Arms run at every base rate (``LLR`` and ``uniform`` are required)."""
    shuffle_seed: int = 1
    """Seed of the shuffled control's permutation."""
    eval_every: int = dataclasses.field(default=25, metadata={"min": 1})
    """Validation loss every this many steps (brief §4.3: 25)."""
    eval_batches: int = dataclasses.field(default=4, metadata={"min": 1})
    """Validation batches of 32 windows per evaluation (brief §4.3: 4 fixed batches). The same number
    of the windows that follow them in the held-out text is the tuning split every arm's base rate is
    selected on (scored once, at the end of each run)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        self.base_lrs = tuple(float(x) for x in self.base_lrs)
        if not self.base_lrs or any(not x > 0 for x in self.base_lrs):
            raise ValueError(f"base_lrs={self.base_lrs} must be a non-empty tuple of positive rates")
        if list(self.base_lrs) != sorted(set(self.base_lrs)):
            raise ValueError(f"base_lrs={self.base_lrs} must be strictly increasing (smallest first)")
        if self.eval_every > self.steps:
            raise ValueError(f"eval_every={self.eval_every} exceeds steps={self.steps}; lower eval_every")
        if not self.warmup_fraction < 1 or not self.min_lr_ratio > 0:
            raise ValueError("warmup_fraction must lie in [0, 1) and min_lr_ratio in (0, 1]")
        if not 0 < self.r_min <= self.r_max:
            raise ValueError(f"need 0 < r_min <= r_max, got {self.r_min}, {self.r_max}")
        self.arms = tuple(self.arms)
        if not {"LLR", "uniform"} <= set(self.arms) or not set(self.arms) <= set(ARM_KINDS):
            raise ValueError(f"arms={self.arms} must include 'LLR' and 'uniform' and come from {ARM_KINDS}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: 3 blocks of width 96, 133 steps of 16x64 tokens, rates 7.5e-4 to 1.2e-2
        in factors of 4, seven arms (about 5 min a seed on one core).

        133 steps is a third of the committed further run ``budget_x3`` (``steps=400``, about 11 min a
        seed), so the two read the claim at two training budgets."""
        return cls(base_lrs=(7.5e-4, 3e-3, 1.2e-2), steps=133, batch_size=16, context=64, d_model=96,
                   n_layers=3, eval_every=25, arms=QUICK_ARMS)

    @classmethod
    def tiny(cls) -> "Config":
        """Seconds: one base rate, 30 steps of a 1-block width-64 model with a 512-token vocabulary."""
        return cls(base_lrs=(3e-3,), steps=30, batch_size=8, context=32, d_model=64, n_layers=2, n_heads=2,
                   vocab_size=512, every=5, ramp_steps=2, active_fraction=0.5, eval_every=10, eval_batches=1,
                   arms=QUICK_ARMS)
