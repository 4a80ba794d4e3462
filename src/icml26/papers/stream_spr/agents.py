"""Streaming agents of Elsayed et al. 2024 (arXiv 2410.14606): the baselines of Nilaksh et al. 2026.

Each agent learns from one transition at a time, with no replay buffer and no target
network, through :class:`~icml26.papers.stream_spr.optim.ObGD`:

**Stream Q(λ)** (:class:`StreamQ`, Watkins, ε-greedy), every step:
1. act ε-greedily on q(s, ·); the action is *non-greedy* when the random draw differs
   from the argmax;
2. δ = r̃ + γ(1−terminated)·max_a' q(s', a') − q(s, a)   (both with the current θ);
3. z ← γλ·z + ∇θ q(s, a);  θ ← θ + α̂·δ·z with ObGD's α̂;
4. z ← 0 *after* the update if the episode ended (terminated or truncated) or the
   action was non-greedy (Watkins' cut; streaming-drl issue #9).

**Stream SARSA(λ)** (:class:`StreamSarsa`): the same with the on-policy target
q(s', a'), a' the next action actually taken; traces reset only at episode end.

**Stream AC(λ)** (:class:`StreamAC`, discrete actions): separate value and policy
networks, each with its own ObGD (κ_v = 2, κ_π = 3) and the same δ = r̃ + γ(1−term)v(s') − v(s);
value trace on ∇v(s), policy trace on ∇[log π(a|s) + c·sign(δ)·H(π(·|s))], c = 0.01;
traces reset only at episode end.

Each agent owns a gymnasium environment (wrap it with
:func:`~icml26.papers.stream_spr.wrappers.stream_wrappers` for normalized observations and
scaled rewards), and has ``step()`` (one interaction and one update) and
``learn(total_steps)`` (with a progress bar). Observations may be vectors or images.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.progress import progress as _progress

from .networks import Architecture, StreamNetwork, build_network
from icml26.common.argcheck import check_int, check_real

from .optim import ObGD, ObGDStep

__all__ = [
    "EpisodeRecord",
    "LearnLog",
    "StepInfo",
    "StreamAC",
    "StreamQ",
    "StreamSarsa",
    "epsilon_greedy",
    "learn_loop",
    "linear_epsilon",
    "q_lambda_update",
]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class StepInfo:
    """One environment step and its update."""

    step: int
    """Index of the step (0-based, counted over the agent's life)."""
    action: int
    reward: float
    """The reward the agent learned from (scaled when ``ScaleReward`` wraps the env)."""
    terminated: bool
    truncated: bool
    nongreedy: bool
    """The ε-branch picked an action other than the argmax (Watkins' trace cut)."""
    td_error: float
    step_size: float
    """ObGD's α̂ (for AC: the value optimizer's)."""
    episode_return: float | None = None
    """The episode's raw return (``info["episode"]["r"]``) when this step ended one."""
    episode_length: int | None = None
    spr_active: bool = False
    """StreamQSPR: the SPR update ran on this step."""
    spr_loss: float | None = None
    cos_before: float | None = None
    """StreamQSPR: cos(SPR encoder update, ObGD encoder update) before orth²."""
    cos_after: float | None = None
    """StreamQSPR: the same cosine after orth² (≈ 0 when ``orth2=True``)."""


@dataclasses.dataclass(frozen=True)
class EpisodeRecord:
    end_step: int
    ret: float
    length: int


@dataclasses.dataclass
class LearnLog:
    """What ``learn`` saw: finished episodes, wall time and throughput."""

    episodes: list[EpisodeRecord] = dataclasses.field(default_factory=list)
    steps: int = 0
    wall_time_s: float = 0.0

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_time_s if self.wall_time_s > 0 else float("nan")


def linear_epsilon(step: int, *, start: float, end: float, duration: int) -> float:
    """ε annealed linearly from ``start`` to ``end`` over ``duration`` steps, then held."""
    if duration <= 0:
        return end
    frac = min(step / duration, 1.0)
    return start + frac * (end - start)


def epsilon_greedy(q_values: torch.Tensor, epsilon: float, rng: np.random.Generator) -> tuple[int, bool]:
    """(action, nongreedy) from q_values (A,) or (1, A) as in Elsayed's ``sample_action``."""
    greedy = int(torch.argmax(q_values.detach().reshape(-1)))
    if rng.random() < epsilon:
        action = int(rng.integers(q_values.numel()))
        return action, action != greedy
    return greedy, False


def q_lambda_update(optimizer: ObGD, q_sa: torch.Tensor, target_q: torch.Tensor | float, reward: float, *,
                    gamma: float, terminated: bool, reset: bool,
                    return_updates: bool = False) -> tuple[float, ObGDStep]:
    """One Stream Q(λ)/SARSA(λ) update from a prediction that still carries its graph.

    Args:
        optimizer: the ObGD (or TraceSGD / AdaptiveObGD) over the network's parameters.
        q_sa: q(s, a), a scalar tensor computed with the current θ (graph attached).
        target_q: max_a' q(s', a') (Q-learning) or q(s', a') (SARSA), no graph needed.
        reward: r̃.
        gamma: γ.
        terminated: the episode terminated at s' (no bootstrap; truncation still bootstraps).
        reset: zero the traces after the update (episode end, or a non-greedy action).
        return_updates: also return Δθ per parameter (for orth²).

    Returns:
        (δ, what the optimizer did).
    """
    check_real(gamma, "gamma", low=0.0, high=1.0)
    check_real(reward, "reward")
    if not isinstance(q_sa, torch.Tensor):
        raise TypeError(f"q_sa must be the prediction q(s, a) as a tensor with its graph, got {type(q_sa).__name__}")
    q_value = float(q_sa.detach())
    if not math.isfinite(q_value):
        raise ValueError(f"q_sa={q_value} is not finite; the network diverged or its input holds NaN")
    bootstrap = 0.0
    if not terminated:
        try:
            target = float(target_q)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"target_q={target_q!r} must be a number or a one-element tensor") from None
        if not math.isfinite(target):
            raise ValueError(f"target_q={target} is not finite; the network diverged or its input holds NaN")
        bootstrap = gamma * target
    # δ = r + γ (1 − term) q(s', ·) − q(s, a)
    delta = reward + bootstrap - q_value
    optimizer.zero_grad(set_to_none=False)
    q_sa.backward()
    return delta, optimizer.step(delta, reset=reset, return_updates=return_updates)


