"""Pieces of the curvature reproduction: the perturbation study (any HF causal LM) and the pretrained arm.

* :func:`perturbation_study`: aligned vs misaligned steps of norm ``epsilon |x_t|`` at one layer over
  many prefixes, the per-prefix initial slope ``d Delta H / d epsilon`` and its paired tests
  (:class:`PerturbationStudy`); used for the tiny model and for SmolLM2.
* :func:`pretrained_arm`: SmolLM2-135M-Instruct on windows of the stdlib text in its own tokenizer:
  rho(kappa, H) by layer with a window-bootstrap interval, curvature by layer, its loss beside an
  interpolated bigram's, and the perturbation study at its layer of maximal rho.
* The tiny model's sections, in the order :func:`~icml26.papers.curvature.experiment.run` calls them
  (each returns a dataclass): :func:`prepare_data` (corpus, tokenizer, held-out windows),
  :func:`train_base` (the training run and its checkpoints), :func:`straightening` (the analysis per
  checkpoint and over the window grid), :func:`tiny_perturbations` (the perturbation study at the layer of
  maximal correlation) and :func:`regularizer` (the second run with the curvature loss).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from icml26.common.argcheck import check_int
from icml26.common.corpus import stdlib_corpus
from icml26.common.tiny_lm import build_model, encode_corpus, evaluate_loss, pretrain
from icml26.common.tokenizer import train_tokenizer
from icml26.contract import Curve, RunContext
from icml26.papers.curvature.analysis import (
    best_inner_layer,
    correlation_summary,
    effect_ratio,
    fraction_removed,
    initial_slope,
    interpolated_bigram,
    relative_change,
    straightening_summary,
)
from icml26.papers.curvature.config import Config
from icml26.papers.curvature.layerwise import (
    CurvatureEntropyAnalysis,
    layerwise_curvature_entropy,
    unigram_log_frequency,
)
from icml26.papers.curvature.perturb import perturbation_sweep
from icml26.papers.curvature.regularizer import CurvatureLoss
from icml26.papers.curvature.stats import PairedTest, cluster_bootstrap_spearman, paired_test

__all__ = ["BaseRun", "Data", "PerturbationStudy", "Regularized", "Straightening", "TinyPerturbations",
           "perturbation_study", "prepare_data", "pretrained_arm", "regularizer", "split_windows", "straightening",
           "tiny_perturbations", "train_base"]


@dataclasses.dataclass(frozen=True)
class PerturbationStudy:
    """Aligned vs misaligned perturbations at one layer over many prefixes (:func:`perturbation_study`)."""

    layer: int
    epsilons: list[float]
    delta: dict[str, np.ndarray]
    """``"aligned"`` / ``"misaligned"``: ``(n_eps, prefixes)`` ``Delta H`` in nats."""
    slopes: dict[str, np.ndarray]
    """Per-prefix initial slopes ``d Delta H / d epsilon`` of each arm."""
    tests: dict[str, PairedTest]
    """Each arm's slopes against 0."""
    versus_control: PairedTest
    """Aligned minus misaligned slope on the same prefixes."""
    overshoot: float
    """Share of prefixes whose largest aligned step passes the extrapolation target."""

    @property
    def misaligned_ratio(self) -> float:
        """``|mean misaligned slope| / |mean aligned slope|``."""
        return effect_ratio(self.tests["misaligned"].mean, self.tests["aligned"].mean)

    def metrics(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for kind in ("aligned", "misaligned"):
            t = self.tests[kind]
            out[kind] = {"mean_initial_slope": t.mean, "sem_initial_slope": t.sem, "p_less": t.p_less,
                         "p_two_sided": t.p, "frac_negative": t.frac_negative, "n_prefixes": t.n,
                         **{f"mean_delta_entropy_eps{e:g}": float(np.nanmean(self.delta[kind][i]))
                            for i, e in enumerate(self.epsilons)}}
        v = self.versus_control
        out["aligned minus misaligned"] = {"mean_initial_slope": v.mean, "sem_initial_slope": v.sem,
                                           "p_less": v.p_less, "p_two_sided": v.p}
        return out

    def summary(self) -> str:
        a, m, v = self.tests["aligned"], self.tests["misaligned"], self.versus_control
        return (f"initial slope dDelta H/d epsilon at layer {self.layer} over {int(a.n)} prefixes: aligned "
                f"{a.mean:+.3f} +/- {a.sem:.3f}, misaligned {m.mean:+.3f} +/- {m.sem:.3f} nats per unit epsilon; "
                f"aligned minus misaligned {v.mean:+.3f} (paired t = {v.t:.1f}, two-sided p = {v.p:.2g})")


def perturbation_study(model, prefixes: torch.Tensor, layer: int, epsilons, ctx: RunContext, *,
                       generator: torch.Generator, batch_size: int = 128, use_cache: bool = False,
                       desc: str = "perturbations") -> PerturbationStudy:
    """:func:`~icml26.papers.curvature.perturb.perturbation_sweep` over ``prefixes`` in batches, then the
    per-prefix initial slopes and paired t-tests (each arm against 0, aligned against misaligned)."""
    sweeps = [perturbation_sweep(model, prefixes[i: i + batch_size], layer, epsilons, generator=generator,
                                 use_cache=use_cache)
              for i in ctx.progress(range(0, len(prefixes), batch_size), desc=desc)]
    eps = list(sweeps[0].epsilons)
    delta = {k: torch.cat([getattr(sw, k) for sw in sweeps], dim=1).double().numpy() for k in ("aligned", "misaligned")}
    slopes = {k: initial_slope(eps, v) for k, v in delta.items()}
    state_norm = torch.cat([sw.state_norm for sw in sweeps]).double().numpy()
    target_distance = torch.cat([sw.target_distance for sw in sweeps]).double().numpy()
    return PerturbationStudy(
        layer=layer, epsilons=eps, delta=delta, slopes=slopes,
        tests={k: paired_test(v) for k, v in slopes.items()},
        versus_control=paired_test(slopes["aligned"] - slopes["misaligned"]),  # same prefixes, same layer
        overshoot=float(np.mean(max(eps) * state_norm > target_distance)))


def split_windows(stream: torch.Tensor, length: int, count: int,
                  rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Cut ``stream`` into consecutive windows of ``length`` tokens, draw ``count`` of them (sorted), and
    return them ``(count, length)`` with the other windows' tokens concatenated ``(rest,)``: the text a
    reference model may be fitted on without seeing the analysed windows. At most half the windows may
    be drawn."""
    if not isinstance(stream, torch.Tensor) or stream.ndim != 1 or stream.is_floating_point():
        raise TypeError("stream must be a flat (n,) tensor of token ids")
    length, count = check_int(length, "length", low=1), check_int(count, "count", low=1)
    available = stream.numel() // length
    if count > available // 2:
        raise ValueError(f"{count} windows of {length} tokens asked; the text has {available}, and at least half "
                         "must stay outside them (for the bigram and the token frequencies)")
    all_windows = stream[: available * length].reshape(available, length)
    chosen = np.sort(rng.choice(available, size=count, replace=False))
    outside = np.ones(available, dtype=bool)
    outside[chosen] = False
    return all_windows[torch.from_numpy(chosen)], all_windows[torch.from_numpy(outside)].reshape(-1)


def _series(values) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def pretrained_arm(config: Config, corpus, ctx: RunContext) -> tuple[dict[str, Any], PerturbationStudy | None]:
    """SmolLM2-135M-Instruct on random windows of the stdlib text (its own tokenizer).

    SmolLM2 was not trained on our split, so the windows are drawn from the whole token stream
    (train and held-out parts: the checks' >= 20k tokens at a half-width <= 0.015 need ~40k, more than
    the held-out part has). The unigram frequencies (a covariate of the partial correlation) and the
    bigram reference are fitted on the text outside the drawn windows, so the bigram never scores
    text it was fitted on. Returns the arm's metrics (with a ``"curves"`` entry) and the perturbation
    study at the inner layer of maximal rho (``None`` when ``config.pretrained_perturb_positions`` is 0).
    """
    from icml26.common.pretrained import load_pretrained_lm

    ctx.stage("SmolLM2: loading, tokenizing the corpus")
    lm = load_pretrained_lm(ctx.device, torch.float32)
    ctx.provenance["pretrained"] = lm.provenance
    model, tokenizer = lm.model, lm.tokenizer
    model.eval()
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    stream = torch.cat([train_ids, valid_ids])
    vocab = int(model.config.vocab_size)
    T = config.pretrained_context
    per_window = T - config.window - 1  # tokens with a defined kappa(t; W) per window
    wanted = -(-config.pretrained_tokens // per_window)
    try:
        windows, rest = split_windows(stream, T, wanted, ctx.rng("pretrained"))
    except ValueError as exc:
        raise ValueError(f"pretrained_tokens={config.pretrained_tokens}: {exc}") from None
    ctx.stage(f"SmolLM2: curvature and entropy over {len(windows)} windows")
    analysis = layerwise_curvature_entropy(model, windows, config.window,
                                           token_log_frequency=unigram_log_frequency(rest, vocab),
                                           batch_size=config.pretrained_batch, show_progress=ctx.show_progress,
                                           layers=config.pretrained_layers or None)
    low, high = cluster_bootstrap_spearman(analysis.curvature, analysis.entropy, analysis.row,
                                           n_boot=config.bootstrap, rng=ctx.rng("bootstrap"))
    best = int(np.nanargmax(analysis.spearman))
    bigram = interpolated_bigram(rest, windows, vocab)  # the same within-window pairs as the model's loss
    layers = list(range(analysis.num_layers + 1))
    metrics = {
        **dataclasses.asdict(correlation_summary(analysis.spearman, analysis.pearson, analysis.partial_spearman)),
        **dataclasses.asdict(straightening_summary(analysis.mean_curvature)),
        "best_ci_low": float(low[best]), "best_ci_high": float(high[best]),
        "best_ci_halfwidth": float((high[best] - low[best]) / 2),
        "max_ci_halfwidth": float(np.nanmax((high - low) / 2)),
        "n_tokens": float(analysis.n_tokens[best]), "n_windows": float(len(windows)),
        "valid_loss": float(analysis.mean_loss), "bigram_valid_loss": bigram.loss, "bigram_weight": bigram.weight,
        "curves": Curve(
            x=layers,
            series={"Spearman rho(kappa, H)": _series(analysis.spearman), "95% CI low": _series(low),
                    "95% CI high": _series(high), "partial rho | position, frequency": _series(analysis.partial_spearman),
                    "mean curvature (rad)": _series(analysis.mean_curvature)},
            xlabel="layer (hidden_states index)", ylabel="rho / curvature (rad)",
            title="SmolLM2-135M-Instruct: curvature-entropy correlation and curvature by layer"),
    }
    study = None
    if config.pretrained_perturb_positions > 0:
        layer = best_inner_layer(analysis.spearman)
        L = config.pretrained_perturb_length
        starts = ctx.rng("pretrained_prefixes").integers(0, stream.numel() - L, size=config.pretrained_perturb_positions)
        prefixes = torch.stack([stream[s: s + L] for s in starts.tolist()])
        ctx.stage(f"SmolLM2: perturbations of {len(prefixes)} prefixes at layer {layer}")
        study = perturbation_study(model, prefixes, layer, config.epsilons, ctx,
                                   generator=ctx.torch_generator("pretrained_perturbation"),
                                   batch_size=config.pretrained_perturb_batch, use_cache=True,
                                   desc="SmolLM2 perturbations")
    return metrics, study


# --- the tiny model's sections ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Data:
    """The offline corpus, its tokenizer and ids, and the held-out windows every analysis reads."""

    corpus: Any
    train_ids: torch.Tensor
    valid_ids: torch.Tensor
    log_freq: torch.Tensor
    """Unigram log frequency of the training ids (a covariate of the partial correlation)."""
    eval_windows: torch.Tensor
    """``(n_windows, context)`` consecutive held-out windows."""
    layers: list[int]
    """``hidden_states`` indices, embeddings (0) to the last block."""


def prepare_data(config: Config, ctx: RunContext) -> Data:
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus, config.vocab_size)
    train_ids, valid_ids = encode_corpus(tokenizer, corpus)
    ctx.provenance.update(corpus_sha256=corpus.sha256, tokenizer_vocab=len(tokenizer),
                          train_tokens=int(train_ids.numel()), valid_tokens=int(valid_ids.numel()))
    log_freq = unigram_log_frequency(train_ids, config.vocab_size)
    n_windows = min(config.eval_tokens // config.context, valid_ids.numel() // config.context)
    eval_windows = valid_ids[: n_windows * config.context].reshape(n_windows, config.context)
    return Data(corpus=corpus, train_ids=train_ids, valid_ids=valid_ids, log_freq=log_freq,
                eval_windows=eval_windows, layers=list(range(config.n_layers + 1)))


def analyse(model, data: Data, window: int, ctx: RunContext) -> CurvatureEntropyAnalysis:
    """Curvature and entropy of ``model`` (put in eval mode) on the held-out windows at ``window``."""
    model.eval()
    return layerwise_curvature_entropy(model, data.eval_windows, window, token_log_frequency=data.log_freq,
                                       batch_size=32, show_progress=ctx.show_progress)


@dataclasses.dataclass(frozen=True)
class BaseRun:
    """The unregularised training run (the regulariser's ``lambda = 0`` arm)."""

    model: Any
    log: Any
    """:func:`~icml26.common.tiny_lm.pretrain`'s log (evaluation steps, validation loss)."""
    snapshots: dict[int, dict[str, torch.Tensor]]
    """Weights at every step of ``config.checkpoints``."""
    seconds: float


def train_base(config: Config, ctx: RunContext, data: Data) -> BaseRun:
    """One training run (seeded initialisation and data order), keeping its weights at every checkpoint."""
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def keep(step: int, model) -> None:
        if step in config.checkpoints:
            snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    model = build_model(config.model_config(), seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    log = pretrain(model, data.train_ids, data.valid_ids, config.train_config(ctx.seed), context=config.context,
                   show_progress=ctx.show_progress, on_step=keep)
    return BaseRun(model=model, log=log, snapshots=snapshots, seconds=time.perf_counter() - start)


@dataclasses.dataclass(frozen=True)
class Straightening:
    """Straightening and emergence: the analysis at every checkpoint and over the window grid."""

    analyses: dict[int, CurvatureEntropyAnalysis]
    """Checkpoint step -> analysis at ``config.window``."""
    init: CurvatureEntropyAnalysis
    """At step 0."""
    final: CurvatureEntropyAnalysis
    """At the last step (``config.steps``)."""
    init_loss: float
    """Validation loss at step 0."""
    grid: dict[int, CurvatureEntropyAnalysis]
    """Window ``W`` -> analysis of the final model."""


def straightening(config: Config, ctx: RunContext, data: Data, base: BaseRun) -> Straightening:
    probe = build_model(config.model_config(), seed=ctx.seed).to(ctx.device)
    analyses: dict[int, CurvatureEntropyAnalysis] = {}
    for step in ctx.progress(config.checkpoints, desc="checkpoints"):
        probe.load_state_dict(base.snapshots[step])
        analyses[step] = analyse(probe, data, config.window, ctx)
        if step == 0:
            init_loss = evaluate_loss(probe, data.valid_ids, context=config.context, max_batches=config.valid_batches)
    init, final = analyses[0], analyses[config.steps]
    base.model.eval()
    grid = {w: (final if w == config.window else analyse(base.model, data, w, ctx)) for w in config.window_grid}
    return Straightening(analyses=analyses, init=init, final=final, init_loss=init_loss, grid=grid)


@dataclasses.dataclass(frozen=True)
class TinyPerturbations:
    """The perturbation study of the tiny model at one layer."""

    layer: int
    prefixes: torch.Tensor
    study: PerturbationStudy


def tiny_perturbations(config: Config, ctx: RunContext, data: Data, model,
                       final: CurvatureEntropyAnalysis) -> TinyPerturbations:
    """Aligned vs misaligned perturbations at ``config.perturb_layer`` (or the inner layer of maximal rho)."""
    layer = config.perturb_layer if config.perturb_layer >= 0 else best_inner_layer(final.spearman)
    rng = ctx.rng("prefixes")
    starts = rng.integers(0, data.valid_ids.numel() - config.perturb_length, size=config.perturb_positions)
    prefixes = torch.stack([data.valid_ids[s : s + config.perturb_length] for s in starts.tolist()])
    # the last token rerun against the prefix's key-value cache for each patch: equal to full reruns to
    # float rounding (tested), a fraction of their cost (the 63 other positions are not recomputed 8 times)
    study = perturbation_study(model, prefixes, layer, config.epsilons, ctx,
                               generator=ctx.torch_generator("perturbation"), use_cache=True)
    return TinyPerturbations(layer=layer, prefixes=prefixes, study=study)


@dataclasses.dataclass(frozen=True)
class Regularized:
    """The regularised run beside the unregularised one."""

    log: Any
    analysis: CurvatureEntropyAnalysis
    arms: dict[str, dict[str, float]]
    """``"regularized"`` / ``"unregularized"``: mid-layer curvature, mean entropy, validation loss, best rho."""
    curvature_cut: float
    """Share of the mid-layer curvature the regulariser removes."""
    loss_increase: float
    """Relative increase of the validation loss."""


def regularizer(config: Config, ctx: RunContext, data: Data, base: BaseRun,
                final: CurvatureEntropyAnalysis) -> Regularized:
    """A second run from the same initialisation, on the same batches, for the same steps, with
    ``lambda * L_curv`` at ``config.reg_layers``; ``base`` is its ``lambda = 0`` arm."""
    reg_model = build_model(config.model_config(), seed=ctx.seed).to(ctx.device)
    start = time.perf_counter()
    log = pretrain(reg_model, data.train_ids, data.valid_ids, config.train_config(ctx.seed), context=config.context,
                   show_progress=ctx.show_progress,
                   aux_loss=CurvatureLoss(layers=config.reg_layers, weight=config.reg_weight))
    reg_seconds = time.perf_counter() - start
    ctx.provenance.update(train_seconds_unregularized=round(base.seconds, 1),
                          train_seconds_regularized=round(reg_seconds, 1))
    reg_analysis = analyse(reg_model, data, config.window, ctx)
    arms = {}
    for name, m, a in (("regularized", reg_model, reg_analysis), ("unregularized", base.model, final)):
        arms[name] = {
            "mid_curvature": float(np.mean(a.mean_curvature[list(config.reg_layers)])),
            "mean_entropy": float(a.entropy.mean()),
            "valid_loss": evaluate_loss(m, data.valid_ids, context=config.context, max_batches=config.valid_batches),
            "best_spearman": float(np.nanmax(a.spearman)),
        }
    reg, unreg = arms["regularized"], arms["unregularized"]
    return Regularized(log=log, analysis=reg_analysis, arms=arms,
                       curvature_cut=fraction_removed(reg["mid_curvature"], unreg["mid_curvature"]),
                       loss_increase=relative_change(reg["valid_loss"], unreg["valid_loss"]))
