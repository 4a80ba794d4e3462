"""The shared tiny-LM substrate: corpus, tokenizer, models, pretraining, cache."""

import dataclasses

import numpy as np
import pytest
import torch

from icml26.common.corpus import stdlib_corpus, unigram_entropy

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from icml26.common.tiny_lm import (  # noqa: E402
    PretrainConfig,
    TinyLMConfig,
    build_model,
    encode_corpus,
    evaluate_loss,
    pretrained_tiny_lm,
)
from icml26.common.tokenizer import train_tokenizer  # noqa: E402

SMALL = TinyLMConfig(vocab_size=512, d_model=64, n_layers=2, n_heads=2, context=64)
SHORT = PretrainConfig(steps=300, batch_size=16, lr=3e-3, warmup=30, eval_every=150, eval_batches=10)


def test_corpus_is_nonempty_and_deterministic():
    corpus = stdlib_corpus()
    assert corpus.n_chars > 500_000
    assert len(corpus.train) > 10 * len(corpus.valid) / 2 > 0
    assert not set(corpus.train) & set(corpus.valid)
    stdlib_corpus.cache_clear()
    again = stdlib_corpus()
    assert again.sha256 == corpus.sha256 and again.train == corpus.train
    with pytest.raises(ValueError, match="valid_fraction"):
        stdlib_corpus(valid_fraction=1.5)


def test_unigram_entropy_closed_forms():
    assert unigram_entropy([3, 3, 3]) == 0.0
    assert np.isclose(unigram_entropy(np.arange(8)), np.log(8))
    assert np.isclose(unigram_entropy([0, 0, 1, 2]), -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25)))


def test_tokenizer_round_trips_and_is_cached():
    tok = train_tokenizer(vocab_size=512)
    assert len(tok) == 512
    for text in ["def f(x):\n    return x ** 2\n", "Unicode: héllo wörld ✓ 你好 \t\r\n", "  leading spaces", ""]:
        assert tok.decode(tok(text)["input_ids"]) == text
    again = train_tokenizer(vocab_size=512)
    sample = "Return the number of items in a container."
    assert again(sample)["input_ids"] == tok(sample)["input_ids"]
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(vocab_size=100)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_build_model_shapes_and_seed(arch):
    cfg = dataclasses.replace(SMALL, arch=arch)
    a, b = build_model(cfg, seed=1), build_model(cfg, seed=1)
    ids = torch.randint(0, cfg.vocab_size, (2, 10))
    out = a(input_ids=ids, output_hidden_states=True)
    assert out.logits.shape == (2, 10, cfg.vocab_size)
    assert len(out.hidden_states) == cfg.n_layers + 1
    assert torch.equal(out.logits, b(input_ids=ids).logits)


def test_config_validation():
    with pytest.raises(ValueError, match="divisible"):
        TinyLMConfig(d_model=65, n_heads=2)
    with pytest.raises(ValueError, match="arch"):
        TinyLMConfig(arch="bert")


def test_pretraining_beats_unigram_entropy_and_caches():
    lm = pretrained_tiny_lm(SMALL, SHORT, show_progress=False)
    # No context-free model can beat the unigram entropy of the validation tokens.
    entropy = unigram_entropy(lm.valid_ids.numpy(), SMALL.vocab_size)
    loss = evaluate_loss(lm.model, lm.valid_ids, context=SMALL.context, max_batches=20)
    assert entropy > 4.5
    assert loss < entropy - 0.5, f"validation loss {loss:.3f} vs unigram entropy {entropy:.3f}"
    assert lm.log.valid_loss[-1] < lm.log.valid_loss[0] or len(lm.log.valid_loss) == 1
    # The second call loads the cached safetensors: same weights, no training.
    again = pretrained_tiny_lm(SMALL, SHORT, show_progress=False)
    assert again.cache_key == lm.cache_key
    for (name, p), (_, q) in zip(lm.model.state_dict().items(), again.model.state_dict().items()):
        assert torch.equal(p, q), name
    tr, va = encode_corpus(lm.tokenizer, stdlib_corpus())
    assert torch.equal(tr, lm.train_ids) and torch.equal(va, lm.valid_ids)


class _CharTokenizer:
    """One id per character (its code point); EOS is 0."""

    eos_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        if isinstance(text, list):
            return {"input_ids": [[ord(c) for c in t] for t in text]}
        return {"input_ids": [ord(c) for c in text]}


def test_encode_corpus_eos_between_documents_or_one_joined_text():
    from icml26.common.corpus import Corpus

    corpus = Corpus(train=("ab", "c"), valid=("de",), sha256="")
    tr, va = encode_corpus(_CharTokenizer(), corpus)
    assert tr.tolist() == [97, 98, 0, 99, 0] and va.tolist() == [100, 101, 0]
    tr, va = encode_corpus(_CharTokenizer(), corpus, separator="\n\n")
    assert tr.tolist() == [ord(c) for c in "ab\n\nc"] and va.tolist() == [100, 101]
    assert tr.dtype == va.dtype == torch.long
    with pytest.raises(TypeError, match="separator"):
        encode_corpus(_CharTokenizer(), corpus, separator=0)
