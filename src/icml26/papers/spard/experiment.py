"""SPARD reproduction: the digits analogue of a harmful fine-tuning attack (brief §4).

Per replicate (:mod:`icml26.papers.spard.digits`): an aligned MLP that refuses harmful digits
7/8/9 is fine-tuned on a shifted 0-6 task with 10 % attack data (compliant labels), under
every arm of the issue: SFT; SafeInstr, penalty and Lisa-style with a random safety subset
(and, as a control, with SPARD's own DPP subset); SPAG with random, relevance-only top-k
and DPP (= SPARD) selection at p in {1, 3, 10} %; SPARD through the authors' AdamW update;
SPARD with the LLM-scale floor ``τ ≥ 0.2``; and (``sensitivity``) Lisa and penalty at other
strengths. All arms of a replicate share data, initialisation and batch order.

Optional sections, report only: the selectors on the 939 Do-Not-Answer prompts with MiniLM
embeddings (:mod:`~icml26.papers.spard.text_selection`, ``embed`` extra) and, in the full
setting, SmolLM2-135M-Instruct LoRA-fine-tuned with SFT vs SPARD
(:mod:`~icml26.papers.spard.lm_section`, ``pretrained`` extra).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.spard.analysis import accuracy_drop_points, ratio_to_best, worst_gap
from icml26.papers.spard.claims import ARMS, CHECKS
from icml26.papers.spard.config import Config
from icml26.papers.spard.digits import HARM_CATEGORIES, Replicate, prepare_replicate, run_replicate
from icml26.papers.spard.figures import plot
from icml26.papers.spard.front import TunedFront, front_metrics, run_front, scored_front

__all__ = ["CHECKS", "Config", "STREAMS", "drop_unmeasured_base_loss", "plot", "run"]

log = logging.getLogger(__name__)

STREAMS: dict[str, str] = {
    "split": "the digits split; index = replicate (development replicates of the front: 1000 + d)",
    "augment": "augmentation; index = replicate",
    "shift": "the user distribution's shift; index = replicate",
    "attack": "the harmful fine-tuning data; index = replicate",
    "init": "the MLP's initialisation; index = replicate",
    "base_order": "the base model's batch order; index = replicate",
    "ft_order": "the user fine-tuning batch order; index = replicate",
    "safety_order": "the safety data's batch order; index = replicate",
    "random_select": "the random-selection baseline; index = 16 replicate + k's position",
    "text": "the text-selection section",
    "lm": "the LM section's data",
    "lm_init": "the LM section's model initialisation",
    "lm_order": "the LM section's task batch order",
    "lm_safety_order": "the LM section's safety batch order",
    "lm_random_select": "the LM section's random safety subset (SPAG+random and the baselines)",
    "tune:front": "the shared tuner's stream for the front's arms when claims.py does not declare them; "
                  "index = the arm's position in FRONT_ARMS (never drawn: every grid point is a trial)",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

BASELINE_NAMES = ("SafeInstr", "penalty", "Lisa")


def _mean(values: list[float]) -> float:
    return float(np.mean(values))


def _aggregate(reps: list[Replicate], cfg: Config) -> dict[str, dict[str, float]]:
    """Mean (and sd) over replicates per arm; the method's arm first."""
    head = f"SPARD p={cfg.headline_ratio:.0%}"
    names = list(reps[0].arms)
    order = [head, "SFT"] + [f"{b} (random data)" for b in BASELINE_NAMES]
    order += [n for n in names if n not in order]
    metrics: dict[str, dict[str, float]] = {}
    for name in order:
        arms = [rep.arms[name] for rep in reps]
        row = {"asr": _mean([a.asr for a in arms]), "asr_sd": float(np.std([a.asr for a in arms])),
               "task_acc": _mean([a.task_acc for a in arms])}
        row.update({f"asr_{c}": _mean([a.asr_by_category[c] for a in arms]) for c in HARM_CATEGORIES})
        if all(math.isfinite(a.tau) for a in arms):
            row["tau"] = _mean([a.tau for a in arms])
            row["projection_rate"] = _mean([a.projection_rate for a in arms])
        metrics[name] = row
    for (selector, p) in reps[0].selections:
        infos = [rep.selections[(selector, p)] for rep in reps]
        metrics[f"selection {selector} p={p:.0%}"] = {
            "categories_mean": _mean([i.categories for i in infos]),
            "categories_min": float(min(i.categories for i in infos)),
            "logdet": _mean([i.logdet for i in infos]),
            **{f"share_{c}": _mean([i.share_by_category[c] for i in infos]) for c in HARM_CATEGORIES},
        }
    metrics["DPP minus random (SPAG)"] = {
        f"asr_gap_p{100 * p:g}": _mean([rep.arms[f"SPARD p={p:.0%}"].asr - rep.arms[f"SPAG+random p={p:.0%}"].asr
                                       for rep in reps]) for p in cfg.ratios}
    metrics["base model"] = {"asr": _mean([rep.base.asr for rep in reps]),
                             "task_acc": _mean([rep.base.task_acc for rep in reps]),
                             "pool_safety_loss": _mean([rep.base_safety_loss for rep in reps])}
    return metrics


