"""Fourier-domain operators of DMANet (anti-aliasing, interpolation, leakage).

Paper: *Anti-Aliasing Matters: A Dynamic Network for Time Series Forecasting*
(DMANet, ICML 2026). Downsampling a series by a stride ``s`` folds every
frequency above the new Nyquist limit onto a lower one (aliasing). DMANet's
"Prevention" step removes those frequencies first; its "joint interpolation"
brings each coarse scale back to full length without inventing new ones.

Steps the functions here implement:

1. :func:`cutoff_bin` / :func:`anti_alias_filter`: an ideal low-pass in the rFFT
   domain that zeroes every bin ``j >= floor(n_f * ratio / 2)`` (``n_f = n//2 + 1``),
   the cutoff of the authors' code, or a cutoff bin given directly.
2. :func:`filtered_downsample`, :func:`naive_downsample`, :func:`avgpool_downsample`:
   model-free stride-``s`` downsamplers (filter+stride, slicing, average pooling).
3. :func:`aliasing_leakage`: the fraction of a (linear) downsampler's output energy
   that came from frequencies at or above the new Nyquist limit.
4. :func:`spectral_mix`: per-frequency complex channel mixing, which equals a learned
   circular convolution in time.
5. :func:`fourier_upsample`: exact band-limited (sinc) interpolation to a longer length.
6. :func:`joint_interpolation`: 4 then 5, the post-sampling interpolation of DMANet,
   with the authors' FFT scaling and complex-to-real cast available for comparison.

All functions act on torch tensors along ``dim`` and follow the input's device and
dtype; nothing is allocated on a fixed device. The filters, resamplers and downsamplers also
take NumPy arrays and then return NumPy arrays. Non-finite input to a Fourier operator
(:func:`anti_alias_filter`, :func:`filtered_downsample`, :func:`fourier_upsample`,
:func:`aliasing_leakage`) is a ``ValueError``: the FFT would spread one NaN over the whole
axis. :func:`naive_downsample` and :func:`avgpool_downsample` are local: NaN stays where
it is (slicing) or in its window (pooling).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Literal

import numpy as np
import torch
from torch import Tensor

from icml26.common.argcheck import check_int, check_real

__all__ = [
    "InterpNorm",
    "aliasing_leakage",
    "anti_alias_filter",
    "avgpool_downsample",
    "capacity_ratio",
    "cutoff_bin",
    "filtered_downsample",
    "fourier_upsample",
    "joint_interpolation",
    "naive_downsample",
    "nyquist_bin",
    "spectral_mix",
]

InterpNorm = Literal["exact", "backward"]


def _check_dim(x: Tensor, dim: int, *, name: str = "x", finite: bool = False) -> int:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or a NumPy array, got {type(x).__name__}")
    if x.is_complex() or not x.is_floating_point():
        raise TypeError(f"{name} must be a real floating tensor, got dtype {x.dtype}; cast with .float() or .double()")
    dim = check_int(dim, "dim")
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {x.ndim} dimension(s)")
    if x.shape[dim] == 0:
        raise ValueError(f"{name} is empty along dim={dim}")
    if finite and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf; the Fourier transform would spread it over the whole axis")
    return dim % x.ndim


def _numpy_in_out(fn):
    """Let ``fn(x, ...)`` take a NumPy array (as a CPU tensor) and return a NumPy array for it."""

    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        if isinstance(x, np.ndarray):
            return fn(torch.from_numpy(x), *args, **kwargs).numpy()
        return fn(x, *args, **kwargs)

    return wrapper


def cutoff_bin(length: int, ratio: float) -> int:
    """The first rFFT bin the anti-aliasing filter removes.

    ``floor(n_f * ratio / 2)`` with ``n_f = length // 2 + 1`` rFFT bins, as in the
    authors' ``apply_antialias_mask``. ``ratio`` is the code's ``ICR`` (rho_l).
    With ``ratio = 2 / s`` the cutoff is the Nyquist bin of a stride-``s`` output.
    """
    check_int(length, "length", low=1)
    check_real(ratio, "ratio", low=0.0, low_open=True)
    n_f = length // 2 + 1
    # c = floor(n_f * rho / 2)
    return min(n_f, int(math.floor(n_f * ratio / 2.0)))


def capacity_ratio(in_channels: int, out_channels: int, kernel_size: int, stride: int) -> float:
    """The authors' rho_l ("ICR", "ESR" in the rebuttal): ``min(C_l / C_{l-1}, k) / s``."""
    for name, value in (("in_channels", in_channels), ("out_channels", out_channels),
                        ("kernel_size", kernel_size), ("stride", stride)):
        check_int(value, name, low=1)
    # rho_l = min(C_l / C_{l-1}, k) / s
    return min(out_channels / in_channels, float(kernel_size)) / stride


