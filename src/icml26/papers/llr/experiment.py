"""LLR reproduction: a tiny LLaMA on the offline corpus, uniform AdamW vs heavy-tail layerwise rates.

Every arm starts from the same initialisation and sees the same batches in the same
order (one seeded generator per run, reset for each arm). Arms, at each base learning
rate of a small grid:

* ``uniform``: AdamW, warm-up then cosine decay, one rate for every layer;
* ``LLR``: the same plus :class:`~icml26.papers.llr.layerwise.LayerwiseLR` (``r`` in ``[1, 3]``);
* ``uniform-matched``: uniform AdamW at ``m`` times the base rate, ``m`` = LLR's final
  parameter-weighted mean multiplier at that base rate (the control for "more rate");
* ``kind-static``: every layer fixed from the start at the mean LLR multiplier of its matrix
  kind (LLR's final multipliers averaged over the blocks; embeddings/head at LLR's ``r_max``);
  no spectral fit (the control for "the map only sorts matrix kinds");
* ``shuffled``: LLR's multipliers permuted within matrix kinds at every fit (rate-preserving:
  each kind keeps its multipliers: the control for "the fitted map's layer order matters");
* ``embed-head`` (fit-free): uniform AdamW except the tied embedding/head at ``r_max``;
* ``kind-static-step0`` (fit-free): LLR's step-0 assignment (the fit of the initial weights)
  averaged per matrix kind and held, never refit;
* ``LLR-mean``: LLR with the multipliers divided by their mean (ours, not the paper's; full only).

``uniform-matched`` and ``kind-static`` are read from the ``LLR`` run at the same base rate, so
``LLR`` runs first. The held-out text is split in two: the evaluation windows (every reported
loss) and the tuning windows that follow them, on which the shared tuner picks each declared
arm's base rate from the grid (the final loss of its run at each rate). Reported: final
validation loss, steps-to-target (the first evaluation at which a run's validation loss reaches
the uniform run's final loss at the same base rate; speedup = steps / that step, 0 when never
reached), the best-of-grid comparison, each arm at its tuned rate, the alpha and multiplier
trajectories per layer, and the wall time (LLR's overhead).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace
import time
from typing import Any

import numpy as np
import torch

from icml26.common.schedule import warmup_cosine
from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.llr.analysis import (
    best_rate,
    gap_to_best,
    kind_means,
    mean_final_alpha,
    min_gap,
    parameter_weighted_mean,
    speedup,
    steps_to_target,
)
from icml26.papers.llr.claims import ARMS, CHECKS
from icml26.papers.llr.config import ARM_KINDS, Config
from icml26.papers.llr.figures import plot

__all__ = ["ARM_IDS", "ARM_KINDS", "CHECKS", "Config", "STREAMS", "plot", "run"]

ARM_IDS: dict[str, str] = {"LLR": "llr", "uniform": "uniform", "uniform-matched": "uniform_matched",
                           "kind-static": "kind_static", "shuffled": "shuffled", "embed-head": "embed_head",
                           "kind-static-step0": "kind_static_step0"}
"""The declared arm (``claims.ARMS``) of each arm kind; ``LLR-mean`` (full setting only) has none and
is not tuned."""
FIT_FREE = ("embed-head", "kind-static-step0")
"""The arms that need no fit of a trained weight (the ``fit_free_gap`` check)."""

STREAMS: dict[str, str] = {
    "batches": "the training data order, the same for every arm",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def _lr_factor(step: int, cfg: Config) -> float:
    """Base schedule: linear warm-up, then cosine decay to ``min_lr_ratio``."""
    return warmup_cosine(step, cfg.steps, warmup=max(1, round(cfg.warmup_fraction * cfg.steps)),
                         floor=cfg.min_lr_ratio)


@dataclasses.dataclass
class ArmRun:
    """One training run: validation curve, wall time and (for LLR arms) the alpha/multiplier history."""

    eval_steps: list[int]
    valid: list[float]
    seconds: float
    history: dict | None
    tune_loss: float = math.nan
    """The final model's loss on the tuning windows (what the shared tuner selects the base rate on)."""
    multipliers: dict[str, float] = dataclasses.field(default_factory=dict)
    """Each layer's multiplier at the end of the run (empty for ``uniform``)."""
    mean_multiplier: float = 1.0
    """The parameter-weighted mean multiplier at the end of the run (norms included)."""

    @property
    def final(self) -> float:
        return self.valid[-1]


