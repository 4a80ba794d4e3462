"""RobuQ's speed paths give the reference paths' bits: the one-node straight-through rounding against
autograd's composition, and training with glibc's allocation thresholds raised against training without."""

from __future__ import annotations

import copy

import pytest
import torch

from icml26.papers.robuq import LinearSchedule, TinyDiT, TinyDiTConfig, quantize_dit, quantize_tokens, train_denoiser
from icml26.papers.robuq import quant
from icml26.common.alloc import heap_allocations
from icml26.papers.robuq.quant import grid_levels
from icml26.papers.robuq.ste import StraightThroughRound, straight_through_reference, straight_through_round


def _tokens(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 5, 16, generator=g, dtype=dtype) * 2.0
    x[0, 0] = 0.0                       # a zero token (step clamped at EPS)
    x[1, 1, :4] = torch.tensor([40.0, -40.0, 1e-30, -0.0], dtype=dtype)  # far outside the clip, tiny, -0
    x[2, 2, 3] = float("nan")           # a NaN token
    return x


def _step(x: torch.Tensor, bits: int, grid: str) -> torch.Tensor:
    step = x.detach().pow(2).mean(dim=-1, keepdim=True).sqrt() * quant.gaussian_step(bits, grid)
    return step.clamp_min(quant.EPS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bits,grid", [(1, "midrise"), (2, "midrise"), (4, "midrise"), (2, "int"), (3, "int"),
                                       (2, "ternary")])
def test_one_node_rounding_gives_autograds_bits(dtype, bits, grid):
    lo, hi, off = grid_levels(bits, grid)
    x = _tokens(dtype)
    step = _step(x, bits, grid)
    # values exactly on the clip's edges (lo - 1/2, hi + 1/2 in units of the step): inside, gradient passes
    step.view(-1)[5] = 0.5
    x.view(-1, 16)[5, :2] = torch.tensor([(lo - 0.5) * 0.5, (hi + 0.5) * 0.5], dtype=dtype)
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(4), dtype=dtype)
    outs, grads = [], []
    for fn in (StraightThroughRound.apply, straight_through_reference):
        leaf = x.clone().requires_grad_(True)
        out = fn(leaf, step, lo, hi, off)
        out.backward(upstream)
        outs.append(out.detach())
        grads.append(leaf.grad)
    for a, b in (outs, grads):
        assert torch.equal(a.isnan(), b.isnan())
        assert torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))
        assert torch.equal(torch.signbit(a.nan_to_num(7.0)), torch.signbit(b.nan_to_num(7.0)))
    # the NaN token: NaN step, so NaN out and 0 / NaN gradients in both; outside the clip: no gradient
    assert grads[0][2, 2].isnan().all() and grads[0][1, 1, 0] == 0 and grads[0][1, 1, 1] == 0
    assert torch.equal(grads[0].view(-1, 16)[5, :2], upstream.view(-1, 16)[5, :2])  # on the clip's edges: inside


def test_a_step_with_gradient_goes_through_the_reference():
    lo, hi, off = grid_levels(2)
    x = torch.randn(4, 16, requires_grad=True)
    multiplier = torch.ones((), requires_grad=True)
    step = _step(x, 2, "midrise") * multiplier
    out = straight_through_round(x, step, lo, hi, off)
    assert out.grad_fn is not None and not isinstance(out.grad_fn, StraightThroughRound._backward_cls)
    out.sum().backward()
    assert multiplier.grad is not None and torch.isfinite(multiplier.grad)


@pytest.mark.parametrize("scale,grid", [("gauss", "midrise"), ("absmax", "int")])
def test_quantize_tokens_with_gradient_equals_the_reference_composition(monkeypatch, scale, grid):
    x = torch.randn(3, 16, 64, generator=torch.Generator().manual_seed(5))
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(6))
    results = []
    for fn in (straight_through_round, straight_through_reference):
        monkeypatch.setattr(quant, "straight_through_round", fn)
        leaf = x.clone().requires_grad_(True)
        out = quantize_tokens(leaf, 2, scale=scale, grid=grid)
        out.backward(upstream)
        results.append((out.detach(), leaf.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def _train_quantized(steps: int = 6) -> tuple[list[float], dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = quantize_dit(TinyDiT(TinyDiTConfig(hidden=32, depth=1, heads=2)), 2)
    g = torch.Generator().manual_seed(1)
    images = torch.rand(40, 1, 8, 8, generator=g) * 2 - 1
    labels = torch.randint(0, 10, (40,), generator=g)
    losses = train_denoiser(model, images, labels, schedule=LinearSchedule(), steps=steps, batch_size=16, lr=3e-3,
                            generator=torch.Generator().manual_seed(2), null_label=10)
    return losses, {k: v.clone() for k, v in model.state_dict().items() if isinstance(v, torch.Tensor)}


def test_qat_with_the_one_node_rounding_equals_the_reference(monkeypatch):
    fast = _train_quantized()
    monkeypatch.setattr(quant, "straight_through_round", straight_through_reference)
    slow = _train_quantized()
    assert fast[0] == slow[0]
    assert all(torch.equal(fast[1][k], slow[1][k]) for k in fast[1])


def test_heap_allocations_change_no_bit():
    plain = _train_quantized()
    with heap_allocations() as applied:
        inside = _train_quantized()
    assert isinstance(applied, bool)
    assert plain[0] == inside[0]
    assert all(torch.equal(plain[1][k], inside[1][k]) for k in plain[1])


def test_a_quantized_dit_trains_through_the_one_node_rounding():
    model = quantize_dit(TinyDiT(TinyDiTConfig(hidden=32, depth=1, heads=2)), 2)
    clone = copy.deepcopy(model)
    x = torch.randn(2, 1, 8, 8)
    t, y = torch.tensor([5, 500]), torch.tensor([1, 10])
    out = clone(x, t, y)
    fn = out.grad_fn
    seen, stack = set(), [fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    assert any(isinstance(n, StraightThroughRound._backward_cls) for n in seen)
