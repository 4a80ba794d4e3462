"""HiCI's configuration: segment length, slot counts, bottlenecks, causality and inference mode
(:class:`HiCIConfig`), and the reproduction's :class:`Config`: the tiny Llama and its pretraining, the
context extension, the arms' fine-tuning, the retrieval evaluation and the timing bench, with the range
each field accepts."""

from __future__ import annotations

import dataclasses
from typing import Literal

from icml26.common.config import validate_numbers

__all__ = ["CAUSAL_MODES", "INFERENCE_MODES", "LEAKING_MODES", "CausalMode", "Config", "HiCIConfig",
           "InferenceMode"]

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
    gated_prefix: bool = False
    """Zero-gated prefix (ours, after LLaMA-Adapter's zero-init attention): the queries attend to the slots
    in a softmax of their own, scaled per head by tanh(alpha), alpha = 0 at initialisation, and added to the
    segment's causal attention. At the start the model is then exactly chunked attention; the gate opens as
    it trains. False: the authors' joint softmax over ``[slots ; tokens]``, where the untrained slots take
    attention mass from the start."""

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
        if not isinstance(self.gated_prefix, bool):
            raise TypeError(f"gated_prefix={self.gated_prefix!r} must be a bool")
        if self.gated_prefix and self.num_slots == 0:
            raise ValueError("gated_prefix=True needs num_slots > 0: without slots there is no prefix to gate")

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


