"""RobuQ reproduction: W1.58A2/A4 QAT of a tiny class-conditional DiT on scikit-learn's digits.

1. Data: the 1,797 8×8 digits in [-1, 1], split stratified (75 % train / 25 % held out).
2. FP: a TinyDiT (patch 2, 16 tokens, widths 64/256, so the Hadamard is Sylvester's) trained
   for ε-prediction (1000-step linear β, label dropout for the null class, EMA weights); cached.
3. QAT arms, each from a copy of the FP weights with the same budget (steps, batches, noise):
   naive W1.58A4 / A2 (absmax, midrise, no rotation), naive A2 on the integer grid, Hadamard +
   absmax A2 (BitNet v2; isolates the rotation from the scale rule), RobuQ A4 / A2 (Hadamard +
   Gaussian clip), and RobuQ + AMPN at an average of 2 bits over {1, 2, 3, 4}: the sensitivity is
   measured on the trained RobuQ-A4 model with training images, the allocation found by the
   exact DP, and the arm trained from the FP weights like the others.
4. Metrics on held-out digits: ε-MSE averaged over 20 fixed t; 500 class-balanced DDIM samples
   scored by a digits classifier (class accuracy, Fréchet distance of its penultimate features
   to the held-out digits); per-token excess kurtosis of the FP model's Linear inputs before and
   after the rotation.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import numpy as np
import torch

from icml26.common.cache import config_hash, entry, load_entry
from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.robuq import (
    LinearSchedule,
    TinyDiT,
    TinyDiTConfig,
    add_noise,
    allocate_bits,
    collect_linear_inputs,
    ddim_sample,
    dit_linear_names,
    eps_mse,
    hadamard_absmax_quantize_dit,
    layer_macs,
    layer_sensitivity,
    naive_int_quantize_dit,
    naive_quantize_dit,
    quantize_dit,
    train_denoiser,
)
from icml26.papers.robuq.analysis import excess_removed, fp_best_ratio, gain_points, mean_excess_kurtosis, ratio
from icml26.papers.robuq.claims import CHECKS
from icml26.papers.robuq.config import Config
from icml26.papers.robuq.digits import DigitImages, DigitScorer, load_digit_images
from icml26.papers.robuq.figures import plot
from icml26.papers.robuq.quant import RobustQuantizer

__all__ = ["CHECKS", "Config", "STREAMS", "plot", "run"]

STREAMS: dict[str, str] = {
    "fp_init": "the FP denoiser's initialisation",
    "fp_train": "the FP training batches",
    "eval_noise": "the evaluation noise",
    "samples": "the DDIM samples' noise",
    "qat": "the QAT batches",
    "calib": "the calibration batch",
    "split": "the digits split",
    "classifier": "the digit scorer's initialisation",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

#: Arms in the order of the result (the method first, full precision and real data last).
ARMS = ("robuq_ampn_a2", "robuq_a2", "robuq_a4", "hadamard_absmax_a2", "naive_a2", "naive_int_a2", "naive_a4",
        "w158_a16", "w158_a16_rotated", "fp")
#: Arms that isolate a mechanism (run when ``Config.controls``): the integer grid, the rotation without
#: the Gaussian scale. Ternary weights with full-precision activations, on W and on the rotated W·D·H
#: (the ceilings of any activation quantizer of each basis at this QAT budget), always run: the headline
#: reads the activation quantizers against them.
CONTROLS = ("hadamard_absmax_a2", "naive_int_a2")


def _model_config(config: Config) -> TinyDiTConfig:
    return TinyDiTConfig(hidden=config.hidden, depth=config.depth, heads=config.heads)


def _fp_model(config: Config, data: DigitImages, ctx: RunContext, split_seed: int) -> tuple[TinyDiT, dict]:
    """The FP DiT, trained once per (config, seed) and cached with a verified manifest."""
    fields = {k: getattr(config, k) for k in ("test_fraction", "hidden", "depth", "heads", "fp_steps", "fp_batch",
                                              "fp_lr", "fp_ema", "label_dropout")}
    # v2: the EMA warms up; the torch version is part of the key (another build may train other bits)
    key = config_hash("robuq-fp-v2", fields, ctx.seed, split_seed, torch.__version__)
    with entry("robuq-fp", key, {**fields, "seed": ctx.seed}) as (final, build):
        if build is not None:
            torch.manual_seed(ctx.seed_for("fp_init"))
            model = TinyDiT(_model_config(config))
            start = time.perf_counter()
            losses = train_denoiser(model, data.x_train, data.y_train, schedule=LinearSchedule(),
                                    steps=config.fp_steps, batch_size=config.fp_batch, lr=config.fp_lr,
                                    generator=ctx.torch_generator("fp_train"), null_label=model.null_class,
                                    label_dropout=config.label_dropout, warmup=100, ema_decay=config.fp_ema,
                                    progress=lambda it: ctx.progress(it, desc="FP training", total=config.fp_steps))
            torch.save(model.state_dict(), build / "model.pt")
            (build / "train.json").write_text(json.dumps({"losses": losses[::10],
                                                          "seconds": time.perf_counter() - start}))
    model = TinyDiT(_model_config(config))
    model.load_state_dict(torch.load(final / "model.pt", map_location="cpu", weights_only=True))
    info = json.loads((final / "train.json").read_text())
    ctx.provenance["fp_cache"] = {"key": key, "sha256": load_entry(final).digest}
    return model.eval(), info


def _kurtosis(model: TinyDiT, data: DigitImages, config: Config) -> dict[str, Any]:
    """Mean per-token excess kurtosis of each block Linear's input, raw and after the rotation D·H."""
    n = min(config.kurtosis_images, len(data.x_test))
    g = torch.Generator().manual_seed(0)
    xs, ts, ys = [], [], []
    for t_value in (100, 400, 700, 950):
        t = torch.full((n,), t_value, dtype=torch.long)
        xs.append(add_noise(LinearSchedule(), data.x_test[:n], torch.randn(data.x_test[:n].shape, generator=g), t))
        ts.append(t)
        ys.append(data.y_test[:n])
    x, t, y = torch.cat(xs), torch.cat(ts), torch.cat(ys)
    names = dit_linear_names(model)
    inputs = collect_linear_inputs(model, lambda: model(x, t, y), names)
    rot = RobustQuantizer(2)
    before = {n: mean_excess_kurtosis(v.double().numpy()) for n, v in inputs.items()}
    after = {n: mean_excess_kurtosis(rot.rotate_tokens(v.double()).numpy()) for n, v in inputs.items()}
    return {"names": names, "before": [before[n] for n in names], "after": [after[n] for n in names]}


