"""ConfSleepNet reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.papers.confsleepnet.opinion import STAGES
from icml26.plotting import subplots, values

__all__ = ["plot"]

STYLES = {"conflict_aware": dict(color="tab:red", lw=2.2), "dempster_tmc": dict(color="tab:blue"),
          "rcml_average": dict(color="tab:green"), "conflict_aware_unsorted": dict(color="tab:red", ls=":"),
          "conflict_aware_eog5": dict(color="tab:orange", ls="--"),
          "late_concat_softmax": dict(color="tab:gray", ls="-."),
          "conflict_aware_common": dict(color="tab:purple", ls="--"),
          "ceiling (all corruptions)": dict(color="k", ls=":")}


def plot(data: dict[str, Any]) -> dict[str, Any]:
    """Figures from the result JSON: coverage curves, metrics vs pi, and one night."""
    curves = data["curves"]
    figures: dict[str, Any] = {}

    cov = sorted((k for k in curves if k.startswith("coverage_pi")), key=lambda k: float(k[len("coverage_pi"):]))
    fig, axes = subplots(1, len(cov), panel=(5.2, 4.2))
    for ax, name in zip(axes[0], cov):
        c = curves[name]
        for arm, ys in c["series"].items():
            ax.plot(values(c["x"]), values(ys), label=arm, **STYLES.get(arm, {}))
        ax.axvline(data["config"]["coverage"], color="k", lw=0.8, ls=":")
        ax.set_xlabel("coverage (least uncertain first)")
        ax.set_title(c["title"], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("accuracy")
    axes[0][-1].legend(fontsize="small")
    figures["accuracy_vs_coverage.png"] = fig

    panels = [k for k in ("acc_vs_pi", "mf1_vs_pi", "kappa_vs_pi", "auroc_vs_pi") if k in curves]
    fig, axes = subplots(1, len(panels), panel=(4.3, 3.8))
    for ax, name in zip(axes[0], panels):
        c = curves[name]
        for arm, ys in c["series"].items():
            ax.plot(values(c["x"]), values(ys), marker="o", label=arm, **STYLES.get(arm, {}))
        ax.set_xlabel(c["xlabel"])
        ax.set_ylabel(c["ylabel"], fontsize=8)
        ax.set_title(c["title"], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="x-small")
    figures["metrics_vs_corruption.png"] = fig

    example = curves.get("example_night")
    # a multi-seed aggregate averages the night's stages into fractions: no single night to draw then
    if example and all(float(v).is_integer() for v in example["series"]["truth"] if v is not None):
        ex = curves["example_night"]["series"]
        x = values(curves["example_night"]["x"])
        fig, axes = subplots(2, 1, panel=(11.0, 2.5), sharex=True, gridspec_kw={"height_ratios": [1.2, 1]})
        ax_h, ax_u = axes[0, 0], axes[1, 0]
        corrupted = np.asarray(ex["corrupted"], dtype=bool)
        for ax in (ax_h, ax_u):
            for i in np.flatnonzero(corrupted):
                ax.axvspan(i - 0.5, i + 0.5, color="gold", alpha=0.35, lw=0)
        order = [0, 4, 1, 2, 3]  # draw W, REM, N1, N2, N3 top to bottom
        level = {s: -order.index(s) for s in range(5)}
        ax_h.step(x, [level[s] for s in ex["truth"]], where="mid", color="k", lw=1.4, label="truth")
        ax_h.step(x, [level[s] for s in ex["conflict_aware_pred"]], where="mid", color="tab:red", lw=0.9,
                  alpha=0.8, label="conflict-aware")
        ax_h.set_yticks([level[s] for s in range(5)], [STAGES[s] for s in range(5)])
        ax_h.legend(fontsize="small", loc="upper right", ncol=2)
        ax_h.set_title(curves["example_night"]["title"] + "; shaded: corrupted EOG", fontsize=10)
        for arm in ("conflict_aware", "dempster_tmc", "rcml_average"):
            ax_u.semilogy(x, values(ex[f"{arm}_u"]), lw=1, label=arm,
                          **{k: v for k, v in STYLES[arm].items() if k != "lw"})
        ax_u.set_ylabel("fused uncertainty u")
        ax_u.set_xlabel("30-s epoch")
        ax_u.legend(fontsize="small", loc="upper right", ncol=3)
        figures["example_night.png"] = fig

    if "auroc_per_mode" in curves:
        c = curves["auroc_per_mode"]
        fig, axes = subplots(1, 1, panel=(6.0, 4.0))
        ax = axes[0, 0]
        modes = list(c["x"])
        width = 0.8 / max(1, len(c["series"]))
        for i, (name, ys) in enumerate(c["series"].items()):
            ax.bar(np.arange(len(modes)) + (i - (len(c["series"]) - 1) / 2) * width,
                   [np.nan if v is None else v for v in ys], width, label=name)
        ax.set_xticks(np.arange(len(modes)), modes)
        ax.set_ylim(0.4, 1.0)
        ax.set_ylabel(c["ylabel"])
        ax.set_title(c["title"], fontsize=10)
        ax.legend(fontsize="x-small")
        figures["auroc_per_mode.png"] = fig
    return figures
