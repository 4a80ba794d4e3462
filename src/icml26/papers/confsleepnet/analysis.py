"""ConfSleepNet reproduction: scores and check values from per-epoch predictions (pure, tested by hand).

* :func:`score_epochs`: accuracy, macro-F1, Cohen's kappa, selective accuracy at a coverage,
  and the AUROC of the uncertainty for telling corrupted epochs from clean ones (all
  corruptions, and only the detectable ones, e.g. :func:`view_flags_corruption`), overall
  and per corruption mode (:func:`detection_scores`), with the analytic ceiling of the all-corruption AUROC (:func:`auroc_ceiling`);
* :func:`view_flags_corruption`: the corrupted epochs the corrupted view itself gets wrong
  (what makes a corruption *detectable*: the view's own prediction contradicts the truth);
* :func:`mean_over_seeds`: the per-arm metrics averaged over replicates;
* :func:`claim_values`: the check values of the claim from the averaged metrics.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from icml26.common.metrics import binary_auc
from icml26.papers.confsleepnet.metrics import accuracy, accuracy_coverage_curve, cohen_kappa, macro_f1

__all__ = ["BEST_DEMPSTER", "ClaimValues", "DetectionScores", "EpochScores", "auroc_ceiling", "claim_values",
           "detection_scores", "mean_over_seeds", "score_epochs", "view_flags_corruption"]

#: The Dempster baselines the headline takes the strongest of, per metric: TMC's reduced rule, the same with
#: the common-space conflict, and set-valued Dempster-Shafer scored by m(Theta) and by Shafer's conflict.
BEST_DEMPSTER: tuple[str, ...] = ("dempster_tmc", "dempster_common", "dempster_sets", "dempster_sets_conflict")


def view_flags_corruption(view_prediction, stages, label_map, corrupted):
    """Corrupted epochs whose corrupted view itself signals the corruption: its own prediction
    (in its own categories, ``(n,)``) differs from the true stage's category ``label_map[stages]``.

    A corruption the view still classifies correctly leaves its opinion as it would be clean,
    so no fusion rule can see it; one it gets wrong puts a contradicting opinion in the fusion.
    Returns ``(n,)`` bool (``corrupted`` and ``stages`` ``(n,)`` too).
    """
    pred = np.asarray(view_prediction).ravel()
    truth = np.asarray(stages).ravel()
    hit = np.asarray(corrupted, dtype=bool).ravel()
    lm = np.asarray(label_map)
    if not (pred.shape == truth.shape == hit.shape):
        raise ValueError("view_prediction, stages and corrupted must have one entry per epoch")
    if truth.size and (truth.min() < 0 or truth.max() >= lm.size):
        raise ValueError(f"stages must be indices into label_map (0..{lm.size - 1})")
    return hit & (pred != lm[truth])


def auroc_ceiling(detectable_share: float) -> float:
    """The highest AUROC(score -> corrupted epoch vs clean) any score reaches when only a share
    ``f`` of the corrupted epochs differ from clean ones in what the score sees:
    ``f * 1 + (1 - f) * 1/2`` (the detectable ones ranked above every clean epoch, the rest
    indistinguishable from clean ones, so ranked against them at chance)."""
    f = float(detectable_share)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"detectable_share={detectable_share} must lie in [0, 1]")
    return 0.5 + 0.5 * f


@dataclasses.dataclass(frozen=True)
class DetectionScores:
    """AUROC of the uncertainty for corrupted (of one mode, or all) against clean epochs.

    ``auroc``: every corrupted epoch; ``auroc_detectable``: only the detectable ones (in the
    reproduction, those the corrupted view itself gets wrong; ``None`` when there is none);
    ``detectable_share``: their share of the corrupted epochs; ``ceiling``: :func:`auroc_ceiling` of that share, the
    best ``auroc`` any fusion rule could reach.
    """

    auroc: float
    auroc_detectable: float | None
    detectable_share: float
    ceiling: float


def detection_scores(uncertainty, corrupted, detectable, clean=None) -> DetectionScores | None:
    """:class:`DetectionScores` of ``uncertainty`` (higher = flagged) for the ``corrupted`` epochs,
    of which ``detectable`` (a subset) are detectable, against the ``clean`` ones (default: the
    epochs not corrupted). All ``(n,)``; ``None`` without a corrupted or a clean epoch."""
    u = np.asarray(uncertainty, dtype=np.float64).ravel()
    hit = np.asarray(corrupted, dtype=bool).ravel()
    det = np.asarray(detectable, dtype=bool).ravel() & hit
    ok = ~hit if clean is None else np.asarray(clean, dtype=bool).ravel()
    if not (u.shape == hit.shape == det.shape == ok.shape):
        raise ValueError("uncertainty, corrupted, detectable and clean must have one entry per epoch")
    if not hit.any() or not ok.any():
        return None
    share = float(det.sum() / hit.sum())
    return DetectionScores(auroc=binary_auc(u[hit], u[ok]),
                           auroc_detectable=binary_auc(u[det], u[ok]) if det.any() else None,
                           detectable_share=share, ceiling=auroc_ceiling(share))


@dataclasses.dataclass(frozen=True)
class EpochScores:
    """One arm's scores on one test set.

    ``detection`` is ``None`` on a clean test set; ``per_mode`` maps each corruption mode
    present to its :class:`DetectionScores` (corrupted epochs of that mode against all clean ones).
    """

    acc: float
    mf1: float
    kappa: float
    selacc: float
    detection: DetectionScores | None = None
    per_mode: dict[str, DetectionScores] = dataclasses.field(default_factory=dict)

    @property
    def auroc(self) -> float | None:
        """AUROC over every corrupted epoch (``None`` on a clean test set)."""
        return None if self.detection is None else self.detection.auroc

    @property
    def auroc_detectable(self) -> float | None:
        """AUROC over the detectable corrupted epochs."""
        return None if self.detection is None else self.detection.auroc_detectable

    def as_metrics(self, tag: str) -> dict[str, float]:
        """``{"acc_<tag>": …, "auroc_<tag>": …, "auroc_detectable_shift_<tag>": …}``, leaving out what
        was not measured."""
        out = {f"{name}_{tag}": getattr(self, name) for name in ("acc", "mf1", "kappa", "selacc")}
        groups = ([("", self.detection)] if self.detection is not None else []) + \
            [(f"_{mode}", d) for mode, d in self.per_mode.items()]
        for suffix, d in groups:
            out[f"auroc{suffix}_{tag}"] = d.auroc
            out[f"detectable_share{suffix}_{tag}"] = d.detectable_share
            out[f"auroc_ceiling{suffix}_{tag}"] = d.ceiling
            if d.auroc_detectable is not None:
                out[f"auroc_detectable{suffix}_{tag}"] = d.auroc_detectable
        return out


def score_epochs(stages, pred, uncertainty, coverage: float, corrupted=None, detectable=None, mode=None,
                 modes: Sequence[str] = ("shift", "pop", "swap")) -> EpochScores:
    """Scores of predictions ``pred`` with ``uncertainty`` against ``stages`` (all ``(n,)``).

    ``corrupted`` and ``detectable`` are ``(n,)`` masks (``None``: a clean test set;
    ``detectable`` defaults to ``corrupted``); ``mode`` the ``(n,)`` index into ``modes`` of each
    corrupted epoch's corruption (``None``: no per-mode scores). See :func:`detection_scores`.
    """
    stages, pred, uncertainty = np.asarray(stages), np.asarray(pred), np.asarray(uncertainty)
    correct = pred == stages
    acc, mf1, kappa = accuracy(stages, pred), macro_f1(stages, pred), cohen_kappa(stages, pred)
    selacc = accuracy_coverage_curve(correct, uncertainty, [coverage])[0]
    detection, per_mode = None, {}
    if corrupted is not None:
        hit = np.asarray(corrupted, dtype=bool).ravel()
        det = hit if detectable is None else np.asarray(detectable, dtype=bool).ravel()
        detection = detection_scores(uncertainty, hit, det)
        if mode is not None and detection is not None:
            m = np.asarray(mode).ravel()
            for i, name in enumerate(modes):
                scores = detection_scores(uncertainty, hit & (m == i), det & (m == i), clean=~hit)
                if scores is not None:
                    per_mode[name] = scores
    return EpochScores(acc, mf1, kappa, selacc, detection, per_mode)


def mean_over_seeds(per_seed: Sequence[Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """``{arm: {metric: mean over the replicates that measured it}}`` for the arms of the first
    replicate (a per-mode AUROC is missing in a replicate with no epoch of that mode)."""
    if not per_seed:
        raise ValueError("per_seed is empty")
    out: dict[str, dict[str, float]] = {}
    for arm in per_seed[0]:
        names = list(dict.fromkeys(m for s in per_seed for m in s.get(arm, {})))
        out[arm] = {m: float(np.mean([s[arm][m] for s in per_seed if m in s.get(arm, {})])) for m in names}
    return out


@dataclasses.dataclass(frozen=True)
class ClaimValues:
    """The claim's check values (differences in accuracy points are fractions: 0.01 = 1 point)."""

    clean_acc_vs_dempster: float
    corrupted_acc_vs_dempster: float
    corrupted_acc_vs_rcml: float
    auroc_detectable: float
    auroc_detectable_vs_dempster: float
    selective_acc_vs_dempster: float
    hybrid_vs_five_class_eog: float
    common_auroc_detectable_vs_dempster: float
    corrupted_acc_vs_best_dempster: float
    auroc_detectable_vs_best_dempster: float
    common_auroc_detectable_vs_dempster_common: float
    auroc_detectable_vs_dempster_sets: float


