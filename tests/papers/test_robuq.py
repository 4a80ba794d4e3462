"""RobuQ: Hadamard matrices, ternary weights, the robust activation quantizer, Gaussian constants,
Gaussianisation, the AMPN knapsack, quantize_dit on diffusers' DiT and ours, and the analysis."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from scipy import linalg, stats

from icml26.papers.robuq import (
    HadamardLinear,
    LinearSchedule,
    QuantLinear,
    RobustQuantizer,
    TernaryLinear,
    TinyDiT,
    TinyDiTConfig,
    add_noise,
    allocate_bits,
    ddim_sample,
    dit_linear_names,
    eps_mse,
    fwht,
    gaussian_clip,
    gaussian_quant_mse,
    gaussian_step,
    hadamard,
    hadamard_transform,
    layer_macs,
    layer_sensitivity,
    naive_int_quantize_dit,
    naive_quantize_dit,
    paley_hadamard,
    quantize_dit,
    quantize_tokens,
    quantized_layers,
    rotate_linear,
    set_act_bits,
    ternarize,
    ternarize_ste,
)
from icml26.papers.robuq.analysis import (
    class_accuracy,
    excess_kurtosis,
    fp_best_ratio,
    frechet_distance,
    gain_points,
    mean_excess_kurtosis,
    mlp_penultimate,
    ratio,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------
# Hadamard
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 16, 64, 256, 12, 20, 36, 24, 40, 72, 1152])
def test_hadamard_is_orthonormal_with_flat_entries(d):
    h = hadamard(d)
    np.testing.assert_allclose((h @ h.T).numpy(), np.eye(d), atol=1e-12)
    np.testing.assert_allclose(h.abs().numpy(), np.full((d, d), 1 / math.sqrt(d)), atol=1e-15)


def test_sylvester_matches_scipy():
    np.testing.assert_array_equal(hadamard(32, normalized=False).numpy(), linalg.hadamard(32))


@pytest.mark.parametrize("q,order", [(11, 12), (19, 20), (17, 36), (3, 4), (5, 12)])
def test_paley_matrices_are_hadamard(q, order):
    h = paley_hadamard(q)
    assert h.shape == (order, order) and set(np.unique(h)) == {-1.0, 1.0}
    np.testing.assert_array_equal(h @ h.T, order * np.eye(order))


def test_dit_xl_widths_are_kronecker_with_h36():
    """DiT-XL: 1152 = 32·36, 4608 = 128·36 (the issue's example)."""
    h = hadamard(1152, normalized=False)
    np.testing.assert_array_equal(h.numpy(), np.kron(linalg.hadamard(32), paley_hadamard(17)))
    # 4608: x (H_128 ⊗ H_36) = vec(H_128ᵀ X H_36) for X the (128, 36) view of x, by einsum
    x = np.random.default_rng(0).standard_normal((3, 4608))
    expected = np.einsum("ip,bij,jq->bpq", linalg.hadamard(128), x.reshape(3, 128, 36), paley_hadamard(17))
    np.testing.assert_allclose(hadamard_transform(torch.as_tensor(x)).numpy(), expected.reshape(3, 4608) / math.sqrt(4608),
                               atol=1e-12)


@pytest.mark.parametrize("d,block", [(64, 16), (48, 12), (100, 4), (1152, 128), (96, 96)])
def test_block_diagonal_variant_is_orthonormal(d, block):
    h = hadamard(d, block=block)
    np.testing.assert_allclose((h @ h.T).numpy(), np.eye(d), atol=1e-12)
    off_block = h.clone()
    for i in range(d // block):
        off_block[i * block:(i + 1) * block, i * block:(i + 1) * block] = 0
    assert off_block.abs().max() == 0


@pytest.mark.parametrize("d", [1, 2, 8, 128, 1024])
def test_fwht_equals_matmul(d):
    x = torch.randn(7, 3, d, generator=_gen(), dtype=torch.float64)
    np.testing.assert_allclose(fwht(x).numpy(), (x @ hadamard(d)).numpy(), atol=1e-12)
    np.testing.assert_allclose(fwht(x, normalized=False).numpy(), (x @ hadamard(d, normalized=False)).numpy(),
                               atol=1e-10)


def test_fwht_needs_no_matrix_and_is_an_involution():
    """At d = 2^16 a dense H would take 32 GB; the butterflies run in place. H is symmetric and
    orthonormal, so H H = I and norms are kept (Parseval)."""
    x = torch.randn(2, 2 ** 16, generator=_gen(), dtype=torch.float64)
    y = fwht(x)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-12, atol=0)
    torch.testing.assert_close(fwht(y), x, rtol=0, atol=1e-12)
    # coordinate 0 of x H is Σ x / √d (the first row of Sylvester's H is all ones)
    torch.testing.assert_close(y[:, 0], x.sum(-1) / 2 ** 8, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("d,block", [(36, None), (1152, None), (48, 12), (64, 8)])
def test_hadamard_transform_equals_matmul(d, block):
    x = torch.randn(5, d, generator=_gen(), dtype=torch.float64)
    np.testing.assert_allclose(hadamard_transform(x, block=block).numpy(), (x @ hadamard(d, block=block)).numpy(),
                               atol=1e-12)


@pytest.mark.parametrize("d", [64, 36, 1152])
def test_rotated_linear_preserves_the_function(d):
    """x Wᵀ + b == (x H)(W H)ᵀ + b to 1e-10 in float64."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(d, 9).double()
    x = torch.randn(4, 6, d, generator=_gen(), dtype=torch.float64)
    rotated = rotate_linear(linear)
    assert isinstance(rotated, HadamardLinear)
    np.testing.assert_allclose(rotated(x).detach().numpy(), linear(x).detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(rotated.weight.detach().numpy(), (linear.weight @ hadamard(d)).detach().numpy(),
                               atol=1e-12)


def test_quant_linear_at_16_bits_without_ternary_keeps_the_function_in_float64():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 8).double()
    layer = QuantLinear.from_linear(linear, RobustQuantizer(16), ternary=False)
    x = torch.randn(10, 64, generator=_gen(), dtype=torch.float64)
    np.testing.assert_allclose(layer(x).detach().numpy(), linear(x).detach().numpy(), atol=2e-3)
    unquantized = QuantLinear.from_linear(linear, None, ternary=False)
    np.testing.assert_allclose(unquantized(x).detach().numpy(), linear(x).detach().numpy(), atol=1e-12)


# ---------------------------------------------------------------------------
# Ternary weights
# ---------------------------------------------------------------------------
def test_ternary_values_and_scale():
    w = torch.randn(32, 48, generator=_gen())
    w_hat, gamma = ternarize(w)
    assert torch.isclose(gamma, w.abs().mean())
    values = set(torch.unique(w_hat).tolist())
    assert values <= {-gamma.item(), 0.0, gamma.item()}
    w_hat_c, gamma_c = ternarize(w, per_channel=True)
    assert gamma_c.shape == (32, 1)
    np.testing.assert_allclose(gamma_c.squeeze(1).numpy(), w.abs().mean(1).numpy(), rtol=1e-6)
    for row, g in zip(w_hat_c, gamma_c.squeeze(1)):
        assert set(torch.unique(row).tolist()) <= {-g.item(), 0.0, g.item()}


def test_ternary_hand_example():
    """γ = mean|W| = (0.9+0.1+0.5+0.3+1.2+0.0+2.1+0.2+0.6)/9 = 5.9/9; W/γ rounded and clipped by hand."""
    w = torch.tensor([[0.9, -0.1, 0.5], [-0.3, 1.2, 0.0], [2.1, 0.2, -0.6]], dtype=torch.float64)
    gamma = 5.9 / 9  # 0.6556: W/γ = [[1.37, -0.15, 0.76], [-0.46, 1.83, 0], [3.20, 0.31, -0.92]]
    expected = gamma * torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, -1.0]], dtype=torch.float64)
    w_hat, g = ternarize(w)
    assert math.isclose(g.item(), gamma, rel_tol=1e-12)
    np.testing.assert_allclose(w_hat.numpy(), expected.numpy(), atol=1e-12)


def test_ternary_ste_gradient_is_the_upstream_gradient():
    w = torch.randn(6, 5, generator=_gen(), requires_grad=True)
    upstream = torch.randn(6, 5, generator=_gen(1))
    (ternarize_ste(w) * upstream).sum().backward()
    assert torch.equal(w.grad, upstream)
    w_hat, _ = ternarize(w.detach())
    torch.testing.assert_close(ternarize_ste(w).detach(), w_hat, rtol=0, atol=1e-7)


def test_ternary_linear_gradient_reaches_latent_weight():
    layer = TernaryLinear(5, 3)
    x = torch.randn(4, 5, generator=_gen())
    y = layer(x)
    np.testing.assert_allclose(y.detach().numpy(), (x @ layer.quantized_weight().T + layer.bias).detach().numpy(),
                               atol=1e-6)
    y.sum().backward()
    # d(sum x Ŵᵀ)/dW = Σ_batch x, per output row, through the identity STE
    np.testing.assert_allclose(layer.weight.grad.numpy(), x.sum(0).expand(3, 5).numpy(), atol=1e-6)


def test_ternary_zero_fraction_for_gaussian_weights():
    """Threshold γ/2 = √(2/π)/2 ≈ 0.399: P(|w| < 0.399) = 2Φ(0.399) − 1 ≈ 0.310."""
    w = torch.randn(1000, 1000, generator=_gen())
    w_hat, _ = ternarize(w)
    zero = (w_hat == 0).float().mean().item()
    expected = 2 * stats.norm.cdf(math.sqrt(2 / math.pi) / 2) - 1
    assert abs(expected - 0.310) < 0.001
    assert abs(zero - 0.310) < 0.01


# ---------------------------------------------------------------------------
# Activation quantization
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", ["gauss", "absmax"])
@pytest.mark.parametrize("rotate", [False, True])
def test_at_most_two_to_the_b_values_per_token(bits, scale, rotate):
    x = torch.distributions.StudentT(3.0).sample((50, 64))
    q = RobustQuantizer(bits, scale=scale, rotate=rotate)(x)
    for token in q:
        assert torch.unique(token).numel() <= 2 ** bits


def test_ternary_grid_has_three_levels():
    q = quantize_tokens(torch.randn(20, 64, generator=_gen()), 2, grid="ternary")
    for token in q:
        assert torch.unique(token).numel() <= 3


@pytest.mark.parametrize("scale", ["gauss", "absmax"])
def test_tokens_are_quantized_independently(scale):
    x = torch.randn(3, 10, 64, generator=_gen())
    x[1, 4] *= 50.0  # one outlier token must not change the others
    quantizer = RobustQuantizer(2, scale=scale)
    out = quantizer(x)
    perm = torch.randperm(10, generator=_gen(1))
    torch.testing.assert_close(quantizer(x[:, perm]), out[:, perm])
    torch.testing.assert_close(quantizer(x[:, :4])[1], out[1, :4])


@pytest.mark.parametrize("grid,bits", [("midrise", 2), ("midrise", 4), ("int", 2), ("int", 4), ("ternary", 2)])
def test_absmax_quantization_is_idempotent(grid, bits):
    x = torch.randn(30, 64, generator=_gen(), dtype=torch.float64)
    once = quantize_tokens(x, bits, scale="absmax", grid=grid)
    torch.testing.assert_close(quantize_tokens(once, bits, scale="absmax", grid=grid), once, rtol=1e-12, atol=1e-12)
    # the token's max lands on the outermost level
    torch.testing.assert_close(once.abs().amax(-1), x.abs().amax(-1), rtol=1e-12, atol=0)


def test_midrise_two_bit_levels_by_hand():
    """absmax, 2 bits, midrise: s = max/1.5, levels ±s/2, ±3s/2; x = (3, 1.2, 0.9, -0.4) -> s = 2."""
    x = torch.tensor([[3.0, 1.2, 0.9, -0.4]], dtype=torch.float64)
    np.testing.assert_allclose(quantize_tokens(x, 2, scale="absmax").numpy(), [[3.0, 1.0, 1.0, -1.0]])
    # int grid: s = max/1 = 3, levels {-6, -3, 0, 3}: 1.2 -> 0, 0.9 -> 0, -0.4 -> 0
    np.testing.assert_allclose(quantize_tokens(x, 2, scale="absmax", grid="int").numpy(), [[3.0, 0.0, 0.0, 0.0]])


def test_gauss_scale_uses_rms_and_max_table_step():
    """RMS of (3, 1, -1, -1, ...) tokens: the step is Δ*_2·RMS = 0.9957·RMS."""
    x = torch.tensor([[2.0, -2.0, 2.0, -2.0]], dtype=torch.float64)  # RMS 2 -> s = 1.9914, levels ±0.9957, ±2.987
    np.testing.assert_allclose(quantize_tokens(x, 2).numpy(), [[2.987, -2.987, 2.987, -2.987]], atol=1e-3)


def test_activation_ste_passes_gradient_inside_the_clip_range_only():
    x = torch.tensor([[0.1, -0.2, 0.3, 10.0]], requires_grad=True)
    quantize_tokens(x, 2).sum().backward()  # RMS ≈ 5.0: clip at 1.99·RMS ≈ 9.96 < 10
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 1.0, 1.0, 0.0]])


def test_learnable_clip_gets_a_gradient():
    q = RobustQuantizer(2, learnable_clip=True)
    q(torch.randn(8, 64, generator=_gen())).pow(2).sum().backward()
    assert q.clip_multiplier.grad is not None and q.clip_multiplier.grad != 0


def test_centering_carries_the_token_mean_exactly():
    """With center=True, Q(x + c·1) = Q(x) + c·(1 D H): the mean never enters the quantized part."""
    x = torch.randn(20, 64, generator=_gen(), dtype=torch.float64)
    shift = torch.linspace(-3, 7, 20, dtype=torch.float64)[:, None]
    q = RobustQuantizer(2, center=True)
    direction = q.rotate_tokens(torch.ones(64, dtype=torch.float64))
    torch.testing.assert_close(q(x + shift), q(x) + shift * direction, rtol=0, atol=1e-12)
    torch.testing.assert_close(RobustQuantizer(16, center=True)(x + 5.0), q.rotate_tokens(x + 5.0), rtol=0, atol=1e-3)


# ---------------------------------------------------------------------------
# Gaussian constants
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bits,clip", [(2, 1.99), (3, 2.34), (4, 2.68)])
def test_gaussian_clip_matches_max_table(bits, clip):
    assert abs(gaussian_clip(bits) - clip) < 0.006


@pytest.mark.parametrize("levels,bits,grid,step,mse", [(4, 2, "midrise", 0.9957, 0.1188), (8, 3, "midrise", 0.5860, 0.03744),
                                                        (16, 4, "midrise", 0.3352, 0.01154),
                                                        (3, 2, "ternary", 1.2240, 0.1902)])
def test_gaussian_step_and_mse_match_max_1960(levels, bits, grid, step, mse):
    """Max (1960), Table II: optimum uniform step and mean squared error for N(0,1)."""
    assert abs(gaussian_step(bits, grid) - step) < 2e-4
    assert abs(gaussian_quant_mse(gaussian_step(bits, grid), bits, grid) - mse) < 2e-4


def test_gaussian_mse_against_monte_carlo():
    z = np.random.default_rng(0).standard_normal(2_000_000)
    for bits, grid in [(2, "midrise"), (3, "int")]:
        s = 0.7
        q = quantize_tokens(torch.tensor(z).view(1, -1) * 1.0, bits, grid=grid,
                            clip_multiplier=s / gaussian_step(bits, grid) / float(np.sqrt(np.mean(z ** 2))))
        mc = float(np.mean((q.numpy().ravel() - z) ** 2))
        assert abs(mc - gaussian_quant_mse(s, bits, grid)) < 3e-3


def test_gaussian_one_bit_is_the_conditional_mean():
    """1 bit, midrise: levels ±E|X| = ±√(2/π), so c_1 = 2·√(2/π)/1·½·2 = 2√(2/π)."""
    assert abs(gaussian_clip(1) - 2 * math.sqrt(2 / math.pi)) < 1e-6


# ---------------------------------------------------------------------------
# Gaussianisation by the rotation (CLT, Lindeberg)
# ---------------------------------------------------------------------------
def _kurt_after_h(tokens):
    return excess_kurtosis(fwht(torch.as_tensor(tokens)).numpy(), axis=1)


def test_laplace_and_sparse_tokens_become_gaussian():
    rng = np.random.default_rng(0)
    d, n = 1024, 2000
    laplace = rng.laplace(size=(n, d))
    sparse = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.1)
    for tokens, before in ((laplace, 3.0), (sparse, 27.0)):
        assert abs(mean_excess_kurtosis(tokens) - before) < 0.5
        after = _kurt_after_h(tokens)
        assert abs(after.mean()) < 0.1
        assert np.quantile(np.abs(after), 0.99) < 0.5


def test_one_hot_token_gives_minus_two():
    """Lindeberg fails: e_i H is the flat ±1/√d row i of H (mean 0 for i ≠ 0), excess kurtosis −2."""
    token = np.zeros((1, 1024))
    token[0, 5] = 3.0
    np.testing.assert_allclose(_kurt_after_h(token), [-2.0], atol=1e-12)


# ---------------------------------------------------------------------------
# AMPN allocation
# ---------------------------------------------------------------------------
def _brute_force(table, options, avg, weights):
    best, arg = math.inf, None
    for combo in itertools.product(range(len(options)), repeat=table.shape[0]):
        bits = np.asarray(options)[list(combo)]
        if np.dot(weights, bits) <= avg * np.sum(weights) + 1e-9:
            value = sum(table[i, k] for i, k in enumerate(combo))
            if value < best - 1e-12:
                best, arg = value, bits
    return best, arg


@pytest.mark.parametrize("seed", range(6))
def test_allocate_bits_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    layers = int(rng.integers(2, 7))
    options = (1, 2, 3, 4)
    table = np.sort(rng.exponential(size=(layers, 4)), axis=1)[:, ::-1] * rng.exponential(size=(layers, 1))
    weights = rng.integers(1, 7, size=layers) if seed % 2 else np.ones(layers)
    avg = float(rng.choice([1.0, 1.5, 2.0, 2.4, 3.0]))
    alloc = allocate_bits(table, options, avg, weights=weights)
    best, _ = _brute_force(table, options, avg, weights)
    assert math.isclose(alloc.objective, best, rel_tol=1e-12)
    assert np.dot(weights, alloc.bits) <= avg * weights.sum() + 1e-9
    assert math.isclose(alloc.objective, sum(table[i, options.index(b)] for i, b in enumerate(alloc.bits)))


def test_allocate_bits_is_monotone_in_the_budget():
    rng = np.random.default_rng(7)
    table = np.sort(rng.exponential(size=(6, 4)), axis=1)[:, ::-1]
    values = [allocate_bits(table, (1, 2, 3, 4), b).objective for b in np.arange(1.0, 4.01, 0.25)]
    assert all(later <= earlier + 1e-12 for earlier, later in zip(values, values[1:]))
    assert allocate_bits(table, (1, 2, 3, 4), 4.0).bits == (4,) * 6
    assert allocate_bits(table, (1, 2, 3, 4), 1.0).bits == (1,) * 6


def test_allocate_bits_with_real_weights_keeps_the_budget():
    rng = np.random.default_rng(3)
    table = rng.random((5, 3))
    w = rng.random(5) + 0.1
    alloc = allocate_bits(table, (2, 4, 8), 4.0, weights=w)
    assert np.dot(w, alloc.bits) <= 4.0 * w.sum() + 1e-9


def test_allocate_bits_refuses_a_budget_below_the_smallest_option():
    with pytest.raises(ValueError, match="avg_bits"):
        allocate_bits(np.ones((3, 2)), (2, 4), 1.5)


# ---------------------------------------------------------------------------
# quantize_dit on our TinyDiT and diffusers' DiT
# ---------------------------------------------------------------------------
def _randomised(model, seed=0):
    g = _gen(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return model.eval()


def _inputs(n=6, seed=1):
    g = _gen(seed)
    return (torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 1000, (n,), generator=g),
            torch.randint(0, 10, (n,), generator=g))


def _diffusers_dit(layers=2):
    from diffusers import DiTTransformer2DModel

    torch.manual_seed(0)
    return DiTTransformer2DModel(num_attention_heads=4, attention_head_dim=16, in_channels=1, out_channels=1,
                                 num_layers=layers, sample_size=8, patch_size=2, num_embeds_ada_norm=10,
                                 norm_num_groups=1)


def _out(model, args):
    out = model(*args)
    return out.sample if hasattr(out, "sample") else out


@pytest.mark.parametrize("kind", ["tiny", "diffusers"])
def test_quantize_dit_at_16_bits_without_ternary_stays_within_1e3(kind):
    model = _randomised(TinyDiT() if kind == "tiny" else _diffusers_dit())
    args = _inputs()
    ref = _out(model, args)
    quantized = quantize_dit(copy.deepcopy(model), 16, ternary=False)
    assert len(quantized_layers(quantized)) == len(dit_linear_names(model))
    assert (_out(quantized, args) - ref).abs().max() < 1e-3
    assert (_out(quantize_dit(copy.deepcopy(model), 2), args) - ref).abs().max() > 1e-2


@pytest.mark.parametrize("kind", ["tiny", "diffusers"])
def test_rotated_weight_control_rotates_without_quantising(kind):
    """rotate_weights=True, act_bits=None: with full-precision weights the rotation cancels, (x D H)(W D H)ᵀ = x Wᵀ;
    with ternary weights each layer is (x D H) ternarize(W D H)ᵀ + b, computed here by hand."""
    model = _randomised(TinyDiT() if kind == "tiny" else _diffusers_dit())
    args = _inputs()
    ref = _out(model, args)
    exact = quantize_dit(copy.deepcopy(model), None, rotate_weights=True, ternary=False)
    assert (_out(exact, args) - ref).abs().max() < 1e-4
    control = quantize_dit(copy.deepcopy(model), None, rotate_weights=True)
    name, layer = next(iter(quantized_layers(control).items()))
    assert layer.act_bits is None and not layer.quantizer.quantize and "quantize=False" in repr(layer.quantizer)
    linear = model.get_submodule(name)
    x = torch.randn(3, linear.in_features, generator=_gen())
    rotate = layer.quantizer.rotate_tokens
    by_hand = rotate(x) @ ternarize(rotate(linear.weight.detach()))[0].T + linear.bias.detach()
    torch.testing.assert_close(layer(x), by_hand, rtol=1e-5, atol=1e-5)
    plain = quantize_dit(copy.deepcopy(model), None)  # W1.58A16 on W: a different ternarisation
    assert (_out(control, args) - _out(plain, args)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="act_bits=None"):
        quantize_dit(copy.deepcopy(model), 2, rotate_weights=True)
    with pytest.raises(ValueError, match="rotate=True"):
        quantize_dit(copy.deepcopy(model), None, rotate_weights=True, quantizer={"rotate": False})


def test_quantize_dit_scope_keeps_embedders_and_final_layer_in_fp():
    model = quantize_dit(_randomised(TinyDiT()), 4)
    names = set(quantized_layers(model))
    assert names == {f"blocks.{i}.{n}" for i in range(4)
                     for n in ("attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2", "adaLN_modulation.1")}
    assert isinstance(model.final_linear, torch.nn.Linear) and isinstance(model.t_embedder[0], torch.nn.Linear)
    d = quantize_dit(_diffusers_dit(), 4)
    assert not any("emb" in n or "proj_out" in n for n in quantized_layers(d))
    assert {n.split(".", 2)[2] for n in quantized_layers(d)} == {
        "norm1.linear", "attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "ff.net.0.proj", "ff.net.2"}


def test_quantize_dit_per_layer_bits_and_skip():
    model = _randomised(TinyDiT())
    names = dit_linear_names(model)
    bits = {n: (1 + i % 4) for i, n in enumerate(names) if not n.endswith("adaLN_modulation.1")}
    quantize_dit(model, bits, skip=["*.adaLN_modulation.1"])
    layers = quantized_layers(model)
    assert {n: layers[n].act_bits for n in layers} == bits
    assert isinstance(model.blocks[0].adaLN_modulation[1], torch.nn.Linear)
    set_act_bits(model, 3)
    assert {m.act_bits for m in quantized_layers(model).values()} == {3}


def test_naive_baseline_is_absmax_without_rotation():
    model = naive_quantize_dit(_randomised(TinyDiT()), 2)
    q = next(iter(quantized_layers(model).values())).quantizer
    assert (q.scale, q.grid, q.rotate) == ("absmax", "midrise", False)
    q_int = next(iter(quantized_layers(naive_int_quantize_dit(_randomised(TinyDiT()), 2)).values())).quantizer
    assert q_int.grid == "int"


def test_layer_sensitivity_is_zero_at_the_current_bits_and_grows_below():
    model = quantize_dit(_randomised(TinyDiT()), 4)
    args = _inputs(8)
    sens = layer_sensitivity(model, [args], (1, 2, 4), layers=list(quantized_layers(model))[:3])
    assert np.all(sens.delta[:, 2] == 0.0)  # switching a layer to its own bits changes nothing
    assert np.all(sens.delta[:, 0] > sens.delta[:, 2])
    # the model is left as it was
    assert {m.act_bits for m in quantized_layers(model).values()} == {4}
    # by hand for one entry
    layer = quantized_layers(model)["blocks.0.attn.qkv"]
    ref = model(*args)
    layer.quantizer.bits = 1
    by_hand = (model(*args) - ref).double().pow(2).mean().item()
    layer.quantizer.bits = 4
    assert math.isclose(sens.as_dict()["blocks.0.attn.qkv"][1], by_hand, rel_tol=1e-9)


def test_layer_sensitivity_skips_the_current_bits_without_changing_a_number():
    """With fixed batches the current bits are not run again (Δ = 0 exactly); a callable calibration
    (possibly random) still runs them. On the same batches both give the same table, bit for bit."""
    model = quantize_dit(_randomised(TinyDiT()), 4)
    batches = [_inputs(8), _inputs(8, seed=2)]
    layers = list(quantized_layers(model))[:4]
    skipped = layer_sensitivity(model, batches, (1, 2, 3, 4), layers=layers)
    run_all = layer_sensitivity(model, lambda m: [m(*args) for args in batches], (1, 2, 3, 4), layers=layers)
    assert np.array_equal(skipped.delta, run_all.delta) and np.all(skipped.delta[:, 3] == 0.0)


def test_layer_macs_by_hand():
    model = quantize_dit(_randomised(TinyDiT()), 4)
    args = _inputs(2)
    macs = layer_macs(model, lambda: model(*args))
    # 2 images × 16 tokens for the token layers, 2 rows for adaLN
    assert macs["blocks.0.attn.qkv"] == 2 * 16 * 64 * 192
    assert macs["blocks.0.mlp.fc2"] == 2 * 16 * 256 * 64
    assert macs["blocks.0.adaLN_modulation.1"] == 2 * 64 * 384


def test_quantized_dit_trains_latent_weights():
    model = quantize_dit(_randomised(TinyDiT()), 2)
    x, t, y = _inputs(4)
    model(x, t, y).pow(2).mean().backward()
    grads = [m.weight.grad for m in quantized_layers(model).values()]
    assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads)


# ---------------------------------------------------------------------------
# Diffusion
# ---------------------------------------------------------------------------
def test_linear_schedule_closed_form():
    abar = LinearSchedule().alphas_cumprod()
    betas = np.linspace(1e-4, 0.02, 1000)
    np.testing.assert_allclose(abar.numpy(), np.cumprod(1 - betas), rtol=1e-12)
    x0, eps = torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 2)
    xt = add_noise(LinearSchedule(), x0, eps, torch.tensor([999]))
    assert torch.allclose(xt, torch.full_like(xt, float(abar[999].sqrt())))


def test_ddim_with_the_true_noise_recovers_the_data():
    """An oracle ε-predictor for a single data point x* maps any start to x* (DDIM is exact then)."""
    target = torch.rand(1, 1, 8, 8, generator=_gen()) * 2 - 1
    schedule = LinearSchedule()
    abar = schedule.alphas_cumprod()

    class Oracle(torch.nn.Module):
        def forward(self, x, t, y):
            a = abar[t].float().view(-1, 1, 1, 1)
            return (x - a.sqrt() * target) / (1 - a).sqrt()

    out = ddim_sample(Oracle(), torch.zeros(3, dtype=torch.long), (1, 8, 8), schedule, generator=_gen(), steps=10)
    torch.testing.assert_close(out, target.expand(3, -1, -1, -1), atol=1e-4, rtol=0)


def test_eps_mse_of_the_zero_predictor_is_one():
    class Zero(torch.nn.Module):
        def forward(self, x, t, y):
            return torch.zeros_like(x)

    images = torch.zeros(400, 1, 8, 8)
    values = eps_mse(Zero(), images, torch.zeros(400, dtype=torch.long), LinearSchedule(), [10, 500],
                     generator=_gen())
    assert all(abs(v - 1.0) < 0.02 for v in values)


def test_tiny_dit_config_rejects_bad_widths():
    with pytest.raises(ValueError, match="heads"):
        TinyDiTConfig(hidden=64, heads=3)


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------
def test_frechet_distance_against_scipy_sqrtm():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 6)) @ rng.standard_normal((6, 6))
    b = rng.standard_normal((250, 6)) * 1.5 + 0.3
    mu_a, mu_b, ca, cb = a.mean(0), b.mean(0), np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    expected = np.sum((mu_a - mu_b) ** 2) + np.trace(ca + cb - 2 * linalg.sqrtm(ca @ cb).real)
    assert math.isclose(frechet_distance(a, b), expected, rel_tol=1e-8)
    assert abs(frechet_distance(a, a)) < 1e-8


def test_frechet_distance_closed_form_for_isotropic_gaussians():
    """N(μ1, s1² I) vs N(μ2, s2² I) in k dims: ‖μ1−μ2‖² + k (s1 − s2)²; here by moments."""
    from icml26.papers.robuq.analysis import frechet_distance_from_moments

    k = 5
    value = frechet_distance_from_moments(np.zeros(k), 4 * np.eye(k), np.ones(k), 9 * np.eye(k))
    assert math.isclose(value, k * 1.0 + k * (2 - 3) ** 2, rel_tol=1e-12)


def test_excess_kurtosis_against_scipy():
    x = np.random.default_rng(0).standard_t(5, size=(40, 100))
    np.testing.assert_allclose(excess_kurtosis(x), stats.kurtosis(x, axis=1, fisher=True, bias=True), rtol=1e-10)
    assert np.isnan(excess_kurtosis(np.ones((1, 8)))[0])
    np.testing.assert_allclose(excess_kurtosis(np.array([1.0, -1.0, 1.0, -1.0])), -2.0)


def test_mlp_penultimate_by_hand_and_against_sklearn():
    from sklearn.neural_network import MLPClassifier

    w0, b0 = np.array([[1.0, -1.0], [2.0, 0.5]]), np.array([0.0, -1.0])
    w1, b1 = np.array([[1.0], [1.0]]), np.array([0.0])
    x = np.array([[1.0, 1.0], [-1.0, 0.0]])
    # x W0 + b0 = [[3, -1.5], [-1, 0]] -> relu -> [[3, 0], [0, 0]]
    np.testing.assert_allclose(mlp_penultimate([w0, w1], [b0, b1], x), [[3.0, 0.0], [0.0, 0.0]])
    rng = np.random.default_rng(0)
    data, labels = rng.standard_normal((60, 4)), rng.integers(0, 3, 60)
    clf = MLPClassifier((8, 5), max_iter=50, random_state=0).fit(data, labels)
    h = mlp_penultimate(clf.coefs_, clf.intercepts_, data)
    logits = h @ clf.coefs_[-1] + clf.intercepts_[-1]
    np.testing.assert_array_equal(clf.classes_[logits.argmax(1)], clf.predict(data))


def test_check_values_by_hand():
    assert class_accuracy(np.array([1, 2, 3, 3]), np.array([1, 2, 0, 3])) == 0.75
    assert ratio(0.4, 0.5) == pytest.approx(0.8)
    assert math.isnan(ratio(1.0, 0.0))
    assert gain_points(0.62, 0.40) == pytest.approx(22.0)
    assert fp_best_ratio(0.1, [0.3, 0.2, 0.5]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="accuracy"):
        gain_points(62.0, 0.4)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="bits"):
        RobustQuantizer(0)
    with pytest.raises(ValueError, match="d=100"):
        hadamard(100)
    with pytest.raises(ValueError, match="in_features=100"):
        QuantLinear(100, 4, quantizer=RobustQuantizer(2))
    with pytest.raises(ValueError, match="avg_bits"):
        allocate_bits(np.ones((2, 3)), (2, 3, 4), 1.0)
    with pytest.raises(ValueError, match="act_bits"):
        quantize_dit(TinyDiT(), {"blocks.0.attn.qkv": 2})
    with pytest.raises(ValueError, match="skip"):
        quantize_dit(TinyDiT(), 2, skip=["blocks.9.nothing"])
    with pytest.raises(ValueError, match="already quantized"):
        quantize_dit(quantize_dit(TinyDiT(), 2), 2)


# ---------------------------------------------------------------------------
# The digits setting
# ---------------------------------------------------------------------------
def test_digit_images_and_scorer():
    from icml26.papers.robuq.digits import DigitScorer, load_digit_images

    data = load_digit_images(0.25, seed=0)
    assert data.x_train.shape == (1347, 1, 8, 8) and data.x_test.shape == (450, 1, 8, 8)
    assert data.x_train.min() == -1.0 and data.x_train.max() == 1.0  # pixel values 0..16 -> x/8 - 1
    scorer = DigitScorer.fit(data, seed=0)
    assert scorer.accuracy > 0.95
    # the held-out digits scored against themselves: the scorer's accuracy and a zero distance
    accuracy, distance = scorer.score(data.x_test, data.y_test)
    assert accuracy == scorer.accuracy and abs(distance) < 1e-5  # eigen-square-roots of rank-deficient covariances
    noise = torch.rand(450, 1, 8, 8, generator=_gen()) * 2 - 1
    assert scorer.score(noise, data.y_test)[1] > 10 * abs(distance) + 1.0


def test_train_denoiser_with_ema_keeps_the_warmed_up_average():
    """With ema_decay=d the final weights are θ̄ ← d_t θ̄ + (1−d_t) θ_{t+1}, d_t = min(d, t/(t+10)), over the
    iterates of the same run without EMA (recorded through the progress hook): the initialisation keeps no weight."""
    from icml26.papers.robuq import train_denoiser

    torch.manual_seed(0)
    model = TinyDiT(TinyDiTConfig(hidden=32, depth=1, heads=2))
    images, labels = torch.rand(16, 1, 8, 8) * 2 - 1, torch.randint(0, 10, (16,))
    plain = copy.deepcopy(model)
    iterates = []

    def record(steps):
        for i in steps:
            if i > 0:
                iterates.append([p.detach().clone() for p in plain.parameters()])
            yield i

    kwargs = dict(schedule=LinearSchedule(), steps=4, batch_size=4, lr=1e-2)
    train_denoiser(plain, images, labels, generator=_gen(), progress=record, **kwargs)
    iterates.append([p.detach().clone() for p in plain.parameters()])  # θ_1 … θ_4
    losses = train_denoiser(model, images, labels, generator=_gen(), ema_decay=0.9, **kwargs)
    expected = None
    for t, theta in enumerate(iterates):
        d = min(0.9, t / (t + 10))
        expected = theta if expected is None else [d * e + (1 - d) * p for e, p in zip(expected, theta)]
    for p_ema, e in zip(model.parameters(), expected):
        torch.testing.assert_close(p_ema, e, rtol=1e-5, atol=1e-6)
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses)


def test_the_ema_of_a_constant_sequence_is_that_constant():
    """The warm-up's first update copies, so a constant sequence gives the constant from the first step on,
    whatever the starting value; the decay then rises to d and stays there."""
    from icml26.papers.robuq.diffusion import ema_decay_at

    average = torch.tensor([123.0, -7.0])  # the initialisation
    for t in range(2000):
        average = torch.lerp(average, torch.tensor([0.5, 2.0]), 1.0 - ema_decay_at(t, 0.999))
        assert torch.equal(average, torch.tensor([0.5, 2.0])), t
    assert ema_decay_at(0, 0.999) == 0.0 and ema_decay_at(90, 0.999) == 0.9 and ema_decay_at(10**6, 0.999) == 0.999
    with pytest.raises(ValueError, match="step"):
        ema_decay_at(-1, 0.9)
    with pytest.raises(ValueError, match="decay"):
        ema_decay_at(3, float("nan"))


# ---------------------------------------------------------------------------
# Speed-ups that must not change a bit (the committed results stay valid)
# ---------------------------------------------------------------------------
def _quantized_like_the_arms(kind):
    model = _randomised(TinyDiT())
    if kind == "robuq":
        return quantize_dit(model, 2, quantizer={"scale": "gauss", "grid": "midrise", "rotate": True})
    if kind == "naive":
        return naive_quantize_dit(model, 2)
    return model


@pytest.mark.parametrize("kind", ["robuq", "naive", "fp"])
def test_chunked_forward_gives_the_bits_of_one_batch(kind, monkeypatch):
    """eps_mse and ddim_sample run the DiT FORWARD_CHUNK rows at a time: every row is computed on its own,
    so the samples and errors are those of one big batch, bit for bit."""
    from icml26.papers.robuq import diffusion
    from icml26.papers.robuq.diffusion import predict_eps_chunked

    model = _quantized_like_the_arms(kind)
    x, t, y = _inputs(600)
    with torch.no_grad():
        assert torch.equal(predict_eps_chunked(model, x, t, y, chunk=256), model(x, t, y))
        assert torch.equal(predict_eps_chunked(model, x, t, y, chunk=1000), model(x, t, y))
    labels = torch.arange(10).repeat_interleave(20)
    images, image_labels = torch.rand(300, 1, 8, 8, generator=_gen(2)) * 2 - 1, torch.randint(0, 10, (300,))
    runs = []
    for chunk in (diffusion.FORWARD_CHUNK, 10 ** 6):
        monkeypatch.setattr(diffusion, "FORWARD_CHUNK", chunk)
        runs.append((ddim_sample(model, labels, (1, 8, 8), LinearSchedule(), generator=_gen(3), steps=3, guidance=3.0,
                                 null_label=10),
                     eps_mse(model, images, image_labels, LinearSchedule(), [100, 900], generator=_gen(4))))
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


@pytest.mark.parametrize("d", [64, 256])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_folded_random_signs_rotate_to_the_bits_of_sign_flip_then_hadamard(d, dtype):
    """rotate_tokens multiplies by the cached D·H; (x D) H multiplies the same numbers, so the bits agree."""
    from icml26.papers.robuq.quant import random_signs

    x = torch.randn(5, 16, d, generator=_gen(), dtype=dtype) * 3
    expected = hadamard_transform(x * random_signs(d, 7).to(dtype))
    assert torch.equal(RobustQuantizer(2, seed=7).rotate_tokens(x), expected)
    w = torch.randn(3 * d, d, generator=_gen(1), dtype=dtype)  # a weight, rotated once by QuantLinear
    assert torch.equal(RobustQuantizer(4, seed=7).rotate_tokens(w), hadamard_transform(w * random_signs(d, 7).to(dtype)))


def _quantize_tokens_before(x, bits, scale, grid):
    """quantize_tokens as it was written before the in-place rewrite (the reference of the bits)."""
    from icml26.papers.robuq.quant import EPS, grid_levels

    lo, hi, off = grid_levels(bits, grid)
    if scale == "gauss":
        step = gaussian_step(bits, grid) * x.detach().pow(2).mean(dim=-1, keepdim=True).sqrt()
    else:
        step = x.detach().abs().amax(dim=-1, keepdim=True) / min(abs(lo), abs(hi))
    step = step.clamp_min(EPS) * 1.0
    y = torch.clamp(x / step, lo - 0.5, hi + 0.5)
    r = torch.clamp(torch.round(y - off) + off, lo, hi)
    if not x.requires_grad:
        return step * r
    return step * (y + (r - y).detach())


@pytest.mark.parametrize("scale,grid,bits", [("gauss", "midrise", 2), ("gauss", "midrise", 4), ("absmax", "midrise", 2),
                                             ("absmax", "int", 2), ("gauss", "midrise", 1), ("absmax", "ternary", 2)])
def test_quantize_tokens_keeps_the_bits_of_the_original_formula(scale, grid, bits):
    x = torch.randn(7, 16, 64, generator=_gen()) * 2
    x[0, 0] = 0.0  # a zero token
    with torch.no_grad():
        assert torch.equal(quantize_tokens(x, bits, scale=scale, grid=grid), _quantize_tokens_before(x, bits, scale, grid))
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out_a = quantize_tokens(xa, bits, scale=scale, grid=grid)
    out_b = _quantize_tokens_before(xb, bits, scale, grid)
    assert torch.equal(out_a, out_b)
    upstream = torch.randn(out_a.shape, generator=_gen(1))
    out_a.backward(upstream)
    out_b.backward(upstream)
    assert torch.equal(xa.grad, xb.grad)


def test_foreach_adamw_trains_to_the_bits_of_the_per_tensor_loop():
    """train_denoiser uses AdamW(foreach=True); the update is the per-tensor loop's, bit for bit."""
    from icml26.papers.robuq import diffusion

    trained = []
    for foreach in (False, True):
        model = quantize_dit(_randomised(TinyDiT(TinyDiTConfig(hidden=32, depth=1, heads=2))), 2)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, foreach=foreach)
        g = _gen(5)
        for _ in range(3):
            loss = diffusion.diffusion_loss(model, torch.rand(8, 1, 8, 8, generator=g) * 2 - 1,
                                            torch.randint(0, 10, (8,), generator=g), LinearSchedule(), generator=g)
            opt.zero_grad()
            loss.backward()
            opt.step()
        trained.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*trained))


