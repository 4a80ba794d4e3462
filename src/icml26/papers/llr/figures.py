"""LLR reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

from icml26.plotting import subplots, values

__all__ = ["plot"]

COLOURS = {"LLR": "#d62728", "uniform": "#1f77b4", "shuffled": "#7f7f7f", "LLR-mean": "#ff7f0e",
           "uniform-matched": "#17becf", "kind-static": "#9467bd", "embed-head": "#2ca02c",
           "kind-static-step0": "#8c564b"}


def _layer_style(name: str) -> dict[str, Any]:
    """Colour by matrix kind (attention blue, MLP red, embeddings grey), line style by block."""
    kinds = {"q_proj": "#08306b", "k_proj": "#2171b5", "v_proj": "#6baed6", "o_proj": "#9ecae1",
             "gate_proj": "#a50f15", "up_proj": "#ef3b2c", "down_proj": "#fc9272"}
    colour = next((c for k, c in kinds.items() if name.endswith(k)), "#737373")
    block = next((int(p) for p in name.split(".") if p.isdigit()), 0)
    return {"color": colour, "linestyle": ("-", "--", ":", "-.")[block % 4], "linewidth": 1.2}


def plot(data: dict) -> dict:
    """Three figures from the result JSON: loss over the rate grid, validation curves, alpha and multipliers."""
    curves = data["curves"]
    figures = {}

    grid = curves["final_loss_vs_lr"]
    fig, axes = subplots(1, 1, panel=(6.0, 4.2))
    ax = axes[0, 0]
    for arm, ys in grid["series"].items():
        ax.plot(values(grid["x"]), values(ys), marker="o", label=arm, color=COLOURS.get(arm))
    ax.set_xscale("log")
    ax.set_xlabel("base learning rate")
    ax.set_ylabel("final validation loss (nats)")
    ax.set_title("LLR vs uniform AdamW over the base-rate grid")
    ax.grid(True, alpha=0.3)
    ax.legend()
    figures["loss_vs_lr.png"] = fig

    panels = [k for k in curves if k.startswith("valid_lr")]
    fig, axes = subplots(1, len(panels), panel=(4.2, 3.8), sharey=True)
    for ax, key in zip(axes[0], panels):
        curve = curves[key]
        x = values(curve["x"])
        for arm, ys in curve["series"].items():
            ax.plot(x[1:], values(ys)[1:], label=arm, color=COLOURS.get(arm))
        finals = [values(ys)[-1] for ys in curve["series"].values()]
        ax.set_ylim(min(finals) - 0.1, max(finals) + 1.0)
        ax.set_title(key.replace("valid_lr", "base rate "))
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("validation loss (nats)")
    axes[0][-1].legend()
    figures["validation.png"] = fig

    fig, axes = subplots(1, 2, panel=(5.5, 4.2))
    left, right = axes[0]
    for ax, key, label in ((left, "alpha_per_layer", "ESD power-law alpha"),
                           (right, "multiplier_per_layer", "learning-rate multiplier")):
        curve = curves[key]
        for name, ys in curve["series"].items():
            ax.plot(values(curve["x"]), values(ys), marker=".", **_layer_style(name))
        ax.set_xlabel("step")
        ax.set_ylabel(label)
        ax.set_title(curve["title"].removeprefix("llr: "))
        ax.grid(True, alpha=0.3)
    from matplotlib.lines import Line2D

    legend = [Line2D([], [], **_layer_style(n)) for n in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                          "up_proj", "down_proj", "embed_tokens")]
    right.legend(legend, ["q", "k", "v", "o", "gate", "up", "down", "embed/head"], fontsize="small",
                 ncol=2, title="matrix (line style: block)")
    figures["alpha_and_multipliers.png"] = fig
    return figures
