"""hici: Hierarchical Construction-Integration attention for long-context adaptation.

HiCI (arXiv 2603.20843, ICML 2026; code zengxyyu/HiCI) adds to every attention layer of a
pretrained decoder a few per cent of parameters that let segment-local attention see the rest of
the sequence:

1. Segmentation: the N tokens are cut into S segments of G tokens.
2. Local Construction: M learnable slots cross-attend to each segment's input states -> L_i.
3. Global Integration: five statistics (mean, max, min, std, normalised mean) of the slots are
   compressed, K queries attend over them, and a softplus gate expands the result -> G.
4. Top-down Broadcast: the layer's own k/v projections turn [G; L] into extra keys/values (no
   RoPE); each segment's queries attend to them and, causally, to their own segment.

Usage::

    from icml26.papers.hici import HiCIConfig, patch, set_inference_mode, hici_parameters
    model = patch(my_llama, HiCIConfig(segment_size=1024))      # per instance, in place
    optimizer = torch.optim.AdamW(hici_parameters(model), lr=2e-4)
    set_inference_mode(model, "full")                            # plain full attention
    config = size_modules_for(my_llama, max_overhead=0.05, gated_prefix=True)  # sizes for a small model

Baselines: ``s2attn.patch(model, group_size)`` (LongLoRA S²-Attn) and
``position_interpolation(model, factor)`` (linear RoPE interpolation, used by every arm).
There is no ``METHOD``: the baselines are not drop-in calls with ``patch``'s signature
(S²-Attn takes a group size, position interpolation a factor); see the README.
"""

from icml26.papers.hici import s2attn
from icml26.papers.hici.analysis import (
    accuracy,
    chunked_ceiling,
    hici_parameter_count,
    loglog_slope,
    parameter_overhead,
    round_slopes,
)
from icml26.papers.hici.attention import (block_local_attention, gated_prefix_attention, segment_attention,
                                         segment_mask)
from icml26.papers.hici.baselines import position_interpolation
from icml26.papers.hici.benchmark import AttentionTimings, time_attention_blocks
from icml26.papers.hici.config import CAUSAL_MODES, LEAKING_MODES, HiCIConfig
from icml26.papers.hici.data import TopicDocuments, TopicRetrievalTask
from icml26.papers.hici.modules import (GlobalIntegrator, LocalConstructor, PrefixGate, cumulative_statistics,
                                       pooled_statistics)
from icml26.papers.hici.patch import attention_layers, hici_parameters, inference_mode, is_patched, patch, set_inference_mode
from icml26.papers.hici.persist import from_pretrained, save_pretrained
from icml26.papers.hici.s2attn import s2_attention
from icml26.papers.hici.sizing import module_parameter_count, size_modules, size_modules_for

BASELINES = {
    "s2attn": s2attn.patch,
    "position_interpolation": position_interpolation,
}

__all__ = [
    "BASELINES",
    "CAUSAL_MODES",
    "LEAKING_MODES",
    "AttentionTimings",
    "GlobalIntegrator",
    "HiCIConfig",
    "LocalConstructor",
    "PrefixGate",
    "TopicDocuments",
    "TopicRetrievalTask",
    "accuracy",
    "attention_layers",
    "block_local_attention",
    "chunked_ceiling",
    "cumulative_statistics",
    "from_pretrained",
    "gated_prefix_attention",
    "hici_parameter_count",
    "hici_parameters",
    "inference_mode",
    "is_patched",
    "loglog_slope",
    "module_parameter_count",
    "parameter_overhead",
    "patch",
    "pooled_statistics",
    "position_interpolation",
    "round_slopes",
    "s2_attention",
    "s2attn",
    "save_pretrained",
    "segment_attention",
    "segment_mask",
    "set_inference_mode",
    "size_modules",
    "size_modules_for",
    "time_attention_blocks",
]
