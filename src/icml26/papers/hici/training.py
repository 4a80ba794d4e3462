"""Training and evaluation loops of the reproduction: retrieval pretraining, LoRA extension, accuracy.

Library-grade helpers the experiment composes (they import nothing from ``experiment.py``):

* :func:`retrieval_loss`: next-token cross-entropy over the document plus ``answer_weight`` times the
  answer's cross-entropy at the ``QUERY`` position;
* :func:`pretrain_on_documents`: AdamW (warm-up, cosine) on freshly drawn documents;
* :func:`lora_extension`: wraps a (patched) model with PEFT LoRA on q/k/v/o, makes embeddings and
  norms trainable (LongLoRA's "LoRA+") and HiCI's modules trainable at their own learning rate;
* :func:`sample_batches`: a run's training documents drawn once, so that arms trained on the same
  stream (the same documents in the same order) share them instead of drawing them again;
* :func:`train_steps` and :func:`topic_scores` / :func:`topic_accuracy` (which compute only what the
  logits at ``QUERY`` need: cache-sized batches, the attention's receptive field, the last layer on the
  last positions): per document, the hit and the answer's negative log-likelihood.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.extras import require
from icml26.common.schedule import warmup_cosine
from icml26.papers.hici.data import TopicDocuments, TopicRetrievalTask
from icml26.papers.hici.readout import last_layer_window

__all__ = ["EVAL_BATCH_TOKENS", "TopicScores", "TrainLog", "lora_extension", "pretrain_on_documents",
           "retrieval_loss", "sample_batches", "topic_accuracy", "topic_scores", "train_steps"]


@dataclasses.dataclass
class TrainLog:
    """Per-step losses of a training run."""

    lm_loss: list[float] = dataclasses.field(default_factory=list)
    answer_loss: list[float] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


def retrieval_loss(logits: torch.Tensor, docs: TopicDocuments, answer_weight: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lm, answer)`` cross-entropies; the objective is ``lm + answer_weight * answer``.

    Args:
        logits: ``(n, N, vocab)`` for ``docs.input_ids`` ``(n, N)``.
    """
    vocab = logits.shape[-1]
    lm = F.cross_entropy(logits[:, :-1].reshape(-1, vocab).float(), docs.input_ids[:, 1:].reshape(-1))
    answer = F.cross_entropy(logits[:, -1].float(), docs.answer)
    return lm, answer


def sample_batches(task: TopicRetrievalTask, *, steps: int, batch_size: int, num_segments: int | tuple[int, ...],
                   rng: np.random.Generator) -> list[TopicDocuments]:
    """The ``steps`` batches :func:`train_steps` draws from ``rng``, in its order, drawn up front.

    ``train_steps(..., batches=sample_batches(task, ..., rng=rng))`` trains on the same documents as
    ``train_steps(..., rng=rng)``; arms that each start a generator of one stream can share one list.
    A tuple ``num_segments`` cycles through its values, one per step.
    """
    cycle = tuple(num_segments) if isinstance(num_segments, (tuple, list)) else (num_segments,)
    return [task.sample(batch_size, cycle[step % len(cycle)], rng) for step in range(steps)]


def train_steps(model: nn.Module, optimizer: torch.optim.Optimizer, task: TopicRetrievalTask, *, steps: int,
                batch_size: int, num_segments: int | tuple[int, ...], rng: np.random.Generator | None = None,
                answer_weight: float, warmup: int = 10, grad_clip: float = 1.0, progress: Callable | None = None,
                device="cpu", batches: Sequence[TopicDocuments] | None = None) -> TrainLog:
    """``steps`` AdamW steps on fresh documents of ``num_segments`` segments (warm-up, cosine decay).

    A tuple ``num_segments`` cycles through its values, one per step (a curriculum of lengths).
    The documents come from ``rng`` (drawn step by step) or, pre-drawn, from ``batches``
    (:func:`sample_batches`, ``steps`` of them); give exactly one of the two.
    """
    if (rng is None) == (batches is None):
        raise ValueError("give exactly one of rng (draw each step's documents) and batches (pre-drawn documents)")
    if batches is not None and len(batches) != steps:
        raise ValueError(f"batches holds {len(batches)} batches for steps={steps}; draw them with "
                         "sample_batches(task, steps=steps, ...)")
    cycle = tuple(num_segments) if isinstance(num_segments, (tuple, list)) else (num_segments,)
    peaks = [group["lr"] for group in optimizer.param_groups]
    params = [p for group in optimizer.param_groups for p in group["params"]]
    log = TrainLog()
    import time

    start = time.perf_counter()
    model.train()
    loop = progress(range(steps)) if progress is not None else range(steps)
    for step in loop:
        for group, peak in zip(optimizer.param_groups, peaks):
            group["lr"] = warmup_cosine(step, steps, warmup=warmup, floor=0.1, peak=peak)
        docs = (task.sample(batch_size, cycle[step % len(cycle)], rng) if batches is None else batches[step]).to(device)
        logits = model(input_ids=docs.input_ids, use_cache=False).logits
        lm, answer = retrieval_loss(logits, docs, answer_weight)
        optimizer.zero_grad(set_to_none=True)
        (lm + answer_weight * answer).backward()
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        log.lm_loss.append(float(lm.detach()))
        log.answer_loss.append(float(answer.detach()))
    for group, peak in zip(optimizer.param_groups, peaks):
        group["lr"] = peak
    model.eval()
    log.seconds = time.perf_counter() - start
    return log


