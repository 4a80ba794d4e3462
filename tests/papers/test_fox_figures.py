"""Fox's figures from a committed aggregate, and from one whose seeds stopped training at different steps
(the pathology run's POPE target): there the training curve cannot be averaged and is left out, while the
other figures are still the paper's own (not the aggregator's fallback)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from icml26.papers.fox.figures import plot

RESULT = Path(__file__).resolve().parents[2] / "results" / "fox" / "result.json"


def test_figures_with_and_without_the_training_curve():
    import matplotlib.pyplot as plt

    data = json.loads(RESULT.read_text())
    assert "train_loss" in data["curves"]
    full = plot(data)
    assert {"arms.png", "training.png", "heads.png", "saturation.png"} <= set(full)
    cut = copy.deepcopy(data)
    del cut["curves"]["train_loss"]
    figures = plot(cut)
    assert "training.png" not in figures and set(figures) == set(full) - {"training.png"}
    for fig in (*full.values(), *figures.values()):
        plt.close(fig)
