"""Configuration of the LMCleaner reproduction: the synthetic mixture and its models, the lag and
window sweeps, the certified-noise calibration, the cost ledger and the digits section, with the
range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """LMCleaner reproduction. Defaults: a larger CPU run (the paper's own scale is
    Llama on TOFU, out of reach here); ``quick()`` is the brief's plan (§4)."""

    informative_features: int = 20
    """Gaussian-mixture feature dimension d (brief §4.1: d = 20)."""
    rare_features: int = 10
    """Extra feature directions that clean points barely use (std ``rare_noise``) and canaries do."""
    n_classes: int = 10
    """Mixture components / classes (brief §4.1)."""
    class_separation: float = 1.0
    """Standard deviation of the class means (within-class noise has std 1)."""
    rare_noise: float = 0.01
    """Std of the rare features on clean points."""
    canary_rare_scale: float = 2.5
    """Std of the rare features on canaries (and on the fresh MIA non-members); canaries carry a wrong label."""
    batch_size: int = dataclasses.field(default=20, metadata={"min": 1})
    """B (brief §4.1: B = 20)."""
    canary_step: int = dataclasses.field(default=5000, metadata={"min": 1})
    """t_z, the step of the canary batch; single pass, so n_train = B·(t_z + max lag)."""
    lags: tuple[int, ...] = dataclasses.field(default=(50, 200, 1000, 5000), metadata={"min": 2})
    """L = τ − t_z at which the deletion request is served (brief: 50, 200, 1000)."""
    windows: tuple[int, ...] = (0, 1, 2, 5, 10, 20, 50, 100, 200, 800)
    """Truncation windows K (paper draft's cost analysis K = 64; authors' yaml K = 800)."""
    headline_window: int = 10
    """K of the headline comparison (authors' experiments K = 10–50)."""
    n_test: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Clean test points."""
    n_nonmembers: int = dataclasses.field(default=200, metadata={"min": 1})
    """Fresh canary-like points (random labels, rare features) used as MIA non-members."""
    lr_softmax: float = 0.2
    """SGD learning rate for softmax regression (our choice; η·λ_max < 2)."""
    lr_mlp: float = 0.2
    """SGD learning rate for the MLP."""
    l2: float = dataclasses.field(default=1e-4, metadata={"min": 0.0})
    """Weight decay λ (μ > 0 for the convex model)."""
    hidden: int = dataclasses.field(default=64, metadata={"min": 1})
    """MLP hidden width (brief §4.2: 20-64-10, tanh)."""
    models: tuple[str, ...] = ("softmax", "mlp")
    """Models of the lag sweep."""
    neggrad_beta: float = dataclasses.field(default=0.5, metadata={"min": 0.0, "max": 1.0})
    """β of NegGrad+ (β·L_retain − (1 − β)·L_forget)."""
    epsilon: float = 1.0
    """ε of the noise comparison (brief §4.4: ε = 1)."""
    delta: float = 1e-5
    """δ (authors' code default 1e-5)."""
    clip_norm: float = 1.0
    """C of the noise section's clipped run: every per-sample loss gradient is clipped to norm C, so
    Δ̄ = η·C bounds every batch's update publicly (ours: C = 1)."""
    noise_calibration_requests: int = dataclasses.field(default=19, metadata={"min": 1})
    """Planted canary batches whose deletion calibrates β as the largest of their β̂ (β set from
    a measurement, not assumed). If the request is exchangeable with them, its β̂ exceeds that maximum with probability
    1/(n + 1): 19 gives 95% coverage."""
    noise_calibration_spacing: int = dataclasses.field(default=100, metadata={"min": 1})
    """They sit at t_z − j·spacing, j = 1 … ``noise_calibration_requests``."""
    tail_public: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Public rows of the tail correction's Hessian (all of ``n_test`` public rows by default)."""
    tail_krylov: int = dataclasses.field(default=4, metadata={"min": 1})
    """Krylov dimension m of the tail correction (public HVPs per deleted batch); chosen on a seed-0
    pilot so that K = 10 plus the tail fits a 60-gradient-equivalent budget."""
    subspace_dim: int = 10
    """k, the noise subspace dimension (brief §4.4: k = 10)."""
    noise_draws: int = dataclasses.field(default=20, metadata={"min": 1})
    """Noise draws averaged per accuracy figure."""
    timing_repeats: int = dataclasses.field(default=15, metadata={"min": 1})
    """Timing rounds per lag (first model): each round measures the unit costs, then times every timed arm
    once, back to back; wall times and unit costs are medians over the rounds (one estimator for both: a
    fastest-of-repeats unit against a median wall would bias the prediction low)."""
    timing_unit_repeats: int = dataclasses.field(default=1, metadata={"min": 1})
    """Within a round, each unit (a block of K HVPs, a 200-step SGD block, a public HVP, a rebuild) is timed
    this many times after a warm-up call, keeping the fastest."""
    ledger_requests: int = dataclasses.field(default=100, metadata={"min": 1})
    """Largest number M of sequential requests in the ledger comparison."""
    digits: bool = True
    """Run the scikit-learn digits section."""
    digits_epochs: int = 5
    """Epochs over digits (brief §4.1)."""
    digits_batch_size: int = dataclasses.field(default=32, metadata={"min": 1})
    """Digits batch size."""
    digits_forget: int = dataclasses.field(default=10, metadata={"min": 1})
    """Mislabelled training digits to delete (D_u)."""
    digits_request_epoch: int = 4
    """The request arrives after this many epochs."""
    digits_lr: float = 0.1
    """Digits SGD learning rate."""
    digits_nonmembers: int = 100
    """Mislabelled test digits used as MIA non-members (the rest measure accuracy)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.lags:
            raise ValueError(f"lags={self.lags} must be non-empty and ≥ 2")
        if self.headline_window not in self.windows:
            raise ValueError(f"headline_window={self.headline_window} must be one of windows={self.windows}")
        if 0 not in self.windows:
            raise ValueError("windows must include 0 (no propagation, subtract u only)")
        for m in self.models:
            if m not in ("softmax", "mlp"):
                raise ValueError(f"model {m!r} must be 'softmax' or 'mlp'")
        if not self.models:
            raise ValueError("models is empty")
        if not 1 <= self.subspace_dim <= self.n_classes * (self.informative_features + self.rare_features + 1):
            raise ValueError(f"subspace_dim={self.subspace_dim} must lie in 1..p")
        if self.epsilon <= 0 or not 0 < self.delta < 1:
            raise ValueError("need epsilon > 0 and 0 < delta < 1")
        if not self.clip_norm > 0:
            raise ValueError(f"clip_norm={self.clip_norm} must be > 0")
        if self.canary_step - self.noise_calibration_requests * self.noise_calibration_spacing < 1:
            raise ValueError("the planted canaries (canary_step − j·noise_calibration_spacing) must fall at step >= 1")
        if self.digits and not 1 <= self.digits_request_epoch < self.digits_epochs:
            raise ValueError(f"digits_request_epoch={self.digits_request_epoch} must lie in 1..digits_epochs−1")
        for name in ("class_separation", "rare_noise", "canary_rare_scale", "lr_softmax", "lr_mlp", "digits_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} must be > 0")

    @classmethod
    def quick(cls) -> "Config":
        """The brief's CPU plan: t_z = 2000, L ∈ {50, 200, 1000}, K ∈ {0 … 100}."""
        return cls(canary_step=2000, lags=(50, 200, 1000), windows=(0, 1, 2, 5, 10, 20, 50, 100))

    @classmethod
    def tiny(cls) -> "Config":
        """Seconds: the contract suite."""
        return cls(canary_step=60, lags=(5, 20), windows=(0, 1, 2, 5), headline_window=2, n_test=300,
                   n_nonmembers=40, noise_draws=3, timing_repeats=1, timing_unit_repeats=3, ledger_requests=5,
                   digits_epochs=2, digits_request_epoch=1, digits_forget=3, digits_nonmembers=40,
                   hidden=16, noise_calibration_requests=2, noise_calibration_spacing=20, tail_public=100,
                   tail_krylov=2)
