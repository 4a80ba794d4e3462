"""Hostile calls to the hamu API and what each must do (run by ``tests/test_hostile.py``).

The package exports no ``nn.Module`` (HamuOptimizer wraps a torch optimizer), so ``MODULES``
is empty.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from icml26.contract import Probe
from icml26.papers.hamu import (
    HamuOptimizer,
    HamuStep,
    HamuStepLog,
    UnlearnHistory,
    distribute_bound,
    finetune,
    forget_split,
    gradient_ascent,
    graddiff,
    gru,
    hamu_update,
    kl_graddiff,
    neggrad_plus,
    pcgrad,
    scrub,
    stopping_threshold,
    unlearn,
)

MODULES: list = []

_NAN = float("nan")
_G = torch.tensor([1.0, 0.0])
_H = torch.tensor([0.0, 1.0])
_NAN_G = torch.tensor([_NAN, 0.0])


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 2))


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(8, 3, generator=g), torch.randint(0, 2, (8,), generator=g)


def _nan_loss_leaves_parameters_unchanged():
    """HamuOptimizer on a NaN loss: a ValueError, and the parameters are what they were."""
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    x, _ = _data()
    opt = HamuOptimizer(model.parameters(), lr=1.0)
    try:
        opt.step(lambda: model(x).sum() * _NAN, lambda: model(x).sum())
    except ValueError as exc:
        unchanged = all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
        return f"{exc} (parameters unchanged: {unchanged})"
    return "no error"


def _nan_batch(method: str):
    x, y = _data()
    bad = x.clone()
    bad[0] = _NAN
    return unlearn(_model(), [(bad, y)], [(x, y)], steps=2, lr=0.1, method=method, progress=False)


from .analysis import pareto_front, share_at_most, window_front_mean  # noqa: E402
from .problem import load_split  # noqa: E402

HOSTILE = [
    # the closed-form step
    Probe("hamu_update: NaN gradient", lambda: hamu_update(_NAN_G, _H, bound=0.1, radius=1.0), match="g_retain"),
    Probe("hamu_update: inf gradient", lambda: hamu_update(_G, torch.tensor([float("inf"), 0.0]), bound=0.1, radius=1.0),
          match="g_forget"),
    Probe("hamu_update: shapes differ", lambda: hamu_update(_G, torch.ones(3), bound=0.1, radius=1.0), match="shape"),
    Probe("hamu_update: empty gradients", lambda: hamu_update(torch.zeros(0), torch.zeros(0), bound=0.1, radius=1.0),
          match="empty"),
    Probe("hamu_update: NaN bound", lambda: hamu_update(_G, _H, bound=_NAN, radius=1.0), match="bound"),
    Probe("hamu_update: negative radius", lambda: hamu_update(_G, _H, bound=0.1, radius=-1.0), match="radius"),
    Probe("hamu_update: text bound", lambda: hamu_update(_G, _H, bound="0.1", radius=1.0), match="bound"),
    Probe("hamu_update: unknown variant", lambda: hamu_update(_G, _H, bound=0.1, radius=1.0, variant="X"),
          match="variant"),
    Probe("hamu_update: NumPy in, NumPy out", lambda: hamu_update(np.array([1.0, 0.0]), np.array([0.0, 1.0]),
                                                                  bound=0.1, radius=1.0),
          returns=lambda s: isinstance(s.delta, np.ndarray) and isinstance(s.hardness, float),
          doc="NumPy (or list) gradients give a NumPy δ; κ and the thresholds are Python floats"),
    Probe("HamuStep: unknown branch", lambda: HamuStep(_G, "sideways", False, 0.0, 0.0, 0.0), match="branch"),
    Probe("stopping_threshold: NaN norm", lambda: stopping_threshold(_NAN, 1.0, bound=0.1, radius=1.0),
          match="retain_norm"),
    Probe("stopping_threshold: negative norm", lambda: stopping_threshold(1.0, -1.0, bound=0.1, radius=1.0),
          match="forget_norm"),
    Probe("stopping_threshold: NaN bound", lambda: stopping_threshold(1.0, 1.0, bound=_NAN, radius=1.0), match="bound"),
    Probe("stopping_threshold: infeasible is NaN", lambda: stopping_threshold(1.0, 1.0, bound=2.0, radius=1.0),
          returns=lambda v: v != v, doc="κ₂ is NaN exactly when B > R‖g_f‖ (documented)"),
    # the optimizer (a NaN loss must not write NaN into the parameters)
    Probe("HamuOptimizer.step: NaN loss leaves the parameters unchanged", _nan_loss_leaves_parameters_unchanged,
          returns=lambda msg: "retain gradient holds NaN" in msg and "unchanged: True" in msg,
          doc="a ValueError naming the gradient, raised before any parameter changes"),
    Probe("HamuOptimizer.transform: NaN gradient",
          lambda: HamuOptimizer(_model().parameters(), lr=1.0).transform(
              [torch.full((2, 3), _NAN), torch.zeros(2)], [torch.ones(2, 3), torch.ones(2)]), match="retain gradient"),
    Probe("HamuOptimizer: NaN lr", lambda: HamuOptimizer(_model().parameters(), lr=_NAN), match="lr"),
    Probe("HamuOptimizer: text lr", lambda: HamuOptimizer(_model().parameters(), lr="1"), match="lr"),
    Probe("HamuOptimizer.set_lr: zero", lambda: HamuOptimizer(_model().parameters(), lr=1.0).set_lr(0.0), match="lr"),
    Probe("HamuOptimizer.set_lr: NaN", lambda: HamuOptimizer(_model().parameters(), lr=1.0).set_lr(_NAN), match="lr"),
    Probe("HamuOptimizer: NaN bound", lambda: HamuOptimizer(_model().parameters(), lr=1.0, bound=_NAN), match="bound"),
    Probe("HamuOptimizer: relative bound above 1", lambda: HamuOptimizer(_model().parameters(), lr=1.0, bound=1.5),
          match="bound"),
    Probe("HamuOptimizer: NaN max_grad_norm", lambda: HamuOptimizer(_model().parameters(), lr=1.0, max_grad_norm=_NAN),
          match="max_grad_norm"),
    Probe("HamuOptimizer: no parameters", lambda: HamuOptimizer([], lr=1.0), match="params"),
    Probe("HamuOptimizer: layerwise not a bool", lambda: HamuOptimizer(_model().parameters(), lr=1.0, layerwise="yes"),
          match="layerwise"),
    Probe("HamuOptimizer: unknown infeasible policy",
          lambda: HamuOptimizer(_model().parameters(), lr=1.0, infeasible="ignore"), match="infeasible"),
    Probe("HamuOptimizer.apply: wrong number of gradients",
          lambda: HamuOptimizer(_model().parameters(), lr=1.0).apply([torch.zeros(2, 3)], [torch.zeros(2, 3)]),
          match="one retain and one forget gradient"),
    Probe("HamuStepLog: a record, no checks", lambda: HamuStepLog(0.0, 0.0, 0.0, 1, 0, 0, False, False, 0.0, 0.0, 0.0, True),
          returns=lambda log: log.applied, doc="a plain record of one step; the optimizer fills it"),
    Probe("distribute_bound: NaN bound", lambda: distribute_bound(_NAN, torch.ones(2), torch.ones(2)), match="bound"),
    Probe("distribute_bound: negative bound", lambda: distribute_bound(-1.0, torch.ones(2), torch.ones(2)),
          match="bound"),
    Probe("distribute_bound: shapes differ", lambda: distribute_bound(1.0, torch.ones(2), torch.ones(3)),
          match="retain_norms"),
    Probe("distribute_bound: NaN norm", lambda: distribute_bound(1.0, torch.tensor([_NAN, 1.0]), torch.ones(2)),
          match="retain_norms"),
    Probe("distribute_bound: negative norm", lambda: distribute_bound(1.0, torch.ones(2), torch.tensor([-1.0, 1.0])),
          match="forget_norms"),
    Probe("distribute_bound: no block", lambda: distribute_bound(1.0, torch.ones(0), torch.ones(0)), match="non-empty"),
    # the loop
    Probe("unlearn: NaN input under HAMU", lambda: _nan_batch("hamu_q"), match="step 0"),
    Probe("unlearn: NaN input under a baseline", lambda: _nan_batch("graddiff"), match="step 0"),
    Probe("unlearn: fractional steps", lambda: unlearn(_model(), [_data()], [_data()], steps=2.5, lr=0.1), match="steps"),
    Probe("unlearn: negative steps", lambda: unlearn(_model(), [_data()], [_data()], steps=-1, lr=0.1), match="steps"),
    Probe("unlearn: NaN lr", lambda: unlearn(_model(), [_data()], [_data()], steps=1, lr=_NAN), match="lr"),
    Probe("unlearn: unknown method", lambda: unlearn(_model(), [_data()], [_data()], steps=1, lr=0.1, method="x"),
          match="method"),
    Probe("unlearn: a model without parameters", lambda: unlearn(nn.ReLU(), [_data()], [_data()], steps=1, lr=0.1),
          match="parameter"),
    Probe("unlearn: no retain batch", lambda: unlearn(_model(), [], [_data()], steps=1, lr=0.1, progress=False),
          match="empty"),
    Probe("unlearn: a batch that is not a pair", lambda: unlearn(_model(), [_data()[0]], [_data()], steps=1, lr=0.1,
                                                                 progress=False), match="inputs, targets"),
    Probe("unlearn: negative eval_every", lambda: unlearn(_model(), [_data()], [_data()], steps=1, lr=0.1, eval_every=-1),
          match="eval_every"),
    Probe("unlearn: NaN max_grad_norm", lambda: unlearn(_model(), [_data()], [_data()], steps=1, lr=0.1,
                                                        method="graddiff", max_grad_norm=_NAN), match="max_grad_norm"),
    Probe("unlearn: a keyword the baseline does not take",
          lambda: unlearn(_model(), [_data()], [_data()], steps=1, lr=0.1, method="graddiff",
                          baseline_kwargs={"beta": 0.5}, progress=False), raises=TypeError, match="beta"),
    Probe("UnlearnHistory: unknown method", lambda: UnlearnHistory(method="x"), match="method"),
    # forget sets
    Probe("forget_split: NaN hardness", lambda: forget_split(np.array([0, 1, 0, 1]), 0, _NAN), match="hardness"),
    Probe("forget_split: hardness above 1", lambda: forget_split(np.array([0, 1, 0, 1]), 0, 1.5), match="hardness"),
    Probe("forget_split: 2-D labels", lambda: forget_split(np.zeros((2, 2), dtype=int), 0, 0.5), match="labels"),
    Probe("forget_split: float labels", lambda: forget_split(np.array([0.5, 1.0]), 0, 0.5), match="labels"),
    Probe("forget_split: absent class", lambda: forget_split(np.array([0, 1]), 5, 0.5), match="forget_class"),
    Probe("forget_split: fractional class", lambda: forget_split(np.array([0, 1]), 0.5, 0.5), match="forget_class"),
    Probe("forget_split: text rng", lambda: forget_split(np.array([0, 1]), 0, 0.5, rng="a"), match="rng"),
    Probe("forget_split: torch labels accepted", lambda: forget_split(torch.tensor([0, 1, 0, 1]), 0, 0.5, rng=0),
          returns=lambda fr: len(fr[0]) == 2 and len(fr[0]) + len(fr[1]) == 4,
          doc="a label tensor is read like a NumPy array"),
    # the baselines (directions)
    Probe("finetune: shapes differ", lambda: finetune(_G, torch.ones(3)), match="shape"),
    Probe("gradient_ascent: NaN gradient", lambda: gradient_ascent(_G, _NAN_G), match="g_forget"),
    Probe("graddiff: 2-D gradients", lambda: graddiff(torch.ones(2, 2), torch.ones(2, 2)), match="1-D"),
    Probe("graddiff: NumPy in, NumPy out", lambda: graddiff(np.ones(2), np.zeros(2)),
          returns=lambda d: isinstance(d, np.ndarray) and d.tolist() == [0.5, 0.5], doc="NumPy gradients, NumPy direction"),
    Probe("neggrad_plus: NaN beta", lambda: neggrad_plus(_G, _H, beta=_NAN), match="beta"),
    Probe("neggrad_plus: beta above 1", lambda: neggrad_plus(_G, _H, beta=1.5), match="beta"),
    Probe("kl_graddiff: NaN KL gradient", lambda: kl_graddiff(_G, _H, g_retain_kl=_NAN_G), match="g_retain_kl"),
    Probe("kl_graddiff: KL gradient missing", lambda: kl_graddiff(_G, _H), raises=TypeError, match="g_retain_kl"),
    Probe("scrub: NaN alpha", lambda: scrub(_G, _H, g_retain_kl=_G, g_forget_kl=_H, alpha=_NAN), match="alpha"),
    Probe("scrub: KL gradients of another length",
          lambda: scrub(_G, _H, g_retain_kl=torch.ones(3), g_forget_kl=torch.ones(3)), match="g_retain_kl"),
    Probe("pcgrad: shapes differ", lambda: pcgrad(_G, torch.ones(3)), match="shape"),
    Probe("gru: NaN gradient", lambda: gru(_NAN_G, _H), match="g_retain"),
    # the reproduction's verdict functions and data
    Probe("window_front_mean: range holds one grid point",
          lambda: window_front_mean([0.0, 0.5, 1.0], [1.0, 1.0, 1.0], 0.4, 0.6), match="two grid points"),
    Probe("window_front_mean: grid and front of different lengths",
          lambda: window_front_mean([0.0, 1.0], [1.0], 0.0, 1.0), match="one length"),
    Probe("pareto_front: report of another length",
          lambda: pareto_front([0.1, 0.2], [0.9, 0.8], [0.5], report=[0.9]), match="one length"),
    Probe("share_at_most: NaN counts as above", lambda: share_at_most([_NAN, 0.0], 1.0), returns=lambda v: v == 0.5,
          doc="a NaN value is not at most the level"),
    Probe("load_split: unknown data set", lambda: load_split("cifar", 10, 10, 10, np.random.default_rng(0)),
          match="dataset"),
    Probe("load_split: more samples than a class holds",
          lambda: load_split("digits", 1700, 50, 50, np.random.default_rng(0)), match="class"),
]


def _grads(n: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, generator=g), torch.randn(n, generator=g)


def _pair(**kwargs):
    return lambda: (_grads(), kwargs)


VALID = {
    "HamuOptimizer": lambda: ((_model().parameters(),), {"lr": 0.1, "bound": 0.5, "max_grad_norm": 1.0}),
    "distribute_bound": lambda: ((0.5, torch.tensor([1.0, 2.0]), torch.tensor([0.5, 1.5])), {}),
    "finetune": _pair(),
    "forget_split": lambda: ((np.array([0, 1, 0, 1, 0, 1]), 0, 0.5), {"rng": 0}),
    "gradient_ascent": _pair(),
    "graddiff": _pair(),
    "gru": _pair(),
    "hamu_update": _pair(bound=0.1, radius=1.0),
    "kl_graddiff": lambda: (_grads(), {"g_retain_kl": _grads()[0].flip(0)}),
    "neggrad_plus": _pair(beta=0.9),
    "pcgrad": _pair(),
    "scrub": lambda: (_grads(), {"g_retain_kl": _grads()[0].flip(0), "g_forget_kl": _grads()[1].flip(0),
                                 "alpha": 0.001, "gamma": 0.99}),
    "stopping_threshold": lambda: ((1.0, 2.0), {"bound": 0.1, "radius": 1.0}),
    "unlearn": lambda: ((_model(), [_data()], [_data()]), {"steps": 2, "lr": 0.1, "bound": 0.5, "max_grad_norm": 1.0,
                                                          "eval_every": 1, "progress": False}),
}

NOT_WALKED = {
    "HamuStep": "a result record filled by hamu_update (walked); kappa_direct is -inf and kappa_stop NaN by design "
                "(documented), and HOSTILE 'HamuStep: unknown branch' checks its one validated field",
    "HamuStepLog": "a plain record of one optimizer step, filled by HamuOptimizer (walked); HOSTILE "
                   "'HamuStepLog: a record, no checks' documents that it holds what it is given",
    "UnlearnHistory": "a result record filled by unlearn (walked); HOSTILE 'UnlearnHistory: unknown method' checks "
                      "its one validated field",
}

ALLOWED = {
    "HamuOptimizer.max_grad_norm:inf": "an infinite clipping norm means no clipping, like None (documented)",
    "unlearn.max_grad_norm:inf": "an infinite clipping norm means no clipping, like None (documented)",
}
