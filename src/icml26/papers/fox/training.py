"""Train the tiny LLaVA on ShapeScenes captions and yes/no questions (cached by configuration and seed).

Each training example is a caption (``… describe : a red circle and a blue cross .``) or a
question (``… is there a cross ? yes``); the loss covers the answer tokens only. Question
negatives are drawn uniformly among the absent shapes (generic instruction data; the POPE
adversarial negatives are an evaluation-only construction).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.common.argcheck import check_int, check_real
from icml26.common.cache import config_hash, entry, load_entry
from icml26.common.extras import require
from icml26.common.hf import quiet_transformers
from icml26.common.progress import progress as progress_bar
from icml26.common.schedule import warmup_cosine
from icml26.papers.fox.config import CHECK_SETS
from icml26.papers.fox.model import TinyVLMConfig, build_tiny_llava, caption_prompt, pixel_values, question_prompt
from icml26.papers.fox.scenes import (
    COLOURS,
    SHAPES,
    SceneConfig,
    ShapeVocab,
    caption_tokens,
    pope_questions,
    render_scenes,
    sample_adversarial_scenes,
    sample_scenes,
)

__all__ = [
    "TrainConfig", "TrainedVLM", "pope_random_accuracy", "pretrain_vision", "trained_tiny_llava", "train_tiny_llava",
    "training_batch",
]

log = logging.getLogger(__name__)
_VERSION = "fox-tiny-llava-v1"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Training of the tiny LLaVA."""

    steps: int = 2000
    """Optimizer steps."""
    batch_size: int = 32
    """Examples per step."""
    lr: float = 2e-3
    """Peak AdamW learning rate (linear warm-up, cosine decay to 10 %)."""
    warmup: int = 100
    """Warm-up steps."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    caption_fraction: float = 0.5
    """Fraction of caption examples (the rest: yes/no questions)."""
    n_scenes: int = 6000
    """Training scenes (rendered once, sampled with replacement)."""
    vision_lr_scale: float = 0.02
    """Learning-rate multiplier of the vision tower and the projector in the LLaVA stage (nearly frozen,
    as LLaVA-1.5 freezes its CLIP; chosen on a development split)."""
    vision_pretrain_steps: int = 1500
    """Steps of the vision stage: the CLIP tower alone learns each quadrant's shape and colour (a
    stand-in for LLaVA's pretrained CLIP; 0 skips it)."""
    stop_pope_accuracy: float = 0.0
    """Stop the LLaVA stage at the first check where greedy POPE-random accuracy on development scenes (a
    stream of their own) reaches this value; ``steps`` is then the cap and the schedule still spans it.
    0: train ``steps`` steps (no checks)."""
    check_every: int = 250
    """Steps between two development POPE checks (with ``stop_pope_accuracy > 0``)."""
    check_on: str = "training"
    """What the development check asks: ``"training"``, one present and one absent shape per
    training-distribution scene; ``"evaluation"``, POPE-random as the run scores it (every present shape and
    as many random absent ones) on adversarial scenes (an anchor without its partner), so that the target is
    read on the distribution it is scored on."""
    check_scenes: int = 200
    """Development scenes of the check (their own random stream, never a scored scene)."""

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "n_scenes"):
            check_int(getattr(self, name), name, low=1)
        check_int(self.warmup, "warmup", low=0)
        check_int(self.vision_pretrain_steps, "vision_pretrain_steps", low=0)
        check_real(self.lr, "lr", low=0.0, low_open=True)
        check_real(self.weight_decay, "weight_decay", low=0.0)
        check_real(self.grad_clip, "grad_clip", low=0.0, low_open=True)
        check_real(self.caption_fraction, "caption_fraction", low=0.0, high=1.0)
        check_real(self.vision_lr_scale, "vision_lr_scale", low=0.0, low_open=True)
        check_real(self.stop_pope_accuracy, "stop_pope_accuracy", low=0.0, high=1.0)
        check_int(self.check_every, "check_every", low=1)
        check_int(self.check_scenes, "check_scenes", low=1)
        if self.check_on not in CHECK_SETS:
            raise ValueError(f"check_on={self.check_on!r} must be one of {CHECK_SETS}")


@dataclasses.dataclass
class TrainedVLM:
    """A trained tiny LLaVA and where it came from."""

    model: Any
    vocab: ShapeVocab
    model_config: TinyVLMConfig
    scene_config: SceneConfig
    train_config: TrainConfig
    seed: int
    log: dict[str, list[float]]
    cache_key: str
    weights_sha256: str | None


