"""Every defence tuned alike, and its ASR / task-accuracy front (a further run: :mod:`.front_run`).

The headline compares SPARD with the baselines at our default strengths. Here each defence gets one
knob and a grid of one size (:class:`~icml26.papers.spard.config.Config`'s ``front_*`` fields):

* SafeInstr (random data): ``mix_every``; penalty (random data): ``λ``; Lisa (random data): ``ρ``;
* SPAG + random and SPARD (SPAG + DPP): ``τ = factor ×`` the base model's own safety loss.

Steps:

1. **Development replicates** (``dev_replicates``; every stream at index ``DEV_OFFSET + d``, so their
   split, attack, pool, initialisation and batch order are never a scored replicate's): SFT and every
   grid point of every arm.
2. **One rule for all** (:func:`~icml26.papers.spard.analysis.matched_score`, through the shared
   tuner): the lowest development ASR among the settings within ``match_points`` task points of SFT's
   development accuracy (else the smallest accuracy loss).
3. **Scored replicates**: every grid point again; the tuned arm's figures are its chosen point's, and
   each arm's grid traces its front. "ASR at matched task accuracy" reads each front at SFT's scored
   accuracy minus ``match_points`` (:func:`~icml26.papers.spard.analysis.asr_at_accuracy`): the same
   reading for every arm, made on the scored replicates (a description of what each knob can reach,
   not a selection).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from icml26.contract import ArmSpec, Curve, RunContext
from icml26.papers.spard.analysis import asr_at_accuracy, matched_score, pareto_front, ratio_to_best
from icml26.papers.spard.config import Config
from icml26.papers.spard.digits import ArmResult, Prepared, finetune_arm, prepare_replicate

__all__ = ["DEV_OFFSET", "FRONT_ARMS", "FrontArm", "TunedFront", "front_grid", "front_metrics", "run_front",
           "scored_front", "tuned_arm_specs"]

DEV_OFFSET = 1000
"""Development replicate ``d`` draws every stream at index ``DEV_OFFSET + d`` (scored: ``0 … replicates−1``)."""


@dataclasses.dataclass(frozen=True)
class FrontArm:
    """One tuned defence: its arm id (``claims.py``), method, knob, config grid field and safety subset."""

    label: str
    arm_id: str
    kind: str
    knob: str
    grid_field: str
    subset: str


FRONT_ARMS: tuple[FrontArm, ...] = (
    FrontArm("SPARD", "spard_tuned", "SPAG", "tau_factor", "front_tau_factor", "DPP"),
    FrontArm("SafeInstr (random data)", "safeinstr_tuned", "SafeInstr", "mix_every", "front_mix_every", "random"),
    FrontArm("penalty (random data)", "penalty_tuned", "penalty", "lam", "front_lam", "random"),
    FrontArm("Lisa (random data)", "lisa_tuned", "Lisa", "rho", "front_rho", "random"),
    FrontArm("SPAG+random", "spag_random_tuned", "SPAG", "tau_factor", "front_tau_factor", "random"),
)
"""The tuned arms, SPARD first; the baselines of the headline ratio are the three ``(random data)`` ones."""
BASELINE_LABELS = ("SafeInstr (random data)", "penalty (random data)", "Lisa (random data)")


def front_grid(cfg: Config, arm: FrontArm) -> tuple:
    """The arm's grid of its knob (the config field ``arm.grid_field``)."""
    return tuple(getattr(cfg, arm.grid_field))


def _kwargs(cfg: Config, arm: FrontArm, value: Any) -> dict[str, Any]:
    if arm.kind == "SPAG":
        return {"tau_factor": float(value), "tau_floor": 0.0}
    if arm.kind == "Lisa":
        return {"rho": float(value), "task_phase": cfg.lisa_phase, "safety_phase": cfg.lisa_phase}
    if arm.kind == "penalty":
        return {"lam": float(value)}
    return {"mix_every": int(value)}


def _grid_results(cfg: Config, ctx: RunContext, prepared: Prepared) -> tuple[ArmResult, dict]:
    """SFT and every (arm, grid value) on one prepared replicate at the headline ``p``."""
    p = cfg.headline_ratio
    sft = finetune_arm("SFT", prepared, None, cfg, ctx)
    out: dict[tuple[str, Any], ArmResult] = {}
    for arm in FRONT_ARMS:
        order = prepared.selections[(arm.subset, p)].order
        for value in front_grid(cfg, arm):
            out[(arm.label, value)] = finetune_arm(arm.kind, prepared, order, cfg, ctx, **_kwargs(cfg, arm, value))
    return sft, out


