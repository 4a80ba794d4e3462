"""A synthetic series on which aliasing destroys what a forecaster needs ("folding tones").

On the aliasing-Lorenz series (:func:`~icml26.papers.dmanet.data.aliasing_lorenz`) the fast band
is unforecastable noise: folding it costs a strided forecaster a few per cent at most. Here the
fast band is built to fold *exactly onto the one predictive frequency*:

    x_c(t) = Re[A_c(t) e^{i 2 pi f_s t}]
             + fast_scale * sum_{s in fold_strides} Re[B_{c,s}(t) e^{i 2 pi (1/s - f_s) t}]
             + noise * eps_c(t)

with ``f_s = 1 / slow_period`` below the Nyquist limit of the coarsest stride, complex AR(1)
envelopes ``A_c`` (coherence ``slow_coherence`` samples: nearly constant over a window, so the
slow tone is forecastable) and ``B_{c,s}`` (coherence ``fast_coherence``), all independent, and
white ``eps``. Subsampling at any stride ``S`` that ``s`` divides sends the fast tone to

    (1/s - f_s) S n = (S/s) n - f_s S n  ->  e^{-i 2 pi f_s S n},

i.e. onto the slow tone's output frequency ``f_s S`` with the conjugate envelope: the strided
samples carry only ``A + fast_scale * conj(B)`` there, so the slow phasor the forecast needs can
no longer be told apart from an independent one. A low-pass at the new Nyquist limit before the
stride keeps ``A`` (``f_s < 1/(2S)``) and removes every fast tone (``1/s - f_s > 1/(2S)``).
"""

from __future__ import annotations

import numpy as np

from icml26.common.argcheck import check_int, check_real

__all__ = ["alias_frequency", "folding_tones"]


def alias_frequency(frequency: float, stride: int) -> float:
    """Where a tone of ``frequency`` (cycles per sample) lands after ``x[::stride]``, in cycles per
    output sample, folded into ``[0, 1/2]``: ``|f S - round(f S)|``."""
    check_real(frequency, "frequency")
    check_int(stride, "stride", low=1)
    scaled = frequency * stride
    # f_alias = |f S - round(f S)|
    return float(abs(scaled - round(scaled)))


def _envelope(rng: np.random.Generator, length: int, coherence: float) -> np.ndarray:
    """Stationary complex AR(1), ``E|z|^2 = 1``: ``z_{t+1} = phi z_t + sqrt(1 - phi^2) xi_t``, ``phi = exp(-1/tau)``."""
    phi = float(np.exp(-1.0 / coherence))
    xi = (rng.standard_normal(length) + 1j * rng.standard_normal(length)) / np.sqrt(2.0)
    z = np.empty(length, dtype=np.complex128)
    z[0] = xi[0]
    gain = np.sqrt(1.0 - phi * phi)
    for t in range(1, length):
        z[t] = phi * z[t - 1] + gain * xi[t]
    return z


def folding_tones(
    length: int = 8000,
    *,
    channels: int = 3,
    slow_period: float = 48.0,
    fold_strides: tuple[int, ...] = (2, 4, 8),
    fast_scale: float = 0.5,
    slow_coherence: float = 2000.0,
    fast_coherence: float = 100.0,
    noise: float = 0.1,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The folding-tones series of the module docstring, ``(length, channels)`` float64.

    Args:
        length: samples.
        channels: independent channels (each its own envelopes and noise).
        slow_period: ``1 / f_s`` in samples; must exceed ``2 * max(fold_strides)`` so that the slow
            tone survives the coarsest stride.
        fold_strides: one fast tone per stride ``s`` at ``1/s - f_s`` (folds onto ``f_s`` from stride ``s`` on).
        fast_scale: amplitude of each fast tone relative to the slow one (0: no fast band).
        slow_coherence, fast_coherence: AR(1) correlation times of the envelopes, in samples.
        noise: standard deviation of the white noise.
        rng: the draws (default ``default_rng(0)``).
    """
    check_int(length, "length", low=16)
    check_int(channels, "channels", low=1)
    check_real(slow_period, "slow_period", low=0.0, low_open=True)
    check_real(fast_scale, "fast_scale", low=0.0)
    check_real(slow_coherence, "slow_coherence", low=0.0, low_open=True)
    check_real(fast_coherence, "fast_coherence", low=0.0, low_open=True)
    check_real(noise, "noise", low=0.0)
    strides = tuple(fold_strides)
    if not strides:
        raise ValueError("fold_strides must hold at least one stride")
    for s in strides:
        check_int(s, "fold_strides", low=2)
    if len(set(strides)) != len(strides):
        raise ValueError(f"fold_strides={strides!r} repeats a stride")
    if slow_period <= 2 * max(strides):
        raise ValueError(f"slow_period={slow_period} must exceed 2 * max(fold_strides) = {2 * max(strides)}: "
                         "the slow tone must lie below the Nyquist limit of the coarsest stride")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    rng = np.random.default_rng(0) if rng is None else rng
    t = np.arange(length)
    f_slow = 1.0 / slow_period
    out = np.empty((length, channels))
    for c in range(channels):
        # Re[A(t) e^{i 2 pi f_s t}]: the predictive slow tone
        x = np.real(_envelope(rng, length, slow_coherence) * np.exp(2j * np.pi * f_slow * t))
        for s in strides:
            # fast tone at 1/s - f_s: folds onto f_s at every stride that s divides
            x = x + fast_scale * np.real(_envelope(rng, length, fast_coherence)
                                         * np.exp(2j * np.pi * (1.0 / s - f_slow) * t))
        out[:, c] = x + noise * rng.standard_normal(length)
    return out
