"""The curvature reproduction's fast paths against their plain ones (two code paths, one answer, bit for bit
where the fast path runs the same arithmetic)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("transformers")
from icml26.common.hf import decoder_blocks  # noqa: E402
from icml26.common.tiny_lm import TinyLMConfig, build_model  # noqa: E402
from icml26.papers.curvature import perturb  # noqa: E402

SMALL = TinyLMConfig(vocab_size=300, d_model=32, n_layers=4, n_heads=2, context=32)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def small_model(request):
    return build_model(dataclasses.replace(SMALL, arch=request.param), seed=5).eval()


@pytest.mark.parametrize("layer", [0, 1, 3, 4, -2])
def test_patched_passes_from_the_patched_block_equal_the_hooked_full_stack(small_model, layer, monkeypatch):
    """On a Llama-type model the cached sweep reruns only blocks ``layer .. L-1`` of the last token for each
    patch; the hooked pass through every block gives the same Delta H bit for bit (GPT-2 adds position
    embeddings to ``inputs_embeds``, so it, and layers 0 and L, keep the hooked pass)."""
    ids = torch.randint(0, SMALL.vocab_size, (6, 11), generator=_gen(11))
    eps = (0.01, 0.05, 0.2)
    entry = type("Layer", (), {"crop": lambda self, n: None})()
    cache = type("Cache", (), {"layers": [entry] * SMALL.n_layers})()  # only its layers are read
    upper = perturb._upper_blocks(small_model, layer % (SMALL.n_layers + 1), cache)
    assert (upper is not None) == (small_model.config.model_type == "llama" and 0 < layer % 5 < 4)
    fast = perturb.perturbation_sweep(small_model, ids, layer, eps, generator=_gen(3), use_cache=True)
    again = perturb.perturbation_sweep(small_model, ids, layer, eps, generator=_gen(3), use_cache=True)
    monkeypatch.setattr(perturb, "_upper_blocks", lambda *args: None)  # every patch through the whole stack
    hooked = perturb.perturbation_sweep(small_model, ids, layer, eps, generator=_gen(3), use_cache=True)
    assert hooked.aligned.abs().max() > 1e-4  # the patches move the entropy: the comparison has power
    for name in ("aligned", "misaligned", "state_norm", "target_distance"):
        assert torch.equal(getattr(fast, name), getattr(hooked, name)), name
        assert torch.equal(getattr(again, name), getattr(fast, name)), name  # the cache is cropped back
    # the model's block stack is restored
    assert len(decoder_blocks(small_model)) == SMALL.n_layers


def test_entropy_and_next_log_prob_from_one_log_softmax():
    """The layer-wise analysis reads the entropy and the next token's log-probability from one log-softmax
    per row: the entropies are next_token_entropy's bit for bit (in blocks of rows or not), the log-probs
    -log_softmax gathered, equal to the cross-entropy to float rounding, NaN where no next token is given."""
    from icml26.papers.curvature import entropy as entropy_module

    logits = torch.randn(3, 40, 50_000, generator=_gen(21)) * 4  # 6 M logits: more than one block
    logits[1, 3, :] = float("nan")  # a broken row stays NaN
    ids = torch.randint(0, 50_000, (3, 40), generator=_gen(22))
    next_ids = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -1)], dim=1)
    h, log_p = entropy_module._entropy_and_log_prob(logits, next_ids)
    assert logits.numel() > entropy_module._CHUNK
    torch.testing.assert_close(h, entropy_module.next_token_entropy(logits), rtol=0, atol=0, equal_nan=True)
    want = torch.log_softmax(logits, -1)[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
    torch.testing.assert_close(log_p[:, :-1], want, rtol=0, atol=0, equal_nan=True)
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    ok = torch.isfinite(ce)
    torch.testing.assert_close(-log_p[:, :-1][ok], ce[ok], rtol=1e-5, atol=1e-4)
    assert torch.isnan(log_p[:, -1]).all() and torch.isnan(log_p[1, 3])
    small = logits[:1, :5, :100].contiguous()  # one block: the one-pass entropy
    h_small, _ = entropy_module._entropy_and_log_prob(small, next_ids[:1, :5] % 100)
    assert torch.equal(h_small, entropy_module.next_token_entropy(small))