def _checks(metrics: dict[str, dict[str, float]], reps: list[Replicate], cfg: Config) -> tuple[list, list[str]]:
    head = cfg.headline_ratio
    spard = metrics[f"SPARD p={head:.0%}"]
    sft = metrics["SFT"]
    baselines = {b: metrics[f"{b} (random data)"]["asr"] for b in BASELINE_NAMES}
    same_data = {b: metrics[f"{b} (DPP data)"]["asr"] for b in BASELINE_NAMES}
    ratio, best = ratio_to_best(spard["asr"], baselines)
    ratio_same, best_same = ratio_to_best(spard["asr"], same_data)
    small = [p for p in cfg.ratios if p <= 0.03 + 1e-12]
    checks = [
        CHECKS["sft_asr"].measure(sft["asr"], note=f"sd over {len(reps)} replicates {sft['asr_sd']:.3f}"),
        CHECKS["spard_asr"].measure(spard["asr"], note=f"sd {spard['asr_sd']:.3f}; per replicate "
                                    + ", ".join(f"{rep.arms[f'SPARD p={head:.0%}'].asr:.3f}" for rep in reps)),
        CHECKS["spard_vs_best_baseline"].measure(ratio, note=f"best baseline {best} ASR {baselines[best]:.3f}"),
        CHECKS["task_parity"].measure(accuracy_drop_points(sft["task_acc"], spard["task_acc"]),
                                      note=f"SFT {sft['task_acc']:.3f}, SPARD {spard['task_acc']:.3f}"),
        CHECKS["spag_vs_baselines_same_data"].measure(
            ratio_same, note=f"best baseline on the DPP subset: {best_same} ASR {same_data[best_same]:.3f}"),
    ]
    if small:
        dpp = {p: metrics[f"SPARD p={p:.0%}"]["asr"] for p in small}
        rnd = {p: metrics[f"SPAG+random p={p:.0%}"]["asr"] for p in small}
        gap, at = worst_gap(dpp, rnd)
        checks.append(CHECKS["dpp_vs_random"].measure(
            gap, note="; ".join(f"p={p:.0%}: DPP {dpp[p]:.3f} vs random {rnd[p]:.3f}" for p in small)
            + f" (worst at p={at:.0%})"))
    coverage = min(rep.selections[("DPP", p)].categories for rep in reps for p in cfg.ratios)
    topk = min(rep.selections[("top-k", p)].categories for rep in reps for p in cfg.ratios)
    rand = min(rep.selections[("random", p)].categories for rep in reps for p in cfg.ratios)
    checks.append(CHECKS["dpp_coverage"].measure(coverage, note=f"fewest for top-k {topk}, for random {rand}"))
    notes = [f"best baseline (random safety subset, p={head:.0%}): {best}; with SPARD's DPP subset: {best_same}."]
    return checks, notes + _notes(metrics, cfg)


