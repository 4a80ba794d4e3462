"""Reproduction of VimRAG's two mechanisms at CPU scale (numpy/torch, no MLLM).

(A) **Budget.** Multi-hop digit questions over random memory graphs (:mod:`.digits_task`): a
fixed logistic-regression reader answers from the items at the resolution each allocator buys
them, for budgets of 20–100 % of the full cost, ``episodes`` episodes each; uniform, recency
(history truncation), priority-only and graph-modulated allocation (plus two ablations and the
pivotal-aware oracle, the ceiling). A control repeats the 40 % budget on graphs whose structure
carries no information (``unstructured``); two sweeps at 40 % report the graph-modulated gain over
priority-only and uniform as the relevance noise grows and as the structure becomes informative.

(B) **Credit assignment.** GGPO against outcome-only GRPO on the two-hop search task
(:mod:`.search_task`), ``replicates`` replicates inside one run at each learning rate of the grid (every
arm sees the same question stream per replicate): the area under the success curve averaged over the
grid, GGPO both as described (masked terms dropped) and renormalised over its kept steps; at ``lr``,
iterations to 80 % success and redundant searches at the end.

With ``redundant_penalty > 0`` (the long-episode further run, :mod:`.long_run`) the reward carries a
penalty per redundant search, and two further checks read the penalised return and the redundant searches
over the whole run and grid; with ``run_budget=False`` (A) is skipped and only (B)'s checks are measured.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

import numpy as np

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.vimrag.analysis import (
    IterationRatio,
    area_gain,
    iterations_to_reach,
    median_ratio,
    points_gap,
    spread_points,
    tail_mean,
)
from icml26.papers.vimrag.claims import CHECKS
from icml26.papers.vimrag.config import Config
from icml26.papers.vimrag.figures import plot
from icml26.papers.vimrag.sections import Budget, Credit, budget, credit
from icml26.papers.vimrag.search_task import TrainCurve

__all__ = ["CHECKS", "Config", "STREAMS", "plot", "run"]

log = logging.getLogger(__name__)

STREAMS: dict[str, str] = {
    "reader": "the digits split and the reader",
    "episodes": "the main episodes",
    "control": "the control episodes",
    "sweep": "the 40 % sweeps' episodes; index = sweep point (noise levels, then structure levels)",
    "search": "the search task; index = replicate, shared by GGPO and GRPO",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

MAIN_POLICIES = ("graph_modulated", "uniform", "recency", "priority_only")
REACH_LEVEL, REACH_WINDOW = 0.8, 10  # 80 % success, over a trailing window of iterations
TAIL = 0.1  # "at the end of training": the last 10 % of iterations


def run(config: Config, ctx: RunContext) -> Outcome:
    a = budget(config, ctx) if config.run_budget else None  # (A) budget
    b = credit(config, ctx)  # (B) credit assignment
    ctx.provenance["seconds"] = {**({"budget": round(a.seconds, 1)} if a else {}), "credit": round(b.seconds, 1)}
    summary = _summarize(config, a, b)
    metrics = _metrics(config, a, b, summary)
    checks = (_budget_checks(config, a, summary) if a else []) + _credit_checks(config, b, summary)
    return Outcome(metrics=metrics, checks=checks, curves=_curves(config, a, b),
                   notes=_notes(config, a, b, summary, metrics))


@dataclasses.dataclass(frozen=True)
class Summary:
    """The figures the checks and notes read: (A) at 40 % and 100 % (NaN without (A)), (B) per method."""

    i40: int
    i100: int
    gain_uniform: float
    """Graph-modulated minus uniform at 40 % (points)."""
    gain_priority: float
    """Graph-modulated minus priority-only at 40 % (points)."""
    reach: dict[str, list[float]]
    """Method -> iterations to 80 % success per replicate (inf: never)."""
    redundant: dict[str, float]
    """Method -> redundant searches per episode at the end, mean over replicates."""
    ratio: IterationRatio
    """GGPO / GRPO median iterations to 80 %."""
    redundant_ratio: float
    area: dict[str, float]
    """GGPO arm -> its area under the success curve minus GRPO's, over the lr grid and replicates (points)."""
    return_area: float = math.nan
    """GGPO as described minus GRPO, area under the penalised-return curve (points; with a penalty only)."""
    redundant_area: dict[str, float] = dataclasses.field(default_factory=dict)
    """Arm -> redundant searches per episode, mean over every iteration, the lr grid and replicates (with a
    penalty only)."""


