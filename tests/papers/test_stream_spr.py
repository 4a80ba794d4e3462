"""Tests of stream_spr: ObGD, Stream Q(λ), normalizers, sparse init, orth/orth², SPR, ranks.

Numbers come from hand calculations written here, closed forms, NumPy re-implementations
(tabular Watkins Q(λ), Welford statistics) and the exact Q* of a small chain.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26.papers.stream_spr import (
    AdaptiveObGD,
    ObGD,
    OrthogonalMomentum,
    RewardScaler,
    SPRHead,
    SPRWindow,
    StreamAC,
    StreamQ,
    StreamQSPR,
    StreamSarsa,
    TraceSGD,
    TransitionModel,
    WelfordStats,
    build_network,
    cosine,
    effective_rank,
    erank,
    init_streaming_,
    project_out,
    q_lambda_update,
    sparse_init_,
    spr_loss,
    srank,
)

gym = pytest.importorskip("gymnasium")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread is faster


# ---------------------------------------------------------------------------
# Small environments
# ---------------------------------------------------------------------------
class Chain(gym.Env):
    """States 0..n-1, start 0; action 1 moves right, 0 left (walls hold); reaching n-1 pays 1 and ends."""

    def __init__(self, n: int = 6, limit: int = 100) -> None:
        self.n, self.limit = n, limit
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        o = np.zeros(self.n, dtype=np.float32)
        o[self.s] = 1.0
        return o

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.s = min(self.s + 1, self.n - 1) if action == 1 else max(self.s - 1, 0)
        terminated = self.s == self.n - 1
        return self._obs(), float(terminated), terminated, self.t >= self.limit and not terminated, {}


class Scripted(gym.Env):
    """Random vector observations; ends (terminated or truncated) at scripted step counts."""

    def __init__(self, ends: dict[int, str], dim: int = 5, n_actions: int = 3) -> None:
        self.ends, self.dim = ends, dim
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(n_actions)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.normal(size=self.dim).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        kind = self.ends.get(self.t)
        obs = self.np_random.normal(size=self.dim).astype(np.float32)
        return obs, float(self.np_random.normal()), kind == "term", kind == "trunc", {}


class Ring:
    """o_{t+1} is o_t (a one-hot position on a ring of n cells) shifted by the action (±1)."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.n, self.rng, self.p = n, rng, 0

    def obs(self) -> torch.Tensor:
        return nn.functional.one_hot(torch.tensor(self.p), self.n).float()

    def step(self, action: int) -> None:
        self.p = (self.p + (1 if action == 1 else -1)) % self.n


def _linear(d: int, out: int = 1) -> nn.Linear:
    layer = nn.Linear(d, out, bias=False).double()
    nn.init.zeros_(layer.weight)
    return layer


# ---------------------------------------------------------------------------
# ObGD
# ---------------------------------------------------------------------------
def test_obgd_closed_form_bound_binding_and_not():
    # Linear q = w·x, z = x on the first step. α = 1, κ = 2, δ = −3, ‖x‖₁ = 250:
    # M = 1·2·3·250 = 1500 > 1, so Δw = (1/1500)·(−3)·x = −0.002·x.
    x = torch.tensor([2.5 if i % 2 else -2.5 for i in range(100)], dtype=torch.float64)
    model = _linear(100)
    opt = ObGD(model.parameters(), lr=1.0, gamma=0.99, lamda=0.8, kappa=2.0)
    model(x).sum().backward()
    info = opt.step(-3.0)
    assert info.bound == pytest.approx(1500.0) and info.bound_binds
    assert info.step_size == pytest.approx(1 / 1500)
    torch.testing.assert_close(model.weight[0], -0.002 * x, atol=1e-7, rtol=0)

    # α = 1e-4, ‖x‖₁ = 10: M = 1e-4·2·3·10 = 0.006 < 1, so Δw = 1e-4·(−3)·x (plain SGD(λ)).
    x = torch.tensor([1.0, -2.0, 3.0, -4.0], dtype=torch.float64)
    model = _linear(4)
    opt = ObGD(model.parameters(), lr=1e-4, gamma=0.99, lamda=0.8, kappa=2.0)
    model(x).sum().backward()
    info = opt.step(-3.0)
    assert info.bound == pytest.approx(0.006) and not info.bound_binds
    torch.testing.assert_close(model.weight[0], -3e-4 * x, atol=1e-12, rtol=0)

    # The second step's trace is γλ·x + x₂ (0.792·x + x₂), and it is zero after a reset.
    x2 = torch.tensor([0.5, 0.5, -1.0, 2.0], dtype=torch.float64)
    before = model.weight.detach().clone()
    opt.zero_grad()
    model(x2).sum().backward()
    opt.step(2.0, reset=True)
    z = 0.99 * 0.8 * x + x2
    m = 1e-4 * 2.0 * 2.0 * z.abs().sum()
    assert m < 1
    torch.testing.assert_close(model.weight[0] - before[0], 1e-4 * 2.0 * z, atol=1e-12, rtol=0)
    assert float(opt.traces()[0].abs().sum()) == 0.0


