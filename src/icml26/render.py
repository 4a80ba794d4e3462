"""A result's figures as PNG bytes: the paper's ``plot(data)`` (or one figure per curve), drawn headless
from the result's JSON only."""

from __future__ import annotations

import io
from typing import Any

from icml26 import registry
from icml26.results import plot_curves

__all__ = ["render_figures", "render_with"]


def render_figures(key: str, data: dict[str, Any]) -> dict[str, bytes]:
    """The paper's figures for a result (its ``plot``, or one figure per curve), as PNG bytes."""
    module = registry.get(key).load_experiment()
    plotter = getattr(module, "plot", None) or plot_curves
    return render_with(plotter, data)


def render_with(plotter, data: dict[str, Any]) -> dict[str, bytes]:
    """``plotter(data)``'s figures as PNG bytes, ``{name.png: bytes}`` (headless)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rendered = {}
    for name, fig in plotter(data).items():
        if not name.endswith(".png"):
            name = f"{name}.png"
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110)
        plt.close(fig)
        rendered[name] = buffer.getvalue()
    return rendered
