"""Configuration of the VimRAG reproduction: the synthetic retrieval task, the memory-budget policies,
the policy-gradient training and its replicates, with the range each field accepts.

The long-episode further run's two fields (a redundant-search penalty, skipping (A)) are neutral fields:
at their defaults (no penalty, (A) runs) they are left out of the recorded config, so the committed quick
run's configuration is what it was.
"""

from __future__ import annotations

import dataclasses

from icml26.common.config import neutral_field, validate_numbers

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """VimRAG reproduction settings (full scale = the issue's; the paper's MLLM scale is out of reach)."""

    episodes: int = dataclasses.field(default=2000, metadata={"min": 1})
    """Episodes per budget in (A) (issue: 2 000)."""
    budgets: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)
    """Budgets as fractions of the full cost (every item at 8x8)."""
    control_episodes: int = 2000
    """Episodes of the unstructured-graph control at 40 % (0: skip)."""
    sweep_episodes: int = dataclasses.field(default=1000, metadata={"min": 0})
    """Episodes per point of the 40 % sweeps over ``sweep_noise`` and ``sweep_structure`` (0: skip)."""
    sweep_noise: tuple[float, ...] = (0.5, 1.0, 2.0)
    """Relevance noise levels of the sweep (structured graphs, ``relevance_gap`` fixed)."""
    sweep_structure: tuple[float, ...] = (0.0, 0.5, 1.0)
    """How informative the graph is (``sample_episode``'s ``structure``: 0 = the control, 1 = the main generator)."""
    relevance_gap: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Mean log-priority of pivotal items above distractors (priority = exp(gap·pivotal + noise·N(0,1)))."""
    relevance_noise: float = 1.0
    """Standard deviation of the log-priority noise (gap = noise: pivotal-vs-distractor AUC 0.76)."""
    dead_follow: float = dataclasses.field(default=0.3, metadata={"min": 0.0, "max": 1.0})
    """Probability that a dead end builds on an earlier dead end rather than a live node."""
    replicates: int = dataclasses.field(default=5, metadata={"min": 1})
    """Seeds of (B) inside one run (issue: 5; quick 3)."""
    iterations: int = dataclasses.field(default=300, metadata={"min": 1})
    """Policy updates per training run (issue: 300)."""
    questions: int = dataclasses.field(default=16, metadata={"min": 1})
    """Questions per iteration."""
    group: int = dataclasses.field(default=8, metadata={"min": 2})
    """G, rollouts per question (issue: 8)."""
    documents: int = dataclasses.field(default=12, metadata={"min": 3})
    """N documents (issue: 12)."""
    horizon: int = dataclasses.field(default=6, metadata={"min": 1})
    """Steps per rollout (issue: 6; the long-episode further run, ``long_run.py``: 24)."""
    features: int = dataclasses.field(default=256, metadata={"min": 1})
    """Hash buckets of the state features."""
    lr: float = 0.05
    """Adam learning rate for both methods: GRPO's best of {0.01, 0.02, 0.03, 0.05, 0.1} on pilot seeds 100-107."""
    clip: float = 0.2
    """ε of the clipped surrogate (inactive with one update per batch; kept for the loss's shape)."""
    extra_lrs: tuple[float, ...] = (0.01, 0.02)
    """Further learning rates at which every (B) arm is also trained; the success-area checks average over
    ``lr`` and these (the issue's grid {0.01, 0.02, 0.05}), the iteration checks read ``lr`` alone."""
    threads: int = 1
    """The most torch intra-op threads the runner gives this run (0: no limit); the policy is tiny, one thread is fastest."""
    redundant_penalty: float = neutral_field(0.0, min=0.0)
    """``c`` in (B)'s reward ``r = 1[right answer] · max(0, 1 − c · #(searches not on P_ans))``; 0 (default):
    the issue's outcome reward. GGPO's mask reads the outcome, the advantages ``r``. The long-episode further
    run (:mod:`.long_run`) uses 0.05: the 8 dead ends of a success of the untrained policy on 24 documents
    cost 0.4 of its reward (ours)."""
    run_budget: bool = neutral_field(True)
    """Run (A); ``False`` (the long-episode further run) skips it and its checks: that run is about (B) alone."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.budgets or any(not 0 < b <= 1 for b in self.budgets) or 0.4 not in self.budgets \
                or 1.0 not in self.budgets:
            raise ValueError(f"budgets={self.budgets!r} must be fractions in (0, 1] including 0.4 and 1.0 (the checks)")
        if any(x <= 0 for x in self.sweep_noise) or any(not 0 <= x <= 1 for x in self.sweep_structure):
            raise ValueError(f"sweep_noise={self.sweep_noise!r} must be positive and sweep_structure="
                             f"{self.sweep_structure!r} in [0, 1]")
        if self.relevance_noise <= 0:
            raise ValueError(f"relevance_noise={self.relevance_noise} must be > 0")
        if self.lr <= 0 or self.clip <= 0:
            raise ValueError(f"lr={self.lr} and clip={self.clip} must be positive")
        if any(lr <= 0 for lr in self.extra_lrs):
            raise ValueError(f"extra_lrs={self.extra_lrs!r} must be positive learning rates")
        if self.lr in self.extra_lrs or len(set(self.extra_lrs)) != len(self.extra_lrs):
            raise ValueError(f"extra_lrs={self.extra_lrs!r} must be distinct and exclude lr={self.lr}")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: the issue's sizes with 3 replicates of (B) per seed."""
        return cls(replicates=3)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(episodes=60, control_episodes=30, budgets=(0.4, 1.0), replicates=1, iterations=15, questions=4,
                   extra_lrs=(), sweep_episodes=20, sweep_noise=(0.5, 2.0), sweep_structure=(0.0, 1.0))