def test_adaptive_obgd_closed_form_and_numpy_reference():
    # First step, n = 1: v = (1−β₂)(δz)², v̂ = v/(1−β₂) = (δz)², so z̃ = z/(|δz| + ε) ≈ sign(z)/|δ|.
    # δ = −3, z = x = (1, −2, 3, −4): ‖z̃‖₁ ≈ 4/3, M = α·κ·3·4/3 = 4ακ.
    x = torch.tensor([1.0, -2.0, 3.0, -4.0], dtype=torch.float64)
    for alpha, binds in ((1.0, True), (0.01, False)):  # M = 8 (α̂ = 1/8) and M = 0.08 (α̂ = α)
        model = _linear(4)
        opt = AdaptiveObGD(model.parameters(), lr=alpha, gamma=0.99, lamda=0.8, kappa=2.0)
        model(x).sum().backward()
        info = opt.step(-3.0)
        assert info.bound == pytest.approx(8.0 * alpha, rel=1e-7) and info.bound_binds == binds
        step = 1 / 8 if binds else alpha
        torch.testing.assert_close(model.weight[0], step * -3.0 * torch.sign(x) / 3.0, atol=1e-8, rtol=0)

    # Three steps against an independent NumPy implementation (bias-corrected v, trace reset after step 2).
    rng = np.random.default_rng(16)
    xs, deltas, resets = rng.normal(size=(3, 6)), [0.4, -2.5, 1.7], [False, True, False]
    gamma, lamda, kappa, alpha, beta2, eps = 0.9, 0.7, 2.0, 0.5, 0.999, 1e-8
    model = _linear(6)
    opt = AdaptiveObGD(model.parameters(), lr=alpha, gamma=gamma, lamda=lamda, kappa=kappa, beta2=beta2, eps=eps)
    w, z, v = np.zeros(6), np.zeros(6), np.zeros(6)
    for n, (xn, d, reset) in enumerate(zip(xs, deltas, resets), start=1):
        opt.zero_grad()
        model(torch.tensor(xn)).sum().backward()
        opt.step(d, reset=reset)
        z = gamma * lamda * z + xn
        v = beta2 * v + (1 - beta2) * (d * z) ** 2
        zt = z / (np.sqrt(v / (1 - beta2 ** n)) + eps)
        m = alpha * kappa * max(abs(d), 1.0) * np.abs(zt).sum()
        w = w + alpha / max(m, 1.0) * d * zt
        if reset:
            z = np.zeros(6)
        np.testing.assert_allclose(model.weight.detach().numpy()[0], w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("alpha", [1.0, 1e3, 1e6])
@pytest.mark.parametrize("optimizer", [ObGD, AdaptiveObGD])
def test_no_overshoot_for_any_step_size(alpha, optimizer):
    rng = np.random.default_rng(1)
    for _ in range(20):
        d = 30
        x = torch.tensor(rng.uniform(-1, 1, d))
        model = _linear(d)
        with torch.no_grad():
            model.weight.copy_(torch.tensor(rng.normal(size=(1, d))))
        reward = float(rng.normal(scale=5.0))
        opt = optimizer(model.parameters(), lr=alpha, gamma=0.0, lamda=0.0, kappa=1.0)
        q = model(x).sum()
        error = reward - float(q.detach())  # γ = 0: δ = r − q(s, a)
        q.backward()
        opt.step(error)
        after = reward - float(model(x).sum().detach())
        assert np.sign(after) in (0.0, np.sign(error)) and abs(after) <= abs(error) + 1e-9


def test_plain_sgd_overshoots_where_obgd_does_not():
    x = torch.tensor(np.random.default_rng(2).uniform(-1, 1, 30))
    model = _linear(30)
    opt = TraceSGD(model.parameters(), lr=1e3, gamma=0.0, lamda=0.0)
    q = model(x).sum()
    q.backward()
    opt.step(1.0 - float(q.detach()))  # target 1, prediction 0
    after = 1.0 - float(model(x).sum().detach())
    assert after < -1.0  # crossed the target, by more than the error itself


def test_obgd_rejects_bad_input():
    with pytest.raises(ValueError, match="lr"):
        ObGD([nn.Parameter(torch.zeros(2))], lr=0.0)
    model = _linear(3)
    opt = ObGD(model.parameters())
    with pytest.raises(ValueError, match="backward"):
        opt.step(1.0)
    model(torch.ones(3, dtype=torch.float64)).sum().backward()
    with pytest.raises(ValueError, match="finite"):
        opt.step(float("nan"))


# ---------------------------------------------------------------------------
# Stream Q(λ): tabular reduction, trace semantics, learning
# ---------------------------------------------------------------------------
def test_reduces_to_tabular_watkins_q_lambda():
    n_states, n_actions, gamma, lamda, alpha = 5, 3, 0.9, 0.8, 0.01
    rng = np.random.default_rng(3)
    net = nn.Linear(n_states, n_actions, bias=False).double()
    with torch.no_grad():
        net.weight.copy_(torch.tensor(rng.normal(size=(n_actions, n_states))))
    q_table = net.weight.detach().numpy().copy()  # Q[a, s]
    opt = ObGD(net.parameters(), lr=alpha, gamma=gamma, lamda=lamda, kappa=2.0)
    z = np.zeros_like(q_table)
    eye = torch.eye(n_states, dtype=torch.float64)
    resets = 0
    for _ in range(400):
        s, s_next, a = int(rng.integers(n_states)), int(rng.integers(n_states)), int(rng.integers(n_actions))
        r = float(rng.normal())
        terminated, truncated, nongreedy = rng.random() < 0.1, rng.random() < 0.05, rng.random() < 0.2
        reset = terminated or truncated or nongreedy
        resets += reset
        # the library
        q_all = net(eye[s:s + 1])[0]
        with torch.no_grad():
            target = net(eye[s_next:s_next + 1])[0].max()
        _, info = q_lambda_update(opt, q_all[a], target, r, gamma=gamma, terminated=terminated, reset=reset)
        assert info.bound < 1  # the premise: ObGD acts as SGD(λ) here
        # independent tabular Watkins Q(λ), accumulating traces, reset after the update
        delta = r + (0.0 if terminated else gamma * q_table[:, s_next].max()) - q_table[a, s]
        z *= gamma * lamda
        z[a, s] += 1.0
        q_table += alpha * delta * z
        if reset:
            z[:] = 0.0
    assert resets > 50
    np.testing.assert_allclose(net.weight.detach().numpy(), q_table, atol=1e-6, rtol=0)


def _linear_q(n_states: int, n_actions: int) -> nn.Linear:
    net = nn.Linear(n_states, n_actions, bias=False)
    nn.init.uniform_(net.weight, -0.1, 0.1, generator=torch.Generator().manual_seed(0))
    return net


def test_stream_q_trace_reset_after_nongreedy_and_episode_end():
    env = Chain(6, limit=15)
    agent = StreamQ(env, network=_linear_q(6, 2), lr=0.1, gamma=0.9, lamda=0.8, epsilon_start=1.0,
                    epsilon_end=1.0, seed=4)
    trace = agent.optimizer.traces()[0]
    seen_nongreedy = seen_greedy_after_reset = 0
    previous = torch.zeros_like(trace)
    for _ in range(300):
        s = int(agent.io.current()[0].argmax())
        info = agent.step()
        grad = torch.zeros_like(trace)
        grad[info.action, s] = 1.0  # ∇θ q(s, a) for a linear q on one-hot features
        if info.nongreedy or info.terminated or info.truncated:
            assert float(trace.abs().sum()) == 0.0
            seen_nongreedy += info.nongreedy
        else:
            # z = γλ·z_prev + ∇q; right after a reset z_prev = 0, so z is exactly the new gradient
            torch.testing.assert_close(trace, 0.72 * previous + grad)
            seen_greedy_after_reset += float(previous.abs().sum()) == 0.0
        previous = trace.clone()
    assert seen_nongreedy > 20 and seen_greedy_after_reset > 20


def test_sarsa_and_ac_reset_traces_only_at_episode_end():
    env = Chain(6, limit=15)
    sarsa = StreamSarsa(env, network=_linear_q(6, 2), lr=0.1, gamma=0.9, epsilon_start=1.0, epsilon_end=1.0,
                        seed=5)
    nongreedy_kept = 0
    for _ in range(200):
        info = sarsa.step()
        total = float(sarsa.optimizer.traces()[0].abs().sum())
        if info.terminated or info.truncated:
            assert total == 0.0
        else:
            assert total > 0.0
            nongreedy_kept += info.nongreedy
    assert nongreedy_kept > 20

    ac = StreamAC(Chain(6, limit=15), seed=6)
    ends = 0
    for _ in range(200):
        info = ac.step()
        totals = [float(sum(z.abs().sum() for z in opt.traces()))
                  for opt in (ac.policy_optimizer, ac.value_optimizer)]
        if info.terminated or info.truncated:
            ends += 1
            assert totals == [0.0, 0.0]
        else:
            assert min(totals) > 0.0
    assert ends > 3


def test_stream_q_learns_q_star_on_a_chain():
    gamma = 0.9
    env = Chain(6)
    agent = StreamQ(env, network=_linear_q(6, 2), lr=1.0, gamma=gamma, lamda=0.8, epsilon_start=1.0,
                    epsilon_end=0.2, exploration_steps=1000, seed=7)
    agent.learn(6000, progress=False)
    # Q*(s, right) = γ^(4−s); Q*(s, left) = γ·V*(max(s−1, 0)) = γ^(5−max(s−1, 0)), s = 0..4
    q_star = np.array([[gamma ** (5 - max(s - 1, 0)), gamma ** (4 - s)] for s in range(5)])
    with torch.no_grad():
        q = agent.network(torch.eye(6))[:5].numpy()
    assert np.abs(q - q_star).max() < 0.1


# ---------------------------------------------------------------------------
# Sparse initialization, normalizers
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [nn.Linear(50, 30), nn.Conv2d(4, 16, 3)])
def test_sparse_init_counts_and_range(layer):
    init_streaming_(layer, 0.9, generator=torch.Generator().manual_seed(0))
    w = layer.weight.detach().reshape(layer.weight.shape[0], -1)
    fan_in = w.shape[1]
    assert ((w == 0).sum(dim=1) == math.ceil(0.9 * fan_in)).all()
    assert w.abs().max() <= 1 / math.sqrt(fan_in)
    assert (layer.bias == 0).all()
    again = copy.deepcopy(layer)
    init_streaming_(again, 0.9, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again.weight, layer.weight)
    with pytest.raises(ValueError, match="Linear"):
        sparse_init_(torch.zeros(3))


