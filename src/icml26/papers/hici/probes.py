"""The HiCI modules for the registry-wide module matrix, and hostile calls to the public API."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers import hici
from icml26.papers.hici import GlobalIntegrator, HiCIConfig, LocalConstructor, TopicRetrievalTask, s2attn

_SMALL = dict(num_slots=2, num_global=2, bottleneck=8, stat_dim=4, num_heads=2)


def _llama(layers: int = 1):
    from icml26.common.extras import require

    transformers = require("transformers", "lm")
    config = transformers.LlamaConfig(vocab_size=16, hidden_size=16, intermediate_size=16, num_hidden_layers=layers,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(config)


def _gpt2():
    from icml26.common.extras import require

    transformers = require("transformers", "lm")
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=8, bos_token_id=0, eos_token_id=0))


def _opened_gate(heads: int):
    gate = hici.PrefixGate(heads)
    with torch.no_grad():
        gate.alpha.fill_(0.5)
    return gate


def _patched(**kw):
    return hici.patch(_llama(), HiCIConfig(**{**_SMALL, **kw}), seed=0)


MODULES = [
    ModuleCase("LocalConstructor", build=lambda: LocalConstructor(12, num_slots=3, bottleneck=8, num_heads=2),
               inputs=lambda g: (torch.randn(2, 3, 5, 12, generator=g),)),
    ModuleCase("PrefixGate", build=lambda: _opened_gate(3),
               inputs=lambda g: (torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 4, 5, generator=g))),
    ModuleCase("GlobalIntegrator", build=lambda: GlobalIntegrator(12, num_global=2, bottleneck=8, stat_dim=4,
                                                                  num_heads=2),
               inputs=lambda g: (torch.randn(2, 3, 4, 12, generator=g),)),
]

HOSTILE = [
    Probe("unknown causal mode", lambda: HiCIConfig(causal_mode="future"), match="causal_mode"),
    Probe("unknown inference mode in the config", lambda: HiCIConfig(inference_mode="chunked"),
          match="inference_mode"),
    Probe("zero heads", lambda: HiCIConfig(num_heads=0), match="num_heads"),
    Probe("bottleneck not divisible by heads", lambda: HiCIConfig(bottleneck=30, num_heads=8), match="bottleneck"),
    Probe("global queries without slots", lambda: HiCIConfig(num_slots=0, num_global=4), match="num_global"),
    Probe("negative slots", lambda: HiCIConfig(num_slots=-1), match="num_slots"),
    Probe("NaN segment size", lambda: HiCIConfig(segment_size=math.nan), match="segment_size"),
    Probe("N not divisible by G", lambda: HiCIConfig(segment_size=64).segment_length(100), match="not divisible"),
    Probe("N not divisible by G in a patched model",
          lambda: _patched(segment_size=4)(input_ids=torch.zeros(1, 6, dtype=torch.long), use_cache=False),
          match="not divisible"),
    Probe("unsupported model (GPT-2)", lambda: hici.patch(_gpt2(), HiCIConfig()), match="LlamaForCausalLM"),
    Probe("not a model", lambda: hici.patch("llama", HiCIConfig()), raises=TypeError, match="model"),
    Probe("config of the wrong type", lambda: hici.patch(_llama(), {"num_slots": 8}), raises=TypeError,
          match="config"),
    Probe("patched twice", lambda: hici.patch(_patched(), HiCIConfig()), match="already patched"),
    Probe("unknown inference mode", lambda: hici.set_inference_mode(_patched(), "chunked"), match="mode"),
    Probe("inference mode of an unpatched model", lambda: hici.set_inference_mode(_llama(), "full"),
          match="not patched"),
    Probe("hici_parameters of an unpatched model", lambda: hici.hici_parameters(_llama()), match="not patched"),
    Probe("S2-Attn group of zero", lambda: s2attn.patch(_llama(), 0), match="group_size"),
    Probe("S2-Attn length not divisible", lambda: hici.s2_attention(torch.zeros(1, 2, 6, 4), torch.zeros(1, 2, 6, 4),
                                                                    torch.zeros(1, 2, 6, 4), group_size=4),
          match="group_size"),
    Probe("S2-Attn unknown mode", lambda: s2attn.set_inference_mode(s2attn.patch(_llama(), 4), "hici"), match="mode"),
    Probe("position interpolation below 1", lambda: hici.position_interpolation(_llama(), 0.5), match="factor"),
    Probe("position interpolation by NaN", lambda: hici.position_interpolation(_llama(), math.nan), match="factor"),
    Probe("slots of the wrong rank", lambda: hici.pooled_statistics(torch.zeros(2, 3, 4)), match="slots"),
    Probe("NaN slots propagate", lambda: hici.pooled_statistics(torch.full((1, 2, 2, 3), math.nan)),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in the slots gives NaN statistics (no masking)"),
    Probe("local constructor bottleneck not divisible", lambda: LocalConstructor(8, 2, bottleneck=6, num_heads=4),
          match="bottleneck"),
    Probe("segments of the wrong width", lambda: LocalConstructor(8, 2, 4, 2)(torch.zeros(1, 2, 3, 5)),
          match="segments"),
    Probe("negative times in a slope", lambda: hici.loglog_slope([1, 2], [1.0, -1.0]), match="positive"),
    Probe("one size in a slope", lambda: hici.loglog_slope([4, 4], [1.0, 2.0]), match="distinct"),
    Probe("empty accuracy", lambda: hici.accuracy([], []), match="non-empty"),
    Probe("negative width in the parameter formula", lambda: hici.hici_parameter_count(-1, 8, 4, 512, 128),
          match="d="),
    Probe("one topic", lambda: TopicRetrievalTask(num_topics=1), match="num_topics"),
    Probe("zero documents", lambda: TopicRetrievalTask().sample(0, 4, np.random.default_rng(0)), match="n="),
    Probe("an int for rng", lambda: TopicRetrievalTask().sample(2, 4, 0), raises=TypeError, match="rng"),
    Probe("gated prefix without slots", lambda: HiCIConfig(num_slots=0, num_global=0, gated_prefix=True),
          match="gated_prefix"),
    Probe("gated prefix not a bool", lambda: HiCIConfig(gated_prefix=1), raises=TypeError, match="gated_prefix"),
    Probe("gate of the wrong shape", lambda: hici.gated_prefix_attention(*_qkv(6), segment_size=3,
                                                                         gate=torch.zeros(3), **_prefix()),
          match="gate"),
    Probe("sizing below the smallest HiCI", lambda: hici.size_modules(576, 30, 134_515_008, max_overhead=0.001),
          match="max_overhead"),
    Probe("sizing given a bottleneck", lambda: hici.size_modules(64, 2, 10_000, bottleneck=32), match="bottleneck"),
    Probe("gated count without heads", lambda: hici.module_parameter_count(64, HiCIConfig(gated_prefix=True)),
          match="attention_heads"),
    Probe("sizing a patched model", lambda: hici.size_modules_for(_patched()), match="already patched"),
    Probe("slope fit from past the sizes", lambda: hici.round_slopes([1, 2], [[1.0], [2.0]], fit_from=4),
          match="fit_from"),
    Probe("zero benchmark repeats", lambda: hici.time_attention_blocks((256, 512), repeats=0), match="repeats"),
]


def _qkv(n: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, 2, n, 4, generator=g) for _ in range(3))


def _prefix() -> dict:
    g = torch.Generator().manual_seed(1)
    return {"prefix_key": torch.randn(1, 2, 2, 3, 4, generator=g), "prefix_value": torch.randn(1, 2, 2, 3, 4, generator=g),
            "prefix_valid": torch.ones(2, 3, dtype=torch.bool), "scaling": 0.5, "dropout": 0.0}


def _slots() -> torch.Tensor:
    return torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(2))


VALID = {
    "PrefixGate": lambda: ((3,), {}),
    "gated_prefix_attention": lambda: (_qkv(6), {"segment_size": 3, "gate": torch.full((2,), 0.5), **_prefix()}),
    "module_parameter_count": lambda: ((16, HiCIConfig(**_SMALL, gated_prefix=True)), {"attention_heads": 2}),
    "size_modules": lambda: ((64, 2, 100_000), {"max_overhead": 0.2, "attention_heads": 4, "max_bottleneck": 64}),
    "size_modules_for": lambda: ((_llama(),), {"max_overhead": 0.5}),
    "GlobalIntegrator": lambda: ((12,), {"num_global": 2, "bottleneck": 8, "stat_dim": 4, "num_heads": 2,
                                         "gate_init": 0.1}),
    "LocalConstructor": lambda: ((12,), {"num_slots": 3, "bottleneck": 8, "num_heads": 2}),
    "TopicDocuments": lambda: ((torch.zeros(2, 8, dtype=torch.long), torch.zeros(2, dtype=torch.long),
                                torch.zeros(2, 2, dtype=torch.long), torch.zeros(2, dtype=torch.long)), {}),
    "TopicRetrievalTask": lambda: ((), {"num_topics": 4, "content_vocab": 16, "segment_tokens": 8,
                                        "concentration": 0.1, "topic_tokens_each": 4, "seed": 0}),
    "accuracy": lambda: ((np.array([0, 1, 1]), np.array([0, 1, 0])), {}),
    "attention_layers": lambda: ((_llama(),), {}),
    "block_local_attention": lambda: (_qkv(), {"group_size": 4, "offset": 2, "scaling": 0.5, "dropout": 0.0}),
    "chunked_ceiling": lambda: ((4, 8), {}),
    "cumulative_statistics": lambda: ((_slots(),), {}),
    "hici_parameter_count": lambda: ((16, 2, 2, 8, 4), {}),
    "hici_parameters": lambda: ((_patched(),), {}),
    "inference_mode": lambda: ((_patched(), "full"), {}),
    "is_patched": lambda: ((_llama(),), {}),
    "loglog_slope": lambda: ((np.array([256.0, 512.0, 1024.0]), np.array([1.0, 2.1, 3.9])), {}),
    "parameter_overhead": lambda: ((1000, 100000), {}),
    "round_slopes": lambda: ((np.array([1024.0, 2048.0, 4096.0]), np.array([[1.0, 1.1], [2.1, 2.0], [3.9, 4.4]])),
                             {"fit_from": 2048}),
    "patch": lambda: ((_llama(), HiCIConfig(**_SMALL)), {"seed": 0}),
    "pooled_statistics": lambda: ((_slots(),), {}),
    "position_interpolation": lambda: ((_llama(), 2.0), {}),
    "s2_attention": lambda: (_qkv(), {"group_size": 4, "scaling": 0.5, "dropout": 0.0}),
    "segment_attention": lambda: (_qkv(6), {"segment_size": 3, **_prefix()}),
    "segment_mask": lambda: ((4,), {"prefix_valid": torch.ones(2, 3, dtype=torch.bool)}),
    "set_inference_mode": lambda: ((_patched(), "full"), {}),
    "time_attention_blocks": lambda: (((8, 16),), {"hidden": 8, "heads": 2, "segment_size": 4, "num_segments": 2,
                                                   "hici": HiCIConfig(**_SMALL), "repeats": 1, "seed": 0}),
}

NOT_WALKED = {
    "AttentionTimings": "a result record filled by time_attention_blocks(), which is walked",
    "from_pretrained": "reads a checkpoint folder that save_pretrained wrote (a path and a class, no number the "
                       "walk could feed); test_hici.py's save/reload round trip covers it",
    "save_pretrained": "writes a checkpoint folder (a model and a path, no number the walk could feed); "
                       "test_hici.py's save/reload round trip covers it and refuses an unpatched model",
}

_HOT = ("attention of every patched layer on every forward, where a finiteness check would cost a device sync "
        "per layer and step; NaN stays NaN through the matmuls and the softmax")
_STATS = ("runs inside GlobalIntegrator's forward on every layer and step (a device sync per call to check it); "
          "NaN in the slots gives NaN statistics (documented; HOSTILE 'NaN slots propagate')")
ALLOWED = {
    **{f"{fn}.{arg}": _HOT for fn in ("block_local_attention", "s2_attention", "segment_attention")
       for arg in ("query", "key", "value")},
    **{f"{fn}.{arg}": _HOT for fn in ("segment_attention", "gated_prefix_attention")
       for arg in ("prefix_key", "prefix_value")},
    **{f"gated_prefix_attention.{arg}": _HOT for arg in ("query", "key", "value", "gate")},
    "pooled_statistics.slots": _STATS,
    "cumulative_statistics.slots": _STATS,
}
