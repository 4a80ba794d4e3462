"""A searching adversary: the sequence on which a model-driven learner's regret is largest.

The learner q_t = Γ_β(p(·|y_<t)) is a deterministic function of the history, so an adaptive
adversary is no stronger than the best fixed sequence it could have committed to: the worst
case over all adversaries is a maximum of the regret over token sequences. The greedy
adversary maximises only the next round's loss; a student that falls back late, or only on
histories like its training ones, can lose more on a sequence greedy never plays.

:func:`search_worst_sequence` is an elitist genetic search over sequences (one-point
crossover, per-position resampling), started from the greedy game's tokens, the model's own
samples and uniform tokens. Every candidate is scored by the exact regret of the learner on
it (:func:`sequence_regrets`, one batched forward pass for a torch model), so the result is
at least the greedy adversary's regret and is the true regret of the sequence it returns.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from icml26.papers.robust_ntp.adversaries import Greedy, play
from icml26.papers.robust_ntp.learner import _count, _generator, _real, _tokens, check_loss
from icml26.papers.robust_ntp.models import NextTokenModel, _check_model, conditionals, sample_sequences
from icml26.papers.robust_ntp.robustify import Robustified, running_regret

__all__ = ["SearchResult", "batch_conditionals", "post_trigger_tv", "search_worst_sequence", "sequence_regrets"]


def batch_conditionals(model: NextTokenModel, sequences: np.ndarray) -> np.ndarray:
    """``(n, T, K)``: the model's conditional for token t given y_<t, for each of ``(n, T)`` sequences.

    Uses the model's own ``batch_conditionals`` when it has one (a torch model: one forward
    pass), else one :func:`conditionals` call per sequence.
    """
    _check_model(model)
    seqs = _tokens("sequences", sequences, model.n_tokens)
    if seqs.ndim != 2 or min(seqs.shape) < 1:
        raise ValueError(f"sequences must be a non-empty (n, T) array of tokens, got shape {seqs.shape}")
    if callable(getattr(model, "batch_conditionals", None)):
        return np.asarray(model.batch_conditionals(seqs), dtype=np.float64)
    return np.stack([conditionals(model, s)[:-1] for s in seqs])


def sequence_regrets(model: NextTokenModel, sequences: np.ndarray, loss: np.ndarray, beta: float) -> np.ndarray:
    """``(n,)``: the regret of the learner Γ_β(model) over each of ``(n, T)`` fixed sequences.

    Equal (to rounding) to ``play(model, adversary, T, loss, beta).regret`` for any adversary that
    plays that sequence.
    """
    loss, beta = check_loss(loss), _real("beta", beta, low=0.0)
    p = batch_conditionals(model, sequences)
    return running_regret(p, np.asarray(sequences), loss, beta)[:, -1]


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """The worst sequence found, its regret, the greedy game's regret and the best regret per generation."""

    tokens: np.ndarray
    regret: float
    greedy_regret: float
    best_per_generation: np.ndarray
    elites: np.ndarray
    """``(n_elite, T)``: the final generation's best sequences (for what the model does on them)."""


