"""ConfSleepNet reproduction: scores and check values from per-epoch predictions (pure, tested by hand).

* :func:`score_epochs`: accuracy, macro-F1, Cohen's kappa, selective accuracy at a coverage,
  and the AUROC of the uncertainty for telling corrupted epochs from clean ones (all
  corruptions, and only those that contradict the truth);
* :func:`mean_over_seeds`: the per-arm metrics averaged over replicates;
* :func:`claim_values`: the seven check values of issue #12 from the averaged metrics.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from icml26.common.metrics import binary_auc
from icml26.papers.confsleepnet.metrics import accuracy, accuracy_coverage_curve, cohen_kappa, macro_f1

__all__ = ["ClaimValues", "EpochScores", "claim_values", "mean_over_seeds", "score_epochs"]


@dataclasses.dataclass(frozen=True)
class EpochScores:
    """One arm's scores on one test set.

    ``auroc`` is ``None`` without both corrupted and clean epochs; ``auroc_conflicting``
    is ``None`` without a conflicting corrupted epoch.
    """

    acc: float
    mf1: float
    kappa: float
    selacc: float
    auroc: float | None = None
    auroc_conflicting: float | None = None

    def as_metrics(self, tag: str) -> dict[str, float]:
        """``{"acc_<tag>": …, …}``, leaving out the AUROCs that were not measured."""
        return {f"{name}_{tag}": value for name, value in dataclasses.asdict(self).items() if value is not None}


def score_epochs(stages, pred, uncertainty, coverage: float, corrupted=None, conflicting=None) -> EpochScores:
    """Scores of predictions ``pred`` with ``uncertainty`` against ``stages`` (all ``(n,)``).

    ``corrupted`` and ``conflicting`` are ``(n,)`` masks (``None``: a clean test set). The
    AUROC ranks corrupted against clean epochs by uncertainty (higher = flagged);
    ``auroc_conflicting`` ranks only the conflicting corrupted epochs against the clean ones.
    """
    stages, pred, uncertainty = np.asarray(stages), np.asarray(pred), np.asarray(uncertainty)
    correct = pred == stages
    acc, mf1, kappa = accuracy(stages, pred), macro_f1(stages, pred), cohen_kappa(stages, pred)
    selacc = accuracy_coverage_curve(correct, uncertainty, [coverage])[0]
    auroc = auroc_conflicting = None
    if corrupted is not None:
        mask = np.asarray(corrupted, dtype=bool).ravel()
        if mask.any() and (~mask).any():
            auroc = binary_auc(uncertainty[mask], uncertainty[~mask])
            if conflicting is not None:
                hits = np.asarray(conflicting, dtype=bool).ravel()
                if hits.any():
                    auroc_conflicting = binary_auc(uncertainty[hits], uncertainty[~mask])
    return EpochScores(acc, mf1, kappa, selacc, auroc, auroc_conflicting)


def mean_over_seeds(per_seed: Sequence[Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """``{arm: {metric: mean over replicates}}`` for the arms and metrics of the first replicate."""
    if not per_seed:
        raise ValueError("per_seed is empty")
    return {arm: {m: float(np.mean([s[arm][m] for s in per_seed])) for m in per_seed[0][arm]}
            for arm in per_seed[0]}


@dataclasses.dataclass(frozen=True)
class ClaimValues:
    """The check values of issue #12 (differences in accuracy points are fractions: 0.01 = 1 point)."""

    clean_acc_vs_dempster: float
    corrupted_acc_vs_dempster: float
    corrupted_acc_vs_rcml: float
    auroc_corrupted: float
    auroc_vs_dempster: float
    selective_acc_vs_dempster: float
    hybrid_vs_five_class_eog: float


def claim_values(metrics: Mapping[str, Mapping[str, float]], fractions: Sequence[float]) -> ClaimValues:
    """The check values from mean metrics (arms ``conflict_aware``, ``dempster_tmc``,
    ``rcml_average``, ``conflict_aware_eog5``; keys ``acc_<pi>`` … with ``pi`` formatted ``:g``)."""
    ca, ds, rcml = metrics["conflict_aware"], metrics["dempster_tmc"], metrics["rcml_average"]
    hi = f"{max(fractions):g}"

    def mean_f1(arm: str) -> float:
        return float(np.mean([metrics[arm][f"mf1_{f:g}"] for f in fractions]))

    return ClaimValues(
        clean_acc_vs_dempster=ca["acc_0"] - ds["acc_0"],
        corrupted_acc_vs_dempster=ca[f"acc_{hi}"] - ds[f"acc_{hi}"],
        corrupted_acc_vs_rcml=ca[f"acc_{hi}"] - rcml[f"acc_{hi}"],
        auroc_corrupted=ca[f"auroc_{hi}"],
        auroc_vs_dempster=ca[f"auroc_{hi}"] - ds[f"auroc_{hi}"],
        selective_acc_vs_dempster=ca[f"selacc_{hi}"] - ds[f"selacc_{hi}"],
        hybrid_vs_five_class_eog=mean_f1("conflict_aware") - mean_f1("conflict_aware_eog5"),
    )
