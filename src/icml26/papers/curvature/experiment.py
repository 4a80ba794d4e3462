"""Curvature reproduction: a tiny GPT-2 trained on the offline corpus, analysed at checkpoints.

One training run (seeded initialisation and data order) keeps its weights at a few
steps, step 0 included. Then:

1. straightening and emergence: per checkpoint and layer, the mean turning angle and the
   Spearman / Pearson / partial correlation of ``kappa_l(t; W)`` with ``H_t`` on held-out
   tokens (plus a grid over ``W`` at the final checkpoint);
2. perturbations at the layer of maximal correlation: aligned (toward the
   constant-velocity extrapolation) against misaligned (norm-matched, orthogonal to the
   local trajectory plane) ``Delta H`` at the last position of many held-out prefixes,
   with a paired t-test;
3. regulariser: a second run from the same initialisation, on the same batches, for the
   same steps, with ``lambda * L_curv`` at the middle layers; the first run is its
   ``lambda = 0`` arm. Compared: mid-layer curvature, mean entropy, validation loss.

The paper's own scale (GPT-2 XL, Pythia-2.8B and its checkpoints, GPT-2-small trained on
miniBERTa) needs downloaded weights and data; the defaults here are the brief's CPU plan
(§4.3-4.4), ``quick()`` a smaller version that runs in a few minutes on 2 cores.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from icml26.common.corpus import stdlib_corpus
from icml26.common.tiny_lm import (
    PretrainConfig,
    TinyLMConfig,
    build_model,
    encode_corpus,
    evaluate_loss,
    pretrain,
)
from icml26.common.tokenizer import train_tokenizer
from icml26.common.config import validate_numbers
from icml26.contract import Outcome, RunContext
from icml26.papers.curvature.analysis import (
    best_inner_layer,
    correlation_summary,
    effect_ratio,
    fraction_removed,
    relative_change,
    straightening_summary,
)
from icml26.papers.curvature.claims import CHECKS
from icml26.papers.curvature.figures import plot
from icml26.papers.curvature.layerwise import (
    CurvatureEntropyAnalysis,
    layerwise_curvature_entropy,
    unigram_log_frequency,
)
from icml26.papers.curvature.perturb import perturb_and_measure
from icml26.papers.curvature.regularizer import CurvatureLoss
from icml26.papers.curvature.stats import PairedTest, paired_test

__all__ = ["CHECKS", "Config", "STREAMS", "plot", "run"]

STREAMS = {
    "prefixes": 1,       # which held-out prefixes are perturbed
    "perturbation": 2,   # the misaligned control's random directions
}
"""Named random streams, each mapped to the integer offset the pre-contract code used. (The
model's initialisation and data order use ``seed`` itself, through the shared tiny-LM code.)"""


@dataclasses.dataclass
class Config:
    """Tiny GPT-2 on the stdlib corpus (full scale: the brief's CPU plan, §4.3-4.4)."""

    arch: str = "gpt2"
    """Architecture of the tiny LM: ``gpt2`` (the paper studies GPT-2 XL) or ``llama``."""
    vocab_size: int = 2048
    """BPE vocabulary of the shared tokenizer (brief §4.2: 2048)."""
    d_model: int = 192
    """Residual width (brief §4.3: 192)."""
    n_layers: int = 6
    """Transformer blocks (brief §4.3: 6)."""
    n_heads: int = 6
    """Attention heads (brief §4.3: 6)."""
    context: int = 128
    """Training and analysis window in tokens (brief §4.3: 128)."""
    steps: int = 1000
    """Optimizer steps of each training run (brief §4.3: 1000)."""
    batch_size: int = 16
    """Sequences per step (brief §4.3: 16)."""
    lr: float = 3e-3
    """Peak AdamW learning rate, cosine decay (brief §4.3: 3e-3)."""
    warmup: int = 60
    """Linear warm-up steps."""
    checkpoints: tuple[int, ...] = (0, 30, 100, 300, 1000)
    """Steps whose weights are analysed; must include 0 and ``steps`` (brief §4.3)."""
    window: int = 3
    """``W`` of ``kappa(t; W)`` (not given by the paper; brief §1.3: 3)."""
    window_grid: tuple[int, ...] = (1, 3, 8)
    """Windows compared at the final checkpoint (brief §6: {1, 3, 8})."""
    eval_tokens: int = 20_000
    """Held-out tokens (consecutive validation windows) for the correlations (brief §4.4: 20k)."""
    perturb_positions: int = 2000
    """Held-out prefixes perturbed at their last position (issue: at least 2,000)."""
    perturb_length: int = 64
    """Tokens per perturbed prefix (ours; the last one is perturbed and measured)."""
    alpha: float = 0.5
    """Perturbation size as a fraction of ``|x^_t - x_t|`` (brief §4.4: 0.5)."""
    alpha_grid: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0)
    """Sizes of a side sweep of mean Delta H against alpha (ours; not checked)."""
    sweep_positions: int = 500
    """Prefixes (the first of the perturbed ones) used by the alpha sweep."""
    perturb_layer: int = dataclasses.field(default=-1, metadata={"sentinels": (-1,)})
    """``hidden_states`` index to perturb; -1 (a sentinel): the inner layer (1 .. L-1) of maximal Spearman rho."""
    valid_batches: int = 40
    """Batches of 32 validation windows for the final validation losses (40 covers the stream at context 128)."""
    reg_weight: float = 0.1
    """``lambda`` of the curvature regulariser (brief §4.4 and the precursor code: 0.1)."""
    reg_layers: tuple[int, ...] = (3, 4)
    """``hidden_states`` indices the regulariser straightens (brief §4.4: layers 3-4 of 6)."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        TinyLMConfig(arch=self.arch, vocab_size=self.vocab_size, d_model=self.d_model,  # validates
                     n_layers=self.n_layers, n_heads=self.n_heads, context=self.context)
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps={self.steps} and batch_size={self.batch_size} must be positive")
        if self.d_model < 3:
            raise ValueError(f"d_model={self.d_model}: the misaligned control needs d_model >= 3")
        cps = self.checkpoints
        if list(cps) != sorted(set(cps)) or not cps or cps[0] != 0 or cps[-1] != self.steps:
            raise ValueError(f"checkpoints={cps} must be increasing, start at 0 and end at steps={self.steps}")
        for w in (self.window, *self.window_grid):
            if w < 1 or w + 2 > self.context:
                raise ValueError(f"window {w} must be in 1 .. context - 2 = {self.context - 2}")
        if self.eval_tokens < 2 * self.context:
            raise ValueError(f"eval_tokens={self.eval_tokens} must be at least two windows (2 * context)")
        if self.valid_batches < 1:
            raise ValueError(f"valid_batches={self.valid_batches} must be positive")
        if self.perturb_positions < 2:
            raise ValueError(f"perturb_positions={self.perturb_positions} must be at least 2 for a paired test")
        if not 3 <= self.perturb_length <= self.context:
            raise ValueError(f"perturb_length={self.perturb_length} must be in 3 .. context={self.context}")
        if self.alpha <= 0 or any(a <= 0 for a in self.alpha_grid):
            raise ValueError(f"alpha={self.alpha} and alpha_grid={self.alpha_grid} must be positive (alpha=0 perturbs "
                             f"nothing; the aligned arm moves toward the straight continuation)")
        if self.lr <= 0:
            raise ValueError(f"lr={self.lr} must be positive")
        if not 2 <= self.sweep_positions <= self.perturb_positions:
            raise ValueError(f"sweep_positions={self.sweep_positions} must be in 2 .. perturb_positions")
        if not (self.perturb_layer == -1 or 0 <= self.perturb_layer <= self.n_layers):
            raise ValueError(f"perturb_layer={self.perturb_layer} must be -1 or in 0 .. n_layers={self.n_layers}")
        if not self.reg_layers or any(not 0 <= layer <= self.n_layers for layer in self.reg_layers):
            raise ValueError(f"reg_layers={self.reg_layers} must be non-empty and in 0 .. n_layers={self.n_layers}")
        if self.reg_weight <= 0:
            raise ValueError(f"reg_weight={self.reg_weight} must be positive (lambda = 0 is the baseline arm)")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction: the default 1.07 M-parameter tiny GPT-2, 600 steps (a few minutes)."""
        return cls(d_model=128, n_layers=4, n_heads=4, steps=600, checkpoints=(0, 30, 100, 300, 600),
                   reg_layers=(2,))

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(vocab_size=512, d_model=32, n_layers=2, n_heads=2, context=32, steps=12,
                   batch_size=8, warmup=3, checkpoints=(0, 12), window_grid=(1, 3), eval_tokens=1024,
                   perturb_positions=64, perturb_length=12, alpha_grid=(0.1, 1.0), sweep_positions=32,
                   valid_batches=2, reg_layers=(1,))

    def model_config(self) -> TinyLMConfig:
        return TinyLMConfig(arch=self.arch, vocab_size=self.vocab_size, d_model=self.d_model,
                            n_layers=self.n_layers, n_heads=self.n_heads, context=self.context)

    def train_config(self, seed: int) -> PretrainConfig:
        return PretrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              warmup=min(self.warmup, self.steps), seed=seed,
                              eval_every=max(1, self.steps // 6), eval_batches=10)


def _analyse(model, windows: torch.Tensor, log_freq: torch.Tensor, window: int,
             ctx: RunContext) -> CurvatureEntropyAnalysis:
    model.eval()
    return layerwise_curvature_entropy(model, windows, window, token_log_frequency=log_freq,
                                       batch_size=32, show_progress=ctx.show_progress)


def _series(values) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def run(config: Config, ctx: RunContext) -> Outcome:
    model_cfg = config.model_config()
    train_cfg = config.train_config(ctx.seed)
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus, config.vocab_size)
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    ctx.provenance.update(corpus_sha256=corpus.sha256, tokenizer_vocab=len(tokenizer),
                          train_tokens=int(train_ids.numel()), valid_tokens=int(valid_ids.numel()))
    log_freq = unigram_log_frequency(train_ids, config.vocab_size)
    n_windows = min(config.eval_tokens // config.context, valid_ids.numel() // config.context)
    eval_windows = valid_ids[: n_windows * config.context].reshape(n_windows, config.context)
    layers = list(range(config.n_layers + 1))

    # --- one training run, keeping the weights at every checkpoint --------------------------
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def keep(step: int, model) -> None:
        if step in config.checkpoints:
            snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    model = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    base_log = pretrain(model, train_ids, valid_ids, train_cfg, context=config.context,
                        show_progress=ctx.show_progress, on_step=keep)
    base_seconds = time.perf_counter() - start

    # --- 1. straightening and emergence --------------------------------------------------------
    probe = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    analyses: dict[int, CurvatureEntropyAnalysis] = {}
    for step in ctx.progress(config.checkpoints, desc="checkpoints"):
        probe.load_state_dict(snapshots[step])
        analyses[step] = _analyse(probe, eval_windows, log_freq, config.window, ctx)
        if step == 0:
            init_loss = evaluate_loss(probe, valid_ids, context=config.context, max_batches=config.valid_batches)
    init, final = analyses[0], analyses[config.steps]
    model.eval()
    grid = {w: (final if w == config.window else _analyse(model, eval_windows, log_freq, w, ctx))
            for w in config.window_grid}

    # --- 2. aligned vs misaligned perturbations at the layer of maximal correlation -----------
    layer = config.perturb_layer if config.perturb_layer >= 0 else best_inner_layer(final.spearman)
    rng = ctx.rng("prefixes")
    starts = rng.integers(0, valid_ids.numel() - config.perturb_length, size=config.perturb_positions)
    prefixes = torch.stack([valid_ids[s : s + config.perturb_length] for s in starts.tolist()])
    generator = ctx.torch_generator("perturbation")
    deltas: dict[str, list[torch.Tensor]] = {"aligned": [], "misaligned": []}
    shifts: dict[str, list[torch.Tensor]] = {"aligned": [], "misaligned": []}
    angles_after: dict[str, list[torch.Tensor]] = {"aligned": [], "misaligned": []}
    for i in ctx.progress(range(0, len(prefixes), 128), desc="perturbations"):
        batch = prefixes[i : i + 128]
        for kind in ("aligned", "misaligned"):
            res = perturb_and_measure(model, batch, layer, config.alpha, kind, generator=generator)
            deltas[kind].append(res.delta_entropy.cpu())
            shifts[kind].append(res.shift_norm.cpu())
            angles_after[kind].append(res.angle_perturbed.cpu())
    delta = {k: torch.cat(v).double().numpy() for k, v in deltas.items()}
    tests: dict[str, PairedTest] = {k: paired_test(v) for k, v in delta.items()}
    sweep: dict[str, list[float]] = {"aligned": [], "misaligned": []}
    for a in config.alpha_grid:
        for kind in sweep:
            res = perturb_and_measure(model, prefixes[: config.sweep_positions], layer, a, kind, generator=generator)
            sweep[kind].append(float(res.delta_entropy.double().mean()))

    # --- 3. the curvature regulariser: same seed, batches and steps, lambda > 0 ---------------
    reg_model = build_model(model_cfg, seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    reg_log = pretrain(reg_model, train_ids, valid_ids, train_cfg, context=config.context,
                       show_progress=ctx.show_progress,
                       aux_loss=CurvatureLoss(layers=config.reg_layers, weight=config.reg_weight))
    reg_seconds = time.perf_counter() - start
    ctx.provenance.update(train_seconds_unregularized=round(base_seconds, 1),
                          train_seconds_regularized=round(reg_seconds, 1))
    reg_analysis = _analyse(reg_model, eval_windows, log_freq, config.window, ctx)
    arms_reg = {}
    for name, m, analysis in (("regularized", reg_model, reg_analysis), ("unregularized", model, final)):
        arms_reg[name] = {
            "mid_curvature": float(np.mean(analysis.mean_curvature[list(config.reg_layers)])),
            "mean_entropy": float(analysis.entropy.mean()),
            "valid_loss": evaluate_loss(m, valid_ids, context=config.context, max_batches=config.valid_batches),
            "best_spearman": float(np.nanmax(analysis.spearman)),
        }
    reg, unreg = arms_reg["regularized"], arms_reg["unregularized"]
    curvature_cut = fraction_removed(reg["mid_curvature"], unreg["mid_curvature"])
    loss_increase = relative_change(reg["valid_loss"], unreg["valid_loss"])

    # --- metrics, checks, curves ------------------------------------------------------------------
    def summary(a: CurvatureEntropyAnalysis) -> dict[str, float]:
        return {**dataclasses.asdict(correlation_summary(a.spearman, a.pearson, a.partial_spearman)),
                **dataclasses.asdict(straightening_summary(a.mean_curvature))}

    trained = {**summary(final), "valid_loss": unreg["valid_loss"]}
    at_init = {**summary(init), "valid_loss": init_loss}
    perturb_metrics = {}
    for kind in ("aligned", "misaligned"):
        t = tests[kind]
        perturb_metrics[kind] = {"mean_delta_entropy": t.mean, "sem_delta_entropy": t.sem,
                                 "p_less": t.p_less, "frac_negative": t.frac_negative,
                                 "mean_shift_norm": float(torch.cat(shifts[kind]).mean()),
                                 "mean_last_angle": float(torch.cat(angles_after[kind]).mean())}
    versus_control = paired_test(delta["aligned"] - delta["misaligned"])  # same prefixes, same layer
    ratio = effect_ratio(tests["misaligned"].mean, tests["aligned"].mean)

    checks = [
        CHECKS["init_correlation"].measure(at_init["max_abs_spearman"]),
        CHECKS["trained_correlation"].measure(trained["best_spearman"]),
        CHECKS["trained_curvature_drop"].measure(trained["curvature_drop"]),
        CHECKS["init_curvature_drop"].measure(at_init["curvature_drop"]),
        CHECKS["aligned_delta_entropy"].measure(tests["aligned"].mean),
        CHECKS["aligned_p_value"].measure(tests["aligned"].p_less),
        CHECKS["misaligned_ratio"].measure(ratio),
        CHECKS["regularizer_curvature_cut"].measure(curvature_cut),
        CHECKS["regularizer_loss_increase"].measure(loss_increase),
    ]

    step_names = {step: f"step {step}" for step in config.checkpoints}
    edges = np.linspace(*np.quantile(np.concatenate(list(delta.values())), [0.005, 0.995]), 41)
    curves: dict[str, Any] = {
        "curvature_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.mean_curvature) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "mean turning angle (rad)",
            "title": "Straightening: curvature by layer through training"},
        "spearman_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.spearman) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": f"Spearman rho(kappa(t; W={config.window}), H_t)",
            "title": "Emergence: curvature-entropy correlation by layer"},
        "partial_spearman_by_layer": {
            "x": layers, "series": {step_names[s]: _series(a.partial_spearman) for s, a in analyses.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "partial rho | position, log frequency",
            "title": "Correlation controlling for position and token frequency"},
        "spearman_by_window": {
            "x": layers, "series": {f"W={w}": _series(a.spearman) for w, a in grid.items()},
            "xlabel": "layer (hidden_states index)", "ylabel": "Spearman rho(kappa, H) (final)",
            "title": "Window of the contextual curvature"},
        "delta_entropy_hist": {
            "x": _series((edges[1:] + edges[:-1]) / 2),
            "series": {k: [float(c) for c in np.histogram(v, bins=edges)[0]] for k, v in delta.items()},
            "xlabel": f"Delta H at layer {layer} (nats), alpha={config.alpha}", "ylabel": "positions",
            "title": "Aligned vs misaligned perturbations"},
        "delta_entropy_vs_alpha": {
            "x": list(config.alpha_grid), "series": sweep,
            "xlabel": "alpha (fraction of |x^_t - x_t|)", "ylabel": f"mean Delta H (nats), {config.sweep_positions} prefixes",
            "title": f"Perturbation size at layer {layer}"},
        "regularizer_curvature": {
            "x": layers, "series": {"lambda=0": _series(final.mean_curvature),
                                    f"lambda={config.reg_weight}": _series(reg_analysis.mean_curvature)},
            "xlabel": "layer (hidden_states index)", "ylabel": "mean turning angle (rad)",
            "title": f"Curvature regulariser at layers {list(config.reg_layers)}"},
        "valid_loss": {
            "x": base_log.eval_steps, "series": {"lambda=0": base_log.valid_loss,
                                                 f"lambda={config.reg_weight}": reg_log.valid_loss},
            "xlabel": "step", "ylabel": "validation loss (nats)", "title": "Training with the regulariser"},
    }
    notes = [
        f"Perturbations at hidden_states[{layer}] ({'chosen' if config.perturb_layer >= 0 else 'inner layer of maximal rho'}); "
        f"{len(delta['aligned'])} held-out prefixes of {config.perturb_length} tokens.",
        f"At alpha={config.alpha}: mean Delta H aligned {tests['aligned'].mean:+.3f}, misaligned "
        f"{tests['misaligned'].mean:+.3f} nats; aligned minus misaligned on the same prefixes "
        f"{versus_control.mean:+.3f} nats (paired t = {versus_control.t:.1f}).",
        f"Correlations over {int(final.n_tokens[0])} held-out tokens; the paper reports r ~ 0.15 at GPT-2 XL scale.",
    ]
    return Outcome(
        metrics={"trained": trained, "init": at_init, "aligned": perturb_metrics["aligned"],
                 "misaligned": perturb_metrics["misaligned"], "regularized": reg, "unregularized": unreg},
        checks=checks, curves=curves, notes=notes)
