"""LMCleaner's recorder under data parallelism (2 gloo ranks, float64): batch ids gathered each
step, the history sharded by parameters (per-rank memory 1/W), and a deletion served in lockstep
on every rank equal to one process's on the union batches (issue #31)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.distributed_harness import run_ranks

pytestmark = pytest.mark.dist
STEPS, HALF = 10, 4


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2 * HALF * STEPS, 5, generator=g, dtype=torch.float64), \
        torch.randint(0, 3, (2 * HALF * STEPS,), generator=g)


def _ce(out, y):
    return F.cross_entropy(out, y, reduction="none")


def _run(rank=None, world=None):
    from icml26.papers.lmcleaner import OnlineUnlearner, SupervisedProblem, TrajectoryRecorder, make_hvp

    x, y = _data()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).double()
    model = net
    if rank is not None:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    recorder = TrajectoryRecorder(model, optimizer)
    for t in range(STEPS):
        union = torch.arange(2 * HALF * t, 2 * HALF * (t + 1))
        ids = union if rank is None else union[rank * HALF:(rank + 1) * HALF]  # this rank's half of the batch
        with recorder.step(ids):
            optimizer.zero_grad()
            F.cross_entropy(model(x[ids]), y[ids]).backward()  # DDP averages the halves' gradients
            optimizer.step()
    problem = SupervisedProblem(net, _ce, x, y)
    unlearner = OnlineUnlearner(problem, recorder, hvp=make_hvp(problem, "exact"), window=4)
    unlearner.request([2 * HALF * 3 + 1])  # a sample of step 3's batch (rank 0's half)
    served = unlearner.serve()[0]
    assert served.deleted_steps == (3,) and served.correction_norm > 0
    return recorder.current_params(), recorder.history_bytes(), [r.batch_ids.tolist() for r in recorder.steps]


def test_sharded_recorder_serves_one_process_correction():
    ref_params, ref_bytes, ref_batches = _run()
    results = run_ranks(_run, 2)
    for params, history, batches in results:
        assert batches == ref_batches  # every rank recorded the union batches
        assert torch.allclose(params, ref_params, atol=1e-10, rtol=0), (params - ref_params).abs().max()
        assert history * 2 == pytest.approx(ref_bytes, rel=0.1)  # about half per rank (⌈p/2⌉ each)
    assert torch.equal(results[0][0], results[1][0])


def _uneven(rank, world):
    from icml26.papers.lmcleaner import TrajectoryRecorder

    net = nn.Linear(3, 2).double()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    recorder = TrajectoryRecorder(net, optimizer)
    ids = torch.arange(4) if rank == 0 else torch.arange(4, 7)  # 4 and 3 rows
    try:
        with recorder.step(ids):
            pass
    except ValueError as exc:
        return str(exc)
    return None


def test_uneven_batch_sizes_across_ranks_are_refused_on_every_rank():
    messages = run_ranks(_uneven, 2)
    assert all(m is not None and "different sizes [4, 3]" in m for m in messages)
