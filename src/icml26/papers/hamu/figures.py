"""The hamu figures, drawn from a result's JSON only."""

from __future__ import annotations

from typing import Any

import numpy as np

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
        # zoom on the stretch between the reference's and the original's forget accuracy
        orig_forget = curve.get("original", [1.0, None])[0]
        x = np.asarray(values(curve["x"]), dtype=float)
        inside = (x >= ref_forget - 0.15) & (x <= orig_forget + 0.02)
        ys_in = np.concatenate([np.asarray(values(ys), dtype=float)[inside] for ys in curve["series"].values()]
                               + [np.array([ref_retain])])
        ys_in = ys_in[np.isfinite(ys_in)]
        if inside.any() and ys_in.size:
            ax.set_xlim(max(0.0, ref_forget - 0.15), min(1.0, orig_forget + 0.02) + 1e-3)
            pad = max(0.005, 0.1 * float(ys_in.max() - ys_in.min()))
            ax.set_ylim(float(ys_in.min()) - pad, float(ys_in.max()) + pad)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Retain-test accuracy reachable at each forget accuracy (validation-selected; mean of replicates; "
                 "up-left is better)", fontsize=9)
    figures["pareto.png"] = fig

    headline = data.get("metrics", {}).get("headline@rho0.5")
    if isinstance(headline, dict) and headline:
        names = [k[: -len("_mean")] for k in headline if k.endswith("_mean") and not k.startswith("testbed")]
        fig, axes = subplots(1, 1, panel=(7.0, 0.45 * len(names) + 1.5))
        ax = axes[0][0]
        means = np.array([headline[f"{n}_mean"] for n in names], dtype=float)
        low = np.array([headline.get(f"{n}_ci_low", np.nan) for n in names], dtype=float)
        high = np.array([headline.get(f"{n}_ci_high", np.nan) for n in names], dtype=float)
        pos = np.arange(len(names))
        ax.errorbar(means, pos, xerr=[means - low, high - means], fmt="o", capsize=3)
        ax.axvline(0.0, color="k", lw=0.8)
        ax.axvline(2.0, color="r", lw=0.8, ls="--", label="bar (+2 points)")
        ax.set_yticks(pos, names, fontsize=8)
        ax.set_xlabel("points (paired 95% interval over replicates)")
        ax.set_title("rho = 0.5: HAMU-Q minus each baseline (margin_*), the reference's ceiling (ceiling_vs_*)",
                     fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        figures["margins.png"] = fig

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
