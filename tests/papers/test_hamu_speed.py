"""HAMU's speed-ups that keep every bit: the fused transform against the per-tensor loop, the one-chunk
dot64 path, the shared forward pass of scrub and KL, the cached reference log-probs and the cached split.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml26.papers.hamu import (
    HamuOptimizer,
    distribute_bound,
    unlearn,
)
from icml26.papers.hamu.problem import load_split
from tests.papers._hamu_helpers import _mlp, _random_grads


# ----------------------------------------------------------------------------- speed-ups that keep every bit
def _transform_before(opt: HamuOptimizer, retain_grads, forget_grads):
    """HamuOptimizer.transform's arithmetic as written before the overhead cuts (single process): the
    oracle the faster version must match bit for bit. Returns δ per tensor and the log's numbers."""
    from icml26.papers.hamu.solver import _EPS, block_coefficients

    def dot64(a, b):
        a, b = a.reshape(-1), b.reshape(-1)
        total = torch.zeros((), dtype=torch.float64)
        for x, y in zip(a.split(1 << 20), b.split(1 << 20)):
            total += (x * y).to(torch.float64).sum()
        return total

    raw_r, raw_f = [g.detach() for g in retain_grads], [g.detach() for g in forget_grads]
    n = len(raw_r)
    stats = torch.zeros(n, 5, dtype=torch.float64)
    for t, (r, f) in enumerate(zip(raw_r, raw_f)):
        stats[t, 0], stats[t, 1], stats[t, 2] = dot64(r, r), dot64(f, f), dot64(r, f)

    def clip_scale(norm_sq):
        if opt.max_grad_norm is None:
            return 1.0
        norm = math.sqrt(norm_sq)
        return opt.max_grad_norm / norm if norm > opt.max_grad_norm else 1.0

    scale_r, scale_f = clip_scale(float(stats[:, 0].sum())), clip_scale(float(stats[:, 1].sum()))
    rr, ff, rf = stats[:, 0] * scale_r**2, stats[:, 1] * scale_f**2, stats[:, 2] * (scale_r * scale_f)
    swap = opt.variant == "U"
    if swap:
        rr, ff = ff, rr
    n_blocks = n if opt.layerwise else 1
    block = torch.arange(n) if opt.layerwise else torch.zeros(n, dtype=torch.long)

    def per_block(values):
        return torch.zeros(n_blocks, dtype=torch.float64).index_add_(0, block, values)

    retain_sq, forget_sq, kappa_blocks = per_block(rr), per_block(ff), per_block(rf)
    retain_norm, forget_norm = retain_sq.sqrt(), forget_sq.sqrt()
    products = retain_norm * forget_norm
    bound = opt.bound * opt.lr * float(products.sum()) if opt.bound_mode == "relative" else opt.bound
    bounds = distribute_bound(bound, retain_norm, forget_norm)
    radii = opt.lr * retain_norm

    def effective(t):
        r = raw_r[t] if scale_r == 1.0 else raw_r[t] * scale_r
        f = raw_f[t] if scale_f == 1.0 else raw_f[t] * scale_f
        return (-f, -r) if swap else (r, f)

    safe_forget_sq = forget_sq.clamp_min(_EPS**2)
    first = (kappa_blocks / safe_forget_sq)[block]
    leftover = torch.zeros(n, dtype=torch.float64)
    for t in range(n):
        g_r, g_f = effective(t)
        leftover[t] = dot64(g_r - first[t].to(g_r.dtype) * g_f, g_f)
    second = (per_block(leftover) / safe_forget_sq)[block]

    def g_perp(t):
        g_r, g_f = effective(t)
        return (g_r - first[t].to(g_r.dtype) * g_f) - second[t].to(g_r.dtype) * g_f

    perp = torch.zeros(n, dtype=torch.float64)
    for t in range(n):
        residual = g_perp(t)
        perp[t] = dot64(residual, residual)
    solved = block_coefficients(retain_sq, forget_sq, kappa_blocks, per_block(perp).sqrt(), bounds=bounds, radii=radii)
    coef_a, coef_b, coef_c = solved.ascent[block], solved.retain_coef[block], solved.perp_coef[block]
    deltas, dots = [], torch.zeros(n, 4, dtype=torch.float64)
    for t in range(n):
        g_r, g_f = effective(t)
        d = coef_a[t].to(g_r.dtype) * g_f + coef_b[t].to(g_r.dtype) * g_r
        if bool(coef_c[t] != 0):
            d = d - coef_c[t].to(g_r.dtype) * g_perp(t)
        dots[t, 0], dots[t, 1] = dot64(g_r, d), dot64(raw_f[t], d)
        dots[t, 2], dots[t, 3] = dot64(raw_r[t], d), dot64(d, d)
        deltas.append(d)
    return deltas, {"bound": bound, "hardness": float(kappa_blocks.sum()), "stop": float(dots[:, 0].sum()) >= 0.0,
                    "predicted_forget_change": float(dots[:, 1].sum()),
                    "predicted_retain_change": float(dots[:, 2].sum()), "step_norm": math.sqrt(float(dots[:, 3].sum()))}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("variant,layerwise", [("Q", True), ("Q", False), ("U", True)])
