"""The allocator setting every reproduction runs under (icml26.common.alloc, icml26.runner)."""

from __future__ import annotations

import contextlib

import pytest
import torch

from icml26 import runner
from icml26.common import alloc
from icml26.common.alloc import heap_allocations


def _train() -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        x = torch.randn(256, 512)            # 0.5-1 MiB activations: above glibc's default mmap threshold
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def test_heap_allocations_change_no_bit():
    plain = _train()
    with heap_allocations() as applied:
        inside = _train()
    assert isinstance(applied, bool)
    assert all(torch.equal(a, b) for a, b in zip(plain, inside))


def test_heap_allocations_without_glibc_do_nothing(monkeypatch):
    monkeypatch.setattr(alloc, "_glibc", lambda: None)
    with heap_allocations() as applied:
        assert applied is False


@pytest.mark.parametrize("kwargs", [{"mmap_threshold": 0}, {"mmap_threshold": 64 * 1024 * 1024},
                                    {"trim_threshold": -1}, {"trim_threshold": 2.5}, {"mmap_threshold": True}])
def test_heap_allocations_refuse_bad_thresholds(kwargs):
    with pytest.raises(ValueError), heap_allocations(**kwargs):
        pass


def test_every_run_is_inside_the_allocator_setting_unless_opted_out(fake_paper, monkeypatch):
    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield True

    monkeypatch.setattr(runner, "heap_allocations", recording)
    runner.run("zz_fake", seed=1, out=None)
    assert entered == [True]
    monkeypatch.setenv("ICML26_HEAP_ALLOCATIONS", "0")
    runner.run("zz_fake", seed=1, out=None)
    assert entered == [True]                       # opted out: glibc's own thresholds
    monkeypatch.setenv("ICML26_HEAP_ALLOCATIONS", "yes")
    with pytest.raises(ValueError, match="ICML26_HEAP_ALLOCATIONS"):
        runner.run("zz_fake", seed=1, out=None)
