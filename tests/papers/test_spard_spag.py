"""SPARD's SafetyProjection and SPAG on models: the closed-form projection equals the safety step, the
reference AdamW step, tau and the scheduler, SPAG against SFT drift, PEFT-wrapped causal LMs, mean
pooling, and SPAG under two torch.distributed ranks equal to one process on the union batch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26.papers.spard import (
    SafetyProjection,
    default_loss,
    embed,
    safety_step,
    sft_finetune,
    spag_finetune,
)
from tests.papers._spard_helpers import _linear_task
from tests.papers._spard_helpers import _one  # noqa: F401 (fixtures)


# -- SafetyProjection and SPAG on models ------------------------------------------------------

def test_closed_form_projection_equals_safety_step_on_the_flat_gradient():
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    safety = [(torch.randn(8, 5), torch.full((8,), 2))]
    proj = SafetyProjection(model, safety, tau=0.05, tol=0.0, trust_radius=math.inf)
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    loss = default_loss(model, safety[0])
    grad = torch.cat([g.flatten() for g in torch.autograd.grad(loss, list(model.parameters()))])
    expected = safety_step(float(loss.detach()), grad, tau=0.05, tol=0.0, trust_radius=math.inf)
    step = proj.step()
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert step.projected and step.loss == pytest.approx(float(loss.detach()))
    torch.testing.assert_close(after - before, expected, rtol=1e-5, atol=1e-6)
    assert step.step_norm == pytest.approx(float(torch.linalg.vector_norm(expected)), rel=1e-5)


def test_projection_is_a_no_op_below_tau_plus_tol():
    model = nn.Linear(5, 3)
    safety = [(torch.randn(8, 5), torch.full((8,), 2))]
    before = [p.detach().clone() for p in model.parameters()]
    step = SafetyProjection(model, safety, tau=100.0).step()
    assert not step.projected and step.step_norm == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_reference_adamw_step_is_sign_like_whatever_alpha():
    """Defect 1 of the authors' code: AdamW's first step is −lr·sign(g) per coordinate, so the α scaling is lost."""
    torch.manual_seed(1)
    for tau in (0.0, 1.5):  # two very different α_p = (ℓ − τ)/‖g_p‖
        model = nn.Linear(5, 3)
        safety = [(torch.randn(8, 5), torch.full((8,), 2))]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0, eps=1e-12)
        proj = SafetyProjection(model, safety, tau=tau, tol=0.0, trust_radius=1.0, mode="reference_adamw")
        grads = torch.autograd.grad(default_loss(model, safety[0]), list(model.parameters()))
        before = [p.detach().clone() for p in model.parameters()]
        assert proj.step(opt).projected
        for p, b, g in zip(model.parameters(), before, grads):
            torch.testing.assert_close(p.detach() - b, -1e-2 * torch.sign(g), rtol=1e-4, atol=1e-7)


def test_tau_auto_uses_the_model_loss_at_construction():
    model = nn.Linear(5, 3)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.copy_(torch.tensor([0.0, 0.0, math.log(2.0)]))  # p(class 2) = 2/4
    safety = [(torch.randn(4, 5), torch.full((4,), 2))]
    proj = SafetyProjection(model, safety, tau="auto")
    assert proj.base_loss == pytest.approx(math.log(2.0))
    assert proj.tau == pytest.approx(1.5 * math.log(2.0))
    assert SafetyProjection(model, safety, tau="auto", tau_floor=5.0).tau == 5.0


def test_tau_base_is_the_base_models_own_safety_loss():
    model = nn.Linear(5, 3)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.copy_(torch.tensor([0.0, 0.0, math.log(2.0)]))  # p(class 2) = 2/4: loss log 2
    safety = [(torch.randn(4, 5), torch.full((4,), 2))]
    proj = SafetyProjection(model, safety, tau="base", tau_floor=5.0)  # the floor belongs to 'auto' only
    assert proj.base_loss == pytest.approx(math.log(2.0)) and proj.tau == pytest.approx(math.log(2.0))
    assert SafetyProjection(model, safety, tau="auto", tau_floor=0.0, tau_factor=1.0).tau == pytest.approx(proj.tau)
    with pytest.raises(ValueError, match="tau"):
        SafetyProjection(model, safety, tau="pretrained")
    with pytest.raises(ValueError, match="tau_factor"):
        SafetyProjection(model, safety, tau="auto", tau_factor=0.0)


def _drifting_run(tau):
    """SPAG on a task that pulls the safety inputs to class 0; ``tau`` = SafetyProjection's."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 5, generator=g)
    task = [(x[i:i + 16], torch.zeros(16, dtype=torch.long)) for i in range(0, 64, 16)]
    safety = [(x[:16], torch.full((16,), 2))]
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    projection = SafetyProjection(model, safety, tau=tau, tol=0.1, trust_radius=math.inf)
    return projection, spag_finetune(model, task, safety, steps=12, optimizer=opt, projection=projection,
                                     progress=False)


