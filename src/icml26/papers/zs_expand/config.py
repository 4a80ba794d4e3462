"""Configuration of the zs_expand reproduction: the synthetic granularity benchmark, the expander and
baselines, the shared tuning and the real sanity section, with the range each field accepts."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """zs_expand reproduction settings (no paper scale is public; defaults are the issue's benchmark)."""

    n_groups: int = dataclasses.field(default=6, metadata={"min": 2})
    """Superclasses (the last is the held-out "distinct" one)."""
    per_group: int = dataclasses.field(default=16, metadata={"min": 2})
    """Fine classes per superclass (16: 14 seen siblings per group, enough to learn each group's fine
    structure; with 8, 6 seen siblings, the selection switched the refiners off on every seed)."""
    similar_per_group: int = dataclasses.field(default=2, metadata={"min": 1})
    """Unseen siblings in each other superclass (6 x 16 with 2: 70 seen, 10 similar + 16 distinct unseen)."""
    rounds: int = dataclasses.field(default=3, metadata={"min": 1})
    """Continuous expansion: the unseen classes arrive in this many rounds (1: one expansion only)."""
    n_train: int = dataclasses.field(default=100, metadata={"min": 1})
    """Training samples per class (the head; the ceiling's head)."""
    n_test: int = dataclasses.field(default=100, metadata={"min": 1})
    """Test samples per class."""
    feature_dim: int = dataclasses.field(default=64, metadata={"min": 1})
    """Width D of the features (the head's input)."""
    fine_scale: float = dataclasses.field(default=0.5, metadata={"min": 0.0})
    """Magnitude of the fine attribute block (the coarse block has 1)."""
    noise: float = 0.3
    """Standard deviation of the feature noise."""
    n_nuisances: int = dataclasses.field(default=6, metadata={"min": 1, "max": 6})
    """Nuisance sentences crossed with every description (at most 6)."""
    named: bool = False
    """Put invented class names in the descriptions (a harder variant; see data.granularity_benchmark)."""
    head_c: float = 1.0
    """Inverse L2 strength of the logistic head (scikit-learn's C)."""
    invariance: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """The expander's invariance weight lambda."""
    coarse_alpha: float = dataclasses.field(default=0.1, metadata={"min": 0.0})
    """The expander's relative ridge strength of f0."""
    refiner_alpha: float = dataclasses.field(default=0.01, metadata={"min": 0.0})
    """The expander's relative ridge strength of the shared refiner."""
    group_alpha: float = dataclasses.field(default=0.01, metadata={"min": 0.0})
    """The expander's relative ridge strength of each group's own refiner (used when ``alpha_grid`` is empty)."""
    alpha_grid: tuple[float, ...] = dataclasses.field(default=(), metadata={"min": 0.0})
    """The expander's own leave-one-seen-class-out selection of its ridge strengths (empty: off; the
    arms are then selected by the shared tuner, ``tune``). Kept for users of the library default."""
    tune: bool = True
    """Select every arm's hyperparameters with the shared tuner over its declared space (claims.py
    ``ARMS``), on class folds of the seen classes; False: each arm's fixed settings below."""
    tune_folds: int = dataclasses.field(default=3, metadata={"min": 2})
    """Class folds of the seen classes for the tuner's validation task (each held out once)."""
    tune_metric: Literal["row_error", "zsl"] = "row_error"
    """What the tuner scores on the held-out folds: the synthesised rows' relative squared error (the
    expander's own criterion) or their ZSL accuracy on the held-out classes' training images."""
    cosine_weight: float = dataclasses.field(default=0.0, metadata={"min": 0.0})
    """The expander's cosine-loss weight in its L-BFGS stage (0: closed form only)."""
    cosine_steps: int = 0
    """L-BFGS iterations of that stage."""
    criterion: str = "eigengap"
    """Group-count criterion: eigengap or silhouette."""
    cluster_method: str = "agglomerative"
    """Clustering: agglomerative or spectral."""
    neighbours: int = dataclasses.field(default=7, metadata={"min": 1})
    """k of the self-tuning affinity's local scale."""
    mlp_hidden: int = dataclasses.field(default=256, metadata={"min": 1})
    """Shared MLP width."""
    mlp_steps: int = dataclasses.field(default=1000, metadata={"min": 1})
    """Shared MLP Adam steps (full batch)."""
    mlp_lr: float = 1e-3
    """Shared MLP learning rate."""
    mlp_weight_decay: float = dataclasses.field(default=1e-4, metadata={"min": 0.0})
    """Shared MLP weight decay."""
    icis_latent: int = dataclasses.field(default=128, metadata={"min": 1})
    """ICIS latent width."""
    icis_steps: int = dataclasses.field(default=1000, metadata={"min": 1})
    """ICIS Adam steps (full batch)."""
    icis_lr: float = 1e-3
    """ICIS learning rate."""
    wavg_temperature: float = 0.1
    """WAvg softmax temperature."""
    real: bool = True
    """Run the Animal-MNIST + digits section (report only; needs the data extra)."""
    real_train_per_class: int = dataclasses.field(default=150, metadata={"min": 1})
    """Real section: training images per class."""
    real_test_per_class: int = dataclasses.field(default=50, metadata={"min": 1})
    """Real section: test images per class."""
    real_epochs: int = dataclasses.field(default=4, metadata={"min": 1})
    """Real section: CNN epochs."""
    threads: int = 0
    """The most torch threads the runner gives this run (0: no limit)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if self.criterion not in ("eigengap", "silhouette"):
            raise ValueError(f"criterion={self.criterion!r} must be 'eigengap' or 'silhouette'")
        if self.cluster_method not in ("agglomerative", "spectral"):
            raise ValueError(f"cluster_method={self.cluster_method!r} must be 'agglomerative' or 'spectral'")
        if self.tune_metric not in ("row_error", "zsl"):
            raise ValueError(f"tune_metric={self.tune_metric!r} must be 'row_error' or 'zsl'")
        for name in ("head_c", "mlp_lr", "icis_lr", "wavg_temperature", "noise"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: the issue's benchmark as is (about a minute per seed on one core)."""
        return cls(threads=1)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds): 3 x 4 classes, 2 nuisances, short training, no real section."""
        return cls(n_groups=3, per_group=4, similar_per_group=1, n_train=30, n_test=20, n_nuisances=2,
                   mlp_steps=60, icis_steps=60, real=False, threads=1, rounds=2)