@pytest.mark.parametrize("max_grad_norm", [None, 1.0, 1e-3])
@pytest.mark.parametrize("correlation", [3.0, 0.0, -3.0])
def test_transform_gives_the_bits_of_the_per_tensor_loop(dtype, variant, layerwise, max_grad_norm, correlation):
    rng = np.random.default_rng(11)
    params = [p.to(dtype) for p in _mlp().parameters()]
    g_r, g_f = _random_grads(rng, params, correlation)
    g_r[1] = torch.zeros_like(g_r[1])  # a tensor without retain gradient (zero dots, -0.0 products)
    g_f[1] = -g_f[1]
    for lr, bound, mode in ((0.3, 0.5, "relative"), (0.05, 1.0, "relative"), (0.1, 50.0, "absolute")):
        opt = HamuOptimizer([torch.nn.Parameter(p.detach().clone()) for p in params], lr=lr, bound=bound,
                            bound_mode=mode, variant=variant, layerwise=layerwise, max_grad_norm=max_grad_norm)
        deltas, info = opt.transform(g_r, g_f)
        expected, numbers = _transform_before(opt, g_r, g_f)
        if info.applied:
            assert all(torch.equal(d, e) for d, e in zip(deltas, expected))
        for name, value in numbers.items():
            assert getattr(info, name) == value or (name == "stop" and info.n_infeasible), name


def test_dot64_one_chunk_path_is_the_chunk_loop():
    from icml26.papers.hamu import optimizer

    gen = torch.Generator().manual_seed(3)
    for a, b in ((torch.randn(37, 5, generator=gen), torch.randn(37, 5, generator=gen)),
                 (torch.zeros(4), -torch.ones(4)), (torch.randn(3000, generator=gen), torch.randn(3000, generator=gen))):
        loop = torch.zeros((), dtype=torch.float64) + (a * b).reshape(-1).to(torch.float64).sum()
        value = optimizer._dot64(a, b)
        assert torch.equal(value, loop) and math.copysign(1.0, float(value)) == math.copysign(1.0, float(loop))


def test_scrub_and_kl_share_the_forward_pass_and_cache_the_reference_bit_for_bit():
    """unlearn computes each batch's forward pass once for its loss and its KL term, and the frozen
    reference's log-probabilities once per batch; the steps are those of the plain formula."""
    from icml26.papers.hamu import scrub as scrub_direction
    from icml26.papers.hamu.optimizer import _clip

    gen = torch.Generator().manual_seed(4)
    x, y = torch.randn(50, 6, generator=gen), torch.randint(0, 3, (50,), generator=gen)
    retain, forget = (x[:40], y[:40]), (x[40:], y[40:])
    torch.manual_seed(0)
    start = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    model = copy.deepcopy(start)
    unlearn(model, [retain], [forget], steps=4, lr=0.5, method="scrub", progress=False)
    plain, reference = copy.deepcopy(start), copy.deepcopy(start)
    params = list(plain.parameters())

    def grads(loss):
        return torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)])

    def kl(batch):
        with torch.no_grad():
            target = F.log_softmax(reference(batch), dim=-1)
        return F.kl_div(F.log_softmax(plain(batch), dim=-1), target, log_target=True, reduction="batchmean")

    for _ in range(4):
        g_rkl, g_fkl = grads(kl(retain[0])), grads(kl(forget[0]))
        d = scrub_direction(grads(F.cross_entropy(plain(retain[0]), retain[1])),
                            grads(F.cross_entropy(plain(forget[0]), forget[1])), g_retain_kl=g_rkl, g_forget_kl=g_fkl)
        d = _clip(d, 1.0)
        with torch.no_grad():
            for p, part in zip(params, torch.split(d, [p.numel() for p in params])):
                p.add_(part.reshape(p.shape), alpha=-0.5)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), plain.parameters()))


def test_reference_log_probs_are_cached_per_batch_object():
    from icml26.papers.hamu.unlearn import _ReferenceLogProbs

    calls = []
    reference = nn.Linear(3, 2)
    reference.register_forward_hook(lambda *args: calls.append(1))
    cache = _ReferenceLogProbs(reference)
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    first = cache("retain", a)
    assert cache("retain", a) is first and len(calls) == 1
    torch.testing.assert_close(cache("retain", b), F.log_softmax(reference(b), dim=-1))  # another batch: recomputed
    assert len(calls) == 3 and not torch.equal(cache("forget", a), cache("retain", b))


def test_load_split_draws_from_one_cached_read_only_copy():
    from icml26.papers.hamu.problem import _features

    x, y = _features("digits")
    assert _features("digits")[0] is x and not x.flags.writeable and not y.flags.writeable
    a = load_split("digits", 200, 100, 300, np.random.default_rng(5))
    b = load_split("digits", 200, 100, 300, np.random.default_rng(5))
    assert np.array_equal(a.x_train, b.x_train) and a.x_train.flags.writeable
