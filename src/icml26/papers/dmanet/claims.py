"""The checks of DMANet's reproduction (issue #8, "Figures to reach"), declared before any run.

The issue asks that naive slicing leak "several per cent (more at each level)"; the three
per-level bars (3 %, 8 %, 12 %) are our reading of that, so their source is ``ours``.
"""

from icml26.contract import CheckSpec, annotate, declare

_SEVERAL = "issue #8 asks for 'several per cent, more at each level'; {} is our threshold for level {}"

CHECKS = declare(
    CheckSpec("filter_leakage", "filter+stride leakage, worst of levels 1-3", "<=", 1e-10,
              source="issue", ref="issue #8"),
    CheckSpec("naive_leakage_l1", "naive slicing leakage, level 1", ">=", 0.03,
              source="ours", ref=_SEVERAL.format("3 %", 1)),
    CheckSpec("naive_leakage_l2", "naive slicing leakage, level 2", ">=", 0.08,
              source="ours", ref=_SEVERAL.format("8 %", 2)),
    CheckSpec("naive_leakage_l3", "naive slicing leakage, level 3", ">=", 0.12,
              source="ours", ref=_SEVERAL.format("12 %", 3)),
    CheckSpec("no_filter_ratio_chaotic", "DMANet / no-filter MSE, chaotic (mean over horizons)", "<=", 0.97,
              source="issue", ref="issue #8"),
    CheckSpec("dlinear_ratio_chaotic", "DMANet / DLinear MSE, chaotic (mean over horizons)", "<=", 1.0,
              source="issue", ref="issue #8"),
    CheckSpec("dlinear_ratio_taylor", "DMANet / DLinear MSE, taylor (mean over horizons)", "<=", 1.0,
              source="issue", ref="issue #8"),
    CheckSpec("time_no_filter_ratio_chaotic", "filter_axis='time' family: DMANet / no-filter MSE, chaotic "
              "(geometric mean of per-seed ratios, each the mean over horizons)", "<=", 0.97,
              source="issue", ref="issue #8 (bar); issue #29 (the time-axis family, >= 8 seeds, paired)"),
    CheckSpec("ridge_filter_ratio_coarsest", "ridge on strided windows, chaotic: filtered / naive test MSE at the "
              "coarsest stride (mean over horizons)", "<", 1.0,
              source="ours", ref="issue #29 asks for this model-free check of where aliasing matters (one run: "
              "0.834 vs 0.881 at stride 8); below 1 is our reading of 'matters'"),
    CheckSpec("strided_filter_ratio_coarsest", "strided-only DMANet (no full-resolution path), chaotic: filter / "
              "no-filter test MSE at the coarsest stride (geometric mean over seeds)", "<", 1.0,
              source="ours", ref="issue #29 asks for this diagnostic; below 1 is our reading of 'the filter helps "
              "where aliasing cannot be routed around'"),
)

# The abstract: mitigating aliasing makes the convolutional multiscale network competitive. Leakage of the
# ideal filter and of naive slicing are properties of the filter (by construction).
CHECKS = annotate(
    CHECKS,
    headline=("no_filter_ratio_chaotic", "dlinear_ratio_chaotic"),
    diagnostic=("filter_leakage", "naive_leakage_l1", "naive_leakage_l2", "naive_leakage_l3"),
)