def _discrete_n(env: Any) -> int:
    if not hasattr(env, "action_space") or not hasattr(env, "step"):
        raise TypeError(f"env must be a gymnasium environment (with action_space, reset, step), got "
                        f"{type(env).__name__}")
    n = getattr(env.action_space, "n", None)
    if n is None:
        raise ValueError(f"this agent needs a Discrete action space, got {env.action_space!r}")
    return int(n)


def _obs_shape(env: Any) -> tuple[int, ...]:
    shape = getattr(env.observation_space, "shape", None)
    if not shape:
        raise ValueError(f"observations need a shape (a Box space), got {env.observation_space!r}")
    return tuple(shape)


def _torch_generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def _has_episode_statistics(env: Any) -> bool:
    """Whether ``env``'s wrapper chain holds gymnasium's ``RecordEpisodeStatistics``."""
    while env is not None:
        if any(c.__name__ == "RecordEpisodeStatistics" for c in type(env).__mro__):
            return True
        env = getattr(env, "env", None)
    return False


class _Interaction:
    """Environment bookkeeping shared by the agents: resets, tensors, episode returns.

    The logged episodes are the environment's own: with ``RecordEpisodeStatistics`` in the chain,
    an episode is logged only when that wrapper reports one (``info["episode"]``: the raw return and
    length of a whole game), so a learning terminal that is not the game's end (a lost life under
    ``EpisodicLife``) logs nothing. Without it, the sum of the rewards the agent sees is logged at
    every terminal.
    """

    def __init__(self, env: Any, seed: int, device: torch.device) -> None:
        self.env = env
        self.seed = seed
        self.device = device
        self.obs: torch.Tensor | None = None
        self.episode_return = 0.0
        self.episode_length = 0
        self.game_statistics = _has_episode_statistics(env)

    def tensor(self, obs: Any) -> torch.Tensor:
        return torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.device).unsqueeze(0)

    def current(self) -> torch.Tensor:
        if self.obs is None:
            obs, _ = self.env.reset(seed=self.seed)
            self.obs = self.tensor(obs)
        return self.obs

    def advance(self, action: int):
        """env.step → (next_obs tensor, reward, terminated, truncated, raw return or None, length)."""
        next_obs, reward, terminated, truncated, info = self.env.step(action)
        reward = float(reward)
        self.episode_return += reward
        self.episode_length += 1
        ret = length = None
        if terminated or truncated:
            episode = info.get("episode") if isinstance(info, dict) else None
            if episode is not None:
                ret = float(np.asarray(episode["r"]).reshape(-1)[0])
                length = int(np.asarray(episode["l"]).reshape(-1)[0])
            elif not self.game_statistics:
                ret, length = self.episode_return, self.episode_length
        return self.tensor(next_obs), reward, bool(terminated), bool(truncated), ret, length

    def finish(self, next_obs: torch.Tensor, done: bool) -> None:
        if done:
            obs, _ = self.env.reset()
            self.obs = self.tensor(obs)
            self.episode_return, self.episode_length = 0.0, 0
        else:
            self.obs = next_obs


