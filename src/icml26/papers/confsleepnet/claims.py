"""The checks of ConfSleepNet's reproduction (the issue's "Figures to reach"), declared before any run.

"The largest corrupted fraction" is the largest ``pi`` of ``Config.corruption_fractions``
(0.4 in every setting); the run's note on each check states the ``pi`` and the coverage used.

The uncertainty checks count only *detectable* corruptions, those the corrupted view itself
signals: the corrupted EOG view's own W / NREM / REM prediction is wrong. A corruption the EOG
still classifies correctly leaves its opinion as it would be clean, so no fusion rule can see
it, and over all corruptions the best AUROC any rule can reach is about ``0.5 + f / 2`` (``f`` the
detectable share); the run reports that AUROC and its ceiling, per mode, as metrics, and the
AUROC over the corruptions whose EOG content contradicts the truth (the older, label-based
definition) as ``auroc_conflicting_<pi>``.

The headline's Dempster is, per metric, the strongest of four: TMC's reduced rule, the same with the
common-space conflict, and set-valued Dempster-Shafer (each view's mass on the stage sets of its
categories) scored by its ``m(Theta)`` and by Shafer's conflict (what a Dempster-Shafer user flags).
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("clean_acc_vs_dempster", "clean accuracy: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_dempster",
              "accuracy at the largest corrupted fraction: CA - Dempster (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12"),
    CheckSpec("corrupted_acc_vs_rcml", "accuracy at the largest corrupted fraction: CA - RCML (>= +5 points)",
              ">=", 0.05, source="issue", ref="issue #12"),
    CheckSpec("auroc_detectable", "AUROC(fused u -> detectable corrupted epoch vs clean) at the largest "
              "corrupted fraction: CA (detectable: the corrupted EOG view's own prediction is wrong)", ">=", 0.85,
              source="issue", ref="issue #12 (bar); issue #29 (over detectable corruptions: the all-corruption "
              "AUROC's ceiling is 0.5 + f/2); issue #37 (detectable = the corrupted view's own prediction is wrong)"),
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
    CheckSpec("corrupted_acc_vs_best_dempster",
              "accuracy at the largest corrupted fraction: CA - the most accurate of Dempster, Dempster with "
              "the common-space conflict and set-valued Dempster-Shafer (>= -1 point)", ">=", -0.01,
              source="issue", ref="issue #12 (bar); issue #37 (against the strongest Dempster variant)"),
    CheckSpec("auroc_detectable_vs_best_dempster",
              "AUROC over detectable corruptions at the largest corrupted fraction: CA - the highest of Dempster, "
              "Dempster with the common-space conflict and set-valued Dempster-Shafer (by m(Theta) or by its "
              "conflict)", ">=", 0.03,
              source="issue", ref="issue #12 (bar); issue #37 (against the strongest Dempster variant)"),
    CheckSpec("common_auroc_detectable_vs_dempster_common",
              "AUROC over detectable corruptions at the largest corrupted fraction: CA - Dempster, both with the "
              "conflict in the common category space", ">=", 0.03,
              source="issue", ref="issue #37 (Dempster given the same common-space conflict); the 0.03 margin is "
              "issue #12's CA - Dempster bar"),
    CheckSpec("auroc_detectable_vs_dempster_sets",
              "AUROC over detectable corruptions at the largest corrupted fraction: CA - set-valued Dempster-Shafer "
              "(the higher of its m(Theta) and its conflict)", ">=", 0.03,
              source="issue", ref="issue #37 (set-valued Dempster-Shafer as a baseline); the 0.03 margin is "
              "issue #12's CA - Dempster bar"),
)


# Every fusion rule combines the same trained per-view evidence networks (trained once per replicate with the
# authors' schedule, 40 epochs), so the rules differ only in how they fuse; none has a parameter to tune.
_NONE = "none: parameter-free fusion rules on shared networks"
ARMS = declare_arms(
    ArmSpec("conflict_aware", "method", trials=1, select_on=_NONE,
            note="Conflict-aware aggregation, views ordered by uncertainty, conflict in the stage space."),
    ArmSpec("dempster_tmc", "baseline", trials=1, select_on=_NONE,
            note="Dempster's combination of the same opinions (TMC), in the given view order."),
    ArmSpec("dempster_common", "baseline", trials=1, select_on=_NONE,
            note="Dempster's rule with the conflict in the common category space (the same conflict "
                 "conflict_aware_common uses), in the given view order."),
    ArmSpec("dempster_sets", "baseline", trials=1, select_on=_NONE,
            note="Set-valued Dempster-Shafer: each view's mass on the stage sets of its own categories (a "
                 "hybrid view's NREM mass on {N1, N2, N3}, not split), Dempster's rule over the power set, "
                 "pignistic decision; scored by m(Theta)."),
    ArmSpec("dempster_sets_conflict", "baseline", trials=1, select_on=_NONE,
            note="dempster_sets' predictions, scored by Shafer's conflict (the mass the views put on the empty "
                 "set): how a Dempster-Shafer user would flag a contradicting view."),
    ArmSpec("rcml_average", "baseline", trials=1, select_on=_NONE,
            note="RCML's average rule on the same opinions."),
    ArmSpec("conflict_aware_unsorted", "control", trials=1, select_on=_NONE,
            note="The method in the given view order (isolates the uncertainty ordering)."),
    ArmSpec("conflict_aware_eog5", "control", space={"eog_categories": ("five stages",)}, trials=1, select_on=_NONE,
            note="The method with a five-class EOG view instead of the hybrid category structure (its own "
                 "trained network, same schedule)."),
    ArmSpec("conflict_aware_common", "method", trials=1, select_on=_NONE,
            reason="measures the conflict in the common category space; against plain Dempster that fix is "
                   "the method's only (a diagnostic); against dempster_common both rules have it"),
)

# The abstract: conflict-aware aggregation gives a reliable joint decision under misaligned views: accuracy
# kept and corrupted epochs flagged, against Dempster's rule: the headline takes, per check, the strongest of
# Dempster, Dempster with the common-space conflict and set-valued Dempster-Shafer (scored by m(Theta) or
# by its conflict). CA-common against plain Dempster gives the conflict
# fix to the method only, so it is a diagnostic; against Dempster-common both have it (supporting).
CHECKS = annotate(
    CHECKS,
    headline=("corrupted_acc_vs_best_dempster", "auroc_detectable_vs_best_dempster"),
    diagnostic=("common_auroc_detectable_vs_dempster",),
    compares={**{c: ("conflict_aware", "dempster_tmc") for c in ("clean_acc_vs_dempster", "corrupted_acc_vs_dempster",
                                                                  "auroc_detectable_vs_dempster",
                                                                  "selective_acc_vs_dempster")},
              "corrupted_acc_vs_rcml": ("conflict_aware", "rcml_average"),
              "hybrid_vs_five_class_eog": ("conflict_aware", "conflict_aware_eog5"),
              "common_auroc_detectable_vs_dempster": ("conflict_aware_common", "dempster_tmc"),
              **{c: ("conflict_aware", "dempster_tmc", "dempster_common", "dempster_sets", "dempster_sets_conflict")
                 for c in ("corrupted_acc_vs_best_dempster", "auroc_detectable_vs_best_dempster")},
              "common_auroc_detectable_vs_dempster_common": ("conflict_aware_common", "dempster_common"),
              "auroc_detectable_vs_dempster_sets": ("conflict_aware", "dempster_sets", "dempster_sets_conflict")},
    budget={"hybrid_vs_five_class_eog": "train_epochs"},
)
