"""Tests of icml26.papers.curvature: closed forms, invariances, hooks, regulariser, statistics."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from icml26.papers.curvature import (
    CurvatureLoss,
    contextual_curvature,
    curvature_regularizer,
    extrapolation_target,
    layerwise_curvature_entropy,
    mean_curvature,
    misaligned,
    next_token_entropy,
    paired_test,
    partial_correlation,
    patch_hidden_state,
    pearson,
    perturb_and_measure,
    spearman,
    straighten,
    turning_angles,
    unigram_log_frequency,
)

scipy_stats = pytest.importorskip("scipy.stats")


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _random_orthogonal(d: int, seed: int) -> torch.Tensor:
    q, r = torch.linalg.qr(torch.randn(d, d, generator=_gen(seed), dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


def _loop_angles(traj: torch.Tensor) -> list[float]:
    """Turning angles by the textbook arccos formula, one vertex at a time (float64)."""
    x = traj.double()
    out = []
    for j in range(1, len(x) - 1):
        a, b = x[j] - x[j - 1], x[j + 1] - x[j]
        cos = float(a @ b / (a.norm() * b.norm()))
        out.append(math.acos(max(-1.0, min(1.0, cos))))
    return out


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------
def test_straight_line_has_zero_curvature():
    direction = torch.randn(16, generator=_gen(1), dtype=torch.float64)
    origin = torch.randn(16, generator=_gen(2), dtype=torch.float64)
    line = origin + (torch.linspace(-3, 5, 30, dtype=torch.float64) ** 3)[:, None] * direction  # uneven speed
    assert turning_angles(line).abs().max() < 1e-9
    # float32 points carry ~1e-7 relative rounding; the angle error stays of that order.
    assert turning_angles(line.float()).abs().max() < 1e-4
    kappa = contextual_curvature(line, window=3)
    assert torch.isnan(kappa[:4]).all() and kappa[4:].abs().max() < 1e-6


@pytest.mark.parametrize("n", [3, 5, 8, 12])
def test_points_on_a_circle_turn_by_two_pi_over_n(n):
    theta = torch.arange(2 * n + 1, dtype=torch.float64) * 2 * math.pi / n
    plane = torch.stack([torch.cos(theta), torch.sin(theta)], 1)
    embed = _random_orthogonal(7, 3)[:2]  # the circle lives in a random plane of R^7
    circle = 4.0 * plane @ embed + 1.5
    torch.testing.assert_close(turning_angles(circle), torch.full((2 * n - 1,), 2 * math.pi / n, dtype=torch.float64),
                               rtol=0, atol=1e-12)
    torch.testing.assert_close(contextual_curvature(circle, window=2)[3:],
                               torch.full((2 * n - 2,), 2 * math.pi / n, dtype=torch.float64), rtol=0, atol=1e-12)


def test_iid_gaussian_points_turn_by_two_thirds_pi():
    # v_{j-1}, v_j share x_j with opposite signs: cos -> -1/2, angle -> 2 pi / 3 as d grows.
    points = torch.randn(400, 2000, generator=_gen(4), dtype=torch.float64)
    assert abs(float(mean_curvature(points)) - 2 * math.pi / 3) < 0.01


def test_gaussian_random_walk_turns_by_a_right_angle():
    walk = torch.randn(400, 2000, generator=_gen(5), dtype=torch.float64).cumsum(0)
    assert abs(float(mean_curvature(walk)) - math.pi / 2) < 0.01


def test_angles_match_the_arccos_formula_and_batching():
    trajs = torch.randn(3, 12, 9, generator=_gen(6), dtype=torch.float64)
    batched = turning_angles(trajs)
    assert batched.shape == (3, 10)
    for row, traj in zip(batched, trajs):
        np.testing.assert_allclose(row.numpy(), _loop_angles(traj), atol=1e-10)
        torch.testing.assert_close(turning_angles(traj), row)
    torch.testing.assert_close(contextual_curvature(trajs, 4)[1], contextual_curvature(trajs[1], 4), equal_nan=True)


# ---------------------------------------------------------------------------
# Invariances, causality, the window
# ---------------------------------------------------------------------------
def test_curvature_is_invariant_to_rotation_translation_and_scaling():
    traj = torch.randn(20, 11, generator=_gen(7), dtype=torch.float64)
    kappa = contextual_curvature(traj, 3)
    rotation = _random_orthogonal(11, 8)
    shift = torch.randn(11, generator=_gen(9), dtype=torch.float64)
    for moved in (traj @ rotation.T, traj + shift, 0.01 * traj, 250.0 * traj, 3.0 * traj @ rotation.T - shift):
        torch.testing.assert_close(contextual_curvature(moved, 3), kappa, rtol=0, atol=1e-6, equal_nan=True)


def test_reversal_preserves_the_angles():
    traj = torch.randn(15, 6, generator=_gen(10), dtype=torch.float64)
    torch.testing.assert_close(turning_angles(traj.flip(0)), turning_angles(traj).flip(0), rtol=0, atol=1e-12)


def test_contextual_curvature_is_causal():
    traj = torch.randn(25, 8, generator=_gen(11), dtype=torch.float64)
    kappa = contextual_curvature(traj, 3)
    for t in (4, 10, 23):
        changed = traj.clone()
        changed[t + 1 :] = torch.randn_like(changed[t + 1 :]) * 10
        after = contextual_curvature(changed, 3)
        torch.testing.assert_close(after[: t + 1], kappa[: t + 1], rtol=0, atol=0, equal_nan=True)
        assert not torch.allclose(after[t + 1 :], kappa[t + 1 :])
        # Changing x_t itself does change kappa(t).
        moved = traj.clone()
        moved[t] += 1.0
        assert contextual_curvature(moved, 3)[t] != kappa[t]


@pytest.mark.parametrize("window", [1, 3, 8])
def test_window_averages_exactly_the_last_w_angles(window):
    traj = torch.randn(20, 5, generator=_gen(12), dtype=torch.float64)
    angles = _loop_angles(traj)  # angles[j - 1] is the angle at vertex j
    kappa = contextual_curvature(traj, window)
    for t in range(20):
        if t < window + 1:
            assert math.isnan(kappa[t])
        else:
            # kappa(t; W) = mean of phi_{t-W} .. phi_{t-1}: vertices whose neighbours are <= t
            expected = np.mean([angles[j - 1] for j in range(t - window, t)])
            assert abs(float(kappa[t]) - expected) < 1e-10


def test_zero_length_steps_give_nan_not_errors():
    traj = torch.randn(10, 4, generator=_gen(13), dtype=torch.float64)
    traj[5] = traj[4]  # a repeated state: step v_4 has length 0
    angles = turning_angles(traj)
    assert torch.isnan(angles[3]) and torch.isnan(angles[4])  # vertices 4 and 5 touch v_4
    assert torch.isfinite(angles[[0, 1, 2, 5, 6, 7]]).all()
    kappa = contextual_curvature(traj, 1)
    assert torch.isnan(kappa[5]) and torch.isnan(kappa[6]) and torch.isfinite(kappa[7])
    assert torch.isfinite(mean_curvature(traj))
    still = torch.zeros(6, 3)
    assert torch.isnan(turning_angles(still)).all() and torch.isnan(mean_curvature(still))


def test_geometry_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 3"):
        turning_angles(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="window"):
        contextual_curvature(torch.zeros(5, 4), window=0)
    with pytest.raises(ValueError, match="shape"):
        turning_angles(torch.zeros(5))
    assert torch.isnan(contextual_curvature(torch.randn(4, 3), window=3)).all()  # too short: all undefined


# ---------------------------------------------------------------------------
# Entropy
# ---------------------------------------------------------------------------
def test_entropy_matches_categorical_and_closed_forms():
    logits = torch.randn(4, 7, 50, generator=_gen(14)) * 3
    expected = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(next_token_entropy(logits), expected, rtol=1e-5, atol=1e-6)
    assert torch.allclose(next_token_entropy(torch.zeros(3, 128)), torch.full((3,), math.log(128)))
    one_hot = torch.full((1, 64), -1e4)
    one_hot[0, 3] = 0.0
    assert float(next_token_entropy(one_hot)) < 1e-6
    masked = torch.tensor([[0.0, 0.0, float("-inf"), float("-inf")]])
    assert torch.allclose(next_token_entropy(masked), torch.tensor([math.log(2)]))
    half = next_token_entropy(logits.half())
    assert half.dtype == torch.float32 and torch.allclose(half, expected, atol=2e-2)


# ---------------------------------------------------------------------------
# Perturbations
# ---------------------------------------------------------------------------
def test_full_straightening_zeroes_the_last_angle():
    traj = torch.randn(2, 9, 16, generator=_gen(15), dtype=torch.float64)
    for keep in (False, True):
        straight = straighten(traj, 1.0, keep_step_length=keep)
        assert turning_angles(straight)[:, -1].abs().max() < 1e-7
        torch.testing.assert_close(straight[:, :-1], traj[:, :-1], rtol=0, atol=0)
    # keep_step_length keeps |x_t - x_{t-1}|.
    kept = straighten(traj, 1.0, keep_step_length=True)
    torch.testing.assert_close((kept[:, -1] - kept[:, -2]).norm(dim=-1), (traj[:, -1] - traj[:, -2]).norm(dim=-1))
    # alpha in (0, 1) lowers the angle, alpha = 0 changes nothing, alpha < 0 bends further.
    before = turning_angles(traj)[:, -1]
    assert (turning_angles(straighten(traj, 0.5))[:, -1] < before).all()
    assert torch.equal(straighten(traj, 0.0), traj)
    torch.testing.assert_close(extrapolation_target(traj), 2 * traj[:, -2] - traj[:, -3])


def test_misaligned_is_orthogonal_to_the_plane_and_norm_matched():
    traj = torch.randn(64, 7, 32, generator=_gen(16), dtype=torch.float64)
    alpha = -0.7
    moved = misaligned(traj, alpha, _gen(17))
    delta = moved[:, -1] - traj[:, -1]
    aligned = extrapolation_target(traj) - traj[:, -1]
    previous = traj[:, -2] - traj[:, -3]
    assert (delta * aligned).sum(-1).abs().max() < 1e-6
    assert (delta * previous).sum(-1).abs().max() < 1e-6
    assert (delta * (traj[:, -1] - traj[:, -2])).sum(-1).abs().max() < 1e-6  # v_{t-1} lies in the plane too
    torch.testing.assert_close(delta.norm(dim=-1), abs(alpha) * aligned.norm(dim=-1))
    torch.testing.assert_close(delta.norm(dim=-1), (straighten(traj, alpha)[:, -1] - traj[:, -1]).norm(dim=-1))
    torch.testing.assert_close(moved[:, :-1], traj[:, :-1], rtol=0, atol=0)
    assert torch.equal(misaligned(traj, alpha, _gen(17)), moved)  # seeded
    assert not torch.equal(misaligned(traj, alpha, _gen(18)), moved)
    with pytest.raises(ValueError, match="d >= 3"):
        misaligned(torch.randn(5, 2), 0.5, _gen(0))


# ---------------------------------------------------------------------------
# Hooks on real Hugging Face models
# ---------------------------------------------------------------------------
pytest.importorskip("transformers")
from icml26.common.tiny_lm import PretrainConfig, TinyLMConfig, build_model, pretrain  # noqa: E402

SMALL = TinyLMConfig(vocab_size=300, d_model=32, n_layers=3, n_heads=2, context=32)


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def small_model(request):
    return build_model(dataclasses.replace(SMALL, arch=request.param), seed=3).eval()


def test_patching_a_layer_with_its_own_state_reproduces_the_logits_exactly(small_model):
    ids = torch.randint(0, SMALL.vocab_size, (3, 17), generator=_gen(19))
    clean = small_model(input_ids=ids, output_hidden_states=True)
    assert len(clean.hidden_states) == SMALL.n_layers + 1
    for layer in range(SMALL.n_layers + 1):
        with patch_hidden_state(small_model, layer, clean.hidden_states[layer]):
            patched = small_model(input_ids=ids).logits
        assert torch.equal(patched, clean.logits), f"layer {layer}"
        # The patch really acts at that layer: another state there changes the logits …
        with patch_hidden_state(small_model, layer, lambda h: h * 1.5 + 0.1):
            assert not torch.allclose(small_model(input_ids=ids).logits, clean.logits)
        # … and the hook is gone afterwards.
        assert torch.equal(small_model(input_ids=ids).logits, clean.logits)
    # A state copied from another layer is not the same as this one's (the indexing matters).
    with patch_hidden_state(small_model, 2, clean.hidden_states[1]):
        assert not torch.allclose(small_model(input_ids=ids).logits, clean.logits)
    with pytest.raises(ValueError, match="out of range"):
        with patch_hidden_state(small_model, SMALL.n_layers + 1, clean.hidden_states[0]):
            pass


def test_perturb_and_measure_alpha_zero_is_exact_and_aligned_straightens(small_model):
    ids = torch.randint(0, SMALL.vocab_size, (4, 12), generator=_gen(20))
    for kind in ("aligned", "misaligned"):
        zero = perturb_and_measure(small_model, ids, 2, 0.0, kind, generator=_gen(0))
        assert torch.equal(zero.entropy_perturbed, zero.entropy_clean)
        assert torch.equal(zero.shift_norm, torch.zeros(4))
    full = perturb_and_measure(small_model, ids, 2, 1.0, "aligned")
    assert full.angle_perturbed.abs().max() < 1e-3 < full.angle_clean.min()
    entropy = next_token_entropy(small_model(input_ids=ids).logits[:, -1])
    torch.testing.assert_close(full.entropy_clean, entropy)
    # Hand-made patch: the same as the library's aligned perturbation.
    hidden = small_model(input_ids=ids, output_hidden_states=True).hidden_states[2]
    with patch_hidden_state(small_model, 2, straighten(hidden, 1.0)):
        by_hand = next_token_entropy(small_model(input_ids=ids).logits[:, -1])
    torch.testing.assert_close(full.entropy_perturbed, by_hand)
    mis = perturb_and_measure(small_model, ids, 2, 1.0, "misaligned", generator=_gen(1))
    torch.testing.assert_close(mis.shift_norm, full.shift_norm, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="kind"):
        perturb_and_measure(small_model, ids, 2, 1.0, "sideways")


def _other_hf_model(arch: str):
    """A randomly initialised Hugging Face causal LM of another family, built from its config (no download)."""
    import transformers

    common = dict(vocab_size=SMALL.vocab_size, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                  max_position_embeddings=64)
    if arch == "gpt_neox":  # Pythia, one of the paper's model families
        config, cls = transformers.GPTNeoXConfig(intermediate_size=64, **common), transformers.GPTNeoXForCausalLM
    elif arch == "qwen2":  # grouped-query attention, untied head
        config, cls = (transformers.Qwen2Config(intermediate_size=64, num_key_value_heads=1, **common),
                       transformers.Qwen2ForCausalLM)
    else:  # OPT: blocks under model.decoder.layers, learned positions with an offset
        config, cls = (transformers.OPTConfig(ffn_dim=64, word_embed_proj_dim=32, **common), transformers.OPTForCausalLM)
    torch.manual_seed(29)
    return cls(config).eval()


@pytest.mark.parametrize("arch", ["gpt_neox", "qwen2", "opt"])
def test_hooks_and_analysis_work_on_other_hf_families(arch):
    model = _other_hf_model(arch)
    ids = torch.randint(3, SMALL.vocab_size, (3, 14), generator=_gen(30))
    with torch.no_grad():
        clean = model(input_ids=ids, output_hidden_states=True)
    assert len(clean.hidden_states) == 4
    for layer in range(4):
        # hidden_states[layer] is exactly what the hook replaces: patching it with itself changes nothing.
        with torch.no_grad(), patch_hidden_state(model, layer, clean.hidden_states[layer]):
            assert torch.equal(model(input_ids=ids).logits, clean.logits), f"{arch} layer {layer}"
        with torch.no_grad(), patch_hidden_state(model, layer, lambda h: h * 1.5 + 0.1):
            assert not torch.allclose(model(input_ids=ids).logits, clean.logits)
    full = perturb_and_measure(model, ids, 2, 1.0, "aligned")
    assert full.angle_perturbed.abs().max() < 1e-3
    with torch.no_grad(), patch_hidden_state(model, 2, straighten(clean.hidden_states[2], 1.0)):
        by_hand = next_token_entropy(model(input_ids=ids).logits[:, -1])
    torch.testing.assert_close(full.entropy_perturbed, by_hand)
    res = layerwise_curvature_entropy(model, ids, 2)
    assert res.num_layers == 3 and res.curvature.shape == (4, 3 * 11)
    kappa = contextual_curvature(clean.hidden_states[3], 2)[:, 3:].reshape(-1).double().numpy()
    np.testing.assert_allclose(res.curvature[3], kappa, rtol=1e-6)


# ---------------------------------------------------------------------------
# Regulariser
# ---------------------------------------------------------------------------
def test_regularizer_is_zero_with_zero_gradient_on_a_straight_line():
    line = (torch.randn(1, 16, dtype=torch.float64) + torch.linspace(0, 4, 10, dtype=torch.float64)[:, None]
            * torch.randn(16, dtype=torch.float64))[None].requires_grad_(True)
    loss = curvature_regularizer(line)
    loss.backward()
    assert abs(float(loss.detach())) < 1e-12 and line.grad.abs().max() < 1e-8


def test_regularizer_matches_its_definition_and_finite_differences():
    hidden = torch.randn(2, 8, 5, generator=_gen(21), dtype=torch.float64)
    v = hidden[:, 1:] - hidden[:, :-1]
    expected = (1 - torch.nn.functional.cosine_similarity(v[:, 1:], v[:, :-1], dim=-1)).mean()
    torch.testing.assert_close(curvature_regularizer(hidden), expected)
    # 1 - cos = 1 - cos(phi): its mean relates to the turning angles.
    torch.testing.assert_close(curvature_regularizer(hidden), (1 - torch.cos(turning_angles(hidden))).mean())
    mask = torch.ones(2, 8, dtype=torch.bool)
    mask[1, 5:] = False
    assert torch.autograd.gradcheck(lambda h: curvature_regularizer(h, mask), (hidden.clone().requires_grad_(True),))


def test_regularizer_respects_the_mask():
    hidden = torch.randn(2, 9, 6, generator=_gen(22), dtype=torch.float64)
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, 6:] = False
    value = curvature_regularizer(hidden, mask)
    # Only rows' real tokens count: row 0 has 6 real tokens (4 terms), row 1 has 9 (7 terms).
    expected = torch.cat([(1 - torch.cos(turning_angles(hidden[0, :6]))), (1 - torch.cos(turning_angles(hidden[1])))])
    torch.testing.assert_close(value, expected.mean())
    changed = hidden.clone()
    changed[0, 6:] = 1e3 * torch.randn(3, 6, dtype=torch.float64)
    changed[0, 7] = changed[0, 6]  # even zero-length padded steps
    torch.testing.assert_close(curvature_regularizer(changed, mask), value)
    h = changed.clone().requires_grad_(True)
    curvature_regularizer(h, mask).backward()
    assert torch.isfinite(h.grad).all() and h.grad[0, 6:].abs().max() == 0
    assert h.grad[0, :6].abs().max() > 0


def test_curvature_loss_reads_the_named_layers():
    class Out:
        hidden_states = tuple(torch.randn(2, 7, 4, generator=_gen(s), dtype=torch.float64) for s in range(3))

    loss = CurvatureLoss(layers=(0, 2), weight=0.3)(Out())
    expected = 0.3 * (curvature_regularizer(Out.hidden_states[0]) + curvature_regularizer(Out.hidden_states[2])) / 2
    torch.testing.assert_close(loss, expected)
    with pytest.raises(ValueError, match="out of range"):
        CurvatureLoss(layers=(5,))(Out())
    with pytest.raises(ValueError, match="empty"):
        CurvatureLoss(layers=())


# ---------------------------------------------------------------------------
# The shared pretrain hooks (icml26.common.tiny_lm.pretrain: on_step, aux_loss)
# ---------------------------------------------------------------------------
def _stream(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, SMALL.vocab_size, (n,), generator=_gen(seed))


def test_pretrain_hooks_leave_plain_training_unchanged_and_regularise():
    cfg = PretrainConfig(steps=6, batch_size=4, warmup=2, eval_every=3, eval_batches=1)
    train, valid = _stream(3000, 23), _stream(500, 24)
    plain = build_model(SMALL, seed=0)
    pretrain(plain, train, valid, cfg, context=16, show_progress=False)
    seen, snapshots = [], {}

    def keep(step, model):
        seen.append(step)
        snapshots[step] = {k: v.clone() for k, v in model.state_dict().items()}

    hooked = build_model(SMALL, seed=0)
    logs = pretrain(hooked, train, valid, cfg, context=16, show_progress=False, on_step=keep,
                    aux_loss=CurvatureLoss(layers=(1, 2), weight=0.0))
    assert seen == list(range(7)) and len(logs.aux_loss) == 6 and min(logs.aux_loss) == 0.0
    for name, p in plain.state_dict().items():
        assert torch.equal(p, snapshots[6][name]), name  # lambda = 0 and hooks change nothing
    fresh = build_model(SMALL, seed=0).state_dict()
    assert all(torch.equal(fresh[k], snapshots[0][k]) for k in fresh)  # step 0 = initialisation
    reg = build_model(SMALL, seed=0)
    reg_logs = pretrain(reg, train, valid, cfg, context=16, show_progress=False,
                        aux_loss=CurvatureLoss(layers=(1, 2), weight=1.0))
    assert reg_logs.aux_loss[0] > 0 and reg_logs.aux_loss[-1] < reg_logs.aux_loss[0]
    assert not torch.equal(reg.state_dict()["lm_head.weight"], plain.state_dict()["lm_head.weight"])


# ---------------------------------------------------------------------------
# Statistics and the layer-wise analysis
# ---------------------------------------------------------------------------
def test_correlations_match_scipy_and_the_partial_closed_form():
    rng = np.random.default_rng(25)
    z = rng.normal(size=500)
    x = z + rng.normal(size=500)
    y = 0.5 * z + 0.3 * x + rng.normal(size=500)
    assert abs(pearson(x, y) - scipy_stats.pearsonr(x, y)[0]) < 1e-12
    ties = np.round(x, 1)
    assert abs(spearman(ties, y) - scipy_stats.spearmanr(ties, y)[0]) < 1e-12
    # r_xy.z = (r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))
    rxy, rxz, ryz = pearson(x, y), pearson(x, z), pearson(y, z)
    closed = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert abs(partial_correlation(x, y, z) - closed) < 1e-10
    sx, sy, sz = (scipy_stats.rankdata(v) for v in (x, y, z))
    rxy, rxz, ryz = pearson(sx, sy), pearson(sx, sz), pearson(sy, sz)
    closed = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert abs(partial_correlation(x, y, z, "spearman") - closed) < 1e-10
    # A correlation that is all confound vanishes under the control.
    assert abs(partial_correlation(z + 0.01 * rng.normal(size=500), z + 0.01 * rng.normal(size=500), z)) < 0.2
    assert math.isnan(pearson([1, 1, 1, 1], [1, 2, 3, 4]))


def test_paired_test_matches_scipy():
    rng = np.random.default_rng(26)
    before, after = rng.normal(size=300), rng.normal(size=300) - 0.1
    result = paired_test(after - before)
    expected = scipy_stats.ttest_rel(after, before)
    assert abs(result["t"] - expected.statistic) < 1e-10 and abs(result["p"] - expected.pvalue) < 1e-12
    assert abs(result["p_less"] - scipy_stats.ttest_rel(after, before, alternative="less").pvalue) < 1e-12
    assert result["mean"] < 0 and abs(result["p_less"] - result["p"] / 2) < 1e-12  # t < 0: half the two-sided p
    assert abs(paired_test(before - after)["p_less"] - (1 - result["p"] / 2)) < 1e-12
    assert result["n"] == 300 and 0 <= result["frac_negative"] <= 1


def test_layerwise_analysis_matches_a_direct_computation(small_model):
    ids = torch.randint(0, SMALL.vocab_size, (5, 20), generator=_gen(27))
    window = 3
    res = layerwise_curvature_entropy(small_model, ids, window, batch_size=2)
    with torch.no_grad():
        out = small_model(input_ids=ids, output_hidden_states=True)
    entropy = next_token_entropy(out.logits)[:, window + 1 :].reshape(-1).double().numpy()
    np.testing.assert_allclose(res.entropy, entropy, rtol=1e-6)
    np.testing.assert_array_equal(res.position, np.tile(np.arange(window + 1, 20), 5))
    for layer, hidden in enumerate(out.hidden_states):
        kappa = contextual_curvature(hidden, window)[:, window + 1 :].reshape(-1).double().numpy()
        np.testing.assert_allclose(res.curvature[layer], kappa, rtol=1e-6)
        assert abs(res.spearman[layer] - scipy_stats.spearmanr(kappa, entropy)[0]) < 1e-6
        assert abs(res.mean_curvature[layer] - float(turning_angles(hidden).double().mean())) < 1e-6
    freq = unigram_log_frequency(ids, SMALL.vocab_size)
    cov = np.column_stack([res.position, freq[ids[:, window + 1 :].reshape(-1)].numpy()])
    assert abs(res.partial_pearson[1] - partial_correlation(res.curvature[1], entropy, cov)) < 1e-9
    assert res.best_layer() == int(np.nanargmax(res.spearman))


def test_layerwise_analysis_skips_right_padding(small_model):
    ids = torch.randint(0, SMALL.vocab_size, (3, 16), generator=_gen(28))
    mask = torch.ones_like(ids)
    mask[1, 10:] = 0
    freq = unigram_log_frequency(ids, SMALL.vocab_size)
    padded = layerwise_curvature_entropy(small_model, ids, 2, attention_mask=mask, token_log_frequency=freq)
    assert padded.entropy.size == 3 * 13 - 6
    short = layerwise_curvature_entropy(small_model, ids[1:2, :10], 2, token_log_frequency=freq)
    # Row 1's tokens in the padded batch equal the unpadded short row's.
    np.testing.assert_allclose(padded.entropy[13:20], short.entropy, rtol=1e-5)
    np.testing.assert_allclose(padded.curvature[:, 13:20], short.curvature, rtol=1e-4, atol=1e-6)
    left = mask.flip(1)
    with pytest.raises(ValueError, match="right-padded"):
        layerwise_curvature_entropy(small_model, ids, 2, attention_mask=left)


# ---------------------------------------------------------------------------
# The README example and the config
# ---------------------------------------------------------------------------
def test_config_validation():
    from icml26.papers.curvature.experiment import Config

    assert Config.tiny().checkpoints[-1] == Config.tiny().steps
    for bad in ({"checkpoints": (10, 1000)}, {"checkpoints": (0, 500)}, {"epsilons": (0.0, 0.1)},
                {"epsilons": (0.1, 0.1)}, {"epsilons": ()}, {"pretrained_tokens": -1}, {"reg_layers": (9,)},
                {"window": 0}, {"perturb_layer": 7}, {"perturb_length": 2}, {"reg_weight": 0.0},
                {"pretrained_layers": (3, 3)}, {"pretrained_layers": (-1,)}):
        with pytest.raises(ValueError):
            Config(**bad)


# -- hostile input and the NaN contract (issues #18, #30) ---------------------------------------------------

def test_next_token_entropy_of_nan_logits_is_nan_not_zero():
    logits = torch.tensor([[float("nan"), 0.0, 0.0], [0.0, 0.0, 0.0], [float("inf"), 0.0, 0.0],
                           [-float("inf")] * 3])
    h = next_token_entropy(logits)
    assert torch.isnan(h[0]) and torch.isnan(h[2]) and torch.isnan(h[3])
    assert math.isclose(float(h[1]), math.log(3), rel_tol=1e-6)


def test_paired_test_result_is_a_dataclass_that_reads_as_the_old_mapping():
    r = paired_test([-1.0, -3.0, float("nan")])
    # mean -2, sd sqrt(2), sem 1, t = -2 with 1 degree of freedom: two-sided p = 1 - 2 atan(2) / pi
    assert (r.mean, r.n, r.n_nonfinite) == (-2.0, 2.0, 1.0)
    assert r["sem"] == pytest.approx(1.0) and r.t == pytest.approx(-2.0)
    assert r.p == pytest.approx(1 - 2 * math.atan(2) / math.pi)
    assert r.p_less == pytest.approx(r.p / 2)
    assert r.to_dict()["frac_negative"] == 1.0


def test_perturb_layer_minus_one_is_a_documented_sentinel():
    import dataclasses

    from icml26.common.config import ConfigError
    from icml26.papers.curvature.experiment import Config

    assert dataclasses.replace(Config.tiny(), perturb_layer=-1).perturb_layer == -1
    with pytest.raises(ConfigError, match="perturb_layer"):
        dataclasses.replace(Config.tiny(), perturb_layer=-2)
    with pytest.raises(ValueError, match="epsilons"):
        dataclasses.replace(Config.tiny(), epsilons=(-0.5,))


# -- the reproduction's analysis, by hand ------------------------------------------------------------------------

def test_reproduction_analysis_by_hand():
    from icml26.papers.curvature.analysis import (
        best_inner_layer,
        correlation_summary,
        effect_ratio,
        fraction_removed,
        relative_change,
        straightening_summary,
    )

    rho = np.array([0.9, 0.1, 0.3, 0.2, 0.95])
    assert best_inner_layer(rho) == 2  # layers 1 .. L-1 only
    assert best_inner_layer(np.array([0.1, 0.4])) == 1  # L = 1: no inner layer, the overall best
    s = straightening_summary([2.0, 1.9, 1.7, 1.8])
    assert (s.curvature_layer0, s.curvature_min, s.min_curvature_layer) == (2.0, 1.7, 2.0)
    assert s.curvature_drop == pytest.approx(0.3)
    c = correlation_summary(np.array([0.1, np.nan, -0.5, 0.3]), [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0])
    assert (c.best_layer, c.best_spearman, c.best_pearson, c.best_partial_spearman) == (3.0, 0.3, 4.0, 8.0)
    assert c.max_abs_spearman == 0.5
    assert fraction_removed(0.65, 1.0) == pytest.approx(0.35) and relative_change(1.026, 1.0) == pytest.approx(0.026)
    assert effect_ratio(-0.5, 0.1) == pytest.approx(5.0) and effect_ratio(0.1, 0.0) == math.inf
    with pytest.raises(ValueError, match="finite"):
        correlation_summary([np.nan, np.nan], [0.0, 0.0], [0.0, 0.0])



# -- issue #30: state-scaled perturbations, initial slopes, the bigram reference, window bootstrap ----------------

def test_state_scaled_steps_have_norm_epsilon_times_the_state():
    hidden = torch.randn(5, 6, 16, generator=_gen(40), dtype=torch.float64)
    last = hidden[:, -1]
    norm = last.norm(dim=-1)
    for eps in (0.01, 0.1, 2.0):
        aligned = straighten(hidden, eps, relative_to="state")
        step = aligned[:, -1] - last
        torch.testing.assert_close(step.norm(dim=-1), eps * norm, rtol=1e-12, atol=0)
        # the direction is x^_t - x_t: cos = 1
        toward = extrapolation_target(hidden) - last
        cos = (step * toward).sum(-1) / (step.norm(dim=-1) * toward.norm(dim=-1))
        torch.testing.assert_close(cos, torch.ones(5, dtype=torch.float64), rtol=0, atol=1e-12)
        assert torch.equal(aligned[:, :-1], hidden[:, :-1])
        mis = misaligned(hidden, eps, _gen(3), relative_to="state")
        delta = mis[:, -1] - last
        torch.testing.assert_close(delta.norm(dim=-1), eps * norm, rtol=1e-12, atol=0)
        v = hidden[:, -2] - hidden[:, -3]
        assert (delta * v).sum(-1).abs().max() < 1e-9 and (delta * toward).sum(-1).abs().max() < 1e-9
    # "target" keeps the old meaning: alpha scales |x^_t - x_t|
    torch.testing.assert_close(straighten(hidden, 0.5)[:, -1], last + 0.5 * (extrapolation_target(hidden) - last))
    with pytest.raises(ValueError, match="relative_to"):
        straighten(hidden, 0.1, relative_to="norm")
    with pytest.raises(ValueError, match="relative_to"):
        misaligned(hidden, 0.1, relative_to="norm")


def test_perturbation_sweep_equals_one_call_per_size(small_model):
    from icml26.papers.curvature import perturbation_sweep

    ids = torch.randint(0, SMALL.vocab_size, (4, 12), generator=_gen(41))
    eps = (0.01, 0.05, 0.1)
    sweep = perturbation_sweep(small_model, ids, 2, eps, generator=_gen(7))
    assert sweep.aligned.shape == sweep.misaligned.shape == (3, 4)
    for i, e in enumerate(eps):
        one = perturb_and_measure(small_model, ids, 2, e, "aligned", relative_to="state")
        torch.testing.assert_close(sweep.aligned[i], one.delta_entropy, rtol=0, atol=1e-6)
        # the misaligned direction is drawn once: each size replays the same generator state
        mis = perturb_and_measure(small_model, ids, 2, e, "misaligned", generator=_gen(7), relative_to="state")
        torch.testing.assert_close(sweep.misaligned[i], mis.delta_entropy, rtol=0, atol=1e-6)
        torch.testing.assert_close(one.shift_norm, e * sweep.state_norm, rtol=1e-5, atol=0)
    with pytest.raises(ValueError, match="epsilons"):
        perturbation_sweep(small_model, ids, 2, (0.0, 0.1))
    with pytest.raises(TypeError, match="epsilons"):
        perturbation_sweep(small_model, ids, 2, "small")


@pytest.mark.parametrize("layer", [0, 2, -1])
def test_cached_perturbation_sweep_equals_the_full_passes(small_model, layer):
    """Two code paths, one answer: the last token against the prefix's key-value cache gives the same
    Delta H (and the same state and target norms) as rerunning the whole prefix for every patch."""
    from icml26.papers.curvature import perturbation_sweep

    ids = torch.randint(0, SMALL.vocab_size, (5, 13), generator=_gen(43))
    eps = (0.01, 0.05, 0.2)
    full = perturbation_sweep(small_model, ids, layer, eps, generator=_gen(8))
    cached = perturbation_sweep(small_model, ids, layer, eps, generator=_gen(8), use_cache=True)
    assert full.aligned.abs().max() > 1e-4  # the patches change the entropy: the comparison has power
    for name in ("aligned", "misaligned", "state_norm", "target_distance"):
        torch.testing.assert_close(getattr(cached, name), getattr(full, name), rtol=1e-4, atol=2e-5, msg=name)
    # the cache is cropped back after every pass: a second cached sweep gives the same numbers
    again = perturbation_sweep(small_model, ids, layer, eps, generator=_gen(8), use_cache=True)
    torch.testing.assert_close(again.aligned, cached.aligned, rtol=0, atol=1e-6)
    with pytest.raises(TypeError, match="use_cache"):
        perturbation_sweep(small_model, ids, layer, eps, use_cache=1)


def test_split_windows_partitions_the_stream_and_keeps_drawn_windows_out_of_the_rest():
    from icml26.papers.curvature.sections import split_windows

    stream = torch.arange(103)  # 10 windows of 10 tokens, 3 tokens left over
    windows, rest = split_windows(stream, 10, 4, np.random.default_rng(0))
    assert windows.shape == (4, 10) and rest.shape == (60,)
    assert sorted(windows.reshape(-1).tolist() + rest.tolist()) == list(range(100))
    assert set(windows.reshape(-1).tolist()).isdisjoint(rest.tolist())
    assert all(int(w[0]) % 10 == 0 for w in windows)  # whole windows, in stream order
    again, _ = split_windows(stream, 10, 4, np.random.default_rng(0))
    assert torch.equal(again, windows)
    with pytest.raises(ValueError, match="half"):
        split_windows(stream, 10, 6, np.random.default_rng(0))
    with pytest.raises(ValueError, match="length"):
        split_windows(stream, 0, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="count"):
        split_windows(stream, 10, 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="stream"):
        split_windows(stream.reshape(1, -1).float(), 10, 1, np.random.default_rng(0))


def test_pretrained_arm_on_smollm2_measures_rho_and_the_cached_perturbation_study(smollm2):
    from icml26.contract import RunContext
    from icml26.common.corpus import stdlib_corpus
    from icml26.papers.curvature.experiment import STREAMS, Config
    from icml26.papers.curvature.sections import pretrained_arm

    config = Config(pretrained_tokens=600, pretrained_context=96, pretrained_batch=4, bootstrap=20,
                    pretrained_perturb_positions=6, pretrained_perturb_length=8, pretrained_perturb_batch=4)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="quick", threads=1, streams=STREAMS)
    metrics, study = pretrained_arm(config, stdlib_corpus(), ctx)
    assert metrics["n_windows"] == 7 and metrics["n_tokens"] >= 600  # ceil(600 / (96 - 3 - 1)) windows
    assert 1 <= metrics["best_layer"] <= 30 and metrics["best_ci_low"] <= metrics["best_spearman"] <= metrics["best_ci_high"]
    # SmolLM2 beats a bigram fitted on the text outside its windows. With 96-token windows the margin is
    # 0.7-2.0 nats over seeds 0-2; 32-token windows gave -0.02 to 0.8 (too little context to test this).
    assert metrics["valid_loss"] < metrics["bigram_valid_loss"] - 0.2
    assert study is not None and study.delta["aligned"].shape == (4, 6) and np.isfinite(study.delta["aligned"]).all()
    assert 1 <= study.layer <= 29 and study.tests["aligned"].n == 6


def test_pretrained_arm_analyses_only_the_selected_layers(smollm2):
    from icml26.contract import RunContext
    from icml26.common.corpus import stdlib_corpus
    from icml26.papers.curvature.experiment import STREAMS, Config
    from icml26.papers.curvature.sections import pretrained_arm

    config = Config(pretrained_tokens=300, pretrained_context=96, pretrained_batch=4, bootstrap=20,
                    pretrained_perturb_positions=0, pretrained_layers=(0, 22))
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="quick", threads=1, streams=STREAMS)
    metrics, study = pretrained_arm(config, stdlib_corpus(), ctx)
    rho = metrics["curves"].series["Spearman rho(kappa, H)"]
    assert study is None and len(rho) == 31  # every layer keeps its place; only the selected ones are measured
    assert [i for i, r in enumerate(rho) if r is not None] == [0, 22] and metrics["best_layer"] in (0, 22)


def test_without_the_tiny_model_the_pretrained_arm_is_the_same_numbers(smollm2):
    """``tiny_model=False`` runs the pretrained arm and its on-manifold study alone; their named streams make
    them the numbers of the same seed's run with the tiny model, and no tiny-model check is measured."""
    from icml26.contract import RunContext
    from icml26.papers.curvature.claims import TINY_MODEL_CHECKS
    from icml26.papers.curvature.experiment import STREAMS, Config, run

    small = dict(pretrained_tokens=300, pretrained_context=96, pretrained_batch=4, bootstrap=20,
                 pretrained_perturb_positions=4, pretrained_perturb_length=8, pretrained_perturb_batch=4,
                 onmanifold_prefixes=2, onmanifold_directions=2, onmanifold_pc_draws=1)
    with_tiny = dataclasses.replace(Config.tiny(), **small)
    alone = dataclasses.replace(with_tiny, tiny_model=False)
    # the full setting declares the tiny model's checks (the quick one no longer does): not measured when off
    outcomes = [run(c, RunContext(seed=3, device=torch.device("cpu"), setting="full", threads=1, streams=STREAMS))
                for c in (with_tiny, alone)]
    full, only = outcomes
    pretrained = {k for k in full.metrics if k.startswith("pretrained") or k.startswith("on-manifold")}
    assert pretrained and set(only.metrics) == pretrained
    for k in pretrained:
        assert only.metrics[k] == full.metrics[k], k
    def measured(checks):
        return {c.id: (c.value, c.units) for c in checks if not c.note.startswith("not measured")}

    assert measured(only.checks) and not set(measured(only.checks)) & set(TINY_MODEL_CHECKS)
    assert measured(only.checks) == {k: v for k, v in measured(full.checks).items() if k in measured(only.checks)}
    assert {c.id for c in only.checks if c.note.startswith("not measured")} == set(TINY_MODEL_CHECKS)
    assert set(only.curves) == {"pretrained_by_layer", "pretrained_delta_entropy_vs_epsilon", "onmanifold_slopes"}
    assert only.notes == [n for n in full.notes if n.startswith("SmolLM2")]
    with pytest.raises(ValueError, match="pretrained_tokens"):
        dataclasses.replace(Config.tiny(), tiny_model=False)


