"""Fox reproduction: a tiny LLaVA trained on ShapeScenes with a planted co-occurrence prior.

1. Train a real ``LlavaForConditionalGeneration`` (CLIP 64-d × 2, patch 8 → 16 image tokens; Llama
   128-d, 4 layers, 8 heads) on captions and yes/no questions of ShapeScenes, where an anchor shape
   A comes with its partner B with P(B|A) = 0.85 and 20 % of objects are faint (cached per seed).
2. Caption 300 adversarial images (A present, B absent) greedily with every arm — vanilla, VCD, SID,
   PAI and Fox, each a ``generate(model, inputs, config)`` plug-in — and score CHAIR_I, CHAIR_S and
   recall.
3. POPE (random / popular / adversarial negatives, as POPE draws them) on the same images, one
   token per question, F1 with "yes" positive.
4. Mechanism: on "is there a B ?" for the adversarial images, ablate every head of the probed layers
   in turn; precision@k of Fox's probe against the k heads whose ablation lowers p(yes) most
   (chance k/H). Also the AUC of the probe's score at hallucinated vs correct object words.
5. The pathway Fox targets (:mod:`.pathway`): the drop of p(yes | absent B) when Fox's saturation hits
   each head, each layer, Fox's probed heads and k random heads of the same layers; and, along vanilla's
   captions, whether the two streams disagree at the hallucinated mentions. With ``testbed="pathology"``
   these are the preconditions that gate the CHAIR check, and POPE-random accuracy gates the POPE one.

One master seed is one replicate: it seeds the training, the evaluation images and the POPE draws.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np


from icml26.common.metrics import binary_auc
from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.fox.analysis import chair, relative_reduction
from icml26.papers.fox.baselines import (
    PAIConfig,
    SIDConfig,
    VCDConfig,
    pai_generate,
    sid_generate,
    vanilla_generate,
    vcd_generate,
)
from icml26.papers.fox.claims import CHECKS
from icml26.papers.fox.config import ARMS, Config
from icml26.papers.fox.decoding import DecodingConfig, FoxConfig, default_fox_layers, fox_generate
from icml26.papers.fox.evaluation import caption_run, hallucination_scores, mechanism, pope_run
from icml26.papers.fox.figures import plot
from icml26.papers.fox.model import TinyVLMConfig
from icml26.papers.fox.pathway import saturation_effects, stream_disagreement
from icml26.papers.fox.scenes import (
    SHAPES,
    SceneConfig,
    pope_questions,
    render_scenes,
    sample_adversarial_scenes,
    sample_scenes,
)
from icml26.papers.fox.training import TrainConfig, trained_tiny_llava

__all__ = ["ARMS", "CHECKS", "Config", "STREAMS", "plot", "run"]

STREAMS: dict[str, str] = {
    "model": "the tiny LLaVA's training seed",
    "eval_scenes": "the evaluation scenes",
    "pope": "the POPE questions; index = kind",
    "pope_stats": "the scenes POPE's frequency and co-occurrence statistics count",
    "vcd_noise": "VCD's image noise",
    "sampling": "the sampled decoding",
    "random_heads": "the random heads saturated beside the probe's (its chance baseline)",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""


def _plugins(config: Config, seed_vcd: int) -> dict[str, tuple[Any, Any]]:
    """Each arm's ``(generate, config)``: all greedy, same token budget."""
    common = dict(max_new_tokens=config.max_new_tokens)
    fox_layers = config.fox_layers or None
    table = {
        "Fox": (fox_generate, FoxConfig(layers=fox_layers, rho=config.rho, **common)),
        "vanilla": (vanilla_generate, DecodingConfig(**common)),
        "VCD": (vcd_generate, VCDConfig(noise_step=config.vcd_noise_step, noise_seed=seed_vcd, **common)),
        "SID": (sid_generate, SIDConfig(**common)),
        "PAI": (pai_generate, PAIConfig(**common)),
        "Fox all layers": (fox_generate, FoxConfig(layers=tuple(range(config.decoder_layers)), rho=config.rho,
                                                   **common)),
    }
    return {arm: table[arm] for arm in config.arms}


