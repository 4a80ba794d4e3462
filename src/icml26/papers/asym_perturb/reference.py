"""OpenSpiel's own CFR+ (the C++ ``CFRPlusSolver``), the outside reference drawn beside ours.

Our CFR+ (:func:`~.baselines.cfr_plus`) runs on the sequence-form matrices; OpenSpiel's runs on
the game tree in C++. Both alternate updates and average linearly, so the two NashConv curves of
the average policy must coincide: a check on our CFR+ and on the sequence form, from code we did
not write.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from icml26.common.extras import require

__all__ = ["openspiel_cfr_plus"]


def openspiel_cfr_plus(game: Any, at: Sequence[int]) -> np.ndarray:
    """NashConv of the average policy of OpenSpiel's C++ ``CFRPlusSolver`` after ``at`` iterations.

    Args:
        game: a ``pyspiel.Game`` or a game name.
        at: increasing iteration counts >= 0 (``pyspiel.nash_conv`` walks the whole tree, so the
            curve is read at a few counts, not at every iteration); 0 is the uniform policy.

    Returns:
        (len(at),) NashConv after each count: the quantity our CFR+ records at index t.
    """
    pyspiel = require("pyspiel", "games")
    counts = [int(t) for t in at]
    if not counts or any(t < 0 for t in counts) or any(b <= a for a, b in zip(counts, counts[1:])):
        raise ValueError(f"at={list(at)!r} must be a non-empty increasing sequence of iteration counts >= 0")
    if isinstance(game, str):
        game = pyspiel.load_game(game)
    solver = pyspiel.CFRPlusSolver(game)
    values, done = [], 0
    for t in counts:
        for _ in range(t - done):
            solver.evaluate_and_update_policy()
        done = t
        values.append(float(pyspiel.nash_conv(game, solver.average_policy())))
    return np.asarray(values)
