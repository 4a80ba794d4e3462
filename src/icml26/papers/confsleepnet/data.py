"""Synthetic polysomnography (EEG, EOG, EMG) with hypnograms, and EOG corruption.

No public package ships a real PSG recording with its hypnogram (brief §4), so the
reproduction draws nights from a generator whose stage signatures follow the AASM
scoring rules:

1. hypnogram: a five-state Markov chain over 30-s epochs starting awake
   (:data:`TRANSITIONS`, our matrix; stationary mix about W 14 %, N1 8 %, N2 42 %,
   N3 21 %, REM 16 %);
2. EEG: pink background plus stage-weighted bands (alpha 8–12 Hz in W; theta 4–7 Hz in
   N1 and REM; 12–15 Hz spindle bursts and K-complexes in N2; high-amplitude delta
   0.5–2 Hz in N3; sawtooth bursts in REM);
3. EOG: frontal EEG leakage plus blinks and saccades (W), slow rolling movements
   0.15–0.4 Hz (N1), near-flat (N2, N3), bursts of rapid saccades (REM);
4. EMG: high-passed noise with tone W > N1 > N2 > N3 > REM (atonia), movement bursts in W
   and twitches in REM;
5. subject variability: per-subject channel gains, frequency scale and background level;
   per-epoch amplitude jitter on every component.

:func:`corrupt_eog` then misaligns or damages the EOG of a fraction of epochs: the EOG of
an epoch 1–3 epochs away (circularly within the night), electrode pops, or the EOG of an
epoch of another stage.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
from scipy.ndimage import uniform_filter1d
from scipy.special import expit

from icml26.common.argcheck import check_int, check_real, require_finite

__all__ = [
    "CHANNELS",
    "CORRUPTION_MODES",
    "TRANSITIONS",
    "Corruption",
    "PSGData",
    "corrupt_eog",
    "normalize_recordings",
    "sample_hypnogram",
    "synthetic_psg",
]

CHANNELS: tuple[str, ...] = ("EEG", "EOG", "EMG")
CORRUPTION_MODES: tuple[str, ...] = ("shift", "pop", "swap")

#: Epoch-to-epoch stage transition probabilities (rows: from W, N1, N2, N3, REM). Ours,
#: chosen for human-like bout lengths and stage shares (brief §4).
TRANSITIONS: tuple[tuple[float, ...], ...] = (
    (0.90, 0.08, 0.01, 0.00, 0.01),
    (0.06, 0.62, 0.27, 0.00, 0.05),
    (0.01, 0.03, 0.92, 0.03, 0.01),
    (0.01, 0.00, 0.05, 0.94, 0.00),
    (0.02, 0.03, 0.01, 0.00, 0.94),
)

# Per-stage amplitudes (W, N1, N2, N3, REM) of the continuous components.
_EEG_BANDS = {  # band (Hz) -> amplitude per stage
    "alpha": ((8.0, 12.0), (1.2, 0.35, 0.15, 0.10, 0.30)),
    "theta": ((4.0, 7.0), (0.30, 0.90, 0.60, 0.40, 0.80)),
    "beta": ((15.0, 25.0), (0.50, 0.25, 0.15, 0.10, 0.30)),
    "delta": ((0.5, 2.0), (0.30, 0.50, 0.90, 2.20, 0.50)),
}
_EEG_BACKGROUND = 0.6
_EOG_LEAK = 0.25           # share of frontal EEG delta + alpha seen on the EOG
_EOG_NOISE = 0.25
_EMG_TONE = (1.0, 0.6, 0.45, 0.40, 0.15)
# Poisson rates of transient events per 30-s epoch, per stage.
_SPINDLES = (0.0, 0.1, 2.5, 0.5, 0.0)
_K_COMPLEXES = (0.0, 0.1, 1.2, 0.3, 0.0)
_SAWTOOTH = (0.0, 0.0, 0.0, 0.0, 1.5)
_BLINKS = (5.0, 0.5, 0.0, 0.0, 0.0)
_SACCADES = (3.0, 0.3, 0.0, 0.0, 0.0)
_REM_BURSTS = (0.0, 0.0, 0.0, 0.0, 1.8)
_SLOW_EYE = (0.0, 1.0, 0.1, 0.0, 0.0)  # probability of slow rolling eye movements
_MOVEMENTS = (1.0, 0.2, 0.0, 0.0, 0.0)
_TWITCHES = (0.0, 0.0, 0.0, 0.0, 3.0)


@dataclasses.dataclass(frozen=True)
class PSGData:
    """Nights of several subjects cut into 30-s epochs.

    ``signals``: ``(n_subjects, n_epochs, 3, samples)`` float32, channels :data:`CHANNELS`;
    ``stages``: ``(n_subjects, n_epochs)`` int64 in 0..4 (W, N1, N2, N3, REM).
    """

    signals: np.ndarray
    stages: np.ndarray
    sampling_rate: float
    channel_names: tuple[str, ...] = CHANNELS

    def __post_init__(self) -> None:
        signals, stages = np.asarray(self.signals), np.asarray(self.stages)
        if signals.ndim != 4 or stages.shape != signals.shape[:2]:
            raise ValueError(f"signals must be (n_subjects, n_epochs, C, samples) and stages (n_subjects, "
                             f"n_epochs), got {signals.shape} and {stages.shape}")
        if signals.shape[2] != len(self.channel_names):
            raise ValueError(f"signals have {signals.shape[2]} channels but channel_names lists "
                             f"{len(self.channel_names)}")
        check_real(self.sampling_rate, "sampling_rate", low=0.0, low_open=True)
        require_finite(signals, "signals", hint="interpolate or drop those epochs first")

    def subset(self, subjects: Sequence[int] | slice) -> "PSGData":
        """The nights of the chosen subjects."""
        index = subjects if isinstance(subjects, slice) else np.asarray(subjects)
        return dataclasses.replace(self, signals=self.signals[index], stages=self.stages[index])


@dataclasses.dataclass(frozen=True)
class Corruption:
    """Which epochs :func:`corrupt_eog` changed, and how.

    ``mask``: ``(n_subjects, n_epochs)`` bool; ``mode``: index into :data:`CORRUPTION_MODES`
    (-1 for clean epochs); ``source_stage``: the stage whose EOG the epoch now shows (its own
    stage for clean and popped epochs).
    """

    mask: np.ndarray
    mode: np.ndarray
    source_stage: np.ndarray

    def conflicting(self, stages: np.ndarray, label_map: Sequence[int] | None = None) -> np.ndarray:
        """Corrupted epochs whose EOG now contradicts the true stage: pops, and shifts or swaps
        that bring in another stage (another category of ``label_map``, if given)."""
        stages = np.asarray(stages)
        if stages.shape != self.mask.shape:
            raise ValueError(f"stages {stages.shape} must have the corruption mask's shape {self.mask.shape}")
        lm = np.arange(5) if label_map is None else np.asarray(label_map)
        changed = lm[self.source_stage] != lm[stages]
        return self.mask & ((self.mode == CORRUPTION_MODES.index("pop")) | changed)


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}")


def sample_hypnogram(n_epochs: int, rng: np.random.Generator,
                     transitions: Sequence[Sequence[float]] = TRANSITIONS, start: int = 0) -> np.ndarray:
    """A stage sequence ``(n_epochs,)`` from the Markov chain ``transitions``, starting in ``start``."""
    n_epochs = check_int(n_epochs, "n_epochs", low=0)
    start = check_int(start, "start", low=0, high=4)
    _check_rng(rng)
    matrix = np.asarray(transitions, dtype=np.float64)
    if matrix.shape != (5, 5) or (matrix < 0).any() or not np.allclose(matrix.sum(1), 1.0):
        raise ValueError("transitions must be a 5x5 row-stochastic matrix (rows W, N1, N2, N3, REM)")
    cumulative = np.cumsum(matrix, axis=1)
    draws = rng.random(n_epochs)
    stages = np.empty(n_epochs, dtype=np.int64)
    state = int(start)
    for i in range(n_epochs):
        stages[i] = state
        state = min(int(np.searchsorted(cumulative[state], draws[i], side="right")), 4)
    return stages


def _band_noise(rng: np.random.Generator, rows: int, n: int, fs: float, lo: np.ndarray | float,
                hi: np.ndarray | float) -> np.ndarray:
    """Unit-variance noise band-limited to ``[lo, hi]`` Hz (per-row bands allowed), ``(rows, n)``."""
    spectrum = np.fft.rfft(rng.standard_normal((rows, n)), axis=1)
    freqs = np.fft.rfftfreq(n, 1.0 / fs)
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (rows,))[:, None]
    hi = np.minimum(np.broadcast_to(np.asarray(hi, dtype=np.float64), (rows,))[:, None], 0.45 * fs)
    x = np.fft.irfft(spectrum * ((freqs >= lo) & (freqs <= hi)), n=n, axis=1)
    return x / (x.std(axis=1, keepdims=True) + 1e-12)


def _pink_noise(rng: np.random.Generator, rows: int, n: int, fs: float) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal((rows, n)), axis=1)
    freqs = np.fft.rfftfreq(n, 1.0 / fs)
    x = np.fft.irfft(spectrum / np.sqrt(np.maximum(freqs, 0.3)), n=n, axis=1)
    return x / (x.std(axis=1, keepdims=True) + 1e-12)


def _night(stages: np.ndarray, fs: float, n: int, rng: np.random.Generator, freq_scale: float,
           background: float, gains: np.ndarray) -> np.ndarray:
    """One subject's night, ``(n_epochs, 3, n)``."""
    e = len(stages)
    t = np.arange(n) / fs
    jitter = lambda: rng.lognormal(0.0, 0.25, e)[:, None]  # noqa: E731
    amp = lambda table: np.asarray(table)[stages][:, None]  # noqa: E731

    eeg = background * _EEG_BACKGROUND * _pink_noise(rng, e, n, fs)
    leak = np.zeros((e, n))
    for name, ((lo, hi), table) in _EEG_BANDS.items():
        comp = amp(table) * jitter() * _band_noise(rng, e, n, fs, lo * freq_scale, hi * freq_scale)
        eeg += comp
        if name in ("delta", "alpha"):
            leak += comp
    eog = _EOG_LEAK * leak + _EOG_NOISE * _band_noise(rng, e, n, fs, 0.3, 10.0)
    white = rng.standard_normal((e, n))
    # EMG: white noise minus its 9-sample moving average (a high-pass), scaled by the stage's tone
    emg = amp(_EMG_TONE) * jitter() * (white - uniform_filter1d(white, 9, axis=1))

    def onsets(rate: float, duration: float) -> np.ndarray:
        return rng.uniform(0.0, max(30.0 - duration, 0.0), rng.poisson(rate)) if rate > 0 else np.empty(0)

    for i, s in enumerate(stages):
        for t0 in onsets(_SPINDLES[s], 2.0):  # 12-15 Hz waxing-waning bursts, 0.5-2 s
            dur = rng.uniform(0.5, 2.0)
            win = (t >= t0) & (t < t0 + dur)
            phase = 2 * np.pi * rng.uniform(12.0, 14.5) * freq_scale * (t[win] - t0)
            eeg[i, win] += 1.2 * np.sin(np.pi * (t[win] - t0) / dur) ** 2 * np.sin(phase)
        for t0 in onsets(_K_COMPLEXES[s], 1.5):  # sharp negative wave, slower positive one
            a = rng.uniform(2.0, 3.0)
            eeg[i] += -a * np.exp(-(((t - t0) / 0.1) ** 2)) + 0.6 * a * np.exp(-(((t - t0 - 0.35) / 0.2) ** 2))
        for t0 in onsets(_SAWTOOTH[s], 5.0):  # 2-3 Hz sawtooth bursts, 2-5 s
            dur = rng.uniform(2.0, 5.0)
            win = (t >= t0) & (t < t0 + dur)
            saw = 2 * ((rng.uniform(2.0, 3.0) * (t[win] - t0)) % 1.0) - 1
            eeg[i, win] += 0.7 * np.sin(np.pi * (t[win] - t0) / dur) * saw
        for t0 in onsets(_BLINKS[s], 0.5):  # blinks: 0.1-s Gaussian deflections
            eog[i] += 3.0 * np.exp(-(((t - t0) / 0.1) ** 2))
        for t0 in onsets(_SACCADES[s], 2.0):  # saccades: held gaze shifts with quick edges
            eog[i] += rng.choice((-1.0, 1.0)) * 1.5 * _boxcar(t, t0, rng.uniform(0.3, 2.0), 0.04)
        if rng.random() < _SLOW_EYE[s]:  # slow rolling eye movements
            eog[i] += 1.5 * rng.uniform(0.5, 1.0) * np.sin(2 * np.pi * rng.uniform(0.15, 0.4) * t
                                                           + rng.uniform(0, 2 * np.pi))
        for t0 in onsets(_REM_BURSTS[s], 4.0):  # bursts of 3-8 rapid saccades within 1-4 s
            for t1 in t0 + np.sort(rng.uniform(0.0, rng.uniform(1.0, 4.0), rng.integers(3, 9))):
                eog[i] += rng.choice((-1.0, 1.0)) * rng.uniform(1.0, 2.5) * _boxcar(t, t1, rng.uniform(0.2, 0.6),
                                                                                   0.03)
        for t0 in onsets(_MOVEMENTS[s], 2.0):  # body movements: EMG bursts of 0.5-2 s
            win = (t >= t0) & (t < t0 + rng.uniform(0.5, 2.0))
            emg[i, win] *= 3.0
        for t0 in onsets(_TWITCHES[s], 0.3):  # phasic REM twitches
            win = (t >= t0) & (t < t0 + rng.uniform(0.05, 0.25))
            emg[i, win] += 2.0 * _EMG_TONE[0] * rng.standard_normal(int(win.sum()))
    out = np.stack([eeg, eog, emg], axis=1) * gains[None, :, None]
    return out.astype(np.float32)


