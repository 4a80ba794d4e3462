"""Set-valued Dempster–Shafer fusion of views with different category structures (a baseline).

TMC's reduced Dempster rule (:func:`~icml26.papers.confsleepnet.baselines.fuse_dempster`) only
knows singletons and the whole frame, so a hybrid view's NREM evidence must first be lifted
(split evenly over N1, N2, N3), and an EEG opinion sure of N2 then "conflicts" with two thirds of
the EOG's NREM mass. Proper Dempster–Shafer keeps what the view says: each view's basic belief
assignment puts mass on the *set* of stages each of its categories stands for.

1. Mass function of a view with ``K_v`` categories (``label_map[s]`` = category of stage ``s``)
   and native evidence ``e_c`` (the view's stage evidence summed within each category; lifting
   keeps the total, so a lifted opinion gives back the view's own evidence):
   ``S = sum_c e_c + K_v``, ``m({s : label_map[s] = c}) = e_c / S``, ``m(Theta) = K_v / S``
   (the view's own subjective-logic opinion, with its own ``u = K_v / S``).
2. Dempster's rule over the power set of the five stages (subsets as bitmasks):
   ``m(A) = sum_{B cap C = A} m1(B) m2(C) / (1 - kappa)``, ``kappa = sum_{B cap C = {}} m1(B) m2(C)``;
   associative and commutative, so the order of the views does not matter.
3. Back to an opinion over the stages: the pignistic transform of every focal set but the
   frame, ``b_k = sum_{A contains k, A != Theta} m(A) / |A|``, and ``u = m(Theta)``; ``argmax b`` is
   the pignistic decision. The total mass the views gave to the empty set,
   ``1 - prod_i (1 - kappa_i)`` over the fold, is Shafer's conflict, returned beside it.

With five-class views only, the focal sets are singletons and the frame, and the rule is TMC's.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch
from torch import Tensor

from icml26.papers.confsleepnet.opinion import Opinion, same_categories

__all__ = ["SetFusion", "combine_masses", "fuse_dempster_sets", "view_masses"]


def _check_label_map(label_map: Sequence[int], k: int, name: str = "label_map") -> list[int]:
    try:
        labels = [int(c) for c in label_map]
    except (TypeError, ValueError):
        raise TypeError(f"{name}={label_map!r} must be a sequence of category indices, one per stage") from None
    if any(float(c) != int(c) for c in label_map):
        raise ValueError(f"{name}={tuple(label_map)!r} must hold integer category indices")
    if len(labels) != k or min(labels) < 0:
        raise ValueError(f"{name}={tuple(labels)!r} must give a category index >= 0 for each of the {k} stages")
    if sorted(set(labels)) != list(range(max(labels) + 1)):
        raise ValueError(f"{name}={tuple(labels)!r} must number its categories 0..K_view-1")
    return labels


def view_masses(opinion: Opinion, label_map: Sequence[int]) -> Tensor:
    """The view's basic belief assignment over the power set of the ``K`` stages, ``(..., 2**K)``.

    Index ``A`` is the bitmask of a set of stages (bit ``s`` = stage ``s``); the view's evidence
    on the stages (``opinion.evidence``, lifted or not) is summed within each of its categories,
    and ``m(category's stages) = e_c / S``, ``m(Theta) = K_view / S`` with ``S = sum e + K_view``.
    """
    if not isinstance(opinion, Opinion):
        raise TypeError(f"opinion must be an Opinion, got {type(opinion).__name__}")
    k = opinion.num_classes
    labels = _check_label_map(label_map, k)
    k_view = max(labels) + 1
    sets = [sum(1 << s for s in range(k) if labels[s] == c) for c in range(k_view)]
    evidence = opinion.evidence
    native = torch.stack([evidence[..., [s for s in range(k) if labels[s] == c]].sum(-1) for c in range(k_view)], -1)
    strength = native.sum(-1, keepdim=True) + k_view
    masses = evidence.new_zeros(*evidence.shape[:-1], 1 << k)
    # m(set_c) = e_c / S  (a one-category view puts everything on the frame)
    masses = masses.index_add(-1, torch.as_tensor(sets, device=masses.device), native / strength)
    full = (1 << k) - 1
    masses[..., full] += k_view / strength.squeeze(-1)
    return masses


def _intersections(k: int, device) -> Tensor:
    idx = torch.arange(1 << k, device=device)
    return (idx[:, None] & idx[None, :]).reshape(-1)


def combine_masses(m1: Tensor, m2: Tensor) -> tuple[Tensor, Tensor]:
    """Dempster's rule on two power-set mass vectors ``(..., 2**K)`` (bitmask-indexed).

    Returns the normalised combination and ``kappa`` ``(...)``, the mass the pair gave to the
    empty set. Raises when ``kappa = 1`` somewhere (total conflict: the rule is undefined).
    """
    for name, m in (("m1", m1), ("m2", m2)):
        if not isinstance(m, Tensor) or m.shape[-1] < 2 or m.shape[-1] & (m.shape[-1] - 1):
            raise ValueError(f"{name} must be a (..., 2**K) tensor of masses indexed by subset bitmask")
        if not torch.isfinite(m).all() or bool((m < 0).any()):
            raise ValueError(f"{name} must hold finite, non-negative masses")
    if m1.shape != m2.shape:
        raise ValueError(f"m1 {tuple(m1.shape)} and m2 {tuple(m2.shape)} must have one shape")
    size = m1.shape[-1]
    k = size.bit_length() - 1
    # joint mass of each pair (B, C), sent to B cap C
    joint = (m1.unsqueeze(-1) * m2.unsqueeze(-2)).reshape(*m1.shape[:-1], size * size)
    out = m1.new_zeros(m1.shape).index_add(-1, _intersections(k, m1.device), joint)
    kappa = out[..., 0]
    if bool((kappa >= 1 - 1e-12).any()):
        raise ValueError("total conflict (every pair of focal sets is disjoint): Dempster's rule is undefined; "
                         "give each view some mass on the frame (u > 0)")
    out = out.clone()
    out[..., 0] = 0
    # m(A) = sum_{B cap C = A} m1(B) m2(C) / (1 - kappa)
    return out / (1 - kappa).unsqueeze(-1), kappa


@dataclasses.dataclass(frozen=True)
class SetFusion:
    """Set-valued Dempster–Shafer fusion of several views.

    ``opinion``: pignistic beliefs over the stages and ``u = m(Theta)``, ``(..., K)``;
    ``conflict``: Shafer's total conflict ``1 - prod (1 - kappa_i)``, ``(...)``;
    ``masses``: the fused mass function, ``(..., 2**K)`` (bitmask-indexed).
    """

    opinion: Opinion
    conflict: Tensor
    masses: Tensor


def fuse_dempster_sets(opinions: Sequence[Opinion], label_maps: Sequence[Sequence[int]]) -> SetFusion:
    """Fuse views by Dempster's rule with each view's mass on the stage sets of its categories.

    Args:
        opinions: one :class:`Opinion` per view over the same ``K`` stages (coarse views lifted,
            as :class:`~icml26.papers.confsleepnet.model.ConfSleepNet` gives them), ``(..., K)``.
        label_maps: one ``label_map`` per view (``FIVE_TO_THREE`` for a hybrid view,
            ``range(5)`` for a five-class one).

    Returns:
        :class:`SetFusion` (the order of the views does not matter: the rule is associative).
    """
    if isinstance(opinions, Opinion) or not isinstance(opinions, (list, tuple)) or not opinions:
        raise TypeError("opinions must be a non-empty list of Opinion objects, one per view")
    if isinstance(label_maps, (str, bytes)) or not isinstance(label_maps, (list, tuple)) \
            or len(label_maps) != len(opinions):
        raise ValueError(f"label_maps must give one label_map per view ({len(opinions)}), got {label_maps!r}")
    for i, op in enumerate(opinions):
        if not isinstance(op, Opinion):
            raise TypeError(f"opinions[{i}] must be an Opinion, got {type(op).__name__}")
        same_categories(opinions[0], op)
        if op.uncertainty.shape != opinions[0].uncertainty.shape:
            raise ValueError("every view's opinion must have the same batch shape")
    k = opinions[0].num_classes
    fused = view_masses(opinions[0], label_maps[0])
    kept = torch.ones_like(fused[..., 0])
    for op, label_map in zip(opinions[1:], label_maps[1:]):
        fused, kappa = combine_masses(fused, view_masses(op, label_map))
        kept = kept * (1 - kappa)
    full = (1 << k) - 1
    members = torch.tensor([[float(a >> s & 1) for s in range(k)] for a in range(1 << k)], dtype=fused.dtype,
                           device=fused.device)
    sizes = members.sum(-1, keepdim=True).clamp_min(1)
    spread = members / sizes
    spread[full] = 0
    # b_k = sum_{A contains k, A != Theta} m(A) / |A|;  u = m(Theta)
    belief = fused @ spread
    return SetFusion(Opinion(belief, fused[..., full].clone()), 1 - kept, fused)