def _notes(metrics: dict[str, dict[str, float]], cfg: Config) -> list[str]:
    """What the ablation and sensitivity arms say, in numbers."""
    p = f"p={cfg.headline_ratio:.0%}"
    spard = metrics[f"SPARD {p}"]

    def fig(name: str) -> str:
        row = metrics[name]
        return f"ASR {row['asr']:.3f}, task {row['task_acc']:.3f}"

    notes = [f"SPARD {p}: {fig(f'SPARD {p}')} (tau {spard['tau']:.3f}, projections on "
             f"{spard['projection_rate']:.0%} of the steps); SFT: {fig('SFT')}.",
             f"authors' update (reference_adamw): {fig(f'SPARD-reference_adamw {p}')}; AdamW's normalisation "
             "turns the alpha-scaled safety gradient into a ~lr-per-coordinate step."]
    if f"SPARD tau_floor=0.2 {p}" in metrics:
        row = metrics[f"SPARD tau_floor=0.2 {p}"]
        notes.append(f"with the LLM-scale floor tau >= 0.2 (the API default): {fig(f'SPARD tau_floor=0.2 {p}')} "
                     f"(tau {row['tau']:.3f}); the base model's safety loss on the pool is "
                     f"{metrics['base model']['pool_safety_loss']:.3f}.")
    sens = [n for n in metrics if n.startswith(("Lisa rho=", "penalty lambda="))]
    if sens:
        notes.append("baseline sensitivity (random data): " + "; ".join(f"{n.split(' (')[0]}: {fig(n)}" for n in sens)
                     + f"; defaults: Lisa {fig('Lisa (random data)')}, penalty {fig('penalty (random data)')}.")
    return notes


def _curves(metrics: dict[str, dict[str, float]], cfg: Config) -> dict[str, Any]:
    xs = [100 * p for p in cfg.ratios]
    names = {"SPARD (DPP)": "SPARD p={:.0%}", "SPAG+random": "SPAG+random p={:.0%}", "SPAG+top-k": "SPAG+top-k p={:.0%}"}
    sel = {"DPP": "DPP", "random": "random", "top-k": "top-k"}
    return {
        "asr_vs_ratio": Curve(x=xs, series={k: [metrics[v.format(p)]["asr"] for p in cfg.ratios] for k, v in names.items()},
                              xlabel="safety data p (% of the user set)", ylabel="attack success rate",
                              title="spard: ASR of SPAG by selection rule"),
        "coverage_vs_ratio": Curve(x=xs, series={k: [metrics[f"selection {v} p={p:.0%}"]["categories_mean"]
                                                     for p in cfg.ratios] for k, v in sel.items()},
                                   xlabel="safety data p (% of the user set)", ylabel="harm categories covered (of 3)",
                                   title="spard: category coverage of the selected subset"),
    }


def _text_section(cfg: Config, ctx: RunContext, metrics: dict, curves: dict, notes: list[str]) -> None:
    from icml26.common.extras import MissingExtraError
    from icml26.papers.spard.text_selection import run_text_selection

    ctx.stage("text selection on Do-Not-Answer (MiniLM)")
    try:
        text = run_text_selection(cfg.text_ks, power=cfg.power, rng=ctx.rng("text"), device=str(ctx.device))
    except MissingExtraError as exc:
        notes.append(f"text section skipped: {exc}")
        return
    for (selector, k), row in text.rows.items():
        metrics[f"text {selector} k={k}"] = row
    for metric, label in (("areas", "risk areas covered (of 5)"), ("intents", "intent tags covered"),
                          ("logdet", "log det L_Y"), ("reference_area_share", "share from the reference's area")):
        curves[f"text_{metric}"] = Curve(x=list(cfg.text_ks),
                                         series={s: [text.rows[(s, k)][metric] for k in cfg.text_ks]
                                                 for s in ("DPP", "top-k", "random")},
                                         xlabel="subset size k", ylabel=label,
                                         title=f"spard: Do-Not-Answer selection, {label}")
    ctx.provenance["text_section_encode_seconds"] = round(text.encode_seconds, 1)
    notes.append(f"text section: {text.n_prompts} Do-Not-Answer prompts, MiniLM embeddings; each risk area's "
                 "random half in turn is the reference, the rest the candidates; means over the 5 areas.")


