"""Tests of the curvature paper's on-manifold controls: the directions' geometry, the per-prefix
regression of entropy slopes on angle slopes, the sweep against the perturbation study's code path,
and the checks the study measures."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from icml26.common.tiny_lm import TinyLMConfig, build_model
from icml26.papers.curvature.analysis import entropy_per_angle
from icml26.papers.curvature.geometry import extrapolation_target, turning_angles
from icml26.papers.curvature.onmanifold import NAMED_DIRECTIONS, onmanifold_directions, onmanifold_sweep, top_components

SMALL = TinyLMConfig(vocab_size=300, d_model=32, n_layers=3, n_heads=2, context=32)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _last_angle(pts: torch.Tensor) -> torch.Tensor:
    return turning_angles(pts[..., -3:, :])[..., 0]


def _moved(hidden: torch.Tensor, direction: torch.Tensor, size: float) -> torch.Tensor:
    out = hidden.clone()
    out[:, -1] = hidden[:, -1] + size * direction
    return out


@pytest.fixture(scope="module")
def trajectories() -> torch.Tensor:
    return torch.randn(6, 5, 16, generator=_gen(1), dtype=torch.float64)


@pytest.fixture(scope="module")
def directions(trajectories):
    names, dirs = onmanifold_directions(trajectories, n_random=5, generator=_gen(2))
    return dict(zip(names, dirs.unbind(1)))


def test_entropy_per_angle_by_hand():
    # prefix 0: (1*1 + 3*2) / (1 + 4) = 7/5; prefix 1: (2*0 + (-1)*1) / (0 + 1) = -1
    h = [[1.0, 2.0], [3.0, -1.0]]
    phi = [[1.0, 0.0], [2.0, 1.0]]
    np.testing.assert_allclose(entropy_per_angle(h, phi), [1.4, -1.0])
    # entropy exactly proportional to the angle: the factor, whatever the directions
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(8, 5))
    np.testing.assert_allclose(entropy_per_angle(-0.7 * phi, phi), np.full(5, -0.7))
    # a non-finite slope or no angle change at all: NaN for that prefix only
    out = entropy_per_angle([[1.0, np.nan, 1.0], [2.0, 1.0, 1.0]], [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    assert out[0] == pytest.approx(1.5) and np.isnan(out[1]) and np.isnan(out[2])
    with pytest.raises(ValueError, match="directions, prefixes"):
        entropy_per_angle(np.ones((2, 3)), np.ones((3, 2)))


def test_entropy_per_angle_recovers_the_projection_of_a_linear_entropy():
    """Linear slopes h = <g_H, d>, phi = <g_phi, d> over isotropic directions d in 3 dimensions: the
    regression tends to <g_H, g_phi> / |g_phi|^2 (the entropy change per radian, other parts averaged out)."""
    rng = np.random.default_rng(3)
    g_h, g_phi = np.array([0.4, -1.0, 2.0]), np.array([1.5, 0.5, 0.0])
    d = rng.normal(size=(200_000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    beta = entropy_per_angle((d @ g_h)[:, None], (d @ g_phi)[:, None])[0]
    # by hand: <g_H, g_phi> = 0.6 - 0.5 + 0 = 0.1, |g_phi|^2 = 2.25 + 0.25 = 2.5
    assert beta == pytest.approx(0.1 / 2.5, abs=0.005)


def test_directions_are_unit_and_named(trajectories, directions):
    assert list(directions)[: len(NAMED_DIRECTIONS)] == list(NAMED_DIRECTIONS)
    assert [n for n in directions if n.startswith("span_")] == [f"span_{k}" for k in range(1, 6)]
    for name, d in directions.items():
        torch.testing.assert_close(d.norm(dim=-1), torch.ones(6, dtype=torch.float64), msg=name)
    last = trajectories[:, -1]
    torch.testing.assert_close(directions["aligned"], (extrapolation_target(trajectories) - last)
                               / (extrapolation_target(trajectories) - last).norm(dim=-1, keepdim=True))
    torch.testing.assert_close(directions["shrink"], -last / last.norm(dim=-1, keepdim=True))


def test_toward_previous_leaves_the_angle_unchanged_and_rotation_changes_only_the_angle(trajectories, directions):
    x = trajectories
    v_last = x[:, -1] - x[:, -2]
    phi0 = _last_angle(x)
    step = 0.5 * v_last.norm(dim=-1).min().item()  # shorter than every last step: no pass of x_{t-1}
    torch.testing.assert_close(_last_angle(_moved(x, directions["toward_previous"], step)), phi0, rtol=0, atol=1e-10)
    # rotation: orthogonal to v_{t-1}, in the plane of v_{t-2} and v_{t-1}, and it lowers the angle at
    # the rate 1 / |v_{t-1}| (an endpoint moved by s perpendicular to a segment of length r turns it by s / r)
    rot = directions["rotation"]
    assert (rot * v_last).sum(-1).abs().max() < 1e-10
    plane, _ = torch.linalg.qr(torch.stack([x[:, -2] - x[:, -3], v_last], dim=-1))
    in_plane = (plane @ (plane.transpose(1, 2) @ rot[..., None]))[..., 0]
    torch.testing.assert_close(in_plane, rot)
    s = 1e-6
    rate = (_last_angle(_moved(x, rot, s)) - phi0) / s
    torch.testing.assert_close(rate, -1.0 / v_last.norm(dim=-1), rtol=1e-4, atol=0)
    # the step length is kept to first order (second order only)
    moved_len = (x[:, -1] + s * rot - x[:, -2]).norm(dim=-1)
    assert (moved_len - v_last.norm(dim=-1)).abs().max() < 1e-10


def test_span_directions_lie_in_the_span_of_the_last_three_states(trajectories, directions):
    q, _ = torch.linalg.qr(trajectories[:, -3:].transpose(1, 2))
    for name in [n for n in directions if n.startswith("span_")] + ["aligned", "rotation", "toward_previous", "shrink"]:
        d = directions[name]
        residual = d - (q @ (q.transpose(1, 2) @ d[..., None]))[..., 0]
        assert residual.norm(dim=-1).max() < 1e-10, name
    # the misaligned control leaves the trajectory's plane
    v_before, v_last = trajectories[:, -2] - trajectories[:, -3], trajectories[:, -1] - trajectories[:, -2]
    mis = directions["misaligned"]
    assert (mis * v_before).sum(-1).abs().max() < 1e-10 and (mis * (v_before - v_last)).sum(-1).abs().max() < 1e-10


def test_best_of_n_picks_the_extreme_angles_in_the_principal_subspace(trajectories):
    basis = top_components(trajectories.reshape(-1, 16), 4)
    torch.testing.assert_close(basis @ basis.T, torch.eye(4, dtype=torch.float64))
    eps = 0.05
    names, dirs = onmanifold_directions(trajectories, n_random=2, generator=_gen(5), components=basis, pc_draws=12,
                                        select_epsilon=eps)
    # replay the same draws: misaligned (one Gaussian per row), then the N principal-subspace coefficients
    g = _gen(5)
    torch.randn(trajectories[:, -1].shape, generator=g, dtype=torch.float64)
    coef = torch.randn((6, 12, 4), generator=g, dtype=torch.float64)
    cand = coef @ basis
    cand = cand / cand.norm(dim=-1, keepdim=True)
    size = eps * trajectories[:, -1].norm(dim=-1)
    phis = torch.stack([_last_angle(_moved(trajectories, cand[:, k] * size[:, None], 1.0)) for k in range(12)], dim=1)
    straightest, curviest = dirs[:, names.index("pc_straightest")], dirs[:, names.index("pc_curviest")]
    torch.testing.assert_close(straightest, cand[torch.arange(6), phis.argmin(1)])
    torch.testing.assert_close(curviest, cand[torch.arange(6), phis.argmax(1)])


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def small_model(request):
    return build_model(dataclasses.replace(SMALL, arch=request.param), seed=3).eval()


@pytest.mark.parametrize("use_cache", [False, True])
def test_sweep_aligned_and_misaligned_equal_the_perturbation_sweep(small_model, use_cache):
    """Two code paths, one answer: the sweep's aligned and misaligned directions give the perturbation
    study's Delta H (same generator state), and the curvature-neutral step leaves the angle unchanged."""
    from icml26.papers.curvature import perturbation_sweep

    ids = torch.randint(0, SMALL.vocab_size, (5, 12), generator=_gen(41))
    eps = (0.1, 0.5, 1.0)
    sweep = onmanifold_sweep(small_model, ids, 2, eps, n_random=3, generator=_gen(7), use_cache=use_cache)
    ref = perturbation_sweep(small_model, ids, 2, eps, generator=_gen(7), use_cache=use_cache)
    assert sweep.delta_entropy.shape == sweep.delta_angle.shape == (len(NAMED_DIRECTIONS) + 3, 3, 5)
    assert ref.aligned.abs().max() > 1e-4  # the comparison has power
    i_al, i_mis = sweep.names.index("aligned"), sweep.names.index("misaligned")
    torch.testing.assert_close(sweep.delta_entropy[i_al], ref.aligned.float(), rtol=1e-4, atol=2e-5)
    torch.testing.assert_close(sweep.delta_entropy[i_mis], ref.misaligned.float(), rtol=1e-4, atol=2e-5)
    keep = ~sweep.previous_passed
    neutral = sweep.delta_angle[sweep.names.index("toward_previous")][:, keep]
    assert neutral.abs().max() < 1e-4
    assert sweep.delta_angle[sweep.names.index("rotation")].max() < 0  # the rotation straightens
    with pytest.raises(ValueError, match="epsilons"):
        onmanifold_sweep(small_model, ids, 2, (0.0,))


