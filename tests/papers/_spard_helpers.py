"""Shared helpers of the SPARD tests: the autouse one-thread fixture and a tiny linear classification task."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one(one_thread):
    yield


def _linear_task(seed: int = 0, n: int = 64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    return [(x[i:i + 16], y[i:i + 16]) for i in range(0, n, 16)]
