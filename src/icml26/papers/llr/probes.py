"""LLR's hostile-input probes. LLR exports no ``nn.Module``, so ``MODULES`` is empty."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml26.contract import Probe
from icml26.papers.llr.analysis import kind_means, parameter_weighted_mean
from icml26.papers.llr import (
    AlphaFit,
    LayerwiseLR,
    LLRHistory,
    Muon,
    ShuffledMultipliers,
    StaticLayerwiseLR,
    esd,
    esd_alpha,
    find_layers,
    fit_power_law,
    layer_alphas,
    layer_kinds,
    layerwise_param_groups,
    map_alphas,
    matrix_kind,
    newton_schulz,
    shuffled_layerwise_lr,
    uniform_layerwise_lr,
)

MODULES: list = []


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 64))


def _optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(layerwise_param_groups(model), lr=0.1)


def _rank_one(dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(64, 1, generator=g) @ torch.randn(1, 128, generator=g)).to(dtype)


def _nan_model() -> nn.Module:
    model = _mlp()
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    return model


def _rank_one_layer_is_skipped() -> dict:
    model = _mlp()
    with torch.no_grad():
        model[0].weight.copy_(_rank_one()[:, :64])
    return layer_alphas(model)


HOSTILE = [
    # the ESD and the power-law fit
    Probe("esd of a float32 rank-1 matrix: rounding noise floored to 0", lambda: esd(_rank_one()),
          returns=lambda v: int((v > 0).sum()) == 1, doc="eigenvalues below the numerical-rank floor are exactly 0"),
    Probe("esd_alpha of a float32 rank-1 matrix (was alpha ≈ 1.2)", lambda: esd_alpha(_rank_one()), match="rank"),
    Probe("esd_alpha ks mode on a rank-1 matrix", lambda: esd_alpha(_rank_one(), "ks"), match="positive"),
    Probe("esd with NaN weights", lambda: esd(torch.full((8, 8), float("nan"))), match="weight contains NaN"),
    Probe("esd with inf weights", lambda: esd_alpha(torch.eye(8) * float("inf")), match="weight contains NaN or inf"),
    Probe("esd of a vector", lambda: esd(torch.ones(5)), match="matrix"),
    Probe("esd of an empty matrix", lambda: esd(torch.ones(0, 4)), match="empty"),
    Probe("esd conv_norm=0", lambda: esd(torch.ones(4, 4, 3), conv_norm=0.0), match="conv_norm"),
    Probe("esd rank_tol=-1", lambda: esd(torch.eye(4), rank_tol=-1.0), match="rank_tol"),
    Probe("esd of a NumPy matrix", lambda: esd(np.diag([1.0, 2.0, 3.0])),
          returns=lambda v: torch.allclose(v, torch.tensor([1.0, 4.0, 9.0], dtype=torch.float64)),
          doc="NumPy weights are accepted"),
    Probe("esd_alpha method='hill'", lambda: esd_alpha(torch.eye(8), "hill"), match="method"),
    Probe("fit_power_law with NaN", lambda: fit_power_law(np.array([1.0, 2.0, np.nan, 4.0])), match="finite"),
    Probe("fit_power_law with a negative eigenvalue", lambda: fit_power_law(np.array([-1.0, 2.0, 3.0, 4.0])),
          match="non-negative"),
    Probe("fit_power_law with two values", lambda: fit_power_law([1.0, 2.0]), match="too few"),
    Probe("fit_power_law with no values", lambda: fit_power_law([]), match="too few"),
    Probe("fit_power_law xmin_pos=0", lambda: fit_power_law(np.arange(1.0, 20.0), xmin_pos=0), match="xmin_pos"),
    Probe("fit_power_law xmin_pos=1.5", lambda: fit_power_law(np.arange(1.0, 20.0), xmin_pos=1.5), raises=TypeError,
          match="xmin_pos"),
    Probe("fit_power_law bins=1 (fix_finger)", lambda: fit_power_law(np.arange(1.0, 20.0), "fix_finger", bins=1),
          match="bins"),
    Probe("fit_power_law all equal (ks)", lambda: fit_power_law(np.ones(10), "ks"), match="equal"),
    Probe("fit_power_law on strings", lambda: fit_power_law(["a", "b", "c"]), raises=TypeError, match="eigenvalues"),
    # the map
    Probe("map_alphas r_min=-1 (was a negative multiplier)", lambda: map_alphas([2.0, 3.0], r_min=-1.0, r_max=3.0),
          match="r_min"),
    Probe("map_alphas r_min > r_max", lambda: map_alphas([2.0, 3.0], r_min=3.0, r_max=1.0), match="r_min"),
    Probe("map_alphas r_max=inf", lambda: map_alphas([2.0, 3.0], r_min=1.0, r_max=math.inf), match="r_max"),
    Probe("map_alphas with a NaN alpha", lambda: map_alphas([2.0, math.nan], r_min=1.0, r_max=3.0), match="finite"),
    Probe("map_alphas on an empty list", lambda: map_alphas([], r_min=1.0, r_max=3.0), match="non-empty"),
    Probe("map_alphas mapping='log'", lambda: map_alphas([2.0, 3.0], r_min=1.0, r_max=3.0, mapping="log"),
          match="mapping"),
    Probe("map_alphas on a tensor", lambda: map_alphas(torch.tensor([2.0, 4.0]), r_min=1.0, r_max=3.0),
          returns=lambda v: np.allclose(v, [1.0, 3.0]), doc="a tensor of alphas is accepted"),
    # layers and groups
    Probe("find_layers exclude='head' is one substring, not letters",
          lambda: find_layers(nn.Sequential(nn.Linear(4, 4)), exclude="head"),
          returns=lambda v: v["0"][1] is False, doc="a string is one substring"),
    Probe("find_layers exclude=3", lambda: find_layers(_mlp(), exclude=3), raises=TypeError, match="exclude"),
    Probe("layerwise_param_groups on a non-module", lambda: layerwise_param_groups("model"), raises=TypeError,
          match="model"),
    Probe("layerwise_param_groups weight_decay=nan", lambda: layerwise_param_groups(_mlp(), weight_decay=math.nan),
          match="weight_decay"),
    Probe("layerwise_param_groups muon_lr=0", lambda: layerwise_param_groups(_mlp(), muon_lr=0.0), match="muon_lr"),
    Probe("layer_alphas with NaN weights", lambda: layer_alphas(_nan_model(), min_eigs=1),
          match=r"layer 0: weight contains NaN"),
    Probe("layer_alphas skips a rank-1 layer", _rank_one_layer_is_skipped,
          returns=lambda v: "0" not in v and "2" in v, doc="a layer with no tail stays at the base rate (logged)"),
    Probe("layer_alphas min_eigs=-1", lambda: layer_alphas(_mlp(), min_eigs=-1), match="min_eigs"),
    # the scheduler
    Probe("LayerwiseLR r_min=-1", lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=10, r_min=-1.0),
          match="r_min"),
    Probe("LayerwiseLR total_steps=0", lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=0),
          match="total_steps"),
    Probe("LayerwiseLR total_steps=nan", lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=math.nan),
          raises=TypeError, match="total_steps"),
    Probe("LayerwiseLR every=0", lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=10, every=0),
          match="every"),
    Probe("LayerwiseLR active_fraction=1.5",
          lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=10, active_fraction=1.5),
          match="active_fraction"),
    Probe("LayerwiseLR embed_policy=-2", lambda: LayerwiseLR(_mlp(), _optimizer(_mlp()), total_steps=10,
                                                            embed_policy=-2.0), match="embed_policy"),
    Probe("LayerwiseLR with a shared param group",
          lambda: (lambda m: LayerwiseLR(m, torch.optim.SGD(m.parameters(), lr=0.1), total_steps=10))(_mlp()),
          match="layerwise_param_groups"),
    Probe("LayerwiseLR with a non-optimizer", lambda: LayerwiseLR(_mlp(), "adam", total_steps=10), raises=TypeError,
          match="optimizer"),
    Probe("LayerwiseLR on a diverged model",
          lambda: (lambda m: LayerwiseLR(m, _optimizer(m), total_steps=10, min_eigs=1))(_nan_model()),
          match="NaN"),
    Probe("shuffled_layerwise_lr seed=-1", lambda: shuffled_layerwise_lr(_mlp(), _optimizer(_mlp()), total_steps=10,
                                                                         seed=-1), match="seed"),
    Probe("uniform_layerwise_lr total_steps=0", lambda: uniform_layerwise_lr(_mlp(), _optimizer(_mlp()),
                                                                             total_steps=0), match="total_steps"),
    Probe("ShuffledMultipliers seed=1.5", lambda: ShuffledMultipliers(1.5), raises=TypeError, match="seed"),
    Probe("ShuffledMultipliers on a list", lambda: ShuffledMultipliers(0)([1.0, 2.0]), raises=TypeError,
          match="multipliers"),
    Probe("shuffled_layerwise_lr within_kind='yes'",
          lambda: shuffled_layerwise_lr(_mlp(), _optimizer(_mlp()), total_steps=10, within_kind="yes"),
          raises=TypeError, match="within_kind"),
    Probe("ShuffledMultipliers groups missing a layer", lambda: ShuffledMultipliers(0, {"a": "k"})({"a": 1.0, "b": 2.0}),
          match="groups has no entry"),
    Probe("ShuffledMultipliers groups as a list", lambda: ShuffledMultipliers(0, [("a", "k")]), raises=TypeError,
          match="groups"),
    Probe("uniform_layerwise_lr multiplier=0", lambda: uniform_layerwise_lr(_mlp(), _optimizer(_mlp()), total_steps=10,
                                                                            multiplier=0.0), match="multiplier"),
    Probe("uniform_layerwise_lr multiplier=nan",
          lambda: uniform_layerwise_lr(_mlp(), _optimizer(_mlp()), total_steps=10, multiplier=math.nan),
          match="multiplier"),
    Probe("StaticLayerwiseLR unknown layer",
          lambda: (lambda m: StaticLayerwiseLR(m, _optimizer(m), total_steps=10, multipliers={"9": 2.0}))(_mlp()),
          match="does not have"),
    Probe("StaticLayerwiseLR negative multiplier",
          lambda: (lambda m: StaticLayerwiseLR(m, _optimizer(m), total_steps=10, multipliers={"0": -2.0}))(_mlp()),
          match="multipliers"),
    Probe("StaticLayerwiseLR ramp_steps=-1",
          lambda: (lambda m: StaticLayerwiseLR(m, _optimizer(m), total_steps=10, ramp_steps=-1))(_mlp()),
          match="ramp_steps"),
    Probe("StaticLayerwiseLR multipliers as a list",
          lambda: (lambda m: StaticLayerwiseLR(m, _optimizer(m), total_steps=10, multipliers=[2.0]))(_mlp()),
          raises=TypeError, match="multipliers"),
    Probe("matrix_kind of a non-string", lambda: matrix_kind(3), raises=TypeError, match="name"),
    Probe("layer_kinds of an MLP", lambda: layer_kinds(_mlp()),
          returns=lambda v: v == {"0": "* (64, 64)", "2": "* (64, 64)"}, doc="block indices become '*'"),
    Probe("parameter_weighted_mean length mismatch", lambda: parameter_weighted_mean([1.0, 2.0], [3]),
          match="equal-length"),
    Probe("parameter_weighted_mean zero sizes", lambda: parameter_weighted_mean([1.0], [0]), match="sizes"),
    Probe("kind_means with a layer of no kind", lambda: kind_means({"a": 1.0}, {}), match="no entry"),
    # Muon
    Probe("Muon lr=nan", lambda: Muon(layerwise_param_groups(_mlp(), muon_lr=0.02), lr=math.nan), match="lr"),
    Probe("Muon momentum=1", lambda: Muon(layerwise_param_groups(_mlp(), muon_lr=0.02), momentum=1.0),
          match="momentum"),
    Probe("Muon betas=(0.9,)", lambda: Muon(layerwise_param_groups(_mlp(), muon_lr=0.02), betas=(0.9,)),
          match="betas"),
    Probe("Muon without use_muon groups", lambda: Muon(_mlp().parameters()), match="use_muon"),
    Probe("newton_schulz of a vector", lambda: newton_schulz(torch.ones(4)), match="matrix"),
    Probe("newton_schulz steps=-1", lambda: newton_schulz(torch.eye(3), steps=-1), match="steps"),
    Probe("newton_schulz of an integer matrix", lambda: newton_schulz(torch.eye(3, dtype=torch.int64)),
          raises=TypeError, match="floating"),
    Probe("newton_schulz NaN in, NaN out", lambda: newton_schulz(torch.full((3, 3), math.nan)),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN spreads over the matrix (documented)"),
    Probe("newton_schulz of zeros is zeros", lambda: newton_schulz(torch.zeros(3, 4)),
          returns=lambda v: bool((v == 0).all()), doc="the eps guard keeps a zero update at zero"),
    # records
    Probe("AlphaFit is a frozen record", lambda: AlphaFit(2.0, 0.1, 10, 1.0).__setattr__("alpha", 3.0),
          raises=AttributeError),
    Probe("LLRHistory round-trips through to_dict", lambda: LLRHistory(**LLRHistory(steps=[0]).to_dict()),
          returns=lambda v: v.steps == [0], doc="a plain record; to_dict() / LLRHistory(**d) round-trip"),
]

from icml26.papers.llr.probes_walk import ALLOWED, NOT_WALKED, VALID  # noqa: E402,F401  (the hostile-input walk)
