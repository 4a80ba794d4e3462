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

__all__ = ["check_loss", "hedge_weights", "regret", "rock_paper_scissors_loss", "smoothed_best_response"]

#: Tolerance on Σ p = 1 for a model's conditional (float32 models sum to 1 within ~1e-7).
SUM_TOL = 1e-6


def _as_array(name: str, value, dtype=np.float64) -> np.ndarray:
    """``value`` (a NumPy array, a torch tensor or a list) as a NumPy array, naming ``name`` on failure."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}") from None


def _real(name: str, value, *, low: float | None = None, strict: bool = False, finite: bool = True) -> float:
    """A real number (Python, NumPy or 0-d torch), finite, ``> low`` (strict) or ``>= low``."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a real number")
    value = float(value)
    if finite and not np.isfinite(value) or np.isnan(value):
        raise ValueError(f"{name}={value!r} must be a finite number")
    if low is not None and (value <= low if strict else value < low):
        raise ValueError(f"{name}={value!r} must be {'>' if strict else '>='} {low:g}")
    return value


def _count(name: str, value, minimum: int = 0) -> int:
    """An integer ``>= minimum`` (bools and fractional numbers refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r} must be an integer")
    if value < minimum:
        raise ValueError(f"{name}={value!r} must be an integer >= {minimum}")
    return int(value)


def _tokens(name: str, tokens, n_tokens: int) -> np.ndarray:
    """``tokens`` as int64, every entry in 0 … n_tokens − 1 (a negative one would wrap around)."""
    raw = tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else np.asarray(tokens)
    if raw.size and not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.bool_)):
        if not (np.issubdtype(raw.dtype, np.floating) and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw))):
            raise TypeError(f"{name} must hold integer token ids, got dtype {raw.dtype}")
    out = raw.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_tokens):
        bad = out[(out < 0) | (out >= n_tokens)][0]
        raise ValueError(f"{name} holds token {bad}, outside 0..{n_tokens - 1}")
    return out


def _distributions(name: str, p, n_tokens: int) -> np.ndarray:
    """``p`` ``(..., n_tokens)``: finite, non-negative, each row summing to 1 (within :data:`SUM_TOL`)."""
    p = _as_array(name, p)
    if p.ndim == 0 or p.shape[-1] != n_tokens:
        raise ValueError(f"{name} must be a distribution over {n_tokens} tokens (last axis), got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError(f"{name} holds NaN or inf: not a probability distribution")
    if p.size and (p.min() < 0 or np.abs(p.sum(axis=-1) - 1.0).max() > SUM_TOL):
        raise ValueError(f"{name} must be non-negative and sum to 1 over the tokens "
                         f"(min {p.min():.3g}, sums up to {np.abs(p.sum(axis=-1) - 1.0).max():.3g} away from 1)")
    return p


def _generator(rng, name: str = "rng") -> np.random.Generator:
    """A NumPy generator from ``rng``: a ``Generator`` (returned as is) or an integer seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise TypeError(f"{name}={rng!r} must be a numpy Generator (np.random.default_rng(seed)) or a seed >= 0")


def check_loss(loss: np.ndarray) -> np.ndarray:
    """Validate a loss matrix ``(n_actions, n_tokens)`` with entries in [0, 1] (NumPy or torch)."""
    loss = _as_array("loss", loss)
    if loss.ndim != 2 or min(loss.shape) < 1:
        raise ValueError(f"loss must be a 2-D (n_actions, n_tokens) matrix, got shape {loss.shape}")
    if not np.isfinite(loss).all():
        raise ValueError("loss holds NaN or inf; pass a finite matrix with entries in [0, 1]")
    if loss.min() < 0 or loss.max() > 1:
        raise ValueError("loss entries must lie in [0, 1] (rescale the matrix first)")
    return loss


def rock_paper_scissors_loss() -> np.ndarray:
    """The learner's loss in [0, 1]: L[a, y] = 0 if action a beats token y, ½ on a tie, 1 otherwise.

    Rows are the learner's actions, columns the opponent's tokens, both in the order
    rock, paper, scissors. (Renamed from ``rock_paper_scissors``: asym_perturb's
    ``rock_paper_scissors_game`` is the zero-sum game with entries in {−1, 0, 1}.)
    """
    # P beats R, S beats P, R beats S
    loss = np.full((3, 3), 1.0)
    np.fill_diagonal(loss, 0.5)
    for a, y in ((1, 0), (2, 1), (0, 2)):
        loss[a, y] = 0.0
    return loss


