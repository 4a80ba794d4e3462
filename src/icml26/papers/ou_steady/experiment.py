"""Reproduction: recover random SCC-structured OU processes from stationary snapshots.

For each of ``n_systems`` random systems (n = 8, components of sizes 3, 3, 2 on a chain
condensation), draw one soft-drift intervention per component plus a held-out one, and
fit from exact moments and from N ∈ ``sample_sizes`` samples per regime:

* ``recursive`` — the paper's recursive algorithm (support known);
* ``lsq`` — the paper's least-squares estimator over all regimes (no graph knowledge);
* ``lsq_known_support`` — the same with the support given (ours, to separate the
  estimator from the graph knowledge the recursive one uses);
* ``observational_lyapunov`` — the baseline: observational data only, D = I assumed,
  support known (without the support its system is underdetermined at λ = 0);
* ``root_only_lsq`` — ablation: interventions in the root component only.

Reports the median scale-aligned drift error per N, its log-log slope, and the error of
predicting the held-out intervention's mean and covariance (its strength fitted on a
``calibration_fraction`` of that regime's samples).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from icml26.common.config import validate_numbers
from icml26.contract import Outcome, RunContext
from icml26.papers.ou_steady import (
    Intervention,
    OUEstimate,
    Regime,
    fit_lsq,
    fit_observational_lyapunov,
    fit_recursive,
    fit_strength,
    predict,
    random_scc_system,
    scale_aligned_error,
)
from icml26.papers.ou_steady.analysis import arm_metrics, error_ratio, relative_error, sample_size_tag
from icml26.papers.ou_steady.claims import CHECKS
from icml26.papers.ou_steady.figures import plot

__all__ = ["ARMS", "CHECKS", "STREAMS", "ArmFits", "Config", "RecoverySweep", "plot", "run"]

ARMS = ("recursive", "lsq", "lsq_known_support", "observational_lyapunov", "root_only_lsq")

#: Named random streams (name -> the integer offset the earlier bare-offset API used, so numbers stay).
STREAMS = {"system": 0}
"""``system``: system ``i`` draws its process, interventions and samples from ``rng("system", i)``."""


@dataclasses.dataclass
class Config:
    """Synthetic recovery experiment (the brief's CPU plan, §4.1)."""

    n_systems: int = dataclasses.field(default=100, metadata={"min": 1})
    """Random systems per setting."""
    scc_sizes: tuple[int, ...] = (3, 3, 2)
    """Sizes of the strongly connected components (n = their sum)."""
    condensation: Literal["chain", "v"] = "chain"
    """Shape of the component DAG (single root in both cases)."""
    skew: float = dataclasses.field(default=2.0, metadata={"min": 0.0})
    """Antisymmetric within-component coupling, a magnitude (see ``random_scc_system``: near-reversible systems are nearly unidentifiable)."""
    symmetric: float = dataclasses.field(default=0.3, metadata={"min": 0.0})
    """Symmetric within-component coupling, a magnitude (G ~ N(0, 1) makes its sign irrelevant)."""
    strength_low: float = 0.5
    """Lower end of the soft-intervention strengths κ ~ U(low, high)."""
    strength_high: float = 2.0
    """Upper end of κ."""
    sample_sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    """Samples per regime (exact moments are always fitted too)."""
    l1: float = dataclasses.field(default=0.0, metadata={"min": 0.0})
    """ℓ1 weight for the least-squares estimators and the baseline (same for all)."""
    calibration_fraction: float = 0.1
    """Share of the held-out regime's samples used to fit its unknown strength."""
    bar_samples: int = 100_000
    """The N at which the issue's bars are checked (must be one of ``sample_sizes``)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        if self.n_systems < 1:
            raise ValueError(f"n_systems={self.n_systems} must be positive")
        if len(self.scc_sizes) < 2 or min(self.scc_sizes) < 1:
            raise ValueError(f"scc_sizes={self.scc_sizes} needs at least two components (root and downstream) "
                             "of at least one node each")
        if len(self.sample_sizes) < 2 or min(self.sample_sizes) < 20:
            raise ValueError(f"sample_sizes={self.sample_sizes} needs at least two sizes (for the slope), "
                             "each at least 20")
        if not 0 < self.strength_low < self.strength_high:
            raise ValueError(f"strength_low={self.strength_low}, strength_high={self.strength_high}: "
                             "need 0 < strength_low < strength_high")
        if self.bar_samples not in self.sample_sizes:
            raise ValueError(f"bar_samples={self.bar_samples} must be one of sample_sizes={self.sample_sizes}")
        if not 0 < self.calibration_fraction < 1:
            raise ValueError(f"calibration_fraction={self.calibration_fraction} must be in (0, 1)")

    @classmethod
    def quick(cls) -> "Config":
        return cls(n_systems=30)

    @classmethod
    def tiny(cls) -> "Config":
        return cls(n_systems=2, sample_sizes=(1_000, 10_000), bar_samples=10_000)


@dataclasses.dataclass(frozen=True)
class ArmFits:
    """Every arm's estimate on one system and one data setting (fields in ``ARMS`` order)."""

    recursive: OUEstimate
    lsq: OUEstimate
    lsq_known_support: OUEstimate
    observational_lyapunov: OUEstimate
    root_only_lsq: OUEstimate

    def items(self):
        return [(arm, getattr(self, arm)) for arm in ARMS]


@dataclasses.dataclass
class RecoverySweep:
    """The raw errors of the sweep over systems and data settings.

    ``settings`` is ``["exact", *sample_sizes]``; arrays are indexed ``[arm, setting, system]``
    (``errors``), ``[setting, system]`` (the ablation's per-block errors) or ``[arm, system]``
    (held-out predictions at ``bar_samples``, NaN where the estimate was unstable).
    """

    settings: list
    errors: np.ndarray
    downstream_root_only: np.ndarray
    downstream_all: np.ndarray
    root_root_only: np.ndarray
    heldout_mean: np.ndarray
    heldout_cov: np.ndarray


def _fit_all(regimes, interventions, support, components, l1) -> ArmFits:
    root = components[0]
    root_only = [k for k, iv in enumerate(interventions) if iv is None or iv.target in root]
    return ArmFits(
        recursive=fit_recursive(regimes, interventions, support),
        lsq=fit_lsq(regimes, interventions, l1=l1),
        lsq_known_support=fit_lsq(regimes, interventions, l1=l1, support=support),
        # the baseline gets the true support: with it, observational moments identify B when
        # D is known, so its only error is the D = I assumption (the strongest version of it)
        observational_lyapunov=fit_observational_lyapunov(regimes[0], l1=l1, support=support),
        root_only_lsq=fit_lsq([regimes[k] for k in root_only], [interventions[k] for k in root_only], l1=l1),
    )


def _heldout_errors(estimate, heldout: Intervention, calib: Regime, exact: Regime) -> tuple[float, float]:
    probe = dataclasses.replace(heldout, strength=1.0)
    strength = fit_strength(estimate, probe, calib)
    try:
        mean, cov = predict(estimate, dataclasses.replace(heldout, strength=strength))
    except ValueError:  # the estimate (or its intervened version) is not stable
        return float("nan"), float("nan")
    return relative_error(mean, exact.mean), relative_error(cov, exact.cov)


def _sweep(config: Config, ctx: RunContext) -> RecoverySweep:
    settings = ["exact", *config.sample_sizes]
    shape = (len(settings), config.n_systems)
    errors = np.full((len(ARMS), *shape), np.nan)
    downstream, downstream_full, root_err = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    heldout_mean = np.full((len(ARMS), config.n_systems), np.nan)
    heldout_cov = np.full((len(ARMS), config.n_systems), np.nan)
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
        processes = [process.intervene(iv) for iv in interventions]
        downstream_nodes = [i for comp in components[1:] for i in comp]
        for s, setting in enumerate(settings):
            if setting == "exact":
                regimes = [p.regime() for p in processes]
            else:
                regimes = [p.regime(setting, rng) for p in processes]
            fits = _fit_all(regimes, interventions, support, components, config.l1)
            for a, (_, estimate) in enumerate(fits.items()):
                errors[a, s, system] = scale_aligned_error(estimate, process)
            downstream[s, system] = scale_aligned_error(fits.root_only_lsq, process, nodes=downstream_nodes)
            downstream_full[s, system] = scale_aligned_error(fits.lsq, process, nodes=downstream_nodes)
            root_err[s, system] = scale_aligned_error(fits.root_only_lsq, process, nodes=components[0])
            if setting == config.bar_samples:
                held_process = process.intervene(held)
                n_cal = max(20, int(config.calibration_fraction * setting))
                calib = held_process.regime(n_cal, rng)
                exact = held_process.regime()
                for a, (_, estimate) in enumerate(fits.items()):
                    heldout_mean[a, system], heldout_cov[a, system] = _heldout_errors(estimate, held, calib, exact)
    return RecoverySweep(settings, errors, downstream, downstream_full, root_err, heldout_mean, heldout_cov)


def run(config: Config, ctx: RunContext) -> Outcome:
    sweep = _sweep(config, ctx)
    sizes = list(config.sample_sizes)
    bar = sweep.settings.index(config.bar_samples)
    metrics = {arm: arm_metrics(sweep.errors[a], sizes, sweep.heldout_mean[a], sweep.heldout_cov[a])
               for a, arm in enumerate(ARMS)}
    tag = sample_size_tag(config.bar_samples)
    med_downstream = float(np.median(sweep.downstream_root_only[bar]))
    med_downstream_all = float(np.median(sweep.downstream_all[bar]))
    metrics["root_only_lsq"].update({
        "downstream_err_exact": float(np.median(sweep.downstream_root_only[0])),
        f"downstream_err_{tag}": med_downstream,
        f"root_err_{tag}": float(np.median(sweep.root_root_only[bar])),
    })
    metrics["lsq"][f"downstream_err_{tag}"] = med_downstream_all

    at_bar = {arm: metrics[arm][f"err_{tag}"] for arm in ARMS}
    base = at_bar["observational_lyapunov"]
    checks = [
        CHECKS["recursive_exact"].measure(metrics["recursive"]["err_exact"]),
        CHECKS["lsq_exact"].measure(metrics["lsq"]["err_exact"]),
        CHECKS["recursive_at_bar_n"].measure(at_bar["recursive"], note=f"N = {config.bar_samples}"),
        CHECKS["lsq_at_bar_n"].measure(at_bar["lsq"], note=f"N = {config.bar_samples}"),
        CHECKS["baseline_over_recursive"].measure(error_ratio(base, at_bar["recursive"])),
        CHECKS["baseline_over_lsq"].measure(error_ratio(base, at_bar["lsq"])),
        CHECKS["root_only_downstream_exact"].measure(metrics["root_only_lsq"]["downstream_err_exact"]),
        CHECKS["root_only_downstream_ratio"].measure(error_ratio(med_downstream, med_downstream_all)),
        CHECKS["recursive_slope_magnitude"].measure(metrics["recursive"]["slope"]),
        CHECKS["recursive_slope"].measure(metrics["recursive"]["slope"]),
        CHECKS["lsq_slope_magnitude"].measure(metrics["lsq"]["slope"]),
        CHECKS["lsq_slope"].measure(metrics["lsq"]["slope"]),
        CHECKS["heldout_cov_ratio"].measure(error_ratio(metrics["observational_lyapunov"]["heldout_cov_err"],
                                                        metrics["lsq"]["heldout_cov_err"])),
    ]
    curves = {
        "drift_error_vs_N": {
            "x": sizes,
            "series": {arm: [metrics[arm][f"err_{sample_size_tag(n)}"] for n in sizes] for arm in ARMS},
            "exact": {arm: metrics[arm]["err_exact"] for arm in ARMS},
            "xlabel": "samples per regime N",
            "ylabel": "median scale-aligned drift error",
            "title": f"OU recovery, n={sum(config.scc_sizes)}, {config.n_systems} systems",
            "logx": True,
            "logy": True,
        },
    }
    notes = []
    n_top = sizes[-1]
    if n_top > config.bar_samples:
        top = {arm: metrics[arm][f"err_{sample_size_tag(n_top)}"] for arm in ARMS}
        notes.append(
            f"At N={n_top}: recursive {top['recursive']:.3f}, lsq {top['lsq']:.3f}, "
            f"lsq_known_support {top['lsq_known_support']:.3f}, baseline "
            f"{top['observational_lyapunov']:.3f} (median drift errors)."
        )
    for arm in ("recursive", "lsq"):
        if not at_bar[arm] < CHECKS[f"{arm}_at_bar_n"].target:
            notes.append(
                f"{arm}: median drift error {at_bar[arm]:.3f} at N={config.bar_samples} misses the issue's "
                f"{CHECKS[f'{arm}_at_bar_n'].target:g} bar; exact moments give {metrics[arm]['err_exact']:.1e}, so "
                "the gap is statistical, not a bias: the moment equations are weakly conditioned along per-node "
                "time-scale directions (README)."
            )
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
