"""The robustification of a real pretrained LM, on natural text and on the LM's own samples.

D is SmolLM2-135M (:func:`icml26.common.pretrained.load_pretrained_lm`) wrapped as a
:class:`TorchNextTokenModel` over its whole vocabulary. The decision (ours; the paper's
experiments are not public): before each token the learner guesses its class among three,
a word start (the token begins with a space or a newline), a token without letters
(punctuation, digits, symbols) and a word continuation, with loss 0 when right and 1
otherwise. The loss depends on a token only through its class, so the learner's regret, the
running regret and the trigger need only D's class marginals; the TV between D and D′ is
measured over the whole vocabulary.

What is reported: the share of natural-text windows (documents the LM did not generate) on
which D′ falls back and the per-position TV(D, D′) there; the same trigger rate on D's own
samples with the Monte Carlo sequence-level TV E_D[(1 − D′(y)/D(y))₊].
"""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.papers.robust_ntp.learner import _count, _tokens
from icml26.papers.robust_ntp.models import TorchNextTokenModel
from icml26.papers.robust_ntp.robustify import Robustified, running_regret

__all__ = ["class_loss", "lm_samples", "natural_text_study", "text_windows", "token_classes"]

_CLASS_LOSS = 1.0 - np.eye(3)


def token_classes(tokens: list[str]) -> np.ndarray:
    """Class of each token string (byte-level BPE spelling): 0 starts with a space or newline
    (``Ġ``/``Ċ`` or a literal one), 1 has no letter, 2 otherwise (a word continuation)."""
    out = np.empty(len(tokens), dtype=np.int64)
    for i, tok in enumerate(tokens):
        tok = tok or ""
        if tok[:1] in ("Ġ", "Ċ", " ", "\n", "\t", "ĉ"):
            out[i] = 0
        elif not any(ch.isalpha() for ch in tok):
            out[i] = 1
        else:
            out[i] = 2
    return out


def class_loss(classes: np.ndarray) -> np.ndarray:
    """``(3, V)``: loss of guessing class a when the token is y, 0 if ``classes[y] == a`` else 1."""
    classes = _tokens("classes", classes, 3)
    return _CLASS_LOSS[:, classes]


def text_windows(token_ids: list[list[int]], horizon: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, horizon)``: the first ``horizon`` tokens of up to ``n`` documents long enough, drawn without
    replacement."""
    horizon, n = _count("horizon", horizon, 1), _count("n", n, 1)
    long = [ids[:horizon] for ids in token_ids if len(ids) >= horizon]
    if not long:
        raise ValueError(f"no document has {horizon} tokens")
    pick = rng.choice(len(long), size=min(n, len(long)), replace=False)
    return np.asarray([long[i] for i in sorted(pick)], dtype=np.int64)


@torch.no_grad()
def lm_samples(module: torch.nn.Module, n: int, horizon: int, vocab: int, bos: int, classes: np.ndarray,
               seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` samples of length ``horizon`` from the LM's first ``vocab`` logits, after ``bos``.

    Returns tokens ``(n, T)``, D's class marginals ``(n, T, 3)`` at each position and the log-probability
    D gave each sampled token ``(n, T)``. A Hugging Face model is sampled with its key/value cache;
    another module recomputes the prefix each step.
    """
    n, horizon, vocab = _count("n", n, 1), _count("horizon", horizon, 1), _count("vocab", vocab, 1)
    device = next(module.parameters()).device
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    onehot = torch.zeros(vocab, 3, dtype=torch.float64)
    onehot[torch.arange(vocab), torch.as_tensor(classes[:vocab])] = 1.0
    ids = torch.full((n, 1), bos, dtype=torch.long, device=device)
    tokens, marg, logp = [], [], []
    past, step_ids = None, ids
    hf = hasattr(module, "config")
    if hf:
        from icml26.common.hf import cache_kwarg, output_cache

        kw = cache_kwarg(module)  # "cache" on transformers >= 5.2x, "past_key_values" before
    for _ in range(horizon):
        if hf:
            out = module(input_ids=step_ids, **{kw: past}, use_cache=True)
            past = output_cache(out)
        else:
            out = module(ids)
        logits = getattr(out, "logits", out)[:, -1, :vocab].double().cpu()
        p = torch.softmax(logits, dim=-1)
        y = torch.multinomial(p, 1, generator=gen)
        tokens.append(y[:, 0])
        marg.append(p @ onehot)
        logp.append(torch.log(p.gather(1, y))[:, 0])
        step_ids = y.to(device)
        ids = torch.cat([ids, step_ids], dim=1)
    return (torch.stack(tokens, 1).numpy(), torch.stack(marg, 1).numpy(), torch.stack(logp, 1).numpy())


def _sample_tv(tokens: np.ndarray, logp: np.ndarray, trigger: list[int | None], vocab: int) -> np.ndarray:
    """Per sample: (1 − D′(y)/D(y))₊, where D′ predicts the empirical frequency since t₀ (uniform at t₀)."""
    out = np.zeros(len(tokens))
    for i, t0 in enumerate(trigger):
        if t0 is None:
            continue
        log_ratio, counts = 0.0, {}
        for t in range(t0, tokens.shape[1]):
            y, seen = int(tokens[i, t]), t - t0
            q = 1.0 / vocab if seen == 0 else counts.get(y, 0) / seen
            log_ratio += (math.log(q) if q > 0 else -math.inf) - float(logp[i, t])
            counts[y] = counts.get(y, 0) + 1
        out[i] = max(0.0, 1.0 - math.exp(min(log_ratio, 50.0)))
    return out


def natural_text_study(module: torch.nn.Module, vocab: int, bos: int, classes: np.ndarray, windows: np.ndarray,
                       n_samples: int, seed: int) -> dict[str, float]:
    """D = the LM, D′ = its robustification (β = √T, τ = √T) at T = ``windows.shape[1]``; see the module doc."""
    windows = _tokens("windows", windows, vocab)
    horizon = windows.shape[1]
    beta = tau = math.sqrt(horizon)
    loss = class_loss(classes[:vocab])
    model = TorchNextTokenModel(module, vocab, bos=bos)
    robust = Robustified(model, loss, beta, tau)
    fired, tvs = [], []
    for seq in windows:
        p = model.conditionals(seq)[:-1]  # one forward pass; D′ needs a second only where it falls back
        fired.append(bool((running_regret(p, seq, loss, beta)[1:-1] > tau).any()))
        tvs.append(0.5 * np.abs(p - robust.conditionals(seq)[:-1]).sum(axis=1).mean() if fired[-1] else 0.0)
    tokens, marg, logp = lm_samples(module, n_samples, horizon, vocab, bos, classes, seed)
    regrets = running_regret(marg, classes[tokens], _CLASS_LOSS, beta)[:, 1:-1]
    trig = [int(np.flatnonzero(r > tau)[0]) + 1 if (r > tau).any() else None for r in regrets]
    return {"trigger_rate_natural_text": float(np.mean(fired)),
            "per_position_tv_natural_text": float(np.mean(tvs)),
            "trigger_rate_own_samples": float(np.mean([t is not None for t in trig])),
            "tv_mc_own_samples": float(_sample_tv(tokens, logp, trig, vocab).mean()),
            "windows": float(len(windows)), "samples": float(n_samples)}