def _evaluate(model: TinyDiT, data: DigitImages, scorer: DigitScorer, config: Config, ctx: RunContext,
              sample_labels: torch.Tensor) -> dict[str, Any]:
    ts = [int(v) for v in np.linspace(25, 975, config.eval_timesteps)] if config.eval_timesteps > 1 else [500]
    by_t = eps_mse(model, data.x_test, data.y_test, LinearSchedule(), ts, generator=ctx.torch_generator("eval_noise"))
    samples = ddim_sample(model, sample_labels, (1, 8, 8), LinearSchedule(), generator=ctx.torch_generator("samples"),
                          steps=config.ddim_steps, guidance=config.guidance, null_label=model.null_class)
    accuracy, distance = scorer.score(samples, sample_labels)
    keep = torch.cat([torch.nonzero(sample_labels == c)[:2, 0] for c in range(10)])
    return {"eps_mse": float(np.mean(by_t)), "by_t": by_t, "timesteps": ts, "class_accuracy": accuracy,
            "frechet_distance": distance, "samples": samples[keep, 0].numpy().round(3)}


def _quantize(arm: str, model: TinyDiT, act_bits: Any, config: Config) -> torch.nn.Module:
    robuq = {"scale": "gauss", "grid": "midrise", "rotate": True, "center": config.center}
    if arm == "fp":
        return model
    if arm == "w158_a16":
        return quantize_dit(model, None)
    if arm == "w158_a16_rotated":
        return quantize_dit(model, None, quantizer=robuq, rotate_weights=True)
    if arm.startswith("robuq"):
        return quantize_dit(model, act_bits, quantizer=robuq)
    if arm == "hadamard_absmax_a2":
        return hadamard_absmax_quantize_dit(model, act_bits)
    if arm == "naive_int_a2":
        return naive_int_quantize_dit(model, act_bits)
    return naive_quantize_dit(model, act_bits)


def _qat(arm: str, fp: TinyDiT, act_bits: Any, data: DigitImages, config: Config, ctx: RunContext):
    model = _quantize(arm, copy.deepcopy(fp), act_bits, config)
    losses = train_denoiser(model, data.x_train, data.y_train, schedule=LinearSchedule(), steps=config.qat_steps,
                            batch_size=config.qat_batch, lr=config.qat_lr, generator=ctx.torch_generator("qat"),
                            null_label=fp.null_class, label_dropout=config.label_dropout,
                            teacher=fp if config.distill_weight > 0 else None, distill_weight=config.distill_weight,
                            progress=lambda it: ctx.progress(it, desc=f"QAT {arm}", total=config.qat_steps))
    return model, losses


