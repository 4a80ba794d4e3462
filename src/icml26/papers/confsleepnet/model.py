"""ConfSleepNet: per-view evidential networks fused by the conflict-aware rule.

1. Each view (a channel group with its own category structure: EEG over the five stages,
   EOG and EMG over W / NREM / REM, a fused all-channel view over the five stages) has its
   own network mapping a 30-s epoch to evidence ``e = softplus(logits) >= 0``.
2. Coarse views' evidence is lifted to the five stages (``e_5 = e_3 @ D``).
3. Each view's evidence becomes an :class:`~icml26.papers.confsleepnet.opinion.Opinion`;
   the opinions are fused per epoch by
   :func:`~icml26.papers.confsleepnet.fusion.aggregate` (conflict-aware rule, views sorted
   by uncertainty).

Every view is trained on its own labels with the EDL loss (see :mod:`.training`).

The per-view network here is a small CNN (:class:`EpochCNN`) sized for CPUs. The
authors' backbone (two CNN branches with non-local blocks, BiLSTMs over 20-epoch
sequences, cross-attention and a 2000-d BiLSTM) is a GPU-scale choice: pass any
``backbone(in_channels, num_classes) -> nn.Module`` that returns non-negative evidence.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Literal, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.confsleepnet.fusion import FUSION_RULES, FusionRule, aggregate
from icml26.papers.confsleepnet.opinion import FIVE_TO_THREE, STAGES, Opinion, lift, lifting_matrix

__all__ = ["ConfSleepNet", "EpochCNN", "EpochEncoder", "ViewSpec", "default_views"]


@dataclasses.dataclass(frozen=True)
class ViewSpec:
    """One view: which channels it reads and which categories it separates.

    ``label_map[s]`` is the view's category for stage ``s`` (``(0, 1, 2, 3, 4)``: all five
    stages; :data:`~icml26.papers.confsleepnet.opinion.FIVE_TO_THREE`: the hybrid W/NREM/REM
    structure). Coarse evidence is lifted with ``lifting_matrix(label_map)``.
    """

    name: str
    channels: tuple[int, ...]
    label_map: tuple[int, ...] = (0, 1, 2, 3, 4)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"view name {self.name!r} must be a non-empty string")
        if isinstance(self.channels, (str, bytes)) or not all(
                isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in self.channels):
            raise TypeError(f"view {self.name!r}: channels={self.channels!r} must be a tuple of channel indices")
        if not self.channels or min(self.channels) < 0:
            raise ValueError(f"view {self.name!r}: channels={self.channels!r} must list channel indices >= 0")
        lifting_matrix(self.label_map)  # validates

    @property
    def num_categories(self) -> int:
        """K of this view's head."""
        return max(self.label_map) + 1

    @classmethod
    def five_class(cls, name: str, channels: Sequence[int]) -> "ViewSpec":
        """A view over the five stages W, N1, N2, N3, REM."""
        return cls(name, tuple(channels), tuple(range(len(STAGES))))

    @classmethod
    def hybrid(cls, name: str, channels: Sequence[int]) -> "ViewSpec":
        """A view over W, NREM, REM (the paper's hybrid category structure)."""
        return cls(name, tuple(channels), FIVE_TO_THREE)


def default_views(eeg: int = 0, eog: int = 1, emg: int = 2, *, eog_five_class: bool = False) -> tuple[ViewSpec, ...]:
    """The four views of the reproduction: EEG (5), EOG (hybrid 3), EMG (hybrid 3), fused (5).

    ``eog_five_class=True`` gives the ablation with a five-class EOG head.
    """
    for name, channel in (("eeg", eeg), ("eog", eog), ("emg", emg)):
        check_int(channel, name, low=0)
    eog_view = ViewSpec.five_class("eog", (eog,)) if eog_five_class else ViewSpec.hybrid("eog", (eog,))
    return (ViewSpec.five_class("eeg", (eeg,)), eog_view, ViewSpec.hybrid("emg", (emg,)),
            ViewSpec.five_class("fused", (eeg, eog, emg)))


