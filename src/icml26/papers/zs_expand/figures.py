"""zs_expand figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.plotting import draw_curve, subplots, values

__all__ = ["plot"]


def _bars(ax, curve: dict[str, Any]) -> None:
    arms = list(curve["series"])
    width = 0.85 / max(len(arms), 1)
    bands = curve.get("bands") or {}
    for i, arm in enumerate(arms):
        pos = np.arange(len(curve["x"])) + (i - (len(arms) - 1) / 2) * width
        ys = values(curve["series"][arm])
        err = None
        if arm in bands:
            lo, hi = values(bands[arm][0]), values(bands[arm][1])
            err = np.abs(np.vstack([ys - lo, hi - ys]))
        ax.bar(pos, ys, width, yerr=err, capsize=2, label=arm)
    ax.set_xticks(np.arange(len(curve["x"])), [str(x) for x in curve["x"]], fontsize=8)
    ax.set_ylabel(curve.get("ylabel", ""))
    ax.set_xlabel(curve.get("xlabel", ""))
    ax.set_title(curve.get("title", ""), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """``accuracy.png`` (ZSL by subset, GZSL S/U/H), ``invariance.png`` (variance, group count) and,
    with the real section, ``real.png``."""
    curves = data["curves"]
    figures: dict[str, Any] = {}
    if "zsl" in curves and "gzsl" in curves:
        fig, axes = subplots(1, 2, panel=(6.5, 4.2))
        _bars(axes[0, 0], curves["zsl"])
        _bars(axes[0, 1], curves["gzsl"])
        axes[0, 1].legend(fontsize=7, ncol=2)
        figures["accuracy.png"] = fig
    if "variance" in curves:
        fig, axes = subplots(1, 2, panel=(6.0, 4.0))
        var = curves["variance"]
        arms = var["x"]
        ys = values(var["series"]["relative variance"])
        ax = axes[0, 0]
        ax.bar(np.arange(len(arms)), ys, color="tab:purple")
        band = (var.get("bands") or {}).get("relative variance")
        if band:
            lo, hi = values(band[0]), values(band[1])
            ax.errorbar(np.arange(len(arms)), ys, yerr=np.abs(np.vstack([ys - lo, hi - ys])), fmt="none", c="k")
        ax.set_xticks(np.arange(len(arms)), arms, rotation=30, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(var["ylabel"])
        ax.set_title(var["title"], fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        if "group_count" in curves:
            draw_curve(axes[0, 1], curves["group_count"])
        figures["invariance.png"] = fig
    if "real_zsl" in curves:
        fig, axes = subplots(1, 1, panel=(7.0, 4.0))
        _bars(axes[0, 0], curves["real_zsl"])
        axes[0, 0].legend(fontsize=7, ncol=2)
        figures["real.png"] = fig
    return figures
