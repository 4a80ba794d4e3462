"""Step A of Fox: the visual-attention entropy probe and the choice of "risky" heads.

For one query row ``A`` (a probability vector over the keys) of one head, with ``V`` the
image keys and ``sys`` the keys before the first image token (BOS, system prompt, "USER:"):

* ``m_V   = Σ_{k∈V} A_k``                      (mass on the image)
* ``m_sys = Σ_{k∈sys} A_k``                    (mass on the prefix / attention sink)
* ``H_vis = −Σ_{k∈V} p_k ln(p_k + ε)``, ``p_k = A_k / (m_V + ε)``  (entropy of the renormalised
  visual attention, natural log, ε = 1e-12)
* ``s_h = m_sys · H_vis`` for LLaVA (``score="sys_entropy"``); ``s_h = H_vis`` for
  InstructBLIP / MiniGPT-4 (``score="entropy"``) [authors' code, ``Uncertain_head.py``].

A high score flags a head that parks its mass on the prefix while its visual attention is
diffuse: the head carries the language prior rather than the image. The top
``k = max(1, min(round(ρH), ⌊H/2⌋))`` heads per row are selected (ρ = 0.35 for LLaVA, 0.40
for InstructBLIP).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import torch

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite

__all__ = [
    "ENTROPY_EPS", "SCORES", "ProbeStats", "max_entropy", "num_risky_heads", "select_risky_heads",
    "visual_entropy_probe",
]

ENTROPY_EPS = 1e-12
"""ε of the renormalisation and of the logarithm [authors' code]."""

SCORES = ("sys_entropy", "entropy")
"""The risk scores: ``m_sys · H_vis`` (LLaVA) and ``H_vis`` (InstructBLIP, MiniGPT-4)."""


@dataclasses.dataclass(frozen=True)
class ProbeStats:
    """The probe's statistics for each row (and head): tensors of one shape ``attn_row.shape[:-1]``.

    Attributes:
        m_sys: attention mass on the system keys (before the first image token).
        m_vis: attention mass on the image keys.
        h_vis: entropy (nats) of the attention renormalised over the image keys; at most ``ln |V|``.
        score: the risk score, ``m_sys · h_vis`` or ``h_vis``.
    """

    m_sys: torch.Tensor
    m_vis: torch.Tensor
    h_vis: torch.Tensor
    score: torch.Tensor


def _key_mask(mask, name: str, n_keys: int, device: torch.device) -> torch.Tensor:
    """A boolean key mask (as given, broadcastable) or a 1-D index tensor turned into one."""
    if not isinstance(mask, torch.Tensor):
        try:
            mask = torch.as_tensor(mask)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must be a boolean mask over the keys or a 1-D index tensor") from None
    if mask.dtype == torch.bool:
        if mask.dim() == 0 or mask.shape[-1] != n_keys:
            raise ValueError(f"{name} has shape {tuple(mask.shape)} but attn_row has {n_keys} keys; "
                             "give one flag per key (last dimension)")
        return mask.to(device)
    if mask.is_floating_point() or mask.is_complex() or mask.dim() != 1:
        raise TypeError(f"{name} must be a boolean mask over the keys or a 1-D integer index tensor, "
                        f"got {mask.dtype} of shape {tuple(mask.shape)}")
    if mask.numel() and (int(mask.min()) < 0 or int(mask.max()) >= n_keys):
        raise ValueError(f"{name} holds an index outside [0, {n_keys}); indices must address the keys")
    out = torch.zeros(n_keys, dtype=torch.bool, device=device)
    out[mask.to(device=device, dtype=torch.long)] = True
    return out


def visual_entropy_probe(
    attn_row: torch.Tensor,
    visual_keys: torch.Tensor,
    system_keys: torch.Tensor,
    *,
    score: Literal["sys_entropy", "entropy"] = "sys_entropy",
    eps: float = ENTROPY_EPS,
) -> ProbeStats:
    """Masses, visual entropy and risk score of attention rows.

    Args:
        attn_row: ``(..., K)`` attention probabilities (each row sums to 1), e.g. ``(batch, heads, K)``
            for the last query row of every head. Computed in float32 (or float64 if given).
        visual_keys: boolean mask ``(K,)`` or broadcastable to ``attn_row`` (e.g. ``(batch, 1, K)``),
            or a 1-D tensor of key indices: the image keys ``V``.
        system_keys: the same for the keys before the first image token.
        score: ``"sys_entropy"`` (``m_sys·H_vis``, LLaVA) or ``"entropy"`` (``H_vis``).
        eps: ε in ``p = A/(m_V+ε)`` and ``ln(p+ε)``.

    Returns:
        :class:`ProbeStats` with tensors of shape ``attn_row.shape[:-1]``.

    Raises:
        ValueError: no image key, overlapping key sets, a mask of the wrong length, negative,
            NaN or infinite probabilities.
    """
    attn = as_tensor(attn_row, "attn_row")
    if attn.dim() < 1 or attn.shape[-1] < 1:
        raise ValueError(f"attn_row must have a last dimension of keys, got shape {tuple(attn.shape)}")
    if attn.dtype not in (torch.float32, torch.float64):
        attn = attn.float()
    if score not in SCORES:
        raise ValueError(f"score={score!r} must be one of {SCORES}")
    eps = check_real(eps, "eps", low=0.0)
    n_keys = attn.shape[-1]
    vis = _key_mask(visual_keys, "visual_keys", n_keys, attn.device)
    sys_ = _key_mask(system_keys, "system_keys", n_keys, attn.device)
    if not bool(vis.any(dim=-1).all()):
        raise ValueError("visual_keys selects no key (for some row); the probe needs the image tokens' positions")
    if bool((vis & sys_).any()):
        raise ValueError("visual_keys and system_keys overlap; the system keys are those before the first image token")
    require_finite(attn, "attn_row", hint="pass attention probabilities (after softmax)")
    if bool((attn < 0).any()):
        raise ValueError("attn_row holds negative values; pass attention probabilities (after softmax)")
    return _probe(attn, vis.to(attn.dtype), sys_.to(attn.dtype), score, eps)


def _probe(attn: torch.Tensor, vis_f: torch.Tensor, sys_f: torch.Tensor, score: str,
           eps: float = ENTROPY_EPS) -> ProbeStats:
    """The probe on validated input (float key masks broadcastable to ``attn``)."""
    # m_V = Σ_{k∈V} A_k ;  m_sys = Σ_{k<img_s} A_k
    m_vis = (attn * vis_f).sum(-1)
    m_sys = (attn * sys_f).sum(-1)
    # p_k = A_k / (m_V + ε) over the image keys;  H_vis = −Σ_{k∈V} p_k ln(p_k + ε)
    p = attn * vis_f / (m_vis.unsqueeze(-1) + eps)
    h_vis = -(p * torch.log(p + eps)).sum(-1)
    # s_h = m_sys · H_vis (LLaVA) or H_vis (InstructBLIP / MiniGPT-4)
    risk = m_sys * h_vis if score == "sys_entropy" else h_vis
    return ProbeStats(m_sys=m_sys, m_vis=m_vis, h_vis=h_vis, score=risk)


def num_risky_heads(n_heads: int, rho: float) -> int:
    """``k = max(1, min(round(ρ·H), ⌊H/2⌋))`` [authors' code].

    (H, ρ) = (2, .35) → 1, (4, .35) → 1, (8, .35) → 3, (32, .35) → 11, (32, .4) → 13. ``round``
    is Python's (half to even), as in the authors' code.
    """
    n_heads = check_int(n_heads, "n_heads", low=1)
    rho = check_real(rho, "rho", low=0.0, high=1.0, low_open=True)
    return max(1, min(round(rho * n_heads), n_heads // 2))


def select_risky_heads(score: torch.Tensor, rho: float) -> torch.Tensor:
    """Boolean mask of the top-``k`` heads by score along the last dimension.

    Args:
        score: ``(..., H)`` risk scores (e.g. :attr:`ProbeStats.score` rearranged with heads last).
        rho: head fraction ρ in (0, 1]; ``k = num_risky_heads(H, ρ)``.

    Returns:
        ``(..., H)`` boolean, exactly ``k`` True per row. Ties go to the lower head index.

    Raises:
        ValueError: ρ outside (0, 1], NaN scores (a NaN would be ranked arbitrarily).
    """
    s = as_tensor(score, "score")
    if s.dim() < 1 or s.shape[-1] < 1:
        raise ValueError(f"score must have a last dimension of heads, got shape {tuple(s.shape)}")
    if bool(torch.isnan(s).any()):
        raise ValueError("score contains NaN; the ranking of heads would be arbitrary")
    return _select(s, num_risky_heads(s.shape[-1], rho))


def _select(score: torch.Tensor, k: int) -> torch.Tensor:
    """Top-``k`` mask along the last dimension; a stable sort sends ties to the lower index."""
    order = torch.sort(score, dim=-1, descending=True, stable=True).indices[..., :k]
    return torch.zeros(score.shape, dtype=torch.bool, device=score.device).scatter_(-1, order, True)


def max_entropy(n_visual: int) -> float:
    """``ln |V|``: the visual entropy of uniform attention over ``n_visual`` image keys."""
    return math.log(check_int(n_visual, "n_visual", low=1))