def test_a_run_without_any_projection_warns_and_tau_base_projects():
    import warnings

    from icml26.papers.spard.training import NoProjectionWarning

    with pytest.warns(NoProjectionWarning, match="no projection in 12 safety steps"):
        projection, history = _drifting_run(tau=50.0)
    assert not any(history.projected) and max(history.safety_loss) < projection.tau
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoProjectionWarning)
        projection, history = _drifting_run(tau="base")
    # τ = the untouched model's loss; the task raises the loss above τ + tol and the projection fires
    assert history.safety_loss[0] > projection.tau and any(history.projected)


def test_scheduler_steps_once_per_utility_safety_pair():
    model = nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    safety = [(torch.randn(4, 5), torch.full((4,), 2))]
    history = spag_finetune(model, _linear_task(), safety, steps=6, optimizer=opt, scheduler=scheduler,
                            projection=SafetyProjection(model, safety, tau=0.0, tol=0.0), progress=False)
    assert scheduler.last_epoch == 6
    np.testing.assert_allclose(history.lr, [0.1 * 0.5**i for i in range(6)])
    assert len(history.safety_loss) == len(history.projected) == 6 and all(history.projected)


def test_spag_keeps_the_safety_loss_below_tau_while_sft_drifts():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 5, generator=g)
    task = [(x[i:i + 16], torch.zeros(16, dtype=torch.long)) for i in range(0, 64, 16)]
    safety = [(x[:16] + 0.05 * torch.randn(16, 5, generator=g), torch.full((16,), 2))]
    results = {}
    for name in ("SFT", "SPAG"):
        torch.manual_seed(0)
        model = nn.Linear(5, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        if name == "SFT":
            sft_finetune(model, task, None, steps=40, optimizer=opt, progress=False)
        else:
            spag_finetune(model, task, safety, steps=40, optimizer=opt, progress=False,
                          projection=SafetyProjection(model, safety, tau=0.3, tol=0.0, trust_radius=math.inf))
        with torch.no_grad():
            results[name] = float(default_loss(model, safety[0]))
    assert results["SFT"] > 1.0  # the task pulls the shared inputs to class 0
    # after the last projection the linearised step lands on τ; the loss is within curvature of it
    assert results["SPAG"] < 0.45


def test_spag_on_a_peft_wrapped_causal_lm_moves_only_the_adapters():
    peft = pytest.importorskip("peft")
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    base = build_model(TinyLMConfig(arch="llama", vocab_size=64, d_model=32, n_layers=1, n_heads=2, context=16),
                       seed=0)
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                      lora_dropout=0.0, init_lora_weights=False))
    g = torch.Generator().manual_seed(0)

    def batch(n):
        ids = torch.randint(1, 64, (n, 12), generator=g)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}

    task, safety = [batch(4) for _ in range(3)], [batch(2) for _ in range(2)]
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    adapters = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    proj = SafetyProjection(model, safety, tau=0.0, tol=0.0, trust_radius=0.5)
    history = spag_finetune(model, task, safety, steps=4, optimizer=opt, projection=proj, progress=False)
    assert all(history.projected) and all(0 < s <= 0.5 + 1e-6 for s in history.step_norm)
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if n in frozen)
    assert any(not torch.equal(p, adapters[n]) for n, p in model.named_parameters() if n in adapters)
    emb = embed(model, {"input_ids": task[0]["input_ids"], "attention_mask": task[0]["attention_mask"]})
    assert emb.shape == (4, 32) and model.training  # spag_finetune restored the mode; embed restores it too


