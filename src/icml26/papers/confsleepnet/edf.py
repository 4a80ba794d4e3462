"""Reading real polysomnography: an EDF recording and its hypnogram, cut into 30-s epochs.

Through ``mne`` (``pip install "icml26[sleep]"``):

1. read the EDF file and keep the requested channels, in the requested order;
2. optionally resample;
3. take the stage annotations from the hypnogram file (Sleep-EDF's ``*-Hypnogram.edf``, or
   any format ``mne.read_annotations`` reads) or from the recording's own EDF+ annotations;
4. cut every stage annotation into 30-s epochs (``mne.events_from_annotations`` with
   ``chunk_duration``), drop the descriptions outside ``stage_map`` ("Sleep stage ?",
   "Movement time") and epochs running past the end of the signal;
5. return ``(n_epochs, C, samples)`` signals and ``(n_epochs,)`` stages in 0..4.

R&K stages 3 and 4 are merged into N3, as in the authors' ``prepare.py`` (DeepSleepNet's).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Mapping, Sequence

import numpy as np

from icml26.common.argcheck import check_real, require_finite
from icml26.common.extras import require

__all__ = ["AASM_STAGE_MAP", "SLEEP_EDF_STAGE_MAP", "Recording", "load_edf_recording"]

log = logging.getLogger(__name__)

#: Sleep-EDF (R&K) hypnogram descriptions -> W, N1, N2, N3, REM (S3 and S4 -> N3).
SLEEP_EDF_STAGE_MAP: dict[str, int] = {
    "Sleep stage W": 0, "Sleep stage 1": 1, "Sleep stage 2": 2, "Sleep stage 3": 3, "Sleep stage 4": 3,
    "Sleep stage R": 4,
}
#: AASM-style descriptions (MASS, exported scorings) -> W, N1, N2, N3, REM.
AASM_STAGE_MAP: dict[str, int] = {
    "W": 0, "N1": 1, "N2": 2, "N3": 3, "R": 4, "REM": 4,
    "Sleep stage N1": 1, "Sleep stage N2": 2, "Sleep stage N3": 3,
}


@dataclasses.dataclass(frozen=True)
class Recording:
    """One night cut into epochs.

    ``signals``: ``(n_epochs, C, samples)`` float32 in the file's physical units as mne
    returns them (volts); ``stages``: ``(n_epochs,)`` int64; ``onsets``: ``(n_epochs,)``
    seconds from the start of the recording.
    """

    signals: np.ndarray
    stages: np.ndarray
    onsets: np.ndarray
    sampling_rate: float
    channel_names: tuple[str, ...]

    def __post_init__(self) -> None:
        signals = np.asarray(self.signals)
        n = signals.shape[0] if signals.ndim == 3 else -1
        if n < 0 or np.asarray(self.stages).shape != (n,) or np.asarray(self.onsets).shape != (n,):
            raise ValueError(f"signals must be (n_epochs, C, samples) with stages and onsets (n_epochs,), got "
                             f"{signals.shape}, {np.asarray(self.stages).shape}, {np.asarray(self.onsets).shape}")
        if signals.shape[1] != len(self.channel_names):
            raise ValueError(f"signals have {signals.shape[1]} channels but channel_names lists "
                             f"{len(self.channel_names)}")
        check_real(self.sampling_rate, "sampling_rate", low=0.0, low_open=True)
        require_finite(signals, "signals", hint="interpolate or drop those epochs first")
        require_finite(self.onsets, "onsets", hint="give each epoch's start in seconds")


def load_edf_recording(psg_path: str | os.PathLike, hypnogram_path: str | os.PathLike | None = None, *,
                       channels: Sequence[str], epoch_seconds: float = 30.0,
                       sampling_rate: float | None = None,
                       stage_map: Mapping[str, int] | None = None) -> Recording:
    """Load an EDF recording and its hypnogram as 30-s epochs.

    Args:
        psg_path: the EDF/EDF+ signal file.
        hypnogram_path: the stage annotations (e.g. Sleep-EDF's ``*-Hypnogram.edf``); ``None``
            uses the annotations stored in ``psg_path``.
        channels: channel names to keep, in this order (e.g. ``("EEG Fpz-Cz",
            "EOG horizontal", "EMG submental")``).
        epoch_seconds: epoch length (30 s in AASM scoring).
        sampling_rate: resample to this rate (Hz); ``None`` keeps the file's.
        stage_map: annotation description -> stage index; default: Sleep-EDF's and AASM's
            descriptions. Other descriptions are dropped.
    """
    mne = require("mne", "sleep")
    check_real(epoch_seconds, "epoch_seconds", low=0.0, low_open=True)
    if sampling_rate is not None:
        check_real(sampling_rate, "sampling_rate", low=0.0, low_open=True)
    if isinstance(channels, str):
        raise TypeError(f"channels={channels!r} must be a sequence of channel names, e.g. ({channels!r},)")
    if not os.path.isfile(psg_path):
        raise FileNotFoundError(f"psg_path={os.fspath(psg_path)!r} is not a file")
    raw = mne.io.read_raw_edf(os.fspath(psg_path), preload=True, verbose="error")
    missing = [c for c in channels if c not in raw.ch_names]
    if missing or not channels:
        raise ValueError(f"channels {missing or list(channels)} are not in {psg_path}; it has {raw.ch_names}")
    raw.pick(list(channels))
    raw.reorder_channels(list(channels))
    if sampling_rate is not None and sampling_rate != raw.info["sfreq"]:
        raw.resample(sampling_rate, verbose="error")
    if hypnogram_path is not None:
        raw.set_annotations(mne.read_annotations(os.fspath(hypnogram_path)), emit_warning=False)
    stage_map = dict(stage_map) if stage_map is not None else {**SLEEP_EDF_STAGE_MAP, **AASM_STAGE_MAP}
    present = {d: stage_map[d] for d in set(raw.annotations.description) if d in stage_map}
    if not present:
        raise ValueError(f"no annotation of {psg_path if hypnogram_path is None else hypnogram_path} names a "
                         f"stage in stage_map; found {sorted(set(raw.annotations.description))}")
    events, _ = mne.events_from_annotations(raw, event_id=present, chunk_duration=epoch_seconds, verbose="error")
    fs = float(raw.info["sfreq"])
    n = int(round(epoch_seconds * fs))
    data = raw.get_data()
    starts = events[:, 0] - raw.first_samp
    keep = (starts >= 0) & (starts + n <= data.shape[1])
    if (~keep).any():
        log.info("dropping %d epochs that run past the signal", int((~keep).sum()))
    starts, stages = starts[keep], events[keep, 2]
    signals = np.stack([data[:, s:s + n] for s in starts]).astype(np.float32) if len(starts) else \
        np.empty((0, len(channels), n), dtype=np.float32)
    return Recording(signals=signals, stages=stages.astype(np.int64), onsets=starts / fs, sampling_rate=fs,
                     channel_names=tuple(channels))
