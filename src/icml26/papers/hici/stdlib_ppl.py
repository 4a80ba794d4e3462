"""Full setting only: perplexity at 512 tokens of the stdlib-pretrained tiny Llama extended by each arm.

``pretrained_tiny_lm(TinyLMConfig(arch="llama"))`` (context 128, cached) is extended x4 with linear
position interpolation and the same LoRA recipe as the retrieval arms, on random 512-token windows of
the stdlib corpus, and scored on its validation stream in chunked and full mode.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

from icml26.common.hf import quiet_transformers
from icml26.common.tiny_lm import TinyLMConfig, evaluate_loss, pretrained_tiny_lm, random_windows
from icml26.papers.hici import s2attn
from icml26.papers.hici.baselines import position_interpolation
from icml26.papers.hici.config import Config
from icml26.papers.hici.patch import hici_parameters, patch, set_inference_mode
from icml26.papers.hici.training import lora_extension

__all__ = ["stdlib_perplexity"]


def stdlib_perplexity(config: Config, ctx) -> dict[str, dict[str, float]]:
    """``{arm: {mode: perplexity}}`` (modes ``chunked`` / ``full``) after ``config.stdlib_steps`` steps."""
    lm = pretrained_tiny_lm(TinyLMConfig(arch="llama"), show_progress=ctx.show_progress)
    length = lm.config.context * config.extension_factor
    hici_cfg = config.hici_config(segment_size=length // config.extension_factor)
    out: dict[str, dict[str, float]] = {}
    for arm in ("hici", "s2attn", "chunked", "full_ft"):
        model = position_interpolation(copy.deepcopy(lm.model), config.extension_factor).to(ctx.device)
        if arm == "hici":
            patch(model, hici_cfg, seed=ctx.seed_for("hici_init"))
        elif arm == "chunked":
            patch(model, config.hici_config(segment_size=hici_cfg.segment_size, num_slots=0, num_global=0))
        elif arm == "s2attn":
            s2attn.patch(model, hici_cfg.segment_size)
        extra = hici_parameters(model) if arm == "hici" else None
        with quiet_transformers():
            wrapped, optimizer = lora_extension(model, rank=config.lora_rank, alpha=2.0 * config.lora_rank,
                                                lr=config.lr, hici_lr=config.hici_lr, hici_params=extra)
        generator = ctx.torch_generator("stdlib", 0)
        wrapped.train()
        for _ in ctx.progress(range(config.stdlib_steps), desc=f"stdlib {arm}"):
            batch = random_windows(lm.train_ids, config.finetune_batch, length + 1, generator).to(ctx.device)
            logits = wrapped(input_ids=batch[:, :-1], use_cache=False).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in wrapped.parameters() if p.requires_grad], 1.0)
            optimizer.step()
        wrapped.eval()
        for mode in ("chunked", "full"):
            if arm in ("hici", "chunked"):
                set_inference_mode(wrapped, "hici" if mode == "chunked" else "full")
            elif arm == "s2attn":
                s2attn.set_inference_mode(wrapped, "s2" if mode == "chunked" else "full")
            elif mode == "chunked":
                continue
            loss = evaluate_loss(wrapped, lm.valid_ids, context=length, batch_size=8, max_batches=10)
            out.setdefault(arm, {})[mode] = math.exp(loss)
    return out
