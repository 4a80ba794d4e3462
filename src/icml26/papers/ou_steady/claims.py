"""The checks of the ou_steady reproduction, declared before any run (``icml26 info ou_steady``).

``N = bar_samples`` is the config's sample size per regime at which the issue's bars are read
(10⁵ in the quick and full settings). Issue #28 (fidelity round) changed the comparisons so that
method and baseline get the same information (both given the drift's support, or neither),
added the joint refinement of the recursive estimator, moved the "root-only fails" ablation to
knockouts (with soft drift interventions root-only data are identifiable: that bar was
infeasible by construction) and added the identifiability oracle's nullity per design.
"""

from icml26.contract import CheckSpec, annotate, declare

_SLOPE = ("issue #3 asks that the error fall 'roughly like N^-1/2'; the paper brief's consistency test "
          "(§5.6) reads that as a log-log slope in [-0.7, -0.3]; fitted over N >= slope_from (issue #28 "
          "added N = 100, where errors saturate)")
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

# The abstract: one intervention per component identifies the parameters (oracle nullity), the estimators
# recover them from samples, and they predict unseen interventions. Exact-moment recovery is a correctness
# diagnostic.
CHECKS = annotate(
    CHECKS,
    headline=("nullity_soft_drift_per_component", "recursive_refined_at_bar_n", "heldout_cov_ratio"),
    diagnostic=("recursive_exact", "lsq_exact"),
)
