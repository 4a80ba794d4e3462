"""The ou_steady figure, drawn from a result's JSON only (a single seed's or a sweep's aggregate)."""

from __future__ import annotations

import numpy as np

from icml26.plotting import line, subplots, values

__all__ = ["PANELS", "plot"]

#: Arms per panel: the two information classes (given the drift's support or not), then the ablations.
PANELS = {
    "given the support": ("recursive", "recursive_refined", "lsq_known_support", "observational_lyapunov",
                          "observational_unknown_d"),
    "without the support": ("lsq", "observational_lyapunov_free"),
    "ablations (lsq, no support)": ("lsq", "root_only_lsq", "knockout_lsq", "knockout_root_only_lsq"),
}


def plot(data: dict) -> dict:
    """``{"ou_steady.png": Figure}``: drift error vs N per arm (95 % bands over seeds when the result
    is an aggregate; the perturbation-screen range shaded; a dotted line where an interventional arm
    overtakes its equal-information baseline for good), and the held-out prediction errors."""
    curve = data["curves"]["drift_error_vs_N"]
    metrics = data["metrics"]
    bands = curve.get("bands") or {}
    x = values(curve["x"])
    fig, axes = subplots(1, len(PANELS) + 1, panel=(5.0, 4.2))
    for ax, (title, arms) in zip(axes[0], PANELS.items()):
        for arm in arms:
            if arm not in curve["series"]:
                continue
            exact = metrics.get(arm, {}).get("err_exact")
            band = bands.get(arm)
            line(ax, x, curve["series"][arm], label=f"{arm} (exact: {exact:.0e})" if exact is not None else arm,
                 lower=band[0] if band else None, upper=band[1] if band else None)
        if "lsq" in curve["series"] and title == "without the support":
            lsq = values(curve["series"]["lsq"])
            ax.plot(x, lsq[-1] * np.sqrt(x[-1] / x), "k--", lw=1, label="∝ N^-1/2")
        for arm, baseline in curve.get("crossover", {}).items():
            n_cross = metrics.get(arm, {}).get("crossover_log10N")
            if n_cross is not None and arm in arms and baseline in arms:
                ax.axvline(10 ** n_cross, ls=":", lw=1, color="0.3")
                ax.annotate(f"{arm} < {baseline}\nfrom N≈{10 ** n_cross:.0f}", (10 ** n_cross, 0.02),
                            fontsize=5, rotation=90, va="bottom", xycoords=("data", "axes fraction"))
        low, high = curve.get("screen_sizes", (100, 1000))
        ax.axvspan(low, high, color="0.85", zorder=0, label="screen sizes (10²–10³ cells)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel(curve["ylabel"])
        ax.set_title(f"{title}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="xx-small")
    ax2 = axes[0][-1]
    arms = [a for a in metrics if "heldout_cov_err" in metrics[a]]
    pos = np.arange(len(arms))
    ax2.bar(pos - 0.2, values([metrics[a]["heldout_mean_err"] for a in arms]), 0.4, label="mean")
    ax2.bar(pos + 0.2, values([metrics[a]["heldout_cov_err"] for a in arms]), 0.4, label="covariance")
    ax2.set_xticks(pos, arms, rotation=60, fontsize="x-small", ha="right")
    ax2.set_yscale("log")
    ax2.set_ylabel("median relative error")
    ax2.set_title(f"predicting a held-out intervention (N={data['config']['bar_samples']})", fontsize=9)
    ax2.legend(fontsize="small")
    ax2.grid(True, axis="y", alpha=0.3)
    fig.suptitle(curve["title"], fontsize=10)
    return {"ou_steady.png": fig}
