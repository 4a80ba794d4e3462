"""Opponents that choose tokens online, playing them against a model-driven learner.

``play(model, adversary, T, loss, beta)`` runs the protocol: at each round the model
predicts p_t from the history, the learner plays q_t = Γ_β(p_t), the adversary (who sees
q_t) picks y_t, and the learner suffers ⟨q_t, L e_{y_t}⟩.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence

import numpy as np

from icml26.common.progress import progress
from icml26.papers.robust_ntp.learner import _count, _generator, _real, _ResponseMemo, check_loss
from icml26.papers.robust_ntp.models import NextTokenModel, _check_model, conditionals, log_likelihood, sample_sequences

__all__ = [
    "Adversary",
    "Cycling",
    "EpsilonGreedy",
    "Greedy",
    "ImitateThenSwitch",
    "PlayResult",
    "RandomTokens",
    "per_position_tv",
    "play",
    "tv_distance_mc",
]


class Adversary(Protocol):
    """Chooses the next token from the history and the learner's current mixture."""

    def next_token(self, history: Sequence[int], mixture: np.ndarray, loss: np.ndarray,
                   rng: np.random.Generator) -> int: ...


class Greedy:
    """y_t = argmax_y ⟨q_t, L e_y⟩: the token that maximises the learner's expected loss."""

    def next_token(self, history, mixture, loss, rng) -> int:
        return int(np.argmax(mixture @ loss))


class Cycling:
    """A fixed cycle 0, 1, …, K−1, 0, 1, … (or any given pattern)."""

    def __init__(self, pattern: Sequence[int] | None = None):
        if pattern is not None:
            pattern = [_count("pattern token", t) for t in pattern]
            if not pattern:
                raise ValueError("pattern=[] is empty; pass None for the cycle 0, 1, …, K−1")
        self.pattern = pattern

    def next_token(self, history, mixture, loss, rng) -> int:
        pattern = self.pattern or list(range(loss.shape[1]))
        return pattern[len(history) % len(pattern)]


class RandomTokens:
    """Uniformly random tokens."""

    def next_token(self, history, mixture, loss, rng) -> int:
        return int(rng.integers(loss.shape[1]))


class EpsilonGreedy:
    """Greedy, except that with probability ``epsilon`` it plays a uniformly random token."""

    def __init__(self, epsilon: float):
        epsilon = _real("epsilon", epsilon)
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon={epsilon} must be in [0, 1]")
        self.epsilon = float(epsilon)

    def next_token(self, history, mixture, loss, rng) -> int:
        if rng.random() < self.epsilon:
            return int(rng.integers(loss.shape[1]))
        return int(np.argmax(mixture @ loss))


class ImitateThenSwitch:
    """Plays like the model D for the first ``switch`` rounds, then greedily."""

    def __init__(self, model: NextTokenModel, switch: int):
        _check_model(model)
        self.model = model
        self.switch = _count("switch", switch)

    def next_token(self, history, mixture, loss, rng) -> int:
        if len(history) < self.switch:
            return int(rng.choice(self.model.n_tokens, p=self.model.conditional(history)))
        return int(np.argmax(mixture @ loss))


@dataclasses.dataclass
class PlayResult:
    """One game: tokens, the learner's mixtures, its regret and (if any) the fallback time."""

    tokens: np.ndarray
    mixtures: np.ndarray
    regret_curve: np.ndarray
    trigger: int | None

    def __post_init__(self) -> None:
        t = len(self.tokens)
        if np.shape(self.mixtures)[:1] != (t,) or np.shape(self.regret_curve) != (t,):
            raise ValueError(f"tokens ({t},), mixtures {np.shape(self.mixtures)} and regret_curve "
                             f"{np.shape(self.regret_curve)} must cover the same {t} rounds")

    @property
    def regret(self) -> float:
        return float(self.regret_curve[-1])


class _Recompute:
    """Generic incremental view: asks the model for D(·|history) at every round."""

    def __init__(self, model: NextTokenModel):
        self.model = model
        self.history: list[int] = []
        self.trigger = None

    def predict(self) -> np.ndarray:
        return np.asarray(self.model.conditional(self.history), dtype=np.float64)

    def observe(self, token: int) -> None:
        self.history.append(int(token))


