"""Step C of Fox, and the logit combinations of the baselines, as pure functions of logits.

Fox (authors' ``vcd_sample.py``, ``use_cd`` branch), with ``l_o`` the observational and ``l_i``
the interventional stream's last-position logits:

1. ``JS = ½KL(p‖m) + ½KL(q‖m)`` (nats), ``p = softmax(l_o)``, ``q = softmax(l_i)`` clipped to
   [5e-8, 1] without renormalising, ``m = (p + q)/2``; per row (the authors use row 0 only);
2. ``w = α_JS = 2`` if ``JS < τ = 0.15``, else ``w = JS`` (so ``w ≤ ln 2``);
3. ``z = l_o + w·l_i`` (a product of experts ``p_o·p_i^w``);
4. plausibility mask: ``z_v = −∞`` where ``l_o,v < ln β + max l_o`` (β = 0.1), i.e. where
   ``p_o,v < β·max p_o``.

Baselines: VCD ``z = (1+α)l − α·l_cd`` (α = 1, β = 0.1; SID uses the same with its own
``l_cd``); PAI ``γ(log p − log p_u) + log p_u`` (γ = 1.1, β = 0.1), masks on the conditional
logits.
"""

from __future__ import annotations

import math

import torch

from icml26.common.argcheck import as_tensor, check_real, require_finite

__all__ = [
    "JS_CLIP",
    "cfg_combine",
    "conflict_gated_fusion",
    "fusion_weight",
    "js_divergence",
    "plausibility_mask",
    "vcd_combine",
]

JS_CLIP = 5e-8
"""Lower clip of the probabilities in the JS divergence [authors' code]."""


def _logits(x, name: str) -> torch.Tensor:
    """``x`` as a tensor of logits: NaN and ``+inf`` refused, ``-inf`` (a masked token) allowed.

    A NaN logit would not stay NaN downstream: the plausibility mask turns its row into all ``-inf``
    and greedy decoding then picks token 0 without a trace.
    """
    t = as_tensor(x, name)
    if bool((torch.isnan(t) | torch.isposinf(t)).any()):
        raise ValueError(f"{name} contains NaN or +inf; pass finite logits (-inf marks a masked token)")
    return t


def _pair(a, b, name_a: str, name_b: str) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = _logits(a, name_a), _logits(b, name_b)
    if x.shape != y.shape:
        raise ValueError(f"{name_a} {tuple(x.shape)} and {name_b} {tuple(y.shape)} must have the same shape")
    if x.dim() < 1 or x.shape[-1] < 2:
        raise ValueError(f"{name_a} must have a vocabulary dimension of at least 2 (last), got {tuple(x.shape)}")
    return x, y


def js_divergence(logits_p: torch.Tensor, logits_q: torch.Tensor, *, clip: float = JS_CLIP) -> torch.Tensor:
    """Jensen-Shannon divergence (nats) between the softmaxes of two logit tensors, per row.

    Args:
        logits_p, logits_q: ``(..., V)`` logits (temperature 1). ``-inf`` entries are allowed.
        clip: probabilities are clipped to ``[clip, 1]`` (not renormalised) before the logs.

    Returns:
        ``(...,)`` float32 (float64 for float64 input). Symmetric, 0 iff the distributions are
        equal, at most ln 2 (up to the clip's ~V·clip).

    Raises:
        ValueError: NaN or ``+inf`` logits, shapes that differ, a vocabulary of one token, a clip
            outside (0, 1).
    """
    lp, lq = _pair(logits_p, logits_q, "logits_p", "logits_q")
    clip = check_real(clip, "clip", low=0.0, high=1.0, low_open=True, high_open=True)
    return _js(lp, lq, clip)


def _js(lp: torch.Tensor, lq: torch.Tensor, clip: float = JS_CLIP) -> torch.Tensor:
    """:func:`js_divergence` on validated logits."""
    dtype = torch.float64 if lp.dtype == torch.float64 else torch.float32
    p = torch.softmax(lp.to(dtype), -1).clamp(clip, 1.0)
    q = torch.softmax(lq.to(dtype), -1).clamp(clip, 1.0)
    # m = (p + q)/2;  JS = ½ Σ p ln(p/m) + ½ Σ q ln(q/m)
    m = 0.5 * (p + q)
    return 0.5 * (p * (p.log() - m.log())).sum(-1) + 0.5 * (q * (q.log() - m.log())).sum(-1)


def fusion_weight(js: torch.Tensor, *, tau: float = 0.15, alpha: float = 2.0) -> torch.Tensor:
    """The conflict gate: ``w = α`` where ``JS < τ`` (the streams agree), ``w = JS`` otherwise.

    ``js`` must be finite (a NaN divergence would pass through the gate as the weight).
    """
    js = as_tensor(js, "js")
    require_finite(js, "js", hint="pass the divergences of finite logits (js_divergence)")
    tau = check_real(tau, "tau", low=0.0)
    alpha = check_real(alpha, "alpha")
    return _weight(js, tau, alpha)


def _weight(js: torch.Tensor, tau: float, alpha: float) -> torch.Tensor:
    """:func:`fusion_weight` on validated input."""
    return torch.where(js < tau, torch.full_like(js, alpha), js)


