"""Online compilation of a scenario's head mask (PSP online, brief §1.4).

From the probe outputs ``p_{ℓ,k}`` of one forward pass over the scenario's first input:

* similarity ``s_k = max_ℓ p_{ℓ,k}`` (unnormalised) — :func:`similarity`;
* breadth ``q_k = mean_ℓ p_{ℓ,k} / Σ_j mean_ℓ p_{ℓ,j}``, ``c = H(q) / log K ∈ [0, 1]`` — :func:`breadth`;
* base keep-ratio ``ρ = min(1, ρ_min + η·c)`` (``η`` = ``strength``; as the authors coded
  it, a larger ``η`` keeps *more* heads, their README says the opposite);
* for each domain with ``s_k ≥ min_similarity``: keep the global top ``⌊L·H·ρ·s_k⌋`` heads
  of ``s_k · I_{·,·,k}``; the mask is the union over domains, plus the whitelist;
* floors: at least ``floors[0]`` heads and ``⌈floors[1]·H⌉`` heads per layer, and
  ``⌈floors[2]·L·H⌉`` heads overall (authors: 1, 10 %, 5 %), filled with the best heads.

:func:`compile_mask` is this procedure; with ``target_prune_ratio`` it returns the mask of
the strength at which exactly ``round(ratio·L·H)`` heads go. The union of per-domain top-k
sets grows through a fixed order of the heads as ``ρ`` grows — head ``(ℓ,h)`` enters when
``L·H·ρ·s_k ≥ rank_k(ℓ,h) + 1`` for some ``k`` — so the exact budget is that order's prefix
(one step of the union may add several heads at once; the order breaks such ties by
``max_k s_k·I_{ℓ,h,k}``, then by index).

:func:`reference_compile` is the authors' compiler with all their heuristics (domain
inference with the thresholds 0.05/0.15, the validity threshold 0.1, the exponent 1.5, the
fallback similarity 0.3); those numbers are theirs, not the paper's.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor

from icml26.common.argcheck import check_real

__all__ = ["breadth", "compile_mask", "reference_compile", "select_heads", "similarity"]


# ---------------------------------------------------------------------------
# scenario profile
# ---------------------------------------------------------------------------
def _probabilities(p, name: str = "probabilities") -> Tensor:
    if not isinstance(p, torch.Tensor):
        p = torch.as_tensor(p, dtype=torch.float32)
    if p.dim() == 3 and p.shape[0] == 1:
        p = p[0]
    if p.dim() != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(f"{name} must have shape (L, K) (probe outputs per layer and domain), got {tuple(p.shape)}")
    if not bool(torch.isfinite(p).all()) or bool((p < 0).any()) or bool((p > 1).any()):
        raise ValueError(f"{name} must be probabilities in [0, 1] without NaN")
    return p


def similarity(probabilities: Tensor) -> Tensor:
    """``s_k = max_ℓ p_{ℓ,k}``: ``(L, K) -> (K,)`` (unnormalised, as in the authors' code)."""
    p = _probabilities(probabilities)
    return p.max(dim=0).values


def breadth(probabilities: Tensor) -> float:
    """``c = H(q) / log K`` with ``q = mean_ℓ p_{ℓ,·}`` normalised to sum to 1.

    Args:
        probabilities: ``(L, K)`` probe outputs, or a ``(K,)`` non-negative vector taken as
            ``q`` itself (normalised here).

    Returns:
        ``c ∈ [0, 1]``: 0 for a one-hot ``q``, 1 for a uniform one, invariant to permuting the
        domains; 0 when ``K = 1``. ``ValueError`` if ``q`` is all zero or has NaN/negatives.
    """
    q = probabilities if isinstance(probabilities, torch.Tensor) else torch.as_tensor(probabilities,
                                                                                      dtype=torch.float64)
    if q.dim() == 2:
        q = _probabilities(q).mean(dim=0)
    elif q.dim() != 1 or q.numel() < 1:
        raise ValueError(f"probabilities must be (L, K) or a (K,) vector, got shape {tuple(q.shape)}")
    q = q.to(torch.float64)
    if not bool(torch.isfinite(q).all()) or bool((q < 0).any()):
        raise ValueError("probabilities must be finite and non-negative")
    total = float(q.sum())
    if total <= 0:
        raise ValueError("probabilities are all zero: the breadth of an empty profile is undefined")
    k = q.numel()
    if k == 1:
        return 0.0
    q = q / total
    # H(q) = −Σ q log q  (0 log 0 = 0);  c = H(q) / log K
    entropy = -float(torch.where(q > 0, q * q.log(), torch.zeros_like(q)).sum())
    return min(1.0, max(0.0, entropy / math.log(k)))


# ---------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------
def _floors(floors) -> tuple[int, float, float]:
    if not isinstance(floors, Sequence) or len(floors) != 3:
        raise ValueError(f"floors={floors!r} must be (min heads per layer, min fraction per layer, min fraction overall)")
    per_layer, frac_layer, frac_total = floors
    if isinstance(per_layer, bool) or not isinstance(per_layer, int) or per_layer < 0:
        raise ValueError(f"floors[0]={per_layer!r} (min heads per layer) must be a non-negative integer")
    frac_layer = check_real(frac_layer, "floors[1]", low=0.0, high=1.0)
    frac_total = check_real(frac_total, "floors[2]", low=0.0, high=1.0)
    return per_layer, frac_layer, frac_total


def _importance(importance) -> Tensor:
    if not isinstance(importance, torch.Tensor):
        importance = torch.as_tensor(importance, dtype=torch.float32)
    if importance.dim() != 3 or min(importance.shape) < 1:
        raise ValueError(f"importance must have shape (L, H, K), got {tuple(importance.shape)}")
    if not bool(torch.isfinite(importance).all()) or bool((importance < 0).any()):
        raise ValueError("importance must be finite and non-negative")
    return importance


def _whitelist(whitelist, shape: tuple[int, int], device) -> Tensor:
    if whitelist is None:
        return torch.zeros(shape, dtype=torch.bool, device=device)
    w = getattr(whitelist, "mask", whitelist)
    w = torch.as_tensor(w)
    if w.dtype != torch.bool:
        raise TypeError(f"whitelist must be a boolean (L, H) mask, got dtype {w.dtype}")
    if tuple(w.shape) != shape:
        raise ValueError(f"whitelist has shape {tuple(w.shape)}, expected (L, H) = {shape}")
    return w.to(device)


def _similarity(s, k: int) -> Tensor:
    if not isinstance(s, torch.Tensor):
        s = torch.as_tensor(s, dtype=torch.float32)
    if s.dim() != 1 or s.numel() != k:
        raise ValueError(f"similarity must have shape (K,) = ({k},), got {tuple(s.shape)}")
    if not bool(torch.isfinite(s).all()) or bool((s < 0).any()) or bool((s > 1).any()):
        raise ValueError("similarity must lie in [0, 1] without NaN")
    return s


def _ratio(target_prune_ratio) -> float:
    return check_real(target_prune_ratio, "target_prune_ratio", low=0.0, high=1.0, high_open=True)


# ---------------------------------------------------------------------------
# the shared fill: whitelist, floors, then a priority order
# ---------------------------------------------------------------------------
def _ranks(scores: Tensor) -> Tensor:
    """Rank of every entry of ``scores`` ``(L, H)`` in descending order (0 = best; ties to the lower index)."""
    flat = scores.reshape(-1).double().cpu()
    n = flat.numel()
    order = sorted(range(n), key=lambda i: (-float(flat[i]), i))
    ranks = torch.empty(n, dtype=torch.long)
    ranks[torch.as_tensor(order)] = torch.arange(n)
    return ranks.view(scores.shape)


def _floor_fill(keep: Tensor, order: Tensor, floors: tuple[int, float, float]) -> Tensor:
    """Add heads (best ``order`` first) until every layer and the total meet the floors."""
    keep = keep.clone()
    n_layers, n_heads = keep.shape
    per_layer = min(n_heads, max(floors[0], math.ceil(floors[1] * n_heads - 1e-9)))
    position = torch.empty(order.numel(), dtype=torch.long)
    position[order] = torch.arange(order.numel())
    pos = position.view(n_layers, n_heads)
    for layer in range(n_layers):
        missing = per_layer - int(keep[layer].sum())
        if missing > 0:
            candidates = [h for h in sorted(range(n_heads), key=lambda h: int(pos[layer, h])) if not keep[layer, h]]
            keep[layer, candidates[:missing]] = True
    total = min(n_layers * n_heads, math.ceil(floors[2] * n_layers * n_heads - 1e-9))
    flat = keep.view(-1)
    for i in order.tolist():
        if int(flat.sum()) >= total:
            break
        flat[i] = True
    return keep


def _exact(order: Tensor, whitelist: Tensor, floors: tuple[int, float, float], target_prune_ratio: float) -> Tensor:
    """Whitelist, floors, then heads in ``order`` until exactly ``round(ratio·L·H)`` heads are removed."""
    n_layers, n_heads = whitelist.shape
    total = n_layers * n_heads
    n_keep = total - int(round(target_prune_ratio * total))
    keep = _floor_fill(whitelist.cpu(), order, (floors[0], floors[1], 0.0))
    floor_total = math.ceil(floors[2] * total - 1e-9)
    if int(keep.sum()) > n_keep or floor_total > n_keep:
        raise ValueError(
            f"target_prune_ratio={target_prune_ratio} keeps {n_keep} of {total} heads, but the whitelist "
            f"({int(whitelist.sum())} heads) and the floors {floors} need {max(int(keep.sum()), floor_total)}; "
            "lower target_prune_ratio, shrink the whitelist (max_fraction) or relax the floors")
    flat = keep.view(-1)
    for i in order.tolist():
        if int(flat.sum()) >= n_keep:
            break
        flat[i] = True
    return keep


def select_heads(scores: Tensor, *, target_prune_ratio: float, floors=(1, 0.1, 0.05), whitelist=None) -> Tensor:
    """Keep the top heads by ``scores`` so that exactly ``round(ratio·L·H)`` are removed.

    The selection every baseline uses (same budget, same floors as :func:`compile_mask`):
    ``whitelist`` (default none) and the per-layer floors first, then heads in descending
    score (ties to the lower index).

    Args:
        scores: ``(L, H)`` head scores (larger = keep first); finite.
        target_prune_ratio: fraction of heads to remove, in ``[0, 1)``.
        floors: ``(min heads per layer, min fraction per layer, min fraction overall)``.
        whitelist: optional ``(L, H)`` boolean heads always kept.

    Returns:
        ``(L, H)`` boolean keep-mask on ``scores``' device. ``ValueError`` if the floors and
        the whitelist alone exceed the budget.
    """
    if not isinstance(scores, torch.Tensor):
        scores = torch.as_tensor(scores, dtype=torch.float32)
    if scores.dim() != 2 or min(scores.shape) < 1:
        raise ValueError(f"scores must have shape (L, H), got {tuple(scores.shape)}")
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("scores contain NaN or inf")
    ratio = _ratio(target_prune_ratio)
    floors = _floors(floors)
    wl = _whitelist(whitelist, tuple(scores.shape), "cpu")
    order = torch.argsort(_ranks(scores).view(-1))
    return _exact(order, wl, floors, ratio).to(scores.device)


# ---------------------------------------------------------------------------
# the method's compiler
# ---------------------------------------------------------------------------
def _domain_weights(s: Tensor, importance: Tensor, min_similarity: float,
                    fallback_similarity: float) -> tuple[Tensor, Tensor]:
    """Per-domain score columns ``(L, H, K')`` and weights ``(K',)`` of the valid domains."""
    valid = s >= min_similarity
    if bool(valid.any()):
        return importance[:, :, valid], s[valid]
    # no domain is similar enough: mean importance over the domains, at the fallback similarity
    return importance.mean(dim=-1, keepdim=True), torch.tensor([fallback_similarity], device=s.device)


def _entry_order(columns: Tensor, weights: Tensor) -> Tensor:
    """Flat head indices ordered by the ``ρ`` at which each enters the union of per-domain top-k sets."""
    n_layers, n_heads, k = columns.shape
    total = n_layers * n_heads
    entry = torch.full((total,), math.inf, dtype=torch.float64)
    best_score = torch.zeros(total, dtype=torch.float64)
    for j in range(k):
        w = float(weights[j])
        if w <= 0:
            continue
        rank = _ranks(columns[:, :, j]).view(-1).double()
        # head enters domain j's top-⌊L·H·ρ·w_j⌋ when ρ ≥ (rank + 1) / (L·H·w_j)
        entry = torch.minimum(entry, (rank + 1) / (total * w))
        best_score = torch.maximum(best_score, w * columns[:, :, j].reshape(-1).double().cpu())
    flat = list(range(total))
    flat.sort(key=lambda i: (float(entry[i]), -float(best_score[i]), i))
    return torch.as_tensor(flat)


def compile_mask(similarity: Tensor, breadth: float, importance: Tensor, whitelist=None, *,
                 target_prune_ratio: float | None = None, strength: float | None = None,
                 floors=(1, 0.1, 0.05), min_similarity: float = 0.1, rho_min: float = 0.1,
                 fallback_similarity: float = 0.3) -> Tensor:
    """The scenario's ``(L, H)`` boolean keep-mask (``True`` = keep).

    Args:
        similarity: ``(K,)`` ``s_k = max_ℓ p_{ℓ,k}`` of the first input (:func:`similarity`).
        breadth: ``c ∈ [0, 1]`` (:func:`breadth`); only used with ``strength``.
        importance: ``(L, H, K)`` ``I_{ℓ,h,k}`` (:func:`head_importance`), non-negative.
        whitelist: ``(L, H)`` boolean heads always kept (or a :class:`Whitelist`, or None).
        target_prune_ratio: remove exactly ``round(ratio·L·H)`` heads, ``ratio ∈ [0, 1)``;
            ``ValueError`` when the whitelist and floors alone keep more.
        strength: ``η ≥ 0`` in ``ρ = min(1, ρ_min + η·c)`` (larger keeps more). Give exactly one
            of ``target_prune_ratio`` and ``strength``.
        floors: ``(min heads per layer, min fraction per layer, min fraction overall)``.
        min_similarity: domains with ``s_k`` below it are ignored (authors: 0.1).
        rho_min: ``ρ_min`` (authors: 0.1).
        fallback_similarity: when no domain reaches ``min_similarity``, heads are ranked by
            ``mean_k I`` with this similarity (authors: 0.3).

    Returns:
        ``(L, H)`` boolean on ``importance``'s device.
    """
    importance = _importance(importance)
    n_layers, n_heads, k = importance.shape
    s = _similarity(similarity, k).to(importance.device)
    c = check_real(breadth, "breadth", low=0.0, high=1.0)
    floors = _floors(floors)
    min_similarity = check_real(min_similarity, "min_similarity", low=0.0, high=1.0)
    rho_min = check_real(rho_min, "rho_min", low=0.0, high=1.0)
    fallback_similarity = check_real(fallback_similarity, "fallback_similarity", low=0.0, high=1.0, low_open=True)
    wl = _whitelist(whitelist, (n_layers, n_heads), "cpu")
    if (target_prune_ratio is None) == (strength is None):
        raise ValueError("give exactly one of target_prune_ratio (an exact budget) and strength (the authors' η)")
    columns, weights = _domain_weights(s, importance, min_similarity, fallback_similarity)
    columns, weights = columns.cpu(), weights.cpu()
    order = _entry_order(columns, weights)
    if target_prune_ratio is not None:
        return _exact(order, wl, floors, _ratio(target_prune_ratio)).to(importance.device)
    eta = check_real(strength, "strength", low=0.0)
    rho = min(1.0, rho_min + eta * c)
    total = n_layers * n_heads
    keep = wl.clone()
    for j in range(weights.numel()):
        # top ⌊L·H·ρ·s_k⌋ heads of s_k · I_{·,·,k}
        count = math.floor(total * rho * float(weights[j]) + 1e-9)
        keep |= _ranks(columns[:, :, j]) < count
    return _floor_fill(keep, order, floors).to(importance.device)


# ---------------------------------------------------------------------------
# the authors' compiler (session_pruning.py), heuristics and all
# ---------------------------------------------------------------------------
def _infer_domains(p: Tensor) -> list[int]:
    """The authors' domain inference: per-layer-normalised scores, thresholds 0.05 and 0.15."""
    pn = p / p.sum(dim=1, keepdim=True).clamp_min(1e-12)  # per-layer normalised
    n_layers, k = pn.shape
    top = min(5, n_layers)
    scores = []
    for j in range(k):
        col = pn[:, j]
        top_mean = float(col.topk(top).values.mean())
        active = int((col > 0.05).sum())
        # (0.6 · top-5 mean + 0.4 · max) · (1 + 0.3 / (1 + #layers with p > 0.05))
        scores.append((0.6 * top_mean + 0.4 * float(col.max())) * (1 + 0.3 / (1 + active)))
    strong = [j for j, v in enumerate(scores) if v > 0.15]
    if len(strong) >= 2:
        return strong
    kept = [j for j, v in enumerate(scores) if v >= 0.05]
    if not kept:
        return []
    return [max(kept, key=lambda j: scores[j])]


def reference_compile(probabilities: Tensor, importance: Tensor, whitelist=None, *, strength: float = 1.0,
                      floors=(1, 0.1, 0.05), rho_min: float = 0.1, use_multi_domain_mixing: bool = True,
                      use_probe_alignment: bool = True) -> Tensor:
    """The authors' online compiler (``session_pruning.py``), reproduced with their heuristics.

    Steps (brief §1.4; the thresholds and the exponent are the authors' code, not the paper):
    similarity ``s_k = max_ℓ p``; breadth ``c``; inferred domains (per-layer-normalised ``p``,
    score ``(0.6·top-5 mean + 0.4·max)·(1 + 0.3/(1 + #layers > 0.05))``, drop < 0.05, cross-domain
    when ≥ 2 score > 0.15, else the argmax); ``ρ = min(1, ρ_min + η·c)``; for each inferred
    domain with ``s_k ≥ 0.1``: ``s_eff = min_v + ((s_k − min_v)/(max_v − min_v))^1.5·(max_v − min_v)``,
    keep the top ``⌊L·H·ρ·s_eff⌋`` of ``s_eff·I_{·,·,k}``; union with the whitelist; if no domain
    is valid, the top ``⌊L·H·ρ·0.3⌋`` of ``mean_k I``; then the floors.

    Args:
        probabilities: ``(L, K)`` calibrated probe outputs of the first input.
        importance: ``(L, H, K)``; whitelist: ``(L, H)`` boolean or None.
        strength: ``η`` (as coded: larger keeps more heads).
        floors: as in :func:`compile_mask` (authors: 1, 10 %, 5 %).
        rho_min: ``ρ_min`` (authors: 0.1).
        use_multi_domain_mixing: ``False`` keeps only the top inferred domain (authors' ablation flag).
        use_probe_alignment: ``False`` drops the similarity weighting (``s_eff = 1``).
    """
    p = _probabilities(probabilities)
    importance = _importance(importance)
    n_layers, n_heads, k = importance.shape
    if p.shape[1] != k:
        raise ValueError(f"probabilities has {p.shape[1]} domains, importance {k}")
    floors = _floors(floors)
    eta = check_real(strength, "strength", low=0.0)
    rho_min = check_real(rho_min, "rho_min", low=0.0, high=1.0)
    wl = _whitelist(whitelist, (n_layers, n_heads), "cpu")
    imp = importance.cpu()
    s = p.max(dim=0).values.cpu()
    c = breadth(p)
    rho = min(1.0, rho_min + eta * c)
    total = n_layers * n_heads
    domains = _infer_domains(p.cpu())
    if not use_multi_domain_mixing and domains:
        domains = [max(domains, key=lambda j: float(s[j]))]
    valid = [j for j in domains if float(s[j]) >= 0.1]
    keep = wl.clone()
    if valid:
        sims = torch.stack([s[j] for j in valid])
        lo, hi = float(sims.min()), float(sims.max())
        for j in valid:
            if hi > lo:
                s_eff = lo + ((float(s[j]) - lo) / (hi - lo)) ** 1.5 * (hi - lo)
            else:
                s_eff = float(s[j])
            if not use_probe_alignment:
                s_eff = 1.0
            count = math.floor(total * rho * s_eff + 1e-9)
            keep |= _ranks(s_eff * imp[:, :, j]) < count
        order = _entry_order(imp[:, :, valid], sims)
    else:
        mean = imp.mean(dim=-1)
        keep |= _ranks(mean) < math.floor(total * rho * 0.3 + 1e-9)
        order = torch.argsort(_ranks(mean).view(-1))
    return _floor_fill(keep, order, floors).to(importance.device)
