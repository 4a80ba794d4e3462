"""The checks of Fox's reproduction (issue #19, "Figures to reach"), declared before any run."""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("vanilla_chair_i", "vanilla CHAIR_I on the adversarial captioning set (the benchmark bites)", ">=",
              0.15, source="issue", ref="issue #19"),
    CheckSpec("fox_chair_i_ratio", "Fox CHAIR_I / vanilla CHAIR_I", "<=", 0.8, source="issue", ref="issue #19"),
    CheckSpec("recall_drop", "vanilla recall - Fox recall (object recall, fraction)", "<=", 0.03,
              source="issue", ref="issue #19"),
    CheckSpec("pope_f1_gain", "Fox POPE-adversarial F1 - vanilla POPE-adversarial F1", ">=", 0.0,
              source="issue", ref="issue #19"),
    CheckSpec("fox_minus_sid_chair_s", "Fox CHAIR_S - SID CHAIR_S", "<=", 0.0, source="issue", ref="issue #19"),
    CheckSpec("probe_precision_over_chance",
              "probe precision@k against the k heads whose ablation most lowers p(B), minus chance k/H", ">", 0.0,
              source="issue", ref="issue #19"),
)

# The abstract: fewer hallucinated objects than vanilla decoding while preserving linguistic richness
# (recall). vanilla_chair_i is the precondition that the benchmark bites.
CHECKS = annotate(
    CHECKS,
    headline=("fox_chair_i_ratio", "recall_drop"),
    diagnostic=("vanilla_chair_i",),
)
