"""Reproduction: robustifying a sticky rock-paper-scissors opponent model.

D repeats the opponent's last move with probability ``stay`` (else uniform). The learner
smoothed-best-responds with β = √T; the robustified model D′ falls back to the empirical
frequency once the learner's regret exceeds τ = ``threshold_coef``·√T.

1. Exact conditionals, T ∈ ``horizons``: regret per round against the greedy adversary
   for D, D′ and D′ with its context cut to ``window`` tokens; D′'s regret against every
   adversary against its bound; the trigger rate and the Monte Carlo TV on D's samples.
2. Tiny transformers (T = ``distill.horizon``): one distilled from D, one from D′ on the
   same histories; regret against the greedy adversary and per-position TV to D on D's
   samples. Every model of this section (D, D′ and both students) is also played against the
   searching adversary (:mod:`.search`, the same search budget and stream for each): the
   worst sequence found, which is at least as bad as greedy's, and, on the robust student's
   worst sequences, how far it stays from D′ once D′ has fallen back.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.robust_ntp import (
    Cycling,
    DistillConfig,
    Greedy,
    ImitateThenSwitch,
    MarkovModel,
    RandomTokens,
    Robustified,
    distill,
    per_position_tv,
    play,
    regret_bound,
    rock_paper_scissors_loss,
    running_regret,
    tv_distance_mc,
    training_histories,
    windowed,
)
from icml26.papers.robust_ntp.analysis import markov_conditionals, max_ratio, ratio, regret_per_round, trigger_rate
from icml26.papers.robust_ntp.claims import CHECKS
from icml26.papers.robust_ntp.config import Config
from icml26.papers.robust_ntp.figures import plot
from icml26.papers.robust_ntp.search import post_trigger_tv, search_worst_sequence

__all__ = ["CHECKS", "STREAMS", "Config", "ExactSection", "HorizonResult", "StudentSection", "plot", "run"]

STREAMS: dict[str, str] = {
    "horizon": "every game and sample at the i-th T of horizons; index = i",
    "distill_histories": "the students' training histories",
    "distill_eval": "D's sequences for the students' TV",
    "curve_histories": "the budget curve's histories; index = 10 budget + replicate",
    "search": "the searching adversary's candidates; the same stream for every model searched",
    "natural": "the pretrained LM's natural-text windows and (its first integer) its samples' torch seed",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def _threshold(config: Config, horizon: int) -> float:
    return config.threshold_coef * math.sqrt(horizon)


@dataclasses.dataclass(frozen=True)
class HorizonResult:
    """Exact-conditional results at one horizon T."""

    horizon: int
    raw_regret: float
    """Raw model D, regret per round vs the greedy adversary."""
    robust_regret: float
    """Robustified D′, regret per round vs the greedy adversary."""
    windowed_regret: float
    """D′ with its context cut to ``window`` tokens, regret per round vs greedy."""
    bound_ratio: float
    """max over adversaries of D′'s regret / its bound."""
    trigger_rate: float
    """Share of D's own samples on which D′ falls back."""
    tv_mc: float
    """Monte Carlo TV(D, D′) on D's samples."""


@dataclasses.dataclass(frozen=True)
class ExactSection:
    """Section 1: one :class:`HorizonResult` per T, and the greedy games' regret curves at the largest T."""

    per_horizon: tuple[HorizonResult, ...]
    raw_curve: np.ndarray
    robust_curve: np.ndarray
    trigger: int | None

    def at(self, horizon: int) -> HorizonResult:
        return next(r for r in self.per_horizon if r.horizon == horizon)


@dataclasses.dataclass(frozen=True)
class BudgetPoint:
    """One robust student of the budget curve: its budget, replicate, regret per round vs greedy and TV."""

    sequences: int
    steps: int
    replicate: int
    regret: float
    tv: float


@dataclasses.dataclass(frozen=True)
class StudentSection:
    """Section 2: regret per round vs greedy at the students' T, and the students' TV to D."""

    horizon: int
    raw_regret: float
    teacher_regret: float
    robust_student_regret: float
    raw_student_regret: float
    robust_student_tv: float
    raw_student_tv: float
    curve: tuple[BudgetPoint, ...] = ()
    search: dict[str, float] = dataclasses.field(default_factory=dict)
    """Regret per round of the worst sequence found for each of raw, teacher, robust_student, raw_student,
    and ``post_trigger_tv``: the robust student's per-position TV to D′ after D′'s fallback on the search's
    final elites (NaN when D′ never falls back on them)."""


