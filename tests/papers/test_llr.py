"""LLR: the power-law fit, the alpha -> rate map, the schedule, the optimizer hooks, Muon."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml26.papers.llr import (
    LayerwiseLR,
    Muon,
    ShuffledMultipliers,
    esd,
    esd_alpha,
    find_layers,
    fit_power_law,
    layer_alphas,
    layerwise_param_groups,
    map_alphas,
    newton_schulz,
    shuffled_layerwise_lr,
    uniform_layerwise_lr,
)
from icml26.papers.llr.analysis import best_rate, mean_final_alpha, min_gap, speedup, steps_to_target


# -- power-law fit -----------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [2.0, 3.0, 4.5])
def test_median_fit_recovers_pareto_exponent(alpha):
    # density ~ x^-alpha on [1, inf): inverse CDF x = (1 - u)^(-1 / (alpha - 1))
    n = 200_000
    u = np.random.default_rng(0).random(n)
    iid = (1.0 - u) ** (-1.0 / (alpha - 1.0))
    assert fit_power_law(iid).alpha == pytest.approx(alpha, rel=0.01)
    # exact mid-quantiles: the estimator's bias is O(1/n)
    quantiles = (1.0 - (np.arange(n) + 0.5) / n) ** (-1.0 / (alpha - 1.0))
    assert fit_power_law(quantiles).alpha == pytest.approx(alpha, rel=1e-4)


def test_median_fit_hand_calculation():
    # lambda = 2^0..2^5: tail from index 6 // 2 = 3, xmin = 8, n = 3,
    # alpha = 1 + 3 / (ln 8 + ln 16 + ln 32 - 3 ln 8) = 1 + 1 / ln 2
    fit = fit_power_law(torch.tensor([32.0, 1.0, 4.0, 2.0, 16.0, 8.0]))
    alpha = 1.0 + 1.0 / math.log(2.0)
    assert fit.alpha == pytest.approx(alpha, rel=1e-12)
    assert (fit.xmin, fit.n_tail) == (8.0, 3)
    # D = max_k |1 - (lambda_k / xmin)^(1 - alpha) - k / n| over the tail 8, 16, 32
    d = max(abs(1 - 2.0 ** (k * (1 - alpha)) - k / 3) for k in range(3))
    assert fit.ks_distance == pytest.approx(d, rel=1e-12)


@pytest.mark.parametrize("method", ["median", "ks", "fix_finger"])
def test_alpha_is_scale_and_transpose_invariant(method):
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(200, 80, generator=g) @ torch.diag(torch.logspace(0, 1, 80))
    base = esd_alpha(weight, method)
    assert esd_alpha(7.5 * weight, method).alpha == pytest.approx(base.alpha, rel=1e-5)
    assert esd_alpha(weight.T, method).alpha == pytest.approx(base.alpha, rel=1e-5)
    assert base.n_tail >= 2 and base.alpha > 1


def test_ks_mode_equals_powerlaw_package():
    powerlaw = pytest.importorskip("powerlaw")
    for seed in range(4):
        g = torch.Generator().manual_seed(seed)
        weight = torch.randn(256, 96, generator=g)
        if seed % 2:
            weight = weight @ torch.diag(torch.logspace(0, 1, 96))
        eigenvalues = esd(weight).numpy()
        ours = fit_power_law(eigenvalues, "ks")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the same candidates: every distinct value but the largest, valid when alpha > 1
            # (powerlaw 2.0 defaults to alpha in (0, 3), which would drop light tails)
            theirs = powerlaw.Fit(eigenvalues, verbose=0, parameter_ranges={"alpha": [1, None]})
        assert ours.alpha == pytest.approx(theirs.alpha, abs=1e-6)
        assert ours.xmin == theirs.xmin
        assert ours.ks_distance == pytest.approx(theirs.D, abs=1e-9)


def test_fix_finger_scans_only_the_window_near_the_histogram_peak():
    g = torch.Generator().manual_seed(3)
    eigenvalues = np.sort(esd(torch.randn(400, 120, generator=g) @ torch.diag(torch.logspace(0, 1.5, 120))).numpy())
    counts, edges = np.histogram(np.log10(eigenvalues), bins=100)
    peak = 10.0 ** edges[np.argmax(counts)]
    finger = fit_power_law(eigenvalues, "fix_finger")
    assert 0.95 * peak <= finger.xmin <= 1.5 * peak
    # brute force over the window: the same winner
    window = [i for i in range(eigenvalues.size - 1) if 0.95 * peak <= eigenvalues[i] <= 1.5 * peak]
    brute = min((fit_power_law(eigenvalues[i:], "median", xmin_pos=eigenvalues.size - i + 1) for i in window),
                key=lambda f: f.ks_distance)
    assert finger.alpha == pytest.approx(brute.alpha, rel=1e-12)
    # the global scan can only do better on D
    assert fit_power_law(eigenvalues, "ks").ks_distance <= finger.ks_distance


def test_conv_kernel_esd_pools_the_kernel_slices():
    g = torch.Generator().manual_seed(0)
    kernel = torch.randn(16, 8, 3, 3, generator=g)
    by_hand = torch.cat([torch.linalg.svdvals(kernel[:, :, i, j] * math.sqrt(0.5)) ** 2
                         for i in range(3) for j in range(3)])
    assert torch.allclose(esd(kernel), torch.sort(by_hand.double()).values, rtol=1e-5)
    assert esd(kernel).numel() == 8 * 9


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="method"):
        fit_power_law(np.arange(1.0, 10.0), "hill")
    with pytest.raises(ValueError, match="too few"):
        fit_power_law(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="rank"):
        fit_power_law(np.zeros(10))
    with pytest.raises(ValueError, match="matrix"):
        esd(torch.ones(5))


# -- alpha -> multiplier map -------------------------------------------------------------------

def test_linear_map_endpoints_monotone_reversed_and_ties():
    alphas = np.array([3.1, 2.2, 5.0, 4.0, 2.9])
    m = map_alphas(alphas, r_min=1.0, r_max=3.0)
    assert m[np.argmin(alphas)] == 1.0 and m[np.argmax(alphas)] == 3.0
    order = np.argsort(alphas)
    assert np.all(np.diff(m[order]) > 0)
    # interior point by hand: 1 + 2 * (4.0 - 2.2) / (5.0 - 2.2)
    assert m[3] == pytest.approx(1 + 2 * 1.8 / 2.8)
    reversed_ = map_alphas(alphas, r_min=1.0, r_max=3.0, alpha_positive=False)
    assert np.allclose(reversed_, 4.0 - m)
    assert np.all(map_alphas(np.full(4, 2.5), r_min=0.5, r_max=3.0) == 0.5)  # ties: r_min
    rank = map_alphas(alphas, r_min=1.0, r_max=3.0, mapping="rank")
    assert np.allclose(rank[order], np.linspace(1.0, 3.0, 5))
    with pytest.raises(ValueError, match="finite"):
        map_alphas(np.array([1.0, np.nan]), r_min=1, r_max=2)


# -- LayerwiseLR on a tiny LLaMA ------------------------------------------------------------------

def _tiny_llama(seed: int = 0):
    from icml26.common.tiny_lm import TinyLMConfig, build_model

    pytest.importorskip("transformers")
    return build_model(TinyLMConfig(arch="llama", vocab_size=64, d_model=64, n_layers=2, n_heads=2, context=16),
                       seed=seed)


def _sgd_step(model, optimizer, scheduler, batch):
    """One LM step with ``scheduler`` setting the rates: the parameters before it and their gradients."""
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits = model(input_ids=batch[:, :-1]).logits
    optimizer.zero_grad()
    nn.functional.cross_entropy(logits.reshape(-1, 64), batch[:, 1:].reshape(-1)).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    optimizer.step()
    scheduler.step()
    return before, grads


def _batches(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 64, (4, 17), generator=g) for _ in range(n)]


def _train(model, optimizer, batches, *, llr=None, scheduler=None):
    for batch in batches:
        logits = model(input_ids=batch[:, :-1]).logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if llr is not None:
            llr.step()


def test_layer_discovery_and_groups_on_llama():
    model = _tiny_llama()
    layers = find_layers(model)
    excluded = sorted(n for n, (_, e) in layers.items() if e)
    assert excluded == ["lm_head", "model.embed_tokens"]
    assert len(layers) - len(excluded) == 2 * 7  # q k v o gate up down per block
    groups = layerwise_param_groups(model, weight_decay=0.1)
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == len({id(p) for p in model.parameters()})  # tied weights once
    assert groups[-1]["name"] == "others" and groups[-1]["weight_decay"] == 0.0  # the RMSNorms


def test_initial_map_sends_extremes_to_r_min_and_r_max_and_embeddings_to_r_max():
    model = _tiny_llama()
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.1)
    llr = LayerwiseLR(model, optimizer, total_steps=100, r_min=1.0, r_max=3.0, ramp_steps=0)
    fits = layer_alphas(model)
    low, high = min(fits, key=lambda n: fits[n].alpha), max(fits, key=lambda n: fits[n].alpha)
    m = llr.multipliers
    assert m[low] == 1.0 and m[high] == 3.0
    assert m["model.embed_tokens"] == 3.0
    names = sorted(fits, key=lambda n: fits[n].alpha)
    assert all(m[a] <= m[b] for a, b in zip(names, names[1:]))
    # the base rate of a group without a layer (norms) is untouched
    assert llr.group_multipliers()[-1] == 1.0


def test_multiplier_applies_inside_step_only():
    model = _tiny_llama()
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.05)
    llr = LayerwiseLR(model, optimizer, total_steps=100, ramp_steps=0)
    batch = _batches(1)[0]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits = model(input_ids=batch[:, :-1]).logits
    nn.functional.cross_entropy(logits.reshape(-1, 64), batch[:, 1:].reshape(-1)).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    optimizer.step()
    # SGD: W <- W - m_l * eta * grad, and param_group["lr"] is the base rate again afterwards
    name = max(llr.multipliers, key=llr.multipliers.get)
    for pname, p in model.named_parameters():
        layer = pname.rsplit(".", 1)[0]
        m = llr.multipliers.get(layer, 1.0)
        assert torch.allclose(p.detach(), before[pname] - m * 0.05 * grads[pname], atol=1e-7), pname
    assert all(g["lr"] == 0.05 for g in optimizer.param_groups)
    assert max(llr.effective_lrs()) == pytest.approx(0.05 * llr.multipliers[name])


def test_ramp_is_linear_from_the_current_multiplier():
    model = _tiny_llama()
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.0)  # weights never move
    llr = LayerwiseLR(model, optimizer, total_steps=1000, every=1000, ramp_steps=4)
    target = {n: llr.history.target[n][0] for n in llr.layers}
    for k in range(7):
        for name in llr.layers:
            # m(t0 + k) = 1 + (target - 1) * min(k, n) / n
            assert llr.multipliers[name] == pytest.approx(1 + (target[name] - 1) * min(k, 4) / 4, rel=1e-12)
        llr.step()


def test_multipliers_frozen_after_the_active_window():
    model = _tiny_llama()
    optimizer = torch.optim.AdamW(layerwise_param_groups(model), lr=3e-2)
    llr = LayerwiseLR(model, optimizer, total_steps=40, active_fraction=0.25, every=3, ramp_steps=2)
    seen = []
    for batch in _batches(40):
        _train(model, optimizer, [batch], llr=llr)
        seen.append(llr.multipliers)
    assert llr.history.steps == [0, 3, 6, 9]  # fits only at t < 0.25 * 40
    assert len({tuple(np.round(list(m.values()), 12)) for m in seen[:12]}) > 1  # it did move
    # seen[i] is the multiplier at step t = i + 1; last fit at t = 9, ramp of 2: frozen from t = 11 on
    assert all(m == seen[10] for m in seen[10:]) and seen[9] != seen[10]


def test_r_min_equal_r_max_equal_one_is_bit_identical_to_uniform():
    batches = _batches(6)

    def run(with_llr: bool, grouped: bool):
        model = _tiny_llama()
        params = layerwise_param_groups(model, weight_decay=0.1) if grouped else [
            {"params": [p for p in model.parameters() if p.ndim >= 2], "weight_decay": 0.1},
            {"params": [p for p in model.parameters() if p.ndim < 2], "weight_decay": 0.0}]
        optimizer = torch.optim.AdamW(params, lr=1e-2, betas=(0.9, 0.95))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 / (1 + s))
        llr = LayerwiseLR(model, optimizer, total_steps=6, r_min=1.0, r_max=1.0, embed_policy="max",
                          every=1, ramp_steps=2, active_fraction=1.0) if with_llr else None
        _train(model, optimizer, batches, llr=llr, scheduler=scheduler)
        return [p.detach() for p in model.parameters()]

    uniform = run(False, grouped=False)
    for a, b in zip(uniform, run(True, grouped=True)):
        assert torch.equal(a, b)


def test_chainable_scheduler_sees_its_own_rates():
    def rates(with_llr: bool):
        model = _tiny_llama()
        optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)  # reads group["lr"] back
        llr = LayerwiseLR(model, optimizer, total_steps=10, ramp_steps=0) if with_llr else None
        _train(model, optimizer, _batches(5), llr=llr, scheduler=scheduler)
        return [g["lr"] for g in optimizer.param_groups]

    assert rates(True) == rates(False) == pytest.approx([0.1 * 0.9**5] * len(rates(False)))


def test_mean_preserving_and_shuffled_variants():
    model = _tiny_llama()
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.1)
    llr = LayerwiseLR(model, optimizer, total_steps=100, ramp_steps=0)
    model_b = _tiny_llama()
    mean = LayerwiseLR(model_b, torch.optim.SGD(layerwise_param_groups(model_b), lr=0.1), total_steps=100,
                       ramp_steps=0, normalize="mean")
    assert np.mean(list(mean.multipliers.values())) == pytest.approx(1.0)
    ratio = {n: mean.multipliers[n] / llr.multipliers[n] for n in llr.layers}
    assert max(ratio.values()) == pytest.approx(min(ratio.values()))  # one common factor

    model_c = _tiny_llama()
    shuffled = shuffled_layerwise_lr(model_c, torch.optim.SGD(layerwise_param_groups(model_c), lr=0.1),
                                     seed=1, total_steps=100, ramp_steps=0)
    hidden = [n for n in llr.layers if "embed" not in n and "head" not in n]
    assert sorted(shuffled.multipliers[n] for n in hidden) == pytest.approx(sorted(llr.multipliers[n] for n in hidden))
    assert [shuffled.multipliers[n] for n in hidden] != [llr.multipliers[n] for n in hidden]
    assert shuffled.multipliers["model.embed_tokens"] == 3.0
    permute = ShuffledMultipliers(seed=5)
    first = permute({"a": 1.0, "b": 2.0, "c": 3.0})
    assert permute({"a": 10.0, "b": 20.0, "c": 30.0}) == {k: 10 * v for k, v in first.items()}  # fixed


def test_layerwise_lr_rejects_mixed_groups_and_bad_arguments():
    model = _tiny_llama()
    with pytest.raises(ValueError, match="layerwise_param_groups"):
        LayerwiseLR(model, torch.optim.AdamW(model.parameters()), total_steps=10)
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.1)
    with pytest.raises(ValueError, match="r_min"):
        LayerwiseLR(model, optimizer, total_steps=10, r_min=2.0, r_max=1.0)
    with pytest.raises(ValueError, match="embed_policy"):
        LayerwiseLR(model, optimizer, total_steps=10, embed_policy="min")


def test_state_dict_round_trip():
    model = _tiny_llama()
    optimizer = torch.optim.AdamW(layerwise_param_groups(model), lr=1e-2)
    llr = LayerwiseLR(model, optimizer, total_steps=20, every=2, ramp_steps=3, active_fraction=0.5)
    _train(model, optimizer, _batches(5), llr=llr)
    other = LayerwiseLR(model, torch.optim.AdamW(layerwise_param_groups(model), lr=1e-2), total_steps=20,
                        every=2, ramp_steps=3, active_fraction=0.5)
    other.load_state_dict(llr.state_dict())
    assert other.multipliers == llr.multipliers and other.step_count == 5
    assert other.history.steps == llr.history.steps


def test_works_on_a_conv_net():
    net = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Flatten(),
                        nn.Linear(64 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(layerwise_param_groups(net, exclude=("7",)), lr=0.1)
    llr = LayerwiseLR(net, optimizer, total_steps=10, ramp_steps=0, exclude=("7",), min_eigs=10)
    # conv 0 has only 3 x 9 = 27 eigenvalues: fitted (min_eigs=10); the head "7" is excluded -> r_max
    assert set(llr.history.alpha) == {"0", "2", "5", "7"}
    assert math.isnan(llr.history.alpha["7"][0]) and llr.multipliers["7"] == 3.0
    assert sorted(llr.multipliers[n] for n in ("0", "2", "5"))[::2] == [1.0, 3.0]


# -- Muon ---------------------------------------------------------------------------------------

def test_newton_schulz_singular_values_band():
    g = torch.Generator().manual_seed(0)
    s = torch.linalg.svdvals(newton_schulz(torch.randn(512, 128, generator=g)))
    assert s.min() >= 0.68 and s.max() <= 1.14
    for shape in [(64, 64), (300, 50), (50, 300), (8, 2, 40, 20)]:
        x = newton_schulz(torch.randn(*shape, generator=g) * 100.0)
        assert x.shape == shape and torch.linalg.svdvals(x).max() <= 1.25


def test_muon_step_by_hand_and_adamw_path_equals_torch():
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(32, 16, generator=g), torch.randn(16, generator=g)
    gw, gb = torch.randn(32, 16, generator=g), torch.randn(16, generator=g)
    pw, pb = nn.Parameter(w.clone()), nn.Parameter(b.clone())
    muon = Muon([{"params": [pw], "use_muon": True, "lr": 0.02},
                 {"params": [pb], "use_muon": False, "lr": 1e-3}], weight_decay=0.1, betas=(0.9, 0.95))
    ref = nn.Parameter(b.clone())
    adamw = torch.optim.AdamW([ref], lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    buf = torch.zeros_like(w)
    expected = w.clone()
    for step in range(3):
        pw.grad, pb.grad, ref.grad = gw * (step + 1), gb * (step + 1), gb * (step + 1)
        muon.step()
        adamw.step()
        # B <- 0.95 B + 0.05 G; U = 0.05 G + 0.95 B; W <- (1 - lr wd) W - lr sqrt(32/16) NS5(U)
        buf = 0.95 * buf + 0.05 * pw.grad
        update = 0.05 * pw.grad + 0.95 * buf
        expected = (1 - 0.02 * 0.1) * expected - 0.02 * math.sqrt(2.0) * newton_schulz(update)
    assert torch.allclose(pw.detach(), expected, atol=1e-6)
    assert torch.allclose(pb.detach(), ref.detach(), atol=1e-7)


def test_llr_scales_muon_groups():
    model = _tiny_llama()
    groups = layerwise_param_groups(model, weight_decay=0.0, muon_lr=0.02)
    assert {g["name"] for g in groups if g["use_muon"]} == {
        n for n, (_, excluded) in find_layers(model).items() if not excluded}
    muon = Muon(groups, lr=3e-3)
    llr = LayerwiseLR(model, muon, total_steps=20, every=5, ramp_steps=0, embed_policy="base")
    lrs = dict(zip([g["name"] for g in muon.param_groups], llr.effective_lrs()))
    assert lrs["model.embed_tokens"] == 3e-3 and max(lrs.values()) == pytest.approx(0.06)
    _train(model, muon, _batches(3), llr=llr)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    with pytest.raises(ValueError, match="use_muon"):
        Muon(model.parameters())


def test_experiment_config_validation():
    from icml26.papers.llr.experiment import Config

    with pytest.raises(ValueError, match="increasing"):
        Config(base_lrs=(3e-3, 1e-3))
    with pytest.raises(ValueError, match="eval_every"):
        dataclasses.replace(Config.tiny(), eval_every=1000)
    assert Config.quick().steps < Config().steps
    assert not hasattr(Config(), "shuffle_gap_target")  # bars live in claims.py, not in the config



def test_shared_step0_loss_is_each_arms_own():
    # run() evaluates the shared initialisation once; each arm used to evaluate its own model after
    # building its optimizer and LLR (whose first fit happens at construction): the same number
    from icml26.common.tiny_lm import TinyLMConfig, build_model, evaluate_loss
    from icml26.contract import RunContext
    from icml26.papers.llr.experiment import Config, _initial_loss

    cfg = Config.tiny()
    model_config = TinyLMConfig(arch="llama", vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                                n_layers=cfg.n_layers, n_heads=cfg.n_heads, context=cfg.context)
    valid = torch.randint(0, cfg.vocab_size, (4 * cfg.context + 1,), generator=torch.Generator().manual_seed(0))
    ctx = RunContext(seed=5, device=torch.device("cpu"), setting="tiny", threads=1)
    shared = _initial_loss(cfg, {"valid": valid, "model_config": model_config}, ctx)
    model = build_model(model_config, seed=ctx.seed)
    optimizer = torch.optim.AdamW(layerwise_param_groups(model, weight_decay=cfg.weight_decay), lr=3e-3)
    LayerwiseLR(model, optimizer, total_steps=cfg.steps, every=cfg.every, min_eigs=cfg.min_eigs)
    assert shared == evaluate_loss(model, valid, context=cfg.context, max_batches=cfg.eval_batches)
    other_seed = build_model(model_config, seed=ctx.seed + 1)
    assert shared != evaluate_loss(other_seed, valid, context=cfg.context, max_batches=cfg.eval_batches)

# -- hardening (issues #18, #30) ----------------------------------------------------------------

def test_rank_deficient_float32_matrix_is_refused_not_fitted_on_noise():
    g = torch.Generator().manual_seed(1)
    rank_one = (torch.randn(64, 1, generator=g) @ torch.randn(1, 128, generator=g)).float()
    values = esd(rank_one)
    assert int((values > 0).sum()) == 1  # the 63 rounding-noise eigenvalues are floored to exactly 0
    # the floor is (max(rows, cols) * eps_float32)^2 relative to the largest eigenvalue
    raw = torch.linalg.svdvals(rank_one).double().square()
    assert raw[1:].max() > 0 and raw[1:].max() <= (128 * np.finfo(np.float32).eps) ** 2 * raw[0]
    with pytest.raises(ValueError, match="rank below half"):
        esd_alpha(rank_one)
    # rank 40 of 64 (above half): fitted, and only on the 40 genuine eigenvalues
    low_rank = (torch.randn(64, 40, generator=g) @ torch.randn(40, 128, generator=g)).float()
    assert int((esd(low_rank) > 0).sum()) == 40
    assert esd_alpha(low_rank).n_tail == 32
    # a full-rank matrix keeps every eigenvalue: the floor does not touch finite, well-conditioned input
    full = torch.randn(64, 128, generator=g)
    assert torch.equal(esd(full), esd(full, rank_tol=0.0))


def test_non_finite_weights_are_a_clear_error():
    with pytest.raises(ValueError, match="NaN or inf"):
        esd_alpha(torch.tensor([[1.0, float("inf")], [0.0, 1.0]]))
    model = nn.Sequential(nn.Linear(64, 64))
    with torch.no_grad():
        model[0].weight[3, 3] = float("nan")
    with pytest.raises(ValueError, match="layer 0"):
        layer_alphas(model)


def test_map_alphas_refuses_non_positive_multipliers():
    for r_min, r_max in ((-1.0, 3.0), (0.0, 3.0), (2.0, 1.0), (1.0, float("nan"))):
        with pytest.raises(ValueError, match="r_m"):
            map_alphas(np.array([2.0, 3.0]), r_min=r_min, r_max=r_max)


def test_uniform_baseline_is_bit_identical_to_the_plain_optimizer_and_shares_the_signature():
    import inspect

    import icml26.papers.llr as llr_api

    batches = _batches(4)

    def train(with_baseline: bool):
        model = _tiny_llama()
        optimizer = torch.optim.AdamW(layerwise_param_groups(model, weight_decay=0.1), lr=1e-2)
        baseline = uniform_layerwise_lr(model, optimizer, total_steps=4) if with_baseline else None
        _train(model, optimizer, batches, llr=baseline)
        return [p.detach() for p in model.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(train(False), train(True)))
    required = lambda f: [(p.name, p.kind) for p in inspect.signature(f).parameters.values()  # noqa: E731
                          if p.default is inspect.Parameter.empty]
    assert llr_api.METHOD is LayerwiseLR
    assert all(required(b) == required(LayerwiseLR) for b in llr_api.BASELINES.values())


# -- property tests (hypothesis) ------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(1e-3, 1e3), min_size=4, max_size=60, unique=True),
       scale=st.floats(1e-3, 1e3), method=st.sampled_from(["median", "ks"]))
def test_power_law_fit_is_scale_and_order_invariant(values, scale, method):
    values = np.array(values)
    fit = fit_power_law(values, method)
    assert fit.alpha > 1 and 2 <= fit.n_tail <= values.size
    shuffled = np.random.default_rng(0).permutation(values)
    scaled = fit_power_law(scale * shuffled, method)
    assert scaled.alpha == pytest.approx(fit.alpha, rel=1e-9)
    assert scaled.n_tail == fit.n_tail and scaled.xmin == pytest.approx(scale * fit.xmin, rel=1e-12)
    assert 0.0 <= fit.ks_distance <= 1.0


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 200), alpha=st.floats(1.5, 6.0))
def test_median_fit_matches_the_hill_formula(n, alpha):
    # values on exact quantiles of a Pareto(alpha) tail: alpha_hat is Hill's closed form on the upper half
    values = (1.0 - (np.arange(n) + 0.5) / n) ** (-1.0 / (alpha - 1.0))
    tail = np.sort(values)[n // 2:]
    hill = 1.0 + tail.size / np.sum(np.log(tail / tail[0]))
    assert fit_power_law(values).alpha == pytest.approx(hill, rel=1e-10)


@settings(max_examples=40, deadline=None)
@given(alphas=st.lists(st.floats(1.0, 10.0), min_size=1, max_size=20), r_min=st.floats(0.1, 2.0),
       extra=st.floats(0.0, 3.0), mapping=st.sampled_from(["linear", "rank"]))
def test_map_alphas_stays_in_range_and_is_monotone(alphas, r_min, extra, mapping):
    alphas = np.array(alphas)
    r_max = r_min + extra
    m = map_alphas(alphas, r_min=r_min, r_max=r_max, mapping=mapping)
    assert np.all(m >= r_min - 1e-12) and np.all(m <= r_max + 1e-12)
    order = np.argsort(alphas, kind="stable")
    assert np.all(np.diff(m[order]) >= -1e-12)  # a larger alpha never gets a smaller rate


# -- reproduction analysis --------------------------------------------------------------------------

def test_reproduction_analysis_by_hand():
    valid, steps = [6.0, 5.0, 4.2, 3.9], [0, 10, 20, 30]
    assert steps_to_target(valid, steps, 4.2) == 20
    assert steps_to_target(valid, steps, 6.0) == 10  # step 0 never counts
    assert steps_to_target(valid, steps, 3.0) is None
    assert speedup(30, 20) == 1.5 and speedup(30, None) == 0.0
    gap, gaps = min_gap({1e-3: 5.0, 3e-3: 4.5}, {1e-3: 4.9, 3e-3: 4.6})
    assert gap == pytest.approx(-0.1) and gaps == pytest.approx({1e-3: 0.1, 3e-3: -0.1})
    assert best_rate({1e-3: 5.0, 3e-3: 4.5, 1e-2: 4.5}) == 3e-3  # first of ties
    alpha = {"0.q_proj": [2.0, 3.0], "0.k_proj": [4.0, float("nan")], "0.up_proj": [6.0, 7.0]}
    assert mean_final_alpha(alpha, ("q_proj", "k_proj"), 0) == pytest.approx(3.0)
    assert mean_final_alpha(alpha, ("q_proj", "k_proj"), -1) == pytest.approx(3.0)  # NaN skipped
    assert math.isnan(mean_final_alpha(alpha, ("o_proj",), 0))
    with pytest.raises(ValueError, match="same length"):
        steps_to_target([1.0], [0, 1], 1.0)


# -- rate-preserving controls (issue #30) ------------------------------------------------------------

def test_parameter_weighted_mean_and_kind_means_by_hand():
    from icml26.papers.llr.analysis import kind_means, parameter_weighted_mean

    # (1*10 + 3*30 + 2*60) / 100 = 220 / 100
    assert parameter_weighted_mean([1.0, 3.0, 2.0], [10, 30, 60]) == pytest.approx(2.2, rel=1e-15)
    assert parameter_weighted_mean([5.0, 1.0], [0, 7]) == 1.0  # an empty group does not count
    for bad in (([1.0], [1, 2]), ([], []), ([1.0, 2.0], [0, 0]), ([1.0, 2.0], [-1, 3])):
        with pytest.raises(ValueError):
            parameter_weighted_mean(*bad)
    kinds = {"0.q": "q", "1.q": "q", "0.up": "up", "1.up": "up", "embed": "embed"}
    means = kind_means({"0.q": 1.0, "1.q": 3.0, "0.up": 2.0, "1.up": 2.5, "embed": 3.0}, kinds)
    assert means == {"0.q": 2.0, "1.q": 2.0, "0.up": 2.25, "1.up": 2.25, "embed": 3.0}
    with pytest.raises(ValueError, match="1.q"):
        kind_means({"1.q": 1.0}, {"0.q": "q"})


def test_matrix_kinds_group_same_shaped_layers_of_different_blocks():
    from icml26.papers.llr import layer_kinds, matrix_kind

    assert matrix_kind("model.layers.12.mlp.up_proj") == "model.layers.*.mlp.up_proj"
    assert matrix_kind("3") == "*" and matrix_kind("h.0.attn.c_attn") == "h.*.attn.c_attn"
    assert matrix_kind("model.embed_tokens") == "model.embed_tokens"
    model = _tiny_llama()
    kinds = layer_kinds(model)
    modules = dict(model.named_modules())
    members: dict[str, list[str]] = {}
    for name, kind in kinds.items():
        members.setdefault(kind, []).append(name)
    hidden = [k for k in members if "embed" not in k and "head" not in k]
    assert len(hidden) == 7 and all(len(members[k]) == 2 for k in hidden)  # q k v o gate up down x 2 blocks
    for names in members.values():
        assert len({modules[n].weight.numel() for n in names}) == 1
    assert members["model.embed_tokens (64, 64)"] == ["model.embed_tokens"]


def test_within_kind_shuffle_is_a_derangement_that_keeps_each_kinds_rate():
    from icml26.papers.llr import layer_kinds
    from icml26.papers.llr.analysis import parameter_weighted_mean

    groups = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "c": "C"}
    values = {"a1": 1.0, "a2": 2.0, "a3": 3.0, "b1": 10.0, "b2": 20.0, "c": 7.0}
    for seed in range(20):
        out = ShuffledMultipliers(seed, groups)(values)
        assert out["c"] == 7.0 and out["b1"] == 20.0 and out["b2"] == 10.0  # a pair can only swap
        assert sorted(out[n] for n in ("a1", "a2", "a3")) == [1.0, 2.0, 3.0]
        assert all(out[n] != values[n] for n in ("a1", "a2", "a3"))  # nobody keeps its own
    with pytest.raises(ValueError, match="b2"):
        ShuffledMultipliers(0, {"a1": "A"})({"a1": 1.0, "b2": 2.0})
    with pytest.raises(TypeError, match="groups"):
        ShuffledMultipliers(0, [("a1", "A")])

    # on a model: LLR's per-parameter rate is kept exactly; the multipliers move within kinds
    def build(shuffled: bool):
        model = _tiny_llama()
        optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.1)
        if shuffled:
            return model, optimizer, shuffled_layerwise_lr(model, optimizer, seed=3, total_steps=100, ramp_steps=0)
        return model, optimizer, LayerwiseLR(model, optimizer, total_steps=100, ramp_steps=0)

    model, optimizer, llr = build(False)
    _, _, shuffled = build(True)
    sizes = [sum(p.numel() for p in g["params"]) for g in optimizer.param_groups]
    assert parameter_weighted_mean(shuffled.group_multipliers(), sizes) == pytest.approx(
        parameter_weighted_mean(llr.group_multipliers(), sizes), rel=1e-12)
    kinds = layer_kinds(model)
    moved = [n for n in llr.layers if shuffled.multipliers[n] != llr.multipliers[n]]
    assert moved  # the control differs from LLR
    for name in llr.layers:
        partners = [m for m in llr.layers if kinds[m] == kinds[name]]
        assert any(shuffled.multipliers[name] == llr.multipliers[m] for m in partners)
    other = _tiny_llama()
    across = shuffled_layerwise_lr(other, torch.optim.SGD(layerwise_param_groups(other), lr=0.1),
                                   seed=3, total_steps=100, within_kind=False)
    assert across.target_transform.groups is None
    with pytest.raises(TypeError, match="within_kind"):
        shuffled_layerwise_lr(model, optimizer, total_steps=10, within_kind="yes")


def test_static_multipliers_ramp_in_and_scale_sgd_by_hand():
    from icml26.papers.llr import StaticLayerwiseLR

    model = _tiny_llama()
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.05)
    target = "model.layers.0.mlp.up_proj"
    static = StaticLayerwiseLR(model, optimizer, total_steps=10, multipliers={target: 3.0}, default=2.0,
                               others=0.5, ramp_steps=2)
    expected = {0: (1.0, 1.0, 1.0), 1: (2.0, 1.5, 0.75), 2: (3.0, 2.0, 0.5), 3: (3.0, 2.0, 0.5)}
    for t, batch in enumerate(_batches(4)):
        # m(t) = 1 + (m - 1) * min(1, t / ramp_steps) for a named layer, the default and the others
        m_target, m_default, m_other = expected[t]
        assert static.multipliers[target] == pytest.approx(m_target)
        assert static.multipliers["model.layers.1.self_attn.q_proj"] == pytest.approx(m_default)
        assert static.group_multipliers()[-1] == pytest.approx(m_other)  # the norms
        before, grads = _sgd_step(model, optimizer, static, batch)
        for pname, p in model.named_parameters():
            layer = pname.rsplit(".", 1)[0]
            m = m_target if layer == target else (m_other if "norm" in pname else m_default)
            # SGD: W <- W - m * eta * grad
            assert torch.allclose(p.detach(), before[pname] - m * 0.05 * grads[pname], atol=1e-7), (t, pname)
        assert all(g["lr"] == 0.05 for g in optimizer.param_groups)
    with pytest.raises(ValueError, match="nonexistent"):
        StaticLayerwiseLR(model, optimizer, total_steps=10, multipliers={"nonexistent": 2.0})
    with pytest.raises(ValueError, match="multipliers"):
        StaticLayerwiseLR(model, optimizer, total_steps=10, multipliers={target: -1.0})


def test_rate_matched_uniform_equals_the_optimizer_at_the_scaled_rate():
    batches = _batches(4)

    def train(multiplier: float | None):
        model = _tiny_llama()
        lr = 1e-2 if multiplier is not None else 1e-2 * 2.5
        optimizer = torch.optim.AdamW(layerwise_param_groups(model, weight_decay=0.1), lr=lr, betas=(0.9, 0.95))
        baseline = uniform_layerwise_lr(model, optimizer, total_steps=4, multiplier=multiplier) \
            if multiplier is not None else None
        _train(model, optimizer, batches, llr=baseline)
        return [p.detach() for p in model.parameters()]

    # two code paths, one answer: every group (norms too) at 2.5 x the rate == AdamW at 2.5 x lr
    assert all(torch.equal(a, b) for a, b in zip(train(2.5), train(None)))
    assert not all(torch.equal(a, b) for a, b in zip(train(1.0), train(None)))
    with pytest.raises(ValueError, match="multiplier"):
        model = _tiny_llama()
        uniform_layerwise_lr(model, torch.optim.SGD(layerwise_param_groups(model), lr=0.1), total_steps=4,
                             multiplier=0.0)


# -- fit-free controls ----------------------------------------------------------------------------

def test_embed_head_arm_scales_only_the_tied_embedding_head_by_hand():
    from icml26.papers.llr import embed_head_layerwise_lr

    model = _tiny_llama()
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied: one matrix, one param group
    optimizer = torch.optim.SGD(layerwise_param_groups(model), lr=0.05)
    control = embed_head_layerwise_lr(model, optimizer, total_steps=10, multiplier=3.0, ramp_steps=0)
    names = [g["name"] for g in optimizer.param_groups]
    assert control.group_multipliers() == [3.0 if n == "model.embed_tokens" else 1.0 for n in names]
    for batch in _batches(3):
        before, grads = _sgd_step(model, optimizer, control, batch)
        for pname, p in model.named_parameters():
            m = 3.0 if pname == "model.embed_tokens.weight" else 1.0
            # SGD: W <- W - m * eta * grad; only the embedding/head has m = 3
            assert torch.allclose(p.detach(), before[pname] - m * 0.05 * grads[pname], atol=1e-7), pname
    assert control.history.steps == []  # nothing is fitted

    # two code paths, one answer: AdamW with the embedding group's own lr at 3x
    def train(use_control: bool):
        net = _tiny_llama()
        groups = layerwise_param_groups(net, weight_decay=0.1)
        if not use_control:
            for g in groups:
                if g["name"] == "model.embed_tokens":
                    g["lr"] = 3e-3 * 3.0
        opt = torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95))
        hooks = embed_head_layerwise_lr(net, opt, total_steps=4, multiplier=3.0) if use_control else None
        _train(net, opt, _batches(4), llr=hooks)
        return [p.detach() for p in net.parameters()]

    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(train(True), train(False)))
    with pytest.raises(ValueError, match="no embedding or head"):
        mlp = nn.Sequential(nn.Linear(8, 8))
        embed_head_layerwise_lr(mlp, torch.optim.SGD(layerwise_param_groups(mlp), lr=0.1), total_steps=4)


def test_kind_static_step0_arm_never_refits_and_holds_the_step0_kind_means():
    from icml26.papers.llr import kind_static_step0_lr, layer_kinds
    from icml26.papers.llr.analysis import kind_means

    # LLR's own first assignment on the same initial weights, averaged per kind by hand
    reference = _tiny_llama()
    llr = LayerwiseLR(reference, torch.optim.SGD(layerwise_param_groups(reference), lr=0.1), total_steps=100,
                      ramp_steps=0)
    expected = kind_means(llr.multipliers, layer_kinds(reference))

    model = _tiny_llama()
    optimizer = torch.optim.AdamW(layerwise_param_groups(model), lr=3e-2)  # a large rate: the weights move
    control = kind_static_step0_lr(model, optimizer, total_steps=40, ramp_steps=2)
    assert control.multipliers == {n: 1.0 for n in control.layers}  # ramped in from 1, as LLR ramps
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    _train(model, optimizer, _batches(40), llr=control)
    assert control.history.steps == [0]  # one fit, at step 0; LLR with every=10 would refit at 10, 20, 30
    assert control.multipliers == pytest.approx(expected, rel=1e-12)
    assert control.multipliers["model.embed_tokens"] == 3.0
    kinds = layer_kinds(model)
    for name in control.layers:
        same = [m for m in control.layers if kinds[m] == kinds[name]]
        assert len({control.multipliers[m] for m in same}) == 1
    # attention (square) below the MLP (4:1) matrices at initialisation
    assert control.multipliers["model.layers.0.self_attn.q_proj"] < control.multipliers["model.layers.0.mlp.up_proj"]
    moved = max(float((p.detach() - start[n]).abs().max()) for n, p in model.named_parameters())
    assert moved > 1e-2
    refit = layer_alphas(model)  # the trained weights' fit differs, and the control ignored it
    assert any(abs(refit[n].alpha - control.history.alpha[n][0]) > 1e-3 for n in refit)


def test_gap_to_best_by_hand():
    from icml26.papers.llr.analysis import gap_to_best

    # LLR 4.50; arms 4.60 and 4.45: the better arm is b, LLR minus it = 4.45 - 4.50
    assert gap_to_best(4.5, {"a": 4.6, "b": 4.45}) == (pytest.approx(-0.05), "b")
    assert gap_to_best(4.5, {"a": 4.6, "b": math.nan}) == (pytest.approx(0.1), "a")  # a diverged arm is not best
    assert gap_to_best(4.5, {"a": 4.6, "b": 4.6}) == (pytest.approx(0.1), "a")  # first of ties
    with pytest.raises(ValueError, match="empty"):
        gap_to_best(4.5, {})


def test_held_out_split_keeps_the_evaluated_windows_and_tunes_on_the_rest():
    from icml26.common.tiny_lm import evaluate_loss
    from icml26.papers.llr.experiment import held_out_split

    stream = torch.arange(1000) % 64
    evaluation, tuning = held_out_split(stream, context=16, eval_batches=1, batch_size=8)
    # evaluate_loss reads 8 windows of 17 tokens at 0, 16, ..., 112: tokens 0..128
    assert evaluation.numel() == 8 * 16 + 1 and torch.equal(evaluation, stream[:129])
    assert torch.equal(tuning, stream[129:])  # disjoint, nothing in between is dropped
    model = _tiny_llama()
    assert evaluate_loss(model, evaluation, context=16, batch_size=8, max_batches=1) == \
        evaluate_loss(model, stream, context=16, batch_size=8, max_batches=1)
    with pytest.raises(ValueError, match="eval_batches"):
        held_out_split(stream[:200], context=16, eval_batches=1, batch_size=8)


def test_every_arm_is_tuned_alike_on_the_tuning_windows_only():
    from icml26.contract import RunContext
    from icml26.papers.llr.experiment import ARM_IDS, ArmRun, Config, tune_rates

    cfg = dataclasses.replace(Config.tiny(), base_lrs=(1e-3, 3e-3, 1e-2),
                              arms=("LLR", "uniform", "embed-head", "kind-static-step0", "LLR-mean"))
    # the evaluation loss favours the smallest rate, the tuning windows the middle one (LLR: the largest)
    runs = {}
    for kind in cfg.arms:
        for lr, final, tune in zip(cfg.base_lrs, (4.0, 4.5, 5.0), (5.2, 5.0, 5.1)):
            tune = {1e-2: 4.9}.get(lr, tune) if kind == "LLR" else tune
            runs[(kind, lr)] = ArmRun([0, 1], [6.0, final], 0.0, None, tune_loss=tune)
    ctx = RunContext(seed=0, device=torch.device("cpu"), setting="tiny", threads=1)
    rates = tune_rates(cfg, runs, ctx)
    assert rates == {"LLR": 1e-2, "uniform": 3e-3, "embed-head": 3e-3, "kind-static-step0": 3e-3}
    assert set(ctx.tuning) == {ARM_IDS[k] for k in rates}  # LLR-mean is not declared and not tuned
    for arm_id, entry in ctx.tuning.items():
        (call,) = entry["calls"]
        assert [t["params"]["base_lr"] for t in call["trials"]] == list(cfg.base_lrs)  # the whole grid, each arm
        assert call["maximize"] is False