def _summarize(config: Config, a: Budget | None, b: Credit) -> Summary:
    i40, i100 = config.budgets.index(0.4), config.budgets.index(1.0)
    gains = (points_gap(a.accuracy["graph_modulated"][i40], a.accuracy["uniform"][i40]),
             points_gap(a.accuracy["graph_modulated"][i40], a.accuracy["priority_only"][i40])) if a else \
        (math.nan, math.nan)
    reach = {m: [iterations_to_reach(c.success, REACH_LEVEL, REACH_WINDOW) for c in b.runs[m]] for m in b.runs}
    redundant = {m: float(np.mean([tail_mean(c.redundant, TAIL) for c in b.runs[m]])) for m in b.runs}
    return Summary(i40=i40, i100=i100, gain_uniform=gains[0], gain_priority=gains[1], reach=reach,
                   redundant=redundant, ratio=median_ratio(reach["ggpo"], reach["grpo"], config.iterations),
                   redundant_ratio=redundant["ggpo"] / redundant["grpo"] if redundant["grpo"] > 0 else math.nan,
                   area={m: _area_gain(b, m) for m in ("ggpo_dropped", "ggpo")},
                   **(dict(return_area=_area_gain(b, "ggpo_dropped", "reward"),
                           redundant_area={m: _grid_mean(b, m, "redundant") for m in b.runs})
                      if config.redundant_penalty > 0 else {}))


def _grid(b: Credit) -> list[tuple[float | None, dict[str, list[TrainCurve]]]]:
    """Every learning rate's runs, the main one (``None``) first."""
    return [(None, b.runs), *b.by_lr]


def _area_gain(b: Credit, method: str, curve: str = "success") -> float:
    """``method`` - GRPO area under the ``curve`` (a :class:`TrainCurve` field: ``"success"`` or the penalised
    ``"reward"``) over every (lr, replicate) pair (points)."""
    pairs = [(getattr(m, curve), getattr(g, curve)) for _, runs in _grid(b)
             for m, g in zip(runs[method], runs["grpo"])]
    return area_gain([p[0] for p in pairs], [p[1] for p in pairs])


def _grid_mean(b: Credit, method: str, curve: str) -> float:
    """The mean of ``method``'s ``curve`` over every iteration, learning rate and replicate (each run weighs
    the same)."""
    return float(np.mean([np.mean(getattr(c, curve)) for _, runs in _grid(b) for c in runs[method]]))


def _lr_metrics(config: Config, curves: list[TrainCurve]) -> tuple[dict[str, float], list[float]]:
    """One method's metrics at an extra learning rate, and its iterations to 80 % per replicate."""
    its = [iterations_to_reach(c.success, REACH_LEVEL, REACH_WINDOW) for c in curves]
    return {"iterations_to_80": float(np.median([min(r, config.iterations + 1) for r in its])),
            "reached_80_share": float(np.mean([math.isfinite(r) for r in its])),
            "final_success": float(np.mean([tail_mean(c.success, TAIL) for c in curves])),
            "redundant_searches_end": float(np.mean([tail_mean(c.redundant, TAIL) for c in curves]))}, its


def _metrics(config: Config, a: Budget | None, b: Credit, s: Summary) -> dict[str, dict[str, float]]:
    metrics: dict[str, dict[str, float]] = {}
    pct = [int(round(100 * x)) for x in config.budgets]
    for p in a.policies if a else []:
        metrics[p] = {f"accuracy_{x}": float(v) for x, v in zip(pct, a.accuracy[p])}
        metrics[p].update({f"critical_density_{x}": float(d) for x, d in zip(pct, a.density[p])})
        if config.control_episodes:
            metrics[p]["control_accuracy_40"] = float(a.control[p])
    for knob, gains in (_sweep_gains(a) if a else {}).items():
        metrics[f"sweep_{knob}"] = {f"gain_vs_{base}_{x:g}": g for base, per in gains.items() for x, g in per.items()}
    for lr, per_method in b.by_lr:
        for method, curves in per_method.items():
            metrics[f"{method}_lr{lr:g}"] = _lr_metrics(config, curves)[0]
    censor = config.iterations + 1
    for m, runs in b.runs.items():
        metrics[m] = {
            "iterations_to_80": float(np.median([min(r, censor) for r in s.reach[m]])),
            "reached_80_share": float(np.mean([math.isfinite(r) for r in s.reach[m]])),
            "final_success": float(np.mean([tail_mean(c.success, TAIL) for c in runs])),
            "redundant_searches_end": s.redundant[m],
            "searches_end": float(np.mean([tail_mean(c.searches, TAIL) for c in runs])),
            "masked_step_share": float(np.mean([np.mean(c.masked_share) for c in runs])),
            "success_area_grid": float(np.mean([100 * np.mean(c.success) for _, r in _grid(b) for c in r[m]])),
        }
        if config.redundant_penalty > 0:  # the penalised run: return, redundancy and episode length over the grid
            head = max(1, math.ceil(TAIL * config.iterations))
            metrics[m].update({
                "return_area_grid": 100 * _grid_mean(b, m, "reward"),
                "redundant_area_grid": s.redundant_area[m],
                "steps_start": float(np.mean([np.mean(c.steps[:head]) for _, r in _grid(b) for c in r[m]])),
                "steps_end": float(np.mean([tail_mean(c.steps, TAIL) for _, r in _grid(b) for c in r[m]])),
                "redundant_start": float(np.mean([np.mean(c.redundant[:head]) for _, r in _grid(b) for c in r[m]])),
            })
    for m, gain in s.area.items():
        metrics[m]["area_gain_vs_grpo"] = gain
    if config.redundant_penalty > 0:
        metrics["ggpo_dropped"]["return_area_gain_vs_grpo"] = s.return_area
    lead = ["graph_modulated", "uniform", "recency", "priority_only", "ggpo_dropped", "ggpo", "grpo"]
    return {k: metrics[k] for k in [p for p in lead if p in metrics] + [p for p in metrics if p not in lead]}


def _sweep_gains(a: Budget) -> dict[str, dict[str, dict[float, float]]]:
    """Knob -> baseline -> level -> graph-modulated minus the baseline at 40 % (points)."""
    return {knob: {base: {x: points_gap(acc["graph_modulated"], acc[base]) for x, acc in levels.items()}
                   for base in ("priority_only", "uniform")}
            for knob, levels in a.sweep.items()}


def _task_words(config: Config) -> str:
    """The (B) task in words for the checks' notes."""
    penalty = f", reward 1[right]·max(0, 1 - {config.redundant_penalty:g}·redundant searches)" \
        if config.redundant_penalty > 0 else ""
    return f"{config.documents} documents, horizon {config.horizon}{penalty}"


def _credit_checks(config: Config, b: Credit, s: Summary) -> list:
    """(B)'s checks; the penalised-return and whole-run redundancy checks only when the reward carries a penalty."""
    ratio = s.ratio
    grid = "/".join(f"{lr:g}" for lr in (config.lr, *config.extra_lrs))
    checks = [
        CHECKS["ggpo_area_gain"].measure(
            s.area["ggpo_dropped"], note=f"lr {grid} x {config.replicates} replicates, {config.iterations} "
            f"iterations, paired by question stream; {_task_words(config)}"),
        CHECKS["ggpo_renorm_area_gain"].measure(
            s.area["ggpo"], note=f"lr {grid} x {config.replicates} replicates"),
        CHECKS["ggpo_iterations_ratio"].measure(
            ratio.ratio, note=f"medians {ratio.method_median:g} vs {ratio.baseline_median:g} iterations; per seed "
            f"GGPO {s.reach['ggpo']}, GRPO {s.reach['grpo']}"
            + (" (GRPO censored at horizon+1: an upper bound)" if ratio.censored else "")),
        CHECKS["ggpo_redundant_ratio"].measure(
            s.redundant_ratio, note=f"{s.redundant['ggpo']:.3f} vs {s.redundant['grpo']:.3f} per episode"),
    ]
    if config.redundant_penalty > 0:
        red = s.redundant_area
        checks += [
            CHECKS["ggpo_return_gain"].measure(
                s.return_area, note=f"lr {grid} x {config.replicates} replicates; {_task_words(config)}"),
            CHECKS["ggpo_redundant_area_ratio"].measure(
                red["ggpo_dropped"] / red["grpo"] if red["grpo"] > 0 else math.nan,
                note=f"{red['ggpo_dropped']:.3f} vs {red['grpo']:.3f} per episode"),
        ]
    return checks


