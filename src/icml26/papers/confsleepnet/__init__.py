"""ConfSleepNet: conflict-aware evidential fusion for reliable multi-view sleep staging.

*ConfSleepNet: A Conflict-aware Evidential Framework for Reliable Sleep Stage
Classification* (Tian et al., ICML 2026, arXiv 2605.17021). Each view (EEG, EOG, EMG, an
all-channel view) gives Dirichlet evidence over its own categories (EOG and EMG: the hybrid
W / NREM / REM structure), lifted to the five stages; the views' opinions are fused pairwise
by the conflict-aware rule, most uncertain view first; every view is trained with the EDL loss.

Quick use on your own per-view evidence ``(n_epochs, K)``::

    from icml26.papers.confsleepnet import Opinion, THREE_TO_FIVE, aggregate, lift
    eeg = Opinion.from_evidence(eeg_evidence)                     # (N, 5)
    eog = Opinion.from_evidence(lift(eog_evidence, THREE_TO_FIVE))  # (N, 3) -> (N, 5)
    fused = aggregate([eeg, eog], rule="conflict_aware")
    stage, flag = fused.prediction(), fused.uncertainty             # (N,), (N,)

``METHOD`` is the pairwise rule :func:`fuse_conflict_aware`; ``BASELINES`` holds the two
rules it is compared with, drop-ins with its signature (Dempster's rule of TMC and RCML's
average). The late-fusion network :class:`LateFusionNet` is a baseline too, but a model,
not a rule, and so is set-valued Dempster-Shafer (:func:`fuse_dempster_sets`): it needs each
view's category structure, so it fuses all views at once rather than pairwise.

See ``README.md`` beside this file for the method, what is the authors' and what is ours,
and the reproduction.
"""

from typing import Callable

from icml26.papers.confsleepnet.baselines import (
    LateFusionNet,
    fuse_average,
    fuse_dempster,
)
from icml26.papers.confsleepnet.data import (
    CHANNELS,
    CORRUPTION_MODES,
    TRANSITIONS,
    Corruption,
    PSGData,
    corrupt_eog,
    normalize_recordings,
    sample_hypnogram,
    synthetic_psg,
)
from icml26.papers.confsleepnet.edf import (
    AASM_STAGE_MAP,
    SLEEP_EDF_STAGE_MAP,
    Recording,
    load_edf_recording,
)
from icml26.papers.confsleepnet.fusion import (
    FUSION_RULES,
    aggregate,
    common_partition,
    conflict,
    conflict_in_common_space,
    fuse_conflict_aware,
    partition_matrix,
    sort_by_uncertainty,
)
from icml26.papers.confsleepnet.loss import edl_loss, kl_to_uniform_dirichlet
from icml26.papers.confsleepnet.mass import (
    SetFusion,
    combine_masses,
    fuse_dempster_sets,
    view_masses,
)
from icml26.papers.confsleepnet.metrics import (
    accuracy,
    accuracy_coverage_curve,
    cohen_kappa,
    confusion_matrix,
    macro_f1,
    selective_accuracy,
)
from icml26.papers.confsleepnet.model import (
    ConfSleepNet,
    EpochCNN,
    EpochEncoder,
    ViewSpec,
    default_views,
)
from icml26.papers.confsleepnet.opinion import (
    FIVE_TO_THREE,
    HYBRID_CATEGORIES,
    STAGES,
    THREE_TO_FIVE,
    Opinion,
    lift,
    lifting_matrix,
)
from icml26.papers.confsleepnet.training import (
    TrainLog,
    fit_confsleepnet,
    fit_late_fusion,
    predict_in_batches,
)

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD: Callable = fuse_conflict_aware
"""The paper's pairwise fusion rule."""
BASELINES: dict[str, Callable] = {"dempster": fuse_dempster, "average": fuse_average}
"""Drop-in alternatives to :data:`METHOD`: TMC's reduced Dempster rule and RCML's average."""

__all__ = [
    "AASM_STAGE_MAP",
    "BASELINES",
    "CHANNELS",
    "CORRUPTION_MODES",
    "ConfSleepNet",
    "Corruption",
    "EpochCNN",
    "EpochEncoder",
    "FIVE_TO_THREE",
    "FUSION_RULES",
    "HYBRID_CATEGORIES",
    "LateFusionNet",
    "Opinion",
    "PSGData",
    "Recording",
    "SLEEP_EDF_STAGE_MAP",
    "STAGES",
    "SetFusion",
    "THREE_TO_FIVE",
    "TRANSITIONS",
    "TrainLog",
    "ViewSpec",
    "accuracy",
    "accuracy_coverage_curve",
    "aggregate",
    "cohen_kappa",
    "combine_masses",
    "common_partition",
    "conflict",
    "conflict_in_common_space",
    "confusion_matrix",
    "corrupt_eog",
    "default_views",
    "edl_loss",
    "fit_confsleepnet",
    "fit_late_fusion",
    "fuse_average",
    "fuse_conflict_aware",
    "fuse_dempster",
    "fuse_dempster_sets",
    "kl_to_uniform_dirichlet",
    "lift",
    "lifting_matrix",
    "load_edf_recording",
    "macro_f1",
    "normalize_recordings",
    "partition_matrix",
    "predict_in_batches",
    "sample_hypnogram",
    "selective_accuracy",
    "sort_by_uncertainty",
    "synthetic_psg",
    "view_masses",
]