def nyquist_bin(length: int, stride: int) -> int:
    """First rFFT bin of a length-``length`` signal at or above the Nyquist limit of ``x[::stride]``.

    ``x[::s]`` has ``m = ceil(length / s)`` samples; bin ``k`` of ``x`` lands on
    ``k * s / length`` cycles per output sample, which reaches 1/2 at ``k = m / 2``.
    """
    check_int(length, "length", low=1)
    check_int(stride, "stride", low=1)
    return math.ceil(math.ceil(length / stride) / 2)


@_numpy_in_out
def anti_alias_filter(
    x: Tensor,
    ratio: float | None = None,
    dim: int = -1,
    *,
    cutoff: int | None = None,
) -> Tensor:
    """Ideal low-pass: zero every rFFT bin at or above the cutoff, keep the rest exactly.

    Args:
        x: real tensor (or NumPy array), any shape; filtered along ``dim`` (length ``n``).
            NaN or inf is a ``ValueError``.
        ratio: rho, giving the cutoff ``floor((n//2 + 1) * rho / 2)`` (:func:`cutoff_bin`).
        dim: the axis to filter.
        cutoff: the first removed bin, set directly (``0..n//2+1``); exclusive with ``ratio``.

    Returns:
        A tensor of ``x``'s shape, dtype and device (a NumPy array for NumPy input).
    """
    dim = _check_dim(x, dim, finite=True)
    n = x.shape[dim]
    if (ratio is None) == (cutoff is None):
        raise ValueError("give exactly one of ratio (rho, the authors' formula) or cutoff (a bin index)")
    n_f = n // 2 + 1
    c = cutoff_bin(n, ratio) if ratio is not None else check_int(cutoff, "cutoff")
    if not 0 <= c <= n_f:
        raise ValueError(f"cutoff={c} must lie in 0..{n_f} (the rFFT of length {n} has {n_f} bins)")
    return _low_pass(x, c, dim)


@functools.lru_cache(maxsize=256)
def _keep_mask(n_f: int, c: int, device: torch.device, ndim: int, dim: int) -> Tensor:
    """The 0/1 mask ``j < c`` over ``n_f`` rFFT bins, shaped to broadcast along ``dim`` of an ``ndim``-d
    tensor. Cached: a network's layers ask for the same few masks on every forward pass."""
    shape = [1] * ndim
    shape[dim] = n_f
    with torch.inference_mode(False):  # a normal tensor even when first asked for during evaluation
        return (torch.arange(n_f, device=device) < c).view(shape)