def _boxcar(t: np.ndarray, t0: float, duration: float, edge: float) -> np.ndarray:
    """A plateau from ``t0`` for ``duration`` s with logistic edges of width ``edge`` s."""
    return expit((t - t0) / edge) - expit((t - t0 - duration) / edge)


def synthetic_psg(n_subjects: int, epochs_per_subject: int, *, rng: np.random.Generator,
                  sampling_rate: float = 100.0, subject_variability: float = 1.0,
                  transitions: Sequence[Sequence[float]] = TRANSITIONS) -> PSGData:
    """Draw ``n_subjects`` synthetic nights of ``epochs_per_subject`` 30-s epochs.

    Args:
        n_subjects: nights (one per subject).
        epochs_per_subject: 30-s epochs per night.
        rng: the NumPy generator everything is drawn from.
        sampling_rate: Hz (100 in Sleep-EDF; at least 40 so that spindles and beta fit).
        subject_variability: scales the spread of per-subject gains (log-sd 0.25),
            frequency scale (±10 %) and background level (±20 %); 0 makes subjects alike.
        transitions: the hypnogram's Markov chain (:data:`TRANSITIONS`).

    Returns:
        :class:`PSGData` with float32 signals in arbitrary units (microvolt-like scale).
    """
    check_int(n_subjects, "n_subjects", low=1)
    check_int(epochs_per_subject, "epochs_per_subject", low=1)
    _check_rng(rng)
    check_real(sampling_rate, "sampling_rate")
    check_real(subject_variability, "subject_variability")
    if sampling_rate < 40:
        raise ValueError(f"sampling_rate={sampling_rate} Hz is too low for 12-15 Hz spindles and beta; use >= 40")
    if subject_variability < 0:
        raise ValueError(f"subject_variability={subject_variability} must be >= 0")
    n = int(round(30 * sampling_rate))
    signals = np.empty((n_subjects, epochs_per_subject, 3, n), dtype=np.float32)
    stages = np.empty((n_subjects, epochs_per_subject), dtype=np.int64)
    v = subject_variability
    for s in range(n_subjects):
        stages[s] = sample_hypnogram(epochs_per_subject, rng, transitions)
        gains = np.exp(v * 0.25 * rng.standard_normal(3))
        freq_scale = 1.0 + v * rng.uniform(-0.1, 0.1)
        background = 1.0 + v * rng.uniform(-0.2, 0.2)
        signals[s] = _night(stages[s], sampling_rate, n, rng, freq_scale, background, gains)
    return PSGData(signals=signals, stages=stages, sampling_rate=float(sampling_rate))


