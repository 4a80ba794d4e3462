"""HiCI reproduction: extending a tiny Llama from 128 to 512 tokens on marked-segment topic retrieval.

1. Data (:mod:`icml26.papers.hici.data`): T = 8 topics (bigram chains, Dirichlet(0.1) rows over 96
   tokens); a document is S segments, one of them (anywhere) starting with MARK; after the final
   QUERY the answer is the marked segment's topic.
2. Pretraining at context 128 on documents of ``pretrain_segments`` segments of
   ``pretrain_segment_tokens`` tokens (default 4 x 32: the retrieval skill at short range).
3. Extension x4 (S = 4 segments of 128 = 512 tokens), linear position interpolation x4, equal budgets
   (``finetune_steps`` steps, same documents in the same order) of LoRA r = 8 on q/k/v/o plus trainable
   embeddings and norms for four arms: (a) HiCI ``causal_shift`` (G = 128; its modules train too),
   (b) LongLoRA S²-Attn (group 128, no-wrap partition), (c) chunked attention without slots (HiCI with
   M = K = 0), (d) full-attention fine-tuning.
4. Accuracy and the answer's NLL on ``eval_docs`` documents at 512 and 1024 tokens, every arm in its
   chunked mode (HiCI, S²-Attn, block-local; block-local for (d)) and in full mode, and (e) the
   pretrained base with position interpolation and no fine-tuning (``pi_only``) the same way. Each arm's
   own mode (the one it trained in; full for (d) and (e)) is also reported as ``*_own``, and HiCI's
   differences to (b), (d), (e) both with each arm in its own mode and with every arm in full mode.
   Only the logits at ``QUERY`` are read:
   the block-local and S²-Attn modes see only their receptive field (:func:`_eval_context`) and the
   last layer computes the last segment only (:mod:`icml26.papers.hici.readout`), the same numbers.
5. Strict causality of the trained HiCI model; the attention block (d = 256, forward + backward) timed
   at N = 1k-8k for full SDPA, HiCI with G = 256 and HiCI at ratio 1/4, side by side.
6. Full setting only: perplexity of ``pretrained_tiny_lm(TinyLMConfig(arch="llama"))`` (stdlib corpus)
   extended to 512 by each arm.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch

from icml26.common.hf import quiet_transformers
from icml26.common.tiny_lm import TinyLMConfig, build_model
from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.hici import analysis, s2attn
from icml26.papers.hici.baselines import position_interpolation
from icml26.papers.hici.benchmark import time_attention_blocks
from icml26.papers.hici.claims import CHECKS
from icml26.papers.hici.config import Config
from icml26.papers.hici.data import TopicRetrievalTask
from icml26.papers.hici.modules import GlobalIntegrator, LocalConstructor
from icml26.papers.hici.patch import hici_parameters, patch, set_inference_mode
from icml26.papers.hici.stdlib_ppl import stdlib_perplexity
from icml26.papers.hici.training import lora_extension, pretrain_on_documents, sample_batches, topic_scores, train_steps

__all__ = ["CHECKS", "Config", "STREAMS", "run"]

STREAMS: dict[str, str] = {
    "pretrain": "the base model's pre-training batches",
    "finetune": "every arm's fine-tuning batches",
    "eval": "the evaluation prompts",
    "leak": "the leakage probe's prompts",
    "init": "the base model's initialisation",
    "hici_init": "HiCI's added modules' initialisation",
    "stdlib": "the standard-library perplexity section's batch order",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""
ARMS = ("hici", "s2attn", "chunked", "full_ft")
#: The mode each arm trained in (``pi_only``: the pretrained base with PI x4, no fine-tuning, full attention).
OWN_MODE = {"hici": "chunked", "s2attn": "chunked", "chunked": "chunked", "full_ft": "full", "pi_only": "full"}
LLAMA2_7B_PARAMS = 6_738_415_616  # LLaMA-2-7B, counted from its Hugging Face checkpoint
LLAMA2_7B_LAYERS, LLAMA2_7B_WIDTH = 32, 4096


def _make_arm(arm: str, base, config: Config, seed: int):
    """The arm's model before LoRA: a copy of ``base``, position-interpolated, patched."""
    model = position_interpolation(copy.deepcopy(base), config.interpolation_factor)
    if arm == "hici":
        patch(model, config.hici_config(), seed=seed)
    elif arm == "chunked":
        patch(model, config.hici_config(num_slots=0, num_global=0))
    elif arm == "s2attn":
        s2attn.patch(model, config.segment_tokens)
    return model


