"""HiCI's two per-layer modules: Local Construction and Global Integration.

Local Construction (``LocalConstructor``, the authors' ``LocalConstructorMulti``): M learnable
slots cross-attend, with HiCI's own ``h`` heads in a bottleneck of width B, to the G input states
of one segment (no causal mask inside the segment) and are projected back to the model width d.

Global Integration (``GlobalIntegrator``, the authors' ``GlobalIntegratorShared``): all slots
of the segments in scope are pooled into five statistics (mean, max, min, population std,
l2-normalised mean), each compressed by one shared ``LN(W2 LN(W1 x))`` (d -> s -> c), K learnable
queries attend over the five statistic tokens, and a softplus gate (0.1 at initialisation)
scales the expansion back to d. ``forward_causal`` gives, per segment i, the integration of
segments 0..i from cumulative statistics, exactly (not an approximation).

Prefix gate (``PrefixGate``, ours, optional): one tanh gate per attention head, zero at
initialisation, scaling the slots' separately normalised attention (LLaMA-Adapter's zero-init
attention), so that a freshly patched model computes exactly chunked attention.

Parameters per layer (no biases except LayerNorm's):
``M d + 3 d B + B d`` (local), ``d s + 2 s + s c + 2 c + K c + 4 c^2 + c d + 1`` (global) and, with
the gate, one per attention head.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["GlobalIntegrator", "LocalConstructor", "PrefixGate", "cumulative_statistics", "pooled_statistics"]

_STD_FLOOR = 1e-6
_NORM_EPS = 1e-6


def _wide(x: Tensor) -> Tensor:
    """At least float32 (the authors compute the std in float32)."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _check_slots(slots: Tensor, name: str = "slots") -> None:
    if not isinstance(slots, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (batch, segments, slots, d)")
    if slots.ndim != 4:
        raise ValueError(f"{name} must have shape (batch, segments, slots, d); got {tuple(slots.shape)}")
    if slots.shape[1] < 1 or slots.shape[2] < 1:
        raise ValueError(f"{name} must hold at least one segment and one slot; got {tuple(slots.shape)}")


def pooled_statistics(slots: Tensor) -> Tensor:
    """The five statistics of all slots, pooled over segments and slots.

    Args:
        slots: ``(batch, segments, M, d)`` local slots.

    Returns:
        ``(batch, 5, d)``: mean, max, min, population std (computed in float32, floored at
        1e-6) and the l2-normalised mean, in the input's dtype. NaN in the input propagates.
    """
    _check_slots(slots)
    flat = slots.reshape(slots.shape[0], -1, slots.shape[-1])
    mean = flat.mean(dim=1)
    # std = sqrt(mean((x - mean)^2)), floored at 1e-6 (population std, as the authors)
    std = _wide(flat).std(dim=1, unbiased=False).clamp(min=_STD_FLOOR).to(flat.dtype)
    # norm_mean = mean / max(||mean||_2, 1e-6)
    norm_mean = F.normalize(mean, dim=-1, p=2, eps=_NORM_EPS)
    return torch.stack([mean, flat.amax(dim=1), flat.amin(dim=1), std, norm_mean], dim=1)


def cumulative_statistics(slots: Tensor) -> Tensor:
    """Per segment i, the five statistics of the slots of segments 0..i.

    ``cumulative_statistics(L)[:, i] == pooled_statistics(L[:, :i+1])`` up to rounding: means
    from running sums, the std from running sums of squares (float32), max/min from cummax/cummin.

    Args:
        slots: ``(batch, segments, M, d)``.

    Returns:
        ``(batch, segments, 5, d)``.
    """
    _check_slots(slots)
    batch, segments, m, d = slots.shape
    x = _wide(slots)
    counts = (torch.arange(1, segments + 1, device=slots.device, dtype=x.dtype) * m).view(1, -1, 1)
    # shift by the first segment's mean: the variance is shift-invariant and E[x^2] - mean^2 stays well conditioned
    ref = x[:, :1].mean(dim=2, keepdim=True)
    x = x - ref
    # mean_i = sum_{j<=i} sum_k L_jk / (M (i+1))
    mean = x.sum(dim=2).cumsum(dim=1) / counts
    # var_i = E_{j<=i}[L^2] - mean_i^2 (at least float32), std floored at 1e-6
    second = (x * x).sum(dim=2).cumsum(dim=1) / counts
    std = (second - mean * mean).clamp(min=_STD_FLOOR**2).sqrt()
    mean = mean + ref[:, :, 0]
    maxima = slots.amax(dim=2).cummax(dim=1).values
    minima = slots.amin(dim=2).cummin(dim=1).values
    mean = mean.to(slots.dtype)
    norm_mean = F.normalize(mean, dim=-1, p=2, eps=_NORM_EPS)
    return torch.stack([mean, maxima, minima, std.to(slots.dtype), norm_mean], dim=2)


class LocalConstructor(nn.Module):
    """M learnable slots summarise each segment by multi-head cross-attention (Local Construction).

    Args:
        hidden_size: d, the model width.
        num_slots: M.
        bottleneck: B, the width of the cross-attention (divisible by ``num_heads``).
        num_heads: h, HiCI's own heads.
    """

    def __init__(self, hidden_size: int, num_slots: int = 8, bottleneck: int = 512, num_heads: int = 8) -> None:
        super().__init__()
        for name, value in (("hidden_size", hidden_size), ("num_slots", num_slots), ("bottleneck", bottleneck),
                            ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if bottleneck % num_heads:
            raise ValueError(f"bottleneck={bottleneck} must be divisible by num_heads={num_heads}")
        self.hidden_size, self.num_slots, self.bottleneck, self.num_heads = hidden_size, num_slots, bottleneck, num_heads
        self.head_dim = bottleneck // num_heads
        # slots ~ N(0, 1/d) (the authors' initialisation)
        self.memory_slots = nn.Parameter(torch.randn(num_slots, hidden_size) / math.sqrt(hidden_size))
        self.q_proj = nn.Linear(hidden_size, bottleneck, bias=False)
        self.k_proj = nn.Linear(hidden_size, bottleneck, bias=False)
        self.v_proj = nn.Linear(hidden_size, bottleneck, bias=False)
        self.o_proj = nn.Linear(bottleneck, hidden_size, bias=False)

    def forward(self, segments: Tensor) -> Tensor:
        """Slots of each segment.

        Args:
            segments: ``(batch, S, G, d)`` input states of the layer, cut into segments.

        Returns:
            ``(batch, S, M, d)``.
        """
        if not isinstance(segments, Tensor) or segments.ndim != 4 or segments.shape[-1] != self.hidden_size:
            shape = tuple(segments.shape) if isinstance(segments, Tensor) else type(segments).__name__
            raise ValueError(f"segments must have shape (batch, S, G, d={self.hidden_size}); got {shape}")
        b, s, g, _ = segments.shape
        h, hd = self.num_heads, self.head_dim
        q = self.q_proj(self.memory_slots.to(segments.dtype)).view(self.num_slots, h, hd).transpose(0, 1)  # (h, M, hd)
        k = self.k_proj(segments).view(b, s, g, h, hd).transpose(2, 3)  # (b, S, h, G, hd)
        v = self.v_proj(segments).view(b, s, g, h, hd).transpose(2, 3)
        # L_i = concat_heads(softmax(q k_i^T / sqrt(B/h)) v_i) W_o  (softmax over the G tokens of segment i)
        out = F.scaled_dot_product_attention(q.expand(b, s, h, self.num_slots, hd), k, v)  # (b, S, h, M, hd)
        return self.o_proj(out.transpose(2, 3).reshape(b, s, self.num_slots, self.bottleneck))


class GlobalIntegrator(nn.Module):
    """Five pooled statistics of the slots, compressed, attended by K queries, gated back to d.

    Args:
        hidden_size: d.
        num_global: K, global queries (outputs).
        bottleneck: c, width of the statistic tokens and of the attention (divisible by ``num_heads``).
        stat_dim: s, width of the shared compressor's first stage.
        num_heads: h.
        gate_init: softplus(beta) at initialisation (the authors: 0.1).
    """

    NUM_STATS = 5

    def __init__(self, hidden_size: int, num_global: int = 4, bottleneck: int = 512, stat_dim: int = 128,
                 num_heads: int = 8, gate_init: float = 0.1) -> None:
        super().__init__()
        for name, value in (("hidden_size", hidden_size), ("num_global", num_global), ("bottleneck", bottleneck),
                            ("stat_dim", stat_dim), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if bottleneck % num_heads:
            raise ValueError(f"bottleneck={bottleneck} must be divisible by num_heads={num_heads}")
        if not (isinstance(gate_init, (int, float)) and math.isfinite(gate_init) and gate_init > 0):
            raise ValueError(f"gate_init={gate_init!r} must be a positive finite number")
        self.hidden_size, self.num_global, self.bottleneck = hidden_size, num_global, bottleneck
        self.stat_dim, self.num_heads, self.head_dim = stat_dim, num_heads, bottleneck // num_heads
        # compressor: z = LN_c(W2 LN_s(W1 x)), shared by the five statistics
        self.compress_in = nn.Linear(hidden_size, stat_dim, bias=False)
        self.norm_in = nn.LayerNorm(stat_dim)
        self.compress_out = nn.Linear(stat_dim, bottleneck, bias=False)
        self.norm_out = nn.LayerNorm(bottleneck)
        self.global_queries = nn.Parameter(torch.empty(num_global, bottleneck))
        self.q_proj = nn.Linear(bottleneck, bottleneck, bias=False)
        self.k_proj = nn.Linear(bottleneck, bottleneck, bias=False)
        self.v_proj = nn.Linear(bottleneck, bottleneck, bias=False)
        self.o_proj = nn.Linear(bottleneck, bottleneck, bias=False)
        self.expand = nn.Linear(bottleneck, hidden_size, bias=False)
        # beta = softplus^{-1}(gate_init) = log(exp(gate_init) - 1)
        self.gate_param = nn.Parameter(torch.tensor(math.log(math.expm1(float(gate_init)))))
        with torch.no_grad():
            nn.init.xavier_uniform_(self.global_queries)
            for proj in (self.q_proj, self.k_proj, self.v_proj, self.o_proj):
                nn.init.xavier_uniform_(proj.weight)
            nn.init.normal_(self.expand.weight, mean=0.0, std=0.02 / math.sqrt(bottleneck))

    @property
    def gate(self) -> Tensor:
        """softplus(beta), the output scale (0.1 at initialisation)."""
        return F.softplus(self.gate_param)

    def compress(self, stats: Tensor) -> Tensor:
        """``(..., d) -> (..., c)``: the shared compressor ``LN(W2 LN(W1 x))``."""
        return self.norm_out(self.compress_out(self.norm_in(self.compress_in(stats))))

    @torch.no_grad()
    def init_queries_from_embeddings(self, embeddings: Tensor) -> None:
        """Set the K queries to the compressed K highest-norm rows of ``embeddings`` ``(vocab, d)`` (the authors' init)."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2 or embeddings.shape[1] != self.hidden_size:
            raise ValueError(f"embeddings must have shape (vocab, d={self.hidden_size})")
        if embeddings.shape[0] < self.num_global:
            raise ValueError(f"embeddings has {embeddings.shape[0]} rows, fewer than num_global={self.num_global}")
        top = embeddings.float().norm(dim=-1).topk(self.num_global).indices
        rows = embeddings[top].to(device=self.global_queries.device, dtype=self.global_queries.dtype)
        self.global_queries.copy_(self.compress(rows))

    def _integrate(self, stats: Tensor) -> Tensor:
        """``(n, 5, d)`` statistics -> ``(n, K, d)`` global context."""
        n = stats.shape[0]
        z = self.compress(stats)  # (n, 5, c)
        h, hd, k_ = self.num_heads, self.head_dim, self.num_global
        q = self.q_proj(self.global_queries.to(z.dtype)).view(k_, h, hd).transpose(0, 1).expand(n, h, k_, hd)
        k = self.k_proj(z).view(n, self.NUM_STATS, h, hd).transpose(1, 2)
        v = self.v_proj(z).view(n, self.NUM_STATS, h, hd).transpose(1, 2)
        # A = softmax(Q_g K_z^T / sqrt(c/h)) V_z over the 5 statistic tokens
        attn = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, k_, self.bottleneck)
        # G = softplus(beta) * W_e (W_o A)
        return self.gate.to(z.dtype) * self.expand(self.o_proj(attn))

    def forward(self, slots: Tensor) -> Tensor:
        """One global context from all the given slots.

        Args:
            slots: ``(batch, S, M, d)``.

        Returns:
            ``(batch, K, d)``; invariant to any permutation of the S*M slots.
        """
        _check_slots(slots)
        return self._integrate(pooled_statistics(slots))

    def forward_causal(self, slots: Tensor) -> Tensor:
        """Per segment i, the global context of segments 0..i.

        Args:
            slots: ``(batch, S, M, d)``.

        Returns:
            ``(batch, S, K, d)``, with ``[:, i] == forward(slots[:, :i+1])``.
        """
        _check_slots(slots)
        b, s = slots.shape[:2]
        stats = cumulative_statistics(slots).reshape(b * s, self.NUM_STATS, self.hidden_size)
        return self._integrate(stats).view(b, s, self.num_global, self.hidden_size)


class PrefixGate(nn.Module):
    """Per-head gates ``tanh(alpha_h)`` of the slot prefix, ``alpha = 0`` at initialisation (closed).

    Used by the ``gated_prefix`` option: a segment's output is its causal attention plus
    ``tanh(alpha_h)`` times its attention over the slots (a softmax of its own). tanh keeps the gate in
    (-1, 1) and has slope 1 at 0, so the first gradient step opens it as fast as a plain scalar would.

    Args:
        num_heads: the model's attention heads (query heads).
    """

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError(f"num_heads={num_heads!r} must be a positive integer")
        self.alpha = nn.Parameter(torch.zeros(num_heads))

    @property
    def gate(self) -> Tensor:
        """``(num_heads,)`` gate values tanh(alpha)."""
        return torch.tanh(self.alpha)

    def forward(self, local: Tensor, slots: Tensor) -> Tensor:
        """``local + tanh(alpha_h) * slots``, per head.

        Args:
            local: ``(b, H, N, hd)``, the segments' causal attention.
            slots: ``(b, H, N, hd)``, the attention over the slot prefix (same shape).
        """
        h = self.alpha.shape[0]
        if not isinstance(local, Tensor) or local.ndim != 4 or local.shape[1] != h:
            raise ValueError(f"local must have shape (b, H={h}, N, hd); got "
                             f"{tuple(local.shape) if isinstance(local, Tensor) else type(local).__name__}")
        if not isinstance(slots, Tensor) or slots.shape != local.shape:
            raise ValueError(f"slots must have the shape of local {tuple(local.shape)}")
        # out = local + tanh(alpha_h) * slots
        return local + self.gate.to(local.dtype).view(1, h, 1, 1) * slots
