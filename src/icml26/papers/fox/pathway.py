"""Does the pathway Fox targets exist in a trained model? Two measurements on the model itself, made
before a CHAIR number is read (used by ``experiment.py``; library code does not import this module):

* :func:`saturation_effects`: on "is there a B ?" for images that hold the anchor A without its partner B
  (where the planted prior pulls towards "yes"), the drop of p(yes) when Fox's own operation, the
  saturation of a head's attention logits on the last prompt row, is applied to each head alone, to every
  head of a layer, to every head of Fox's layers, to the heads Fox's probe selects (Fox's interventional
  stream itself) and to ``k`` random heads of Fox's layers per image. The probe beats chance when its heads
  lower p(yes | absent) more than random heads of the same layers do; the pathway exists when saturating
  the probe's heads lowers it at all (by :data:`PATHWAY_MIN_DROP`). Ablation (a head's output zeroed) is
  reported beside it: a head can carry the prior and keep it under saturation, when its routing key sits
  alone in its top 8-wide logit bin.
* :func:`stream_disagreement`: along vanilla's own greedy captions (teacher-forced), at every object word,
  whether the interventional stream's argmax differs from the observational stream's. With ``w > 0`` the
  fused logits ``l_o + w·l_i`` keep an argmax both streams share (and the plausibility mask keeps ``l_o``'s
  argmax), so Fox can change a mention only where the streams disagree, or by changing an earlier word.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from icml26.common.argcheck import check_int
from icml26.papers.fox.analysis import object_steps
from icml26.papers.fox.attention import (
    FoxIntervention,
    HeadAblation,
    HeadSaturation,
    active_intervention,
    key_sets,
    use_fox_attention,
)
from icml26.papers.fox.decoding import FoxConfig, num_decoder_layers
from icml26.papers.fox.fusion import js_divergence
from icml26.papers.fox.head_probe import num_risky_heads
from icml26.papers.fox.model import caption_prompt, pixel_values, question_prompt, scene_inputs
from icml26.papers.fox.scenes import PARTNER, SHAPES, Scene, ShapeVocab

__all__ = ["PATHWAY_MIN_DROP", "SaturationEffects", "StreamDisagreement", "random_head_masks",
           "saturation_effects", "stream_disagreement", "teacher_forced_streams"]

PATHWAY_MIN_DROP = 0.05
"""The drop of p(yes | absent B) under Fox's own saturation above which the pathway is said to exist
(ours: three times the largest single-head saturation effect, 0.014, of the 4-layer model trained longer)."""


@dataclasses.dataclass
class SaturationEffects:
    """Mean drops of vanilla p(yes | absent partner B), over the images where the prior pulls.

    Attributes:
        p_yes: mean vanilla p(yes) for the absent partner.
        n_samples: images used (vanilla p(yes) ≥ ``min_p_yes``; all when fewer than 10 are).
        head_saturation: ``(L, H)`` drop when that head alone is saturated.
        head_ablation: ``(L, H)`` drop when that head's output is zeroed.
        probe_selected: ``(L, H)`` fraction of images in which Fox's probe, run on that layer alone,
            selects the head.
        layer_sets: drop when every head of a set is saturated: ``"layer ℓ"``, ``"Fox's layers"``,
            ``"all layers"``.
        fox_layers: Fox's probed layers.
        fox_drop: drop under Fox's interventional stream (the probe's k heads per layer, saturated).
        random_drop: drop when k random heads per Fox layer are saturated (mean over draws).
    """

    p_yes: float
    n_samples: int
    head_saturation: np.ndarray
    head_ablation: np.ndarray
    probe_selected: np.ndarray
    layer_sets: dict[str, float]
    fox_layers: tuple[int, ...]
    fox_drop: float
    random_drop: float

    @property
    def probe_gain(self) -> float:
        """``fox_drop − random_drop``: how much the probe's choice beats k random heads of the same layers."""
        return self.fox_drop - self.random_drop

    @property
    def pathway_exists(self) -> bool:
        """Fox's saturation of its probe's heads lowers p(yes | absent) by at least :data:`PATHWAY_MIN_DROP`."""
        return self.fox_drop >= PATHWAY_MIN_DROP


