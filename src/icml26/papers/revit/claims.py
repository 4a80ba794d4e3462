"""The checks of ReViT's reproduction (issue #11, "Figures to reach"; issue #30's in-distribution target),
declared before any run."""

from icml26.contract import CheckSpec, annotate, declare

CHECKS = declare(
    CheckSpec("rotation_spread", "ReViT per-rotation MSE spread (max-min)/mean, worst seed", "<=", 1e-5,
              source="issue", ref="issue #11"),
    CheckSpec("rotated_mse_ratio", "ReViT / ViT mean rotated-test MSE (90°, 180°, 270°)", "<=", 0.5,
              source="issue", ref="issue #11"),
    CheckSpec("gain_vs_identity", "ReViT MSE reduction vs identity baseline", ">=", 0.5,
              source="issue", ref="issue #11"),
    # Issue #11 only reported this ratio (2.48 with the first, learned-MLP local kernel); issue #30 set
    # the target after showing the gap was the parameterisation, not the cost of equivariance.
    CheckSpec("rot0_vs_vit_aug", "ReViT / ViT+augmentation test MSE at rotation 0", "<=", 1.3,
              source="issue", ref="issue #30 (target for the revisited embedding/decoder/pooling)"),
)

# The abstract: lower error than the alternatives (a plain ViT on rotated flows, and the augmented ViT as
# the strongest alternative). Exact C4 equivariance holds by construction.
CHECKS = annotate(
    CHECKS,
    headline=("rotated_mse_ratio", "rot0_vs_vit_aug"),
    diagnostic=("rotation_spread",),
)
