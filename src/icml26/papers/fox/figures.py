"""Fox reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

import numpy as np

from icml26.plotting import draw_curve, subplots, values

__all__ = ["plot"]

_LABELS = {"chair_i": "CHAIR_I", "chair_s": "CHAIR_S", "recall": "recall", "pope_adversarial_f1": "POPE-adv F1"}


def plot(data: dict) -> dict:
    """``arms.png`` (CHAIR, recall, POPE F1 by arm), ``training.png`` (where the curves hold the training loss:
    an aggregate of seeds stopped at the POPE target at different steps does not), ``heads.png`` (ablation vs probe),
    ``saturation.png`` (per head: saturation and ablation effects, probe selection)."""
    curves = data["curves"]
    figures = {}

    arms = curves["arms"]
    names = list(arms["x"])
    fig, axes = subplots(1, 1, panel=(7.5, 4.2))
    ax = axes[0, 0]
    width = 0.8 / max(1, len(arms["series"]))
    for j, (metric, ys) in enumerate(arms["series"].items()):
        pos = np.arange(len(names)) + (j - (len(arms["series"]) - 1) / 2) * width
        ax.bar(pos, values(ys), width=width, label=_LABELS.get(metric, metric))
        bands = arms.get("bands", {}).get(metric)
        if bands:
            low, high = values(bands[0]), values(bands[1])
            mid = values(ys)
            ax.errorbar(pos, mid, yerr=[mid - low, high - mid], fmt="none", ecolor="k", capsize=2)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel("fraction")
    ax.set_title("fox: hallucination (CHAIR, lower is better), recall and POPE-adversarial F1")
    ax.set_ylim(0, 1.08)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncols=4, loc="upper center")
    figures["arms.png"] = fig

    if "train_loss" in curves:  # absent from an aggregate whose seeds trained for different step counts
        fig, axes = subplots(1, 1, panel=(6.0, 4.0))
        draw_curve(axes[0, 0], curves["train_loss"])
        figures["training.png"] = fig

    for prefix, name in (("heads_layer", "heads.png"), ("saturation_layer", "saturation.png")):
        panels = [k for k in curves if k.startswith(prefix)]
        if panels:
            figures[name] = _head_bars(curves, panels)
    return figures


def _head_bars(curves: dict, keys: list[str]):
    """One panel per layer: a bar per head and series (ablation / saturation drop, probe selection rate)."""
    cols = min(2, len(keys))
    rows = -(-len(keys) // cols)
    fig, axes = subplots(rows, cols, panel=(5.5, 3.6))
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, keys):
        curve = curves[key]
        x = values(curve["x"])
        n = len(curve["series"])
        for j, (name, ys) in enumerate(curve["series"].items()):
            ax.bar(x + (j - (n - 1) / 2) * 0.8 / n, values(ys), width=0.8 / n, label=name)
        ax.set_xlabel("head")
        ax.set_title(curve.get("title", key), fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return fig