def _pope_stats(scenes) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """Object frequency and co-occurrence counts of the training distribution (POPE's popular/adversarial)."""
    frequency = {s: 0.0 for s in SHAPES}
    cooccurrence: dict[tuple[str, str], float] = {}
    for scene in scenes:
        for a in scene.shapes:
            frequency[a] += 1
            for b in scene.shapes:
                if a != b:
                    cooccurrence[(a, b)] = cooccurrence.get((a, b), 0.0) + 1
    return frequency, cooccurrence


def _pathway(config, ctx, model, vocab, scenes, images, vanilla_captions, truths, fox_config, layers, n_img,
             fox: dict[str, float], curves: dict[str, Any], notes: list[str]) -> list:
    """The pathway Fox targets (:mod:`.pathway`): saturation effects and stream disagreement into ``fox``'s
    metrics, ``curves`` and ``notes``; the precondition checks of the CHAIR check."""
    ctx.stage("fox: saturation effects and stream disagreement (the pathway)")
    sat = saturation_effects(model, vocab, scenes, images, fox_layers=layers, rho=config.rho, n_image_tokens=n_img,
                             device=ctx.device, rng=ctx.rng("random_heads"))
    dis = stream_disagreement(model, vocab, vanilla_captions, truths, images, fox_config, n_image_tokens=n_img,
                              device=ctx.device)
    fox.update(sat_fox_drop=sat.fox_drop, sat_random_drop=sat.random_drop, sat_probe_gain=sat.probe_gain,
               sat_max_head=float(sat.head_saturation.max()), abl_max_head=float(sat.head_ablation.max()),
               sat_fox_layers_all_heads=sat.layer_sets["Fox's layers"], sat_all_layers=sat.layer_sets["all layers"],
               disagree_hallucinated=dis.disagree_hallucinated, disagree_correct=dis.disagree_correct,
               js_hallucinated=dis.js_hallucinated)
    for layer in range(sat.head_saturation.shape[0]):
        curves[f"saturation_layer{layer}"] = Curve(
            x=list(range(sat.head_saturation.shape[1])),
            series={"saturation drop of p(yes|B)": sat.head_saturation[layer].tolist(),
                    "ablation drop of p(yes|B)": sat.head_ablation[layer].tolist(),
                    "probe selection rate": sat.probe_selected[layer].tolist()},
            xlabel="head", ylabel="value", title=f"fox: layer {layer} heads, saturation vs ablation")
    top = np.unravel_index(np.argmax(sat.head_saturation), sat.head_saturation.shape)
    notes.append(
        f"Saturation effects on p(yes | absent B) (vanilla {sat.p_yes:.3f}, {sat.n_samples} images): Fox's stream "
        f"(probe's heads in layers {list(sat.fox_layers)}) {sat.fox_drop:+.3f}, k random heads of those layers "
        f"{sat.random_drop:+.3f} (probe minus random {sat.probe_gain:+.3f}); largest single head L{top[0]}H{top[1]} "
        f"{sat.head_saturation[top]:+.3f} (ablating it {sat.head_ablation[top]:+.3f}; largest ablation "
        f"{sat.head_ablation.max():+.3f}); layer sets: " + ", ".join(f"{k} {v:+.3f}" for k, v in sat.layer_sets.items())
        + f". The pathway Fox targets {'exists' if sat.pathway_exists else 'does not exist'} in this model: "
        f"Fox's saturation lowers p(yes | absent) by {sat.fox_drop:.3f} ({'>=' if sat.pathway_exists else '<'} 0.05).")
    notes.append(f"Streams along vanilla's captions: Fox's interventional argmax differs at "
                 f"{dis.disagree_hallucinated:.3f} of {dis.n_hallucinated} hallucinated mentions and "
                 f"{dis.disagree_correct:.3f} of {dis.n_correct} correct ones (JS {dis.js_hallucinated:.4f} / "
                 f"{dis.js_correct:.4f} nats).")
    return [CHECKS["streams_disagree_hallucinated"].measure(
                dis.disagree_hallucinated, note=f"{dis.n_hallucinated} hallucinated mentions; correct ones "
                                                f"{dis.disagree_correct:.3f}"),
            CHECKS["probe_saturation_over_random"].measure(
                sat.probe_gain, note=f"probe {sat.fox_drop:+.3f}, random {sat.random_drop:+.3f} "
                                     f"({sat.n_samples} images)")]


