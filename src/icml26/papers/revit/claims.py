"""The checks of ReViT's reproduction (the issue's "Figures to reach" and an in-distribution
target), declared before any run."""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("rotation_spread", "ReViT per-rotation MSE spread (max-min)/mean, worst seed", "<=", 1e-5,
              source="issue", ref="issue #11"),
    CheckSpec("rotated_mse_ratio", "ReViT / ViT mean rotated-test MSE (90°, 180°, 270°)", "<=", 0.5,
              source="issue", ref="issue #11"),
    CheckSpec("gain_vs_identity", "ReViT MSE reduction vs identity baseline", ">=", 0.5,
              source="issue", ref="issue #11"),
    # The gap at rotation 0 is the parameterisation, not the cost of equivariance (a learned-MLP
    # local kernel gave 2.48), so the revisited embedding/decoder/pooling is held to a target.
    CheckSpec("rot0_vs_vit_aug", "ReViT / ViT+augmentation test MSE at rotation 0", "<=", 1.3,
              source="issue", ref="issue #30 (target for the revisited embedding/decoder/pooling)"),
    CheckSpec("rotated_vs_vit_aug", "ReViT / ViT+augmentation mean rotated-test MSE (90°, 180°, 270°)", "<=", 1.0,
              source="paper", ref="abstract ('reduces MSE by up to 65% compared with the best-performing "
                                  "alternatives'); no worse than the strongest baseline (ViT+aug) is our reading"),
    CheckSpec("rotated_vs_vit_aug_equal_time",
              "ReViT / ViT+augmentation mean rotated-test MSE, ViT+aug given ReViT's wall time (2x its steps)",
              "<=", 1.0, source="issue", ref="issue #38 (equal wall clock; the bar of rotated_vs_vit_aug)"),
)

# Arms. The trained models share one recipe (quick values below; the full setting trains 4,000 steps at
# grid 64, width 96, depths (2, 2, 2)) from their own initialisation on the same pairs in the same minibatch
# order. Each trained arm's peak rate goes through the shared tuner on the validation split (held-out
# trajectories drawn like the training set): the quick run's grid is the brief's single rate (nothing
# selected); a further run with lrs=1e-3,2e-3,4e-3 tunes every arm the same way.
_VALIDATION = ("validation MSE on held-out orientation-biased trajectories: at rotation 0 for the plain ViT, "
               "over the four rotations for ViT+aug and ReViT (experiment.validation_score)")
_FULL = " Quick values; the full setting trains 4,000 steps of larger models (grid 64, width 96)."
_TRAIN = {"steps": (400,), "batch_size": (32,), "lr": (2e-3,), "schedule": ("one-cycle",),
          "weight_decay": (1e-4,)}
_MLP_MERGE = ("Its backbone's merge and expand still use the learned-MLP offset kernel (SwinUNet's default, "
              "baselines.py), the parameterisation that was replaced in ReViT for training slowly; ReViT's "
              "bilinear kernel, with identity frames, is exactly Swin's standard merge, which the ViT does not "
              "get (its effect on the ViT has not been measured).")
_EQUAL_STEPS = ("Trained for the same number of steps as ReViT, which steps at 0.48-0.53x the ViT's rate, so "
                "it gets about half ReViT's wall time (the arm vit_aug_equal_time gets the same wall time). "
                "The verdict depends on the budget: ReViT / ViT+aug at rotation 0 is 1.10 after 400 steps and "
                "1.52 after 1,200 (budget_x3, an earlier version of the code); on the rotated flows the budget curve "
                "(results/revit/budget_curve, seeds 0-2) gives 1.08 at 400 steps, 1.50 at 1,200 and 1.82 at 2,400. "
                + _MLP_MERGE)
