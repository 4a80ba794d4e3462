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

from icml26.papers.ou_steady import (
    Intervention,
    OUProcess,
    Regime,
    fit_lsq,
    fit_observational_lyapunov,
    fit_recursive,
    fit_strength,
    predict,
    random_scc_system,
    scale_aligned_error,
)
from icml26.results import Outcome, check

ARMS = ("recursive", "lsq", "lsq_known_support", "observational_lyapunov", "root_only_lsq")


@dataclasses.dataclass
class Config:
    """Synthetic recovery experiment (the brief's CPU plan, §4.1)."""

    n_systems: int = 100
    """Random systems per setting."""
    scc_sizes: tuple[int, ...] = (3, 3, 2)
    """Sizes of the strongly connected components (n = their sum)."""
    condensation: Literal["chain", "v"] = "chain"
    """Shape of the component DAG (single root in both cases)."""
    skew: float = 2.0
    """Antisymmetric within-component coupling (see ``random_scc_system``: near-reversible systems are nearly unidentifiable)."""
    symmetric: float = 0.3
    """Symmetric within-component coupling."""
    strength_low: float = 0.5
    """Lower end of the soft-intervention strengths κ ~ U(low, high)."""
    strength_high: float = 2.0
    """Upper end of κ."""
    sample_sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    """Samples per regime (exact moments are always fitted too)."""
    l1: float = 0.0
    """ℓ1 weight for the least-squares estimators and the baseline (same for all)."""
    calibration_fraction: float = 0.1
    """Share of the held-out regime's samples used to fit its unknown strength."""
    bar_samples: int = 100_000
    """The N at which the issue's bars are checked (must be one of ``sample_sizes``)."""

    def __post_init__(self) -> None:
        if self.n_systems < 1:
            raise ValueError(f"n_systems={self.n_systems} must be positive")
        if len(self.scc_sizes) < 2:
            raise ValueError("scc_sizes needs at least two components (root and downstream)")
        if not self.sample_sizes or min(self.sample_sizes) < 20:
            raise ValueError(f"sample_sizes={self.sample_sizes} must be at least 20 each")
        if not 0 < self.strength_low < self.strength_high:
            raise ValueError("need 0 < strength_low < strength_high")
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


def _fit_all(regimes, interventions, support, components, l1):
    root = components[0]
    root_only = [k for k, iv in enumerate(interventions) if iv is None or iv.target in root]
    return {
        "recursive": fit_recursive(regimes, interventions, support),
        "lsq": fit_lsq(regimes, interventions, l1=l1),
        "lsq_known_support": fit_lsq(regimes, interventions, l1=l1, support=support),
        # the baseline gets the true support: with it, observational moments identify B when
        # D is known, so its only error is the D = I assumption (the strongest version of it)
        "observational_lyapunov": fit_observational_lyapunov(regimes[0], l1=l1, support=support),
        "root_only_lsq": fit_lsq([regimes[k] for k in root_only], [interventions[k] for k in root_only], l1=l1),
    }


def _heldout_errors(estimate, heldout: Intervention, calib: Regime, exact: Regime) -> tuple[float, float]:
    probe = dataclasses.replace(heldout, strength=1.0)
    strength = fit_strength(estimate, probe, calib)
    try:
        mean, cov = predict(estimate, dataclasses.replace(heldout, strength=strength))
    except ValueError:  # the estimate (or its intervened version) is not stable
        return float("nan"), float("nan")
    return (float(np.linalg.norm(mean - exact.mean) / np.linalg.norm(exact.mean)),
            float(np.linalg.norm(cov - exact.cov) / np.linalg.norm(exact.cov)))


def _slope(sizes, errors) -> float:
    # least-squares slope of log(error) against log(N)
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


