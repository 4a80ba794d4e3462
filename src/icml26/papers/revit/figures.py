"""ReViT reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

import numpy as np

from icml26.plotting import subplots, values

__all__ = ["plot"]

COLOURS = {"ReViT": "tab:red", "ViT": "tab:blue", "ViT+aug": "tab:green"}


def plot(data: dict) -> dict:
    """Per-rotation MSE bars (seed range as error bars) with steps/s, training loss curves and, when the
    run has further budgets, the budget curve."""
    curves = data["curves"]
    per_rot, by_seed = curves["per_rotation_mse"], curves["per_rotation_mse_by_seed"]
    degrees = per_rot["x"]
    arms = [a for a in per_rot["series"] if a != "identity"]
    fig, axes = subplots(1, 2, panel=(5.0, 4.2), width_ratios=[3, 1])
    ax, ax_speed = axes[0]
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        seeds = np.array([values(v) for name, v in by_seed["series"].items() if name.startswith(arm + " seed")])
        mean = values(per_rot["series"][arm])
        pos = np.arange(len(degrees)) + (i - (len(arms) - 1) / 2) * width
        err = np.vstack([mean - seeds.min(0), seeds.max(0) - mean])
        ax.bar(pos, mean, width, yerr=err, capsize=3, label=arm, color=COLOURS.get(arm))
    ax.axhline(values(per_rot["series"]["identity"])[0], color="k", ls="--", lw=1, label="identity (no change)")
    ax.set_xticks(range(len(degrees)), [f"{d}°" for d in degrees])
    ax.set_yscale("log")
    ax.set_xlabel("rotation of the test set (training flows point near +x)")
    ax.set_ylabel("test MSE of the next velocity")
    ax.set_title("One-step Navier–Stokes: error per test rotation")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    speeds = curves["steps_per_s"]["series"]
    ax_speed.bar(list(speeds), [values(v)[0] for v in speeds.values()], color=[COLOURS.get(a) for a in speeds])
    ax_speed.set_ylabel("training steps/s (same run)")
    ax_speed.set_title("Speed")
    ax_speed.tick_params(axis="x", labelrotation=30)

    loss = curves["training_loss"]
    fig2, axes2 = subplots(1, 1, panel=(6.0, 4.0))
    ax2 = axes2[0, 0]
    for arm, ys in loss["series"].items():
        ax2.plot(values(loss["x"]), values(ys), label=arm, color=COLOURS.get(arm))
    ax2.set_yscale("log")
    ax2.set_xlabel("step")
    ax2.set_ylabel(loss["ylabel"])
    ax2.set_title("Training loss (ViT+aug sees rotated pairs)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize="small")
    figures = {"per_rotation_mse.png": fig, "training_loss.png": fig2}
    budget = curves.get("budget_curve")
    if budget and len(values(budget["x"])) > 1:
        fig3, axes3 = subplots(1, 1, panel=(5.0, 4.0))
        ax3 = axes3[0, 0]
        for name, ys in budget["series"].items():
            ax3.plot(values(budget["x"]), values(ys), "o-", label=name, color=COLOURS.get(name.split(" rotated")[0]))
        ax3.set_xscale("log")
        ax3.set_yscale("log")
        ax3.set_xlabel(budget["xlabel"])
        ax3.set_ylabel(budget["ylabel"])
        ax3.set_title("Rotated-test MSE against training budget")
        ax3.grid(True, alpha=0.3)
        ax3.legend(fontsize="small")
        figures["budget_curve.png"] = fig3
    return figures
