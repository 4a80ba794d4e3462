"""InstEmb: closed forms of the losses, causality of the look-ahead tokens, DAAP, the K = 0 / λ = 0
reduction against a reference written here, encode invariances, the MiniLM wrapper against
sentence-transformers, the metrics against hand computations."""

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
    daap_pool,
    distill_loss,
    info_nce,
    inst_sts_pairs,
    inst_sts_spearman,
    instruction_nmi,
    instruction_sensitivity,
    kmeans_nmi,
    spearman_ceiling,
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


# ----------------------------------------------------------------------------- info_nce
def test_info_nce_two_by_two_closed_form():
    a, b, tau = 0.8, 0.6, 0.05
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    k = torch.tensor([[a, b], [b, a]], dtype=torch.float64)  # unit rows: cos(q_i, k_i) = a, cos(q_i, k_j) = b
    want = -math.log(math.exp(a / tau) / (math.exp(a / tau) + math.exp(b / tau)))
    assert info_nce(q, k, tau).item() == pytest.approx(want, rel=1e-6)


def test_info_nce_all_equal_similarities_give_log_batch():
    q = torch.ones(7, 3)
    assert info_nce(q, q.clone(), 0.1).item() == pytest.approx(math.log(7), rel=1e-6)


def test_info_nce_agrees_with_cross_entropy_on_cosines():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(9, 5, generator=g), torch.randn(9, 5, generator=g)
    cos = torch.tensor([[float(F.cosine_similarity(q[i], k[j], dim=0)) for j in range(9)] for i in range(9)])
    want = F.cross_entropy(cos / 0.05, torch.arange(9))
    assert info_nce(q, k, 0.05).item() == pytest.approx(want.item(), rel=1e-5)


# ----------------------------------------------------------------------------- distillation
def test_distill_mse_zero_iff_normalised_means_match():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(3, 5, 8, generator=g)
    s = t.mean(1, keepdim=True).repeat(1, 4, 1) * 2.5  # K = 4 states whose mean points along the teacher's
    assert distill_loss(s, t).item() == pytest.approx(0.0, abs=1e-10)
    other = torch.randn(3, 4, 8, generator=g)
    assert distill_loss(other, t).item() > 0.1
    # the closed form: 2 - 2 cos of the means
    cos = F.cosine_similarity(other.mean(1), t.mean(1), dim=-1)
    assert distill_loss(other, t).item() == pytest.approx((2 - 2 * cos).mean().item(), rel=1e-5)
    # a position-wise term is zero only when positions match too
    assert distill_loss(s, t, positionwise=1.0).item() > 0.01
    assert distill_loss(t[:, :4], t[:, :4], positionwise=1.0).item() == pytest.approx(0.0, abs=1e-10)


def test_distill_mse_ignores_masked_output_positions():
    g = torch.Generator().manual_seed(1)
    t = torch.randn(2, 3, 6, generator=g)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    padded = t.clone()
    padded[0, 2] = 1e3
    s = torch.randn(2, 4, 6, generator=g)
    assert distill_loss(s, padded, teacher_mask=mask).item() == pytest.approx(
        distill_loss(s, t, teacher_mask=mask).item(), rel=1e-6)
    want0 = 2 - 2 * F.cosine_similarity(s[0].mean(0), t[0, :2].mean(0), dim=0)
    want1 = 2 - 2 * F.cosine_similarity(s[1].mean(0), t[1].mean(0), dim=0)
    assert distill_loss(s, t, teacher_mask=mask).item() == pytest.approx(((want0 + want1) / 2).item(), rel=1e-5)


def test_distill_kl_zero_iff_matched_and_equals_scipy():
    from scipy.stats import entropy

    g = torch.Generator().manual_seed(2)
    t = torch.randn(2, 3, 11, generator=g)
    assert distill_loss(t.clone(), t, "kl").item() == pytest.approx(0.0, abs=1e-7)
    s = torch.randn(2, 4, 11, generator=g)  # K = 4 > L = 3: only positions 0..2 compare
    want = np.mean([entropy(F.softmax(t[b, k], -1).numpy(), F.softmax(s[b, k], -1).numpy())
                    for b in range(2) for k in range(3)])
    assert distill_loss(s, t, "kl").item() == pytest.approx(want, rel=1e-5)


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


# ----------------------------------------------------------------------------- DAAP
def test_daap_unit_norm_and_eos_at_zero_weight():
    g = torch.Generator().manual_seed(0)
    h_eos, h_la = torch.randn(5, 8, generator=g) * 3, torch.randn(5, 4, 8, generator=g)
    for mode in ("sum", "concat"):
        e = daap_pool(h_eos, h_la, 0.7, mode)
        assert torch.allclose(e.norm(dim=-1), torch.ones(5), atol=1e-6)
    assert torch.allclose(daap_pool(h_eos, h_la, 0.0), F.normalize(h_eos, dim=-1), atol=1e-7)
    cat0 = daap_pool(h_eos, h_la, 0.0, "concat")
    assert torch.allclose(cat0[:, :8], F.normalize(h_eos, dim=-1), atol=1e-7) and cat0[:, 8:].abs().max() == 0
    # hand computation of one row, w = 1
    a, b = F.normalize(h_eos[0], dim=0), F.normalize(h_la[0].mean(0), dim=0)
    assert torch.allclose(daap_pool(h_eos, h_la)[0], (a + b) / (a + b).norm(), atol=1e-6)


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