def run(config: Config, ctx) -> Outcome:
    sizes = list(config.sample_sizes)
    settings = ["exact"] + sizes
    errors = {arm: {s: [] for s in settings} for arm in ARMS}
    downstream = {s: [] for s in settings}
    downstream_full = {s: [] for s in settings}
    root_err = {s: [] for s in settings}
    heldout = {arm: ([], []) for arm in ARMS}
    for system in ctx.progress(range(config.n_systems), desc="ou_steady systems"):
        rng = ctx.rng(system)
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
        processes = [process if iv is None else process.intervene(iv) for iv in interventions]
        downstream_nodes = [i for comp in components[1:] for i in comp]
        for setting in settings:
            if setting == "exact":
                regimes = [p.regime() for p in processes]
            else:
                regimes = [p.regime(setting, rng) for p in processes]
            fits = _fit_all(regimes, interventions, support, components, config.l1)
            for arm, estimate in fits.items():
                errors[arm][setting].append(scale_aligned_error(estimate, process))
            ablation = fits["root_only_lsq"]
            downstream[setting].append(scale_aligned_error(ablation, process, nodes=downstream_nodes))
            downstream_full[setting].append(scale_aligned_error(fits["lsq"], process, nodes=downstream_nodes))
            root_err[setting].append(scale_aligned_error(ablation, process, nodes=components[0]))
            if setting == config.bar_samples:
                held_process = process.intervene(held)
                n_cal = max(20, int(config.calibration_fraction * setting))
                calib = held_process.regime(n_cal, rng)
                exact = held_process.regime()
                for arm, estimate in fits.items():
                    m_err, c_err = _heldout_errors(estimate, held, calib, exact)
                    heldout[arm][0].append(m_err)
                    heldout[arm][1].append(c_err)

    med = {arm: {s: float(np.median(errors[arm][s])) for s in settings} for arm in ARMS}
    metrics: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        row = {"err_exact": med[arm]["exact"]}
        row.update({f"err_N{n:.0e}".replace("+0", ""): med[arm][n] for n in sizes})
        row["slope"] = _slope(sizes, [med[arm][n] for n in sizes])
        # predictions from an unstable estimate count as failures, not as numbers
        row["heldout_mean_err"] = float(np.nanmedian(heldout[arm][0]))
        row["heldout_cov_err"] = float(np.nanmedian(heldout[arm][1]))
        row["heldout_unstable"] = float(np.isnan(heldout[arm][1]).sum())
        metrics[arm] = row
    n_max = config.bar_samples
    tag = f"N{n_max:.0e}".replace("+0", "")
    metrics["root_only_lsq"].update({
        "downstream_err_exact": float(np.median(downstream["exact"])),
        f"downstream_err_{tag}": float(np.median(downstream[n_max])),
        f"root_err_{tag}": float(np.median(root_err[n_max])),
    })
    metrics["lsq"][f"downstream_err_{tag}"] = float(np.median(downstream_full[n_max]))

    base = med["observational_lyapunov"][n_max]
    checks = [
        check("recursive: median drift error, exact moments", med["recursive"]["exact"], "<", 1e-6),
        check("lsq: median drift error, exact moments", med["lsq"]["exact"], "<", 1e-6),
        check(f"recursive: median drift error at N={n_max}", med["recursive"][n_max], "<", 0.05),
        check(f"lsq: median drift error at N={n_max}", med["lsq"][n_max], "<", 0.05),
        check(f"baseline / recursive error at N={n_max}", base / med["recursive"][n_max], ">=", 5.0),
        check(f"baseline / lsq error at N={n_max}", base / med["lsq"][n_max], ">=", 5.0),
        check("root-only ablation: downstream drift error, exact moments",
              float(np.median(downstream["exact"])), ">=", 0.1),
        check(f"root-only / all-interventions downstream error at N={n_max}",
              float(np.median(downstream[n_max])) / float(np.median(downstream_full[n_max])), ">=", 2.0),
        check("recursive: log-log slope of error vs N (≈ -1/2)", metrics["recursive"]["slope"], "abs<=", 0.7),
        check("recursive: slope at most -0.3", metrics["recursive"]["slope"], "<=", -0.3),
        check("lsq: log-log slope of error vs N (≈ -1/2)", metrics["lsq"]["slope"], "abs<=", 0.7),
        check("lsq: slope at most -0.3", metrics["lsq"]["slope"], "<=", -0.3),
        check("held-out covariance error: baseline / lsq",
              metrics["observational_lyapunov"]["heldout_cov_err"] / metrics["lsq"]["heldout_cov_err"], ">=", 3.0),
    ]
    curves = {
        "drift_error_vs_N": {
            "x": sizes,
            "series": {arm: [med[arm][n] for n in sizes] for arm in ARMS},
            "exact": {arm: med[arm]["exact"] for arm in ARMS},
            "xlabel": "samples per regime N",
            "ylabel": "median scale-aligned drift error",
            "title": f"OU recovery, n={sum(config.scc_sizes)}, {config.n_systems} systems",
            "logx": True,
            "logy": True,
        },
    }
    notes = []
    n_top = sizes[-1]
    if n_top > n_max:
        notes.append(
            f"At N={n_top}: recursive {med['recursive'][n_top]:.3f}, lsq {med['lsq'][n_top]:.3f}, "
            f"lsq_known_support {med['lsq_known_support'][n_top]:.3f}, baseline "
            f"{med['observational_lyapunov'][n_top]:.3f} (median drift errors)."
        )
    for arm in ("recursive", "lsq"):
        if med[arm][n_max] >= 0.05:
            notes.append(
                f"{arm}: median drift error {med[arm][n_max]:.3f} at N={n_max} misses the issue's 0.05 bar; "
                f"exact moments give {med[arm]['exact']:.1e}, so the gap is statistical, not a bias: the "
                "moment equations are weakly conditioned along per-node time-scale directions (README)."
            )
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)


def plot(data: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    curve = data["curves"]["drift_error_vs_N"]
    x = np.asarray(curve["x"], dtype=float)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for arm, ys in curve["series"].items():
        exact = curve["exact"][arm]
        ax.plot(x, ys, marker="o", label=f"{arm} (exact: {exact:.0e})")
    ref = curve["series"]["lsq"][0] * np.sqrt(x[0] / x)
    ax.plot(x, ref, "k--", lw=1, label="∝ N^-1/2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(curve["xlabel"])
    ax.set_ylabel(curve["ylabel"])
    ax.set_title(curve["title"])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small")

    arms = [a for a in data["metrics"] if "heldout_cov_err" in data["metrics"][a]]
    pos = np.arange(len(arms))
    ax2.bar(pos - 0.2, [data["metrics"][a]["heldout_mean_err"] for a in arms], 0.4, label="mean")
    ax2.bar(pos + 0.2, [data["metrics"][a]["heldout_cov_err"] for a in arms], 0.4, label="covariance")
    ax2.set_xticks(pos, arms, rotation=20, fontsize="small")
    ax2.set_yscale("log")
    ax2.set_ylabel("median relative error")
    ax2.set_title(f"predicting a held-out intervention (N={data['config']['bar_samples']})")
    ax2.legend(fontsize="small")
    ax2.grid(True, axis="y", alpha=0.3)
    return {"ou_steady.png": fig}
