"""HAMU reproduction: HAMU-Q against the unlearning baselines at graded hardness.

One master seed holds ``replicates`` independent replicates (10 in the quick setting,
each its own draw of the data split, the models, the forget sets and the MIA samples; every
comparison is paired per replicate and reported with a 95 % t interval). Per replicate: a stratified train / validation / test draw of
Animal-MNIST (14×14 silhouettes: a testbed where forgetting is measurable, since on
digits the original and the retrained reference differ by ~1 point of forget accuracy at
ρ = 0.5), an MLP trained with Adam on the training set (the original), and for every hardness
ρ a forget set of class-0 size (:func:`~icml26.papers.hamu.forget_split`) and a reference MLP
trained the same way on the retain set alone (retraining, the gold standard). Then, from the
original, every arm unlearns for ``steps`` full-batch paired steps at every learning rate of
its grid:

* ``hamu_q_layerwise`` (the paper's default: one problem per parameter tensor, R_l = lr‖g_r,l‖,
  relative bound c = ``bound_ratio``) and ``hamu_q_global`` (one problem, the ``--full_grad``
  ablation);
* the baselines finetune, gradient ascent, GradDiff, NegGrad+, SCRUB, PCGrad and GRU (the last
  two projecting only on conflict).

Every ``eval_every`` steps we record forget accuracy, retain accuracy (samples of the other
classes) on the validation and on the test split, and per-sample losses. **Matched forget
accuracy** is the reference's (within ``match_window``: a statistic the reference
defines): among the checkpoints of all learning rates in that window the one with the best
*validation* retain accuracy is chosen, and its *test* retain accuracy reported. The same rule
gives the retain-vs-forget Pareto fronts (validation-selected, test-reported) and their mean
height between the reference's forget accuracy (minus the window) and the original's. Also:
HAMU's per-step κ, cos(g_r, g_f) and stop flags, HAMU run with ``stop_on_criterion=True`` (the
stop flag as a decision rule: how much retain accuracy stopping costs against the best
in-window checkpoint), and a float64 probe of the per-step guarantee.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.metrics import loss_threshold_mia_auc
from icml26.contract import Curve, Outcome, RunContext

from .analysis import (
    guarantee_share,
    matched_point,
    paired_interval,
    pareto_front,
    share_at_most,
    smallest_decrease,
    smallest_increase,
    window_front_mean,
)
from .claims import CHECKS
from .config import BASELINE_ARMS, HAMU_ARMS, Config
from .figures import plot
from .problem import Problem, evaluate, load_split, matched_test_indices, train_mlp
from .sections import MatchedRecord, RhoResult, StepTrace, arm_options, guarantee_probe, stop_rule, target_stop
from .splits import forget_split
from .unlearn import unlearn

__all__ = ["BASELINE_ARMS", "CHECKS", "HAMU_ARMS", "STREAMS", "Config", "MatchedRecord", "RhoResult", "StepTrace",
           "plot", "run"]

STREAMS: dict[str, str] = {
    "data_split": "the train / validation / test draw; index = replicate",
    "forget_split": "the forget sets and the MIA test samples; index = replicate",
    "model_init": "the MLPs' initialisation and Adam's batch order; index = replicate",
    "val_forget": "validation samples with each forget set's label mix (the validation-forget stop target); "
                  "index = replicate",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


GRID = np.round(np.linspace(0.0, 1.0, 51), 4)


# ----------------------------------------------------------------------------- the run
def run(config: Config, ctx: RunContext) -> Outcome:
    device = ctx.device
    arms = [a for a in HAMU_ARMS + BASELINE_ARMS if a in config.arms]
    per_rho = {rho: RhoResult(rho, {a: [] for a in arms}, {a: [] for a in arms}) for rho in config.hardness}
    seconds = {a: 0.0 for a in arms}
    steps_done = {a: 0 for a in arms}
    bar = ctx.progress(total=config.replicates * sum(len(_lrs(a, config)) for rho in config.hardness
                                                     for a in _arms_at(arms, rho, config)), desc="hamu runs")

    for rep in range(config.replicates):
        ctx.stage(f"replicate {rep}: original and reference models, every arm")
        rng, val_rng = ctx.rng("forget_split", rep), ctx.rng("val_forget", rep)
        gen = ctx.torch_generator("model_init", rep)
        data = load_split(config.dataset, config.n_train, config.n_val, config.n_test, ctx.rng("data_split", rep))
        x_train, y_train = torch.tensor(data.x_train, device=device), torch.tensor(data.y_train, device=device)
        x_val, y_val = torch.tensor(data.x_val, device=device), torch.tensor(data.y_val, device=device)
        x_test, y_test = torch.tensor(data.x_test, device=device), torch.tensor(data.y_test, device=device)
        keep_val, keep_test = y_val != config.forget_class, y_test != config.forget_class
        original = _train(x_train, y_train, config, gen)

        for rho in config.hardness:
            forget_idx, retain_idx = forget_split(data.y_train, config.forget_class, rho, rng=rng)
            mia_idx = torch.tensor(matched_test_indices(data.y_test, data.y_train[forget_idx], rng), device=device)
            f_idx, r_idx = torch.tensor(forget_idx, device=device), torch.tensor(retain_idx, device=device)
            kept_idx = r_idx[y_train[r_idx] == config.forget_class]  # the forget class's retained members
            val_idx = torch.tensor(matched_test_indices(data.y_val, data.y_train[forget_idx], val_rng), device=device)
            reference = _train(x_train[r_idx], y_train[r_idx], config, gen)
            with torch.no_grad():
                reference_log_probs = F.log_softmax(reference(x_train[r_idx]), dim=1)
            problem = Problem(retain=(x_train[r_idx], y_train[r_idx]), forget=(x_train[f_idx], y_train[f_idx]),
                              retain_val=(x_val[keep_val], y_val[keep_val]),
                              retain_test=(x_test[keep_test], y_test[keep_test]),
                              mia_test=(x_test[mia_idx], y_test[mia_idx]),
                              reference_forget_acc=0.0, reference_retain_acc=0.0, reference_auc=0.0,
                              original_forget_acc=0.0, retained_class=(x_train[kept_idx], y_train[kept_idx]),
                              reference_retain_log_probs=reference_log_probs, val_forget=(x_val[val_idx], y_val[val_idx]))
            with torch.no_grad():
                ref_eval, orig_eval = evaluate(reference, problem), evaluate(original, problem)
            problem.reference_forget_acc = ref_eval["forget_acc"]
            problem.reference_retain_acc = ref_eval["retain_acc"]
            problem.reference_auc = loss_threshold_mia_auc(ref_eval["forget_losses"], ref_eval["test_losses"])
            problem.original_forget_acc = orig_eval["forget_acc"]
            out = per_rho[rho]
            out.reference_acc.append(problem.reference_retain_acc)
            out.reference_forget.append(problem.reference_forget_acc)
            out.original_forget.append(problem.original_forget_acc)
            out.original_acc.append(orig_eval["retain_acc"])
            out.original_kept.append(orig_eval["retained_class_acc"])
            out.reference_kept.append(ref_eval["retained_class_acc"])
            low = problem.reference_forget_acc - config.match_window
            high = problem.original_forget_acc

            hamu_runs: list[tuple[float, list[dict[str, Any]]]] = []
            for arm in _arms_at(arms, rho, config):
                points: list[dict[str, Any]] = []
                for lr in _lrs(arm, config):
                    model = copy.deepcopy(original).train()
                    start = time.perf_counter()
                    history = unlearn(model, [problem.retain], [problem.forget], steps=config.steps, lr=lr,
                                      max_grad_norm=config.max_grad_norm,
                                      eval_fn=lambda m: evaluate(m, problem), eval_every=config.eval_every,
                                      progress=False, **arm_options(arm, config))
                    seconds[arm] += time.perf_counter() - start
                    steps_done[arm] += history.steps_run
                    points += [e for e in history.evaluations if e["step"] > 0]
                    if arm == "hamu_q_layerwise":
                        hamu_runs.append((lr, [e for e in history.evaluations if e["step"] > 0]))
                        logs = history.hamu_logs
                        out.cos0.append(logs[0].cosine)
                        out.kappa0.append(logs[0].hardness)
                        out.first_stop.append(next((i for i, info in enumerate(logs) if info.stop), config.steps))
                        out.traj.setdefault(lr, []).append(StepTrace([info.hardness for info in logs],
                                                                     [info.cosine for info in logs],
                                                                     [float(info.stop) for info in logs]))
                    bar.update(1)
                forget_acc = [p["forget_acc"] for p in points]
                chosen = matched_point(forget_acc, [p["retain_val_acc"] for p in points],
                                       reference_forget=problem.reference_forget_acc,
                                       original_forget=problem.original_forget_acc, window=config.match_window)
                best = points[chosen.index]
                auc = loss_threshold_mia_auc(best["forget_losses"], best["test_losses"])
                select = [p["retain_val_acc"] for p in points]
                front = pareto_front(forget_acc, select, GRID, report=[p["retain_acc"] for p in points])
                kept_front = pareto_front(forget_acc, select, GRID, report=[p["retained_class_acc"] for p in points])
                out.matched[arm].append(MatchedRecord(
                    best["retain_acc"], best["forget_acc"], abs(auc - problem.reference_auc), chosen.hit,
                    window_front_mean(GRID, front, low, high), retained_class_acc=best["retained_class_acc"],
                    retain_kl=best["retain_kl"], retained_class_front_mean=window_front_mean(GRID, kept_front, low, high)))
                out.pareto[arm].append(front)
            if rho > 0:  # the decision rules are read at rho > 0 (at rho = 0 the flag never fired in our runs)
                matched = out.matched["hamu_q_layerwise"][-1]
                out.stops.extend(stop_rule(original, problem, config, matched, rep))
                out.target_stops.extend(target_stop(evaluations, lr, problem, config, matched, rep)
                                        for lr, evaluations in hamu_runs)
            if not config.baselines_at or rho in config.baselines_at:
                out.guarantee.append(guarantee_probe(original, problem, config))
    bar.close()
    ms_per_step = {a: round(1e3 * seconds[a] / max(steps_done[a], 1), 3) for a in arms}
    ctx.provenance["ms_per_step"] = ms_per_step
    outcome = _outcome(config, arms, per_rho)
    outcome.notes.append(f"Wall time per unlearning step, evaluation every {config.eval_every} step(s) included (ms): "
                         + ", ".join(f"{a} {v:.2f}" for a, v in ms_per_step.items())
                         + f"; HAMU-Q layer-wise / GradDiff = "
                           f"{ms_per_step['hamu_q_layerwise'] / ms_per_step['graddiff']:.2f}.")
    return outcome


def _train(x: torch.Tensor, y: torch.Tensor, config: Config, generator: torch.Generator) -> nn.Module:
    return train_mlp(x, y, generator, hidden=config.hidden, epochs=config.train_epochs, batch=config.train_batch,
                     lr=config.train_lr)


def _arms_at(arms: list[str], rho: float, config: Config) -> list[str]:
    """The arms run at hardness ``rho`` (HAMU-Q layer-wise always; the others where ``baselines_at`` says)."""
    if not config.baselines_at or rho in config.baselines_at:
        return arms
    return [a for a in arms if a == "hamu_q_layerwise"]


def _lrs(arm: str, config: Config) -> tuple[float, ...]:
    return config.hamu_lrs if arm in HAMU_ARMS else config.baseline_lrs


def _tag(rho: float) -> str:
    return f"rho{rho:g}"


def _interval(values: tuple[float, float, float]) -> str:
    mean, low, high = values
    return f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]"


def _outcome(config: Config, arms: list[str], per_rho: dict[float, RhoResult]) -> Outcome:
    metrics: dict[str, dict[str, float]] = {}
    for arm in arms:
        values: dict[str, float] = {}
        for field, key in (("retain_acc", "retain"), ("forget_acc", "forget"), ("mia_gap", "mia_gap"),
                           ("front_mean", "front"), ("hit", "hit"), ("retained_class_acc", "retained_class"),
                           ("retain_kl", "retain_kl"), ("retained_class_front_mean", "retained_class_front")):
            for rho, out in per_rho.items():
                mean = float(np.mean([getattr(m, field) for m in out.matched[arm]])) if out.matched[arm] else math.nan
                if math.isfinite(mean):  # NaN: nothing to measure (at rho = 0 no forget-class member is retained)
                    values[f"{key}@{_tag(rho)}"] = mean
        metrics[arm] = values
    metrics["retrain_reference"] = {
        **{f"retain@{_tag(rho)}": float(np.mean(out.reference_acc)) for rho, out in per_rho.items()},
        **{f"forget@{_tag(rho)}": float(np.mean(out.reference_forget)) for rho, out in per_rho.items()},
    }
    metrics["original"] = {
        **{f"retain@{_tag(rho)}": float(np.mean(out.original_acc)) for rho, out in per_rho.items()},
        **{f"forget@{_tag(rho)}": float(np.mean(out.original_forget)) for rho, out in per_rho.items()},
    }
    stops = [s for rho, out in per_rho.items() if rho > 0 for s in out.stops]
    with_stops = {rho: out for rho, out in per_rho.items() if out.stops}
    metrics["hamu_q_stop_rule"] = {
        **{f"stop_step@{_tag(rho)}": float(np.mean([s.step for s in out.stops])) for rho, out in with_stops.items()},
        **{f"cost_points@{_tag(rho)}": float(np.mean([s.cost_points for s in out.stops]))
           for rho, out in with_stops.items()},
        **{f"forgot@{_tag(rho)}": float(np.mean([s.forgot for s in out.stops])) for rho, out in with_stops.items()},
    }
    metrics["hamu_q_target_stop"] = {
        f"{name}@{_tag(rho)}": float(np.mean([getattr(s, field) for s in out.target_stops]))
        for rho, out in per_rho.items() if out.target_stops
        for name, field in (("stop_step", "step"), ("cost_points", "cost_points"), ("forgot", "forgot"))}
    target_stops = [s for out in per_rho.values() for s in out.target_stops]

    notes = []
    n_rep = config.replicates
    # one value per replicate (forget-set draw: REPLICATION in claims.py) for every check
    probed = [out for out in per_rho.values() if out.guarantee]
    shares = [guarantee_share(np.concatenate([out.guarantee[i] for out in probed]), 0.9) for i in range(n_rep)]
    checks = [CHECKS["guarantee"].measure(float(np.nanmean(shares)), units=shares,
                                          note=f"lr {config.guarantee_lr:g}; pooled steps "
                                               f"{guarantee_share(np.concatenate([r for o in probed for r in o.guarantee])):.4f}")]
    if 0.5 in per_rho:
        out = per_rho[0.5]

        def field(arm: str, name: str) -> list[float]:
            return [getattr(m, name) for m in out.matched[arm]]

        hamu = field("hamu_q_layerwise", "retain_acc")
        baselines = [a for a in arms if a not in HAMU_ARMS and out.matched[a]]
        # the best baseline by mean front height, chosen after the fact (in the baselines' favour)
        best = max(baselines, key=lambda a: np.mean(field(a, "front_mean")))
        gap = paired_interval(out.original_forget, out.reference_forget)
        margin_gd = paired_interval(hamu, field("graddiff", "retain_acc"))
        margin_ng = paired_interval(hamu, field("neggrad_plus", "retain_acc"))
        front = paired_interval(field("hamu_q_layerwise", "front_mean"), field(best, "front_mean"))
        headline = {"testbed_gap": gap, "margin_graddiff": margin_gd, "margin_neggrad_plus": margin_ng,
                    f"front_margin_{best}": front}
        for arm in baselines:
            headline[f"margin_{arm}"] = paired_interval(hamu, field(arm, "retain_acc"))
            headline[f"ceiling_vs_{arm}"] = paired_interval(out.reference_acc, field(arm, "retain_acc"))
        metrics["headline@rho0.5"] = {f"{name}_{part}": v for name, triple in headline.items()
                                      for part, v in zip(("mean", "ci_low", "ci_high"), triple)}
        ci = f"paired 95% t interval over {n_rep} replicates"

        def units(a: list[float], b: list[float]) -> list[float]:
            # one value per replicate (an independent draw: REPLICATION in claims.py), in points
            return (100.0 * (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))).tolist()

        kept = paired_interval(hamu_kept := field("hamu_q_layerwise", "retained_class_acc"),
                               field("graddiff", "retained_class_acc"))
        kept_ng = paired_interval(hamu_kept, field("neggrad_plus", "retained_class_acc"))
        best_kept = max(baselines, key=lambda a: np.mean(field(a, "retained_class_front_mean")))
        kept_front = paired_interval(field("hamu_q_layerwise", "retained_class_front_mean"),
                                     field(best_kept, "retained_class_front_mean"))
        kl = paired_interval(field("graddiff", "retain_kl"), field("hamu_q_layerwise", "retain_kl"), scale=1.0)
        checks += [
            CHECKS["retained_class_margin"].measure(
                kept[0], units=units(hamu_kept, field("graddiff", "retained_class_acc")),
                note=f"{_interval(kept)} points ({ci}); matched accuracy on the retained class-{config.forget_class} "
                     f"members: HAMU-Q {np.mean(hamu_kept):.3f}, GradDiff "
                     f"{np.mean(field('graddiff', 'retained_class_acc')):.3f}"),
            CHECKS["retained_class_margin_neggrad"].measure(
                kept_ng[0], units=units(hamu_kept, field("neggrad_plus", "retained_class_acc")),
                note=f"{_interval(kept_ng)} points ({ci})"),
            CHECKS["retained_class_front_margin"].measure(
                kept_front[0], units=units(field("hamu_q_layerwise", "retained_class_front_mean"),
                                           field(best_kept, "retained_class_front_mean")),
                note=f"best baseline by that front {best_kept}; {_interval(kept_front)} points ({ci})"),
            CHECKS["retain_kl_margin"].measure(
                kl[0], units=(np.asarray(field("graddiff", "retain_kl")) - field("hamu_q_layerwise", "retain_kl")).tolist(),
                note=f"{kl[0]:+.4f} [{kl[1]:+.4f}, {kl[2]:+.4f}] nats ({ci}); HAMU-Q "
                     f"{np.mean(field('hamu_q_layerwise', 'retain_kl')):.4f}, GradDiff "
                     f"{np.mean(field('graddiff', 'retain_kl')):.4f}"),
            CHECKS["testbed_gap"].measure(gap[0], units=units(out.original_forget, out.reference_forget),
                                          note=f"{_interval(gap)} points ({ci}); original "
                                               f"{np.mean(out.original_forget):.3f}, reference "
                                               f"{np.mean(out.reference_forget):.3f}"),
            CHECKS["matched_margin"].measure(margin_gd[0], units=units(hamu, field("graddiff", "retain_acc")),
                                             note=f"{_interval(margin_gd)} points ({ci})"),
            CHECKS["matched_margin_neggrad"].measure(margin_ng[0], units=units(hamu, field("neggrad_plus", "retain_acc")),
                                                     note=f"{_interval(margin_ng)} points ({ci})"),
            CHECKS["front_margin_best_baseline"].measure(
                front[0], units=units(field("hamu_q_layerwise", "front_mean"), field(best, "front_mean")),
                note=f"best baseline {best}; {_interval(front)} points ({ci})"),
        ]
        notes.append(f"rho=0.5, {ci} (points): HAMU-Q matched retain-test acc minus each baseline's: "
                     + ", ".join(f"{a} {_interval(headline[f'margin_{a}'])}" for a in baselines)
                     + ". Ceiling (retrained reference's retain-test acc minus the baseline's matched one): "
                     + ", ".join(f"{a} {_interval(headline[f'ceiling_vs_{a}'])}" for a in ("graddiff", "neggrad_plus"))
                     + (": a margin of 2 points needs HAMU-Q to beat retraining by about that much, since no "
                        "arm loses retain accuracy at matched forgetting on this testbed."
                        # said only when every arm's matched retain accuracy is within 2 points of the original's
                        if all(np.mean(out.original_acc) - np.mean(field(a, "retain_acc")) < 0.02 for a in arms
                               if out.matched[a]) else "."))
        notes.append("rho=0.5: mean height of the validation-selected Pareto front over [reference forget - window, "
                     "original forget] (points): "
                     + ", ".join(f"{a} {100 * np.mean(field(a, 'front_mean')):.2f}" for a in arms if out.matched[a])
                     + f"; best baseline {best}; HAMU-Q minus it {_interval(front)}.")
        notes.append(f"rho=0.5, harm where it lives (the retain-test metric excludes class {config.forget_class}; "
                     "half of its training samples stay in the retain set): accuracy on those retained "
                     f"members: original {np.nanmean(out.original_kept):.3f}, reference "
                     f"{np.nanmean(out.reference_kept):.3f}"
                     + "; at matched forget accuracy (retained-class accuracy, KL(reference || model) on the retain "
                       "set in nats): " + ", ".join(
                         f"{a} {np.mean(field(a, 'retained_class_acc')):.3f}, {np.mean(field(a, 'retain_kl')):.4f}"
                         for a in arms if out.matched[a])
                     + "; mean height of the retained-class front (points): " + ", ".join(
                         f"{a} {100 * np.mean(field(a, 'retained_class_front_mean')):.2f}" for a in arms if out.matched[a])
                     + ".")
    else:
        notes.append("hardness has no 0.5: the matched-accuracy checks were not run.")
    rhos = list(per_rho)
    cos_medians = [float(np.median(per_rho[r].cos0)) for r in rhos]
    first_stops = [float(np.mean(per_rho[r].first_stop)) for r in rhos]
    if len(rhos) >= 2:
        # per draw: the median over lrs of its step-0 cosine, the mean over lrs of its first stop, per rho
        n_lr = len(config.hamu_lrs)
        cos_units = [smallest_increase([np.median(per_rho[r].cos0[i * n_lr:(i + 1) * n_lr]) for r in rhos])
                     for i in range(n_rep)]
        stop_units = [smallest_decrease([np.mean(per_rho[r].first_stop[i * n_lr:(i + 1) * n_lr]) for r in rhos])
                      for i in range(n_rep)]
        checks.append(CHECKS["cos_grows"].measure(float(np.mean(cos_units)), units=cos_units,
                                                  note=f"of the pooled medians {smallest_increase(cos_medians):+.3f}"))
        checks.append(CHECKS["stop_earlier"].measure(float(np.mean(stop_units)), units=stop_units,
                                                     note=f"of the pooled means {smallest_decrease(first_stops):+.2f}"))

    def per_draw(records: list, cost: Any) -> list[float]:
        return [share_at_most([cost(s) for s in records if s.replicate == i], config.stop_cost_points)
                for i in range(n_rep)]

    useful = lambda s: s.cost_points if s.forgot else math.inf  # noqa: E731  (a stop short of the window costs too much)
    if stops:
        cost_units, useful_units = per_draw(stops, lambda s: s.cost_points), per_draw(stops, useful)
        checks.append(CHECKS["stop_rule_cost"].measure(
            float(np.nanmean(cost_units)), units=cost_units,
            note=f"{len(stops)} runs (rho > 0, every HAMU lr, {n_rep} replicates)"))
        checks.append(CHECKS["stop_rule_useful"].measure(
            float(np.nanmean(useful_units)), units=useful_units,
            note=f"{len(stops)} runs; share that forgot to the window at all: {np.mean([s.forgot for s in stops]):.2f}; "
                 f"mean stop step {np.mean([s.step for s in stops]):.1f} of {config.steps}"
                 + ("; the flag fires before the forget set is forgotten" if np.mean([s.forgot for s in stops]) < 0.5
                    else "")))
    if target_stops:
        target_units = per_draw(target_stops, useful)
        checks.append(CHECKS["target_stop_useful"].measure(
            float(np.nanmean(target_units)), units=target_units,
            note=f"{len(target_stops)} runs; forgot to the window {np.mean([s.forgot for s in target_stops]):.2f}, "
                 f"within {config.stop_cost_points:g} point {np.mean([s.cost_points <= config.stop_cost_points for s in target_stops]):.2f}, "
                 f"mean stop step {np.mean([s.step for s in target_stops]):.1f}"))

    for rho, cos, stop in zip(rhos, cos_medians, first_stops):
        out = per_rho[rho]
        hits = {arm: np.mean([m.hit for m in out.matched[arm]]) for arm in arms if out.matched[arm]}
        missed = [f"{a} ({h:.0%})" for a, h in hits.items() if h < 1.0]
        guarantee = np.concatenate(out.guarantee) if out.guarantee else np.zeros(0)
        notes.append(
            f"rho={rho:g}: original forget acc {np.mean(out.original_forget):.3f}, reference forget acc "
            f"{np.mean(out.reference_forget):.3f}, reference retain-test acc {np.mean(out.reference_acc):.3f}; "
            f"step-0 cos(g_r, g_f) median {cos:.3f}; HAMU-Q first stop at step {stop:.1f} of {config.steps} "
            f"(mean over replicates and lrs; never = {config.steps}); "
            + (f"stop rule: cost {np.mean([s.cost_points for s in out.stops]):.2f} points, forgot to the window in "
               f"{np.mean([s.forgot for s in out.stops]):.0%} of runs; " if out.stops else "")
            + "guarantee ratio min "
            f"{np.min(guarantee) if guarantee.size else math.nan:.3f}"
            + (f"; matched window not reached (share of replicates hit): {', '.join(missed)}" if missed else ""))
    return Outcome(metrics=metrics, checks=checks, curves=_curves(config, arms, per_rho), notes=notes)


def _curves(config: Config, arms: list[str], per_rho: dict[float, RhoResult]) -> dict[str, Any]:
    curves: dict[str, Any] = {}
    for rho, out in per_rho.items():
        curves[f"pareto_{_tag(rho)}"] = Curve(
            x=GRID.tolist(),
            series={arm: np.mean(np.stack(out.pareto[arm]), axis=0).tolist() for arm in arms if out.pareto[arm]},
            xlabel="forget accuracy (at most)", ylabel="retain-test accuracy (selected on validation)",
            title=f"Pareto front, rho = {rho:g}",
            extra={"reference": [float(np.mean(out.reference_forget)), float(np.mean(out.reference_acc))],
                   "original": [float(np.mean(out.original_forget)), float(np.mean(out.original_acc))]},
        )
        steps = list(range(config.steps))
        for name, field, ylabel in (("kappa", "hardness", "kappa = g_r . g_f"), ("cos", "cosine", "cos(g_r, g_f)"),
                                    ("stop", "stop", "share of replicates with stop flag")):
            series = {}
            for lr, trajs in out.traj.items():
                rows = [np.pad(np.asarray(getattr(t, field), dtype=float), (0, config.steps - len(getattr(t, field))),
                               constant_values=np.nan) for t in trajs]
                series[f"lr {lr:g}"] = np.nanmean(np.stack(rows), axis=0).tolist()
            curves[f"hamu_{name}_{_tag(rho)}"] = Curve(x=steps, series=series, xlabel="step",
                                                       ylabel=ylabel, title=f"HAMU-Q layer-wise, rho = {rho:g}")
    return curves
