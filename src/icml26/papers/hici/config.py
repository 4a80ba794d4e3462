"""HiCI's configuration: segment length, slot counts, bottlenecks, causality and inference mode."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import validate_numbers

__all__ = ["CAUSAL_MODES", "INFERENCE_MODES", "LEAKING_MODES", "CausalMode", "HiCIConfig", "InferenceMode"]

CausalMode = Literal["causal_shift", "causal_shift_g", "none", "causal_gi"]
InferenceMode = Literal["hici", "full"]

#: What segment ``i``'s queries see besides their own segment (causal within it):
#: ``causal_shift``   -> G_{i-1} and L_{i-1} (segment 0: nothing)      strictly causal
#: ``causal_shift_g`` -> G_{i-1} only (segment 0: nothing)             strictly causal
#: ``none``           -> G from *all* segments and L_i                  leaks (the authors' Llama default)
#: ``causal_gi``      -> G_i = Agg(L_0..L_i) and L_i                    leaks (the authors' Qwen3 default)
CAUSAL_MODES: tuple[str, ...] = ("causal_shift", "causal_shift_g", "none", "causal_gi")
#: Modes in which a token's output depends on later tokens (L_i summarises all of segment i).
LEAKING_MODES: frozenset[str] = frozenset({"none", "causal_gi"})
INFERENCE_MODES: tuple[str, ...] = ("hici", "full")


@dataclasses.dataclass(frozen=True)
class HiCIConfig:
    """HiCI per-layer modules and segmentation (defaults: the authors' code for Llama-2-7B).

    ``num_slots=0`` and ``num_global=0`` together turn HiCI into plain chunked (block-local)
    causal attention: the no-slot ablation.
    """

    num_slots: int = 8
    """M, learnable local slots per segment (Local Construction)."""
    num_global: int = 4
    """K, global queries of the Global Integration (0: no global context)."""
    bottleneck: int = 512
    """B (= c), width of the local cross-attention and of the global statistic tokens."""
    stat_dim: int = 128
    """s, width of the shared statistic compressor (d -> s -> c)."""
    num_heads: int = 8
    """HiCI's own head count in both modules (not the model's); divides ``bottleneck``."""
    num_segments: int = 4
    """S, segments per sequence when ``segment_size`` is None (G = N / S; the authors' ratio 1/4)."""
    segment_size: int | None = None
    """G, a fixed segment length (overrides ``num_segments``; cost then grows linearly with N)."""
    causal_mode: CausalMode = "causal_shift"
    """One of :data:`CAUSAL_MODES`; ``none`` and ``causal_gi`` leak future tokens (kept to reproduce the authors)."""
    slot_qk_norm: bool = True
    """Qwen3: pass slot keys through the layer's ``k_norm`` like token keys (False: the authors' code)."""
    inference_mode: InferenceMode = "hici"
    """``hici``: chunked HiCI attention; ``full``: the model's own full attention, HiCI modules unused."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        for name in ("bottleneck", "stat_dim", "num_heads", "num_segments"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        for name in ("num_slots", "num_global"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}={value!r} must be a non-negative integer")
        if self.segment_size is not None and (isinstance(self.segment_size, bool)
                                              or not isinstance(self.segment_size, int) or self.segment_size < 1):
            raise ValueError(f"segment_size={self.segment_size!r} must be a positive integer or None")
        if self.num_global > 0 and self.num_slots == 0:
            raise ValueError(f"num_global={self.num_global} needs num_slots > 0: the global context integrates "
                             "the local slots; set num_global=0 too for chunked attention without slots")
        if self.bottleneck % self.num_heads:
            raise ValueError(f"bottleneck={self.bottleneck} must be divisible by num_heads={self.num_heads}")
        if self.causal_mode not in CAUSAL_MODES:
            raise ValueError(f"causal_mode={self.causal_mode!r} is unknown; use one of {', '.join(CAUSAL_MODES)}")
        if self.causal_mode == "causal_shift_g" and self.num_global == 0 and self.num_slots > 0:
            raise ValueError("causal_mode='causal_shift_g' uses only the global context; num_global=0 leaves "
                             "the slots unused: set num_global > 0 or num_slots=0")
        if self.inference_mode not in INFERENCE_MODES:
            raise ValueError(f"inference_mode={self.inference_mode!r} is unknown; use 'hici' or 'full'")
        if not isinstance(self.slot_qk_norm, bool):
            raise TypeError(f"slot_qk_norm={self.slot_qk_norm!r} must be a bool")

    @property
    def leaks(self) -> bool:
        """Whether :attr:`causal_mode` lets a token's output depend on later tokens."""
        return self.causal_mode in LEAKING_MODES and self.num_slots > 0

    def segment_length(self, seq_len: int) -> int:
        """G for a sequence of ``seq_len`` tokens; raises ``ValueError`` when G does not divide it."""
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
            raise ValueError(f"seq_len={seq_len!r} must be a positive integer")
        if self.segment_size is not None:
            if seq_len % self.segment_size:
                raise ValueError(f"sequence length N={seq_len} is not divisible by segment_size G={self.segment_size};"
                                 " pad or crop the input to a multiple of G, or change segment_size")
            return self.segment_size
        if seq_len % self.num_segments:
            raise ValueError(f"sequence length N={seq_len} is not divisible by num_segments S={self.num_segments};"
                             " pad or crop the input to a multiple of S, or set segment_size")
        return seq_len // self.num_segments

    def num_prefix(self) -> int:
        """Slots a segment's queries see before their own tokens: K + M, or K in ``causal_shift_g``."""
        if self.causal_mode == "causal_shift_g":
            return self.num_global
        return self.num_global + self.num_slots
