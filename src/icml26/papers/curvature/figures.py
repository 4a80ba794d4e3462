"""Curvature reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.plotting import subplots, values

__all__ = ["plot"]


def _line_panel(ax, curve: dict[str, Any], cmap: str | None = None) -> None:
    import matplotlib

    x = values(curve["x"])
    names = list(curve["series"])
    colours = matplotlib.colormaps[cmap](np.linspace(0.1, 0.9, len(names))) if cmap else [None] * len(names)
    for name, colour in zip(names, colours):
        ax.plot(x, values(curve["series"][name]), marker="o", markersize=3, color=colour, label=name)
    ax.set_xlabel(curve.get("xlabel", ""))
    ax.set_ylabel(curve.get("ylabel", ""))
    ax.set_title(curve.get("title", ""), fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """Figures from the result's JSON: straightening/emergence, perturbations, regulariser, and the
    pretrained arm (when the result has it)."""
    curves = data["curves"]
    figures = {}
    if "curvature_by_layer" in curves:  # absent from the on-manifold further run
        figures.update(_tiny_figures(data))
    if "pretrained_by_layer" in curves:
        curve = curves["pretrained_by_layer"]
        series, x = curve["series"], values(curve["x"])
        perturbed = curves.get("pretrained_delta_entropy_vs_epsilon")
        fig, axes = subplots(1, 3 if perturbed else 2, panel=(6.0, 4.2))
        ax = axes[0][0]
        ax.plot(x, values(series["Spearman rho(kappa, H)"]), marker="o", markersize=3, label="Spearman rho")
        ax.fill_between(x, values(series["95% CI low"]), values(series["95% CI high"]), alpha=0.3,
                        label="95% window-bootstrap CI")
        ax.plot(x, values(series["partial rho | position, frequency"]), marker=".", label="partial rho")
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel("rho(kappa, H)")
        ax.set_title("SmolLM2-135M: curvature-entropy correlation", fontsize="medium")
        ax.legend(fontsize="small")
        ax.grid(True, alpha=0.3)
        ax = axes[0][1]
        ax.plot(x, values(series["mean curvature (rad)"]), marker="o", markersize=3, color="tab:green")
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel("mean turning angle (rad)")
        ax.set_title("SmolLM2-135M: curvature by layer", fontsize="medium")
        ax.grid(True, alpha=0.3)
        if perturbed:
            _line_panel(axes[0][2], perturbed)
            axes[0][2].axhline(0.0, color="black", lw=0.8)
        figures["pretrained.png"] = fig
    if "onmanifold_slopes" in curves:
        figures["onmanifold.png"] = _onmanifold_figure(data)
    return figures


def _tiny_figures(data: dict[str, Any]) -> dict[str, Any]:
    curves = data["curves"]
    figures = {}
    fig, axes = subplots(1, 4, panel=(4.5, 4.2))
    axes = axes[0]
    for ax, name in zip(axes, ("curvature_by_layer", "spearman_by_layer", "partial_spearman_by_layer")):
        _line_panel(ax, curves[name], cmap="viridis")
    for ax in axes[1:3]:
        ax.axhline(0.0, color="black", lw=0.8)
    _line_panel(axes[3], curves["spearman_by_window"], cmap="plasma")
    axes[3].axhline(0.0, color="black", lw=0.8)
    fig.suptitle("curvature: straightening and the curvature-entropy correlation, by layer and checkpoint")
    figures["straightening.png"] = fig

    fig, axes = subplots(1, 2, panel=(6.0, 4.2))
    axes = axes[0]
    hist = curves["initial_slope_hist"]
    colours = {"aligned": "tab:blue", "misaligned": "tab:orange"}
    for kind, counts in hist["series"].items():
        axes[0].step(values(hist["x"]), values(counts), where="mid", color=colours.get(kind), label=kind)
        mean = data["metrics"].get(kind, {}).get("mean_initial_slope")
        if mean is not None:
            axes[0].axvline(mean, color=colours.get(kind), ls="--", lw=1, label=f"{kind} mean {mean:+.3f}")
    axes[0].axvline(0.0, color="black", lw=0.8)
    axes[0].set_xlabel(hist["xlabel"])
    axes[0].set_ylabel(hist["ylabel"])
    axes[0].set_title(hist["title"], fontsize="medium")
    axes[0].legend(fontsize="small")
    _line_panel(axes[1], curves["delta_entropy_vs_epsilon"])
    axes[1].axhline(0.0, color="black", lw=0.8)
    figures["perturbation.png"] = fig

    fig, axes = subplots(1, 2, panel=(6.0, 4.2))
    _line_panel(axes[0][0], curves["regularizer_curvature"])
    _line_panel(axes[0][1], curves["valid_loss"])
    figures["regularizer.png"] = fig

    return figures


def _onmanifold_figure(data: dict[str, Any]):
    """Mean entropy and angle slope per direction, with 1.96 standard errors over prefixes."""
    curve = data["curves"]["onmanifold_slopes"]
    names = list(curve["x"])
    fig, axes = subplots(1, 2, panel=(6.5, 4.2))
    for ax, key, label in zip(axes[0], ("entropy_slope", "angle_slope"),
                              ("dDelta H/d epsilon (nats per unit epsilon)", "dDelta phi/d epsilon (rad per unit epsilon)")):
        rows = [data["metrics"].get(f"on-manifold {n}", {}) for n in names]
        mean = [r.get(f"mean_{key}", np.nan) for r in rows]
        err = [1.96 * r.get(f"sem_{key}", np.nan) for r in rows]
        ax.bar(range(len(names)), mean, yerr=err, capsize=3, color="tab:blue" if key == "entropy_slope" else "tab:green")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize="small")
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    summary = data["metrics"].get("on-manifold summary", {})
    beta, sem = summary.get("entropy_per_radian", np.nan), summary.get("sem_entropy_per_radian", np.nan)
    axes[0][0].set_title(f"{curve.get('title', '')}\nentropy per radian of angle change {beta:+.3f} +/- {1.96 * sem:.3f}",
                         fontsize="small")
    return fig
