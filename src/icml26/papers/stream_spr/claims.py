"""The checks of the stream_spr reproduction (the issue's "Figures to reach"; the SPR-loss bar
is set on naive SPR's curve), declared before any run.

The quick mode (one game) measures ``return_ratio``; the full mode (several games or seeds)
measures ``games_won``, the paper's strict claim. Each is declared for its settings only, so a
run's result holds the one it measures (a quick run overridden to several games measures
``games_won`` and leaves ``return_ratio`` not measured).
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

CHECKS = declare(
    CheckSpec("no_nonfinite", "non-finite values (parameters, TD errors, SPR losses; all runs)", "==", 0.0,
              source="issue", ref="issue #9"),
    # Set on naive SPR's curve. Naive SPR (no projections) reaches -0.81 within
    # 20k steps on quick Breakout; orth removes each SPR gradient's component along the running
    # mean of past ones (fed one gradient forever it moves the weights by exactly one step) and
    # orth² the component along the ObGD update, so the method's auxiliary loss falls more
    # slowly by design. The bar keeps naive SPR's level (-0.8) and gives the method twice naive
    # SPR's steps to reach it: the loss window is Config.loss_window = 40k steps (the factor 2
    # is ours). Known when the bar was set: an earlier seed-0 quick run crossed -0.8 at
    # about 34k steps; seeds 1 and 2 are the fresh test.
    CheckSpec("spr_loss_early",
              "SPR+orth² loss, lowest bin mean within 2x naive SPR's 20k steps to -0.8 (worst run)", "<", -0.8,
              source="issue", ref="issue #30 (re-based on naive SPR's curve: -0.81 within 20k steps; "
                                  "window 2x that, our factor)"),
    # The same bar read off naive SPR's curve in the same run (issue #38): for each game and seed, the
    # steps SPR+orth² needs to first bring its loss's bin mean below -0.8 over the steps naive SPR
    # needs, averaged over the run's pairs; measured when spr_naive is among the arms. The factor 2 is
    # spr_loss_early's (ours).
    CheckSpec("spr_loss_crossing_ratio",
              "SPR+orth² steps to loss -0.8 / naive SPR's, same game and seed (mean over pairs)", "<=", 2.0,
              source="issue", ref="issue #38 (the bar from a naive-SPR curve: spr_loss_early's factor 2, paired); "
                                  "measured where spr_naive runs (the full mode, tuned_run.py)", settings=("full",)),
    CheckSpec("orth2_cosine", "max abs cos(SPR encoder update, ObGD encoder update) after orth²", "<", 1e-4,
              source="issue", ref="issue #9"),
    CheckSpec("return_ratio", "return ratio SPR+orth² / Stream Q(λ), last 10% of steps", ">=", 0.9,
              source="issue", ref="issue #9 (quick mode)", settings=("quick", "tiny")),
    # orth and orth² against SPR without them (issue #38: "orth and orth² are untested against it"): the
    # method should at least match naive SPR's return, the paper's reason for the projections.
    CheckSpec("return_ratio_naive", "return ratio SPR+orth² / naive SPR, last 10% of steps", ">=", 1.0,
              source="issue", ref="issue #38 (the naive-SPR arm; bar: orth/orth² do not cost return); measured "
                                  "where spr_naive runs: on one game the ratio (tuned_run.py), on several the "
                                  "geometric mean of the per-game ratios", settings=("full",)),
    CheckSpec("games_won", "games where SPR+orth² beats Stream Q(λ) (last-10% mean return over seeds)", ">=", 2.0,
              source="issue", ref="issue #9 (full mode: at least 2 of 3 games)", settings=("full",)),
)

# Arms (Config.arms; quick: spr_orth2 and stream_q on Breakout, 60k steps; full: three games x 3 seeds,
# 1M steps, plus spr_naive). Nothing is selected for any arm: every value is fixed (lr_preset "elsayed").
# Both arms of a seed share the network initialisation, the environment seed and the Q-head
# (LayerNorm + LeakyReLU).
_FIXED = "none: fixed settings"
_RL = {"alpha_rl": (1.0,), "gamma": (0.99,), "lamda": (0.8,), "kappa": (2.0,), "exploration_fraction": (0.2,),
       "total_steps": (60_000,)}
_SPR = {"alpha_spr": (1e-4,), "spr_weight": (2.0,), "spr_depth": (5,), "spr_tau": (0.99,)}
ARMS = declare_arms(
    ArmSpec("spr_orth2", "method", space={**_RL, **_SPR, "orth_beta": (0.99,)}, trials=1, select_on=_FIXED,
            # the tuned further run (tuned_run.py) selects alpha_SPR over (1e-4, 3e-4, 1e-3) on a development seed
            reason="Its own SPR step is not tuned, while the RL step it shares with the baseline is Elsayed et "
                   "al.'s value for Stream Q(lambda): alpha_SPR = 1e-4 and w = 2 come from stream-rep-rl, "
                   "where the RL step was also 1e-4, and with ObGD at alpha = 1.0 the SPR step is about 3x "
                   "weaker relative to the RL step than in the authors' setting. This works against the method.",
            note="K, tau, w, orth's beta and the SPR gating are stream-rep-rl's; alpha_RL, gamma, lambda, kappa "
                 "and the exploration schedule Elsayed et al.'s. Each environment step costs it 4.5-4.8x the "
                 "baseline's wall time (the comparison is at equal environment steps). The full setting differs "
                 "in games, seeds and total_steps (1M)."),
    ArmSpec("stream_q", "baseline", space=dict(_RL), trials=1, select_on=_FIXED,
            note="Stream Q(lambda) with ObGD as published by Elsayed et al. (their step size, traces, kappa and "
                 "exploration schedule; our implementation), same network trunk and Q-head as the method. The "
                 "full setting differs in games, seeds and total_steps (1M)."),
    ArmSpec("spr_authors", "control",
            space={"alpha_rl": (1e-4,), "alpha_spr": (1e-4,), "action_alignment": ("official",),
                   "target_init": ("independent",), "head_activation": ("relu",), "projection_eps": (1e-8,)},
            trials=1, select_on=_FIXED,
            note="SPR+orth+orth² in stream-rep-rl's configuration (runs.AUTHORS: its single q_lr = 1e-4 for ObGD "
                 "and SPR, off-by-one window actions, independent target init, ReLU head, orth² eps 1e-8); every "
                 "other setting is the run's. Fixed: the authors' values. Run by arms=... (the tuned further run)."),
    ArmSpec("spr_naive", "control", space={**_RL, **_SPR, "total_steps": (1_000_000,)}, trials=1,
            select_on=_FIXED,
            note="SPR without orth and orth² (the full setting's arms; in the quick setting by arms=...). Compared "
                 "by return_ratio_naive and spr_loss_crossing_ratio where it runs; in the tuned further run "
                 "(tuned_run.py) its alpha_SPR is tuned over (1e-4, 3e-4, 1e-3) exactly as the method's. The "
                 "spr_loss_early bar (-0.8 within 2x its 20k steps) was read off its curve in an "
                 "earlier, uncommitted run; its committed quick-budget curve (results/stream_spr/naive_spr, seeds "
                 "0-2) first passes -0.8 at 21k, 24k and 26k steps."),
)

# The abstract: SPR with orthogonal updates trains stably in the streaming pipeline and does at least as
# well as the streaming baseline (quick: one game; full: games won). The cosine after orth² is zero by
# construction.
CHECKS = annotate(
    CHECKS,
    headline=("return_ratio", "games_won", "no_nonfinite"),
    diagnostic=("orth2_cosine",),
    compares={"return_ratio": ("spr_orth2", "stream_q"), "games_won": ("spr_orth2", "stream_q"),
              "spr_loss_crossing_ratio": ("spr_orth2", "spr_naive"),
              "return_ratio_naive": ("spr_orth2", "spr_naive")},
    budget={"return_ratio": "total_steps", "games_won": "total_steps", "return_ratio_naive": "total_steps"},
    # games won is a full-mode check: the paper's claim reads it in the 240k-step run with all four arms on
    # three games, alpha_SPR tuned alike (results/stream_spr/full_240k_four_arms/)
    run={"games_won": "full_240k_four_arms"},
)