def tuned_arm_specs(cfg: Config, declared: dict[str, ArmSpec]) -> dict[str, ArmSpec]:
    """Each tuned arm's spec with the config's grid as its space and the whole grid as its trials.

    The declared spec (``claims.py`` ARMS) is used when it exists, its space replaced by the config's
    grid; otherwise one is built here with the same budget for every arm."""
    specs = {}
    for arm in FRONT_ARMS:
        grid = front_grid(cfg, arm)
        space = {arm.knob: grid}
        if arm.arm_id in declared:
            specs[arm.label] = dataclasses.replace(declared[arm.arm_id], space=space, trials=len(grid))
        else:
            role = "method" if arm.label == "SPARD" else "control" if arm.kind == "SPAG" else "baseline"
            specs[arm.label] = ArmSpec(arm.arm_id, role, space=space, trials=len(grid),
                                       select_on=f"{cfg.dev_replicates} development replicate(s)")
    return specs


@dataclasses.dataclass
class TunedFront:
    """The tuning's record and the scored front.

    Attributes:
        chosen: arm label -> chosen knob value.
        dev: arm label -> grid value -> ``(ASR, task accuracy)`` means over the development replicates.
        dev_sft_acc: SFT's mean development task accuracy (the tuning rule's reference).
        scored: arm label -> grid value -> scored replicates' ArmResults.
        scored_sft: SFT's scored ArmResults (one per scored replicate).
        records: arm label -> the shared tuner's record (trials, scores, choice).
    """

    chosen: dict[str, Any]
    dev: dict[str, dict[Any, tuple[float, float]]]
    dev_sft_acc: float
    scored: dict[str, dict[Any, list[ArmResult]]] = dataclasses.field(default_factory=dict)
    scored_sft: list[ArmResult] = dataclasses.field(default_factory=list)
    records: dict[str, dict] = dataclasses.field(default_factory=dict)


def run_front(cfg: Config, ctx: RunContext, declared: dict[str, ArmSpec]) -> TunedFront:
    """Steps 1–2: every grid point on the development replicates, then one choice per arm by
    :func:`matched_score` through the shared tuner (``ctx.tune`` when ``claims.py`` declares the arm,
    else :func:`icml26.tuning.tune` with the stream ``tune:front``, its record kept in
    :attr:`TunedFront.records`)."""
    from icml26.tuning import tune

    if cfg.replicates > DEV_OFFSET:
        raise ValueError(f"replicates={cfg.replicates} must be at most {DEV_OFFSET}: development replicates "
                         f"draw their streams from index {DEV_OFFSET} on")
    sfts, grids = [], []
    for d in range(cfg.dev_replicates):
        ctx.stage(f"front: development replicate {d}")
        sft, grid = _grid_results(cfg, ctx, prepare_replicate(cfg, ctx, DEV_OFFSET + d))
        sfts.append(sft)
        grids.append(grid)
    dev_sft = float(np.mean([s.task_acc for s in sfts]))
    dev = {arm.label: {v: (float(np.mean([g[(arm.label, v)].asr for g in grids])),
                           float(np.mean([g[(arm.label, v)].task_acc for g in grids])))
                       for v in front_grid(cfg, arm)} for arm in FRONT_ARMS}
    front = TunedFront(chosen={}, dev=dev, dev_sft_acc=dev_sft)
    for i, arm in enumerate(FRONT_ARMS):
        spec = tuned_arm_specs(cfg, declared)[arm.label]

        def objective(params: dict, label: str = arm.label, knob: str = arm.knob) -> float:
            asr, acc = dev[label][params[knob]]
            return matched_score(asr, acc, dev_sft, cfg.match_points)

        if arm.arm_id in declared:
            front.chosen[arm.label] = ctx.tune(spec, objective, maximize=False)[arm.knob]
        else:
            # every grid point is a trial, so the tuner draws nothing from this stream
            record = tune(spec, objective, maximize=False, rng=ctx.rng("tune:front", i))
            front.records[arm.label] = record
            front.chosen[arm.label] = record["chosen"][arm.knob]
    return front


def scored_front(front: TunedFront, cfg: Config, ctx: RunContext, prepared: Prepared) -> None:
    """Step 3 on one scored replicate: SFT and every grid point, appended to ``front``."""
    sft, grid = _grid_results(cfg, ctx, prepared)
    front.scored_sft.append(sft)
    for (label, value), result in grid.items():
        front.scored.setdefault(label, {}).setdefault(value, []).append(result)


def _mean(results: list[ArmResult], field: str) -> float:
    return float(np.mean([getattr(r, field) for r in results]))


