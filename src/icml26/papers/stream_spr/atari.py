"""Real Atari 2600 games for the streaming agents (needs the ``atari`` extra: ``ale-py``, ``opencv-python-headless``).

The ROMs ship inside the ``ale-py`` wheel, so nothing is downloaded. :func:`make_atari` builds a game
as the authors' Atari script does (stream-rep-rl, ``make_env`` for ``env_type == "atari"``):
``RecordEpisodeStatistics → NoopReset(30) → MaxAndSkip(4) → EpisodicLife → FireReset → ClipReward →
Resize(84, 84) → GrayScale → FrameStack(4) → ScaleReward → NormalizeObservation``. Here:

1. the raw ALE game with ``frameskip=1`` and the minimal action set; no sticky actions by default
   (their v4 games, ``repeat_action_probability = 0``); ``sticky_action_prob=0.25`` for the v5 protocol.
   Their launcher passes ``Pong-v4`` etc., not ``PongNoFrameskip-v4``: those ids already skip a random
   2–4 frames per step, so under their ``MaxAndSkip(4)`` an agent step lasts 8–16 frames. We keep
   the standard 4 (a defect of theirs not reproduced);
2. gymnasium's ``AtariPreprocessing``: up to ``noop_max`` random no-ops at reset, the action repeated
   ``frame_skip`` times with the max over the last two frames, grayscale, resized to ``screen_size``²
   (``cv2.INTER_AREA``), uint8. It max-pools and converts to gray *before* resizing, with ALE's own
   luminance; their script max-pools RGB frames and resizes before the gray conversion, so a pixel
   can differ by a few grey levels;
3. ``RecordEpisodeStatistics``: raw (unclipped, unscaled) whole-game returns, lengths in agent steps,
   in ``info["episode"]`` when the game is over;
4. :class:`~.atari_wrappers.EpisodicLife` (a lost life is ``terminated``; the game restarts only when it
   is over), :class:`~.atari_wrappers.FireReset` (games whose action 1 is FIRE), and
   :class:`~.atari_wrappers.ClipReward` (sign of the reward), as their script; each can be turned off;
5. ``FrameStackObservation``: the last ``stack`` frames, (stack, H, W) channels-first, the reset
   frame repeated at the start of an episode;
6. ``ScaleReward`` and ``RunningNorm``, the stream-x reward and observation scaling of the MinAtar path.

Episodes are cut at ``max_episode_frames`` emulator frames (108,000 = 30 minutes, the usual cap).
"""

from __future__ import annotations

import difflib
from typing import Any

from icml26.common.argcheck import check_int, check_real
from icml26.common.extras import require

__all__ = ["ATARI_GAMES", "atari_games", "make_atari"]

#: The Atari-100k games (Kaiser et al. 2020), by their ``ale-py`` ROM id; any ROM id is accepted.
ATARI_GAMES = (
    "alien", "amidar", "assault", "asterix", "bank_heist", "battle_zone", "boxing", "breakout",
    "chopper_command", "crazy_climber", "demon_attack", "freeway", "frostbite", "gopher", "hero",
    "jamesbond", "kangaroo", "krull", "kung_fu_master", "ms_pacman", "pong", "private_eye", "qbert",
    "road_runner", "seaquest", "up_n_down",
)


def atari_games() -> tuple[str, ...]:
    """Every ROM id the installed ``ale-py`` ships (108 in 0.12.1), e.g. ``"breakout"``, ``"ms_pacman"``."""
    ale_py = require("ale_py", "atari")
    return tuple(ale_py.roms.get_all_rom_ids())


def _gym_id(game: str) -> str:
    return "ALE/" + "".join(part.capitalize() for part in game.split("_")) + "-v5"


