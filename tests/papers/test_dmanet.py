"""DMANet: anti-aliasing exactness, interpolation identities, parity with the authors' code.

Numbers from outside the code: hand-computed cutoff bins, alias bins and amplitudes
(a unit cosine of length n has rFFT magnitude n/2), scipy's ``resample`` and
``solve_ivp``, NumPy's FFT, the parameter count of the authors' model (brief: 0.68M),
pmdarima's Taylor series and the sunspot table shipped in statsmodels.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml26.papers.dmanet import (
    AntiAliasDownsample,
    DLinear,
    DMANet,
    MultiScaleEncoder,
    PatchTST,
    RevIN,
    aliasing_leakage,
    aliasing_lorenz,
    anti_alias_filter,
    avgpool_downsample,
    capacity_ratio,
    channel_schedule,
    cutoff_bin,
    filtered_downsample,
    fourier_upsample,
    frequency_loss,
    fredf_loss,
    joint_interpolation,
    load_sunspots,
    load_taylor,
    lorenz63,
    mse_loss,
    naive_downsample,
    sliding_windows,
    spectral_mix,
    standardized_splits,
)
from icml26.papers.dmanet.analysis import cascade_leakage, mse_ratio, spectrum_bands, summarize_fits

N = 512


def cosine(k: int, n: int = N) -> torch.Tensor:
    return torch.cos(2 * math.pi * k * torch.arange(n, dtype=torch.float64) / n)


def energy(x: torch.Tensor) -> float:
    return float(x.pow(2).sum())


# ---------------------------------------------------------------------------
# Prevention: the anti-aliasing filter
# ---------------------------------------------------------------------------
def test_cutoff_bins_by_hand():
    # n_f = 257 bins; 257 * 0.5 / 2 = 64.25 -> 64 (the authors' layer with rho = 0.5)
    assert cutoff_bin(512, 0.5) == 64
    # ETTh1 schedule 7 -> 3 -> 1 -> 1: rho = 3/14, 1/6, 1/2 (brief §1)
    assert capacity_ratio(7, 3, 3, 2) == pytest.approx(3 / 14)
    assert capacity_ratio(3, 1, 3, 2) == pytest.approx(1 / 6)
    assert capacity_ratio(1, 1, 3, 2) == pytest.approx(0.5)
    # channel growth is capped at the kernel size: min(8/1, 3) / 2
    assert capacity_ratio(1, 8, 3, 2) == pytest.approx(1.5)
    # rho = 2/s puts the cutoff at the new Nyquist bin n/(2s)
    assert cutoff_bin(512, 2 / 2) == 128 and cutoff_bin(512, 2 / 4) == 64


@pytest.mark.parametrize("k", [0, 20, 60, 63])
def test_cosine_below_cutoff_keeps_all_its_energy(k):
    x = cosine(k)
    y = anti_alias_filter(x, 0.5)
    assert torch.allclose(y, x, atol=1e-12)
    assert energy(y) / energy(x) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("k", [64, 100, 200, 256])
def test_cosine_at_or_above_cutoff_keeps_under_1e_10(k):
    x = cosine(k)
    assert energy(anti_alias_filter(x, 0.5)) / energy(x) < 1e-10
    # the same filter with the cutoff set directly
    assert energy(anti_alias_filter(x, cutoff=64)) / energy(x) < 1e-10


def test_filter_acts_along_dim_and_keeps_shape_dtype():
    x = torch.randn(3, 64, 5, dtype=torch.float32)
    y = anti_alias_filter(x, cutoff=8, dim=1)
    assert y.shape == x.shape and y.dtype == x.dtype
    ref = torch.fft.irfft(torch.fft.rfft(x, dim=1) * (torch.arange(33) < 8).view(1, 33, 1), n=64, dim=1)
    assert torch.allclose(y, ref, atol=1e-6)
    # idempotent: a projection
    assert torch.allclose(anti_alias_filter(y, cutoff=8, dim=1), y, atol=1e-6)


def test_filter_rejects_bad_arguments():
    x = torch.randn(16)
    with pytest.raises(ValueError, match="exactly one"):
        anti_alias_filter(x, 0.5, cutoff=3)
    with pytest.raises(ValueError, match="exactly one"):
        anti_alias_filter(x)
    with pytest.raises(ValueError, match="cutoff"):
        anti_alias_filter(x, cutoff=20)
    with pytest.raises(TypeError, match="real floating"):
        anti_alias_filter(torch.arange(16), cutoff=2)


def test_tone_above_new_nyquist_aliases_without_filter_and_vanishes_with_it():
    # n = 512, stride 2: the 256-sample output has Nyquist bin 128. A tone at bin 200
    # folds to |200 - round(200 * 2 / 512) * 256| = 56, with amplitude 256 / 2 = 128.
    k, s = 200, 2
    alias = abs(k - round(k * s / N) * (N // s))
    assert alias == 56
    x = cosine(k)
    kernel = torch.tensor([[[0.0, 1.0, 0.0]]], dtype=torch.float64)  # stride-2 conv that keeps x[2t]
    plain = F.conv1d(x.view(1, 1, -1), kernel, stride=s, padding=1).flatten()
    spec = torch.fft.rfft(plain).abs()
    assert int(spec.argmax()) == alias and float(spec[alias]) == pytest.approx(128.0, rel=1e-9)
    assert torch.allclose(plain, naive_downsample(x, s))
    # with the authors' layer filter (rho = 0.5, cutoff 64) or the Nyquist cutoff (128)
    for filtered in (anti_alias_filter(x, 0.5), anti_alias_filter(x, cutoff=128)):
        out = F.conv1d(filtered.view(1, 1, -1), kernel, stride=s, padding=1).flatten()
        assert float(torch.fft.rfft(out).abs().max()) < 1e-10
    assert float(torch.fft.rfft(filtered_downsample(x, s)).abs().max()) < 1e-10


def test_anti_alias_downsample_layer_linear_part():
    # The layer with an identity kernel and no activation: alias peak without the
    # filter, nothing with it.
    x = cosine(200).view(1, 1, -1)
    peaks = {}
    for anti_alias in (False, True):
        layer = AntiAliasDownsample(1, 1, anti_alias=anti_alias, dropout=0.0).double().eval()
        layer.act = nn.Identity()
        with torch.no_grad():
            layer.depthwise.weight.copy_(torch.tensor([[[0.0, 1.0, 0.0]]]))
            layer.pointwise.weight.fill_(1.0)
        with torch.no_grad():
            peaks[anti_alias] = torch.fft.rfft(layer(x).flatten()).abs()
    assert int(peaks[False].argmax()) == 56 and float(peaks[False][56]) == pytest.approx(128.0)
    assert float(peaks[True].max()) < 1e-10


# ---------------------------------------------------------------------------
# Leakage
# ---------------------------------------------------------------------------
def test_leakage_of_two_tones_by_hand():
    # x = cos(bin 10) + a cos(bin 200); slicing by 2 keeps energy 128 of each tone, the
    # second one folded to bin 56: leakage a^2 / (1 + a^2).
    a = 0.5
    x = cosine(10) + a * cosine(200)
    leak = aliasing_leakage(x, lambda v: naive_downsample(v, 2))
    assert leak == pytest.approx(a * a / (1 + a * a), rel=1e-12)
    assert aliasing_leakage(x, lambda v: filtered_downsample(v, 2)) < 1e-20
    # average pooling by 2 is cos(pi k / n)-weighted: k = 200 keeps cos(200 pi / 512)^2
    damp = math.cos(math.pi * 200 / N) ** 2 * a * a
    keep = math.cos(math.pi * 10 / N) ** 2
    assert aliasing_leakage(x, lambda v: avgpool_downsample(v, 2)) == pytest.approx(damp / (keep + damp), rel=1e-9)


def test_leakage_on_the_chaotic_signal_grows_with_level_for_slicing_only():
    x = torch.as_tensor(aliasing_lorenz(2048, rng=np.random.default_rng(1)).T)
    naive = [aliasing_leakage(x, lambda v, f=2 ** l: naive_downsample(v, f)) for l in (1, 2, 3)]
    filt = [aliasing_leakage(x, lambda v, f=2 ** l: filtered_downsample(v, f)) for l in (1, 2, 3)]
    assert naive[0] > 0.02 and naive[0] < naive[1] < naive[2]
    assert max(filt) < 1e-10


# ---------------------------------------------------------------------------
# Post-sampling interpolation
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("stride", [2, 4, 8])
def test_decimate_then_fourier_upsample_recovers_a_band_limited_signal(stride):
    gen = torch.Generator().manual_seed(stride)
    band = N // (2 * stride)  # bins < band survive decimation by `stride`
    spec = torch.zeros(N // 2 + 1, dtype=torch.complex128)
    spec[1:band] = torch.complex(torch.randn(band - 1, generator=gen, dtype=torch.float64),
                                 torch.randn(band - 1, generator=gen, dtype=torch.float64))
    spec[0] = 3.0
    x = torch.fft.irfft(spec, n=N)
    rec = fourier_upsample(naive_downsample(x, stride), N)
    assert float((rec - x).abs().max()) < 1e-10
    # with energy above the band, filter + decimate + upsample loses exactly that energy
    noisy = x + 0.3 * cosine(band + 5) + 0.2 * cosine(N // 2 - 3)
    err = fourier_upsample(filtered_downsample(noisy, stride), N) - noisy
    out_of_band = (0.3 ** 2 + 0.2 ** 2) * N / 2  # Parseval for two unit cosines
    assert energy(err) == pytest.approx(out_of_band, rel=1e-10)


@pytest.mark.parametrize("n,length", [(32, 128), (33, 100), (64, 64), (10, 37)])
def test_fourier_upsample_matches_scipy_resample(n, length):
    signal = pytest.importorskip("scipy.signal")
    x = np.random.default_rng(n).normal(size=(2, n))
    ours = fourier_upsample(torch.as_tensor(x), length).numpy()
    assert np.allclose(ours, signal.resample(x, length, axis=-1), atol=1e-12)


def test_spectral_mix_equals_circular_convolution():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(2, 3, 16))
    w = rng.normal(size=(4, 3, 16))
    mixed = spectral_mix(torch.fft.rfft(torch.as_tensor(h)), torch.fft.rfft(torch.as_tensor(w)))
    ours = torch.fft.irfft(mixed, n=16).numpy()
    # sum_c real(ifft(fft(h_c) * fft(w_oc)))
    ref = np.real(np.fft.ifft(np.fft.fft(h)[:, None] * np.fft.fft(w)[None], axis=-1)).sum(2)
    assert np.allclose(ours, ref, atol=1e-12)
    # and a direct loop over the circular convolution
    loop = np.zeros((2, 4, 16))
    for tau in range(16):
        for s in range(16):
            loop[:, :, (tau + s) % 16] += np.einsum("bc,oc->bo", h[:, :, tau], w[:, :, s])
    assert np.allclose(ours, loop, atol=1e-12)


def test_joint_interpolation_paths():
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(2, 3, 16, generator=gen, dtype=torch.float64)
    # identity filters (a unit impulse per matching channel) reduce it to fourier_upsample
    eye = torch.zeros(3, 3, 16, dtype=torch.float64)
    eye[range(3), range(3), 0] = 1.0
    assert torch.allclose(joint_interpolation(h, eye, 64), fourier_upsample(h, 64), atol=1e-12)
    # the authors' backward scaling is the exact result times sqrt(m)/D when bin m/2 is empty
    h_band = anti_alias_filter(h, cutoff=8)
    w = torch.randn(4, 3, 16, generator=gen, dtype=torch.float64)
    exact = joint_interpolation(h_band, w, 64)
    back = joint_interpolation(h_band, w, 64, norm="backward")
    assert torch.allclose(back, exact * math.sqrt(16) / 64, atol=1e-12)


def test_legacy_real_cast_makes_each_level_time_symmetric():
    gen = torch.Generator().manual_seed(2)
    h = torch.randn(2, 3, 16, generator=gen, dtype=torch.float64)
    w = torch.randn(2, 3, 16, generator=gen, dtype=torch.float64)
    mirror = lambda u: torch.roll(torch.flip(u, [-1]), 1, -1)  # noqa: E731  u[-t mod D]
    legacy = joint_interpolation(h, w, 64, legacy_real_cast=True)
    assert torch.allclose(legacy, mirror(legacy), atol=1e-12)
    correct = joint_interpolation(h, w, 64)
    assert not torch.allclose(correct, mirror(correct), atol=1e-3)


# ---------------------------------------------------------------------------
# RevIN, shapes, fusion
# ---------------------------------------------------------------------------
def test_revin_round_trip_is_identity():
    revin = RevIN(4).double()
    with torch.no_grad():
        revin.gamma.copy_(torch.tensor([0.5, 2.0, -1.5, 1.0]))
        revin.beta.copy_(torch.tensor([0.1, -0.3, 2.0, 0.0]))
    x = torch.randn(3, 20, 4, dtype=torch.float64) * 5 + 2
    x_hat, stats = revin.normalize(x)
    assert torch.allclose(x_hat.mean(1), revin.beta.expand(3, 4), atol=1e-10)
    assert torch.allclose(revin.denormalize(x_hat, stats), x, atol=1e-8)


@pytest.mark.parametrize("axis", ["latent", "time"])
def test_forecasts_are_equivariant_to_per_channel_affine_maps(axis):
    torch.manual_seed(0)
    model = DMANet(32, 8, 3, d_model=32, filter_axis=axis).double().eval()
    x = torch.randn(2, 32, 3, dtype=torch.float64)
    a = torch.tensor([3.0, 0.5, 10.0], dtype=torch.float64)
    b = torch.tensor([-2.0, 7.0, 0.25], dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(model(x * a + b), model(x) * a + b, atol=1e-4)


@pytest.mark.parametrize("channels,schedule", [(1, [1, 1, 1, 1]), (7, [7, 3, 1, 1]),
                                               (21, [21, 10, 5, 2]), (321, [321, 160, 80, 40])])
def test_channel_schedule(channels, schedule):
    assert channel_schedule(channels, 3, 0.5) == schedule


@pytest.mark.parametrize("channels", [1, 7, 21])
@pytest.mark.parametrize("axis", ["latent", "time"])
def test_shapes(channels, axis):
    model = DMANet(48, 12, channels, d_model=32, filter_axis=axis)
    assert model(torch.randn(5, 48, channels)).shape == (5, 12, channels)
    assert model.channel_schedule == channel_schedule(channels, 3, 0.5)
    enc = model.encoders[0]
    length = 32 if axis == "latent" else 48
    assert [tuple(w.shape) for w in enc.interp_weights] == [
        (channels, c, length // 2 ** (i + 1)) for i, c in enumerate(enc.schedule[1:])]


def test_parameter_count_of_the_authors_configuration():
    # C = 7, L = H = 96, D = 512, d_ff = 2, M = 3 (brief §2: 0.68M). By hand:
    # embedding 96*512+512, position 512, encoder LayerNorm 1024, depthwise 3*(7+3+1),
    # pointwise 7*3+3*1+1*1, interpolation 7*(3*256+1*128+1*64), fusion 3, RevIN 14,
    # head LayerNorm 1024, decoder 512*1024+1024 + 1024*96+96.
    expected = (49_152 + 512 + 512 + 1024 + 33 + 25 + 7 * (768 + 128 + 64) + 3 + 14 + 1024
                + 524_288 + 1024 + 98_304 + 96)
    assert expected == 682_731
    assert sum(p.numel() for p in DMANet(96, 96, 7).parameters()) == expected


def test_fusion_weights_sum_to_one_and_weight_the_levels():
    torch.manual_seed(0)
    enc = MultiScaleEncoder(3, 32).double()
    with torch.no_grad():
        enc.fusion_logits.copy_(torch.tensor([0.3, -1.0, 2.0]))
    weights = enc.fusion_weights().detach()
    assert float(weights.sum()) == pytest.approx(1.0, abs=1e-12)
    assert torch.allclose(weights, torch.softmax(torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64), 0))
    enc.eval()
    z = torch.randn(2, 3, 32, dtype=torch.float64)
    fused, levels = enc(z, return_levels=True)
    assert torch.allclose(fused, sum(w * u for w, u in zip(weights, levels)))


def test_every_parameter_gets_a_gradient():
    torch.manual_seed(0)
    model = DMANet(32, 8, 3, d_model=32)
    frequency_loss(model(torch.randn(4, 32, 3)), torch.randn(4, 8, 3)).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_bad_model_arguments_raise():
    with pytest.raises(ValueError, match="divisible"):
        DMANet(96, 24, 3, d_model=100)
    with pytest.raises(ValueError, match="filter_axis"):
        DMANet(96, 24, 3, d_model=64, filter_axis="freq")
    with pytest.raises(ValueError, match=r"expected input \(batch, 96, 3\)"):
        DMANet(96, 24, 3, d_model=64)(torch.randn(2, 96, 4))


# ---------------------------------------------------------------------------
# Parity with the authors' pre-release code
# ---------------------------------------------------------------------------
def _authors_forward(model: DMANet, x: torch.Tensor) -> torch.Tensor:
    """``models/DMANet.py`` (January 2026) written out line by line with ``model``'s weights."""
    mean = x.mean(1, keepdim=True)
    std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
    revin = model.revin
    z = ((x - mean) / std * revin.gamma + revin.beta).permute(0, 2, 1)
    z = model.embedding(z) + model.position
    for enc in model.encoders:
        d = z.shape[-1]
        current = enc.norm(z)
        pyramid = []
        for i, layer in enumerate(enc.levels):
            icr = min(torch.tensor(layer.out_channels / layer.in_channels), 3) / 2
            x_freq = torch.fft.rfft(current, dim=-1, norm="ortho")
            nyquist_idx = int(x_freq.shape[-1] * (icr / 2))
            mask = torch.zeros_like(x_freq)
            mask[..., :nyquist_idx] = 1.0
            filt = torch.fft.irfft(x_freq * mask, n=current.size(-1), dim=-1, norm="ortho")
            out = F.conv1d(filt, layer.depthwise.weight, stride=2, padding=1, groups=layer.in_channels)
            out = F.gelu(F.conv1d(out, layer.pointwise.weight))
            out = F.gelu(out)  # the "dropout" slot applies the activation again
            x_fft = torch.fft.rfft(out, dim=-1)
            w = torch.fft.rfft(enc.interp_weights[i], dim=-1, norm="ortho")
            expanded = torch.einsum("bcf,ocf->bof", x_fft, w)
            out_fft = torch.zeros(*expanded.shape[:2], d // 2 + 1, dtype=x.dtype)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out_fft[..., :expanded.size(2)] = expanded  # complex -> real cast
            pyramid.append(torch.fft.irfft(out_fft, n=d))
            current = out
        weighted = torch.stack(pyramid, 0) * enc.fusion_logits.softmax(0).view(-1, 1, 1, 1)
        z = weighted.sum(0) + z
    out = model.decoder(model.head_norm(z)).permute(0, 2, 1)
    out = (out - revin.beta) / (revin.gamma + 1e-10)
    return out * std + mean


def test_legacy_flags_reproduce_the_authors_forward_pass():
    torch.manual_seed(3)
    model = DMANet(24, 8, 7, d_model=64, interp_norm="backward", legacy_real_cast=True,
                   legacy_double_gelu=True).double()
    with torch.no_grad():  # move off the trivial initial affine so it is exercised
        model.revin.gamma.uniform_(0.5, 1.5)
        model.revin.beta.uniform_(-0.5, 0.5)
        model.encoders[0].fusion_logits.copy_(torch.tensor([0.2, 1.0, -0.4]))
        for weight in model.encoders[0].interp_weights:  # make the levels matter at this scale
            weight.mul_(50.0)
    x = torch.randn(3, 24, 7, dtype=torch.float64)
    with torch.no_grad():
        ours, ref = model(x), _authors_forward(model, x)
        assert torch.allclose(ours, ref, atol=1e-10)
        # and the correct defaults differ from it
        model_fixed = DMANet(24, 8, 7, d_model=64).double()
        model_fixed.load_state_dict(model.state_dict())
        model_fixed.eval()
        assert not torch.allclose(model_fixed(x), ref, atol=1e-2)


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------
def test_frequency_loss_is_zero_iff_prediction_equals_target():
    y = torch.randn(4, 16, 3, dtype=torch.float64)
    assert float(frequency_loss(y, y.clone())) == 0.0
    # an error delta at one step has |FFT| = |delta| in all 16 bins: mean = |delta| / (B * C)
    pred = y.clone()
    pred[1, 5, 2] += 0.6
    assert float(frequency_loss(pred, y)) == pytest.approx(0.6 / (4 * 3), rel=1e-12)
    assert float(frequency_loss(pred, y, weight=0.5)) == pytest.approx(0.3 / 12, rel=1e-12)


def test_frequency_loss_satisfies_parseval():
    gen = torch.Generator().manual_seed(0)
    pred = torch.randn(5, 24, 2, generator=gen, dtype=torch.float64)
    y = torch.randn(5, 24, 2, generator=gen, dtype=torch.float64)
    # mean |FFT(e)|^2 = n * mean e^2
    assert float(frequency_loss(pred, y, power=2)) == pytest.approx(24 * float(mse_loss(pred, y)), rel=1e-12)
    assert float(fredf_loss(pred, y, alpha=0.0)) == pytest.approx(float(mse_loss(pred, y)))
    assert float(fredf_loss(pred, y)) == pytest.approx(float(frequency_loss(pred, y)))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------
def test_lorenz_integrator_matches_scipy():
    integrate = pytest.importorskip("scipy.integrate")

    def field(_, s):
        x, y, z = s
        return [10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z]

    ref = integrate.solve_ivp(field, (0, 1.0), [1.0, 2.0, 20.0], t_eval=np.arange(1, 51) * 0.02,
                              rtol=1e-12, atol=1e-12, method="DOP853").y.T
    # RK4's error falls like h^4: 1e-4 at the default step 0.01, 1e-8 at 0.001
    fine = lorenz63(50, 0.02, initial=(1.0, 2.0, 20.0), burn_in=0, max_step=1e-3)
    assert np.abs(fine - ref).max() < 1e-7
    coarse = lorenz63(50, 0.02, initial=(1.0, 2.0, 20.0), burn_in=0)
    assert np.abs(coarse - ref).max() < 1e-3


def test_aliasing_lorenz_carries_energy_above_every_new_nyquist():
    x = aliasing_lorenz(4000)
    spec = np.abs(np.fft.rfft(x - x.mean(0), axis=0)) ** 2
    n_f = spec.shape[0]
    above = [spec[n_f // f:].sum() / spec.sum() for f in (2, 4, 8)]
    assert 0.02 < above[0] < above[1] < above[2]
    assert x.shape == (4000, 3)


def test_wheel_shipped_series():
    taylor = load_taylor()
    assert taylor.shape == (4032, 1)
    assert taylor[:3, 0].tolist() == [22262.0, 21756.0, 22247.0]
    sun = load_sunspots()
    # statsmodels' table: 1749-2008 complete, January-June 2009
    assert sun.shape == (260 * 12 + 6, 1)
    assert sun[:4, 0].tolist() == [58.0, 62.6, 70.0, 55.7] and sun[-1, 0] == 2.6


def test_standardized_splits_follow_the_time_series_library():
    series = np.arange(100, dtype=float)[:, None] * np.array([[1.0, -2.0]])
    data = standardized_splits(series, seq_len=10)
    # n_train = 70, n_test = 20, n_val = 10; val from 60, test from 70
    assert data.train.shape == (70, 2) and data.val.shape == (20, 2) and data.test.shape == (30, 2)
    assert np.allclose(data.train.mean(0), 0, atol=1e-6) and np.allclose(data.train.std(0), 1, atol=1e-6)
    assert np.allclose(data.test[0] * data.std + data.mean, series[70])
    x, y = sliding_windows(data.test, 10, 5)
    assert x.shape == (30 - 15 + 1, 10, 2) and y.shape == (16, 5, 2)
    assert np.allclose(y[0, 0], data.test[10]) and np.allclose(x[3, -1], data.test[12])
    with pytest.raises(ValueError, match="too short"):
        standardized_splits(series[:12], seq_len=10)


# ---------------------------------------------------------------------------
# Baselines and the README example
# ---------------------------------------------------------------------------
def test_dlinear_starts_as_the_window_mean():
    # weights 1/L, zero... plus the default bias: compare after removing the bias
    model = DLinear(24, 6, 2)
    with torch.no_grad():
        for layer in (*model.seasonal, *model.trend):
            layer.bias.zero_()
    x = torch.randn(3, 24, 2)
    assert torch.allclose(model(x), x.mean(1, keepdim=True).expand(-1, 6, -1), atol=1e-5)


@pytest.mark.parametrize("cls", [DLinear, PatchTST, DMANet])
def test_baselines_share_the_call(cls):
    kwargs = {"d_model": 32} if cls is DMANet else {}
    assert cls(48, 12, 5, **kwargs)(torch.randn(2, 48, 5)).shape == (2, 12, 5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_runs_on_cuda():
    model = DMANet(48, 12, 3, d_model=32).cuda()
    x = torch.randn(2, 48, 3, device="cuda")
    assert model(x).device.type == "cuda"
    assert anti_alias_filter(x, cutoff=4, dim=1).device.type == "cuda"


def test_experiment_config_validates():
    from icml26.papers.dmanet.experiment import Config

    assert Config.quick().d_model < Config().d_model == 512
    with pytest.raises(ValueError, match="dmanet' first"):
        Config(models=("dlinear", "dmanet"))
    with pytest.raises(ValueError, match="datasets"):
        Config(datasets=("ettm1",))
    with pytest.raises(ValueError, match="divisible"):
        Config(d_model=100)


# ---------------------------------------------------------------------------
# Non-finite input (issue #29) and NumPy input (issue #18)
# ---------------------------------------------------------------------------
def test_non_finite_input_is_refused_by_the_filter_and_the_network():
    x = torch.randn(2, 32, 3)
    x[0, 5, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        anti_alias_filter(x, cutoff=4, dim=1)
    with pytest.raises(ValueError, match="NaN"):
        DMANet(32, 8, 3, d_model=16, levels=2)(x)
    x[0, 5, 1] = float("inf")
    with pytest.raises(ValueError, match="inf"):
        DMANet(32, 8, 3, d_model=16, levels=2, filter_axis="time")(x)


def test_operators_take_numpy_and_return_numpy():
    x = np.random.default_rng(0).normal(size=(3, 64))
    for fn, args in ((anti_alias_filter, (0.5,)), (naive_downsample, (2,)), (avgpool_downsample, (2,)),
                     (filtered_downsample, (2,)), (fourier_upsample, (128,))):
        out = fn(x, *args)
        assert isinstance(out, np.ndarray)
        np.testing.assert_allclose(out, fn(torch.from_numpy(x), *args).numpy(), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# Property tests of the anti-aliasing filters (hypothesis)
# ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(n=st.integers(4, 96), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_anti_alias_filter_is_an_exact_projection(n, seed, data):
    c = data.draw(st.integers(0, n // 2 + 1))
    x = torch.randn(2, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    y = anti_alias_filter(x, cutoff=c)
    spec_x, spec_y = torch.fft.rfft(x), torch.fft.rfft(y)
    scale = float(spec_x.abs().max())
    # bins below c untouched, bins at or above c removed (to rounding), and filtering twice changes nothing
    assert torch.allclose(spec_y[..., :c], spec_x[..., :c], atol=1e-10 * scale)
    if c < spec_y.shape[-1]:
        assert float(spec_y[..., c:].abs().max()) <= 1e-10 * scale
    assert torch.allclose(anti_alias_filter(y, cutoff=c), y, atol=1e-12 * scale)
    # linear: the filter of a sum is the sum of the filters
    z = torch.randn(2, n, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    assert torch.allclose(anti_alias_filter(x + 2 * z, cutoff=c), y + 2 * anti_alias_filter(z, cutoff=c),
                          atol=1e-10 * scale)


@settings(max_examples=40, deadline=None)
@given(stride=st.integers(2, 6), m=st.integers(4, 24), seed=st.integers(0, 2**31 - 1))
def test_filter_then_stride_leaks_nothing_for_any_signal(stride, m, seed):
    n = stride * m
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    leak = aliasing_leakage(x, lambda v: filtered_downsample(v, stride), stride=stride)
    assert leak <= 1e-20
    # decimating a band-limited signal and interpolating it back recovers it exactly
    band = anti_alias_filter(x, cutoff=(m - 1) // 2 + (1 if m % 2 else 0))
    up = fourier_upsample(naive_downsample(band, stride), n)
    assert torch.allclose(up, band, atol=1e-9 * float(band.abs().max() + 1e-300))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 200), ratio=st.floats(1e-3, 4.0))
def test_cutoff_bin_matches_the_authors_formula(n, ratio):
    n_f = n // 2 + 1
    assert cutoff_bin(n, ratio) == min(n_f, math.floor(n_f * ratio / 2))


# ---------------------------------------------------------------------------
# The reproduction's analysis, by hand
# ---------------------------------------------------------------------------
def test_cascade_leakage_by_hand():
    # n = 64. Stride 2 keeps 32 samples, new Nyquist at input bin 16; stride 4 keeps 16, Nyquist at bin 8.
    # A tone at bin 12 survives one slicing (12 < 16) but folds at the second (12 >= 8, onto bin 12 - 16 = -4);
    # the tone at bin 3 stays below both. Two unit tones of equal energy: leakage 0, then 1/2.
    t = torch.arange(64, dtype=torch.float64)
    signal = torch.cos(2 * math.pi * 3 * t / 64) + torch.cos(2 * math.pi * 12 * t / 64)
    table = cascade_leakage(signal, {"slice": naive_downsample, "filter": filtered_downsample}, 2)
    assert table["slice"][0] == pytest.approx(0.0, abs=1e-20)
    assert table["slice"][1] == pytest.approx(0.5, rel=1e-12)  # two equal-energy tones, one folded
    assert max(table["filter"]) <= 1e-25


def test_summaries_and_ratios_by_hand():
    s = summarize_fits([1.0, 3.0], [0.5, 1.5])
    assert (s.mse, s.mse_std, s.mae) == (2.0, 1.0, 1.0)
    assert mse_ratio(0.97, 1.0) == pytest.approx(0.97)
    assert math.isnan(mse_ratio(1.0, math.nan)) and math.isnan(mse_ratio(1.0, 0.0))
    series = np.cos(2 * np.pi * 8 * np.arange(64) / 64)[:, None]
    x, y = spectrum_bands(series, bins=8)
    assert sum(y) <= 1.0 + 1e-12 and len(x) == len(y)
    assert x[int(np.argmax(y))] == pytest.approx(8 / 64, rel=0.3)  # the band holding the tone at 1/8 cycle


# ---------------------------------------------------------------------------
# Issue #29: the model-free ridge check and the paired ratio
# ---------------------------------------------------------------------------
from icml26.papers.dmanet.analysis import paired_ratio, ridge_aliasing_check, ridge_fit  # noqa: E402


def test_ridge_fit_matches_scikit_learn():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 6)), rng.normal(size=(50, 2))
    w, b = ridge_fit(x, y, 3.0)
    ref = Ridge(alpha=3.0).fit(x, y)
    np.testing.assert_allclose(w, ref.coef_.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, ref.intercept_, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="finite"):
        ridge_fit(np.full((3, 2), np.nan), np.zeros((3, 1)), 1.0)


def _segments(series: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(series)
    return series[: n // 2], series[n // 2: 3 * n // 4], series[3 * n // 4:]


def test_ridge_check_sees_no_difference_on_a_band_limited_series():
    """Sinusoids with whole cycles per window and below the coarsest Nyquist bin pass the per-window
    low-pass untouched, so the filtered and naive features are equal and so are the errors."""
    L, t = 32, np.arange(1600)
    series = np.stack([np.sin(2 * np.pi * 1 * t / L) + 0.5 * np.cos(2 * np.pi * 1 * t / L + 0.3),
                       np.sin(2 * np.pi * 1 * t / L + 1.0)], axis=1)
    series = series + 0.1 * np.random.default_rng(1).normal(size=series.shape) @ np.zeros((2, 2))
    r = ridge_aliasing_check(*_segments(series), seq_len=L, horizon=4, levels=2)
    assert r.strides == (2, 4)
    np.testing.assert_allclose(r.filtered_mse, r.naive_mse, rtol=1e-6, atol=1e-12)


def test_ridge_check_finds_aliasing_where_a_fast_band_folds_onto_the_signal():
    """A predictable slow sinusoid plus strong white noise above the stride-4 Nyquist: slicing folds the
    noise onto the slow band, the filter removes it, so only the filtered forecaster stays accurate."""
    rng = np.random.default_rng(2)
    L, n = 32, 3000
    t = np.arange(n)
    slow = np.sin(2 * np.pi * t / 64.0)
    spec = np.fft.rfft(rng.normal(size=n))
    spec[: int(0.3 * len(spec))] = 0  # keep frequencies above 0.15 cycles/sample (> 1/8, the new Nyquist)
    fast = np.fft.irfft(spec, n=n)
    fast *= 2.0 / fast.std()
    series = (slow + fast)[:, None]
    r = ridge_aliasing_check(*_segments(series), seq_len=L, horizon=4, levels=2)
    # forecasting the slow part exactly and the fast band by 0 scores var(fast) = 4: with the filter the
    # ridge does at least that well at stride 4; the folded noise makes the naive input worse than that
    assert r.filtered_mse[1] < 4.0 < r.naive_mse[1]
    assert r.ratios[1] < 0.8
    with pytest.raises(ValueError, match="divisible"):
        ridge_aliasing_check(*_segments(series), seq_len=30, horizon=4, levels=2)


def test_paired_ratio_by_hand():
    p = paired_ratio([1.0, 2.0, 4.0], [2.0, 2.0, 2.0])
    # log ratios -ln2, 0, ln2: geometric mean 1, sd ln2, half width t_{0.975,2} ln2 / sqrt(3)
    half = 4.302652729911275 * math.log(2) / math.sqrt(3)
    assert p.ratio == pytest.approx(1.0)
    assert p.ci == pytest.approx((math.exp(-half), math.exp(half)))
    assert (p.wins, p.n) == (1, 3)
    one = paired_ratio([0.9], [1.0])
    assert one.ratio == pytest.approx(0.9) and one.ci is None
    with pytest.raises(ValueError, match="positive"):
        paired_ratio([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="equal-length"):
        paired_ratio([1.0], [1.0, 2.0])


def test_strided_only_dmanet_has_no_full_resolution_path():
    """The diagnostic of issue #29: no residual and no finer level reach the output, so the finer levels'
    interpolation weights and the fusion logits get no gradient, while every downsampling level does."""
    from icml26.papers.dmanet.sections import StridedOnlyDMANet

    torch.manual_seed(0)
    model = StridedOnlyDMANet(48, 8, 3, d_model=16, levels=3, dropout=0.0)
    enc = model.encoders[0]
    x = torch.randn(4, 48, 3)
    model(x).pow(2).sum().backward()
    assert enc.fusion_logits.grad is None
    assert all(w.grad is None for w in list(enc.interp_weights)[:-1])
    assert enc.interp_weights[-1].grad.abs().sum() > 0
    assert all(any(p.grad is not None and p.grad.abs().sum() > 0 for p in level.parameters()) for level in enc.levels)
    # the same network with the residual (plain DMANet on the time axis) does train the finer levels
    plain = DMANet(48, 8, 3, d_model=16, levels=3, dropout=0.0, filter_axis="time")
    plain(x).pow(2).sum().backward()
    assert plain.encoders[0].interp_weights[0].grad.abs().sum() > 0
    with pytest.raises(TypeError, match="filter_axis"):
        StridedOnlyDMANet(48, 8, 3, filter_axis="latent")


def test_strided_seeds_config_is_validated():
    from icml26.papers.dmanet.experiment import Config

    with pytest.raises(ValueError, match="strided_seeds"):
        Config(strided_seeds=-1)
    with pytest.raises(ValueError, match="strided_seeds > 0 needs the chaotic"):
        Config(datasets=("taylor",), time_family_seeds=0, strided_seeds=2)
    assert Config(datasets=("taylor",), time_family_seeds=0, strided_seeds=0).strided_seeds == 0
