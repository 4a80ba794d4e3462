"""robust_ntp: learner identities, the robustified model, regret and TV bounds, students."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.robust_ntp import (
    Cycling,
    Greedy,
    IIDModel,
    ImitateThenSwitch,
    MarkovModel,
    RandomTokens,
    Robustified,
    TorchNextTokenModel,
    azuma_trigger_bound,
    conditionals,
    hedge_weights,
    log_likelihood,
    play,
    regret,
    regret_bound,
    rock_paper_scissors,
    running_regret,
    smoothed_best_response,
    tv_distance_mc,
    windowed,
)

L = rock_paper_scissors()
STICKY = MarkovModel.sticky(3, 0.8)


def test_rps_loss_by_hand():
    # rows: actions R, P, S; columns: opponent's R, P, S
    assert np.array_equal(L, [[0.5, 1.0, 0.0], [0.0, 0.5, 1.0], [1.0, 0.0, 0.5]])


def test_regret_by_hand():
    tokens = [0, 0, 1]  # R, R, P
    # playing R three times loses 0.5 + 0.5 + 1 = 2; the best fixed action P loses 0 + 0 + 0.5
    assert regret(np.array([0, 0, 0]), tokens, L) == pytest.approx(2.0 - 0.5)
    uniform = np.full((3, 3), 1 / 3)
    assert regret(uniform, tokens, L) == pytest.approx(1.5 - 0.5)


def test_smoothed_best_response_of_empirical_is_hedge():
    rng = np.random.default_rng(0)
    for _ in range(20):
        tokens = rng.integers(3, size=rng.integers(1, 200))
        beta = float(rng.uniform(0.5, 50))
        empirical = np.bincount(tokens, minlength=3) / tokens.size
        # Γ_β(p̂_n) = Hedge weights with η = β / n
        assert np.allclose(smoothed_best_response(empirical, L, beta), hedge_weights(tokens, L, beta / tokens.size),
                           atol=1e-12, rtol=0)


def test_robustified_equals_original_until_the_crossing():
    rng = np.random.default_rng(1)
    T = 256
    beta, tau = math.sqrt(T), 2 * math.sqrt(T)
    robust = Robustified(STICKY, L, beta, tau)
    for seq in STICKY.sample(50, T, rng):
        assert robust.trigger_time(seq) is None
        assert np.array_equal(robust.conditionals(seq), conditionals(STICKY, seq))  # bit for bit
    game = play(robust, Greedy(), T, L, beta)
    t0 = robust.trigger_time(game.tokens)
    assert t0 is not None and t0 == game.trigger
    both = robust.conditionals(game.tokens), conditionals(STICKY, game.tokens)
    assert np.array_equal(both[0][: t0], both[1][: t0])
    assert np.allclose(both[0][t0], 1 / 3)  # uniform right after the crossing
    after = game.tokens[t0:t0 + 10]
    assert np.allclose(both[0][t0 + 10], np.bincount(after, minlength=3) / 10)


def test_stream_and_batch_paths_agree():
    """Two code paths: the incremental stream used by play and the batch conditionals."""
    T = 300
    beta, tau = math.sqrt(T), 2 * math.sqrt(T)
    robust = Robustified(STICKY, L, beta, tau)
    for adversary in (Greedy(), Cycling(), ImitateThenSwitch(STICKY, 100)):
        game = play(robust, adversary, T, L, beta, np.random.default_rng(2))
        batch = smoothed_best_response(robust.conditionals(game.tokens)[:-1], L, beta)
        assert np.allclose(game.mixtures, batch, atol=1e-12)
        assert game.regret == pytest.approx(regret(batch, game.tokens, L), abs=1e-9)


@pytest.mark.parametrize("horizon", [64, 512, 2048])
def test_regret_bound_holds_against_every_adversary(horizon):
    beta = math.sqrt(horizon)
    for tau in (math.sqrt(horizon), horizon ** 0.75):
        robust = Robustified(STICKY, L, beta, tau)
        bound = regret_bound(horizon, tau, beta, 3)
        for seed, adversary in enumerate([Greedy(), Cycling(), Cycling([0, 0, 1]), RandomTokens(),
                                          ImitateThenSwitch(STICKY, horizon // 3)]):
            assert play(robust, adversary, horizon, L, beta, np.random.default_rng(seed)).regret <= bound


def test_raw_model_suffers_linear_regret_against_greedy():
    # against greedy, the learner loses max_y (qᵀL)_y >= mean_y (qᵀL)_y = 1/2 every round
    game = play(STICKY, Greedy(), 1000, L, math.sqrt(1000))
    learner = (game.mixtures * L[:, game.tokens].T).sum(axis=1)
    assert learner.min() >= 0.5 - 1e-12
    assert game.regret / 1000 > 0.45


def test_running_regret_batch_equals_loop():
    rng = np.random.default_rng(3)
    seqs = STICKY.sample(5, 40, rng)
    p = np.stack([conditionals(STICKY, s)[:-1] for s in seqs])
    batch = running_regret(p, seqs, L, 6.0)
    for s, row in zip(seqs, batch):
        q = smoothed_best_response(conditionals(STICKY, s)[:-1], L, 6.0)
        loop = [0.0] + [regret(q[:t], s[:t], L) for t in range(1, 41)]
        assert np.allclose(row, loop, atol=1e-12)


def test_trigger_frequency_is_below_the_azuma_bound():
    """iid uniform opponent: the learner's regret is a random walk with drift 0."""
    T, beta = 400, 40.0
    uniform = IIDModel([1 / 3] * 3)
    seqs = uniform.sample(4000, T, np.random.default_rng(4))
    p = np.full(seqs.shape + (3,), 1 / 3)
    reg = running_regret(p, seqs, L, beta)[:, 1:]
    for tau in (50.0, 60.0, 70.0):
        bound = azuma_trigger_bound(T, tau, beta, 3)
        # by hand: |A| exp(−(τ − T ln|A|/β)² / (2T))
        assert bound == pytest.approx(3 * math.exp(-((tau - T * math.log(3) / beta) ** 2) / (2 * T)))
        assert bound < 1
        assert (reg > tau).any(axis=1).mean() <= bound
    # below the drift T ln|A| / β the bound says nothing
    assert azuma_trigger_bound(T, 10.0, beta, 3) == 1.0
    # the walk does wander: triggers at lower thresholds are common
    assert (reg > 10.0).any(axis=1).mean() > 0.05


