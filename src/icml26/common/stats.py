"""The statistics every paper and the aggregate share: one ratio, one Student-t interval.

* :func:`ratio`: ``numerator / denominator`` with one answer for the undefined cases: NaN
  unless both are finite and the denominator is non-zero. NaN is what a check and the
  aggregate read as "not measured", so a zero reference can never make a ``>=`` bar hold.
* :func:`t_interval`: the mean of the finite values with its Student-t interval
  ``mean ± t_{(1+c)/2, n−1} · sd / √n`` (``sd`` with ddof 1).
* :func:`paired_interval`: :func:`t_interval` of the per-unit differences ``scale · (a − b)``.
* :func:`log_ratio_interval`: the geometric-mean ratio ``exp(mean log(a/b))`` with the
  interval of the mean log ratio, mapped back through ``exp``.
* :func:`interquartile_mean` and :func:`stratified_bootstrap_interval`: the aggregate of a
  runs × tasks score table that Agarwal et al. (2021, "Deep RL at the Edge of the Statistical
  Precipice", the ``rliable`` library) recommend, with its percentile interval from resampling the
  runs of each task separately.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = ["BootstrapInterval", "Interval", "interquartile_mean", "log_ratio_interval", "paired_interval", "ratio",
           "stratified_bootstrap_interval", "t_half_width", "t_interval"]


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``; NaN unless both are finite and ``denominator != 0``.

    Never a ``ZeroDivisionError`` and never ±inf: a ratio to a zero (or non-finite) reference
    is undefined, and NaN makes the check that reads it "not held".
    """
    n, d = float(numerator), float(denominator)
    if not (math.isfinite(n) and math.isfinite(d)) or d == 0.0:
        return math.nan
    return n / d


@dataclasses.dataclass(frozen=True)
class Interval:
    """A mean with its two-sided Student-t interval over ``n`` finite values.

    ``n == 0``: every field NaN (``sd`` ``None``); ``n == 1``: the single value is both ends and
    ``sd`` is ``None``.
    """

    mean: float
    low: float
    high: float
    n: int
    sd: float | None

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def as_dict(self) -> dict[str, float | int | None]:
        """``{"mean", "sd", "n", "ci_low", "ci_high"}`` as results store it (``None`` where undefined)."""
        if self.n == 0:
            return {"mean": None, "sd": None, "n": 0, "ci_low": None, "ci_high": None}
        return {"mean": self.mean, "sd": self.sd, "n": self.n, "ci_low": self.low, "ci_high": self.high}


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")


def t_half_width(sd: float, n: int, confidence: float = 0.95) -> float:
    """``t_{(1+confidence)/2, n−1} · sd / √n``: the half-width of the t interval of a mean of ``n >= 2`` values."""
    _check_confidence(confidence)
    if n < 2:
        raise ValueError(f"n={n} must be >= 2 for a t interval")
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))


def t_interval(values: Iterable[float | None], confidence: float = 0.95) -> Interval:
    """:class:`Interval` of the finite ``values`` (``None``, NaN and ±inf are left out)."""
    _check_confidence(confidence)
    x = np.asarray([v for v in values if v is not None], dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, None)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, mean, mean, 1, None)
    sd = float(x.std(ddof=1))
    half = t_half_width(sd, n, confidence)
    return Interval(mean, mean - half, mean + half, n, sd)


def _paired(method: Sequence[float], baseline: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(method, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"method {a.shape} and baseline {b.shape} must be 1-D of one length (one value per unit)")
    return a, b


def paired_interval(method: Sequence[float], baseline: Sequence[float], *, scale: float = 1.0,
                    confidence: float = 0.95) -> Interval:
    """:func:`t_interval` of ``scale · (method − baseline)``, paired per unit (seed, replicate).

    A pair holding a non-finite value is left out.
    """
    a, b = _paired(method, baseline)
    return t_interval(scale * (a - b), confidence)


def log_ratio_interval(method: Sequence[float], baseline: Sequence[float],
                       confidence: float = 0.95) -> Interval:
    """The geometric-mean ratio of paired positive values, ``exp(mean log(method/baseline))``.

    ``low``/``high`` are ``exp`` of the t interval of the mean log ratio; ``sd`` is that of the
    log ratios. Values must be finite and positive (errors, costs): a ``ValueError`` otherwise.
    """
    a, b = _paired(method, baseline)
    if a.size == 0 or not (np.isfinite(a).all() and np.isfinite(b).all() and (a > 0).all() and (b > 0).all()):
        raise ValueError("method and baseline must be non-empty, finite and positive (one value per unit)")
    logs = t_interval(np.log(a / b), confidence)
    return Interval(math.exp(logs.mean), math.exp(logs.low), math.exp(logs.high), logs.n, logs.sd)


def interquartile_mean(scores: Sequence[float] | np.ndarray) -> float:
    """The interquartile mean of every score pooled: the mean of the middle 50 %.

    ``scipy.stats.trim_mean(scores, 0.25, axis=None)``: ``⌊0.25·n⌋`` values cut at each end of the
    sorted scores (rliable's ``aggregate_iqm``). Scores must be finite and at least one.
    """
    from scipy import stats

    x = np.asarray(scores, dtype=np.float64)
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"scores must be a non-empty array of finite values, got shape {x.shape}")
    return float(stats.trim_mean(x, 0.25, axis=None))


@dataclasses.dataclass(frozen=True)
class BootstrapInterval:
    """A statistic of the observed table with its percentile bootstrap interval over ``reps`` resamples."""

    point: float
    low: float
    high: float
    reps: int

    def as_dict(self) -> dict[str, float | int]:
        return {"point": self.point, "ci_low": self.low, "ci_high": self.high, "reps": self.reps}


def stratified_bootstrap_interval(scores: np.ndarray, statistic: Callable[[np.ndarray], float] = interquartile_mean,
                                  *, reps: int = 2000, confidence: float = 0.95, seed: int = 0) -> BootstrapInterval:
    """``statistic`` of a (runs, tasks) table with its stratified-bootstrap percentile interval.

    Each resample draws, for every task (column) separately, ``runs`` of its rows with replacement
    (rliable's ``StratifiedBootstrap``: the tasks are fixed, the runs are the random units); the
    interval is the ``(1 ± confidence)/2`` percentiles of the resampled statistics. ``statistic``
    takes a (runs, tasks) array; with one run per task every resample is the table itself.
    """
    _check_confidence(confidence)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ValueError(f"reps={reps!r} must be a positive int")
    table = np.asarray(scores, dtype=np.float64)
    if table.ndim != 2 or 0 in table.shape or not np.isfinite(table).all():
        raise ValueError(f"scores must be a finite (runs, tasks) array with at least one of each, got shape {table.shape}")
    runs, tasks = table.shape
    rng = np.random.default_rng(seed)
    rows = rng.integers(runs, size=(reps, runs, tasks))
    resampled = np.take_along_axis(table[None, :, :], rows, axis=1)
    values = np.array([statistic(r) for r in resampled])
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return BootstrapInterval(float(statistic(table)), float(low), float(high), reps)