def smoothed_best_response(p: np.ndarray, loss: np.ndarray, beta: float) -> np.ndarray:
    """q = softmax(−β L p); ``p``: ``(..., K)`` distributions (NumPy or torch) → ``(..., |A|)`` NumPy.

    ``beta`` must be finite and non-negative (β = 0 gives the uniform mixture); ``p`` must be
    finite, non-negative and sum to 1 over its last axis.
    """
    beta = _real("beta", beta, low=0.0)
    loss = check_loss(loss)
    p = _distributions("p", p, loss.shape[1])
    return _response(p, loss, beta)


def _response(p: np.ndarray, loss: np.ndarray, beta: float) -> np.ndarray:
    """Γ_β(p) of :func:`smoothed_best_response` on arguments it has already checked (no checks here)."""
    # expected loss of each action under p: (L p)_a
    expected = p @ loss.T
    z = -beta * expected
    z -= z.max(axis=-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=-1, keepdims=True)


class _ResponseMemo:
    """Checks of next-token conditionals and their responses Γ_β(p), memoised on p's bytes.

    An online game asks for Γ_β(p_t) at every round, but the conditionals of a Markov model
    (and the empirical frequencies after a fallback) repeat: the same bytes of p give the same
    check outcome and the same q, so each distinct p is checked and answered once and every
    repeat is a dictionary look-up. The q returned is the array computed for those bytes, so
    the results are bit-identical to checking and computing afresh. Callers must not write
    into a returned q (it is shared between rounds).

    Args:
        loss: ``(|A|, K)`` loss matrix, already checked (:func:`check_loss`).
        beta: β, already checked.
    """

    def __init__(self, loss: np.ndarray, beta: float):
        self.loss, self.beta, self.n_tokens = loss, beta, loss.shape[1]
        self._checked: set[tuple[tuple[int, ...], bytes]] = set()
        self._responses: dict[tuple[tuple[int, ...], bytes], np.ndarray] = {}

    def checked(self, name: str, p) -> np.ndarray:
        """``p`` as float64, checked like :func:`_distributions` (which raises, naming ``name``)."""
        p = _as_array(name, p)
        key = (p.shape, p.tobytes())
        if key not in self._checked:
            _distributions(name, p, self.n_tokens)
            self._checked.add(key)
        return p

    def response(self, p: np.ndarray) -> np.ndarray:
        """Γ_β(p) for a ``p`` returned by :meth:`checked` (shared: do not modify it)."""
        key = (p.shape, p.tobytes())
        q = self._responses.get(key)
        if q is None:
            q = self._responses[key] = _response(p, self.loss, self.beta)
        return q


def hedge_weights(tokens: Sequence[int], loss: np.ndarray, eta: float) -> np.ndarray:
    """Hedge's weights after ``tokens``: w_a ∝ exp(−η Σ_t L[a, y_t]) (uniform after no token).

    ``eta`` (the learning rate η) must be finite and non-negative; tokens in 0 … K − 1.
    """
    eta = _real("eta", eta, low=0.0)
    loss = check_loss(loss)
    tokens = _tokens("tokens", tokens, loss.shape[1])
    cumulative = loss[:, tokens].sum(axis=1)
    z = -eta * cumulative
    w = np.exp(z - z.max())
    return w / w.sum()


def regret(plays: np.ndarray, tokens: Sequence[int], loss: np.ndarray) -> float:
    """Regret of a sequence of plays against ``tokens``.

    ``plays`` is either ``(T,)`` integer actions or ``(T, |A|)`` mixtures (rows summing to 1);
    the learner's loss is ⟨q_t, L e_{y_t}⟩ (expected for mixtures). An empty game has regret 0.
    """
    loss = check_loss(loss)
    tokens = _tokens("tokens", tokens, loss.shape[1])
    if tokens.ndim != 1:
        raise ValueError(f"tokens must be a 1-D sequence, got shape {tokens.shape}")
    plays = plays.detach().cpu().numpy() if hasattr(plays, "detach") else np.asarray(plays)
    if plays.ndim == 1:
        if plays.size != tokens.size:
            raise ValueError(f"plays has {plays.size} actions for {tokens.size} tokens; give one per round")
        actions = _tokens("plays", plays, loss.shape[0])
        learner = loss[actions, tokens].sum()
    elif plays.ndim == 2 and plays.shape == (tokens.size, loss.shape[0]):
        plays = _distributions("plays", plays, loss.shape[0])
        learner = np.einsum("ta,at->", plays, loss[:, tokens])
    else:
        raise ValueError(f"plays must be (T,) actions or (T, {loss.shape[0]}) mixtures, got {plays.shape}")
    best = loss[:, tokens].sum(axis=1).min()
    return float(learner - best)