def test_tv_is_zero_without_triggers_and_bounded_by_the_trigger_rate():
    rng = np.random.default_rng(5)
    T = 128
    never = Robustified(STICKY, L, math.sqrt(T), 1e9)
    assert tv_distance_mc(STICKY, never, T, 30, rng)[0] == 0.0
    uniform = IIDModel([1 / 3] * 3)
    tight = Robustified(uniform, L, math.sqrt(T), 5.0)
    tv, se = tv_distance_mc(uniform, tight, T, 300, rng)
    seqs = uniform.sample(2000, T, rng)
    rate = np.mean([tight.trigger_time(s) is not None for s in seqs])
    assert 0 < tv <= rate + 3 * se


def test_robustifying_a_low_regret_model_changes_nothing_typical():
    T = 512
    uniform = IIDModel([1 / 3] * 3)
    robust = Robustified(uniform, L, math.sqrt(T), T ** 0.75)
    seqs = uniform.sample(300, T, np.random.default_rng(6))
    triggered = [robust.trigger_time(s) is not None for s in seqs]
    assert np.mean(triggered) < 0.01
    for s, hit in zip(seqs[:20], triggered[:20]):
        if not hit:
            assert np.array_equal(robust.conditionals(s), conditionals(uniform, s))


def test_prefix_invariance():
    rng = np.random.default_rng(7)
    robust = Robustified(STICKY, L, 16.0, 10.0)
    game = play(robust, Greedy(), 200, L, 16.0)
    full = robust.conditionals(game.tokens)
    for t in (0, 1, 30, 120, 200):
        assert np.array_equal(robust.conditional(game.tokens[:t]), full[t])
        extended = np.concatenate([game.tokens[:t], rng.integers(3, size=17)])
        assert np.array_equal(robust.conditionals(extended)[: t + 1], full[: t + 1])


def test_bounded_context_cannot_be_rescued():
    """With a 32-token window the robustified model never sees its regret build up."""
    T = 1024
    beta, tau = math.sqrt(T), 2 * math.sqrt(T)
    robust = Robustified(STICKY, L, beta, tau)
    full = play(robust, Greedy(), T, L, beta).regret / T
    short = play(windowed(robust, 32), Greedy(), T, L, beta).regret / T
    assert full < 0.1 and short > 0.4


def test_torch_wrapper_and_log_likelihood():
    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.logits = torch.nn.Parameter(torch.tensor([0.0, 1.0, 2.0, 5.0]))  # last: BOS, ignored

        def forward(self, ids):
            return self.logits.expand(ids.shape[0], ids.shape[1], 4)

    model = TorchNextTokenModel(Fixed(), 3)
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert np.allclose(model.conditional([0, 2]), p)
    assert log_likelihood(model, [2, 2, 0]) == pytest.approx(np.log(p[2]) * 2 + np.log(p[0]))
    assert log_likelihood(STICKY, [1, 1]) == pytest.approx(np.log(1 / 3) + np.log(0.8 + 0.2 / 3))


def test_bad_inputs():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        Robustified(STICKY, 2 * L, 1.0, 1.0)
    with pytest.raises(ValueError, match="token columns"):
        Robustified(STICKY, L[:, :2], 1.0, 1.0)
    with pytest.raises(ValueError, match="beta"):
        Robustified(STICKY, L, 0.0, 1.0)
    with pytest.raises(ValueError, match="sum to 1"):
        IIDModel([0.5, 0.6])
    with pytest.raises(ValueError, match="square"):
        MarkovModel(np.ones((2, 3)) / 3)


def test_readme_usage_example():
    my_model = MarkovModel.sticky(3, 0.9)
    loss = rock_paper_scissors()
    robust = Robustified(my_model, loss, beta=32.0, threshold=64.0)
    result = play(robust, Greedy(), horizon=1024, loss=loss, beta=32.0)
    raw = play(my_model, Greedy(), horizon=1024, loss=loss, beta=32.0)
    assert result.regret < 0.3 * raw.regret and result.trigger is not None
