"""The checks of the hamu reproduction, declared before any run (``icml26 info hamu``).

The headline runs on a testbed where forgetting is measurable (Animal-MNIST: original and
retrained reference differ by ≥ 10 points of forget accuracy at ρ = 0.5; on digits by ~1). Arms
are matched on the reference's forget accuracy with checkpoints selected on a validation split;
NegGrad+ (the strongest baseline measured) stands beside GradDiff; the area under the Pareto
front and the stop flag as a decision rule are checked too, beside one alternative stop rule; the
retain harm is also read where it concentrates (the forget class's retained members, and the KL to
the reference on the retain set); and every check is measured per forget-set draw (each draw its
own data split, models and forget sets; paired intervals pooled over the draws of every seed).
"""

from icml26.contract import ArmSpec, CheckSpec, Replication, annotate, declare, declare_arms

#: A replicate is its own stratified train / validation / test draw, its own original and retrained
#: models and its own forget set, all from independent streams: the matched-forgetting checks are
#: measured per replicate and their intervals pool the replicates of every master seed.
REPLICATION = Replication(unit="forget-set draw",
                          why="each replicate draws its own data split, trains its own original and reference "
                              "models and picks its own forget set from independent streams")

CHECKS = declare(
    CheckSpec("guarantee", "share of HAMU-Q steps with realised forget-loss increase >= 0.9 B "
              "(float64 probe at guarantee_lr)", ">=", 0.95,
              source="issue", ref="issue #5"),
    CheckSpec("testbed_gap", "rho=0.5: original - retrained reference forget accuracy (points)", ">=", 10.0,
              source="issue", ref="issue #28 (a setting where original and reference differ by >= 10 points at "
                                  "rho >= 0.5, so that matched forgetting is measurable)"),
    CheckSpec("matched_margin", "rho=0.5: HAMU-Q retain-test acc - GradDiff's at matched forget acc (points)",
              ">=", 2.0, source="issue", ref="issue #5"),
    CheckSpec("matched_margin_neggrad",
              "rho=0.5: HAMU-Q retain-test acc - NegGrad+'s at matched forget acc (points)", ">=", 2.0,
              source="issue", ref="issue #5's +2 points, applied by issue #28 to NegGrad+ (the strongest baseline "
                                  "measured)"),
    CheckSpec("front_margin_best_baseline",
              "rho=0.5: area under the retain-vs-forget Pareto front over [reference - window, original] "
              "(as a mean height), HAMU-Q - the best baseline by that area (points)", ">=", 0.0, source="ours",
              ref="issue #28 asks for the area under the Pareto front, HAMU against the best baseline, with an "
                  "interval; >= 0 (HAMU's front at least as high on average as the best baseline's, the best "
                  "chosen after the fact) is our bar"),
    CheckSpec("retained_class_margin", "rho=0.5: HAMU-Q - GradDiff accuracy on the forget class's retained "
              "training members at matched forget acc (points)", ">=", 0.0, source="ours",
              ref="issue #37 asks for retain accuracy on the retained forget-class samples (the retain-test metric "
                  "excludes the class, where every arm's harm lives); >= 0, no more harm there than GradDiff, is our "
                  "reading of 'least retain harm'"),
    CheckSpec("retained_class_margin_neggrad", "rho=0.5: HAMU-Q - NegGrad+ accuracy on the forget class's "
              "retained training members at matched forget acc (points)", ">=", 0.0, source="ours",
              ref="issue #37, as retained_class_margin, against NegGrad+ (the strongest baseline measured)"),
    CheckSpec("retained_class_front_margin", "rho=0.5: mean height over [reference - window, original] of the "
              "front reporting retained forget-class accuracy (same validation-selected checkpoints), HAMU-Q - "
              "the best baseline by that height (points)", ">=", 0.0, source="ours",
              ref="issue #37 asks to compare arms at equal forget accuracy along each front; >= 0 against the best "
                  "baseline chosen after the fact, as front_margin_best_baseline"),
    CheckSpec("retain_kl_margin", "rho=0.5: GradDiff - HAMU-Q mean KL(reference || model) on the retain set at "
              "matched forget acc (nats; > 0: HAMU-Q closer to retraining)", ">=", 0.0, source="ours",
              ref="issue #37 asks for the KL to the reference on retained data; >= 0, HAMU-Q no further from the "
                  "retrained model than GradDiff, is our bar"),
    CheckSpec("cos_grows", "step-0 cos(g_r, g_f) grows with rho (per draw: smallest increase of its median "
              "over lrs)", ">", 0.0, source="issue", ref="issue #5"),
    CheckSpec("stop_earlier", "stop criterion fires earlier for larger rho (per draw: smallest decrease of "
              "its mean first-stop step over lrs)", ">", 0.0, source="issue", ref="issue #5"),
    CheckSpec("stop_rule_cost", "stop_on_criterion=True: share of HAMU-Q runs (rho > 0, every lr) whose stopped "
              "model is within 1 retain-test point of the best in-window checkpoint", ">=", 0.5,
              source="ours", ref="issue #28 asks for this share (the stop flag as a decision rule) without a bar; "
                                 "at least half of the runs is our reading of a useful rule"),
    CheckSpec("stop_rule_useful", "stop_on_criterion=True: share of HAMU-Q runs (rho > 0, every lr) whose stopped "
              "model is within 1 retain-test point of the best in-window checkpoint AND has forgotten to the "
              "matched window", ">=", 0.5,
              source="ours", ref="issue #28's decision rule, counting only stops that also did the unlearning (a "
                                 "model stopped before it forgot costs no retain accuracy trivially); half of the "
                                 "runs, as for stop_rule_cost"),
    CheckSpec("target_stop_useful", "validation-forget stop rule (stop at the first checkpoint whose forget acc "
              "is at most that of validation samples of the forget set's label mix): share of HAMU-Q runs (rho > 0, "
              "every lr) within 1 retain-test point of the best in-window checkpoint AND forgotten to the window",
              ">=", 0.5, source="ours",
              ref="issue #37 asks to test one principled alternative to the stop flag (e.g. a validation-forget "
                  "target); scored as stop_rule_useful, with its bar"),
)

