"""DMANet's fast paths against the plain ones: two code paths, one answer, bit for bit.

The quick reproduction trains 128 small forecasters; the training loop uses foreach Adam,
``index_select`` batches, an unchecked inference-mode validation pass, and the Fourier layers reuse
cached masks. None of these may move a number: each is compared here with the straightforward
code it replaced (per-tensor Adam, ``x[idx]``, ``no_grad`` evaluation, masks built per call).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from icml26.papers.dmanet.baselines import DLinear, PatchTST
from icml26.papers.dmanet.data import aliasing_lorenz, sliding_windows, standardized_splits
from icml26.papers.dmanet.losses import frequency_loss
from icml26.papers.dmanet.model import DMANet
from icml26.papers.dmanet.spectral import _low_pass, _split_nyquist, joint_interpolation
from icml26.papers.dmanet.training import fit_forecaster


@torch.no_grad()
def _plain_errors(model, x, y, batch_size=256):
    model.eval()
    sq, ab, count = 0.0, 0.0, 0
    for start in range(0, x.shape[0], batch_size):
        err = model(x[start: start + batch_size]) - y[start: start + batch_size]
        sq += float(err.double().pow(2).sum())
        ab += float(err.double().abs().sum())
        count += err.numel()
    return sq / count, ab / count


def _plain_fit(model, data, pred_len, *, epochs, batch_size, lr, patience, max_batches, generator):
    """The training loop as first written: per-tensor Adam, ``x[idx]``, ``no_grad`` evaluation."""
    x_tr, y_tr = map(torch.as_tensor, sliding_windows(data.train, data.seq_len, pred_len))
    x_va, y_va = map(torch.as_tensor, sliding_windows(data.val, data.seq_len, pred_len))
    x_te, y_te = map(torch.as_tensor, sliding_windows(data.test, data.seq_len, pred_len))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=False)
    best_val, best_state, stale = float("inf"), None, 0
    for _ in range(epochs):
        model.train()
        order = torch.randperm(x_tr.shape[0], generator=generator)
        n_batches = min((len(order) + batch_size - 1) // batch_size, max_batches)
        for b in range(n_batches):
            idx = order[b * batch_size: (b + 1) * batch_size]
            optimizer.zero_grad(set_to_none=True)
            frequency_loss(model(x_tr[idx]), y_tr[idx]).backward()
            optimizer.step()
        val_mse, _ = _plain_errors(model, x_va, y_va)
        if val_mse < best_val:
            best_val, best_state, stale = val_mse, copy.deepcopy(model.state_dict()), 0
        else:
            stale += 1
            if stale >= patience:
                break
        for group in optimizer.param_groups:
            group["lr"] *= 0.5
    model.load_state_dict(best_state)
    return best_val, *_plain_errors(model, x_te, y_te)


BUILDERS = {
    "dmanet": lambda c: DMANet(48, 16, c, d_model=64, levels=3),
    "dmanet_time": lambda c: DMANet(48, 16, c, d_model=32, levels=2, filter_axis="time"),
    "dlinear": lambda c: DLinear(48, 16, c),
    "patchtst": lambda c: PatchTST(48, 16, c, d_model=16, n_heads=4, n_layers=1, d_ff=32),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fit_forecaster_equals_the_plain_training_loop_bit_for_bit(name):
    data = standardized_splits(aliasing_lorenz(900, rng=np.random.default_rng(1)), 48)
    results = []
    for fast in (True, False):
        torch.manual_seed(3)  # same initial weights and dropout stream for both paths
        model = BUILDERS[name](data.n_channels)
        generator = torch.Generator().manual_seed(4)
        if fast:
            fit = fit_forecaster(model, data, 16, epochs=3, batch_size=16, lr=1e-2, patience=1,
                                 max_batches_per_epoch=6, generator=generator)
            results.append((fit.val_mse, fit.test_mse, fit.test_mae))
        else:
            results.append(_plain_fit(model, data, 16, epochs=3, batch_size=16, lr=1e-2, patience=1,
                                      max_batches=6, generator=generator))
    assert results[0] == results[1]


def test_cached_low_pass_mask_equals_a_fresh_one_and_survives_inference_mode():
    x = torch.randn(4, 3, 40)
    with torch.inference_mode():  # the first request for this mask comes from an evaluation pass
        _low_pass(x, 7, 2)
    spec = torch.fft.rfft(x, dim=-1)
    fresh = torch.fft.irfft(spec * (torch.arange(21) < 7).view(1, 1, 21), n=40, dim=-1)
    h = x.clone().requires_grad_(True)
    out = _low_pass(h, 7, 2)
    out.sum().backward()  # the cached mask is saved for backward: it must be a normal tensor
    assert torch.equal(out.detach(), fresh)
    assert torch.equal(_low_pass(x.transpose(1, 2), 7, 1), fresh.transpose(1, 2))  # along another axis


def test_cached_nyquist_halver_equals_a_fresh_one_and_survives_inference_mode():
    h, w = torch.randn(2, 3, 8), torch.randn(3, 3, 8, requires_grad=True)
    with torch.inference_mode():
        joint_interpolation(h, w.detach(), 32)
    spec = torch.fft.rfft(h)
    half = torch.ones(5)
    half[-1] = 0.5
    assert torch.equal(_split_nyquist(spec, 8, 32), spec * half)
    joint_interpolation(h, w, 32).sum().backward()
    assert w.grad is not None and torch.isfinite(w.grad).all()
