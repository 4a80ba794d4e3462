"""Reproduction of ConfSleepNet: reliable multi-view staging when the EOG is misaligned.

Per seed:

1. draw synthetic nights (EEG, EOG, EMG, hypnograms) for training and held-out subjects;
2. train, once, five evidential view networks with the EDL loss: EEG (5 stages), EOG
   (hybrid W/NREM/REM), EMG (hybrid), fused all-channel (5 stages), and a five-class EOG
   head for the ablation; and a late-fusion concatenation network with softmax;
3. for each corrupted fraction pi, corrupt the held-out nights' EOG (shift by 1–3 epochs,
   electrode pops, another stage's EOG) and fuse the same evidence with every rule:
   conflict-aware (views sorted by uncertainty), Dempster/TMC, Dempster with the common-space
   conflict, set-valued Dempster-Shafer (each view's mass on the stage sets of its categories,
   scored by ``m(Theta)`` and by Shafer's conflict), the RCML average, and the conflict-aware
   rule with the five-class EOG head;
4. score accuracy, macro-F1, Cohen's kappa, AUROC of the fused uncertainty for telling
   corrupted epochs from clean ones, and accuracy at 80 % coverage ranked by uncertainty.
   A corruption is *detectable* when the corrupted EOG view's own prediction is wrong (else
   its opinion is what it would be clean); the older definition (the EOG's content contradicts
   the truth at the hybrid granularity) is kept as the ``auroc_conflicting_<pi>`` metric.

Metrics are means over seeds.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import torch

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.confsleepnet.analysis import (claim_values, detection_scores, mean_over_seeds, score_epochs,
                                                 view_flags_corruption)
from icml26.papers.confsleepnet.baselines import LateFusionNet
from icml26.papers.confsleepnet.claims import CHECKS
from icml26.papers.confsleepnet.config import Config
from icml26.papers.confsleepnet.data import CORRUPTION_MODES, corrupt_eog, normalize_recordings, synthetic_psg
from icml26.papers.confsleepnet.figures import plot
from icml26.papers.confsleepnet.mass import fuse_dempster_sets
from icml26.papers.confsleepnet.model import ConfSleepNet, EpochEncoder, ViewSpec, default_views
from icml26.papers.confsleepnet.metrics import accuracy, accuracy_coverage_curve
from icml26.papers.confsleepnet.opinion import FIVE_TO_THREE, STAGES
from icml26.papers.confsleepnet.training import fit_confsleepnet, fit_late_fusion, predict_in_batches

__all__ = ["CHECKS", "COVERAGES", "Config", "FUSION_ARMS", "STREAMS", "plot", "run"]

log = logging.getLogger(__name__)

STREAMS: dict[str, str] = {
    "data": "the synthetic nights; index = replicate",
    "view_batches": "mini-batch order of the evidential views; index = replicate",
    "late_batches": "mini-batch order of the late-fusion network; index = replicate",
    "corruption": "EOG corruption; index = 100 replicate + position of pi in the sorted fractions",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

VIEWS = ("eeg", "eog", "emg", "fused")
ABLATION_VIEWS = ("eeg", "eog5", "emg", "fused")
#: arm -> (views, rule, order, conflict space); the method first.
FUSION_ARMS: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "conflict_aware": (VIEWS, "conflict_aware", "uncertainty", "stages"),
    "dempster_tmc": (VIEWS, "dempster", "given", "stages"),
    "dempster_common": (VIEWS, "dempster", "given", "common"),
    "rcml_average": (VIEWS, "average", "given", "stages"),
    "conflict_aware_unsorted": (VIEWS, "conflict_aware", "given", "stages"),
    "conflict_aware_eog5": (ABLATION_VIEWS, "conflict_aware", "uncertainty", "stages"),
    "conflict_aware_common": (VIEWS, "conflict_aware", "uncertainty", "common"),
    "dempster_sets": (VIEWS, "dempster_sets", "given", "sets"),
}
#: Arms scored by another score of an arm above: set-valued DS's predictions with Shafer's conflict.
SCORE_ARMS = ("dempster_sets_conflict",)
COVERAGES = tuple(round(0.1 + 0.05 * i, 2) for i in range(19))


def _build_models(config: Config, seed: int) -> tuple[ConfSleepNet, LateFusionNet]:
    torch.manual_seed(seed)
    views = default_views() + (ViewSpec.five_class("eog5", (1,)),)
    model = ConfSleepNet(views, sampling_rate=config.sampling_rate, width=config.width, dropout=config.dropout)
    encoders = [EpochEncoder(1, config.sampling_rate, config.width, config.dropout) for _ in range(3)]
    late = LateFusionNet(encoders, [(0,), (1,), (2,)], num_classes=len(STAGES))
    return model, late


def run(config: Config, ctx: RunContext) -> Outcome:
    fractions = sorted(config.corruption_fractions)
    per_seed: list[dict[str, dict[str, float]]] = []
    curves_acc: dict[float, dict[str, list[list[float]]]] = {f: {} for f in fractions}
    example: dict[str, Any] = {}
    train_seconds = []
    n_sub = config.n_train_subjects + config.n_test_subjects
    for seed_index in ctx.progress(range(config.seeds), desc="seeds"):
        ctx.stage(f"replicate {seed_index}: recordings, training, scoring")
        data = synthetic_psg(n_sub, config.epochs_per_subject, rng=ctx.rng("data", seed_index),
                             sampling_rate=config.sampling_rate, subject_variability=config.subject_variability)
        train, test = data.subset(slice(0, config.n_train_subjects)), data.subset(slice(config.n_train_subjects, None))
        x_train = normalize_recordings(train.signals).reshape(-1, *train.signals.shape[2:])
        y_train = train.stages.reshape(-1)
        model, late = _build_models(config, ctx.seed * 1000 + seed_index)
        fit_kwargs = dict(epochs=config.train_epochs, batch_size=config.batch_size, lr=config.lr,
                          weight_decay=config.weight_decay, device=ctx.device, show_progress=False)
        views_log = fit_confsleepnet(model, x_train, y_train, annealing_epochs=config.annealing_epochs,
                                     generator=ctx.torch_generator("view_batches", seed_index), **fit_kwargs)
        late_log = fit_late_fusion(late, x_train, y_train, generator=ctx.torch_generator("late_batches", seed_index),
                                   **fit_kwargs)
        train_seconds.append((views_log.seconds, late_log.seconds))

        scores: dict[str, dict[str, float]] = {}
        y_test = test.stages.reshape(-1)
        for k, fraction in enumerate(fractions):
            if fraction > 0:
                corrupted, corruption = corrupt_eog(test, fraction, ctx.rng("corruption", 100 * seed_index + k),
                                                    modes=config.corruption_modes)
            else:
                corrupted, corruption = test, None
            x_test = normalize_recordings(corrupted.signals).reshape(-1, *test.signals.shape[2:])
            with torch.no_grad():
                evidence = predict_in_batches(model.evidence, x_test, device=ctx.device)
                opinions = model.opinions(evidence=evidence)
                late_pred, late_u = predict_in_batches(late.predict, x_test, device=ctx.device)
            results: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for arm, (views, rule, order, space) in FUSION_ARMS.items():
                if rule == "dempster_sets":
                    specs = {v.name: v for v in model.views}
                    sets = fuse_dempster_sets([opinions[n] for n in views], [specs[n].label_map for n in views])
                    pred = sets.opinion.prediction().cpu().numpy()
                    results[arm] = (pred, sets.opinion.uncertainty.cpu().numpy())
                    results[f"{arm}_conflict"] = (pred, sets.conflict.cpu().numpy())
                    continue
                fused = model.fuse(opinions, views=views, rule=rule, order=order, conflict_space=space)
                results[arm] = (fused.prediction().cpu().numpy(), fused.uncertainty.cpu().numpy())
            results["late_concat_softmax"] = (late_pred.cpu().numpy(), late_u.cpu().numpy())
            tag = f"{fraction:g}"
            # detectable: the corrupted EOG view's own (W / NREM / REM) prediction is wrong
            masks, conflicting = (None, None, None), None
            if corruption is not None:
                hit = corruption.mask.ravel()
                eog_pred = evidence["eog"].argmax(1).cpu().numpy()
                masks = (hit, view_flags_corruption(eog_pred, y_test, FIVE_TO_THREE, hit), corruption.mode.ravel())
                conflicting = corruption.conflicting(y_test.reshape(corruption.mask.shape), FIVE_TO_THREE).ravel()
            for arm, (pred, u) in results.items():
                scores.setdefault(arm, {}).update(score_epochs(y_test, pred, u, config.coverage, *masks,
                                                                modes=CORRUPTION_MODES).as_metrics(tag))
                if conflicting is not None:  # the older, label-based definition of detectable (diagnostic)
                    old = detection_scores(u, masks[0], conflicting)
                    if old is not None and old.auroc_detectable is not None:
                        scores[arm][f"auroc_conflicting_{tag}"] = old.auroc_detectable
                        scores[arm][f"conflicting_share_{tag}"] = old.detectable_share
                curves_acc[fraction].setdefault(arm, []).append(
                    accuracy_coverage_curve(pred == y_test, u, COVERAGES))
            for name in VIEWS + ("eog5",):
                view = next(v for v in model.views if v.name == name)
                own = np.asarray(view.label_map)[y_test]
                ev = evidence[name].cpu().numpy()
                scores.setdefault(f"view_{name}", {})[f"own_acc_{tag}"] = accuracy(own, ev.argmax(1))
                scores[f"view_{name}"][f"median_S_{tag}"] = float(np.median(ev.sum(1) + ev.shape[1]))
            if seed_index == 0 and fraction == max(fractions):
                night = slice(0, config.epochs_per_subject)
                example = {"truth": y_test[night].tolist(),
                           "corrupted": corruption.mask[0].astype(int).tolist(),
                           **{f"{arm}_pred": results[arm][0][night].tolist() for arm in
                              ("conflict_aware", "dempster_tmc")},
                           **{f"{arm}_u": results[arm][1][night].tolist() for arm in
                              ("conflict_aware", "dempster_tmc", "rcml_average", "conflict_aware_common")}}
        per_seed.append(scores)
        log.info("seed %d: CA acc %s", seed_index,
                 {f: round(scores["conflict_aware"][f"acc_{f:g}"], 3) for f in fractions})

    metrics = mean_over_seeds(per_seed)
    ctx.provenance["train_seconds_per_seed"] = {
        "views": [round(a, 2) for a, _ in train_seconds], "late_fusion": [round(b, 2) for _, b in train_seconds]}
    return Outcome(metrics=metrics, checks=_checks(metrics, fractions, config),
                   curves=_curves(metrics, per_seed, curves_acc, example, fractions, config),
                   notes=_notes(metrics, fractions, config))


def _checks(metrics: dict[str, dict[str, float]], fractions: list[float], config: Config) -> list:
    values = claim_values(metrics, fractions)
    at = f"pi = {max(fractions):g}"
    return [
        CHECKS["clean_acc_vs_dempster"].measure(values.clean_acc_vs_dempster),
        CHECKS["corrupted_acc_vs_dempster"].measure(values.corrupted_acc_vs_dempster, note=at),
        CHECKS["corrupted_acc_vs_rcml"].measure(values.corrupted_acc_vs_rcml, note=at),
        CHECKS["auroc_detectable"].measure(values.auroc_detectable, note=at),
        CHECKS["auroc_detectable_vs_dempster"].measure(values.auroc_detectable_vs_dempster, note=at),
        CHECKS["selective_acc_vs_dempster"].measure(values.selective_acc_vs_dempster,
                                                    note=f"{at}, coverage {config.coverage:.0%}"),
        CHECKS["hybrid_vs_five_class_eog"].measure(values.hybrid_vs_five_class_eog),
        CHECKS["common_auroc_detectable_vs_dempster"].measure(values.common_auroc_detectable_vs_dempster, note=at),
        CHECKS["corrupted_acc_vs_best_dempster"].measure(values.corrupted_acc_vs_best_dempster, note=at),
        CHECKS["auroc_detectable_vs_best_dempster"].measure(values.auroc_detectable_vs_best_dempster, note=at),
        CHECKS["common_auroc_detectable_vs_dempster_common"].measure(
            values.common_auroc_detectable_vs_dempster_common, note=at),
        CHECKS["auroc_detectable_vs_dempster_sets"].measure(values.auroc_detectable_vs_dempster_sets, note=at),
    ]


def _curves(metrics, per_seed, curves_acc, example, fractions, config) -> dict[str, Any]:
    arms = list(FUSION_ARMS) + list(SCORE_ARMS) + ["late_concat_softmax"]
    curves: dict[str, Any] = {}
    for f in fractions:
        curves[f"coverage_pi{f:g}"] = Curve(
            x=list(COVERAGES),
            series={arm: np.mean(curves_acc[f][arm], axis=0).tolist() for arm in arms},
            xlabel="coverage (share of epochs kept, least uncertain first)", ylabel="accuracy",
            title=f"accuracy vs coverage, {f:.0%} of epochs with corrupted EOG")
    for name in ("acc", "mf1", "kappa"):
        curves[f"{name}_vs_pi"] = Curve(
            x=list(fractions), series={arm: [metrics[arm][f"{name}_{f:g}"] for f in fractions] for arm in arms},
            xlabel="corrupted fraction pi", ylabel=name, title=f"{name} under EOG corruption")
    corrupted = [f for f in fractions if f > 0]
    curves["auroc_vs_pi"] = Curve(
        x=corrupted, series={
            **{arm: [metrics[arm][f"auroc_detectable_{f:g}"] for f in corrupted] for arm in arms},
            "ceiling (all corruptions)": [metrics["conflict_aware"][f"auroc_ceiling_{f:g}"] for f in corrupted]},
        xlabel="corrupted fraction pi", ylabel="AUROC (fused u -> detectable corrupted epoch)",
        title="detecting detectable corruptions by uncertainty")
    hi_tag = f"{max(fractions):g}"
    curves["auroc_per_mode"] = Curve(
        x=list(config.corruption_modes),
        series={**{f"{arm}, detectable": [metrics[arm].get(f"auroc_detectable_{m}_{hi_tag}") for m in
                                            config.corruption_modes] for arm in
                   ("conflict_aware", "conflict_aware_common", "dempster_tmc", "dempster_common", "dempster_sets",
                    "dempster_sets_conflict")},
                **{f"{arm}, all": [metrics[arm].get(f"auroc_{m}_{hi_tag}") for m in config.corruption_modes]
                   for arm in ("conflict_aware", "dempster_tmc")},
                "ceiling, all": [metrics["conflict_aware"].get(f"auroc_ceiling_{m}_{hi_tag}")
                                 for m in config.corruption_modes]},
        xlabel="corruption mode", ylabel="AUROC", title=f"per corruption mode, pi = {hi_tag}")
    hi = f"{max(fractions):g}"
    curves["per_seed"] = Curve(
        x=list(range(len(per_seed))),
        series={f"{arm} {m}": [s[arm][m] for s in per_seed] for arm in arms
                for m in (f"acc_{hi}", f"auroc_detectable_{hi}")},
        xlabel="seed", ylabel="value", title="per-seed spread")
    if example:
        n = len(example["truth"])
        curves["example_night"] = Curve(x=list(range(n)), series=example, xlabel="30-s epoch",
                                        ylabel="stage / uncertainty",
                                        title=f"one held-out night, {max(fractions):.0%} corrupted EOG (seed 0)")
    return curves


def _notes(metrics, fractions, config) -> list[str]:
    ca, ds, rcml = metrics["conflict_aware"], metrics["dempster_tmc"], metrics["rcml_average"]
    notes = []
    for f in fractions:
        t = f"{f:g}"
        line = (f"pi={t}: accuracy CA {ca[f'acc_{t}']:.3f} / Dempster {ds[f'acc_{t}']:.3f} / RCML "
                f"{rcml[f'acc_{t}']:.3f} / late concat {metrics['late_concat_softmax'][f'acc_{t}']:.3f}")
        if f > 0:
            common, dsc = metrics["conflict_aware_common"], metrics["dempster_common"]
            sets, setc = metrics["dempster_sets"], metrics["dempster_sets_conflict"]
            line += (f"; AUROC(u -> corrupted) over every corruption CA {ca[f'auroc_{t}']:.3f} / Dempster "
                     f"{ds[f'auroc_{t}']:.3f} / RCML {rcml[f'auroc_{t}']:.3f} (ceiling "
                     f"{ca[f'auroc_ceiling_{t}']:.3f}: {ca[f'detectable_share_{t}']:.0%} of corruptions detectable); "
                     f"over detectable ones CA {ca[f'auroc_detectable_{t}']:.3f} / CA, common-space conflict "
                     f"{common[f'auroc_detectable_{t}']:.3f} / Dempster {ds[f'auroc_detectable_{t}']:.3f} / Dempster, "
                     f"common-space conflict {dsc[f'auroc_detectable_{t}']:.3f} (accuracy {dsc[f'acc_{t}']:.3f}) / RCML "
                     f"{rcml[f'auroc_detectable_{t}']:.3f} / set-valued DS by m(Theta) "
                     f"{sets[f'auroc_detectable_{t}']:.3f}, by its conflict {setc[f'auroc_detectable_{t}']:.3f} "
                     f"(accuracy {sets[f'acc_{t}']:.3f}); over label-conflicting ones (older definition) CA "
                     f"{ca.get(f'auroc_conflicting_{t}', math.nan):.3f} / Dempster "
                     f"{ds.get(f'auroc_conflicting_{t}', math.nan):.3f} / Dempster-common "
                     f"{dsc.get(f'auroc_conflicting_{t}', math.nan):.3f} / set-valued DS "
                     f"{sets.get(f'auroc_conflicting_{t}', math.nan):.3f}, by conflict "
                     f"{setc.get(f'auroc_conflicting_{t}', math.nan):.3f}; per mode (detectable AUROC CA / common / Dempster; "
                     f"all-corruption AUROC CA vs ceiling): " + "; ".join(
                         f"{m} {ca.get(f'auroc_detectable_{m}_{t}', math.nan):.3f} / "
                         f"{common.get(f'auroc_detectable_{m}_{t}', math.nan):.3f} / "
                         f"{ds.get(f'auroc_detectable_{m}_{t}', math.nan):.3f}; "
                         f"{ca.get(f'auroc_{m}_{t}', math.nan):.3f} vs {ca.get(f'auroc_ceiling_{m}_{t}', math.nan):.3f}"
                         for m in config.corruption_modes))
        notes.append(line + ".")
    notes.append("Median Dirichlet strength S per view (clean): " + ", ".join(
        f"{v} {metrics[f'view_{v}']['median_S_0']:.1f}" for v in VIEWS + ("eog5",))
        + " (K + evidence; peaked evidence is the regime where CA's uncertainty separates conflicts).")
    return notes
