"""The checks of the hamu reproduction, declared before any run (``icml26 info hamu``).

Issue #28 (fidelity round) moved the headline to a testbed where forgetting is measurable
(Animal-MNIST: original and retrained reference differ by ≥ 10 points of forget accuracy at
ρ = 0.5; on digits by ~1), matched on the reference's forget accuracy with checkpoints selected on
a validation split, put NegGrad+ (the strongest baseline measured) beside GradDiff, added the
area under the Pareto front and the stop flag as a decision rule, and reads every check over ≥ 10
master seeds (independent data splits and forget sets; paired intervals).
"""

from icml26.contract import CheckSpec, Replication, annotate, declare

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
    CheckSpec("cos_grows", "median step-0 cos(g_r, g_f) grows with rho (smallest increase)", ">", 0.0,
              source="issue", ref="issue #5"),
    CheckSpec("stop_earlier", "stop criterion fires earlier for larger rho (smallest decrease of the mean "
              "first-stop step)", ">", 0.0, source="issue", ref="issue #5"),
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
)

# The abstract: a guaranteed forget improvement at the least retain cost, a better trade-off than the
# baselines. The original-vs-reference gap is the precondition that forgetting is measurable.
CHECKS = annotate(
    CHECKS,
    headline=("guarantee", "matched_margin", "front_margin_best_baseline"),
    diagnostic=("testbed_gap",),
)
