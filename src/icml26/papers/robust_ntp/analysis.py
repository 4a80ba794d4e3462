"""Pure functions from the reproduction's raw arrays to its metrics and check values.

Each is tested against a hand computation in ``tests/papers/test_robust_ntp.py``.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from icml26.common.stats import ratio

__all__ = ["markov_conditionals", "max_ratio", "ratio", "regret_per_round", "trigger_rate"]


def regret_per_round(regret: float, horizon: int) -> float:
    """Regret_T / T."""
    if horizon < 1:
        raise ValueError(f"horizon={horizon} must be at least 1")
    return float(regret) / horizon


def max_ratio(values: Iterable[float], bound: float) -> float:
    """max(values) / bound, e.g. the worst adversary's regret over the regret bound."""
    return ratio(max(float(v) for v in values), bound)


def trigger_rate(running_regrets: np.ndarray, threshold: float) -> float:
    """Share of sequences whose running regret R_s exceeds τ at some s ≥ 1.

    ``running_regrets``: ``(n, T + 1)`` with R_0 in column 0 (:func:`~.running_regret`).
    """
    r = np.asarray(running_regrets, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 2:
        raise ValueError(f"running_regrets must be (n, T + 1) with T >= 1, got shape {r.shape}")
    return float((r[:, 1:] > threshold).any(axis=1).mean())


def markov_conditionals(initial: np.ndarray, transition: np.ndarray, sequences: np.ndarray) -> np.ndarray:
    """A first-order Markov model's conditionals at positions 0 … T−1 of each sequence, batched.

    ``initial`` ``(K,)``, ``transition`` ``(K, K)``, ``sequences`` ``(n, T)`` → ``(n, T, K)``:
    row 0 is ``initial``, row t ≥ 1 is ``transition[y_{t−1}]``.
    """
    seqs = np.asarray(sequences, dtype=np.int64)
    k = len(initial)
    return np.concatenate([np.broadcast_to(initial, (len(seqs), 1, k)), transition[seqs[:, :-1]]], axis=1)
