"""The checks of zs_expand's reproduction (issue #26, "Figures to reach"), declared before any run.

No paper numbers are public; every bar is the issue's. Accuracies are per-class means on the
synthetic granularity benchmark, in percentage points; each value is computed within one seed
(method minus baseline on the same draw), so the aggregate over seeds is a paired interval.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("zsl_gain_vs_shared_mlp", "ZSL unseen accuracy: expander minus shared MLP (points)", ">=", 5.0,
              source="issue", ref="issue #26"),
    CheckSpec("similar_gain_vs_shared_mlp", "ZSL accuracy on the similar unseen subset: expander minus shared MLP "
              "(points)", ">=", 8.0, source="issue", ref="issue #26"),
    CheckSpec("gzsl_h_gain_vs_icis", "GZSL H: expander minus ICIS-style autoencoder (points)", ">=", 0.0,
              source="issue", ref="issue #26"),
    CheckSpec("variance_ratio_vs_shared_mlp", "weight variance across nuisance interventions: expander / shared MLP "
              "without invariance term", "<=", 0.5, source="issue", ref="issue #26"),
)

_GRID = (0.01, 0.1, 1.0, 10.0)
_LOCO = "leave-one-seen-class-out error of the synthesised rows (seen classes only)"
_FIXED = ("fixed settings, nothing selected, while the expander's ridge strengths are chosen by leave-one-"
          "seen-class-out error over 8 candidates; with the same selection a plain class-balanced ridge (no "
          "groups, no invariance) is only +2.0 [0.4, 3.5] points below the expander on ZSL accuracy, so part of the "
          "gap to this arm is the selection, not the mechanism")

ARMS = declare_arms(
    ArmSpec("zs_expand", "method", space={"coarse_alpha": _GRID, "refiner_alpha": ("off", *_GRID)}, trials=8,
            select_on=_LOCO,
            note="Sequential: the coarse strength first (4 candidates, refiners off), then the refiners' strength "
                 "or none (4 more); invariance weight 1 and the group count (eigengap) are not tuned. On the "
                 "committed draws the selection switched the refiners off on every seed."),
    ArmSpec("zs_expand_no_invariance", "control", space={"coarse_alpha": _GRID, "refiner_alpha": ("off", *_GRID)},
            trials=8, select_on=_LOCO, note="The expander with invariance weight 0, same selection."),
    ArmSpec("zs_expand_no_refiner", "control", space={"coarse_alpha": _GRID}, trials=4, select_on=_LOCO,
            reason="has no refiner to select, so only the coarse strength's 4 candidates",
            note="The expander without within-group refiners."),
    ArmSpec("zs_expand_oracle_groups", "control", space={"coarse_alpha": _GRID, "refiner_alpha": ("off", *_GRID)},
            trials=8, select_on=_LOCO, note="The expander given the true superclasses instead of discovered groups."),
    ArmSpec("shared_mlp", "baseline", space={"hidden": (256,), "lr": (1e-3,), "weight_decay": (1e-4,),
                                             "steps": (1000,)},
            trials=1, select_on="none: fixed settings", reason=_FIXED,
            note="Sub.Reg.-like shared MLP on the cosine loss with ICIS's subspace term and norm-scale heuristic "
                 "(ICIS's Adam betas); it receives the same views, seen rows and all-class semantics."),
    ArmSpec("icis", "baseline", space={"latent": (128,), "lr": (1e-3,), "steps": (1000,)}, trials=1,
            select_on="none: fixed settings", reason=_FIXED,
            note="ICIS-style joint autoencoder with the authors' loss terms; same inputs as every arm."),
    ArmSpec("wavg", "baseline", space={"temperature": (0.1,)}, trials=1, select_on="none: fixed settings",
            reason="a fixed temperature (ours), nothing selected; reported, no check reads it"),
)

# The abstract: granularity-aware expansion beats a shared mapping, above all on similar classes. The
# weight-variance ratio holds by construction of the averaging.
CHECKS = annotate(
    CHECKS,
    headline=("zsl_gain_vs_shared_mlp", "similar_gain_vs_shared_mlp", "gzsl_h_gain_vs_icis"),
    diagnostic=("variance_ratio_vs_shared_mlp",),
    compares={"zsl_gain_vs_shared_mlp": ("zs_expand", "shared_mlp"),
              "similar_gain_vs_shared_mlp": ("zs_expand", "shared_mlp"),
              "gzsl_h_gain_vs_icis": ("zs_expand", "icis"),
              "variance_ratio_vs_shared_mlp": ("zs_expand", "shared_mlp")},
)
