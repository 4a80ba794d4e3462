"""Strategy polytopes of two-player zero-sum games: simplices and treeplexes.

Abe, Sakamoto, Ariu, Iwasaki, "Asymmetric Perturbation in Solving Bilinear
Saddle-Point Optimization" (ICML 2026) solves min_{x∈X} max_{y∈Y} xᵀAy where X and Y
are simplices (normal-form games) or treeplexes (the sequence-form polytopes of
extensive-form games). Their extensive-form algorithm (AsymP-DGDA) replaces the
Euclidean projection by the prox of the *dilated* Euclidean regulariser. This module
holds everything the algorithms need to know about a polytope:

1. the representation: a strategy is stored as a behavioural vector ``b`` (one
   probability per sequence, ``b[∅] = 1``); the sequence-form vector is
   x_{(J,a)} = x_{p(J)}·b_J(a), built top-down (:meth:`Treeplex.to_sequence`);
2. the dilated Euclidean regulariser ψ(x) = Σ_J x_{p(J)}·½‖x_J / x_{p(J)}‖² and its
   gradient ∂ψ/∂x_{(J,a)} = b_J(a) − Σ_{J'∈C(J,a)} ½‖b_{J'}‖² (:meth:`Treeplex.mirror_grad`);
3. the prox argmin_{x∈X} ⟨c, x⟩ + ψ(x), computed bottom-up over infosets
   (:meth:`Treeplex.prox`): b_J = Π_Δ(−ℓ_J), V_J = ⟨ℓ_J, b_J⟩ + ½‖b_J‖², with V_J added
   to the linear term of the parent sequence;
4. the best response min_{x∈X} ⟨g, x⟩, by the same recursion with a min
   (:meth:`Treeplex.min_linear`).

A simplex is the treeplex of a single infoset without a root sequence; there ψ is
½‖x‖², the prox is the Euclidean projection Π_Δ(−c), and every formula reduces to
the normal-form one. Infosets are grouped by (depth, number of actions) so that each
step is a handful of batched tensor operations; every method accepts leading batch
dimensions and follows the device of its inputs.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from icml26.common.argcheck import check_int

__all__ = ["InfosetGroup", "Treeplex", "project_simplex"]


def project_simplex(v: Tensor | np.ndarray) -> Tensor | np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex.

    Args:
        v: (..., n) points, a torch tensor (any device; integers are cast to float64) or a
            NumPy array / list (the result is then a NumPy array).

    Returns:
        (..., n) the projections argmin_{p∈Δ} ‖p − v‖ (sort-based, Held et al. 1974).
        A row holding NaN or +inf comes back as NaN (NaN in, NaN out; no error, so that the
        batched solvers need no device synchronisation); −inf entries project to 0.
    """
    if not isinstance(v, Tensor):
        try:
            array = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"v must be a tensor or an array of numbers, got {type(v).__name__}") from None
        if array.ndim == 0:
            raise ValueError("v must have at least one dimension (..., n)")
        return project_simplex(torch.from_numpy(array)).numpy()
    if v.dim() == 0 or v.shape[-1] == 0:
        raise ValueError(f"project_simplex needs at least one coordinate, got shape {tuple(v.shape)}")
    if not v.is_floating_point():
        v = v.to(torch.float64)
    u = torch.sort(v, dim=-1, descending=True).values
    # c_k = (Σ_{j≤k} u_j − 1)/k for k = 1 … n
    c = (u.cumsum(dim=-1) - 1.0) / _ranks(v.shape[-1], v.dtype, v.device)
    # ρ = max{k : u_k > c_k} (the condition holds for a prefix of k; with gradual underflow
    # u_k > c_k exactly when u_k − c_k > 0). ρ ≥ 1 for finite rows; the clamp turns a NaN row
    # into NaN instead of an index error.
    rho = (u > c).sum(dim=-1, keepdim=True).clamp_min(1)
    # θ = c_ρ = (Σ_{j≤ρ} u_j − 1)/ρ and p = max(v − θ, 0)
    return (v - c.gather(-1, rho - 1)).clamp_min(0.0)


_RANKS: dict[tuple[int, torch.dtype, torch.device], Tensor] = {}