def test_initial_slope_recovers_the_linear_term():
    from icml26.papers.curvature.analysis import initial_slope

    eps = np.array([0.01, 0.02, 0.05, 0.1])
    a, b = np.array([2.0, -3.0, 0.0]), np.array([5.0, 40.0, -7.0])
    delta = np.outer(eps, a) + np.outer(eps**2, b)  # Delta H = a eps + b eps^2, exactly
    np.testing.assert_allclose(initial_slope(eps, delta), a, atol=1e-9)
    # a pure quadratic (a misaligned direction at a minimum) has slope 0, while Delta H / eps would not
    assert abs(initial_slope(eps, 30.0 * eps**2)) < 1e-9 and 30.0 * eps[-1] ** 2 / eps[-1] > 1
    assert initial_slope([0.1], [0.25]) == pytest.approx(2.5)  # one size: Delta H / eps
    delta[2, 1] = np.nan
    slopes = initial_slope(eps, delta)
    assert np.isnan(slopes[1]) and np.isfinite(slopes[[0, 2]]).all()
    for bad in (([0.1, 0.1], [1.0, 1.0]), ([0.0, 0.1], [0.0, 1.0]), ([0.1, 0.2], [1.0])):
        with pytest.raises(ValueError):
            initial_slope(*bad)


