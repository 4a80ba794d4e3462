"""Subjective-logic opinions from Dirichlet evidence, and lifting between category structures.

ConfSleepNet (Tian et al., ICML 2026, arXiv 2605.17021) turns each view's non-negative
evidence ``e`` over its own categories into a Dirichlet ``Dir(alpha)``, ``alpha = e + 1``,
and that into an opinion (Jøsang's subjective logic):

1. strength ``S = sum_k alpha_k``;
2. belief masses ``b_k = (alpha_k - 1) / S = e_k / S``;
3. uncertainty ``u = K / S``, so that ``sum_k b_k + u = 1``;
4. back: ``S = K / u``, ``alpha = b * S + 1``.

Views with a coarser category structure (the "hybrid" EOG head: W, NREM, REM) are lifted
to the five AASM stages before fusion by a row-stochastic matrix ``D``:
``e_5 = e_3 @ D``, NREM evidence split evenly over N1, N2 and N3 (the authors' ``test.py``).
Every row of ``D`` sums to one, so lifting keeps the total evidence (and so ``u``).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch
from torch import Tensor

__all__ = [
    "FIVE_TO_THREE",
    "HYBRID_CATEGORIES",
    "STAGES",
    "THREE_TO_FIVE",
    "Opinion",
    "lift",
    "lifting_matrix",
]

#: The five AASM sleep stages, in label order (N3 = R&K S3 + S4).
STAGES: tuple[str, ...] = ("W", "N1", "N2", "N3", "REM")
#: The hybrid category structure of the EOG (and EMG) heads.
HYBRID_CATEGORIES: tuple[str, ...] = ("W", "NREM", "REM")
#: Hybrid category of each of the five stages: W -> W, N1/N2/N3 -> NREM, REM -> REM.
FIVE_TO_THREE: tuple[int, ...] = (0, 1, 1, 1, 2)
#: The authors' lifting matrix ``D`` (3 x 5): NREM evidence split evenly over N1, N2, N3.
THREE_TO_FIVE: tuple[tuple[float, ...], ...] = (
    (1.0, 0.0, 0.0, 0.0, 0.0),
    (0.0, 1 / 3, 1 / 3, 1 / 3, 0.0),
    (0.0, 0.0, 0.0, 0.0, 1.0),
)


def lifting_matrix(label_map: Sequence[int], *, dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> Tensor:
    """The lifting matrix of a coarse category structure, ``(K_view, K_stages)``.

    ``label_map[s]`` is the coarse category of fine stage ``s``. Row ``c`` spreads the
    evidence of category ``c`` evenly over the stages it contains, so
    ``lifting_matrix(FIVE_TO_THREE)`` is :data:`THREE_TO_FIVE` and
    ``lifting_matrix(range(5))`` is the identity.
    """
    labels = [int(c) for c in label_map]
    if not labels or min(labels) < 0:
        raise ValueError(f"label_map={tuple(label_map)!r} must list a category index >= 0 per stage")
    n_view = max(labels) + 1
    missing = sorted(set(range(n_view)) - set(labels))
    if missing:
        raise ValueError(f"label_map={tuple(labels)!r} never uses categories {missing}; number them 0..K-1")
    matrix = torch.zeros(n_view, len(labels), dtype=dtype, device=device)
    for stage, category in enumerate(labels):
        matrix[category, stage] = 1.0
    return matrix / matrix.sum(dim=1, keepdim=True)


def lift(evidence: Tensor, mapping: Tensor | Sequence[Sequence[float]]) -> Tensor:
    """Lift evidence over coarse categories to the fine ones: ``e_fine = e_coarse @ D``.

    Args:
        evidence: ``(..., K_view)`` non-negative evidence.
        mapping: ``D``, ``(K_view, K)``, non-negative with rows summing to one (e.g.
            :data:`THREE_TO_FIVE`), so total evidence is preserved.

    Returns:
        ``(..., K)`` evidence on the fine categories.
    """
    mapping = torch.as_tensor(mapping, dtype=evidence.dtype, device=evidence.device)
    if mapping.ndim != 2 or mapping.shape[0] != evidence.shape[-1]:
        raise ValueError(f"mapping of shape {tuple(mapping.shape)} does not lift evidence with "
                         f"{evidence.shape[-1]} categories; it must be (K_view={evidence.shape[-1]}, K)")
    if bool((mapping < 0).any()) or not torch.allclose(mapping.sum(1), torch.ones_like(mapping[:, 0]),
                                                        atol=1e-5):
        raise ValueError("mapping must be non-negative with rows summing to 1 (each coarse category's "
                         "evidence is shared out, none created or lost); see lifting_matrix")
    # e_K = e_view D
    return evidence @ mapping


@dataclasses.dataclass(frozen=True)
class Opinion:
    """A batch of subjective-logic opinions over ``K`` categories.

    ``belief``: ``(..., K)`` masses ``b_k >= 0``; ``uncertainty``: ``(...)`` mass ``u > 0``,
    with ``sum_k b_k + u = 1``. Equivalent to ``Dir(alpha)`` with ``alpha = b K / u + 1``.
    Build one with :meth:`from_evidence` or :meth:`from_alpha`.
    """

    belief: Tensor
    uncertainty: Tensor

    def __post_init__(self) -> None:
        if self.belief.shape[:-1] != self.uncertainty.shape:
            raise ValueError(f"belief {tuple(self.belief.shape)} and uncertainty "
                             f"{tuple(self.uncertainty.shape)} must share the batch shape (..., K) vs (...)")

    @classmethod
    def from_evidence(cls, evidence: Tensor) -> "Opinion":
        """Opinion of ``(..., K)`` non-negative evidence: ``S = sum e + K``, ``b = e/S``, ``u = K/S``."""
        if not torch.is_floating_point(evidence):
            evidence = evidence.float()
        if bool((evidence < 0).any()) or not bool(torch.isfinite(evidence).all()):
            raise ValueError("evidence must be finite and >= 0 (apply softplus/ReLU/exp to the logits)")
        k = evidence.shape[-1]
        # S = sum_k (e_k + 1)
        strength = evidence.sum(-1) + k
        # b_k = e_k / S,  u = K / S
        return cls(evidence / strength.unsqueeze(-1), k / strength)

    @classmethod
    def from_alpha(cls, alpha: Tensor) -> "Opinion":
        """Opinion of Dirichlet parameters ``alpha >= 1``, ``(..., K)``."""
        if bool((alpha < 1).any()):
            raise ValueError("alpha must be >= 1 (alpha = evidence + 1)")
        return cls.from_evidence(alpha - 1)

    @property
    def num_classes(self) -> int:
        """K, the number of categories."""
        return self.belief.shape[-1]

    @property
    def strength(self) -> Tensor:
        """Dirichlet strength ``S = K / u``, ``(...)``."""
        return self.num_classes / self.uncertainty

    @property
    def evidence(self) -> Tensor:
        """``e = b S``, ``(..., K)``."""
        return self.belief * self.strength.unsqueeze(-1)

    @property
    def alpha(self) -> Tensor:
        """Dirichlet parameters ``alpha = b S + 1``, ``(..., K)``."""
        return self.evidence + 1

    @property
    def probability(self) -> Tensor:
        """Projected probability ``b + u/K = alpha / S`` (the Dirichlet mean), ``(..., K)``."""
        return self.belief + (self.uncertainty / self.num_classes).unsqueeze(-1)

    def prediction(self) -> Tensor:
        """Most believed category (= argmax alpha), ``(...)`` int64."""
        return self.belief.argmax(-1)

    def is_valid(self, atol: float = 1e-5) -> bool:
        """Whether every opinion has ``b >= 0``, ``u > 0`` and ``sum b + u = 1`` (within ``atol``)."""
        total = self.belief.sum(-1) + self.uncertainty
        return bool((self.belief >= -atol).all() and (self.uncertainty > 0).all()
                    and torch.allclose(total, torch.ones_like(total), atol=atol))

    def __getitem__(self, index) -> "Opinion":
        """Index the batch dimensions (``op[mask]``, ``op[:10]``)."""
        return Opinion(self.belief[index], self.uncertainty[index])

    def to(self, *args, **kwargs) -> "Opinion":
        """Move or cast both tensors (``op.to("cuda")``, ``op.to(torch.float64)``)."""
        return Opinion(self.belief.to(*args, **kwargs), self.uncertainty.to(*args, **kwargs))


def same_categories(op1: "Opinion", op2: "Opinion") -> None:
    """Raise ``ValueError`` unless two opinions are over the same number of categories."""
    if op1.num_classes != op2.num_classes:
        raise ValueError(f"opinions over {op1.num_classes} and {op2.num_classes} categories cannot be fused; "
                         f"lift both to the same categories first (see lift)")