def test_embed_mean_pools_the_last_hidden_state_over_the_mask():
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    model = build_model(TinyLMConfig(arch="gpt2", vocab_size=32, d_model=16, n_layers=1, n_heads=2, context=8))
    ids = torch.randint(0, 32, (2, 6), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    emb = embed(model, {"input_ids": ids, "attention_mask": mask})
    with torch.no_grad():
        h = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
    torch.testing.assert_close(emb[0], h[0].mean(0))
    torch.testing.assert_close(emb[1], h[1, :3].mean(0))
    # a plain classifier: the input of its last Linear (the penultimate features)
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x = torch.randn(5, 4)
    torch.testing.assert_close(embed(mlp, x), mlp[:2](x).detach())


# -- torch.distributed ------------------------------------------------------------------------

_STEPS, _HALF = 5, 8


def _dist_data():
    g = torch.Generator().manual_seed(7)
    task = [(torch.randn(2 * _HALF, 6, generator=g), torch.randint(0, 3, (2 * _HALF,), generator=g))
            for _ in range(_STEPS)]
    safety = [(torch.randn(2 * _HALF, 6, generator=g) + 1.0, torch.full((2 * _HALF,), 2)) for _ in range(_STEPS)]
    return task, safety


def _dist_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def _spag_run(model, task, safety, mode):
    opt = torch.optim.AdamW(model.parameters(), lr=5e-2)
    proj = SafetyProjection(model, safety, tau=0.6, tol=0.0, trust_radius=0.3, mode=mode)
    history = spag_finetune(model, task, safety, steps=_STEPS, optimizer=opt, projection=proj, progress=False)
    return history.safety_loss, history.projected


_DIST_CASES = (("closed_form", False), ("reference_adamw", False), ("closed_form", True))  # (mode, FSDP2?)


def _spag_ranks(rank, world):
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel

    from icml26.common.distributed import gather_full

    task, safety = _dist_data()
    part = slice(rank * _HALF, (rank + 1) * _HALF)
    task = [(x[part], y[part]) for x, y in task]
    safety = [(x[part], y[part]) for x, y in safety]
    out = []
    for mode, shard in _DIST_CASES:
        model = _dist_model()
        if shard:
            fully_shard(model)
        losses, projected = _spag_run(model if shard else DistributedDataParallel(model), task, safety, mode)
        out.append((losses, projected, {k: gather_full(v).detach().clone() for k, v in model.state_dict().items()}))
    return out


@pytest.mark.dist
def test_spag_under_two_ranks_equals_one_process_on_the_union_batch():
    """DDP (closed form and the authors' AdamW update) and FSDP2 (closed form): same decisions, losses
    and weights as one process on the union of the ranks' batches."""
    from tests.distributed_harness import run_ranks

    results = run_ranks(_spag_ranks, 2)
    for i, (mode, shard) in enumerate(_DIST_CASES):
        model = _dist_model()
        ref_losses, ref_projected = _spag_run(model, *_dist_data(), mode)
        assert any(ref_projected) and not all(ref_projected)  # both decisions occur
        for rank_results in results:
            losses, projected, state = rank_results[i]
            assert projected == ref_projected, (mode, shard)  # every rank took the single process's decisions
            np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
            for name, value in model.state_dict().items():
                torch.testing.assert_close(state[name], value, rtol=1e-4, atol=1e-6)
