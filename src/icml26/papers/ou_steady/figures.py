"""The ou_steady figure, drawn from a result's JSON only."""

from __future__ import annotations

import numpy as np

from icml26.plotting import line, subplots, values

__all__ = ["plot"]


def plot(data: dict) -> dict:
    """``{"ou_steady.png": Figure}``: drift error vs N per arm, and the held-out prediction errors."""
    curve = data["curves"]["drift_error_vs_N"]
    x = values(curve["x"])
    fig, axes = subplots(1, 2, panel=(5.5, 4.2))
    ax, ax2 = axes[0]
    for arm, ys in curve["series"].items():
        exact = curve["exact"][arm]
        line(ax, x, ys, label=f"{arm} (exact: {exact:.0e})" if exact is not None else arm)
    lsq = values(curve["series"]["lsq"])
    ax.plot(x, lsq[0] * np.sqrt(x[0] / x), "k--", lw=1, label="∝ N^-1/2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(curve["xlabel"])
    ax.set_ylabel(curve["ylabel"])
    ax.set_title(curve["title"], fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small")

    arms = [a for a in data["metrics"] if "heldout_cov_err" in data["metrics"][a]]
    pos = np.arange(len(arms))
    ax2.bar(pos - 0.2, values([data["metrics"][a]["heldout_mean_err"] for a in arms]), 0.4, label="mean")
    ax2.bar(pos + 0.2, values([data["metrics"][a]["heldout_cov_err"] for a in arms]), 0.4, label="covariance")
    ax2.set_xticks(pos, arms, rotation=20, fontsize="small")
    ax2.set_yscale("log")
    ax2.set_ylabel("median relative error")
    ax2.set_title(f"predicting a held-out intervention (N={data['config']['bar_samples']})", fontsize=9)
    ax2.legend(fontsize="small")
    ax2.grid(True, axis="y", alpha=0.3)
    return {"ou_steady.png": fig}
