"""The decision maker: a smoothed best response to a next-token distribution, and regret.

A next-token model predicts p_t = D(·|y_<t) over the opponent's K tokens; the decision
maker plays the mixture

    q_t = Γ_β(p_t) = softmax(−β L p_t)          (L: |A| × K loss matrix in [0, 1])

an ε-best response with ε ≤ ln|A|/β. Its regret against a token sequence is

    Regret_T = Σ_t ⟨q_t, L e_{y_t}⟩ − min_a Σ_t L[a, y_t].

Γ_β applied to the empirical distribution of n tokens equals Hedge's weights with
learning rate η = β/n (:func:`hedge_weights`): predicting empirical frequencies *is* a
no-regret learner.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["check_loss", "hedge_weights", "regret", "rock_paper_scissors", "smoothed_best_response"]


def check_loss(loss: np.ndarray) -> np.ndarray:
    """Validate a loss matrix ``(n_actions, n_tokens)`` with entries in [0, 1]."""
    loss = np.asarray(loss, dtype=np.float64)
    if loss.ndim != 2 or min(loss.shape) < 1:
        raise ValueError(f"loss must be a 2-D (n_actions, n_tokens) matrix, got shape {loss.shape}")
    if not np.isfinite(loss).all() or loss.min() < 0 or loss.max() > 1:
        raise ValueError("loss entries must lie in [0, 1] (rescale the matrix first)")
    return loss


def rock_paper_scissors() -> np.ndarray:
    """L[a, y] = 0 if a beats y, ½ on a tie, 1 otherwise (tokens and actions: R, P, S)."""
    # P beats R, S beats P, R beats S
    loss = np.full((3, 3), 1.0)
    np.fill_diagonal(loss, 0.5)
    for a, y in ((1, 0), (2, 1), (0, 2)):
        loss[a, y] = 0.0
    return loss


def smoothed_best_response(p: np.ndarray, loss: np.ndarray, beta: float) -> np.ndarray:
    """q = softmax(−β L p); ``p``: ``(..., K)`` → ``(..., |A|)``."""
    if beta < 0:
        raise ValueError(f"beta={beta} must be non-negative")
    # expected loss of each action under p: (L p)_a
    expected = np.asarray(p, dtype=np.float64) @ np.asarray(loss, dtype=np.float64).T
    z = -beta * expected
    z -= z.max(axis=-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=-1, keepdims=True)


def hedge_weights(tokens: Sequence[int], loss: np.ndarray, eta: float) -> np.ndarray:
    """Hedge's weights after ``tokens``: w_a ∝ exp(−η Σ_t L[a, y_t])."""
    cumulative = np.asarray(loss, dtype=np.float64)[:, list(tokens)].sum(axis=1)
    z = -eta * cumulative
    w = np.exp(z - z.max())
    return w / w.sum()


def regret(plays: np.ndarray, tokens: Sequence[int], loss: np.ndarray) -> float:
    """Regret of a sequence of plays against ``tokens``.

    ``plays`` is either ``(T,)`` integer actions or ``(T, |A|)`` mixtures; the learner's
    loss is ⟨q_t, L e_{y_t}⟩ (expected for mixtures).
    """
    loss = check_loss(loss)
    tokens = np.asarray(tokens, dtype=np.int64)
    plays = np.asarray(plays)
    if plays.ndim == 1:
        learner = loss[plays.astype(np.int64), tokens].sum()
    elif plays.ndim == 2 and plays.shape == (tokens.size, loss.shape[0]):
        learner = np.einsum("ta,at->", plays, loss[:, tokens])
    else:
        raise ValueError(f"plays must be (T,) actions or (T, {loss.shape[0]}) mixtures, got {plays.shape}")
    best = loss[:, tokens].sum(axis=1).min()
    return float(learner - best)
