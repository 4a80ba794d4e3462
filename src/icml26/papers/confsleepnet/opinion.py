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
Every row of ``D`` sums to one, so lifting keeps the total evidence ``sum_k e_k``, but **not**
``u``: ``u = K / S`` with ``S = sum e + K``, and ``K`` grows from 3 to 5, so a lifted opinion
is more uncertain than the coarse one it came from (``u_5 = 5 / (E + 5) > 3 / (E + 3) = u_3``
for total evidence ``E > 0``).

Names: :class:`Opinion` stores ``belief`` and ``uncertainty``; the subjective-logic names
``b`` and ``u`` are the same tensors, and :meth:`Opinion.from_dirichlet` (= ``from_alpha``)
builds one from Dirichlet parameters ``alpha``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
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
    try:
        labels = [int(c) for c in label_map]
    except (TypeError, ValueError):
        raise TypeError(f"label_map={label_map!r} must be a sequence of category indices") from None
    if any(float(c) != int(c) for c in label_map):
        raise ValueError(f"label_map={tuple(label_map)!r} must hold integer category indices")
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
        ``(..., K)`` evidence on the fine categories (a tensor; NumPy evidence is converted).
        The total evidence is kept; ``u = K / S`` is not (``K`` changes). NaN propagates.
    """
    if isinstance(evidence, np.ndarray):
        evidence = torch.from_numpy(evidence)
    if not isinstance(evidence, Tensor):
        raise TypeError(f"evidence must be a torch.Tensor or a NumPy array, got {type(evidence).__name__}")
    if evidence.ndim < 1:
        raise ValueError("evidence must be (..., K_view), got a scalar")
    if not evidence.is_floating_point():
        evidence = evidence.to(torch.get_default_dtype())
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

    ``belief`` (``b``): ``(..., K)`` masses ``b_k >= 0``; ``uncertainty`` (``u``): ``(...)``
    mass ``u > 0``, with ``sum_k b_k + u = 1``. Equivalent to ``Dir(alpha)`` with
    ``alpha = b K / u + 1``. Build one with :meth:`from_evidence` or :meth:`from_dirichlet`
    (``from_alpha``), or directly from ``(belief, uncertainty)``.

    Construction validates: finite masses, ``b >= 0``, ``0 < u <= 1`` and
    ``sum_k b_k + u = 1`` within ``1e-3`` (rounding of fused opinions stays far below it),
    so a negative belief or a total mass above 1 is a ``ValueError``, never fused silently.
    """

    belief: Tensor
    uncertainty: Tensor

    #: Slack for ``b >= 0`` and ``sum b + u = 1`` (float32 rounding after many fusions is ~1e-6).
    TOLERANCE = 1e-3

    def __post_init__(self) -> None:
        if not isinstance(self.belief, Tensor) or not isinstance(self.uncertainty, Tensor):
            raise TypeError("belief and uncertainty must be torch.Tensors (use Opinion.from_evidence for arrays)")
        if self.belief.ndim < 1 or self.belief.shape[:-1] != self.uncertainty.shape:
            raise ValueError(f"belief {tuple(self.belief.shape)} and uncertainty "
                             f"{tuple(self.uncertainty.shape)} must share the batch shape (..., K) vs (...)")
        if self.belief.shape[-1] < 1:
            raise ValueError("belief must have at least one category (K >= 1)")
        if not (self.belief.is_floating_point() and self.uncertainty.is_floating_point()):
            raise TypeError("belief and uncertainty must be floating-point tensors")
        with torch.no_grad():
            if not (bool(torch.isfinite(self.belief).all()) and bool(torch.isfinite(self.uncertainty).all())):
                raise ValueError("belief and uncertainty must be finite (NaN or inf in an opinion)")
            if bool((self.belief < -self.TOLERANCE).any()):
                raise ValueError(f"belief masses must be >= 0, got min {float(self.belief.min()):.3g}")
            if bool((self.uncertainty <= 0).any()) or bool((self.uncertainty > 1 + self.TOLERANCE).any()):
                raise ValueError("uncertainty must lie in (0, 1]")
            total = self.belief.sum(-1) + self.uncertainty
            if bool(((total - 1).abs() > self.TOLERANCE).any()):
                worst = float(total.flatten()[(total - 1).abs().flatten().argmax()])
                raise ValueError(f"sum_k b_k + u must be 1, got {worst:.6g}; build opinions with "
                                 f"Opinion.from_evidence or from_dirichlet")

    @property
    def b(self) -> Tensor:
        """Belief masses ``b`` (subjective-logic name of :attr:`belief`), ``(..., K)``."""
        return self.belief

    @property
    def u(self) -> Tensor:
        """Uncertainty mass ``u`` (subjective-logic name of :attr:`uncertainty`), ``(...)``."""
        return self.uncertainty

    @classmethod
    def from_evidence(cls, evidence: Tensor | np.ndarray) -> "Opinion":
        """Opinion of ``(..., K)`` non-negative evidence: ``S = sum e + K``, ``b = e/S``, ``u = K/S``.

        ``evidence`` may be a tensor or a NumPy array; negative, NaN or inf evidence is a ``ValueError``.
        """
        if isinstance(evidence, np.ndarray):
            evidence = torch.from_numpy(evidence)
        if not isinstance(evidence, Tensor):
            raise TypeError(f"evidence must be a torch.Tensor or a NumPy array, got {type(evidence).__name__}")
        if evidence.ndim < 1 or evidence.shape[-1] < 1:
            raise ValueError(f"evidence must be (..., K) with K >= 1, got shape {tuple(evidence.shape)}")
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
    def from_alpha(cls, alpha: Tensor | np.ndarray) -> "Opinion":
        """Opinion of Dirichlet parameters ``alpha >= 1``, ``(..., K)`` (tensor or NumPy array)."""
        if isinstance(alpha, np.ndarray):
            alpha = torch.from_numpy(alpha)
        if not isinstance(alpha, Tensor):
            raise TypeError(f"alpha must be a torch.Tensor or a NumPy array, got {type(alpha).__name__}")
        if bool((alpha < 1).any()):
            raise ValueError("alpha must be >= 1 (alpha = evidence + 1)")
        return cls.from_evidence(alpha - 1)

    @classmethod
    def from_dirichlet(cls, alpha: Tensor | np.ndarray) -> "Opinion":
        """Opinion of a Dirichlet ``Dir(alpha)``, ``alpha >= 1`` (the same as :meth:`from_alpha`):
        ``b_k = (alpha_k - 1) / S``, ``u = K / S``, ``S = sum_k alpha_k``."""
        return cls.from_alpha(alpha)

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
    """Raise ``ValueError`` unless two opinions are over the same number of categories
    (``TypeError`` unless both are :class:`Opinion` objects)."""
    for name, op in (("op1", op1), ("op2", op2)):
        if not isinstance(op, Opinion):
            raise TypeError(f"{name} must be an Opinion (build one with Opinion.from_evidence), "
                            f"got {type(op).__name__}")
    if op1.num_classes != op2.num_classes:
        raise ValueError(f"opinions over {op1.num_classes} and {op2.num_classes} categories cannot be fused; "
                         f"lift both to the same categories first (see lift)")
