"""Six synthetic sequence skills over one 64-word vocabulary, and a tiny Llama trained on them.

The CPU stand-in for the paper's domains (brief §4.1) [ours]. An example is
``[topic] x_1 … x_n [SEP] y_1 … y_m``; the answer ``y`` is a function of ``x`` that depends on
the skill:

====================  ==================================================  =================
skill                 answer                                              content tokens
====================  ==================================================  =================
``copy``              ``x``                                               letters+digits, A
``offset_copy``       ``x`` rotated by one: ``x_2 … x_n x_1``             letters+digits, A
``reverse``           ``x_n … x_1``                                       letters+digits, B
``sort``              ``x`` sorted by token id                            letters+digits, B
``add_mod_10``        ``(a_i + b_i) mod 10`` of the digit pairs ``a_i b_i``  digits
``markov``            the next 4 states of a fixed successor chain        16 chain letters
====================  ==================================================  =================

There is no domain tag: the first token is one of three *topic words* of the skill (as a
domain's vocabulary shows in a prompt) and the content tokens follow skill-group-specific
Zipf frequencies (``A``/``B``: two permutations), so a skill is decodable from the input
but two skills share each content distribution. Nothing is downloaded.

Exact match (:func:`exact_match`): every answer token is the argmax of the model's
next-token distribution under teacher forcing, which is what greedy decoding produces.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from icml26.common.schedule import warmup_cosine
from icml26.papers.subspace_path.capture import Batch

__all__ = [
    "PAD",
    "SEP",
    "SKILLS",
    "VOCAB_SIZE",
    "SkillSet",
    "TrainLog",
    "exact_match",
    "make_skill_set",
    "planted_pathways",
    "train_skills",
]

SKILLS: tuple[str, ...] = ("copy", "offset_copy", "reverse", "sort", "add_mod_10", "markov")
"""The six skills (candidate domains)."""
PAD, SEP = 0, 1
_TOPICS = {skill: (2 + 3 * i, 3 + 3 * i, 4 + 3 * i) for i, skill in enumerate(SKILLS)}  # tokens 2..19
_DIGITS = tuple(range(20, 30))
_LETTERS = tuple(range(30, 64))
VOCAB_SIZE = 64
_MAX_PROMPT = 1 + 8 + 1
_MAX_ANSWER = 7
SEQ_LEN = _MAX_PROMPT + _MAX_ANSWER


def _zipf(tokens: Sequence[int], seed: int, exponent: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(np.asarray(tokens))
    w = 1.0 / np.arange(1, len(perm) + 1) ** exponent
    return perm, w / w.sum()


# The task itself is fixed (not drawn from the run's seed): content frequencies and the chain.
_CONTENT = _DIGITS + _LETTERS
_FREQ = {"A": _zipf(_CONTENT, 101), "B": _zipf(_CONTENT, 202)}
_CHAIN_STATES = tuple(np.random.default_rng(303).choice(_LETTERS, size=16, replace=False).tolist())
_SUCCESSOR = dict(zip(_CHAIN_STATES, _CHAIN_STATES[1:] + _CHAIN_STATES[:1]))


def _example(skill: str, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    topic = int(rng.choice(_TOPICS[skill]))
    if skill in ("copy", "offset_copy", "reverse", "sort"):
        tokens, probs = _FREQ["A" if skill in ("copy", "offset_copy") else "B"]
        n = int(rng.integers(4, 8))
        x = [int(t) for t in rng.choice(tokens, size=n, p=probs)]
        y = {"copy": x, "offset_copy": x[1:] + x[:1], "reverse": x[::-1], "sort": sorted(x)}[skill]
    elif skill == "add_mod_10":
        pairs = int(rng.integers(1, 4))
        digits = rng.integers(0, 10, size=(pairs, 2))
        x = [_DIGITS[int(d)] for d in digits.reshape(-1)]
        y = [_DIGITS[int(a + b) % 10] for a, b in digits]
    elif skill == "markov":
        n = int(rng.integers(3, 7))
        state = int(rng.choice(_CHAIN_STATES))
        walk = [state]
        for _ in range(n - 1 + 4):
            walk.append(_SUCCESSOR[walk[-1]])
        x, y = walk[:n], walk[n:]
    else:  # pragma: no cover - guarded by make_skill_set
        raise ValueError(skill)
    return [topic, *x, SEP], y


@dataclasses.dataclass
class SkillSet:
    """``N`` examples of one skill (or a mixture), padded on the right."""

    input_ids: Tensor
    """``(N, T)`` prompt + answer."""
    attention_mask: Tensor
    """``(N, T)``."""
    labels: Tensor
    """``(N, T)``: the answer tokens at their positions, ``-100`` elsewhere (HF convention)."""
    prompt_length: Tensor
    """``(N,)`` tokens of ``[topic] x [SEP]``."""
    skills: tuple[str, ...]
    """The skill of every example."""

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def prompts(self) -> Batch:
        """The input-only part ``[topic] x [SEP]`` (what a first input is), padded on the right."""
        width = int(self.prompt_length.max())
        ids = self.input_ids[:, :width].clone()
        mask = (torch.arange(width).unsqueeze(0) < self.prompt_length.unsqueeze(1)).long()
        return Batch(ids * mask, mask)

    def calibration(self) -> dict[str, Tensor]:
        """``{input_ids, attention_mask, labels}`` for the gradient baselines."""
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask, "labels": self.labels}

    def select(self, index) -> "SkillSet":
        index = torch.as_tensor(index, dtype=torch.long)
        return SkillSet(self.input_ids[index], self.attention_mask[index], self.labels[index],
                        self.prompt_length[index], tuple(self.skills[i] for i in index.tolist()))


def make_skill_set(skills: str | Sequence[str], n: int, rng: np.random.Generator) -> SkillSet:
    """``n`` examples; with several ``skills``, they alternate (a 50/50 mixture for two).

    Args:
        skills: one skill name of :data:`SKILLS` or a sequence of them.
        n: number of examples (``>= 1``).
        rng: the NumPy generator the examples are drawn from.
    """
    names = (skills,) if isinstance(skills, str) else tuple(skills)
    if not names or any(s not in SKILLS for s in names):
        raise ValueError(f"skills={skills!r} must be names from {SKILLS}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer")
    ids = torch.zeros(n, SEQ_LEN, dtype=torch.long)
    mask = torch.zeros(n, SEQ_LEN, dtype=torch.long)
    labels = torch.full((n, SEQ_LEN), -100, dtype=torch.long)
    plen = torch.zeros(n, dtype=torch.long)
    which = []
    for i in range(n):
        skill = names[i % len(names)]
        prompt, answer = _example(skill, rng)
        seq = prompt + answer
        ids[i, :len(seq)] = torch.tensor(seq)
        mask[i, :len(seq)] = 1
        labels[i, len(prompt):len(seq)] = torch.tensor(answer)
        plen[i] = len(prompt)
        which.append(skill)
    return SkillSet(ids, mask, labels, plen, tuple(which))


@torch.no_grad()
def exact_match(model: nn.Module, data: SkillSet, *, batch_size: int = 256) -> Tensor:
    """``(N,)`` booleans: every answer token is the argmax under teacher forcing."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(data), batch_size):
        sl = slice(start, start + batch_size)
        # right padding and causal attention: padding never reaches a real token, so no mask is needed
        logits = model(input_ids=data.input_ids[sl].to(device)).logits
        pred = logits[:, :-1].argmax(dim=-1).cpu()
        target = data.labels[sl, 1:]
        valid = target != -100
        out.append(((pred == target) | ~valid).all(dim=1))
    return torch.cat(out)