def _front_section(front: TunedFront, cfg: Config, ctx: RunContext, metrics: dict, curves: dict, checks: list,
                   notes: list[str]) -> None:
    """The tuned front's rows, curves and notes; its checks where ``claims.py`` declares them."""
    rows, front_curves, front_notes = front_metrics(front, cfg)
    metrics.update(rows)
    curves.update(front_curves)
    notes.extend(front_notes)
    if front.records:
        ctx.provenance["front_tuning"] = front.records
    summary, spard = rows["front summary"], rows["tuned SPARD"]
    nan = float("nan")
    values = {"spard_vs_best_tuned_baseline": (summary.get("spard_vs_best_tuned_baseline", nan),
                                               "tuned on development replicates by one rule"),
              "spard_vs_best_baseline_matched": (summary.get("spard_vs_best_baseline_matched", nan),
                                                 f"fronts read at task accuracy {summary['matched_task_acc']:.3f}"),
              "task_parity_tuned": (accuracy_drop_points(summary["sft_task_acc"], spard["task_acc"]),
                                    f"SFT {summary['sft_task_acc']:.3f}, tuned SPARD {spard['task_acc']:.3f}")}
    checks.extend(CHECKS[i].measure(v, note=n) for i, (v, n) in values.items() if i in CHECKS)


def drop_unmeasured_base_loss(metrics: dict[str, dict[str, float]]) -> None:
    """Remove the LM rows' ``base_safety_loss`` where SPAG never measured it, in place.

    With a numeric ``lm_tau`` the projection is given its ``τ`` and does not read the base model's safety
    loss (:attr:`SafetyProjection.base_loss` stays NaN), so the row has nothing to report there; a NaN left in
    would fail the run's finiteness check after hours of training. Done here, not in ``lm_section``, so the
    arms already in the cache keep their keys (a change to ``lm_section`` retires them)."""
    for name, row in metrics.items():
        if name.startswith("LM ") and "base_safety_loss" in row and not math.isfinite(row["base_safety_loss"]):
            del row["base_safety_loss"]


def run(config: Config, ctx: RunContext) -> Outcome:
    # the front runs where config.front says so (front_run) and, at its grids, in the full setting
    front_cfg = config if config.front or ctx.setting == "full" else None
    front = run_front(front_cfg, ctx, dict(ARMS)) if front_cfg is not None else None
    reps = []
    for r in ctx.progress(range(config.replicates), desc="spard replicates"):
        ctx.stage(f"replicate {r}: data, the user's set, the attack")
        prepared = prepare_replicate(config, ctx, r)
        reps.append(run_replicate(config, ctx, r, prepared))
        if front is not None:
            scored_front(front, front_cfg, ctx, prepared)
    ctx.stage("aggregate over replicates, checks")
    metrics = _aggregate(reps, config)
    checks, notes = _checks(metrics, reps, config)
    curves = _curves(metrics, config)
    if front is not None:
        _front_section(front, front_cfg, ctx, metrics, curves, checks, notes)
    ctx.provenance["user_set_size"] = reps[0].user_size
    ctx.provenance["attack_size"] = reps[0].attack_size
    ctx.provenance["arm_seconds"] = {name: round(_mean([rep.arms[name].seconds for rep in reps]), 2)
                                     for name in reps[0].arms}
    if config.text_section:
        _text_section(config, ctx, metrics, curves, notes)
    if config.lm_section:  # the full setting; off in quick and tiny unless the further run lm_run sets it
        from icml26.papers.spard.lm_section import run_lm_section

        checks += run_lm_section(config, ctx, metrics, notes)
        drop_unmeasured_base_loss(metrics)
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
