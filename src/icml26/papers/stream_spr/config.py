"""Configuration of the stream_spr reproduction: the MinAtar games, the streaming arms and their
hyperparameters, the probes and the curves, with the range each field accepts."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import neutral_field, validate_numbers

from .games import MINATAR_GAMES
from .runs import ARMS

__all__ = ["Config"]


@dataclasses.dataclass
class Config:
    """Stream Q(λ) vs Stream Q(λ)+SPR+orth+orth² on MinAtar (full scale: three games, 1M steps each)."""

    games: tuple[str, ...] = ("breakout", "space_invaders", "freeway")
    """MinAtar games (the full mode's three; the paper runs five MinAtar games, Atari and Octax)."""
    seeds: int = dataclasses.field(default=3, metadata={"min": 1})
    """Seeds per game and arm (the paper: 1, 42, 999); arms share a seed's initialization."""
    arms: tuple[str, ...] = ("spr_orth2", "spr_naive", "stream_q")
    """Arms among spr_orth2 (the method), spr_naive (SPR, no orth/orth²), spr_authors (SPR+orth+orth² in
    stream-rep-rl's configuration: α_RL = α_SPR = 1e-4, its window actions, targets, head and orth² ε)
    and stream_q (baseline)."""
    total_steps: int = dataclasses.field(default=1_000_000, metadata={"min": 1})
    """Environment steps per run (1M by default; the paper: 5M on MinAtar)."""
    exploration_fraction: float = 0.2
    """ε goes 1 → 0.01 linearly over this fraction of the run (Elsayed and stream-rep-rl MinAtar: 0.2)."""
    lr_preset: Literal["elsayed", "official"] = "elsayed"
    """RL/SPR step sizes: elsayed = ObGD α 1.0, SPR 1e-4; official = stream-rep-rl's q_lr 1e-4 for both."""
    spr_lr: float | None = neutral_field(None, min=0.0)
    """α_SPR of spr_orth2 and spr_naive (None: the lr_preset's, 1e-4); spr_authors keeps its own 1e-4."""
    spr_lr_grid: tuple[float, ...] = neutral_field(())
    """α_SPR candidates: when given, spr_orth2 and spr_naive each get the value with the best mean
    last-10% return over ``tune_seeds`` development seeds (own stream, never the scored seeds),
    chosen by the shared tuner, before the scored runs."""
    tune_seeds: int = neutral_field(0, min=0)
    """Development seeds per game for ``spr_lr_grid`` (0 when no grid)."""
    tune_steps: int = neutral_field(0, min=0)
    """Environment steps of each tuning run (0: ``total_steps``)."""
    tune_per_game: bool = neutral_field(False)
    """Choose α_SPR for each game on that game's development seeds (False: one value per arm, by the mean
    over every game). True makes a run of one game equal that game's part of a run of several."""
    run_cache: bool = neutral_field(False)
    """Keep each finished run (a game, a seed, an arm, its α_SPR and budget) in the on-disk cache and reuse
    it: a killed long run resumes where it stopped, and runs of one game at a time compose a run of several
    (with ``tune_per_game``). Off by default, so that a run's timings are its own."""
    gamma: float = dataclasses.field(default=0.99, metadata={"min": 0.0, "max": 1.0})
    """γ (both codes)."""
    lamda: float = dataclasses.field(default=0.8, metadata={"min": 0.0, "max": 1.0})
    """λ of the eligibility traces (both codes)."""
    kappa: float = 2.0
    """κ of ObGD (both codes)."""
    spr_depth: int = dataclasses.field(default=5, metadata={"min": 1})
    """K, SPR prediction steps (stream-rep-rl and SPR: 5)."""
    spr_weight: float = dataclasses.field(default=2.0, metadata={"min": 0.0})
    """w, SPR loss weight (stream-rep-rl and SPR: 2)."""
    spr_tau: float = dataclasses.field(default=0.99, metadata={"min": 0.0, "max": 1.0})
    """τ of the EMA target encoder and projection (stream-rep-rl: 0.99, no augmentation)."""
    orth_beta: float = dataclasses.field(default=0.99, metadata={"min": 0.0, "max": 1.0})
    """β of the orth momentum (stream-rep-rl orth_beta)."""
    action_alignment: Literal["correct", "official"] = "correct"
    """SPR window actions: correct, or stream-rep-rl's off-by-one (official)."""
    target_init: Literal["copy", "independent"] = "copy"
    """SPR targets copied from the online weights (SPR), or independent (stream-rep-rl)."""
    official_architecture: bool = False
    """Give the SPR arms stream-rep-rl's SPR head (ReLU, no LN) while the baseline keeps LN+LeakyReLU."""
    sticky_action_prob: float = dataclasses.field(default=0.1, metadata={"min": 0.0, "max": 1.0})
    """MinAtar's sticky-action probability (its default)."""
    probe_states: int = dataclasses.field(default=2000, metadata={"min": 1})
    """States in the fixed probe set for the rank metrics (random policy, own seed)."""
    srank_delta: float = dataclasses.field(default=0.01, metadata={"min": 0.0})
    """δ of srank (Kumar et al. 2021)."""
    loss_window: int = dataclasses.field(default=40_000, metadata={"min": 1})
    """The SPR+orth² loss must fall below -0.8 within this many steps: twice the 20k steps naive
    SPR needs (the 20k is read off naive SPR's curve; see ``claims.py``)."""
    curve_points: int = dataclasses.field(default=60, metadata={"min": 1})
    """Points per learning/loss curve."""
    processes: int = 0
    """Worker processes, one torch thread each (0: one per thread the run was given, i.e.
    ``ICML26_THREADS`` or every core, and 1 in a ``--seeds`` sweep job; 1: in this process).
    The numbers do not depend on it (each run is seeded on its own and single-threaded)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if not self.games or any(g not in MINATAR_GAMES for g in self.games):
            raise ValueError(f"games={self.games} must be a non-empty subset of {', '.join(MINATAR_GAMES)}")
        if len(set(self.arms)) != len(self.arms) or any(a not in ARMS for a in self.arms):
            raise ValueError(f"arms={self.arms} must be distinct names among {', '.join(ARMS)}")
        if "spr_orth2" not in self.arms or "stream_q" not in self.arms:
            raise ValueError("arms must include the method spr_orth2 and the baseline stream_q")
        if self.total_steps < self.curve_points:
            raise ValueError(f"total_steps={self.total_steps} must be at least curve_points={self.curve_points}")
        if not 0.0 < self.exploration_fraction <= 1.0:
            raise ValueError(f"exploration_fraction={self.exploration_fraction} must lie in (0, 1]")
        if not self.srank_delta < 1.0:
            raise ValueError(f"srank_delta={self.srank_delta} must lie in [0, 1)")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf")
               for v in self.spr_lr_grid):
            raise ValueError(f"spr_lr_grid={self.spr_lr_grid} must hold positive, finite step sizes")
        if bool(self.spr_lr_grid) != (self.tune_seeds > 0):
            raise ValueError(f"spr_lr_grid={self.spr_lr_grid} and tune_seeds={self.tune_seeds}: give both "
                             "(a grid and at least one development seed) or neither")
        if self.spr_lr_grid and self.spr_lr is not None:
            raise ValueError(f"spr_lr={self.spr_lr} and spr_lr_grid={self.spr_lr_grid}: a fixed α_SPR or a grid "
                             "to tune it over, not both")
        if self.tune_steps and self.tune_steps < self.curve_points:
            raise ValueError(f"tune_steps={self.tune_steps} must be 0 or at least curve_points={self.curve_points}")
        if self.kappa <= 0:
            raise ValueError(f"kappa={self.kappa} must be positive")

    @classmethod
    def quick(cls) -> "Config":
        """Breakout, one seed, the method against Stream Q(λ), 60k steps each."""
        return cls(games=("breakout",), seeds=1, arms=("spr_orth2", "stream_q"), total_steps=60_000)

    @classmethod
    def tiny(cls) -> "Config":
        """A few seconds: 600 steps, a small probe set, in this process."""
        return cls(games=("breakout",), seeds=1, arms=("spr_orth2", "stream_q"), total_steps=600,
                   probe_states=64, curve_points=6, loss_window=600, processes=1)
