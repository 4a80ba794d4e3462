"""Configuration of the ReViT reproduction: the rotated-flow data, the ReViT and ViT arms and their
training, with the range each field accepts."""

from __future__ import annotations

import dataclasses
import math

from icml26.common.config import validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """Navier–Stokes rotation test. The paper's own sizes for this task are not known
    (its 2D results are on advection and Kolmogorov flow): the full-scale defaults are
    our scaling of the brief's CPU plan [inferred]."""

    grid: int = dataclasses.field(default=64, metadata={"min": 8})
    """Grid side N of the periodic domain [0, 2π)² (brief §4.1: 32 on CPU, 64 optional)."""
    train_trajectories: int = dataclasses.field(default=640, metadata={"min": 1})
    """Training trajectories (brief: 160 at N=32)."""
    pairs_per_trajectory: int = dataclasses.field(default=8, metadata={"min": 1})
    """Consecutive one-step pairs cut from each trajectory (brief: 8)."""
    test_trajectories: int = dataclasses.field(default=64, metadata={"min": 1})
    """Held-out trajectories, each evaluated at all four rotations (brief: 32)."""
    val_trajectories: int = dataclasses.field(default=32, metadata={"min": 1})
    """Validation trajectories, drawn like the training set (orientation-biased) after the test set
    (so train and test do not depend on it): the split on which each arm's learning rate is chosen."""
    nu: float = dataclasses.field(default=2e-3, metadata={"min": 0.0})
    """Kinematic viscosity ν (brief §4.1)."""
    dt: float = 0.01
    """Heun time step (brief §4.1)."""
    substeps: int = dataclasses.field(default=20, metadata={"min": 1})
    """Solver steps per prediction step: one pair spans 20·0.01 = 0.2 time units (brief §4.1)."""
    angle_spread: float = dataclasses.field(default=0.4, metadata={"min": 0.0, "max": math.pi})
    """Background-flow angle drawn from ±angle_spread rad around +x (brief §4.1: 0.4)."""
    patch: int = dataclasses.field(default=4, metadata={"min": 1})
    """Patch side K (brief §1.3 suggestion: 4)."""
    window: int = dataclasses.field(default=4, metadata={"min": 1})
    """Swin window side in tokens (brief §1.3: 4)."""
    dim: int = dataclasses.field(default=96, metadata={"min": 1})
    """Token width D (brief §1.3: 64–96)."""
    heads: int = dataclasses.field(default=4, metadata={"min": 1})
    """Attention heads (brief §4.2: 4)."""
    depths: tuple[int, ...] = (2, 2, 2)
    """Encoder blocks per level; each further level halves the token grid [inferred]."""
    decoder_depth: int = 1
    """Blocks per level after each expansion [inferred]."""
    steps: int = dataclasses.field(default=4000, metadata={"min": 1})
    """Optimisation steps per model and seed (same for every model)."""
    batch_size: int = dataclasses.field(default=32, metadata={"min": 1})
    """Pairs per step (brief §4.2: 32)."""
    lr: float = 2e-3
    """Peak learning rate of the one-cycle schedule (brief §4.2: 2e-3) when ``lrs`` is empty."""
    lrs: tuple[float, ...] = ()
    """Peak learning rates the shared tuner tries for every trained arm, each scored on the
    validation split (empty: ``lr`` alone, nothing selected). The chosen rate is reused by the
    arm's other budgets."""
    equal_time_factor: float = dataclasses.field(default=2.0, metadata={"min": 0.0})
    """ViT+aug (equal time) trains ``round(equal_time_factor · steps)`` steps: ReViT steps at
    0.48-0.53x the ViT's rate in the committed runs. A fixed factor, not a
    timer, so a seed's metrics stay reproducible; the measured ratio is in the provenance."""
    budgets: tuple[int, ...] = ()
    """Further step budgets at which ReViT and ViT+aug are trained again from the same
    initialisation (each a full one-cycle run at the chosen rate): the budget curve."""
    weight_decay: float = dataclasses.field(default=1e-4, metadata={"min": 0.0})
    """AdamW weight decay."""
    seeds: int = dataclasses.field(default=3, metadata={"min": 1})
    """Model seeds per arm within one run (the data are the same for every seed). The quick
    setting uses 1: one master seed (``--seed``) is one replicate with its own data, and three
    seeds are ``icml26 run revit --quick --seeds 0-2``."""
    local_kernel: str = "bilinear"
    """ReViT's ψ over rebased offsets in patch embedding, decoder, merge and expand [ours]:
    ``bilinear`` (fixed interpolation weights; identity frames give exactly a linear patch
    embedding) or ``mlp`` (a learned MLP, mean-pooled: the first version)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.depths:
            raise ValueError("depths must list at least one level, e.g. (2, 2)")
        if self.grid % 2:
            raise ValueError(f"grid={self.grid} must be an even size ≥ 8")
        tokens = self.grid // self.patch
        if self.grid % self.patch:
            raise ValueError(f"grid={self.grid} must be divisible by patch={self.patch}")
        levels = len(self.depths)
        if tokens % (2 ** (levels - 1)):
            raise ValueError(f"grid/patch={tokens} must be divisible by 2^(levels-1)={2 ** (levels - 1)}; "
                             f"shorten depths or change grid")
        for level in range(levels):
            side = tokens // 2**level
            if side % min(self.window, side):
                raise ValueError(f"token side {side} at level {level} is not a multiple of window={self.window}")
        if self.dim % self.heads:
            raise ValueError(f"dim={self.dim} must be divisible by heads={self.heads}")
        if self.dt <= 0 or self.lr <= 0:
            raise ValueError(f"need dt > 0 and lr > 0 (got dt={self.dt}, lr={self.lr})")
        if not self.equal_time_factor > 0:
            raise ValueError(f"equal_time_factor={self.equal_time_factor} must be positive")
        if any(not lr > 0 for lr in self.lrs):
            raise ValueError(f"lrs={self.lrs} must all be positive")
        if any(b < 1 for b in self.budgets):
            raise ValueError(f"budgets={self.budgets} must all be at least 1 step")
        if self.steps in self.budgets or len(set(self.budgets)) != len(self.budgets):
            raise ValueError(f"budgets={self.budgets} must be distinct and leave out steps={self.steps} "
                             f"(the main budget is always on the curve)")
        if self.local_kernel not in ("bilinear", "mlp"):
            raise ValueError(f"local_kernel={self.local_kernel!r} must be 'bilinear' or 'mlp'")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: N=32, ~0.21 M-parameter models, 400 steps, one replicate per master
        seed (``--seeds 0-7`` for eight; about two minutes each on one core). The learning-rate grid
        and the budget curve are further runs (``lrs=...``; ``steps=1200 budgets=400,2400``; see the README)."""
        return cls(grid=32, train_trajectories=160, test_trajectories=32, val_trajectories=16, dim=64,
                   depths=(2, 2), steps=400, seeds=1)

    @classmethod
    def tiny(cls) -> "Config":
        """Contract-suite setting (seconds)."""
        return cls(grid=16, train_trajectories=4, pairs_per_trajectory=2, test_trajectories=2, val_trajectories=1,
                   substeps=5, window=2, dim=16, heads=2, depths=(1, 1), steps=3, batch_size=4, seeds=1)
