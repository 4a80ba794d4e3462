"""Speed section of the reproduction: dense vs structurally pruned forward time, side by side.

Dense and pruned copies of one model run the same input alternately (after one warm-up
each), so that drifts of a shared machine hit both; the speed-up is the ratio of the median
times (:func:`icml26.papers.subspace_path.analysis.speedup`). Experiment code: the library
never imports it.
"""

from __future__ import annotations

import copy
import dataclasses
import time

import torch
from torch import nn

from icml26.papers.subspace_path.analysis import speedup
from icml26.papers.subspace_path.compile import select_heads
from icml26.papers.subspace_path.heads import attention_layout, prune_heads

__all__ = ["SpeedResult", "group_mask", "random_llama", "time_pruning"]


@dataclasses.dataclass
class SpeedResult:
    """Forward times of one model, dense and with heads removed."""

    name: str
    dense_seconds: list[float]
    pruned_seconds: list[float]
    heads_removed: int
    heads_total: int
    kv_heads_dense: int
    kv_heads_pruned: int

    @property
    def speedup(self) -> float:
        return speedup(self.dense_seconds, self.pruned_seconds)

    def metrics(self) -> dict[str, float]:
        return {"speedup": self.speedup,
                "dense_ms": 1000 * float(torch.tensor(self.dense_seconds).median()),
                "pruned_ms": 1000 * float(torch.tensor(self.pruned_seconds).median()),
                "heads_removed": float(self.heads_removed), "heads_total": float(self.heads_total),
                "kv_heads_dense": float(self.kv_heads_dense), "kv_heads_pruned": float(self.kv_heads_pruned)}


def random_llama(*, hidden: int = 1024, heads: int = 16, layers: int = 8, vocab: int = 1024, seed: int = 0) -> nn.Module:
    """A randomly initialised ``LlamaForCausalLM`` (the issue's d = 1024, 16 heads, 8 layers)."""
    from icml26.common.extras import require

    transformers = require("transformers", "lm")
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=int(round(8 * hidden / 3 / 64) * 64),
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                                   max_position_embeddings=2048)
    cfg._attn_implementation = "sdpa"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(cfg)
    return model.eval()


def group_mask(model: nn.Module, ratio: float, generator: torch.Generator) -> torch.Tensor:
    """A keep-mask removing whole key/value groups at random, ``round(ratio·#groups)`` of them (≥ 1 group per layer kept)."""
    layouts = attention_layout(model)
    n_layers, n_kv, size = len(layouts), layouts[0].n_kv_heads, layouts[0].group_size
    scores = torch.rand(n_layers, n_kv, generator=generator)
    keep_groups = select_heads(scores, target_prune_ratio=ratio, floors=(1, 0.0, 0.0))
    return keep_groups.repeat_interleave(size, dim=1)


@torch.no_grad()
def time_pruning(name: str, model: nn.Module, keep: torch.Tensor, input_ids: torch.Tensor, *,
                 repeats: int) -> SpeedResult:
    """Median forward time of ``model`` and of a structurally pruned copy, measured alternately."""
    pruned = prune_heads(copy.deepcopy(model), keep)
    dense_t, pruned_t = [], []
    for i in range(repeats + 1):
        for net, out in ((model, dense_t), (pruned, pruned_t)):
            start = time.perf_counter()
            net(input_ids=input_ids)
            if i > 0:  # the first round warms up
                out.append(time.perf_counter() - start)
    lay_d, lay_p = attention_layout(model), attention_layout(pruned)
    result = SpeedResult(name=name, dense_seconds=dense_t, pruned_seconds=pruned_t,
                         heads_removed=int((~keep).sum()), heads_total=int(keep.numel()),
                         kv_heads_dense=sum(x.n_kv_heads for x in lay_d),
                         kv_heads_pruned=sum(x.n_kv_heads for x in lay_p))
    del pruned
    return result