def _check_signals(x: Tensor, channels: int) -> Tensor:
    """``(N, C, T)`` floating signals with at least ``channels`` channels, finite."""
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor of signals (N, C, T), got {type(x).__name__}")
    if x.ndim != 3 or x.shape[1] < channels:
        raise ValueError(f"x must be signals (N, C, T) with C >= {channels}, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"x must be floating point, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf; clean the signals (normalize_recordings refuses them too)")
    return x


class EpochEncoder(nn.Module):
    """A small 1-D CNN: ``(N, C, T)`` 30-s epochs to ``(N, out_features)`` features.

    Conv(kernel 0.25 s, stride 80 ms) -> BN -> ReLU -> MaxPool 4 -> Conv 7 -> BN -> ReLU
    -> MaxPool 4 -> Conv 5 -> BN -> ReLU -> global mean and max pooling.
    """

    def __init__(self, in_channels: int, sampling_rate: float = 100.0, width: int = 16,
                 dropout: float = 0.2) -> None:
        super().__init__()
        check_int(in_channels, "in_channels", low=1)
        check_int(width, "width", low=1)
        check_real(sampling_rate, "sampling_rate", low=0.0, low_open=True)
        check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        kernel = max(3, int(round(sampling_rate / 4)))
        stride = max(1, int(round(sampling_rate / 12.5)))
        self.body = nn.Sequential(
            nn.Conv1d(in_channels, width, kernel, stride=stride, bias=False),
            nn.BatchNorm1d(width), nn.ReLU(), nn.MaxPool1d(4),
            nn.Conv1d(width, 2 * width, 7, padding=3, bias=False),
            nn.BatchNorm1d(2 * width), nn.ReLU(), nn.MaxPool1d(4),
            nn.Conv1d(2 * width, 2 * width, 5, padding=2, bias=False),
            nn.BatchNorm1d(2 * width), nn.ReLU(),
        )
        self.dropout = nn.Dropout(dropout)
        self.out_features = 4 * width

    def forward(self, x: Tensor) -> Tensor:
        """x ``(N, C, T)`` → ``(N, out_features)``; T must cover the first kernel and two poolings."""
        h = self.body(_check_signals(x, self.body[0].in_channels))
        return self.dropout(torch.cat([h.mean(-1), h.amax(-1)], dim=-1))


class EpochCNN(nn.Module):
    """Evidential per-view network: :class:`EpochEncoder` -> Linear -> softplus.

    ``forward(x: (N, C, T)) -> (N, num_classes)`` non-negative evidence.
    """

    def __init__(self, in_channels: int, num_classes: int, sampling_rate: float = 100.0, width: int = 16,
                 dropout: float = 0.2) -> None:
        super().__init__()
        check_int(num_classes, "num_classes", low=1)
        self.encoder = EpochEncoder(in_channels, sampling_rate, width, dropout)
        self.head = nn.Linear(self.encoder.out_features, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        # e = softplus(logits)
        return F.softplus(self.head(self.encoder(x)))


class ConfSleepNet(nn.Module):
    """Per-view evidential networks and their conflict-aware fusion.

    Args:
        views: the views (default :func:`default_views`); names must be unique.
        sampling_rate: Hz of the input epochs (sets the CNN's first kernel).
        width: channels of :class:`EpochCNN`'s first layer.
        backbone: ``backbone(in_channels, num_classes) -> nn.Module`` returning ``(N, K)``
            non-negative evidence; overrides the small CNN.
        rule: default pairwise rule of :meth:`forward` (see :func:`aggregate`).
        order: default fold order of :meth:`forward`.
    """

    def __init__(self, views: Sequence[ViewSpec] | None = None, *, sampling_rate: float = 100.0, width: int = 16,
                 dropout: float = 0.2, backbone: Callable[[int, int], nn.Module] | None = None,
                 rule: str | FusionRule = "conflict_aware",
                 order: Literal["uncertainty", "given"] = "uncertainty") -> None:
        super().__init__()
        if isinstance(rule, str) and rule not in FUSION_RULES or not isinstance(rule, str) and not callable(rule):
            raise ValueError(f"rule={rule!r} must be one of {', '.join(FUSION_RULES)} or a callable "
                             f"(Opinion, Opinion) -> Opinion")
        if order not in ("uncertainty", "given"):
            raise ValueError(f"order={order!r} must be 'uncertainty' or 'given'")
        self.views = tuple(views) if views is not None else default_views()
        if not all(isinstance(v, ViewSpec) for v in self.views):
            raise TypeError("views must be ViewSpec objects (ViewSpec.five_class / ViewSpec.hybrid)")
        names = [v.name for v in self.views]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"views must be non-empty with unique names, got {names}")
        self.num_stages = len(self.views[0].label_map)
        if any(len(v.label_map) != self.num_stages for v in self.views):
            raise ValueError("every view's label_map must cover the same stages")
        make = backbone or (lambda c, k: EpochCNN(c, k, sampling_rate, width, dropout))
        self.nets = nn.ModuleDict({v.name: make(len(v.channels), v.num_categories) for v in self.views})
        for v in self.views:
            self.register_buffer(f"lift_{v.name}", lifting_matrix(v.label_map), persistent=False)
        self.rule, self.order = rule, order

    def evidence(self, x: Tensor) -> dict[str, Tensor]:
        """Each view's own evidence ``(N, K_view)`` for signals ``x: (N, C, T)``."""
        _check_signals(x, 1 + max(max(v.channels) for v in self.views))
        return {v.name: self.nets[v.name](x[:, list(v.channels)]) for v in self.views}

    def opinions(self, x: Tensor | None = None, *, evidence: dict[str, Tensor] | None = None) -> dict[str, Opinion]:
        """Each view's opinion over the stages (coarse views lifted), from ``x`` or given evidence."""
        if evidence is None:
            if x is None:
                raise ValueError("give signals x or per-view evidence")
            evidence = self.evidence(x)
        missing = [v.name for v in self.views if v.name not in evidence]
        if missing:
            raise ValueError(f"evidence has no entry for views {missing}; give one (N, K_view) tensor per view")
        return {v.name: Opinion.from_evidence(lift(evidence[v.name], getattr(self, f"lift_{v.name}")))
                for v in self.views}

    def fuse(self, opinions: dict[str, Opinion], *, views: Sequence[str] | None = None,
             rule: str | FusionRule | None = None, order: Literal["uncertainty", "given"] | None = None,
             conflict_space: Literal["stages", "common"] = "stages") -> Opinion:
        """Fuse the opinions of ``views`` (default all, in the model's order).

        ``conflict_space``: ``"stages"`` (the authors': ``C`` over the five stages) or ``"common"``
        (ours: ``C`` in the common category space of the two operands' label maps, see
        :func:`~icml26.papers.confsleepnet.fusion.conflict_in_common_space`; conflict-aware and Dempster rules).
        """
        names = list(views) if views is not None else [v.name for v in self.views]
        unknown = [n for n in names if n not in opinions]
        if unknown:
            raise ValueError(f"views {unknown} have no opinion; known: {sorted(opinions)}")
        if conflict_space not in ("stages", "common"):
            raise ValueError(f"conflict_space={conflict_space!r} must be 'stages' or 'common'")
        label_maps = None
        if conflict_space == "common":
            specs = {v.name: v for v in self.views}
            label_maps = [specs[n].label_map for n in names]
        return aggregate([opinions[n] for n in names], rule=rule or self.rule, order=order or self.order,
                         label_maps=label_maps)

    def forward(self, x: Tensor, *, rule: str | FusionRule | None = None,
                order: Literal["uncertainty", "given"] | None = None) -> Opinion:
        """The fused opinion ``(N, 5)`` of signals ``x: (N, C, T)``."""
        return self.fuse(self.opinions(x), rule=rule, order=order)