def test_interpolated_bigram_by_hand():
    from icml26.papers.curvature.analysis import interpolated_bigram

    train = np.array([0, 1, 0, 1, 0, 2])
    # counts: c(0) = 3, c(1) = 2, c(2) = 1 -> p_uni = (c + 1) / (6 + 3) = 4/9, 3/9, 2/9
    # contexts: c(0 as context) = 3, c(1 as context) = 2; pairs c(0,1) = 2, c(1,0) = 2, c(0,2) = 1
    # lambda = 0.5: p(1|0) = .5 * 2/3 + .5 * 3/9 = 1/2;  p(2|1) = .5 * 0 + .5 * 2/9 = 1/9
    fit = interpolated_bigram(train, np.array([0, 1, 2]), 3, weights=[0.5])
    assert fit.weight == 0.5 and fit.loss == pytest.approx(-(math.log(0.5) + math.log(1 / 9)) / 2, rel=1e-12)
    # windows: pairs within rows only ((0,1) and (1,2) again; not (1,1) across the rows)
    rows = interpolated_bigram(train, np.array([[0, 1], [1, 2]]), 3, weights=[0.5])
    assert rows.loss == pytest.approx(fit.loss, rel=1e-12)
    # an unseen context (2) falls back to the unigram: p(0|2) = 4/9
    assert interpolated_bigram(train, np.array([2, 0]), 3, weights=[0.5]).loss == pytest.approx(-math.log(4 / 9))
    # lambda is chosen on the training tail, never on the evaluation ids
    rng = np.random.default_rng(0)
    stream = np.repeat(rng.integers(0, 20, 3000), 2)  # every token repeats: a strong bigram
    a = interpolated_bigram(stream, rng.integers(0, 20, 500), 20)
    b = interpolated_bigram(stream, np.repeat(rng.integers(0, 20, 500), 2), 20)
    assert a.weight == b.weight > 0.3 and b.loss < a.loss
    with pytest.raises(ValueError, match="lie in"):
        interpolated_bigram(train, np.array([0, 5]), 3)
    with pytest.raises(TypeError, match="integer"):
        interpolated_bigram(train.astype(float), np.array([0, 1]), 3)


