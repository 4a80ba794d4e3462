"""SPARD's hostile-input probes (the issue's bad inputs and more). SPARD exports no ``nn.Module``
(the analogue's MLP is a plain ``nn.Sequential`` built in the experiment), so ``MODULES`` is empty."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml26.contract import Probe
from icml26.papers.spard import (
    SafetyProjection,
    auto_tau,
    cosine_matrix,
    default_loss,
    dpp_kernel,
    dpp_select,
    embed,
    greedy_map,
    lisa_finetune,
    penalty_finetune,
    random_select,
    relevance,
    safeinstr_finetune,
    safety_step,
    sft_finetune,
    spag_finetune,
    topk_relevance,
)
from icml26.papers.spard.analysis import (
    accuracy,
    accuracy_drop_points,
    attack_success_rate,
    is_refusal,
    ratio_to_best,
    refusal_attack_success_rate,
    worst_gap,
)

MODULES: list = []


_LAST: list[nn.Module] = []


def _model() -> nn.Module:
    torch.manual_seed(0)
    _LAST[:] = [nn.Linear(4, 3)]
    return _LAST[0]


def _safety() -> list:
    return [(torch.ones(2, 4), torch.full((2,), 2))]


def _task() -> list:
    return [(torch.ones(2, 4), torch.zeros(2, dtype=torch.long))]


def _opt(model: nn.Module | None = None) -> torch.optim.Optimizer:
    """SGD over ``model`` (default: the model the last ``_model()`` built, i.e. the call's own)."""
    return torch.optim.SGD((model or _LAST[0]).parameters(), lr=0.1)


def _spag(**kwargs):
    model = _model()
    args = dict(steps=1, optimizer=_opt(model), progress=False) | kwargs
    return spag_finetune(model, _task(), _safety(), **args)


def _frozen() -> nn.Module:
    model = _model()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def _nan_model() -> nn.Module:
    model = _model()
    with torch.no_grad():
        model.weight.fill_(math.nan)
    return model


def _one_shot():
    model = _model()
    return spag_finetune(model, iter(_task()), _safety(), steps=3, optimizer=_opt(model), progress=False)


def _foreign_projection():
    model = _model()
    return spag_finetune(model, _task(), _safety(), steps=1, optimizer=_opt(model), progress=False,
                         projection=SafetyProjection(_model(), _safety(), tau=0.2))


RNG = np.random.default_rng(0)
CAND, REF = RNG.normal(size=(6, 3)), RNG.normal(size=(2, 3))

HOSTILE = [
    # selection: the k > n and non-PSD kernel
    Probe("greedy_map k > n", lambda: greedy_map(np.eye(3), 4), match="k=4 exceeds"),
    Probe("greedy_map k = 0", lambda: greedy_map(np.eye(3), 0), match="k"),
    Probe("greedy_map k = 1.5", lambda: greedy_map(np.eye(3), 1.5), raises=TypeError, match="k"),
    Probe("greedy_map non-PSD kernel", lambda: greedy_map(np.array([[1.0, 2.0], [2.0, 1.0]]), 1),
          match="positive semi-definite"),
    Probe("greedy_map non-symmetric kernel", lambda: greedy_map(np.array([[1.0, 0.3], [0.0, 1.0]]), 1),
          match="symmetric"),
    Probe("greedy_map non-square kernel", lambda: greedy_map(np.ones((2, 3)), 1), match="square"),
    Probe("greedy_map NaN kernel", lambda: greedy_map(np.full((2, 2), np.nan), 1), match="kernel contains NaN"),
    Probe("greedy_map string kernel", lambda: greedy_map("kernel", 1), raises=TypeError, match="kernel"),
    Probe("greedy_map on a rank-1 kernel: clamped gains, first indices",
          lambda: greedy_map(np.ones((4, 4)), 3)[0].tolist(), returns=lambda v: v == [0, 1, 2],
          doc="gains below 1e-6 are clamped (authors' code); ties go to the first index"),
    Probe("dpp_select k > n", lambda: dpp_select(CAND, REF, 7), match="k=7 exceeds"),
    Probe("dpp_select width mismatch", lambda: dpp_select(CAND, np.ones((2, 4)), 2), match="width"),
    Probe("dpp_select NaN embeddings", lambda: dpp_select(np.full((3, 2), np.nan), REF[:, :2], 1),
          match="candidates contains NaN"),
    Probe("dpp_select all-zero candidate", lambda: dpp_select(np.zeros((3, 3)), REF, 1), match="zero row"),
    Probe("dpp_select 1-D candidates", lambda: dpp_select(np.ones(3), REF, 1), match="matrix"),
    Probe("dpp_select empty reference", lambda: dpp_select(CAND, np.ones((0, 3)), 1), match="empty"),
    Probe("dpp_select power = -1", lambda: dpp_select(CAND, REF, 2, power=-1.0), match="power"),
    Probe("dpp_select power = nan", lambda: dpp_select(CAND, REF, 2, power=math.nan), match="power"),
    Probe("dpp_select eps = -1", lambda: dpp_select(CAND, REF, 2, eps=-1.0), match="eps"),
    Probe("dpp_select odd power: negative cosines clipped", lambda: relevance([[-1.0, 0.0]], [[1.0, 0.0]], power=3),
          returns=lambda v: v.tolist() == [0.0], doc="q = (max cos)_+^power: never negative"),
    Probe("dpp_kernel negative quality", lambda: dpp_kernel(CAND, -np.ones(6)), match="quality"),
    Probe("dpp_kernel quality length", lambda: dpp_kernel(CAND, np.ones(5)), match="quality"),
    Probe("cosine_matrix of a string", lambda: cosine_matrix("abc"), raises=TypeError, match="a must"),
    Probe("random_select seed = -1", lambda: random_select(CAND, REF, 2, seed=-1), match="seed"),
    Probe("random_select k > n", lambda: random_select(CAND, REF, 9), match="k=9"),
    Probe("topk_relevance k = 0", lambda: topk_relevance(CAND, REF, 0), match="k"),
    # the safety step: the τ < 0 and radius ≤ 0
    Probe("safety_step tau < 0", lambda: safety_step(1.0, torch.ones(3), tau=-0.1, trust_radius=1.0), match="tau"),
    Probe("safety_step radius = 0", lambda: safety_step(1.0, torch.ones(3), tau=0.2, trust_radius=0.0),
          match="trust_radius"),
    Probe("safety_step radius < 0", lambda: safety_step(1.0, torch.ones(3), tau=0.2, trust_radius=-1.0),
          match="trust_radius"),
    Probe("safety_step tol < 0", lambda: safety_step(1.0, torch.ones(3), tau=0.2, tol=-1.0, trust_radius=1.0),
          match="tol"),
    Probe("safety_step NaN loss", lambda: safety_step(math.nan, torch.ones(3), tau=0.2, trust_radius=1.0),
          match="loss"),
    Probe("safety_step NaN gradient", lambda: safety_step(1.0, torch.tensor([1.0, math.nan]), tau=0.2,
                                                          trust_radius=1.0), match="grad contains NaN"),
    Probe("safety_step vector loss", lambda: safety_step(torch.ones(2), torch.ones(3), tau=0.2, trust_radius=1.0),
          match="scalar"),
    Probe("safety_step string gradient", lambda: safety_step(1.0, "g", tau=0.2, trust_radius=1.0),
          raises=TypeError, match="grad"),
    Probe("safety_step zero gradient above tau: no step", lambda: safety_step(5.0, torch.zeros(2), tau=0.2,
                                                                              trust_radius=1.0),
          returns=lambda v: bool((v == 0).all()), doc="the linearised constraint cannot be met: Δ = 0 (logged)"),
    Probe("safety_step infinite radius", lambda: safety_step(1.2, torch.tensor([0.0, 2.0]), tau=0.2,
                                                             trust_radius=math.inf),
          returns=lambda v: torch.allclose(v, torch.tensor([0.0, -0.5])), doc="math.inf means no trust region"),
    Probe("auto_tau negative base loss", lambda: auto_tau(-1.0), match="base_loss"),
    # the projection
    Probe("SafetyProjection tau < 0", lambda: SafetyProjection(_model(), _safety(), tau=-1.0), match="tau"),
    Probe("SafetyProjection tau = 'high'", lambda: SafetyProjection(_model(), _safety(), tau="high"), match="tau"),
    Probe("SafetyProjection radius = 0", lambda: SafetyProjection(_model(), _safety(), trust_radius=0.0),
          match="trust_radius"),
    Probe("SafetyProjection tau_floor = -0.2", lambda: SafetyProjection(_model(), _safety(), tau_floor=-0.2),
          match="tau_floor"),
    Probe("SafetyProjection mode = 'adam'", lambda: SafetyProjection(_model(), _safety(), mode="adam"), match="mode"),
    Probe("SafetyProjection reference_adamw with an infinite alpha_max",
          lambda: SafetyProjection(_model(), _safety(), trust_radius=math.inf, mode="reference_adamw"),
          match="trust_radius"),
    Probe("SafetyProjection on a non-module", lambda: SafetyProjection("model", _safety()), raises=TypeError,
          match="model"),
    Probe("SafetyProjection with no trainable parameter", lambda: SafetyProjection(_frozen(), _safety(), tau=0.2),
          match="trainable"),
    Probe("SafetyProjection accumulation = 0", lambda: SafetyProjection(_model(), _safety(), accumulation=0),
          match="accumulation"),
    Probe("SafetyProjection empty loader", lambda: SafetyProjection(_model(), [], tau="auto"),
          match="safety_loader"),
    Probe("SafetyProjection on a diverged model", lambda: SafetyProjection(_nan_model(), _safety(), tau="auto"),
          match="safety loss"),
    Probe("SafetyProjection loss_fn not callable", lambda: SafetyProjection(_model(), _safety(), loss_fn=3),
          raises=TypeError, match="loss_fn"),
    Probe("SafetyProjection reference_adamw step without optimizer",
          lambda: SafetyProjection(_model(), _safety(), tau=0.0, mode="reference_adamw").step(), raises=TypeError,
          match="optimizer"),
    Probe("default_loss on a string batch", lambda: default_loss(_model(), "batch"), raises=TypeError, match="batch"),
    Probe("default_loss on a HF batch without labels",
          lambda: default_loss(_Returns(), {"input_ids": torch.ones(1, 2, dtype=torch.long)}), match="labels"),
    # fine-tuning loops
    Probe("spag_finetune steps = 0", lambda: _spag(steps=0), match="steps"),
    Probe("spag_finetune steps = 2.5", lambda: _spag(steps=2.5), raises=TypeError, match="steps"),
    Probe("spag_finetune optimizer = 'adamw'", lambda: _spag(optimizer="adamw"), raises=TypeError, match="optimizer"),
    Probe("spag_finetune max_grad_norm = 0", lambda: _spag(max_grad_norm=0.0), match="max_grad_norm"),
    Probe("spag_finetune scheduler without step()", lambda: _spag(scheduler=3), raises=TypeError, match="scheduler"),
    Probe("spag_finetune projection of another model", _foreign_projection, match="another model"),
    Probe("sft_finetune with an optimizer over another model",
          lambda: sft_finetune(nn.Linear(4, 3), _task(), None, steps=1, optimizer=_opt(nn.Linear(4, 3))),
          match="none of the model's trainable parameters"),
    Probe("spag_finetune projection = 'closed_form'", lambda: _spag(projection="closed_form"), raises=TypeError,
          match="projection"),
    Probe("spag_finetune one-shot task iterator", _one_shot, match="one-shot"),
    Probe("spag_finetune task_loader = 5", lambda: spag_finetune(_model(), 5, _safety(), steps=1,
                                                                 optimizer=_opt()), raises=TypeError,
          match="task_loader"),
    Probe("sft_finetune ignores a missing safety loader",
          lambda: len(sft_finetune(_model(), _task(), None, steps=2, optimizer=_opt(),
                                   progress=False).task_loss), returns=lambda v: v == 2,
          doc="SFT takes the method's signature but uses no safety data"),
    Probe("penalty_finetune lam = -1", lambda: penalty_finetune(_model(), _task(), _safety(), steps=1,
                                                                optimizer=_opt(), lam=-1.0), match="lam"),
    Probe("lisa_finetune rho = nan", lambda: lisa_finetune(_model(), _task(), _safety(), steps=1,
                                                           optimizer=_opt(), rho=math.nan), match="rho"),
    Probe("lisa_finetune task_phase = 0", lambda: lisa_finetune(_model(), _task(), _safety(), steps=1,
                                                                optimizer=_opt(), task_phase=0),
          match="task_phase"),
    Probe("safeinstr_finetune mix_every = 0", lambda: safeinstr_finetune(_model(), _task(), _safety(), steps=1,
                                                                         optimizer=_opt(), mix_every=0),
          match="mix_every"),
    Probe("penalty_finetune without safety data", lambda: penalty_finetune(_model(), _task(), None, steps=1,
                                                                           optimizer=_opt()),
          match="safety_loader"),
    # embeddings
    Probe("embed on a non-module", lambda: embed("model", torch.ones(2, 4)), raises=TypeError, match="model"),
    Probe("embed a model without Linear", lambda: embed(nn.ReLU(), torch.ones(2, 4)), match="layer"),
    Probe("embed a list batch", lambda: embed(_model(), [1, 2]), raises=TypeError, match="batch"),
    Probe("embed a mapping without input_ids", lambda: embed(_model(), {"x": torch.ones(1)}), match="input_ids"),
    Probe("embed NaN features", lambda: embed(nn.Sequential(_nan_model(), nn.Linear(3, 2)), torch.ones(2, 4)),
          match="embeddings contains NaN"),
    # analysis
    Probe("attack_success_rate of float predictions", lambda: attack_success_rate([0.5], 10), raises=TypeError,
          match="predictions"),
    Probe("attack_success_rate of nothing", lambda: attack_success_rate([], 10), match="empty"),
    Probe("accuracy of different lengths", lambda: accuracy([1, 2], [1]), match="differ"),
    Probe("accuracy_drop_points of a percentage", lambda: accuracy_drop_points(97.0, 0.9), match="reference_accuracy"),
    Probe("ratio_to_best of no baseline", lambda: ratio_to_best(0.1, {}), match="baselines"),
    Probe("ratio_to_best with a perfect baseline", lambda: ratio_to_best(0.1, {"a": 0.0})[0],
          returns=math.isnan, doc="NaN (the shared ratio to a zero reference): no ratio can be met when the best baseline has ASR 0"),
    Probe("worst_gap with no shared key", lambda: worst_gap({1: 0.1}, {2: 0.2}), match="share"),
    Probe("is_refusal of bytes", lambda: is_refusal(b"sorry"), raises=TypeError, match="text"),
    Probe("refusal_attack_success_rate of a string", lambda: refusal_attack_success_rate("I'm sorry"),
          match="responses"),
]


class _Returns(nn.Module):
    """A model that returns an output without a loss (like a HF model given no labels)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, input_ids):
        return type("Out", (), {"loss": None, "logits": self.w * input_ids.float()})()


# ---------------------------------------------------------------------------
# The hostile-input walk (tests/test_hostile_walk.py): valid calls, exports not walked, accepted suspects
# ---------------------------------------------------------------------------
def _loop_call(**kwargs):
    """A one-step fine-tuning call on a fresh model (the signature every fine-tuning loop shares)."""
    def make():
        model = _model()
        return (model, _task(), _safety()), dict(steps=1, optimizer=_opt(model), progress=False) | kwargs
    return make


VALID = {
    "SafetyProjection": lambda: ((_model(), _safety()), {"tau": 0.2}),
    "auto_tau": lambda: ((0.5,), {}),
    "cosine_matrix": lambda: ((CAND.copy(), REF.copy()), {}),
    "default_loss": lambda: ((_model(), _task()[0]), {}),
    "dpp_kernel": lambda: ((CAND.copy(), np.linspace(0.1, 1.0, 6)), {}),
    "dpp_select": lambda: ((CAND.copy(), REF.copy(), 2), {}),
    "embed": lambda: ((_model(), torch.ones(2, 4)), {}),
    "greedy_map": lambda: ((np.eye(3) + 0.1, 2), {}),
    "lisa_finetune": _loop_call(task_phase=1, safety_phase=1),
    "penalty_finetune": _loop_call(),
    "random_select": lambda: ((CAND.copy(), REF.copy(), 2), {"seed": 0}),
    "relevance": lambda: ((CAND.copy(), REF.copy()), {}),
    "safeinstr_finetune": _loop_call(mix_every=1),
    "safety_step": lambda: ((1.2, torch.tensor([0.0, 2.0])), {"tau": 0.2, "trust_radius": 1.0}),
    "sft_finetune": _loop_call(),
    "spag_finetune": _loop_call(),
    "topk_relevance": lambda: ((CAND.copy(), REF.copy(), 2), {}),
}

NOT_WALKED = {
    "FinetuneHistory": "a result record that the fine-tuning loops fill (each loop is walked)",
    "ProjectionStep": "a result record of SafetyProjection.step() (SafetyProjection and spag_finetune are walked)",
    "Selection": "a result record of the selectors (dpp_select, random_select, topk_relevance are walked)",
}

ALLOWED = {
    "safety_step.trust_radius:inf": "math.inf means no trust region, by design (HOSTILE 'safety_step infinite "
                                    "radius')",
    "SafetyProjection.trust_radius:inf": "math.inf means no trust region in mode='closed_form', by design "
                                         "(refused in mode='reference_adamw': HOSTILE 'SafetyProjection "
                                         "reference_adamw with an infinite alpha_max')",
}
