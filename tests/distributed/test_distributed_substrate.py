"""icml26.common.distributed on 2 gloo processes, and its no-op behaviour on one."""

from __future__ import annotations

import pytest
import torch

from icml26.common import distributed as D
from tests.distributed_harness import run_ranks

pytestmark = pytest.mark.dist


def _reduce(rank, world):
    x = torch.tensor([float(rank + 1), 2.0], dtype=torch.float64)
    D.all_reduce_(x, "sum")
    y = torch.tensor([float(rank)])
    D.all_reduce_(y, "mean")
    return x, y, D.world(), D.all_gather_objects({"r": rank})


def test_all_reduce_and_gather_on_two_ranks():
    results = run_ranks(_reduce, 2)
    for rank, (x, y, w, objs) in enumerate(results):
        assert torch.equal(x, torch.tensor([3.0, 4.0], dtype=torch.float64)) and x.dtype == torch.float64
        assert torch.equal(y, torch.tensor([0.5]))
        assert w == (rank, 2) and objs == [{"r": 0}, {"r": 1}]


def test_single_process_is_a_no_op():
    x = torch.ones(3)
    assert D.all_reduce_(x) is x and torch.equal(x, torch.ones(3))
    assert D.world() == (0, 1) and D.all_gather_objects(5) == [5]
    assert D.local(x) is x and D.gather_full(x) is x and not D.is_sharded(x)
    with pytest.raises(ValueError, match="op"):
        D.all_reduce_(x, "max")


def _fsdp_shards(rank, world):
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    full = model.weight.detach().clone()
    fully_shard(model)
    w = model.weight
    sq = D.local(w).pow(2).sum()
    D.all_reduce_(sq)
    return D.is_sharded(w), float(sq), torch.allclose(D.gather_full(w).detach(), full), float(full.pow(2).sum())


def test_fsdp2_local_shards_reduce_to_the_full_norm():
    for sharded, sq, same, want in run_ranks(_fsdp_shards, 2):
        assert sharded and same
        assert sq == pytest.approx(want, rel=1e-6)