# ----------------------------------------------------------------------------- analysis
def test_kmeans_nmi_hand_cases():
    x = np.array([[0, 0], [0.1, 0], [10, 10], [10.1, 10], [0, 10], [0, 10.1]], dtype=float)
    assert kmeans_nmi(x, [0, 0, 1, 1, 2, 2]) == pytest.approx(1.0)
    # clusters {01}{23}{45} against labels [0,1,0,1,0,1]: independent, NMI = 0
    assert kmeans_nmi(x, [0, 1, 0, 1, 0, 1], n_clusters=3) == pytest.approx(0.0, abs=1e-12)
    # clusters {0,1}{2,3} (k = 2) vs labels [0,0,0,1]: I = H(C) + H(Y) - H(C,Y)
    x4 = np.array([[0.0], [0.1], [5.0], [5.1]])
    hc, hy, hcy = math.log(2), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)), 1.5 * math.log(2)
    mi = hc + hy - hcy
    assert kmeans_nmi(x4, [0, 0, 0, 1], n_clusters=2) == pytest.approx(mi / ((hc + hy) / 2), rel=1e-9)
    per = instruction_nmi(np.stack([x, x]), np.array([[0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]]))
    assert per == pytest.approx([1.0, 0.0], abs=1e-12)


def test_inst_sts_spearman_hand_case():
    from scipy.stats import spearmanr

    e = np.array([[[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]]])
    pairs = np.array([[0, 0, 1, 1], [0, 0, 2, 0], [0, 1, 2, 1], [0, 0, 3, 0]])
    cos = [0.6, 0.0, 0.8, -1.0]  # by hand
    assert inst_sts_spearman(e, pairs) == pytest.approx(spearmanr(cos, [1, 0, 1, 0]).statistic)
    # ranks of cos: 3, 2, 4, 1 against gold 1, 0, 1, 0 (ranks 3.5, 1.5, 3.5, 1.5): Pearson by hand
    r = np.array([3, 2, 4, 1.0]) - 2.5
    gld = np.array([1, -1, 1, -1.0])
    assert inst_sts_spearman(e, pairs) == pytest.approx((r @ gld) / np.sqrt((r @ r) * (gld @ gld)))


def test_inst_sts_pairs_balanced_and_correct():
    labels = np.random.default_rng(0).integers(0, 5, size=(3, 40))
    pairs = inst_sts_pairs(labels, 200, np.random.default_rng(1))
    assert pairs.shape == (200, 4) and pairs[:, 3].sum() == 100
    assert all(int(labels[p[0], p[1]] == labels[p[0], p[2]]) == p[3] and p[1] != p[2] for p in pairs)


def test_instruction_sensitivity_hand_case():
    e = np.array([[[1.0, 0.0], [0.0, 2.0]],      # instruction 0 (group a)
                  [[0.0, 1.0], [0.0, 1.0]],      # instruction 1 (group b)
                  [[1.0, 1.0], [3.0, 0.0]]])     # instruction 2 (group a): not compared with 0
    # pairs (0,1): cos 0 and 1 -> 0.5; (1,2): cos 1/sqrt2 and 0 -> 0.3536
    want = (0.5 + (1 / math.sqrt(2)) / 2) / 2
    assert instruction_sensitivity(e, ["a", "b", "a"]) == pytest.approx(want)


def test_spearman_ceiling_closed_form():
    gold = np.array([0, 1] * 500)
    assert spearman_ceiling(gold) == pytest.approx(math.sqrt(3 * 0.25), abs=1e-3)
    # n = 4 by hand: ranks 1..4 against gold ranks 2, 2, 2, 4 -> Pearson 3 / sqrt(5 * 3)
    assert spearman_ceiling([0, 0, 0, 1]) == pytest.approx(3 / math.sqrt(15), rel=1e-12)


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
    np.testing.assert_array_equal(got, model.encode(texts, "what colour is it").numpy())
    assert torch.equal(enc.encode(texts[0], convert_to_tensor=True), model.encode(texts[:1], "what colour is it")[0])
    with pytest.raises(ValueError, match="instruction"):
        model.as_sentence_encoder("  ")


def test_an_evaluator_of_a_subset_reads_those_instructions_from_full_embeddings():
    """An attribute held out: the evaluator of its 3 instructions gives the same metrics from the (12, n, d)
    embeddings as from its own (3, n, d) ones, equal to NMI and Spearman computed by hand on those rows; with
    one attribute the sensitivity is undefined (NaN); unknown instructions are refused."""
    from icml26.papers.instemb import AttrWorld
    from icml26.papers.instemb.analysis import inst_sts_spearman, instruction_nmi
    from icml26.papers.instemb.evaluation import EVAL_INSTRUCTIONS, AttrWorldEval

    world = AttrWorld.sample(40, np.random.default_rng(0))
    subset = [("position", p) for p in range(3)]
    evaluator = AttrWorldEval(world, 200, np.random.default_rng(1), instructions=subset)
    full = np.random.default_rng(2).normal(size=(len(EVAL_INSTRUCTIONS), 40, 8))
    rows = full[[EVAL_INSTRUCTIONS.index(i) for i in subset]]
    a, b = evaluator.metrics(full), evaluator.metrics(rows)
    assert (a.nmi, a.spearman) == (b.nmi, b.spearman) and math.isnan(a.sensitivity)
    labels = np.stack([world.values["position"]] * 3)
    assert a.nmi == pytest.approx(float(instruction_nmi(rows, labels, seed=0).mean()))
    assert a.spearman == pytest.approx(inst_sts_spearman(rows, evaluator.pairs))
    assert int(evaluator.pairs[:, 0].max()) <= 2  # pairs index the subset's instructions
    with pytest.raises(ValueError, match="instructions"):
        AttrWorldEval(world, 10, np.random.default_rng(1), instructions=[("weight", 0)])
    with pytest.raises(ValueError, match="cover 5 instructions"):
        evaluator.metrics(full[:5])


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