@dataclasses.dataclass
class TrainLog:
    """Training record of the tiny model."""

    steps: int
    final_loss: float
    seconds: float
    loss_curve: list[float]


def planted_pathways(skills: Sequence[str], n_layers: int, n_heads: int, *, shared: int, per_skill: int,
                     seed: int) -> dict[str, Tensor]:
    """Ground-truth head pathways: per layer, ``shared`` heads for every skill plus ``per_skill`` of the
    others drawn for each skill (overlaps allowed). ``{skill: (L, H) bool}``."""
    if shared + per_skill > n_heads:
        raise ValueError(f"shared={shared} + per_skill={per_skill} exceeds {n_heads} heads per layer")
    rng = np.random.default_rng(seed)
    out = {s: torch.zeros(n_layers, n_heads, dtype=torch.bool) for s in skills}
    for layer in range(n_layers):
        heads = rng.permutation(n_heads)
        common, rest = heads[:shared], heads[shared:]
        for s in skills:
            out[s][layer, torch.as_tensor(common, dtype=torch.long)] = True
            own = rng.choice(rest, size=per_skill, replace=False)
            out[s][layer, torch.as_tensor(own, dtype=torch.long)] = True
    return out


def train_skills(model: nn.Module, skills: Sequence[str], *, steps: int, batch_size: int, lr: float,
                 rng: np.random.Generator, warmup: int = 100, weight_decay: float = 0.01,
                 pathways: dict[str, Tensor] | None = None, route_drop: float = 0.0,
                 progress=None) -> TrainLog:
    """Train ``model`` in place on a uniform mixture of ``skills`` (answer tokens only), AdamW + cosine.

    Batches are right-padded and attention is causal, so padding never reaches a real token and
    no attention mask is passed (faster).

    With ``pathways`` and ``route_drop > 0`` (skill-routed head dropout, ours): for each training
    example of skill ``k``, every head outside ``pathways[k]`` is switched off with probability
    ``route_drop`` (its ``o_proj`` input zeroed), so skill ``k`` learns to rely on its pathway and to
    do without the other heads. Evaluation runs the dense model.
    """
    from icml26.papers.subspace_path.heads import scale_heads

    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    model.train()
    curve: list[float] = []
    start = time.perf_counter()
    iterator = range(steps) if progress is None else progress(range(steps), desc="train tiny Llama on six skills")
    running = math.nan
    for step in iterator:
        scale = warmup_cosine(step, steps, warmup=warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr * max(scale, 0.02)
        picks = rng.choice(len(skills), size=batch_size)
        batch = make_skill_set([skills[int(i)] for i in picks], batch_size, rng)
        if pathways is not None and route_drop > 0:
            on = torch.stack([pathways[s] for s in batch.skills])  # (B, L, H)
            drop = torch.as_tensor(rng.random(tuple(on.shape)) < route_drop)
            gate = (on | ~drop).float().to(device)
            with scale_heads(model, gate):
                logits = model(input_ids=batch.input_ids.to(device)).logits
        else:
            logits = model(input_ids=batch.input_ids.to(device)).logits
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                           batch.labels[:, 1:].reshape(-1).to(device), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        loss_value = float(loss.detach())
        running = loss_value if math.isnan(running) else 0.95 * running + 0.05 * loss_value
        if (step + 1) % 50 == 0 or step + 1 == steps:
            curve.append(running)
    model.eval()
    return TrainLog(steps=steps, final_loss=running, seconds=time.perf_counter() - start, loss_curve=curve)
