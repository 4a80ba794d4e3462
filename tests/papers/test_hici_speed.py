"""Tests of hici's speed paths against the plain paths they replace (two code paths, one answer):
the cached cumulative topic chains against chains recomputed per draw, and fine-tuning on batches
drawn up front (:func:`sample_batches`, shared by the arms) against drawing each step's batch."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from icml26.papers.hici import TopicRetrievalTask  # noqa: E402
from icml26.papers.hici.training import sample_batches, train_steps  # noqa: E402


def _segments_recomputing_chains(task: TopicRetrievalTask, topics: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The plain sampler: the chains and their cumulative sums recomputed on every call."""
    initial, transition = task.chains()
    cum_init, cum_trans = initial.cumsum(-1), transition.cumsum(-1)
    n, s = topics.shape
    g = task.segment_tokens
    u = rng.random((n, s, g)).reshape(-1, g)
    flat_t = topics.reshape(-1)
    out = np.empty((n * s, g), dtype=np.int64)
    tok = np.minimum((u[:, 0:1] > cum_init[flat_t]).sum(-1), task.content_vocab - 1)
    out[:, 0] = tok
    for i in range(1, g):
        tok = np.minimum((u[:, i:i + 1] > cum_trans[flat_t, tok]).sum(-1), task.content_vocab - 1)
        out[:, i] = tok
    return out.reshape(n, s, g)


@pytest.mark.parametrize("each", [6, None], ids=["disjoint", "shared-vocabulary"])
def test_cached_chains_sample_the_same_tokens_as_recomputed_chains(each):
    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=16, topic_tokens_each=each, seed=3)
    topics = np.random.default_rng(1).integers(0, 4, size=(7, 3))
    for _ in range(3):  # the cache is filled by the first call and read by the later ones
        np.testing.assert_array_equal(task._segments(topics, np.random.default_rng(9)),
                                      _segments_recomputing_chains(task, topics, np.random.default_rng(9)))
    initial, transition = task.chains()
    cum_init, cum_trans = task._cumulative_chains
    np.testing.assert_array_equal(cum_init, initial.cumsum(-1))
    np.testing.assert_array_equal(cum_trans, transition.cumsum(-1))
    assert not cum_trans.flags.writeable  # shared by every draw: read-only
    # a task with other sizes (dataclasses.replace, as the pretraining task) has its own chains
    other = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=16, topic_tokens_each=each, seed=4)
    assert not np.array_equal(other._cumulative_chains[1], cum_trans)


def _tiny_llama(vocab: int):
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config)


@pytest.mark.parametrize("num_segments", [2, (1, 2)], ids=["fixed", "curriculum"])
def test_pre_drawn_batches_train_exactly_like_per_step_draws(num_segments, one_thread):
    """Same losses and bit-identical weights; the generator ends where the per-step draws leave it."""
    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=8, topic_tokens_each=6)
    base = _tiny_llama(task.vocab_size)
    runs = []
    for pre_drawn in (False, True):
        model = copy.deepcopy(base)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        rng = np.random.default_rng(5)
        kwargs = dict(steps=4, batch_size=3, num_segments=num_segments, answer_weight=2.0, warmup=1)
        if pre_drawn:
            log = train_steps(model, optimizer, task, batches=sample_batches(task, steps=4, batch_size=3,
                                                                             num_segments=num_segments, rng=rng),
                              **kwargs)
        else:
            log = train_steps(model, optimizer, task, rng=rng, **kwargs)
        runs.append((log, model.state_dict(), rng.random()))
    (plain, plain_state, plain_next), (shared, shared_state, shared_next) = runs
    assert shared.lm_loss == plain.lm_loss and shared.answer_loss == plain.answer_loss
    for name, value in plain_state.items():
        assert torch.equal(shared_state[name], value), name
    assert shared_next == plain_next


def test_train_steps_refuses_both_or_neither_source_and_a_short_list(one_thread):
    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=8, topic_tokens_each=6)
    model = _tiny_llama(task.vocab_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    batches = sample_batches(task, steps=2, batch_size=2, num_segments=2, rng=rng)
    kwargs = dict(batch_size=2, num_segments=2, answer_weight=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        train_steps(model, optimizer, task, steps=2, rng=rng, batches=batches, **kwargs)
    with pytest.raises(ValueError, match="exactly one"):
        train_steps(model, optimizer, task, steps=2, **kwargs)
    with pytest.raises(ValueError, match="sample_batches"):
        train_steps(model, optimizer, task, steps=3, batches=batches, **kwargs)


def test_topic_accuracy_under_inference_mode_matches_no_grad_and_leaves_the_model_trainable(one_thread):
    """The hits equal a plain no_grad argmax; a model scored first (the base model) still trains after."""
    from icml26.papers.hici.training import topic_accuracy

    task = TopicRetrievalTask(num_topics=4, content_vocab=24, segment_tokens=8, topic_tokens_each=6)
    model = _tiny_llama(task.vocab_size).eval()
    docs = task.sample(6, 3, np.random.default_rng(2))
    hits = topic_accuracy(model, docs, task, batch_size=4)
    with torch.no_grad():
        last = model(input_ids=docs.input_ids, use_cache=False).logits[:, -1]
    topics = torch.as_tensor(task.topic_tokens)
    np.testing.assert_array_equal(hits, (topics[last[:, topics].argmax(-1)] == docs.answer).numpy())
    copied = copy.deepcopy(model)
    log = train_steps(copied, torch.optim.AdamW(copied.parameters(), lr=1e-2), task, steps=2, batch_size=2,
                      num_segments=2, rng=np.random.default_rng(0), answer_weight=1.0, warmup=1)
    assert np.isfinite(log.lm_loss).all()
    log = train_steps(model, torch.optim.AdamW(model.parameters(), lr=1e-2), task, steps=1, batch_size=2,
                      num_segments=2, rng=np.random.default_rng(0), answer_weight=1.0, warmup=1)
    assert np.isfinite(log.lm_loss).all()