def pretrain_on_documents(model: nn.Module, task: TopicRetrievalTask, *, steps: int, batch_size: int,
                          num_segments: int | tuple[int, ...], lr: float, rng: np.random.Generator, answer_weight: float,
                          weight_decay: float = 0.1, progress: Callable | None = None, device="cpu") -> TrainLog:
    """Pretrain every parameter with AdamW (betas 0.9/0.95, decay on matrices) on whole documents."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    other = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                   {"params": other, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    return train_steps(model, optimizer, task, steps=steps, batch_size=batch_size, num_segments=num_segments,
                       rng=rng, answer_weight=answer_weight, warmup=max(1, steps // 10), progress=progress,
                       device=device)


def lora_extension(model: nn.Module, *, rank: int, alpha: float, lr: float, hici_lr: float,
                   hici_params: list[nn.Parameter] | None = None):
    """PEFT LoRA on q/k/v/o, plus trainable embeddings and norms; returns ``(peft_model, optimizer)``.

    ``hici_params`` (HiCI's modules, when the model is patched) train at ``hici_lr`` (the authors:
    10x the base rate); everything else trainable at ``lr``.
    """
    peft = require("peft", "lora")
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0,
                                                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    hici_ids = {id(p) for p in hici_params or []}
    for name, p in wrapped.named_parameters():
        if id(p) in hici_ids or (("embed_tokens" in name or "norm" in name) and "lora_" not in name):
            p.requires_grad_(True)
    base = [p for p in wrapped.parameters() if p.requires_grad and id(p) not in hici_ids]
    groups = [{"params": base, "lr": lr}]
    if hici_params:
        groups.append({"params": list(hici_params), "lr": hici_lr})
    return wrapped, torch.optim.AdamW(groups, weight_decay=0.0)


#: Tokens per evaluation batch when ``topic_accuracy`` picks the batch size: small enough for the
#: activations to stay in cache (larger batches ran 20-35% slower on one CPU core, same results).
EVAL_BATCH_TOKENS = 8192


@dataclasses.dataclass
class TopicScores:
    """Per document: ``hits`` (the argmax over the T topic tokens is the answer) and ``nll`` (the answer's
    negative log-likelihood under the softmax over the whole vocabulary, nats), both ``(n,)``."""

    hits: np.ndarray
    nll: np.ndarray


def topic_accuracy(model: nn.Module, docs: TopicDocuments, task: TopicRetrievalTask, *, batch_size: int | None = None,
                   device="cpu", context: int | None = None, window: int | None = None) -> np.ndarray:
    """``topic_scores(...).hits``: per document, whether the topic argmax at ``QUERY`` is the answer (bool)."""
    return topic_scores(model, docs, task, batch_size=batch_size, device=device, context=context,
                        window=window).hits


@torch.inference_mode()
def topic_scores(model: nn.Module, docs: TopicDocuments, task: TopicRetrievalTask, *, batch_size: int | None = None,
                 device="cpu", context: int | None = None, window: int | None = None) -> TopicScores:
    """Per document, whether the argmax over the T topic tokens at ``QUERY`` is the answer, and the answer's NLL.

    The NLL is a held-out score that keeps separating arms after the accuracy saturates at 1.

    Documents are independent (no padding, no cross-document attention), so the batch size changes
    only the speed. Runs under ``torch.inference_mode`` (no autograd records, no version counters):
    the model stays trainable afterwards, as the base model is before its arms are fine-tuned.

    Args:
        batch_size: documents per forward pass (default: ``EVAL_BATCH_TOKENS`` tokens' worth, at least one).
        context: feed only the last ``context`` tokens of each document, at their original positions
            (None, or at least the document length: the whole document). The result is the same
            whenever the model's last-token output depends on those tokens only (its attention's
            receptive field): one segment for block-local attention,
            :func:`icml26.papers.hici.s2attn.receptive_field` for S²-Attn; never for full attention
            or HiCI (its global context pools every earlier segment).
        window: compute the last decoder layer for the last ``window`` fed positions only
            (:func:`icml26.papers.hici.readout.last_layer_window`; in HiCI mode a multiple of G). The
            logits at ``QUERY`` are the same; None: the whole layer.
    """
    if context is not None and (isinstance(context, bool) or not isinstance(context, int) or context < 1):
        raise ValueError(f"context={context!r} must be a positive integer or None")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size={batch_size!r} must be a positive integer or None")
    model.eval()
    topics = torch.as_tensor(task.topic_tokens, device=device)
    length = docs.input_ids.shape[1]
    start = 0 if context is None else max(0, length - context)
    extra = {}
    if start > 0:  # the positions the tokens have in the whole document (RoPE), as the model would make them
        extra["position_ids"] = torch.arange(start, length, device=device).unsqueeze(0)
    if batch_size is None:
        batch_size = max(1, EVAL_BATCH_TOKENS // (length - start))
    windowed = window is not None and window < length - start
    hits, nll = [], []
    with last_layer_window(model, window) if windowed else contextlib.nullcontext():
        for i in range(0, len(docs), batch_size):
            part = docs.batch(slice(i, i + batch_size)).to(device)
            logits = model(input_ids=part.input_ids[:, start:], use_cache=False, logits_to_keep=1,
                           **extra).logits[:, -1]
            predicted = topics[logits[:, topics].argmax(-1)]
            hits.append((predicted == part.answer).cpu().numpy())
            # nll = -log softmax(logits)[answer]
            nll.append(F.cross_entropy(logits.float(), part.answer, reduction="none").cpu().numpy())
    return TopicScores(hits=np.concatenate(hits), nll=np.concatenate(nll).astype(np.float64))
