"""ReViT reproduction: the verdicts from raw per-rotation errors (pure NumPy, tested by hand).

* :func:`rotation_spread`: the worst replicate's ``(max_k − min_k) / mean_k`` of the
  per-rotation MSE: 0 for an exactly equivariant model;
* :func:`rotated_mean`: the mean MSE over the rotated test sets (90°, 180°, 270°);
* :func:`relative_gain`: ``1 − mse / reference`` (the reduction below the identity predictor);
* :func:`summarize_rotations`: per-rotation means, rotated mean and its spread over replicates.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["RotationSummary", "relative_gain", "rotated_mean", "rotation_spread", "summarize_rotations"]


def _table(per_rotation) -> np.ndarray:
    table = np.asarray(per_rotation, dtype=float)
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 2:
        raise ValueError(f"per_rotation must be (replicates, rotations) with at least 2 rotations, got {table.shape}")
    return table


def rotation_spread(per_rotation) -> float:
    """``max_s (max_k m_sk − min_k m_sk) / mean_k m_sk`` over replicates ``s`` of a
    ``(replicates, rotations)`` MSE table (NaN in, NaN out)."""
    table = _table(per_rotation)
    return float(max((row.max() - row.min()) / row.mean() for row in table))


def rotated_mean(per_rotation) -> np.ndarray:
    """Per replicate, the mean MSE over rotations 1.. (column 0 is the unrotated test set)."""
    return _table(per_rotation)[:, 1:].mean(1)


def relative_gain(mse: float, reference: float) -> float:
    """``1 − mse / reference``: the fraction of the reference error removed (0 = no better)."""
    if reference == 0:
        raise ValueError("reference=0: the gain over a perfect reference is undefined")
    return 1.0 - float(mse) / float(reference)


@dataclasses.dataclass(frozen=True)
class RotationSummary:
    """An arm's per-rotation test MSE over replicates.

    Attributes:
        per_rotation: mean over replicates, one value per rotation (column order of the table).
        rotated: mean of the rotated test sets (rotations 1..), averaged over replicates.
        rotated_std: standard deviation over replicates of the per-replicate rotated mean.
        overall: mean of the whole table.
    """

    per_rotation: tuple[float, ...]
    rotated: float
    rotated_std: float
    overall: float


def summarize_rotations(per_rotation) -> RotationSummary:
    """:class:`RotationSummary` of a ``(replicates, rotations)`` MSE table."""
    table = _table(per_rotation)
    rotated = rotated_mean(table)
    return RotationSummary(per_rotation=tuple(float(v) for v in table.mean(0)), rotated=float(rotated.mean()),
                           rotated_std=float(rotated.std()), overall=float(table.mean()))
