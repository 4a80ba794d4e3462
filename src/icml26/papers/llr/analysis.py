"""LLR reproduction: metrics and check values from validation-loss curves (pure, tested by hand).

* :func:`steps_to_target`: the first evaluation step at which a curve reaches a target loss;
* :func:`speedup`: ``total_steps / steps_to_target`` (0 when the target is never reached);
* :func:`min_gap`: the smallest loss gap ``reference - arm`` over a grid of base rates;
* :func:`best_rate`: the base rate with the lowest final loss;
* :func:`mean_final_alpha`: the mean fitted alpha of a set of layers at one update.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["best_rate", "mean_final_alpha", "min_gap", "speedup", "steps_to_target"]


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


def mean_final_alpha(alpha: Mapping[str, Sequence[float]], suffixes: tuple[str, ...], index: int) -> float:
    """Mean over layers whose name ends with one of ``suffixes`` of ``alpha[layer][index]``,
    skipping unfitted (NaN) entries; NaN when no layer qualifies."""
    values = [v[index] for n, v in alpha.items() if n.endswith(suffixes) and math.isfinite(v[index])]
    return float(np.mean(values)) if values else math.nan
