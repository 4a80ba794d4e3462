"""Shared helpers of the HAMU tests: random float64 instances and layer-wise gradients, a tiny MLP."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


DT = torch.float64


def _random_grads(rng: np.random.Generator, params, correlation: float = 0.0):
    g_r = [torch.tensor(rng.normal(size=p.shape), dtype=p.dtype) for p in params]
    g_f = [torch.tensor(rng.normal(size=p.shape), dtype=p.dtype) + correlation * a for a, p in zip(g_r, params)]
    return g_r, g_f


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()
