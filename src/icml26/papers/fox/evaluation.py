"""The reproduction's measurements on a trained tiny LLaVA: captioning (CHAIR), POPE, and the probe's mechanism.

Used by ``experiment.py`` (library code does not import it). Every plug-in is called the same way,
``generate(model, inputs, config)``, on the same prompts and images.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
import torch

from icml26.papers.fox.analysis import mentioned_objects, pope_scores, precision_at_k, top_k_mask
from icml26.papers.fox.attention import (
    FoxIntervention,
    HeadAblation,
    active_intervention,
    key_sets,
    use_fox_attention,
)
from icml26.papers.fox.model import caption_prompt, question_prompt, scene_inputs
from icml26.papers.fox.head_probe import num_risky_heads
from icml26.papers.fox.scenes import PARTNER, SHAPES, Scene, ShapeVocab

__all__ = ["CaptionRun", "MechanismResult", "caption_run", "mechanism", "pope_run"]

Generate = Callable[..., Any]


@dataclasses.dataclass
class CaptionRun:
    """Captions of one arm: the words, the object mentions, the mean JS between the streams."""

    captions: list[list[str]]
    mentions: list[list[str]]
    mean_js: float
    output: Any


def _chunks(n: int, size: int):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def caption_run(model, vocab: ShapeVocab, images: np.ndarray, generate: Generate, config, *, n_image_tokens: int,
                device, batch: int = 300) -> CaptionRun:
    """Greedy captions of ``images`` with one plug-in (words up to the first ".")."""
    captions, js = [], []
    output = None
    for part in _chunks(len(images), batch):
        inputs = scene_inputs([caption_prompt(n_image_tokens)] * (part.stop - part.start), images[part], vocab,
                              device=device)
        output = generate(model, inputs, config)
        for row in output.new_tokens.tolist():
            words = vocab.decode(row)
            captions.append(words[: words.index(vocab.EOS)] if vocab.EOS in words else words)
        if output.js is not None:
            js.append(output.js.float().mean().item())
    mentions = [mentioned_objects(c, SHAPES) for c in captions]
    return CaptionRun(captions, mentions, float(np.mean(js)) if js else 0.0, output)


def pope_run(model, vocab: ShapeVocab, images: np.ndarray, questions: Sequence[tuple[int, str, bool]],
             generate: Generate, config, *, n_image_tokens: int, device, batch: int = 1200) -> dict[str, float]:
    """POPE scores of one plug-in: one generated token per question, ``yes`` counts as yes."""
    predicted = []
    for part in _chunks(len(questions), batch):
        chunk = questions[part]
        inputs = scene_inputs([question_prompt(s, n_image_tokens) for _, s, _ in chunk],
                              images[[i for i, _, _ in chunk]], vocab, device=device)
        out = generate(model, inputs, config)
        predicted += (out.new_tokens[:, 0] == vocab["yes"]).tolist()
    return pope_scores(predicted, [answer for _, _, answer in questions])


@dataclasses.dataclass
class MechanismResult:
    """The probe against the heads that carry the prior toward the absent partner B.

    Attributes:
        precision: mean precision@k of the probe's heads against the top-k heads by ablation effect.
        chance: k/H.
        n_samples: samples used (those where the prior pulls: vanilla p(yes | B) ≥ ``min_p_yes``).
        p_yes: mean vanilla p(yes) for the absent partner over those samples.
        head_effect: ``(L_probe, H)`` mean drop of p(yes) when the head is ablated.
        head_selected: ``(L_probe, H)`` fraction of samples in which the probe selects the head.
    """

    precision: float
    chance: float
    n_samples: int
    p_yes: float
    head_effect: np.ndarray
    head_selected: np.ndarray


def _p_yes(model, inputs, yes: int, intervention=None) -> torch.Tensor:
    with torch.no_grad(), active_intervention(intervention):
        logits = model(**inputs).logits[:, -1, :].float()
    return torch.softmax(logits, -1)[:, yes]


def mechanism(model, vocab: ShapeVocab, scenes: Sequence[Scene], images: np.ndarray, *, layers: Sequence[int],
              rho: float, n_heads: int, n_image_tokens: int, device, min_p_yes: float = 0.1) -> MechanismResult:
    """Precision@k of Fox's probe against ablation: on "is there a B ?" for each adversarial image (A without
    its partner B), every head of the probed layers is ablated in turn on the last prompt row; the k heads
    whose ablation lowers p(yes) most are the reference, the probe's k heads on the same row the selection."""
    partners = [PARTNER[next(s for s in scene.shapes if s in PARTNER)] for scene in scenes]
    inputs = scene_inputs([question_prompt(b, n_image_tokens) for b in partners], images, vocab, device=device)
    keys = key_sets(inputs["input_ids"], vocab[vocab.IMAGE], inputs["attention_mask"])
    yes = vocab["yes"]
    k = num_risky_heads(n_heads, rho)
    with use_fox_attention(model):
        base = _p_yes(model, inputs, yes)
        probe = FoxIntervention(keys=keys, layers=frozenset(layers), rho=rho, record=True)
        _p_yes(model, inputs, yes, probe)
        by_layer = {r.layer: r.selected[:, -1, :].numpy() for r in probe.records}
        selected = np.stack([by_layer[layer] for layer in layers], 1)  # (B, L, H)
        effect = np.zeros(selected.shape, dtype=np.float64)
        for j, layer in enumerate(layers):
            for h in range(n_heads):
                ablated = _p_yes(model, inputs, yes, HeadAblation(keys=keys, layer=layer, head=h))
                effect[:, j, h] = (base - ablated).cpu().numpy()
    pulled = base.cpu().numpy() >= min_p_yes
    if pulled.sum() < 10:
        pulled = np.ones_like(pulled)
    reference = top_k_mask(effect[pulled], k)
    return MechanismResult(precision=precision_at_k(selected[pulled], reference), chance=k / n_heads,
                           n_samples=int(pulled.sum()), p_yes=float(base.cpu().numpy()[pulled].mean()),
                           head_effect=effect[pulled].mean(0), head_selected=selected[pulled].mean(0))


def hallucination_scores(run: CaptionRun, scenes: Sequence[Scene], vocab: ShapeVocab) -> tuple[list[float], list[float]]:
    """The probe's mean selected-head score on the row that predicts each object word of Fox's captions:
    ``(scores at hallucinated objects, scores at correct objects)``. Needs ``record=True``."""
    out = run.output
    if out is None or not out.records:
        return [], []
    prompt = out.prompt_length
    rows: dict[int, list[np.ndarray]] = {}
    for rec in out.records:
        sel = rec.selected.numpy()
        score = (rec.score.numpy() * sel).sum(-1) / sel.sum(-1)  # (B, R)
        for r, pos in enumerate(rec.positions.tolist()):
            rows.setdefault(pos, []).append(score[:, r])
    hallucinated, correct = [], []
    shape_ids = vocab.shape_ids
    tokens = out.sequences.tolist()
    offset = len(run.captions) - len(tokens)  # the last chunk's rows are the last captions
    for b, seq in enumerate(tokens):
        truth = set(scenes[offset + b].shapes)
        for pos in range(prompt, len(seq)):
            shape = shape_ids.get(seq[pos])
            if shape is None or pos - 1 not in rows:
                continue
            value = float(np.mean([s[b] for s in rows[pos - 1]]))
            (correct if shape in truth else hallucinated).append(value)
    return hallucinated, correct
