"""The robust_ntp figure, drawn from a result's JSON only."""

from __future__ import annotations

from icml26.plotting import line, subplots, values

__all__ = ["plot"]


def plot(data: dict) -> dict:
    """``{"robust_ntp.png": Figure}``: regret per round vs T (with the students), and the regret curves."""
    fig, axes = subplots(1, 2, panel=(5.5, 4.2))
    ax, ax2 = axes[0]
    curve = data["curves"]["regret_per_round"]
    for arm, ys in curve["series"].items():
        line(ax, curve["x"], ys, label=arm)
    t_d = data["config"]["distill_horizon"]
    for arm, marker in (("distilled_raw", "s"), ("distilled_robust", "D")):
        ax.scatter([t_d], values([data["metrics"][arm].get(f"regret_per_round_T{t_d}")]), marker=marker, s=50,
                   label=f"{arm} (transformer)", zorder=3)
    ax.set_xscale("log")
    ticks = sorted(set(curve["x"]) | {t_d})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel(curve["xlabel"])
    ax.set_ylabel(curve["ylabel"])
    ax.set_title(curve["title"], fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    rc = data["curves"]["regret_curve"]
    for arm, ys in rc["series"].items():
        line(ax2, rc["x"], ys, label=arm)
    if rc.get("trigger"):
        ax2.axvline(rc["trigger"], color="k", ls="--", lw=1, label="fallback triggers")
    ax2.set_xlabel(rc["xlabel"])
    ax2.set_ylabel(rc["ylabel"])
    ax2.set_title(rc["title"], fontsize=9)
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize="small")
    out = {"robust_ntp.png": fig}
    bc = data["curves"].get("budget_curve")
    if bc:
        fig2, axes2 = subplots(1, 1, panel=(5.5, 4.0))
        ax3 = axes2[0, 0]
        for name, ys in bc["series"].items():
            ax3.plot(values(bc["x"]), values(ys), marker="o", ls="", label=name)
        ax3.axhline(0.5, color="k", ls="--", lw=1, label="bar (< 0.5)")
        ax3.set_xticks(values(bc["x"]), bc["labels"], fontsize=7)
        ax3.set_xlabel(bc["xlabel"])
        ax3.set_ylabel(bc["ylabel"])
        ax3.set_title(bc["title"], fontsize=9)
        ax3.grid(True, alpha=0.3)
        ax3.legend(fontsize="small")
        out["budget_curve.png"] = fig2
    return out
