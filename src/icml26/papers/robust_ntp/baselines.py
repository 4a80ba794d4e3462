"""The reproduction's baselines, as drop-in alternatives to :class:`~.robustify.Robustified`.

Each takes ``(model, loss, beta, threshold)`` and returns a :class:`~.models.NextTokenModel`:

* :func:`unrobustified` — the original model D itself (what robustification is measured against);
* :func:`windowed_robustified` — D′ with its context cut to the last ``window`` tokens: the
  bounded-context setting in which the paper proves robustification impossible.
"""

from __future__ import annotations

import numpy as np

from icml26.papers.robust_ntp.learner import check_loss
from icml26.papers.robust_ntp.models import NextTokenModel, _check_model, windowed
from icml26.papers.robust_ntp.robustify import Robustified

__all__ = ["unrobustified", "windowed_robustified"]


def unrobustified(model: NextTokenModel, loss: np.ndarray, beta: float, threshold: float) -> NextTokenModel:
    """The original model D, unchanged (``loss``, ``beta``, ``threshold`` are checked and unused)."""
    _check_model(model)
    Robustified(model, check_loss(loss), beta, threshold)  # same argument checks as the method
    return model


def windowed_robustified(model: NextTokenModel, loss: np.ndarray, beta: float, threshold: float, *,
                         window: int = 64) -> NextTokenModel:
    """D′ = :class:`Robustified` seen through its last ``window`` tokens only (:func:`~.models.windowed`)."""
    return windowed(Robustified(model, loss, beta, threshold), window)