def training_batch(scenes, images: np.ndarray, indices: np.ndarray, rng: np.random.Generator, vocab: ShapeVocab,
                   caption_fraction: float, n_image_tokens: int) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask``, ``labels`` (−100 outside answers) and ``pixel_values``."""
    seqs, answer_starts = [], []
    for i in indices:
        scene = scenes[i]
        if rng.random() < caption_fraction:
            prompt, answer = caption_prompt(n_image_tokens), caption_tokens(scene)
        else:
            present = scene.shapes
            if rng.random() < 0.5:
                shape, reply = present[rng.integers(len(present))], "yes"
            else:
                absent = [s for s in SHAPES if s not in present]
                shape, reply = absent[rng.integers(len(absent))], "no"
            prompt, answer = question_prompt(shape, n_image_tokens), [reply]
        seqs.append(vocab.encode(prompt + answer))
        answer_starts.append(len(prompt))
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), vocab[vocab.PAD], dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for b, (s, start) in enumerate(zip(seqs, answer_starts)):
        ids[b, : len(s)] = torch.tensor(s)
        mask[b, : len(s)] = 1
        labels[b, start: len(s)] = torch.tensor(s[start:])
    return {"input_ids": ids, "attention_mask": mask, "labels": labels,
            "pixel_values": pixel_values(images[indices])}


def pretrain_vision(model, scenes, images: np.ndarray, steps: int, rng: np.random.Generator, *, lr: float = 2e-3,
                    batch_size: int = 32) -> list[float]:
    """Train the LLaVA's CLIP tower alone to name each quadrant's shape and colour (or "empty"): a linear
    head on its flattened patch features, cross-entropy; the head is discarded afterwards."""
    tower = model.model.vision_tower
    width = tower.config.hidden_size
    n_tokens = (tower.config.image_size // tower.config.patch_size) ** 2
    classes = len(SHAPES) * len(COLOURS) + 1
    labels = torch.full((len(scenes), 4), classes - 1, dtype=torch.long)
    for i, scene in enumerate(scenes):
        for shape, colour, quadrant, *_ in scene.objects:
            labels[i, quadrant] = SHAPES.index(shape) * len(COLOURS) + COLOURS.index(colour)
    head = torch.nn.Linear(width * n_tokens, 4 * classes)
    optimizer = torch.optim.AdamW(list(tower.parameters()) + list(head.parameters()), lr=lr)
    pixels = pixel_values(images)
    losses = []
    tower.train()
    for _ in range(steps):
        idx = torch.as_tensor(rng.integers(0, len(scenes), size=batch_size))
        features = tower(pixel_values=pixels[idx]).last_hidden_state[:, 1:].flatten(1)
        loss = torch.nn.functional.cross_entropy(head(features).view(-1, classes), labels[idx].view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def pope_random_accuracy(model, vocab: ShapeVocab, scenes, images: np.ndarray, rng: np.random.Generator, *,
                         n_image_tokens: int, protocol: str = "one_each") -> float:
    """Greedy POPE-random accuracy; the answer is yes when the argmax over the vocabulary at the last prompt row
    is ``yes``. ``protocol``: ``"one_each"``, per scene one present shape ("yes") and one absent shape drawn
    uniformly ("no"); ``"pope"``, :func:`~.scenes.pope_questions` ``"random"`` (every present shape and as
    many random absent ones, as the run scores POPE)."""
    if protocol not in ("one_each", "pope"):
        raise ValueError(f"protocol={protocol!r} must be 'one_each' or 'pope'")
    if protocol == "pope":
        questions = pope_questions(scenes, "random", rng)
    else:
        questions = []
        for i, scene in enumerate(scenes):
            absent = [s for s in SHAPES if s not in scene.shapes]
            questions += [(i, scene.shapes[rng.integers(len(scene.shapes))], True),
                          (i, absent[rng.integers(len(absent))], False)]
    prompts, answers, which = [], [], []
    for i, shape, answer in questions:
        prompts.append(vocab.encode(question_prompt(shape, n_image_tokens)))
        answers.append(answer)
        which.append(i)
    device = next(model.parameters()).device
    ids = torch.tensor(prompts, dtype=torch.long, device=device)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids),
                       pixel_values=pixel_values(images[which]).to(device)).logits[:, -1, :]
    model.train(was_training)
    said_yes = (logits.argmax(-1) == vocab["yes"]).cpu().numpy()
    return float((said_yes == np.asarray(answers)).mean())


def train_tiny_llava(model_config: TinyVLMConfig, scene_config: SceneConfig, train_config: TrainConfig, *,
                     seed: int, show_progress: bool | None = None) -> tuple[Any, dict[str, list[float]]]:
    """Train a fresh tiny LLaVA on CPU (bit-reproducible for a seed); return ``(model, log)``."""
    vocab = ShapeVocab()
    rng = np.random.default_rng([seed, 1])
    scenes = sample_scenes(train_config.n_scenes, rng, scene_config)
    images = render_scenes(scenes, scene_config, size=model_config.image_size)
    model = build_tiny_llava(model_config, vocab, seed=seed)
    start = time.perf_counter()
    vision_losses = pretrain_vision(model, scenes, images, train_config.vision_pretrain_steps, rng)
    model.train()
    groups: dict[tuple[bool, bool], list] = {}
    for name, param in model.named_parameters():
        vision = "vision_tower" in name or "multi_modal_projector" in name
        decay = param.dim() >= 2 and "embed" not in name
        groups.setdefault((vision, decay), []).append(param)
    optimizer = torch.optim.AdamW(
        [{"params": params, "weight_decay": train_config.weight_decay if decay else 0.0,
          "lr": train_config.lr * (train_config.vision_lr_scale if vision else 1.0)}
         for (vision, decay), params in groups.items()], lr=train_config.lr, betas=(0.9, 0.98))

    def factor(step: int) -> float:
        return warmup_cosine(step, train_config.steps, warmup=train_config.warmup, floor=0.1)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    losses: list[float] = []
    checks: list[float] = []
    if train_config.stop_pope_accuracy > 0:  # development scenes of their own stream: training draws unchanged
        dev_rng = np.random.default_rng([seed, 2])
        sample = sample_adversarial_scenes if train_config.check_on == "evaluation" else sample_scenes
        dev_scenes = sample(train_config.check_scenes, dev_rng, scene_config)
        dev_images = render_scenes(dev_scenes, scene_config, size=model_config.image_size)
        protocol = "pope" if train_config.check_on == "evaluation" else "one_each"
    for step in progress_bar(range(train_config.steps), enabled=show_progress, desc="fox: train tiny LLaVA"):
        if train_config.stop_pope_accuracy > 0 and step and step % train_config.check_every == 0:
            checks.append(pope_random_accuracy(model, vocab, dev_scenes, dev_images, np.random.default_rng([seed, 3]),
                                               n_image_tokens=model_config.n_image_tokens, protocol=protocol))
            if checks[-1] >= train_config.stop_pope_accuracy:
                break
        idx = rng.integers(0, len(scenes), size=train_config.batch_size)
        batch = training_batch(scenes, images, idx, rng, vocab, train_config.caption_fraction,
                               model_config.n_image_tokens)
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train_config.grad_clip)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    every = max(1, train_config.steps // 50)
    curve = [float(np.mean(losses[i: i + every])) for i in range(0, len(losses), every)]
    logs = {"loss": curve, "every": [float(every)], "seconds": [time.perf_counter() - start],
            "vision_loss": vision_losses[-1:], "steps_trained": [float(len(losses))]}
    if train_config.stop_pope_accuracy > 0:
        logs["pope_dev_accuracy"] = checks
    return model, logs


_KEY_NEUTRAL = {"stop_pope_accuracy": 0.0, "check_every": 250, "check_on": "training", "check_scenes": 200}
"""Fields added after models were cached: left out of the cache key at these values (they change nothing
there), so the models already trained keep their key."""


def _train_key(train_config: TrainConfig) -> dict[str, Any]:
    """The training config as it enters the cache key."""
    out = dataclasses.asdict(train_config)
    if out["stop_pope_accuracy"] == 0.0:
        for name in ("check_every", "check_on", "check_scenes"):
            out.pop(name)
    for name, value in _KEY_NEUTRAL.items():
        if name in out and out[name] == value:
            out.pop(name)
    return out


def trained_tiny_llava(model_config: TinyVLMConfig = TinyVLMConfig(), scene_config: SceneConfig = SceneConfig(),
                       train_config: TrainConfig = TrainConfig(), *, seed: int = 0, cache: bool = True,
                       device: torch.device | str = "cpu", show_progress: bool | None = None) -> TrainedVLM:
    """A tiny LLaVA trained on ShapeScenes, from the cache when this configuration and seed were trained before."""
    transformers = require("transformers", "lm")
    seed = check_int(seed, "seed", low=0)
    model_key = dataclasses.asdict(model_config)
    for name in ("text_layers", "logit_cap", "cap_layers"):  # added after models were cached: a plain
        if model_key[name] is None:                         # decoder keeps its key
            del model_key[name]
    config = {"model": model_key, "scenes": dataclasses.asdict(scene_config),
              "train": _train_key(train_config), "seed": seed}
    key = config_hash(_VERSION, config, transformers.__version__, torch.__version__)
    digest = None
    if cache:
        with entry("fox", key, config=config) as (final, build):
            if build is not None:
                model, logs = train_tiny_llava(model_config, scene_config, train_config, seed=seed,
                                               show_progress=show_progress)
                from safetensors.torch import save_file

                save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(build / "model.safetensors"))
                (build / "log.json").write_text(json.dumps(logs))
        from safetensors.torch import load_file

        model = build_tiny_llava(model_config, ShapeVocab(), seed=seed)
        with quiet_transformers():
            model.load_state_dict(load_file(str(Path(final) / "model.safetensors")))
        logs = json.loads((Path(final) / "log.json").read_text())
        digest = load_entry(final).digest
    else:
        model, logs = train_tiny_llava(model_config, scene_config, train_config, seed=seed,
                                       show_progress=show_progress)
    model.eval().to(device)
    return TrainedVLM(model=model, vocab=ShapeVocab(), model_config=model_config, scene_config=scene_config,
                      train_config=train_config, seed=seed, log=logs, cache_key=key, weights_sha256=digest)