def learn_loop(step: Callable[[], StepInfo], total_steps: int, *, progress: bool | None = None,
               desc: str = "learn", callback: Callable[[StepInfo], None] | None = None,
               position: int | None = None) -> LearnLog:
    """Call ``step`` ``total_steps`` times with a progress bar; collect episodes and timing.

    ``position`` places the bar (several learners in parallel processes).
    """
    check_int(total_steps, "total_steps", low=0)
    record = LearnLog()
    start = time.perf_counter()
    with _progress(total=total_steps, desc=desc, enabled=progress, mininterval=1.0, position=position) as bar:
        for _ in range(total_steps):
            info = step()
            if info.episode_return is not None:
                record.episodes.append(EpisodeRecord(info.step, info.episode_return, info.episode_length or 0))
                bar.set_postfix(ret=f"{info.episode_return:.1f}", refresh=False)
            if callback is not None:
                callback(info)
            bar.update(1)
    record.steps = total_steps
    record.wall_time_s = time.perf_counter() - start
    return record


class _EpsilonGreedyAgent:
    """Plumbing shared by the ε-greedy value agents (network, ObGD, ε schedule, interaction)."""

    def _init_value_agent(self, env: Any, network: StreamNetwork | None, *, lr: float, gamma: float,
                          lamda: float, kappa: float, epsilon_start: float, epsilon_end: float,
                          exploration_steps: int, seed: int, device: torch.device | str | None,
                          generator: torch.Generator | None = None, **network_kwargs: Any) -> None:
        check_real(epsilon_start, "epsilon_start", low=0.0, high=1.0)
        check_real(epsilon_end, "epsilon_end", low=0.0, high=1.0)
        if not 0.0 <= epsilon_end <= epsilon_start <= 1.0:
            raise ValueError(f"need 0 <= epsilon_end ({epsilon_end}) <= epsilon_start ({epsilon_start}) <= 1")
        check_int(exploration_steps, "exploration_steps", low=1)
        check_int(seed, "seed", low=0)
        self.n_actions = _discrete_n(env)
        if network is None:
            network = build_network(_obs_shape(env), self.n_actions, **network_kwargs,
                                    generator=_torch_generator(seed) if generator is None else generator,
                                    device=device)
        self.network = network
        self.device = next(network.parameters()).device
        self.optimizer = ObGD(network.parameters(), lr=lr, gamma=gamma, lamda=lamda, kappa=kappa)
        self.gamma = gamma
        self.epsilon_start, self.epsilon_end, self.exploration_steps = epsilon_start, epsilon_end, exploration_steps
        self.rng = np.random.default_rng(seed)
        self.io = _Interaction(env, seed, self.device)
        self.t = 0

    @property
    def env(self) -> Any:
        return self.io.env

    @property
    def epsilon(self) -> float:
        return linear_epsilon(self.t, start=self.epsilon_start, end=self.epsilon_end,
                              duration=self.exploration_steps)


