"""A byte-level BPE tokenizer trained on the offline corpus with Hugging Face ``tokenizers``.

Byte-level BPE has no unknown token and decodes every byte sequence back exactly, so
``decode(encode(text)) == text`` for any text. The trained tokenizer is cached by the
corpus hash and vocabulary size. Needs the ``lm`` extra.
"""

from __future__ import annotations

from icml26.common.cache import config_hash, entry
from icml26.common.corpus import Corpus, stdlib_corpus
from icml26.common.extras import require

__all__ = ["EOS", "train_tokenizer"]

EOS = "<|endoftext|>"


def train_tokenizer(corpus: Corpus | None = None, vocab_size: int = 2048, *, cache: bool = True):
    """Train (or load from the cache) a byte-level BPE tokenizer.

    Args:
        corpus: the text to train on (default: :func:`stdlib_corpus`); only ``train`` is used.
        vocab_size: size of the vocabulary including the 256 byte symbols and ``EOS``.
        cache: reuse a tokenizer trained before on the same corpus and size.

    Returns:
        A ``transformers.PreTrainedTokenizerFast`` with ``eos_token = "<|endoftext|>"``
        (also used as the padding token).
    """
    if vocab_size < 258:
        raise ValueError(f"vocab_size={vocab_size} must be at least 258 (256 bytes + EOS + 1 merge)")
    tokenizers = require("tokenizers", "lm")
    transformers = require("transformers", "lm")
    corpus = corpus or stdlib_corpus()

    def build() -> "tokenizers.Tokenizer":
        tok = tokenizers.Tokenizer(tokenizers.models.BPE())
        tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = tokenizers.decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[EOS],
            initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(corpus.train, trainer=trainer)
        return tok

    if cache:
        with entry("tokenizers", config_hash("bpe-v1", corpus.sha256, vocab_size)) as (final, tmp):
            if tmp is not None:
                build().save(str(tmp / "tokenizer.json"))
        raw = tokenizers.Tokenizer.from_file(str(final / "tokenizer.json"))
    else:
        raw = build()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=raw, eos_token=EOS, pad_token=EOS,
                                                bos_token=EOS)
