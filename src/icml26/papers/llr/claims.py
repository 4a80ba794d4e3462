"""The checks of LLR's reproduction (issue #10, "Figures to reach"), declared before any run.

The bars used to live in ``Config`` (``shuffle_gap_target``, ``uniform_gap_target``); they are
declared here so that no override can move them.
"""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("shuffled_gap", "LLR beats shuffled at every base rate: min gap (nats)", ">=", 0.05,
              source="issue", ref="issue #10"),
    CheckSpec("uniform_gap_smallest_rate", "LLR beats uniform at the smallest base rate of the grid (nats)", ">=",
              0.02, source="issue", ref="issue #10"),
)
