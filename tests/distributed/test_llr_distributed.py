"""LLR under torch.distributed (2 gloo ranks): the same multipliers on every rank, equal to one
process on the union batch, under DDP and FSDP2 (issue #31)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.distributed_harness import run_ranks

pytestmark = pytest.mark.dist
STEPS, BATCH = 6, 8


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(48, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 48), nn.ReLU(),
                         nn.Linear(48, 4))


def _data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(STEPS, 2 * BATCH, 48, generator=g), torch.randint(0, 4, (STEPS, 2 * BATCH), generator=g)


def _train(model, x, y, rank=None):
    from icml26.papers.llr import LayerwiseLR, layerwise_param_groups

    opt = torch.optim.AdamW(layerwise_param_groups(model), lr=1e-3)
    llr = LayerwiseLR(model, opt, total_steps=STEPS, every=2, ramp_steps=0, active_fraction=1.0, min_eigs=10,
                      exclude=("4",))
    for t in range(STEPS):
        xs, ys = (x[t], y[t]) if rank is None else (x[t, rank * BATCH:(rank + 1) * BATCH], y[t, rank * BATCH:(rank + 1) * BATCH])
        loss = nn.functional.cross_entropy(model(xs), ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        llr.step()
    return llr.multipliers


def _single():
    model = _model()
    x, y = _data()
    mult = _train(model, x, y)
    return mult, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _ddp(rank, world):
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(_model())
    x, y = _data()
    mult = _train(model, x, y, rank)
    return {k.removeprefix("module."): v for k, v in mult.items()}, \
        {k: v.detach().clone() for k, v in model.module.state_dict().items()}


def _fsdp(rank, world):
    from torch.distributed.fsdp import fully_shard

    from icml26.common.distributed import gather_full

    model = _model()
    fully_shard(model)
    x, y = _data()
    mult = _train(model, x, y, rank)
    return mult, {k: gather_full(v).detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("runner", [_ddp, _fsdp], ids=["ddp", "fsdp2"])
def test_llr_matches_one_process_on_the_union_batch(runner):
    ref_mult, ref_state = _single()
    assert len(ref_mult) >= 3 and len(set(round(v, 6) for v in ref_mult.values())) > 1
    results = run_ranks(runner, 2)
    for mult, state in results:
        assert mult.keys() == ref_mult.keys()
        for name in mult:
            assert mult[name] == pytest.approx(ref_mult[name], abs=1e-6), name
        for name, value in state.items():
            assert torch.allclose(value, ref_state[name], atol=1e-6), name
    assert results[0][0] == results[1][0]
