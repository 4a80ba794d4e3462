"""robust_ntp: learner identities, the robustified model, regret and TV bounds, students, checked
conditionals and the baselines.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.robust_ntp import (
    Cycling,
    EpsilonGreedy,
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
    running_regret,
    smoothed_best_response,
    tv_distance_mc,
    windowed,
)
from icml26.papers.robust_ntp import BASELINES, METHOD, unrobustified, windowed_robustified
from tests.papers._robust_ntp_helpers import L


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


def _reference_game(model, adversary, horizon, beta, rng, robust=None):
    """The protocol written out round by round (a fresh Γ_β per round, no memo): what play must match bit for
    bit. With ``robust`` (a :class:`Robustified` of ``model``) the learner follows D′'s fallback rule."""
    history, mixtures, trigger = [], [], None
    learner, action, counts = 0.0, np.zeros(L.shape[0]), np.zeros(3)
    for t in range(horizon):
        if trigger is None:
            p = np.asarray(model.conditional(history), dtype=np.float64)
        else:
            p = counts / counts.sum() if counts.sum() else np.full(3, 1 / 3)
        q = smoothed_best_response(p, L, beta)
        y = adversary.next_token(list(history), q, L, rng)
        if robust is not None and trigger is None:
            learner += float(q @ L[:, y])
            action += L[:, y]
            if learner - action.min() > robust.threshold:
                trigger = t + 1
        elif robust is not None:
            counts[y] += 1
        history.append(y)
        mixtures.append(q)
    return np.array(history), np.array(mixtures), trigger


@pytest.mark.parametrize("adversary", [Greedy(), Cycling(), RandomTokens(), EpsilonGreedy(0.3),
                                       ImitateThenSwitch(STICKY, 70)], ids=lambda a: type(a).__name__)
def test_play_is_bit_identical_to_the_protocol_written_out(adversary):
    """play memoises checks and responses per distinct conditional: the numbers must not move at all."""
    T = 200
    beta = math.sqrt(T)
    robust = Robustified(STICKY, L, beta, 0.5 * math.sqrt(T))
    # (the model played, what the reference plays, the fallback rule it applies)
    cases = [(STICKY, STICKY, None), (robust, STICKY, robust), (windowed(robust, 16), windowed(robust, 16), None)]
    for model, reference, rule in cases:
        game = play(model, adversary, T, L, beta, np.random.default_rng(4))
        tokens, mixtures, trigger = _reference_game(reference, adversary, T, beta, np.random.default_rng(4), rule)
        assert np.array_equal(game.tokens, tokens) and np.array_equal(game.mixtures, mixtures)
        assert game.trigger == trigger
        if rule is not None and isinstance(adversary, (Greedy, EpsilonGreedy)):
            assert trigger is not None  # the fallback path is exercised too


def test_fallback_conditionals_are_the_running_counts_bit_for_bit():
    T = 300
    beta = math.sqrt(T)
    robust = Robustified(STICKY, L, beta, math.sqrt(T))
    seq = play(robust, Greedy(), T, L, beta).tokens
    t0 = robust.trigger_time(seq)
    assert t0 is not None and t0 < T - 10
    out = robust.conditionals(seq)
    counts = np.zeros(3)
    for t in range(t0 + 1, T + 1):
        counts[seq[t - 1]] += 1
        assert np.array_equal(out[t], counts / counts.sum())
    assert np.array_equal(out[t0], np.full(3, 1 / 3))


