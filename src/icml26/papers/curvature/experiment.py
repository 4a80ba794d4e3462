"""Curvature reproduction: a tiny GPT-2 trained on the offline corpus, analysed at checkpoints.

One training run (seeded initialisation and data order) keeps its weights at a few
steps, step 0 included. Then:

1. straightening and emergence: per checkpoint and layer, the mean turning angle and the
   Spearman / Pearson / partial correlation of ``kappa_l(t; W)`` with ``H_t`` on held-out
   tokens (plus a grid over ``W`` at the final checkpoint);
   beside the validation loss of an interpolated bigram on the same tokens (a model that does
   not beat it clearly makes its correlations uninformative);
2. perturbations at the layer of maximal correlation: aligned (a step toward the
   constant-velocity extrapolation) against misaligned (orthogonal to the local trajectory
   plane), both of norm ``epsilon |x_t|`` for a few small ``epsilon`` (scaled to the state, so comparable
   across layers and prefixes); per prefix the
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
from typing import Any

import numpy as np

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.curvature.analysis import correlation_summary, interpolated_bigram, straightening_summary
from icml26.papers.curvature.claims import CHECKS, TINY_MODEL_CHECKS
from icml26.papers.curvature.config import Config
from icml26.papers.curvature.figures import plot
from icml26.papers.curvature.layerwise import CurvatureEntropyAnalysis
from icml26.papers.curvature.manifold_study import OnManifoldStudy, onmanifold_study
from icml26.papers.curvature.sections import (
    PerturbationStudy,
    Regularized,
    Straightening,
    TinyPerturbations,
    _series,
    prepare_data,
    pretrained_arm,
    regularizer,
    straightening,
    tiny_perturbations,
    train_base,
)

__all__ = ["CHECKS", "Config", "STREAMS", "plot", "run"]

STREAMS: dict[str, str] = {
    "prefixes": "which held-out prefixes are perturbed",
    "perturbation": "the misaligned control's random directions",
    "pretrained": "which windows the pretrained model reads",
    "bootstrap": "the window bootstrap of the pretrained correlations",
    "pretrained_prefixes": "the pretrained arm's perturbed prefixes",
    "pretrained_perturbation": "the pretrained arm's misaligned directions",
    "onmanifold_prefixes": "the on-manifold study's prefixes",
    "onmanifold_directions": "the on-manifold study's random, misaligned and principal-subspace directions",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def run(config: Config, ctx: RunContext) -> Outcome:
    if config.onmanifold_only:
        return _onmanifold_only(config, ctx)
    if not config.tiny_model:
        return _pretrained_only(config, ctx)
    ctx.stage("corpus and tokenizer")
    data = prepare_data(config, ctx)
    # one training run, keeping the weights at every checkpoint
    ctx.stage("training the tiny model")
    base = train_base(config, ctx, data)
    # 1. straightening and emergence
    ctx.stage("tiny model: straightening and emergence")
    straight = straightening(config, ctx, data, base)
    # 2. aligned vs misaligned perturbations at the layer of maximal correlation
    ctx.stage("tiny model: perturbations")
    pert = tiny_perturbations(config, ctx, data, base.model, straight.final)
    # the tiny model vs an interpolated bigram on the same tokens
    bigram = interpolated_bigram(data.train_ids, data.valid_ids, config.vocab_size)
    # 3. the curvature regulariser: same seed, batches and steps, lambda > 0
    ctx.stage("tiny model: the curvature regulariser")
    reg = regularizer(config, ctx, data, base, straight.final)
    # 4. the pretrained arm: SmolLM2 on held-out windows of the same text
    pretrained, pre_study = pretrained_arm(config, data.corpus, ctx) if config.pretrained_tokens > 0 else (None, None)
    pretrained_curve = pretrained.pop("curves") if pretrained is not None else None
    manifold = None
    if pre_study is not None and config.onmanifold_prefixes > 0:
        layer = config.onmanifold_layer if config.onmanifold_layer >= 0 else pre_study.layer
        manifold = onmanifold_study(config, data.corpus, ctx, layer)

    metrics = _metrics(straight, pert, bigram, reg, pretrained, pre_study)
    curves = {**_curves(config, data.layers, base, straight, pert, reg),
              **_pretrained_curves(pretrained_curve, pre_study)}
    checks = _checks(config, ctx, metrics, pert, bigram, reg, pretrained, pre_study)
    notes = _notes(config, metrics, straight, pert, bigram) + _pretrained_notes(config, pretrained, pre_study)
    return _with_manifold(Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes), manifold, ctx)


def _with_manifold(outcome: Outcome, manifold: OnManifoldStudy | None, ctx: RunContext) -> Outcome:
    """``outcome`` with the on-manifold study's metrics, curve, note and checks added."""
    if manifold is not None:
        outcome.metrics.update(manifold.metrics())
        outcome.curves["onmanifold_slopes"] = manifold.curve()
        outcome.notes.append("SmolLM2-135M-Instruct, " + manifold.summary() + ".")
    outcome.checks.extend(c for c in _manifold_checks(manifold, "pretrained_perturb_positions=0 or "
                                                      "onmanifold_prefixes=0")
                          if manifold is not None or ctx.setting in CHECKS[c.id].settings)
    return outcome


