"""Human-normalised Atari scores and their aggregate across games and seeds.

The reference scores are the random-agent and human scores of the Atari-100k games as tabulated
for Atari-57 by Mnih et al. (2015) and Badia et al. (2020, Agent57), the table DQN Zoo and
``rliable`` (Agarwal et al. 2021) use. A score ``s`` on game ``g`` is normalised as
``(s − random_g) / (human_g − random_g)``: 0 is a uniformly random policy, 1 a human tester.
The aggregate is the interquartile mean over every (seed, game) score with the stratified-bootstrap
interval of Agarwal et al. 2021 (:mod:`icml26.common.stats`).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from icml26.common.stats import BootstrapInterval, interquartile_mean, stratified_bootstrap_interval

__all__ = ["REFERENCE_SCORES", "human_normalized", "iqm_difference", "iqm_interval", "score_table"]

#: Atari-100k game (ale-py ROM id) → (random score, human score).
REFERENCE_SCORES: dict[str, tuple[float, float]] = {
    "alien": (227.8, 7127.7), "amidar": (5.8, 1719.5), "assault": (222.4, 742.0), "asterix": (210.0, 8503.3),
    "bank_heist": (14.2, 753.1), "battle_zone": (2360.0, 37187.5), "boxing": (0.1, 12.1), "breakout": (1.7, 30.5),
    "chopper_command": (811.0, 7387.8), "crazy_climber": (10780.5, 35829.4), "demon_attack": (152.1, 1971.0),
    "freeway": (0.0, 29.6), "frostbite": (65.2, 4334.7), "gopher": (257.6, 2412.5), "hero": (1027.0, 30826.4),
    "jamesbond": (29.0, 302.8), "kangaroo": (52.0, 3035.0), "krull": (1598.0, 2665.5),
    "kung_fu_master": (258.5, 22736.3), "ms_pacman": (307.3, 6951.6), "pong": (-20.7, 14.6),
    "private_eye": (24.9, 69571.3), "qbert": (163.9, 13455.0), "road_runner": (11.5, 7845.0),
    "seaquest": (68.4, 42054.7), "up_n_down": (533.4, 11693.2),
}


def human_normalized(game: str, score: float) -> float:
    """``(score − random) / (human − random)`` for an Atari-100k ``game`` (ROM id)."""
    if game not in REFERENCE_SCORES:
        raise ValueError(f"game={game!r} has no reference scores here; one of {', '.join(REFERENCE_SCORES)}")
    if not math.isfinite(float(score)):
        raise ValueError(f"score={score!r} must be finite")
    random, human = REFERENCE_SCORES[game]
    return (float(score) - random) / (human - random)


def score_table(scores: Mapping[str, Sequence[float]], games: Sequence[str]) -> np.ndarray:
    """The (seeds, games) table of human-normalised scores, columns in ``games`` order.

    ``scores[game]`` holds one raw score per seed; every game needs the same number of seeds.
    """
    if not games:
        raise ValueError("games must name at least one game")
    lengths = {g: len(scores.get(g, ())) for g in games}
    if len(set(lengths.values())) != 1 or 0 in lengths.values():
        raise ValueError(f"every game needs the same, non-zero number of seeds; got {lengths}")
    return np.array([[human_normalized(g, s) for s in scores[g]] for g in games]).T


def iqm_interval(table: np.ndarray, *, reps: int = 2000, seed: int = 0) -> BootstrapInterval:
    """IQM of a (seeds, games) table with its 95 % stratified-bootstrap interval."""
    return stratified_bootstrap_interval(table, interquartile_mean, reps=reps, seed=seed)


def iqm_difference(method: np.ndarray, baseline: np.ndarray, *, reps: int = 2000, seed: int = 0) -> BootstrapInterval:
    """IQM(method) − IQM(baseline), both (seeds, games), with its 95 % stratified-bootstrap interval.

    Every (arm, game) column is resampled on its own: the arms' runs are independent draws.
    """
    a, b = np.asarray(method, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"method {a.shape} and baseline {b.shape} must be (seeds, games) tables of one shape")
    games = a.shape[1]

    def difference(t: np.ndarray) -> float:
        return interquartile_mean(t[:, :games]) - interquartile_mean(t[:, games:])

    return stratified_bootstrap_interval(np.hstack([a, b]), difference, reps=reps, seed=seed)
