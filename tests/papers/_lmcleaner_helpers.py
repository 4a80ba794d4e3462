"""Shared helpers of the LMCleaner tests: float64 least-squares problems, a plain SGD trainer and replay."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml26.papers.lmcleaner import (
    SupervisedProblem,
    TrajectoryRecorder,
)


DT = torch.float64


def _squared(out, y):
    return 0.5 * ((out - y) ** 2).sum(-1)


def _least_squares(n=240, d=6, k=2, l2=0.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=DT)
    y = torch.randn(n, k, generator=gen, dtype=DT)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Linear(d, k).double()
    return SupervisedProblem(model, _squared, x, y, l2=l2)


def _train(problem, schedule, lr=0.05, checkpoint_every=None, snapshots=False):
    """SGD through ``torch.optim.SGD`` on the module, recorded; returns recorder (and θ per step)."""
    model = problem.model
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=problem.l2)
    rec = TrajectoryRecorder(model, opt, checkpoint_every=checkpoint_every, problem=problem)
    saved = []
    for ids in schedule:
        saved.append(problem.flat_params())
        with rec.step(ids):
            x, y = problem.batch(ids)
            loss = problem.loss(model(x), y).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    saved.append(problem.flat_params())
    return (rec, saved) if snapshots else rec


def _single_pass(n, batch):
    return [torch.arange(i, i + batch) for i in range(0, n, batch)]


def _replay(problem, rec, skip, now):
    theta = rec.params_at(0)
    for t in range(now):
        if t not in skip:
            theta = problem.sgd_step(theta, rec.batch_ids(t), rec.lr(t))
    return theta


def _mlp_problem(l2=0.01):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(30, 5, generator=gen, dtype=DT)
    y = torch.randint(0, 3, (30,), generator=gen)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).double()
    return SupervisedProblem(model, lambda o, t: F.cross_entropy(o, t, reduction="none"), x, y, l2=l2)
