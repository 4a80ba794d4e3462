"""Reproduction of LMCleaner's claims at CPU scale.

Section 1, lag sweep (synthetic): single-pass SGD on a 10-class Gaussian mixture with
a softmax-regression model (convex) and a tanh MLP, in float64. The batch at step t_z
is a *canary* batch: points with random labels that also carry rare features (feature
directions that clean data almost never uses), so that the models memorise them. A
deletion request for the canary batch arrives at τ = t_z + L. For each lag L and
window K we compare LMCleaner's θ̂_K with θ_ideal (exact counterfactual replay):
relative residual ‖θ̂_K − θ_ideal‖/‖θ[τ] − θ_ideal‖, test accuracy, canary
loss-threshold MIA AUC, and cost (gradient-equivalents and measured wall time)
against retraining from scratch, replay, gradient ascent, NegGrad+ and no-op.

Also per lag: our public-data tail correction (``lmcleaner_tail``), the
residual-vs-cost frontier, and every cost in gradient-equivalents *calibrated by measured unit
costs* (:mod:`.cost`), with the per-request cost model's predicted wall times beside the measured
ones.

Section 2, noise (``certified.py``): a clipped softmax run (Δ̄ = η·C public), β calibrated on
planted canaries, the certificate's assumptions checked on the request, then subspace-aware
versus isotropic noise at ε = 1.

Section 3, ledger: ε after M sequential requests, the draft's composition formula
against the Rényi-DP accountant and the exact Gaussian composition.

Section 4, digits: scikit-learn digits, five epochs; a request to delete mislabelled
training digits arrives after epoch four; :class:`OnlineUnlearner` removes every
batch that used them, returns the benign samples to the pool, and training goes on.
"""

from __future__ import annotations

import math
from typing import Any

from icml26.contract import Curve, Outcome, RunContext

from .analysis import (
    accuracy_drop_points,
    decay_ratio,
    ga_equal_compute_score,
    lag_groups,
    max_abs_gap,
    max_relative_error,
    ratio,
)
from .certified import CertifiedNoiseResult, certified_noise_section
from .claims import CHECKS
from .config import Config
from .digits import DigitsRun, digits_section
from .figures import plot
from .sections import (
    BACKENDS,
    SweepResult,
    lag_sweep,
    ledger_curve,
    mixture,
)

__all__ = ["CHECKS", "STREAMS", "Config", "plot", "run"]

