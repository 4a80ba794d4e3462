"""Next-token models: the protocol, exact models, a torch wrapper and a bounded-context view.

A :class:`NextTokenModel` gives D(·|y_<t) for any history. Everything here speaks it:

* ``conditional(history) -> (K,)`` — the next-token distribution after ``history``;
* ``conditionals(sequence) -> (T + 1, K)`` — the distribution at every position of a
  sequence (row t conditions on ``sequence[:t]``); exact models compute it in one pass.

:func:`conditionals` and :func:`log_likelihood` work for any model, using the model's own
``conditionals`` when it has one.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import torch

from icml26.papers.robust_ntp.learner import _count, _generator, _real, _tokens

__all__ = [
    "IIDModel",
    "MarkovModel",
    "NextTokenModel",
    "TorchNextTokenModel",
    "Windowed",
    "conditionals",
    "log_likelihood",
    "sample_sequences",
    "windowed",
]


@runtime_checkable
class NextTokenModel(Protocol):
    """Anything that predicts the next token's distribution from a history."""

    n_tokens: int

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        """D(·|history): ``(n_tokens,)``, non-negative, summing to 1."""
        ...


def _check_model(model, name: str = "model") -> None:
    if not (hasattr(model, "n_tokens") and callable(getattr(model, "conditional", None))):
        raise TypeError(f"{name} must be a NextTokenModel (n_tokens and conditional(history)), "
                        f"got {type(model).__name__}")


def conditionals(model: NextTokenModel, sequence: Sequence[int]) -> np.ndarray:
    """``(len(sequence) + 1, K)``: row t is D(·|sequence[:t]); tokens must lie in 0 … K − 1."""
    _check_model(model)
    seq = _tokens("sequence", sequence, model.n_tokens).reshape(-1)
    fast = getattr(model, "conditionals", None)
    if fast is not None:
        return np.asarray(fast(seq), dtype=np.float64)
    seq = seq.tolist()
    return np.stack([model.conditional(seq[:t]) for t in range(len(seq) + 1)])


def log_likelihood(model: NextTokenModel, sequence: Sequence[int]) -> float:
    """log D(y_1 … y_T) = Σ_t log D(y_t | y_<t) (−inf for a sequence of probability 0)."""
    _check_model(model)
    seq = _tokens("sequence", sequence, model.n_tokens).reshape(-1)
    p = conditionals(model, seq)[:-1]
    with np.errstate(divide="ignore"):
        return float(np.log(p[np.arange(seq.size), seq]).sum())


def sample_sequences(model: NextTokenModel, n: int, length: int, rng: np.random.Generator | int) -> np.ndarray:
    """``(n, length)`` sequences drawn token by token from the model (``rng``: a Generator or a seed)."""
    _check_model(model)
    n, length, rng = _count("n", n), _count("length", length), _generator(rng)
    fast = getattr(model, "sample", None)
    if fast is not None:
        return fast(n, length, rng)
    out = np.zeros((n, length), dtype=np.int64)
    for i in range(n):
        for t in range(length):
            p = model.conditional(out[i, :t])
            out[i, t] = rng.choice(model.n_tokens, p=p)
    return out


