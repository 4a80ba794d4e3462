"""Forget/retain splits of graded hardness ρ (HAMU's ``hard_probability``).

The forget set has the size of one class c. A fraction 1 − ρ of it is drawn from class c and a
fraction ρ at random from everything else (the rest of the data set, including the class-c
samples not kept), as in the authors' ``data/vision.py``. ρ = 0 forgets a whole class (easy: the
forget gradients point away from the retain gradients); ρ = 1 forgets a random subset of the
class's size (hard: the forget samples look like the retain samples).
"""

from __future__ import annotations

import numpy as np

__all__ = ["forget_split"]


def forget_split(
    labels: np.ndarray,
    forget_class: int,
    hardness: float,
    *,
    rng: np.random.Generator | int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the forget and retain sets for hardness ρ.

    Args:
        labels: ``(n,)`` integer class labels of the training set.
        forget_class: the class c whose size sets the forget-set size.
        hardness: ρ in [0, 1], the fraction of the forget set drawn at random instead of from c.
        rng: a NumPy generator or a seed.

    Returns:
        ``(forget, retain)``: sorted index arrays that partition ``range(n)``; ``len(forget)``
        is the number of class-c samples.
    """
    labels = np.asarray(labels.detach().cpu() if hasattr(labels, "detach") else labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {labels.shape}")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"labels must be integer class labels, got dtype {labels.dtype}")
    if isinstance(forget_class, bool) or not isinstance(forget_class, (int, np.integer)):
        raise TypeError(f"forget_class={forget_class!r} must be an integer class label")
    if isinstance(hardness, bool) or not isinstance(hardness, (int, float, np.integer, np.floating)):
        raise TypeError(f"hardness={hardness!r} must be a number in [0, 1]")
    if not 0.0 <= hardness <= 1.0:
        raise ValueError(f"hardness={hardness} must be in [0, 1] (the fraction of random forget samples)")
    in_class = labels == forget_class
    class_idx = np.flatnonzero(in_class)
    if class_idx.size == 0:
        raise ValueError(f"forget_class={forget_class} does not occur in labels; "
                         f"pick one of {sorted(set(labels.tolist()))}")
    if not isinstance(rng, np.random.Generator):
        if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)) or rng < 0:
            raise TypeError(f"rng={rng!r} must be a numpy Generator or a seed >= 0")
        rng = np.random.default_rng(rng)
    n_random = int(hardness * class_idx.size)
    class_idx = rng.permutation(class_idx)
    kept_from_class = class_idx[n_random:]
    # Random part: drawn from everything not kept, the dropped class-c samples included.
    pool = rng.permutation(np.concatenate([np.flatnonzero(~in_class), class_idx[:n_random]]))
    forget = np.sort(np.concatenate([kept_from_class, pool[:n_random]]))
    retain = np.setdiff1d(np.arange(labels.size), forget)
    return forget, retain