def _budget_checks(config: Config, a: Budget, s: Summary) -> list:
    acc, reader, i40 = a.accuracy, a.reader, s.i40
    gm = acc["graph_modulated"]
    se = 100 * math.sqrt(0.25 / config.episodes)
    return [
        CHECKS["reader_full_resolution"].measure(
            reader.accuracy[8], note=f"4x4 {reader.accuracy[4]:.3f}, 2x2 {reader.accuracy[2]:.3f} "
                                     f"({a.n_test} held-out digits, reader fit on {a.n_train})"),
        CHECKS["gain_vs_uniform_40"].measure(
            s.gain_uniform, note=f"{100 * gm[i40]:.1f} vs {100 * acc['uniform'][i40]:.1f} % ({config.episodes} "
            f"episodes; oracle ceiling {100 * acc['oracle'][i40]:.1f} %; binomial s.e. of one accuracy <= {se:.1f})"),
        CHECKS["gain_vs_priority_40"].measure(
            s.gain_priority, note=f"{100 * gm[i40]:.1f} vs {100 * acc['priority_only'][i40]:.1f} %"),
        CHECKS["spread_at_100"].measure(
            spread_points([acc[p][s.i100] for p in MAIN_POLICIES]),
            note="every positive-energy item gets max_pixels at the full budget, so all read at 8x8"),
    ]


def _curves(config: Config, a: Budget | None, b: Credit) -> dict[str, Any]:
    curves = _budget_curves(config, a) if a else {}
    x = list(range(1, config.iterations + 1))
    shown = [("ggpo_success", "success", "success rate"),
             ("ggpo_redundant", "redundant", "redundant searches / episode")]
    if config.redundant_penalty > 0:
        shown += [("ggpo_return", "reward", "penalised return"), ("ggpo_steps", "steps", "steps / episode")]
    for name, attr, label in shown:
        series, bands = {}, {}
        for m in b.runs:
            ys = np.array([getattr(c, attr) for c in b.runs[m]])
            series[m] = ys.mean(0).tolist()
            bands[m] = (ys.min(0).tolist(), ys.max(0).tolist())
        curves[name] = Curve(x=x, series=series, bands=bands, xlabel="iteration", ylabel=label,
                             title=f"(B) {label} (mean, min-max over {config.replicates} seeds)")
    return curves


def _budget_curves(config: Config, a: Budget) -> dict[str, Any]:
    pct = [int(round(100 * x)) for x in config.budgets]
    curves: dict[str, Any] = {
        "accuracy_vs_budget": Curve(x=pct, series={p: [float(v) for v in a.accuracy[p]] for p in a.policies},
                                    xlabel="budget (% of full cost)", ylabel="answer accuracy",
                                    title="(A) multi-hop digits under a token budget"),
        "critical_density": Curve(x=pct, series={p: [float(v) for v in a.density[p]] for p in a.policies},
                                  xlabel="budget (% of full cost)", ylabel="share of read tokens on pivotal items",
                                  title="(A) critical-observation density"),
    }
    labels = {"noise": "relevance noise (sd of the log-priority)", "structure": "structure (0: control, 1: main)"}
    for knob, gains in _sweep_gains(a).items():
        xs = sorted(next(iter(gains.values())))
        curves[f"gain_vs_{knob}"] = Curve(
            x=xs, series={f"vs {base}": [gains[base][x] for x in xs] for base in gains}, xlabel=labels[knob],
            ylabel="graph-modulated gain at 40 % (points)", title=f"(A) gain vs {knob}")
    return curves


def _notes(config: Config, a: Budget | None, b: Credit, s: Summary, metrics: dict[str, dict[str, float]]) -> list[str]:
    return (_budget_notes(config, a, s) if a else []) + _credit_notes(config, b, s, metrics)