def _set_mode(arm: str, model, mode: str, config: Config):
    """``chunked``: the arm's own segment attention (block-local for full_ft); ``full``: full attention."""
    if arm in ("hici", "chunked"):
        set_inference_mode(model, "hici" if mode == "chunked" else "full")
    elif arm == "s2attn":
        s2attn.set_inference_mode(model, "s2" if mode == "chunked" else "full")
    elif mode == "chunked":
        model = patch(copy.deepcopy(model), config.hici_config(num_slots=0, num_global=0))
    return model


def _eval_context(arm: str, mode: str, config: Config) -> int | None:
    """Trailing tokens the last token depends on in the arm's ``mode``, or None (the whole document).

    Chunked mode is block-local for ``chunked``, ``full_ft`` and ``pi_only`` (one segment) and S²-Attn for
    ``s2attn`` (:func:`s2attn.receptive_field`); HiCI's global context and full attention see everything.
    Evaluating on that cut gives the same logits at ``QUERY`` for a fraction of the cost.
    """
    if mode != "chunked":
        return None
    if arm in ("chunked", "full_ft", "pi_only"):
        return config.segment_tokens
    if arm == "s2attn":
        return s2attn.receptive_field(config.segment_tokens, config.n_layers)
    return None


def _score(arm: str, model, config: Config, eval_docs: dict, task: TopicRetrievalTask, device) -> dict[str, float]:
    """Accuracy and mean answer NLL per length, in chunked and full mode, and in the arm's own mode."""
    row: dict[str, float] = {}
    for mode in ("chunked", "full"):
        evaluated = _set_mode(arm, model, mode, config)
        for name, docs in eval_docs.items():
            scores = topic_scores(evaluated, docs, task, device=device, context=_eval_context(arm, mode, config),
                                  window=config.segment_tokens)
            row[f"acc_{name}_{mode}"] = float(scores.hits.mean())
            row[f"nll_{name}_{mode}"] = float(scores.nll.mean())
    for name in eval_docs:
        row[f"acc_{name}_own"] = row[f"acc_{name}_{OWN_MODE[arm]}"]
        row[f"nll_{name}_own"] = row[f"nll_{name}_{OWN_MODE[arm]}"]
    return row


def _leak(model, task: TopicRetrievalTask, config: Config, ctx: RunContext) -> float:
    """Max |logit change| at positions <= N/2 - 1 when every later token is redrawn (HiCI, chunked mode)."""
    rng = ctx.rng("leak")
    n = config.extension_factor
    docs = task.sample(4, n, rng)
    x = docs.input_ids.to(ctx.device)
    half = x.shape[1] // 2
    y = x.clone()
    y[:, half:] = torch.as_tensor(rng.integers(0, task.content_vocab, size=(4, x.shape[1] - half)), device=ctx.device)
    with torch.inference_mode():
        a, b = model(input_ids=x, use_cache=False).logits, model(input_ids=y, use_cache=False).logits
    return float((a[:, :half] - b[:, :half]).abs().max())


def _overhead_7b() -> tuple[int, float]:
    """HiCI parameters per LLaMA-2-7B layer, counted on the meta device, and their share of base + HiCI."""
    with torch.device("meta"):
        local = LocalConstructor(LLAMA2_7B_WIDTH, 8, 512, 8)
        glob = GlobalIntegrator(LLAMA2_7B_WIDTH, 4, 512, 128, 8)
    per_layer = sum(p.numel() for p in [*local.parameters(), *glob.parameters()])
    return per_layer, analysis.parameter_overhead(LLAMA2_7B_LAYERS * per_layer, LLAMA2_7B_PARAMS)


