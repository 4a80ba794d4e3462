"""Reproduction: recover random SCC-structured OU processes from stationary snapshots.

For each of ``n_systems`` random systems (n = 8, components of sizes 3, 3, 2 on a chain
condensation), draw one soft-drift intervention per component plus a held-out one, and
fit from exact moments and from N ∈ ``sample_sizes`` samples per regime. The arms come in
two information classes (method and baseline get the same information):

given the support of B (the drift graph)
  * ``recursive`` — the paper's recursive algorithm;
  * ``recursive_refined`` — the same, then the joint least squares of every regime's
    equations on the support (ours);
  * ``lsq_known_support`` — the paper's least-squares estimator with the support;
  * ``observational_lyapunov`` — the baseline: observational data only, D = I assumed;
  * ``observational_unknown_d`` — observational data only, D unknown (with the support the
    observational moments alone already identify the process: the oracle's nullity is 1);

without the support
  * ``lsq`` — the paper's least-squares estimator over all regimes;
  * ``observational_lyapunov_free`` — the baseline without the support: GCLM-style ℓ1
    (its λ = 0 system is underdetermined), λ picked per system *with the truth* from
    ``baseline_l1_grid`` (an oracle choice that favours the baseline);

and the ablations, least squares without the support:
  * ``root_only_lsq`` — soft-drift interventions in the root component only;
  * ``knockout_lsq`` / ``knockout_root_only_lsq`` — a knockout in every component vs in
    the root only (where missing interventions make the process unidentifiable).

Also the identifiability oracle's nullity at exact moments on the first ``nullity_systems``
systems for every design (knockouts per component / root only, soft drift per component /
root only, observational only; each with and without the support).

Reports the median scale-aligned drift error per N, its log-log slope (over
``slope_sizes``), the sample size from which each interventional arm stays below its
equal-information observational baseline (``CROSSOVER``, marked on the error curve), and the
error of predicting the held-out intervention's mean and covariance (its strength fitted on a
``calibration_fraction`` of that regime's samples). One master seed is one replicate of
``n_systems`` systems (medians over systems); the sweep over master seeds (``--seeds``) gives
the intervals, and the per-system errors at ``bar_samples`` (curve ``per_system_at_bar_n``,
x = the system's number over all seeds) let ``pooled.py`` bootstrap over the pooled systems.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.ou_steady import (
    Intervention,
    OUEstimate,
    Regime,
    fit_lsq,
    fit_observational_lyapunov,
    fit_recursive,
    fit_strength,
    identifiability_nullity,
    predict,
    random_scc_system,
    scale_aligned_error,
)
from icml26.papers.ou_steady.analysis import (arm_metrics, crossover_size, error_ratio, nullity_summary,
                                              oracle_choice, relative_error, sample_size_tag)
from icml26.papers.ou_steady.claims import CHECKS
from icml26.papers.ou_steady.config import Config
from icml26.papers.ou_steady.figures import plot

__all__ = ["ARMS", "CHECKS", "CROSSOVER", "DESIGNS", "DETERMINISTIC_ACROSS_CPUS", "STREAMS", "ArmFits", "Config", "RecoverySweep", "plot", "run"]

ARMS = ("recursive", "recursive_refined", "lsq_known_support", "observational_lyapunov", "observational_unknown_d",
        "lsq", "observational_lyapunov_free", "root_only_lsq", "knockout_lsq", "knockout_root_only_lsq")

#: Interventional arm -> the observational baseline with the same information (support given or not):
#: the pairs whose crossover sample size is reported (``crossover_log10N`` in the arm's metrics).
CROSSOVER = {"recursive": "observational_lyapunov", "recursive_refined": "observational_lyapunov",
             "lsq_known_support": "observational_lyapunov", "lsq": "observational_lyapunov_free"}

#: The designs of the identifiability table: (interventions, support known?).
DESIGNS = ("knockout_per_component", "knockout_root_only", "soft_drift_per_component", "soft_drift_root_only",
           "observational")

#: Float64 NumPy/SciPy only: the same seed gives the same numbers on any CPU (tests/test_reproductions.py
#: compares a rerun with the committed seeds to 1e-9).
DETERMINISTIC_ACROSS_CPUS = True

STREAMS: dict[str, str] = {
    "system": "system i's process, soft interventions and held-out intervention; index = i",
    "knockout": "system i's knockout targets (the first stable node of a random draw per component); index = i",
    "samples": "the samples of system i at a power of ten N; index = 64 i + log10(N) - 1 (10^2 ... 10^6: 1 ... 5)",
    "samples_between": "the samples of system i at a size N between powers of ten; index = 64 i + N's position "
                       "among those sizes of sample_sizes",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


@dataclasses.dataclass(frozen=True)
class ArmFits:
    """Every arm's estimate on one system and one data setting (fields in ``ARMS`` order)."""

    recursive: OUEstimate
    recursive_refined: OUEstimate
    lsq_known_support: OUEstimate
    observational_lyapunov: OUEstimate
    observational_unknown_d: OUEstimate
    lsq: OUEstimate
    observational_lyapunov_free: OUEstimate
    root_only_lsq: OUEstimate
    knockout_lsq: OUEstimate
    knockout_root_only_lsq: OUEstimate

    def items(self):
        return [(arm, getattr(self, arm)) for arm in ARMS]


