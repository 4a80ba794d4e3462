"""stream_spr on real Atari ROMs: make_atari's preprocessing, determinism, the Atari-sized networks,
and the CPU benchmark's replay-buffer arithmetic. Skipped with the install line when the ``atari``
extra (ale-py, opencv-python-headless) is missing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.common.extras import extra_installed, install_hint
from icml26.papers.stream_spr import StreamQ, StreamQSPR, build_network
from icml26.papers.stream_spr.atari_bench import replay_buffer_bytes

needs_atari = pytest.mark.skipif(not extra_installed("atari"), reason=f"needs the atari extra: {install_hint('atari')}")


def _make(**kw):
    from icml26.papers.stream_spr import make_atari

    return make_atari(**kw)


def test_replay_buffer_bytes_is_the_stated_formula():
    assert replay_buffer_bytes(100_000) == {"frames_once": 100_000 * 84 * 84, "stacked_pairs": 100_000 * 8 * 84 * 84}
    assert replay_buffer_bytes(1_000_000)["frames_once"] == 7_056_000_000
    with pytest.raises(ValueError, match="capacity"):
        replay_buffer_bytes(0)


def test_atari_network_sizes():
    net = build_network((4, 84, 84), 6, architecture="atari")
    assert net.encoder.latent_shape == (64, 7, 7)
    assert net.hidden[1].out_features == 256
    assert net(torch.zeros(2, 4, 84, 84)).shape == (2, 6)
    # MinAtar stays the default
    assert build_network((10, 10, 4), 3).encoder.latent_shape == (16, 8, 8)


@needs_atari
def test_an_episode_runs_with_uint8_frames_and_raw_returns():
    env = _make(game="breakout", seed=0, normalize_observations=False, scale_rewards=False,
                terminal_on_life_loss=False, clip_rewards=False)
    obs, _ = env.reset()
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert env.observation_space.shape == (4, 84, 84)
    rng = np.random.default_rng(0)
    for t in range(5000):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        if terminated or truncated:
            break
    assert terminated, "a random Breakout episode ends (all lives lost) within 5000 agent steps"
    assert info["episode"]["l"] == t + 1 + 2  # agent steps (not frames), with FireReset's two presses
    assert float(info["episode"]["r"]) >= 0.0


@needs_atari
def test_scaled_observations_are_float32_and_finite():
    env = _make(game="pong", seed=1)
    obs, _ = env.reset()
    assert obs.shape == (4, 84, 84) and obs.dtype == np.float32
    for _ in range(20):
        obs, reward, *_ = env.step(0)
        assert obs.dtype == np.float32 and np.isfinite(obs).all() and np.isfinite(reward)


@needs_atari
def test_same_seed_same_frames_and_rewards():
    runs = []
    for _ in range(2):
        env = _make(game="breakout", seed=7, normalize_observations=False)
        obs, _ = env.reset()
        frames, rewards = [obs], []
        actions = np.random.default_rng(3).integers(env.action_space.n, size=300)
        for a in actions:
            obs, r, term, trunc, _ = env.step(int(a))
            frames.append(obs)
            rewards.append(r)
            if term or trunc:
                obs, _ = env.reset()
                frames.append(obs)
        runs.append((np.stack(frames), np.array(rewards)))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert runs[0][0].std() > 0


@needs_atari
def test_preprocessing_matches_a_hand_computation():
    """The last stacked frame = resize(max(gray frame 3, gray frame 4 of the skip), 84x84, INTER_AREA)."""
    import ale_py
    import cv2
    import gymnasium as gym

    gym.register_envs(ale_py)
    env = _make(game="breakout", seed=None, noop_max=0, normalize_observations=False, scale_rewards=False,
                terminal_on_life_loss=False, fire_reset=False, clip_rewards=False)
    raw = gym.make("ALE/Breakout-v5", frameskip=1, repeat_action_probability=0.0, full_action_space=False)
    obs, _ = env.reset(seed=11)
    raw.reset(seed=11)
    ale = raw.unwrapped.ale
    first = cv2.resize(ale.getScreenGrayscale(), (84, 84), interpolation=cv2.INTER_AREA)
    assert all(np.array_equal(frame, first) for frame in obs)  # the stack starts as copies of the reset frame
    # a gray screen is the luminance of the RGB screen (ALE's palette), to within rounding
    rgb = ale.getScreenRGB().astype(np.float64)
    lum = rgb @ np.array([0.299, 0.587, 0.114])
    assert np.abs(lum - ale.getScreenGrayscale()).max() <= 1.0
    previous = obs
    for action in (1, 2, 2, 3, 1):
        obs, *_ = env.step(action)
        screens = []
        for _ in range(4):
            raw.step(action)
            screens.append(ale.getScreenGrayscale())
        pooled = np.maximum(screens[-2], screens[-1])
        assert np.array_equal(obs[-1], cv2.resize(pooled, (84, 84), interpolation=cv2.INTER_AREA))
        assert np.array_equal(obs[:-1], previous[1:])  # the stack shifts by one frame
        previous = obs


@needs_atari
def test_a_lost_life_is_terminal_and_the_game_goes_on():
    """The authors' EpisodicLife + FireReset + ClipReward: lives are episodes, rewards are signs."""
    from icml26.papers.stream_spr.atari_wrappers import EpisodicLife

    env = _make(game="breakout", seed=2, normalize_observations=False, scale_rewards=False)
    env.reset()
    life = env.unwrapped.ale.lives()
    wrapper = env
    while not isinstance(wrapper, EpisodicLife):
        wrapper = wrapper.env
    rng = np.random.default_rng(0)
    for _ in range(3000):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        assert reward in (-1.0, 0.0, 1.0)
        if terminated:
            break
    assert terminated and not wrapper.game_over and env.unwrapped.ale.lives() == life - 1
    assert "episode" not in info  # the game is not over, so no whole-game return yet
    env.reset()
    assert env.unwrapped.ale.lives() == life - 1  # the game went on, not restarted