def test_onmanifold_checks_are_means_over_prefixes():
    from icml26.papers.curvature.experiment import CHECKS, _manifold_checks
    from icml26.papers.curvature.manifold_study import OnManifoldStudy

    names = [*NAMED_DIRECTIONS, "span_1", "span_2"]
    h = np.arange(len(names) * 4, dtype=float).reshape(len(names), 4) - 20.0
    phi = np.ones_like(h)
    study = OnManifoldStudy(layer=3, names=names, epsilons=[0.01, 0.1], entropy_slopes=h, angle_slopes=phi,
                            per_angle=np.array([1.0, 2.0, np.nan, -0.5]), previous_passed=0.0)
    checks = {c.id: c for c in _manifold_checks(study, "")}
    assert checks["pretrained_entropy_per_angle"].value == pytest.approx(2.5 / 3)
    rot = h[names.index("rotation")]
    assert checks["pretrained_rotation_slope"].value == pytest.approx(rot.mean())
    diff = h[names.index("pc_straightest")] - h[names.index("pc_curviest")]
    assert checks["pretrained_pc_straightest_minus_curviest"].value == pytest.approx(diff.mean())
    assert len(checks["pretrained_entropy_per_angle"].units) == 4
    assert CHECKS["pretrained_entropy_per_angle"].role == "headline"
    # the rotation's own ratio: slope over angle slope, per prefix
    np.testing.assert_allclose(study.rotation_per_angle, rot / 1.0)
    missing = _manifold_checks(None, "skipped")
    assert all(math.isnan(c.value) and "skipped" in c.note for c in missing)


