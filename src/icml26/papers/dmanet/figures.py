"""DMANet reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.plotting import subplots, values

__all__ = ["plot"]


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """Three figures from the result JSON: leakage, forecast MSE per data set, one forecast."""
    curves = data["curves"]
    figures: dict[str, Any] = {}

    fig, axes = subplots(1, 2, panel=(5.5, 4.0))
    ax_s, ax_l = axes[0]
    spec = curves["spectrum"]
    ax_s.loglog(values(spec["x"]), values(spec["series"]["power share"]), color="k", lw=1)
    for level, color in zip((1, 2, 3), ("tab:blue", "tab:orange", "tab:red")):
        ax_s.axvline(0.5 / 2 ** level, color=color, ls="--", lw=1, label=f"new Nyquist, level {level}")
    ax_s.set_xlabel(spec["xlabel"])
    ax_s.set_ylabel(spec["ylabel"])
    ax_s.set_title(spec["title"])
    ax_s.legend(fontsize="small")
    ax_s.grid(True, alpha=0.3)
    leak = curves["leakage"]
    names = list(leak["series"])
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        pos = np.arange(len(leak["x"])) + (i - (len(names) - 1) / 2) * width
        leaks = values(leak["series"][name])
        bars = ax_l.bar(pos, 100 * leaks, width, label=name)
        for bar, v in zip(bars, leaks):
            ax_l.annotate(f"{v:.0e}" if v < 1e-4 else f"{100 * v:.1f}%", (bar.get_x() + width / 2, bar.get_height()),
                          ha="center", va="bottom", fontsize=7)
    ax_l.set_xticks(np.arange(len(leak["x"])), [f"level {lv}\n(stride {2 ** lv})" for lv in leak["x"]])
    ax_l.set_ylabel("leakage: % of output energy folded from above Nyquist", fontsize=9)
    ax_l.set_title(leak["title"])
    ax_l.legend(fontsize="small")
    ax_l.grid(True, axis="y", alpha=0.3)
    figures["leakage.png"] = fig

    mse_curves = [(k, v) for k, v in curves.items() if k.startswith("mse_")]
    if mse_curves:
        fig, axes = subplots(1, len(mse_curves), panel=(5.5, 4.0))
        for ax, (name, curve) in zip(axes[0], mse_curves):
            arms = list(curve["series"])
            width = 0.8 / len(arms)
            for i, arm in enumerate(arms):
                pos = np.arange(len(curve["x"])) + (i - (len(arms) - 1) / 2) * width
                ax.bar(pos, values(curve["series"][arm]), width, yerr=values(curve["std"][arm]), capsize=2,
                       label=arm)
            ax.set_xticks(np.arange(len(curve["x"])), [f"H={h}" for h in curve["x"]])
            finite = [v for ys in curve["series"].values() for v in values(ys) if np.isfinite(v)]
            if finite:
                ax.set_ylim(min(finite) * 0.9, max(finite) * 1.05)
            ax.set_ylabel(curve["ylabel"])
            ax.set_title(curve["title"])
            ax.grid(True, axis="y", alpha=0.3)
        axes[0][0].legend(fontsize="small")
        figures["forecast_mse.png"] = fig

    if "example_forecast" in curves:
        ex = curves["example_forecast"]
        fig, axes = subplots(1, 1, panel=(8.0, 3.5))
        ax = axes[0, 0]
        for arm, ys in ex["series"].items():
            ax.plot(values(ex["x"]), values(ys), lw=1.6 if arm == "truth" else 1.2,
                    color="k" if arm == "truth" else None, label=arm)
        ax.axvline(0.5, color="gray", ls=":")
        ax.set_xlabel(ex["xlabel"])
        ax.set_ylabel(ex["ylabel"])
        ax.set_title(ex["title"])
        ax.legend(fontsize="small")
        ax.grid(True, alpha=0.3)
        figures["example_forecast.png"] = fig

    panels = [k for k in ("ridge_aliasing", "strided_only", "time_family") if k in curves]
    if panels:
        fig, axes = subplots(1, len(panels), panel=(5.5, 4.0))
        for ax, name in zip(axes[0], panels):
            c = curves[name]
            for arm, ys in c["series"].items():
                ax.plot(values(c["x"]), values(ys), marker="o", ls=":" if "interval" in arm else "--"
                        if "naive" in arm or "no filter (" in arm else "-", label=arm)
            if c.get("logx"):
                ax.set_xscale("log", base=2)
            if name == "strided_only":
                ax.axhline(1.0, color="black", lw=0.8)
            ax.set_xlabel(c["xlabel"])
            ax.set_ylabel(c["ylabel"])
            ax.set_title(c["title"], fontsize=10)
            ax.legend(fontsize="small")
            ax.grid(True, alpha=0.3)
        figures["aliasing_diagnostics.png"] = fig
    return figures
