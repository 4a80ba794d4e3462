"""RobuQ's figures, drawn from the result's JSON only."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from icml26.plotting import draw_curve, subplots, values

__all__ = ["plot"]


def _bars(ax, curve: Mapping[str, Any]) -> None:
    labels = [str(n).replace("blocks.", "b").replace("adaLN_modulation.1", "adaLN") for n in curve["labels"]]
    series = curve["series"]
    width = 0.8 / len(series)
    x = np.arange(len(labels))
    for i, (name, ys) in enumerate(series.items()):
        ax.bar(x + i * width, values(ys), width, label=name)
    ax.set_xticks(x + width * (len(series) - 1) / 2, labels, rotation=75, fontsize=7)
    ax.set_ylabel(curve.get("ylabel", ""))
    ax.set_title(curve.get("title", ""))
    if len(series) > 1:
        ax.legend(fontsize=8)


def plot(data: Mapping[str, Any]) -> dict[str, Any]:
    """``robuq.png`` (ε-MSE by t, QAT loss, accuracy vs Fréchet distance, kurtosis, AMPN bits) and
    ``samples.png`` (two samples per class for every arm)."""
    curves, metrics = data["curves"], data["metrics"]
    fig, axes = subplots(2, 3, panel=(5.0, 3.8))
    draw_curve(axes[0, 0], curves["eps_by_t"])
    draw_curve(axes[0, 1], curves["qat_loss"])
    ax = axes[0, 2]
    for arm, m in metrics.items():
        if "frechet_distance" in m and m["frechet_distance"] is not None:
            ax.scatter(m["frechet_distance"], m["class_accuracy"], label=arm)
            ax.annotate(arm, (m["frechet_distance"], m["class_accuracy"]), fontsize=7)
    if "real_data" in metrics:
        ax.axhline(metrics["real_data"]["class_accuracy"], color="grey", ls=":", label="real digits")
    ax.set_xscale("log")
    ax.set_xlabel("Fréchet distance (classifier features)")
    ax.set_ylabel("sample class accuracy")
    ax.set_title("500 DDIM samples per arm")
    _bars(axes[1, 0], curves["kurtosis"])
    _bars(axes[1, 1], curves["ampn"])
    ax = axes[1, 2]
    sens = np.asarray(curves["ampn"]["sensitivity"], dtype=float)
    im = ax.imshow(np.log10(np.maximum(sens, 1e-12)), aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(curves["ampn"]["bit_options"])), [f"{b} bit" for b in curves["ampn"]["bit_options"]])
    ax.set_ylabel("layer")
    ax.set_title("log10 sensitivity Δ_l(b) (RobuQ-A4 model)")
    fig.colorbar(im, ax=ax)

    samples = curves["samples"]["series"]
    shape = curves["samples"]["shape"]
    arms = list(samples)
    fig2, axes2 = subplots(len(arms), 1, panel=(8.0, 0.95))
    for ax, arm in zip(axes2[:, 0], arms):
        images = values(samples[arm]).reshape(shape)
        strip = np.concatenate([np.pad(im, 1, constant_values=-1) for im in images], axis=1)
        ax.imshow(strip, cmap="gray", vmin=-1, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_ylabel(arm, rotation=0, ha="right", va="center", fontsize=8)
    axes2[0, 0].set_title("two DDIM samples per class (0-9)")
    return {"robuq.png": fig, "samples.png": fig2}