def plausibility_mask(logits: torch.Tensor, beta: float = 0.1) -> torch.Tensor:
    """Boolean ``(..., V)``: True for the tokens kept, ``logits ≥ ln β + max logits`` (``p ≥ β·max p``).

    ``beta=0`` keeps every token with a finite logit... and every ``-inf`` one too (ln 0 = −∞).
    NaN and ``+inf`` logits are refused (a NaN row would come out all False).
    """
    x = _logits(logits, "logits")
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    return _plausible(x, beta)


def _plausible(x: torch.Tensor, beta: float) -> torch.Tensor:
    """:func:`plausibility_mask` on validated input."""
    if beta == 0.0:
        return torch.ones_like(x, dtype=torch.bool)
    # cutoff = log β + max l_o
    cutoff = math.log(beta) + x.max(dim=-1, keepdim=True).values
    return x >= cutoff


def conflict_gated_fusion(
    l_o: torch.Tensor,
    l_i: torch.Tensor,
    *,
    tau: float = 0.15,
    alpha: float = 2.0,
    beta: float = 0.1,
    mask: bool = True,
) -> torch.Tensor:
    """Fox's fused logits ``z = l_o + w·l_i`` with the JS gate and the plausibility mask.

    Args:
        l_o: ``(..., V)`` observational (vanilla) logits.
        l_i: ``(..., V)`` interventional logits.
        tau: JS threshold τ (0.15); ``JS < τ`` gives ``w = alpha``, else ``w = JS``.
        alpha: α_JS, the weight when the streams agree (2).
        beta: plausibility β (0.1), applied to ``l_o``.
        mask: apply the plausibility mask (``False``: the authors' greedy path, which takes the
            argmax before masking).

    Returns:
        ``(..., V)`` fused logits in float32 (float64 for float64 input), ``-inf`` where masked.
        Identical streams give ``z = 3·l_o``.

    Raises:
        ValueError: NaN or ``+inf`` logits (the mask would hide a NaN row as all ``-inf``),
            shapes that differ, τ < 0, β ∉ [0, 1].
    """
    lo, li = _pair(l_o, l_i, "l_o", "l_i")
    tau = check_real(tau, "tau", low=0.0)
    alpha = check_real(alpha, "alpha")
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    dtype = torch.float64 if lo.dtype == torch.float64 else torch.float32
    lo, li = lo.to(dtype), li.to(dtype)
    w = _weight(_js(lo, li), tau, alpha)
    # z = l_o + w · l_i
    z = lo + w.unsqueeze(-1) * li
    if mask:
        z = z.masked_fill(~_plausible(lo, beta), float("-inf"))
    return z


def vcd_combine(logits: torch.Tensor, logits_cd: torch.Tensor, *, alpha: float = 1.0, beta: float = 0.1,
                mask: bool = True) -> torch.Tensor:
    """Contrastive decoding (VCD; SID with its own ``logits_cd``): ``(1+α)l − α·l_cd``, masked on ``l``.

    Args:
        logits: ``(..., V)`` logits of the original input.
        logits_cd: ``(..., V)`` logits of the contrastive input (noised image, pruned tokens).
        alpha: α (1 in the VCD and SID scripts; VCD's function default is 0.5).
        beta: plausibility β on ``logits`` (0.1).
        mask: apply the plausibility mask.
    """
    l, lcd = _pair(logits, logits_cd, "logits", "logits_cd")
    alpha = check_real(alpha, "alpha", low=0.0)
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    dtype = torch.float64 if l.dtype == torch.float64 else torch.float32
    l, lcd = l.to(dtype), lcd.to(dtype)
    # z = (1 + α) l − α l_cd
    z = (1.0 + alpha) * l - alpha * lcd
    if mask:
        z = z.masked_fill(~_plausible(l, beta), float("-inf"))
    return z


def cfg_combine(logits: torch.Tensor, logits_uncond: torch.Tensor, *, gamma: float = 1.1, beta: float = 0.1,
                mask: bool = True) -> torch.Tensor:
    """PAI's classifier-free guidance against a text-only stream: ``γ(log p − log p_u) + log p_u``.

    Args:
        logits: ``(..., V)`` logits with the image (PAI's attention-amplified stream).
        logits_uncond: ``(..., V)`` logits of the text-only prompt.
        gamma: γ (1.1). ``γ = 1`` returns ``log_softmax(logits)`` (masked).
        beta: plausibility β on ``logits`` (0.1).
        mask: apply the plausibility mask.
    """
    l, lu = _pair(logits, logits_uncond, "logits", "logits_uncond")
    gamma = check_real(gamma, "gamma")
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    dtype = torch.float64 if l.dtype == torch.float64 else torch.float32
    logp, logpu = torch.log_softmax(l.to(dtype), -1), torch.log_softmax(lu.to(dtype), -1)
    # out = γ (log p − log p_u) + log p_u
    z = gamma * (logp - logpu) + logpu
    if mask:
        z = z.masked_fill(~_plausible(l.to(dtype), beta), float("-inf"))
    return z
