"""Seeding and thread helpers."""

import numpy as np
import pytest
import torch

from icml26.common.seeding import seed_everything, torch_threads


def test_seed_everything_repeats_every_generator():
    a = seed_everything(3)
    first = (a.random(), np.random.rand(), torch.rand(1).item())
    b = seed_everything(3)
    assert (b.random(), np.random.rand(), torch.rand(1).item()) == first
    with pytest.raises(ValueError, match="seed=-1"):
        seed_everything(-1)


def test_torch_threads_sets_and_restores():
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with torch_threads(target) as used:
        assert used == target == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with torch_threads(0) as used:  # 0 keeps the current setting
        assert used == before
    with pytest.raises(RuntimeError, match="inside"):
        with torch_threads(target):
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before  # restored on error too
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="threads="):
            with torch_threads(bad):
                pass