def random_head_masks(rng: np.random.Generator, batch: int, heads: int, k: int) -> torch.Tensor:
    """``(batch, heads)`` boolean with exactly ``k`` True per row, uniformly among the ``C(heads, k)`` sets."""
    batch, heads = check_int(batch, "batch", low=1), check_int(heads, "heads", low=1)
    k = check_int(k, "k", low=1, high=heads)
    order = np.argsort(rng.random((batch, heads)), axis=1)[:, :k]
    out = np.zeros((batch, heads), dtype=bool)
    np.put_along_axis(out, order, True, axis=1)
    return torch.from_numpy(out)


def _p_yes(model, inputs, yes: int, intervention=None) -> torch.Tensor:
    with torch.no_grad(), active_intervention(intervention):
        logits = model(**inputs).logits[:, -1, :].float()
    return torch.softmax(logits, -1)[:, yes].cpu()


def saturation_effects(model, vocab: ShapeVocab, scenes: Sequence[Scene], images: np.ndarray, *,
                       fox_layers: Sequence[int], rho: float, n_image_tokens: int, device,
                       rng: np.random.Generator, n_random: int = 4, min_p_yes: float = 0.1,
                       shift: float = 1e4, saturation: str = "fp16") -> SaturationEffects:
    """The saturation effect of every head, of layer sets, of Fox's probe and of random heads on
    p(yes | absent partner B) (module docstring). Each scene must hold an anchor of ``PARTNER``."""
    n_random = check_int(n_random, "n_random", low=1)
    partners = [PARTNER[next(s for s in scene.shapes if s in PARTNER)] for scene in scenes]
    inputs = scene_inputs([question_prompt(b, n_image_tokens) for b in partners], images, vocab, device=device)
    keys = key_sets(inputs["input_ids"], vocab[vocab.IMAGE], inputs["attention_mask"])
    yes = vocab["yes"]
    n_layers = num_decoder_layers(model)
    heads = int(model.config.text_config.num_attention_heads)
    k = num_risky_heads(heads, rho)
    fox_layers = tuple(sorted(set(fox_layers)))
    sat = dict(shift=shift, saturation=saturation)
    batch = len(scenes)
    with use_fox_attention(model):
        base = _p_yes(model, inputs, yes)

        def drop(intervention) -> np.ndarray:
            return (base - _p_yes(model, inputs, yes, intervention)).numpy()

        head_sat = np.zeros((batch, n_layers, heads))
        head_abl = np.zeros((batch, n_layers, heads))
        selected = np.zeros((batch, n_layers, heads), dtype=bool)
        for layer in range(n_layers):
            probe = FoxIntervention(keys=keys, layers=frozenset({layer}), rho=rho, record=True, **sat)
            _p_yes(model, inputs, yes, probe)
            selected[:, layer] = probe.records[0].selected[:, -1, :].numpy()
            for h in range(heads):
                head_sat[:, layer, h] = drop(HeadSaturation(keys=keys, heads={layer: [h]}, **sat))
                head_abl[:, layer, h] = drop(HeadAblation(keys=keys, layer=layer, head=h))
        every = list(range(heads))
        sets = {f"layer {layer}": {layer: every} for layer in range(n_layers)}
        sets["Fox's layers"] = {layer: every for layer in fox_layers}
        sets["all layers"] = {layer: every for layer in range(n_layers)}
        set_drops = {name: drop(HeadSaturation(keys=keys, heads=chosen, **sat)) for name, chosen in sets.items()}
        fox = drop(FoxIntervention(keys=keys, layers=frozenset(fox_layers), rho=rho, **sat))
        random = np.mean([drop(HeadSaturation(keys=keys, heads={layer: random_head_masks(rng, batch, heads, k)
                                                                for layer in fox_layers}, **sat))
                          for _ in range(n_random)], axis=0)
    pulled = base.numpy() >= min_p_yes
    if pulled.sum() < 10:
        pulled = np.ones_like(pulled)
    return SaturationEffects(
        p_yes=float(base.numpy()[pulled].mean()), n_samples=int(pulled.sum()),
        head_saturation=head_sat[pulled].mean(0), head_ablation=head_abl[pulled].mean(0),
        probe_selected=selected[pulled].mean(0),
        layer_sets={name: float(v[pulled].mean()) for name, v in set_drops.items()}, fox_layers=fox_layers,
        fox_drop=float(fox[pulled].mean()), random_drop=float(random[pulled].mean()))


