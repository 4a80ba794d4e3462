"""The checks of VimRAG's reproduction (issue #21, "Figures to reach"), declared before any run.

(A) accuracy of the digit reader under a visual-token budget, graph-modulated allocation against
uniform, recency and priority-only allocation; (B) GGPO against outcome-only GRPO on the two-hop
search task. The reader's full-resolution accuracy is the issue's precondition for (A).
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("reader_full_resolution", "reader accuracy at 8x8 on the episode pool", ">=", 0.9,
              source="issue", ref="issue #21 (tests: the reader scores >= 0.9 at full resolution)"),
    CheckSpec("gain_vs_uniform_40", "graph-modulated - uniform answer accuracy at 40 % budget (points)", ">=", 10.0,
              source="issue", ref="issue #21"),
    CheckSpec("gain_vs_priority_40", "graph-modulated - priority-only answer accuracy at 40 % budget (points)",
              ">=", 3.0, source="issue", ref="issue #21"),
    CheckSpec("spread_at_100", "largest - smallest answer accuracy over the four policies at 100 % budget (points)",
              "<=", 1.0, source="issue", ref="issue #21"),
    CheckSpec("ggpo_iterations_ratio", "GGPO / GRPO iterations to 80 % success (medians over seeds)", "<=", 0.75,
              source="issue", ref="issue #21"),
    CheckSpec("ggpo_redundant_ratio", "GGPO / GRPO redundant searches per episode, last 10 % of iterations "
              "(mean over seeds)", "<=", 0.7, source="issue", ref="issue #21"),
)

# The abstract's two mechanisms: graph-modulated token allocation and graph-guided credit assignment. The
# reader's accuracy and the policies' tie at full budget are preconditions.
CHECKS = annotate(
    CHECKS,
    headline=("gain_vs_uniform_40", "ggpo_iterations_ratio"),
    diagnostic=("reader_full_resolution", "spread_at_100"),
)
