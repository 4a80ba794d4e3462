"""Configuration of the SPARD reproduction: the digits testbed, SPARD's safety projection and its
baselines, the text subset sizes and the pretrained-LM section, and the tuned front of the further run
(:mod:`~icml26.papers.spard.front_run`; neutral fields, not recorded at their defaults), with the range each
field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import neutral_field, validate_numbers

__all__ = ["Config", "FRONT_GRIDS"]

FRONT_GRIDS = ("front_mix_every", "front_lam", "front_rho", "front_tau_factor")
"""The tuned front's grids, one per defence and all of one length (one tuning budget for every arm)."""


@dataclasses.dataclass
class Config:
    """The digits analogue (full scale: the issue's 5 replicates plus the SmolLM2 section)."""

    replicates: int = dataclasses.field(default=5, metadata={"min": 1})
    """Independent replicates (data split, attack, pool, initialisation) per run (issue: 5; quick: 3)."""
    ratios: tuple[float, ...] = (0.01, 0.03, 0.10)
    """Safety-data ratios p (subset size k = ⌊p · |user set|⌋: 1, 3, 10 %)."""
    headline_ratio: float = 0.03
    """The p of the headline comparison with the baselines (the paper's 3 %)."""
    harmful_ratio: float = 0.10
    """Share of the user set that is attack data (authors: 10 %)."""
    pool_per_category: int = dataclasses.field(default=200, metadata={"min": 1})
    """Safety-pool pairs per harm category (3 categories: about 600 pairs)."""
    test_fraction: float = 0.25
    """Held-out share of the digits (ASR and task accuracy are measured on it)."""
    shift_noise: float = dataclasses.field(default=0.3, metadata={"min": 0.0})
    """Gaussian noise of the task shift (after inverting intensities on the [-1, 1] scale)."""
    augment_noise: float = dataclasses.field(default=0.2, metadata={"min": 0.0})
    """Noise of the pool's and the alignment set's augmentations."""
    base_copies: int = 4
    """Augmented copies of the training images in the alignment set of the base model."""
    base_epochs: int = dataclasses.field(default=10, metadata={"min": 1})
    """Epochs of the base model's alignment training."""
    base_lr: float = 3e-3
    """AdamW rate of the alignment training."""
    hidden: int = dataclasses.field(default=128, metadata={"min": 1})
    """Hidden width of the MLP (issue: 64-128-11)."""
    epochs: int = dataclasses.field(default=20, metadata={"min": 1})
    """Fine-tuning epochs over the user set (brief §4.2: 20)."""
    lr: float = 1e-3
    """Fine-tuning AdamW rate (brief §4.2: 1e-3)."""
    weight_decay: float = dataclasses.field(default=0.01, metadata={"min": 0.0})
    """AdamW weight decay (authors: 0.01)."""
    batch_size: int = dataclasses.field(default=32, metadata={"min": 1})
    """Task batch size (authors: 32)."""
    safety_batch: int = dataclasses.field(default=4, metadata={"min": 1})
    """Safety examples per safety step (authors: batch 1 x accumulation 4)."""
    tol: float = dataclasses.field(default=0.1, metadata={"min": 0.0})
    """SPAG's hysteresis: project only when the safety loss exceeds τ + tol (authors: 0.1)."""
    trust_radius: float = 1.0
    """SPAG's trust radius (closed form: ‖Δ‖ ≤ r; reference_adamw: α_max; authors: 1)."""
    tau_floor: float = dataclasses.field(default=0.0, metadata={"min": 0.0})
    """Floor of τ = max(floor, 1.5 × base safety loss). 0: τ tracks the base model's loss (ours, see
    README); the LLM-scale 0.2 of the API default is run as an ablation arm."""
    power: float = dataclasses.field(default=4.0, metadata={"min": 0.0})
    """Relevance exponent β (authors: 4)."""
    lam: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Penalty baseline's λ."""
    rho: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Lisa baseline's proximal strength ρ."""
    lisa_phase: int = dataclasses.field(default=10, metadata={"min": 1})
    """Lisa's steps per state (task, then safety)."""
    floor_ablation: bool = True
    """Also run SPARD with the LLM-scale floor τ ≥ 0.2 (headline p)."""
    sensitivity: bool = True
    """Also run Lisa at ρ ∈ {0.1, 10} and penalty at λ = 10 (random data, headline p)."""
    text_section: bool = True
    """Run the Do-Not-Answer selection section (needs the embed extra)."""
    text_ks: tuple[int, ...] = dataclasses.field(default=(5, 10, 20), metadata={"min": 1})
    """Subset sizes of the text section."""
    lm_section: bool = True
    """Run the SmolLM2 LoRA section (needs the pretrained extra; minutes; off in quick)."""
    lm_steps: int = dataclasses.field(default=300, metadata={"min": 1})
    """LoRA fine-tuning steps of the SmolLM2 section."""
    lm_task_size: int = dataclasses.field(default=400, metadata={"min": 1})
    """Benign task examples in the SmolLM2 user set (plus 10 % harmful)."""
    lm_pool: int = dataclasses.field(default=300, metadata={"min": 1})
    """Do-Not-Answer prompts the base model answers to build the SmolLM2 safety pool (its refusals)."""
    lm_eval: int = dataclasses.field(default=100, metadata={"min": 1})
    """Held-out Do-Not-Answer prompts of the SmolLM2 ASR."""
    lm_task_eval: int = dataclasses.field(default=40, metadata={"min": 1})
    """Held-out task prompts of the SmolLM2 exact match."""
    lm_tau: float | None = neutral_field(None, min=0.0)
    """SPAG's ``τ`` in the SmolLM2 section (its SPARD and SPAG+random arms): ``None`` = ``"base"``, the base
    model's own safety loss on the selected refusals (:data:`~icml26.papers.spard.lm_section.LM_TAU`); a number
    is ``τ`` itself (``lm_tau=0.2``: the authors' value). Neutral: at ``None`` not recorded."""
    lm_arm_cache: bool = neutral_field(False)
    """Keep each finished arm of the SmolLM2 section in ``$ICML26_CACHE/spard-lm-arms/``, keyed by every
    input of the arm (its data, seeds, fields, the model's weights, the device, the source of the modules it
    runs and the library versions), so a killed seed resumes at its first unfinished arm (an arm is about
    half an hour of one CPU core)."""

    front: bool = neutral_field(False)
    """Run the tuned front (:mod:`~icml26.papers.spard.front`): SafeInstr's ``mix_every``, penalty's ``λ``,
    Lisa's ``ρ`` and SPAG's ``τ`` (with random and with DPP data) over the ``front_*`` grids, chosen by one rule
    on development replicates, every grid point also run on the scored replicates. The full setting runs it
    whatever this says; the further run :mod:`~icml26.papers.spard.front_run` sets it on the quick setting.
    The front's fields are neutral: at their defaults they are not recorded."""
    dev_replicates: int = neutral_field(1, min=1)
    """Development replicates of the front's tuning (their own data draws, never a scored replicate's)."""
    match_points: float = neutral_field(3.0, min=0.0)
    """Task-accuracy budget (points below SFT) of the tuning rule and of "ASR at matched task accuracy"
    (the task_parity bar)."""
    front_mix_every: tuple[int, ...] = neutral_field((16, 8, 4, 2, 1), min=1)
    """SafeInstr's grid: one safety batch after every ``mix_every`` task batches (weakest first)."""
    front_lam: tuple[float, ...] = neutral_field((0.3, 1.0, 3.0, 10.0, 30.0), min=0.0)
    """The penalty's grid of ``λ`` (weakest first)."""
    front_rho: tuple[float, ...] = neutral_field((0.1, 1.0, 3.0, 10.0, 30.0), min=0.0)
    """Lisa's grid of the proximal ``ρ``."""
    front_tau_factor: tuple[float, ...] = neutral_field((3.0, 2.0, 1.5, 1.0, 0.5))
    """SPAG's grid (random and DPP data): ``τ = factor ×`` the base model's own safety loss on the subset
    (``tau="auto"`` with floor 0; 1 is ``tau="base"``, 1.5 the default; weakest first)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        self.ratios = tuple(float(p) for p in self.ratios)
        self._check_front()
        self.text_ks = tuple(int(k) for k in self.text_ks)
        if not self.ratios or any(not 0 < p <= 1 for p in self.ratios):
            raise ValueError(f"ratios={self.ratios} must be a non-empty tuple of shares in (0, 1]")
        if self.headline_ratio not in self.ratios:
            raise ValueError(f"headline_ratio={self.headline_ratio} must be one of ratios={self.ratios}")
        for name in ("harmful_ratio", "test_fraction"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must lie in (0, 1)")
        for name in ("base_lr", "lr", "trust_radius"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")

    def _check_front(self) -> None:
        grids = {name: tuple(getattr(self, name)) for name in FRONT_GRIDS}
        self.front_mix_every = tuple(int(v) for v in grids["front_mix_every"])
        self.front_lam, self.front_rho, self.front_tau_factor = (
            tuple(float(v) for v in grids[n]) for n in ("front_lam", "front_rho", "front_tau_factor"))
        if len({len(g) for g in grids.values()}) != 1 or not grids["front_lam"]:
            raise ValueError(f"{', '.join(FRONT_GRIDS)} must be non-empty and of one length (one tuning budget for "
                             f"every arm), got {[len(g) for g in grids.values()]}")
        if any(not v > 0 for v in self.front_tau_factor):
            raise ValueError(f"front_tau_factor={self.front_tau_factor} must hold positive factors")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: 3 replicates, the text section, no SmolLM2 section (~2-3 min on 2 cores)."""
        return cls(replicates=3, lm_section=False)

    @classmethod
    def tiny(cls) -> "Config":
        """Seconds: one replicate, 2 epochs, a 60-pair-per-category pool, p in {1, 3} %, no sections."""
        return cls(replicates=1, ratios=(0.01, 0.03), pool_per_category=60, base_copies=1, base_epochs=3,
                   epochs=2, floor_ablation=False, sensitivity=False, text_section=False,
                   lm_section=False)