@needs_atari
def test_unknown_game_is_refused_naming_it():
    with pytest.raises(ValueError, match="game='pongg'.*pong"):
        _make(game="pongg")


@needs_atari
@pytest.mark.parametrize("agent", [StreamQ, StreamQSPR])
def test_agents_train_on_atari_with_the_atari_network(agent):
    torch.set_num_threads(1)
    env = _make(game="breakout", seed=0)
    a = agent(env, architecture="atari", exploration_steps=100, seed=0)
    assert a.network.encoder.latent_shape == (64, 7, 7)
    if agent is StreamQSPR:
        assert a.spr.predictor.in_features == 256  # stream-rep-rl's Atari projection width
    log = a.learn(30, progress=False)
    assert all(torch.isfinite(p).all() for p in a.network.parameters())
    assert log is not None


class _Game:
    """A 6-step game paying 2 a step whose 3rd step loses a life (a learning terminal, not the end)."""

    def __init__(self):
        import gymnasium as gym

        outer = self
        self.t = 0

        class Game(gym.Env):
            observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
            action_space = gym.spaces.Discrete(2)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                outer.t = 0
                return np.zeros(2, np.float32), {}

            def step(self, action):
                outer.t += 1
                return np.zeros(2, np.float32), 2.0, outer.t == 6, False, {}

        class LifeLoss(gym.Wrapper):
            def step(self, action):
                obs, r, term, trunc, info = self.env.step(action)
                return obs, r / 2.0, term or outer.t == 3, trunc, info  # scaled rewards, as the stream-x wrappers

            def reset(self, **kw):
                if 0 < outer.t < 6:  # the game goes on after a lost life
                    return np.zeros(2, np.float32), {}
                return self.env.reset(**kw)

        self.with_stats = LifeLoss(gym.wrappers.RecordEpisodeStatistics(Game()))
        self.without_stats = LifeLoss(Game())


@pytest.mark.parametrize("stats", [True, False])
def test_logged_episodes_are_whole_games_under_life_loss(stats):
    """With RecordEpisodeStatistics, a lost life logs nothing and the game logs its raw return and
    length; without it, every terminal logs the sum of the rewards the agent saw."""
    from icml26.papers.stream_spr.agents import _Interaction

    game = _Game()
    io = _Interaction(game.with_stats if stats else game.without_stats, seed=0, device=torch.device("cpu"))
    io.current()
    logged = []
    for _ in range(12):  # two games
        nxt, _, term, trunc, ret, length = io.advance(0)
        if ret is not None:
            logged.append((ret, length))
        io.finish(nxt, term or trunc)
    assert logged == ([(12.0, 6)] * 2 if stats else [(3.0, 3), (3.0, 3)] * 2)
