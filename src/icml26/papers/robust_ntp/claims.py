"""The checks of the robust_ntp reproduction, declared before any run (``icml26 info robust_ntp``).

"The largest T" is ``max(horizons)`` (4096 in the quick and full settings); the students'
horizon is ``distill_horizon`` (128).
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("raw_regret_half", "raw model: regret per round vs the greedy adversary minus 1/2, at the largest T",
              "abs<=", 0.05,
              source="ours", ref="issue #13 expects raw regret ≈ T/2; ±0.05 per round is our tolerance for '≈'"),
    CheckSpec("robust_over_raw", "robustified / raw regret vs the greedy adversary at the largest T "
              "(exact conditionals)", "<", 0.3, source="issue", ref="issue #13"),
    CheckSpec("trigger_rate", "trigger rate on the model's own samples (max over T)", "<", 0.01,
              source="issue", ref="issue #13"),
    CheckSpec("regret_over_bound", "robustified regret / its bound, max over every adversary and T", "<=", 1.0,
              source="issue", ref="issue #13 (Tests: regret ≤ τ + 1 + T ln|A|/β + (β/8)(1 + ln T))"),
    CheckSpec("student_ratio", "distilled robust / distilled raw regret vs the greedy adversary at the students' T",
              "<", 0.5, source="issue", ref="issue #13"),
    CheckSpec("student_tv", "distilled robust student: per-position TV to D on D's samples", "<", 0.02,
              source="issue", ref="issue #13"),
)

# The abstract: robustifying cuts adversarial regret while changing the model negligibly, and small
# transformers can learn the robustified distribution. That the raw model is exploitable is the
# precondition.
CHECKS = annotate(
    CHECKS,
    headline=("robust_over_raw", "trigger_rate", "student_ratio"),
    diagnostic=("raw_regret_half",),
)