@dataclasses.dataclass
class RecoverySweep:
    """The raw errors of the sweep over systems and data settings.

    ``settings`` is ``["exact", *sample_sizes]``; arrays are indexed ``[arm, setting, system]``
    (``errors``, ``downstream``: the error on the downstream components' rows) or ``[arm,
    system]`` (held-out predictions at ``bar_samples``, NaN where the estimate was unstable);
    ``nullity[design][support]`` lists the oracle's nullity per system; ``baseline_l1`` the
    λ the oracle picked for the support-free baseline at ``bar_samples``.
    """

    settings: list
    errors: np.ndarray
    downstream: np.ndarray
    heldout_mean: np.ndarray
    heldout_cov: np.ndarray
    nullity: dict[str, dict[str, list[int]]]
    baseline_l1: list[float]


def _knockouts(process, components, rng) -> tuple[list[Intervention], list]:
    """One knockout per component (a random node; root first) and ``[process, *knocked-out processes]``.

    A principal submatrix of a Hurwitz drift need not be Hurwitz (the non-reversible coupling),
    so knocking a node out can leave no stationary law; then the component's other nodes are
    tried in order (the first draw is kept whenever it is stable)."""
    knockouts, processes = [], [process]
    for comp in components:
        first = int(rng.choice(comp))
        for target in [first, *(int(t) for t in comp if t != first)]:
            try:
                knocked = process.intervene(Intervention(target, "knockout"))
            except ValueError:  # not Hurwitz: try the next node of this component
                continue
            knockouts.append(Intervention(target, "knockout"))
            processes.append(knocked)
            break
        else:
            raise ValueError(f"no single-node knockout of component {comp} leaves a stable process")
    return knockouts, processes


def _designs(interventions, knockouts):
    """The interventions of each oracle design (root first in both lists)."""
    return {
        "knockout_per_component": [None, *knockouts],
        "knockout_root_only": [None, knockouts[0]],
        "soft_drift_per_component": list(interventions),
        "soft_drift_root_only": list(interventions[:2]),
        "observational": [None],
    }


def _fit_all(regimes, interventions, ko_regimes, knockouts, support, components, config, process) -> tuple[ArmFits, float]:
    root = components[0]
    root_only = [k for k, iv in enumerate(interventions) if iv is None or iv.target in root]
    # the support-free baseline: ℓ1 is required, its λ picked against the truth (in its favour)
    free = [fit_observational_lyapunov(regimes[0], l1=lam, max_iter=3_000, tol=1e-7) for lam in config.baseline_l1_grid]
    pick = oracle_choice([scale_aligned_error(f, process) for f in free])
    fits = ArmFits(
        recursive=fit_recursive(regimes, interventions, support),
        recursive_refined=fit_recursive(regimes, interventions, support, refine=True),
        lsq_known_support=fit_lsq(regimes, interventions, l1=config.l1, support=support),
        # with the support, observational moments identify B when D is known, so the baseline's
        # only error is the D = I assumption
        observational_lyapunov=fit_observational_lyapunov(regimes[0], l1=config.l1, support=support),
        observational_unknown_d=fit_lsq(regimes[:1], [None], l1=config.l1, support=support),
        lsq=fit_lsq(regimes, interventions, l1=config.l1),
        observational_lyapunov_free=free[pick],
        root_only_lsq=fit_lsq([regimes[k] for k in root_only], [interventions[k] for k in root_only], l1=config.l1),
        knockout_lsq=fit_lsq(ko_regimes, [None, *knockouts], l1=config.l1),
        knockout_root_only_lsq=fit_lsq(ko_regimes[:2], [None, knockouts[0]], l1=config.l1),
    )
    return fits, float(config.baseline_l1_grid[pick])


