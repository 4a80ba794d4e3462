"""The one tuner every arm of every paper goes through (:meth:`icml26.contract.RunContext.tune`).

An arm declares its hyperparameter grid and a trial budget (:class:`icml26.contract.ArmSpec`);
:func:`tune` evaluates ``trials`` points of the grid — all of them when the budget covers the grid,
otherwise a subset drawn without replacement from the run's random stream for that arm — with an
objective that the experiment computes on a validation split, and keeps the best. So two arms with
the same budget are selected by the same rule on the same kind of split, and the result file
records each arm's space, budget, every trial's score and the choice.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import numpy as np

from icml26.checks import ArmSpec

__all__ = ["grid_points", "tune"]


def grid_points(arm: ArmSpec) -> list[dict[str, Any]]:
    """Every point of ``arm.space`` in declaration order (the last name varies fastest)."""
    if not arm.space:
        return [{}]
    names = list(arm.space)
    return [dict(zip(names, values)) for values in itertools.product(*(arm.space[n] for n in names))]


def tune(arm: ArmSpec, objective: Callable[[dict[str, Any]], float], *, maximize: bool,
         rng: np.random.Generator) -> dict[str, Any]:
    """Evaluate ``arm.trials`` grid points with ``objective`` and return the record of the choice.

    Returns ``{"chosen": {...}, "score": best, "trials": [{"params", "score"}, ...], "maximize"}``.
    The best finite score wins (ties: the earlier grid point); when no score is finite the first
    evaluated point is kept and ``score`` is ``None``. Raises ``TypeError`` when the objective
    returns something that is not a number.
    """
    if not isinstance(arm, ArmSpec):
        raise TypeError(f"arm must be an ArmSpec, got {type(arm).__name__}")
    if not callable(objective):
        raise TypeError("objective must be callable: objective(params) -> score")
    points = grid_points(arm)
    if arm.trials < len(points):
        keep = sorted(rng.choice(len(points), size=arm.trials, replace=False).tolist())
        points = [points[i] for i in keep]
    trials: list[dict[str, Any]] = []
    best_i, best = 0, None
    for i, params in enumerate(points):
        score = objective(dict(params))
        if isinstance(score, bool) or not isinstance(score, (int, float, np.floating, np.integer)):
            raise TypeError(f"arm {arm.id!r}: objective returned {type(score).__name__}; it must return a number")
        score = float(score)
        trials.append({"params": dict(params), "score": score if math.isfinite(score) else None})
        if not math.isfinite(score):
            continue
        if best is None or (score > best if maximize else score < best):
            best_i, best = i, score
    return {"chosen": dict(points[best_i]), "score": best, "trials": trials, "maximize": bool(maximize)}
