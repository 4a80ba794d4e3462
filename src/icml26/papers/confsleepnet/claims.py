"""The checks of ConfSleepNet's reproduction (issue #12, "Figures to reach"), declared before any run.

"The largest corrupted fraction" is the largest ``pi`` of ``Config.corruption_fractions``
(0.4 in every setting); the run's note on each check states the ``pi`` and the coverage used.
"""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("clean_acc_vs_dempster", "clean accuracy: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_dempster",
              "accuracy at the largest corrupted fraction: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_rcml", "accuracy at the largest corrupted fraction: CA - RCML (>= +5 points)",
              ">=", 0.05, source="issue", ref="issue #12"),
    CheckSpec("auroc_corrupted", "AUROC(fused u -> corrupted epoch) at the largest corrupted fraction: CA", ">=",
              0.85, source="issue", ref="issue #12"),
    CheckSpec("auroc_vs_dempster", "AUROC at the largest corrupted fraction: CA - Dempster", ">=", 0.03,
              source="issue", ref="issue #12"),
    CheckSpec("selective_acc_vs_dempster",
              "selective accuracy at the configured coverage (80 %), largest corrupted fraction: CA - Dempster",
              ">=", 0.0, source="issue", ref="issue #12"),
    CheckSpec("hybrid_vs_five_class_eog", "fused macro-F1 (mean over pi): hybrid EOG - five-class EOG", ">=", 0.0,
              source="issue", ref="issue #12"),
)
