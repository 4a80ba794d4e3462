"""The checks of LLR's reproduction (issues #10 and #30), declared before any run.

Issue #30 turned the headline into LLR against controls that hold the rate budget fixed:
uniform AdamW at LLR's parameter-weighted mean rate, fixed multipliers by matrix kind (no
spectral fit), and the shuffle within matrix kinds (rate-preserving). Each is reported as the
smallest gap over the base-rate grid, whatever its sign.
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("shuffled_gap", "LLR beats its multipliers shuffled within matrix kinds at every base rate: min gap (nats)",
              ">=", 0.05, source="issue", ref="issue #10 (bar); issue #30 (rate-preserving shuffle)"),
    CheckSpec("rate_matched_gap",
              "LLR beats uniform AdamW at LLR's parameter-weighted mean rate at every base rate: min gap (nats)",
              ">=", 0.02, source="issue", ref="issue #30 (control); bar: issue #10's 0.02 nats over uniform"),
    CheckSpec("kind_static_gap",
              "LLR beats fixed per-kind multipliers (LLR's kind means, no fit) at every base rate: min gap (nats)",
              ">=", 0.02, source="issue", ref="issue #30 (control); bar: issue #10's 0.02 nats over uniform"),
    CheckSpec("uniform_gap_smallest_rate", "LLR beats uniform at the smallest base rate of the grid (nats)", ">=",
              0.02, source="issue", ref="issue #10"),
)

# The abstract: the heavy-tail fit is what sets good per-layer rates, so LLR must beat rate-preserving
# controls that drop the fit.
CHECKS = annotate(
    CHECKS,
    headline=("rate_matched_gap", "kind_static_gap", "shuffled_gap"),
)