class StreamQ(_EpsilonGreedyAgent):
    """Stream Q(λ) (Elsayed et al. 2024) on any environment with a Discrete action space.

    Args:
        env: a gymnasium environment, ideally wrapped with ``stream_wrappers(env, gamma)``.
        network: a :class:`StreamNetwork` mapping (batch, *obs) to (batch, A); default
            Elsayed's network (conv for images, dense for vectors), sparse-initialized.
        lr: ObGD's α (Elsayed: 1.0).
        gamma, lamda, kappa: γ, λ, κ of ObGD (Elsayed: 0.99, 0.8, 2.0).
        epsilon_start, epsilon_end, exploration_steps: linear ε schedule (Elsayed: 1 → 0.01
            over 20 % of the run on MinAtar).
        seed: seeds the environment's first reset, the ε draws and the initialization.
        device: where the network lives (default: CPU, or the given network's device).
        architecture: the default network's size: ``"minatar"`` or ``"atari"`` (the Nature trunk
            with a 256-unit head, for :func:`make_atari`'s (stack, 84, 84) frames).
    """

    def __init__(self, env: Any, *, network: StreamNetwork | None = None, lr: float = 1.0, gamma: float = 0.99,
                 lamda: float = 0.8, kappa: float = 2.0, epsilon_start: float = 1.0, epsilon_end: float = 0.01,
                 exploration_steps: int = 1_000_000, seed: int = 0,
                 device: torch.device | str | None = None, architecture: Architecture = "minatar") -> None:
        self._init_value_agent(env, network, lr=lr, gamma=gamma, lamda=lamda, kappa=kappa,
                               epsilon_start=epsilon_start, epsilon_end=epsilon_end,
                               exploration_steps=exploration_steps, seed=seed, device=device,
                               architecture=architecture)

    def step(self) -> StepInfo:
        """Act ε-greedily, step the environment, take one Q(λ) update."""
        obs = self.io.current()
        q_all = self.network(obs)[0]  # the act-time forward is reused for the update
        action, nongreedy = epsilon_greedy(q_all, self.epsilon, self.rng)
        next_obs, reward, terminated, truncated, ret, length = self.io.advance(action)
        done = terminated or truncated
        with torch.no_grad():
            next_max = self.network(next_obs)[0].max()
        delta, info = q_lambda_update(self.optimizer, q_all[action], next_max, reward, gamma=self.gamma,
                                      terminated=terminated, reset=done or nongreedy)
        self.io.finish(next_obs, done)
        out = StepInfo(self.t, action, reward, terminated, truncated, nongreedy, delta, info.step_size, ret, length)
        self.t += 1
        return out

    def learn(self, total_steps: int, *, progress: bool | None = None,
              callback: Callable[[StepInfo], None] | None = None) -> LearnLog:
        """Run ``total_steps`` steps (a progress bar on a terminal); return the episodes seen."""
        return learn_loop(self.step, total_steps, progress=progress, desc="StreamQ", callback=callback)


class StreamSarsa(_EpsilonGreedyAgent):
    """Stream SARSA(λ) (Elsayed et al. 2024): on-policy target q(s', a'), traces reset at episode end.

    Arguments as :class:`StreamQ` (Elsayed's default exploration fraction is 5 %).
    """

    def __init__(self, env: Any, *, network: StreamNetwork | None = None, lr: float = 1.0, gamma: float = 0.99,
                 lamda: float = 0.8, kappa: float = 2.0, epsilon_start: float = 1.0, epsilon_end: float = 0.01,
                 exploration_steps: int = 250_000, seed: int = 0,
                 device: torch.device | str | None = None) -> None:
        self._init_value_agent(env, network, lr=lr, gamma=gamma, lamda=lamda, kappa=kappa,
                               epsilon_start=epsilon_start, epsilon_end=epsilon_end,
                               exploration_steps=exploration_steps, seed=seed, device=device)
        self._next_action: tuple[int, bool] | None = None

    def step(self) -> StepInfo:
        obs = self.io.current()
        q_all = self.network(obs)[0]
        if self._next_action is None:
            self._next_action = epsilon_greedy(q_all, self.epsilon, self.rng)
        action, nongreedy = self._next_action
        next_obs, reward, terminated, truncated, ret, length = self.io.advance(action)
        done = terminated or truncated
        with torch.no_grad():
            q_next = self.network(next_obs)[0]
        # a' is drawn at s' with the pre-update θ (Elsayed's loop), and is the next action taken.
        next_action = epsilon_greedy(q_next, linear_epsilon(self.t + 1, start=self.epsilon_start,
                                                            end=self.epsilon_end,
                                                            duration=self.exploration_steps), self.rng)
        delta, info = q_lambda_update(self.optimizer, q_all[action], q_next[next_action[0]], reward,
                                      gamma=self.gamma, terminated=terminated, reset=done)
        self._next_action = None if done else next_action
        self.io.finish(next_obs, done)
        out = StepInfo(self.t, action, reward, terminated, truncated, nongreedy, delta, info.step_size, ret, length)
        self.t += 1
        return out

    def learn(self, total_steps: int, *, progress: bool | None = None,
              callback: Callable[[StepInfo], None] | None = None) -> LearnLog:
        return learn_loop(self.step, total_steps, progress=progress, desc="StreamSarsa", callback=callback)