def slope_fit_from(sizes) -> int:
    """The smallest N of the within-round slope fits: the second size when three or more are timed (at
    N = 1k the projections, linear in N, still weigh: 2k-8k for the default sizes), else the first."""
    ordered = sorted(set(sizes))
    return ordered[1] if len(ordered) >= 3 else ordered[0]


def _timing_reads(timings) -> tuple[dict[str, float], float, dict[str, float], float]:
    """Two reads of the same interleaved rounds.

    ``fastest``: slopes over every size and the HiCI / full ratio at the largest N from each arm's fastest
    run per size. ``rounds``: the slope (over N >= :func:`slope_fit_from`) and the ratio computed within
    each round, every size and arm timed moments apart, and their median over the rounds.

    Returns:
        ``(fastest slopes, fastest ratio, rounds slopes, rounds ratio)``.
    """
    slopes = {arm: analysis.loglog_slope(timings.sizes, secs) for arm, secs in timings.seconds.items()}
    ratio = timings.seconds["hici_fixed_g"][-1] / timings.seconds["full"][-1]
    fit_from = slope_fit_from(timings.sizes)
    round_slopes = {arm: float(np.median(analysis.round_slopes(timings.sizes, per_size, fit_from)))
                    for arm, per_size in timings.samples.items()}
    last = int(np.argmax(timings.sizes))
    round_ratio = float(np.median(np.asarray(timings.samples["hici_fixed_g"][last])
                                  / np.asarray(timings.samples["full"][last])))
    return slopes, ratio, round_slopes, round_ratio


def _seconds_note(timings, arm: str) -> str:
    return "seconds per forward+backward at N = " + ", ".join(
        f"{n}: {t:.4f}" for n, t in zip(timings.sizes, timings.seconds[arm]))


