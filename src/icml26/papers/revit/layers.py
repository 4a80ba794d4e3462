"""Building blocks of ReViT (Wei, List, Thuerey, ICML 2026): invariant tokens in local frames.

Every token ``i`` carries invariant features expressed in its own frame ``B_i``
(see :mod:`icml26.papers.revit.frames`); a layer only ever sees

* invariant features (ordinary ``nn.Linear``/``LayerNorm``/MLP act freely on them),
* displacements rebased into a local frame, ``p_ij = B_iᵀ(x_j − x_i)``, and
* relative rotations ``B_iᵀ B_j`` that move the vector-typed channels between frames.

Steps:

1. :class:`RebasedPatchEmbed` (§1.2 step 2). Pixel features ``f_k = [s_k, B_iᵀ u_k]`` and
   rebased offsets ``o_k = B_iᵀ(x_k − c_i)``; the patch token is a permutation-invariant
   pooling over pixels. Default (``"kernel"``, the pilot's fast variant [inferred]):
   ``t_i = W · vec(mean_k f_k ⊗ ψ(o_k))`` with ``ψ`` a small MLP: a linear patch embedding
   whose pixel positions are continuous. ``"pma"``: Set-Transformer pooling by
   multi-head attention with one learned query over ``MLP([f_k, o_k])`` [paper; details inferred].
2. :class:`WindowAttention` (§1.2 step 3). ``SA = softmax(QKᵀ/√d_k + P) V`` inside Swin
   windows with ``P_ij = f(p_ij)`` (``f`` an MLP, one output per head [inferred]); the
   vector channels of ``V`` are globalized with ``B_j`` before the sum and localized with
   ``B_iᵀ`` after it, i.e. ``Σ_j a_ij B_iᵀB_j v_j`` (frame transport [measured in the pilot to help]).
3. :class:`FrameMerge` / :class:`FrameExpand` (§1.2 step 5): "globalize → resample →
   localize" between pyramid levels; children are pooled with a kernel of their offsets
   rebased into the parent frame, so the merge is invariant to the child order [inferred].
4. :class:`RebasedPatchDecoder` (§1.2 step 6): ``z_{i,k} = A(t_i) ψ(B_iᵀ(x_k − c_i))`` and
   the vector outputs are lifted back, ``u'_k = B_i z_k``.

With all frames equal to the identity these layers are an ordinary Swin-style ViT
(:mod:`icml26.papers.revit.baselines` uses them that way).
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor, nn

from icml26.papers.revit.frames import ChannelLayout, to_global, to_local
from icml26.papers.revit.grid import MergeGroups, WindowPartition, patchify, pixel_offsets, unpatchify

__all__ = [
    "FrameExpand",
    "FrameMerge",
    "LOCAL_KERNELS",
    "OffsetKernel",
    "RebasedPatchDecoder",
    "RebasedPatchEmbed",
    "SwinBlock",
    "TentKernel",
    "WindowAttention",
]


class OffsetKernel(nn.Module):
    """``ψ(o)``: a small MLP from a ``d``-vector of (rebased) offsets to ``size`` weights."""

    def __init__(self, dims: int, size: int, hidden: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dims, hidden), nn.GELU(), nn.Linear(hidden, size))

    def forward(self, offsets: Tensor) -> Tensor:
        """offsets ``(..., d)`` → weights ``(..., size)``."""
        return self.net(offsets)


class TentKernel(nn.Module):
    """``ψ_m(o) = Π_a max(0, 1 − |o_a − g_{m,a}| / h)``: bilinear interpolation weights of a point
    ``o`` onto fixed grid points ``g_m`` of spacing ``h`` (no parameters).

    At the grid points themselves ``ψ(g_k) = e_k`` (one-hot), so with identity frames a layer
    pooling ``f_k ⊗ ψ(o_k)`` is exactly a linear patch embedding (the plain ViT's) and a decoder
    ``A ψ(o_k)`` exactly a linear per-pixel read-out; with a rotated frame it resamples the patch
    bilinearly onto the rotated grid. Any fixed function of the rebased offset keeps ReViT exactly
    equivariant; this one is well conditioned from the first step (a randomly initialised MLP ψ
    evaluated at the ``K^d`` offsets is a nearly low-rank matrix the model must first sharpen).
    """

    def __init__(self, points: Tensor, spacing: float) -> None:
        super().__init__()
        if points.ndim != 2:
            raise ValueError(f"points must be (M, d), got {tuple(points.shape)}")
        if not spacing > 0:
            raise ValueError(f"spacing={spacing} must be positive")
        self.register_buffer("points", points.double().clone(), persistent=False)
        self.spacing = float(spacing)

    @property
    def size(self) -> int:
        return self.points.shape[0]

    def forward(self, offsets: Tensor) -> Tensor:
        """offsets ``(..., d)`` → weights ``(..., M)``."""
        diff = offsets.unsqueeze(-2) - self.points.to(offsets.dtype)  # (..., M, d)
        # ψ_m(o) = Π_a relu(1 − |o_a − g_{m,a}| / h)
        return torch.relu(1.0 - diff.abs() / self.spacing).prod(-1)


def _merge_points(dims: int) -> Tensor:
    """The ``2^d`` child-centre offsets ``{±½}^d`` of a merge, in fine-token units."""
    return torch.tensor(list(itertools.product((-0.5, 0.5), repeat=dims)), dtype=torch.float64)


LOCAL_KERNELS = ("bilinear", "mlp")


def _check_kernel(kernel: str) -> str:
    if kernel not in LOCAL_KERNELS:
        raise ValueError(f"local_kernel={kernel!r} must be one of {', '.join(LOCAL_KERNELS)}")
    return kernel


class WindowAttention(nn.Module):
    """Windowed multi-head self-attention on invariant tokens with frame transport.

    Args:
        layout: how the ``dim`` channels split into heads, scalars and vectors.
        bias_hidden: width of the relative-position-bias MLP ``f``.
    """

    def __init__(self, layout: ChannelLayout, bias_hidden: int = 32) -> None:
        super().__init__()
        self.layout = layout
        dim = layout.dim
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.bias = nn.Sequential(nn.Linear(layout.dims, bias_hidden), nn.GELU(),
                                  nn.Linear(bias_hidden, layout.heads))

    def forward(self, x: Tensor, frames: Tensor | None, partition: WindowPartition) -> Tensor:
        """x ``(B, T, dim)`` invariant tokens; frames ``(B, T, d, d)`` or ``None`` (global frame)."""
        b, t, dim = x.shape
        heads, hd = self.layout.heads, self.layout.head_dim
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if frames is not None:
            v = self.layout.transport(v, frames)  # globalize: B_j v_j
        idx = partition.index  # (nW, Wt)
        n_win, wt = idx.shape

        def windows(z: Tensor) -> Tensor:  # (B, T, dim) -> (B, nW, heads, Wt, hd)
            return z[:, idx].reshape(b, n_win, wt, heads, hd).transpose(2, 3)

        q, k, v = windows(q), windows(k), windows(v)
        disp = partition.displacement.to(x.dtype)  # (nW, Wt, Wt, d)
        if frames is not None:
            # p_ij = B_iᵀ (x_j − x_i), the displacement in the query's frame
            rel = to_local(disp.unsqueeze(0), frames[:, idx].unsqueeze(3))  # (B, nW, Wt, Wt, d)
        else:
            rel = disp.unsqueeze(0)
        bias = self.bias(rel).permute(0, 1, 4, 2, 3)  # (B|1, nW, heads, Wt, Wt)
        # SA(X) = softmax(Q Kᵀ / √d_k + P) V
        logits = q @ k.transpose(-1, -2) / math.sqrt(hd) + bias
        if partition.mask is not None:
            logits = logits.masked_fill(~partition.mask[None, :, None], float("-inf"))
        out = logits.softmax(-1) @ v  # (B, nW, heads, Wt, hd)
        out = out.transpose(2, 3).reshape(b, n_win * wt, dim)[:, partition.inverse]
        if frames is not None:
            out = self.layout.transport(out, frames.transpose(-1, -2))  # localize: B_iᵀ
        return self.proj(out)


class SwinBlock(nn.Module):
    """Pre-norm transformer block: ``x + Attn(LN x)``, then ``x + MLP(LN x)``."""

    def __init__(self, layout: ChannelLayout, mlp_ratio: float = 2.0, bias_hidden: int = 32) -> None:
        super().__init__()
        dim = layout.dim
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(layout, bias_hidden)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(round(dim * mlp_ratio))
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: Tensor, frames: Tensor | None, partition: WindowPartition) -> Tensor:
        x = x + self.attn(self.norm1(x), frames, partition)
        return x + self.mlp(self.norm2(x))


def _relative(target: Tensor, source: Tensor) -> Tensor:
    """``B_targetᵀ B_source``: moves vectors from the source frame to the target frame."""
    return target.transpose(-1, -2) @ source


class FrameMerge(nn.Module):
    """Merge ``2^d`` children into one parent token: globalize → pool → localize.

    ``t_p = W · LN(vec(Σ_c (B_pᵀ B_c) f_c ⊗ ψ(B_pᵀ δ_c)))`` with ``δ_c`` the child's
    offset from the parent centre. With identity frames this is Swin's patch merging.
    """

    def __init__(self, layout: ChannelLayout, kernel_size: int | None = None, hidden: int = 32,
                 kernel: str = "mlp") -> None:
        super().__init__()
        self.layout = layout
        if _check_kernel(kernel) == "bilinear":
            self.kernel = TentKernel(_merge_points(layout.dims), 1.0)
            m = self.kernel.size
        else:
            m = kernel_size or 2**layout.dims
            self.kernel = OffsetKernel(layout.dims, m, hidden)
        self.norm = nn.LayerNorm(layout.dim * m)
        self.reduce = nn.Linear(layout.dim * m, layout.dim)

    def forward(self, x: Tensor, groups: MergeGroups, child_frames: Tensor | None,
                parent_frames: Tensor | None) -> Tensor:
        """x ``(B, T, dim)`` → ``(B, T/2^d, dim)``; frames ``(B, T, d, d)`` / ``(B, T/2^d, d, d)``."""
        children = x[:, groups.index]  # (B, Tp, 2^d, dim)
        offsets = groups.offsets.to(x.dtype)  # (2^d, d)
        if parent_frames is not None:
            pf = parent_frames.unsqueeze(2)
            children = self.layout.transport(children, _relative(pf, child_frames[:, groups.index]))
            offsets = to_local(offsets, pf)  # (B, Tp, 2^d, d)
        psi = self.kernel(offsets)  # (B|.., Tp|.., 2^d, M)
        pooled = (torch.einsum("btcf,cm->btfm", children, psi) if psi.ndim == 2
                  else torch.einsum("btcf,btcm->btfm", children, psi))
        return self.reduce(self.norm(pooled.flatten(-2)))


class FrameExpand(nn.Module):
    """Expand one parent token into ``2^d`` children: resample in the parent frame, localize.

    ``h_c = B_cᵀ B_p · A(t_p) ψ(B_pᵀ δ_c)``. With identity frames this is a linear patch expansion.
    """

    def __init__(self, layout: ChannelLayout, kernel_size: int | None = None, hidden: int = 32,
                 kernel: str = "mlp") -> None:
        super().__init__()
        self.layout = layout
        if _check_kernel(kernel) == "bilinear":
            self.kernel = TentKernel(_merge_points(layout.dims), 1.0)
            self.m = self.kernel.size
        else:
            self.m = kernel_size or 2**layout.dims
            self.kernel = OffsetKernel(layout.dims, self.m, hidden)
        self.norm = nn.LayerNorm(layout.dim)
        self.lift = nn.Linear(layout.dim, layout.dim * self.m)

    def forward(self, x: Tensor, groups: MergeGroups, parent_frames: Tensor | None,
                child_frames: Tensor | None) -> Tensor:
        """x ``(B, Tp, dim)`` → ``(B, Tp·2^d, dim)`` on the finer grid."""
        b, tp, dim = x.shape
        a = self.lift(self.norm(x)).reshape(b, tp, dim, self.m)
        offsets = groups.offsets.to(x.dtype)
        if parent_frames is not None:
            offsets = to_local(offsets, parent_frames.unsqueeze(2))  # (B, Tp, 2^d, d)
        psi = self.kernel(offsets)
        # (B, Tp, 2^d, dim) in the parent frame
        h = (torch.einsum("btfm,cm->btcf", a, psi) if psi.ndim == 2
             else torch.einsum("btfm,btcm->btcf", a, psi))
        if parent_frames is not None:
            h = self.layout.transport(h, _relative(child_frames[:, groups.index], parent_frames.unsqueeze(2)))
        return h.reshape(b, -1, dim)[:, groups.inverse]


def _local_pixels(x: Tensor, frames: Tensor, patch: int, n_scalar: int, n_vector: int) -> Tensor:
    """Pixel features ``[s_k, B_iᵀ u_k]`` per patch: ``(B, T, K^d, n_scalar + d·n_vector)``."""
    d = frames.shape[-1]
    pix = patchify(x, patch)
    b, t, p, _ = pix.shape
    scalars = pix[..., :n_scalar]
    vectors = pix[..., n_scalar:].reshape(b, t, p, n_vector, d)
    local = to_local(vectors, frames[:, :, None, None])
    return torch.cat([scalars, local.flatten(-2)], dim=-1)


class RebasedPatchEmbed(nn.Module):
    """Invariant patch tokens from pixels in the patch's canonical frame (ReViT step 2).

    Args:
        n_scalar, n_vector: input channel split.
        dims: 2 or 3.
        patch: patch side ``K``.
        dim: token width.
        pooling: ``"kernel"`` (pixel features ⊗ ψ(offset), pooled over pixels) or ``"pma"``
            (Set-Transformer pooling by multi-head attention).
        kernel_size: outputs of an MLP ψ (default ``K^d``, enough to express any linear patch embedding).
        heads: heads of the PMA pooling.
        kernel: ψ of the ``"kernel"`` pooling: ``"bilinear"`` (:class:`TentKernel` on the patch's
            own ``K^d`` pixel grid, summed over pixels: with identity frames exactly the plain ViT's
            linear patch embedding) or ``"mlp"`` (a learned :class:`OffsetKernel`, averaged over
            pixels; the first version).
    """

    def __init__(self, n_scalar: int, n_vector: int, dims: int, patch: int, dim: int,
                 pooling: str = "kernel", kernel_size: int | None = None, hidden: int = 32,
                 heads: int = 4, kernel: str = "mlp") -> None:
        super().__init__()
        if pooling not in ("kernel", "pma"):
            raise ValueError(f"patch_pooling={pooling!r} must be 'kernel' or 'pma'")
        self.n_scalar, self.n_vector, self.dims, self.patch = n_scalar, n_vector, dims, patch
        self.pooling = pooling
        self.kernel_kind = _check_kernel(kernel)
        c = n_scalar + dims * n_vector
        self.register_buffer("offsets", pixel_offsets(patch, dims).float(), persistent=False)
        if pooling == "kernel":
            if self.kernel_kind == "bilinear":
                self.kernel = TentKernel(pixel_offsets(patch, dims), 1.0 / patch)
                m = self.kernel.size
            else:
                m = kernel_size or patch**dims
                self.kernel = OffsetKernel(dims, m, hidden)
            self.proj = nn.Linear(c * m, dim)
        else:
            self.point = nn.Sequential(nn.Linear(c + dims, dim), nn.GELU(), nn.Linear(dim, dim))
            self.query = nn.Parameter(torch.randn(1, 1, dim) * dim**-0.5)
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.norm1 = nn.LayerNorm(dim)
            self.ff = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
            self.norm2 = nn.LayerNorm(dim)

    def forward(self, x: Tensor, frames: Tensor) -> Tensor:
        """x ``(B, C, *spatial)``, frames ``(B, T, d, d)`` → tokens ``(B, T, dim)``."""
        feats = _local_pixels(x, frames, self.patch, self.n_scalar, self.n_vector)  # (B, T, P, C)
        # o_k = B_iᵀ (x_k − c_i), in patch units
        offsets = to_local(self.offsets.to(x.dtype), frames.unsqueeze(2))  # (B, T, P, d)
        if self.pooling == "kernel":
            psi = self.kernel(offsets)  # (B, T, P, M)
            # t_i = W · vec(Σ_k f_k ⊗ ψ(o_k))  (bilinear: a sum, as a linear embedding; mlp: a mean)
            pooled = torch.einsum("btpc,btpm->btcm", feats, psi)
            if self.kernel_kind == "mlp":
                pooled = pooled / feats.shape[2]
            return self.proj(pooled.flatten(-2))
        b, t, p, _ = feats.shape
        h = self.point(torch.cat([feats, offsets], dim=-1)).reshape(b * t, p, -1)
        # PMA(Z) = MAB(S, Z): H = LN(S + MHA(S, Z, Z)), out = LN(H + rFF(H))
        query = self.query.expand(b * t, 1, -1)
        hq = self.norm1(query + self.attn(query, h, h, need_weights=False)[0])
        return self.norm2(hq + self.ff(hq)).reshape(b, t, -1)


class RebasedPatchDecoder(nn.Module):
    """Equivariant decoder (ReViT step 6): local predictions lifted back through ``B_i``.

    ``z_{i,k} = A(t_i) ψ(B_iᵀ(x_k − c_i))``; scalars are emitted as they are and vectors as
    ``B_i z_k``. ``kernel``: ψ as in :class:`RebasedPatchEmbed` (``"bilinear"`` or ``"mlp"``).
    """

    def __init__(self, n_scalar: int, n_vector: int, dims: int, patch: int, dim: int,
                 kernel_size: int | None = None, hidden: int = 32, kernel: str = "mlp") -> None:
        super().__init__()
        self.n_scalar, self.n_vector, self.dims, self.patch = n_scalar, n_vector, dims, patch
        self.channels = n_scalar + dims * n_vector
        self.register_buffer("offsets", pixel_offsets(patch, dims).float(), persistent=False)
        if _check_kernel(kernel) == "bilinear":
            # identity frames: exactly the plain ViT's per-pixel linear read-out
            self.kernel = TentKernel(pixel_offsets(patch, dims), 1.0 / patch)
            self.m = self.kernel.size
        else:
            self.m = kernel_size or patch**dims
            self.kernel = OffsetKernel(dims, self.m, hidden)
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(),
                                  nn.Linear(dim, self.channels * self.m))

    def forward(self, tokens: Tensor, frames: Tensor, spatial: tuple[int, ...]) -> Tensor:
        """tokens ``(B, T, dim)``, frames ``(B, T, d, d)`` → field ``(B, C_out, *spatial)``."""
        b, t, _ = tokens.shape
        a = self.head(tokens).reshape(b, t, self.channels, self.m)
        offsets = to_local(self.offsets.to(tokens.dtype), frames.unsqueeze(2))  # (B, T, P, d)
        z = torch.einsum("btcm,btpm->btpc", a, self.kernel(offsets))
        p = z.shape[2]
        scalars = z[..., : self.n_scalar]
        # u'_k = B_i z_k
        vectors = to_global(z[..., self.n_scalar:].reshape(b, t, p, self.n_vector, self.dims),
                            frames[:, :, None, None])
        return unpatchify(torch.cat([scalars, vectors.flatten(-2)], dim=-1), self.patch, spatial)