def _pretrained_only(config: Config, ctx: RunContext) -> Outcome:
    """The pretrained arm and its on-manifold study without the tiny model (``tiny_model=False``): the
    named streams make its numbers those of the same seed's run with the tiny model."""
    from icml26.common.corpus import stdlib_corpus

    corpus = stdlib_corpus()
    pretrained, pre_study = pretrained_arm(config, corpus, ctx)
    curve = pretrained.pop("curves")
    manifold = None
    if pre_study is not None and config.onmanifold_prefixes > 0:
        manifold = onmanifold_study(config, corpus, ctx, config.onmanifold_layer if config.onmanifold_layer >= 0
                                    else pre_study.layer)
    metrics = {"pretrained (SmolLM2)": pretrained,
               **({f"pretrained {k}": v for k, v in pre_study.metrics().items()} if pre_study is not None else {})}
    why = "tiny_model=false: the tiny model's sections were not run"
    checks = [CHECKS[c].not_measured(why) for c in TINY_MODEL_CHECKS if ctx.setting in CHECKS[c].settings]
    checks += _pretrained_checks(config, ctx, pretrained, pre_study)
    outcome = Outcome(metrics=metrics, checks=checks, curves=_pretrained_curves(curve, pre_study),
                      notes=_pretrained_notes(config, pretrained, pre_study))
    return _with_manifold(outcome, manifold, ctx)


def _manifold_checks(manifold: OnManifoldStudy | None, why_not: str) -> list:
    """The on-manifold checks, each a mean over prefixes with the prefixes as its units."""
    ids = ("pretrained_entropy_per_angle", "pretrained_rotation_slope", "pretrained_pc_straightest_minus_curviest")
    if manifold is None:
        return [CHECKS[c].not_measured(why_not) for c in ids]
    values = {"pretrained_entropy_per_angle": manifold.per_angle,
              "pretrained_rotation_slope": manifold.slopes("rotation"),
              "pretrained_pc_straightest_minus_curviest": manifold.pc_difference}
    out = []
    for c, v in values.items():
        finite = v[np.isfinite(v)]
        out.append(CHECKS[c].measure(float(np.mean(finite)) if finite.size else float("nan"),
                                     units=[float(u) for u in v],
                                     note=f"{finite.size} prefixes at layer {manifold.layer}"))
    return out


