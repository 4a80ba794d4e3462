"""The checks of SubspacePath's reproduction (issue #24, "Figures to reach"), declared before any run.

All exact-match figures are on the tiny Llama trained on the six synthetic skills, with the
mask compiled from each scenario's first input and applied to its 50 further turns; "points"
are percentage points of exact-match accuracy. The speed-ups are measured side by side in
the same run (median of alternating repeats).
"""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("selected_gap_50",
              "selected split, 50% of heads removed: SubspacePath minus global gradient importance (points)",
              ">=", 5.0, source="issue", ref="issue #24"),
    CheckSpec("dense_fraction_30",
              "selected split, 30% of heads removed: SubspacePath exact match as a fraction of dense",
              ">=", 0.8, source="issue", ref="issue #24"),
    CheckSpec("no_whitelist_loss_50",
              "selected split, 50% removed: points SubspacePath loses without the whitelist",
              ">=", 10.0, source="issue", ref="issue #24"),
    CheckSpec("random_axes_loss_50",
              "selected split, 50% removed: points SubspacePath loses with random axes instead of probe rows",
              ">=", 10.0, source="issue", ref="issue #24"),
    CheckSpec("speedup_smollm2",
              "CPU forward speed-up of SmolLM2-135M with 30% of heads structurally removed (512 tokens)",
              ">", 1.05, source="issue", ref="issue #24"),
    CheckSpec("speedup_random_llama",
              "CPU forward speed-up of a random Llama (d=1024, 16 heads, 8 layers, 512 tokens), 30% of heads removed",
              ">", 1.05, source="issue", ref="issue #24"),
)

# The abstract: a budgeted pathway keeps accuracy at ~30% pruning with a speed-up, better than other
# importance scores.
CHECKS = annotate(
    CHECKS,
    headline=("selected_gap_50", "dense_fraction_30", "speedup_smollm2"),
)
