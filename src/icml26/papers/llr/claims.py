"""The checks of LLR's reproduction, declared before any run.

The headline compares LLR with controls that hold the rate budget fixed:
uniform AdamW at LLR's parameter-weighted mean rate, fixed multipliers by matrix kind (no
spectral fit), and the shuffle within matrix kinds (rate-preserving). Each is reported as the
smallest gap over the base-rate grid, whatever its sign.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

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

# Every arm is trained at every base rate of Config.base_lrs (quick: 7.5e-4, 3e-3, 1.2e-2) from the same
# initialisation on the same batches, for the same steps (quick: 400), with the same AdamW settings
# (betas 0.9/0.95, weight decay 0.1, warm-up 10 %, cosine to 0.1, clip 1.0). The checks take each
# control's smallest gap to LLR over that grid (or the smallest rate alone): the grid is not a selection,
# and nothing else is selected for any arm, so every arm has one configuration per base rate. The full
# setting differs in model size, steps (800), the 5-rate grid and the extra LLR-mean arm (no check).
_FIXED = "none: fixed settings (every base rate of the grid is run and reported)"
_FULL = (" Quick values; the full setting runs 800 steps of a 4-block width-128 model at five base rates "
         "(7.5e-4 to 1.2e-2).")
_SHARED = {"steps": (400,), "adamw_betas": ((0.9, 0.95),), "weight_decay": (0.1,), "warmup_fraction": (0.1,),
           "min_lr_ratio": (0.1,)}
ARMS = declare_arms(
    ArmSpec("llr", "method",
            space={"r_min": (1.0,), "r_max": (3.0,), "embed_head_multiplier": ("r_max = 3.0 (no fit)",),
                   "every": (10,), "ramp_steps": (5,), "active_fraction": (0.2,), "fit": ("median Hill",),
                   **_SHARED},
            trials=1, select_on=_FIXED, metrics="LLR lr=<base rate>",
            note="r = [1, 3], the median fit, the 20 % active window and embeddings/head at r_max are the "
                 "authors' shipped configs; refits every 10 steps with 5-step ramps are the brief's CPU scaling "
                 "of their 40/20. Not re-tuned for the tiny LLaMA. The tied embedding/head (37 % of the quick "
                 "model's parameters) runs at 3x by a rule, not by a fit; a uniform AdamW run with only that "
                 "matrix at 3x gets 94-95 % of LLR's gain over uniform (see the uniform arm)." + _FULL),
    ArmSpec("uniform", "baseline", space={"multiplier": (1.0,), "embed_head_multiplier": (1.0,), **_SHARED},
            trials=1, select_on=_FIXED, metrics="uniform lr=<base rate>",
            reason="Receives none of LLR's multipliers, including the embedding/head's 3x, which LLR sets by a "
                   "rule without a spectral fit: uniform AdamW with only the embedding/head at 3x reaches "
                   "4.821 / 4.810 (seeds 0 / 1, base rate 7.5e-4) against LLR's 4.790 / 4.785 and plain "
                   "uniform's 5.284 / 5.312, i.e. 94-95 % of LLR's gain. The check uniform_gap_smallest_rate "
                   "reads it at the grid's smallest rate (7.5e-4), 4x below its own best rate (3e-3): gain "
                   "0.513 nats there against 0.245 at both arms' best rate.",
            note="torch AdamW with the same parameter groups, schedule and clipping as LLR, no multipliers."
                 + _FULL),
    ArmSpec("uniform_matched", "control",
            space={"multiplier": ("LLR's final parameter-weighted mean at the same base rate (x2.33-x2.63)",),
                   "ramp_steps": (5,), **_SHARED},
            trials=1, select_on=_FIXED, metrics="uniform-matched lr=<base rate>",
            reason="Its rate is copied from the LLR run at the same base rate, not selected: every parameter "
                   "(norms included) at m = LLR's final parameter-weighted mean multiplier (x2.40, x2.36, x2.63 "
                   "on seed 0), so the embedding/head gets about 2.4x where LLR gives it 3x, and the attention "
                   "matrices, about 1x under LLR, get the same 2.4x.",
            note="The control for 'more rate'; ramped in over LLR's 5 steps." + _FULL),
    ArmSpec("kind_static", "control",
            space={"multipliers": ("LLR's final multipliers averaged per matrix kind",),
                   "embed_head_multiplier": (3.0,), "ramp_steps": (5,), **_SHARED},
            trials=1, select_on=_FIXED, metrics="kind-static lr=<base rate>",
            reason="Its multipliers are copied from the LLR run at the same base rate (its final multipliers, "
                   "averaged per matrix kind), not selected. The step-0 per-kind means, which need no training, "
                   "do better: 4.497 / 4.458 at 3e-3 (seeds 0 / 1) against LLR's 4.548 / 4.479 and the "
                   "final-mean control's 4.596 / 4.577.",
            note="The control for 'the map only sorts matrix kinds': fixed from step 0 (ramped in over 5 "
                 "steps), no spectral fit." + _FULL),
    ArmSpec("shuffled", "control",
            space={"permutation": ("within matrix kinds, a derangement",), "permutation_seed": (1,),
                   "r_min": (1.0,), "r_max": (3.0,), "embed_head_multiplier": (3.0,), "every": (10,),
                   "ramp_steps": (5,), "active_fraction": (0.2,), **_SHARED},
            trials=1, select_on=_FIXED, metrics="shuffled lr=<base rate>",
            note="LLR itself with its fitted multipliers permuted among layers of the same kind and shape at "
                 "every fit (one fixed permutation, seed 1); the embedding/head keeps 3x and every kind keeps "
                 "its rate budget. Treated like LLR in every other respect." + _FULL),
)

# The abstract: the heavy-tail fit is what sets good per-layer rates, so LLR must beat rate-preserving
# controls that drop the fit.
CHECKS = annotate(
    CHECKS,
    headline=("rate_matched_gap", "kind_static_gap", "shuffled_gap"),
    compares={"shuffled_gap": ("llr", "shuffled"), "rate_matched_gap": ("llr", "uniform_matched"),
              "kind_static_gap": ("llr", "kind_static"), "uniform_gap_smallest_rate": ("llr", "uniform")},
    budget={"shuffled_gap": "steps", "rate_matched_gap": "steps", "kind_static_gap": "steps",
            "uniform_gap_smallest_rate": "steps"},
)
