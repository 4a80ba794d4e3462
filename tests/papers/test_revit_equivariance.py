"""ReViT's exact equivariance: the 2D model in float64 and float32 (a plain ViT is not), token invariance,
the octahedral group and the 3D model, fallback frames inside the model, the reproduction's rotation
spread and seeds, and the bilinear local embedding.
"""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
import torch

from icml26.papers.revit import (
    PlainViT,
    ReViT2d,
    ReViT3d,
    apply_rotation,
    canonical_basis,
    octahedral_group,
    reflections_3d,
    rotate_field,
)
from icml26.papers.revit.analysis import relative_gain, rotated_mean, rotation_spread, summarize_rotations
from icml26.papers.revit.grid import patchify, unpatchify
from icml26.papers.revit.training import fit, rotated_mse
from tests.papers._revit_helpers import _equivariance_error, _field, _token_perm


def _permute_tokens(t: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """Tokens of the rotated input at position p equal original tokens at perm[p]."""
    return t[:, perm]


# --------------------------------------------------------------------------- equivariance
def _small_revit(**kw):
    torch.manual_seed(0)
    # The reproduction's geometry: 32x32 grid, 4x4 patches, 8x8 tokens in 4x4 windows, one merge.
    return ReViT2d(1, 2, 2, 1, patch=4, dim=32, heads=4, depths=(2, 2), decoder_depth=1, window=4, **kw)


@pytest.mark.parametrize("variant", [{}, {"patch_pooling": "pma"}, {"periodic": False}, {"vector_fraction": 0.0},
                                     {"local_kernel": "mlp"}])
def test_revit_is_exactly_equivariant_float64(variant):
    model = _small_revit(**variant).double()
    x = _field(ns=1, nv=2, n=32)
    err, scale = _equivariance_error(model, x, 1, 2, 2, 1)
    assert scale > 1e-2
    assert err <= 1e-10


def test_revit_is_equivariant_float32_and_plain_vit_is_not():
    x = _field(ns=1, nv=2, n=32, dtype=torch.float32)
    err, scale = _equivariance_error(_small_revit(), x, 1, 2, 2, 1)
    assert err <= 1e-5 * scale
    torch.manual_seed(0)
    vit = PlainViT(1, 2, 2, 1, grid_size=32, patch=4, dim=32, heads=4, depths=(2, 2), window=4)
    err_vit, scale_vit = _equivariance_error(vit, x, 1, 2, 2, 1)
    assert err_vit > 1e-2 * scale_vit


def test_tokens_are_invariant_up_to_patch_permutation():
    """Forward hooks on the embedding, every block, every merge and expand: tokens of the rotated
    input are the original tokens permuted by π."""
    model = _small_revit().double()
    captured: list[list[torch.Tensor]] = [[], []]
    hooked = [model.embed, *model.backbone.merges, *model.backbone.expands]
    for stage in (*model.backbone.encoder, *model.backbone.decoder):
        hooked.extend(stage)
    run = [0]
    handles = [m.register_forward_hook(lambda mod, inp, out: captured[run[0]].append(out)) for m in hooked]
    x = _field(ns=1, nv=2, n=32)
    k = 1
    with torch.no_grad():
        model(x)
        run[0] = 1
        model(rotate_field(x, k, 1, 2))
    for h in handles:
        h.remove()
    assert len(captured[0]) == len(captured[1]) == 2 + 2 + 2 + 1 + 1  # embed, 2+2 encoder, merge, expand, decoder
    checked_levels = set()
    for orig, rot in zip(*captured):
        side = int(round(orig.shape[1] ** 0.5))
        checked_levels.add(side)
        perm = _token_perm(side, k)
        assert torch.allclose(rot, _permute_tokens(orig, perm), atol=1e-10)
        assert not torch.allclose(rot, orig, atol=1e-3)  # the test has power: tokens did move
    assert checked_levels == {8, 4}


def test_residual_model_and_channel_validation():
    with pytest.raises(ValueError, match="vector input"):
        ReViT2d(1, 0, 1, 0)
    with pytest.raises(ValueError, match="residual"):
        ReViT2d(0, 1, 1, 1, residual=True)
    model = ReViT2d(1, 1, 1, 1, patch=4, dim=16, heads=2, depths=(1, 1), window=2)
    with pytest.raises(ValueError, match="channels|expected"):
        model(torch.randn(1, 2, 16, 16))
    with pytest.raises(ValueError, match="divisible|multiple"):
        model(torch.randn(1, 3, 12, 12))
    with pytest.raises(ValueError, match="channels"):
        rotate_field(torch.randn(1, 3, 4, 4), 1, 0, 1)


# --------------------------------------------------------------------------- 3D
def test_octahedral_group_has_24_proper_rotations_and_is_closed():
    group = octahedral_group()
    keys = {tuple(m.flatten().tolist()) for m in group}
    assert len(keys) == 24
    assert torch.equal(group[0], torch.eye(3, dtype=torch.int64))
    for a, b in itertools.product(group, group):
        assert tuple((a @ b).flatten().tolist()) in keys
    for m in group:
        assert int(torch.linalg.det(m.double()).round()) == 1
        assert tuple(m.T.flatten().tolist()) in keys  # inverses
    # the field action is a homomorphism: L_a L_b = L_{ab}
    x = _field(b=1, ns=1, nv=1, n=4, dims=3)
    a, b = group[5], group[17]
    assert torch.equal(apply_rotation(apply_rotation(x, b, 1, 1), a, 1, 1), apply_rotation(x, a @ b, 1, 1))


def test_revit3d_is_equivariant_under_all_24_rotations_but_not_reflections():
    torch.manual_seed(0)
    model = ReViT3d(1, 1, 1, 1, patch=2, dim=24, heads=2, depths=(1, 1), decoder_depth=1, window=2).double()
    x = _field(b=1, ns=1, nv=1, n=8, dims=3)
    err, scale = _equivariance_error(model, x, 1, 1, 1, 1, dims=3, ks=range(24))
    assert err <= 1e-10 * max(scale, 1.0)
    frames = model.frames(x)
    for level in frames:
        assert torch.allclose(torch.linalg.det(level), torch.ones(()).double(), atol=1e-12)
    # Chirality: reflections are not in the group ReViT-3D is built for, and it fails on them.
    with torch.no_grad():
        y = model(x)
        reflection_errors = [float((model(apply_rotation(x, r, 1, 1)) - apply_rotation(y, r, 1, 1)).abs().max())
                             for r in reflections_3d()]
    assert min(reflection_errors) > 1e-2 * scale


# --------------------------------------------------------------------------- audit additions
def test_zero_patch_uses_the_global_mean_frame_and_stays_equivariant():
    # A patch where u ≡ 0 (an obstacle, a dead region): its mean and energy moment both vanish, so
    # the documented fallback order gives the sample's global mean velocity as b₁.
    u = _field(b=1, ns=0, nv=1, n=8, seed=4)
    u[:, :, :4, :4] = 0.0
    basis = canonical_basis(u, patch=4)
    g = u.flatten(2).mean(-1)[0]
    assert torch.allclose(basis[0, 0, :, 0], g / g.norm(), atol=1e-15)
    model = ReViT2d(0, 1, 0, 1, patch=4, dim=16, heads=2, depths=(1,), window=2).double()
    err, scale = _equivariance_error(model, u, 0, 1, 0, 1)
    assert scale > 1e-2 and err <= 1e-10


def test_energy_moment_fallback_matches_hand_calculation():
    # One 2x2 patch with u = (1, 0) at the pixel right of centre (+x) and (-1, 0) at its left
    # neighbour: zero mean, energy |u|² = 1 on the bottom row (y = -1/4, x = ∓1/4 in patch units),
    # so the moment is mean_k o_k |u_k|² = ((-1/4 + 1/4)/4, (-1/4 - 1/4)/4) = (0, -1/8) → b₁ = -y.
    u = torch.zeros(1, 2, 2, 2, dtype=torch.float64)
    u[0, 0, 0, 0], u[0, 0, 0, 1] = -1.0, 1.0
    basis = canonical_basis(u, patch=2)[0, 0]
    assert torch.allclose(basis, torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64), atol=1e-15)


