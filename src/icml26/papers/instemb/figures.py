"""Figures of the InstEmb reproduction, drawn from the result's JSON only."""

from __future__ import annotations

from typing import Any

from icml26.plotting import draw_curve, subplots

__all__ = ["plot"]

_METRICS = (("nmi", "k-means NMI (higher is better)"), ("spearman", "Inst-STS Spearman (higher is better)"),
            ("sensitivity", "instruction sensitivity (lower is better)"))


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """``metrics.png``: the three metrics per arm; one PNG per loss curve."""
    metrics = {arm: m for arm, m in data["metrics"].items() if "nmi" in m}
    arms = list(metrics)
    fig, axes = subplots(1, 3, panel=(max(4.5, 0.55 * len(arms) + 1.5), 4.6))
    for ax, (key, title) in zip(axes[0], _METRICS):
        vals = [metrics[a].get(key) for a in arms]
        colors = ["tab:blue" if i == 0 else "tab:gray" for i in range(len(arms))]
        ax.bar(range(len(arms)), [float("nan") if v is None else v for v in vals], color=colors)
        ax.set_xticks(range(len(arms)), arms, rotation=60, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"InstEmb on AttrWorld ({data.get('setting', '')}, seed {data.get('seed', '')}); "
                 f"first bar: the method")
    figures = {"metrics.png": fig}
    for name, curve in data.get("curves", {}).items():
        fig, axes = subplots(panel=(6.0, 4.0))
        draw_curve(axes[0, 0], curve)
        figures[f"{name}.png"] = fig
    return figures
