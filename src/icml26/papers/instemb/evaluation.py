"""AttrWorld evaluation of any instruction-conditioned encoder: NMI, Inst-STS Spearman, sensitivity.

:class:`AttrWorldEval` embeds held-out texts under the 12 instructions (or a subset of them: an
attribute or paraphrase held out of training) with an encoder's ``encode(texts, instruction, pooling=…)``
and computes the metrics of :mod:`~icml26.papers.instemb.analysis`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from icml26.papers.instemb.analysis import (
    inst_sts_pairs,
    inst_sts_spearman,
    instruction_nmi,
    instruction_sensitivity,
)
from icml26.papers.instemb.data import ATTRIBUTES, INSTRUCTIONS, AttrWorld

__all__ = ["EVAL_INSTRUCTIONS", "ArmMetrics", "AttrWorldEval"]

#: (attribute, paraphrase index) of every evaluation instruction, in a fixed order.
EVAL_INSTRUCTIONS: list[tuple[str, int]] = [(a, p) for a in ATTRIBUTES for p in range(len(INSTRUCTIONS[a]))]


@dataclasses.dataclass
class ArmMetrics:
    """The three metrics of one embedding."""

    nmi: float
    """k-means NMI against the asked attribute, mean over the evaluated instructions."""
    spearman: float
    """Inst-STS Spearman over the evaluator's pairs."""
    sensitivity: float
    """Mean cosine of one text under instructions about different attributes (lower is better; NaN when
    the evaluated instructions ask about one attribute only)."""

    @property
    def score(self) -> float:
        """Mean of NMI and Spearman (the composite of the ablation checks)."""
        return (self.nmi + self.spearman) / 2

    def as_dict(self, **extra: float) -> dict[str, float]:
        return {"nmi": self.nmi, "spearman": self.spearman, "sensitivity": self.sensitivity, **extra}


class AttrWorldEval:
    """Held-out AttrWorld texts, their Inst-STS pairs, and the metrics of an encoder on them.

    Args:
        world: the evaluation texts.
        n_pairs: Inst-STS pairs (half matching).
        pair_rng: the generator the pairs are drawn from.
        kmeans_seed: ``random_state`` of k-means.
        instructions: the ``(attribute, paraphrase index)`` instructions evaluated (default: all 12,
            :data:`EVAL_INSTRUCTIONS`); e.g. an attribute held out of training.
    """

    def __init__(self, world: AttrWorld, n_pairs: int, pair_rng: np.random.Generator, *, kmeans_seed: int = 0,
                 instructions: list[tuple[str, int]] | None = None) -> None:
        if not isinstance(world, AttrWorld):
            raise TypeError("world must be an AttrWorld")
        self.instructions = list(EVAL_INSTRUCTIONS if instructions is None else instructions)
        unknown = [i for i in self.instructions if tuple(i) not in EVAL_INSTRUCTIONS]
        if unknown or not self.instructions:
            raise ValueError(f"instructions must be a non-empty list of (attribute, paraphrase) pairs of "
                             f"EVAL_INSTRUCTIONS; {unknown[:3] or 'none given'}")
        self.index = [EVAL_INSTRUCTIONS.index(tuple(i)) for i in self.instructions]
        self.texts = list(world.texts)
        self.labels = np.stack([world.values[a] for a, _ in self.instructions])
        self.groups = np.array([list(ATTRIBUTES).index(a) for a, _ in self.instructions])
        self.pairs = inst_sts_pairs(self.labels, n_pairs, pair_rng)
        self.kmeans_seed = kmeans_seed

    def embed(self, encoder: Any, pooling: str | None = None) -> np.ndarray:
        """``(I, n, d)``: the texts under each evaluated instruction, ``encoder.encode(texts, instruction, pooling=…)``."""
        out = []
        for a, p in self.instructions:
            e = encoder.encode(self.texts, INSTRUCTIONS[a][p], pooling=pooling)
            out.append(e.numpy() if hasattr(e, "numpy") else np.asarray(e))
        return np.stack(out)

    def metrics(self, embeddings: np.ndarray) -> ArmMetrics:
        """The metrics of ``(I, n, d)`` embeddings of the evaluated instructions, or of ``(12, n, d)`` embeddings
        under every instruction (of which the evaluated ones are read): one embedding serves several evaluators."""
        embeddings = np.asarray(embeddings)
        if embeddings.shape[0] == len(EVAL_INSTRUCTIONS) and len(self.instructions) != len(EVAL_INSTRUCTIONS):
            embeddings = embeddings[self.index]
        if embeddings.shape[0] != len(self.instructions):
            raise ValueError(f"embeddings cover {embeddings.shape[0]} instructions; this evaluator reads "
                             f"{len(self.instructions)} (or all {len(EVAL_INSTRUCTIONS)})")
        several = len(set(self.groups.tolist())) > 1
        return ArmMetrics(nmi=float(instruction_nmi(embeddings, self.labels, seed=self.kmeans_seed).mean()),
                          spearman=inst_sts_spearman(embeddings, self.pairs),
                          sensitivity=instruction_sensitivity(embeddings, self.groups) if several else float("nan"))

    def __call__(self, encoder: Any, pooling: str | None = None) -> ArmMetrics:
        return self.metrics(self.embed(encoder, pooling))
