"""Marked-segment topic retrieval: synthetic long documents for context extension (no downloads).

Modelled on LongChat's topic retrieval, made position-free: HiCI's global integration pools the
segments symmetrically, so "the first topic" would be reachable in chunked mode only by relaying
order across layers; "the marked segment's topic" is reachable from any segment.

* T topics, each a bigram Markov chain with rows ~ Dirichlet(alpha). With ``topic_tokens_each = k``
  (default 12) topic t writes only the content tokens ``[k t, k t + k)`` (disjoint vocabularies: any
  token names its topic); with ``None`` every topic ranges over all V tokens (the issue's chains,
  which a tiny model did not learn to tell apart in our budgets, see README).
* A document is S segments of G tokens; segment j follows topic t_j (drawn uniformly, independently).
  Exactly one segment, anywhere (the first included), starts with ``MARK``; every other segment
  starts with ``SEP`` (the segments are delimited, so that full attention can tell the marked
  segment's tokens from the next segment's: without delimiters no arm learnt the task, see README).
* The last token of the document is ``QUERY``; the next token (the answer) is the marked segment's
  topic token.

Vocabulary: ``[0, V)`` content, ``[V, V + T)`` topic tokens, then ``MARK``, ``QUERY``, ``SEP``.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from icml26.common.argcheck import check_int

__all__ = ["TopicDocuments", "TopicRetrievalTask"]


@dataclasses.dataclass
class TopicDocuments:
    """A batch of documents.

    Attributes:
        input_ids: ``(n, S * G)`` int64, the documents (the last token is ``QUERY``).
        answer: ``(n,)`` the answer token (the marked segment's topic token).
        topics: ``(n, S)`` topic index of each segment.
        marked: ``(n,)`` index of the marked segment.
    """

    input_ids: torch.Tensor
    answer: torch.Tensor
    topics: torch.Tensor
    marked: torch.Tensor

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device) -> "TopicDocuments":
        return TopicDocuments(*(getattr(self, f.name).to(device) for f in dataclasses.fields(self)))

    def batch(self, index) -> "TopicDocuments":
        return TopicDocuments(*(getattr(self, f.name)[index] for f in dataclasses.fields(self)))


@dataclasses.dataclass(frozen=True)
class TopicRetrievalTask:
    """The topics (bigram chains) and the document layout."""

    num_topics: int = 8
    """T, topics (and answer classes; chance 1/T)."""
    content_vocab: int = 96
    """V, content tokens shared by the topics."""
    segment_tokens: int = 128
    """G, tokens per segment."""
    concentration: float = 0.1
    """alpha of the Dirichlet rows of each topic's transition matrix."""
    topic_tokens_each: int | None = 12
    """Content tokens per topic (disjoint blocks; T * k <= V), or None: every topic uses all V."""
    seed: int = 0
    """Seeds the topics' chains."""

    def __post_init__(self) -> None:
        for name in ("num_topics", "content_vocab", "segment_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ValueError(f"{name}={value!r} must be an integer >= 2")
        if not (isinstance(self.concentration, (int, float)) and np.isfinite(self.concentration)
                and self.concentration > 0):
            raise ValueError(f"concentration={self.concentration!r} must be a positive finite number")
        k = self.topic_tokens_each
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2
                              or k * self.num_topics > self.content_vocab):
            raise ValueError(f"topic_tokens_each={k!r} must be None or an integer >= 2 with "
                             f"topic_tokens_each * num_topics <= content_vocab={self.content_vocab}")
        check_int(self.seed, "seed", low=0)

    @property
    def topic_tokens(self) -> np.ndarray:
        """Token ids of the T topics."""
        return np.arange(self.content_vocab, self.content_vocab + self.num_topics)

    @property
    def mark(self) -> int:
        return self.content_vocab + self.num_topics

    @property
    def query(self) -> int:
        return self.mark + 1

    @property
    def sep(self) -> int:
        return self.mark + 2

    @property
    def vocab_size(self) -> int:
        """Number of token ids used (content, topics, MARK, QUERY, SEP)."""
        return self.sep + 1

    def chains(self) -> tuple[np.ndarray, np.ndarray]:
        """``(initial (T, V), transition (T, V, V))`` probabilities of the topics."""
        rng = np.random.default_rng([self.seed, 20])
        v, t = self.content_vocab, self.num_topics
        k = self.topic_tokens_each or v
        transition = np.zeros((t, v, v))
        initial = np.zeros((t, v))
        for topic in range(t):
            block = slice(topic * k, topic * k + k) if self.topic_tokens_each else slice(0, v)
            rows = rng.dirichlet(np.full(k, self.concentration), size=v)  # every row, so any token has a successor
            transition[topic][:, block] = rows
            initial[topic, block] = rng.dirichlet(np.full(k, self.concentration))
        return initial, transition

    @functools.cached_property
    def _cumulative_chains(self) -> tuple[np.ndarray, np.ndarray]:
        """``(initial, transition)`` of :meth:`chains`, cumulated over the last axis, read-only.

        Computed once per task: every :meth:`sample` call (one per training step) draws from the same
        chains, and :meth:`chains` is deterministic (its own generator, seeded by ``seed``).
        """
        initial, transition = self.chains()
        cum_init, cum_trans = initial.cumsum(-1), transition.cumsum(-1)
        cum_init.flags.writeable = cum_trans.flags.writeable = False
        return cum_init, cum_trans

    def _segments(self, topics: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Content tokens ``(n, S, G)`` for topic indices ``(n, S)``."""
        cum_init, cum_trans = self._cumulative_chains
        n, s = topics.shape
        g = self.segment_tokens
        out = np.empty((n, s, g), dtype=np.int64)
        u = rng.random((n, s, g))
        flat_t = topics.reshape(-1)
        uu = u.reshape(-1, g)
        tok = np.minimum((uu[:, 0:1] > cum_init[flat_t]).sum(-1), self.content_vocab - 1)
        out.reshape(-1, g)[:, 0] = tok
        for i in range(1, g):
            rows = cum_trans[flat_t, tok]  # (n*S, V)
            tok = np.minimum((uu[:, i:i + 1] > rows).sum(-1), self.content_vocab - 1)
            out.reshape(-1, g)[:, i] = tok
        return out

    def sample(self, n: int, num_segments: int, rng: np.random.Generator) -> TopicDocuments:
        """``n`` documents of ``num_segments`` segments (``num_segments * G`` tokens each)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n={n!r} must be a positive integer")
        if isinstance(num_segments, bool) or not isinstance(num_segments, int) or num_segments < 1:
            raise ValueError(f"num_segments={num_segments!r} must be a positive integer")
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
        topics = rng.integers(0, self.num_topics, size=(n, num_segments))
        marked = rng.integers(0, num_segments, size=n)
        segs = self._segments(topics, rng)
        segs[:, :, 0] = self.sep
        segs[np.arange(n), marked, 0] = self.mark
        ids = segs.reshape(n, -1)
        ids[:, -1] = self.query
        answer = self.topic_tokens[topics[np.arange(n), marked]]
        return TopicDocuments(torch.from_numpy(ids), torch.from_numpy(answer), torch.from_numpy(topics),
                              torch.from_numpy(marked))

