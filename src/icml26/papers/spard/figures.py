"""SPARD reproduction figures, drawn from the result JSON only (:mod:`icml26.plotting`)."""

from __future__ import annotations

from icml26.plotting import draw_curve, subplots

__all__ = ["plot"]

_MAIN_ARMS = ("SFT", "SafeInstr (random data)", "penalty (random data)", "Lisa (random data)",
              "SPAG+random", "SPAG+top-k", "SPARD-reference_adamw", "SPARD")


def _headline(metrics: dict) -> dict[str, dict]:
    """The arms at the headline ratio, in a fixed order (labels without the ``p=…``)."""
    spard = next(k for k in metrics if k.startswith("SPARD p="))
    p = spard.split("p=")[1]
    rows = {}
    for arm in _MAIN_ARMS:
        key = arm if arm in metrics else f"{arm} p={p}"
        if key in metrics:
            rows[arm] = metrics[key]
    return rows


def plot(data: dict) -> dict:
    """ASR and task accuracy per arm; ASR and coverage by selection rule; the text section if run."""
    metrics, curves = data["metrics"], data["curves"]
    figures = {}

    rows = _headline(metrics)
    fig, axes = subplots(1, 2, panel=(5.6, 4.0))
    names = list(rows)
    for ax, metric, label in ((axes[0, 0], "asr", "attack success rate (held-out harmful)"),
                              (axes[0, 1], "task_acc", "task accuracy (shifted 0-6)")):
        vals = [rows[n][metric] for n in names]
        colours = ["#d62728" if n == "SPARD" else "#7f7f7f" if n == "SFT" else "#1f77b4" for n in names]
        ax.barh(range(len(names)), vals, color=colours)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(label)
        ax.grid(True, axis="x", alpha=0.3)
        if metric == "task_acc":
            ax.set_xlim(min(vals) - 0.05, 1.0)
    axes[0, 0].set_title("spard: arms at the headline safety ratio", fontsize=9)
    figures["arms.png"] = fig

    fig, axes = subplots(1, 2, panel=(5.0, 3.8))
    draw_curve(axes[0, 0], curves["asr_vs_ratio"])
    draw_curve(axes[0, 1], curves["coverage_vs_ratio"])
    figures["selection.png"] = fig

    if "front_asr" in curves and "front_task_acc" in curves:
        figures["front.png"] = _front(metrics, curves)

    text = [k for k in ("text_areas", "text_intents", "text_reference_area_share", "text_logdet") if k in curves]
    if text:
        fig, axes = subplots(1, len(text), panel=(4.2, 3.6))
        for ax, key in zip(axes[0], text):
            draw_curve(ax, curves[key], title=curves[key]["ylabel"])
        figures["text_selection.png"] = fig
    return figures


def _front(metrics: dict, curves: dict):
    """ASR against task accuracy over each defence's grid (the tuned front), the tuned choice ringed,
    the matched task accuracy as a dashed line."""
    asr, acc = curves["front_asr"], curves["front_task_acc"]
    extra = asr.get("extra", {})
    fig, axes = subplots(1, 1, panel=(6.4, 4.6))
    ax = axes[0, 0]
    palette = {"SPARD": "#d62728", "SPAG+random": "#ff9896", "SafeInstr (random data)": "#1f77b4",
               "penalty (random data)": "#2ca02c", "Lisa (random data)": "#9467bd"}
    for arm, ys in asr["series"].items():
        xs = acc["series"][arm]
        line, = ax.plot(xs, ys, marker="o", lw=2.2 if arm == "SPARD" else 1.2, color=palette.get(arm), label=arm)
        tuned = metrics.get(f"tuned {arm}")
        if tuned:
            ax.scatter([tuned["task_acc"]], [tuned["asr"]], s=140, facecolors="none", edgecolors=line.get_color())
    if "matched_task_acc" in extra:
        ax.axvline(extra["matched_task_acc"], ls="--", color="#7f7f7f", lw=1, label="SFT - match_points")
    if "SFT" in metrics:
        ax.scatter([metrics["SFT"]["task_acc"]], [metrics["SFT"]["asr"]], marker="x", color="k", label="SFT")
    ax.set_xlabel("task accuracy (shifted 0-6, scored replicates)")
    ax.set_ylabel("attack success rate")
    ax.set_title("spard: each defence over its grid (ringed: tuned on development replicates)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig
