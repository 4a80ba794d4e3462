"""The life-loss, fire-reset and reward-clipping wrappers of the authors' Atari script (needs ``rl``).

stream-rep-rl's Atari ``make_env`` stacks the usual DQN wrappers (as in CleanRL's ``atari_wrappers``):
``EpisodicLifeEnv`` (a lost life is a terminal for learning, the game is only reset when it is over),
``FireResetEnv`` (press FIRE after every reset in games that need it) and ``ClipRewardEnv`` (sign of
the reward). These are those three, written for gymnasium 1.x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.common.extras import require

gym = require("gymnasium", "rl")

__all__ = ["ClipReward", "EpisodicLife", "FireReset"]


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode (``terminated``); ``reset`` restarts the game only once it is over.

    After a life loss, ``reset`` takes one no-op step instead, so the game goes on from where it was.
    ``game_over`` says whether the last ``terminated`` was the real end of the game.
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the no-op ended the game
                obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        self.game_over = False
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE (then action 2) after each reset, for games that wait for it (Breakout …)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(f"FireReset needs a game whose action 1 is FIRE, got actions {meanings}")

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class ClipReward(gym.RewardWrapper):
    """Rewards replaced by their sign (−1, 0, +1)."""

    def reward(self, reward):
        return float(np.sign(reward))
