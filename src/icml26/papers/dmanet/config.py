"""Configuration of the DMANet reproduction: the data sets and horizons, the models and their
training, the time-axis and strided-only sections, with the range each field accepts."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import validate_numbers

__all__ = ["DATASETS", "MODELS", "SYNTHETIC", "TIME_CUTOFFS", "Config"]

MODELS = ("dmanet", "dmanet_no_filter", "dmanet_nyquist", "timemixer_pool", "dlinear", "patchtst")
DATASETS = ("chaotic", "taylor", "sunspots", "folding")
SYNTHETIC = ("chaotic", "folding")
TIME_CUTOFFS = ("authors", "nyquist")


@dataclasses.dataclass
class Config:
    """DMANet reproduction settings; defaults are the paper's scale (authors' ``run.py`` and scripts)."""

    datasets: tuple[str, ...] = ("chaotic", "taylor")
    """Forecasting data sets: ``chaotic`` (aliasing Lorenz), ``taylor``, ``sunspots``, ``folding`` (fast tones
    that fold onto the predictive slow tone, :func:`~icml26.papers.dmanet.folding.folding_tones`). The first
    synthetic one listed (``chaotic`` or ``folding``) is also the one the diagnostics use (:attr:`synthetic`)."""
    horizons: tuple[int, ...] = dataclasses.field(default=(48, 96), metadata={"min": 1})
    """Forecast horizons H (brief §4: 48 and 96 for both data sets)."""
    chaotic_length: int = dataclasses.field(default=8000, metadata={"min": 1})
    """Samples of the aliasing-Lorenz series (brief §4); also the folding series' length."""
    chaotic_seq_len: int = dataclasses.field(default=96, metadata={"min": 1})
    """Input length L on the chaotic set (96, the paper's L); also on the folding set."""
    taylor_seq_len: int = dataclasses.field(default=336, metadata={"min": 1})
    """Input length L on Taylor (one week of half-hours, brief §4); also used for sunspots."""
    seeds: int = dataclasses.field(default=3, metadata={"min": 1})
    """Training seeds per model, data set and horizon (mean ± std reported)."""
    models: tuple[str, ...] = MODELS
    """Arms to train, the first ``dmanet``: also ``dmanet_no_filter`` (ablation), ``dmanet_nyquist`` (cutoff at
    the new Nyquist bin, rho = 2/s), ``timemixer_pool`` (average pooling), ``dlinear``, ``patchtst``."""
    d_model: int = dataclasses.field(default=512, metadata={"min": 1})
    """D, the latent length of DMANet and its ablations (512 in ``run.py``)."""
    levels: int = dataclasses.field(default=3, metadata={"min": 1})
    """M, downsampling levels (``down_sampling_layers``)."""
    e_layers: int = dataclasses.field(default=1, metadata={"min": 1})
    """Encoder blocks (1 in the ETT/Weather scripts)."""
    filter_axis: Literal["latent", "time"] = "latent"
    """Where the multiscale encoder works: ``latent`` (authors' code) or ``time``."""
    dropout: float = dataclasses.field(default=0.1, metadata={"min": 0.0})
    """Dropout inside the downsamplers and PatchTST."""
    patchtst_d_model: int = dataclasses.field(default=128, metadata={"min": 1})
    """PatchTST token width (PatchTST's default)."""
    patchtst_layers: int = dataclasses.field(default=3, metadata={"min": 1})
    """PatchTST encoder layers (PatchTST's default)."""
    epochs: int = dataclasses.field(default=15, metadata={"min": 1})
    """Maximum epochs (authors' ``train_epochs``)."""
    patience: int = dataclasses.field(default=3, metadata={"min": 1})
    """Early-stopping patience on validation MSE (authors: 3)."""
    batch_size: int = dataclasses.field(default=16, metadata={"min": 1})
    """Windows per step (authors: 8–16)."""
    lr: float = 1e-3
    """Adam's initial learning rate, halved after each epoch (authors: 1e-4 to 2e-3 by data set)."""
    loss: Literal["frequency", "mse"] = "frequency"
    """Training loss for every model (authors: frequency loss, lambda = 1)."""
    train_step: int = dataclasses.field(default=1, metadata={"min": 1})
    """Hop between training windows (1: all windows)."""
    max_batches_per_epoch: int = 0
    """Cap on steps per epoch (0: no cap)."""
    threads: int = 0
    """The most torch intra-op threads the runner gives this run (0: no limit). Tiny models run faster on one."""
    time_family_seeds: int = 8
    """Seeds of the ``filter_axis="time"`` family on the ``synthetic`` set (DMANet and its no-filter
    ablation, paired by seed; at least 8 so the paired interval can resolve). 0 skips the family."""
    strided_seeds: int = 4
    """Seeds of the strided-only diagnostic (:class:`~icml26.papers.dmanet.sections.StridedOnlyDMANet`:
    no full-resolution path, filter vs no filter per level, ``synthetic`` set, first horizon). 0 skips it."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        unknown = [d for d in self.datasets if d not in DATASETS]
        if unknown or not self.datasets:
            raise ValueError(f"datasets={self.datasets!r}: choose from {', '.join(DATASETS)}")
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models or self.models[0] != "dmanet":
            raise ValueError(f"models={self.models!r}: choose from {', '.join(MODELS)}, with 'dmanet' first")
        if not self.horizons:
            raise ValueError(f"horizons={self.horizons!r} must hold at least one horizon")
        for name in ("time_family_seeds", "strided_seeds"):
            if getattr(self, name) and (self.synthetic not in self.datasets or self.chaotic_seq_len % 2 ** self.levels):
                raise ValueError(f"{name} > 0 needs the chaotic or folding data set in datasets and "
                                 f"chaotic_seq_len divisible by 2**levels = {2 ** self.levels}; set {name}=0 otherwise")
        if self.filter_axis not in ("latent", "time"):
            raise ValueError(f"filter_axis={self.filter_axis!r} must be 'latent' or 'time'")
        axis_len = {"latent": [self.d_model], "time": [self.chaotic_seq_len, self.taylor_seq_len]}
        for length in axis_len[self.filter_axis]:
            if length % 2 ** self.levels:
                raise ValueError(f"length {length} on the {self.filter_axis} axis must be divisible by "
                                 f"2**levels = {2 ** self.levels}; change d_model/seq_len or levels")
        if self.chaotic_length < 4 * (self.chaotic_seq_len + max(self.horizons)):
            raise ValueError(f"chaotic_length={self.chaotic_length} is too short for the windows; raise it")
        if self.loss not in ("frequency", "mse"):
            raise ValueError(f"loss={self.loss!r} must be 'frequency' or 'mse'")
        if not self.dropout < 1 or self.lr <= 0:
            raise ValueError(f"need 0 <= dropout < 1 and lr > 0, got dropout={self.dropout}, lr={self.lr}")

    # synthetic and time_cutoffs are read off datasets (properties, not fields): a new field would change the
    # committed quick run's recorded config, which tests/test_reproductions.py compares with Config.quick().
    @property
    def synthetic(self) -> str:
        """The synthetic data set the leakage table, the ridge check, the time-axis family and the strided-only
        diagnostic use: the first of ``datasets`` among ``chaotic`` (aliasing Lorenz: the folded band is
        unforecastable noise, the "no harm" case) and ``folding`` (it folds onto the predictive tone); ``chaotic``
        when neither is listed."""
        return next((d for d in self.datasets if d in SYNTHETIC), "chaotic")

    @property
    def time_cutoffs(self) -> tuple[str, ...]:
        """Cutoffs of the time-axis family's filtered arms: the authors' per-level rho/2 always, and on the folding
        tones also the new Nyquist bin (rho = 2/s), each paired by seed with the no-filter arm."""
        return TIME_CUTOFFS if self.synthetic == "folding" else ("authors",)

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: small widths, few epochs (a few minutes on 2 cores)."""
        return cls(d_model=128, patchtst_d_model=32, patchtst_layers=1, epochs=5, batch_size=32,
                   lr=1e-2, train_step=1, max_batches_per_epoch=100, threads=1)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(chaotic_length=1200, chaotic_seq_len=48, taylor_seq_len=48, horizons=(16,), seeds=1,
                   d_model=16, patchtst_d_model=16, patchtst_layers=1, epochs=1, batch_size=32, lr=2e-3,
                   train_step=4, max_batches_per_epoch=4, threads=1, time_family_seeds=2, strided_seeds=2)
