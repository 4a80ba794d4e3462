"""VimRAG's water-filling budgets: hand-worked allocations, a brute-force bisection of the water level,
invariants, truncation and snapping, ``Qwen2VLImageProcessorPil``'s own token counts, and huge
energies that must not overflow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.vimrag import (
    MemoryGraph,
    PixelAllocation,
    VisualItem,
    allocate_budget,
    graph_modulated_allocation,
    priority_allocation,
    processor_kwargs,
    recency_allocation,
    snap_allocation,
    truncate_budget,
    uniform_allocation,
)


# ---------------------------------------------------------------------------
# Allocation
# ---------------------------------------------------------------------------
def brute_force_water_level(e: np.ndarray, total: float, lo: float, hi: float) -> np.ndarray:
    """The spec itself: px(nu) = 0 if nu E < lo else min(nu E, hi); the largest nu with sum <= total (bisection)."""
    def px(nu):
        v = np.minimum(nu * e, hi)
        return np.where(nu * e < lo, 0.0, v)

    a, b = 0.0, 1.0
    while px(b).sum() <= total and b < 1e30:
        b *= 2
    if px(b).sum() <= total:
        return px(b)
    for _ in range(200):
        mid = (a + b) / 2
        a, b = (mid, b) if px(mid).sum() <= total else (a, mid)
    return px(a)


def test_allocation_by_hand():
    # proportional 66.7 > 60: capped, and the rest split 1:1
    a = allocate_budget([4.0, 1.0, 1.0], 100, min_pixels=10, max_pixels=60, patch_area=1)
    assert a.pixels.tolist() == [60, 20, 20] and not a.dropped.any()
    # the third would get 4.76 < 10: dropped, its share redistributed
    a = allocate_budget([10.0, 10.0, 1.0], 100, min_pixels=10, max_pixels=100, patch_area=4)
    assert a.pixels.tolist() == [50, 50, 0] and a.dropped.tolist() == [False, False, True]
    assert a.tokens.tolist() == [12, 12, 0] and a.level == pytest.approx(5.0)
    # admitting the second item (at nu = 20) would cost 30 > 25: the first stays at nu = 20, 5 px unused
    a = allocate_budget([1.0, 0.5], 25, min_pixels=10, max_pixels=100, patch_area=1)
    assert a.pixels.tolist() == [20, 0]
    # everything fits at max_pixels
    a = allocate_budget([1.0, 2.0], 1000, min_pixels=10, max_pixels=100, patch_area=1)
    assert a.pixels.tolist() == [100, 100] and math.isinf(a.level)
    # the paper's defaults: 1 280 tokens of 32x32 px, min 64 and max 1024 tokens
    a = allocate_budget(np.ones(5))
    assert a.tokens.tolist() == [256] * 5 and a.used_pixels == 5 * 256 * 32 * 32
    a = allocate_budget(np.ones(30))              # 42.7 tokens each < 64: keep the first 20 at 64
    assert a.tokens.tolist() == [64] * 20 + [0] * 10


@pytest.mark.parametrize("seed", range(20))
def test_allocation_matches_the_brute_force_water_level(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    e = rng.exponential(size=n) * (rng.random(n) > 0.15)
    lo = float(rng.uniform(5, 50))
    hi = lo * float(rng.uniform(1, 20))
    total = float(math.floor(rng.uniform(lo, n * hi * 1.2)))
    a = allocate_budget(e, total, min_pixels=lo, max_pixels=hi, patch_area=1)
    ref = brute_force_water_level(e, total, lo, hi)
    assert np.all(np.abs(a.pixels - ref) <= 1.0 + 1e-6 * ref)
    assert a.used_pixels <= total


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=15), st.floats(1.0, 5e5), st.floats(1.0, 200.0),
       st.floats(1.0, 30.0), st.sampled_from([2.0 ** -7, 0.5, 4.0, 1024.0]))
def test_allocation_invariants(energies, total, lo, ratio, scale):
    hi = lo * ratio
    total = max(total, lo)
    e = np.array(energies)
    a = allocate_budget(e, total, min_pixels=lo, max_pixels=hi, patch_area=7)
    assert a.used_pixels <= math.floor(total)                                  # within budget
    assert (a.pixels <= hi).all() and ((a.pixels == 0) | (a.pixels >= math.floor(lo))).all()
    order = np.argsort(e, kind="stable")
    assert (np.diff(a.pixels[order]) >= 0).all() or len(set(e)) < len(e)       # monotone in energy
    for i in range(len(e)):
        for j in range(len(e)):
            if e[i] > e[j]:
                assert a.pixels[i] >= a.pixels[j]
    scaled = e * scale
    b = allocate_budget(scaled, total, min_pixels=lo, max_pixels=hi, patch_area=7)
    # scale invariant for powers of 2, where the scaling is exact: a subnormal energy (e.g. 5e-324)
    # times 2^-7 underflows to 0, a different input (zero energy is always dropped), so the
    # invariance is asserted only when scaled / scale recovers every energy bit for bit
    if np.array_equal(scaled / scale, e):
        assert np.array_equal(a.pixels, b.pixels)
    else:
        assert (b.pixels[scaled == 0] == 0).all()
    assert (a.pixels[e == 0] == 0).all()
    assert np.array_equal(a.tokens, np.floor(a.pixels / 7).astype(int))


def test_subnormal_energies_are_positive_energies():
    # the hypothesis counterexample energies=[5e-324]: a subnormal energy is positive, so the item is
    # kept (at max_pixels, level inf: every positive item capped), while 0 energy is dropped
    a = allocate_budget([5e-324], 1, min_pixels=1, max_pixels=1, patch_area=7)
    assert a.pixels.tolist() == [1] and not a.dropped[0] and a.level == math.inf
    z = allocate_budget([0.0], 1, min_pixels=1, max_pixels=1, patch_area=7)
    assert z.pixels.tolist() == [0] and z.dropped[0]
    # mixed with normal energies the ratio 5e-324 / 1 is what counts: min_pixels / E overflows to inf,
    # so the subnormal item is the first dropped (here 300 px hold two items at 100..200 px)
    m = allocate_budget([1.0, 5e-324, 0.5], 300, min_pixels=100, max_pixels=200, patch_area=1)
    assert m.pixels.tolist() == [200, 0, 100] and m.dropped.tolist() == [False, True, False]


def test_scale_invariance_for_arbitrary_factors_and_equal_shares():
    rng = np.random.default_rng(0)
    for _ in range(50):
        e = rng.exponential(size=8)
        c = float(rng.uniform(1e-3, 1e3))
        a = allocate_budget(e, 5000, min_pixels=50, max_pixels=2000, patch_area=10)
        b = allocate_budget(e * c, 5000, min_pixels=50, max_pixels=2000, patch_area=10)
        assert np.abs(a.pixels - b.pixels).max() <= 1 and np.array_equal(a.dropped, b.dropped)
    for n in (1, 3, 7):
        a = allocate_budget(np.full(n, 0.3), 1000, min_pixels=10, max_pixels=900, patch_area=1)
        assert len(set(a.pixels.tolist())) == 1 and a.pixels[0] == min(900, 1000 // n)


def test_graph_allocations_and_baselines():
    g = MemoryGraph("q")
    a = g.add_node("a", parents=[g.root], items=[VisualItem("x", 1.0)], step=1)
    g.add_node("b", parents=[a], items=[VisualItem("y", 1.0)], step=2)
    g.add_node("c", parents=[g.root], items=[VisualItem("z", 3.0)], step=3)
    kw = dict(min_pixels=10, max_pixels=1000, patch_area=1)
    # energies 1*2*0.64 = 1.28, 0.8, 3: shares of 508 px
    assert graph_modulated_allocation(g, 508, **kw).pixels.tolist() == [128, 80, 300]
    assert uniform_allocation(g, 510, **kw).pixels.tolist() == [170, 170, 170]
    assert priority_allocation(g, 500, **kw).pixels.tolist() == [100, 100, 300]
    # truncation: the newest (c, then b) at full resolution, a gets the rest
    assert recency_allocation(g, 2100, **kw).pixels.tolist() == [100, 1000, 1000]


def test_truncation_and_snapping_by_hand():
    a = truncate_budget([1.0, 3.0, 2.0, 3.0], 150, min_pixels=10, max_pixels=64, patch_area=1)
    assert a.pixels.tolist() == [0, 64, 22, 64]        # ties: the later index counts as newer
    alloc = PixelAllocation(pixels=np.array([40, 30, 10, 0]), tokens=np.array([40, 30, 10, 0]),
                            dropped=np.array([False, False, False, True]), level=1.0, total_pixels=100,
                            patch_area=1.0)
    # 16+16+4 = 36 used, 64 left: item 0 -> 64 (48), item 1 cannot (48 > 16), item 2 -> 16 (12), item 3 -> 4
    assert snap_allocation(alloc, (4, 16, 64)).pixels.tolist() == [64, 16, 16, 4]
    # equal pixels: the tie-break decides who is upgraded
    alloc = allocate_budget(np.ones(3), 60, min_pixels=4, max_pixels=64, patch_area=1)
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.9, 0.1, 0.5]).pixels.tolist() == [16, 16, 16]
    # 33 px each: 16 each, 52 left: the first in tie-break order goes to 64, 4 px stay unused
    alloc = allocate_budget(np.ones(3), 100, min_pixels=4, max_pixels=64, patch_area=1)
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.9, 0.1, 0.5]).pixels.tolist() == [16, 64, 16]
    assert snap_allocation(alloc, (4, 16, 64), tie_break=[0.1, 0.9, 0.5]).pixels.tolist() == [64, 16, 16]


@pytest.mark.parametrize("patch,merge", [(14, 2), (16, 2)])
def test_qwen2vl_processor_token_counts_stay_within_the_allocation(patch, merge):
    pytest.importorskip("transformers")
    from PIL import Image
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    area = (patch * merge) ** 2
    sizes = [(480, 640), (300, 1000), (200, 200), (1500, 1500), (90, 60), (720, 1280)]
    energies = [3.0, 1.0, 0.5, 2.0, 0.2, 1.5]
    alloc = allocate_budget(energies, 5 * 256 * area, min_pixels=64 * area, max_pixels=1024 * area,
                            patch_area=area)
    kws = processor_kwargs(alloc)
    assert alloc.dropped.tolist() == [False, False, False, False, True, False]
    for (h, w), kw, tok in zip(sizes, kws, alloc.tokens):
        if kw is None:
            assert tok == 0
            continue
        proc = Qwen2VLImageProcessorPil(patch_size=patch, merge_size=merge, **kw)
        out = proc(images=[Image.new("RGB", (w, h), color=(120, 30, 200))], return_tensors="np")
        t, gh, gw = out["image_grid_thw"][0]
        n = int(t * gh * gw) // merge ** 2
        assert 0 < n <= tok, (h, w, n, tok)
        native = round(h / (patch * merge)) * round(w / (patch * merge))
        assert n >= min(native, tok) * 0.7       # the image is not shrunk far below what it was given


def test_huge_energies_do_not_overflow_the_allocation():
    """[1e308, 1e308, 1]: two equal images get equal pixels (their sum once overflowed to inf and the first took
    everything); level stays in pixels per unit of the caller's energy."""
    from icml26.papers.vimrag import allocate_budget

    a = allocate_budget([1e308, 1e308, 1.0], 4 * 65536 * 4)
    b = allocate_budget([1.0, 1.0, 1e-308], 4 * 65536 * 4)
    assert a.pixels[0] == a.pixels[1] > 0 and a.pixels.tolist() == b.pixels.tolist()
    assert a.level * 1e308 == pytest.approx(b.level)