def test_welford_matches_numpy():
    rng = np.random.default_rng(8)
    stream = rng.normal(3.0, 2.0, size=(50, 4))
    stats = WelfordStats((4,))
    for n in range(1, 51):
        stats.update(stream[n - 1])
        np.testing.assert_allclose(stats.mean, stream[:n].mean(axis=0), rtol=1e-12)
        expected = np.ones(4) if n < 2 else stream[:n].var(axis=0, ddof=1)
        np.testing.assert_allclose(stats.var, expected, rtol=1e-10)


def test_reward_scaler_matches_explicit_trace():
    rng = np.random.default_rng(9)
    gamma = 0.9
    rewards = rng.normal(size=60)
    dones = rng.random(60) < 0.15
    scaler = RewardScaler(gamma)
    u, traces = 0.0, []
    for r, d in zip(rewards, dones):
        got = scaler.scale(r, bool(d))
        u = gamma * (1 - d) * u + r  # u ← γ(1−done)·u + r
        traces.append(u)
        var = 1.0 if len(traces) < 2 else np.var(traces, ddof=1)
        assert got == pytest.approx(r / np.sqrt(var + 1e-8), rel=1e-10)


def test_wrappers_normalize_before_and_scale_rewards():
    from icml26.papers.stream_spr import RunningNorm, ScaleReward, stream_wrappers

    env = stream_wrappers(Scripted({4: "term", 9: "trunc"}), gamma=0.9)
    assert isinstance(env, RunningNorm) and isinstance(env.env, ScaleReward)
    raw_env = env.unwrapped
    seen, out = [], []
    raw_rng_state = copy.deepcopy(raw_env)  # replay the raw stream with the same seed
    obs, _ = env.reset(seed=11)
    raw_obs, _ = raw_rng_state.reset(seed=11)
    seen.append(raw_obs)
    out.append(obs)
    rewards, raw_rewards, dones = [], [], []
    for _ in range(12):
        obs, r, term, trunc, _ = env.step(0)
        raw_obs, raw_r, *_ = raw_rng_state.step(0)
        seen.append(raw_obs)
        out.append(obs)
        rewards.append(r)
        raw_rewards.append(raw_r)
        dones.append(term or trunc)
    for n in range(1, len(seen) + 1):
        x = np.stack(seen[:n])
        var = np.ones(5) if n < 2 else x.var(axis=0, ddof=1)
        np.testing.assert_allclose(out[n - 1], (x[-1] - x.mean(axis=0)) / np.sqrt(var + 1e-8), rtol=1e-5, atol=1e-6)
    scaler = RewardScaler(0.9)
    np.testing.assert_allclose(rewards, [scaler.scale(r, d) for r, d in zip(raw_rewards, dones)], rtol=1e-12)


# ---------------------------------------------------------------------------
# orth and orth²
# ---------------------------------------------------------------------------
def test_orth_projection_is_orthogonal_to_previous_momentum():
    rng = np.random.default_rng(12)
    orth = OrthogonalMomentum(0.9)
    first = torch.tensor(rng.normal(size=20) * 100)
    torch.testing.assert_close(orth(first), first)  # c₀ = 0 ⇒ u = g
    for _ in range(10):
        c = orth.momentum[0].clone()
        u = orth(torch.tensor(rng.normal(size=20) * 100))
        assert abs(cosine(u, c)) < 1e-6
    c = orth.momentum[0].clone()
    assert float(orth(3.0 * c).abs().max()) < 1e-6 * float(c.abs().max())  # g ∥ c ⇒ u = 0


