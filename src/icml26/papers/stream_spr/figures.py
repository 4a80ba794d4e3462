"""stream_spr reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.plotting import draw_curve, subplots, values

__all__ = ["LABELS", "plot"]

LABELS = {"spr_orth2": "Stream Q(λ)+SPR+orth+orth²", "spr_naive": "Stream Q(λ)+SPR (naive)",
          "stream_q": "Stream Q(λ)"}


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """An overview panel (curves, SPR loss, cosine, ranks) plus one figure per curve."""
    figures = {}
    for name, curve in data["curves"].items():
        fig, axes = subplots(panel=(6.0, 4.0))
        draw_curve(axes[0, 0], {"ylabel": name, **curve}, title=curve.get("title", f"{data['paper']}: {name}"))
        figures[f"{name}.png"] = fig
    curves = data["curves"]
    fig, axes = subplots(2, 2, panel=(5.5, 3.75))
    colors = {LABELS["spr_orth2"]: "tab:red", LABELS["spr_naive"]: "tab:orange", LABELS["stream_q"]: "tab:blue"}

    def draw(ax, curve, **kw):
        x = values(curve["x"])
        for name, ys in curve["series"].items():
            ax.plot(x, values(ys), label=name, color=colors.get(name), **kw)
        ax.set_xlabel(curve.get("xlabel", ""))
        ax.set_ylabel(curve.get("ylabel", ""))
        ax.grid(True, alpha=0.3)

    learning = next(k for k in curves if k.startswith("learning_curve"))
    draw(axes[0, 0], curves[learning])
    axes[0, 0].set_title(curves[learning]["title"], fontsize="medium")
    axes[0, 0].legend(fontsize="small")
    draw(axes[0, 1], curves["spr_loss"])
    axes[0, 1].axhline(-0.8, color="k", ls="--", lw=1, label="bar −0.8")
    axes[0, 1].axvline(data["config"]["loss_window"], color="gray", ls=":", lw=1)
    axes[0, 1].set_title("SPR loss", fontsize="medium")
    axes[0, 1].legend(fontsize="small")
    ax = axes[1, 0]
    for name, ys in curves["encoder_cosine"]["series"].items():
        ax.plot(values(curves["encoder_cosine"]["x"]), values(ys), label=name)
    ax.axhline(1e-4, color="k", ls="--", lw=1, label="bar 1e-4")
    ax.set_yscale("log")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("|cos| (bin mean)")
    ax.set_title("SPR vs ObGD encoder update", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax = axes[1, 1]
    arms = list(data["metrics"])
    keys = ["srank_latent", "erank_latent", "srank_hidden", "erank_hidden"]
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        vals = [data["metrics"][arm][k] for k in keys]
        ax.bar(np.arange(len(keys)) + i * width, values(vals), width, label=LABELS.get(arm, arm),
               color=colors.get(LABELS.get(arm, arm)))
    ax.set_xticks(np.arange(len(keys)) + width * (len(arms) - 1) / 2, keys, fontsize="small")
    ax.set_title("effective rank on the fixed probe set", fontsize="medium")
    finite = [v for a in arms for k in keys if (v := data["metrics"][a][k]) is not None and np.isfinite(v)]
    if finite:
        ax.set_ylim(0, 1.25 * max(finite))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", ncols=len(arms))
    fig.suptitle(f"stream_spr ({data['setting']}, seed {data['seed']})")
    figures["overview.png"] = fig
    return figures