@dataclasses.dataclass
class Config:
    """Tiny Llama, marked-segment topic retrieval, extension 128 -> 512 (full: 3 seeds, stdlib perplexity)."""

    d_model: int = dataclasses.field(default=64, metadata={"min": 1})
    """Width of the tiny Llama (issue: 64-128)."""
    n_layers: int = dataclasses.field(default=4, metadata={"min": 1})
    """Decoder blocks."""
    n_heads: int = dataclasses.field(default=4, metadata={"min": 1})
    """Attention heads (no GQA)."""
    num_topics: int = dataclasses.field(default=8, metadata={"min": 1})
    """T, topics (chance 1/T)."""
    topic_tokens_each: int = 12
    """Content tokens per topic (disjoint vocabularies); 0: every topic over all 96 (the issue's chains)."""
    segment_tokens: int = dataclasses.field(default=128, metadata={"min": 1})
    """G, tokens per segment at extension (and HiCI's / S²-Attn's / the chunks' segment length)."""
    pretrain_segments: int = dataclasses.field(default=4, metadata={"min": 1})
    """Segments per pretraining document (1 = the issue's single-segment stream)."""
    pretrain_segment_tokens: int = dataclasses.field(default=32, metadata={"min": 1})
    """Tokens per pretraining segment; segments x tokens is the pretraining context (128)."""
    pretrain_steps: int = 600
    """Pretraining steps (all parameters; the retrieval loss reached ~0 by step 200 in our trials)."""
    pretrain_batch: int = dataclasses.field(default=32, metadata={"min": 1})
    """Pretraining documents per step."""
    pretrain_lr: float = 5e-3
    """Peak AdamW learning rate of pretraining."""
    extension_factor: int = dataclasses.field(default=4, metadata={"min": 2})
    """Target context / pretraining context: segments at extension, and the position-interpolation factor."""
    finetune_steps: int = dataclasses.field(default=150, metadata={"min": 1})
    """Extension steps, equal for every arm."""
    finetune_batch: int = dataclasses.field(default=8, metadata={"min": 1})
    """Documents per extension step."""
    lora_rank: int = dataclasses.field(default=8, metadata={"min": 1})
    """LoRA rank on q/k/v/o."""
    lr: float = 2e-3
    """Peak learning rate of LoRA, embeddings and norms (every arm)."""
    hici_lr: float = 1e-2
    """Peak learning rate of HiCI's modules (the authors: 10x the base rate)."""
    answer_weight: float = dataclasses.field(default=1.0, metadata={"min": 0.0})
    """Weight of the answer's cross-entropy beside the mean next-token loss."""
    num_slots: int = 8
    """M, HiCI's local slots."""
    num_global: int = 4
    """K, HiCI's global queries."""
    bottleneck: int = dataclasses.field(default=32, metadata={"min": 1})
    """B = c of HiCI at this width (the authors: 512 at d = 4096)."""
    stat_dim: int = dataclasses.field(default=16, metadata={"min": 1})
    """s of HiCI at this width (the authors: 128)."""
    hici_heads: int = dataclasses.field(default=4, metadata={"min": 1})
    """HiCI's own heads."""
    eval_docs: int = dataclasses.field(default=500, metadata={"min": 1})
    """Evaluation documents per length."""
    eval_extrapolation: int = 8
    """Segments of the longer evaluation (8 x 128 = 1024 tokens)."""
    bench_sizes: tuple[int, ...] = (1024, 2048, 4096, 8192)
    """Sequence lengths of the attention-block benchmark."""
    bench_hidden: int = dataclasses.field(default=256, metadata={"min": 1})
    """d of the benchmarked attention block."""
    bench_segment: int = 256
    """G of the fixed-segment HiCI arm of the benchmark."""
    bench_repeats: int = dataclasses.field(default=3, metadata={"min": 1})
    """Timing rounds; each times every size and arm in turn. Read twice: each arm's fastest run per size
    (load only adds time), and the median over rounds of the slope and ratio within each round (5 or more)."""
    stdlib_steps: int = 300
    """Extension steps of the stdlib perplexity section (0: skipped)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        for name in ("lr", "hici_lr", "pretrain_lr"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")
        if self.eval_extrapolation <= self.extension_factor:
            raise ValueError(f"eval_extrapolation={self.eval_extrapolation} must be larger than "
                             f"extension_factor={self.extension_factor}")
        if self.bottleneck % self.hici_heads:
            raise ValueError(f"bottleneck={self.bottleneck} must be divisible by hici_heads={self.hici_heads}")
        if len(self.bench_sizes) < 2 or any(n % (4 * self.bench_segment) for n in self.bench_sizes):
            raise ValueError(f"bench_sizes={self.bench_sizes} must hold at least two multiples of "
                             f"4 * bench_segment = {4 * self.bench_segment}")
        if self.interpolation_factor < 1:
            raise ValueError("the extension (extension_factor x segment_tokens) must not be shorter than the "
                             "pretraining context (pretrain_segments x pretrain_segment_tokens)")

    @property
    def context(self) -> int:
        """Pretraining context: ``pretrain_segments * pretrain_segment_tokens``."""
        return self.pretrain_segments * self.pretrain_segment_tokens

    @property
    def interpolation_factor(self) -> float:
        """Position-interpolation factor: extension length / pretraining context."""
        return self.extension_factor * self.segment_tokens / self.context

    def hici_config(self, **changes) -> HiCIConfig:
        """HiCI at this width, ``causal_shift``, G = ``segment_tokens`` (``changes`` override fields)."""
        fields = dict(num_slots=self.num_slots, num_global=self.num_global, bottleneck=self.bottleneck,
                      stat_dim=self.stat_dim, num_heads=self.hici_heads, segment_size=self.segment_tokens,
                      causal_mode="causal_shift")
        return HiCIConfig(**{**fields, **changes})

    @classmethod
    def quick(cls) -> "Config":
        return cls(pretrain_steps=300, stdlib_steps=0, bench_repeats=5)

    @classmethod
    def tiny(cls) -> "Config":
        return cls(d_model=32, n_layers=2, segment_tokens=16, pretrain_segments=2, pretrain_segment_tokens=8,
                   pretrain_steps=6, pretrain_batch=4, finetune_steps=3, finetune_batch=2, eval_docs=8,
                   extension_factor=2, eval_extrapolation=4, bench_sizes=(128, 256), bench_hidden=32,
                   bench_segment=32, bench_repeats=1, stdlib_steps=0, bottleneck=8, stat_dim=8)
