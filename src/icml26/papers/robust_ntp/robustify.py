"""Robustifying a next-token model (unbounded context).

"Next-Token Prediction and Regret Minimization" (Mohri, Sanford, Schneider, Vodrahalli,
Wu; ICML 2026) shows every sequence distribution D is exponentially close in total
variation to a *low-regret* one. Our construction of that distribution D′ (the paper's
exact procedure is not public; see the README):

1. run the learner induced by D, q_r = Γ_β(D(·|y_<r)), along the history and track its
   running regret R_s = Σ_{r<s} ⟨q_r, L e_{y_r}⟩ − min_a Σ_{r<s} L[a, y_r];
2. t₀ = the first s with R_s > τ (the threshold);
3. D′(·|y_<t) = D(·|y_<t) while t < t₀ (bit-identical), and afterwards the empirical
   distribution of y_{t₀} … y_{t−1} (uniform at t = t₀).

After t₀ the induced learner is Γ_β(empirical) = Hedge with η = β/n, so

    Regret_T(D′) ≤ τ + 1 + T ln|A| / β + (β/8)(1 + ln T),

and under y ~ D, for every fixed action a the regret against a, R^a_s = Σ_{r<s}
(⟨q_r, L e_{y_r}⟩ − L[a, y_r]), has increments in [−1, 1] with conditional mean
≤ ln|A|/β (q_r is an ε-best response to the true conditional). R_s = max_a R^a_s, so the
Azuma–Hoeffding maximal inequality and a union bound over a give

    P[t₀ ≤ T] ≤ |A| exp(−(τ − T ln|A|/β)² / (2T)),

and since D and D′ differ only on those sequences, TV(D, D′) ≤ P[t₀ ≤ T].
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from icml26.papers.robust_ntp.learner import (
    _count,
    _distributions,
    _real,
    _ResponseMemo,
    _tokens,
    check_loss,
    smoothed_best_response,
)
from icml26.papers.robust_ntp.models import NextTokenModel, conditionals

__all__ = ["Robustified", "azuma_trigger_bound", "regret_bound", "running_regret"]


def running_regret(p: np.ndarray, tokens: np.ndarray, loss: np.ndarray, beta: float) -> np.ndarray:
    """R_s for s = 0 … T of the learner Γ_β(p_t), batched.

    Args:
        p: ``(..., T, K)`` the model's conditionals at positions 0 … T−1 (distributions).
        tokens: ``(..., T)`` the realised tokens, in 0 … K − 1.
        loss: ``(|A|, K)`` in [0, 1]; beta: β ≥ 0, finite.
    Returns:
        ``(..., T + 1)`` with R_0 = 0.
    """
    loss = check_loss(loss)
    tokens = _tokens("tokens", tokens, loss.shape[1])
    p = _distributions("p", p, loss.shape[1])
    if p.shape[:-1] != tokens.shape:
        raise ValueError(f"p {p.shape} must be tokens' shape {tokens.shape} plus the token axis")
    q = smoothed_best_response(p, loss, beta)  # (..., T, A)
    # learner's loss at r: ⟨q_r, L e_{y_r}⟩
    column = np.moveaxis(loss[:, tokens], 0, -1)  # (..., T, A): L[a, y_r]
    learner = np.cumsum((q * column).sum(axis=-1), axis=-1)
    best = np.cumsum(column, axis=-2).min(axis=-1)
    zero = np.zeros(tokens.shape[:-1] + (1,))
    return np.concatenate([zero, learner - best], axis=-1)


def _bound_args(horizon, threshold, beta, n_actions) -> tuple[int, float, float, int]:
    return (_count("horizon", horizon, 1), _real("threshold", threshold, low=0.0),
            _real("beta", beta, low=0.0, strict=True), _count("n_actions", n_actions, 1))


def regret_bound(horizon: int, threshold: float, beta: float, n_actions: int) -> float:
    """τ + 1 + T ln|A| / β + (β/8)(1 + ln T): the robustified learner's regret bound.

    ``horizon`` T ≥ 1 and ``n_actions`` |A| ≥ 1 integers, ``threshold`` τ ≥ 0, ``beta`` β > 0.
    """
    horizon, threshold, beta, n_actions = _bound_args(horizon, threshold, beta, n_actions)
    return threshold + 1.0 + horizon * math.log(n_actions) / beta + beta / 8.0 * (1.0 + math.log(horizon))


def azuma_trigger_bound(horizon: int, threshold: float, beta: float, n_actions: int) -> float:
    """|A| exp(−(τ − T ln|A|/β)² / (2T)) (capped at 1): a bound on P_{y~D}[trigger by T].

    The factor |A| is the union bound over the comparator action (the running regret is
    a maximum over actions, not a single martingale). Vacuous when τ ≤ T ln|A| / β.
    Arguments as in :func:`regret_bound`.
    """
    horizon, threshold, beta, n_actions = _bound_args(horizon, threshold, beta, n_actions)
    drift = horizon * math.log(n_actions) / beta
    if threshold <= drift:
        return 1.0
    return min(1.0, n_actions * math.exp(-((threshold - drift) ** 2) / (2.0 * horizon)))


class Robustified:
    """D′: follows ``model`` until the induced learner's regret exceeds ``threshold``, then
    predicts the empirical frequency of the tokens since the crossing.

    Args:
        model: the original next-token model D. Every conditional it returns is checked
            (finite, non-negative, summing to 1, of length K): a ``ValueError`` says which
            position broke it, instead of a NaN or plausible regret downstream.
        loss: ``(|A|, K)`` loss matrix in [0, 1].
        beta: β > 0 of the smoothed best response q = softmax(−β L p).
        threshold: τ ≥ 0 (finite), the regret level that triggers the fallback.
    """

    def __init__(self, model: NextTokenModel, loss: np.ndarray, beta: float, threshold: float):
        if not (hasattr(model, "n_tokens") and callable(getattr(model, "conditional", None))):
            raise TypeError(f"model must be a NextTokenModel (n_tokens and conditional(history)), "
                            f"got {type(model).__name__}")
        self.loss = check_loss(loss)
        if self.loss.shape[1] != model.n_tokens:
            raise ValueError(f"loss has {self.loss.shape[1]} token columns but the model has {model.n_tokens} tokens")
        self.model = model
        self.beta = _real("beta", beta, low=0.0, strict=True)
        self.threshold = _real("threshold", threshold, low=0.0)
        self.n_tokens = model.n_tokens

    def _base(self, seq: np.ndarray) -> np.ndarray:
        base = conditionals(self.model, seq)
        if base.shape != (seq.size + 1, self.n_tokens):
            raise ValueError(f"the model returned conditionals of shape {base.shape} for a history of "
                             f"{seq.size} tokens; expected ({seq.size + 1}, {self.n_tokens})")
        return _distributions("the model's conditional", base, self.n_tokens)

    def trigger_time(self, history: Sequence[int]) -> int | None:
        """t₀: the number of tokens after which the running regret first exceeds τ, or None."""
        seq = _tokens("history", history, self.n_tokens).reshape(-1)
        if seq.size == 0:
            return None
        p = self._base(seq)[:-1]
        crossed = np.flatnonzero(running_regret(p, seq, self.loss, self.beta)[1:] > self.threshold)
        return int(crossed[0]) + 1 if crossed.size else None

    def conditionals(self, sequence: Sequence[int]) -> np.ndarray:
        """``(T + 1, K)``: D′(·|sequence[:t]) for t = 0 … T."""
        seq = _tokens("sequence", sequence, self.n_tokens).reshape(-1)
        base = self._base(seq)
        if seq.size == 0:
            return base
        regrets = running_regret(base[:-1], seq, self.loss, self.beta)
        crossed = np.flatnonzero(regrets[1:] > self.threshold)
        if not crossed.size:
            return base
        t0 = int(crossed[0]) + 1
        out = base.copy()
        # empirical distribution of y_{t0} … y_{t−1}; uniform when empty (t = t0). The running counts
        # are whole numbers (exact in float64), so the cumulative sum gives each t's counts exactly.
        out[t0] = 1.0 / self.n_tokens
        after = seq[t0:]
        onehot = np.zeros((after.size, self.n_tokens))
        onehot[np.arange(after.size), after] = 1.0
        counts = np.cumsum(onehot, axis=0)
        out[t0 + 1:] = counts / counts.sum(axis=1, keepdims=True)
        return out

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        """D′(·|history)."""
        return self.conditionals(history)[-1]

    def stream(self) -> "RobustStream":
        """An incremental view for playing online (same numbers as :meth:`conditionals`)."""
        return RobustStream(self)


class RobustStream:
    """Incremental D′: ``predict()`` the next distribution, ``observe(y)`` the token."""

    def __init__(self, robust: Robustified):
        self.robust = robust
        self.history: list[int] = []
        self.learner_loss = 0.0
        self.action_loss = np.zeros(robust.loss.shape[0])
        self.trigger: int | None = None
        self.counts = np.zeros(robust.n_tokens)
        self._base_p: np.ndarray | None = None
        self._memo = _ResponseMemo(robust.loss, robust.beta)  # a repeated conditional is checked and answered once

    def predict(self) -> np.ndarray:
        if self.trigger is not None:
            total = self.counts.sum()
            return self.counts / total if total else np.full(self.robust.n_tokens, 1.0 / self.robust.n_tokens)
        if self._base_p is None:
            self._base_p = self._memo.checked("the model's conditional", self.robust.model.conditional(self.history))
        return self._base_p.copy()

    def observe(self, token: int) -> None:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or not 0 <= token < self.robust.n_tokens:
            raise ValueError(f"token {token} is out of range 0..{self.robust.n_tokens - 1}")
        if self.trigger is None:
            q = self._memo.response(self.predict())
            self.learner_loss += float(q @ self.robust.loss[:, token])
            self.action_loss += self.robust.loss[:, token]
            self.history.append(int(token))
            self._base_p = None
            if self.learner_loss - self.action_loss.min() > self.robust.threshold:
                self.trigger = len(self.history)
        else:
            self.history.append(int(token))
            self.counts[token] += 1