def test_window_bootstrap_interval_counts_windows_not_tokens():
    from icml26.papers.curvature.stats import cluster_bootstrap_spearman

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=4000), rng.normal(size=4000)
    low, high = cluster_bootstrap_spearman(x, y, np.arange(4000), rng=np.random.default_rng(2))
    # independent tokens: the half-width of Spearman's rho under independence is ~ 1.96 / sqrt(n)
    assert (high - low) / 2 == pytest.approx(1.96 / math.sqrt(4000), rel=0.15) and low < 0 < high
    # 400 windows of 10 identical tokens carry the information of 400 tokens, not 4000
    xc, yc, windows = np.repeat(x[:400], 10), np.repeat(y[:400], 10), np.repeat(np.arange(400), 10)
    low, high = cluster_bootstrap_spearman(xc, yc, windows, rng=np.random.default_rng(3))
    assert (high - low) / 2 == pytest.approx(1.96 / math.sqrt(400), rel=0.15)
    naive_low, naive_high = cluster_bootstrap_spearman(xc, yc, np.arange(4000), rng=np.random.default_rng(3))
    assert (naive_high - naive_low) < 0.5 * (high - low)
    # several rows at once (one per layer), NaN pairs left out
    rows = np.stack([x, -x, np.where(np.arange(4000) < 10, np.nan, y)])
    lows, highs = cluster_bootstrap_spearman(rows, y, np.arange(4000) // 4, n_boot=200)
    assert lows.shape == (3,) and highs[2] > 0.9 and lows[0] < 0 < highs[0]
    with pytest.raises(ValueError, match="n_boot"):
        cluster_bootstrap_spearman(x, y, np.arange(4000), n_boot=1)


def test_layerwise_analysis_reports_the_models_loss_and_rows(small_model):
    ids = torch.randint(0, SMALL.vocab_size, (5, 20), generator=_gen(42))
    res = layerwise_curvature_entropy(small_model, ids, 3, batch_size=2)
    with torch.no_grad():
        logits = small_model(input_ids=ids).logits
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    assert res.mean_loss == pytest.approx(float(ce), rel=1e-5)
    np.testing.assert_array_equal(res.row, np.repeat(np.arange(5), 16))


# ---------------------------------------------------------------------------
# Faster paths that must give the same numbers as the straightforward code, bit for bit
# ---------------------------------------------------------------------------
def test_next_token_entropy_in_blocks_equals_one_pass(monkeypatch):
    from icml26.papers.curvature import entropy as entropy_module

    logits = torch.randn(3, 7, 500, generator=_gen(5)) * 4
    logits[1, 2] = float("nan")  # a broken row stays NaN in its block
    logits[2, 3, :10] = -float("inf")  # masked words contribute nothing
    whole = entropy_module._entropy_last_dim(logits)
    monkeypatch.setattr(entropy_module, "_CHUNK", 3 * 500)  # blocks of 3 rows, the last one short
    blocked = next_token_entropy(logits)
    torch.testing.assert_close(blocked, whole, rtol=0, atol=0, equal_nan=True)  # bit for bit
    assert torch.isnan(blocked[1, 2]) and torch.isfinite(blocked[2, 3])
    # other layouts take the one-pass path
    for x, dim in ((logits.transpose(0, 1), -1), (logits.transpose(1, 2), 1)):
        torch.testing.assert_close(next_token_entropy(x, dim), entropy_module._entropy_last_dim(x, dim),
                                   rtol=0, atol=0, equal_nan=True)


def test_cached_prefix_pass_skips_the_head_with_the_same_numbers(small_model, monkeypatch):
    from icml26.papers.curvature import perturb

    assert perturb._last_logits_only(small_model) == {"logits_to_keep": 1}
    ids = torch.randint(0, SMALL.vocab_size, (6, 14), generator=_gen(44))
    fast = perturb.perturbation_sweep(small_model, ids, 1, (0.01, 0.1), generator=_gen(9), use_cache=True)
    monkeypatch.setattr(perturb, "_last_logits_only", lambda model: {})  # the head over every prefix position
    full = perturb.perturbation_sweep(small_model, ids, 1, (0.01, 0.1), generator=_gen(9), use_cache=True)
    for name in ("aligned", "misaligned", "state_norm", "target_distance"):
        assert torch.equal(getattr(fast, name), getattr(full, name)), name


def test_window_bootstrap_shares_the_weights_across_rows_with_the_same_tokens():
    from scipy import stats as sps

    from icml26.papers.curvature.stats import cluster_bootstrap_spearman

    def reference(xs, ys, clusters, n_boot, rng):  # the loop as first written: everything per row
        _, index = np.unique(clusters, return_inverse=True)
        k = int(index.max()) + 1
        counts = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(np.float64)
        low, high = np.full(len(xs), np.nan), np.full(len(xs), np.nan)
        for row, xr in enumerate(xs):
            ok = np.isfinite(xr) & np.isfinite(ys)
            if ok.sum() < 3:
                continue
            rx, ry = sps.rankdata(xr[ok]), sps.rankdata(ys[ok])
            w = counts[:, index[ok]]
            total = w.sum(axis=1)
            mx, my = (w @ rx) / total, (w @ ry) / total
            cov = (w @ (rx * ry)) / total - mx * my
            vx, vy = (w @ (rx * rx)) / total - mx**2, (w @ (ry * ry)) / total - my**2
            q = (1 - 0.95) / 2
            low[row], high[row] = np.quantile(cov / np.sqrt(vx * vy), [q, 1 - q])
        return low, high

    rng = np.random.default_rng(6)
    y = rng.normal(size=3000)
    xs = rng.normal(size=(6, 3000)) + 0.2 * y
    xs[2, 5] = np.nan  # a row with other finite tokens, then rows sharing the first row's again
    xs[4, :2998] = np.nan  # too few finite tokens: NaN interval
    clusters = np.arange(3000) // 6
    got = cluster_bootstrap_spearman(xs, y, clusters, n_boot=300, rng=np.random.default_rng(8))
    want = reference(xs, y, clusters, 300, np.random.default_rng(8))
    for a, b in zip(got, want):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.isnan(got[0][4]) and np.isfinite(got[0][[0, 1, 2, 3, 5]]).all()


def test_curvature_from_angles_equals_contextual_curvature():
    from icml26.papers.curvature.geometry import curvature_from_angles

    traj = torch.randn(2, 3, 11, 6, generator=_gen(12))
    traj[0, 1, 4] = traj[0, 1, 5]  # a zero-length step: NaN angles and windows
    for window in (1, 3, 9, 10):
        want = contextual_curvature(traj, window)
        torch.testing.assert_close(curvature_from_angles(turning_angles(traj), window), want,
                                   rtol=0, atol=0, equal_nan=True)