def test_revit3d_degenerate_patch_is_still_equivariant():
    u = _field(b=1, ns=1, nv=1, n=8, dims=3, seed=5)
    block = u[:, 1:, :2, :2, :2]
    block -= block.mean(dim=(-1, -2, -3), keepdim=True)  # patch 0 has zero mean velocity
    torch.manual_seed(1)
    model = ReViT3d(1, 1, 1, 1, patch=2, dim=24, heads=2, depths=(1, 1), window=2).double()
    err, scale = _equivariance_error(model, u, 1, 1, 1, 1, dims=3, ks=range(24))
    assert scale > 1e-2 and err <= 1e-10 * max(scale, 1.0)


@pytest.mark.parametrize("k", [2, 3])
def test_tokens_are_invariant_at_every_rotation(k):
    model = _small_revit().double()
    hooked = [model.embed, *model.backbone.merges, *model.backbone.expands,
              *[b for stage in (*model.backbone.encoder, *model.backbone.decoder) for b in stage]]
    captured: list[list[torch.Tensor]] = [[], []]
    run = [0]
    handles = [m.register_forward_hook(lambda mod, inp, out: captured[run[0]].append(out)) for m in hooked]
    x = _field(ns=1, nv=2, n=32, seed=6)
    with torch.no_grad():
        model(x)
        run[0] = 1
        model(rotate_field(x, k, 1, 2))
    for h in handles:
        h.remove()
    for orig, rot in zip(*captured):
        perm = _token_perm(int(round(orig.shape[1] ** 0.5)), k)
        assert torch.allclose(rot, orig[:, perm], atol=1e-10)


