"""Wall-clock of one attention block, forward + backward, full SDPA against HiCI, side by side.

The block is the ``self_attn`` of a one-layer Llama (random weights): full causal SDPA (the
model's own attention, ``full`` mode), HiCI with a fixed segment length (cost ``N (G + K + M)``,
linear in N) and HiCI at a fixed ratio (S segments, cost ``N^2 / S``). For each N the arms run in
turn, interleaved, so that machine load affects them alike, and each arm keeps its fastest run: the
run least slowed by other work on the machine (load only ever adds time).

With ``interleave_sizes=True`` each of the ``repeats`` rounds times every size *and* every arm in
turn (the arms' order rotating from round to round), so that one round's times at 1k and at 8k are
taken moments apart: a slope or a ratio computed within each round, and its median over the rounds
(:func:`icml26.papers.hici.analysis.round_slopes`), is not decided by load that came and went between
sizes. Every timed run is kept in :attr:`AttentionTimings.samples`.
"""

from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np
import torch

from icml26.common.argcheck import check_int
from icml26.common.extras import require
from icml26.papers.hici.config import HiCIConfig
from icml26.papers.hici.patch import patch, set_inference_mode

__all__ = ["AttentionTimings", "time_attention_blocks"]


@dataclasses.dataclass
class AttentionTimings:
    """Seconds per forward+backward: ``seconds`` the fastest of the repeats, ``{arm: [one per size]}``;
    ``samples`` every timed run, ``{arm: [[one per repeat] per size]}``."""

    sizes: list[int]
    seconds: dict[str, list[float]]
    samples: dict[str, list[list[float]]] = dataclasses.field(default_factory=dict)

    def median(self) -> dict[str, list[float]]:
        """The median of the repeats, ``{arm: [one per size]}``."""
        return {arm: [float(np.median(runs)) for runs in per_size] for arm, per_size in self.samples.items()}


def _block_model(hidden: int, heads: int, seed: int):
    transformers = require("transformers", "lm")
    config = transformers.LlamaConfig(vocab_size=8, hidden_size=hidden, intermediate_size=2 * hidden,
                                      num_hidden_layers=1, num_attention_heads=heads, num_key_value_heads=heads,
                                      max_position_embeddings=1 << 15)
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return transformers.LlamaForCausalLM(config)


def time_attention_blocks(sizes=(1024, 2048, 4096, 8192), *, hidden: int = 256, heads: int = 4,
                          segment_size: int = 256, num_segments: int = 4, hici: HiCIConfig | None = None,
                          repeats: int = 3, device="cpu", seed: int = 0, progress=None,
                          interleave_sizes: bool = False) -> AttentionTimings:
    """Fastest forward+backward seconds of the attention block at each N, for three arms.

    Arms: ``full`` (SDPA, causal), ``hici_fixed_g`` (``segment_size``), ``hici_ratio`` (``num_segments``).
    Every arm first runs once at the smallest N (one-off start-up costs, untimed); then, at each N,
    ``repeats`` rounds run the arms in turn and each arm keeps its minimum.

    Args:
        sizes: sequence lengths N (each divisible by ``segment_size`` and ``num_segments``).
        hidden, heads: d and the model's heads.
        hici: the other HiCI sizes (default: the authors').
        repeats: timed runs per arm and size (the minimum is kept).
        progress: optional callable wrapping the size loop (the round loop with ``interleave_sizes``).
        interleave_sizes: every round times every size and arm in turn (see the module docstring);
            False: the rounds of one size run before the next size.
    """
    for name, value in (("hidden", hidden), ("heads", heads), ("segment_size", segment_size),
                        ("num_segments", num_segments), ("repeats", repeats)):
        check_int(value, name, low=1)
    check_int(seed, "seed", low=0)
    if not isinstance(interleave_sizes, bool):
        raise TypeError(f"interleave_sizes={interleave_sizes!r} must be a bool")
    sizes = [check_int(n, "sizes", low=1) for n in sizes]
    if not sizes:
        raise ValueError("sizes is empty; give at least one sequence length")
    base_cfg = hici or HiCIConfig()
    base = _block_model(hidden, heads, seed).to(device)
    fixed = patch(copy.deepcopy(base), dataclasses.replace(base_cfg, segment_size=segment_size), seed=seed)
    ratio = patch(copy.deepcopy(base), dataclasses.replace(base_cfg, segment_size=None, num_segments=num_segments),
                  seed=seed)
    full = set_inference_mode(copy.deepcopy(fixed), "full")
    arms = {"full": full, "hici_fixed_g": fixed, "hici_ratio": ratio}
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    gen = torch.Generator().manual_seed(seed)
    warm = torch.randn(1, min(sizes), hidden, generator=torch.Generator().manual_seed(seed)).to(device)
    for model in arms.values():
        _forward_backward(model, warm, device)
    samples: dict[str, list[list[float]]] = {name: [[] for _ in sizes] for name in arms}
    if interleave_sizes:
        inputs = [torch.randn(1, n, hidden, generator=gen).to(device) for n in sizes]
        names = list(arms)
        rounds = range(repeats)
        for r in (progress(rounds) if progress is not None else rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for i, x in enumerate(inputs):
                for name in order:
                    samples[name][i].append(_forward_backward(arms[name], x, device))
    else:
        loop = progress(list(enumerate(sizes))) if progress is not None else enumerate(sizes)
        for i, n in loop:
            x = torch.randn(1, n, hidden, generator=gen).to(device)
            for _ in range(repeats):
                for name, model in arms.items():
                    samples[name][i].append(_forward_backward(model, x, device))
    for name in arms:
        seconds[name] = [min(runs) for runs in samples[name]]
    return AttentionTimings(sizes=sizes, seconds=seconds, samples=samples)


def _forward_backward(model, x: torch.Tensor, device) -> float:
    """Seconds of one forward + backward of the model's first attention block on ``x`` ``(1, N, d)``."""
    attn = model.model.layers[0].self_attn
    pos = torch.arange(x.shape[1], device=device)[None]
    cos_sin = model.model.rotary_emb(x, pos)
    inp = x.detach().requires_grad_(True)
    _sync(device)
    start = time.perf_counter()
    out, _ = attn(inp, position_embeddings=cos_sin, attention_mask=None)
    out.float().pow(2).mean().backward()
    _sync(device)
    elapsed = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return elapsed


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
