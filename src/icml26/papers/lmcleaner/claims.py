"""The checks of the lmcleaner reproduction, declared before any run (``icml26 info lmcleaner``).

K is ``headline_window`` (10 in the quick and full settings). The residual checks are read at
the shortest lag, at the lags in between (the worst of them) and at the longest lag of
``lags`` (quick: 50 / 200 / 1000, the issue's lags); each check's note names its L. The
geometric-decay ratio is read at the middle lag. Cost checks use the first model of ``models``.

Both cost ratios are read at the same (longest) lag with costs
calibrated by measured unit costs (an exact HVP is not assumed to cost 2 gradients), a
per-request cost model is checked against measured wall times, our public-data tail
correction gets the issue's long-lag target, and the noise checks run on a clipped training
run with a public Δ̄ = η·C and β calibrated on planted canaries, the certificate's assumptions
checked before its accuracy is read.
"""

from icml26.contract import ArmSpec, CheckSpec, annotate, declare, declare_arms

_DECAY = ("issue #6 asks for 'geometric decay of the residual in K down to a linearization floor'; "
          "at least halving over the window sweep is our reading of it")


def _model_checks(kind: str, bar: float, label: str) -> tuple[CheckSpec, ...]:
    return (
        CheckSpec(f"{kind}_residual_short", f"{kind}: relative residual at K = headline_window, shortest lag", "<=",
                  bar, source="issue", ref=f"issue #6 (residual ≤ {bar:g} at K = 10, {label})"),
        # the tiny setting sweeps two lags, so it has no middle lag
        CheckSpec(f"{kind}_residual_mid", f"{kind}: relative residual at K = headline_window, worst middle lag", "<=",
                  bar, source="issue", ref=f"issue #6 (residual ≤ {bar:g} at K = 10, {label})",
                  settings=("full", "quick")),
        CheckSpec(f"{kind}_residual_long", f"{kind}: relative residual at K = headline_window, longest lag", "<=",
                  bar, source="issue", ref=f"issue #6 (residual ≤ {bar:g} at K = 10, {label})"),
        CheckSpec(f"{kind}_geometric_decay", f"{kind}: geometric decay, r(largest K below the middle lag) / r(K = 0)",
                  "<=", 0.5, source="ours", ref=_DECAY),
        CheckSpec(f"{kind}_mia_gap", f"{kind}: max over L of |canary MIA AUC − ideal's| at K = headline_window",
                  "<=", 0.05, source="issue", ref="issue #6 (canary MIA AUC within ±0.05 of θ_ideal's)"),
        CheckSpec(f"{kind}_accuracy_gap", f"{kind}: max over L of |test accuracy − ideal's| (points) at K = "
                  "headline_window", "<=", 1.0, source="issue", ref="issue #6 (test accuracy within 1 point)"),
        CheckSpec(f"{kind}_gradient_ascent", f"{kind}: gradient ascent at equal compute, min over L of "
                  "max(residual / 0.8, accuracy drop / 1 point)", ">=", 1.0, source="issue",
                  ref="issue #6 ('gradient ascent at equal compute leaves residual ≥ 0.8 or costs accuracy'; "
                      "'costs accuracy' read as ≥ 1 point, ours)"),
    )


CHECKS = declare(
    *_model_checks("softmax", 0.3, "convex"),
    *_model_checks("mlp", 0.5, "MLP"),
    CheckSpec("tail_residual_long", "softmax: relative residual at K = headline_window, longest lag, with the "
              "public-data tail correction (ours)", "<=", 0.3, source="issue",
              ref="issue #28 (residual at K = 10, L = 1000 from 0.56 to <= 0.3 within 60 gradient-equivalents)"),
    CheckSpec("tail_cost", "softmax: cost of that correction, gradient-equivalents of measured wall time "
              "(its wall time / one SGD step's)", "<=", 60.0,
              source="issue", ref="issue #28 (within 60 gradient-equivalents)"),
    CheckSpec("tail_cost_flops", "softmax: cost of that correction, gradient-equivalents in the FLOP convention "
              "(2 per HVP, 2·rows/B per public-batch HVP)", "<=", 60.0, source="issue",
              ref="issue #28 (within 60 gradient-equivalents); issue #37 (the cost in FLOPs as well as wall time)"),
    CheckSpec("compute_ratio", "compute: retrain / LMCleaner calibrated gradient-equivalents at the longest lag",
              ">=", 100.0, source="issue",
              ref="issue #6 (>= 100x less compute than retraining); issue #28: HVP cost measured, same lag as wall"),
    CheckSpec("wall_ratio", "wall time: retrain / LMCleaner at the longest lag (side by side: medians of interleaved rounds)",
              ">=", 100.0, source="issue", ref="issue #6 (>= 100x less compute, measured as wall time)"),
    CheckSpec("cost_model_error", "per-request cost model: max over L of |predicted / measured - 1| of the "
              "retrain / LMCleaner wall-time ratio", "<=", 0.2, source="issue",
              ref="issue #28 (predicted and measured wall-time ratios within 20% at L in {50, 200, 1000})"),
    CheckSpec("isotropic_drop", "isotropic noise at ε = epsilon, public Δ̄ = η·C: test accuracy drop (points)", ">",
              20.0, source="issue", ref="issue #6 (isotropic noise at ε = 1 costs > 20 points)"),
    CheckSpec("subspace_vs_isotropic", "test accuracy of subspace noise (random basis, calibrated β) minus "
              "isotropic noise calibrated to the same canaries (sensitivity max_j ‖r_j‖), both at ε = epsilon "
              "(points)", ">", 0.0, source="issue",
              ref="issue #37 (the headline noise check compares the two calibrated arms); the paper: subspace-aware "
                  "noise keeps utility that isotropic noise loses"),
    CheckSpec("subspace_vs_isotropic_flat", "the same with the flat public basis (public Hessian's flattest "
              "eigenvectors at θ[0]) in place of the random one (points)", ">", 0.0, source="issue",
              ref="issue #37 (equal-information noise); the flat basis is ours"),
    CheckSpec("certificate_holds", "certificate assumptions on the request, random and flat bases and the "
              "calibrated isotropic arm: max(β̂ / calibrated β, ‖Πr‖ / Δ̄, ‖r‖ / max_j ‖r_j‖)",
              "<=", 1.0, source="issue",
              ref="issue #28 (check β̂ <= β before claiming the certificate, β set from a measurement)"),
    CheckSpec("subspace_drop", "subspace noise (random basis, calibrated β, public Δ̄) at ε = epsilon: test "
              "accuracy drop (points)", "<=", 2.0, source="issue",
              ref="issue #6 (subspace noise costs <= 2 points); issue #28 (under a certificate whose assumptions hold)"),
    CheckSpec("subspace_drop_flat", "subspace noise (public Hessian's flattest eigenvectors at θ[0], calibrated β, "
              "public Δ̄) at ε = epsilon: test accuracy drop (points)", "<=", 2.0, source="issue",
              ref="issue #6's <= 2 points; the flat public basis is ours (issue #28 asked for a basis aimed at the "
                  "residual: the band basis is reported beside it)"),
)