def _heldout_errors(estimate, heldout: Intervention, calib: Regime, exact: Regime) -> tuple[float, float]:
    probe = dataclasses.replace(heldout, strength=1.0)
    try:
        strength = fit_strength(estimate, probe, calib)
        mean, cov = predict(estimate, dataclasses.replace(heldout, strength=strength))
    except ValueError:  # the estimate (or its intervened version) is not stable
        return float("nan"), float("nan")
    return relative_error(mean, exact.mean), relative_error(cov, exact.cov)


def _sample_rng(ctx: RunContext, system: int, n: int, sizes: tuple[int, ...]) -> np.random.Generator:
    """The draw of system ``system``'s samples at size ``n``: a power of ten keeps its own index, so
    adding sizes between decades leaves the decades' draws unchanged."""
    decade = round(math.log10(n))
    if 10 ** decade == n:
        return ctx.rng("samples", 64 * system + decade - 1)
    between = [m for m in sizes if 10 ** round(math.log10(m)) != m]
    return ctx.rng("samples_between", 64 * system + between.index(n))


def _sweep(config: Config, ctx: RunContext) -> RecoverySweep:
    settings = ["exact", *config.sample_sizes]
    shape = (len(ARMS), len(settings), config.n_systems)
    errors, downstream = np.full(shape, np.nan), np.full(shape, np.nan)
    heldout_mean = np.full((len(ARMS), config.n_systems), np.nan)
    heldout_cov = np.full((len(ARMS), config.n_systems), np.nan)
    nullity: dict[str, dict[str, list[int]]] = {d: {"full": [], "known": []} for d in DESIGNS}
    baseline_l1: list[float] = []
    for system in ctx.progress(range(config.n_systems), desc="ou_steady systems"):
        rng = ctx.rng("system", system)
        process, support, components = random_scc_system(
            rng, config.scc_sizes, condensation=config.condensation, skew=config.skew,
            symmetric=config.symmetric)
        interventions: list[Intervention | None] = [None] + [
            Intervention(int(rng.choice(comp)), "soft_drift",
                         float(rng.uniform(config.strength_low, config.strength_high)))
            for comp in components
        ]
        held = Intervention(int(rng.integers(process.n)), "soft_drift",
                            float(rng.uniform(config.strength_low, config.strength_high)))
        knockouts, ko_processes = _knockouts(process, components, ctx.rng("knockout", system))
        processes = [process.intervene(iv) for iv in interventions]
        downstream_nodes = [i for comp in components[1:] for i in comp]
        if system < config.nullity_systems:
            exact = {id(p): p.regime() for p in (*processes, *ko_processes)}
            by_iv = {None: process.regime()}
            by_iv.update({iv: exact[id(p)] for iv, p in zip(interventions[1:], processes[1:])})
            by_iv.update({iv: exact[id(p)] for iv, p in zip(knockouts, ko_processes[1:])})
            for design, ivs in _designs(interventions, knockouts).items():
                regs = [by_iv[iv] for iv in ivs]
                nullity[design]["full"].append(identifiability_nullity(regs, ivs))
                nullity[design]["known"].append(identifiability_nullity(regs, ivs, support))
        for s, setting in enumerate(settings):
            if setting == "exact":
                regimes = [p.regime() for p in processes]
                ko_regimes = [p.regime() for p in ko_processes]
            else:
                draw = _sample_rng(ctx, system, setting, config.sample_sizes)
                regimes = [p.regime(setting, draw) for p in processes]
                ko_regimes = [p.regime(setting, draw) for p in ko_processes]
            fits, lam = _fit_all(regimes, interventions, ko_regimes, knockouts, support, components, config, process)
            for a, (_, estimate) in enumerate(fits.items()):
                errors[a, s, system] = scale_aligned_error(estimate, process)
                downstream[a, s, system] = scale_aligned_error(estimate, process, nodes=downstream_nodes)
            if setting == config.bar_samples:
                baseline_l1.append(lam)
                held_process = process.intervene(held)
                n_cal = max(20, int(config.calibration_fraction * setting))
                calib = held_process.regime(n_cal, ctx.rng("samples", 64 * system + 63))
                exact_held = held_process.regime()
                for a, (_, estimate) in enumerate(fits.items()):
                    heldout_mean[a, system], heldout_cov[a, system] = _heldout_errors(estimate, held, calib, exact_held)
    return RecoverySweep(settings, errors, downstream, heldout_mean, heldout_cov, nullity, baseline_l1)


_NULLITY_CHECKS = {  # check id -> (design, support, statistic)
    "nullity_knockout_per_component": ("knockout_per_component", "full", "max"),
    "nullity_knockout_root_only": ("knockout_root_only", "full", "min"),
    "nullity_soft_drift_per_component": ("soft_drift_per_component", "full", "max"),
    "nullity_observational": ("observational", "full", "min"),
    "nullity_observational_known_support": ("observational", "known", "max"),
}


