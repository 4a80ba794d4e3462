"""The hamu figures, drawn from a result's JSON only."""

from __future__ import annotations

from typing import Any

from icml26.plotting import subplots, values

__all__ = ["plot"]


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """Pareto fronts (one panel per ρ) and HAMU's per-step κ, cos and stop flags."""
    curves = data["curves"]
    rhos = [k[len("pareto_"):] for k in curves if k.startswith("pareto_")]
    figures = {}
    fig, axes = subplots(1, len(rhos), panel=(5.2, 4.4))
    for ax, tag in zip(axes[0], rhos):
        curve = curves[f"pareto_{tag}"]
        for arm, ys in curve["series"].items():
            style = {"lw": 2.6, "zorder": 3} if arm.startswith("hamu") else {"lw": 1.3, "alpha": 0.8}
            ax.plot(values(curve["x"]), values(ys), label=arm, drawstyle="steps-post", **style)
        ref_forget, ref_retain = curve["reference"]
        ax.plot([ref_forget], [ref_retain], "k*", ms=14, label="retrained reference", zorder=4)
        ax.set_title(curve["title"], fontsize=9)
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel(curve["ylabel"])
        ax.set_ylim(0.0, 1.02)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Retain-test accuracy reachable at each forget accuracy (mean of seeds; up-left is better)")
    figures["pareto.png"] = fig

    fig, axes = subplots(3, len(rhos), panel=(5.0, 2.85), sharex=True)
    for col, tag in enumerate(rhos):
        for row, name in enumerate(("kappa", "cos", "stop")):
            curve = curves[f"hamu_{name}_{tag}"]
            ax = axes[row][col]
            for label, ys in curve["series"].items():
                ax.plot(values(curve["x"]), values(ys), label=label)
            if name == "kappa":
                ax.set_yscale("symlog", linthresh=1e-6)
            elif name == "stop":
                ax.set_ylim(-0.05, 1.05)
            ax.set_ylabel(curve["ylabel"], fontsize=8)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(curve["title"], fontsize=9)
            if row == 2:
                ax.set_xlabel("step")
    axes[0][0].legend(fontsize=7)
    figures["hamu_steps.png"] = fig
    return figures