_NONE = "none: fixed settings"
ARMS = declare_arms(
    ArmSpec("lmcleaner", "method", space={"window": (10,), "hvp": ("exact",)}, trials=1, select_on=_NONE,
            note="Truncated influence propagation over K = headline_window steps with exact Hessian-vector "
                 "products; every window of the sweep is reported, the checks read K = 10 (the issue's)."),
    ArmSpec("replay", "baseline", space={}, trials=1, select_on=_NONE,
            note="The ideal: the training run replayed from the deleted batch's step without it (same batches, "
                 "same order); the gaps are measured against it."),
    ArmSpec("retrain", "baseline", space={}, trials=1, select_on=_NONE,
            note="Retraining from scratch without the batch: the cost baseline (it matches replay to ~1e-15)."),
    ArmSpec("gradient_ascent", "baseline", space={"lr": ("training lr",), "steps": ("LMCleaner's gradient-"
                                                                                  "equivalents",)},
            trials=1, select_on=_NONE,
            reason="its step size is the training rate and its step count LMCleaner's compute at K = 10, "
                   "neither tuned: the check asks whether ascent at equal compute fails, which a tuned ascent "
                   "rate might change",
            note="Ascent on the deleted batch from the current model."),
    ArmSpec("neggrad_plus", "baseline", space={"beta": (0.5,), "lr": ("training lr",)}, trials=1, select_on=_NONE,
            reason="beta = 0.5 and the training rate, not tuned (reported only: no check reads it)"),
    ArmSpec("subspace_noise_random", "method", space={"subspace_dim": (10,), "canaries": (19,)}, trials=1,
            select_on=_NONE,
            note="Noise in a random k = 10 subspace (and its complement) with β calibrated on 19 planted "
                 "canaries' residuals, the public Δ̄ = η·C outside it."),
    ArmSpec("isotropic_noise", "baseline", space={"sensitivity": ("public Δ̄ = η·C",)}, trials=1, select_on=_NONE,
            reason="calibrated to the loose public bound Δ̄ = η·C = 0.2 while the subspace arm uses β measured on the "
                   "canaries: not equal information, so isotropic_drop is a diagnostic of the bound; the equal-"
                   "information comparison is isotropic_noise_calibrated"),
    ArmSpec("isotropic_noise_calibrated", "baseline", space={"sensitivity": ("max_j ‖r_j‖ over the planted canaries",)},
            trials=1, select_on=_NONE,
            note="Isotropic Gaussian noise at the same (ε, δ) with sensitivity the canaries' max_j ‖r_j‖: the same "
                 "canary measurement that sets the subspace arm's β, so the two arms see equal information."),
)

# The abstract: over 100x compute savings while keeping utility and defending against membership inference.
# The noise section's deciding comparison, subspace_vs_isotropic (the subspace arm against isotropic noise
# calibrated on the same canaries), is supporting: the registered claim is about removal, not noise, and a
# claim states itself in at most three headline checks. isotropic_drop (noise calibrated to the loose public
# bound) and the certificate's assumption check are diagnostics.
CHECKS = annotate(
    CHECKS,
    headline=("compute_ratio", "softmax_accuracy_gap", "softmax_mia_gap"),
    diagnostic=("isotropic_drop", "certificate_holds"),
    compares={**{f"{kind}_{name}": ("lmcleaner", "replay") for kind in ("softmax", "mlp")
                 for name in ("mia_gap", "accuracy_gap")},
              **{f"{kind}_gradient_ascent": ("lmcleaner", "gradient_ascent") for kind in ("softmax", "mlp")},
              "compute_ratio": ("lmcleaner", "retrain"), "wall_ratio": ("lmcleaner", "retrain"),
              "cost_model_error": ("lmcleaner", "retrain"),
              "isotropic_drop": ("subspace_noise_random", "isotropic_noise"),
              "subspace_vs_isotropic": ("subspace_noise_random", "isotropic_noise_calibrated"),
              "subspace_vs_isotropic_flat": ("subspace_noise_random", "isotropic_noise_calibrated")},
)