def run(config: Config, ctx: RunContext) -> Outcome:
    ctx.stage("the sample-size sweep (every estimator on every draw)")
    sweep = _sweep(config, ctx)
    ctx.stage("summaries and the identifiability oracle")
    sizes = list(config.sample_sizes)
    bar = sweep.settings.index(config.bar_samples)
    tag = sample_size_tag(config.bar_samples)
    metrics = {arm: arm_metrics(sweep.errors[a], sizes, sweep.heldout_mean[a], sweep.heldout_cov[a],
                                slope_sizes=config.slope_sizes)
               for a, arm in enumerate(ARMS)}
    for a, arm in enumerate(ARMS):
        metrics[arm]["downstream_err_exact"] = float(np.median(sweep.downstream[a, 0]))
        metrics[arm][f"downstream_err_{tag}"] = float(np.median(sweep.downstream[a, bar]))
    for arm, baseline in CROSSOVER.items():
        n_cross = crossover_size(sizes, [metrics[arm][f"err_{sample_size_tag(n)}"] for n in sizes],
                                 [metrics[baseline][f"err_{sample_size_tag(n)}"] for n in sizes])
        metrics[arm]["crossover_log10N"] = math.log10(n_cross) if np.isfinite(n_cross) else float("nan")
    metrics["observational_lyapunov_free"]["l1_median"] = float(np.median(sweep.baseline_l1))
    identifiability: dict[str, float] = {}
    for design in DESIGNS:
        for support in ("full", "known"):
            summary = nullity_summary(sweep.nullity[design][support])
            for stat in ("min", "max"):
                identifiability[f"{design}_{support}_{stat}"] = summary[stat]
    metrics["identifiability_oracle"] = identifiability

    at_bar = {arm: metrics[arm][f"err_{tag}"] for arm in ARMS}
    ko = ARMS.index("knockout_lsq"), ARMS.index("knockout_root_only_lsq")
    ko_ratio = error_ratio(metrics["knockout_root_only_lsq"][f"downstream_err_{tag}"],
                           metrics["knockout_lsq"][f"downstream_err_{tag}"])
    checks = [
        CHECKS["recursive_exact"].measure(metrics["recursive"]["err_exact"]),
        CHECKS["lsq_exact"].measure(metrics["lsq"]["err_exact"]),
        CHECKS["recursive_at_bar_n"].measure(at_bar["recursive"], note=f"N = {config.bar_samples}"),
        CHECKS["recursive_refined_at_bar_n"].measure(at_bar["recursive_refined"], note=f"N = {config.bar_samples}"),
        CHECKS["lsq_at_bar_n"].measure(at_bar["lsq"], note=f"N = {config.bar_samples}"),
        CHECKS["baseline_over_recursive"].measure(error_ratio(at_bar["observational_lyapunov"], at_bar["recursive"])),
        CHECKS["baseline_over_recursive_refined"].measure(
            error_ratio(at_bar["observational_lyapunov"], at_bar["recursive_refined"])),
        CHECKS["baseline_over_lsq_known_support"].measure(
            error_ratio(at_bar["observational_lyapunov"], at_bar["lsq_known_support"])),
        CHECKS["baseline_free_over_lsq"].measure(error_ratio(at_bar["observational_lyapunov_free"], at_bar["lsq"]),
                                                 note="baseline λ picked against the truth per system"),
    ]
    for cid, (design, support, stat) in _NULLITY_CHECKS.items():
        checks.append(CHECKS[cid].measure(identifiability[f"{design}_{support}_{stat}"],
                                          note=f"{stat} over {len(sweep.nullity[design][support])} systems"))
    checks += [
        CHECKS["root_only_knockout_downstream_exact"].measure(float(np.median(sweep.downstream[ko[1], 0]))),
        CHECKS["root_only_knockout_downstream_ratio"].measure(ko_ratio, note=f"N = {config.bar_samples}"),
        CHECKS["recursive_slope_magnitude"].measure(metrics["recursive"]["slope"]),
        CHECKS["recursive_slope"].measure(metrics["recursive"]["slope"]),
        CHECKS["lsq_slope_magnitude"].measure(metrics["lsq"]["slope"]),
        CHECKS["lsq_slope"].measure(metrics["lsq"]["slope"]),
        CHECKS["heldout_cov_ratio"].measure(error_ratio(metrics["observational_lyapunov"]["heldout_cov_err"],
                                                        metrics["lsq_known_support"]["heldout_cov_err"])),
    ]
    curves = {
        "drift_error_vs_N": Curve(
            x=sizes,
            series={arm: [metrics[arm][f"err_{sample_size_tag(n)}"] for n in sizes] for arm in ARMS},
            xlabel="samples per regime N",
            ylabel="median scale-aligned drift error",
            title=f"OU recovery, n={sum(config.scc_sizes)}, {config.n_systems} systems per seed",
            logx=True,
            logy=True,
            extra={"exact": {arm: metrics[arm]["err_exact"] for arm in ARMS},
                   "screen_sizes": list(config.screen_sizes), "crossover": dict(CROSSOVER)},
        ),
        "per_system_at_bar_n": _per_system_curve(sweep, config.n_systems, ctx.seed, config.bar_samples),
    }
    notes = _notes(config, metrics, sizes, tag)
    dropped = [f"{arm}.{name}" for arm, row in metrics.items() for name, v in row.items() if not np.isfinite(v)]
    if dropped:  # e.g. every held-out prediction of an unidentified arm unstable
        notes.append("Not finite, left out of the metrics: " + ", ".join(dropped) + ".")
    metrics = {arm: {k: v for k, v in row.items() if np.isfinite(v)} for arm, row in metrics.items()}
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)