@dataclasses.dataclass
class StreamDisagreement:
    """The two streams along vanilla's greedy captions, at the object words.

    Attributes:
        n_hallucinated, n_correct: object mentions of each kind.
        disagree_hallucinated, disagree_correct: fraction of those mentions at which the interventional
            stream's argmax differs from the observational stream's (NaN when there is none).
        js_hallucinated, js_correct: mean JS divergence (nats) between the streams there.
    """

    n_hallucinated: int
    n_correct: int
    disagree_hallucinated: float
    disagree_correct: float
    js_hallucinated: float
    js_correct: float


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def teacher_forced_streams(model, vocab: ShapeVocab, captions: Sequence[Sequence[str]], images: np.ndarray,
                           config: FoxConfig, *, n_image_tokens: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(l_o, l_i)``, each ``(B, P + T, V)`` float32 on the CPU: the observational and Fox's interventional
    logits over the caption prompt followed by each caption (right-padded); row ``P − 1 + t`` predicts word
    ``t``. Fox's stream intervenes on every row from ``P − 1`` on, each with its own statistics, which equals
    its cached decoding (the test suite checks it against :class:`DualStreamLogitsProcessor`)."""
    prompt = caption_prompt(n_image_tokens)
    length = len(prompt)
    seqs = [vocab.encode(prompt + list(c)) for c in captions]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), vocab[vocab.PAD], dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s)
        mask[b, : len(s)] = 1
    inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device),
              "pixel_values": pixel_values(images).to(device)}
    keys = key_sets(inputs["input_ids"][:, :length], vocab[vocab.IMAGE], inputs["attention_mask"][:, :length])
    fox = FoxIntervention(keys=keys, layers=frozenset(config.resolve_layers(model)), rho=config.rho,
                          score=config.score, shift=config.shift, saturation=config.saturation, grid=config.grid)
    with torch.no_grad(), use_fox_attention(model):
        l_o = model(**inputs).logits.float().cpu()
        with active_intervention(fox):
            l_i = model(**inputs).logits.float().cpu()
    return l_o, l_i


def stream_disagreement(model, vocab: ShapeVocab, captions: Sequence[Sequence[str]],
                        truths: Sequence[Sequence[str]], images: np.ndarray, config: FoxConfig, *,
                        n_image_tokens: int, device, batch: int = 100) -> StreamDisagreement:
    """Teacher-force each caption (vanilla's) after the caption prompt through both of Fox's streams and
    compare them at every object word (module docstring). Fox's stream intervenes on every row from the
    last prompt row on, each with its own statistics: the cache-free equivalent of its cached decoding."""
    if len(captions) != len(truths) or len(captions) != len(images):
        raise ValueError(f"captions ({len(captions)}), truths ({len(truths)}) and images ({len(images)}) must "
                         "have one entry per image")
    batch = check_int(batch, "batch", low=1)
    length = len(caption_prompt(n_image_tokens))
    found: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
    for start in range(0, len(captions), batch):
        part = range(start, min(len(captions), start + batch))
        l_o, l_i = teacher_forced_streams(model, vocab, [captions[i] for i in part], images[start: part.stop], config,
                                          n_image_tokens=n_image_tokens, device=device)
        for b, i in enumerate(part):
            for t, hallucinated in object_steps(captions[i], truths[i], SHAPES):
                row = length - 1 + t  # the row that predicts word t
                differ = bool(l_o[b, row].argmax() != l_i[b, row].argmax())
                found[hallucinated][0].append(float(differ))
                found[hallucinated][1].append(float(js_divergence(l_o[b, row], l_i[b, row])))
    return StreamDisagreement(
        n_hallucinated=len(found[True][0]), n_correct=len(found[False][0]),
        disagree_hallucinated=_mean(found[True][0]), disagree_correct=_mean(found[False][0]),
        js_hallucinated=_mean(found[True][1]), js_correct=_mean(found[False][1]))
