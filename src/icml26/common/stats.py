"""The statistics every paper and the aggregate share: one ratio, one Student-t interval.

* :func:`ratio`: ``numerator / denominator`` with one answer for the undefined cases: NaN
  unless both are finite and the denominator is non-zero. NaN is what a check and the
  aggregate read as "not measured", so a zero reference can never make a ``>=`` bar hold.
* :func:`t_interval`: the mean of the finite values with its Student-t interval
  ``mean ± t_{(1+c)/2, n−1} · sd / √n`` (``sd`` with ddof 1).
* :func:`paired_interval`: :func:`t_interval` of the per-unit differences ``scale · (a − b)``.
* :func:`log_ratio_interval`: the geometric-mean ratio ``exp(mean log(a/b))`` with the
  interval of the mean log ratio, mapped back through ``exp``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import numpy as np

__all__ = ["Interval", "log_ratio_interval", "paired_interval", "ratio", "t_half_width", "t_interval"]


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