# The arms the comparisons read, as they are set today (quick setting; experiment.py's Config.quick). Every
# arm starts from the same original model and unlearns for `steps` full-batch paired steps at every learning
# rate of its grid; its checkpoint (learning rate x step, every `eval_every` = 4 steps, 25 per rate) is then
# selected on the validation split's retain accuracy among the checkpoints inside the matched forget window
# (analysis.matched_point), and its test retain accuracy reported. The learning-rate grids are ours, set per
# family from where each first crosses the matched window (Config.hamu_lrs / baseline_lrs docstrings).
_STEPS = tuple(range(4, 101, 4))  # the checkpoints of a 100-step run evaluated every 4 steps
_SELECT = "validation split (retain classes), among checkpoints inside the matched forget window"
_FULL = ("The full setting differs: 300 steps with a checkpoint every step, HAMU lr grid (0.03, 0.1, 0.3, 1, 3), "
         "baseline grid (0.003, 0.01, 0.03, 0.1, 0.3, 1), every arm at every rho.")
_SHARED = ("Same original model, forget and retain sets, steps, evaluation schedule and selection rule as "
           "HAMU-Q; the update direction is clipped to norm 1 (HF Trainer's max_grad_norm = 1, as the authors) "
           "and applied by SGD. ")

ARMS = declare_arms(
    ArmSpec("hamu_q_layerwise", "method",
            space={"lr": (0.1, 0.3, 1.0, 3.0), "checkpoint_step": _STEPS, "bound_ratio": (0.5,),
                   "max_grad_norm": (1.0,)},
            trials=4 * len(_STEPS), select_on=_SELECT,
            reason="fewer candidates than each baseline (4 learning rates x 25 checkpoints = 100 against "
                   "5 x 25 = 125): the HAMU grid was set from where HAMU's forget accuracy crosses the matched "
                   "window (its step norm is lr*||g_r||), the baselines' from where theirs does",
            note="The paper's default (one problem per parameter tensor); bound_ratio c = 0.5 is the authors' "
                 "constraint ratio, not tuned; the stop flag does not stop these runs. " + _FULL),
    ArmSpec("graddiff", "baseline",
            space={"lr": (0.01, 0.03, 0.1, 0.3, 1.0), "checkpoint_step": _STEPS},
            trials=5 * len(_STEPS), select_on=_SELECT,
            note=_SHARED + "d = (g_r - g_f)/2, the authors' equivalent gradient; nothing else to tune. " + _FULL),
    ArmSpec("neggrad_plus", "baseline",
            space={"lr": (0.01, 0.03, 0.1, 0.3, 1.0), "checkpoint_step": _STEPS, "beta": (0.9,)},
            trials=5 * len(_STEPS), select_on=_SELECT,
            note=_SHARED + "d = beta*g_r - (1 - beta)*g_f with beta = 0.9 fixed (ours; Kurmanji et al. tune beta, "
                 "here it is not tuned). " + _FULL),
    ArmSpec("scrub", "baseline",
            space={"lr": (0.01, 0.03, 0.1, 0.3, 1.0), "checkpoint_step": _STEPS, "alpha": (0.001,),
                   "gamma": (0.99,)},
            trials=5 * len(_STEPS), select_on=_SELECT,
            note=_SHARED + "One simultaneous step on the authors' equivalent gradient with their alpha = 0.001, "
                 "gamma = 0.99 (not tuned), not the original alternating max/min schedule; it also receives the "
                 "original model's outputs (the KL terms). Reached the window in 65 % of draws "
                 "(committed result). " + _FULL),
    ArmSpec("pcgrad", "baseline",
            space={"lr": (0.01, 0.03, 0.1, 0.3, 1.0), "checkpoint_step": _STEPS},
            trials=5 * len(_STEPS), select_on=_SELECT,
            note=_SHARED + "Projects only on a true conflict (g_r.g_f > 0; the authors' code has the test "
                 "inverted, we do not reproduce that). " + _FULL),
    ArmSpec("gru", "baseline",
            space={"lr": (0.01, 0.03, 0.1, 0.3, 1.0), "checkpoint_step": _STEPS},
            trials=5 * len(_STEPS), select_on=_SELECT,
            note=_SHARED + "Forget ascent projected on conflict (ours, conflict test as for PCGrad). " + _FULL),
)

