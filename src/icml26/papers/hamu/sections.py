"""HAMU reproduction, per-replicate sections: the arms' options, the typed section results, the
stop-flag decision rule and the float64 guarantee probe (split from :mod:`.experiment`)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from .analysis import target_stop_index
from .config import Config
from .problem import Problem, evaluate
from .unlearn import unlearn

__all__ = ["MatchedRecord", "RhoResult", "StepTrace", "StopRecord", "arm_options", "guarantee_probe", "stop_rule",
           "target_stop"]


def arm_options(arm: str, config: Config) -> dict[str, Any]:
    if arm == "hamu_q_layerwise":
        return {"method": "hamu_q", "layerwise": True, "bound": config.bound_ratio}
    if arm == "hamu_q_global":
        return {"method": "hamu_q", "layerwise": False, "bound": config.bound_ratio}
    if arm == "neggrad_plus":
        return {"method": arm, "baseline_kwargs": {"beta": config.neggrad_beta}}
    return {"method": arm}


# ----------------------------------------------------------------------------- section results
@dataclasses.dataclass(frozen=True)
class MatchedRecord:
    """One arm's checkpoint at matched forget accuracy, on one replicate."""

    retain_acc: float
    """Retain accuracy on the test split (the checkpoint was chosen on the validation split)."""
    forget_acc: float
    mia_gap: float
    """|AUC(forget vs test losses) − the retrained reference's AUC|."""
    hit: bool
    """Whether the checkpoint lies inside the matched window."""
    front_mean: float
    """Mean height of the arm's (validation-selected, test-reported) front over the forget accuracy
    range [reference − window, original]."""
    retained_class_acc: float = float("nan")
    """Accuracy on the forget class's retained training members (same checkpoint): the retain harm
    the retain-test metric leaves out (it excludes the forget class)."""
    retain_kl: float = float("nan")
    """Mean KL(reference ‖ model) on the retain set (same checkpoint), in nats."""
    retained_class_front_mean: float = float("nan")
    """Mean height over the same range of the front that reports retained-class accuracy (the
    same validation-selected checkpoints as ``front_mean``)."""


@dataclasses.dataclass(frozen=True)
class StepTrace:
    """HAMU-Q layer-wise per-step κ, cos(g_r, g_f) and stop flags of one run."""

    hardness: list[float]
    cosine: list[float]
    stop: list[float]


@dataclasses.dataclass(frozen=True)
class StopRecord:
    """HAMU-Q layer-wise run with ``stop_on_criterion=True`` at one learning rate."""

    lr: float
    step: int
    """Steps taken before the flag stopped it (``steps`` when it never fired)."""
    retain_acc: float
    forget_acc: float
    cost_points: float
    """100 × (retain-test accuracy of the best in-window checkpoint − the stopped model's)."""
    forgot: bool
    """Whether the stopped model's forget accuracy is at most the matched window's upper end."""
    replicate: int = 0
    """The replicate (forget-set draw) of the run."""


@dataclasses.dataclass
class RhoResult:
    """Everything measured at one hardness ρ, over replicates (lists are per replicate, or per
    replicate and lr)."""

    rho: float
    matched: dict[str, list[MatchedRecord]]
    pareto: dict[str, list[np.ndarray]]
    cos0: list[float] = dataclasses.field(default_factory=list)
    kappa0: list[float] = dataclasses.field(default_factory=list)
    first_stop: list[int] = dataclasses.field(default_factory=list)
    traj: dict[float, list[StepTrace]] = dataclasses.field(default_factory=dict)
    stops: list[StopRecord] = dataclasses.field(default_factory=list)
    target_stops: list[StopRecord] = dataclasses.field(default_factory=list)
    guarantee: list[np.ndarray] = dataclasses.field(default_factory=list)
    reference_acc: list[float] = dataclasses.field(default_factory=list)
    reference_forget: list[float] = dataclasses.field(default_factory=list)
    original_forget: list[float] = dataclasses.field(default_factory=list)
    original_acc: list[float] = dataclasses.field(default_factory=list)
    original_kept: list[float] = dataclasses.field(default_factory=list)
    """Original / reference accuracy on the forget class's retained training members."""
    reference_kept: list[float] = dataclasses.field(default_factory=list)


def stop_rule(original: nn.Module, problem: Problem, config: Config, matched: MatchedRecord,
              replicate: int = 0) -> list[StopRecord]:
    """HAMU-Q layer-wise with ``stop_on_criterion=True`` at every lr, against the best in-window checkpoint."""
    high = min(problem.reference_forget_acc + config.match_window, problem.original_forget_acc - config.match_window)
    records = []
    for lr in config.hamu_lrs:
        model = copy.deepcopy(original).train()
        history = unlearn(model, [problem.retain], [problem.forget], steps=config.steps, lr=lr,
                          max_grad_norm=config.max_grad_norm, stop_on_criterion=True, eval_fn=None,
                          progress=False, **arm_options("hamu_q_layerwise", config))
        model.eval()
        with torch.no_grad():
            final = evaluate(model, problem)
        records.append(StopRecord(lr=lr, step=history.steps_run - int(history.stopped), retain_acc=final["retain_acc"],
                                  forget_acc=final["forget_acc"],
                                  cost_points=100 * (matched.retain_acc - final["retain_acc"]),
                                  forgot=final["forget_acc"] <= high + 1e-9, replicate=replicate))
    return records


def target_stop(evaluations: list[dict[str, Any]], lr: float, problem: Problem, config: Config,
                matched: MatchedRecord, replicate: int = 0) -> StopRecord:
    """The validation-forget stop rule read on one HAMU-Q run's checkpoints (``evaluations``, step > 0):
    stop at the first checkpoint whose forget accuracy is at most the accuracy on validation
    samples of the forget set's label mix (:func:`~.analysis.target_stop_index`; it needs no
    retrained reference), else run to the end; scored like :func:`stop_rule`."""
    high = min(problem.reference_forget_acc + config.match_window, problem.original_forget_acc - config.match_window)
    index = target_stop_index([e["forget_acc"] for e in evaluations], [e["val_forget_acc"] for e in evaluations])
    stopped = evaluations[-1 if index is None else index]
    return StopRecord(lr=lr, step=int(stopped["step"]), retain_acc=stopped["retain_acc"],
                      forget_acc=stopped["forget_acc"], cost_points=100 * (matched.retain_acc - stopped["retain_acc"]),
                      forgot=stopped["forget_acc"] <= high + 1e-9, replicate=replicate)


def guarantee_probe(original: nn.Module, problem: Problem, config: Config) -> np.ndarray:
    """Realised forget-loss increase / B per step of HAMU-Q layer-wise, in float64."""
    model = copy.deepcopy(original).double().train()
    retain = (problem.retain[0].double(), problem.retain[1])
    forget = (problem.forget[0].double(), problem.forget[1])
    history = unlearn(model, [retain], [forget], steps=config.steps, lr=config.guarantee_lr, method="hamu_q",
                      bound=config.bound_ratio, max_grad_norm=config.max_grad_norm, measure=True, progress=False)
    return np.array([info.realised_forget_change / info.bound for info in history.hamu_logs
                     if info.applied and info.bound > 0])