def test_onmanifold_only_needs_a_layer():
    from icml26.papers.curvature.config import Config

    with pytest.raises(ValueError, match="onmanifold_layer"):
        Config(onmanifold_only=True)
    Config(onmanifold_only=True, onmanifold_layer=22)


def test_layerwise_analysis_of_selected_layers_equals_the_full_one_there(small_model):
    """Two code paths, one answer: the selected layers' statistics are the full analysis' at those layers;
    the others are NaN in place."""
    from icml26.papers.curvature import layerwise_curvature_entropy

    ids = torch.randint(0, SMALL.vocab_size, (6, 20), generator=_gen(9))
    with torch.no_grad():
        full = layerwise_curvature_entropy(small_model, ids, 3, batch_size=4)
        part = layerwise_curvature_entropy(small_model, ids, 3, batch_size=4, layers=(1, 3))
    for name in ("spearman", "pearson", "partial_spearman", "mean_curvature"):
        got, want = getattr(part, name), getattr(full, name)
        np.testing.assert_array_equal(got[[1, 3]], want[[1, 3]])
        assert np.isnan(got[[0, 2]]).all(), name
    np.testing.assert_array_equal(part.curvature[[1, 3]], full.curvature[[1, 3]])
    np.testing.assert_array_equal(part.entropy, full.entropy)
    with pytest.raises(ValueError, match="layers"):
        layerwise_curvature_entropy(small_model, ids, 3, layers=(5,))
    with pytest.raises(TypeError, match="layers"):
        layerwise_curvature_entropy(small_model, ids, 3, layers="1")