def make_atari(game: str, *, seed: int | None = None, frame_skip: int = 4, noop_max: int = 30,
               screen_size: int = 84, stack: int = 4, sticky_action_prob: float = 0.0,
               terminal_on_life_loss: bool = True, fire_reset: bool = True, clip_rewards: bool = True,
               max_episode_frames: int = 108_000,
               gamma: float = 0.99, normalize_observations: bool = True, scale_rewards: bool = True) -> Any:
    """An Atari game (ROM id, e.g. ``"breakout"``) preprocessed as the authors' Atari script does.

    Args:
        game: an ``ale-py`` ROM id (snake case: ``"breakout"``, ``"ms_pacman"``; see :func:`atari_games`).
        seed: if given, the environment (emulator, no-op draws) and its action space are seeded
            with it now; a later ``reset(seed=…)`` (the agents' first reset) seeds it again.
        frame_skip: agent steps last ``frame_skip`` frames; the observation is the max of the last two.
        noop_max: at most this many random no-op actions after each reset (0: none).
        screen_size: side of the square grayscale frame (84).
        stack: frames stacked into one observation (4).
        sticky_action_prob: ALE's repeat-action probability (0: the v4 games of the scripts).
        terminal_on_life_loss: a lost life ends the episode for learning (``EpisodicLifeEnv``, as
            their script); the agents' episodes are then lives, the game's return is ``info["episode"]``.
        fire_reset: press FIRE after each reset in games whose action 1 is FIRE (their script).
        clip_rewards: rewards replaced by their sign before the scaling (their script).
        max_episode_frames: emulator frames after which an episode is truncated.
        gamma: γ of the reward scaling.
        normalize_observations, scale_rewards: the stream-x ``RunningNorm`` / ``ScaleReward``
            (turn both off to get the uint8 frames).

    Returns:
        a gymnasium environment with observations (stack, screen_size, screen_size): float32
        normalized, or uint8 with ``normalize_observations=False``.
    """
    if not isinstance(game, str):
        raise TypeError(f"game must be an Atari ROM id (a string such as 'breakout'), got {type(game).__name__}")
    if seed is not None:
        check_int(seed, "seed", low=0)
    check_int(frame_skip, "frame_skip", low=1)
    check_int(noop_max, "noop_max", low=0)
    check_int(screen_size, "screen_size", low=8)
    check_int(stack, "stack", low=1)
    check_real(sticky_action_prob, "sticky_action_prob", low=0.0, high=1.0)
    check_int(max_episode_frames, "max_episode_frames", low=1)
    check_real(gamma, "gamma", low=0.0, high=1.0)
    gym = require("gymnasium", "rl")
    ale_py = require("ale_py", "atari")
    require("cv2", "atari")
    games = ale_py.roms.get_all_rom_ids()
    if game not in games:
        key = game.split("/")[-1].split("-")[0].replace("NoFrameskip", "")
        key = "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_")
        near = difflib.get_close_matches(key, games, n=3, cutoff=0.6)
        raise ValueError(f"unknown Atari game={game!r}: not an ale-py ROM id (snake case, e.g. 'breakout', "
                         f"'ms_pacman')" + (f"; did you mean {', '.join(near)}?" if near else ""))
    gym.register_envs(ale_py)
    env = gym.make(_gym_id(game), frameskip=1, repeat_action_probability=float(sticky_action_prob),
                   full_action_space=False, max_num_frames_per_episode=int(max_episode_frames),
                   disable_env_checker=True)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=frame_skip, screen_size=screen_size,
                                          terminal_on_life_loss=False, grayscale_obs=True)
    env = gym.wrappers.RecordEpisodeStatistics(env)  # whole games, raw returns, lengths in agent steps
    from .atari_wrappers import ClipReward, EpisodicLife, FireReset

    if terminal_on_life_loss:
        env = EpisodicLife(env)
    meanings = env.unwrapped.get_action_meanings()
    if fire_reset and len(meanings) >= 3 and meanings[1] == "FIRE":
        env = FireReset(env)
    if clip_rewards:
        env = ClipReward(env)
    env = gym.wrappers.FrameStackObservation(env, stack)
    from .wrappers import RunningNorm, ScaleReward

    if scale_rewards:
        env = ScaleReward(env, gamma=gamma)
    if normalize_observations:
        env = RunningNorm(env)
    if seed is not None:
        # Seed the emulator and the no-op draws (both live in the innermost env) without a wrapped
        # reset, which would feed one observation to the running normalizer.
        env.unwrapped.reset(seed=int(seed))
        env.action_space.seed(int(seed))
    return env
