"""Configuration of the ConfSleepNet reproduction: the synthetic sleep recordings, the networks and
their training, the corruption study and the coverage curve, with the range each field accepts."""

from __future__ import annotations

import dataclasses

from icml26.common.config import validate_numbers
from icml26.papers.confsleepnet.data import CORRUPTION_MODES

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """ConfSleepNet reproduction settings. Defaults: the brief's synthetic-PSG plan (§4) with the
    authors' training schedule (``train.py``); the authors' backbone is replaced by a small CNN."""

    n_train_subjects: int = dataclasses.field(default=32, metadata={"min": 1})
    """Training nights, one per subject (brief §4: 40 subjects, 8 held out)."""
    n_test_subjects: int = dataclasses.field(default=8, metadata={"min": 1})
    """Held-out nights the rules are scored on."""
    epochs_per_subject: int = dataclasses.field(default=300, metadata={"min": 1})
    """30-s epochs per night (brief §4)."""
    sampling_rate: float = dataclasses.field(default=100.0, metadata={"min": 40.0})
    """Hz (Sleep-EDF's 100 Hz)."""
    subject_variability: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Spread of per-subject gains, frequency scale and background (0: identical subjects)."""
    corruption_fractions: tuple[float, ...] = dataclasses.field(default=(0.0, 0.2, 0.4),
                                                                metadata={"min": 0.0, "max": 1.0})
    """Fractions pi of held-out epochs whose EOG is corrupted."""
    corruption_modes: tuple[str, ...] = CORRUPTION_MODES
    """EOG corruptions, drawn with equal probability: shift (1-3 epochs), pop, swap."""
    seeds: int = dataclasses.field(default=3, metadata={"min": 1})
    """Independent repetitions (data, initialisation, corruption); metrics are their means."""
    width: int = dataclasses.field(default=32, metadata={"min": 1})
    """Channels of the per-view CNN's first layer (about 40k parameters per view at 32)."""
    dropout: float = dataclasses.field(default=0.2, metadata={"min": 0.0})
    """Dropout before each head."""
    train_epochs: int = dataclasses.field(default=40, metadata={"min": 1})
    """Training epochs (authors: 40)."""
    batch_size: int = dataclasses.field(default=320, metadata={"min": 1})
    """30-s epochs per mini-batch (authors: 16 sequences x 20 epochs)."""
    lr: float = 1e-3
    """AdamW learning rate (authors: 1e-3)."""
    weight_decay: float = dataclasses.field(default=1e-2, metadata={"min": 0.0})
    """AdamW weight decay (torch's default; the authors keep it)."""
    annealing_epochs: int = dataclasses.field(default=10, metadata={"min": 1})
    """Epochs until the EDL loss's KL weight reaches 1 (Sensoy et al.: 10)."""
    coverage: float = 0.8
    """Coverage of the selective-accuracy score (80 %)."""
    threads: int = 0
    """The most torch intra-op threads the runner gives this run (0: no limit)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.corruption_fractions:
            raise ValueError(f"corruption_fractions={self.corruption_fractions!r} must be values in [0, 1]")
        if 0.0 not in self.corruption_fractions or max(self.corruption_fractions) <= 0:
            raise ValueError("corruption_fractions must include 0 (clean) and at least one fraction > 0")
        if not self.corruption_modes or any(m not in CORRUPTION_MODES for m in self.corruption_modes):
            raise ValueError(f"corruption_modes={self.corruption_modes!r}: choose from {', '.join(CORRUPTION_MODES)}")
        if not 0 < self.coverage <= 1:
            raise ValueError(f"coverage={self.coverage} must be in (0, 1]")
        if self.lr <= 0 or not self.dropout < 1:
            raise ValueError(f"lr={self.lr}, dropout={self.dropout}: need lr > 0 and 0 <= dropout < 1")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: 12 + 4 subjects, 50 Hz, width 16, 8 epochs (a few minutes on 2 cores)."""
        return cls(n_train_subjects=12, n_test_subjects=4, epochs_per_subject=200, sampling_rate=50.0,
                   width=16, train_epochs=8, batch_size=64, lr=3e-3, annealing_epochs=4)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(n_train_subjects=3, n_test_subjects=2, epochs_per_subject=60, sampling_rate=50.0,
                   corruption_fractions=(0.0, 0.4), seeds=1, width=4, train_epochs=1, batch_size=64,
                   lr=3e-3, annealing_epochs=1)
