"""Tiny Hugging Face causal LMs, built from configs and pretrained here.

Nothing may be downloaded, so papers that need a language model get one from this
module: a GPT-2 or Llama architecture (``transformers``) at about a million
parameters, pretrained for a few minutes on the offline stdlib-docstring corpus
(:mod:`icml26.common.corpus`) with the byte-level BPE of
:mod:`icml26.common.tokenizer`, and cached as safetensors under a hash of
everything that produced it.

Steps of :func:`pretrained_tiny_lm`:

1. build the corpus and tokenizer, encode train/validation into id streams;
2. build the model from :class:`TinyLMConfig` with a seeded initialisation;
3. train with AdamW, linear warm-up and cosine decay on random windows drawn with a
   seeded generator (:func:`pretrain`);
4. save model, tokenizer and the training log in the cache; later calls load them.

Needs the ``lm`` extra.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np
import torch

from icml26.common.cache import config_hash, entry, load_entry
from icml26.common.corpus import Corpus, stdlib_corpus
from icml26.common.extras import require
from icml26.common.hf import quiet_transformers
from icml26.common.progress import progress
from icml26.common.schedule import warmup_cosine

__all__ = [
    "PretrainConfig",
    "PretrainLog",
    "TinyLM",
    "TinyLMConfig",
    "build_model",
    "encode_corpus",
    "evaluate_loss",
    "pretrain",
    "pretrained_tiny_lm",
    "random_windows",
]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TinyLMConfig:
    """Architecture of a tiny causal LM (defaults: GPT-2, about 1.07 M parameters)."""

    arch: Literal["gpt2", "llama"] = "gpt2"
    """``gpt2`` (learned positions, LayerNorm, GELU) or ``llama`` (RoPE, RMSNorm, SwiGLU)."""
    vocab_size: int = 2048
    """BPE vocabulary size (the tokenizer is trained to this size)."""
    d_model: int = 128
    """Width of the residual stream."""
    n_layers: int = 4
    """Number of transformer blocks."""
    n_heads: int = 4
    """Attention heads per block."""
    d_ff: int | None = None
    """Hidden width of the MLP (default ``4 * d_model`` for GPT-2, ``8/3 * d_model`` for Llama)."""
    context: int = 128
    """Maximum sequence length (positions)."""
    dropout: float = 0.0
    """Dropout on embeddings, attention and residuals (GPT-2 only)."""
    tie_embeddings: bool = True
    """Share the input embedding and the output head."""

    def __post_init__(self) -> None:
        if self.arch not in ("gpt2", "llama"):
            raise ValueError(f"arch={self.arch!r} must be 'gpt2' or 'llama'")
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "context"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    """Pretraining schedule.

    Defaults, measured on 2 CPU cores with the default :class:`TinyLMConfig`: about
    190 s, validation loss 4.16 nats against a unigram entropy of 6.41.
    """

    steps: int = 1000
    """Optimizer steps."""
    batch_size: int = 16
    """Sequences per step."""
    lr: float = 3e-3
    """Peak AdamW learning rate."""
    warmup: int = 60
    """Linear warm-up steps."""
    min_lr_ratio: float = 0.1
    """Final learning rate as a fraction of the peak (cosine decay)."""
    weight_decay: float = 0.1
    """AdamW weight decay on matrices (not on biases and norms)."""
    grad_clip: float = 1.0
    """Global gradient-norm clip."""
    seed: int = 0
    """Seeds the initialisation and the data order."""
    eval_every: int = 200
    """Validation loss is measured every this many steps (and at the end)."""
    eval_batches: int = 20
    """Validation batches per measurement."""


@dataclasses.dataclass
class PretrainLog:
    """Losses recorded during :func:`pretrain`."""

    steps: list[int]
    train_loss: list[float]
    eval_steps: list[int]
    valid_loss: list[float]
    seconds: float
    aux_loss: list[float] = dataclasses.field(default_factory=list)
    """Per-step value of the auxiliary term, when :func:`pretrain` was given ``aux_loss``."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class TinyLM:
    """A pretrained tiny LM with its tokenizer, data streams and provenance."""

    model: "torch.nn.Module"
    tokenizer: object
    config: TinyLMConfig
    train_config: PretrainConfig
    train_ids: torch.Tensor
    valid_ids: torch.Tensor
    log: PretrainLog
    corpus_sha256: str
    cache_key: str
    weights_sha256: str | None = None
    """Digest of the cache entry's manifest (``None`` when built with ``cache=False``)."""

    @property
    def provenance(self) -> dict:
        return {"tiny_lm_cache_key": self.cache_key, "corpus_sha256": self.corpus_sha256,
                "tiny_lm_weights_sha256": self.weights_sha256}