class StreamAC:
    """Stream AC(λ) (Elsayed et al. 2024) for Discrete action spaces.

    Args:
        env: a gymnasium environment with a Discrete action space.
        policy, value: networks mapping (batch, *obs) to (batch, A) logits and (batch, 1).
        lr: α of both ObGDs (Elsayed: 1.0).
        kappa_policy, kappa_value: κ_π = 3 and κ_v = 2 (Elsayed).
        entropy_coeff: c, multiplied by sign(δ) in the policy trace (Elsayed: 0.01).
    """

    def __init__(self, env: Any, *, policy: StreamNetwork | None = None, value: StreamNetwork | None = None,
                 lr: float = 1.0, gamma: float = 0.99, lamda: float = 0.8, kappa_policy: float = 3.0,
                 kappa_value: float = 2.0, entropy_coeff: float = 0.01, seed: int = 0,
                 device: torch.device | str | None = None) -> None:
        check_real(entropy_coeff, "entropy_coeff", low=0.0)
        check_real(kappa_policy, "kappa_policy", low=0.0, low_open=True)
        check_real(kappa_value, "kappa_value", low=0.0, low_open=True)
        check_int(seed, "seed", low=0)
        self.n_actions = _discrete_n(env)
        gen = _torch_generator(seed)
        shape = _obs_shape(env)
        self.policy = policy if policy is not None else build_network(shape, self.n_actions, generator=gen,
                                                                      device=device)
        self.value = value if value is not None else build_network(shape, 1, generator=gen, device=device)
        self.device = next(self.policy.parameters()).device
        self.policy_optimizer = ObGD(self.policy.parameters(), lr=lr, gamma=gamma, lamda=lamda, kappa=kappa_policy)
        self.value_optimizer = ObGD(self.value.parameters(), lr=lr, gamma=gamma, lamda=lamda, kappa=kappa_value)
        self.gamma = gamma
        self.entropy_coeff = entropy_coeff
        self.rng = np.random.default_rng(seed)
        self.io = _Interaction(env, seed, self.device)
        self.t = 0

    def step(self) -> StepInfo:
        obs = self.io.current()
        logits = self.policy(obs)[0]
        log_probs = F.log_softmax(logits, dim=-1)
        probs = log_probs.detach().exp().cpu().numpy().astype(np.float64)
        action = int(self.rng.choice(self.n_actions, p=probs / probs.sum()))
        next_obs, reward, terminated, truncated, ret, length = self.io.advance(action)
        done = terminated or truncated
        values = self.value(torch.cat([obs, next_obs]))[:, 0]  # v(s) with graph, v(s') for the target
        bootstrap = 0.0 if terminated else self.gamma * float(values[1].detach())
        # δ = r + γ (1 − term) v(s') − v(s)
        delta = reward + bootstrap - float(values[0].detach())
        self.value_optimizer.zero_grad(set_to_none=False)
        values[0].backward()
        # policy trace on ∇[log π(a|s) + c·sign(δ)·H(π(·|s))]
        entropy = -(log_probs.exp() * log_probs).sum()
        self.policy_optimizer.zero_grad(set_to_none=False)
        (log_probs[action] + self.entropy_coeff * float(np.sign(delta)) * entropy).backward()
        self.policy_optimizer.step(delta, reset=done)
        info = self.value_optimizer.step(delta, reset=done)
        self.io.finish(next_obs, done)
        out = StepInfo(self.t, action, reward, terminated, truncated, False, delta, info.step_size, ret, length)
        self.t += 1
        return out

    def learn(self, total_steps: int, *, progress: bool | None = None,
              callback: Callable[[StepInfo], None] | None = None) -> LearnLog:
        return learn_loop(self.step, total_steps, progress=progress, desc="StreamAC", callback=callback)
