"""Tests of the HiCI reproduction's scoring and timing reads: the answer NLL against a direct forward,
the PI-only row and the own-mode / full-mode differences of a tiny run, the interleaved-rounds
benchmark's order, and the per-round slopes by hand."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers import hici  # noqa: E402
from icml26.papers.hici import HiCIConfig, TopicRetrievalTask  # noqa: E402
from icml26.papers.hici.training import topic_scores  # noqa: E402

SMALL = dict(bottleneck=16, stat_dim=8, num_heads=4, num_slots=3, num_global=2)


def test_answer_nll_is_the_direct_forward_cross_entropy(one_thread):
    """-log softmax(logits at QUERY)[answer] over the whole vocabulary, from an unshortened forward."""
    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=8, topic_tokens_each=6)
    docs = task.sample(10, 4, np.random.default_rng(1))
    config = transformers.LlamaConfig(vocab_size=task.vocab_size, hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(config).eval()
    chunked = hici.patch(copy.deepcopy(base), HiCIConfig(num_slots=0, num_global=0, segment_size=8))
    for model, context in ((base, None), (chunked, 8)):
        with torch.no_grad():
            last = model(input_ids=docs.input_ids, use_cache=False).logits[:, -1].double()
        expected = -torch.log_softmax(last, -1)[torch.arange(10), docs.answer].numpy()
        scores = topic_scores(model, docs, task, batch_size=3, context=context, window=8)
        np.testing.assert_allclose(scores.nll, expected, atol=1e-5, rtol=0)
        topics = torch.as_tensor(task.topic_tokens)
        hits = (topics[last[:, topics].argmax(-1)] == docs.answer).numpy()
        np.testing.assert_array_equal(scores.hits, hits)
        assert np.all(scores.nll > 0)


def test_round_slopes_by_hand():
    sizes = [1024, 2048, 4096]
    # round 0: t = 1, 4, 8: over all sizes x = (0, 1, 2) ln 2, y = (0, 2, 3) ln 2, slope = (5/3 + 4/3) / 2 = 1.5;
    # from 2048 on: log(8/4) / log 2 = 1. round 1 is round 0 three times slower (load): the same slopes.
    samples = np.array([[1.0, 3.0], [4.0, 12.0], [8.0, 24.0]])
    np.testing.assert_allclose(hici.round_slopes(sizes, samples), [1.5, 1.5], atol=1e-12)
    np.testing.assert_allclose(hici.round_slopes(sizes, samples, fit_from=2048), [1.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="fit_from"):
        hici.round_slopes(sizes, samples, fit_from=4096)
    with pytest.raises(ValueError, match="samples"):
        hici.round_slopes(sizes, samples[:2])


def test_interleaved_rounds_time_every_size_and_arm_in_turn(monkeypatch, one_thread):
    """Warm-up, then per round: every size, every arm (the arms' order rotating); each run kept."""
    from icml26.papers.hici import benchmark

    calls: list[tuple[int, str]] = []
    times = iter(float(t) for t in range(1, 100))

    def name_of(model) -> str:
        attn = model.model.layers[0].self_attn
        if attn.hici_mode == "full":
            return "full"
        return "hici_fixed_g" if attn.hici_config.segment_size else "hici_ratio"

    def timed(model, x, device):
        calls.append((x.shape[1], name_of(model)))
        return next(times)

    monkeypatch.setattr(benchmark, "_forward_backward", timed)
    out = benchmark.time_attention_blocks((64, 128), hidden=32, heads=4, segment_size=16, hici=HiCIConfig(**SMALL),
                                          repeats=2, interleave_sizes=True)
    arms = ["full", "hici_fixed_g", "hici_ratio"]
    rotated = arms[1:] + arms[:1]
    assert calls == ([(64, a) for a in arms] + [(64, a) for a in arms] + [(128, a) for a in arms]
                     + [(64, a) for a in rotated] + [(128, a) for a in rotated])
    # times 1-3 warm-up; round 0: 64 -> 4, 5, 6, 128 -> 7, 8, 9; round 1 (rotated): 64 -> 10, 11, 12, 128 -> 13, 14, 15
    assert out.samples == {"full": [[4.0, 12.0], [7.0, 15.0]], "hici_fixed_g": [[5.0, 10.0], [8.0, 13.0]],
                           "hici_ratio": [[6.0, 11.0], [9.0, 14.0]]}
    assert out.seconds == {"full": [4.0, 7.0], "hici_fixed_g": [5.0, 8.0], "hici_ratio": [6.0, 9.0]}
    assert out.median() == {"full": [8.0, 11.0], "hici_fixed_g": [7.5, 10.5], "hici_ratio": [8.5, 11.5]}


def test_timing_reads_fastest_and_rounds():
    from icml26.papers.hici.benchmark import AttentionTimings
    from icml26.papers.hici.experiment import _timing_reads, slope_fit_from

    sizes = [1024, 2048, 4096]
    assert slope_fit_from(sizes) == 2048 and slope_fit_from([128, 256]) == 128
    # per size, one time per round; round 1 of full is loaded at 4096 only
    full = [[1.0, 1.0, 1.0], [4.0, 4.0, 4.0], [16.0, 64.0, 16.0]]
    fixed = [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [4.0, 4.0, 8.0]]
    timings = AttentionTimings(sizes=sizes, seconds={"full": [1.0, 4.0, 16.0], "hici_fixed_g": [1.0, 2.0, 4.0]},
                               samples={"full": full, "hici_fixed_g": fixed})
    slopes, ratio, round_slopes, round_ratio = _timing_reads(timings)
    # fastest over 1k-8k: full 2, hici 1, ratio 4 / 16
    assert slopes == pytest.approx({"full": 2.0, "hici_fixed_g": 1.0}) and ratio == pytest.approx(0.25)
    # per round from 2048: full log2(16/4) = 2, log2(64/4) = 4, 2 -> median 2; hici 1, 1, 2 -> median 1
    assert round_slopes == pytest.approx({"full": 2.0, "hici_fixed_g": 1.0})
    assert round_ratio == pytest.approx(float(np.median([4 / 16, 4 / 64, 8 / 16])))  # 0.25


def test_tiny_run_scores_pi_only_and_every_arm_in_own_and_full_mode(one_thread):
    """The PI-only row is there, own mode is each arm's training mode, and the differences are HiCI's minus
    the other's in that mode; the timing rounds are kept in the provenance."""
    from icml26.runner import execute

    data, _ = execute("hici", "tiny", 0, {"bench_repeats": 2}, threads=1, render=False)
    m = data["metrics"]
    own = {"hici": "chunked", "s2attn": "chunked", "chunked": "chunked", "full_ft": "full", "pi_only": "full"}
    for arm, mode in own.items():
        for length in ("32", "64"):  # tiny: 2 and 4 segments of 16 tokens
            assert m[arm][f"acc_{length}_own"] == m[arm][f"acc_{length}_{mode}"]
            assert m[arm][f"nll_{length}_own"] == m[arm][f"nll_{length}_{mode}"] > 0
    for other in ("s2attn", "full_ft", "pi_only"):
        for how in ("own", "full"):
            assert m["hici"][f"minus_{other}_acc_32_{how}"] == pytest.approx(
                m["hici"][f"acc_32_{how}"] - m[other][f"acc_32_{how}"])
    assert "trainable_params" not in m["pi_only"]  # no fine-tuning
    rounds = data["provenance"]["hici_attention_rounds"]
    assert rounds["fit_from"] == 128 and all(len(runs) == 2 for runs in rounds["samples"]["full"])
    assert set(rounds["slopes"]) == {"full", "hici_fixed_g", "hici_ratio"}