def _ampn(a4_model: torch.nn.Module, data: DigitImages, config: Config, ctx: RunContext):
    """Sensitivity of the trained RobuQ-A4 model on training images, then the exact DP allocation."""
    g = ctx.torch_generator("calib")
    schedule = LinearSchedule()
    calib = []
    for _ in range(config.calib_batches):
        idx = torch.randint(0, len(data.x_train), (config.calib_batch,), generator=g)
        t = torch.randint(0, schedule.steps, (config.calib_batch,), generator=g)
        x_t = add_noise(schedule, data.x_train[idx], torch.randn(data.x_train[idx].shape, generator=g), t)
        calib.append((x_t, t, data.y_train[idx]))
    sens = layer_sensitivity(a4_model, calib, config.ampn_bits)
    weights = None
    if config.ampn_weighting == "macs":
        macs = layer_macs(a4_model, lambda: a4_model(*calib[0]))
        weights = [macs[n] for n in sens.names]
    return sens, allocate_bits(sens, config.ampn_bits, config.ampn_avg_bits, weights=weights)


def run(config: Config, ctx: RunContext) -> Outcome:
    split_seed = ctx.seed_for("split") % (2 ** 31)
    data = load_digit_images(config.test_fraction, seed=split_seed)
    ctx.stage("digits classifier")
    scorer = DigitScorer.fit(data, seed=ctx.seed_for("classifier") % (2 ** 31))
    ctx.stage("FP model (trained, or read from the cache)")
    fp, fp_info = _fp_model(config, data, ctx, split_seed)
    sample_labels = torch.arange(10).repeat_interleave(config.samples // 10)
    ctx.stage("kurtosis of the FP model's activations")
    kurt = _kurtosis(fp, data, config)

    results: dict[str, dict[str, Any]] = {}
    losses: dict[str, list[float]] = {}
    timings: dict[str, float] = {}
    models: dict[str, torch.nn.Module] = {}
    plan = [("fp", None), ("robuq_a4", 4), ("naive_a4", 4), ("robuq_a2", 2), ("naive_a2", 2), ("w158_a16", None),
            ("w158_a16_rotated", None)]
    if config.controls:
        plan += [("hadamard_absmax_a2", 2), ("naive_int_a2", 2)]
    for arm, bits in plan:
        ctx.stage(f"QAT {arm}")
        start = time.perf_counter()
        models[arm], losses[arm] = _qat(arm, fp, bits, data, config, ctx)
        timings[arm] = time.perf_counter() - start
        ctx.stage(f"evaluating {arm}")
        results[arm] = _evaluate(models[arm], data, scorer, config, ctx, sample_labels)
    ctx.stage("AMPN: sensitivity and allocation")
    sens, alloc = _ampn(models["robuq_a4"], data, config, ctx)
    ctx.stage("QAT robuq_ampn_a2")
    start = time.perf_counter()
    models["robuq_ampn_a2"], losses["robuq_ampn_a2"] = _qat("robuq_ampn_a2", fp, alloc.as_dict(), data, config, ctx)
    timings["robuq_ampn_a2"] = time.perf_counter() - start
    ctx.stage("evaluating robuq_ampn_a2")
    results["robuq_ampn_a2"] = _evaluate(models["robuq_ampn_a2"], data, scorer, config, ctx, sample_labels)
    ts = results["fp"]["timesteps"]
    results["fp_start"] = {"eps_mse": float(np.mean(eps_mse(fp, data.x_test, data.y_test, LinearSchedule(), ts,
                                                             generator=ctx.torch_generator("eval_noise"))))}
    ctx.provenance["seconds"] = {"fp_training (when built)": round(float(fp_info["seconds"]), 1),
                                 **{f"qat_{a}": round(v, 1) for a, v in timings.items()}}
    return _outcome(config, results, losses, kurt, sens, alloc, scorer)


def _outcome(config, results, losses, kurt, sens, alloc, scorer) -> Outcome:
    arms = [a for a in ARMS if a in results]
    bits = {"robuq_ampn_a2": alloc.average_bits, "fp": 32.0, "w158_a16": 32.0, "w158_a16_rotated": 32.0}
    metrics: dict[str, dict[str, float]] = {}
    for arm in arms:
        r = results[arm]
        metrics[arm] = {"eps_mse": r["eps_mse"], "class_accuracy": r["class_accuracy"],
                        "frechet_distance": r["frechet_distance"],
                        "act_bits": bits.get(arm, 4.0 if arm.endswith("a4") else 2.0)}
        if arm in losses:
            metrics[arm]["qat_final_loss"] = float(np.mean(losses[arm][-max(1, len(losses[arm]) // 10):]))
    metrics["fp"]["kurtosis_before_h"] = float(np.nanmean(kurt["before"]))
    metrics["fp"]["kurtosis_after_h"] = float(np.nanmean(kurt["after"]))
    metrics["fp_start"] = {"eps_mse": results["fp_start"]["eps_mse"]}
    metrics["real_data"] = {"class_accuracy": scorer.accuracy}

    eps = {a: metrics[a]["eps_mse"] for a in arms}
    acc = {a: metrics[a]["class_accuracy"] for a in arms}
    quantized = [eps[a] for a in arms if a != "fp"]
    removed = excess_removed(eps["robuq_a2"], eps["w158_a16_rotated"], eps["naive_a2"], eps["w158_a16"])
    checks = [
        CHECKS["activation_excess_removed"].measure(
            removed, note=f"RobuQ A2 {eps['robuq_a2']:.4f} over its floor {eps['w158_a16_rotated']:.4f} (W1.58A16, "
                          f"W.D.H); naive A2 {eps['naive_a2']:.4f} over {eps['w158_a16']:.4f} (W1.58A16, W)"),
        CHECKS["rotation_weight_effect"].measure(ratio(eps["w158_a16_rotated"], eps["w158_a16"]),
                                                 note=f"{eps['w158_a16_rotated']:.4f} vs {eps['w158_a16']:.4f}"),
        CHECKS["robuq_a2_eps_ratio"].measure(ratio(eps["robuq_a2"], eps["naive_a2"]),
                                             note=f"{eps['robuq_a2']:.4f} vs {eps['naive_a2']:.4f}; best possible "
                                                  f"with exact activations {eps['w158_a16_rotated'] / eps['naive_a2']:.3f}"
                                                  " (W1.58A16 on W.D.H / naive A2)"),
        CHECKS["robuq_a2_accuracy_gain"].measure(gain_points(acc["robuq_a2"], acc["naive_a2"]),
                                                 note=f"{acc['robuq_a2']:.3f} vs {acc['naive_a2']:.3f}; FP "
                                                      f"{acc['fp']:.3f}, real digits {scorer.accuracy:.3f}"),
        CHECKS["ampn_vs_uniform"].measure(ratio(eps["robuq_ampn_a2"], eps["robuq_a2"]),
                                          note=f"{eps['robuq_ampn_a2']:.4f} vs {eps['robuq_a2']:.4f}; "
                                               f"average {alloc.average_bits:.2f} bits"),
        CHECKS["fp_best"].measure(fp_best_ratio(eps["fp"], quantized),
                                  note=f"FP {eps['fp']:.4f}, best quantized {min(quantized):.4f}"),
        CHECKS["robuq_a4_vs_naive"].measure(ratio(eps["robuq_a4"], eps["naive_a4"]),
                                            note=f"{eps['robuq_a4']:.4f} vs {eps['naive_a4']:.4f}"),
    ]
    curves: dict[str, Any] = {
        "eps_by_t": Curve(x=results["fp"]["timesteps"], series={a: results[a]["by_t"] for a in arms},
                          xlabel="timestep t", ylabel="held-out ε-MSE", title="ε-MSE by timestep", logy=True),
        "qat_loss": Curve(x=list(range(0, config.qat_steps, 10)),
                          series={a: losses[a][::10] for a in losses}, xlabel="QAT step",
                          ylabel="training ε loss", title="QAT loss", logy=True),
        "kurtosis": Curve(x=list(range(len(kurt["names"]))), series={"before H": kurt["before"],
                          "after D·H": kurt["after"]}, xlabel="layer", ylabel="mean excess kurtosis",
                          title="per-token excess kurtosis of Linear inputs (FP model)", labels=kurt["names"]),
        "ampn": Curve(x=list(range(len(alloc.names))), series={"bits": list(alloc.bits)},
                      xlabel="layer", ylabel="activation bits", title="AMPN allocation", labels=list(alloc.names),
                      extra={"sensitivity": sens.delta.tolist(), "bit_options": list(sens.bit_options)}),
        "samples": Curve(x=list(range(20 * 64)), series={a: results[a]["samples"].ravel().tolist() for a in arms},
                         xlabel="pixel", ylabel="value", title="two DDIM samples per class, flattened",
                         extra={"shape": [20, 8, 8]}),
    }
    notes = [f"Every arm, full precision included, trains {config.qat_steps} steps from the cached FP model "
             f"(held-out eps-MSE {results['fp_start']['eps_mse']:.4f} before them; arm fp_start).",
             f"AMPN allocation (average {alloc.average_bits:.2f} bits): "
             + ", ".join(f"{n.replace('blocks.', 'b')}={b}" for n, b in alloc.as_dict().items())]
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