# front_margin_best_baseline compares HAMU-Q with whichever baseline has the largest mean front height,
# chosen after the fact on the test-reported fronts (in the baselines' favour). The full setting also runs
# finetune and gradient ascent (same grid as the other baselines); they are candidates there, not in quick.
_BASELINES = ("graddiff", "neggrad_plus", "scrub", "pcgrad", "gru")

# The abstract: a guaranteed forget improvement at the least retain cost, a better trade-off than the
# baselines. The original-vs-reference gap is the precondition that forgetting is measurable.
CHECKS = annotate(
    CHECKS,
    headline=("guarantee", "matched_margin", "front_margin_best_baseline"),
    diagnostic=("testbed_gap",),
    compares={"matched_margin": ("hamu_q_layerwise", "graddiff"),
              "matched_margin_neggrad": ("hamu_q_layerwise", "neggrad_plus"),
              "front_margin_best_baseline": ("hamu_q_layerwise", *_BASELINES),
              "retained_class_margin": ("hamu_q_layerwise", "graddiff"),
              "retained_class_margin_neggrad": ("hamu_q_layerwise", "neggrad_plus"),
              "retained_class_front_margin": ("hamu_q_layerwise", *_BASELINES),
              "retain_kl_margin": ("hamu_q_layerwise", "graddiff")},
    budget={"matched_margin": "steps", "matched_margin_neggrad": "steps", "front_margin_best_baseline": "steps",
            "retained_class_margin": "steps", "retained_class_margin_neggrad": "steps",
            "retained_class_front_margin": "steps", "retain_kl_margin": "steps"},
)
