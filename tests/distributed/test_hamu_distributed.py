"""HAMU under torch.distributed (2 gloo ranks): DDP and FSDP2 ranks take the same steps as one
process on the union batch (issue #31: DDP used to leave the ranks 0.09-0.18 apart)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.distributed_harness import run_ranks

pytestmark = pytest.mark.dist
STEPS, BATCH = 5, 6


def _model(dtype):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype)


def _data(dtype):
    g = torch.Generator().manual_seed(1)
    xr, xf = torch.randn(STEPS, 2 * BATCH, 10, generator=g), torch.randn(STEPS, 2 * BATCH, 10, generator=g)
    yr, yf = torch.randint(0, 3, (STEPS, 2 * BATCH), generator=g), torch.randint(0, 3, (STEPS, 2 * BATCH), generator=g)
    return xr.to(dtype), yr, xf.to(dtype), yf


def _unlearn(model, params, dtype, rank=None):
    from icml26.papers.hamu import HamuOptimizer

    xr, yr, xf, yf = _data(dtype)
    part = slice(None) if rank is None else slice(rank * BATCH, (rank + 1) * BATCH)
    opt = HamuOptimizer(params, lr=0.5, bound=0.5)
    logs = []
    for t in range(STEPS):
        info = opt.step(lambda: nn.functional.cross_entropy(model(xr[t, part]), yr[t, part]),
                        lambda: nn.functional.cross_entropy(model(xf[t, part]), yf[t, part]))
        logs.append((info.hardness, info.step_norm, info.n_infeasible))
    return logs


def _state(module, full=lambda v: v):
    return {k: full(v).detach().clone() for k, v in module.state_dict().items()}


def _single(dtype):
    model = _model(dtype)
    logs = _unlearn(model, model.parameters(), dtype)
    return logs, _state(model)


def _ddp(rank, world):
    from torch.nn.parallel import DistributedDataParallel

    out = {}
    for dtype in DTYPES:
        model = DistributedDataParallel(_model(dtype))
        out[dtype] = (_unlearn(model, model.parameters(), dtype, rank), _state(model.module))
    return out


def _fsdp(rank, world):
    from torch.distributed.fsdp import fully_shard

    from icml26.common.distributed import gather_full

    out = {}
    for dtype in DTYPES:
        model = _model(dtype)
        fully_shard(model)
        out[dtype] = (_unlearn(model, model.parameters(), dtype, rank), _state(model, gather_full))
    return out


DTYPES = (torch.float32, torch.float64)
TOL = {torch.float32: 1e-6, torch.float64: 1e-10}


@pytest.mark.parametrize("runner", [_ddp, _fsdp], ids=["ddp", "fsdp2"])
def test_hamu_ranks_agree_with_one_process_on_the_union_batch(runner):
    per_rank = run_ranks(runner, 2)  # both dtypes in one pair of processes
    for dtype in DTYPES:
        _check(dtype, TOL[dtype], [r[dtype] for r in per_rank])


def _check(dtype, tol, results):
    ref_logs, ref_state = _single(dtype)
    for logs, state in results:
        for name, value in state.items():
            assert torch.allclose(value, ref_state[name], atol=tol, rtol=0), (name, (value - ref_state[name]).abs().max())
        for (k, norm, inf), (rk, rnorm, rinf) in zip(logs, ref_logs):
            assert k == pytest.approx(rk, rel=1e-4, abs=tol) and norm == pytest.approx(rnorm, rel=1e-4) and inf == rinf
    spread = max(float((results[0][1][k] - results[1][1][k]).abs().max()) for k in ref_state)
    assert spread <= tol