def _ranks(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``1, 2, …, n`` as a ``dtype`` tensor on ``device``, made once per key (the projection runs
    once or twice per iteration of every dynamics; the tensor is never written to). It is made
    outside inference mode, so that a first call under ``torch.inference_mode`` does not leave an
    inference tensor that a later differentiated projection could not save for backward."""
    key = (n, dtype, device)
    ranks = _RANKS.get(key)
    if ranks is None:
        with torch.inference_mode(False):
            ranks = _RANKS[key] = torch.arange(1, n + 1, dtype=dtype, device=device)
    return ranks


@dataclasses.dataclass(frozen=True)
class InfosetGroup:
    """Infosets of one depth with the same number of actions.

    Attributes:
        actions: (k, m) sequence index of each infoset's actions.
        parents: (k,) index of each infoset's parent sequence, or ``None`` for the
            root infoset of a simplex (no parent sequence).
    """

    actions: Tensor
    parents: Tensor | None

    def __post_init__(self) -> None:
        if not isinstance(self.actions, Tensor) or self.actions.dim() != 2 or self.actions.dtype != torch.long \
                or self.actions.shape[1] < 1:
            raise TypeError("actions must be a (k, m) int64 tensor of sequence indices, m >= 1")
        if self.parents is not None and (not isinstance(self.parents, Tensor) or self.parents.dtype != torch.long
                                         or self.parents.shape != self.actions.shape[:1]):
            raise TypeError(f"parents must be None or a ({self.actions.shape[0]},) int64 tensor")

    def to(self, device: torch.device) -> "InfosetGroup":
        return InfosetGroup(self.actions.to(device),
                            None if self.parents is None else self.parents.to(device))


@dataclasses.dataclass(frozen=True)
class Treeplex:
    """A sequence-form strategy polytope (or a simplex).

    Build one with :meth:`simplex`, :meth:`from_infosets`, or from an OpenSpiel game
    with :func:`icml26.papers.asym_perturb.sequence_form_game`.

    Attributes:
        size: number of sequences n (the strategy vector's length).
        groups: infoset groups ordered from the root to the leaves.
        has_root: whether sequence 0 is the empty sequence (x_∅ = 1); ``False`` for
            a simplex.
        infoset_names: optional names of the infosets (for reports only).
    """

    size: int
    groups: tuple[InfosetGroup, ...]
    has_root: bool
    infoset_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        size = check_int(self.size, "size", low=1)
        if not isinstance(self.groups, tuple) or not self.groups or not all(
                isinstance(g, InfosetGroup) for g in self.groups):
            raise TypeError("groups must be a non-empty tuple of InfosetGroup (root to leaves)")
        if not isinstance(self.has_root, bool):
            raise TypeError(f"has_root={self.has_root!r} must be True or False")
        for g in self.groups:
            for name, index in (("actions", g.actions), ("parents", g.parents)):
                if index is not None and index.numel() and (int(index.min()) < 0 or int(index.max()) >= size):
                    raise ValueError(f"groups: an infoset's {name} index falls outside the {size} sequences")

    # ------------------------------------------------------------------ builders
    @classmethod
    def simplex(cls, n: int) -> "Treeplex":
        """The probability simplex Δ_n as a one-infoset treeplex."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"n={n!r} must be an integer")
        n = int(n)
        if n < 1:
            raise ValueError(f"a simplex needs n >= 1 actions, got n={n}")
        group = InfosetGroup(torch.arange(n).view(1, n), None)
        return cls(size=n, groups=(group,), has_root=False)

    @classmethod
    def from_infosets(cls, size: int, infosets: Sequence[tuple[int, Sequence[int]]],
                      names: Sequence[str] = ()) -> "Treeplex":
        """A treeplex from (parent sequence, action sequences) per infoset.

        Sequence 0 is the empty sequence; every other sequence must belong to exactly
        one infoset, and a parent sequence must be 0 or an action of another infoset.

        Args:
            size: number of sequences, including the empty sequence 0.
            infosets: for each infoset, ``(parent_sequence, [action sequences])``.
            names: optional infoset names.
        """
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
            raise ValueError(f"size={size!r} must be an integer >= 2 (the empty sequence and at least one action)")
        owner = {}
        for j, (parent, actions) in enumerate(infosets):
            if len(actions) == 0:
                raise ValueError(f"infoset {j} has no actions; every infoset needs one or more")
            for s in actions:
                if not 0 < s < size:
                    raise ValueError(f"infoset {j}: sequence {s} is outside 1..{size - 1}")
                if s in owner:
                    raise ValueError(f"sequence {s} belongs to infosets {owner[s]} and {j}; "
                                     "each sequence must end in exactly one infoset")
                owner[s] = j
        if len(owner) != size - 1:
            missing = sorted(set(range(1, size)) - set(owner))
            raise ValueError(f"sequences {missing[:5]} belong to no infoset")
        depth: dict[int, int] = {}

        def depth_of(j: int, seen: tuple[int, ...] = ()) -> int:
            if j in depth:
                return depth[j]
            parent = infosets[j][0]
            if parent == 0:
                depth[j] = 0
            else:
                if parent not in owner:
                    raise ValueError(f"infoset {j}: parent sequence {parent} is not an action")
                if j in seen:
                    raise ValueError(f"infoset {j} is its own ancestor; a treeplex is a tree")
                depth[j] = depth_of(owner[parent], seen + (j,)) + 1
            return depth[j]

        buckets: dict[tuple[int, int], list[int]] = {}
        for j, (_, actions) in enumerate(infosets):
            buckets.setdefault((depth_of(j), len(actions)), []).append(j)
        groups = []
        for key in sorted(buckets):
            members = buckets[key]
            groups.append(InfosetGroup(
                torch.tensor([list(infosets[j][1]) for j in members], dtype=torch.long),
                torch.tensor([infosets[j][0] for j in members], dtype=torch.long),
            ))
        return cls(size=size, groups=tuple(groups), has_root=True, infoset_names=tuple(names))

    def to(self, device: torch.device | str) -> "Treeplex":
        """The same treeplex with its index tensors on ``device``."""
        device = torch.device(device)
        if self.groups[0].actions.device == device:
            return self
        return dataclasses.replace(self, groups=tuple(g.to(device) for g in self.groups))

    @property
    def num_infosets(self) -> int:
        return sum(g.actions.shape[0] for g in self.groups)

    def _check_last(self, t: Tensor, name: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch tensor (..., {self.size}), got {type(t).__name__}")
        if t.dim() == 0 or t.shape[-1] != self.size:
            raise ValueError(f"{name} must have shape (..., {self.size}) for this treeplex, got {tuple(t.shape)}")

    # ------------------------------------------------------------ representation
    def uniform(self, batch_shape: Sequence[int] = (), *, dtype: torch.dtype = torch.float64,
                device: torch.device | str | None = None) -> Tensor:
        """The uniform behavioural strategy, (*batch_shape, n)."""
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in batch_shape):
            raise ValueError(f"batch_shape={tuple(batch_shape)!r} must hold non-negative integers")
        b = torch.ones(*batch_shape, self.size, dtype=dtype, device=device)
        for g in self.groups:
            b[..., g.actions] = 1.0 / g.actions.shape[1]
        return b

    def random(self, generator: torch.Generator, batch_shape: Sequence[int] = (), *,
               dtype: torch.dtype = torch.float64) -> Tensor:
        """A random behavioural strategy (each infoset's row uniform on its simplex), on CPU."""
        b = torch.ones(*batch_shape, self.size, dtype=dtype)
        for g in self.groups:
            e = -torch.log(torch.rand(*batch_shape, *g.actions.shape, generator=generator, dtype=dtype))
            b[..., g.actions.cpu()] = e / e.sum(-1, keepdim=True)
        return b

    def to_sequence(self, b: Tensor) -> Tensor:
        """Sequence-form vector of behavioural strategies ``b``: x_{(J,a)} = x_{p(J)}·b_J(a).

        Args:
            b: (..., n) behavioural strategies.

        Returns:
            (..., n) sequence-form strategies.
        """
        self._check_last(b, "b")
        if not self.has_root:
            return b
        x = b.clone()
        x[..., 0] = 1.0
        for g in self.groups:  # root to leaves: parents are final before their children
            x[..., g.actions] = x[..., g.parents].unsqueeze(-1) * b[..., g.actions]
        return x

    def to_behavioural(self, x: Tensor) -> Tensor:
        """Behavioural strategies of sequence-form ``x`` (uniform where x_{p(J)} = 0).

        Args:
            x: (..., n) sequence-form strategies.
        """
        self._check_last(x, "x")
        if not self.has_root:
            return x.clone()
        b = torch.ones_like(x)
        for g in self.groups:
            mass = x[..., g.parents].unsqueeze(-1)
            uniform = torch.full_like(x[..., g.actions], 1.0 / g.actions.shape[1])
            b[..., g.actions] = torch.where(mass > 0, x[..., g.actions] / mass.clamp_min(1e-300),
                                            uniform)
        return b

    def constraints(self, dtype: torch.dtype = torch.float64) -> tuple[Tensor, Tensor]:
        """The polytope's equality constraints E x = e (with x ≥ 0), on CPU.

        Rows: x_∅ = 1 (or Σ_a x_a = 1 for a simplex), then one row
        Σ_a x_{(J,a)} − x_{p(J)} = 0 per infoset.
        """
        rows, rhs = [], []
        if self.has_root:
            row = torch.zeros(self.size, dtype=dtype)
            row[0] = 1.0
            rows.append(row)
            rhs.append(1.0)
        for g in self.groups:
            actions = g.actions.cpu()
            for i in range(actions.shape[0]):
                row = torch.zeros(self.size, dtype=dtype)
                row[actions[i]] = 1.0
                if g.parents is not None:
                    row[g.parents[i].cpu()] -= 1.0
                rows.append(row)
                rhs.append(0.0 if g.parents is not None else 1.0)
        return torch.stack(rows), torch.tensor(rhs, dtype=dtype)

    # ------------------------------------------------------------------ geometry
    def mirror_grad(self, b: Tensor) -> Tensor:
        """∇ψ of the dilated Euclidean regulariser at the strategy with behaviour ``b``.

        Args:
            b: (..., n) behavioural strategies.

        Returns:
            (..., n) with entry (J,a) equal to b_J(a) − Σ_{J'∈C(J,a)} ½‖b_{J'}‖²
            (entry ∅ is 0: x_∅ is fixed, so it never matters).
        """
        self._check_last(b, "b")
        grad = b.clone()
        if self.has_root:
            grad[..., 0] = 0.0
            for g in self.groups:
                # ∂/∂x_p of x_p·½‖x_J/x_p‖² = −½‖b_J‖²
                grad.index_add_(-1, g.parents, -0.5 * b[..., g.actions].square().sum(-1))
        return grad

    def prox(self, c: Tensor) -> Tensor:
        """argmin_{x∈X} ⟨c, x⟩ + ψ(x), as behavioural strategies.

        Args:
            c: (..., n) linear term.

        Returns:
            (..., n) behavioural strategies of the minimiser (NaN propagates, see
            :func:`project_simplex`).
        """
        self._check_last(c, "c")
        if not self.has_root:
            return project_simplex(-c)
        c = c.clone()
        b = torch.ones_like(c)
        for g in reversed(self.groups):  # leaves to root
            ell = c[..., g.actions]
            # b_J = Π_Δ(−ℓ_J): minimises ⟨ℓ_J, b⟩ + ½‖b‖² over the simplex
            bj = project_simplex(-ell)
            # V_J = ⟨ℓ_J, b_J⟩ + ½‖b_J‖², the infoset's optimal value per unit of x_{p(J)}
            value = (ell * bj).sum(-1) + 0.5 * bj.square().sum(-1)
            c.index_add_(-1, g.parents, value)
            b[..., g.actions] = bj
        return b

    def min_linear(self, g: Tensor) -> Tensor:
        """min_{x∈X} ⟨g, x⟩ (a best response's value against the loss vector ``g``).

        Args:
            g: (..., n) loss per sequence.

        Returns:
            (...,) the minimum.
        """
        self._check_last(g, "g")
        if not self.has_root:
            return g.min(dim=-1).values
        c = g.clone()
        for grp in reversed(self.groups):
            c.index_add_(-1, grp.parents, c[..., grp.actions].min(dim=-1).values)
        return c[..., 0]

    def best_response(self, g: Tensor) -> Tensor:
        """A pure sequence-form minimiser of ⟨g, x⟩ over X (ties to the lowest action).

        Args:
            g: (..., n) loss per sequence.

        Returns:
            (..., n) sequence-form best response.
        """
        self._check_last(g, "g")
        if not self.has_root:
            return torch.nn.functional.one_hot(g.argmin(-1), self.size).to(g.dtype)
        c = g.clone()
        b = torch.zeros_like(g)
        for grp in reversed(self.groups):
            vals = c[..., grp.actions]
            best = vals.argmin(dim=-1)
            c.index_add_(-1, grp.parents, vals.gather(-1, best.unsqueeze(-1)).squeeze(-1))
            b[..., grp.actions] = torch.nn.functional.one_hot(best, grp.actions.shape[1]).to(g.dtype)
        return self.to_sequence(b)