@pytest.mark.parametrize("kind", ["tiny", "diffusers"])
def test_a_quantized_dit_saves_and_reloads_exactly_and_a_plain_save_is_refused(kind, tmp_path):
    from icml26.papers.robuq import load_quantized, save_quantized

    build = TinyDiT if kind == "tiny" else _diffusers_dit
    model = _randomised(build())
    names = dit_linear_names(model)
    bits = {n: (2 if i % 2 else 4) for i, n in enumerate(names[1:])}  # mixed precision, the first layer in FP
    quantized = quantize_dit(copy.deepcopy(model), bits, skip=[names[0]],
                             quantizer={"scale": "gauss", "grid": "midrise", "rotate": True, "seed": 3})
    args = _inputs()
    with torch.no_grad():
        before = _out(quantized, args)
    if kind == "diffusers":
        with pytest.raises(RuntimeError, match="save_quantized"):
            quantized.save_pretrained(tmp_path / "plain")
    save_quantized(quantized, tmp_path / "q")
    reloaded = load_quantized(tmp_path / "q") if kind == "diffusers" else load_quantized(tmp_path / "q", TinyDiT())
    assert {n: m.act_bits for n, m in quantized_layers(reloaded).items()} == \
        {n: m.act_bits for n, m in quantized_layers(quantized).items()}
    with torch.no_grad():
        assert float((_out(reloaded, args) - before).abs().max()) == 0.0
    if kind == "tiny":
        with pytest.raises(ValueError, match="pass model="):
            load_quantized(tmp_path / "q")
    with pytest.raises(ValueError, match="no QuantLinear"):
        save_quantized(build(), tmp_path / "none")


