"""Small data sets that ship with installed packages (nothing is downloaded)."""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["DigitsSplit", "load_digits_split"]


@dataclasses.dataclass(frozen=True)
class DigitsSplit:
    """scikit-learn's 8x8 digits, standardised with training statistics.

    ``x_*``: ``(n, 64)`` float32; ``y_*``: ``(n,)`` int64 in 0..9.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def load_digits_split(test_fraction: float = 0.25, seed: int = 0, *, standardize: bool = True) -> DigitsSplit:
    """The 1,797 digits of ``sklearn.datasets.load_digits``, split stratified by class.

    Args:
        test_fraction: share of samples held out, in (0, 1).
        seed: seeds the split.
        standardize: subtract the training mean and divide by the training std (+1e-6).
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction={test_fraction} must be in (0, 1)")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)
    if standardize:
        mean = x_tr.mean(axis=0)
        std = x_tr.std(axis=0) + 1e-6
    else:
        mean = np.zeros(x.shape[1], dtype=np.float32)
        std = np.ones(x.shape[1], dtype=np.float32)
    return DigitsSplit(
        x_train=((x_tr - mean) / std).astype(np.float32),
        y_train=y_tr,
        x_test=((x_te - mean) / std).astype(np.float32),
        y_test=y_te,
        mean=mean.astype(np.float32),
        std=std.astype(np.float32),
    )
