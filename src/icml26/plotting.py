"""The one plotting helper of the reproductions: figures drawn from a result's JSON only.

A paper's ``plot(data) -> {file name: Figure}`` (in ``experiment.py`` or ``figures.py``) uses:

* :func:`subplots`: a constrained-layout figure on the non-interactive ``Agg`` backend
  (selected here, once, for every paper);
* :func:`values`: a JSON list with ``null`` gaps as a float array (NaN gaps);
* :func:`line`: one series, optionally with a band (``lower``/``upper``, e.g. a 95 %
  interval over seeds) — how every multi-seed curve is drawn;
* :func:`draw_curve`: a whole ``{"x", "series", "xlabel", "ylabel", "title", "logx", "logy",
  "bands"?}`` curve of the result on one axis (``bands``: ``{arm: [lower, upper]}``).

:func:`icml26.results.plot_curves` (the default when a paper has no ``plot``) draws every
curve with :func:`draw_curve`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["draw_curve", "line", "subplots", "values"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def subplots(nrows: int = 1, ncols: int = 1, *, panel: tuple[float, float] = (5.2, 4.0), **kwargs: Any):
    """``(figure, axes)`` with ``axes`` always a 2-D array; ``panel`` is one panel's (width, height)."""
    if nrows < 1 or ncols < 1:
        raise ValueError(f"nrows={nrows} and ncols={ncols} must be at least 1")
    plt = _pyplot()
    kwargs.setdefault("figsize", (panel[0] * ncols, panel[1] * nrows))
    kwargs.setdefault("layout", "constrained")
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def values(seq: Sequence[Any] | None) -> np.ndarray:
    """A JSON list (``None`` for gaps) as float64 with NaN gaps."""
    if seq is None:
        return np.array([], dtype=float)
    return np.array([np.nan if v is None else v for v in seq], dtype=float)


def line(ax, x: Sequence[Any], y: Sequence[Any], *, label: str | None = None,
         lower: Sequence[Any] | None = None, upper: Sequence[Any] | None = None, **kwargs: Any):
    """Plot ``y`` against ``x`` with an optional shaded band between ``lower`` and ``upper``.

    Categorical ``x`` (any string among its values, e.g. corruption modes) is drawn at positions
    0, 1, … with the categories as tick labels.
    """
    if any(isinstance(v, str) for v in x):
        labels = [str(v) for v in x]
        x_ = np.arange(len(labels), dtype=float)
        ax.set_xticks(x_)
        ax.set_xticklabels(labels, rotation=30 if max(map(len, labels), default=0) > 6 else 0)
    else:
        x_ = values(x)
    y_ = values(y)
    if len(x_) <= 12:
        kwargs.setdefault("marker", "o")
        kwargs.setdefault("markersize", 3)
    (handle,) = ax.plot(x_, y_, label=label, **kwargs)
    if lower is not None and upper is not None:
        ax.fill_between(x_, values(lower), values(upper), color=handle.get_color(), alpha=0.2, linewidth=0)
    return handle


def draw_curve(ax, curve: Mapping[str, Any], *, title: str | None = None) -> None:
    """Draw a result curve (every arm, with its band when the curve has ``bands``)."""
    bands = curve.get("bands") or {}
    for arm, ys in curve["series"].items():
        band = bands.get(arm)
        line(ax, curve["x"], ys, label=arm, lower=band[0] if band else None, upper=band[1] if band else None)
    if curve.get("logx"):
        ax.set_xscale("log")
    if curve.get("logy"):
        ax.set_yscale("log")
    ax.set_xlabel(curve.get("xlabel", "x"))
    ax.set_ylabel(curve.get("ylabel", ""))
    ax.set_title(title if title is not None else curve.get("title", ""), fontsize=9)
    ax.grid(True, alpha=0.3)
    if curve["series"]:
        ax.legend(fontsize="small")
