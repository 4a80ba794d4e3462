"""Curvature reproduction: a tiny GPT-2 trained on the offline corpus, analysed at checkpoints.

One training run (seeded initialisation and data order) keeps its weights at a few
steps, step 0 included. Then:

1. straightening and emergence: per checkpoint and layer, the mean turning angle and the
   Spearman / Pearson / partial correlation of ``kappa_l(t; W)`` with ``H_t`` on held-out
   tokens (plus a grid over ``W`` at the final checkpoint);
   beside the validation loss of an interpolated bigram on the same tokens (a model that does
   not beat it clearly makes its correlations uninformative, issue #30);
2. perturbations at the layer of maximal correlation: aligned (a step toward the
   constant-velocity extrapolation) against misaligned (orthogonal to the local trajectory
   plane), both of norm ``epsilon |x_t|`` for a few small ``epsilon`` (issue #30); per prefix the
   initial slope ``d Delta H / d epsilon`` at 0, tested over the prefixes (paired t-tests);
4. a pretrained arm: SmolLM2-135M-Instruct (:func:`icml26.common.pretrained.load_pretrained_lm`)
   on random held-out windows of the same text in its own tokenizer: per-layer rho(kappa, H)
   with a 95% bootstrap interval over windows, and the curvature by layer (straightening);
3. regulariser: a second run from the same initialisation, on the same batches, for the
   same steps, with ``lambda * L_curv`` at the middle layers; the first run is its
   ``lambda = 0`` arm. Compared: mid-layer curvature, mean entropy, validation loss.

The paper's own scale (GPT-2 XL, Pythia-2.8B and its checkpoints, GPT-2-small trained on
miniBERTa) needs downloaded weights and data; the defaults here are the brief's CPU plan
(§4.3-4.4), ``quick()`` a smaller version that runs in a few minutes on 2 cores.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from icml26.common.corpus import stdlib_corpus
from icml26.common.tiny_lm import build_model, encode_corpus, evaluate_loss, pretrain
from icml26.common.tokenizer import train_tokenizer
from icml26.contract import Outcome, RunContext
from icml26.papers.curvature.analysis import (
    best_inner_layer,
    correlation_summary,
    fraction_removed,
    interpolated_bigram,
    relative_change,
    straightening_summary,
)
from icml26.papers.curvature.claims import CHECKS
from icml26.papers.curvature.config import Config
from icml26.papers.curvature.figures import plot
from icml26.papers.curvature.layerwise import (
    CurvatureEntropyAnalysis,
    layerwise_curvature_entropy,
    unigram_log_frequency,
)
from icml26.papers.curvature.sections import _series, perturbation_study, pretrained_arm
from icml26.papers.curvature.regularizer import CurvatureLoss

__all__ = ["CHECKS", "Config", "STREAMS", "plot", "run"]

STREAMS: dict[str, str] = {
    "prefixes": "which held-out prefixes are perturbed",
    "perturbation": "the misaligned control's random directions",
    "pretrained": "which windows the pretrained model reads",
    "bootstrap": "the window bootstrap of the pretrained correlations",
    "pretrained_prefixes": "the pretrained arm's perturbed prefixes",
    "pretrained_perturbation": "the pretrained arm's misaligned directions",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def _analyse(model, windows: torch.Tensor, log_freq: torch.Tensor, window: int,
             ctx: RunContext) -> CurvatureEntropyAnalysis:
    model.eval()
    return layerwise_curvature_entropy(model, windows, window, token_log_frequency=log_freq,
                                       batch_size=32, show_progress=ctx.show_progress)


def run(config: Config, ctx: RunContext) -> Outcome:
    model_cfg = config.model_config()
    train_cfg = config.train_config(ctx.seed)
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus, config.vocab_size)
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    ctx.provenance.update(corpus_sha256=corpus.sha256, tokenizer_vocab=len(tokenizer),
                          train_tokens=int(train_ids.numel()), valid_tokens=int(valid_ids.numel()))
    log_freq = unigram_log_frequency(train_ids, config.vocab_size)
    n_windows = min(config.eval_tokens // config.context, valid_ids.numel() // config.context)
    eval_windows = valid_ids[: n_windows * config.context].reshape(n_windows, config.context)
    layers = list(range(config.n_layers + 1))

    # --- one training run, keeping the weights at every checkpoint --------------------------
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def keep(step: int, model) -> None:
        if step in config.checkpoints:
            snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    model = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    base_log = pretrain(model, train_ids, valid_ids, train_cfg, context=config.context,
                        show_progress=ctx.show_progress, on_step=keep)
    base_seconds = time.perf_counter() - start

    # --- 1. straightening and emergence --------------------------------------------------------
    probe = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    analyses: dict[int, CurvatureEntropyAnalysis] = {}
    for step in ctx.progress(config.checkpoints, desc="checkpoints"):
        probe.load_state_dict(snapshots[step])
        analyses[step] = _analyse(probe, eval_windows, log_freq, config.window, ctx)
        if step == 0:
            init_loss = evaluate_loss(probe, valid_ids, context=config.context, max_batches=config.valid_batches)
    init, final = analyses[0], analyses[config.steps]
    model.eval()
    grid = {w: (final if w == config.window else _analyse(model, eval_windows, log_freq, w, ctx))
            for w in config.window_grid}

    # --- 2. aligned vs misaligned perturbations at the layer of maximal correlation -----------
    layer = config.perturb_layer if config.perturb_layer >= 0 else best_inner_layer(final.spearman)
    rng = ctx.rng("prefixes")
    starts = rng.integers(0, valid_ids.numel() - config.perturb_length, size=config.perturb_positions)
    prefixes = torch.stack([valid_ids[s : s + config.perturb_length] for s in starts.tolist()])
    study = perturbation_study(model, prefixes, layer, config.epsilons, ctx,
                               generator=ctx.torch_generator("perturbation"))
    eps, tests, slopes = study.epsilons, study.tests, study.slopes

    # --- tiny model vs an interpolated bigram on the same tokens --------------------------------
    bigram = interpolated_bigram(train_ids, valid_ids, config.vocab_size)

    # --- 3. the curvature regulariser: same seed, batches and steps, lambda > 0 ---------------
    reg_model = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    reg_log = pretrain(reg_model, train_ids, valid_ids, train_cfg, context=config.context,
                       show_progress=ctx.show_progress,
                       aux_loss=CurvatureLoss(layers=config.reg_layers, weight=config.reg_weight))
    reg_seconds = time.perf_counter() - start
    ctx.provenance.update(train_seconds_unregularized=round(base_seconds, 1),
                          train_seconds_regularized=round(reg_seconds, 1))
    reg_analysis = _analyse(reg_model, eval_windows, log_freq, config.window, ctx)
    arms_reg = {}
    for name, m, analysis in (("regularized", reg_model, reg_analysis), ("unregularized", model, final)):
        arms_reg[name] = {
            "mid_curvature": float(np.mean(analysis.mean_curvature[list(config.reg_layers)])),
            "mean_entropy": float(analysis.entropy.mean()),
            "valid_loss": evaluate_loss(m, valid_ids, context=config.context, max_batches=config.valid_batches),
            "best_spearman": float(np.nanmax(analysis.spearman)),
        }
    reg, unreg = arms_reg["regularized"], arms_reg["unregularized"]
    curvature_cut = fraction_removed(reg["mid_curvature"], unreg["mid_curvature"])
    loss_increase = relative_change(reg["valid_loss"], unreg["valid_loss"])

    # --- 4. the pretrained arm: SmolLM2 on held-out windows of the same text ----------------------
    pretrained, pre_study = pretrained_arm(config, corpus, ctx) if config.pretrained_tokens > 0 else (None, None)

    # --- metrics, checks, curves ------------------------------------------------------------------
    def summary(a: CurvatureEntropyAnalysis) -> dict[str, float]:
        return {**dataclasses.asdict(correlation_summary(a.spearman, a.pearson, a.partial_spearman)),
                **dataclasses.asdict(straightening_summary(a.mean_curvature))}

    trained = {**summary(final), "valid_loss": unreg["valid_loss"], "bigram_valid_loss": bigram.loss,
               "bigram_weight": bigram.weight, "margin_over_bigram": bigram.loss - unreg["valid_loss"]}
    at_init = {**summary(init), "valid_loss": init_loss}
    perturb_metrics = study.metrics()
    informative = trained["margin_over_bigram"] >= CHECKS["tiny_beats_bigram"].target

    checks = [
        CHECKS["init_correlation"].measure(at_init["max_abs_spearman"]),
        CHECKS["trained_correlation"].measure(
            trained["best_spearman"], note="" if informative else "uninformative: the tiny model does not beat "
            f"the interpolated bigram by 0.1 nats ({unreg['valid_loss']:.3f} vs {bigram.loss:.3f})"),
        CHECKS["trained_curvature_drop"].measure(trained["curvature_drop"]),
        CHECKS["init_curvature_drop"].measure(at_init["curvature_drop"]),
        CHECKS["tiny_beats_bigram"].measure(trained["margin_over_bigram"],
                                            note=f"validation loss {unreg['valid_loss']:.3f}, bigram {bigram.loss:.3f} "
                                                 f"(lambda={bigram.weight:.2f})"),
    ]
    if pretrained is None:
        checks += [CHECKS[c].not_measured("pretrained_tokens=0") for c in
                   ("pretrained_correlation", "pretrained_ci_halfwidth", "pretrained_curvature_drop",
                    "pretrained_aligned_slope", "pretrained_misaligned_slope_ratio")
                   if ctx.setting in CHECKS[c].settings]
    else:
        checks += [
            CHECKS["pretrained_correlation"].measure(
                pretrained["best_spearman"], note=f"layer {int(pretrained['best_layer'])} of 30, 95% CI "
                f"[{pretrained['best_ci_low']:.3f}, {pretrained['best_ci_high']:.3f}]"),
            CHECKS["pretrained_ci_halfwidth"].measure(
                pretrained["best_ci_halfwidth"], note=f"{int(pretrained['n_tokens'])} tokens in "
                f"{int(pretrained['n_windows'])} windows, {config.bootstrap} window-bootstrap resamples"),
            CHECKS["pretrained_curvature_drop"].measure(
                pretrained["curvature_drop"], note=f"layer 0 {pretrained['curvature_layer0']:.3f} rad, flattest layer "
                f"{int(pretrained['min_curvature_layer'])} {pretrained['curvature_min']:.3f} rad"),
        ]
        if pre_study is None:
            checks += [CHECKS[c].not_measured("pretrained_perturb_positions=0") for c in
                       ("pretrained_aligned_slope", "pretrained_misaligned_slope_ratio")]
        else:
            checks += [
                CHECKS["pretrained_aligned_slope"].measure(
                    pre_study.tests["aligned"].mean, note=f"{int(pre_study.tests['aligned'].n)} prefixes at layer "
                    f"{pre_study.layer}, one-sided p = {pre_study.tests['aligned'].p_less:.2g}"),
                CHECKS["pretrained_misaligned_slope_ratio"].measure(pre_study.misaligned_ratio),
            ]
    checks += [
        CHECKS["aligned_slope"].measure(tests["aligned"].mean, note=f"{int(tests['aligned'].n)} prefixes at layer {layer}"),
        CHECKS["aligned_slope_p_value"].measure(tests["aligned"].p_less),
        CHECKS["misaligned_slope_ratio"].measure(study.misaligned_ratio),
        CHECKS["regularizer_curvature_cut"].measure(curvature_cut),
        CHECKS["regularizer_loss_increase"].measure(loss_increase),
    ]

    step_names = {step: f"step {step}" for step in config.checkpoints}
    finite_slopes = np.concatenate([v[np.isfinite(v)] for v in slopes.values()])
    edges = np.linspace(*np.quantile(finite_slopes, [0.005, 0.995]), 41)
    curves: dict[str, Any] = {
        "curvature_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.mean_curvature) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "mean turning angle (rad)",
            "title": "Straightening: curvature by layer through training"},
        "spearman_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.spearman) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": f"Spearman rho(kappa(t; W={config.window}), H_t)",
            "title": "Emergence: curvature-entropy correlation by layer"},
        "partial_spearman_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.partial_spearman) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "partial rho | position, log frequency",
            "title": "Correlation controlling for position and token frequency"},
        "spearman_by_window": {
            "x": layers, "series": {f"W={w}": _series(a.spearman) for w, a in grid.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "Spearman rho(kappa, H) (final)",
            "title": "Window of the contextual curvature"},
        "initial_slope_hist": {
            "x": _series((edges[1:] + edges[:-1]) / 2),
            "series": {k: [float(c) for c in np.histogram(v[np.isfinite(v)], bins=edges)[0]] for k, v in slopes.items()},
            "xlabel": f"initial slope dDelta H/d epsilon at layer {layer} (nats per unit epsilon)", "ylabel": "prefixes",
            "title": "Aligned vs misaligned perturbations, |delta| = epsilon |x_t|"},
        "delta_entropy_vs_epsilon": {
            "x": eps, "series": {k: [float(np.nanmean(v[i])) for i in range(len(eps))] for k, v in study.delta.items()},
            "xlabel": "epsilon (|delta| / |x_t|)", "ylabel": f"mean Delta H (nats), {len(prefixes)} prefixes",
            "title": f"Perturbation size at layer {layer}"},
        "regularizer_curvature": {
            "x": layers, "series": {"lambda=0": _series(final.mean_curvature),
                                    f"lambda={config.reg_weight}": _series(reg_analysis.mean_curvature)},
            "xlabel": "layer (hidden_states index)", "ylabel": "mean turning angle (rad)",
            "title": f"Curvature regulariser at layers {list(config.reg_layers)}"},
        "valid_loss": {
            "x": base_log.eval_steps, "series": {"lambda=0": base_log.valid_loss,
                                                 f"lambda={config.reg_weight}": reg_log.valid_loss},
            "xlabel": "step", "ylabel": "validation loss (nats)", "title": "Training with the regulariser"},
    }
    notes = [
        f"Perturbations at hidden_states[{layer}] ({'chosen' if config.perturb_layer >= 0 else 'inner layer of maximal rho'}); "
        f"{len(prefixes)} held-out prefixes of {config.perturb_length} tokens; |delta| = epsilon |x_t| for epsilon in "
        f"{eps}; the aligned step overshoots the extrapolation at the largest epsilon for {study.overshoot:.1%} of prefixes.",
        "Tiny model, " + study.summary() + " (the slope is the linear term of a through-origin quadratic fit "
        "per prefix).",
        f"Tiny model: validation loss {unreg['valid_loss']:.3f} nats vs an interpolated bigram's {bigram.loss:.3f} "
        f"(lambda {bigram.weight:.2f} chosen on a held-out tail of the training ids): margin "
        f"{trained['margin_over_bigram']:+.3f} nats" + ("." if informative else
        "; it does not beat the bigram clearly, so its correlations are uninformative (issue #30)."),
        f"Correlations over {int(final.n_tokens[0])} held-out tokens; the paper reports r ~ 0.15 at GPT-2 XL scale.",
    ]
    if pre_study is not None:
        notes.append(f"SmolLM2-135M-Instruct, {pre_study.summary()}; {config.pretrained_perturb_length}-token prefixes "
                     "(the last token rerun against the prefix's key-value cache for every patch).")
        curves["pretrained_delta_entropy_vs_epsilon"] = {
            "x": pre_study.epsilons,
            "series": {k: [float(np.nanmean(v[i])) for i in range(len(pre_study.epsilons))]
                       for k, v in pre_study.delta.items()},
            "xlabel": "epsilon (|delta| / |x_t|)",
            "ylabel": f"mean Delta H (nats), {pre_study.delta['aligned'].shape[1]} prefixes",
            "title": f"SmolLM2-135M-Instruct: perturbation size at layer {pre_study.layer}"}
    if pretrained is not None:
        curves["pretrained_by_layer"] = pretrained.pop("curves")
        notes.append(
            f"SmolLM2-135M-Instruct on {int(pretrained['n_tokens'])} tokens ({int(pretrained['n_windows'])} random "
            f"windows of {config.pretrained_context} from the whole stdlib text; the bigram is fitted on the rest): best Spearman rho {pretrained['best_spearman']:+.3f} at layer "
            f"{int(pretrained['best_layer'])} (95% window-bootstrap CI [{pretrained['best_ci_low']:.3f}, "
            f"{pretrained['best_ci_high']:.3f}]); curvature {pretrained['curvature_layer0']:.3f} rad at layer 0, "
            f"{pretrained['curvature_min']:.3f} at layer {int(pretrained['min_curvature_layer'])}; its loss "
            f"{pretrained['valid_loss']:.3f} nats vs a bigram's {pretrained['bigram_valid_loss']:.3f} on its tokens.")
    return Outcome(
        metrics={"trained": trained, "init": at_init, **perturb_metrics, "regularized": reg, "unregularized": unreg,
                 **({"pretrained (SmolLM2)": pretrained} if pretrained is not None else {}),
                 **({f"pretrained {k}": v for k, v in pre_study.metrics().items()} if pre_study is not None else {})},
        checks=checks, curves=curves, notes=notes)
