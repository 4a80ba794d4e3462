"""A tiny class-conditional DiT (Peebles & Xie 2023), the architecture RobuQ quantizes.

The layout follows facebookresearch/DiT ``models.py`` (which RobuQ builds on): patchify, fixed
2-D sin-cos position embedding, timestep and label embedders (label ``num_classes`` is the null
class used for classifier-free guidance), adaLN-Zero blocks, and a final adaLN layer. Inside
each block the Linears are ``attn.qkv``, ``attn.proj``, ``mlp.fc1``, ``mlp.fc2`` and the adaLN
modulation ``adaLN_modulation.1``, the layers :func:`~icml26.papers.robuq.quantize_dit` swaps.
The output is ``ε`` (no learned σ).

Shapes: ``x`` ``(batch, channels, size, size)``, ``t`` ``(batch,)`` timesteps in ``[0, 1000)``,
``y`` ``(batch,)`` labels in ``[0, num_classes]``; output ``(batch, channels, size, size)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.common.config import validate_numbers

__all__ = ["TinyDiT", "TinyDiTConfig"]


@dataclasses.dataclass(frozen=True)
class TinyDiTConfig:
    """A DiT small enough for CPU (defaults: the brief's 8×8 digits model, 16 tokens of width 64)."""

    image_size: int = 8
    """Height and width of the input."""
    in_channels: int = 1
    """Image channels (the output has as many: ε)."""
    patch_size: int = 2
    """Patch side; ``(image_size / patch_size)²`` tokens."""
    hidden: int = 64
    """Token width (a power of two so that the Hadamard is Sylvester's)."""
    depth: int = 4
    """Transformer blocks."""
    heads: int = 4
    """Attention heads (``hidden`` must be divisible by it)."""
    mlp_ratio: int = 4
    """MLP width / ``hidden`` (256 for the default)."""
    num_classes: int = 10
    """Class labels; label ``num_classes`` is the null (unconditional) class."""

    def __post_init__(self) -> None:
        for name in ("image_size", "in_channels", "patch_size", "hidden", "depth", "heads", "mlp_ratio",
                     "num_classes"):
            check_int(getattr(self, name), name, low=1)
        validate_numbers(self)
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size={self.patch_size} must divide image_size={self.image_size}")
        if self.hidden % self.heads:
            raise ValueError(f"heads={self.heads} must divide hidden={self.hidden}")
        if self.hidden % 4:
            raise ValueError(f"hidden={self.hidden} must be divisible by 4 (2-D sin-cos position embedding)")

    @property
    def tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def _sincos_2d(dim: int, grid: int) -> np.ndarray:
    """DiT's fixed 2-D sin-cos position embedding, ``(grid², dim)``."""
    def one_axis(d: int, pos: np.ndarray) -> np.ndarray:
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    gh, gw = np.meshgrid(np.arange(grid, dtype=np.float64), np.arange(grid, dtype=np.float64), indexing="ij")
    return np.concatenate([one_axis(dim // 2, gh), one_axis(dim // 2, gw)], axis=1)


def timestep_embedding(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """Sinusoidal timestep features ``(batch, dim)`` (DiT / ADM), float32 or ``t``'s float dtype."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class _Block(nn.Module):
    """adaLN-Zero block: ``x += g_msa·Attn(LN(x)(1+scale)+shift)``, then the same for the MLP."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = _Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = _Mlp(dim, dim * mlp_ratio)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        shift1, scale1, gate1, shift2, scale2, gate2 = self.adaLN_modulation(c)[:, None].chunk(6, dim=-1)
        x = x + gate1 * self.attn(self.norm1(x) * (1 + scale1) + shift1)
        return x + gate2 * self.mlp(self.norm2(x) * (1 + scale2) + shift2)


class TinyDiT(nn.Module):
    """A class-conditional DiT predicting ``ε`` (see the module docstring for shapes).

    Args:
        config: a :class:`TinyDiTConfig` (default: 8×8 single-channel images, 10 classes).
    """

    def __init__(self, config: TinyDiTConfig | None = None) -> None:
        super().__init__()
        config = config or TinyDiTConfig()
        if not isinstance(config, TinyDiTConfig):
            raise TypeError(f"config must be a TinyDiTConfig, got {type(config).__name__}")
        self.config = config
        c, p, d = config.in_channels, config.patch_size, config.hidden
        self.x_embedder = nn.Linear(c * p * p, d)
        grid = config.image_size // p
        self.register_buffer("pos_embed", torch.as_tensor(_sincos_2d(d, grid), dtype=torch.float32)[None],
                             persistent=False)
        self.t_embedder = nn.Sequential(nn.Linear(256, d), nn.SiLU(), nn.Linear(d, d))
        self.y_embedder = nn.Embedding(config.num_classes + 1, d)
        self.blocks = nn.ModuleList(_Block(d, config.heads, config.mlp_ratio) for _ in range(config.depth))
        self.final_norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.final_adaLN = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.final_linear = nn.Linear(d, p * p * c)
        self._init_weights()

    @property
    def null_class(self) -> int:
        """The label of the unconditional (null) class."""
        return self.config.num_classes

    def _init_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.y_embedder.weight, std=0.02)
        for lin in (self.t_embedder[0], self.t_embedder[2]):
            nn.init.normal_(lin.weight, std=0.02)
        # adaLN-Zero: every block starts as the identity, the output at zero
        for block in self.blocks:
            nn.init.zeros_(block.adaLN_modulation[1].weight)
            nn.init.zeros_(block.adaLN_modulation[1].bias)
        for lin in (self.final_adaLN[1], self.final_linear):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    def patchify(self, x: Tensor) -> Tensor:
        """``(B, C, H, W) -> (B, tokens, C·p·p)``."""
        b, c, h, w = x.shape
        p = self.config.patch_size
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, (h // p) * (w // p), c * p * p)

    def unpatchify(self, x: Tensor) -> Tensor:
        """``(B, tokens, C·p·p) -> (B, C, H, W)``."""
        b = x.shape[0]
        p, c = self.config.patch_size, self.config.in_channels
        g = self.config.image_size // p
        x = x.reshape(b, g, g, c, p, p).permute(0, 3, 1, 4, 2, 5)
        return x.reshape(b, c, g * p, g * p)

    def forward(self, x: Tensor, t: Tensor, y: Tensor) -> Tensor:
        cfg = self.config
        if x.ndim != 4 or x.shape[1:] != (cfg.in_channels, cfg.image_size, cfg.image_size):
            raise ValueError(f"x has shape {tuple(x.shape)}; expected (batch, {cfg.in_channels}, "
                             f"{cfg.image_size}, {cfg.image_size})")
        if t.shape != x.shape[:1] or y.shape != x.shape[:1]:
            raise ValueError(f"t {tuple(t.shape)} and y {tuple(y.shape)} must have shape (batch,) = ({x.shape[0]},)")
        if y.dtype not in (torch.int64, torch.int32) or bool(((y < 0) | (y > cfg.num_classes)).any()):
            raise ValueError(f"y must hold integer labels in [0, {cfg.num_classes}] ({cfg.num_classes} = null class)")
        h = self.x_embedder(self.patchify(x)) + self.pos_embed.to(x.dtype)
        c = self.t_embedder(timestep_embedding(t, 256).to(x.dtype)) + self.y_embedder(y)
        for block in self.blocks:
            h = block(h, c)
        shift, scale = self.final_adaLN(c)[:, None].chunk(2, dim=-1)
        h = self.final_linear(self.final_norm(h) * (1 + scale) + shift)
        return self.unpatchify(h)