def test_public_api_exports_training_helpers():
    import icml26.papers.revit as revit

    assert revit.fit is fit and revit.rotated_mse is rotated_mse
    assert {"fit", "rotated_mse", "FieldFitResult"} <= set(revit.__all__)
    assert "FitResult" not in revit.__all__  # one meaning per name: dmanet's fit result differs


def test_rotated_mse_of_an_equivariant_oracle_is_rotation_independent_and_exact():
    # Two code paths: rotated_mse against a hand computation for a model that outputs the input's
    # velocity times 0.5 (exactly C4-equivariant): MSE(k) = mean((0.5 u - y)²) for every k.
    class Half(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            return 0.5 * x[:, 1:] + 0 * self.w

    x = _field(b=3, ns=1, nv=1, n=8, seed=7)
    y = torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    got = rotated_mse(Half(), x, y, n_scalar_in=1, n_vector_in=1, n_scalar_out=0, n_vector_out=1, batch_size=2)
    want = float(((0.5 * x[:, 1:] - y) ** 2).mean())
    assert got == pytest.approx([want] * 4, rel=1e-12)


# --------------------------------------------------------------------------- reproduction analysis
def test_rotation_spread_and_summary_match_a_hand_computation():
    table = [[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]
    # replicate 0: (4 - 1) / 2.5 = 1.2; replicate 1: 0 → worst 1.2
    assert rotation_spread(table) == pytest.approx(1.2)
    assert rotated_mean(table) == pytest.approx([3.0, 2.0])
    summary = summarize_rotations(table)
    assert summary.per_rotation == pytest.approx((1.5, 2.0, 2.5, 3.0))
    assert summary.rotated == pytest.approx(2.5) and summary.rotated_std == pytest.approx(0.5)
    assert summary.overall == pytest.approx(18 / 8)
    assert relative_gain(0.3, 1.2) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="per_rotation"):
        rotation_spread([1.0, 2.0])
    with pytest.raises(ValueError, match="reference"):
        relative_gain(1.0, 0.0)


def test_init_stream_gives_every_replicate_and_arm_its_own_seed():
    from icml26.contract import RunContext
    from icml26.papers.revit.experiment import STREAMS, _init_seed

    ctx = RunContext(seed=7, device=torch.device("cpu"), setting="tiny", threads=1, streams=STREAMS)
    seeds = {(r, a): _init_seed(ctx, r, a) for r in range(8) for a in range(4)}
    assert len(set(seeds.values())) == len(seeds)
    # the 64-bit index is read as two 32-bit words: (replicate, arm) -> [seed, crc32("init"), replicate, arm]
    words = [7, zlib.crc32(b"init"), 2, 3]
    assert seeds[2, 3] == int(np.random.SeedSequence(words).generate_state(1)[0])


# --------------------------------------------------------------------------- bilinear local kernel (issue #30)
def test_tent_kernel_matches_a_hand_calculation():
    from icml26.papers.revit.grid import pixel_offsets
    from icml26.papers.revit.layers import TentKernel

    grid = pixel_offsets(2, 2)  # (±1/4, ±1/4), spacing 1/2, order (x, y) with x fastest
    psi = TentKernel(grid, 0.5)
    assert torch.equal(psi(grid), torch.eye(4, dtype=torch.float64))  # one-hot at its own points
    # the patch centre is equidistant from all four: bilinear weights (1 - 1/2)² = 1/4 each
    assert torch.allclose(psi(torch.zeros(1, 2, dtype=torch.float64)), torch.full((1, 4), 0.25, dtype=torch.float64))
    # (0.25, 0): halfway between (0.25, ±0.25) → 1/2, 1/2 on the x = +1/4 column, 0 elsewhere
    w = psi(torch.tensor([[0.25, 0.0]], dtype=torch.float64))[0]
    assert torch.allclose(w, torch.tensor([0.0, 0.5, 0.0, 0.5], dtype=torch.float64))
    # a point 45°-rotated from a corner (0, 0.25·√2) still lands on the grid's support (weights sum ≤ 1)
    w = psi(torch.tensor([[0.0, 0.25 * math.sqrt(2.0)]], dtype=torch.float64))[0]
    assert 0.0 < float(w.sum()) <= 1.0 and float(w[0]) == 0.0 and float(w[1]) == 0.0


def test_bilinear_embedding_with_identity_frames_is_the_linear_patch_embedding():
    # Two code paths: with identity frames the rebased-kernel embedding must be exactly nn.Linear on the
    # flattened patch (the plain ViT's embedding), channel-major: vec(f ⊗ ψ) = vec(f) since ψ(o_k) = e_k.
    from icml26.papers.revit.layers import RebasedPatchDecoder, RebasedPatchEmbed

    torch.manual_seed(4)
    embed = RebasedPatchEmbed(1, 1, 2, 4, 8, kernel="bilinear").double()
    x = _field(b=2, ns=1, nv=1, n=8)
    frames = torch.eye(2, dtype=torch.float64).expand(2, 4, 2, 2)
    pixels = patchify(x, 4)  # (B, T, 16, 3)
    want = embed.proj(pixels.transpose(-1, -2).flatten(-2))
    assert torch.allclose(embed(x, frames), want, atol=1e-12)
    decoder = RebasedPatchDecoder(0, 1, 2, 4, 8, kernel="bilinear").double()
    tokens = torch.randn(2, 4, 8, dtype=torch.float64)
    a = decoder.head(tokens).reshape(2, 4, 2, 16)  # (B, T, C, pixel): read out pixel by pixel
    assert torch.allclose(decoder(tokens, frames, (8, 8)), unpatchify(a.transpose(-1, -2), 4, (8, 8)), atol=1e-12)


def test_unknown_local_kernel_is_refused():
    with pytest.raises(ValueError, match="local_kernel"):
        _small_revit(local_kernel="cubic")
