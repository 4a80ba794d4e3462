"""InstEmb's losses in closed form: InfoNCE by hand and against cross-entropy, the MSE and KL distillation
terms (KL against scipy), and DAAP's unit norm with EOS at zero weight.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.papers.instemb import (
    daap_pool,
    distill_loss,
    info_nce,
)


pytestmark = pytest.mark.usefixtures("one_thread")


# ----------------------------------------------------------------------------- info_nce
def test_info_nce_two_by_two_closed_form():
    a, b, tau = 0.8, 0.6, 0.05
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    k = torch.tensor([[a, b], [b, a]], dtype=torch.float64)  # unit rows: cos(q_i, k_i) = a, cos(q_i, k_j) = b
    want = -math.log(math.exp(a / tau) / (math.exp(a / tau) + math.exp(b / tau)))
    assert info_nce(q, k, tau).item() == pytest.approx(want, rel=1e-6)


def test_info_nce_all_equal_similarities_give_log_batch():
    q = torch.ones(7, 3)
    assert info_nce(q, q.clone(), 0.1).item() == pytest.approx(math.log(7), rel=1e-6)


def test_info_nce_agrees_with_cross_entropy_on_cosines():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(9, 5, generator=g), torch.randn(9, 5, generator=g)
    cos = torch.tensor([[float(F.cosine_similarity(q[i], k[j], dim=0)) for j in range(9)] for i in range(9)])
    want = F.cross_entropy(cos / 0.05, torch.arange(9))
    assert info_nce(q, k, 0.05).item() == pytest.approx(want.item(), rel=1e-5)


# ----------------------------------------------------------------------------- distillation
def test_distill_mse_zero_iff_normalised_means_match():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(3, 5, 8, generator=g)
    s = t.mean(1, keepdim=True).repeat(1, 4, 1) * 2.5  # K = 4 states whose mean points along the teacher's
    assert distill_loss(s, t).item() == pytest.approx(0.0, abs=1e-10)
    other = torch.randn(3, 4, 8, generator=g)
    assert distill_loss(other, t).item() > 0.1
    # the closed form: 2 - 2 cos of the means
    cos = F.cosine_similarity(other.mean(1), t.mean(1), dim=-1)
    assert distill_loss(other, t).item() == pytest.approx((2 - 2 * cos).mean().item(), rel=1e-5)
    # a position-wise term is zero only when positions match too
    assert distill_loss(s, t, positionwise=1.0).item() > 0.01
    assert distill_loss(t[:, :4], t[:, :4], positionwise=1.0).item() == pytest.approx(0.0, abs=1e-10)


def test_distill_mse_ignores_masked_output_positions():
    g = torch.Generator().manual_seed(1)
    t = torch.randn(2, 3, 6, generator=g)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    padded = t.clone()
    padded[0, 2] = 1e3
    s = torch.randn(2, 4, 6, generator=g)
    assert distill_loss(s, padded, teacher_mask=mask).item() == pytest.approx(
        distill_loss(s, t, teacher_mask=mask).item(), rel=1e-6)
    want0 = 2 - 2 * F.cosine_similarity(s[0].mean(0), t[0, :2].mean(0), dim=0)
    want1 = 2 - 2 * F.cosine_similarity(s[1].mean(0), t[1].mean(0), dim=0)
    assert distill_loss(s, t, teacher_mask=mask).item() == pytest.approx(((want0 + want1) / 2).item(), rel=1e-5)


def test_distill_kl_zero_iff_matched_and_equals_scipy():
    from scipy.stats import entropy

    g = torch.Generator().manual_seed(2)
    t = torch.randn(2, 3, 11, generator=g)
    assert distill_loss(t.clone(), t, "kl").item() == pytest.approx(0.0, abs=1e-7)
    s = torch.randn(2, 4, 11, generator=g)  # K = 4 > L = 3: only positions 0..2 compare
    want = np.mean([entropy(F.softmax(t[b, k], -1).numpy(), F.softmax(s[b, k], -1).numpy())
                    for b in range(2) for k in range(3)])
    assert distill_loss(s, t, "kl").item() == pytest.approx(want, rel=1e-5)


# ----------------------------------------------------------------------------- DAAP
def test_daap_unit_norm_and_eos_at_zero_weight():
    g = torch.Generator().manual_seed(0)
    h_eos, h_la = torch.randn(5, 8, generator=g) * 3, torch.randn(5, 4, 8, generator=g)
    for mode in ("sum", "concat"):
        e = daap_pool(h_eos, h_la, 0.7, mode)
        assert torch.allclose(e.norm(dim=-1), torch.ones(5), atol=1e-6)
    assert torch.allclose(daap_pool(h_eos, h_la, 0.0), F.normalize(h_eos, dim=-1), atol=1e-7)
    cat0 = daap_pool(h_eos, h_la, 0.0, "concat")
    assert torch.allclose(cat0[:, :8], F.normalize(h_eos, dim=-1), atol=1e-7) and cat0[:, 8:].abs().max() == 0
    # hand computation of one row, w = 1
    a, b = F.normalize(h_eos[0], dim=0), F.normalize(h_la[0].mean(0), dim=0)
    assert torch.allclose(daap_pool(h_eos, h_la)[0], (a + b) / (a + b).norm(), atol=1e-6)
