"""Fox's hostile-input probes (no image tokens, ρ ∉ (0, 1], a layer out of range, and more).

Fox exports no ``nn.Module`` (the interventions are plain objects read by one attention function),
so ``MODULES`` is empty.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from icml26.contract import Probe
from icml26.papers.fox import (
    DecodingConfig,
    DualStreamLogitsProcessor,
    FoxConfig,
    FoxIntervention,
    PAIConfig,
    SIDConfig,
    VCDConfig,
    active_intervention,
    cfg_combine,
    chair,
    conflict_gated_fusion,
    diffusion_noise,
    fox_generate,
    js_divergence,
    key_sets,
    num_risky_heads,
    pai_generate,
    plausibility_mask,
    pope_scores,
    precision_at_k,
    saturate_logits,
    select_risky_heads,
    sid_generate,
    text_only_inputs,
    top_k_mask,
    use_fox_attention,
    vanilla_generate,
    vcd_combine,
    vcd_generate,
    visual_entropy_probe,
)

MODULES: list = []

_ROW = torch.tensor([[0.1, 0.2, 0.3, 0.4]])
_VIS = torch.tensor([False, True, True, False])
_SYS = torch.tensor([True, False, False, False])
_L = torch.randn(2, 6, generator=torch.Generator().manual_seed(0))


@functools.lru_cache(maxsize=1)
def _llava():
    from icml26.papers.fox.model import build_tiny_llava

    return build_tiny_llava()


def _inputs(with_image: bool = True, prefix: bool = True) -> dict:
    image = [3] * 16 if with_image else [10] * 16
    ids = torch.tensor([([1, 4, 5, 6] if prefix else []) + image + [7, 6]])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": torch.zeros(1, 3, 32, 32)}


def _nan_row() -> torch.Tensor:
    row = _ROW.clone()
    row[0, 1] = float("nan")
    return row


HOSTILE = [
    # the probe
    Probe("probe without image keys", lambda: visual_entropy_probe(_ROW, torch.zeros(4, dtype=torch.bool), _SYS),
          match="visual_keys"),
    Probe("probe with overlapping key sets", lambda: visual_entropy_probe(_ROW, _VIS, _VIS), match="overlap"),
    Probe("probe mask of the wrong length", lambda: visual_entropy_probe(_ROW, _VIS[:3], _SYS), match="visual_keys"),
    Probe("probe float mask", lambda: visual_entropy_probe(_ROW, _VIS.float(), _SYS), raises=TypeError,
          match="visual_keys"),
    Probe("probe index out of range", lambda: visual_entropy_probe(_ROW, torch.tensor([1, 9]), _SYS),
          match="visual_keys"),
    Probe("probe on logits (negative)", lambda: visual_entropy_probe(_ROW - 1, _VIS, _SYS), match="attn_row"),
    Probe("probe unknown score", lambda: visual_entropy_probe(_ROW, _VIS, _SYS, score="risk"), match="score"),
    Probe("probe of a string", lambda: visual_entropy_probe("attention", _VIS, _SYS), raises=TypeError,
          match="attn_row"),
    Probe("probe NaN row propagates", lambda: visual_entropy_probe(_nan_row(), _VIS, _SYS),
          returns=lambda s: bool(torch.isnan(s.h_vis).all() and torch.isnan(s.score).all()),
          doc="NaN in an attention row gives NaN statistics for that row"),
    # k and head selection
    Probe("num_risky_heads rho=0", lambda: num_risky_heads(8, 0.0), match="rho"),
    Probe("num_risky_heads rho=1.5", lambda: num_risky_heads(8, 1.5), match="rho"),
    Probe("num_risky_heads rho=NaN", lambda: num_risky_heads(8, math.nan), match="rho"),
    Probe("num_risky_heads n_heads=0", lambda: num_risky_heads(0, 0.35), match="n_heads"),
    Probe("num_risky_heads n_heads=2.5", lambda: num_risky_heads(2.5, 0.35), raises=TypeError, match="n_heads"),
    Probe("select_risky_heads NaN score", lambda: select_risky_heads(torch.tensor([1.0, math.nan]), 0.5),
          match="NaN"),
    Probe("select_risky_heads rho=-0.1", lambda: select_risky_heads(torch.ones(4), -0.1), match="rho"),
    Probe("select_risky_heads scalar", lambda: select_risky_heads(torch.tensor(1.0), 0.5), match="score"),
    # saturation
    Probe("saturate unknown mode", lambda: saturate_logits(_L, mode="bf16"), match="mode"),
    Probe("saturate shift=0", lambda: saturate_logits(_L, shift=0.0), match="shift"),
    Probe("saturate fp16 overflow", lambda: saturate_logits(torch.tensor([1e5, 0.0])), match="float16"),
    Probe("saturate grid given in fp16 mode", lambda: saturate_logits(_L, grid=8.0), match="grid"),
    Probe("saturate grid=-8", lambda: saturate_logits(_L, mode="grid", grid=-8.0), match="grid"),
    Probe("saturate NaN propagates", lambda: saturate_logits(torch.tensor([math.nan, 1.0])),
          returns=lambda v: bool(torch.isnan(v[0]) and v[1] == 0.0), doc="NaN stays NaN; 1.0 rounds to 0 on the 8-grid"),
    Probe("saturate -inf stays -inf", lambda: saturate_logits(torch.tensor([-math.inf, 3.0])),
          returns=lambda v: bool(v[0] == -math.inf), doc="masked (-inf) logits stay masked"),
    # JS and fusion
    Probe("js shape mismatch", lambda: js_divergence(_L, _L[:, :5]), match="same shape"),
    Probe("js one-token vocabulary", lambda: js_divergence(_L[:, :1], _L[:, :1]), match="vocabulary"),
    Probe("js clip=0", lambda: js_divergence(_L, _L, clip=0.0), match="clip"),
    Probe("js NaN propagates", lambda: js_divergence(torch.full((1, 3), math.nan), torch.zeros(1, 3)),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN logits give a NaN divergence"),
    Probe("fusion beta=1.5", lambda: conflict_gated_fusion(_L, _L, beta=1.5), match="beta"),
    Probe("fusion tau=-1", lambda: conflict_gated_fusion(_L, _L, tau=-1.0), match="tau"),
    Probe("fusion shape mismatch", lambda: conflict_gated_fusion(_L, _L.T), match="same shape"),
    Probe("plausibility beta=2", lambda: plausibility_mask(_L, 2.0), match="beta"),
    Probe("vcd alpha=-1", lambda: vcd_combine(_L, _L, alpha=-1.0), match="alpha"),
    Probe("cfg gamma=NaN", lambda: cfg_combine(_L, _L, gamma=math.nan), match="gamma"),
    # configs
    Probe("FoxConfig rho=0", lambda: FoxConfig(rho=0.0), match="rho"),
    Probe("FoxConfig rho=1.2", lambda: FoxConfig(rho=1.2), match="rho"),
    Probe("FoxConfig negative layer", lambda: FoxConfig(layers=(-1,)), match="layers"),
    Probe("FoxConfig saturation=bf16", lambda: FoxConfig(saturation="bf16"), match="saturation"),
    Probe("FoxConfig cache_mode=none", lambda: FoxConfig(cache_mode="none"), match="cache_mode"),
    Probe("FoxConfig max_new_tokens=0", lambda: FoxConfig(max_new_tokens=0), match="max_new_tokens"),
    Probe("FoxConfig top_p=0", lambda: FoxConfig(top_p=0.0), match="top_p"),
    Probe("FoxConfig do_sample='yes'", lambda: FoxConfig(do_sample="yes"), raises=TypeError, match="do_sample"),
    Probe("SIDConfig keep=0", lambda: SIDConfig(keep=0), match="keep"),
    Probe("PAIConfig gamma=NaN", lambda: PAIConfig(gamma=math.nan), match="gamma"),
    Probe("VCDConfig noise_step=1000", lambda: VCDConfig(noise_step=1000), match="noise_step"),
    Probe("DecodingConfig temperature=0", lambda: DecodingConfig(temperature=0.0), match="temperature"),
    # the model-level plug-ins
    Probe("fox_generate without image tokens", lambda: fox_generate(_llava(), _inputs(with_image=False)),
          match="image token"),
    Probe("fox_generate layer out of range", lambda: fox_generate(_llava(), _inputs(), FoxConfig(layers=(1, 7))),
          match="out of range"),
    Probe("fox_generate image first (no system keys)", lambda: fox_generate(_llava(), _inputs(prefix=False)),
          match="before its first image token"),
    Probe("fox_generate with a VCDConfig", lambda: fox_generate(_llava(), _inputs(), VCDConfig()),
          raises=TypeError, match="FoxConfig"),
    Probe("fox_generate inputs as a list", lambda: fox_generate(_llava(), [1, 2, 3]), raises=TypeError,
          match="inputs"),
    Probe("sid_generate agg_layer out of range", lambda: sid_generate(_llava(), _inputs(), SIDConfig(agg_layer=4)),
          match="agg_layer"),
    Probe("pai_generate layer out of range", lambda: pai_generate(_llava(), _inputs(), PAIConfig(layers=(9,))),
          match="out of range"),
    Probe("vcd_generate without pixel_values",
          lambda: vcd_generate(_llava(), {"input_ids": _inputs()["input_ids"]}), match="pixel_values"),
    Probe("vanilla_generate with a FoxConfig runs vanilla decoding",
          lambda: vanilla_generate(_llava(), _inputs(), FoxConfig(max_new_tokens=2)).new_tokens.shape,
          returns=lambda s: tuple(s) == (1, 2), doc="a FoxConfig is a DecodingConfig; vanilla uses its decoding fields"),
    Probe("text_only_inputs of an image-only prompt",
          lambda: text_only_inputs(_llava(), {"input_ids": torch.full((1, 16), 3)}), match="no text"),
    Probe("key_sets of float ids", lambda: key_sets(torch.ones(1, 4), 3), raises=TypeError, match="input_ids"),
    Probe("FoxIntervention rho=2", lambda: FoxIntervention(key_sets(_inputs()["input_ids"], 3), {1}, rho=2.0),
          match="rho"),
    Probe("use_fox_attention on a Linear", lambda: use_fox_attention(nn.Linear(2, 2)).__enter__(),
          match="language model"),
    Probe("active_intervention of a string", lambda: active_intervention("fox").__enter__(), raises=TypeError,
          match="intervention"),
    Probe("processor cache_mode=lazy", lambda: DualStreamLogitsProcessor(
        _llava(), _inputs(), lambda a, b: a, prompt_length=22, cache_mode="lazy"), match="cache_mode"),
    Probe("diffusion_noise t=1000", lambda: diffusion_noise(torch.zeros(3), 1000), match="t="),
    # analysis
    Probe("chair mismatched lengths", lambda: chair([["circle"]], []), match="one entry per caption"),
    Probe("chair with no mention is NaN", lambda: chair([[]], [{"circle"}]).chair_i,
          returns=lambda v: math.isnan(v), doc="CHAIR_I is undefined (NaN) when no object was mentioned"),
    Probe("pope_scores empty", lambda: pope_scores([], []), match="non-empty"),
    Probe("precision_at_k empty selection", lambda: precision_at_k([[False, False]], [[True, False]]),
          match="at least one"),
    Probe("top_k_mask k=0", lambda: top_k_mask([[1.0, 2.0]], 0), match="k=0"),
]