def _budget_notes(config: Config, a: Budget, s: Summary) -> list[str]:
    acc, control, i40 = a.accuracy, a.control, s.i40
    notes = ["(A) at 40 %: " + ", ".join(f"{p} {100 * acc[p][i40]:.1f}" for p in a.policies)
             + f" % ({config.episodes} episodes, {a.seconds:.0f} s). Reader accuracy 8x8/4x4/2x2: "
             + "/".join(f"{a.reader.accuracy[r]:.3f}" for r in (8, 4, 2)) + "."]
    if config.control_episodes:
        c_gap = points_gap(control["graph_modulated"], control["priority_only"])
        notes.append("(A) control, graphs without informative structure (random attachment, random pivotal "
                     f"steps), 40 %: graph-modulated {100 * control['graph_modulated']:.1f}, priority-only "
                     f"{100 * control['priority_only']:.1f}, uniform {100 * control['uniform']:.1f} % "
                     f"({config.control_episodes} episodes); the gain over priority-only is {c_gap:.1f} points "
                     f"there against {s.gain_priority:.1f} on structured graphs.")
    for knob, gains in _sweep_gains(a).items():
        notes.append(f"(A) sweep over {knob} at 40 % ({config.sweep_episodes} episodes per point), graph-modulated "
                     "gain over priority-only / uniform: " + ", ".join(
                         f"{x:g}: {gains['priority_only'][x]:+.1f} / {gains['uniform'][x]:+.1f}"
                         for x in sorted(gains["priority_only"])) + " points.")
    if s.gain_uniform < 10 or s.gain_priority < 3:
        notes.append(f"(A) not reached: graph-modulated - uniform = {s.gain_uniform:.1f} points (bar 10), "
                     f"- priority-only = {s.gain_priority:.1f} points (bar 3) at 40 %.")
    return notes


def _credit_notes(config: Config, b: Credit, s: Summary, metrics: dict[str, dict[str, float]]) -> list[str]:
    notes = []
    if config.redundant_penalty > 0:
        g, r = metrics["ggpo_dropped"], metrics["grpo"]
        notes.append(f"(B) {_task_words(config)}: steps per episode in the first / last 10 % of iterations "
                     f"GGPO {g['steps_start']:.2f} / {g['steps_end']:.2f}, GRPO {r['steps_start']:.2f} / "
                     f"{r['steps_end']:.2f} (redundant searches at the start {g['redundant_start']:.2f} / "
                     f"{r['redundant_start']:.2f}); area under the penalised-return curve minus GRPO's "
                     f"{s.return_area:+.2f} points; redundant searches over the whole run "
                     f"{s.redundant_area['ggpo_dropped']:.3f} vs {s.redundant_area['grpo']:.3f} per episode.")
    for lr, per_method in b.by_lr:
        its = {m: _lr_metrics(config, curves)[1] for m, curves in per_method.items()}
        g, r = metrics[f"ggpo_lr{lr:g}"], metrics[f"grpo_lr{lr:g}"]
        notes.append(f"(B) at lr {lr:g}: iterations to 80 % " + "; ".join(f"{m} {its[m]}" for m in its)
                     + f"; redundant searches {g['redundant_searches_end']:.3f} vs {r['redundant_searches_end']:.3f} "
                     f"({g['redundant_searches_end'] / max(r['redundant_searches_end'], 1e-12):.2f}x).")
    notes.append("(B) area under the success curve minus GRPO's over lr "
                 + ", ".join(f"{lr:g}" for lr in (config.lr, *config.extra_lrs)) + ": GGPO as described (masked "
                 f"terms dropped) {s.area['ggpo_dropped']:+.2f}, renormalised GGPO {s.area['ggpo']:+.2f} points.")
    notes.append(f"(B) {config.replicates} seeds in one run ({b.seconds:.0f} s): iterations to 80 % GGPO "
                 f"{s.reach['ggpo']} vs GRPO {s.reach['grpo']}; redundant searches at the end "
                 f"{s.redundant['ggpo']:.3f} vs {s.redundant['grpo']:.3f}; GGPO masked "
                 f"{100 * metrics['ggpo']['masked_step_share']:.0f} % of the steps.")
    if not (s.ratio.ratio <= 0.75) or not (s.redundant_ratio <= 0.7):
        notes.append(f"(B) not reached: GGPO/GRPO iterations ratio {s.ratio.ratio:.2f} (bar 0.75), redundant-search "
                     f"ratio {s.redundant_ratio:.2f} (bar 0.7).")
    return notes