def test_a_quantized_model_still_pickles_and_copies(tmp_path):
    import pickle

    quantized = quantize_dit(_randomised(_diffusers_dit()), 4)
    for clone in (copy.deepcopy(quantized), pickle.loads(pickle.dumps(quantized))):
        with pytest.raises(RuntimeError, match="save_quantized"):
            clone.save_pretrained(tmp_path / "plain")


def test_ternary_codes_pack_four_to_a_byte_and_unpack_exactly():
    from icml26.papers.robuq import pack_ternary, unpack_ternary

    w_t = torch.tensor([-1.0, 0.0, 1.0, 1.0, -1.0])  # codes 0, 1, 2, 2 | 0 (+ three 0-weights of padding)
    packed = pack_ternary(w_t)
    assert packed.dtype == torch.uint8 and packed.tolist() == [0 | 1 << 2 | 2 << 4 | 2 << 6, 0 | 1 << 2 | 1 << 4 | 1 << 6]
    assert torch.equal(unpack_ternary(packed, 5), w_t)
    big = torch.randint(-1, 2, (37, 91), generator=_gen()).float()
    assert torch.equal(unpack_ternary(pack_ternary(big), big.numel()).view(37, 91), big)
    with pytest.raises(ValueError, match="only -1, 0 and 1"):
        pack_ternary(torch.tensor([0.5]))
    with pytest.raises(ValueError, match="does not fit"):
        unpack_ternary(packed, 9)
    from icml26.papers.robuq import PackedQuantLinear

    with pytest.raises(ValueError, match="in_features"):
        PackedQuantLinear(0, 4)