def play(
    model: NextTokenModel,
    adversary: Adversary,
    horizon: int,
    loss: np.ndarray,
    beta: float,
    rng: np.random.Generator | None = None,
    *,
    show_progress: bool | None = False,
) -> PlayResult:
    """Play ``horizon`` rounds of the learner Γ_β(model) against ``adversary``.

    ``horizon`` ≥ 1 rounds; ``beta`` β ≥ 0, finite; ``rng`` a Generator or a seed (default 0).
    Every conditional the model predicts is checked (finite, non-negative, summing to 1, of
    length K): a ``ValueError`` names the round, instead of a NaN or plausible regret.
    """
    _check_model(model)
    loss = check_loss(loss)
    horizon = _count("horizon", horizon, 1)
    beta = _real("beta", beta, low=0.0)
    if model.n_tokens != loss.shape[1]:
        raise ValueError(f"the model has {model.n_tokens} tokens but loss has {loss.shape[1]} token columns")
    if not callable(getattr(adversary, "next_token", None)):
        raise TypeError(f"adversary must have next_token(history, mixture, loss, rng), got {type(adversary).__name__}")
    rng = _generator(rng) if rng is not None else np.random.default_rng(0)
    stream = model.stream() if hasattr(model, "stream") else _Recompute(model)
    tokens = np.zeros(horizon, dtype=np.int64)
    mixtures = np.zeros((horizon, loss.shape[0]))
    memo = _ResponseMemo(loss, beta)  # a repeated conditional is checked and answered once
    history: list[int] = []  # tokens[:t] as Python ints, kept alongside (no O(t) slice per round)
    for t in progress(range(horizon), enabled=show_progress, desc="play"):
        p = stream.predict()
        try:
            p = memo.checked("p", p)
        except ValueError as exc:
            raise ValueError(f"round {t}: the model's conditional is not a distribution over "
                             f"{loss.shape[1]} tokens ({exc})") from None
        mixtures[t] = memo.response(p)
        # the adversary sees the round's mixture (a row of ``mixtures``: the memo's q stays unshared)
        y = adversary.next_token(history.copy(), mixtures[t], loss, rng)
        if isinstance(y, bool) or not isinstance(y, (int, np.integer)) or not 0 <= y < loss.shape[1]:
            raise ValueError(f"the adversary played token {y}, outside 0..{loss.shape[1] - 1}")
        tokens[t] = y
        history.append(int(y))
        stream.observe(y)
    learner = np.cumsum((mixtures * loss[:, tokens].T).sum(axis=1))
    best = np.cumsum(loss[:, tokens].T, axis=0).min(axis=1)
    return PlayResult(tokens=tokens, mixtures=mixtures, regret_curve=learner - best,
                      trigger=getattr(stream, "trigger", None))


def tv_distance_mc(
    model_a: NextTokenModel,
    model_b: NextTokenModel,
    horizon: int,
    n: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Monte Carlo total variation between the length-``horizon`` sequence laws of A and B.

    TV = E_{y~A}[(1 − B(y)/A(y))₊], estimated on ``n`` samples of A. Returns
    ``(estimate, standard error)``. For B = D′ = Robustified(A) the ratio is 1 on every
    sequence that never triggers the fallback, so the estimate is at most the trigger
    frequency. ``horizon`` ≥ 1, ``n`` ≥ 2; ``rng`` a Generator or a seed.
    """
    _check_model(model_a, "model_a")
    _check_model(model_b, "model_b")
    horizon, n, rng = _count("horizon", horizon, 1), _count("n", n, 2), _generator(rng)
    if model_a.n_tokens != model_b.n_tokens:
        raise ValueError(f"model_a has {model_a.n_tokens} tokens, model_b {model_b.n_tokens}")
    samples = sample_sequences(model_a, n, horizon, rng)
    values = np.empty(n)
    for i, seq in enumerate(samples):
        log_ratio = log_likelihood(model_b, seq) - log_likelihood(model_a, seq)
        values[i] = max(0.0, 1.0 - float(np.exp(min(log_ratio, 50.0))))
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(n))


def per_position_tv(model_a: NextTokenModel, model_b: NextTokenModel, sequences: np.ndarray) -> float:
    """Mean over sequences and positions of TV(A(·|h), B(·|h)) = ½‖A(·|h) − B(·|h)‖₁.

    ``sequences``: ``(n, T)`` tokens with n, T ≥ 1.
    """
    _check_model(model_a, "model_a")
    _check_model(model_b, "model_b")
    if model_a.n_tokens != model_b.n_tokens:
        raise ValueError(f"model_a has {model_a.n_tokens} tokens, model_b {model_b.n_tokens}")
    if np.ndim(sequences) != 2 or min(np.shape(sequences)) < 1:
        raise ValueError(f"sequences must be a non-empty (n, T) array of tokens, got shape {np.shape(sequences)}")
    total, count = 0.0, 0
    for seq in sequences:
        pa = conditionals(model_a, seq)[:-1]
        pb = conditionals(model_b, seq)[:-1]
        total += 0.5 * np.abs(pa - pb).sum()
        count += len(seq)
    return total / count
