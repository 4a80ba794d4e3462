"""The asym_perturb figures, drawn from a result's JSON only."""

from __future__ import annotations

import textwrap

import numpy as np

from icml26.papers.asym_perturb.analysis import EXACT
from icml26.plotting import line, subplots, values

__all__ = ["plot"]

_COLORS = {"asymmetric_reference": "#d62728", "asymmetric": "#ff7f0e",
           "asymmetric_small_mu": "#e377c2", "symmetric_reference": "#1f77b4", "symmetric_reference_k": "#8c564b",
           "symmetric": "#17becf", "ogda": "#2ca02c",
           "gda": "#7f7f7f", "cfr_plus": "#9467bd"}


def plot(data: dict) -> dict:
    """NashConv panels (median and IQR per method) and per-seed iterations to 1e-6."""
    figures = {}
    panels = [k for k in data["curves"] if k.startswith("nashconv_")]
    fig, axes = subplots(1, len(panels), panel=(5.2, 4.2))
    for ax, key in zip(axes[0], panels):
        curve = data["curves"][key]
        for method, ys in curve["series"].items():
            line(ax, curve["x"], ys, label=method, lower=curve["lower"][method], upper=curve["upper"][method],
                 color=_COLORS.get(method), lw=1.8 if method.startswith("asym") else 1.2)
        ax.set_yscale("log")
        ax.set_ylim(1e-16, 10)
        ax.axhline(EXACT, color="k", ls=":", lw=0.8)
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel(curve["ylabel"])
        ax.set_title("\n".join(textwrap.wrap(curve["title"], 60)), fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower left")
    figures["nashconv.png"] = fig

    strips = [k for k in data["curves"] if k.startswith("iterations_")]
    if strips:
        fig, axes = subplots(1, len(strips), panel=(5.2, 3.8))
        horizon = data["config"]["iterations"]
        for ax, key in zip(axes[0], strips):
            curve = data["curves"][key]
            for i, (method, ys) in enumerate(curve["series"].items()):
                ys = values(ys)
                jitter = np.linspace(-0.25, 0.25, len(ys))
                ax.scatter(i + jitter, ys, s=12, color=_COLORS.get(method), alpha=0.8)
                ax.hlines(np.nanmedian(ys), i - 0.35, i + 0.35, color="k", lw=1.5)
            ax.axhline(horizon + 1, color="k", ls=":", lw=0.8)
            ax.set_xticks(range(len(curve["series"])))
            ax.set_xticklabels(list(curve["series"]), rotation=30, ha="right", fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel(curve["ylabel"], fontsize=8)
            ax.set_title(curve["title"] + " (bar: median)", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
        figures["iterations.png"] = fig
    return figures
