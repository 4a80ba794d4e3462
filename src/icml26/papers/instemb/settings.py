"""InstEmb's settings (loss and pooling) and the output of a forward pass, apart from the model."""

from __future__ import annotations

import dataclasses
import math

from torch import Tensor

__all__ = ["InstEmbOutput", "InstEmbSettings", "POOLINGS", "VIEWS"]

#: Pooling modes of :meth:`InstEmbModel.encode`.
POOLINGS = ("daap", "eos", "lookahead", "mean")
#: Positive views of the contrastive loss.
VIEWS = ("dropout", "teacher", "answer")


@dataclasses.dataclass(frozen=True)
class InstEmbSettings:
    """Loss and pooling settings of an :class:`InstEmbModel` (defaults: the paper brief §1, ours)."""

    tau: float = 0.05
    """InfoNCE temperature τ (not published; ours)."""
    distill_weight: float = 1.0
    """λ of ``L = L_con + λ L_dist`` (not published; ours)."""
    distill: str = "mse"
    """``"mse"`` (InstEmb-MSE) or ``"kl"`` (InstEmb-KL, decoders only: it needs the LM head)."""
    positionwise: float = 0.0
    """MSE only: weight of the position-wise look-ahead-k / output-token-k term (ours: off)."""
    kl_temperature: float = 1.0
    """KL only: softmax temperature."""
    views: tuple[str, ...] = VIEWS
    """Positive views of the contrastive loss, a subset of :data:`VIEWS`."""
    embedding_dropout: float = 0.1
    """Dropout on the input embeddings of the ``"dropout"`` view (SimCSE-style; ours, because a
    Llama has no dropout of its own); the model's own dropout also acts in training mode."""
    daap_weight: float = 1.0
    """``w`` of DAAP: ``e = n(n(h_eos) + w n(mean_k h_LA))``."""
    daap_mode: str = "sum"
    """``"sum"`` or ``"concat"`` (see :func:`~icml26.papers.instemb.pooling.daap_pool`)."""
    pooling: str = "daap"
    """Default pooling of :meth:`InstEmbModel.encode`, one of :data:`POOLINGS`."""
    prompt_template: str = "{instruction} {text}"
    """How instruction and input are joined (``{text}`` alone when the instruction is ``None``), or ``"chat"``:
    the tokenizer's chat template around one user turn ``"{instruction}\n{text}"``, its end-of-turn token
    (the tokenizer's ``eos``) being the anchor (:func:`~icml26.papers.instemb.prompting.chat_prompt`)."""

    def __post_init__(self) -> None:
        for name in ("tau", "distill_weight", "positionwise", "kl_temperature", "embedding_dropout", "daap_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name}={v!r} must be a finite non-negative number")
        if self.tau <= 0 or self.kl_temperature <= 0:
            raise ValueError(f"tau={self.tau} and kl_temperature={self.kl_temperature} must be positive")
        if self.embedding_dropout >= 1:
            raise ValueError(f"embedding_dropout={self.embedding_dropout} must be below 1")
        if self.distill not in ("mse", "kl"):
            raise ValueError(f"distill={self.distill!r} must be 'mse' or 'kl'")
        if self.daap_mode not in ("sum", "concat"):
            raise ValueError(f"daap_mode={self.daap_mode!r} must be 'sum' or 'concat'")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling={self.pooling!r} must be one of {', '.join(POOLINGS)}")
        views = tuple(self.views)
        if not views or any(v not in VIEWS for v in views) or len(set(views)) != len(views):
            raise ValueError(f"views={self.views!r} must be distinct names from {', '.join(VIEWS)} (at least one)")
        object.__setattr__(self, "views", views)
        if self.prompt_template != "chat" and ("{text}" not in self.prompt_template
                                               or "{instruction}" not in self.prompt_template):
            raise ValueError(f"prompt_template={self.prompt_template!r} must contain {{instruction}} and {{text}}")


@dataclasses.dataclass
class InstEmbOutput:
    """The anchors of a batch and its embedding.

    Attributes:
        h_eos: ``(B, d)`` final-layer state at the end-of-input token.
        h_la: ``(B, K, d)`` final-layer states at the look-ahead positions.
        embedding: ``(B, d)`` (``(B, 2d)`` for DAAP concat) unit-norm embedding of the pooling asked for.
    """

    h_eos: Tensor
    h_la: Tensor
    embedding: Tensor