def build_model(config: TinyLMConfig, *, seed: int = 0, attn_implementation: str = "sdpa"):
    """A freshly initialised Hugging Face causal LM (``GPT2LMHeadModel`` or ``LlamaForCausalLM``).

    ``attn_implementation="eager"`` is needed when attention weights are read
    (``output_attentions=True``).
    """
    transformers = require("transformers", "lm")
    if config.arch == "gpt2":
        hf_config = transformers.GPT2Config(
            vocab_size=config.vocab_size,
            n_positions=config.context,
            n_embd=config.d_model,
            n_layer=config.n_layers,
            n_head=config.n_heads,
            n_inner=config.d_ff,
            resid_pdrop=config.dropout,
            embd_pdrop=config.dropout,
            attn_pdrop=config.dropout,
            bos_token_id=0,
            eos_token_id=0,
            tie_word_embeddings=config.tie_embeddings,
        )
        cls = transformers.GPT2LMHeadModel
    else:
        d_ff = config.d_ff or int(round(8 * config.d_model / 3 / 16) * 16)
        hf_config = transformers.LlamaConfig(
            vocab_size=config.vocab_size,
            hidden_size=config.d_model,
            intermediate_size=d_ff,
            num_hidden_layers=config.n_layers,
            num_attention_heads=config.n_heads,
            num_key_value_heads=config.n_heads,
            max_position_embeddings=config.context,
            bos_token_id=0,
            eos_token_id=0,
            tie_word_embeddings=config.tie_embeddings,
        )
        cls = transformers.LlamaForCausalLM
    hf_config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(hf_config)
    return model


def encode_corpus(tokenizer, corpus: Corpus, *, separator: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Encode train and validation documents into two flat id streams.

    ``separator=None`` puts ``EOS`` between documents (each tokenised alone); a string joins each split's
    documents with it into one text, tokenised as a whole (as a single file would be).
    """
    if separator is not None:
        if not isinstance(separator, str):
            raise TypeError(f"separator must be a string or None, got {type(separator).__name__}")

        def text(joined: str) -> torch.Tensor:
            return torch.tensor(tokenizer(joined, add_special_tokens=False)["input_ids"], dtype=torch.long)

        return text(corpus.train_text(separator)), text(corpus.valid_text(separator))
    eos = tokenizer.eos_token_id

    def stream(docs) -> torch.Tensor:
        encoded = tokenizer(list(docs), add_special_tokens=False)["input_ids"]
        flat = np.fromiter((t for ids in encoded for t in (*ids, eos)), dtype=np.int64)
        return torch.from_numpy(flat)

    return stream(corpus.train), stream(corpus.valid)


def random_windows(ids: torch.Tensor, batch_size: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``batch_size`` random windows of ``length`` tokens from a flat stream: ``(batch, length)``."""
    if ids.numel() <= length:
        raise ValueError(f"the stream has {ids.numel()} tokens, too few for windows of {length}")
    starts = torch.randint(0, ids.numel() - length, (batch_size,), generator=generator)
    return torch.stack([ids[s : s + length] for s in starts.tolist()])


@torch.no_grad()
def evaluate_loss(model, ids: torch.Tensor, *, context: int, batch_size: int = 32,
                  max_batches: int | None = 20) -> float:
    """Mean next-token cross-entropy (nats) over consecutive non-overlapping windows of ``ids``."""
    device = next(model.parameters()).device
    n_windows = (ids.numel() - 1) // context
    if n_windows < 1:
        raise ValueError(f"{ids.numel()} tokens are too few for a window of {context}")
    if max_batches is not None:
        n_windows = min(n_windows, max_batches * batch_size)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, n_windows, batch_size):
        rows = range(start, min(start + batch_size, n_windows))
        batch = torch.stack([ids[r * context : r * context + context + 1] for r in rows]).to(device)
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1), reduction="sum"
        )
        total += float(loss)
        count += batch[:, 1:].numel()
    model.train(was_training)
    return total / count


def _param_groups(model, weight_decay: float):
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step: int, cfg: PretrainConfig) -> float:
    """Learning rate at ``step``: linear warm-up then cosine decay to ``min_lr_ratio * lr``."""
    return warmup_cosine(step, cfg.steps, warmup=cfg.warmup, floor=cfg.min_lr_ratio, peak=cfg.lr)


