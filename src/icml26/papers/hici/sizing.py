"""Sizing HiCI's modules for a given model: parameter counts and the largest bottleneck under a budget.

The authors' sizes (B = c = 512, s = 128, M = 8, K = 4, h = 8) were chosen for LLaMA-2-7B, where they
add 5.46 % of base + HiCI. On a small model the same sizes dominate: at SmolLM2-135M (d = 576, 30
layers) they add 80.1M parameters, 37 % of base + HiCI. :func:`size_modules` keeps M, K and h, keeps
the authors' ratio s / c = 1/4, and picks the largest bottleneck B (a multiple of h, at most the
authors' 512) whose modules stay within ``max_overhead`` of base + HiCI.

Per layer (no biases except LayerNorm's; the closed form of :mod:`icml26.papers.hici.modules`):
``M d + 3 d B + B d`` (local, when M > 0) + ``d s + 2 s + s c + 2 c + K c + 4 c^2 + c d + 1`` (global,
when K > 0) + ``H`` (the prefix gate, one per attention head, when ``gated_prefix``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.hici.analysis import hici_parameter_count, parameter_overhead
from icml26.papers.hici.config import HiCIConfig

__all__ = ["module_parameter_count", "size_modules", "size_modules_for"]

#: The authors' bottleneck (B = c) and statistic width (s): s / c = 1/4.
AUTHORS_BOTTLENECK, AUTHORS_STAT_DIM = 512, 128


def module_parameter_count(hidden_size: int, config: HiCIConfig, *, attention_heads: int | None = None) -> int:
    """HiCI parameters added to one attention layer of width ``hidden_size`` by ``config``.

    Args:
        hidden_size: d, the model width.
        config: the :class:`HiCIConfig` (its M, K, B, s and ``gated_prefix``).
        attention_heads: the model's query heads H (needed only when ``config.gated_prefix``).
    """
    check_int(hidden_size, "hidden_size", low=1)
    if not isinstance(config, HiCIConfig):
        raise TypeError(f"config must be a HiCIConfig, got {type(config).__name__}")
    count = hici_parameter_count(hidden_size, config.num_slots, config.num_global, config.bottleneck, config.stat_dim)
    if config.gated_prefix:
        if attention_heads is None:
            raise ValueError("attention_heads is required when config.gated_prefix (one gate per head)")
        count += check_int(attention_heads, "attention_heads", low=1)
    return count


def size_modules(hidden_size: int, num_layers: int, base_params: int, *, max_overhead: float = 0.05,
                 attention_heads: int | None = None, max_bottleneck: int = AUTHORS_BOTTLENECK,
                 **fields: Any) -> HiCIConfig:
    """The :class:`HiCIConfig` with the largest bottleneck whose modules add at most ``max_overhead``.

    B = c runs over the multiples of ``num_heads`` up to ``max_bottleneck``; s = max(1, round(B / 4))
    (the authors' 128 / 512). Every other field comes from ``fields`` or :class:`HiCIConfig`'s defaults.

    Args:
        hidden_size, num_layers: d and the number of decoder layers.
        base_params: parameters of the model without HiCI.
        max_overhead: the largest allowed share ``HiCI / (base + HiCI)`` in (0, 1).
        attention_heads: the model's query heads (counted when ``gated_prefix=True``).
        max_bottleneck: the largest B tried (default the authors' 512).
        fields: other :class:`HiCIConfig` fields (``num_slots``, ``num_global``, ``num_heads``,
            ``segment_size``, ``gated_prefix`` …); ``bottleneck`` and ``stat_dim`` are chosen here.

    Raises:
        ValueError: when even the smallest bottleneck (B = num_heads) exceeds ``max_overhead``.
    """
    check_int(hidden_size, "hidden_size", low=1)
    check_int(num_layers, "num_layers", low=1)
    check_int(base_params, "base_params", low=1)
    check_real(max_overhead, "max_overhead", low=0.0, high=1.0, low_open=True, high_open=True)
    if attention_heads is not None:
        check_int(attention_heads, "attention_heads", low=1)
    for name in ("bottleneck", "stat_dim"):
        if name in fields:
            raise ValueError(f"{name} is chosen by size_modules; do not pass it (count a fixed size with "
                             "module_parameter_count)")
    template = HiCIConfig(**fields)
    heads = template.num_heads
    check_int(max_bottleneck, "max_bottleneck", low=heads)

    def config_for(b: int) -> HiCIConfig:
        return dataclasses.replace(template, bottleneck=b, stat_dim=max(1, round(b * AUTHORS_STAT_DIM
                                                                              / AUTHORS_BOTTLENECK)))

    def overhead(config: HiCIConfig) -> float:
        per_layer = module_parameter_count(hidden_size, config, attention_heads=attention_heads)
        return parameter_overhead(num_layers * per_layer, base_params)

    best = None
    for b in range(heads, max_bottleneck + 1, heads):  # the count grows with B: stop at the first over budget
        candidate = config_for(b)
        if overhead(candidate) > max_overhead:
            break
        best = candidate
    if best is None:
        raise ValueError(f"max_overhead={max_overhead} is below the smallest HiCI (B = num_heads = {heads}): "
                         f"{overhead(config_for(heads)):.4f} of base + HiCI; raise max_overhead, or lower "
                         "num_slots / num_global / num_heads")
    return best


def size_modules_for(model: nn.Module, *, max_overhead: float = 0.05, **kwargs: Any) -> HiCIConfig:
    """:func:`size_modules` with d, the layer count, the head count and the parameters read off ``model``.

    Args:
        model: a Hugging Face ``LlamaForCausalLM`` / ``Qwen3ForCausalLM`` (PEFT-wrapped or not), unpatched.
        max_overhead, kwargs: as in :func:`size_modules`.
    """
    from icml26.papers.hici.patch import _supported_model, is_patched

    inner = _supported_model(model)
    if is_patched(model) is not None:
        raise ValueError("model is already patched; size the modules on the unpatched model")
    config = inner.config
    base_params = sum(p.numel() for p in inner.parameters())
    return size_modules(config.hidden_size, config.num_hidden_layers, base_params, max_overhead=max_overhead,
                        attention_heads=config.num_attention_heads, **kwargs)
