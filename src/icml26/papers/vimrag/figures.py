"""VimRAG reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

from icml26.plotting import draw_curve, subplots

__all__ = ["plot"]


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """``budget.png`` (accuracy and critical density vs budget), ``sweep.png`` (the 40 % gain vs relevance noise
    and vs structure) and ``ggpo.png`` (success and redundant searches; with a redundant-search penalty also the penalised return and
    the steps per episode)."""
    curves = data["curves"]
    figures: dict[str, Any] = {}
    if "accuracy_vs_budget" in curves:
        fig, axes = subplots(1, 2, panel=(5.5, 4.0))
        for ax, name in zip(axes[0], ("accuracy_vs_budget", "critical_density")):
            draw_curve(ax, curves[name])
            for line in ax.get_lines():
                if line.get_label() == "oracle":
                    line.set_linestyle("--")
                    line.set_color("gray")
            ax.legend(fontsize="small")
        figures["budget.png"] = fig
    sweeps = [name for name in ("gain_vs_noise", "gain_vs_structure") if name in curves]
    if sweeps:
        fig, axes = subplots(1, len(sweeps), panel=(5.5, 4.0))
        for ax, name in zip(axes[0], sweeps):
            draw_curve(ax, curves[name])
            ax.axhline(0.0, color="gray", ls=":", lw=1)
            ax.legend(fontsize="small")
        figures["sweep.png"] = fig
    if "ggpo_success" in curves:
        extra = [name for name in ("ggpo_return", "ggpo_steps") if name in curves]  # the penalised run's
        fig, axes = subplots(1, 2 + len(extra), panel=(5.5, 4.0))
        draw_curve(axes[0][0], curves["ggpo_success"])
        axes[0][0].axhline(0.8, color="gray", ls=":", lw=1)
        for ax, name in zip(axes[0][1:], ["ggpo_redundant", *extra]):
            draw_curve(ax, curves[name])
        figures["ggpo.png"] = fig
    return figures
