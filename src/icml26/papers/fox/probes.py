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
    Probe("probe NaN row", lambda: visual_entropy_probe(_nan_row(), _VIS, _SYS), match="attn_row contains NaN"),
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
    Probe("js NaN logits", lambda: js_divergence(torch.full((1, 3), math.nan), torch.zeros(1, 3)),
          match="logits_p contains NaN"),
    Probe("js -inf (masked) logits are allowed", lambda: js_divergence(torch.tensor([[0.0, -math.inf]]),
                                                                      torch.tensor([[0.0, -math.inf]])),
          returns=lambda v: bool(v.abs().max() < 1e-6), doc="-inf marks a masked token; equal streams give JS 0"),
    Probe("fusion NaN row", lambda: conflict_gated_fusion(_nan_row(), _ROW), match="l_o contains NaN",
          doc="the plausibility mask would hide a NaN row as all -inf (greedy: token 0)"),
    Probe("plausibility +inf logit", lambda: plausibility_mask(torch.tensor([[math.inf, 0.0]])), match="logits"),
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

# ---------------------------------------------------------------------------
# The hostile-input walk (tests/test_hostile_walk.py): valid calls, exports not walked, accepted suspects
# ---------------------------------------------------------------------------
def _keys():
    return key_sets(_inputs()["input_ids"], 3)


def _generate_call(config):
    return lambda: ((_llava(), _inputs(), config), {})


def _attention_call():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, generator=g) for _ in range(3))
    return (nn.Identity(), q, k, v, torch.zeros(1, 1, 3, 3), 0.5), {}


VALID = {
    "DualStreamLogitsProcessor": lambda: ((_llava(), _inputs(), lambda a, b: a), {"prompt_length": 22}),
    "FoxIntervention": lambda: ((_keys(), {1}), {"rho": 0.35}),
    "HeadAblation": lambda: ((_keys(), 1, 0), {}),
    "HeadSaturation": lambda: ((_keys(), {1: [0, 2]}), {}),
    "PAIIntervention": lambda: ((_keys(), {1}), {"alpha": 0.2}),
    "SIDIntervention": lambda: ((_keys(),), {"agg_layer": 2, "keep": 4}),
    "active_intervention": lambda: ((None,), {}),
    "cfg_combine": lambda: ((_L.clone(), 0.5 * _L), {}),
    "chair": lambda: (([["circle", "star"]], [{"circle"}]), {}),
    "conflict_gated_fusion": lambda: ((_L.clone(), 0.5 * _L), {}),
    "default_fox_layers": lambda: ((8,), {}),
    "diffusion_noise": lambda: ((torch.zeros(3), 500), {"generator": torch.Generator().manual_seed(0)}),
    "fox_attention_forward": _attention_call,
    "fox_generate": _generate_call(FoxConfig(max_new_tokens=1)),
    "fox_logits_processor": _generate_call(FoxConfig(max_new_tokens=1)),
    "fp16_spacing": lambda: ((1e4,), {}),
    "fusion_weight": lambda: ((torch.tensor([0.1, 0.3]),), {}),
    "image_token_id": lambda: ((_llava(),), {}),
    "js_divergence": lambda: ((_L.clone(), 0.5 * _L), {}),
    "key_sets": lambda: ((_inputs()["input_ids"], 3), {"attention_mask": torch.ones(1, 22, dtype=torch.long)}),
    "language_model": lambda: ((_llava(),), {}),
    "max_entropy": lambda: ((16,), {}),
    "mentioned_objects": lambda: ((["a", "circle", "and", "a", "star"], {"circle", "star"}), {}),
    "num_decoder_layers": lambda: ((_llava(),), {}),
    "num_risky_heads": lambda: ((8, 0.35), {}),
    "pai_generate": _generate_call(PAIConfig(max_new_tokens=1)),
    "plausibility_mask": lambda: ((_L.clone(),), {"beta": 0.1}),
    "pope_scores": lambda: (([True, False, True], [True, True, False]), {}),
    "precision_at_k": lambda: (([[True, False, False]], [[True, True, False]]), {}),
    "run_generate": _generate_call(DecodingConfig(max_new_tokens=1)),
    "saturate_logits": lambda: ((_L.clone(),), {}),
    "select_risky_heads": lambda: ((torch.tensor([0.3, 0.1, 0.4, 0.2]), 0.5), {}),
    "sid_generate": _generate_call(SIDConfig(max_new_tokens=1)),
    "sid_keep_mask": lambda: ((torch.tensor([[0.1, 0.4, 0.2, 0.3]]), torch.tensor([[False, True, True, True]]), 2),
                              {}),
    "text_only_inputs": lambda: ((_llava(), _inputs()), {"image_token": 3}),
    "top_k_mask": lambda: (([[1.0, 3.0, 2.0]], 2), {}),
    "use_fox_attention": lambda: ((_llava(),), {}),
    "vanilla_generate": _generate_call(DecodingConfig(max_new_tokens=1)),
    "vcd_combine": lambda: ((_L.clone(), 0.5 * _L), {}),
    "vcd_generate": _generate_call(VCDConfig(max_new_tokens=1)),
    "visual_entropy_probe": lambda: ((_ROW.clone(), _VIS, _SYS), {}),
}

NOT_WALKED = {
    "AttentionIntervention": "a typing.Protocol (the interface of an intervention), not instantiable; the "
                             "interventions themselves are walked",
    "ChairScores": "a result record filled by chair(); chair is walked and HOSTILE 'chair …' probes it",
    "DecodeOutput": "a result record filled by run_generate(); every generate plug-in is walked",
    "KeySets": "a record built by key_sets() (walked; HOSTILE 'key_sets of float ids', 'fox_generate without "
               "image tokens')",
    "ProbeRecord": "a record that FoxIntervention fills with record=True; test_fox.py checks its contents",
    "ProbeStats": "a result record filled by visual_entropy_probe(), which is walked",
}

_HOT = ("runs for every decoder layer at every decoding step (the attention function), where a finiteness "
        "check would cost a device sync per layer and step; NaN stays NaN through matmul and softmax")
ALLOWED = {
    "fox_attention_forward.query": _HOT,
    "fox_attention_forward.key": _HOT,
    "fox_attention_forward.value": _HOT,
    "fox_attention_forward.attention_mask": _HOT,
    "saturate_logits.scores:nan": "NaN stays NaN elementwise (documented, HOSTILE 'saturate NaN propagates'); "
                                  "FoxIntervention runs it on the attention logits of every probed layer at "
                                  "every decoding step, where a NaN check would add a device sync",
}