def _exact_section(config: Config, ctx: RunContext, model: MarkovModel, loss: np.ndarray) -> ExactSection:
    results, curves = [], None
    for i, horizon in enumerate(ctx.progress(config.horizons, desc="horizons")):
        beta = math.sqrt(horizon)
        tau = _threshold(config, horizon)
        robust = Robustified(model, loss, beta, tau)
        rng = ctx.rng("horizon", i)
        raw_game = play(model, Greedy(), horizon, loss, beta, rng)
        robust_game = play(robust, Greedy(), horizon, loss, beta, rng)
        window_game = play(windowed(robust, config.window), Greedy(), horizon, loss, beta, rng)
        if horizon == max(config.horizons):
            curves = (raw_game.regret_curve, robust_game.regret_curve, robust_game.trigger)
        # the bound must hold against every adversary
        bound = regret_bound(horizon, tau, beta, 3)
        others = [Greedy(), Cycling(), RandomTokens(), ImitateThenSwitch(model, horizon // 2)]
        worst = max_ratio([play(robust, adv, horizon, loss, beta, rng).regret for adv in others], bound)
        # trigger rate of D′ on D's own samples (vectorised running regret)
        seqs = model.sample(config.n_model_samples, horizon, rng)
        p = markov_conditionals(model.initial, model.transition, seqs)
        rate = trigger_rate(running_regret(p, seqs, loss, beta), tau)
        tv = tv_distance_mc(model, robust, horizon, config.n_tv_samples, rng)[0]
        results.append(HorizonResult(horizon, regret_per_round(raw_game.regret, horizon),
                                     regret_per_round(robust_game.regret, horizon),
                                     regret_per_round(window_game.regret, horizon), worst, rate, tv))
    return ExactSection(tuple(results), *curves)


def _student_section(config: Config, ctx: RunContext, model: MarkovModel, loss: np.ndarray) -> StudentSection:
    t_d = config.distill_horizon
    beta_d = math.sqrt(t_d)
    teacher = Robustified(model, loss, beta_d, _threshold(config, t_d))
    dcfg = DistillConfig(horizon=t_d, n_sequences=config.distill_sequences, d_model=config.distill_d_model,
                         steps=config.distill_steps)
    histories = training_histories(model, teacher, loss, beta_d, dcfg, ctx.rng("distill_histories"))
    robust_student = distill(teacher, histories, dcfg, seed=ctx.seed, device=ctx.device,
                             show_progress=ctx.show_progress)
    raw_student = distill(model, histories, dcfg, seed=ctx.seed, device=ctx.device, show_progress=ctx.show_progress)
    eval_seqs = model.sample(config.distill_eval_samples, t_d, ctx.rng("distill_eval"))
    raw_t = play(model, Greedy(), t_d, loss, beta_d).regret
    teacher_t = play(teacher, Greedy(), t_d, loss, beta_d).regret
    robust_student_r = regret_per_round(play(robust_student, Greedy(), t_d, loss, beta_d).regret, t_d)
    robust_student_tv = per_position_tv(model, robust_student, eval_seqs)
    raw_student_r = regret_per_round(play(raw_student, Greedy(), t_d, loss, beta_d).regret, t_d)
    raw_student_tv = per_position_tv(model, raw_student, eval_seqs)
    curve = []
    budgets = list(zip(config.curve_sequences, config.curve_steps))
    jobs = [(b, r) for b in range(len(budgets)) for r in range(config.curve_seeds)]
    for b, r in ctx.progress(jobs, desc="budget curve"):
        n_seq, steps = budgets[b]
        cfg = dataclasses.replace(dcfg, n_sequences=n_seq, steps=steps)
        hist = training_histories(model, teacher, loss, beta_d, cfg, ctx.rng("curve_histories", 10 * b + r))
        student = distill(teacher, hist, cfg, seed=1000 * ctx.seed + 10 * b + r + 1, device=ctx.device,
                          show_progress=ctx.show_progress)
        curve.append(BudgetPoint(n_seq, steps, r, regret_per_round(play(student, Greedy(), t_d, loss, beta_d).regret,
                                                                      t_d), per_position_tv(model, student, eval_seqs)))
    search = _search(config, ctx, model, teacher, robust_student, raw_student, loss, t_d, beta_d)
    return StudentSection(t_d, regret_per_round(raw_t, t_d), regret_per_round(teacher_t, t_d),
                          robust_student_r, raw_student_r, robust_student_tv, raw_student_tv, tuple(curve), search)


def _search(config: Config, ctx: RunContext, model, teacher, robust_student, raw_student, loss, horizon: int,
            beta: float) -> dict[str, float]:
    """The searching adversary against each model, same budget and candidates' stream for each."""
    out, elites = {}, None
    for name, target in (("raw", model), ("teacher", teacher), ("robust_student", robust_student),
                         ("raw_student", raw_student)):
        res = search_worst_sequence(target, horizon, loss, beta, ctx.rng("search"),
                                    population=config.search_population, generations=config.search_generations,
                                    n_elite=max(1, config.search_population // 8), seed_model=model)
        out[name] = regret_per_round(res.regret, horizon)
        if name == "robust_student":
            elites = res.elites
    out["post_trigger_tv"] = post_trigger_tv(teacher, robust_student, elites)
    return out


def _natural_section(config: Config, ctx: RunContext) -> dict[str, float]:
    """SmolLM2-135M robustified, on natural text (the standard library's held-out docstrings) and its samples."""
    from icml26.common.corpus import stdlib_corpus
    from icml26.common.pretrained import load_pretrained_lm
    from icml26.papers.robust_ntp.natural import natural_text_study, text_windows, token_classes

    lm = load_pretrained_lm(ctx.device)
    ctx.provenance["pretrained_lm"] = lm.provenance
    vocab = int(lm.model.config.vocab_size)
    classes = token_classes(lm.tokenizer.convert_ids_to_tokens(list(range(vocab))))
    ids = [lm.tokenizer(doc)["input_ids"] for doc in stdlib_corpus().valid]
    rng = ctx.rng("natural")
    windows = text_windows(ids, config.natural_horizon, config.natural_windows, rng)
    return natural_text_study(lm.model, vocab, int(lm.tokenizer.bos_token_id), classes, windows,
                              config.natural_samples, int(rng.integers(2**31)))


def run(config: Config, ctx: RunContext) -> Outcome:
    loss = rock_paper_scissors_loss()
    model = MarkovModel.sticky(3, config.stay)
    ctx.stage("exact section: regret, fallback rate and TV by horizon")
    exact = _exact_section(config, ctx, model, loss)
    ctx.stage("distilled students and the search adversary")
    students = _student_section(config, ctx, model, loss)
    if config.natural_windows:
        ctx.stage("SmolLM2 natural-text study")
    natural = _natural_section(config, ctx) if config.natural_windows else None

    h_max, t_d = max(config.horizons), students.horizon
    per_h = exact.per_horizon
    max_trigger = max(r.trigger_rate for r in per_h)
    max_bound = max(r.bound_ratio for r in per_h)
    metrics: dict[str, dict[str, float]] = {
        "robustified": {f"regret_per_round_T{r.horizon}": r.robust_regret for r in per_h},
        "raw": {f"regret_per_round_T{r.horizon}": r.raw_regret for r in per_h},
        "windowed_robustified": {f"regret_per_round_T{r.horizon}": r.windowed_regret for r in per_h},
    }
    metrics["robustified"].update({
        "max_trigger_rate_on_D": max_trigger,
        f"tv_mc_T{h_max}": exact.at(h_max).tv_mc,
        "max_regret_over_bound": max_bound,
        f"regret_per_round_T{t_d}": students.teacher_regret,
    })
    metrics["raw"][f"regret_per_round_T{t_d}"] = students.raw_regret
    metrics["distilled_robust"] = {f"regret_per_round_T{t_d}": students.robust_student_regret,
                                   "tv_to_D_on_D_samples": students.robust_student_tv}
    metrics["distilled_raw"] = {f"regret_per_round_T{t_d}": students.raw_student_regret,
                                "tv_to_D_on_D_samples": students.raw_student_tv}
    search = students.search
    metrics["raw"][f"search_regret_per_round_T{t_d}"] = search["raw"]
    metrics["robustified"][f"search_regret_per_round_T{t_d}"] = search["teacher"]
    metrics["robustified"][f"search_regret_over_bound_T{t_d}"] = ratio(
        search["teacher"] * t_d, regret_bound(t_d, _threshold(config, t_d), math.sqrt(t_d), loss.shape[0]))
    metrics["distilled_robust"][f"search_regret_per_round_T{t_d}"] = search["robust_student"]
    if math.isfinite(search["post_trigger_tv"]):  # absent when D' falls back on none of the searched sequences
        metrics["distilled_robust"]["post_trigger_tv_to_teacher_on_searched"] = search["post_trigger_tv"]
    metrics["distilled_raw"][f"search_regret_per_round_T{t_d}"] = search["raw_student"]

    notes = []
    if natural is not None:
        metrics["smollm2_natural_text"] = natural
        notes.append(f"SmolLM2-135M robustified at T = {config.natural_horizon} (next-token class game): falls back "
                     f"on {natural['trigger_rate_natural_text']:.3f} of {int(natural['windows'])} natural-text "
                     f"windows (per-position TV {natural['per_position_tv_natural_text']:.4f}) and on "
                     f"{natural['trigger_rate_own_samples']:.3f} of {int(natural['samples'])} of its own samples "
                     f"(Monte Carlo TV {natural['tv_mc_own_samples']:.4f}).")
    if students.curve:
        metrics["budget_curve"] = {}
        for pt in students.curve:
            tag = f"n{pt.sequences}_steps{pt.steps}_r{pt.replicate}"
            metrics["budget_curve"][f"robust_student_regret_{tag}"] = pt.regret
            metrics["budget_curve"][f"robust_over_raw_student_{tag}"] = ratio(pt.regret, students.raw_student_regret)
            metrics["budget_curve"][f"robust_student_tv_{tag}"] = pt.tv
        notes.append("Budget curve (robust students only, each against the main raw student's regret "
                     f"{students.raw_student_regret:.3f}): " + "; ".join(
                         f"{pt.sequences} histories x {pt.steps} steps, replicate {pt.replicate}: ratio "
                         f"{ratio(pt.regret, students.raw_student_regret):.3f} (TV {pt.tv:.4f})"
                         for pt in students.curve) + f"; main student ({config.distill_sequences} x "
                     f"{config.distill_steps}): {ratio(students.robust_student_regret, students.raw_student_regret):.3f}.")

    top = exact.at(h_max)
    checks = [
        CHECKS["raw_regret_half"].measure(top.raw_regret - 0.5, note=f"T = {h_max}"),
        CHECKS["robust_over_raw"].measure(ratio(top.robust_regret, top.raw_regret), note=f"T = {h_max}"),
        CHECKS["trigger_rate"].measure(max_trigger),
        CHECKS["regret_over_bound"].measure(max_bound),
        CHECKS["student_ratio"].measure(ratio(students.robust_student_regret, students.raw_student_regret),
                                        note=f"T = {t_d}"),
        CHECKS["student_tv"].measure(students.robust_student_tv, note=f"T = {t_d}"),
        CHECKS["student_ratio_search"].measure(ratio(search["robust_student"], search["raw_student"]),
                                               note=f"T = {t_d}; greedy: "
                                                    f"{ratio(students.robust_student_regret, students.raw_student_regret):.3f}"),
        CHECKS["teacher_search_over_bound"].measure(metrics["robustified"][f"search_regret_over_bound_T{t_d}"],
                                                    note=f"T = {t_d}"),
    ]
    curve_x = list(range(1, h_max + 1, max(1, h_max // 256)))
    curves = {
        "regret_per_round": Curve(
            x=list(config.horizons),
            series={"raw": [r.raw_regret for r in per_h],
                    "robustified": [r.robust_regret for r in per_h],
                    f"robustified, context {config.window}": [r.windowed_regret for r in per_h]},
            xlabel="horizon T", ylabel="regret per round vs greedy adversary",
            title="Sticky-RPS model: regret per round", logx=True,
        ),
        "regret_curve": Curve(
            x=curve_x,
            series={"raw": [float(exact.raw_curve[t - 1]) for t in curve_x],
                    "robustified": [float(exact.robust_curve[t - 1]) for t in curve_x]},
            xlabel="round t", ylabel="cumulative regret",
            title=f"T={h_max}: greedy adversary (fallback at t={exact.trigger})",
            extra={"trigger": exact.trigger},
        ),
    }
    if students.curve:
        budgets = sorted({(pt.sequences, pt.steps) for pt in students.curve})
        curves["budget_curve"] = Curve(
            x=[steps for _, steps in budgets],
            series={f"replicate {r}": [next((ratio(pt.regret, students.raw_student_regret) for pt in students.curve
                                             if (pt.sequences, pt.steps) == bud and pt.replicate == r), None)
                                       for bud in budgets] for r in range(config.curve_seeds)},
            labels=[f"{n} x {st}" for n, st in budgets],
            xlabel="optimiser steps (histories x steps)", ylabel="robust / raw student regret",
            title=f"distillation budget, T = {t_d}")
    ctx.provenance["tau_rule"] = f"{config.threshold_coef} * sqrt(T)"
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
