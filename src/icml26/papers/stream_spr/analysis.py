"""stream_spr reproduction: run summaries and check values from raw episode and step records.

Pure NumPy, each tested by hand:

* :func:`last_fraction_return`: mean return of the episodes ending in the last part of a run;
* :func:`return_curve`: the mean of the last ``window`` episodes finished before each bin edge;
* :func:`binned_means`: per-bin means of accumulated sums (NaN for empty bins);
* :func:`window_minimum`: the lowest bin mean among the bins ending inside a window;
* :func:`finite_mean`, :func:`average_curves`: means that skip missing (None/NaN) entries;
* :func:`first_crossing`: the first bin edge where a curve drops below a threshold;
* :func:`return_ratio`, :func:`games_won`: the quick and full modes' return checks;
* :func:`paired_gaps`: per game, the method's return minus the baseline's, paired by seed, with
  a t interval over seeds (how far the full mode's verdict depends on the draw).
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from icml26.common.stats import t_interval

__all__ = ["average_curves", "binned_means", "crossing_ratio", "finite_mean", "first_crossing", "games_won",
           "last_fraction_return", "paired_gaps", "return_curve", "return_ratio", "window_minimum"]


def last_fraction_return(end_steps, returns, total_steps: int, fraction: float = 0.1) -> float:
    """Mean return of the episodes ending at step ``>= (1 - fraction) * total_steps``; the last
    episode's if none does; NaN without any episode."""
    ends, rets = np.asarray(end_steps, dtype=float), np.asarray(returns, dtype=float)
    if ends.shape != rets.shape:
        raise ValueError("end_steps and returns must pair up (one per episode)")
    last = rets[ends >= (1.0 - fraction) * total_steps] if len(rets) else rets
    if len(last) == 0 and len(rets):
        last = rets[-1:]
    return float(last.mean()) if len(last) else float("nan")


def return_curve(end_steps, returns, edges, window: int = 20) -> list[float | None]:
    """At each edge, the mean return of the last ``window`` episodes ending before it (None before any)."""
    ends, rets = np.asarray(end_steps, dtype=float), np.asarray(returns, dtype=float)
    return [float(rets[ends < e][-window:].mean()) if np.any(ends < e) else None for e in edges]


def binned_means(sums, counts) -> np.ndarray:
    """``sums / counts`` per bin, NaN where a bin is empty."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def window_minimum(curve, edges, window: int) -> float:
    """The lowest finite value of ``curve`` among bins whose edge is ``<= max(window, edges[0])``
    (NaN if none)."""
    curve, edges = np.asarray(curve, dtype=float), np.asarray(edges)
    early = curve[edges <= max(window, edges[0])]
    return float(np.nanmin(early)) if np.any(np.isfinite(early)) else float("nan")


def finite_mean(values: Iterable) -> float:
    """Mean of the values that are not None and finite (NaN if none)."""
    kept = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(kept)) if kept else float("nan")


def average_curves(curves: Sequence[Sequence[float | None]]) -> list[float | None]:
    """Pointwise mean of equal-length curves, skipping None/NaN (None where nothing is left)."""
    out = []
    for col in zip(*curves):
        vals = [v for v in col if v is not None and math.isfinite(v)]
        out.append(float(np.mean(vals)) if vals else None)
    return out


def first_crossing(edges: Sequence, curve: Sequence[float | None], threshold: float):
    """The first edge whose curve value is below ``threshold`` (None if never)."""
    return next((x for x, v in zip(edges, curve) if v is not None and v < threshold), None)


def crossing_ratio(edges: Sequence, method: Sequence[float | None], reference: Sequence[float | None],
                   threshold: float) -> float:
    """Steps the ``method`` curve needs to first fall below ``threshold`` over the steps ``reference`` needs.

    A method curve that never falls below it counts as crossing at the last edge (so the ratio is a
    lower bound); NaN when the reference never falls below it. Raises ``ValueError`` when the curves and
    ``edges`` differ in length or ``threshold`` is not finite.
    """
    if not len(edges) == len(method) == len(reference) or not len(edges):
        raise ValueError(f"edges, method and reference must be non-empty and of one length, got {len(edges)}, "
                         f"{len(method)}, {len(reference)}")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold={threshold} must be finite")
    ref = first_crossing(edges, reference, threshold)
    if ref is None:
        return float("nan")
    own = first_crossing(edges, method, threshold)
    return float((edges[-1] if own is None else own) / ref)


def return_ratio(method: float, baseline: float) -> float:
    """``method / baseline`` (NaN when the baseline's return is 0)."""
    return method / baseline if baseline else float("nan")


def games_won(method: Mapping[str, float], baseline: Mapping[str, float]) -> int:
    """How many games (keys of ``method``) the method's return beats the baseline's on."""
    return sum(method[g] > baseline[g] for g in method)


def paired_gaps(method: Mapping[str, Sequence[float]], baseline: Mapping[str, Sequence[float]],
                confidence: float = 0.95) -> dict[str, dict[str, float | int | None]]:
    """Per game, ``method[g][i] - baseline[g][i]`` over seeds ``i``: mean, sd, n and a Student t
    interval (:func:`icml26.common.stats.t_interval`). Both sides must list the same games, one
    value per seed, in seed order. A seed whose value is NaN on either side (no episode ended) is
    left out of that game's pairs, and ``n`` says how many pairs remain."""
    if set(method) != set(baseline):
        raise ValueError(f"method and baseline must list the same games, got {sorted(method)} and {sorted(baseline)}")
    out = {}
    for game in method:
        m, b = list(method[game]), list(baseline[game])
        if len(m) != len(b):
            raise ValueError(f"game {game!r}: {len(m)} method seeds but {len(b)} baseline seeds; they pair by seed")
        out[game] = t_interval([x - y for x, y in zip(m, b)], confidence).as_dict()
    return out