def claim_values(metrics: Mapping[str, Mapping[str, float]], fractions: Sequence[float]) -> ClaimValues:
    """The check values from mean metrics (arms ``conflict_aware``, ``dempster_tmc``,
    ``rcml_average``, ``conflict_aware_eog5``, ``conflict_aware_common`` and those of :data:`BEST_DEMPSTER`;
    keys ``acc_<pi>`` … with ``pi`` formatted ``:g``)."""
    ca, ds, rcml = metrics["conflict_aware"], metrics["dempster_tmc"], metrics["rcml_average"]
    common, ds_common = metrics["conflict_aware_common"], metrics["dempster_common"]
    hi = f"{max(fractions):g}"

    def best_dempster(key: str) -> float:
        """The strongest Dempster variant on this metric (chosen on the reported figure: against the method)."""
        return max(metrics[arm][key] for arm in BEST_DEMPSTER)

    def mean_f1(arm: str) -> float:
        return float(np.mean([metrics[arm][f"mf1_{f:g}"] for f in fractions]))

    return ClaimValues(
        clean_acc_vs_dempster=ca["acc_0"] - ds["acc_0"],
        corrupted_acc_vs_dempster=ca[f"acc_{hi}"] - ds[f"acc_{hi}"],
        corrupted_acc_vs_rcml=ca[f"acc_{hi}"] - rcml[f"acc_{hi}"],
        auroc_detectable=ca[f"auroc_detectable_{hi}"],
        auroc_detectable_vs_dempster=ca[f"auroc_detectable_{hi}"] - ds[f"auroc_detectable_{hi}"],
        selective_acc_vs_dempster=ca[f"selacc_{hi}"] - ds[f"selacc_{hi}"],
        hybrid_vs_five_class_eog=mean_f1("conflict_aware") - mean_f1("conflict_aware_eog5"),
        common_auroc_detectable_vs_dempster=common[f"auroc_detectable_{hi}"] - ds[f"auroc_detectable_{hi}"],
        corrupted_acc_vs_best_dempster=ca[f"acc_{hi}"] - best_dempster(f"acc_{hi}"),
        auroc_detectable_vs_best_dempster=ca[f"auroc_detectable_{hi}"] - best_dempster(f"auroc_detectable_{hi}"),
        common_auroc_detectable_vs_dempster_common=(common[f"auroc_detectable_{hi}"]
                                                    - ds_common[f"auroc_detectable_{hi}"]),
        auroc_detectable_vs_dempster_sets=(ca[f"auroc_detectable_{hi}"]
                                           - max(metrics[a][f"auroc_detectable_{hi}"]
                                                 for a in ("dempster_sets", "dempster_sets_conflict"))),
    )