def test_response_memo_answers_repeats_from_the_memo_and_never_remembers_a_bad_conditional():
    from icml26.papers.robust_ntp.learner import _ResponseMemo

    memo = _ResponseMemo(L, 4.0)
    p = memo.checked("p", [0.2, 0.3, 0.5])
    q = memo.response(p)
    assert np.array_equal(q, smoothed_best_response(p, L, 4.0))
    assert memo.response(memo.checked("p", np.array([0.2, 0.3, 0.5]))) is q  # a repeat: the same array
    assert not np.array_equal(memo.response(memo.checked("p", [0.5, 0.3, 0.2])), q)
    for _ in range(2):  # a bad conditional raises every time it comes
        with pytest.raises(ValueError, match="sum to 1"):
            memo.checked("p", [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="3 tokens"):
        memo.checked("p", [0.5, 0.5])


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


def test_trigger_frequency_is_below_the_azuma_bound_where_both_are_informative():
    """Matching pennies, an almost fair iid opponent, a large β: the learner plays (almost) pure
    action 0, so the regret against action 1 is a ±1 random walk with drift −2δ, the case the
    Azuma bound (increments in [−1, 1]) is built for. Thresholds where triggers do happen."""
    pennies = np.array([[0.0, 1.0], [1.0, 0.0]])
    delta, beta, T = 1e-3, 1e4, 400
    opponent = IIDModel([0.5 + delta, 0.5 - delta])
    seqs = opponent.sample(4000, T, np.random.default_rng(4))
    p = np.broadcast_to(opponent.p, seqs.shape + (2,))
    reg = running_regret(p, seqs, pennies, beta)[:, 1:]
    for tau in (30.0, 40.0, 50.0):
        bound = azuma_trigger_bound(T, tau, beta, 2)
        # by hand: |A| exp(−(τ − T ln|A|/β)² / (2T))
        assert bound == pytest.approx(2 * math.exp(-((tau - T * math.log(2) / beta) ** 2) / (2 * T)))
        rate = (reg > tau).any(axis=1).mean()
        # the reflection principle puts the rate near 2·P[N(0, T) > τ]: 0.13, 0.046, 0.012
        assert 0 < rate <= bound < 1
        # the bound is informative here, not vacuous: measured bound/rate 5.5, 6.5, 10.4
        # (the union bound over |A| and the Gaussian tail's missing 1/τ factor)
        assert bound < 15 * rate
    # below the drift T ln|A| / β the bound says nothing
    assert azuma_trigger_bound(T, 0.01, beta, 2) == 1.0


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


# --------------------------------------------------------------------------- issue #29: checked conditionals
class _Fixed:
    n_tokens = 3

    def __init__(self, p):
        self.p = np.asarray(p, dtype=float)

    def conditional(self, history):
        return self.p


@pytest.mark.parametrize("p,match", [([np.nan] * 3, "NaN"), ([0.5, 0.5, 0.5], "sum to 1"),
                                     ([1.2, -0.2, 0.0], "non-negative"), ([0.5, 0.5], "3 tokens")])
def test_play_and_robustified_refuse_a_broken_conditional(p, match):
    with pytest.raises(ValueError, match=match):
        play(_Fixed(p), Greedy(), 4, L, 2.0)
    with pytest.raises(ValueError, match=match if match != "3 tokens" else "shape"):
        Robustified(_Fixed(p), L, 2.0, 1.0).conditionals([0, 1])


def test_a_float32_model_summing_to_one_within_rounding_is_accepted():
    p = np.array([0.2, 0.3, 0.5], dtype=np.float32)
    assert play(_Fixed(p), Greedy(), 4, L, 2.0).regret >= 0


def test_issue_18_cases_raise_clear_errors():
    with pytest.raises(ValueError, match="eta"):
        hedge_weights([0], L, -0.5)  # negative η used to be accepted
    with pytest.raises(ValueError, match="token -1"):
        STICKY.conditional([0, -1])  # a negative token used to wrap around to the last one
    with pytest.raises(ValueError, match="horizon"):
        regret_bound(0, 1.0, 1.0, 3)  # used to be a ZeroDivisionError / math domain error


# --------------------------------------------------------------------------- baselines
def test_baselines_are_drop_in_and_do_what_they_say():
    assert METHOD is Robustified and set(BASELINES) == {"raw", "windowed_robustified"}
    T = 512
    beta, tau = math.sqrt(T), math.sqrt(T)
    assert unrobustified(STICKY, L, beta, tau) is STICKY
    short = windowed_robustified(STICKY, L, beta, tau, window=16)
    game = play(short, Greedy(), T, L, beta)
    # through a 16-token window D′ never sees its regret build up: as bad as the raw model
    assert game.regret / T > 0.4 and play(Robustified(STICKY, L, beta, tau), Greedy(), T, L, beta).regret / T < 0.2
