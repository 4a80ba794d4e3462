"""The checks of LLR's reproduction, declared before any run.

The headline compares LLR with controls that drop the spectral fit of trained weights:
the better of two fit-free arms (uniform AdamW with only the embedding/head at r_max; LLR's
step-0 assignment averaged per matrix kind and held), each arm at its own base rate tuned on
held-out tuning windows; fixed multipliers by matrix kind (LLR's final kind means); and the
shuffle within matrix kinds (rate-preserving). The last two are reported as the smallest gap
over the base-rate grid, whatever its sign.
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
    CheckSpec("fit_free_gap",
              "LLR beats the better fit-free arm (embedding/head at r_max; kind-static at the step-0 fit), "
              "every arm at its tuned base rate (nats)",
              ">=", 0.02, source="issue",
              ref="issue #38 (the fit-free arms; LLR against the better one); bar: issue #10's 0.02 nats over uniform"),
    CheckSpec("embed_head_gap",
              "LLR beats uniform AdamW with only the embedding/head at r_max, each at its tuned base rate (nats)",
              ">=", 0.02, source="issue", ref="issue #38 (the arm); bar: issue #10's 0.02 nats over uniform"),
    CheckSpec("kind_static_step0_gap",
              "LLR beats its step-0 multipliers averaged per matrix kind and held (no refit), each at its tuned "
              "base rate (nats)",
              ">=", 0.02, source="issue", ref="issue #38 (the arm); bar: issue #10's 0.02 nats over uniform"),
)

# Every arm is trained at every base rate of Config.base_lrs (quick: 7.5e-4, 3e-3, 1.2e-2) from the same
# initialisation on the same batches, for the same steps (quick: 400), with the same AdamW settings
# (betas 0.9/0.95, weight decay 0.1, warm-up 10 %, cosine to 0.1, clip 1.0). Every arm's base rate is then
# tuned by the shared tuner over that grid (all three points) on the tuning windows: the final loss on the
# 4 x 32 held-out windows that follow the evaluation windows, which the reported losses never use. The
# fit-free checks compare each arm at its tuned rate; the grid checks take each control's smallest gap to
# LLR over the whole grid (no selection). The full setting differs in model size, steps (800), the 5-rate
# grid (then all five points are tuned over) and the extra LLR-mean arm (no check, not tuned).
_TUNE = ("tuning windows: final loss on the 4 x 32 held-out windows after the evaluation windows "
         "(disjoint from every reported loss)")
_FULL = (" Quick values; the full setting runs 800 steps of a 4-block width-128 model at five base rates "
         "(7.5e-4 to 1.2e-2).")
_GRID = {"base_lr": (7.5e-4, 3e-3, 1.2e-2)}
_SHARED = {"steps": (400,), "adamw_betas": ((0.9, 0.95),), "weight_decay": (0.1,), "warmup_fraction": (0.1,),
           "min_lr_ratio": (0.1,)}
ARMS = declare_arms(
    ArmSpec("llr", "method",
            space={**_GRID, "r_min": (1.0,), "r_max": (3.0,), "embed_head_multiplier": ("r_max = 3.0 (no fit)",),
                   "every": (10,), "ramp_steps": (5,), "active_fraction": (0.2,), "fit": ("median Hill",),
                   **_SHARED},
            trials=3, select_on=_TUNE, metrics="LLR lr=<base rate>",
            note="r = [1, 3], the median fit, the 20 % active window and embeddings/head at r_max are the "
                 "authors' shipped configs; refits every 10 steps with 5-step ramps are the brief's CPU scaling "
                 "of their 40/20. Not re-tuned for the tiny LLaMA. The tied embedding/head (37 % of the quick "
                 "model's parameters) runs at 3x by a rule, not by a fit (the embed_head arm keeps only that "
                 "rule)." + _FULL),
    ArmSpec("uniform", "baseline", space={**_GRID, "multiplier": (1.0,), "embed_head_multiplier": (1.0,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="uniform lr=<base rate>",
            reason="Receives none of LLR's multipliers, including the embedding/head's 3x, which LLR sets by a "
                   "rule without a spectral fit (the embed_head arm adds that rule alone). The check "
                   "uniform_gap_smallest_rate reads it at the grid's smallest rate (7.5e-4), below its tuned "
                   "rate, not at its tuned rate.",
            note="torch AdamW with the same parameter groups, schedule and clipping as LLR, no multipliers."
                 + _FULL),
    ArmSpec("uniform_matched", "control",
            space={**_GRID, "multiplier": ("LLR's final parameter-weighted mean at the same base rate (x2.33-x2.63)",),
                   "ramp_steps": (5,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="uniform-matched lr=<base rate>",
            reason="Its multiplier is copied from the LLR run at the same base rate, not selected: every "
                   "parameter (norms included) at m = LLR's final parameter-weighted mean multiplier (x2.40, "
                   "x2.36, x2.63 on seed 0), so the embedding/head gets about 2.4x where LLR gives it 3x, and "
                   "the attention matrices, about 1x under LLR, get the same 2.4x.",
            note="The control for 'more rate'; ramped in over LLR's 5 steps." + _FULL),
    ArmSpec("kind_static", "control",
            space={**_GRID, "multipliers": ("LLR's final multipliers averaged per matrix kind",),
                   "embed_head_multiplier": (3.0,), "ramp_steps": (5,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="kind-static lr=<base rate>",
            reason="Its multipliers are copied from the LLR run at the same base rate (its final multipliers, "
                   "averaged per matrix kind), not selected: it receives what LLR's fits of trained weights "
                   "found.",
            note="The control for 'the map only sorts matrix kinds': fixed from step 0 (ramped in over 5 "
                 "steps), no spectral fit of its own." + _FULL),
    ArmSpec("shuffled", "control",
            space={**_GRID, "permutation": ("within matrix kinds, a derangement",), "permutation_seed": (1,),
                   "r_min": (1.0,), "r_max": (3.0,), "embed_head_multiplier": (3.0,), "every": (10,),
                   "ramp_steps": (5,), "active_fraction": (0.2,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="shuffled lr=<base rate>",
            note="LLR itself with its fitted multipliers permuted among layers of the same kind and shape at "
                 "every fit (one fixed permutation, seed 1); the embedding/head keeps 3x and every kind keeps "
                 "its rate budget. Treated like LLR in every other respect." + _FULL),
    ArmSpec("embed_head", "control",
            space={**_GRID, "embed_head_multiplier": ("r_max = 3.0",), "hidden_multiplier": (1.0,),
                   "norm_multiplier": (1.0,), "ramp_steps": (5,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="embed-head lr=<base rate>",
            note="Fit-free: uniform AdamW except the tied embedding/head, which runs at LLR's r_max = 3x (ramped "
                 "in over LLR's 5 steps); every hidden matrix and the norms at the base rate. LLR's rule for "
                 "that matrix without any fit." + _FULL),
    ArmSpec("kind_static_step0", "control",
            space={**_GRID, "multipliers": ("LLR's step-0 assignment averaged per matrix kind, held",),
                   "r_min": (1.0,), "r_max": (3.0,), "embed_head_multiplier": (3.0,), "refits": (0,),
                   "ramp_steps": (5,), **_SHARED},
            trials=3, select_on=_TUNE, metrics="kind-static-step0 lr=<base rate>",
            note="Fit-free in training: LLR's map applied once, to the initial weights (whose alphas reflect only "
                 "each matrix's aspect ratio), averaged per matrix kind, ramped in over 5 steps and never "
                 "refit; embedding/head at 3x. A rule a practitioner can write down without LLR." + _FULL),
)

# The abstract: the heavy-tail fit is what sets good per-layer rates, so LLR must beat controls that drop the
# fit. The fit-free check (LLR against the better of the two fit-free arms, each tuned alike) is the strongest
# of these; the rate-matched uniform control asks the same question ("more rate, no fit") with a weaker arm
# (its rate is copied from LLR and spread over the attention matrices and norms too), so it is supporting.
CHECKS = annotate(
    CHECKS,
    headline=("fit_free_gap", "kind_static_gap", "shuffled_gap"),
    compares={"shuffled_gap": ("llr", "shuffled"), "rate_matched_gap": ("llr", "uniform_matched"),
              "kind_static_gap": ("llr", "kind_static"), "uniform_gap_smallest_rate": ("llr", "uniform"),
              "fit_free_gap": ("llr", "embed_head", "kind_static_step0"), "embed_head_gap": ("llr", "embed_head"),
              "kind_static_step0_gap": ("llr", "kind_static_step0")},
    budget={"shuffled_gap": "steps", "rate_matched_gap": "steps", "kind_static_gap": "steps",
            "uniform_gap_smallest_rate": "steps", "fit_free_gap": "steps", "embed_head_gap": "steps",
            "kind_static_step0_gap": "steps"},
)