def pretrain(
    model,
    train_ids: torch.Tensor,
    valid_ids: torch.Tensor,
    cfg: PretrainConfig,
    *,
    context: int,
    show_progress: bool | None = None,
    aux_loss: Callable[[Any, torch.Tensor], torch.Tensor] | None = None,
    on_step: Callable[[int, torch.nn.Module], None] | None = None,
) -> PretrainLog:
    """Train ``model`` in place with AdamW on random windows; return the loss log.

    Args:
        aux_loss: optional auxiliary term ``aux_loss(outputs, input_ids) -> scalar`` added
            to the cross-entropy (``input_ids``: ``(batch, context)``). With it the forward
            pass runs with ``output_hidden_states=True`` so the term can read
            ``outputs.hidden_states``; its values are logged in ``PretrainLog.aux_loss``
            (``train_loss`` stays the cross-entropy alone).
        on_step: called as ``on_step(step, model)`` with ``step = 0`` before the first
            update and ``step = s`` after the ``s``-th (for example to keep checkpoints).
            It must not change the parameters; the model is put back in train mode after it.

    Neither argument changes the data order or the updates of a run without them.
    """
    import time

    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(cfg.seed)
    optimizer = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    logs = PretrainLog(steps=[], train_loss=[], eval_steps=[], valid_loss=[], seconds=0.0)
    start = time.perf_counter()
    model.train()
    if on_step is not None:
        on_step(0, model)
        model.train()
    bar = progress(range(cfg.steps), enabled=show_progress, desc="pretrain tiny LM")
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        batch = random_windows(train_ids, cfg.batch_size, context + 1, generator).to(device)
        if aux_loss is None:
            logits = model(input_ids=batch[:, :-1]).logits
        else:
            outputs = model(input_ids=batch[:, :-1], output_hidden_states=True)
            logits = outputs.logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        objective = loss
        if aux_loss is not None:
            aux = aux_loss(outputs, batch[:, :-1])
            logs.aux_loss.append(float(aux.detach()))
            objective = loss + aux
        optimizer.zero_grad(set_to_none=True)
        objective.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        logs.steps.append(step)
        logs.train_loss.append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            val = evaluate_loss(model, valid_ids, context=context, max_batches=cfg.eval_batches)
            logs.eval_steps.append(step + 1)
            logs.valid_loss.append(val)
            bar.set_postfix(train=f"{loss.item():.3f}", valid=f"{val:.3f}")
            log.info("step %d: train %.3f valid %.3f", step + 1, loss.item(), val)
        if on_step is not None:
            on_step(step + 1, model)
            model.train()
    model.eval()
    logs.seconds = time.perf_counter() - start
    return logs


def pretrained_tiny_lm(
    config: TinyLMConfig = TinyLMConfig(),
    train_config: PretrainConfig = PretrainConfig(),
    *,
    corpus: Corpus | None = None,
    cache: bool = True,
    device: str | torch.device = "cpu",
    show_progress: bool | None = None,
) -> TinyLM:
    """A tiny LM pretrained on the offline corpus, from the cache when it was trained before.

    The cache key hashes both configs, the corpus hash and the tokenizer, so changing
    any of them trains a new model. Training runs on CPU for bit-reproducibility; the
    returned model is moved to ``device``.
    """
    transformers = require("transformers", "lm")
    from icml26.common.tokenizer import train_tokenizer

    corpus = corpus or stdlib_corpus()
    tokenizer = train_tokenizer(corpus, config.vocab_size, cache=cache)
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    key = config_hash("tiny-lm-v1", dataclasses.asdict(config), dataclasses.asdict(train_config),
                      corpus.sha256, transformers.__version__)

    def train_fresh() -> tuple[torch.nn.Module, PretrainLog]:
        model = build_model(config, seed=train_config.seed)
        logs = pretrain(model, train_ids, valid_ids, train_config, context=config.context,
                        show_progress=show_progress)
        return model, logs

    digest = None
    if cache:
        with entry("tiny_lm", key, config={"model": dataclasses.asdict(config),
                                            "train": dataclasses.asdict(train_config)}) as (final, tmp):
            if tmp is not None:
                model, logs = train_fresh()
                with quiet_transformers():
                    model.save_pretrained(tmp)
                (tmp / "pretrain_log.json").write_text(json.dumps(logs.to_dict()))
        with quiet_transformers():
            model = transformers.AutoModelForCausalLM.from_pretrained(final)
        model.config._attn_implementation = "sdpa"
        logs = PretrainLog(**json.loads((Path(final) / "pretrain_log.json").read_text()))
        digest = load_entry(final).digest
    else:
        model, logs = train_fresh()
    model.eval()
    model.to(device)
    return TinyLM(model=model, tokenizer=tokenizer, config=config, train_config=train_config,
                  train_ids=train_ids, valid_ids=valid_ids, log=logs, corpus_sha256=corpus.sha256,
                  cache_key=key, weights_sha256=digest)