ARMS = declare_arms(
    ArmSpec("revit", "method", space={**_TRAIN, "local_kernel": ("bilinear",), "merge_expand_kernel": ("bilinear",),
                                      "patch_pooling": ("kernel",)},
            trials=1, select_on=_VALIDATION, metrics="ReViT",
            note="lr, batch and steps from the brief (section 4.2), shared by every arm. The bilinear local "
                 "kernel (ours) replaced the first version's learned-MLP kernel after the in-distribution gap to "
                 "ViT+aug was traced to it; before the validation split existed, both versions were judged on the "
                 "test pairs (ReViT / ViT+aug at rotation 0: 2.48 with the MLP kernel, 1.134 with the bilinear one). "
                 "The baselines' architecture and recipe were not revised. Exactly C4-equivariant by "
                 "construction." + _FULL),
    ArmSpec("vit", "baseline", space={**_TRAIN, "merge_expand_kernel": ("mlp",)}, trials=1, select_on=_VALIDATION,
            metrics="ViT",
            reason="Receives no rotation information: trained only on flows pointing near +x and tested at 90, "
                   "180 and 270 degrees, where ReViT has C4 built in. ViT+aug, the same network given the "
                   "symmetry by augmentation, has a lower rotated MSE than ReViT on every seed (1.05e-2 / "
                   "1.01e-2 / 1.13e-2 against 1.19e-2 / 1.20e-2 / 1.21e-2). " + _MLP_MERGE,
            note="Swin-style ViT of the same backbone (relative position bias included), linear patch "
                 "embedding, learned absolute positions, about 0.22 M parameters (ReViT 0.21 M); the brief's "
                 "baseline, our implementation." + _FULL),
    ArmSpec("vit_aug", "baseline", space={**_TRAIN, "merge_expand_kernel": ("mlp",),
                                          "augmentation": ("random C4 rotation per pair",)},
            trials=1, select_on=_VALIDATION, metrics="ViT+aug", reason=_EQUAL_STEPS,
            note="The plain ViT trained on pairs each rotated by a random multiple of 90 degrees (the strongest "
                 "simple baseline in the brief)." + _FULL),
    ArmSpec("vit_aug_equal_time", "baseline",
            space={**_TRAIN, "steps": ("round(2.0 x ReViT's steps): 800",), "lr": ("ViT+aug's chosen rate",),
                   "merge_expand_kernel": ("mlp",), "augmentation": ("random C4 rotation per pair",)},
            trials=1, select_on="none: ViT+aug's rate, chosen on the validation split, is reused",
            metrics="ViT+aug equal time",
            reason="Gets ReViT's wall time, not its step count: 2x the steps, a fixed factor from the committed "
                   "speed ratio (ReViT at 0.48-0.53x the ViT's steps/s) so that a seed's metrics stay "
                   "reproducible; the same initialisation and minibatch order as ViT+aug. " + _MLP_MERGE,
            note="ViT+aug with a one-cycle schedule stretched to 2x ReViT's steps (equal wall clock)." + _FULL),
    ArmSpec("identity", "baseline", space={}, trials=1, select_on="none: nothing trained",
            note="Predicts no change (the input velocity); nothing trained."),
)

# The abstract: lower error than the best-performing alternative, here the augmented ViT (the strongest
# baseline, on the rotated flows the claim is about), and the registry's reading against the plain ViT.
# In-distribution (rotation 0) is the cost of equivariance, supporting. Exact C4 equivariance holds by
# construction.
CHECKS = annotate(
    CHECKS,
    headline=("rotated_vs_vit_aug", "rotated_mse_ratio"),
    diagnostic=("rotation_spread",),
    compares={"rotated_mse_ratio": ("revit", "vit"), "gain_vs_identity": ("revit", "identity"),
              "rot0_vs_vit_aug": ("revit", "vit_aug"), "rotated_vs_vit_aug": ("revit", "vit_aug"),
              "rotated_vs_vit_aug_equal_time": ("revit", "vit_aug_equal_time")},
    budget={"rotated_mse_ratio": "steps", "rot0_vs_vit_aug": "steps", "rotated_vs_vit_aug": "steps",
            "rotated_vs_vit_aug_equal_time": "steps"},
)