@pytest.mark.parametrize("kind, per_channel", [("tiny", False), ("tiny", True), ("diffusers", False)])
def test_a_packed_model_uses_the_fake_quantised_weights_and_round_trips_at_2_bits(kind, per_channel, tmp_path):
    from icml26.papers.robuq import PackedQuantLinear, load_quantized, model_bytes, pack_model, save_quantized

    build = TinyDiT if kind == "tiny" else _diffusers_dit
    model = quantize_dit(_randomised(build()), 2, per_channel=per_channel)
    args = _inputs()
    with torch.no_grad():
        before = _out(model, args)
    float_bytes = model_bytes(model)
    save_quantized(model, tmp_path / "packed", packed=True)
    assert any(isinstance(m, QuantLinear) for m in model.modules())  # the model itself is untouched
    packed = pack_model(copy.deepcopy(model))
    for name, layer in quantized_layers(model).items():  # the weight each forward uses, bit for bit
        assert torch.equal(packed.get_submodule(name).quantized_weight(), layer.quantized_weight())
    with torch.no_grad():  # the fake-quantised forward adds (Ŵ − W) to W: Ŵ up to one rounding of W's size
        torch.testing.assert_close(_out(packed, args), before, rtol=1e-5, atol=1e-5)
    layers = [m for m in packed.modules() if isinstance(m, PackedQuantLinear)]
    assert len(layers) == len(dit_linear_names(model))
    # each layer: a float32 weight (4 bytes a weight) becomes ⌈n/4⌉ bytes of codes plus its scales (4 bytes each)
    saved = sum(4 * m.in_features * m.out_features - -(-m.in_features * m.out_features // 4)
                - 4 * (m.out_features if per_channel else 1) for m in layers)
    assert float_bytes - model_bytes(packed) == saved
    reloaded = load_quantized(tmp_path / "packed") if kind == "diffusers" else \
        load_quantized(tmp_path / "packed", TinyDiT())
    with torch.no_grad():
        assert torch.equal(_out(reloaded, args), _out(packed, args))
    assert sum(isinstance(m, PackedQuantLinear) for m in reloaded.modules()) == len(layers)
    # the file shrinks with the weights: the packed file is far smaller than the float one
    save_quantized(model, tmp_path / "float")
    assert (tmp_path / "packed" / "model.safetensors").stat().st_size < \
        0.5 * (tmp_path / "float" / "model.safetensors").stat().st_size


def test_memory_report_counts_2_bits_per_ternary_weight():
    from icml26.papers.robuq import memory_report

    model = TinyDiT()
    report = memory_report(model)
    layers = [model.get_submodule(n) for n in dit_linear_names(model)]
    saved = sum(4 * m.in_features * m.out_features - -(-m.in_features * m.out_features // 4) - 4 for m in layers)
    assert report["float_bytes"] == 4 * sum(p.numel() for p in model.parameters()) + \
        sum(b.numel() * b.element_size() for b in model.buffers())
    assert report["float_bytes"] - report["packed_bytes"] == saved
    assert report["quantized_layers"] == len(layers) and 0 < report["ternary_share"] < 1
    assert not any(isinstance(m, QuantLinear) for m in model.modules())  # measured on a copy


def test_allocate_bits_stays_bounded_for_weights_over_many_orders_of_magnitude():
    """Raw MAC weights [671088640, 7, 13] once asked for a petabyte table: the weights are coarsened to fit
    max_cells, the allocation meets the budget, and here it is the brute-force optimum."""
    import time

    from icml26.papers.robuq import allocate_bits

    table = np.array([[3.0, 1.0, 0.5, 0.1], [2.0, 1.0, 0.4, 0.2], [5.0, 2.0, 1.0, 0.1]])
    weights = np.array([671088640, 7, 13])
    start = time.perf_counter()
    alloc = allocate_bits(table, (1, 2, 3, 4), 2.0, weights=weights)
    assert time.perf_counter() - start < 5.0
    assert np.dot(weights, alloc.bits) <= 2.0 * weights.sum()
    feasible = [(sum(table[i, b - 1] for i, b in enumerate(bits)), bits)
                for bits in itertools.product((1, 2, 3, 4), repeat=3) if np.dot(weights, bits) <= 2.0 * weights.sum()]
    best, best_bits = min(feasible)
    assert alloc.bits == best_bits and alloc.objective == pytest.approx(best)
    small = allocate_bits(table, (1, 2, 3, 4), 2.0, weights=[3, 1, 2], max_cells=8)  # forced coarsening
    assert np.dot([3, 1, 2], small.bits) <= 2.0 * 6
    with pytest.raises(ValueError, match="max_cells"):
        allocate_bits(table, (1, 2, 3, 4), 2.0, max_cells=0)


def test_a_state_dict_carries_each_layers_settings_and_a_mismatched_load_is_refused():
    """A quantised model's state dict holds every layer's settings (ternary, per_channel, the activation
    quantizer's bits, scale, grid, rotation ...); loading it into a model quantised otherwise names the setting
    instead of loading with 'all keys matched', into an unquantised model fails on the extra keys, and into
    the same quantisation gives the same outputs."""
    from icml26.papers.robuq import pack_model

    source = quantize_dit(_randomised(TinyDiT()), 4)
    state = copy.deepcopy(source.state_dict())
    args = _inputs()
    same = quantize_dit(TinyDiT(), 4)
    same.load_state_dict(state)
    assert torch.equal(_out(same, args), _out(source, args))
    for other, field in ((quantize_dit(TinyDiT(), 2), "bits=4"),
                         (quantize_dit(TinyDiT(), 4, quantizer={"scale": "absmax"}), "scale="),
                         (quantize_dit(TinyDiT(), 4, ternary=False), "ternary=True"),
                         (quantize_dit(TinyDiT(), None), "with an activation quantizer")):
        with pytest.raises(ValueError, match=field):
            other.load_state_dict(state)
    with pytest.raises(RuntimeError, match="_extra_state"):
        TinyDiT().load_state_dict(state)
    packed = pack_model(copy.deepcopy(source))
    other_packed = pack_model(quantize_dit(TinyDiT(), 2))
    with pytest.raises(ValueError, match="bits=4"):
        other_packed.load_state_dict(packed.state_dict())