def run(config: Config, ctx: RunContext) -> Outcome:
    device = ctx.device
    g = config.segment_tokens
    task = TopicRetrievalTask(num_topics=config.num_topics, segment_tokens=g, seed=ctx.seed,
                              topic_tokens_each=config.topic_tokens_each or None)
    pre_task = dataclasses.replace(task, segment_tokens=config.pretrain_segment_tokens)
    lm_config = TinyLMConfig(arch="llama", vocab_size=task.vocab_size, d_model=config.d_model,
                             n_layers=config.n_layers, n_heads=config.n_heads, context=config.context)
    ctx.stage(f"pretraining a {config.d_model}-d Llama at context {config.context}")
    base = build_model(lm_config, seed=ctx.seed_for("init")).to(device)
    pre_log = pretrain_on_documents(base, pre_task, steps=config.pretrain_steps, batch_size=config.pretrain_batch,
                                    num_segments=config.pretrain_segments, lr=config.pretrain_lr,
                                    rng=ctx.rng("pretrain"), answer_weight=config.answer_weight,
                                    progress=lambda it: ctx.progress(it, desc="pretrain"), device=device)
    eval_rng = ctx.rng("eval")
    lengths = {str(config.extension_factor * g): config.extension_factor,
               str(config.eval_extrapolation * g): config.eval_extrapolation}
    short = str(config.extension_factor * g)
    eval_docs = {name: task.sample(config.eval_docs, s, eval_rng) for name, s in lengths.items()}
    pre_docs = pre_task.sample(config.eval_docs, config.pretrain_segments, eval_rng)
    pretrained_acc = float(topic_scores(base, pre_docs, pre_task, device=device).hits.mean())

    metrics: dict[str, dict[str, float]] = {}
    train_seconds: dict[str, float] = {}
    losses: dict[str, list[float]] = {}
    leak = float("nan")
    # every arm trains on the same documents in the same order (one "finetune" stream): drawn once
    finetune_batches = sample_batches(task, steps=config.finetune_steps, batch_size=config.finetune_batch,
                                      num_segments=config.extension_factor, rng=ctx.rng("finetune"))
    for arm in ARMS:
        ctx.stage(f"extension x{config.extension_factor}: arm {arm}")
        model = _make_arm(arm, base, config, seed=ctx.seed_for("hici_init"))
        extra = hici_parameters(model) if arm == "hici" else None
        with quiet_transformers():
            wrapped, optimizer = lora_extension(model, rank=config.lora_rank, alpha=2.0 * config.lora_rank,
                                                lr=config.lr, hici_lr=config.hici_lr, hici_params=extra)
        trainable = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
        log = train_steps(wrapped, optimizer, task, steps=config.finetune_steps, batch_size=config.finetune_batch,
                          num_segments=config.extension_factor, batches=finetune_batches,
                          answer_weight=config.answer_weight, device=device,
                          progress=lambda it, arm=arm: ctx.progress(it, desc=f"extend {arm}"))
        losses[arm] = log.answer_loss
        train_seconds[arm] = round(log.seconds, 2)
        row = {"trainable_params": float(trainable),
               "final_answer_loss": float(np.mean(log.answer_loss[-20:])),
               "final_lm_loss": float(np.mean(log.lm_loss[-20:]))}
        if arm == "hici":
            set_inference_mode(wrapped, "hici")
            leak = _leak(wrapped, task, config, ctx)
            row["hici_params"] = float(sum(p.numel() for p in extra))
        row.update(_score(arm, wrapped, config, eval_docs, task, device))
        metrics[arm] = row
    ctx.stage("position interpolation without fine-tuning")
    metrics["pi_only"] = _score("pi_only", _make_arm("pi_only", base, config, seed=0), config, eval_docs, task, device)
    for other in ("s2attn", "full_ft", "pi_only"):  # HiCI minus each, every arm in its own mode and all in full
        for name in lengths:
            for how in ("own", "full"):
                metrics["hici"][f"minus_{other}_acc_{name}_{how}"] = (metrics["hici"][f"acc_{name}_{how}"]
                                                                      - metrics[other][f"acc_{name}_{how}"])

    ctx.stage("attention-block benchmark")
    timings = time_attention_blocks(config.bench_sizes, hidden=config.bench_hidden, heads=4,
                                    segment_size=config.bench_segment,
                                    repeats=config.bench_repeats, device=device, seed=ctx.seed,
                                    progress=lambda it: ctx.progress(it, desc="benchmark"), interleave_sizes=True)
    slopes, ratio, round_slopes, round_ratio = _timing_reads(timings)
    # wall-clock figures differ between runs of one seed: provenance, curves and check notes, not metrics
    ctx.provenance["hici_train_seconds"] = train_seconds
    ctx.provenance["hici_attention_seconds"] = {"sizes": timings.sizes, **timings.seconds}
    ctx.provenance["hici_attention_slopes"] = slopes
    ctx.provenance["hici_attention_rounds"] = {"fit_from": slope_fit_from(timings.sizes), "slopes": round_slopes,
                                               "ratio_largest_n": round_ratio, "samples": timings.samples}
    per_layer_7b, overhead_7b = _overhead_7b()
    base_params = sum(p.numel() for p in base.parameters())
    overhead_tiny = analysis.parameter_overhead(int(metrics["hici"]["hici_params"]), base_params)
    metrics["hici"]["param_overhead_tiny"] = overhead_tiny
    metrics["pretrained"] = {"acc_128": pretrained_acc, "final_answer_loss": float(np.mean(pre_log.answer_loss[-20:])),
                             "params": float(base_params)}
    notes = [f"pretrained model: {pretrained_acc:.3f} accuracy on {config.pretrain_segments} x "
             f"{config.pretrain_segment_tokens}-token documents",
             f"chunked-without-slots ceiling at 512: {analysis.chunked_ceiling(config.extension_factor, config.num_topics):.4f}"
             f" (mark in the query's segment 1/S, else chance 1/T); at 1024: "
             f"{analysis.chunked_ceiling(config.eval_extrapolation, config.num_topics):.4f}",
             f"HiCI parameters: {per_layer_7b:,} per LLaMA-2-7B layer ({overhead_7b:.2%} of base + HiCI); "
             f"{overhead_tiny:.1%} of the tiny model (B = {config.bottleneck} at d = {config.d_model})"]
    notes.append(f"timing, median over {config.bench_repeats} interleaved rounds of the within-round read (slopes "
                 f"over N >= {slope_fit_from(timings.sizes)}): full {round_slopes['full']:.3f}, HiCI G = "
                 f"{config.bench_segment} {round_slopes['hici_fixed_g']:.3f}; HiCI / full at N = {max(timings.sizes)}: "
                 f"{round_ratio:.3f}")
    if config.stdlib_steps > 0:
        ctx.stage("stdlib perplexity at 512")
        ppl = stdlib_perplexity(config, ctx)
        for arm, by_mode in ppl.items():
            for mode, value in by_mode.items():
                metrics[arm][f"stdlib_ppl_{mode}"] = value
    hici_acc = metrics["hici"][f"acc_{short}_chunked"]
    checks = [
        CHECKS["chunked_no_slots_512"].measure(metrics["chunked"][f"acc_{short}_chunked"]),
        CHECKS["hici_accuracy_512"].measure(hici_acc),
        CHECKS["hici_minus_s2attn_512"].measure(hici_acc - metrics["s2attn"][f"acc_{short}_full"]),
        CHECKS["hici_minus_full_ft_512"].measure(hici_acc - metrics["full_ft"][f"acc_{short}_full"]),
        CHECKS["full_time_slope"].measure(slopes["full"], note=_seconds_note(timings, "full")),
        CHECKS["hici_time_slope"].measure(slopes["hici_fixed_g"], note=_seconds_note(timings, "hici_fixed_g")
                                          + f"; HiCI at ratio 1/4: slope {slopes['hici_ratio']:.2f}"),
        CHECKS["hici_full_time_ratio_8k"].measure(
            ratio, note=f"N = {timings.sizes[-1]}: HiCI {timings.seconds['hici_fixed_g'][-1]:.3f} s, "
                        f"full {timings.seconds['full'][-1]:.3f} s per forward+backward"),
        CHECKS["param_overhead_llama2_7b"].measure(overhead_7b, note=f"{per_layer_7b:,} per layer"),
        CHECKS["causal_shift_leak"].measure(leak),
    ]
    # measured only where claims.py declares them (the own-mode / full-mode comparisons and the PI-only row)
    optional = {
        "pi_only_acc_512_full": metrics["pi_only"][f"acc_{short}_full"],
        "hici_minus_s2attn_512_own": metrics["hici"][f"minus_s2attn_acc_{short}_own"],
        "hici_minus_s2attn_512_all_full": metrics["hici"][f"minus_s2attn_acc_{short}_full"],
        "hici_minus_full_ft_512_all_full": metrics["hici"][f"minus_full_ft_acc_{short}_full"],
        "full_time_slope_rounds": round_slopes["full"],
        "hici_time_slope_rounds": round_slopes["hici_fixed_g"],
        "hici_full_time_ratio_8k_rounds": round_ratio,
    }
    checks += [CHECKS[name].measure(value) for name, value in optional.items() if name in CHECKS]
    step = max(1, config.finetune_steps // 30)
    curves = {
        "answer_loss": Curve(x=list(range(0, config.finetune_steps, step)), xlabel="extension step",
                             ylabel="answer cross-entropy (nats)", title="extension x4: answer loss",
                             series={arm: [float(np.mean(v[i:i + step])) for i in range(0, len(v), step)]
                                     for arm, v in losses.items()}),
        "accuracy": Curve(x=[int(k) for k in lengths], xlabel="tokens", ylabel="topic accuracy",
                          title="topic retrieval (chance 1/8)",
                          series={f"{arm} ({mode})": [metrics[arm][f"acc_{n}_{mode}"] for n in lengths]
                                  for arm in (*ARMS, "pi_only") for mode in ("chunked", "full")}),
        "attention_time": Curve(x=timings.sizes, xlabel="N", ylabel="seconds (forward + backward)",
                                title=f"attention block, d = {config.bench_hidden}", logx=True, logy=True,
                                series=timings.seconds),
    }
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
