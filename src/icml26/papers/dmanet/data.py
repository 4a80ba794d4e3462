"""Forecasting data: a chaotic multiscale generator, wheel-shipped series, windowing.

Nothing is downloaded. Series come from

* :func:`aliasing_lorenz`: a slow Lorenz-63 (all three coordinates as channels) plus,
  per channel, the first coordinate of an independent Lorenz-63 run 12x faster,
  z-scored and scaled by 0.5 (brief §4). The fast part carries energy above the new
  Nyquist limit of every 2x/4x/8x downsampling, so naive downsampling folds it.
* :func:`load_taylor`: half-hourly electricity demand of England and Wales (4,032
  values, Taylor 2003), shipped inside ``pmdarima``'s wheel.
* :func:`load_sunspots`: monthly mean sunspot numbers 1749–2009 (3,126 values),
  ``statsmodels``' ``datasets/sunspots/src/sunspots_monthly.dat``.

:func:`standardized_splits` makes the Time-Series-Library split (chronological
70/10/20, validation and test segments start ``seq_len`` early so that their first
window has a full input) and z-scores every split with training statistics;
:func:`sliding_windows` cuts ``(input, target)`` pairs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.common.extras import require

__all__ = [
    "ForecastSplits",
    "aliasing_lorenz",
    "load_sunspots",
    "load_taylor",
    "lorenz63",
    "sliding_windows",
    "standardized_splits",
]


def lorenz63(
    n_samples: int,
    dt: float,
    *,
    initial: tuple[float, float, float] = (1.0, 1.0, 25.0),
    sigma: float = 10.0,
    rho: float = 28.0,
    beta: float = 8.0 / 3.0,
    max_step: float = 0.01,
    burn_in: int = 500,
) -> np.ndarray:
    """Sample the Lorenz-63 flow every ``dt`` time units with classical RK4.

    ``dx/dt = sigma (y - x)``, ``dy/dt = x (rho - z) - y``, ``dz/dt = x y - beta z``.
    Each sampling interval is split into ``ceil(dt / max_step)`` RK4 steps; the first
    ``burn_in`` samples (transient) are dropped. Returns ``(n_samples, 3)`` float64.
    (Plain floats: for one 3-dimensional state they beat NumPy's per-call overhead.)
    """
    check_int(n_samples, "n_samples", low=1)
    check_int(burn_in, "burn_in", low=0)
    check_real(dt, "dt", low=0.0, low_open=True)
    check_real(max_step, "max_step", low=0.0, low_open=True)
    for name, value in (("sigma", sigma), ("rho", rho), ("beta", beta)):
        check_real(value, name)
    if len(initial) != 3 or not all(np.isfinite(v) for v in initial):
        raise ValueError(f"initial={initial!r} must be three finite numbers (x, y, z)")
    substeps = max(1, math.ceil(dt / max_step - 1e-9))
    h = dt / substeps
    h2, h6 = h / 2.0, h / 6.0
    x, y, z = map(float, initial)
    total = n_samples + burn_in
    out = np.empty(3 * total)
    for i in range(total):
        for _ in range(substeps):
            k1x = sigma * (y - x); k1y = x * (rho - z) - y; k1z = x * y - beta * z  # noqa: E702
            ax, ay, az = x + h2 * k1x, y + h2 * k1y, z + h2 * k1z
            k2x = sigma * (ay - ax); k2y = ax * (rho - az) - ay; k2z = ax * ay - beta * az  # noqa: E702
            ax, ay, az = x + h2 * k2x, y + h2 * k2y, z + h2 * k2z
            k3x = sigma * (ay - ax); k3y = ax * (rho - az) - ay; k3z = ax * ay - beta * az  # noqa: E702
            ax, ay, az = x + h * k3x, y + h * k3y, z + h * k3z
            k4x = sigma * (ay - ax); k4y = ax * (rho - az) - ay; k4z = ax * ay - beta * az  # noqa: E702
            # x_{t+h} = x_t + h/6 (k1 + 2 k2 + 2 k3 + k4)
            x += h6 * (k1x + 2 * k2x + 2 * k3x + k4x)
            y += h6 * (k1y + 2 * k2y + 2 * k3y + k4y)
            z += h6 * (k1z + 2 * k2z + 2 * k3z + k4z)
        out[3 * i: 3 * i + 3] = (x, y, z)
    return out.reshape(total, 3)[burn_in:]


def _zscore(a: np.ndarray) -> np.ndarray:
    return (a - a.mean(0)) / a.std(0)


def aliasing_lorenz(
    length: int = 8000,
    *,
    dt: float = 0.02,
    fast_speed: float = 12.0,
    fast_scale: float = 0.5,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The "aliasing Lorenz" series: slow chaos plus a fast chaotic component per channel.

    ``x_c(t) = zscore(slow_c)(t) + fast_scale * zscore(fast^{(c)}_1)(t)`` for the three
    coordinates ``c`` of a Lorenz-63 sampled every ``dt`` and three independent
    Lorenz-63 runs sampled every ``fast_speed * dt``. Initial states are drawn from
    ``rng`` near the attractor.

    Returns:
        ``(length, 3)`` float64 (not standardised; see :func:`standardized_splits`).
    """
    if check_int(length, "length") < 16:
        raise ValueError(f"length={length} is too short; use at least a few hundred samples")
    check_real(dt, "dt", low=0.0, low_open=True)
    check_real(fast_speed, "fast_speed", low=0.0, low_open=True)
    check_real(fast_scale, "fast_scale", low=0.0)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    rng = np.random.default_rng(0) if rng is None else rng
    starts = rng.normal(size=(4, 3)) * np.array([5.0, 5.0, 5.0]) + np.array([0.0, 0.0, 25.0])
    slow = lorenz63(length, dt, initial=tuple(starts[0]))
    fast = np.stack([lorenz63(length, fast_speed * dt, initial=tuple(s))[:, 0] for s in starts[1:]], axis=1)
    return _zscore(slow) + fast_scale * _zscore(fast)


def load_taylor() -> np.ndarray:
    """Half-hourly electricity demand, England and Wales, June–August 2000 (``(4032, 1)``, MW).

    From ``pmdarima.datasets.load_taylor`` (stored inside the wheel). Needs the ``ts`` extra.
    """
    datasets = require("pmdarima.datasets", "ts")
    return np.asarray(datasets.load_taylor(), dtype=np.float64).reshape(-1, 1)


def load_sunspots() -> np.ndarray:
    """Monthly mean sunspot numbers, January 1749 – June 2009 (``(3126, 1)``).

    Parsed from ``statsmodels/datasets/sunspots/src/sunspots_monthly.dat`` (shipped in
    the wheel; the yearly ``sunspots`` data set is the same source). Needs the ``ts`` extra.
    """
    statsmodels = require("statsmodels", "ts")
    path = Path(statsmodels.__file__).parent / "datasets" / "sunspots" / "src" / "sunspots_monthly.dat"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from this statsmodels install; reinstall statsmodels>=0.14")
    values: list[float] = []
    for line in path.read_text().splitlines():
        if re.match(r"^\d{4}\s", line):
            values.extend(float(v) for v in line.split()[1:])
    return np.asarray(values, dtype=np.float64).reshape(-1, 1)


@dataclasses.dataclass(frozen=True)
class ForecastSplits:
    """Chronological train/val/test segments, z-scored with training statistics.

    ``train``, ``val``, ``test``: ``(T_split, C)`` float32; ``val`` and ``test`` begin
    ``seq_len`` samples before their first target. ``mean``, ``std``: ``(C,)`` of the
    training segment.
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    seq_len: int

    def __post_init__(self) -> None:
        shapes = [np.shape(a) for a in (self.train, self.val, self.test)]
        if any(len(sh) != 2 for sh in shapes) or len({sh[1] for sh in shapes}) != 1:
            raise ValueError(f"train, val and test must be (T, C) with the same C, got {shapes}")
        check_int(self.seq_len, "seq_len", low=1)
        for name in ("train", "val", "test", "mean", "std"):
            require_finite(getattr(self, name), name, hint="the segments and their statistics must be finite")
        if np.shape(self.mean) != shapes[0][1:] or np.shape(self.std) != shapes[0][1:]:
            raise ValueError(f"mean {np.shape(self.mean)} and std {np.shape(self.std)} must be ({shapes[0][1]},), "
                             "one per channel")
        if np.any(np.asarray(self.std) <= 0):
            raise ValueError("std must be positive in every channel (standardized_splits uses 1 for a constant one)")

    @property
    def n_channels(self) -> int:
        return self.train.shape[1]


def standardized_splits(series: np.ndarray, seq_len: int, *, train_fraction: float = 0.7,
                        test_fraction: float = 0.2) -> ForecastSplits:
    """The Time-Series-Library split of a ``(T, C)`` series (``Dataset_Custom``).

    ``n_train = int(T * train_fraction)``, ``n_test = int(T * test_fraction)``, the rest
    validation; borders ``[0, n_train - L, T - n_test - L]`` to ``[n_train, n_train +
    n_val, T]``. Every segment is z-scored with the training segment's mean and std.
    """
    check_int(seq_len, "seq_len", low=1)
    check_real(train_fraction, "train_fraction")
    check_real(test_fraction, "test_fraction")
    try:
        series = np.asarray(series, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"series must be numbers, a (T, C) array, got {type(series).__name__}") from None
    if series.ndim == 1:
        series = series[:, None]
    if series.ndim != 2:
        raise ValueError(f"series must be (T, C) or (T,), got shape {series.shape}")
    if not np.isfinite(series).all():
        raise ValueError("series contains NaN or inf; fill or drop them first")
    if not (0 < train_fraction < 1 and 0 < test_fraction < 1 and train_fraction + test_fraction < 1):
        raise ValueError(f"train_fraction={train_fraction}, test_fraction={test_fraction} must be in (0, 1) "
                         "and leave room for validation")
    total = series.shape[0]
    n_train = int(total * train_fraction)
    n_test = int(total * test_fraction)
    n_val = total - n_train - n_test
    if n_train <= seq_len or n_val < 1 or n_test < 1:
        raise ValueError(f"a series of {total} steps is too short for seq_len={seq_len} with this split")
    mean = series[:n_train].mean(0)
    std = series[:n_train].std(0)
    std = np.where(std > 0, std, 1.0)
    # x_hat = (x - mean_train) / std_train
    scaled = ((series - mean) / std).astype(np.float32)
    return ForecastSplits(
        train=scaled[:n_train],
        val=scaled[n_train - seq_len: n_train + n_val],
        test=scaled[total - n_test - seq_len:],
        mean=mean, std=std, seq_len=seq_len,
    )


def sliding_windows(segment: np.ndarray, seq_len: int, pred_len: int, *, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """All ``(input, target)`` pairs of a ``(T, C)`` segment, hopping ``step`` samples.

    Returns ``X: (N, seq_len, C)`` and ``Y: (N, pred_len, C)``, copies in the segment's dtype.
    """
    for name, value in (("seq_len", seq_len), ("pred_len", pred_len), ("step", step)):
        check_int(value, name, low=1)
    segment = np.asarray(segment)
    if segment.ndim != 2:
        raise ValueError(f"segment must be (T, C), got shape {segment.shape}; reshape a 1-D series with [:, None]")
    require_finite(segment, "segment", hint="fill or drop them first (a window holding one would train on NaN)")
    n = segment.shape[0] - seq_len - pred_len + 1
    if n < 1:
        raise ValueError(f"segment of {segment.shape[0]} steps holds no window of {seq_len}+{pred_len}")
    starts = np.arange(0, n, step)
    view = np.lib.stride_tricks.sliding_window_view(segment, seq_len + pred_len, axis=0)  # (n, C, L+H)
    windows = np.ascontiguousarray(view[starts].transpose(0, 2, 1))
    return windows[:, :seq_len], windows[:, seq_len:]
