"""Fox: dismantling pathological shortcuts for faithful LVLM decoding (ICML 2026, arXiv 2606.27596).

Training-free: two streams of one vision-language model. The interventional stream probes, in
layers [L/16, L/2) and on the last query row, every head's attention (``s_h = m_sys·H_vis``:
mass on the prefix times entropy over the image) and saturates the pre-softmax logits of the
top ``k = max(1, min(round(ρH), ⌊H/2⌋))`` heads (the fp16 rounding the authors' code relies on,
emulated explicitly). The fused logits are ``z = l_o + w·l_i`` with ``w = 2`` if the streams
agree (JS < 0.15) and ``w = JS`` otherwise, under a plausibility mask (β = 0.1).

>>> from icml26.papers.fox import FoxConfig, fox_generate
>>> out = fox_generate(model, inputs, FoxConfig(max_new_tokens=64))   # any LLaVA / Qwen2-VL style HF model
>>> out.new_tokens

``METHOD`` is :func:`fox_generate`; ``BASELINES`` holds the same plug-ins for vanilla, VCD, SID
and PAI decoding, each ``generate(model, inputs, config)``.
"""

from typing import Callable

from icml26.papers.fox.analysis import ChairScores, chair, mentioned_objects, pope_scores, precision_at_k, top_k_mask
from icml26.papers.fox.attention import (
    ATTN_IMPLEMENTATION,
    AttentionIntervention,
    FoxIntervention,
    HeadAblation,
    HeadSaturation,
    KeySets,
    PAIIntervention,
    ProbeRecord,
    SIDIntervention,
    active_intervention,
    current_intervention,
    fox_attention_forward,
    image_token_id,
    key_sets,
    language_model,
    register_fox_attention,
    sid_keep_mask,
    use_fox_attention,
)
from icml26.papers.fox.baselines import (
    PAIConfig,
    SIDConfig,
    VCDConfig,
    diffusion_alphas_cumprod,
    diffusion_noise,
    pai_generate,
    sid_generate,
    text_only_inputs,
    vanilla_generate,
    vcd_generate,
)
from icml26.papers.fox.decoding import (
    CACHE_MODES,
    DecodeOutput,
    DecodingConfig,
    DualStreamLogitsProcessor,
    FoxConfig,
    default_fox_layers,
    fox_generate,
    fox_logits_processor,
    num_decoder_layers,
    run_generate,
)
from icml26.papers.fox.fusion import (
    JS_CLIP,
    cfg_combine,
    conflict_gated_fusion,
    fusion_weight,
    js_divergence,
    plausibility_mask,
    vcd_combine,
)
from icml26.papers.fox.head_probe import (
    ENTROPY_EPS,
    SCORES,
    ProbeStats,
    max_entropy,
    num_risky_heads,
    select_risky_heads,
    visual_entropy_probe,
)
from icml26.papers.fox.saturation import SATURATION_MODES, SATURATION_SHIFT, fp16_spacing, saturate_logits

METHOD: Callable = fox_generate
"""The method: ``fox_generate(model, inputs, FoxConfig)``."""
BASELINES: dict[str, Callable] = {
    "vanilla": vanilla_generate,
    "vcd": vcd_generate,
    "sid": sid_generate,
    "pai": pai_generate,
}
"""Drop-in alternatives to :data:`METHOD`: ``generate(model, inputs, config=None) -> DecodeOutput``."""

__all__ = [
    "ATTN_IMPLEMENTATION",
    "BASELINES",
    "CACHE_MODES",
    "ENTROPY_EPS",
    "JS_CLIP",
    "METHOD",
    "SATURATION_MODES",
    "SATURATION_SHIFT",
    "SCORES",
    "AttentionIntervention",
    "ChairScores",
    "DecodeOutput",
    "DecodingConfig",
    "DualStreamLogitsProcessor",
    "FoxConfig",
    "FoxIntervention",
    "HeadAblation",
    "HeadSaturation",
    "KeySets",
    "PAIConfig",
    "PAIIntervention",
    "ProbeRecord",
    "ProbeStats",
    "SIDConfig",
    "SIDIntervention",
    "VCDConfig",
    "active_intervention",
    "cfg_combine",
    "chair",
    "conflict_gated_fusion",
    "current_intervention",
    "default_fox_layers",
    "diffusion_alphas_cumprod",
    "diffusion_noise",
    "fox_attention_forward",
    "fox_generate",
    "fox_logits_processor",
    "fp16_spacing",
    "fusion_weight",
    "image_token_id",
    "js_divergence",
    "key_sets",
    "language_model",
    "max_entropy",
    "mentioned_objects",
    "num_decoder_layers",
    "num_risky_heads",
    "pai_generate",
    "plausibility_mask",
    "pope_scores",
    "precision_at_k",
    "register_fox_attention",
    "run_generate",
    "saturate_logits",
    "select_risky_heads",
    "sid_generate",
    "sid_keep_mask",
    "text_only_inputs",
    "top_k_mask",
    "use_fox_attention",
    "vanilla_generate",
    "vcd_combine",
    "vcd_generate",
    "visual_entropy_probe",
]
