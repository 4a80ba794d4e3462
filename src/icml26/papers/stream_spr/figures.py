"""stream_spr reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.plotting import draw_curve, subplots, values

__all__ = ["LABELS", "plot"]

LABELS = {"spr_orth2": "Stream Q(λ)+SPR+orth+orth²", "spr_naive": "Stream Q(λ)+SPR (naive)",
          "spr_authors": "SPR+orth+orth², authors' configuration", "stream_q": "Stream Q(λ)"}


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """An overview panel (curves, SPR loss, cosine, ranks) plus one figure per curve."""
    figures = {}
    if "returns_by_seed" in data["curves"]:
        figures["returns_by_seed.png"] = _returns_by_seed(data)
    for name, curve in data["curves"].items():
        if name == "returns_by_seed":
            continue
        fig, axes = subplots(panel=(6.0, 4.0))
        draw_curve(axes[0, 0], {"ylabel": name, **curve}, title=curve.get("title", f"{data['paper']}: {name}"))
        figures[f"{name}.png"] = fig
    curves = data["curves"]
    fig, axes = subplots(2, 2, panel=(5.5, 3.75))
    colors = {LABELS["spr_orth2"]: "tab:red", LABELS["spr_naive"]: "tab:orange", LABELS["stream_q"]: "tab:blue",
              LABELS["spr_authors"]: "tab:purple"}

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


def _returns_by_seed(data: dict[str, Any]):
    """One panel per game: each arm's last-10% return on every seed, a line joining a seed's arms."""
    curve = data["curves"]["returns_by_seed"]
    arms = list(data["metrics"])
    games = list(data["config"]["games"])
    fig, axes = subplots(1, len(games), panel=(3.2, 3.4))
    for ax, game in zip(axes[0], games):
        table = np.array([values(curve["series"][f"{a} · {game}"]) for a in arms], dtype=float)  # arms x seeds
        xs = np.arange(len(arms))
        for seed in range(table.shape[1]):
            ax.plot(xs, table[:, seed], color="0.6", lw=1, marker="o", ms=5, zorder=1)
        ax.scatter(xs, np.nanmean(table, axis=1), marker="_", s=600, color="k", zorder=2, label="mean over seeds")
        ax.set_xticks(xs, [LABELS.get(a, a).replace("Stream Q(λ)+", "").replace("Stream Q(λ)", "Stream Q")
                           for a in arms], fontsize="small")
        ax.set_xlim(-0.5, len(arms) - 0.5)
        ax.set_title(f"MinAtar {game}", fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].set_ylabel(curve.get("ylabel", "return"))
    axes[0, 0].legend(fontsize="small")
    fig.suptitle(f"stream_spr ({data['setting']}, {data['config']['total_steps']:,} steps): "
                 f"last-10% return per seed (grey lines pair a seed's arms)")
    return fig