def search_worst_sequence(
    model: NextTokenModel,
    horizon: int,
    loss: np.ndarray,
    beta: float,
    rng: np.random.Generator,
    *,
    population: int = 64,
    generations: int = 100,
    n_elite: int = 8,
    mutation_rate: float | None = None,
    seed_model: NextTokenModel | None = None,
) -> SearchResult:
    """Search for the length-``horizon`` sequence that maximises the learner Γ_β(model)'s regret.

    Args:
        model: the model driving the learner.
        horizon: T ≥ 1; loss: ``(|A|, K)`` in [0, 1]; beta: β ≥ 0.
        rng: a Generator or a seed.
        population: candidates per generation (≥ 2); generations: ≥ 0; n_elite: kept unchanged
            each generation (1 ≤ n_elite < population).
        mutation_rate: probability that a child's position is resampled uniformly (default 2/T;
            at least one position is resampled per child).
        seed_model: whose samples fill a third of the first generation (default ``model``; pass
            the original D when ``model`` is a student of it).
    """
    _check_model(model)
    loss, horizon, beta = check_loss(loss), _count("horizon", horizon, 1), _real("beta", beta, low=0.0)
    rng = _generator(rng)
    population, generations = _count("population", population, 2), _count("generations", generations, 0)
    n_elite = _count("n_elite", n_elite, 1)
    if n_elite >= population:
        raise ValueError(f"n_elite={n_elite} must be below population={population}")
    rate = 2.0 / horizon if mutation_rate is None else _real("mutation_rate", mutation_rate, low=0.0)
    if rate > 1:
        raise ValueError(f"mutation_rate={rate} must be at most 1")
    k = model.n_tokens
    greedy = play(model, Greedy(), horizon, loss, beta).tokens
    n_model = (population - 1) // 3
    pop = np.concatenate([greedy[None],
                          sample_sequences(seed_model or model, n_model, horizon, rng) if n_model else
                          np.zeros((0, horizon), dtype=np.int64),
                          rng.integers(k, size=(population - 1 - n_model, horizon))]).astype(np.int64)
    scores = sequence_regrets(model, pop, loss, beta)
    greedy_regret = float(scores[0])
    best = [float(scores.max())]
    for _ in range(generations):
        order = np.argsort(-scores, kind="stable")
        elites, elite_scores = pop[order[:n_elite]], scores[order[:n_elite]]
        n_child = population - n_elite
        a = elites[rng.integers(n_elite, size=n_child)]
        b = elites[rng.integers(n_elite, size=n_child)]
        cut = rng.integers(horizon + 1, size=n_child)[:, None]
        children = np.where(np.arange(horizon)[None] < cut, a, b)
        flip = rng.random(children.shape) < rate
        flip[np.arange(n_child), rng.integers(horizon, size=n_child)] = True
        children = np.where(flip, rng.integers(k, size=children.shape), children)
        pop = np.concatenate([elites, children])
        scores = np.concatenate([elite_scores, sequence_regrets(model, children, loss, beta)])
        best.append(float(scores.max()))
    order = np.argsort(-scores, kind="stable")
    return SearchResult(tokens=pop[order[0]].copy(), regret=float(scores[order[0]]), greedy_regret=greedy_regret,
                        best_per_generation=np.asarray(best), elites=pop[order[:n_elite]].copy())


def post_trigger_tv(teacher: Robustified, student: NextTokenModel, sequences: np.ndarray) -> float:
    """Mean per-position TV between ``student`` and the robustified ``teacher`` at the positions after the
    teacher has fallen back (t > t₀), over ``(n, T)`` sequences; NaN when the teacher never falls back.

    This is where a student that failed to learn the fallback shows: before t₀ both follow D.
    """
    if not isinstance(teacher, Robustified):
        raise TypeError(f"teacher must be a Robustified model, got {type(teacher).__name__}")
    _check_model(student, "student")
    seqs = _tokens("sequences", sequences, teacher.n_tokens)
    if seqs.ndim != 2 or min(seqs.shape) < 1:
        raise ValueError(f"sequences must be a non-empty (n, T) array of tokens, got shape {seqs.shape}")
    pt, ps = batch_conditionals(teacher, seqs), batch_conditionals(student, seqs)
    tv = 0.5 * np.abs(pt - ps).sum(axis=-1)  # (n, T): position t predicts token t from y_<t
    mask = np.zeros(seqs.shape, dtype=bool)
    for i, seq in enumerate(seqs):
        t0 = teacher.trigger_time(seq[:-1])
        if t0 is not None:
            mask[i, t0:] = True  # the conditional at position t sees y_<t, which includes the crossing
    return float(tv[mask].mean()) if mask.any() else float("nan")
