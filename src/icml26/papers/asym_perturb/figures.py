"""The asym_perturb figures, drawn from a result's JSON only."""

from __future__ import annotations

import textwrap

from icml26.papers.asym_perturb.analysis import EXACT
from icml26.plotting import line, subplots

__all__ = ["plot"]

_COLORS = {"asymmetric_reference": "#d62728", "asymmetric": "#ff7f0e",
           "symmetric_reference": "#1f77b4", "symmetric_reference_k": "#8c564b",
           "symmetric": "#17becf", "ogda": "#2ca02c",
           "gda": "#7f7f7f", "cfr_plus": "#9467bd", "cfr_plus (OpenSpiel C++)": "#000000"}


def plot(data: dict) -> dict:
    """NashConv panels (median over games; band: 95 % interval over seeds when the result is an
    aggregate, else the IQR over games), sorted iterations to 1e-6, and the thresholds μ̄."""
    figures = {}
    panels = [k for k in data["curves"] if k.startswith("nashconv_")]
    cols = min(len(panels), 2)
    fig, axes = subplots((len(panels) + cols - 1) // cols, cols, panel=(5.6, 4.2))
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, panels):
        curve = data["curves"][key]
        bands = curve.get("bands")
        for method, ys in curve["series"].items():
            lower, upper = (bands.get(method, (None, None)) if bands
                            else (curve["lower"].get(method), curve["upper"].get(method)))
            outside = "OpenSpiel" in method  # the outside reference: dashed, drawn over our CFR+
            line(ax, curve["x"], ys, label=method, lower=lower, upper=upper, color=_COLORS.get(method),
                 lw=1.8 if method.startswith("asym") else 1.2, ls="--" if outside else "-")
        ax.set_yscale("log")
        ax.set_ylim(1e-16, 10)
        ax.axhline(EXACT, color="k", ls=":", lw=0.8)
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel(curve["ylabel"].replace("(median, IQR)", "(median; band: 95 % CI over seeds)")
                      if bands else curve["ylabel"])
        ax.set_title("\n".join(textwrap.wrap(curve["title"], 60)), fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    figures["nashconv.png"] = fig

    thresholds = [k for k in data["curves"] if k.startswith("thresholds_")]
    if thresholds:
        fig, axes = subplots(1, len(thresholds), panel=(5.2, 3.8))
        for ax, key in zip(axes[0], thresholds):
            curve = data["curves"][key]
            bands = curve.get("bands") or {}
            for name, ys in curve["series"].items():
                band = bands.get(name)
                line(ax, curve["x"], ys, label=name, lower=band[0] if band else None,
                     upper=band[1] if band else None)
            ax.axhline(0.3, color="k", ls=":", lw=0.8, label="earlier fixed μ = 0.3")
            ax.set_yscale("log")
            ax.set_xlabel(curve["xlabel"])
            ax.set_ylabel(curve["ylabel"])
            ax.set_title(curve["title"], fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        figures["thresholds.png"] = fig

    strips = [k for k in data["curves"] if k.startswith("iterations_")]
    if strips:
        fig, axes = subplots(1, len(strips), panel=(5.2, 3.8))
        horizon = data["config"]["iterations"]
        for ax, key in zip(axes[0], strips):
            curve = data["curves"][key]
            for method, ys in curve["series"].items():
                line(ax, curve["x"], ys, label=method, color=_COLORS.get(method), drawstyle="steps-post")
            ax.axhline(horizon + 1, color="k", ls=":", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel(curve["xlabel"])
            ax.set_ylabel(curve["ylabel"], fontsize=8)
            ax.set_title(curve["title"], fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        figures["iterations.png"] = fig
    return figures