def _onmanifold_only(config: Config, ctx: RunContext) -> Outcome:
    """The on-manifold study alone, at ``config.onmanifold_layer`` (a further run; the other checks are not
    measured)."""
    from icml26.common.corpus import stdlib_corpus

    manifold = onmanifold_study(config, stdlib_corpus(), ctx, config.onmanifold_layer)
    return Outcome(metrics=manifold.metrics(), checks=_manifold_checks(manifold, ""),
                   curves={"onmanifold_slopes": manifold.curve()},
                   notes=["SmolLM2-135M-Instruct, " + manifold.summary() + "."])


def _summary(a: CurvatureEntropyAnalysis) -> dict[str, float]:
    return {**dataclasses.asdict(correlation_summary(a.spearman, a.pearson, a.partial_spearman)),
            **dataclasses.asdict(straightening_summary(a.mean_curvature))}


def _metrics(straight: Straightening, pert: TinyPerturbations, bigram, reg: Regularized,
             pretrained: dict[str, Any] | None, pre_study: PerturbationStudy | None) -> dict[str, dict[str, float]]:
    unreg = reg.arms["unregularized"]
    trained = {**_summary(straight.final), "valid_loss": unreg["valid_loss"], "bigram_valid_loss": bigram.loss,
               "bigram_weight": bigram.weight, "margin_over_bigram": bigram.loss - unreg["valid_loss"]}
    at_init = {**_summary(straight.init), "valid_loss": straight.init_loss}
    return {"trained": trained, "init": at_init, **pert.study.metrics(), "regularized": reg.arms["regularized"],
            "unregularized": unreg,
            **({"pretrained (SmolLM2)": pretrained} if pretrained is not None else {}),
            **({f"pretrained {k}": v for k, v in pre_study.metrics().items()} if pre_study is not None else {})}


def _informative(metrics: dict[str, dict[str, float]]) -> bool:
    """Whether the tiny model beats the interpolated bigram clearly (else its correlations are uninformative)."""
    return metrics["trained"]["margin_over_bigram"] >= CHECKS["tiny_beats_bigram"].target


def _checks(config: Config, ctx: RunContext, metrics: dict[str, dict[str, float]], pert: TinyPerturbations, bigram,
            reg: Regularized, pretrained: dict[str, Any] | None, pre_study: PerturbationStudy | None) -> list:
    trained, at_init, unreg = metrics["trained"], metrics["init"], reg.arms["unregularized"]
    checks = [
        CHECKS["init_correlation"].measure(at_init["max_abs_spearman"]),
        CHECKS["trained_correlation"].measure(
            trained["best_spearman"], note="" if _informative(metrics) else "uninformative: the tiny model does not "
            f"beat the interpolated bigram by 0.1 nats ({unreg['valid_loss']:.3f} vs {bigram.loss:.3f})"),
        CHECKS["trained_curvature_drop"].measure(trained["curvature_drop"]),
        CHECKS["init_curvature_drop"].measure(at_init["curvature_drop"]),
        CHECKS["tiny_beats_bigram"].measure(trained["margin_over_bigram"],
                                            note=f"validation loss {unreg['valid_loss']:.3f}, bigram {bigram.loss:.3f} "
                                                 f"(lambda={bigram.weight:.2f})"),
    ]
    checks += _pretrained_checks(config, ctx, pretrained, pre_study)
    tests = pert.study.tests
    checks += [
        CHECKS["aligned_slope"].measure(tests["aligned"].mean,
                                        note=f"{int(tests['aligned'].n)} prefixes at layer {pert.layer}"),
        CHECKS["aligned_slope_p_value"].measure(tests["aligned"].p_less),
        CHECKS["misaligned_slope_ratio"].measure(pert.study.misaligned_ratio),
        CHECKS["regularizer_curvature_cut"].measure(reg.curvature_cut),
        CHECKS["regularizer_loss_increase"].measure(reg.loss_increase),
    ]
    return checks