def _per_system_curve(sweep: RecoverySweep, n_systems: int, seed: int, bar_samples: int) -> Curve:
    """Each system's drift error per arm (and held-out covariance error) at ``bar_samples``.

    x numbers the systems over all seeds (``seed * n_systems + i``), so the aggregate keeps
    these per seed instead of averaging systems that share an index; ``pooled.py`` reads them."""
    bar = sweep.settings.index(bar_samples)
    series = {arm: sweep.errors[a, bar].tolist() for a, arm in enumerate(ARMS)}
    series.update({f"heldout_cov:{arm}": sweep.heldout_cov[a].tolist() for a, arm in enumerate(ARMS)})
    return Curve(x=[seed * n_systems + i for i in range(n_systems)], series=series, xlabel="system",
                 ylabel=f"scale-aligned drift error at N = {bar_samples}", title="per-system errors")


def _notes(config: Config, metrics: dict, sizes: list[int], tag: str) -> list[str]:
    notes = []
    small = [n for n in sizes if config.screen_sizes[0] <= n <= config.screen_sizes[1]]
    if small:
        notes.append("At perturbation-screen sizes (" + ", ".join(f"N={n}" for n in small) + "): " + "; ".join(
            f"{arm} " + "/".join(f"{metrics[arm][f'err_{sample_size_tag(n)}']:.2f}" for n in small)
            for arm in ("recursive_refined", "lsq_known_support", "lsq", "observational_lyapunov",
                        "observational_unknown_d")) + " (median drift errors).")
    crossing = []
    for arm, baseline in CROSSOVER.items():
        value = metrics[arm]["crossover_log10N"]
        where = ("never on the grid" if not np.isfinite(value) else f"at or below N={sizes[0]}"
                 if value == math.log10(sizes[0]) else f"from N≈{10 ** value:.0f}")
        crossing.append(f"{arm} below {baseline} {where}")
    notes.append("Crossover (median drift error, log-log interpolation between grid sizes): " + "; ".join(crossing) + ".")
    oracle = metrics["identifiability_oracle"]
    notes.append(
        "Oracle nullity (min-max over systems; 1 = identified up to scale), full support / known support: "
        + "; ".join(f"{d} {oracle[f'{d}_full_min']:.0f}-{oracle[f'{d}_full_max']:.0f} / "
                    f"{oracle[f'{d}_known_min']:.0f}-{oracle[f'{d}_known_max']:.0f}" for d in DESIGNS) + ".")
    notes.append(
        f"Observational data only, at N={config.bar_samples}: D unknown with the support "
        f"{metrics['observational_unknown_d'][f'err_{tag}']:.3f}, D = I with the support "
        f"{metrics['observational_lyapunov'][f'err_{tag}']:.3f} (exact moments "
        f"{metrics['observational_lyapunov']['err_exact']:.3f}: the D = I bias), D = I without the support "
        f"{metrics['observational_lyapunov_free'][f'err_{tag}']:.3f} (median oracle λ "
        f"{metrics['observational_lyapunov_free']['l1_median']:.0e}).")
    n_top = sizes[-1]
    if n_top > config.bar_samples:
        top = {arm: metrics[arm][f"err_{sample_size_tag(n_top)}"] for arm in ARMS}
        notes.append(f"At N={n_top}: " + ", ".join(f"{arm} {top[arm]:.3f}" for arm in ARMS[:7])
                     + " (median drift errors).")
    return notes
