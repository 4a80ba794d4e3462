"""Unlearning baselines as update directions from paired retain/forget gradients.

Every function maps flat gradients ``g_retain`` = ∇L_r and ``g_forget`` = ∇L_f (1-D tensors of
the same length, on any device; NumPy arrays are accepted and give a NumPy direction) to a
direction ``d`` applied by gradient descent, θ ← θ − lr·d. NaN or inf in a gradient is a
``ValueError`` (a direction from it would write NaN into the parameters). They are update
*directions*, not procedures (lmcleaner's ``gradient_ascent_unlearn`` and
``neggrad_plus_unlearn`` are whole unlearning runs). GradDiff, KL and SCRUB are the "equivalent gradients" of the HAMU authors'
``methods/core.py`` (the average of the retain and forget objectives' gradients).

PCGrad and GRU project **only when the objectives conflict**. The objectives are retain descent
(d_r = g_r) and forget ascent (d_f = −g_f), so they conflict when d_r·d_f < 0, i.e. when
g_r·g_f > 0. The authors' code tests ``g_r·g_f < 0`` and so projects exactly when there is no
conflict; we do not reproduce that.
"""

from __future__ import annotations

from typing import Callable

import math

import torch
from torch import Tensor

from .solver import _number, check_gradient_pair

__all__ = [
    "BASELINES",
    "finetune",
    "gradient_ascent",
    "graddiff",
    "gru",
    "kl_graddiff",
    "neggrad_plus",
    "pcgrad",
    "scrub",
]

_EPS = 1e-12


def _out(d: Tensor, numpy_in: bool):
    return d.numpy() if numpy_in else d


def _weight(name: str, value: float) -> float:
    value = _number(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name}={value} must be finite")
    return value


def finetune(g_retain: Tensor, g_forget: Tensor) -> Tensor:
    """Fine-tune on the retain set only: d = g_r."""
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    return _out(g_retain.clone(), np_in)


def gradient_ascent(g_retain: Tensor, g_forget: Tensor) -> Tensor:
    """Gradient ascent on the forget loss: d = −g_f."""
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    return _out(-g_forget, np_in)


def graddiff(g_retain: Tensor, g_forget: Tensor) -> Tensor:
    """Gradient difference: d = (g_r − g_f)/2 (the authors' equivalent gradient)."""
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    # d = (g_r − g_f) / 2
    return _out((g_retain - g_forget) / 2.0, np_in)


def neggrad_plus(g_retain: Tensor, g_forget: Tensor, *, beta: float = 0.9) -> Tensor:
    """NegGrad+ (Kurmanji et al., 2023): d = β·g_r − (1 − β)·g_f, β in [0, 1]."""
    beta = _number("beta", beta)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta={beta} must be in [0, 1] (the retain weight of NegGrad+)")
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    # d = β g_r − (1 − β) g_f
    return _out(beta * g_retain - (1.0 - beta) * g_forget, np_in)


def kl_graddiff(g_retain: Tensor, g_forget: Tensor, *, g_retain_kl: Tensor) -> Tensor:
    """KL baseline: d = (∇KL_r − g_f)/2, ∇KL_r the gradient of KL(original ‖ model) on retain data."""
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    g_retain_kl, _, _ = check_gradient_pair(g_retain_kl, g_forget, names=("g_retain_kl", "g_forget"), flat=True)
    # d = (∇KL_r − g_f) / 2
    return _out((g_retain_kl - g_forget) / 2.0, np_in)


def scrub(
    g_retain: Tensor,
    g_forget: Tensor,
    *,
    g_retain_kl: Tensor,
    g_forget_kl: Tensor,
    alpha: float = 0.001,
    gamma: float = 0.99,
) -> Tensor:
    """SCRUB (Kurmanji et al., 2023) as one simultaneous step, as in the HAMU authors' code.

    d = (α·∇KL_r + γ·g_r − ∇KL_f)/2: stay close to the original model and fit the retain data,
    move away from the original model on the forget data. α = 0.001, γ = 0.99 as in the
    authors' ``methods/core.py``.
    """
    alpha, gamma = _weight("alpha", alpha), _weight("gamma", gamma)
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    g_retain_kl, g_forget_kl, _ = check_gradient_pair(g_retain_kl, g_forget_kl, names=("g_retain_kl", "g_forget_kl"),
                                                      flat=True)
    if g_retain_kl.shape != g_retain.shape:
        raise ValueError(f"g_retain_kl {tuple(g_retain_kl.shape)} must have the gradients' shape {tuple(g_retain.shape)}")
    # d = (α ∇KL_r + γ g_r − ∇KL_f) / 2
    return _out((alpha * g_retain_kl + gamma * g_retain - g_forget_kl) / 2.0, np_in)


def pcgrad(g_retain: Tensor, g_forget: Tensor) -> Tensor:
    """PCGrad (Yu et al., 2020) on retain descent d_r = g_r and forget ascent d_f = −g_f.

    On conflict (d_r·d_f < 0) each direction is projected onto the normal plane of the other,
    d_r' = d_r − (d_r·d_f/‖d_f‖²)·d_f and d_f' = d_f − (d_r·d_f/‖d_r‖²)·d_r; the result is
    (d_r' + d_f')/2, which has a non-negative inner product with both. Without conflict it is
    (d_r + d_f)/2, the GradDiff direction.
    """
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    d_r, d_f = g_retain, -g_forget
    dot = torch.dot(d_r, d_f)
    if dot < 0:
        d_r_proj = d_r - (dot / torch.clamp(torch.dot(d_f, d_f), min=_EPS)) * d_f
        d_f_proj = d_f - (dot / torch.clamp(torch.dot(d_r, d_r), min=_EPS)) * d_r
        return _out((d_r_proj + d_f_proj) / 2.0, np_in)
    return _out((d_r + d_f) / 2.0, np_in)


def gru(g_retain: Tensor, g_forget: Tensor) -> Tensor:
    """Gradient-rectified unlearning (GRU; Wang et al., 2025): forget ascent, projected on conflict.

    d_f = −g_f; on conflict with retain descent (d_f·g_r < 0) it is replaced by
    d_f − (d_f·g_r/‖g_r‖²)·g_r, which leaves the retain loss unchanged to first order.
    """
    g_retain, g_forget, np_in = check_gradient_pair(g_retain, g_forget, flat=True)
    d_f = -g_forget
    dot = torch.dot(d_f, g_retain)
    if dot < 0:
        # d = d_f − (d_f·g_r/‖g_r‖²) g_r
        return _out(d_f - (dot / torch.clamp(torch.dot(g_retain, g_retain), min=_EPS)) * g_retain, np_in)
    return _out(d_f, np_in)


BASELINES: dict[str, Callable[..., Tensor]] = {
    "finetune": finetune,
    "gradient_ascent": gradient_ascent,
    "graddiff": graddiff,
    "neggrad_plus": neggrad_plus,
    "kl": kl_graddiff,
    "scrub": scrub,
    "pcgrad": pcgrad,
    "gru": gru,
}
"""Baselines by name, as :func:`icml26.papers.hamu.unlearn` accepts them."""
