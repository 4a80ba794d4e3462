"""Gymnasium wrappers and environment factories for streaming agents (needs the ``rl`` extra).

* :class:`RunningNorm`: observations normalized by Welford statistics updated with
  every observation *before* it is normalized, the reset observation included.
* :class:`ScaleReward`: rewards divided by the running standard deviation of the
  discounted return (no mean subtracted).
* :func:`stream_wrappers`: ``RecordEpisodeStatistics → ScaleReward → RunningNorm``, as in
  Elsayed et al. 2024, so the ``info["episode"]["r"]`` the agents log is the raw return.
* :func:`make_minatar`: a MinAtar game through gymnasium 1.x, which no longer loads the
  ``gymnasium.envs`` entry point: MinAtar is registered explicitly here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.common.extras import require

from icml26.common.argcheck import check_real

from .games import MINATAR_GAMES
from .normalization import RewardScaler, WelfordStats

gym = require("gymnasium", "rl")

__all__ = ["MINATAR_GAMES", "RunningNorm", "ScaleReward", "find_wrapper", "make_minatar", "stream_wrappers"]


class RunningNorm(gym.ObservationWrapper):
    """Normalize observations with running Welford statistics: (o − μ)/√(σ² + ε)."""

    def __init__(self, env: Any, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        shape = env.observation_space.shape
        if shape is None:
            raise ValueError("RunningNorm needs an observation space with a shape (Box)")
        self.stats = WelfordStats(shape)
        self.epsilon = check_real(epsilon, "epsilon", low=0.0)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=shape, dtype=np.float32)

    def normalize(self, obs: np.ndarray, update: bool = True) -> np.ndarray:
        """Normalize one observation; ``update=False`` leaves the statistics as they are."""
        if update:
            self.stats.update(obs)
        return self.stats.normalize(obs, self.epsilon).astype(np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return self.normalize(observation, update=True)


class ScaleReward(gym.Wrapper):
    """Divide each reward by √(Var(u) + ε), u the discounted-return trace (reset at done)."""

    def __init__(self, env: Any, gamma: float = 0.99, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        self.scaler = RewardScaler(gamma, epsilon)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        scaled = self.scaler.scale(float(reward), bool(terminated or truncated))
        return obs, scaled, terminated, truncated, info


def stream_wrappers(env: Any, gamma: float = 0.99, *, normalize_observations: bool = True,
                    scale_rewards: bool = True) -> Any:
    """Wrap ``env`` as Elsayed's streaming agents expect (raw returns in ``info["episode"]``)."""
    env = gym.wrappers.RecordEpisodeStatistics(env)
    if scale_rewards:
        env = ScaleReward(env, gamma=gamma)
    if normalize_observations:
        env = RunningNorm(env)
    return env


def find_wrapper(env: Any, kind: type) -> Any | None:
    """The first wrapper of type ``kind`` in ``env``'s chain, or ``None``."""
    if not isinstance(kind, type):
        raise TypeError(f"kind must be a wrapper class (e.g. RunningNorm), got {kind!r}")
    while env is not None:
        if isinstance(env, kind):
            return env
        env = getattr(env, "env", None)
    return None


def make_minatar(game: str, *, sticky_action_prob: float = 0.1, difficulty_ramping: bool = True) -> Any:
    """A MinAtar game (``"breakout"``, ``"space_invaders"`` …) as a gymnasium environment.

    Observations are bool arrays (10, 10, C); no time limit is registered (Freeway ends
    itself after 2500 frames). Seed it with the first ``reset(seed=…)``.
    """
    if game not in MINATAR_GAMES:
        raise ValueError(f"unknown MinAtar game {game!r}; choose one of {', '.join(MINATAR_GAMES)}")
    check_real(sticky_action_prob, "sticky_action_prob", low=0.0, high=1.0)
    require("minatar", "rl")
    import minatar.gym

    if MINATAR_GAMES[game] not in gym.registry:
        minatar.gym.register_envs()
    return gym.make(MINATAR_GAMES[game], sticky_action_prob=sticky_action_prob,
                    difficulty_ramping=difficulty_ramping, disable_env_checker=True)