STREAMS: dict[str, str] = {
    "mixture": "the synthetic data",
    "certified_mixture": "the data of the clipped run (with the planted canaries)",
    "noise": "the noise draws",
    "noise_isotropic_calibrated": "the draws of isotropic noise calibrated on the canaries (its own stream, so "
                                  "adding it left the other arms' draws unchanged)",
    "digits": "D_u and the digits non-members' labels",
    "digits_pool": "the digits batch order",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

THREADS = 1
"""The runner runs this experiment at one torch thread: its models are tiny (intra-op threads gain
nothing), and one thread keeps the timed costs clean."""

ARMS = ("lmcleaner", "lmcleaner_tail", "lmcleaner_ggn", "lmcleaner_fisher", "lmcleaner_rank1", "replay", "retrain",
        "gradient_ascent", "neggrad_plus", "no_op")
#: The arms whose cost is also calibrated by measured unit costs (timings stay out of the metrics, which must
#: repeat exactly: calibrated costs and wall times are in the curves, notes and cost checks).
CALIBRATED = ("lmcleaner", "lmcleaner_tail", "replay", "retrain")


def run(config: Config, ctx: RunContext) -> Outcome:
    ctx.stage("the mixture")
    data = mixture(config, ctx.torch_generator("mixture"), ctx.device)
    sweeps = {}
    for kind in config.models:
        ctx.stage(f"lag sweep: {kind}")
        sweeps[kind] = lag_sweep(kind, data, config, ctx)
    ctx.stage("certified noise")
    noise = certified_noise_section(config, ctx)
    ctx.stage("the ledger's memory curve")
    ledger = ledger_curve(config)
    if config.digits:
        ctx.stage("digits")
    digits = digits_section(config, ctx) if config.digits else {}
    ctx.stage("metrics and checks")

    last = max(config.lags)
    metrics: dict[str, dict[str, float]] = {arm: {} for arm in ARMS}
    for kind, sweep in sweeps.items():
        for lag in config.lags:
            for arm in ARMS:
                metrics[arm][f"{kind}_residual_L{lag}"] = sweep.per_lag[lag].arms[arm].residual
        for arm in ARMS:
            row = sweep.per_lag[last].arms[arm]
            metrics[arm][f"{kind}_acc_L{last}"] = row.acc
            metrics[arm][f"{kind}_mia_L{last}"] = row.mia
    first = sweeps[config.models[0]].per_lag
    for arm in ARMS:
        metrics[arm][f"grad_eq_L{last}"] = first[last].arms[arm].grad_eq
    for name, result in digits.items():
        for key in ("acc", "mia", "grad_eq", "residual"):
            value = getattr(result, key)
            if value is not None:
                metrics[name][f"digits_{key}"] = value
    metrics["noise"] = {
        "residual_rel": noise.residual_rel, "residual_rel_plain": noise.residual_rel_plain,
        "beta_random": noise.beta_random, "beta_hat_random": noise.beta_hat_random,
        "beta_band": noise.beta_band, "beta_hat_band": noise.beta_hat_band,
        "par_over_sensitivity": noise.par_over_sensitivity, "acc_clean": noise.acc_clean,
        "acc_isotropic": noise.acc_isotropic, "acc_subspace_random": noise.acc_subspace_random,
        "acc_subspace_random_plain": noise.acc_subspace_random_plain, "acc_subspace_band": noise.acc_subspace_band,
        "beta_flat": noise.beta_flat, "beta_hat_flat": noise.beta_hat_flat, "acc_subspace_flat": noise.acc_subspace_flat,
        "delta_exact": noise.delta_exact, "acc_isotropic_equivalent": noise.acc_isotropic_equivalent,
        "acc_isotropic_calibrated": noise.acc_isotropic_calibrated, "residual_bound": noise.residual_bound,
        "sigma_isotropic_calibrated": noise.sigma_isotropic_calibrated, "delta_eff": noise.delta_eff,
        **{f"acc_subspace_random_k{k}": acc for k, acc in noise.acc_random_by_k.items()},
    }
    metrics = {arm: {k: float(v) for k, v in row.items() if v is not None and math.isfinite(v)}
               for arm, row in metrics.items()}
    return Outcome(metrics=metrics, checks=_checks(config, sweeps, noise), curves=_curves(config, sweeps, noise, ledger),
                   notes=_notes(config, sweeps, noise, digits))


def _wall_ratio(per_lag, lag: int, key: str) -> float:
    row = per_lag[lag].arms
    return ratio(getattr(row["retrain"], key), getattr(row["lmcleaner"], key))


def _checks(config: Config, sweeps: dict[str, SweepResult], noise: CertifiedNoiseResult) -> list:
    lags = config.lags
    short, middle, long = lag_groups(lags)
    checks = []
    for kind, sweep in sweeps.items():
        per = sweep.per_lag
        lmc = {lag: per[lag].arms["lmcleaner"] for lag in lags}
        checks.append(CHECKS[f"{kind}_residual_short"].measure(lmc[short].residual, note=f"L = {short}"))
        if middle:
            worst = max(middle, key=lambda lag: lmc[lag].residual)
            checks.append(CHECKS[f"{kind}_residual_mid"].measure(lmc[worst].residual, note=f"L = {worst}"))
        checks.append(CHECKS[f"{kind}_residual_long"].measure(lmc[long].residual, note=f"L = {long}"))
        mid = sorted(lags)[len(lags) // 2]
        checks.append(CHECKS[f"{kind}_geometric_decay"].measure(
            decay_ratio(per[mid].curves["exact"], config.windows, mid),
            note=f"L = {mid}; the residual at least halves over the window sweep before the linearisation floor"))
        replay = [per[lag].arms["replay"] for lag in lags]
        checks.append(CHECKS[f"{kind}_mia_gap"].measure(
            max_abs_gap([lmc[lag].mia for lag in lags], [r.mia for r in replay])))
        checks.append(CHECKS[f"{kind}_accuracy_gap"].measure(
            100 * max_abs_gap([lmc[lag].acc for lag in lags], [r.acc for r in replay])))
        ga = [per[lag].arms["gradient_ascent"] for lag in lags]
        checks.append(CHECKS[f"{kind}_gradient_ascent"].measure(
            ga_equal_compute_score([a.residual for a in ga], [r.acc for r in replay], [a.acc for a in ga]),
            note="≥ 1 means residual ≥ 0.8 or ≥ 1 point of accuracy lost"))
    first = sweeps[config.models[0]].per_lag
    tail = first[long].arms["lmcleaner_tail"]
    checks += [
        CHECKS["tail_residual_long"].measure(tail.residual, note=f"L = {long}, m = {config.tail_krylov}, "
                                                                 f"{config.tail_public} public rows"),
        CHECKS["tail_cost"].measure(tail.wall / first[long].units.sgd_step,
                                    note=f"L = {long}; measured wall time {1e3 * tail.wall:.1f} ms over one SGD step "
                                         f"{1e3 * first[long].units.sgd_step:.3f} ms (model: {tail.calibrated:.1f}); HVP = "
                                                       f"{sweeps[config.models[0]].units.hvp_cost:.2f}, public-batch HVP = "
                                                       f"{sweeps[config.models[0]].units.tail_cost:.2f} SGD steps; in "
                                                       f"the FLOP convention (2 per HVP, 2·rows/B per public HVP) "
                                                       f"{tail.grad_eq:.0f}"),
        CHECKS["tail_cost_flops"].measure(tail.grad_eq, note=f"L = {long}; FLOP convention (the wall-time reading "
                                                             f"is tail_cost: {tail.wall / first[long].units.sgd_step:.1f})"),
        CHECKS["compute_ratio"].measure(_wall_ratio(first, long, "calibrated"), note=f"L = {long}; calibrated costs"),
        CHECKS["wall_ratio"].measure(_wall_ratio(first, long, "wall"),
                                     note=f"L = {long}; median over {config.timing_repeats} interleaved rounds"),
        CHECKS["cost_model_error"].measure(max_relative_error(
            [_wall_ratio(first, lag, "predicted_wall") for lag in lags], [_wall_ratio(first, lag, "wall") for lag in lags]),
            note="max over L of |predicted / measured − 1| of the retrain / LMCleaner wall-time ratio"),
    ]
    return checks + _noise_checks(config, noise)


def _noise_checks(config: Config, noise: CertifiedNoiseResult) -> list:
    """The certified-noise checks: the bound diagnostic, the certificate's assumptions, each arm's drop and
    the equal-information comparison of the subspace arms with canary-calibrated isotropic noise."""
    return [
        CHECKS["isotropic_drop"].measure(accuracy_drop_points(noise.acc_clean, noise.acc_isotropic),
                                         note=f"ε = {config.epsilon:g}, Δ̄ = η·C = {noise.sensitivity:.3g}"),
        CHECKS["certificate_holds"].measure(noise.holds, note=f"random Q: β̂ = {noise.beta_hat_random:.3g} vs β = "
                                                              f"{noise.beta_random:.3g}; flat Q: β̂ = "
                                                              f"{noise.beta_hat_flat:.3g} vs β = {noise.beta_flat:.3g}; "
                                                              f"isotropic: ‖r‖ = {noise.residual_norm:.3g} vs "
                                                              f"max_j ‖r_j‖ = {noise.residual_bound:.3g}; β is a max "
                                                              f"over {noise.canaries} exchangeable canaries, so "
                                                              f"P(β̂ > β) = {noise.miss_rate:.3g} and the certificate "
                                                              f"is (ε = {config.epsilon:g}, δ_eff = "
                                                              f"{noise.delta_eff:.3g})"),
        CHECKS["subspace_vs_isotropic"].measure(
            100 * (noise.acc_subspace_random - noise.acc_isotropic_calibrated),
            note=f"ε = {config.epsilon:g}; random Q σ_∥ = {noise.sigma_parallel:.3g}, σ_⊥ = {noise.sigma_perp:.3g}; "
                 f"isotropic σ = {noise.sigma_isotropic_calibrated:.3g} from max_j ‖r_j‖ = {noise.residual_bound:.3g}"),
        CHECKS["subspace_vs_isotropic_flat"].measure(
            100 * (noise.acc_subspace_flat - noise.acc_isotropic_calibrated),
            note=f"ε = {config.epsilon:g}; flat basis k = {config.subspace_dim}, β = {noise.beta_flat:.3g}"),
        CHECKS["subspace_drop"].measure(accuracy_drop_points(noise.acc_clean, noise.acc_subspace_random),
                                        note=f"ε = {config.epsilon:g}, random basis k = {config.subspace_dim}, "
                                             f"β = {noise.beta_random:.3g} (calibrated)"),
        CHECKS["subspace_drop_flat"].measure(accuracy_drop_points(noise.acc_clean, noise.acc_subspace_flat),
                                             note=f"ε = {config.epsilon:g}, flat basis k = {config.subspace_dim}, "
                                                  f"β = {noise.beta_flat:.3g} (calibrated)"),
    ]


def _curves(config: Config, sweeps: dict[str, SweepResult], noise: CertifiedNoiseResult, ledger: dict) -> dict[str, Any]:
    curves: dict[str, Any] = {}
    labels = {"exact": "exact HVP", "gauss_newton": "Gauss–Newton", "empirical_fisher": "empirical Fisher",
              "batch_mean_fisher": "rank-1 batch mean", "exact+tail": "exact HVP + public tail (ours)"}
    for kind, sweep in sweeps.items():
        for lag in config.lags:
            row = sweep.per_lag[lag]
            series = {labels[b]: row.curves[b] for b in (*BACKENDS, "exact+tail")}
            series["linearisation floor (K = L−1)"] = [row.floor] * len(config.windows)
            curves[f"residual_{kind}_L{lag}"] = Curve(
                x=list(config.windows), series=series, xlabel="truncation window K",
                ylabel="‖θ̂ − θ_ideal‖ / ‖θ[τ] − θ_ideal‖", title=f"{kind}, lag L = {lag}", logy=True)
        per = sweep.per_lag
        for metric, label in (("acc", "test accuracy"), ("mia", "canary MIA AUC")):
            curves[f"{metric}_{kind}"] = Curve(
                x=list(config.lags),
                series={arm: [getattr(per[lag].arms[arm], metric) for lag in config.lags]
                        for arm in ("lmcleaner", "lmcleaner_tail", "replay", "gradient_ascent", "neggrad_plus",
                                    "no_op")},
                xlabel="lag L", ylabel=label, title=f"{kind}: {label} (K = {config.headline_window})",
                logx=True)
    first = sweeps[config.models[0]].per_lag
    for lag in config.lags:
        row = first[lag]
        curves[f"frontier_L{lag}"] = Curve(
            x=list(config.windows),
            series={"LMCleaner cost": row.costs["exact"], "LMCleaner residual": row.curves["exact"],
                    "LMCleaner + tail cost": row.costs["exact+tail"],
                    "LMCleaner + tail residual": row.curves["exact+tail"]},
            xlabel="truncation window K", ylabel="calibrated gradient-equivalents / residual",
            title=f"{config.models[0]}: residual vs cost, L = {lag}",
            extra={"replay": [row.arms["replay"].calibrated, 0.0], "retrain": [row.arms["retrain"].calibrated, 0.0]})
    curves["calibrated_cost"] = Curve(
        x=list(config.lags),
        series={arm: [first[lag].arms[arm].calibrated for lag in config.lags] for arm in CALIBRATED},
        xlabel="lag L", ylabel="gradient-equivalents (measured unit costs)",
        title=f"{config.models[0]}: calibrated cost of one deletion", logx=True, logy=True)
    curves["unit_costs"] = Curve(
        x=list(config.lags),
        series={"HVP / SGD step": [first[lag].units.hvp_cost for lag in config.lags],
                "public-tail HVP / SGD step": [first[lag].units.tail_cost for lag in config.lags]},
        xlabel="lag L (measured before its timings)", ylabel="SGD steps", title="measured unit costs",
        logx=True)
    curves["cost"] = Curve(
        x=list(config.lags),
        series={f"{arm} ({unit})": [getattr(first[lag].arms[arm], key) * scale for lag in config.lags]
                for arm in ("lmcleaner", "lmcleaner_tail", "replay", "retrain")
                for key, unit, scale in (("wall", "measured ms", 1e3), ("predicted_wall", "predicted ms", 1e3))},
        xlabel="lag L", ylabel="wall time of one deletion (ms)", title=f"{config.models[0]}: cost of one deletion",
        logx=True, logy=True)
    curves["noise"] = Curve(
        x=["no noise", "flat Q", "random Q", "isotropic σ_eq", "random Q, no tail", "band Q", "isotropic",
           "isotropic, canary-calibrated"],
        series={"test accuracy": [noise.acc_clean, noise.acc_subspace_flat, noise.acc_subspace_random,
                                  noise.acc_isotropic_equivalent, noise.acc_subspace_random_plain,
                                  noise.acc_subspace_band, noise.acc_isotropic,
                                  noise.acc_isotropic_calibrated]},
        xlabel="noise", ylabel="test accuracy",
        title=f"Certified noise at ε = {config.epsilon:g}, δ = {config.delta:g} (clipped run, Δ̄ = η·C)")
    curves["ledger"] = ledger
    return curves


def _notes(config: Config, sweeps: dict[str, SweepResult], noise: CertifiedNoiseResult,
           digits: dict[str, DigitsRun]) -> list[str]:
    notes = []
    k = config.headline_window
    for kind, sweep in sweeps.items():
        per = sweep.per_lag
        r0 = ", ".join(f"L={lag}: r(0)={per[lag].curves['exact'][0]:.3g}, r({k})="
                       f"{per[lag].arms['lmcleaner'].residual:.3g}, with tail {per[lag].arms['lmcleaner_tail'].residual:.3g}"
                       f", floor={per[lag].floor:.3g}" for lag in config.lags)
        noop_gap = max(abs(per[lag].arms["no_op"].mia - per[lag].arms["replay"].mia) for lag in config.lags)
        notes.append(f"{kind}: {r0}. No-op's max |MIA AUC − ideal's| = {noop_gap:.3f} (the MIA check's "
                     f"power); retraining from scratch matches replay to "
                     f"{max(per[lag].retrain_gap for lag in config.lags):.1e}. Unit costs: HVP = "
                     f"{sweep.units.hvp_cost:.2f} SGD steps, public-tail HVP = {sweep.units.tail_cost:.2f}.")
    first = sweeps[config.models[0]].per_lag
    walls = "; ".join(
        f"L={lag}: " + ", ".join(f"{arm} {1e3 * first[lag].arms[arm].wall:.1f} ms (predicted "
                                  f"{1e3 * first[lag].arms[arm].predicted_wall:.1f})"
                                  for arm in ("lmcleaner", "lmcleaner_tail", "replay", "retrain"))
        for lag in config.lags)
    notes.append(f"wall time of one deletion, {config.models[0]}, K={k}, median of {config.timing_repeats} interleaved rounds "
                 f"(timings are kept out of the metrics' exact repeats): {walls}.")
    units = sweeps[config.models[0]].units
    k_hvp = k * units.hvp_cost
    notes.append(f"At K={k} an exact-HVP correction costs {k_hvp:.1f} gradient-equivalents (calibrated), so "
                 f"retrain/LMCleaner reaches 100x only once τ ≳ {100 * k_hvp:.0f} steps (this run: τ ≤ "
                 f"{config.canary_step + max(config.lags)}).")
    notes.append(
        f"certified noise (clipped run, C = {noise.clip_norm:g}): Δ̄ = η·C = {noise.sensitivity:.3g} against the "
        f"deleted batch's ‖u‖ = {noise.canary_update_norm:.3g}; residual {noise.residual_rel:.3g} with the tail "
        f"({noise.residual_rel_plain:.3g} without); β calibrated on {config.noise_calibration_requests} planted canaries: "
        f"random Q {noise.beta_random:.3g} (request β̂ {noise.beta_hat_random:.3g}), flat Q {noise.beta_flat:.3g} "
        f"(β̂ {noise.beta_hat_flat:.3g}), band Q ({noise.band_dim} dims) {noise.beta_band:.3g} (β̂ "
        f"{noise.beta_hat_band:.3g}); ‖Πr‖/Δ̄ = {noise.par_over_sensitivity:.3g}; σ_iso = "
        f"{noise.sigma_isotropic:.3g}, σ_∥ = {noise.sigma_parallel:.3g}, σ_⊥ = {noise.sigma_perp:.3g}; exact δ(ε) at "
        f"the request's residual {noise.delta_exact:.2e}. Test accuracy: clean {noise.acc_clean:.3f}, flat Q "
        f"{noise.acc_subspace_flat:.3f}, random Q {noise.acc_subspace_random:.3f} (no tail "
        f"{noise.acc_subspace_random_plain:.3f}), band Q {noise.acc_subspace_band:.3f} (σ_∥ lands on the stiffest "
        f"directions), isotropic {noise.acc_isotropic:.3f}. Dimension: isotropic noise with the random-basis "
        f"release's mean variance per coordinate (σ_eq² = σ_∥²k/p + σ_⊥²(p−k)/p) gives {noise.acc_isotropic_equivalent:.3f}; "
        f"random Q by k: " + ", ".join(f"k={k} {acc:.3f}" for k, acc in noise.acc_random_by_k.items()) + ". "
        f"Equal information: isotropic noise calibrated to the canaries' max_j ‖r_j‖ = {noise.residual_bound:.3g} "
        f"(σ = {noise.sigma_isotropic_calibrated:.3g}; request ‖r‖ = {noise.residual_norm:.3g}) gives "
        f"{noise.acc_isotropic_calibrated:.3f}. β and max_j ‖r_j‖ are maxima over {noise.canaries} exchangeable "
        f"canaries, so the request exceeds them with probability {noise.miss_rate:.3g}: the certificates are "
        f"(ε = {config.epsilon:g}, δ_eff = δ + {noise.miss_rate:.3g} = {noise.delta_eff:.3g}); δ_eff ≤ 1e-3 would "
        f"need ≥ 999 canaries.")
    if digits:
        lm = digits["lmcleaner"]
        notes.append(
            f"digits: {lm.deleted_batches:.0f} batches deleted, {lm.requeued:.0f} benign samples "
            f"requeued; LMCleaner {lm.calibrated_grad_eq:.0f} calibrated gradient-equivalents ({lm.grad_eq:.0f} at 2 per "
            f"HVP) vs replay {digits['replay'].grad_eq:.0f} vs a whole retraining run {digits['retrain'].grad_eq:.0f}; "
            f"serving took {1e3 * lm.wall:.0f} ms against {1e3 * lm.retrain_wall:.0f} ms for retraining at the request "
            f"(cost model: {1e3 * lm.predicted_wall:.0f} vs {1e3 * lm.retrain_predicted_wall:.0f} ms): multi-epoch "
            f"training makes every deleted sample touch ~one batch per epoch, and LMCleaner's cost grows with them.")
    return notes
