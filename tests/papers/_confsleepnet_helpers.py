"""Shared helpers of the ConfSleepNet tests: the fusion rules by name and random subjective opinions."""

from __future__ import annotations

import torch

from icml26.papers.confsleepnet import (
    Opinion,
    fuse_average,
    fuse_conflict_aware,
    fuse_dempster,
)


RULES = {"conflict_aware": fuse_conflict_aware, "dempster": fuse_dempster, "average": fuse_average}


DT = torch.float64


def random_opinion(gen: torch.Generator, n: int = 64, k: int = 5, scale: float = 20.0) -> Opinion:
    """Peaked-ish random evidence (Gamma-like via exp of normals)."""
    evidence = scale * torch.rand(n, k, generator=gen, dtype=DT) ** 3
    return Opinion.from_evidence(evidence)