def _train(kind: str, base_lr: float, cfg: Config, data: dict, ctx: RunContext,
           reference: ArmRun | None = None) -> ArmRun:
    """One run from the shared initialisation and data order (``reference``: the LLR run at this
    rate, which sets the ``uniform-matched`` rate and the ``kind-static`` multipliers)."""
    from icml26.common.tiny_lm import build_model, evaluate_loss, random_windows
    from icml26.papers.llr.baselines import (
        StaticLayerwiseLR,
        embed_head_layerwise_lr,
        kind_static_step0_lr,
        layer_kinds,
        shuffled_layerwise_lr,
        uniform_layerwise_lr,
    )
    from icml26.papers.llr.layerwise import LayerwiseLR, layerwise_param_groups

    model = build_model(data["model_config"], seed=ctx.seed).to(ctx.device)
    optimizer = torch.optim.AdamW(layerwise_param_groups(model, weight_decay=cfg.weight_decay), lr=base_lr,
                                  betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, cfg))
    llr_kwargs = dict(total_steps=cfg.steps, r_min=cfg.r_min, r_max=cfg.r_max, every=cfg.every,
                      ramp_steps=cfg.ramp_steps, active_fraction=cfg.active_fraction, min_eigs=cfg.min_eigs)
    llr = None
    if kind == "LLR":
        llr = LayerwiseLR(model, optimizer, **llr_kwargs)
    elif kind == "LLR-mean":
        llr = LayerwiseLR(model, optimizer, normalize="mean", **llr_kwargs)
    elif kind == "shuffled":
        llr = shuffled_layerwise_lr(model, optimizer, seed=cfg.shuffle_seed, within_kind=True, **llr_kwargs)
    elif kind == "embed-head":
        llr = embed_head_layerwise_lr(model, optimizer, total_steps=cfg.steps, multiplier=cfg.r_max,
                                      ramp_steps=cfg.ramp_steps)
    elif kind == "kind-static-step0":
        llr = kind_static_step0_lr(model, optimizer, total_steps=cfg.steps, r_min=cfg.r_min, r_max=cfg.r_max,
                                   ramp_steps=cfg.ramp_steps, min_eigs=cfg.min_eigs)
    elif kind in ("uniform-matched", "kind-static"):
        if reference is None:
            raise ValueError(f"arm {kind!r} needs the LLR run at the same base rate (run 'LLR' first)")
        if kind == "uniform-matched":
            llr = uniform_layerwise_lr(model, optimizer, total_steps=cfg.steps, multiplier=reference.mean_multiplier,
                                       ramp_steps=cfg.ramp_steps)
        else:
            static = kind_means(reference.multipliers, layer_kinds(model))
            llr = StaticLayerwiseLR(model, optimizer, total_steps=cfg.steps, multipliers=static,
                                    ramp_steps=cfg.ramp_steps)
    elif kind != "uniform":
        raise ValueError(f"unknown arm {kind!r}; expected one of {ARM_KINDS}")

    generator = ctx.torch_generator("batches")  # the same data order for every arm
    # the step-0 loss is that of the shared initialisation: evaluated once per run (see ``_initial_loss``)
    eval_steps, valid = [0], [data["initial_valid"]]
    start = time.perf_counter()
    model.train()
    for step in ctx.progress(range(cfg.steps), desc=f"{kind} lr={base_lr:g}"):
        batch = random_windows(data["train"], cfg.batch_size, cfg.context + 1, generator).to(ctx.device)
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        scheduler.step()
        if llr is not None:
            llr.step()
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            eval_steps.append(step + 1)
            valid.append(evaluate_loss(model, data["valid"], context=cfg.context, max_batches=cfg.eval_batches))
    seconds = time.perf_counter() - start
    tune_loss = evaluate_loss(model, data["tune"], context=cfg.context, max_batches=cfg.eval_batches)
    sizes = [sum(p.numel() for p in g["params"]) for g in optimizer.param_groups]
    groups = llr.group_multipliers() if llr is not None else [1.0] * len(sizes)
    return ArmRun(eval_steps, valid, seconds, llr.history.to_dict() if llr is not None else None,
                  tune_loss=tune_loss, multipliers=llr.multipliers if llr is not None else {},
                  mean_multiplier=parameter_weighted_mean(groups, sizes))