def front_metrics(front: TunedFront, cfg: Config) -> tuple[dict[str, dict[str, float]], dict[str, Curve], list[str]]:
    """Metric rows, the front's curves and notes from the scored replicates.

    Rows: ``tuned <arm>`` (scored ASR and task accuracy at the chosen value, the value, its development
    figures), ``front <arm> <knob>=<v>`` (every grid point, scored and development) and ``front summary`` (the matched target,
    each arm's ASR there, SPARD's ratios to the best baseline, tuned and matched)."""
    if not front.scored_sft:
        raise ValueError("front has no scored replicate; call scored_front first")
    metrics: dict[str, dict[str, float]] = {}
    sft_acc = _mean(front.scored_sft, "task_acc")
    target = sft_acc - cfg.match_points / 100.0
    summary: dict[str, float] = {"sft_task_acc": sft_acc, "matched_task_acc": target,
                                 "dev_sft_task_acc": front.dev_sft_acc}
    asr_curve, acc_curve, values, matched = {}, {}, {}, {}
    for arm in FRONT_ARMS:
        grid = front_grid(cfg, arm)
        chosen = front.chosen[arm.label]
        rows = front.scored[arm.label]
        dev_asr, dev_acc = front.dev[arm.label][chosen]
        metrics[f"tuned {arm.label}"] = {
            "asr": _mean(rows[chosen], "asr"), "task_acc": _mean(rows[chosen], "task_acc"),
            arm.knob: float(chosen), "dev_asr": dev_asr, "dev_task_acc": dev_acc}
        asr = [_mean(rows[v], "asr") for v in grid]
        acc = [_mean(rows[v], "task_acc") for v in grid]
        for v, a, t in zip(grid, asr, acc):
            dev_a, dev_t = front.dev[arm.label][v]
            metrics[f"front {arm.label} {arm.knob}={v:g}"] = {"asr": a, "task_acc": t, "dev_asr": dev_a,
                                                               "dev_task_acc": dev_t}
        matched[arm.label] = asr_at_accuracy(acc, asr, target)
        summary[f"front_points {arm.label}"] = float(len(pareto_front(acc, asr)))
        asr_curve[arm.label], acc_curve[arm.label], values[arm.label] = asr, acc, [float(v) for v in grid]
    tuned_base = {b: metrics[f"tuned {b}"]["asr"] for b in BASELINE_LABELS}
    ratio_tuned, best_tuned = ratio_to_best(metrics["tuned SPARD"]["asr"], tuned_base)
    # a baseline whose front never reaches the matched accuracy offers no model there: left out of the best
    matched_base = {b: matched[b] for b in BASELINE_LABELS if math.isfinite(matched[b])}
    if matched_base and math.isfinite(matched["SPARD"]):
        ratio_matched, best_matched = ratio_to_best(matched["SPARD"], matched_base)
    else:
        ratio_matched, best_matched = float("nan"), "none"
    # result metrics must be finite: an undefined reading is left out of the row (the notes say why)
    summary.update({f"matched_asr {a}": v for a, v in matched.items() if math.isfinite(v)})
    summary.update({k: v for k, v in (("spard_vs_best_tuned_baseline", ratio_tuned),
                                      ("spard_vs_best_baseline_matched", ratio_matched)) if math.isfinite(v)})
    metrics["front summary"] = summary
    x = list(range(1, len(front_grid(cfg, FRONT_ARMS[0])) + 1))
    extra = {"values": values, "knobs": {a.label: a.knob for a in FRONT_ARMS}, "matched_task_acc": target,
             "sft_task_acc": sft_acc}
    curves = {
        "front_asr": Curve(x=x, series=asr_curve, xlabel="grid position (weakest first)", ylabel="attack success rate",
                           title="spard: ASR over each defence's grid", extra=extra),
        "front_task_acc": Curve(x=x, series=acc_curve, xlabel="grid position (weakest first)",
                                ylabel="task accuracy", title="spard: task accuracy over each defence's grid",
                                extra=extra),
    }
    notes = [
        "tuned front grids: " + "; ".join(f"{a.label} {a.knob} in {values[a.label]}" for a in FRONT_ARMS) + ".",
        f"tuned front: each defence's knob over {len(x)} values, chosen on {cfg.dev_replicates} development "
        f"replicate(s) as the lowest ASR within {cfg.match_points:g} task points of SFT's development accuracy "
        "(same rule, same budget for all): " + "; ".join(
            f"{a.label} {a.knob}={front.chosen[a.label]:g} -> ASR {metrics[f'tuned {a.label}']['asr']:.3f}, task "
            f"{metrics[f'tuned {a.label}']['task_acc']:.3f}" for a in FRONT_ARMS)
        + f"; SPARD / best tuned baseline ({best_tuned}) {ratio_tuned:.3f} (nan: that baseline's ASR is 0).",
        f"ASR at matched task accuracy (>= SFT's {sft_acc:.3f} - {cfg.match_points:g} points, read off each front on "
        "the scored replicates; nan: no setting keeps that accuracy): "
        + "; ".join(f"{a.label} {matched[a.label]:.3f}" for a in FRONT_ARMS)
        + f"; SPARD / best baseline ({best_matched}) {ratio_matched:.3f}.",
    ]
    return metrics, curves, notes
