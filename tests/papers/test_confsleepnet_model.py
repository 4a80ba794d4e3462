"""ConfSleepNet's EDL loss and model: the KL term against ``torch.distributions.kl_divergence``, a
hand-computed EDL loss, model shapes, non-negative evidence and gradients, joint training against
training each view alone, and config validation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.papers.confsleepnet import (
    ConfSleepNet,
    ViewSpec,
    aggregate,
    default_views,
    edl_loss,
    fit_confsleepnet,
    kl_to_uniform_dirichlet,
    normalize_recordings,
    synthetic_psg,
)
from tests.papers._confsleepnet_helpers import DT, RULES, random_opinion


# ---------------------------------------------------------------------------
# EDL loss
# ---------------------------------------------------------------------------
def test_kl_term_matches_torch_distributions():
    gen = torch.Generator().manual_seed(10)
    alpha = 1 + 20 * torch.rand(40, 5, generator=gen, dtype=DT) ** 2
    ref = torch.distributions.kl_divergence(torch.distributions.Dirichlet(alpha),
                                            torch.distributions.Dirichlet(torch.ones(5, dtype=DT)))
    torch.testing.assert_close(kl_to_uniform_dirichlet(alpha), ref)
    assert torch.equal(kl_to_uniform_dirichlet(torch.ones(3, 5, dtype=DT)), torch.zeros(3, dtype=DT))


def test_edl_loss_by_hand_and_kl_zero_without_wrong_evidence():
    # K = 2, e = [1, 0], y = 0: alpha = [2, 1], S = 3, p = [2/3, 1/3]
    # (y - p)^2 = 2/9, p(1-p)/(S+1) = 1/9, KL(alpha~ = [1, 1]) = 0: loss = 1/3 for every lambda
    e, y = torch.tensor([[1.0, 0.0]], dtype=DT), torch.tensor([0])
    for epoch in (0, 5, 50):
        assert math.isclose(float(edl_loss(e, y, epoch)), 1 / 3, rel_tol=1e-12)
    # with wrong-class evidence the KL term enters, scaled by lambda_t = min(1, epoch / 10)
    e2 = torch.tensor([[1.0, 2.0]], dtype=DT)
    kl = float(kl_to_uniform_dirichlet(torch.tensor([[1.0, 3.0]], dtype=DT)))
    base = float(edl_loss(e2, y, 0))
    assert math.isclose(float(edl_loss(e2, y, 5)) - base, 0.5 * kl, rel_tol=1e-12)
    assert math.isclose(float(edl_loss(e2, y, 30)) - base, kl, rel_tol=1e-12)
    one_hot = torch.nn.functional.one_hot(y, 2).to(DT)
    assert float(edl_loss(e2, one_hot, 7)) == float(edl_loss(e2, y, 7))


def test_edl_loss_decreases_as_true_class_evidence_grows():
    target = torch.tensor([2])
    values = [float(edl_loss(torch.tensor([[0.5, 1.0, e, 0.2, 0.3]], dtype=DT), target, 20))
              for e in (0.0, 1.0, 5.0, 20.0, 100.0)]
    assert all(a > b for a, b in zip(values, values[1:]))


# ---------------------------------------------------------------------------
# Model and training
# ---------------------------------------------------------------------------
def test_model_shapes_nonnegative_evidence_and_gradients():
    model = ConfSleepNet(sampling_rate=50.0, width=4)
    x = torch.randn(6, 3, 1500)
    evidence = model.evidence(x)
    assert {k: tuple(v.shape) for k, v in evidence.items()} == {"eeg": (6, 5), "eog": (6, 3), "emg": (6, 3),
                                                                "fused": (6, 5)}
    assert all(bool((v >= 0).all()) for v in evidence.values())
    opinions = model.opinions(evidence=evidence)
    assert all(o.num_classes == 5 and o.is_valid() for o in opinions.values())
    # lifted EOG keeps the total evidence, so the same uncertainty K/S ... over 5 + sum e
    torch.testing.assert_close(opinions["eog"].strength, evidence["eog"].sum(-1) + 5)
    fused = model(x)
    assert fused.belief.shape == (6, 5) and fused.is_valid()
    loss = sum(edl_loss(evidence[v.name], torch.as_tensor(v.label_map)[torch.arange(6) % 5], 3) for v in model.views)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_joint_training_equals_training_each_view_alone():
    """Two code paths, one answer: the summed-loss loop trains every view as if alone."""
    data = synthetic_psg(2, 40, rng=np.random.default_rng(17), sampling_rate=50.0)
    x = normalize_recordings(data.signals).reshape(-1, 3, 1500)
    y = data.stages.reshape(-1)
    views = default_views()
    kwargs = dict(epochs=2, batch_size=32, lr=1e-2)
    torch.manual_seed(0)
    joint = ConfSleepNet(views, sampling_rate=50.0, width=4, dropout=0.0)
    init = {k: v.clone() for k, v in joint.state_dict().items()}
    fit_confsleepnet(joint, x, y, generator=torch.Generator().manual_seed(1), **kwargs)
    alone = ConfSleepNet(views[1:2], sampling_rate=50.0, width=4, dropout=0.0)  # the EOG view only
    alone.load_state_dict({k: v for k, v in init.items() if k.startswith("nets.eog.")})
    fit_confsleepnet(alone, x, y, generator=torch.Generator().manual_seed(1), **kwargs)
    for k, v in alone.state_dict().items():
        torch.testing.assert_close(v, joint.state_dict()[k], rtol=1e-5, atol=1e-6)


def test_view_spec_validation():
    with pytest.raises(ValueError, match="channels"):
        ViewSpec("eeg", ())
    with pytest.raises(ValueError, match="unique names"):
        ConfSleepNet([ViewSpec.five_class("a", (0,)), ViewSpec.hybrid("a", (1,))])
    assert ViewSpec.hybrid("eog", (1,)).num_categories == 3


def test_experiment_config_validation():
    from icml26.papers.confsleepnet.experiment import Config

    with pytest.raises(ValueError, match="include 0"):
        Config(corruption_fractions=(0.2, 0.4))
    with pytest.raises(ValueError, match="corruption_modes"):
        Config(corruption_modes=("drift",))
    with pytest.raises(ValueError, match="sampling_rate"):
        Config(sampling_rate=20.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fusion_and_model_run_on_cuda():
    gen = torch.Generator().manual_seed(18)
    views = [random_opinion(gen).to("cuda") for _ in range(4)]
    for rule in RULES:
        fused = aggregate(views, rule=rule)
        assert fused.belief.device.type == "cuda" and fused.is_valid(atol=1e-10)
    model = ConfSleepNet(sampling_rate=50.0, width=4).to("cuda")
    assert model(torch.randn(4, 3, 1500, device="cuda")).uncertainty.device.type == "cuda"
