"""InstEmb on tiny models: gradients and the KL variant, causality of the look-ahead tokens, DAAP pooling,
the K = 0 / λ = 0 reduction against a reference written here, encode invariances, hostile input, the
data, the method and baselines' API, the MiniLM wrapper against sentence-transformers, SFT of the
teacher, save/load, the sentence-encoder and LoRA paths, and the chat prompt.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.common.tiny_lm import TinyLMConfig, build_model
from icml26.papers.instemb import (
    ATTRIBUTES,
    BASELINES,
    INSTRUCTIONS,
    METHOD,
    AttrWorld,
    Example,
    InstEmbModel,
    attrworld_tokenizer,
    attrworld_vocabulary,
    train_instemb,
)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tok():
    return attrworld_tokenizer()


def tiny_llama(seed=0, d=32, layers=2, context=64):
    return build_model(TinyLMConfig(arch="llama", vocab_size=len(attrworld_vocabulary()), d_model=d,
                                    n_layers=layers, n_heads=2, context=context), seed=seed)


def tiny_qwen2(seed=0):
    import transformers

    cfg = transformers.Qwen2Config(vocab_size=len(attrworld_vocabulary()), hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=64, tie_word_embeddings=True)
    torch.manual_seed(seed)
    return transformers.Qwen2ForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def world():
    return AttrWorld.sample(12, np.random.default_rng(0))


def test_gradients_reach_student_and_lookahead_not_teacher(tok, world):
    model = InstEmbModel.wrap(tiny_llama(), 3, tokenizer=tok, positionwise=0.5)
    model.train()
    model.loss(world.examples(paraphrases=(0,))[:8]).backward()
    assert model.lookahead.grad is not None and model.lookahead.grad.abs().sum() > 0
    student = [p.grad for n, p in model.named_parameters() if n.startswith("backbone.")]
    assert all(g is not None for g in student) and sum(float(g.abs().sum()) for g in student) > 0
    teacher = list(model.teacher().parameters())
    assert teacher and all(p.grad is None and not p.requires_grad for p in teacher)
    assert all(not n.startswith("teacher_model.") for n, p in model.named_parameters() if p.requires_grad)
    assert any(p is model.lookahead for p in model.trainable_parameters())


def test_kl_variant_trains_through_lm_head(tok, world):
    model = InstEmbModel.wrap(tiny_llama(), 3, tokenizer=tok, distill="kl")
    parts = model.loss(world.examples(paraphrases=(1,))[:6], return_parts=True)
    assert parts.distill.item() > 0
    parts.total.backward()
    assert model.lookahead.grad.abs().sum() > 0


# ----------------------------------------------------------------------------- causality
@pytest.mark.parametrize("build", [tiny_llama, tiny_qwen2], ids=["llama", "qwen2"])
def test_lookahead_tokens_leave_h_eos_unchanged(build, tok, world):
    lm = build()
    prompts = [f"{INSTRUCTIONS['shape'][0]} {t}" for t in world.texts[:5]]
    with_la = InstEmbModel.wrap(lm, 4, tokenizer=tok, with_teacher=False, seed=3)
    rows = [with_la._prompt_ids(p) for p in prompts]
    h_la_eos = with_la.embed_rows(rows, "eos").h_eos
    h_no_la = InstEmbModel.wrap(lm, 0, tokenizer=tok, with_teacher=False, distill_weight=0.0).embed_rows(rows).h_eos
    assert (h_la_eos - h_no_la).abs().max().item() <= 1e-6
    with torch.no_grad():  # and the plain HF forward, one unpadded row at a time
        plain = torch.stack([lm(input_ids=torch.tensor([r]), output_hidden_states=True).hidden_states[-1][0, -1]
                             for r in rows])
    assert (h_la_eos - plain).abs().max().item() <= 1e-5
    # the look-ahead states do depend on the look-ahead vectors
    other = InstEmbModel.wrap(lm, 4, tokenizer=tok, with_teacher=False, seed=4)
    assert (other.embed_rows(rows, "eos").h_la - with_la.embed_rows(rows, "eos").h_la).abs().max() > 1e-3


def test_encode_daap_equals_pool_of_eos_and_lookahead(tok, world):
    model = InstEmbModel.wrap(tiny_llama(), 2, tokenizer=tok, with_teacher=False, daap_weight=0.5)
    texts = list(world.texts[:4])
    eos = model.encode(texts, "what size is it", pooling="eos")
    la = model.encode(texts, "what size is it", pooling="lookahead")
    daap = model.encode(texts, "what size is it", pooling="daap")
    assert torch.allclose(daap, F.normalize(eos + 0.5 * la, dim=-1), atol=1e-6)


# ----------------------------------------------------------------------------- reduction
def test_k0_lambda0_is_contrastive_last_token_training(tok, world):
    """The loss equals a reference written here from plain HF forwards, one row at a time."""
    lm = tiny_llama(seed=5)
    model = InstEmbModel.wrap(lm, 0, tokenizer=tok, distill_weight=0.0, embedding_dropout=0.0)
    batch = world.examples(attributes=["colour", "size"], paraphrases=(0,))[:6]
    got = model.loss(batch, return_parts=True)
    assert got.distill.item() == 0.0

    def last_state(m, text):
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return m(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0, -1]

    teacher = copy.deepcopy(lm)
    q = torch.stack([last_state(lm, f"{e.instruction} {e.text}") for e in batch])
    with torch.no_grad():
        t = torch.stack([last_state(teacher, f"{e.instruction} {e.text}") for e in batch])
    a = torch.stack([last_state(lm, e.output) for e in batch])

    def ref_nce(x, y, tau=0.05):
        x, y = x / x.norm(dim=-1, keepdim=True), y / y.norm(dim=-1, keepdim=True)
        s = x @ y.T / tau
        return (-(s.diagonal() - s.logsumexp(dim=1))).mean()

    want = (ref_nce(q, q) + ref_nce(q, t) + ref_nce(q, a)) / 3
    assert got.total.item() == pytest.approx(want.item(), rel=1e-5)
    # the same loss trains: 30 steps lower it
    log = train_instemb(model, batch, 30, batch_size=6, lr=3e-3, show_progress=False)
    assert log.total[-1] < 0.8 * log.total[0]


# ----------------------------------------------------------------------------- encode invariances
def test_encode_invariant_to_batch_order_padding_side_and_batch_size(tok, world):
    model = InstEmbModel.wrap(tiny_llama(seed=2), 3, tokenizer=tok, with_teacher=False)
    texts = list(world.texts)
    ref = model.encode(texts, "tell me the form", batch_size=64)
    perm = np.random.default_rng(0).permutation(len(texts))
    shuffled = model.encode([texts[i] for i in perm], "tell me the form", batch_size=5, padding_side="left")
    assert torch.allclose(shuffled, ref[perm], atol=1e-5)
    assert torch.allclose(ref.norm(dim=-1), torch.ones(len(texts)), atol=1e-5)
    # per-text instructions
    mixed = model.encode(texts[:2], ["tell me the form", "what colour is it"])
    assert torch.allclose(mixed[0], ref[0], atol=1e-5)
    assert not torch.allclose(mixed[1], ref[1], atol=1e-3)


def test_forward_matches_encode(tok, world):
    model = InstEmbModel.wrap(tiny_llama(), 2, tokenizer=tok, with_teacher=False)
    rows = [model._prompt_ids(model.prompt(t, "which place does it have")) for t in world.texts[:3]]
    W = max(map(len, rows))
    ids = torch.zeros(3, W, dtype=torch.long)
    mask = torch.zeros(3, W, dtype=torch.long)
    for i, r in enumerate(rows):  # left padded
        ids[i, W - len(r):], mask[i, W - len(r):] = torch.tensor(r), 1
    with torch.no_grad():
        out = model(ids, mask)
    assert torch.allclose(out.embedding, model.encode(world.texts[:3], "which place does it have"), atol=1e-5)
    with pytest.raises(ValueError, match="anchor"):  # rows without their closing eos: h_eos would be read elsewhere
        model(ids[:, :-1], mask[:, :-1])


# ----------------------------------------------------------------------------- hostile input
def test_bad_input_raises(tok):
    lm = tiny_llama(context=16)
    with pytest.raises(ValueError, match="num_lookahead"):
        InstEmbModel.wrap(lm, -1, tokenizer=tok)
    model = InstEmbModel.wrap(lm, 4, tokenizer=tok, with_teacher=False)
    with pytest.raises(ValueError, match="instruction"):
        model.encode(["an object in red"], "   ")
    with pytest.raises(ValueError, match="positions"):
        model.encode(["an object in red and " * 3], "what colour is it")
    with pytest.raises(ValueError, match="distill_weight"):
        InstEmbModel.wrap(lm, 0, tokenizer=tok)
    with pytest.raises(ValueError, match="pooling"):
        InstEmbModel.wrap(lm, 0, tokenizer=tok, distill_weight=0.0).encode(["an object"], "x", pooling="daap")
    with pytest.raises(ValueError, match="tau"):
        InstEmbModel.wrap(lm, 2, tokenizer=tok, tau=0.0)
    with pytest.raises(ValueError, match="Example.instruction"):
        Example("", "text", "it is red")


# ----------------------------------------------------------------------------- data
def test_attrworld_examples_and_vocabulary(tok):
    w = AttrWorld.sample(50, np.random.default_rng(3))
    vocab = set(attrworld_vocabulary())
    assert 55 <= len(vocab) <= 75
    for text, v in zip(w.texts, w.value_words("position")):
        assert set(text.split()) <= vocab and v in text.split()
        assert tok.unk_token_id not in tok(text, add_special_tokens=False)["input_ids"]
    ex = w.examples()
    assert len(ex) == 50 * 4 * 3
    assert all(e.output == f"it is {ATTRIBUTES['colour'][w.values['colour'][i]]}" for i, e in enumerate(ex[:50]))
    again = AttrWorld.sample(50, np.random.default_rng(3))
    assert again.texts == w.texts


# ----------------------------------------------------------------------------- API shape
def test_method_and_baselines_train_and_encode(tok, world):
    data = world.examples(paraphrases=(0,))
    lm = tiny_llama(seed=7)
    g = torch.Generator().manual_seed(0)
    method = METHOD(copy.deepcopy(lm), data, 2, tokenizer=tok, batch_size=8, generator=g)
    assert method.settings.pooling == "daap" and method.num_lookahead == 4
    embs = {"method": method.encode(world.texts[:3], "what colour is it")}
    for name, fn in BASELINES.items():
        m = fn(copy.deepcopy(lm), data, 2, tokenizer=tok, batch_size=8, generator=torch.Generator().manual_seed(0)) \
            if name != "input_last" else fn(copy.deepcopy(lm), data, 2, tokenizer=tok)
        embs[name] = m.encode(world.texts[:3], "what colour is it")
        assert embs[name].shape == (3, 32)
    # InputLast is the untrained model's eos state
    assert torch.allclose(embs["input_last"], InstEmbModel.wrap(lm, 0, tokenizer=tok, with_teacher=False,
                                                                distill_weight=0.0).encode(
        world.texts[:3], "what colour is it"), atol=1e-6)


# ----------------------------------------------------------------------------- real backbones
def test_minilm_wrapper_equals_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    pytest.importorskip("accelerate")
    from icml26.common.encoder import minilm_path

    texts = ["A red car is parked near the house.", "we see an object painted blue", "short"]
    model = InstEmbModel.wrap(minilm, 0, with_teacher=False, distill_weight=0.0, pooling="mean")
    ours = model.encode(texts, None, padding_side="left").numpy()
    ref = st.SentenceTransformer(str(minilm_path()), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.abs(ours - ref).max() <= 1e-5
    assert np.abs(ours - minilm.encode(texts)).max() <= 1e-5


def test_minilm_encoder_path_lookahead_after_sep(minilm):
    model = InstEmbModel.wrap(minilm, 2, train_last_blocks=1, seed=0)
    assert model.kind == "encoder" and model.backbone is not minilm.model
    rows = [model._prompt_ids(model.prompt("an object in red", "what colour is it"))]
    assert rows[0][0] == minilm.tokenizer.cls_token_id and rows[0][-1] == minilm.tokenizer.sep_token_id
    with torch.no_grad():
        out = model.embed_rows(rows, "daap")
        p = model._run(model.backbone, rows, lookahead=True)
    assert torch.equal(out.h_eos[0], p.hidden[0, len(rows[0]) - 1])  # h_eos is the [SEP] state
    assert torch.equal(out.h_la[0], p.hidden[0, len(rows[0]):len(rows[0]) + 2])
    batch = [Example("what colour is it", "an object in red", "it is red"),
             Example("what shape is it", "a star at the top", "it is star")]
    model.train()
    model.loss(batch).backward()
    assert model.lookahead.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.backbone.embeddings.parameters())  # frozen below the last block


def test_smollm2_decoder_path_unchanged(smollm2):
    lm = smollm2.model
    model = InstEmbModel.wrap(lm, 2, tokenizer=smollm2.tokenizer, with_teacher=False, distill_weight=0.0)
    texts = ["The cat sat on the mat.", "Stocks fell sharply today."]
    rows = [model._prompt_ids(model.prompt(t, "Classify the topic.")) for t in texts]
    with torch.no_grad():
        out = model.embed_rows(rows, "eos")
        plain = torch.stack([lm(input_ids=torch.tensor([r]), output_hidden_states=True).hidden_states[-1][0, -1]
                             for r in rows])
    assert (out.h_eos - plain).abs().max() <= 1e-4 * plain.abs().max()
    assert out.h_la.shape == (2, 2, 576)


# ----------------------------------------------------------------------------- SFT of the teacher
def test_sft_scores_only_the_output_tokens(tok, world):
    from icml26.papers.instemb.sft import sft_rows, supervised_finetune

    examples = world.examples(paraphrases=(0,))[:5]
    rows = sft_rows(tok, examples)
    assert rows[0] == (tok(f"{examples[0].instruction} {examples[0].text}", add_special_tokens=False)["input_ids"]
                       + [tok.eos_token_id] + tok(examples[0].output, add_special_tokens=False)["input_ids"]
                       + [tok.eos_token_id])
    lm = tiny_llama(seed=9)
    ref = copy.deepcopy(lm).eval()
    idx = torch.randint(len(rows), (4,), generator=torch.Generator().manual_seed(3)).tolist()
    with torch.no_grad():  # the first step's loss, by hand: mean CE over "it is <value> <eos>" of each row
        ces = []
        for i in idx:
            logits = ref(input_ids=torch.tensor([rows[i]])).logits[0]
            for t in range(len(rows[i]) - 4, len(rows[i])):
                ces.append(F.cross_entropy(logits[t - 1], torch.tensor(rows[i][t])))
    losses = supervised_finetune(lm, tok, examples, 1, batch_size=4, generator=torch.Generator().manual_seed(3),
                                 show_progress=False)
    assert losses[0] == pytest.approx(torch.stack(ces).mean().item(), rel=1e-5)


@pytest.mark.parametrize("build", [tiny_llama, tiny_qwen2])
def test_save_and_load_give_the_same_embeddings_with_the_same_settings(build, tok, world, tmp_path):
    model = InstEmbModel.wrap(build(), 3, tokenizer=tok, with_teacher=False, daap_weight=0.7, pooling="daap", seed=5)
    with torch.no_grad():
        model.lookahead.add_(0.1)  # as if trained
    texts = list(world.texts[:4])
    before = model.eval().encode(texts, "what colour is it")
    model.save(tmp_path / "m")
    again = InstEmbModel.load(tmp_path / "m")
    assert again.settings == model.settings and again.num_lookahead == 3 and again.kind == model.kind
    assert torch.equal(again.encode(texts, "what colour is it"), before)
    assert again.teacher_model is None and InstEmbModel.load(tmp_path / "m", with_teacher=True).teacher_model is not None
    with pytest.raises(ValueError, match="instemb.json"):
        InstEmbModel.load(tmp_path / "m" / "backbone")


def test_a_state_dict_loaded_into_a_model_built_otherwise_is_refused_naming_the_setting(tok):
    """The settings that decide the embedding travel in the state dict: a model with another pooling, DAAP
    weight or K refuses it (embeddings would differ silently), one built alike loads it."""
    model = InstEmbModel.wrap(tiny_llama(), 3, tokenizer=tok, with_teacher=False, daap_weight=0.7)
    state = copy.deepcopy(model.state_dict())
    InstEmbModel.wrap(tiny_llama(), 3, tokenizer=tok, with_teacher=False, daap_weight=0.7).load_state_dict(state)
    for kwargs, field in (({"daap_weight": 1.0}, "daap_weight=0.7"), ({"daap_weight": 0.7, "pooling": "eos"},
                                                                      "pooling='daap'")):
        other = InstEmbModel.wrap(tiny_llama(), 3, tokenizer=tok, with_teacher=False, **kwargs)
        with pytest.raises(ValueError, match=field):
            other.load_state_dict(state)


def test_a_sentence_encoder_answers_the_encode_call_of_st_and_mteb_loops(tok, world):
    import numpy as np

    model = InstEmbModel.wrap(tiny_llama(), 2, tokenizer=tok, with_teacher=False)
    enc = model.as_sentence_encoder("what colour is it")
    texts = list(world.texts[:5])
    got = enc.encode(texts, batch_size=2, show_progress_bar=False, normalize_embeddings=True)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape[0] == 5
    # the wrapper passes its batch size through: bit for bit the model's own call with the same batches
    np.testing.assert_array_equal(got, model.encode(texts, "what colour is it", batch_size=2).numpy())
    # other batches pad to other lengths: equal up to float32 rounding (AMD EPYC's kernels differ in the last bit)
    np.testing.assert_allclose(got, model.encode(texts, "what colour is it").numpy(), rtol=0, atol=1e-6)
    assert torch.equal(enc.encode(texts[0], convert_to_tensor=True), model.encode(texts[:1], "what colour is it")[0])
    with pytest.raises(ValueError, match="instruction"):
        model.as_sentence_encoder("  ")


def test_lora_trains_adapters_only_and_the_teacher_is_the_backbone_with_adapters_off(tok, world, tmp_path):
    """With lora=..., no copy of the weights is made: the teacher is the backbone with its adapters disabled,
    which after training still equals the initial model (its states bit for bit), while the student moved; only
    the adapters and the look-ahead vectors train; a saved model reloads merged, with the same embeddings."""
    pytest.importorskip("peft")
    base = tiny_llama(seed=3)
    reference = copy.deepcopy(base)
    model = InstEmbModel.wrap(base, 2, tokenizer=tok, lora={"r": 4, "target_modules": ["q_proj", "v_proj"],
                                                             "lora_dropout": 0.0, "init_lora_weights": False})
    assert model.teacher_model is None and model.teacher_shares_backbone and model.has_teacher
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n or n == "lookahead" for n in names)
    batch = world.examples(attributes=["colour"], paraphrases=(0,))
    log = train_instemb(model, batch, 3, batch_size=6, lr=1e-2, show_progress=False)
    assert all(math.isfinite(v) for v in log.total)
    rows = [model._prompt_ids(model.prompt(t, "what colour is it")) for t in world.texts[:3]]
    plain = InstEmbModel.wrap(reference, 0, tokenizer=tok, with_teacher=False, distill_weight=0.0)
    with model.teacher_scope() as teacher:
        teacher_states = model._run(teacher, rows, lookahead=False).hidden
    assert model.backbone.training is model.training  # the scope restored the mode
    with torch.no_grad():
        reference_states = plain._run(plain.backbone, rows, lookahead=False).hidden
        student_states = model._run(model.backbone, rows, lookahead=False).hidden
    torch.testing.assert_close(teacher_states, reference_states, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(student_states, reference_states, atol=1e-4)
    texts = list(world.texts[:4])
    before = model.eval().encode(texts, "what colour is it")
    model.save(tmp_path / "lora")
    again = InstEmbModel.load(tmp_path / "lora")
    torch.testing.assert_close(again.encode(texts, "what colour is it"), before, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not both"):
        InstEmbModel.wrap(tiny_llama(), 2, tokenizer=tok, lora={"r": 2}, train_last_blocks=1)


def test_the_chat_prompt_ends_the_user_turn_at_the_anchor(tok):
    """prompt_template='chat': one user turn in the tokenizer's template, its end-of-turn (eos) token the anchor."""
    chat_tok = copy.deepcopy(tok)
    chat_tok.chat_template = "{% for m in messages %}there is {{ m['content'] }} <eos>{% endfor %}"
    model = InstEmbModel.wrap(tiny_llama(), 2, tokenizer=chat_tok, with_teacher=False, prompt_template="chat")
    prompt = model.prompt("a red cube", "what colour is it")
    assert prompt == "there is what colour is it\na red cube "
    ids = model._prompt_ids(prompt)
    assert ids[-1] == chat_tok.eos_token_id and ids.count(chat_tok.eos_token_id) == 1
    assert model.encode(["a red cube"], "what colour is it").shape[0] == 1
    with pytest.raises(ValueError, match="chat template"):
        InstEmbModel.wrap(tiny_llama(), 2, tokenizer=tok, with_teacher=False, prompt_template="chat").prompt("a", "b")
