"""RobuQ's checks, declared before any run (the issue's figures to reach, issue #25)."""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("robuq_a2_eps_ratio", "held-out eps-MSE, RobuQ W1.58A2 / naive W1.58A2", "<=", 0.8,
              source="issue", ref="issue #25"),
    CheckSpec("robuq_a2_accuracy_gain", "sample class accuracy, RobuQ W1.58A2 minus naive W1.58A2 (points)",
              ">=", 15.0, source="issue", ref="issue #25"),
    CheckSpec("ampn_vs_uniform", "held-out eps-MSE, RobuQ + AMPN (average 2 bits) / RobuQ W1.58A2 uniform",
              "<=", 1.0, source="issue", ref="issue #25"),
    CheckSpec("fp_best", "held-out eps-MSE, full precision / best quantized arm", "<=", 1.0,
              source="issue", ref="issue #25"),
    CheckSpec("robuq_a4_vs_naive", "held-out eps-MSE, RobuQ W1.58A4 / naive W1.58A4", "<=", 1.1,
              source="issue", ref="issue #25"),
)

# The abstract: RobuQ makes W1.58A2 work where naive QAT fails, and activation-only mixed precision at an
# average of 2 bits improves on it. That full precision is best is a sanity diagnostic.
CHECKS = annotate(
    CHECKS,
    headline=("robuq_a2_eps_ratio", "robuq_a2_accuracy_gain", "ampn_vs_uniform"),
    diagnostic=("fp_best",),
)
