"""The lmcleaner figures, drawn from a result's JSON only (a single seed's, or a sweep's aggregate with
95 % bands over seeds)."""

from __future__ import annotations

from typing import Any

from icml26.plotting import line, subplots, values

__all__ = ["plot"]


def _band(curve: dict, name: str) -> dict[str, Any]:
    band = (curve.get("bands") or {}).get(name)
    return {"lower": band[0], "upper": band[1]} if band else {}


def plot(data: dict) -> dict[str, Any]:
    """Residual-vs-window grid, residual-vs-cost frontier, accuracy/MIA vs lag, cost, noise and ledger."""
    curves = data["curves"]
    figures = {}
    residual = sorted(n for n in curves if n.startswith("residual_"))
    kinds = sorted({n.split("_")[1] for n in residual}, key=lambda s: s != "softmax")
    lags = sorted({int(n.rsplit("_L", 1)[1]) for n in residual})
    fig, axes = subplots(len(kinds), len(lags), panel=(4.2, 3.4))
    for i, kind in enumerate(kinds):
        for j, lag in enumerate(lags):
            ax = axes[i][j]
            curve = curves[f"residual_{kind}_L{lag}"]
            for name, ys in curve["series"].items():
                style = "--" if "floor" in name else "-"
                line(ax, curve["x"], ys, label=name, ls=style, **_band(curve, name))
            ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="no-op (= 1)")
            ax.set_yscale("log")
            ax.set_xscale("symlog", linthresh=1)
            ax.set_xlim(left=0)
            ax.set_title(curve["title"])
            ax.set_xlabel("truncation window K")
            if j == 0:
                ax.set_ylabel("relative residual")
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("LMCleaner: residual ‖θ̂_K − θ_ideal‖ / ‖θ[τ] − θ_ideal‖ (1 = no-op)")
    figures["residual_vs_window.png"] = fig

    frontier = sorted((n for n in curves if n.startswith("frontier_L")), key=lambda n: int(n[len("frontier_L"):]))
    if frontier:
        fig, axes = subplots(1, len(frontier), panel=(4.4, 3.6))
        for ax, name in zip(axes[0], frontier):
            curve = curves[name]
            s = curve["series"]
            for label, colour in (("LMCleaner", "C0"), ("LMCleaner + tail", "C2")):
                ax.plot(values(s[f"{label} cost"]), values(s[f"{label} residual"]), "-o", ms=3, color=colour,
                        label=f"{label} (K = {curve['x'][0]} … {curve['x'][-1]})")
            replay_cost, retrain_cost = curve["replay"][0], curve["retrain"][0]
            if replay_cost is not None:
                ax.axvline(replay_cost, color="C1", ls="--", label="replay (residual 0)")
            if retrain_cost is not None:
                ax.axvline(retrain_cost, color="C3", ls=":", label="retrain (residual 0)")
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("calibrated gradient-equivalents")
            ax.set_ylabel("relative residual")
            ax.set_title(curve["title"], fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize="x-small")
        fig.suptitle("Residual vs cost: truncation alone, with the public-data tail, and exact replay")
        figures["frontier.png"] = fig

    fig, axes = subplots(len(kinds), 2, panel=(5.0, 3.4))
    for i, kind in enumerate(kinds):
        for j, metric in enumerate(("acc", "mia")):
            curve = curves[f"{metric}_{kind}"]
            ax = axes[i][j]
            for name, ys in curve["series"].items():
                line(ax, curve["x"], ys, label=name, **_band(curve, name))
            ax.set_xscale("log")
            ax.set_title(curve["title"])
            ax.set_xlabel("lag L")
            ax.grid(True, alpha=0.3)
    axes[0][1].legend(fontsize="x-small")
    figures["utility_and_mia.png"] = fig

    fig, grid = subplots(1, 3, panel=(5.0, 3.8))
    axes = grid[0]
    cost = curves["cost"]
    colours = {"lmcleaner": "C0", "lmcleaner_tail": "C2", "replay": "C1", "retrain": "C3"}
    for name, ys in cost["series"].items():
        arm = name.split(" ")[0]
        line(axes[0], cost["x"], ys, ls="-" if "measured" in name else "--", color=colours.get(arm), label=name)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("lag L")
    axes[0].set_ylabel("ms: measured (solid) / cost model (dashed)")
    axes[0].set_title(cost["title"])
    axes[0].legend(fontsize="xx-small")
    axes[0].grid(True, alpha=0.3)
    noise = curves["noise"]
    accuracy = values(noise["series"]["test accuracy"])
    axes[1].bar(range(len(noise["x"])), accuracy, color=[f"C{i}" for i in range(len(noise["x"]))])
    for i, v in enumerate(accuracy):
        axes[1].text(i, v + 0.01, f"{v:.3f}", ha="center", fontsize="small")
    axes[1].set_ylim(0, 1.08)
    axes[1].set_xticks(range(len(noise["x"])), noise["x"], rotation=20, fontsize="small")
    axes[1].set_ylabel("test accuracy")
    axes[1].set_title(noise["title"], fontsize=9)
    ledger = curves["ledger"]
    for name, ys in ledger["series"].items():
        line(axes[2], ledger["x"], ys, label=name)
    axes[2].set_xscale("log")
    axes[2].set_yscale("log")
    axes[2].set_xlabel(ledger["xlabel"])
    axes[2].set_ylabel(ledger["ylabel"])
    axes[2].set_title(ledger["title"])
    axes[2].legend(fontsize="small")
    axes[2].grid(True, alpha=0.3)
    figures["cost_noise_ledger.png"] = fig
    return figures