def run(config: Config, ctx: RunContext) -> Outcome:
    model_config = TinyVLMConfig(hidden=config.decoder_width, layers=config.decoder_layers,
                                 intermediate=2 * config.decoder_width, text_layers=config.text_layers or None,
                                 logit_cap=config.logit_cap or None, cap_layers=config.cap_layers or None)
    scene_config = SceneConfig(p_partner=config.p_partner, faint_fraction=config.faint_fraction)
    train_config = TrainConfig(steps=config.train_steps, batch_size=config.batch_size, lr=config.lr,
                               n_scenes=config.n_train_scenes, caption_fraction=config.caption_fraction,
                               vision_pretrain_steps=config.vision_pretrain_steps,
                               stop_pope_accuracy=config.pope_target_accuracy, check_every=config.pope_check_every,
                               check_on=config.pope_check_on, check_scenes=config.pope_check_scenes)
    ctx.stage("fox: training (or loading) the tiny LLaVA")
    start = time.perf_counter()
    trained = trained_tiny_llava(model_config, scene_config, train_config, seed=ctx.seed_for("model"),
                                 device=ctx.device, show_progress=ctx.show_progress)
    ctx.provenance.update(model_cache_key=trained.cache_key, model_weights_sha256=trained.weights_sha256,
                          train_seconds=round(trained.log["seconds"][0], 1),
                          load_seconds=round(time.perf_counter() - start, 1),
                          steps_trained=int(trained.log.get("steps_trained", [config.train_steps])[0]))
    model, vocab = trained.model, trained.vocab
    n_img = model_config.n_image_tokens

    scenes = sample_adversarial_scenes(config.n_eval, ctx.rng("eval_scenes"), scene_config)
    images = render_scenes(scenes, scene_config, size=model_config.image_size)
    truths = [scene.shapes for scene in scenes]
    frequency, cooccurrence = _pope_stats(sample_scenes(4000, ctx.rng("pope_stats"), scene_config))
    questions = {kind: pope_questions(scenes, kind, ctx.rng("pope", i), frequency, cooccurrence)
                 for i, kind in enumerate(("random", "popular", "adversarial"))}

    metrics: dict[str, dict[str, float]] = {}
    captions: dict[str, list[list[str]]] = {}
    seconds: dict[str, float] = {}
    plugins = _plugins(config, ctx.seed_for("vcd_noise") % 2**31)
    common_tokens = dict(max_new_tokens=config.max_new_tokens)
    for arm, (generate, plugin_config) in plugins.items():
        ctx.stage(f"fox: captioning and POPE with {arm}")
        t0 = time.perf_counter()
        caps = caption_run(model, vocab, images, generate, plugin_config, n_image_tokens=n_img, device=ctx.device)
        scores = chair(caps.mentions, truths)
        pope_config = dataclasses.replace(plugin_config, max_new_tokens=1)
        row = {"chair_i": scores.chair_i, "chair_s": scores.chair_s, "recall": scores.recall,
               "mentions_per_caption": scores.mentions / scores.captions}
        for kind, qs in questions.items():
            pope = pope_run(model, vocab, images, qs, generate, pope_config, n_image_tokens=n_img, device=ctx.device)
            row[f"pope_{kind}_f1"] = pope["f1"]
            if kind == "random":
                row["pope_random_accuracy"] = pope["accuracy"]
            if kind == "adversarial":
                row.update(pope_adversarial_accuracy=pope["accuracy"], pope_adversarial_yes_ratio=pope["yes_ratio"])
        row["mean_stream_js"] = caps.mean_js
        metrics[arm] = row
        captions[arm] = caps.captions
        seconds[arm] = time.perf_counter() - t0
    ctx.provenance["arm_seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    for arm in metrics:
        metrics[arm]["same_captions_as_vanilla"] = float(np.mean(
            [a == b for a, b in zip(captions[arm], captions["vanilla"])]))

    fox, vanilla = metrics["Fox"], metrics["vanilla"]
    pathology = config.testbed == "pathology"  # the gated checks replace the ungated CHAIR, POPE and probe ones
    ratio = fox["chair_i"] / vanilla["chair_i"] if vanilla["chair_i"] else math.nan
    gain = fox["pope_adversarial_f1"] - vanilla["pope_adversarial_f1"]
    checks = [
        CHECKS["vanilla_chair_i"].measure(vanilla["chair_i"], note=f"{len(scenes)} captions"),
        CHECKS["pathology_chair_i_ratio" if pathology else "fox_chair_i_ratio"].measure(
            ratio, note=f"Fox {fox['chair_i']:.3f} vs vanilla {vanilla['chair_i']:.3f}"),
        CHECKS["recall_drop"].measure(vanilla["recall"] - fox["recall"],
                                      note=f"vanilla {vanilla['recall']:.3f}, Fox {fox['recall']:.3f}"),
        CHECKS["pathology_pope_f1_gain" if pathology else "pope_f1_gain"].measure(
            gain, note=f"Fox {fox['pope_adversarial_f1']:.3f}, vanilla {vanilla['pope_adversarial_f1']:.3f}"),
    ]
    checks.append(CHECKS["pope_random_accuracy"].measure(
        vanilla["pope_random_accuracy"], note=f"{len(questions['random'])} questions; trained "
                                              f"{ctx.provenance['steps_trained']} steps"))
    if "SID" in metrics:
        checks.append(CHECKS["fox_minus_sid_chair_s"].measure(
            fox["chair_s"] - metrics["SID"]["chair_s"],
            note=f"Fox {fox['chair_s']:.3f}, SID {metrics['SID']['chair_s']:.3f}; the paper's "
                 f"'29.1 % over SID' at 7B: here {100 * relative_reduction(fox['chair_s'], metrics['SID']['chair_s']):.1f} %"))

    curves: dict[str, Any] = {
        "train_loss": Curve(x=[i * trained.log["every"][0] for i in range(len(trained.log["loss"]))],
                            series={"tiny LLaVA": trained.log["loss"]}, xlabel="step",
                            ylabel="training loss (nats/token)", title="fox: tiny LLaVA training loss"),
        "arms": Curve(x=list(metrics), series={m: [metrics[a][m] for a in metrics]
                                               for m in ("chair_i", "chair_s", "recall", "pope_adversarial_f1")},
                      xlabel="arm", ylabel="value", title="fox: hallucination and recall by arm"),
    }
    notes = [f"Captions (first 3 images; truth: {', '.join(' '.join(t) for t in truths[:3])}): " + "; ".join(
        f"{arm}: " + " | ".join(" ".join(c) for c in caps[:3]) for arm, caps in captions.items())]

    if config.sampling:
        ctx.stage("fox: sampled captions")
        seed = ctx.seed_for("sampling") % 2**31
        sampled = {"vanilla sampled": (vanilla_generate, DecodingConfig(do_sample=True, seed=seed, **common_tokens)),
                   "Fox sampled": (fox_generate, dataclasses.replace(plugins["Fox"][1], do_sample=True, seed=seed)),
                   "vanilla sampled T=1/3": (vanilla_generate, DecodingConfig(do_sample=True, temperature=1 / 3,
                                                                              seed=seed, **common_tokens))}
        for arm, (generate, plugin_config) in sampled.items():
            caps = caption_run(model, vocab, images, generate, plugin_config, n_image_tokens=n_img, device=ctx.device)
            scores = chair(caps.mentions, truths)
            metrics[arm] = {"chair_i": scores.chair_i, "chair_s": scores.chair_s, "recall": scores.recall}
        notes.append("Sampled (top-p 0.9): " + "; ".join(
            f"{a} CHAIR_I {metrics[a]['chair_i']:.3f}, recall {metrics[a]['recall']:.3f}" for a in sampled)
            + ". With agreeing streams Fox's fusion is z = 3·l, a temperature of 1/3: the T = 1/3 row is its control.")

    if config.mechanism:
        ctx.stage("fox: head ablations (mechanism)")
        layers = list(config.fox_layers or default_fox_layers(config.decoder_layers))
        mech = mechanism(model, vocab, scenes, images, layers=layers, rho=config.rho, n_heads=model_config.heads,
                         n_image_tokens=n_img, device=ctx.device)
        every = list(range(config.decoder_layers))
        mech_all = mechanism(model, vocab, scenes, images, layers=every, rho=config.rho,
                             n_heads=model_config.heads, n_image_tokens=n_img, device=ctx.device)
        checks += _pathway(config, ctx, model, vocab, scenes, images, captions["vanilla"], truths, plugins["Fox"][1],
                           layers, n_img, fox, curves, notes)
        fox.update(probe_precision_at_k=mech.precision, probe_chance=mech.chance,
                   probe_precision_all_layers=mech_all.precision, mech_p_yes_partner=mech.p_yes)
        for j, layer in enumerate(every):
            curves[f"heads_layer{layer}"] = Curve(
                x=list(range(model_config.heads)),
                series={"ablation drop of p(yes|B)": mech_all.head_effect[j].tolist(),
                        "probe selection rate": mech_all.head_selected[j].tolist()},
                xlabel="head", ylabel="value", title=f"fox: layer {layer} heads, ablation vs probe")
        top = np.unravel_index(np.argmax(mech_all.head_effect), mech_all.head_effect.shape)
        notes.append(f"Prior carriers: ablating layer {top[0]} head {top[1]} on the last row of 'is there a B ?' lowers "
                     f"p(yes) by {mech_all.head_effect[top]:.3f} on average (vanilla p(yes) {mech.p_yes:.3f}); the "
                     f"probe selects that head in {100 * mech_all.head_selected[top]:.0f} % of images when layer "
                     f"{top[0]} is probed. Fox's layers {layers}: largest ablation effect "
                     f"{mech.head_effect.max():.3f}.")
        record_config = dataclasses.replace(plugins["Fox"][1], record=True)
        run_rec = caption_run(model, vocab, images, fox_generate, record_config, n_image_tokens=n_img,
                              device=ctx.device, batch=len(images))
        bad, good = hallucination_scores(run_rec, scenes, vocab)
        if bad and good:
            fox["probe_auc_hallucinated"] = binary_auc(bad, good)
            notes.append(f"Probe score (mean over the selected heads) on the row predicting an object word: AUC "
                         f"{fox['probe_auc_hallucinated']:.3f} for hallucinated ({len(bad)}) vs correct ({len(good)}) "
                         "objects in Fox's captions (brief's sanity bar: > 0.6; not a check).")

    for arm, row in metrics.items():
        if arm != "Fox" and "pope_adversarial_f1" in row:
            notes.append(f"{arm}: CHAIR_I {row['chair_i']:.3f}, CHAIR_S {row['chair_s']:.3f}, recall "
                         f"{row['recall']:.3f}, POPE-adv F1 {row['pope_adversarial_f1']:.3f}.")
    notes.append(f"Fox: CHAIR_I {fox['chair_i']:.3f} ({100 * relative_reduction(fox['chair_i'], vanilla['chair_i']):.1f} % "
                 f"below vanilla; {100 * fox['same_captions_as_vanilla']:.0f} % of its captions are vanilla's), "
                 f"CHAIR_S {fox['chair_s']:.3f}, recall {fox['recall']:.3f}, POPE-adv F1 "
                 f"{fox['pope_adversarial_f1']:.3f}; mean JS between its streams {fox['mean_stream_js']:.4f} nats "
                 f"(JS < 0.15 gives w = 2).")
    notes.append("Wall time per arm (captions + 3 POPE sets): " + ", ".join(
        f"{a} {s:.1f} s" for a, s in seconds.items()) + ".")
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
