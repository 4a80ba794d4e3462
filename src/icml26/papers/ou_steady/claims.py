"""The checks of the ou_steady reproduction, declared before any run (``icml26 info ou_steady``).

``N = bar_samples`` is the config's sample size per regime at which the issue's bars are read
(10⁵ in the quick and full settings). Method and baseline get the same information (both given
the drift's support, or neither). The recursive estimator is also checked with its joint
refinement. The "root-only fails" ablation uses knockouts: with soft drift interventions
root-only data are identifiable, so a failure there is infeasible by construction. The
identifiability oracle's nullity per design is checked as well.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

_SLOPE = ("issue #3 asks that the error fall 'roughly like N^-1/2'; the paper brief's consistency test "
          "(§5.6) reads that as a log-log slope in [-0.7, -0.3]; fitted over one size per decade from 10^3 "
          "(slope_sizes; errors saturate at N = 100, added by issue #28)")
_EQUAL = "issue #3 (>= 5x below the baseline); issue #28: both given the support"
_ORACLE = "issue #28 (the oracle's nullity per design on 20 systems, as checks)"

CHECKS = declare(
    CheckSpec("recursive_exact", "recursive: median drift error, exact moments", "<", 1e-6,
              source="issue", ref="issue #3"),
    CheckSpec("lsq_exact", "lsq: median drift error, exact moments", "<", 1e-6,
              source="issue", ref="issue #3"),
    CheckSpec("recursive_at_bar_n", "recursive: median drift error at N = bar_samples per regime", "<", 0.05,
              source="issue", ref="issue #3"),
    CheckSpec("recursive_refined_at_bar_n",
              "recursive + joint least-squares refinement: median drift error at N = bar_samples", "<=", 0.05,
              source="issue", ref="issue #28 (target <= 0.05 for the refinement after the recursive pass)"),
    CheckSpec("lsq_at_bar_n", "lsq (no support): median drift error at N = bar_samples per regime", "<", 0.05,
              source="issue", ref="issue #3"),
    CheckSpec("baseline_over_recursive",
              "baseline / recursive median drift error at N = bar_samples (both given the support)", ">=", 5.0,
              source="issue", ref=_EQUAL),
    CheckSpec("baseline_over_recursive_refined",
              "baseline / refined recursive median drift error at N = bar_samples (both given the support)",
              ">=", 5.0, source="issue", ref=_EQUAL),
    CheckSpec("baseline_over_lsq_known_support",
              "baseline / lsq median drift error at N = bar_samples (both given the support)", ">=", 5.0,
              source="issue", ref=_EQUAL),
    CheckSpec("baseline_free_over_lsq",
              "support-free baseline (l1, lambda picked with the truth) / lsq (no support) at N = bar_samples",
              ">=", 5.0, source="issue",
              ref="issue #3 (>= 5x below the baseline); issue #28: neither given the support, replacing the "
                  "unequal lsq-vs-support-aware-baseline ratio"),
    CheckSpec("nullity_knockout_per_component",
              "oracle nullity, a knockout in every component, support unknown (max over systems)", "<=", 1.0,
              source="paper", ref="abstract: one intervention per component identifies up to scale; " + _ORACLE),
    CheckSpec("nullity_knockout_root_only",
              "oracle nullity, a knockout in the root component only, support unknown (min over systems)",
              ">=", 2.0, source="paper",
              ref="abstract: one intervention per component is needed (issue #3: the root-only ablation fails); "
                  + _ORACLE),
    CheckSpec("nullity_soft_drift_per_component",
              "oracle nullity, a soft drift intervention in every component, support unknown (max over systems)",
              "<=", 1.0, source="paper", ref="abstract; " + _ORACLE),
    CheckSpec("nullity_observational",
              "oracle nullity, observational data only, support unknown (min over systems)", ">=", 2.0,
              source="paper", ref="abstract (interventions are needed for identifiability); " + _ORACLE),
    CheckSpec("nullity_observational_known_support",
              "oracle nullity, observational data only, support known (max over systems)", "<=", 1.0,
              source="ours",
              ref="issue #28: with the true support even observational data identify the process here, which is "
                  "why support-aware and support-free arms are compared separately"),
    CheckSpec("root_only_knockout_downstream_exact",
              "root-only knockouts: downstream drift error of lsq, exact moments (median)", ">=", 0.1,
              source="ours", ref="issue #3 asks that the root-only ablation 'fail on downstream components'; "
                                 "at least 0.1 is our reading of 'fails'; issue #28: with knockouts, where the "
                                 "design is not identified (with soft drift it is, so that bar was infeasible)"),
    CheckSpec("root_only_knockout_downstream_ratio",
              "root-only / every-component knockouts: downstream drift error of lsq at N = bar_samples", ">=", 2.0,
              source="ours", ref="the statistical form of issue #3's 'fails on downstream components': at least "
                                 "twice the downstream error of the same estimator with every knockout (issue #28: "
                                 "knockouts)"),
    CheckSpec("recursive_slope_magnitude", "recursive: |log-log slope of the median error vs N|", "abs<=", 0.7,
              source="ours", ref=_SLOPE),
    CheckSpec("recursive_slope", "recursive: log-log slope of the median error vs N", "<=", -0.3,
              source="ours", ref=_SLOPE),
    CheckSpec("lsq_slope_magnitude", "lsq: |log-log slope of the median error vs N|", "abs<=", 0.7,
              source="ours", ref=_SLOPE),
    CheckSpec("lsq_slope", "lsq: log-log slope of the median error vs N", "<=", -0.3,
              source="ours", ref=_SLOPE),
    CheckSpec("heldout_cov_ratio",
              "held-out intervention covariance error: baseline / lsq (medians; both given the support)", ">=", 3.0,
              source="ours", ref="issue #3 asks for the held-out prediction error without a bar; 3x is the pass "
                                 "bar of the paper brief (§4.3); issue #28: both given the support"),
)

# The arms the comparisons read, as experiment.py's _fit_all sets them (quick and full differ only in the
# number of systems, 30 vs 100). Every arm is fitted once per system and sample size, on the same sample
# draw; nothing is selected on data except the support-free baseline's lambda, which is picked per system
# and sample size against the true drift (the quantity every error is measured on). The interventional
# arms see the observational regime plus one soft-drift intervention per component; the baselines see the
# observational regime only (that is the comparison the paper makes: interventions against none).
_NONE = "nothing selected"
_INTERVENTIONAL = ("Receives the observational regime and one soft-drift intervention per component (unknown "
                   "strengths). ")
_LAMBDA_PILOT = ("lambda = 0 (Config.l1) for every arm but the support-free baseline: in a 20-system pilot "
                 "(outside the run, scored against the true drift) l1 raised lsq's median error at N = 1e5 from "
                 "0.40 (lambda = 0) to 0.55 (1e-4) and 0.90 (1e-3), README.")

ARMS = declare_arms(
    ArmSpec("recursive", "method", space={}, trials=1, select_on=_NONE,
            note=_INTERVENTIONAL + "Given the drift's support. The paper's recursive algorithm (rank_rtol 1e-10, "
                 "our default); nothing to tune."),
    ArmSpec("recursive_refined", "method", space={}, trials=1, select_on=_NONE,
            note=_INTERVENTIONAL + "Given the drift's support. The recursive pass followed by the joint weighted "
                 "least squares of every regime's equations on the support (ours, issue #28); nothing to tune."),
    ArmSpec("lsq_known_support", "method", space={"l1": (0.0,)}, trials=1, select_on=_NONE,
            note=_INTERVENTIONAL + "Given the drift's support. The paper's least-squares estimator. " + _LAMBDA_PILOT),
    ArmSpec("lsq", "method", space={"l1": (0.0,)}, trials=1, select_on=_NONE,
            reason="fewer trials than its baseline (1 against 4): observational_lyapunov_free's lambda is picked "
                   "per system from 4 values against the truth; lsq's lambda is fixed at 0",
            note=_INTERVENTIONAL + "Not given the support. The paper's least-squares estimator. " + _LAMBDA_PILOT),
    ArmSpec("observational_lyapunov", "baseline", space={"l1": (0.0,), "diffusion": ("D = I (assumed)",)},
            trials=1, select_on=_NONE,
            reason="receives less information by design: the observational regime only (no interventional "
                   "regime), with D assumed to be I while the true diffusions are drawn from U(0.5, 2); given the "
                   "drift's support like the method arms it is compared with",
            note="GCLM-style observational Lyapunov least squares (after Dettling et al.; our implementation). "
                 "With the support, its only error is the D = I assumption (its err_exact, 0.15-0.18 over the "
                 "committed seeds 0-5); the other observational arm (D unknown, observational_unknown_d) is worse "
                 "at N = 1e5 on every committed seed (err_N1e5 0.26-0.46 against 0.17-0.20), so this is the "
                 "stronger of the two there. " + _LAMBDA_PILOT),
    ArmSpec("observational_lyapunov_free", "baseline", space={"l1": (1e-5, 1e-4, 1e-3, 1e-2)}, trials=4,
            select_on="the true drift B (an oracle: per system and sample size, the quantity its error is "
                      "measured on)",
            reason="its lambda is selected against the true drift, i.e. on the evaluation target itself, an "
                   "oracle choice in the baseline's favour; it receives the observational regime only, with D "
                   "assumed to be I and no support, as the comparison intends",
            note="GCLM-style l1 Lyapunov fit (our implementation; its lambda = 0 system is underdetermined without "
                 "the support, so l1 is required); ADMM capped at 3,000 iterations, tolerance 1e-7 "
                 "(experiment.py _fit_all). Median lambda picked: 1e-4 on every committed seed 0-5 (the metric "
                 "l1_median). The tiny setting's grid is (1e-3,)."),
    ArmSpec("knockout_lsq", "control", space={"l1": (0.0,)}, trials=1, select_on=_NONE,
            note="lsq without the support on observational data plus one knockout per component (the "
                 "identifiable design of the ablation)."),
    ArmSpec("knockout_root_only_lsq", "control", space={"l1": (0.0,)}, trials=1, select_on=_NONE,
            reason="receives less information by design (the ablation): the observational regime and the root "
                   "component's knockout only",
            note="lsq without the support; same estimator and sample draw as knockout_lsq."),
)

# The abstract: one intervention per component identifies the parameters (oracle nullity), the estimators
# recover them from samples, and they predict unseen interventions. Exact-moment recovery is a correctness
# diagnostic. The error ratios compare arms at N = bar_samples samples per regime (not a training budget).
CHECKS = annotate(
    CHECKS,
    headline=("nullity_soft_drift_per_component", "recursive_refined_at_bar_n", "heldout_cov_ratio"),
    diagnostic=("recursive_exact", "lsq_exact"),
    compares={"baseline_over_recursive": ("recursive", "observational_lyapunov"),
              "baseline_over_recursive_refined": ("recursive_refined", "observational_lyapunov"),
              "baseline_over_lsq_known_support": ("lsq_known_support", "observational_lyapunov"),
              "baseline_free_over_lsq": ("lsq", "observational_lyapunov_free"),
              "heldout_cov_ratio": ("lsq_known_support", "observational_lyapunov"),
              "root_only_knockout_downstream_ratio": ("knockout_lsq", "knockout_root_only_lsq")},
)
