"""The checks of the curvature reproduction (issue #7, "Figures to reach"), declared before any run."""

from icml26.contract import CheckSpec, declare

CHECKS = declare(
    CheckSpec("init_correlation", "init: max abs rho(kappa, H) over layers", "<", 0.05,
              source="issue", ref="issue #7"),
    CheckSpec("trained_correlation", "trained: rho(kappa, H) at the best layer", ">=", 0.08,
              source="issue", ref="issue #7"),
    CheckSpec("trained_curvature_drop", "trained: curvature drop, layer 0 to the flattest layer (rad)", ">=", 0.1,
              source="issue", ref="issue #7"),
    CheckSpec("init_curvature_drop", "init: curvature drop, layer 0 to the flattest layer (rad)", "<", 0.1,
              source="issue", ref="issue #7"),
    CheckSpec("aligned_delta_entropy", "aligned: mean Delta H (nats)", "<", 0.0,
              source="issue", ref="issue #7"),
    CheckSpec("aligned_p_value", "aligned: one-sided paired t-test p (Delta H < 0)", "<", 0.01,
              source="issue", ref="issue #7"),
    CheckSpec("misaligned_ratio", "abs mean Delta H, misaligned / aligned", "<", 1.0 / 3.0,
              source="issue", ref="issue #7"),
    CheckSpec("regularizer_curvature_cut", "regulariser: mid-layer curvature cut (fraction)", ">=", 0.10,
              source="issue", ref="issue #7"),
    CheckSpec("regularizer_loss_increase", "regulariser: validation loss increase (fraction)", "<=", 0.02,
              source="issue", ref="issue #7"),
)
