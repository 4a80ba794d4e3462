"""Shared helper of the Fox tests: random attention scores with the key sets of a planted token layout."""

from __future__ import annotations

import torch

from icml26.papers.fox import key_sets


def _scores_and_keys(batch=2, heads=8, keys=24, q=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, q, keys, generator=g) * 3
    ids = torch.tensor([[1, 4, 5, 6] + [3] * 16 + [7, 6, 8, 9][: keys - 20 - (q - 1)]] * batch)
    return scores, key_sets(ids, 3)
