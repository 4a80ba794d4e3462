"""Baselines of ConfSleepNet's comparison: two fusion rules and a late-fusion network.

* :func:`fuse_dempster`: Dempster's rule restricted to singletons and the whole frame, the
  "reduced" rule of TMC (Han et al., ICLR 2021) and the authors' ``DS_Combin_two``::

      kappa = sum_{i != j} b1_i b2_j
      b = (b1 * b2 + b1 u2 + b2 u1) / (1 - kappa),   u = u1 u2 / (1 - kappa)

* :func:`fuse_average`: the averaging rule of RCML (Xu et al., AAAI 2024), the authors'
  ``Conflict_Combin_two``::

      b = (u2 b1 + u1 b2) / (u1 + u2),   u = 2 u1 u2 / (u1 + u2)

  which is ``alpha = (alpha1 + alpha2) / 2``.
* :class:`LateFusionNet`: one encoder per channel group, features concatenated, one
  softmax head trained with cross-entropy (uncertainty ``1 - max softmax``).

Both rules have the signature of :func:`~icml26.papers.confsleepnet.fusion.fuse_conflict_aware`.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.confsleepnet.opinion import Opinion, same_categories

__all__ = ["LateFusionNet", "fuse_average", "fuse_dempster"]


def fuse_dempster(op1: Opinion, op2: Opinion) -> Opinion:
    """Dempster's rule on singleton-plus-frame masses (TMC's reduced rule); associative."""
    same_categories(op1, op2)
    b1, b2 = op1.belief, op2.belief
    u1, u2 = op1.uncertainty.unsqueeze(-1), op2.uncertainty.unsqueeze(-1)
    # kappa = sum_{i != j} b1_i b2_j = sum b1 * sum b2 - sum_k b1_k b2_k
    kappa = b1.sum(-1) * b2.sum(-1) - (b1 * b2).sum(-1)
    norm = (1 - kappa).unsqueeze(-1)
    # b = (b1 b2 + b1 u2 + b2 u1) / (1 - kappa);  u = u1 u2 / (1 - kappa)
    b = (b1 * b2 + b1 * u2 + b2 * u1) / norm
    u = (u1 * u2 / norm).squeeze(-1)
    return Opinion(b, u)


def fuse_average(op1: Opinion, op2: Opinion) -> Opinion:
    """RCML's average rule: ``alpha = (alpha1 + alpha2) / 2``; commutative, not associative."""
    same_categories(op1, op2)
    u1, u2 = op1.uncertainty.unsqueeze(-1), op2.uncertainty.unsqueeze(-1)
    # b = (u2 b1 + u1 b2) / (u1 + u2);  u = 2 u1 u2 / (u1 + u2)
    b = (u2 * op1.belief + u1 * op2.belief) / (u1 + u2)
    u = (2 * u1 * u2 / (u1 + u2)).squeeze(-1)
    return Opinion(b, u)


class LateFusionNet(nn.Module):
    """Late fusion by concatenation: per-group encoders, concatenated features, softmax head.

    Args:
        encoders: one module per channel group, each mapping ``(N, len(group), T)`` to
            ``(N, F_g)`` features (e.g. :class:`~icml26.papers.confsleepnet.model.EpochEncoder`).
        channel_groups: the channel indices each encoder reads.
        num_classes: output classes (5 stages).
    """

    def __init__(self, encoders: Sequence[nn.Module], channel_groups: Sequence[Sequence[int]],
                 num_classes: int = 5) -> None:
        super().__init__()
        check_int(num_classes, "num_classes", low=1)
        if len(encoders) != len(channel_groups) or not encoders:
            raise ValueError("give one channel group per encoder (and at least one encoder)")
        if any(not isinstance(getattr(e, "out_features", None), int) for e in encoders):
            raise TypeError("every encoder needs an integer out_features attribute (its feature width), "
                            "as EpochEncoder has")
        if any(not g or min(int(c) for c in g) < 0 for g in channel_groups):
            raise ValueError(f"channel_groups={channel_groups!r} must list channel indices >= 0 per encoder")
        self.encoders = nn.ModuleList(encoders)
        self.channel_groups = [tuple(int(c) for c in g) for g in channel_groups]
        features = sum(int(getattr(e, "out_features")) for e in encoders)
        self.head = nn.Linear(features, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Logits ``(N, num_classes)`` of signals ``x: (N, C, T)``."""
        needed = 1 + max(max(g) for g in self.channel_groups)
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[1] < needed:
            raise ValueError(f"x must be signals (N, C, T) with C >= {needed}, got "
                             f"{tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
        feats = [enc(x[:, list(group)]) for enc, group in zip(self.encoders, self.channel_groups)]
        return self.head(torch.cat(feats, dim=-1))

    def predict(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Predicted class ``(N,)`` and uncertainty ``1 - max softmax`` ``(N,)``."""
        prob = self(x).softmax(-1)
        top, pred = prob.max(-1)
        return pred, 1 - top
