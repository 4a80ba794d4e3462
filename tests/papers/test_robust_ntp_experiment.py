"""robust_ntp's reproduction pieces: the analysis by hand, the budget curve, the searching adversary
against a brute-force worst sequence, and the pretrained-LM section.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.robust_ntp import (
    Cycling,
    Greedy,
    MarkovModel,
    RandomTokens,
    Robustified,
    TinyCausalTransformer,
    TorchNextTokenModel,
    conditionals,
    log_likelihood,
    play,
)
from icml26.papers.robust_ntp.analysis import markov_conditionals, max_ratio, ratio, regret_per_round, trigger_rate
from tests.papers._robust_ntp_helpers import L


# --------------------------------------------------------------------------- analysis (hand computations)
def test_analysis_by_hand():
    assert regret_per_round(12.0, 48) == 0.25
    assert ratio(0.1, 0.5) == pytest.approx(0.2) and math.isnan(ratio(1.0, 0.0)) and math.isnan(ratio(0, 0))
    assert max_ratio([1.0, 4.0, 2.0], 8.0) == 0.5
    # three sequences, τ = 1: the second crosses at s = 2, the third only touches 1 (not >)
    regrets = np.array([[0.0, 0.5, 0.5], [0.0, 0.5, 1.5], [0.0, 1.0, 1.0]])
    assert trigger_rate(regrets, 1.0) == pytest.approx(1 / 3)
    # R_0 is never counted, even above τ
    assert trigger_rate(np.array([[5.0, 0.0, 0.0]]), 1.0) == 0.0
    initial, transition = np.array([0.2, 0.8]), np.array([[0.9, 0.1], [0.3, 0.7]])
    p = markov_conditionals(initial, transition, np.array([[1, 0, 0]]))
    assert p.shape == (1, 3, 2)
    assert np.array_equal(p[0], [[0.2, 0.8], [0.3, 0.7], [0.9, 0.1]])
    model = MarkovModel(transition, initial)
    assert np.array_equal(p[0], conditionals(model, [1, 0, 0])[:-1])  # two code paths, one answer


# --------------------------------------------------------------------------- issue #29: the budget curve
def test_budget_curve_config_and_run():
    import dataclasses

    import torch

    from icml26.contract import RunContext
    from icml26.papers.robust_ntp.experiment import STREAMS, Config, run

    with pytest.raises(ValueError, match="same length"):
        Config(curve_sequences=(30,), curve_steps=())
    with pytest.raises(ValueError, match="curve_sequences"):
        Config(curve_sequences=(2,), curve_steps=(1,))
    assert (Config.quick().distill_sequences, Config.quick().distill_steps) == (6000, 1500)
    assert (Config().distill_sequences, Config().distill_steps) == (12_000, 3000)  # the full setting
    cfg = dataclasses.replace(Config.tiny(), horizons=(16,), curve_sequences=(30, 60), curve_steps=(2, 3),
                              curve_seeds=2)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=STREAMS)
    out = run(cfg, ctx)
    curve = out.metrics["budget_curve"]
    assert len([k for k in curve if k.startswith("robust_over_raw_student_")]) == 4  # 2 budgets x 2 replicates
    raw = out.metrics["distilled_raw"]["regret_per_round_T24"]
    for key, value in curve.items():
        if key.startswith("robust_over_raw_student_"):
            tag = key[len("robust_over_raw_student_"):]
            assert value == pytest.approx(curve[f"robust_student_regret_{tag}"] / raw)
    assert list(out.curves["budget_curve"].labels) == ["30 x 2", "60 x 3"]


# --------------------------------------------------------------------------- the searching adversary
def test_sequence_regrets_equal_play_and_batch_conditionals_equal_the_loop():
    from icml26.papers.robust_ntp.search import batch_conditionals, sequence_regrets

    model = MarkovModel.sticky(3, 0.8)
    robust = Robustified(model, L, 4.0, 3.0)
    torch.manual_seed(0)
    student = TorchNextTokenModel(TinyCausalTransformer(3, 16, d_model=16, n_layers=1, n_heads=2), 3)
    for m in (model, robust, student):
        games = [play(m, adv, 16, L, 4.0, 1) for adv in (Greedy(), Cycling(), RandomTokens())]
        seqs = np.stack([g.tokens for g in games])
        assert sequence_regrets(m, seqs, L, 4.0) == pytest.approx([g.regret for g in games], abs=1e-6)  # float32 student
        loop = np.stack([conditionals(m, s)[:-1] for s in seqs])
        assert batch_conditionals(m, seqs) == pytest.approx(loop, abs=1e-6)


@pytest.mark.parametrize("robust", [False, True])
def test_search_finds_the_brute_force_worst_sequence_and_beats_greedy(robust):
    import itertools

    from icml26.papers.robust_ntp.search import search_worst_sequence, sequence_regrets

    horizon, beta = 7, math.sqrt(7)
    model = MarkovModel.sticky(3, 0.8)
    target = Robustified(model, L, beta, 1.0) if robust else model
    every = np.array(list(itertools.product(range(3), repeat=horizon)))
    worst = sequence_regrets(target, every, L, beta).max()
    res = search_worst_sequence(target, horizon, L, beta, 0, population=32, generations=80, seed_model=model)
    greedy = play(target, Greedy(), horizon, L, beta).regret
    assert res.greedy_regret == pytest.approx(greedy)
    assert res.regret == pytest.approx(sequence_regrets(target, res.tokens[None], L, beta)[0])
    assert res.regret >= 0.95 * worst and worst > greedy + 0.5  # greedy is far from the worst case here
    assert np.all(np.diff(res.best_per_generation) >= 0)  # elitist: the best never gets worse


def test_post_trigger_tv_reads_only_the_positions_after_the_fallback():
    from icml26.papers.robust_ntp.search import post_trigger_tv

    model = MarkovModel.sticky(3, 0.8)
    robust = Robustified(model, L, 4.0, 2.0)
    triggered = play(robust, Greedy(), 24, L, 4.0).tokens
    t0 = robust.trigger_time(triggered[:-1])
    assert t0 is not None
    assert post_trigger_tv(robust, robust, triggered[None]) == 0.0
    # the raw model never falls back: after t0 its TV to D' is D's distance to the empirical frequency
    p_raw, p_rob = conditionals(model, triggered)[:-1], robust.conditionals(triggered)[:-1]
    by_hand = 0.5 * np.abs(p_raw - p_rob).sum(axis=1)[t0:].mean()
    assert post_trigger_tv(robust, model, triggered[None]) == pytest.approx(by_hand)
    assert by_hand > 0.1
    quiet = model.sample(2, 24, np.random.default_rng(0))
    assert robust.trigger_time(quiet[0]) is None and robust.trigger_time(quiet[1]) is None
    assert math.isnan(post_trigger_tv(robust, model, quiet))


def test_tiny_run_reports_the_search():
    from icml26.contract import RunContext
    from icml26.papers.robust_ntp.experiment import STREAMS, Config, run

    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1, show_progress=False,
                     streams=STREAMS)
    out = run(Config.tiny(), ctx)
    checks = {c.id: c for c in out.checks}
    robust, raw = out.metrics["distilled_robust"], out.metrics["distilled_raw"]
    assert checks["student_ratio_search"].value == pytest.approx(
        robust["search_regret_per_round_T24"] / raw["search_regret_per_round_T24"])
    for arm in (robust, raw):  # the search starts from the greedy game, so it is never below it
        assert arm["search_regret_per_round_T24"] >= arm["regret_per_round_T24"] - 1e-12
    assert out.metrics["robustified"]["search_regret_per_round_T24"] >= \
        out.metrics["robustified"]["regret_per_round_T24"] - 1e-12
    assert checks["teacher_search_over_bound"].value <= 1.0


# --------------------------------------------------------------------------- the pretrained-LM section
def _tiny_lm(vocab=6, horizon=16):
    torch.manual_seed(3)
    return TinyCausalTransformer(vocab, horizon, d_model=16, n_layers=1, n_heads=2)


def test_token_classes_and_class_loss_by_hand():
    from icml26.papers.robust_ntp.natural import class_loss, token_classes

    assert list(token_classes(["Ġthe", "Ċ", "ing", ",", "12", "<|endoftext|>", " a", ""])) == [0, 0, 2, 1, 1, 2, 0, 1]
    assert class_loss(np.array([0, 2, 1])).tolist() == [[0, 1, 1], [1, 1, 0], [1, 0, 1]]


def test_lm_samples_record_the_model_conditionals():
    from icml26.papers.robust_ntp.natural import lm_samples

    module, classes = _tiny_lm(), np.array([0, 1, 2, 0, 1, 2])
    tokens, marg, logp = lm_samples(module, 3, 10, 6, 6, classes, seed=0)
    model = TorchNextTokenModel(module, 6)
    for seq, m, lp in zip(tokens, marg, logp):
        p = conditionals(model, seq)[:-1]
        assert lp == pytest.approx(np.log(p[np.arange(10), seq]), abs=1e-6)
        assert m == pytest.approx(np.stack([p[:, classes == c].sum(1) for c in range(3)], 1), abs=1e-6)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_lm_samples_with_a_hf_cache_equal_recomputing_the_prefix(arch):
    """A Hugging Face model is sampled through its key/value cache under the keyword its forward takes
    (common.hf.cache_kwarg): the same draws as rerunning the whole prefix."""
    from icml26.common.tiny_lm import TinyLMConfig, build_model
    from icml26.papers.robust_ntp.natural import lm_samples

    hf = build_model(TinyLMConfig(arch=arch, vocab_size=12, d_model=16, n_layers=2, n_heads=2, context=16), seed=1)
    hf.eval()

    class Plain(torch.nn.Module):  # no .config: lm_samples recomputes the prefix every step
        def __init__(self):
            super().__init__()
            self.inner = hf

        def forward(self, ids):
            return self.inner(input_ids=ids).logits

    classes = np.array([0, 1, 2] * 4)
    cached = lm_samples(hf, 4, 12, 10, 11, classes, seed=5)
    plain = lm_samples(Plain(), 4, 12, 10, 11, classes, seed=5)
    assert np.array_equal(cached[0], plain[0])
    assert np.allclose(cached[1], plain[1], atol=1e-6) and np.allclose(cached[2], plain[2], atol=1e-6)


def test_natural_text_study_matches_the_robustified_model_written_out():
    from icml26.papers.robust_ntp.natural import _sample_tv, class_loss, natural_text_study

    module, classes, horizon = _tiny_lm(), np.array([0, 1, 2, 0, 1, 2]), 16
    loss, beta = class_loss(classes), math.sqrt(horizon)
    model = TorchNextTokenModel(module, 6)
    robust = Robustified(model, loss, beta, beta)
    # a window of class-0 tokens only (the learner, close to uniform, loses about 2/3 a round against an action
    # that loses nothing: D' falls back) and a mixed one
    attacked = np.array([0, 3] * (horizon // 2))
    windows = np.stack([attacked, np.arange(horizon) % 6])
    t0 = robust.trigger_time(attacked[:-1])
    assert t0 is not None
    out = natural_text_study(module, 6, 6, classes, windows, 4, seed=0)
    tv = [0.5 * np.abs(conditionals(model, w)[:-1] - robust.conditionals(w)[:-1]).sum(1).mean() for w in windows]
    fired = [robust.trigger_time(w[:-1]) is not None for w in windows]
    assert out["trigger_rate_natural_text"] == pytest.approx(np.mean(fired))
    assert out["per_position_tv_natural_text"] == pytest.approx(np.mean(tv))
    assert out["per_position_tv_natural_text"] > 0
    # the sequence-level TV of one triggered sequence, against the two log-likelihoods
    logp = np.log(conditionals(model, attacked)[np.arange(horizon), attacked])
    by_hand = max(0.0, 1.0 - math.exp(log_likelihood(robust, attacked) - log_likelihood(model, attacked)))
    assert _sample_tv(attacked[None], logp[None], [t0], 6)[0] == pytest.approx(by_hand, abs=1e-9)
    assert _sample_tv(attacked[None], logp[None], [None], 6)[0] == 0.0
