"""The shared pretrained LM (SmolLM2-135M-Instruct) and text encoder (all-MiniLM-L6-v2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def test_smollm2_is_the_documented_model(smollm2):
    cfg = smollm2.model.config
    assert type(smollm2.model).__name__ == "LlamaForCausalLM"
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads) == (30, 576, 9, 3)
    assert smollm2.model.dtype == torch.float32 and not smollm2.model.training
    assert len(smollm2.tokenizer) == 49152 and smollm2.tokenizer.chat_template


def test_smollm2_completes_code_and_chats_deterministically(smollm2):
    from icml26.common.pretrained import chat_prompt

    tok, model = smollm2.tokenizer, smollm2.model
    ids = tok("def add(a, b):\n    return", return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert tok.decode(out[0, ids["input_ids"].shape[1]:]).startswith(" a + b")
    prompt = tok(chat_prompt(tok, "What is the capital of France?"), return_tensors="pt")
    first = model.generate(**prompt, max_new_tokens=10, do_sample=False)
    second = model.generate(**prompt, max_new_tokens=10, do_sample=False)
    assert torch.equal(first, second)
    assert "Paris" in tok.decode(first[0, prompt["input_ids"].shape[1]:])


def test_cached_load_equals_the_gguf_and_is_fast(smollm2):
    from icml26.common.pretrained import load_pretrained_lm

    again = load_pretrained_lm()  # the fixture built the cache entry
    assert again.from_cache and again.weights_sha256 == smollm2.weights_sha256
    assert again.load_seconds < 15
    for (name, a), (_, b) in zip(smollm2.model.state_dict().items(), again.model.state_dict().items()):
        assert torch.equal(a, b), name


def test_reading_the_gguf_draws_no_progress_bar(smollm2, capfd):
    """transformers' GGUF reader draws its own tqdm bar; a run's log (off a terminal, one line per
    event) must not fill with it. The bar is restored afterwards."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    from icml26.common.pretrained import load_pretrained_lm

    bar = gguf_utils.tqdm
    fresh = load_pretrained_lm(cache=False)
    out, err = capfd.readouterr()
    assert not fresh.from_cache and "GGUF tensors" not in out + err
    assert gguf_utils.tqdm is bar


def test_smollm2_beats_a_tiny_lm_per_character_on_held_out_stdlib(smollm2):
    """Loss on held-out stdlib docstrings, in nats per character (tokenizer-free): SmolLM2 ~0.87,
    the 300-step tiny GPT-2 the substrate tests train ~2.2 (measured)."""
    from icml26.common.corpus import stdlib_corpus
    from icml26.common.pretrained import nats_per_char
    from icml26.common.tiny_lm import PretrainConfig, TinyLMConfig, pretrained_tiny_lm

    texts = stdlib_corpus().valid[:8]
    smol = nats_per_char(smollm2.model, smollm2.tokenizer, texts)
    tiny = pretrained_tiny_lm(TinyLMConfig(vocab_size=512, d_model=64, n_layers=2, n_heads=2, context=64),
                              PretrainConfig(steps=300, batch_size=16, lr=3e-3, warmup=30, eval_every=150,
                                             eval_batches=10))
    tiny_npc = nats_per_char(tiny.model, tiny.tokenizer, texts, context=64)
    assert smol < 1.1 and smol < 0.6 * tiny_npc, (smol, tiny_npc)


def test_nats_per_char_hand_case():
    """A model that predicts uniformly over V tokens costs ln V per predicted token."""
    from icml26.common.pretrained import nats_per_char

    class Uniform(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, attention_mask=None):
            return type("O", (), {"logits": torch.zeros(*input_ids.shape, 10) + self.w})()

    class CharTok:
        pad_token_id = 0

        def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
            return {"input_ids": [ord(c) % 10 for c in text], "offset_mapping": [(i, i + 1) for i in range(len(text))]}

    # 7 characters, one per token: 6 predicted tokens covering 6 characters
    assert nats_per_char(Uniform(), CharTok(), ["abcdefg"]) == pytest.approx(np.log(10))
    with pytest.raises(ValueError, match="texts"):
        nats_per_char(Uniform(), CharTok(), [])


# --------------------------------------------------------------------------- MiniLM
TEXTS = ["A man is eating food.", "A man is riding a horse.", "",
         "The new movie is awesome; I loved every minute of it, truly a wonderful piece of cinema.", "x"]


def test_minilm_unit_norm_deterministic_shape(minilm):
    a = minilm.encode(TEXTS)
    assert a.shape == (5, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a, minilm.encode(TEXTS))
    assert minilm.encode([]).shape == (0, 384)


def test_minilm_is_independent_of_batch_order_size_and_padding_side(minilm):
    a = minilm.encode(TEXTS, batch_size=8)
    perm = [3, 0, 4, 2, 1]
    b = minilm.encode([TEXTS[i] for i in perm], batch_size=2)
    assert np.allclose(a[perm], b, atol=1e-5)
    single = np.concatenate([minilm.encode([t]) for t in TEXTS])
    assert np.allclose(a, single, atol=1e-5)
    side = minilm.tokenizer.padding_side
    try:
        minilm.tokenizer.padding_side = "left" if side == "right" else "right"
        c = minilm.encode(TEXTS)
    finally:
        minilm.tokenizer.padding_side = side
    assert np.allclose(a, c, atol=1e-5)


def test_minilm_equals_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    from icml26.common.encoder import minilm_path

    try:
        model = st.SentenceTransformer(str(minilm_path()), device="cpu")
    except Exception as exc:  # pragma: no cover - a broken optional install
        pytest.skip(f"sentence-transformers could not load the model: {exc}")
    ref = model.encode(TEXTS, normalize_embeddings=True)
    assert np.abs(minilm.encode(TEXTS) - ref).max() < 1e-5


def test_minilm_similarity_is_semantic(minilm):
    e = minilm.encode(["A cat sits on the mat.", "A kitten is sitting on a rug.", "Stock markets fell sharply today."])
    assert e[0] @ e[1] > e[0] @ e[2] + 0.3


def test_minilm_bad_input(minilm):
    with pytest.raises(TypeError, match="strings"):
        minilm.encode(["ok", 3])
    with pytest.raises(ValueError, match="batch_size"):
        minilm.encode(["ok"], batch_size=0)
