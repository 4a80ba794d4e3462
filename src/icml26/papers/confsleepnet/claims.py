"""The checks of ConfSleepNet's reproduction (issue #12, "Figures to reach"), declared before any run.

"The largest corrupted fraction" is the largest ``pi`` of ``Config.corruption_fractions``
(0.4 in every setting); the run's note on each check states the ``pi`` and the coverage used.

Issue #29: the uncertainty checks count only *detectable* corruptions, those whose EOG
contradicts the true stage at the hybrid (W / NREM / REM) granularity (and electrode pops).
A shift or swap that brings in another NREM stage's EOG changes nothing any view's
hybrid evidence can see, so over all corruptions the best AUROC any rule can reach is
``0.5 + f / 2`` (``f`` the detectable share, about 0.45: ceiling about 0.72 < 0.85); the run
reports that AUROC and its ceiling, per mode, as metrics.
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("clean_acc_vs_dempster", "clean accuracy: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_dempster",
              "accuracy at the largest corrupted fraction: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_rcml", "accuracy at the largest corrupted fraction: CA - RCML (>= +5 points)",
              ">=", 0.05, source="issue", ref="issue #12"),
    CheckSpec("auroc_detectable", "AUROC(fused u -> detectable corrupted epoch vs clean) at the largest "
              "corrupted fraction: CA", ">=", 0.85,
              source="issue", ref="issue #12 (bar); issue #29 (over detectable corruptions: the all-corruption "
              "AUROC's ceiling is 0.5 + f/2, about 0.72)"),
    CheckSpec("auroc_detectable_vs_dempster", "AUROC over detectable corruptions at the largest corrupted "
              "fraction: CA - Dempster", ">=", 0.03,
              source="issue", ref="issue #12 (bar); issue #29 (over detectable corruptions)"),
    CheckSpec("selective_acc_vs_dempster",
              "selective accuracy at the configured coverage (80 %), largest corrupted fraction: CA - Dempster",
              ">=", 0.0, source="issue", ref="issue #12"),
    CheckSpec("hybrid_vs_five_class_eog", "fused macro-F1 (mean over pi): hybrid EOG - five-class EOG", ">=", 0.0,
              source="issue", ref="issue #12"),
    CheckSpec("common_auroc_detectable_vs_dempster",
              "AUROC over detectable corruptions at the largest corrupted fraction: CA with the conflict in the "
              "common category space (ours) - Dempster", ">=", 0.03,
              source="ours", ref="issue #29 asks for this option reported against Dempster over >= 3 seeds; "
              "the 0.03 margin is issue #12's CA - Dempster bar"),
)

# The abstract: conflict-aware aggregation gives a reliable joint decision under misaligned views: accuracy
# kept and corrupted epochs flagged, against Dempster's rule. The common-space variant gives the conflict
# fix to the method only, so it is a diagnostic.
CHECKS = annotate(
    CHECKS,
    headline=("corrupted_acc_vs_dempster", "auroc_detectable_vs_dempster"),
    diagnostic=("common_auroc_detectable_vs_dempster",),
)
