"""LLR reproduction: metrics and check values from validation-loss curves (pure, tested by hand).

* :func:`steps_to_target`: the first evaluation step at which a curve reaches a target loss;
* :func:`speedup`: ``total_steps / steps_to_target`` (0 when the target is never reached);
* :func:`min_gap`: the smallest loss gap ``reference - arm`` over a grid of base rates;
* :func:`best_rate`: the base rate with the lowest final loss;
* :func:`gap_to_best`: a reference's loss gap to the best of several arms (each at its own rate);
* :func:`mean_final_alpha`: the mean fitted alpha of a set of layers at one update;
* :func:`parameter_weighted_mean`: the mean multiplier per parameter (the rate-matched uniform control's rate);
* :func:`kind_means`: each layer's multiplier replaced by its kind's mean (the kind-static control).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["best_rate", "gap_to_best", "kind_means", "mean_final_alpha", "min_gap", "parameter_weighted_mean", "speedup",
           "steps_to_target"]


def steps_to_target(valid: Sequence[float], eval_steps: Sequence[int], target: float) -> int | None:
    """The first evaluation step ``s > 0`` with ``valid <= target`` (``None`` if never).

    ``valid[i]`` is the validation loss at step ``eval_steps[i]``; step 0 (the
    initialisation) never counts.
    """
    if len(valid) != len(eval_steps):
        raise ValueError(f"valid ({len(valid)}) and eval_steps ({len(eval_steps)}) must have the same length")
    return next((s for s, v in zip(eval_steps, valid) if s > 0 and v <= target), None)


def speedup(total_steps: int, reached: int | None) -> float:
    """``total_steps / reached``: how many times fewer steps reached the target (0.0 if never)."""
    return total_steps / reached if reached else 0.0


def min_gap(reference: Mapping[float, float], arm: Mapping[float, float]) -> tuple[float, dict[float, float]]:
    """``min_lr (reference[lr] - arm[lr])`` over the rates of ``reference`` and the gaps by rate.

    Positive: the arm's loss is lower than the reference's at every rate.
    """
    if not reference:
        raise ValueError("reference is empty: give the final losses by base rate")
    gaps = {lr: reference[lr] - arm[lr] for lr in reference}
    return min(gaps.values()), gaps


def best_rate(final_losses: Mapping[float, float]) -> float:
    """The base rate with the lowest final loss (the first of ties, in the mapping's order)."""
    if not final_losses:
        raise ValueError("final_losses is empty")
    return min(final_losses, key=lambda lr: final_losses[lr])


def gap_to_best(reference: float, arms: Mapping[str, float]) -> tuple[float, str]:
    """``min_a arms[a] - reference`` and the arm that attains it (the first of ties).

    ``arms[a]`` is an arm's final loss (each at its own tuned rate); positive: the reference's loss
    is lower than every arm's, i.e. it beats the best of them. A NaN loss (a diverged arm) never
    counts as the best unless every arm is NaN.
    """
    if not arms:
        raise ValueError("arms is empty: give each compared arm's final loss")
    finite = {a: v for a, v in arms.items() if not math.isnan(v)} or dict(arms)
    best = min(finite, key=lambda a: finite[a])
    return finite[best] - reference, best


def mean_final_alpha(alpha: Mapping[str, Sequence[float]], suffixes: tuple[str, ...], index: int) -> float:
    """Mean over layers whose name ends with one of ``suffixes`` of ``alpha[layer][index]``,
    skipping unfitted (NaN) entries; NaN when no layer qualifies."""
    values = [v[index] for n, v in alpha.items() if n.endswith(suffixes) and math.isfinite(v[index])]
    return float(np.mean(values)) if values else math.nan


def parameter_weighted_mean(multipliers: Sequence[float], sizes: Sequence[int]) -> float:
    """``sum_g m_g n_g / sum_g n_g``: the mean learning-rate multiplier per parameter.

    ``multipliers[g]`` is the multiplier of param group ``g`` and ``sizes[g]`` its number of
    parameters (e.g. :meth:`LayerwiseLR.group_multipliers` and the groups' ``numel``).
    """
    m, n = np.asarray(multipliers, dtype=float), np.asarray(sizes, dtype=float)
    if m.shape != n.shape or m.ndim != 1 or m.size == 0:
        raise ValueError(f"multipliers ({m.shape}) and sizes ({n.shape}) must be equal-length, non-empty 1-D")
    if np.any(n < 0) or n.sum() <= 0:
        raise ValueError("sizes must be non-negative with a positive sum")
    return float(m @ n / n.sum())


def kind_means(multipliers: Mapping[str, float], kinds: Mapping[str, str]) -> dict[str, float]:
    """Every layer's multiplier replaced by the mean multiplier of its kind (``{layer: mean}``).

    ``kinds`` maps each layer of ``multipliers`` to its kind (e.g.
    :func:`~icml26.papers.llr.baselines.layer_kinds`). Layers of one kind have the same size, so
    this keeps each kind's total rate and the parameter-weighted mean.
    """
    missing = [n for n in multipliers if n not in kinds]
    if missing:
        raise ValueError(f"kinds has no entry for layer(s) {', '.join(missing)}")
    by_kind: dict[str, list[float]] = {}
    for name, value in multipliers.items():
        by_kind.setdefault(kinds[name], []).append(float(value))
    return {name: float(np.mean(by_kind[kinds[name]])) for name in multipliers}
