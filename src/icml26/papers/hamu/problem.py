"""The digits unlearning problem of the hamu reproduction: the MLP, its training, the MIA samples.

Reproduction code (not part of the method's API): ``experiment.py`` builds one :class:`Problem`
per (seed, ρ) and evaluates checkpoints with :func:`evaluate`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Problem", "evaluate", "matched_test_indices", "mlp", "train_mlp"]


def mlp(hidden: tuple[int, ...], generator: torch.Generator) -> nn.Sequential:
    """64 → hidden … → 10 with ReLUs, initialised U(±1/√fan_in) from ``generator``."""
    widths = (64, *hidden, 10)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        linear = nn.Linear(a, b)
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)
        layers.append(linear)
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def train_mlp(x: torch.Tensor, y: torch.Tensor, generator: torch.Generator, *, hidden: tuple[int, ...],
              epochs: int, batch: int, lr: float) -> nn.Sequential:
    """An MLP 64-hidden-10 (:func:`mlp`) trained with Adam on (x, y), in eval mode."""
    model = mlp(hidden, generator).to(x.device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator).to(x.device)
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def matched_test_indices(test_labels: np.ndarray, forget_labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Test samples with the forget set's label proportions (the non-members of the MIA)."""
    classes, counts = np.unique(forget_labels, return_counts=True)
    share = counts / counts.sum()
    available = np.array([(test_labels == c).sum() for c in classes])
    total = int(np.min(available / share))
    chosen = [rng.permutation(np.flatnonzero(test_labels == c))[: max(1, int(round(s * total)))]
              for c, s in zip(classes, share)]
    return np.sort(np.concatenate(chosen))


@dataclasses.dataclass
class Problem:
    """One (seed, ρ) unlearning problem: tensors and the reference numbers."""

    retain: tuple[torch.Tensor, torch.Tensor]
    forget: tuple[torch.Tensor, torch.Tensor]
    retain_test: tuple[torch.Tensor, torch.Tensor]
    mia_test: tuple[torch.Tensor, torch.Tensor]
    reference_forget_acc: float
    reference_retain_acc: float
    reference_auc: float
    original_forget_acc: float


def evaluate(model: nn.Module, problem: Problem) -> dict[str, Any]:
    xf, yf = problem.forget
    logits_f = model(xf)
    xt, yt = problem.retain_test
    xm, ym = problem.mia_test
    return {
        "forget_acc": float((logits_f.argmax(1) == yf).float().mean()),
        "retain_acc": float((model(xt).argmax(1) == yt).float().mean()),
        "forget_losses": F.cross_entropy(logits_f, yf, reduction="none").cpu().numpy(),
        "test_losses": F.cross_entropy(model(xm), ym, reduction="none").cpu().numpy(),
    }


