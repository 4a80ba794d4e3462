"""The real-model tiers of the full reproduction: all-MiniLM-L6-v2 and SmolLM2-135M-Instruct.

Each tier compares, on held-out AttrWorld texts, the model's InputLast embedding (its anchor
state: ``[SEP]`` for MiniLM, the appended ``<|im_end|>`` for SmolLM2) with InstEmb-MSE trained
on the tier's texts, the look-ahead vectors and the last blocks trainable. MiniLM also reports
its native embedding (mean pooling) of the instruction-prefixed text. The teacher is the
frozen pretrained model reading the gold output (SmolLM2 is instruction-tuned; MiniLM is not,
so its "teacher" only encodes the gold answer). Reported, not checked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from icml26.contract import Curve, RunContext
from icml26.papers.instemb.config import Config
from icml26.papers.instemb.data import AttrWorld
from icml26.papers.instemb.evaluation import AttrWorldEval
from icml26.papers.instemb.model import InstEmbModel
from icml26.papers.instemb.training import train_instemb

__all__ = ["TierOutcome", "run_tier"]


@dataclasses.dataclass
class TierOutcome:
    """Metrics, notes and the training-loss curve of one tier."""

    metrics: dict[str, dict[str, float]]
    notes: list[str]
    curve: dict[str, Any]


def _backbone(tier: str, ctx: RunContext) -> tuple[Any, Any, str]:
    if tier == "minilm":
        from icml26.common.encoder import get_encoder

        enc = get_encoder(str(ctx.device))
        return enc, enc.tokenizer, "all-MiniLM-L6-v2"
    from icml26.common.pretrained import load_pretrained_lm

    lm = load_pretrained_lm(ctx.device)
    ctx.provenance.update(lm.provenance)
    return lm.model, lm.tokenizer, lm.name


def run_tier(tier: str, config: Config, ctx: RunContext) -> TierOutcome:
    """InputLast against InstEmb-DAAP on one real backbone (``tier``: ``minilm`` or ``smollm2``)."""
    ctx.stage(f"tier {tier}")
    train = AttrWorld.sample(config.tier_train_texts, ctx.rng(f"{tier}_train"))
    evaluate = AttrWorldEval(AttrWorld.sample(config.tier_eval_texts, ctx.rng(f"{tier}_eval")),
                             config.sts_pairs, ctx.rng(f"{tier}_sts_pairs"), kmeans_seed=ctx.seed_for("kmeans"))
    backbone, tok, name = _backbone(tier, ctx)
    metrics = {}
    # SmolLM2-Instruct reads the instruction and text in its own chat template (both arms alike)
    prompt = {"prompt_template": "chat"} if tier == "smollm2" else {}
    base = InstEmbModel.wrap(backbone, 0, tokenizer=tok, with_teacher=False, distill_weight=0.0, pooling="eos",
                             **prompt)
    metrics[f"{tier}_input_last"] = evaluate(base, "eos").as_dict()
    if tier == "minilm":
        metrics["minilm_native_mean"] = evaluate(base, "mean").as_dict()
    del base
    trained = ({"lora": {"r": config.tier_lora_rank, "target_modules": "all-linear", "lora_dropout": 0.0}}
               if config.tier_lora_rank > 0 else {"train_last_blocks": config.tier_train_last_blocks})
    model = InstEmbModel.wrap(backbone, config.num_lookahead, tokenizer=tok, tau=config.tau,
                              distill_weight=config.distill_weight, daap_weight=config.daap_weight,
                              seed=ctx.seed_for(f"{tier}_lookahead"), **prompt, **trained)
    log = train_instemb(model, train.examples(), config.tier_steps, batch_size=config.tier_batch_size,
                        lr=config.tier_lr, generator=ctx.torch_generator(f"{tier}_batches"),
                        show_progress=ctx.show_progress)
    daap = evaluate(model, "daap")
    metrics[f"{tier}_instemb_mse_daap"] = daap.as_dict()
    metrics[f"{tier}_instemb_mse_last_token"] = evaluate(model, "eos").as_dict()
    ctx.provenance.setdefault("seconds", {})[f"{tier}_train"] = round(log.seconds, 1)
    inputlast = metrics[f"{tier}_input_last"]
    notes = [f"{name} tier: InstEmb-DAAP NMI {daap.nmi:.3f} vs InputLast {inputlast['nmi']:.3f}, Spearman "
             f"{daap.spearman:.3f} vs {inputlast['spearman']:.3f} ({config.tier_steps} steps, "
             + (f"LoRA rank {config.tier_lora_rank}" if config.tier_lora_rank > 0
                else f"last {config.tier_train_last_blocks} blocks trainable")
             + f"{', chat template' if prompt else ''}, {log.seconds:.0f} s)."]
    curve = Curve(x=list(range(1, len(log.total) + 1)), series={"total": log.total, "distill": log.distill},
                  xlabel="InstEmb step", ylabel="loss", title=f"InstEmb on {name}")
    return TierOutcome(metrics=metrics, notes=notes, curve=curve)