def _check_distribution(p: np.ndarray, what: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size < 2:
        raise ValueError(f"{what} must be a vector over at least 2 tokens, got shape {p.shape}")
    if (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-9):
        raise ValueError(f"{what} must be non-negative and sum to 1 (sums to {p.sum():.6g})")
    return p


class IIDModel:
    """Tokens drawn independently from ``p``."""

    def __init__(self, p: Sequence[float]):
        self.p = _check_distribution(np.asarray(p), "p")
        self.n_tokens = self.p.size

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        if len(history):
            _tokens("history", history[-1:], self.n_tokens)
        return self.p.copy()

    def conditionals(self, sequence: Sequence[int]) -> np.ndarray:
        seq = _tokens("sequence", sequence, self.n_tokens).reshape(-1)
        return np.tile(self.p, (seq.size + 1, 1))

    def sample(self, n: int, length: int, rng: np.random.Generator | int) -> np.ndarray:
        n, length, rng = _count("n", n), _count("length", length), _generator(rng)
        return rng.choice(self.n_tokens, size=(n, length), p=self.p)


class MarkovModel:
    """A first-order Markov chain over tokens.

    Args:
        transition: ``(K, K)``, row y is D(·|last token = y).
        initial: ``(K,)`` distribution of the first token (default uniform).
    """

    def __init__(self, transition: np.ndarray, initial: Sequence[float] | None = None):
        transition = np.asarray(transition, dtype=np.float64)
        if transition.ndim != 2 or transition.shape[0] != transition.shape[1]:
            raise ValueError(f"transition must be square (K, K), got {transition.shape}")
        for row in transition:
            _check_distribution(row, "each transition row")
        self.transition = transition
        self.n_tokens = transition.shape[0]
        self.initial = (np.full(self.n_tokens, 1.0 / self.n_tokens) if initial is None
                        else _check_distribution(np.asarray(initial), "initial"))
        if self.initial.size != self.n_tokens:
            raise ValueError("initial and transition disagree on the number of tokens")

    @classmethod
    def sticky(cls, n_tokens: int = 3, stay: float = 0.8) -> "MarkovModel":
        """Repeat the last token with probability ``stay``, otherwise draw uniformly (``n_tokens`` >= 2)."""
        n_tokens, stay = _count("n_tokens", n_tokens, 2), _real("stay", stay)
        if not 0 <= stay <= 1:
            raise ValueError(f"stay={stay} must be in [0, 1]")
        transition = np.full((n_tokens, n_tokens), (1 - stay) / n_tokens) + stay * np.eye(n_tokens)
        return cls(transition)

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        if len(history) == 0:
            return self.initial.copy()
        last = history[-1]
        if isinstance(last, bool) or not isinstance(last, (int, np.integer)) or not 0 <= last < self.n_tokens:
            _tokens("history", [last], self.n_tokens)  # raises, naming the token
        return self.transition[int(last)].copy()

    def conditionals(self, sequence: Sequence[int]) -> np.ndarray:
        seq = _tokens("sequence", sequence, self.n_tokens).reshape(-1)
        return np.vstack([self.initial[None], self.transition[seq]])

    def sample(self, n: int, length: int, rng: np.random.Generator | int) -> np.ndarray:
        n, length, rng = _count("n", n), _count("length", length), _generator(rng)
        out = np.zeros((n, length), dtype=np.int64)
        cum_init = np.cumsum(self.initial)
        cum = np.cumsum(self.transition, axis=1)
        u = rng.random((n, length))
        if length:
            out[:, 0] = np.minimum(np.searchsorted(cum_init, u[:, 0], side="right"), self.n_tokens - 1)
        for t in range(1, length):
            rows = cum[out[:, t - 1]]
            out[:, t] = np.minimum((u[:, t, None] >= rows).sum(axis=1), self.n_tokens - 1)
        return out


class TorchNextTokenModel:
    """Wraps a torch sequence model as a :class:`NextTokenModel`.

    The module maps ``input_ids: (batch, length)`` to logits ``(batch, length, K)`` (or an
    object with ``.logits``, as Hugging Face causal LMs return). Token ``bos`` is put in
    front of every history, so position t of the output predicts token t.

    Args:
        module: the model (kept in eval mode).
        n_tokens: K, the opponent's vocabulary (logits beyond it are ignored).
        bos: the id of the begin-of-sequence token (default ``n_tokens``).
        device: where to run (default: the module's device).
    """

    def __init__(self, module: torch.nn.Module, n_tokens: int, *, bos: int | None = None,
                 device: str | torch.device | None = None):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        self.module = module.eval()
        self.n_tokens = _count("n_tokens", n_tokens, 1)
        self.bos = self.n_tokens if bos is None else _count("bos", bos)
        self.device = torch.device(device) if device is not None else next(module.parameters()).device

    @torch.no_grad()
    def conditionals(self, sequence: Sequence[int]) -> np.ndarray:
        seq = _tokens("sequence", sequence, self.n_tokens).reshape(-1)
        ids = torch.tensor([[self.bos, *[int(t) for t in seq]]], dtype=torch.long, device=self.device)
        out = self.module(ids)
        logits = getattr(out, "logits", out)[0, :, : self.n_tokens].double()
        return torch.softmax(logits, dim=-1).cpu().numpy()

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        return self.conditionals(history)[-1]

    @torch.no_grad()
    def batch_conditionals(self, sequences: np.ndarray) -> np.ndarray:
        """``(n, T, K)``: the conditional of token t given y_<t for each of ``(n, T)`` sequences, one forward pass."""
        seqs = _tokens("sequences", sequences, self.n_tokens)
        if seqs.ndim != 2 or min(seqs.shape) < 1:
            raise ValueError(f"sequences must be a non-empty (n, T) array of tokens, got shape {seqs.shape}")
        ids = torch.as_tensor(np.concatenate([np.full((len(seqs), 1), self.bos), seqs[:, :-1]], axis=1),
                              dtype=torch.long, device=self.device)
        out = self.module(ids)
        logits = getattr(out, "logits", out)[:, :, : self.n_tokens].double()
        return torch.softmax(logits, dim=-1).cpu().numpy()


class Windowed:
    """A bounded-context view: D_w(·|h) = D(·|last ``window`` tokens of h)."""

    def __init__(self, model: NextTokenModel, window: int):
        _check_model(model)
        self.window = _count("window", window)
        self.model = model
        self.n_tokens = model.n_tokens

    def conditional(self, history: Sequence[int]) -> np.ndarray:
        h = list(history)
        return self.model.conditional(h[len(h) - self.window:] if self.window else [])


def windowed(model: NextTokenModel, window: int) -> Windowed:
    """The model with its context cut to the last ``window`` tokens."""
    return Windowed(model, window)