@pytest.mark.parametrize("eps, tol", [(0.0, 1e-12), (1e-8, 1e-5)])
def test_orth_same_gradient_forever_moves_exactly_one_step(eps, tol):
    # Exact with ε = 0. With stream-rep-rl's ε = 1e-8, step s leaks ε/‖c_s‖² of g and ‖c_s‖² = β^(2s−2);
    # relative to c_t the leaks add up to Σ_s ε·β^(−3(s−1)) ≈ 1e-6 by t = 60, hence tol 1e-5.
    beta, lr, steps = 0.99, 0.1, 60
    g = torch.tensor([60.0, -80.0], dtype=torch.float64)  # ‖g‖ = 100
    for source in ("projected", "raw"):
        w = nn.Parameter(torch.zeros(2, dtype=torch.float64))
        sgd = torch.optim.SGD([w], lr=lr)
        orth = OrthogonalMomentum(beta, eps=eps, momentum_source=source)
        for t in range(1, steps + 1):
            sgd.zero_grad()
            w.grad = g.clone()
            orth.project_grads_([w])
            if t >= 2:
                assert float(w.grad.abs().max()) < tol * 100  # u_t ≈ 0 for t ≥ 2
            sgd.step()
            # projected: c_t = (1−β)β^(t−1)·g;  raw: c_t = (1−β^t)·g
            expected_c = (1 - beta) * beta ** (t - 1) * g if source == "projected" else (1 - beta ** t) * g
            torch.testing.assert_close(orth.momentum[0], expected_c, rtol=tol, atol=1e-12)
        torch.testing.assert_close(w.detach(), -lr * g, rtol=tol, atol=1e-12)  # one SGD step in total


def test_orth_decay_equals_a_zero_gradient():
    a, b = OrthogonalMomentum(0.9), OrthogonalMomentum(0.9)
    g = [torch.randn(3, 2, generator=torch.Generator().manual_seed(1)), torch.ones(4)]
    a(g)
    b(g)
    a.decay()
    assert all(float(u.abs().max()) == 0.0 for u in b([torch.zeros(3, 2), torch.zeros(4)]))
    for x, y in zip(a.momentum, b.momentum):
        torch.testing.assert_close(x, y)
    assert OrthogonalMomentum(0.9)([]) == [] and project_out([], []) == []  # a group with no parameters


def test_orth2_is_orthogonal_and_ignores_the_sign():
    gen = torch.Generator().manual_seed(2)
    ref = [torch.randn(4, 3, generator=gen, dtype=torch.float64), torch.randn(5, generator=gen, dtype=torch.float64)]
    noise = [torch.randn(4, 3, generator=gen, dtype=torch.float64), torch.randn(5, generator=gen, dtype=torch.float64)]
    noise = project_out(noise, ref)
    assert abs(cosine(noise, ref)) < 1e-12
    for a in (2.0, -2.0):  # aligned and opposed: both lose their parallel part (PCGrad keeps the aligned one)
        s = [a * r + n for r, n in zip(ref, noise)]
        assert (cosine(s, ref) > 0) == (a > 0)
        out = project_out(s, ref)
        assert abs(cosine(out, ref)) < 1e-12
        for o, n in zip(out, noise):
            torch.testing.assert_close(o, n)
    zero = [torch.zeros_like(r) for r in ref]
    for o, n in zip(project_out(noise, zero), noise):  # Δ_RL = 0 ⇒ unchanged
        torch.testing.assert_close(o, n)


def test_agent_orth2_touches_only_the_encoder():
    def make(orth2: bool) -> StreamQSPR:
        return StreamQSPR(Scripted({}, dim=6), orth=True, orth2=orth2, lr=0.5, spr_lr=0.05, spr_depth=2,
                          epsilon_start=0.0, epsilon_end=0.0, seed=13)

    a, b = make(True), make(False)
    for _ in range(6):
        ia, ib = a.step(), b.step()
        assert ia.spr_active == ib.spr_active
        if ia.spr_active:
            break
    assert ia.spr_active
    # Same step, same RL update: only the encoder's SPR update differs, by its parallel part.
    assert ia.cos_before == pytest.approx(ib.cos_before, rel=1e-5) and abs(ia.cos_before) > 1e-4
    assert abs(ia.cos_after) < 1e-6 and ib.cos_after == pytest.approx(ib.cos_before)
    for name in ("transition", "projection", "predictor"):
        for pa, pb in zip(a.groups[name], b.groups[name]):
            torch.testing.assert_close(pa, pb)
    assert any(not torch.equal(pa, pb) for pa, pb in zip(a.groups["encoder"], b.groups["encoder"]))


# ---------------------------------------------------------------------------
# SPR
# ---------------------------------------------------------------------------
def test_spr_loss_range_and_extremes():
    gen = torch.Generator().manual_seed(3)
    pred, target = torch.randn(5, 8, generator=gen), torch.randn(5, 8, generator=gen)
    assert -1.0 <= float(spr_loss(pred, target)) <= 1.0
    assert float(spr_loss(2.5 * target, target)) == pytest.approx(-1.0, abs=1e-6)
    assert float(spr_loss(-target, target)) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="K, D"):
        spr_loss(pred, target[:3])


def _head(obs_shape=(10, 10, 4), n_actions=3, **kw):
    net = build_network(obs_shape, n_actions, generator=torch.Generator().manual_seed(0))
    head = SPRHead(net.encoder, net.encoder.latent_shape, n_actions, generator=torch.Generator().manual_seed(1), **kw)
    return net, head


def test_spr_backward_leaves_targets_untouched_and_targets_start_as_copies():
    net, head = _head()
    for t, o in zip(head.target_encoder.parameters(), net.encoder.parameters()):
        assert torch.equal(t, o)
    _, independent = _head(target_init="independent")
    assert any(not torch.equal(t, o) for t, o in zip(independent.target_encoder.parameters(),
                                                     net.encoder.parameters()))
    before = [p.clone() for p in list(head.target_encoder.parameters()) + list(head.target_projection.parameters())]
    obs = torch.randn(6, 10, 10, 4, generator=torch.Generator().manual_seed(2))
    out = head(net.encoder, obs, torch.tensor([0, 1, 2, 1, 0]))
    assert not out.targets.requires_grad
    out.loss.backward()
    targets = list(head.target_encoder.parameters()) + list(head.target_projection.parameters())
    assert all(p.grad is None for p in targets)
    assert all(p.grad is not None for p in list(net.encoder.parameters()) + list(head.transition.parameters()))
    for p, q in zip(targets, before):
        assert torch.equal(p, q)


def test_ema_closed_form():
    net, head = _head(target_init="independent")
    net.double()
    head.double()
    theta = [p.detach().clone() for p in list(net.encoder.parameters()) + list(head.projection.parameters())]
    xi0 = [p.detach().clone() for p in list(head.target_encoder.parameters()) + list(head.target_projection.parameters())]
    tau, n = 0.9, 25
    for _ in range(n):
        head.update_targets(net.encoder, tau)
    xi = list(head.target_encoder.parameters()) + list(head.target_projection.parameters())
    for x, t, x0 in zip(xi, theta, xi0):
        torch.testing.assert_close(x, t + tau ** n * (x0 - t), rtol=0, atol=1e-12)  # ξ_n = θ + τⁿ(ξ₀ − θ)