def corrupt_eog(data: PSGData, fraction: float, rng: np.random.Generator, *,
                modes: Sequence[str] = CORRUPTION_MODES, channel: int = 1,
                max_shift: int = 3) -> tuple[PSGData, Corruption]:
    """Corrupt the EOG of ``fraction`` of each night's epochs (each mode equally likely).

    * ``shift``: the epoch shows the EOG of the epoch ``d`` away, ``1 <= |d| <= max_shift``
      (circular within the night): misalignment;
    * ``pop``: 1–3 electrode pops (steps of 4–8 EOG standard deviations, decaying with
      0.3–1 s time constants) on top of the signal;
    * ``swap``: the EOG of a random epoch of another stage of the same night.

    Returns the corrupted copy and a :class:`Corruption` record.
    """
    if not isinstance(data, PSGData):
        raise TypeError(f"data must be a PSGData, got {type(data).__name__}")
    check_real(fraction, "fraction", low=0.0, high=1.0)
    _check_rng(rng)
    check_int(channel, "channel", low=0, high=data.signals.shape[2] - 1)
    max_shift = check_int(max_shift, "max_shift")
    unknown = [m for m in modes if m not in CORRUPTION_MODES]
    if unknown or not modes:
        raise ValueError(f"modes={tuple(modes)!r}: choose from {', '.join(CORRUPTION_MODES)}")
    if max_shift < 1:
        raise ValueError(f"max_shift={max_shift} must be >= 1")
    clean = data.signals
    signals = clean.copy()
    n_sub, n_ep, _, n = clean.shape
    mask = np.zeros((n_sub, n_ep), dtype=bool)
    mode = np.full((n_sub, n_ep), -1, dtype=np.int8)
    source = data.stages.copy()
    t = np.arange(n) / data.sampling_rate
    mode_ids = np.array([CORRUPTION_MODES.index(m) for m in modes])
    for s in range(n_sub):
        scale = float(np.std(clean[s, :, channel]))
        chosen = rng.choice(n_ep, size=int(round(fraction * n_ep)), replace=False)
        for i in chosen:
            m = int(rng.choice(mode_ids))
            mask[s, i], mode[s, i] = True, m
            if CORRUPTION_MODES[m] == "shift":
                j = (i + int(rng.choice((-1, 1))) * int(rng.integers(1, max_shift + 1))) % n_ep
                signals[s, i, channel] = clean[s, j, channel]
                source[s, i] = data.stages[s, j]
            elif CORRUPTION_MODES[m] == "swap":
                others = np.flatnonzero(data.stages[s] != data.stages[s, i])
                if others.size == 0:  # a one-stage night: fall back to a pop
                    mode[s, i] = m = CORRUPTION_MODES.index("pop")
                else:
                    j = int(rng.choice(others))
                    signals[s, i, channel] = clean[s, j, channel]
                    source[s, i] = data.stages[s, j]
            if CORRUPTION_MODES[m] == "pop":
                for t0 in rng.uniform(0.0, 28.0, rng.integers(1, 4)):
                    tau = rng.uniform(0.3, 1.0)
                    step = rng.choice((-1.0, 1.0)) * rng.uniform(4.0, 8.0) * scale
                    signals[s, i, channel] += (step * np.exp(-np.clip(t - t0, 0, None) / tau) * (t >= t0)
                                               ).astype(np.float32)
    return dataclasses.replace(data, signals=signals), Corruption(mask=mask, mode=mode, source_stage=source)


def normalize_recordings(signals: np.ndarray) -> np.ndarray:
    """Robust z-score per night and channel: ``(x - median) / (IQR / 1.349)``.

    Args:
        signals: ``(n_subjects, n_epochs, C, T)`` (or ``(n_epochs, C, T)`` for one night).

    Returns:
        float32 array of the same shape. Median and IQR ignore short artifacts such as pops.
        NaN or inf in ``signals`` is a ``ValueError`` (it would spoil a whole night's scale).
    """
    x = np.asarray(signals, dtype=np.float32)
    if not np.isfinite(x).all():
        raise ValueError("signals contain NaN or inf; interpolate or drop those epochs first")
    single = x.ndim == 3
    if single:
        x = x[None]
    if x.ndim != 4:
        raise ValueError(f"signals must be (n_subjects, n_epochs, C, T) or (n_epochs, C, T), got {x.shape}")
    flat = x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)
    q25, med, q75 = np.percentile(flat, [25, 50, 75], axis=2)
    scale = (q75 - q25) / 1.349
    scale = np.where(scale > 0, scale, 1.0)
    out = (x - med[:, None, :, None]) / scale[:, None, :, None]
    return (out[0] if single else out).astype(np.float32)