def _pretrained_checks(config: Config, ctx: RunContext, pretrained: dict[str, Any] | None,
                       pre_study: PerturbationStudy | None) -> list:
    if pretrained is None:
        return [CHECKS[c].not_measured("pretrained_tokens=0") for c in
                ("pretrained_correlation", "pretrained_ci_halfwidth", "pretrained_curvature_drop",
                 "pretrained_aligned_slope", "pretrained_misaligned_slope_ratio")
                if ctx.setting in CHECKS[c].settings]
    checks = [
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
        return checks + [CHECKS[c].not_measured("pretrained_perturb_positions=0") for c in
                         ("pretrained_aligned_slope", "pretrained_misaligned_slope_ratio")]
    return checks + [
        CHECKS["pretrained_aligned_slope"].measure(
            pre_study.tests["aligned"].mean, note=f"{int(pre_study.tests['aligned'].n)} prefixes at layer "
            f"{pre_study.layer}, one-sided p = {pre_study.tests['aligned'].p_less:.2g}"),
        CHECKS["pretrained_misaligned_slope_ratio"].measure(pre_study.misaligned_ratio),
    ]


def _curves(config: Config, layers: list[int], base, straight: Straightening, pert: TinyPerturbations,
            reg: Regularized) -> dict[str, Any]:
    step_names = {step: f"step {step}" for step in config.checkpoints}
    study, layer, eps = pert.study, pert.layer, pert.study.epsilons
    finite_slopes = np.concatenate([v[np.isfinite(v)] for v in study.slopes.values()])
    edges = np.linspace(*np.quantile(finite_slopes, [0.005, 0.995]), 41)
    analyses = straight.analyses
    layer_label = "layer (hidden_states index)"
    curves: dict[str, Any] = {
        "curvature_by_layer": Curve(
            x=layers, series={step_names[s]: _series(a.mean_curvature) for s, a in analyses.items()},
            xlabel=layer_label, ylabel="mean turning angle (rad)",
            title="Straightening: curvature by layer through training"),
        "spearman_by_layer": Curve(
            x=layers, series={step_names[s]: _series(a.spearman) for s, a in analyses.items()},
            xlabel=layer_label, ylabel=f"Spearman rho(kappa(t; W={config.window}), H_t)",
            title="Emergence: curvature-entropy correlation by layer"),
        "partial_spearman_by_layer": Curve(
            x=layers, series={step_names[s]: _series(a.partial_spearman) for s, a in analyses.items()},
            xlabel=layer_label, ylabel="partial rho | position, log frequency",
            title="Correlation controlling for position and token frequency"),
        "spearman_by_window": Curve(
            x=layers, series={f"W={w}": _series(a.spearman) for w, a in straight.grid.items()},
            xlabel=layer_label, ylabel="Spearman rho(kappa, H) (final)",
            title="Window of the contextual curvature"),
        "initial_slope_hist": Curve(
            x=_series((edges[1:] + edges[:-1]) / 2),
            series={k: [float(c) for c in np.histogram(v[np.isfinite(v)], bins=edges)[0]]
                    for k, v in study.slopes.items()},
            xlabel=f"initial slope dDelta H/d epsilon at layer {layer} (nats per unit epsilon)", ylabel="prefixes",
            title="Aligned vs misaligned perturbations, |delta| = epsilon |x_t|"),
        "delta_entropy_vs_epsilon": Curve(
            x=eps, series={k: [float(np.nanmean(v[i])) for i in range(len(eps))] for k, v in study.delta.items()},
            xlabel="epsilon (|delta| / |x_t|)", ylabel=f"mean Delta H (nats), {len(pert.prefixes)} prefixes",
            title=f"Perturbation size at layer {layer}"),
        "regularizer_curvature": Curve(
            x=layers, series={"lambda=0": _series(straight.final.mean_curvature),
                              f"lambda={config.reg_weight}": _series(reg.analysis.mean_curvature)},
            xlabel=layer_label, ylabel="mean turning angle (rad)",
            title=f"Curvature regulariser at layers {list(config.reg_layers)}"),
        "valid_loss": Curve(
            x=base.log.eval_steps, series={"lambda=0": base.log.valid_loss,
                                           f"lambda={config.reg_weight}": reg.log.valid_loss},
            xlabel="step", ylabel="validation loss (nats)", title="Training with the regulariser"),
    }
    return curves


def _pretrained_curves(by_layer: Curve | None, pre_study: PerturbationStudy | None) -> dict[str, Any]:
    curves: dict[str, Any] = {} if by_layer is None else {"pretrained_by_layer": by_layer}
    if pre_study is not None:
        curves["pretrained_delta_entropy_vs_epsilon"] = Curve(
            x=pre_study.epsilons,
            series={k: [float(np.nanmean(v[i])) for i in range(len(pre_study.epsilons))]
                    for k, v in pre_study.delta.items()},
            xlabel="epsilon (|delta| / |x_t|)",
            ylabel=f"mean Delta H (nats), {pre_study.delta['aligned'].shape[1]} prefixes",
            title=f"SmolLM2-135M-Instruct: perturbation size at layer {pre_study.layer}")
    return curves


def _notes(config: Config, metrics: dict[str, dict[str, float]], straight: Straightening, pert: TinyPerturbations,
           bigram) -> list[str]:
    study, unreg, trained = pert.study, metrics["unregularized"], metrics["trained"]
    notes = [
        f"Perturbations at hidden_states[{pert.layer}] "
        f"({'chosen' if config.perturb_layer >= 0 else 'inner layer of maximal rho'}); "
        f"{len(pert.prefixes)} held-out prefixes of {config.perturb_length} tokens; |delta| = epsilon |x_t| for "
        f"epsilon in {study.epsilons}; the aligned step overshoots the extrapolation at the largest epsilon for "
        f"{study.overshoot:.1%} of prefixes.",
        "Tiny model, " + study.summary() + " (the slope is the linear term of a through-origin quadratic fit "
        "per prefix).",
        f"Tiny model: validation loss {unreg['valid_loss']:.3f} nats vs an interpolated bigram's {bigram.loss:.3f} "
        f"(lambda {bigram.weight:.2f} chosen on a held-out tail of the training ids): margin "
        f"{trained['margin_over_bigram']:+.3f} nats" + ("." if _informative(metrics) else
        "; it does not beat the bigram clearly, so its correlations are uninformative."),
        f"Correlations over {int(straight.final.n_tokens[0])} held-out tokens; the paper reports r ~ 0.15 at "
        "GPT-2 XL scale.",
    ]
    return notes


def _pretrained_notes(config: Config, pretrained: dict[str, Any] | None,
                      pre_study: PerturbationStudy | None) -> list[str]:
    notes = []
    if pre_study is not None:
        notes.append(f"SmolLM2-135M-Instruct, {pre_study.summary()}; {config.pretrained_perturb_length}-token prefixes "
                     "(the last token rerun against the prefix's key-value cache for every patch).")
    if pretrained is not None:
        notes.append(
            f"SmolLM2-135M-Instruct on {int(pretrained['n_tokens'])} tokens ({int(pretrained['n_windows'])} random "
            f"windows of {config.pretrained_context} from the whole stdlib text; the bigram is fitted on the rest): "
            f"best Spearman rho {pretrained['best_spearman']:+.3f} at layer "
            f"{int(pretrained['best_layer'])} (95% window-bootstrap CI [{pretrained['best_ci_low']:.3f}, "
            f"{pretrained['best_ci_high']:.3f}]); curvature {pretrained['curvature_layer0']:.3f} rad at layer 0, "
            f"{pretrained['curvature_min']:.3f} at layer {int(pretrained['min_curvature_layer'])}; its loss "
            f"{pretrained['valid_loss']:.3f} nats vs a bigram's {pretrained['bigram_valid_loss']:.3f} on its tokens.")
    return notes