def held_out_split(valid: torch.Tensor, *, context: int, eval_batches: int,
                   batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out token stream split into evaluation and tuning windows: ``(evaluation, tuning)``.

    ``evaluate_loss(model, valid, context=context, max_batches=eval_batches)`` reads the first
    ``n = eval_batches * batch_size`` windows of ``context + 1`` tokens, i.e. tokens
    ``[0, n * context]``; ``evaluation`` is exactly that stretch (the same loss, bit for bit) and
    ``tuning`` is everything after it, so no token of a tuning window is scored in a reported loss.
    Raises ``ValueError`` when the tuning part holds fewer than ``n`` windows.
    """
    n = eval_batches * batch_size
    used = n * context + 1
    evaluation, tuning = valid[:used], valid[used:]
    if evaluation.numel() < used or (tuning.numel() - 1) // context < n:
        raise ValueError(f"the held-out stream has {valid.numel()} tokens; evaluation and tuning windows need "
                         f"{2 * used} ({n} windows of {context + 1} each); lower eval_batches or context")
    return evaluation, tuning


def tune_rates(config: Config, runs: dict[tuple[str, float], ArmRun], ctx: RunContext) -> dict[str, float]:
    """Each declared arm's base rate, picked by the shared tuner on the tuning windows: ``{kind: rate}``.

    Every arm goes through :meth:`RunContext.tune` with the same grid (``config.base_lrs``, every
    point) and the same objective (its run's final loss on the tuning windows, lower is better);
    the evaluation windows are never read. Arms without a declaration (``LLR-mean``) are skipped.
    """
    rates: dict[str, float] = {}
    for kind in config.arms:
        if kind not in ARM_IDS:
            continue
        declared = ARMS[ARM_IDS[kind]]
        arm = replace(declared, space={**declared.space, "base_lr": tuple(config.base_lrs)},
                      trials=len(config.base_lrs))
        chosen = ctx.tune(arm, lambda p, k=kind: runs[(k, p["base_lr"])].tune_loss, maximize=False)
        rates[kind] = float(chosen["base_lr"])
    return rates


def _initial_loss(cfg: Config, data: dict, ctx: RunContext) -> float:
    """The validation loss of the initialisation every arm starts from (its step-0 point).

    Every run builds its model with ``build_model(data["model_config"], seed=ctx.seed)`` and
    evaluates it before the first step; neither the optimizer, the scheduler nor LLR's first
    fit changes a weight, so that loss is one number, the same for every arm and base rate.
    Evaluated once here instead of once per run (the same computation: bit-identical)."""
    from icml26.common.tiny_lm import build_model, evaluate_loss

    model = build_model(data["model_config"], seed=ctx.seed).to(ctx.device)
    return evaluate_loss(model, data["valid"], context=cfg.context, max_batches=cfg.eval_batches)


def _label(kind: str, lr: float) -> str:
    return f"{kind} lr={lr:g}"


def _metrics(config: Config, runs: dict[tuple[str, float], ArmRun]) -> dict[str, dict[str, float]]:
    """Per arm and rate: final loss, gain over uniform, steps to uniform's final loss; best of grid."""
    metrics: dict[str, dict[str, float]] = {}
    smallest = config.base_lrs[0]
    order = [("LLR", smallest), ("uniform", smallest)] + [
        (k, lr) for lr in config.base_lrs for k in config.arms if (k, lr) not in (("LLR", smallest), ("uniform", smallest))]
    for kind, lr in order:
        r, uniform = runs[(kind, lr)], runs[("uniform", lr)]
        reached = steps_to_target(r.valid, r.eval_steps, uniform.final)
        metrics[_label(kind, lr)] = {
            "final_val_loss": r.final,
            "gain_vs_uniform": uniform.final - r.final,
            "steps_to_uniform_final": float(reached or 0),
            "speedup_vs_uniform": speedup(config.steps, reached),
            "mean_multiplier": r.mean_multiplier,
        }
    best = {k: best_rate({lr: runs[(k, lr)].final for lr in config.base_lrs}) for k in ("LLR", "uniform")}
    best_uniform, best_llr = runs[("uniform", best["uniform"])], runs[("LLR", best["LLR"])]
    reached = steps_to_target(best_llr.valid, best_llr.eval_steps, best_uniform.final)
    metrics["best of grid"] = {
        "llr_final_val_loss": best_llr.final,
        "uniform_final_val_loss": best_uniform.final,
        "llr_best_lr": best["LLR"],
        "uniform_best_lr": best["uniform"],
        "gain_vs_uniform": best_uniform.final - best_llr.final,
        "speedup_vs_uniform": speedup(config.steps, reached),
    }
    if "uniform-matched" in config.arms:
        # uniform AdamW tuned over every rate it was run at (the grid and the matched rates)
        uniform_any = {lr * runs[("uniform-matched", lr)].mean_multiplier: runs[("uniform-matched", lr)].final
                       for lr in config.base_lrs}
        uniform_any.update({lr: runs[("uniform", lr)].final for lr in config.base_lrs})
        best_any = best_rate(uniform_any)
        metrics["best of grid"].update(uniform_any_best_lr=best_any, uniform_any_final_val_loss=uniform_any[best_any],
                                       gain_vs_uniform_any=uniform_any[best_any] - best_llr.final)
    return metrics


def _tuned_metrics(tuned: dict[str, float], runs: dict[tuple[str, float], ArmRun]) -> dict[str, dict[str, float]]:
    """One row per tuned arm (``"<arm> tuned"``): its tuned base rate, its final loss there (evaluation
    windows) and its loss on the tuning windows (what the rate was selected on)."""
    return {f"{kind} tuned": {"final_val_loss": runs[(kind, lr)].final, "tuned_lr": lr,
                              "tune_loss": runs[(kind, lr)].tune_loss} for kind, lr in tuned.items()}


def step0_kind_multipliers(history: dict) -> dict[str, float]:
    """The multiplier each matrix kind gets at the first fit, by the layer name's last part
    (``q_proj``, …, ``embed_tokens``): what :func:`kind_static_step0_lr` holds, as a table."""
    by_kind: dict[str, list[float]] = {}
    for name, targets in history["target"].items():
        by_kind.setdefault(name.rsplit(".", 1)[-1], []).append(targets[0])
    return {kind: float(np.mean(values)) for kind, values in by_kind.items()}


def _fit_free_note(config: Config, tuned: dict[str, float], at_tuned: dict[str, float],
                   runs: dict[tuple[str, float], ArmRun]) -> str:
    """The fit-free recipe in numbers: the better fit-free arm at its tuned rate against LLR at its own."""
    best = min(FIT_FREE, key=lambda kind: at_tuned[kind])
    table = step0_kind_multipliers(runs[("kind-static-step0", tuned["kind-static-step0"])].history)
    recipe = {"embed-head": f"uniform AdamW with the embedding/head at {config.r_max:g}x",
              "kind-static-step0": "fixed per-kind multipliers from the step-0 fit (listed below)"}[best]
    return (f"Fit-free recipe: {recipe}, base rate {tuned[best]:g}: {at_tuned[best]:.3f} against LLR's "
            f"{at_tuned['LLR']:.3f} at {tuned['LLR']:g} (LLR minus it {at_tuned[best] - at_tuned['LLR']:+.3f} nats) "
            f"and uniform's {at_tuned['uniform']:.3f} at {tuned['uniform']:g}. Step-0 kind multipliers: "
            + ", ".join(f"{k} x{v:.2f}" for k, v in table.items()) + ".")


def _curves(config: Config, runs: dict[tuple[str, float], ArmRun]) -> dict[str, Any]:
    smallest = config.base_lrs[0]
    curves: dict[str, Any] = {
        "final_loss_vs_lr": Curve(
            x=list(config.base_lrs),
            series={k: [runs[(k, lr)].final for lr in config.base_lrs] for k in config.arms},
            xlabel="base learning rate", ylabel="final validation loss (nats)",
            title="llr: final validation loss over the base-rate grid", logx=True,
        )
    }
    for lr in config.base_lrs:
        curves[f"valid_lr{lr:g}"] = Curve(
            x=runs[("uniform", lr)].eval_steps,
            series={k: runs[(k, lr)].valid for k in config.arms},
            xlabel="step", ylabel="validation loss (nats)", title=f"llr: validation loss, base rate {lr:g}",
        )
    history = runs[("LLR", smallest)].history
    curves["alpha_per_layer"] = Curve(
        x=history["steps"], series={n: v for n, v in history["alpha"].items() if not all(map(math.isnan, v))},
        xlabel="step", ylabel="ESD power-law alpha", title=f"llr: alpha per layer (LLR, lr={smallest:g})",
    )
    curves["multiplier_per_layer"] = Curve(
        x=history["steps"], series=history["target"],
        xlabel="step", ylabel="learning-rate multiplier (target)",
        title=f"llr: multiplier per layer (LLR, lr={smallest:g})",
    )
    return curves


def run(config: Config, ctx: RunContext) -> Outcome:
    from icml26.common.corpus import stdlib_corpus
    from icml26.common.tiny_lm import TinyLMConfig, encode_corpus
    from icml26.common.tokenizer import train_tokenizer

    ctx.stage("corpus and tokenizer")
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus, config.vocab_size)
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    model_config = TinyLMConfig(arch="llama", vocab_size=config.vocab_size, d_model=config.d_model,
                                n_layers=config.n_layers, n_heads=config.n_heads, context=config.context)
    evaluation_ids, tuning_ids = held_out_split(valid_ids, context=config.context, eval_batches=config.eval_batches)
    data = {"train": train_ids, "valid": evaluation_ids, "tune": tuning_ids, "model_config": model_config}
    data["initial_valid"] = _initial_loss(config, data, ctx)
    ctx.provenance["corpus_sha256"] = corpus.sha256
    ctx.provenance["train_tokens"] = int(train_ids.numel())

    runs: dict[tuple[str, float], ArmRun] = {}
    order = ["LLR"] + [k for k in config.arms if k != "LLR"]  # the controls read LLR's run
    for lr in config.base_lrs:
        for kind in order:
            ctx.stage(f"training {kind} at base rate {lr:g}")
            runs[(kind, lr)] = _train(kind, lr, config, data, ctx, reference=runs.get(("LLR", lr)))
    ctx.stage("tuning the base rates, checks")

    metrics = _metrics(config, runs)
    smallest = config.base_lrs[0]
    finals = {kind: {lr: runs[(kind, lr)].final for lr in config.base_lrs} for kind in config.arms}

    # -- checks: LLR against each control, min over the grid ----------------
    small_gap, _ = min_gap({smallest: finals["uniform"][smallest]}, finals["LLR"])
    checks = []
    for arm, check_id in (("shuffled", "shuffled_gap"), ("uniform-matched", "rate_matched_gap"),
                          ("kind-static", "kind_static_gap")):
        if arm not in config.arms:
            checks.append(CHECKS[check_id].not_measured(f"arm {arm!r} not run"))
            continue
        gap, gaps = min_gap(finals[arm], finals["LLR"])
        extra = ""
        if arm == "uniform-matched":
            extra = "; matched multipliers: " + ", ".join(
                f"{lr:g}: x{runs[('LLR', lr)].mean_multiplier:.3f}" for lr in config.base_lrs)
        checks.append(CHECKS[check_id].measure(
            gap, note="gaps by rate: " + ", ".join(f"{lr:g}: {g:+.3f}" for lr, g in gaps.items()) + extra))
    checks.append(CHECKS["uniform_gap_smallest_rate"].measure(small_gap, note=f"smallest base rate {smallest:g}"))

    # -- checks: LLR against the fit-free arms, every arm at its base rate tuned on the tuning windows ----
    tuned = tune_rates(config, runs, ctx)
    at_tuned = {kind: runs[(kind, lr)].final for kind, lr in tuned.items()}
    metrics.update(_tuned_metrics(tuned, runs))
    for kind, check_id in (("embed-head", "embed_head_gap"), ("kind-static-step0", "kind_static_step0_gap")):
        if kind not in tuned:
            checks.append(CHECKS[check_id].not_measured(f"arm {kind!r} not run"))
            continue
        checks.append(CHECKS[check_id].measure(
            at_tuned[kind] - at_tuned["LLR"],
            note=f"LLR {at_tuned['LLR']:.3f} at {tuned['LLR']:g}, {kind} {at_tuned[kind]:.3f} at {tuned[kind]:g}"))
    if all(kind in tuned for kind in FIT_FREE):
        gap, best_free = gap_to_best(at_tuned["LLR"], {kind: at_tuned[kind] for kind in FIT_FREE})
        checks.append(CHECKS["fit_free_gap"].measure(
            gap, note=f"the better fit-free arm: {best_free} ({at_tuned[best_free]:.3f} at {tuned[best_free]:g})"))
    else:
        checks.append(CHECKS["fit_free_gap"].not_measured("the fit-free arms were not both run"))

    curves = _curves(config, runs)

    # -- notes (wall times live here and in provenance: metrics must repeat exactly per seed) -
    ctx.provenance["train_seconds"] = {_label(k, lr): round(r.seconds, 2) for (k, lr), r in runs.items()}
    llr_wall = np.mean([runs[("LLR", lr)].seconds for lr in config.base_lrs])
    uni_wall = np.mean([runs[("uniform", lr)].seconds for lr in config.base_lrs])
    best = metrics["best of grid"]
    notes = [
        f"Wall time per run: LLR {llr_wall:.1f} s vs uniform {uni_wall:.1f} s (ratio {llr_wall / uni_wall:.2f}: "
        f"the cost of the ESD fits).",
        "Gain vs uniform by base rate (nats, positive = LLR better): " + ", ".join(
            f"{lr:g}: {metrics[_label('LLR', lr)]['gain_vs_uniform']:+.3f}" for lr in config.base_lrs) + ".",
        f"Best of grid: LLR {best['llr_final_val_loss']:.3f} (lr={best['llr_best_lr']:g}) vs uniform "
        f"{best['uniform_final_val_loss']:.3f} (lr={best['uniform_best_lr']:g}); the paper's speedup is 1.5x, here "
        f"{best['speedup_vs_uniform']:.2f}x (0 = never reached uniform's final loss).",
    ]
    for arm in ("uniform-matched", "kind-static", "shuffled", *FIT_FREE):
        if arm in config.arms:
            notes.append(f"LLR minus {arm} by base rate (nats, positive = LLR better): " + ", ".join(
                f"{lr:g}: {finals[arm][lr] - finals['LLR'][lr]:+.3f}" for lr in config.base_lrs) + ".")
    if "gain_vs_uniform_any" in best:
        notes.append(f"Best LLR ({best['llr_final_val_loss']:.3f}) vs uniform AdamW tuned over the grid and the "
                     f"matched rates ({best['uniform_any_final_val_loss']:.3f} at lr={best['uniform_any_best_lr']:.4g}): "
                     f"{best['gain_vs_uniform_any']:+.3f} nats.")
    notes.append("Base rate tuned on the tuning windows, and the final loss there on the evaluation windows: " + ", ".join(
        f"{kind} {tuned[kind]:g} ({at_tuned[kind]:.3f})" for kind in tuned) + ".")
    if all(kind in tuned for kind in FIT_FREE):
        notes.append(_fit_free_note(config, tuned, at_tuned, runs))
    losing = [lr for lr in config.base_lrs if metrics[_label("LLR", lr)]["gain_vs_uniform"] < 0]
    if losing:
        notes.append("LLR is worse than uniform at base rate(s) " + ", ".join(f"{lr:g}" for lr in losing)
                     + ": multiplying an already aggressive rate by up to r_max overshoots.")

    history = runs[("LLR", smallest)].history
    attention, mlp = ("q_proj", "k_proj", "v_proj", "o_proj"), ("gate_proj", "up_proj", "down_proj")
    notes.append(
        f"Mean alpha (LLR, lr={smallest:g}): attention {mean_final_alpha(history['alpha'], attention, 0):.2f} -> "
        f"{mean_final_alpha(history['alpha'], attention, -1):.2f}, MLP {mean_final_alpha(history['alpha'], mlp, 0):.2f} "
        f"-> {mean_final_alpha(history['alpha'], mlp, -1):.2f} from the first to the last fit (step "
        f"{history['steps'][-1]}). At initialisation alpha is set by each matrix's aspect ratio (square attention "
        f"matrices vs rectangular MLP ones), so the multipliers largely sort matrix kinds.")
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
