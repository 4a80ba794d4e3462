"""Local canonical bases of ReViT (Wei, List, Thuerey, ICML 2026) and frame transport.

Steps (ReViT §1.2, steps 1 and 5):

1. For every patch ``P_i`` compute a rotation ``B_i = [b₁ b₂ (b₃)]`` (columns) from
   the field itself, so that ``B(L_R u)_{π(i)} = R B(u)_i`` for every grid rotation ``R``
   (``π`` is the patch permutation ``R`` induces).
   - 2D [paper; the project page's demo]: ``b₁ = ū/‖ū‖``, ``b₂ = rot₉₀(b₁) = (-b₁ʸ, b₁ˣ)``.
   - 3D [paper: "sequential cross products" of mean velocity and mean vorticity; the
     order is inferred]: ``b₁ = ū/‖ū‖``, ``b₃ = (b₁ × ω̄)/‖b₁ × ω̄‖``, ``b₂ = b₃ × b₁``,
     so ``det B = +1``; ω is a pseudovector, so only proper rotations are covered.
2. Degenerate patches [inferred]: where ``‖ū‖ ≤ eps`` the next candidate direction is
   used, in this order: the patch's kinetic-energy moment ``Σ_k o_k |u_k|²`` (``o_k``
   the pixel's centred offset), then the sample's global mean velocity. Every
   candidate rotates with the field, and the choice compares rotation-invariant
   norms, so the rule is deterministic and equivariant. (3D's second direction
   falls back the same way: energy moment, then global mean vorticity.) Where every
   candidate vanishes (e.g. ``u ≡ 0``, where no direction can be chosen equivariantly)
   the frame's columns are **zero** [ours]: ``R·0 = 0``, so the model stays exactly
   equivariant, at the price that those patches' vector inputs are invisible to it (their
   local coordinates are 0) and their lifted vector outputs are 0 (plus the residual, if
   any). In 3D a patch with a direction ``b₁`` but no second direction keeps ``b₁`` and gets
   ``b₂ = b₃ = 0``. (Before this rule a fixed axis was used, which broke equivariance.)
3. Reference basis pyramid: level ``l`` uses patches of side ``K·2^l`` (so its mean
   velocity is the mean of its ``2^d`` children's means) [inferred].
4. Local coordinates ``Bᵢᵀ v`` are invariant; a vector stored in token ``j``'s frame is
   moved to token ``i``'s frame by ``Bᵢᵀ B_j`` ("globalize → localize").
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from icml26.common.argcheck import check_int, check_real
from icml26.papers.revit.grid import patchify, pixel_offsets

__all__ = [
    "ChannelLayout",
    "basis_pyramid",
    "canonical_basis",
    "curl_3d",
    "matvec",
    "to_global",
    "to_local",
]


def matvec(matrix: Tensor, vectors: Tensor) -> Tensor:
    """``M v`` for small ``(..., d, d)`` matrices and ``(..., d)`` vectors, broadcast.

    Written out per component: on CPU this is faster than batched tiny matmuls.
    """
    d = matrix.shape[-1]
    return torch.stack(
        [sum(matrix[..., c, a] * vectors[..., a] for a in range(d)) for c in range(d)], dim=-1
    )


def to_local(vectors: Tensor, frames: Tensor) -> Tensor:
    """Local coordinates ``Bᵀ v``.

    Args:
        vectors: ``(..., d)`` global components.
        frames: ``(..., d, d)`` bases with the basis vectors as columns, broadcastable.
    """
    return matvec(frames.transpose(-1, -2), vectors)


def to_global(vectors: Tensor, frames: Tensor) -> Tensor:
    """Global components ``B l`` of local coordinates ``l`` (``(..., d)``)."""
    return matvec(frames, vectors)


def curl_3d(u: Tensor) -> Tensor:
    """Vorticity ``∇ × u`` of a 3D vector field ``(B, 3, D, H, W)`` by central differences.

    ``torch.gradient`` (one-sided at the edges) commutes with every grid rotation,
    so the curl is exactly equivariant for proper rotations.
    """
    ux, uy, uz = u[:, 0], u[:, 1], u[:, 2]
    # tensor axes: z = -3, y = -2, x = -1
    d_dz = lambda f: torch.gradient(f, dim=-3)[0]  # noqa: E731
    d_dy = lambda f: torch.gradient(f, dim=-2)[0]  # noqa: E731
    d_dx = lambda f: torch.gradient(f, dim=-1)[0]  # noqa: E731
    # ω = (∂y w − ∂z v, ∂z u − ∂x w, ∂x v − ∂y u)
    return torch.stack([d_dy(uz) - d_dz(uy), d_dz(ux) - d_dx(uz), d_dx(uy) - d_dy(ux)], dim=1)


def _first_nondegenerate(candidates: list[Tensor], norms: list[Tensor], eps: float) -> tuple[Tensor, Tensor]:
    """Pick, per patch, the first candidate whose norm exceeds ``eps``.

    candidates: each ``(B, T, d)``; norms: each ``(B, T)``. Returns the chosen vector and
    a bool ``(B, T)`` telling where none qualified.
    """
    chosen = candidates[-1]
    found = norms[-1] > eps
    for cand, norm in zip(reversed(candidates[:-1]), reversed(norms[:-1])):
        ok = norm > eps
        chosen = torch.where(ok.unsqueeze(-1), cand, chosen)
        found = found | ok
    return chosen, ~found


def _patch_moments(u: Tensor, patch: int) -> tuple[Tensor, Tensor]:
    """Patch mean ``ū`` and kinetic-energy moment ``Σ_k o_k |u_k|² / K^d`` of ``(B, d, *S)``."""
    d = u.shape[1]
    pix = patchify(u, patch)  # (B, T, K^d, d)
    offsets = pixel_offsets(patch, d).to(device=u.device, dtype=u.dtype)  # (K^d, d)
    mean = pix.mean(-2)
    energy = (pix * pix).sum(-1, keepdim=True)  # (B, T, K^d, 1)
    moment = (offsets * energy).mean(-2)
    return mean, moment


def canonical_basis(u: Tensor, patch: int, eps: float = 1e-6) -> Tensor:
    """Per-patch canonical bases of a 2D or 3D vector field.

    Args:
        u: ``(B, d, *spatial)`` vector field (components x, y[, z]) with ``d = len(spatial)``;
            finite (NaN or inf is a ``ValueError``: it would silently pick a fallback frame).
        patch: patch side ``K``; every side must be divisible by it.
        eps: a candidate direction counts as degenerate when its norm is ≤ ``eps``.

    Returns:
        ``(B, T, d, d)`` rotations (det +1) with the basis vectors as columns; ``T`` patches
        row-major over the patch grid. Patches where no direction exists (``u ≡ 0``) get
        zero columns (see the module docstring): still equivariant, not a rotation.
    """
    if not isinstance(u, Tensor):
        raise TypeError(f"u must be a torch.Tensor, got {type(u).__name__}")
    d = u.shape[1] if u.ndim >= 2 else -1
    if u.ndim != d + 2 or d not in (2, 3):
        raise ValueError(f"u must be a (B, d, *spatial) vector field with d = 2 or 3 spatial axes, got {tuple(u.shape)}")
    if not u.is_floating_point():
        raise TypeError(f"u must be a floating-point tensor, got {u.dtype}")
    patch = check_int(patch, "patch", low=1)
    check_real(eps, "eps", low=0.0, low_open=True)
    for side in u.shape[2:]:
        if side % patch:
            raise ValueError(f"grid side {side} is not divisible by the patch {patch}")
    if not bool(torch.isfinite(u).all()):
        raise ValueError("u contains NaN or inf; the frames need a finite vector field")
    mean, moment = _patch_moments(u, patch)
    global_mean = u.flatten(2).mean(-1)[:, None, :].expand_as(mean)
    cands = [mean, moment, global_mean]
    first, degenerate = _first_nondegenerate(cands, [c.norm(dim=-1) for c in cands], eps)
    # No direction at all (u ≡ 0 in the patch and on average): a zero frame, R·0 = 0 keeps it equivariant.
    norm = torch.where(degenerate, torch.ones_like(degenerate, dtype=u.dtype), first.norm(dim=-1))
    b1 = torch.where(degenerate.unsqueeze(-1), torch.zeros_like(first), first / norm.unsqueeze(-1))
    if d == 2:
        # b₂ = rot₉₀(b₁) = (-b₁ʸ, b₁ˣ)
        b2 = torch.stack([-b1[..., 1], b1[..., 0]], dim=-1)
        return torch.stack([b1, b2], dim=-1)

    vort = curl_3d(u)
    vort_mean, vort_moment = _patch_moments(vort, patch)
    # The energy moment of u (not of ω) is the second fallback: it is a polar vector.
    vort_global = vort.flatten(2).mean(-1)[:, None, :].expand_as(vort_mean)
    crosses = [torch.linalg.cross(b1, w, dim=-1) for w in (vort_mean, moment, vort_global)]
    third, degenerate = _first_nondegenerate(crosses, [c.norm(dim=-1) for c in crosses], eps)
    # No second direction: b₂ = b₃ = 0 (equivariant; see the module docstring).
    norm = torch.where(degenerate, torch.ones_like(degenerate, dtype=u.dtype), third.norm(dim=-1))
    # b₃ = (b₁ × ω̄)/‖b₁ × ω̄‖, b₂ = b₃ × b₁  (det [b₁ b₂ b₃] = +1)
    b3 = torch.where(degenerate.unsqueeze(-1), torch.zeros_like(third), third / norm.unsqueeze(-1))
    b2 = torch.linalg.cross(b3, b1, dim=-1)
    return torch.stack([b1, b2, b3], dim=-1)


def basis_pyramid(u: Tensor, patch: int, levels: int, eps: float = 1e-6) -> list[Tensor]:
    """Reference bases at every resolution: level ``l`` uses patches of side ``patch·2^l``.

    Args:
        u: ``(B, d, *spatial)`` vector field.
        patch: the finest patch side ``K``.
        levels: number of resolutions (1 = no merging).

    Returns:
        ``levels`` tensors ``(B, T_l, d, d)``.
    """
    levels = check_int(levels, "levels", low=1)
    return [canonical_basis(u, patch * 2**level, eps) for level in range(levels)]


@dataclasses.dataclass(frozen=True)
class ChannelLayout:
    """How latent channels are typed as scalars and d-vectors [inferred].

    The ``dim`` channels are split into ``heads`` equal groups (so attention heads never
    split a vector); each group holds ``scalars_per_head`` scalars followed by
    ``vectors_per_head`` vectors of ``dims`` components, in the token's local frame.
    """

    dim: int
    heads: int
    vectors_per_head: int
    dims: int

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise ValueError(f"dim={self.dim} must be divisible by heads={self.heads}")
        if self.vectors_per_head < 0 or self.dims * self.vectors_per_head > self.head_dim:
            raise ValueError(
                f"vectors_per_head={self.vectors_per_head} of {self.dims} components do not fit in "
                f"head_dim={self.head_dim}; lower vector_fraction or raise dim"
            )

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def scalars_per_head(self) -> int:
        return self.head_dim - self.dims * self.vectors_per_head

    def transport(self, x: Tensor, rotation: Tensor) -> Tensor:
        """Apply ``rotation`` to every vector channel of ``x``.

        Args:
            x: ``(..., dim)`` features.
            rotation: ``(..., d, d)`` broadcastable to ``x.shape[:-1]``: ``B`` to globalize,
                ``Bᵀ`` to localize, ``B_iᵀ B_j`` to move from frame j to frame i.
        """
        if self.vectors_per_head == 0:
            return x
        lead = x.shape[:-1]
        xs = x.reshape(*lead, self.heads, self.head_dim)
        s = xs[..., : self.scalars_per_head]
        v = xs[..., self.scalars_per_head :].reshape(*lead, self.heads, self.vectors_per_head, self.dims)
        rot = rotation.reshape(*rotation.shape[:-2], 1, 1, self.dims, self.dims)
        v = matvec(rot, v)  # v'_c = sum_a M[c, a] v_a
        return torch.cat([s, v.flatten(-2)], dim=-1).reshape(x.shape)
