"""The checks of ReViT's reproduction (issue #11, "Figures to reach"), declared before any run."""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("rotation_spread", "ReViT per-rotation MSE spread (max-min)/mean, worst seed", "<=", 1e-5,
              source="issue", ref="issue #11"),
    CheckSpec("rotated_mse_ratio", "ReViT / ViT mean rotated-test MSE (90°, 180°, 270°)", "<=", 0.5,
              source="issue", ref="issue #11"),
    CheckSpec("gain_vs_identity", "ReViT MSE reduction vs identity baseline", ">=", 0.5,
              source="issue", ref="issue #11"),
)
