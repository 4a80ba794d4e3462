"""Further run: HiCI on SmolLM2-135M beside chunked attention, S²-Attn and full attention, one LoRA budget.

Each arm starts from the same pretrained SmolLM2-135M-Instruct (:func:`icml26.common.pretrained.load_pretrained_lm`),
gets LoRA of the same rank on q/k/v/o and the same ``steps`` of AdamW on the same random ``length``-token
windows of the standard-library corpus (:func:`icml26.common.corpus.stdlib_corpus`, tokenised with the
model's own tokenizer), and is scored by next-token NLL on the same held-out windows:

- ``full_ft``: the model's full causal attention (the expensive reference);
- ``chunked``: attention inside ``segment``-token segments only (HiCI's layout without slots or summary);
- ``hici``: HiCI with the zero-gated prefix (``gated_prefix=True``: at step 0 it *is* chunked attention),
  modules sized by :func:`~icml26.papers.hici.sizing.size_modules_for` to at most ``max_overhead`` of the
  parameters; its modules train too, at ``hici_lr`` (the authors' 10x), the one budget difference (declared);
- ``s2attn``: LongLoRA's shifted sparse attention with groups of ``segment`` tokens.

Every trained arm is scored in its own mode (chunked arms chunked, S²-Attn grouped, full attention full)
and in full mode; the untrained base in full and chunked mode gives what chunking costs before any
fine-tuning. The NLL is read on the tokens after the first segment (where chunking removes context) and
on all tokens. Paired differences are per held-out window (the same windows for every arm within a
seed); a seed's windows are its own draw.

Run: ``python -m icml26.papers.hici.smollm2_nll --seeds 0-2 --out results/hici/smollm2_nll`` (about 16
minutes a seed on one core at the defaults, beside another run). Writes ``seed<k>.json`` per seed as it
ends (resumable) and ``summary.json`` / ``summary.md`` from them.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
import zlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.atomic import atomic_write_text
from icml26.common.argcheck import check_int, check_real
from icml26.common.extras import require
from icml26.common.hf import quiet_transformers

__all__ = ["ARMS", "NLLSettings", "lora_arm", "run_seed", "summarize", "summary_markdown", "window_nll"]

ARMS = ("full_ft", "chunked", "hici", "s2attn")
#: The mode each arm trains in (and is scored in first).
OWN_MODE = {"full_ft": "full", "chunked": "chunked", "hici": "chunked", "s2attn": "chunked"}
#: LoRA's targets: the base model's attention projections only (HiCI's global integrator has its own
#: ``q_proj`` … ``o_proj``, which train fully; a plain name list would put LoRA on them too).
BASE_PROJECTIONS = r".*\.self_attn\.(q_proj|k_proj|v_proj|o_proj)"
#: Paired comparisons reported: (name, (arm, mode), (arm, mode)), each "first minus second".
COMPARISONS = (
    ("base: chunked - full (what chunking costs)", ("base", "chunked"), ("base", "full")),
    ("HiCI - chunked (own modes)", ("hici", "chunked"), ("chunked", "chunked")),
    ("HiCI - S2-Attn (own modes)", ("hici", "chunked"), ("s2attn", "chunked")),
    ("HiCI - S2-Attn scored full (LongLoRA's inference)", ("hici", "chunked"), ("s2attn", "full")),
    ("HiCI - full fine-tuning (own modes)", ("hici", "chunked"), ("full_ft", "full")),
    ("chunked - full fine-tuning (own modes)", ("chunked", "chunked"), ("full_ft", "full")),
)


@dataclasses.dataclass(frozen=True)
class NLLSettings:
    """What every seed of the run shares (stored in each seed's file and checked on resume)."""

    length: int = 512
    segment: int = 128
    steps: int = 60
    batch_size: int = 1
    lora_rank: int = 8
    lr: float = 2e-4
    hici_lr: float = 2e-3
    max_overhead: float = 0.05
    eval_windows: int = 16

    def __post_init__(self) -> None:
        for name in ("length", "segment", "steps", "batch_size", "lora_rank", "eval_windows"):
            check_int(getattr(self, name), name, low=1)
        check_real(self.lr, "lr", low=0.0, low_open=True)
        check_real(self.hici_lr, "hici_lr", low=0.0, low_open=True)
        check_real(self.max_overhead, "max_overhead", low=0.0, high=1.0, low_open=True, high_open=True)
        if self.length % self.segment or self.length // self.segment < 2:
            raise ValueError(f"length={self.length} must be a multiple of segment={self.segment}, at least 2 segments")


def _seed(seed: int, stream: str) -> int:
    return int(np.random.SeedSequence([seed, zlib.crc32(stream.encode())]).generate_state(1)[0])


def lora_arm(model: nn.Module, arm: str, settings: NLLSettings, *, seed: int = 0):
    """``model`` (a deep copy is the caller's business) patched for ``arm``, wrapped in LoRA; with its optimizer.

    Returns ``(peft_model, optimizer, hici_parameter_count)``. Only LoRA (and, for ``hici``, HiCI's
    modules) train: embeddings and norms stay frozen in every arm, so the LoRA budget is equal.
    """
    from icml26.papers.hici import s2attn
    from icml26.papers.hici.config import HiCIConfig
    from icml26.papers.hici.patch import hici_parameters, patch
    from icml26.papers.hici.sizing import size_modules_for

    if arm not in ARMS:
        raise ValueError(f"arm={arm!r} must be one of {', '.join(ARMS)}")
    peft = require("peft", "lora")
    extra: list[nn.Parameter] = []
    if arm == "hici":
        config = size_modules_for(model, max_overhead=settings.max_overhead, gated_prefix=True,
                                  segment_size=settings.segment)
        patch(model, config, seed=_seed(seed, "hici_init"))
        extra = hici_parameters(model)
    elif arm == "chunked":
        patch(model, HiCIConfig(segment_size=settings.segment, num_slots=0, num_global=0))
    elif arm == "s2attn":
        s2attn.patch(model, settings.segment)
    with quiet_transformers():
        wrapped = peft.get_peft_model(model, peft.LoraConfig(
            r=settings.lora_rank, lora_alpha=2.0 * settings.lora_rank, lora_dropout=0.0,
            target_modules=BASE_PROJECTIONS))
    ids = {id(p) for p in extra}
    for p in extra:
        p.requires_grad_(True)
    base = [p for p in wrapped.parameters() if p.requires_grad and id(p) not in ids]
    groups = [{"params": base, "lr": settings.lr}]
    if extra:
        groups.append({"params": extra, "lr": settings.hici_lr})
    return wrapped, torch.optim.AdamW(groups, weight_decay=0.0), sum(p.numel() for p in extra)


def _set_mode(model: nn.Module, arm: str, mode: str) -> None:
    from icml26.papers.hici import s2attn
    from icml26.papers.hici.patch import set_inference_mode

    if arm in ("hici", "chunked", "base_chunked"):
        set_inference_mode(model, "hici" if mode == "chunked" else "full")
    elif arm == "s2attn":
        s2attn.set_inference_mode(model, "s2" if mode == "chunked" else "full")
    elif mode != "full":
        raise ValueError(f"arm {arm!r} has no {mode!r} mode")


@torch.inference_mode()
def window_nll(model: nn.Module, windows: torch.Tensor, *, skip: int) -> tuple[np.ndarray, np.ndarray]:
    """Per window: mean next-token NLL over the targets at positions ``>= skip`` and over all targets."""
    if not isinstance(windows, torch.Tensor) or windows.dim() != 2 or windows.shape[1] < 2 or windows.is_floating_point():
        raise ValueError("windows must be a (n, length + 1) tensor of token ids with length >= 1, got "
                         f"{getattr(windows, 'shape', type(windows).__name__)}")
    check_int(skip, "skip", low=0, high=windows.shape[1] - 2)
    model.eval()
    late, every = [], []
    for w in windows:
        logits = model(input_ids=w[None, :-1], use_cache=False).logits[0].float()
        nll = F.cross_entropy(logits, w[1:], reduction="none")
        late.append(float(nll[skip:].mean()))
        every.append(float(nll.mean()))
    return np.array(late), np.array(every)


def _streams(tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """The stdlib corpus's train and validation documents, each split one text joined by blank lines."""
    from icml26.common.corpus import stdlib_corpus
    from icml26.common.tiny_lm import encode_corpus

    return encode_corpus(tokenizer, stdlib_corpus(), separator="\n\n")


def run_seed(seed: int, settings: NLLSettings, *, lm: Any = None, streams: tuple[torch.Tensor, torch.Tensor] | None = None,
             progress: bool = True) -> dict[str, Any]:
    """One seed: every arm trained and scored; per arm and mode the per-window NLLs."""
    from icml26.common.pretrained import PretrainedLM, load_pretrained_lm
    from icml26.common.tiny_lm import random_windows
    from icml26.papers.hici.config import HiCIConfig
    from icml26.papers.hici.patch import patch

    check_int(seed, "seed", low=0)
    start = time.perf_counter()
    lm = lm if lm is not None else load_pretrained_lm()
    model0 = lm.model if isinstance(lm, PretrainedLM) else lm  # or a bare causal LM
    if streams is None and not isinstance(lm, PretrainedLM):
        raise ValueError("streams is required with a bare model (no tokenizer to encode the corpus with)")
    train_ids, valid_ids = streams if streams is not None else _streams(lm.tokenizer)
    width = settings.length + 1
    windows = random_windows(valid_ids, settings.eval_windows, width,
                             torch.Generator().manual_seed(_seed(seed, "eval_windows")))
    scores: dict[str, dict[str, dict[str, list[float]]]] = {}
    timing: dict[str, float] = {}

    def record(arm: str, mode: str, model: nn.Module) -> None:
        late, every = window_nll(model, windows, skip=settings.segment)
        scores.setdefault(arm, {})[mode] = {"late": late.tolist(), "all": every.tolist()}
        if progress:
            print(f"seed {seed} {arm} ({mode}): NLL after the first segment {late.mean():.4f}, all {every.mean():.4f}",
                  flush=True)

    base = copy.deepcopy(model0)
    record("base", "full", base)
    patch(base, HiCIConfig(segment_size=settings.segment, num_slots=0, num_global=0))
    _set_mode(base, "base_chunked", "chunked")
    record("base", "chunked", base)
    del base
    hici_params = 0
    for arm in ARMS:
        t0 = time.perf_counter()
        if progress:
            print(f"seed {seed} {arm}: training, {settings.steps} steps", flush=True)
        model, optimizer, extra = lora_arm(copy.deepcopy(model0), arm, settings, seed=seed)
        hici_params = max(hici_params, extra)
        trainable = [p for g in optimizer.param_groups for p in g["params"]]
        generator = torch.Generator().manual_seed(_seed(seed, "train_windows"))  # the same windows for every arm
        model.train()
        for step in range(settings.steps):
            batch = random_windows(train_ids, settings.batch_size, width, generator)
            logits = model(input_ids=batch[:, :-1], use_cache=False).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"seed {seed} arm {arm}: non-finite loss at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
        timing[arm] = time.perf_counter() - t0
        own = OWN_MODE[arm]
        if arm != "full_ft":
            _set_mode(model, arm, own)
        record(arm, own, model)
        if own != "full":
            _set_mode(model, arm, "full")
            record(arm, "full", model)
        del model, optimizer
    base_params = sum(p.numel() for p in model0.parameters())
    return {"seed": seed, "settings": dataclasses.asdict(settings), "model": lm.name if isinstance(lm, PretrainedLM) else type(model0).__name__,
            "train_tokens": int(train_ids.numel()), "valid_tokens": int(valid_ids.numel()),
            "hici_parameters": hici_params, "base_parameters": base_params, "train_seconds": timing,
            "wall_s": time.perf_counter() - start, "nll": scores}


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    from icml26.common.stats import t_interval

    interval = t_interval(values)
    return interval.mean, interval.low, interval.high


def summarize(runs: Sequence[dict[str, Any]], *, target: str = "late") -> dict[str, Any]:
    """Per (arm, mode) the mean NLL; per comparison the paired difference with t intervals over windows
    (pooled over seeds) and over seeds (each seed's mean difference), and the per-seed means."""
    if not runs:
        raise ValueError("runs is empty: nothing to summarize")
    if target not in ("late", "all"):
        raise ValueError(f"target={target!r} must be 'late' or 'all'")
    keys = sorted({(arm, mode) for r in runs for arm in r["nll"] for mode in r["nll"][arm]})
    table = {f"{arm}/{mode}": float(np.mean([np.mean(r["nll"][arm][mode][target]) for r in runs]))
             for arm, mode in keys}
    comparisons = {}
    for name, (a, ma), (b, mb) in COMPARISONS:
        per_seed = [np.array(r["nll"][a][ma][target]) - np.array(r["nll"][b][mb][target]) for r in runs]
        windows = _t_interval(np.concatenate(per_seed))
        seeds = _t_interval(np.array([d.mean() for d in per_seed]))
        comparisons[name] = {"per_seed": [float(d.mean()) for d in per_seed], "windows": list(windows),
                             "n_windows": int(sum(d.size for d in per_seed)), "seeds": list(seeds)}
    return {"target": target, "seeds": [r["seed"] for r in runs], "settings": runs[0]["settings"],
            "model": runs[0]["model"], "hici_parameters": runs[0]["hici_parameters"],
            "base_parameters": runs[0]["base_parameters"], "mean_nll": table, "comparisons": comparisons,
            "wall_s": [r["wall_s"] for r in runs]}


def summary_markdown(summary: dict[str, Any]) -> str:
    """The generated table of :func:`summarize`'s output (``summary.md``)."""
    s = summary["settings"]
    lines = [f"_Generated by `smollm2_nll` from `summary.json`: {summary['model']}, seeds {summary['seeds']}, "
             f"{s['steps']} LoRA steps (r = {s['lora_rank']}) of {s['length']} tokens, segments of {s['segment']}, "
             f"{s['eval_windows']} held-out windows a seed; NLL in nats per token on the tokens after the first "
             f"segment; 95 % t intervals; do not edit._", "",
             "| arm | mode | NLL |", "|---|---|---:|"]
    lines += [f"| {key.split('/')[0]} | {key.split('/')[1]} | {value:.4f} |" for key, value in summary["mean_nll"].items()]
    lines += ["", "| comparison | difference, over windows | over seeds | per seed |", "|---|---|---|---|"]
    for name, c in summary["comparisons"].items():
        w, sd = c["windows"], c["seeds"]
        lines.append(f"| {name} | {w[0]:+.4f} [{w[1]:+.4f}, {w[2]:+.4f}] (n = {c['n_windows']}) | "
                     f"{sd[0]:+.4f} [{sd[1]:+.4f}, {sd[2]:+.4f}] | " + ", ".join(f"{v:+.4f}" for v in c["per_seed"]) + " |")
    share = summary["hici_parameters"] / (summary["hici_parameters"] + summary["base_parameters"])
    lines += ["", f"HiCI modules: {summary['hici_parameters']:,} parameters ({share:.2%} of base + HiCI)."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    from icml26.seeds import parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--steps", type=int, default=NLLSettings.steps)
    parser.add_argument("--length", type=int, default=NLLSettings.length)
    parser.add_argument("--segment", type=int, default=NLLSettings.segment)
    parser.add_argument("--eval-windows", type=int, default=NLLSettings.eval_windows)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: one run per core, as the committed run was made)")
    parser.add_argument("--summarize-only", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    from icml26.common.seeding import set_threads

    set_threads(args.threads)
    settings = NLLSettings(length=args.length, segment=args.segment, steps=args.steps, eval_windows=args.eval_windows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    lm = streams = None
    for seed in parse_seeds(args.seeds):
        path = out / f"seed{seed}.json"
        if path.exists():
            run = json.loads(path.read_text())
            if run["settings"] != dataclasses.asdict(settings):
                raise ValueError(f"{path} was written with other settings: {run['settings']}")
        elif args.summarize_only:
            raise FileNotFoundError(f"{path} is missing; run without --summarize-only first")
        else:
            if lm is None:
                from icml26.common.pretrained import load_pretrained_lm

                lm = load_pretrained_lm()
                streams = _streams(lm.tokenizer)
            run = run_seed(seed, settings, lm=lm, streams=streams)
            atomic_write_text(path, json.dumps(run, indent=1) + "\n")
        runs.append(run)
    summary = summarize(runs)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(out / "summary.md", summary_markdown(summary))
    print(summary_markdown(summary))


if __name__ == "__main__":
    main()
