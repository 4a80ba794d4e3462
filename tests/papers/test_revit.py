"""ReViT: the group action, the solver's symmetry, frames (canonical bases by hand, per-patch
equivariance, degenerate and all-zero fallbacks), Swin windows and patchify, and hypothesis properties
of the group actions and the basis.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.revit import (
    ReViT2d,
    ReViT3d,
    apply_rotation,
    c4_matrix,
    canonical_basis,
    octahedral_group,
    rotate_field,
    simulate_navier_stokes,
    velocity_from_vorticity,
    vorticity_from_velocity,
)
from icml26.papers.revit.grid import merge_groups, patchify, unpatchify, window_partition
from icml26.papers.revit.navier_stokes import random_background_flow, random_vorticity
from tests.papers._revit_helpers import _equivariance_error, _field, _token_perm


# --------------------------------------------------------------------------- group action
def test_rotate_field_is_a_group_action():
    x = _field(ns=2, nv=2)
    assert torch.equal(rotate_field(x, 4, 2, 2), x)
    assert torch.equal(rotate_field(x, 0, 2, 2), x)
    for k in range(4):
        assert torch.equal(rotate_field(rotate_field(x, k, 2, 2), -k, 2, 2), x)
        for j in range(4):
            assert torch.equal(rotate_field(rotate_field(x, k, 2, 2), j, 2, 2), rotate_field(x, k + j, 2, 2))


def test_rotate_field_matches_hand_calculation():
    # Scalars: s'[i, j] = s[N-1-j, i] (counter-clockwise with y up) == torch.rot90(s, 1, dims=(-1, -2)).
    s = torch.arange(9.0).reshape(1, 1, 3, 3)
    expected = torch.tensor([[6.0, 3.0, 0.0], [7.0, 4.0, 1.0], [8.0, 5.0, 2.0]])
    assert torch.equal(rotate_field(s, 1, 1, 0)[0, 0], expected)
    assert torch.equal(rotate_field(s, 1, 1, 0), torch.rot90(s, 1, dims=(-1, -2)))
    # A constant vector field (1, 0) is rotated, not just moved: it becomes (0, 1), then (-1, 0).
    u = torch.zeros(1, 2, 4, 4)
    u[:, 0] = 1.0
    assert torch.equal(rotate_field(u, 1, 0, 1)[0, :, 0, 0], torch.tensor([0.0, 1.0]))
    assert torch.equal(rotate_field(u, 2, 0, 1)[0, :, 0, 0], torch.tensor([-1.0, 0.0]))
    assert torch.equal(c4_matrix(1), torch.tensor([[0, -1], [1, 0]]))


def test_vorticity_is_a_scalar_and_divergence_stays_zero():
    g = torch.Generator().manual_seed(1)
    omega = random_vorticity(2, 32, generator=g)
    u = velocity_from_vorticity(omega, random_background_flow(2, generator=g))
    for k in (1, 2, 3):
        ur = rotate_field(u, k, 0, 1)
        w_rot = vorticity_from_velocity(ur)
        assert torch.allclose(w_rot, rotate_field(vorticity_from_velocity(u)[:, None], k, 1, 0)[:, 0], atol=1e-12)
        n = u.shape[-1]
        kk = torch.fft.fftfreq(n, 1 / n).double()
        ky, kx = torch.meshgrid(kk, kk, indexing="ij")
        div = torch.fft.ifft2(1j * kx * torch.fft.fft2(ur[:, 0]) + 1j * ky * torch.fft.fft2(ur[:, 1])).real
        assert div.abs().max() < 1e-11


# --------------------------------------------------------------------------- solver
def test_solver_commutes_with_rotation_float64():
    g = torch.Generator().manual_seed(2)
    w0 = random_vorticity(2, 32, generator=g)
    u0 = random_background_flow(2, generator=g)
    w, u = simulate_navier_stokes(w0, u0, substeps=10, snapshots=4)
    assert w[:, -1].std() > 0.5  # a non-trivial flow
    for k in (1, 2, 3):
        rot = c4_matrix(k).double()
        wr, ur = simulate_navier_stokes(rotate_field(w0[:, None], k, 1, 0)[:, 0], u0 @ rot.T,
                                        substeps=10, snapshots=4)
        assert (wr[:, -1] - rotate_field(w[:, -1, None], k, 1, 0)[:, 0]).abs().max() < 1e-13 * w.abs().max()
        assert (ur[:, -1] - rotate_field(u[:, -1], k, 0, 1)).abs().max() < 1e-13 * u.abs().max()


def test_solver_matches_closed_form_shear_mode():
    # ω = cos(x) with U₀ = (c, 0): ψ = cos x, u = (0, sin x) + U₀ so (u·∇)ω = c ∂xω and the exact
    # solution is ω = exp(−ν t) cos(x − c t).
    n, nu, c, dt, steps = 32, 0.05, 0.7, 0.01, 50
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    w0 = torch.cos(x).expand(n, n)[None].clone()
    w, _ = simulate_navier_stokes(w0, torch.tensor([[c, 0.0]], dtype=torch.float64), nu=nu, dt=dt,
                                  substeps=steps, snapshots=2)
    t = dt * steps
    exact = math.exp(-nu * t) * torch.cos(x - c * t).expand(n, n)
    assert (w[0, -1] - exact).abs().max() < 1e-5


# --------------------------------------------------------------------------- frames
def _rotmat(k: int, dims: int) -> torch.Tensor:
    return (c4_matrix(k) if dims == 2 else octahedral_group()[k]).double()


def test_canonical_basis_hand_calculation_2d():
    u = torch.ones(1, 2, 4, 4, dtype=torch.float64)
    basis = canonical_basis(u, patch=4)[0, 0]
    r = 1 / math.sqrt(2)
    assert torch.allclose(basis, torch.tensor([[r, -r], [r, r]], dtype=torch.float64), atol=1e-15)


def test_canonical_basis_hand_calculation_3d():
    # u = (1, a x, 0): mean velocity (1, 0, 0), vorticity (0, 0, a) → b₁ = x, b₃ = b₁×ω̂ = −y, b₂ = b₃×b₁ = z.
    n, a = 4, 0.1
    xs = torch.arange(n, dtype=torch.float64) - (n - 1) / 2
    u = torch.zeros(1, 3, n, n, n, dtype=torch.float64)
    u[:, 0] = 1.0
    u[:, 1] = a * xs.view(1, 1, n)
    basis = canonical_basis(u, patch=n)[0, 0]
    expected = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(basis, expected, atol=1e-15)


@pytest.mark.parametrize("dims", [2, 3])
def test_basis_is_equivariant_per_patch(dims):
    n, patch = (16, 4) if dims == 2 else (8, 2)
    u = _field(ns=0, nv=1, n=n, dims=dims)
    basis = canonical_basis(u, patch)
    assert torch.allclose(torch.linalg.det(basis), torch.ones(()).double(), atol=1e-12)
    assert torch.allclose(basis.transpose(-1, -2) @ basis, torch.eye(dims).double().expand_as(basis), atol=1e-12)
    for k in (range(1, 4) if dims == 2 else range(1, 24)):
        rotated = canonical_basis(rotate_field(u, k, 0, 1, dims=dims), patch)
        perm = _token_perm(n // patch, k, dims)
        assert torch.allclose(rotated, _rotmat(k, dims) @ basis[:, perm], atol=1e-12)


def test_degenerate_patch_falls_back_equivariantly():
    # Patch 0 of sample 0 gets zero mean velocity (a vortex-like antisymmetric pattern), so the
    # energy-moment fallback must define its frame.
    u = _field(b=1, ns=0, nv=1, n=8, seed=3)
    patch = u[:, :, :4, :4]
    patch -= patch.mean(dim=(-1, -2), keepdim=True)
    assert patch.mean(dim=(-1, -2)).abs().max() < 1e-15
    model = ReViT2d(0, 1, 0, 1, patch=4, dim=16, heads=2, depths=(1,), window=2).double()
    with torch.no_grad():
        y = model(u)
        for k in (1, 2, 3):
            assert (model(rotate_field(u, k, 0, 1)) - rotate_field(y, k, 0, 1)).abs().max() < 1e-10


# --------------------------------------------------------------------------- windows
def _groups_as_sets(index: torch.Tensor, ids: torch.Tensor) -> set[frozenset[int]]:
    return {frozenset(ids[row].tolist()) for row in index}


@pytest.mark.parametrize("dims,side,window", [(2, 8, 4), (2, 16, 4), (2, 8, 2), (3, 4, 2)])
def test_swin_windows_group_the_same_tokens_under_rotation(dims, side, window):
    ks = range(1, 4) if dims == 2 else range(1, 24)
    for k in ks:
        perm = _token_perm(side, k, dims)  # token at position p after rotation is original perm[p]
        grid = (side,) * dims
        for shifted in (False, True):
            part = window_partition(grid, window, shifted)
            assert sorted(part.index.flatten().tolist()) == list(range(side**dims))
            assert _groups_as_sets(part.index, perm) == _groups_as_sets(part.index, torch.arange(side**dims))
        # merge groups (children of each parent) and, read backwards, expansion
        groups = merge_groups(grid)
        assert _groups_as_sets(groups.index, perm) == _groups_as_sets(groups.index, torch.arange(side**dims))
        # after merging, the coarse grid's windows too
        coarse = tuple(g // 2 for g in grid)
        cperm = _token_perm(side // 2, k, dims)
        for shifted in (False, True):
            part = window_partition(coarse, window, shifted)
            assert _groups_as_sets(part.index, cperm) == _groups_as_sets(part.index, torch.arange((side // 2)**dims))


def test_window_partition_requires_divisible_grid():
    with pytest.raises(ValueError, match="divisible"):
        window_partition((6, 6), 4, False)


def test_patchify_roundtrip_and_order():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float64).reshape(2, 3, 8, 8)
    p = patchify(x, 4)
    assert p.shape == (2, 4, 16, 3)
    assert torch.equal(p[0, 1, 0], x[0, :, 0, 4])  # token 1 = top-right patch, pixel 0 = its corner
    assert torch.equal(unpatchify(p, 4, (8, 8)), x)


# --------------------------------------------------------------------------- degenerate frames (issue #30)
def test_all_zero_velocity_gets_zero_frames_and_the_model_stays_equivariant(caplog):
    # No direction exists when u ≡ 0: the frame's columns are zero (R·0 = 0), not a fixed axis.
    x = _field(b=1, ns=1, nv=1, n=8, seed=9)
    x[:, 1:] = 0.0
    assert torch.equal(canonical_basis(x[:, 1:], 4), torch.zeros(1, 4, 2, 2, dtype=torch.float64))
    torch.manual_seed(2)
    model = ReViT2d(1, 1, 1, 1, patch=4, dim=16, heads=2, depths=(1,), window=2).double()
    with caplog.at_level(logging.WARNING, logger="icml26.papers.revit.model"):
        err, scale = _equivariance_error(model, x, 1, 1, 1, 1)
    assert scale > 1e-2 and err <= 1e-12 * max(scale, 1.0)
    # not silent: one warning per model naming the cause (4 of 4 patches), not one per call
    warnings = [r for r in caplog.records if "no frame direction" in r.getMessage()]
    assert len(warnings) == 1 and "4 of 4 patches" in warnings[0].getMessage()


def test_3d_zero_velocity_frames_are_zero_and_equivariant():
    x = _field(b=1, ns=1, nv=1, n=4, dims=3, seed=10)
    x[:, 1:] = 0.0
    assert torch.equal(canonical_basis(x[:, 1:], 2), torch.zeros(1, 8, 3, 3, dtype=torch.float64))
    torch.manual_seed(3)
    model = ReViT3d(1, 1, 1, 1, patch=2, dim=24, heads=2, depths=(1,), window=2).double()
    err, scale = _equivariance_error(model, x, 1, 1, 1, 1, dims=3, ks=range(24))
    assert scale > 1e-3 and err <= 1e-12  # a non-trivial output, equal under all 24 rotations


def test_3d_frame_without_a_second_direction_keeps_b1_and_zeroes_the_rest():
    # A uniform flow (1, 0, 0): b₁ = x, but mean vorticity, energy moment and global vorticity all vanish.
    u = torch.zeros(1, 3, 2, 2, 2, dtype=torch.float64)
    u[:, 0] = 1.0
    basis = canonical_basis(u, 2)[0, 0]
    expected = torch.zeros(3, 3, dtype=torch.float64)
    expected[0, 0] = 1.0
    assert torch.equal(basis, expected)


def test_rotate_field_rejects_fractional_turns_and_accepts_numpy():
    x = _field(b=1)
    with pytest.raises(TypeError, match="k"):
        rotate_field(x, 1.5, 1, 1)
    assert torch.equal(rotate_field(x, np.int64(1), 1, 1), rotate_field(x, 1, 1, 1))
    out = rotate_field(x.numpy(), 3, 1, 1)
    assert isinstance(out, np.ndarray) and np.array_equal(out, rotate_field(x, 3, 1, 1).numpy())


# --------------------------------------------------------------------------- property tests (hypothesis)
_fields = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(1, 4), st.integers(0, 2**31 - 1)).filter(
    lambda t: t[0] + t[1] > 0)


@settings(max_examples=40, deadline=None)
@given(spec=_fields, k=st.integers(-9, 9), j=st.integers(-9, 9))
def test_c4_action_is_a_homomorphism(spec, k, j):
    ns, nv, n, seed = spec
    x = torch.randn(2, ns + 2 * nv, n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    # L_k L_j = L_{k+j}, L_4 = id, and L_k preserves every scalar's values and every vector's norm
    assert torch.equal(rotate_field(rotate_field(x, j, ns, nv), k, ns, nv), rotate_field(x, k + j, ns, nv))
    assert torch.equal(rotate_field(x, 4 * k, ns, nv), x)
    y = rotate_field(x, k, ns, nv)
    assert torch.equal(y[:, :ns].flatten(2).sort(-1).values, x[:, :ns].flatten(2).sort(-1).values)
    norms = lambda f: f[:, ns:].unflatten(1, (nv, 2)).norm(dim=2).flatten(2).sort(-1).values  # noqa: E731
    assert torch.allclose(norms(y), norms(x), rtol=1e-15, atol=0)  # a rotation is an isometry


@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, 23), b=st.integers(0, 23), seed=st.integers(0, 2**31 - 1))
def test_octahedral_action_composes_like_the_matrices(a, b, seed):
    group = octahedral_group()
    x = torch.randn(1, 1 + 3, 2, 2, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    # L_{R_a} L_{R_b} = L_{R_a R_b}
    lhs = apply_rotation(apply_rotation(x, group[b], 1, 1), group[a], 1, 1)
    assert torch.equal(lhs, apply_rotation(x, group[a] @ group[b], 1, 1))


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 3), seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 1e3))
def test_canonical_basis_is_equivariant_for_random_fields(k, seed, scale):
    u = scale * torch.randn(1, 2, 8, 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    basis = canonical_basis(u, 4)
    rotated = canonical_basis(rotate_field(u, k, 0, 1), 4)
    assert torch.allclose(rotated, _rotmat(k, 2) @ basis[:, _token_perm(2, k)], atol=1e-12)
