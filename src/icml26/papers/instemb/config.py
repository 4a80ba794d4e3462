"""Configuration of the InstEmb reproduction: the tiny Llama, its SFT, the InstEmb arms and the
real-model tiers, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers
from icml26.common.tiny_lm import TinyLMConfig
from icml26.papers.instemb.data import attrworld_vocabulary

__all__ = ["Config", "TIERS"]

TIERS = ("minilm", "smollm2")


@dataclasses.dataclass
class Config:
    """AttrWorld with a tiny SFT'd Llama (full scale: the brief's plan, §4.2, plus the real-model tiers)."""

    d_model: int = 128
    """Width of the tiny Llama (brief §4.2: 128)."""
    n_layers: int = 4
    """Blocks of the tiny Llama (brief §4.2: 4)."""
    n_heads: int = 4
    """Attention heads (brief §4.2: 4)."""
    sft_texts: int = dataclasses.field(default=2000, metadata={"min": 1})
    """AttrWorld texts of the SFT pool (x 12 instructions), disjoint draws from the InstEmb set."""
    sft_steps: int = dataclasses.field(default=600, metadata={"min": 1})
    """SFT steps (batch 64, loss on the output tokens, AdamW, warm-up and cosine decay; brief §4.2: ~60 s)."""
    sft_lr: float = 1e-3
    """Peak SFT learning rate (measured: 1e-3 answers every held-out pair; 3e-3 stalls near 36 %)."""
    train_texts: int = dataclasses.field(default=256, metadata={"min": 1})
    """InstEmb training texts (issue: at most 300, so that contrastive-only does not saturate)."""
    steps: int = dataclasses.field(default=200, metadata={"min": 1})
    """InstEmb optimizer steps of every trained arm (the same batches for each)."""
    batch_size: int = dataclasses.field(default=64, metadata={"min": 2})
    """Examples per InstEmb step (brief §4.2: 64)."""
    lr: float = 3e-4
    """InstEmb AdamW learning rate (brief §4.2: 3e-4)."""
    num_lookahead: int = dataclasses.field(default=4, metadata={"min": 1})
    """K, the look-ahead tokens (issue: 4)."""
    tau: float = 0.05
    """InfoNCE temperature (issue: 0.05)."""
    distill_weight: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """λ (issue: 1)."""
    daap_weight: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """DAAP's look-ahead weight w."""
    heldout_attribute: str = "position"
    """The attribute whose instructions InstEmb never trains on (the SFT teacher answers all four); the
    checks read the held-out texts under its three instructions ("" holds none out: the checks then read
    all 12, the training and evaluation instructions being the same)."""
    heldout_paraphrase: int = dataclasses.field(default=2, metadata={"min": -1, "max": 2})
    """The paraphrase index InstEmb never trains on for the other attributes (-1: none), reported apart."""
    eval_texts: int = dataclasses.field(default=400, metadata={"min": 12})
    """Held-out texts, each embedded under all 12 instructions."""
    sts_pairs: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Inst-STS pairs (issue: 2000), half of them matching."""
    distill_kinds: tuple[str, ...] = ("mse", "kl")
    """Distillation variants trained (the first is the method's; issue: quick MSE, full MSE and KL)."""
    tiers: tuple[str, ...] = TIERS
    """Real-model tiers: ``minilm`` (all-MiniLM-L6-v2) and/or ``smollm2`` (SmolLM2-135M-Instruct)."""
    tier_train_texts: int = dataclasses.field(default=128, metadata={"min": 1})
    """Training texts of a real-model tier."""
    tier_steps: int = dataclasses.field(default=60, metadata={"min": 1})
    """InstEmb steps of a real-model tier."""
    tier_batch_size: int = dataclasses.field(default=16, metadata={"min": 2})
    """Examples per step of a real-model tier (brief §4.6: 16)."""
    tier_lr: float = 1e-4
    """AdamW learning rate of a real-model tier."""
    tier_train_last_blocks: int = 2
    """Blocks of a real model that train (with the look-ahead vectors); the rest is frozen."""
    tier_lora_rank: int = dataclasses.field(default=0, metadata={"min": 0})
    """A real-model tier trains LoRA adapters of this rank on every Linear (the teacher is then the backbone
    with its adapters disabled, no copy); 0: the last ``tier_train_last_blocks`` blocks train instead."""
    tier_eval_texts: int = dataclasses.field(default=200, metadata={"min": 12})
    """Held-out texts of a real-model tier."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        TinyLMConfig(arch="llama", vocab_size=len(attrworld_vocabulary()), d_model=self.d_model,
                     n_layers=self.n_layers, n_heads=self.n_heads)  # validates the architecture
        for name in ("sft_lr", "lr", "tier_lr", "tau"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")
        if not self.distill_kinds or any(k not in ("mse", "kl") for k in self.distill_kinds):
            raise ValueError(f"distill_kinds={self.distill_kinds} must name 'mse' and/or 'kl'")
        if any(t not in TIERS for t in self.tiers):
            raise ValueError(f"tiers={self.tiers} must be a subset of {TIERS}")
        from icml26.papers.instemb.data import ATTRIBUTES

        if self.heldout_attribute and self.heldout_attribute not in ATTRIBUTES:
            raise ValueError(f"heldout_attribute={self.heldout_attribute!r} must be one of {', '.join(ATTRIBUTES)} "
                             "or '' (none)")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction (1 seed, MSE only, no real-model tier; a few minutes on 2 cores)."""
        return cls(distill_kinds=("mse",), tiers=())

    @classmethod
    def tiny(cls) -> "Config":
        """The contract suite's setting (seconds)."""
        return cls(d_model=32, n_layers=2, n_heads=2, sft_texts=100, sft_steps=30, train_texts=24, steps=4,
                   batch_size=16, eval_texts=36, sts_pairs=100, distill_kinds=("mse",), tiers=())