def _ring_spr_loss(alignment: str, shuffle: bool, *, n: int = 6, depth: int = 5, train: int = 1500,
                   evaluate: int = 150) -> float:
    """Train only the transition model on a ring (identity encoder, projection, predictor)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    transition = TransitionModel((n,), 2, hidden=64)
    head = SPRHead(nn.Identity(), (n,), 2, transition=transition, projection=nn.Identity(),
                   predictor=nn.Identity())
    opt = torch.optim.Adam(transition.parameters(), lr=1e-2)
    env, window = Ring(n, rng), SPRWindow(depth, alignment)
    losses = []
    for t in range(train + evaluate):
        action = int(rng.integers(2))
        window.push(env.obs(), action)
        env.step(action)
        if not window.full:
            continue
        obs, actions = window.batch()
        if shuffle:
            actions = actions[torch.randperm(depth)]
        loss = head(nn.Identity(), obs, actions).loss
        if t < train:
            opt.zero_grad()
            loss.backward()
            opt.step()
        else:
            losses.append(float(loss.detach()))
    return float(np.mean(losses))


def test_window_alignment_on_a_shift_environment():
    assert _ring_spr_loss("correct", False) < -0.99
    assert _ring_spr_loss("official", False) > -0.9  # off by one: a_{t−K+k} is not the action that moved
    assert _ring_spr_loss("correct", True) > -0.9


def test_window_contents_and_official_offset():
    window = SPRWindow(2, "correct")
    for t in range(4):
        window.push(torch.full((1,), float(t)), 10 + t)
    obs, actions = window.batch()
    assert obs[:, 0].tolist() == [1.0, 2.0, 3.0] and actions.tolist() == [11, 12]  # a_{t−K}, a_{t−1}
    window.alignment = "official"
    assert window.batch()[1].tolist() == [12, 13]
    window.clear()
    assert len(window) == 0 and not window.full


def test_spr_gating_and_window_reset():
    depth = 3
    ends = {7: "term", 15: "trunc", 26: "term"}
    agent = StreamQSPR(Scripted(ends), spr_depth=depth, epsilon_start=0.6, epsilon_end=0.6, lr=0.1, spr_lr=0.01,
                       seed=14)
    since_reset = 0
    heads = lambda: [p.detach().clone() for n in ("transition", "projection", "predictor") for p in agent.groups[n]]
    target = lambda: [p.detach().clone() for p in agent.spr.target_encoder.parameters()]
    counts = {"active": 0, "nongreedy": 0, "end": 0, "filling": 0}
    for _ in range(40):
        before, target_before = heads(), target()
        info = agent.step()
        since_reset += 1
        done = info.terminated or info.truncated
        expected = since_reset >= depth + 1 and not done and not info.nongreedy
        assert info.spr_active == expected
        if expected:
            counts["active"] += 1
            assert info.spr_loss is not None
        else:
            counts["nongreedy" if info.nongreedy else "end" if done else "filling"] += 1
            assert info.spr_loss is None
            for p, q in zip(heads(), before):
                assert torch.equal(p, q)  # zero SPR gradient: the heads do not move
        assert any(not torch.equal(p, q) for p, q in zip(target(), target_before))  # EMA every step
        if done:
            assert len(agent.window) == 0
            since_reset = 0
    assert min(counts.values()) > 0, counts


# ---------------------------------------------------------------------------
# Ranks
# ---------------------------------------------------------------------------
def test_rank_closed_forms():
    assert erank([1, 1, 1, 1]) == pytest.approx(4.0) and srank([1, 1, 1, 1]) == 4
    p = np.array([0.75, 0.25])
    assert erank([3, 1, 0, 0]) == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert srank([3, 1, 0, 0], 0.01) == 2 and srank([3, 1, 0, 0], 0.3) == 1
    # the 1 − δ threshold is inclusive: (90, 9, 1) holds exactly 99 % in two values
    assert srank([90, 9, 1], 0.01) == 2
    phi = np.diag([5.0, 2.0, 1.0])
    q, _ = np.linalg.qr(np.random.default_rng(15).normal(size=(3, 3)))
    a, b = effective_rank(phi), effective_rank(torch.tensor(q @ phi))
    assert a.srank == b.srank == 3 and a.erank == pytest.approx(b.erank)
    with pytest.raises(ValueError, match="zero"):
        effective_rank(np.zeros((4, 3)))


# ---------------------------------------------------------------------------
# Experiment config and the README example
# ---------------------------------------------------------------------------
def test_config_validation():
    from icml26.papers.stream_spr.experiment import Config

    with pytest.raises(ValueError, match="games"):
        Config(games=("pong",))
    with pytest.raises(ValueError, match="arms"):
        Config(arms=("spr_naive", "stream_q"))
    with pytest.raises(ValueError, match="total_steps"):
        Config(total_steps=0)
    assert Config.quick().total_steps == 60_000


class Frames(gym.Env):
    """Random (H, W, C) image observations, channels last; episodes of 12 steps (terminated)."""

    def __init__(self, shape=(7, 6, 2), n_actions: int = 3) -> None:
        self.shape = shape
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=shape, dtype=np.float32)
        self.action_space = gym.spaces.Discrete(n_actions)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.normal(size=self.shape).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        obs = self.np_random.normal(size=self.shape).astype(np.float32)
        return obs, float(action == 1), self.t >= 12, False, {}


def test_agents_run_on_image_observations():
    from icml26.papers.stream_spr import stream_wrappers

    # (7, 6, 2) channels last: a 3×3 VALID conv with 16 channels gives a (16, 5, 4) latent.
    agent = StreamQSPR(stream_wrappers(Frames(), gamma=0.99), head_activation="relu", epsilon_start=0.0,
                       epsilon_end=0.0, spr_depth=3, seed=17)
    assert agent.network.encoder.body[0].in_channels == 2
    assert agent.network.encoder.latent_shape == (16, 5, 4)
    assert any(isinstance(m, nn.ReLU) for m in agent.network.hidden)  # stream-rep-rl's SPR head on request
    infos = [agent.step() for _ in range(30)]
    active = [i for i in infos if i.spr_active]
    assert len(active) == 30 - 3 * 3 - 2  # 3 episodes lose K = 3 filling steps; 2 episode ends (steps 12, 24)
    assert all(abs(i.cos_after) < 1e-6 and math.isfinite(i.spr_loss) for i in active)
    latent, hidden = agent.network.features(torch.randn(5, 7, 6, 2))
    assert latent.shape == (5, 16 * 5 * 4) and hidden.shape == (5, 128)
    for cls in (StreamQ, StreamSarsa, StreamAC):
        baseline = cls(Frames(), seed=18)
        episodes = [i.episode_return for i in (baseline.step() for _ in range(25)) if i.episode_return is not None]
        assert len(episodes) == 2
        params = baseline.policy.parameters() if cls is StreamAC else baseline.network.parameters()
        assert all(torch.isfinite(p).all() for p in params)


# ---------------------------------------------------------------------------
# Non-finite guards (issues #18, #30)
# ---------------------------------------------------------------------------
def test_one_nan_gradient_does_not_poison_the_orth_momentum():
    g1, g2 = torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])
    guarded = OrthogonalMomentum(0.9)
    clean = OrthogonalMomentum(0.9)
    guarded(g1)
    clean(g1)
    assert torch.equal(guarded(torch.tensor([math.nan, 1.0, 0.0])), torch.zeros(3))  # skipped: no update
    assert guarded.skipped == 1
    # the skipped step left c exactly as it was, so the next step equals the step without the NaN one
    assert torch.equal(guarded(g2), clean(g2))
    assert torch.isfinite(guarded.momentum[0]).all()
    assert torch.equal(guarded.momentum[0], clean.momentum[0])


def _orth_reference(gradients, beta, eps=1e-8):
    """orth in float64 NumPy (projected momentum), the same three lines as the docstring."""
    c, out = np.zeros_like(np.asarray(gradients[0], dtype=np.float64)), []
    for g in gradients:
        g = np.asarray(g, dtype=np.float64)
        u = g - (g @ c) / (c @ c + eps) * c
        c = beta * c + (1 - beta) * u
        out.append(u)
    return out, c


@pytest.mark.parametrize("size", [1e20, 1e30, 1e37])
def test_huge_finite_gradients_are_projected_exactly_not_poisoned(size):
    # ⟨g, c⟩ and ‖c‖² overflow float32 here (1e30² = 1e60): the plain formula gives inf/inf = NaN,
    # which made c NaN for the rest of the run. The rescaled path must give the float64 answer.
    grads = [[size, size, 0.0], [size, 0.0, size], [1.0, 0.0, 0.0], [0.0, 2.0, -1.0]]
    orth = OrthogonalMomentum(0.9)
    got = [orth(torch.tensor(g, dtype=torch.float32)) for g in grads]
    want, c = _orth_reference(grads, 0.9)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.double().numpy(), b, rtol=1e-5, atol=1e-6 * np.abs(b).max())
    np.testing.assert_allclose(orth.momentum[0].double().numpy(), c, rtol=1e-5)
    assert orth.skipped == 0 and torch.isfinite(orth.momentum[0]).all()


def test_a_finite_dot_over_an_overflowing_norm_still_projects():
    # c ≈ 1e25 (‖c‖² = inf in float32) and g = 1: ⟨g, c⟩ = 1e25 is finite, so the plain formula
    # silently returned u = g unprojected; the exact u is orthogonal to c.
    orth = OrthogonalMomentum(0.5)
    orth(torch.tensor([2e25, 0.0, 0.0]))
    u = orth(torch.tensor([1.0, 1.0, 0.0]))
    assert torch.allclose(u, torch.tensor([0.0, 1.0, 0.0]), atol=1e-6)


def test_a_step_whose_projection_overflows_is_skipped():
    # g = (a, a) with a = 3e38 (finite) and c ∝ (1 − √2, 1): the exact u = ((1 + √2)/2·a, a/2) has
    # u₁ = 3.6e38 > float32's maximum, so no finite answer exists: the step is skipped, c kept.
    orth = OrthogonalMomentum(0.5)
    orth(torch.tensor([1.0 - math.sqrt(2.0), 1.0]))
    kept = orth.momentum[0].clone()
    assert torch.equal(orth(torch.tensor([3e38, 3e38])), torch.zeros(2))
    assert orth.skipped == 1 and torch.equal(orth.momentum[0], kept)
    u, _ = _orth_reference([[1.0 - math.sqrt(2.0), 1.0], [3e38, 3e38]], 0.5)
    assert u[1][0] > float(torch.finfo(torch.float32).max)  # the float64 answer is out of range



# ---------------------------------------------------------------------------
# Fast paths: the same numbers as the straightforward code they replace (bit for bit)
# ---------------------------------------------------------------------------
class _ReferenceOrth:
    """orth exactly as first written: elementwise finiteness tests, per-tensor arithmetic, copy into c."""

    def __init__(self, beta, eps, source):
        self.beta, self.eps, self.source, self.momentum, self.skipped = beta, eps, source, None, 0

    @staticmethod
    def _dot(a, b):
        return sum((torch.vdot(x.reshape(-1), y.reshape(-1)) for x, y in zip(a, b)),
                   start=torch.zeros((), dtype=a[0].dtype))

    @staticmethod
    def _finite(ts):
        return bool(torch.stack([torch.isfinite(t).all() for t in ts]).all())

    def __call__(self, g):
        from icml26.papers.stream_spr.orth import _projection_rescaled, _safe_ratio

        if self.momentum is None:
            self.momentum = [torch.zeros_like(x) for x in g]
        c = self.momentum
        if not self._finite(g):
            self.skipped += 1
            return [torch.zeros_like(x) for x in g], "gradient"
        num, den = self._dot(g, c), self._dot(c, c) + self.eps
        if bool(torch.isfinite(num)) and bool(torch.isfinite(den)):
            coef = _safe_ratio(num, den)
            u = [x - coef * m for x, m in zip(g, c)]
        else:
            u = _projection_rescaled(g, c, self.eps)
        if not self._finite(u):
            self.skipped += 1
            return [torch.zeros_like(x) for x in g], "projected"
        new_c = [m.clone() for m in c]
        torch._foreach_mul_(new_c, self.beta)
        torch._foreach_add_(new_c, u if self.source == "projected" else g, alpha=1.0 - self.beta)
        if not self._finite(new_c):
            self.skipped += 1
            return [torch.zeros_like(x) for x in g], "overflows"
        torch._foreach_copy_(c, new_c)
        return u, None

    def decay(self):
        if self.momentum is not None:
            torch._foreach_mul_(self.momentum, self.beta)


@pytest.mark.parametrize("source", ["projected", "raw"])
@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_orth_fast_paths_give_the_reference_numbers_bit_for_bit(source, eps, caplog):
    gen = torch.Generator().manual_seed(7)
    shapes = [(16, 19, 3, 3), (16,), (64, 32), (5,)]
    fast, ref = OrthogonalMomentum(0.99, eps=eps, momentum_source=source), _ReferenceOrth(0.99, eps, source)
    for step in range(60):
        g = [torch.randn(*s, generator=gen) * 10.0 ** float(torch.randint(-6, 2, (), generator=gen)) for s in shapes]
        if step % 7 == 3:  # a zero gradient, a NaN, an inf, huge finite values, a projection that overflows
            kind = (step // 7) % 5
            if kind == 0:
                g = [torch.zeros_like(x) for x in g]
            elif kind == 1:
                g[2][3, 4] = math.nan
            elif kind == 2:
                g[0][1, 2, 0, 0] = -math.inf
            elif kind == 3:
                g = [x * 1e30 for x in g]
            else:
                g = [torch.full_like(x, 3e38) for x in g]
        if step % 5 == 4:
            fast.decay()
            ref.decay()
            continue
        want, why = ref(g)
        with caplog.at_level("WARNING"):
            got = fast(g)
        assert all(torch.equal(a, b) for a, b in zip(got, want)), step
        assert all(torch.equal(a, b) for a, b in zip(fast.momentum, ref.momentum)), step
        assert fast.skipped == ref.skipped
        if why is not None and fast.skipped == 1:  # the first skip is logged with its reason
            assert {"gradient": "NaN or inf", "projected": "projected gradient", "overflows": "overflows"}[why] \
                in caplog.text
    assert ref.skipped >= 3


def test_all_finite_trusts_only_finite_sums():
    from icml26.papers.stream_spr.orth import _all_finite

    big = torch.full((4,), 3e38)  # finite entries whose sum overflows: the elementwise test decides
    assert _all_finite([torch.ones(3), big]) and _all_finite([torch.zeros(0), torch.ones(2)])
    for bad in (math.nan, math.inf, -math.inf):
        assert not _all_finite([torch.ones(3), torch.tensor([1.0, bad])])
    assert not _all_finite([torch.tensor([math.inf, -math.inf])])  # a NaN sum


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_project_out_cosines_equals_the_three_calls(eps):
    from icml26.papers.stream_spr.orth import project_out_cosines

    gen = torch.Generator().manual_seed(3)
    for scale in (1e-6, 1.0, 1e3):
        s = [torch.randn(16, 4, 3, 3, generator=gen) * scale, torch.randn(16, generator=gen)]
        r = [torch.randn(16, 4, 3, 3, generator=gen), torch.randn(16, generator=gen) * scale]
        for ref in (r, [torch.zeros_like(x) for x in r]):
            out, before, after = project_out_cosines(s, ref, eps)
            want = project_out(s, ref, eps)
            assert all(torch.equal(a, b) for a, b in zip(out, want))
            assert before == cosine(s, ref) and after == cosine(want, ref)
    assert project_out_cosines([], []) == ([], 0.0, 0.0)


def test_trace_optimizer_zero_grad_in_place_matches_the_base_class():
    net = build_network((5,), 2, generator=torch.Generator().manual_seed(0))
    opt = ObGD(net.parameters())
    net(torch.ones(1, 5)).sum().backward()
    grads = [p.grad for p in net.parameters()]
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is g and not g.requires_grad and torch.equal(g, torch.zeros_like(g))
               for p, g in zip(net.parameters(), grads))  # zeroed in place, as torch.optim does
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_spr_rollout_checks_and_encodes_its_actions_once_with_the_same_values():
    gen = torch.Generator().manual_seed(1)
    encoder = build_network((10, 10, 4), 3, generator=gen).encoder
    head = SPRHead(encoder, encoder.latent_shape, 3, generator=gen)
    obs, actions = torch.randn(4, 10, 10, 4, generator=gen), torch.tensor([2, 0, 1])
    z, rolled = encoder(obs[:1]), []
    for k in range(3):  # the module called step by step, as before
        z = head.transition(z, actions[k:k + 1])
        rolled.append(z)
    want = head.predictor(head.projection(torch.cat(rolled)))
    assert torch.equal(head(encoder, obs, actions).predictions, want)
    with pytest.raises(ValueError, match="actions must lie"):
        head(encoder, obs, torch.tensor([0, 3, 1]))

def test_the_spr_agent_survives_a_nan_spr_gradient():
    from icml26.papers.stream_spr import stream_wrappers

    # One poisoned SPR backward (a NaN injected into the encoder's gradient) inside the agent:
    # the orth momenta stay finite, the step updates nothing through SPR, and training continues.
    agent = StreamQSPR(stream_wrappers(Frames(), gamma=0.99), epsilon_start=0.0, epsilon_end=0.0,
                       spr_depth=2, seed=5)
    weight = agent.groups["encoder"][0]
    poisoned = {"left": 1, "in_spr": False}
    spr_update = agent._spr_update

    def in_spr(*args):  # poison the SPR backward only, not the Q(λ) backward before it
        poisoned["in_spr"] = True
        try:
            return spr_update(*args)
        finally:
            poisoned["in_spr"] = False

    def hook(grad):
        if poisoned["in_spr"] and poisoned["left"]:
            poisoned["left"] -= 1
            return torch.full_like(grad, math.nan)
        return grad

    agent._spr_update = in_spr
    handle = weight.register_hook(hook)
    infos = [agent.step() for _ in range(10)]
    handle.remove()
    assert sum(i.spr_active for i in infos) >= 5 and poisoned["left"] == 0
    assert agent.orth["encoder"].skipped == 1
    for transform in agent.orth.values():
        assert all(torch.isfinite(c).all() for c in transform.momentum or [])
    params = list(agent.network.parameters()) + list(agent.spr.parameters())
    assert all(torch.isfinite(p).all() for p in params)


def test_running_statistics_refuse_non_finite_samples():
    from icml26.papers.stream_spr import RewardScaler, WelfordStats

    stats = WelfordStats((2,))
    stats.update(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="NaN"):
        stats.update(np.array([np.inf, 0.0]))
    assert stats.count == 1 and np.isfinite(stats.mean).all()
    with pytest.raises(ValueError, match="reward"):
        RewardScaler().scale(float("nan"), False)


# ---------------------------------------------------------------------------
# The reproduction's analysis, by hand
# ---------------------------------------------------------------------------
def test_reproduction_analysis_by_hand():
    from icml26.papers.stream_spr.analysis import (
        average_curves,
        binned_means,
        finite_mean,
        first_crossing,
        games_won,
        last_fraction_return,
        return_curve,
        return_ratio,
        window_minimum,
    )

    ends, rets = [10, 50, 95, 99], [1.0, 2.0, 5.0, 7.0]
    assert last_fraction_return(ends, rets, 100) == 6.0  # episodes ending at >= 90
    assert last_fraction_return([10], [3.0], 100) == 3.0  # none in the last 10 %: the last episode
    assert math.isnan(last_fraction_return([], [], 100))
    assert return_curve(ends, rets, [5, 60, 100], window=2) == [None, 1.5, 6.0]
    curve = binned_means([2.0, 0.0, -3.0], [2, 0, 3])
    assert curve[0] == 1.0 and math.isnan(curve[1]) and curve[2] == -1.0
    assert window_minimum(curve, [10, 20, 30], 20) == 1.0  # bins ending at 10 and 20
    assert window_minimum(curve, [10, 20, 30], 5) == 1.0   # the first bin always counts
    assert finite_mean([1.0, None, float("nan"), 3.0]) == 2.0
    assert average_curves([[1.0, None], [3.0, None]]) == [2.0, None]
    assert first_crossing([10, 20, 30], [-0.5, -0.9, -0.95], -0.8) == 20
    assert return_ratio(4.12, 3.38) == pytest.approx(1.2189, rel=1e-4) and math.isnan(return_ratio(1.0, 0.0))
    assert games_won({"a": 2.0, "b": 1.0, "c": 5.0}, {"a": 1.0, "b": 1.0, "c": 4.0}) == 2


def test_paired_gaps_by_hand():
    from icml26.papers.stream_spr.analysis import paired_gaps

    # gaps 1, 2, 3: mean 2, sd 1, t_{0.975, 2} = 4.302653 -> half-width 4.302653 / sqrt(3) = 2.484138
    gaps = paired_gaps({"a": [2.0, 4.0, 6.0], "b": [1.0]}, {"a": [1.0, 2.0, 3.0], "b": [3.0]})
    assert gaps["a"]["mean"] == pytest.approx(2.0) and gaps["a"]["sd"] == pytest.approx(1.0)
    assert (gaps["a"]["ci_low"], gaps["a"]["ci_high"]) == pytest.approx((2.0 - 2.484138, 2.0 + 2.484138), rel=1e-6)
    assert gaps["b"] == {"mean": -2.0, "sd": None, "n": 1, "ci_low": -2.0, "ci_high": -2.0}
    # pairing is by seed: swapping the baseline's seeds changes the interval, not the mean
    swapped = paired_gaps({"a": [2.0, 4.0, 6.0]}, {"a": [3.0, 2.0, 1.0]})["a"]
    assert swapped["mean"] == pytest.approx(2.0) and swapped["sd"] == pytest.approx(3.0)
    # a seed without a value on one side drops that pair only (the others keep their pairing)
    dropped = paired_gaps({"a": [2.0, float("nan"), 6.0]}, {"a": [1.0, 2.0, 3.0]})["a"]
    assert dropped["n"] == 2 and dropped["mean"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="confidence"):
        paired_gaps({"a": [1.0, 2.0]}, {"a": [0.0, 0.0]}, confidence=1.5)
    with pytest.raises(ValueError, match="same games"):
        paired_gaps({"a": [1.0]}, {"b": [1.0]})
    with pytest.raises(ValueError, match="pair by seed"):
        paired_gaps({"a": [1.0, 2.0]}, {"a": [1.0]})


def test_agent_and_probe_streams_give_every_game_and_seed_its_own_seed():
    from icml26.contract import RunContext
    from icml26.papers.stream_spr.experiment import STREAMS

    ctx = RunContext(seed=3, device=torch.device("cpu"), setting="tiny", threads=1, streams=STREAMS)
    agents = {ctx.seed_for("agent", game + (seed << 32)) % (2**31 - 1) for game in range(5) for seed in range(5)}
    probes = {ctx.seed_for("probe", game) % (2**31 - 1) for game in range(5)}
    assert len(agents) == 25 and len(probes) == 5 and not agents & probes


# ---------------------------------------------------------------------------
# Reproducibility (issue #30): the numbers do not depend on how the runs are spread over processes
# ---------------------------------------------------------------------------
def test_in_process_and_two_worker_processes_give_identical_metrics(one_thread):
    from icml26.runner import execute

    overrides = {"total_steps": 300, "probe_states": 32, "curve_points": 3, "loss_window": 300}
    one, _ = execute("stream_spr", "tiny", 3, {**overrides, "processes": 1}, threads=1, progress=False, render=False)
    two, _ = execute("stream_spr", "tiny", 3, {**overrides, "processes": 2}, threads=1, progress=False, render=False)
    assert one["metrics"] == two["metrics"]  # bit for bit, NaN-free
    assert one["metrics"]["spr_orth2"]["spr_update_fraction"] > 0


def test_full_mode_reports_each_seed_and_the_paired_gaps(one_thread):
    from icml26.runner import execute

    overrides = {"games": "breakout,space_invaders", "seeds": 2, "total_steps": 300, "probe_states": 32,
                 "curve_points": 3, "loss_window": 300, "processes": 1}
    data, figures = execute("stream_spr", "tiny", 3, overrides, threads=1, progress=False)
    by_seed = data["curves"]["returns_by_seed"]
    assert by_seed["x"] == [0, 1] and len(by_seed["series"]) == 2 * 2  # games x arms
    for game in ("breakout", "space_invaders"):
        for arm in ("spr_orth2", "stream_q"):
            seeds = by_seed["series"][f"{arm} · {game}"]
            assert data["metrics"][arm][f"return_{game}"] == pytest.approx(sum(seeds) / 2)
    note = next(n for n in data["notes"] if n.startswith("SPR+orth² minus Stream Q(λ)"))
    m, b = by_seed["series"]["spr_orth2 · space_invaders"], by_seed["series"]["stream_q · space_invaders"]
    assert f"space_invaders {(m[0] - b[0] + m[1] - b[1]) / 2:+.2f} [" in note and "Games won on each seed alone" in note
    assert "returns_by_seed.png" in figures and figures["returns_by_seed.png"][:4] == b"\x89PNG"


def test_a_budget_too_short_for_an_episode_is_a_clear_error(one_thread):
    from icml26.runner import execute

    overrides = {"games": "freeway", "total_steps": 200, "probe_states": 32, "curve_points": 2, "loss_window": 200}
    with pytest.raises(ValueError, match=r"non-finite metrics: spr_orth2\.return_last10pct=nan.*larger budget"):
        execute("stream_spr", "tiny", 0, overrides, threads=1, progress=False, render=False)


def test_the_loss_bar_window_is_twice_naive_sprs_20k_steps():
    from icml26.papers.stream_spr.claims import CHECKS
    from icml26.papers.stream_spr.experiment import Config

    spec = CHECKS["spr_loss_early"]
    assert (spec.op, spec.target) == ("<", -0.8) and "issue #30" in spec.ref
    assert Config.quick().loss_window == Config().loss_window == 2 * 20_000