def _low_pass(x: Tensor, c: int, dim: int) -> Tensor:
    """The filter of :func:`anti_alias_filter` without the argument checks (for layers inside a network)."""
    n = x.shape[dim]
    dim = dim % x.ndim
    spec = torch.fft.rfft(x, dim=dim)
    # F_j <- 0 for j >= c  (everything below c passes untouched)
    return torch.fft.irfft(spec * _keep_mask(n // 2 + 1, c, x.device, x.ndim, dim), n=n, dim=dim)


@_numpy_in_out
def naive_downsample(x: Tensor, stride: int, dim: int = -1) -> Tensor:
    """Keep every ``stride``-th sample (``x[..., ::stride]``): folds everything above the new Nyquist.

    NaN stays where it is (this is slicing).
    """
    dim = _check_dim(x, dim)
    check_int(stride, "stride", low=1)
    index = torch.arange(0, x.shape[dim], stride, device=x.device)
    return x.index_select(dim, index)


@_numpy_in_out
def avgpool_downsample(x: Tensor, stride: int, dim: int = -1) -> Tensor:
    """Mean over non-overlapping windows of ``stride`` samples (TimeMixer's ``AvgPool1d``).

    A trailing partial window is dropped, as ``nn.AvgPool1d`` does. NaN makes its own
    window's mean NaN and no other.
    """
    dim = _check_dim(x, dim)
    check_int(stride, "stride", low=1)
    n = x.shape[dim]
    m = n // stride
    if m == 0:
        raise ValueError(f"length {n} is shorter than stride={stride}")
    moved = x.movedim(dim, -1)[..., : m * stride]
    pooled = moved.reshape(*moved.shape[:-1], m, stride).mean(-1)
    return pooled.movedim(-1, dim)


@_numpy_in_out
def filtered_downsample(
    x: Tensor,
    stride: int,
    dim: int = -1,
    *,
    ratio: float | None = None,
    cutoff: int | None = None,
) -> Tensor:
    """Anti-aliasing low-pass, then keep every ``stride``-th sample.

    By default the cutoff is the new Nyquist bin (:func:`nyquist_bin`), the mildest
    filter that removes all aliasing; ``ratio`` (the authors' rho) or ``cutoff`` set it
    otherwise. NaN or inf in ``x`` is a ``ValueError``.
    """
    dim = _check_dim(x, dim, finite=True)
    check_int(stride, "stride", low=1)
    if ratio is None and cutoff is None:
        cutoff = nyquist_bin(x.shape[dim], stride)
    return naive_downsample(anti_alias_filter(x, ratio, dim, cutoff=cutoff), stride, dim)


def aliasing_leakage(
    signal: Tensor,
    downsample: Callable[[Tensor], Tensor],
    dim: int = -1,
    *,
    stride: float | None = None,
) -> float:
    """Fraction of a downsampled signal's energy that came from above the new Nyquist limit.

    With ``x_hi`` the part of ``signal`` at rFFT bins ``>= nyquist`` (the new
    Nyquist bin, ``ceil(m / 2)`` for an output of ``m`` samples), returns
    ``||D(x_hi)||^2 / ||D(x)||^2`` summed over all other axes. This is the share of
    the output the folded frequencies account for, and it is exact for a *linear*
    ``downsample`` ``D`` (slicing, pooling, filter+stride, a strided convolution).

    Args:
        signal: real tensor, time along ``dim``.
        downsample: the operator, ``(…, n, …) -> (…, m, …)`` along ``dim``.
        dim: the time axis.
        stride: the total downsampling factor; inferred as ``n / m`` when omitted.

    A NumPy ``signal`` is converted to a tensor (``downsample`` then receives tensors).
    NaN or inf in ``signal`` is a ``ValueError``.
    """
    if isinstance(signal, np.ndarray):
        signal = torch.from_numpy(signal)
    dim = _check_dim(signal, dim, name="signal", finite=True)
    if not callable(downsample):
        raise TypeError(f"downsample must be a callable tensor -> tensor, got {type(downsample).__name__}")
    if stride is not None:
        check_real(stride, "stride", low=1.0)
    n = signal.shape[dim]
    out = downsample(signal)
    if not isinstance(out, Tensor) or out.ndim != signal.ndim:
        raise ValueError(f"downsample must return a tensor with the signal's {signal.ndim} dimensions")
    m = out.shape[dim]
    if m < 1 or m > n:
        raise ValueError(f"downsample returned {m} samples from {n}; it must shorten the axis dim={dim}")
    factor = n / m if stride is None else float(stride)
    # the new Nyquist limit sits at bin n / (2 s) of the input
    nyq = min(n // 2 + 1, math.ceil(n / (2.0 * factor) - 1e-9))
    high = signal - anti_alias_filter(signal, None, dim, cutoff=nyq)  # bins >= nyq
    total = float(out.double().pow(2).sum())
    if total == 0.0:
        raise ValueError("the downsampled signal has zero energy; leakage is undefined")
    folded = float(downsample(high).double().pow(2).sum())
    # leakage = ||D(x_hi)||^2 / ||D(x)||^2
    return folded / total


def spectral_mix(h_freq: Tensor, w_freq: Tensor) -> Tensor:
    """Per-frequency complex channel mixing ``G[b, o, f] = sum_c H[b, c, f] W[o, c, f]``.

    With ``H = rfft(h)`` and ``W = rfft(w)`` (both unnormalised), ``irfft(G)`` is the
    circular convolution ``sum_c h_c (*) w_{o, c}`` in time.

    Args:
        h_freq: ``(batch, c_in, n_freq)`` complex spectrum of the features.
        w_freq: ``(c_out, c_in, n_freq)`` complex spectrum of the weights.
    """
    if not isinstance(h_freq, Tensor) or not isinstance(w_freq, Tensor):
        raise TypeError("h_freq and w_freq must be torch.Tensors (complex spectra from torch.fft.rfft)")
    if h_freq.ndim != 3 or w_freq.ndim != 3:
        raise ValueError(f"h_freq must be (batch, c_in, n_freq) and w_freq (c_out, c_in, n_freq); got "
                         f"{tuple(h_freq.shape)} and {tuple(w_freq.shape)}")
    if h_freq.shape[-2:] != w_freq.shape[-2:]:
        raise ValueError(
            f"feature spectrum (…, {h_freq.shape[-2]}, {h_freq.shape[-1]}) and weight spectrum "
            f"(…, {w_freq.shape[-2]}, {w_freq.shape[-1]}) need the same (channels, bins)"
        )
    # G[b,o,f] = sum_c H[b,c,f] * W[o,c,f]
    return torch.einsum("bcf,ocf->bof", h_freq, w_freq)


def _pad_spectrum(spec: Tensor, n_out_bins: int) -> Tensor:
    pad = n_out_bins - spec.shape[-1]
    if pad < 0:
        raise ValueError(f"cannot pad a spectrum of {spec.shape[-1]} bins to {n_out_bins}")
    if pad == 0:
        return spec
    return torch.cat([spec, spec.new_zeros(*spec.shape[:-1], pad)], dim=-1)


def _split_nyquist(spec: Tensor, n: int, length: int) -> Tensor:
    """Halve the last rFFT bin of an even-length-``n`` signal before padding it to ``length > n``.

    The real Nyquist bin ``X[n/2]`` stands for both ``e^{+i pi t}`` and ``e^{-i pi t}``; on the
    longer grid they are distinct frequencies, each carrying half of it.
    """
    if n % 2 or length <= n:
        return spec
    return spec * _nyquist_halver(spec.shape[-1], spec.real.dtype, spec.device)


@functools.lru_cache(maxsize=64)
def _nyquist_halver(n_bins: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``[1, …, 1, 0.5]`` over ``n_bins`` bins (cached: every forward pass of a network multiplies by it)."""
    with torch.inference_mode(False):  # autograd saves it for backward; an inference tensor would be refused
        half = torch.ones(n_bins, dtype=dtype, device=device)
        half[-1] = 0.5
    return half


@_numpy_in_out
def fourier_upsample(x: Tensor, length: int, dim: int = -1) -> Tensor:
    """Exact band-limited (periodic sinc) interpolation of ``x`` to ``length`` samples.

    Zero-pads the rFFT, splitting the Nyquist bin of an even-length input into its two
    halves, and rescales by ``length / n`` so that the samples at ``t * length / n`` are
    kept exactly. Agrees with ``scipy.signal.resample`` for ``length >= n``.

    Args:
        x: real tensor, time along ``dim`` (``n`` samples).
        length: output length, ``>= n``.
        dim: the time axis.

    NaN or inf in ``x`` is a ``ValueError``; NumPy in, NumPy out.
    """
    dim = _check_dim(x, dim, finite=True)
    check_int(length, "length", low=1)
    n = x.shape[dim]
    if length < n:
        raise ValueError(f"length={length} is shorter than the input ({n}); fourier_upsample only lengthens")
    spec = _split_nyquist(torch.fft.rfft(x.movedim(dim, -1)), n, length)
    spec = _pad_spectrum(spec, length // 2 + 1)
    # x_up = (L / n) * irfft_L(pad(rfft_n(x)))
    out = torch.fft.irfft(spec, n=length) * (length / n)
    return out.movedim(-1, dim)


def joint_interpolation(
    h: Tensor,
    weight: Tensor,
    length: int,
    *,
    norm: InterpNorm = "exact",
    legacy_real_cast: bool = False,
) -> Tensor:
    """DMANet's post-sampling interpolation: learned spectral mixing, then upsampling.

    Args:
        h: ``(batch, c_in, m)`` coarse features of one scale.
        weight: ``(c_out, c_in, m)`` learned real filters ``W_l``.
        length: the full length ``D`` to return to.
        norm: ``"exact"`` gives ``fourier_upsample(sum_c h_c (*) W_{o,c}, D)`` (circular
            convolution, then exact interpolation). ``"backward"`` is the authors'
            scaling: ``irfft_D(pad(rfft(h) * rfft_ortho(W)))``, which equals the exact
            result times ``sqrt(m) / D`` apart from the Nyquist bin, which it does not
            split.
        legacy_real_cast: keep only the real part of the mixed spectrum, as the
            pre-release code does by writing it into a real buffer (each output then
            becomes time-symmetric).

    Returns:
        ``(batch, c_out, length)``. NaN propagates (this runs inside the network; the
        network's input is checked).
    """
    if not isinstance(h, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("h and weight must be torch.Tensors")
    check_int(length, "length", low=1)
    if h.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"h must be (batch, c_in, m) and weight (c_out, c_in, m); got {tuple(h.shape)}, {tuple(weight.shape)}")
    m = h.shape[-1]
    if weight.shape[1:] != h.shape[1:]:
        raise ValueError(f"weight {tuple(weight.shape)} does not match features {tuple(h.shape)} in (c_in, m)")
    if length < m:
        raise ValueError(f"length={length} must be at least the coarse length {m}")
    if norm == "exact":
        mixed = _split_nyquist(spectral_mix(torch.fft.rfft(h), torch.fft.rfft(weight)), m, length)
        gain = length / m
    elif norm == "backward":
        mixed = spectral_mix(torch.fft.rfft(h), torch.fft.rfft(weight, norm="ortho"))
        gain = 1.0
    else:
        raise ValueError(f"norm={norm!r} must be 'exact' or 'backward'")
    if legacy_real_cast:
        # the pre-release code writes the complex spectrum into a real tensor
        mixed = torch.complex(mixed.real, torch.zeros_like(mixed.real))
    out = torch.fft.irfft(_pad_spectrum(mixed, length // 2 + 1), n=length)
    return out * gain if gain != 1.0 else out
