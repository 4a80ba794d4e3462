"""SubspacePath reproduction: scenario masks on a tiny Llama trained on six synthetic skills.

1. Train a tiny ``LlamaForCausalLM`` (128-d, 4 layers × 8 heads, 64-word vocabulary) on the
   six skills of :mod:`~icml26.papers.subspace_path.skills` (plain training by default). With
   ``route_drop > 0`` each skill has a planted ground-truth pathway (2 shared + 2 own heads per
   layer) that skill-routed head dropout makes it rely on, and a ``planted_pathway`` arm keeps it.
2. DBS on mean-pooled layer-0 states of the six skills' input pools selects ``n_axes = 4``
   domains; the other two are out-of-domain (OOD).
3. Fit the method on the selected domains' input pools (probes, importance, whitelist) and
   its ablations (no whitelist, random axes, DBS axes, no multi-domain mixing); fit the
   baselines on the same domains' calibration data (global gradient importance, Wanda-sp),
   random heads per scenario, and the per-domain oracle on every domain.
4. Scenarios: single-domain (selected), OOD (held out) and cross (50/50 pairs of selected
   domains). Each mask is compiled from the first input and applied to ``turns`` further
   examples; exact match under teacher forcing; 30 % and 50 % of heads removed, exact counts.
5. Speed: a random Llama (d = 1024, 16 heads, 8 layers) and SmolLM2-135M with 30 % of heads
   structurally removed against dense, 512 tokens, one thread, median of alternating repeats.
6. Full setting only: the same pipeline on SmolLM2 with stdlib docstrings grouped by package
   as domains (:mod:`~icml26.papers.subspace_path.realtext`).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import torch

from icml26.common.seeding import torch_threads
from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.subspace_path.analysis import fraction_of_dense, gap_points, split_accuracy
from icml26.papers.subspace_path.claims import CHECKS
from icml26.papers.subspace_path.config import Config

__all__ = ["ABLATIONS", "ARMS", "CHECKS", "STREAMS", "Config", "run"]

STREAMS: dict[str, str] = {
    "init": "model initialisation",
    "train": "training batches",
    "pools": "domain pools",
    "scenarios": "scenarios",
    "random_heads": "random-head masks; index = draw",
    "speed": "speed masks",
    "pathways": "planted pathways",
    "probes": "the probe prompts",
    "real_docs": "the real model's documents",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

ARMS = ("SubspacePath", "global_gradient", "wanda_sp", "random", "oracle", "planted_pathway",
        "no_whitelist", "random_axes", "dbs_axes", "no_mixing")
"""Masked arms, the method first (``planted_pathway`` only with ``route_drop > 0``)."""
ABLATIONS = ("no_whitelist", "random_axes", "dbs_axes", "no_mixing")
"""Arms that are the method with one part changed (reported in the ``ablations`` row)."""


@dataclasses.dataclass
class Scenario:
    """One multi-turn scenario: its split, its skills, the first input and the later turns."""

    split: str
    skills: tuple[str, ...]
    first: Any
    turns: Any


def _layer0_embeddings(model, prompts) -> torch.Tensor:
    """Mean-pooled layer-0 states (the embedding output) of ``prompts``: ``(N, d)``."""
    with torch.no_grad():
        emb = model.get_input_embeddings()(prompts.input_ids.to(next(model.parameters()).device)).float().cpu()
    mask = prompts.attention_mask.unsqueeze(-1).float()
    return (emb * mask).sum(1) / mask.sum(1)


def _fit_arms(model, cfg: Config, selected, pools, pathways, ctx: RunContext) -> tuple[dict, dict]:
    """The method, its ablations and the baselines, fitted (masks come from their ``compile``)."""
    from icml26.papers.subspace_path import (
        DomainOraclePruner,
        GlobalGradientPruner,
        SubspacePathPruner,
        WandaSPPruner,
    )

    inputs = {s: pools[s].prompts() for s in selected}
    calibration = {s: pools[s].calibration() for s in selected}
    common = dict(alpha=cfg.whitelist_alpha, whitelist_max_fraction=cfg.whitelist_max_fraction,
                  whitelist_share=cfg.whitelist_share or None, probe_epochs=cfg.probe_epochs,
                  seed=ctx.seed_for("probes"))
    ctx.stage("fit SubspacePath and its ablations")
    fitted = {
        "SubspacePath": SubspacePathPruner(model, **common).fit(inputs),
        "no_whitelist": SubspacePathPruner(model, use_whitelist=False, **common).fit(inputs),
        "random_axes": SubspacePathPruner(model, axes="random", **common).fit(inputs),
        "dbs_axes": SubspacePathPruner(model, axes="dbs", **common).fit(inputs),
        "no_mixing": SubspacePathPruner(model, use_multi_domain_mixing=False, **common).fit(inputs),
    }
    ctx.stage("fit the baselines")
    fitted["global_gradient"] = GlobalGradientPruner(model).fit(calibration)
    fitted["wanda_sp"] = WandaSPPruner(model).fit(calibration)
    fitted["oracle"] = DomainOraclePruner(model).fit({s: p.calibration() for s, p in pools.items()})
    info = {"whitelist": int(fitted["SubspacePath"].whitelist.count),
            "whitelist_random_axes": int(fitted["random_axes"].whitelist.count),
            "temperature_mean": float(fitted["SubspacePath"].probes.temperature.mean())}
    return fitted, info


def _mask(arm: str, fitted: dict, scenario: Scenario, ratio: float, index: int, pathways, model, ctx: RunContext):
    from icml26.papers.subspace_path import RandomPruner, select_heads

    if arm == "random":
        return RandomPruner(model, seed=ctx.seed_for("random_heads", index)).fit().compile(target_prune_ratio=ratio)
    if arm == "oracle":
        return fitted["oracle"].compile(target_prune_ratio=ratio, domains=list(scenario.skills))
    if arm == "planted_pathway":
        truth = torch.stack([pathways[s] for s in scenario.skills]).any(dim=0).float()
        jitter = torch.rand(truth.shape, generator=ctx.torch_generator("random_heads", 10_000 + index))
        return select_heads(truth + 1e-3 * jitter, target_prune_ratio=ratio)
    if arm in ("global_gradient", "wanda_sp"):
        return fitted[arm].compile(target_prune_ratio=ratio)
    return fitted[arm].compile(scenario.first.prompts(), target_prune_ratio=ratio)


def _scenarios(cfg: Config, selected, held_out, ctx: RunContext) -> list[Scenario]:
    from icml26.papers.subspace_path.skills import make_skill_set

    rng = ctx.rng("scenarios")
    plan = [("selected", (s,)) for s in selected for _ in range(cfg.scenarios_per_domain)]
    plan += [("ood", (s,)) for s in held_out for _ in range(cfg.scenarios_per_domain)]
    plan += [("cross", pair) for pair in itertools.combinations(selected, 2) for _ in range(cfg.scenarios_per_pair)]
    return [Scenario(split, skills, make_skill_set(list(skills), len(skills), rng),
                     make_skill_set(list(skills), cfg.turns, rng)) for split, skills in plan]


def _synthetic(cfg: Config, ctx: RunContext) -> tuple[dict, list, dict, list[str]]:
    """Sections 1–4: train, select, fit, evaluate. Returns metrics, checks, curves, notes."""
    from icml26.common.tiny_lm import TinyLMConfig, build_model
    from icml26.papers.subspace_path import mask_heads, synthesize_basis
    from icml26.papers.subspace_path.skills import (
        SKILLS,
        VOCAB_SIZE,
        exact_match,
        make_skill_set,
        planted_pathways,
        train_skills,
    )

    ctx.stage("train the tiny Llama on six skills")
    model = build_model(TinyLMConfig(arch="llama", vocab_size=VOCAB_SIZE, d_model=cfg.d_model, n_layers=cfg.n_layers,
                                     n_heads=cfg.n_heads, context=32), seed=ctx.seed_for("init")).to(ctx.device)
    pathways = planted_pathways(SKILLS, cfg.n_layers, cfg.n_heads, shared=cfg.pathway_shared,
                                per_skill=cfg.pathway_per_skill, seed=ctx.seed_for("pathways"))
    log = train_skills(model, SKILLS, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, rng=ctx.rng("train"),
                       pathways=pathways if cfg.route_drop > 0 else None, route_drop=cfg.route_drop,
                       progress=ctx.progress)
    model.eval()
    pool_rng = ctx.rng("pools")
    pools = {s: make_skill_set(s, cfg.pool_size, pool_rng) for s in SKILLS}

    ctx.stage("DBS: select the domain basis")
    basis = synthesize_basis({s: _layer0_embeddings(model, pools[s].prompts()) for s in SKILLS}, cfg.n_axes,
                             cfg.coverage_weight)
    selected = list(basis.names)
    held_out = [s for s in SKILLS if s not in selected]
    fitted, info = _fit_arms(model, cfg, selected, pools, pathways, ctx)
    arms = [a for a in ARMS if a != "planted_pathway" or cfg.route_drop > 0]

    ctx.stage("evaluate the scenarios")
    scenarios = _scenarios(cfg, selected, held_out, ctx)
    splits = [sc.split for sc in scenarios]
    dense = [float(exact_match(model, sc.turns).float().mean()) for sc in scenarios]
    acc = {(a, r): [] for a in arms for r in cfg.prune_ratios}
    recall = {(a, r): [] for a in arms for r in cfg.prune_ratios}
    agreement = {(a, r): [] for a in arms for r in cfg.prune_ratios}
    for i, sc in enumerate(ctx.progress(scenarios, desc="scenarios")):
        truth = torch.stack([pathways[s] for s in sc.skills]).any(dim=0)
        for r in cfg.prune_ratios:
            masks = {arm: _mask(arm, fitted, sc, r, i, pathways, model, ctx) for arm in arms}
            for arm, keep in masks.items():
                with mask_heads(model, keep):
                    acc[(arm, r)].append(float(exact_match(model, sc.turns).float().mean()))
                recall[(arm, r)].append(float((keep & truth).sum()) / float(truth.sum()))
                agreement[(arm, r)].append(float((keep == masks["SubspacePath"]).float().mean()))

    dense_split = split_accuracy(dense, splits)
    metrics: dict[str, dict[str, float]] = {}
    rows: dict[str, dict[str, float]] = {}
    for arm in arms:
        row = {}
        for r in cfg.prune_ratios:
            for split, v in split_accuracy(acc[(arm, r)], splits).items():
                row[f"{split}_{round(100 * r)}"] = v
            if cfg.route_drop > 0:
                sel_recall = [x for x, s in zip(recall[(arm, r)], splits) if s == "selected"]
                row[f"pathway_recall_{round(100 * r)}"] = float(np.mean(sel_recall))
            row[f"agreement_with_method_{round(100 * r)}"] = float(np.mean(agreement[(arm, r)]))
        rows[arm] = row
    # the method, then the baselines; the ablations of the method share one row (an ablation may
    # coincide with the method, e.g. when the whitelist holds no head the budget would drop)
    for arm in arms:
        if arm not in ABLATIONS:
            metrics[arm] = rows[arm]
    metrics["ablations"] = {f"{arm}_{name}": v for arm in ABLATIONS for name, v in rows[arm].items()}
    metrics["dense"] = dict(dense_split)
    metrics["setup"] = {"train_loss": log.final_loss,
                        "dbs_separation": basis.separation, "dbs_coverage": basis.coverage, **info}

    checks = []
    curves = {f"exact_match_{split}": Curve(
        x=[0.0] + [100 * r for r in cfg.prune_ratios],
        series={arm: [dense_split[split]] + [rows[arm][f"{split}_{round(100 * r)}"] for r in cfg.prune_ratios]
                for arm in arms},
        xlabel="heads removed (%)", ylabel="exact match", title=f"{split} scenarios")
        for split in dense_split}
    notes = [f"DBS selected {selected} (separation {basis.separation:.2f}, coverage {basis.coverage:.2f}); "
             f"OOD: {held_out}. Whitelist: {info['whitelist']} heads of {cfg.n_layers * cfg.n_heads}.",
             "Dense exact match per split: " + ", ".join(f"{k} {v:.3f}" for k, v in dense_split.items())
             + f"; the tiny Llama trained {cfg.steps} steps in {log.seconds:.0f} s to loss {log.final_loss:.3f}."]
    if 0.5 in cfg.prune_ratios:
        m50 = {a: rows[a]["selected_50"] for a in arms}
        checks.append(CHECKS["selected_gap_50"].measure(gap_points(m50["SubspacePath"], m50["global_gradient"])))
        checks.append(CHECKS["no_whitelist_loss_50"].measure(gap_points(m50["SubspacePath"], m50["no_whitelist"])))
        checks.append(CHECKS["random_axes_loss_50"].measure(gap_points(m50["SubspacePath"], m50["random_axes"])))
        notes.append(f"Headroom at 50 % (selected): per-domain oracle − global gradient = "
                     f"{gap_points(m50['oracle'], m50['global_gradient']):+.1f} points"
                     + (f", planted pathway − global gradient = "
                        f"{gap_points(m50['planted_pathway'], m50['global_gradient']):+.1f} points"
                        if "planted_pathway" in m50 else "") + ".")
    if 0.3 in cfg.prune_ratios:
        checks.append(CHECKS["dense_fraction_30"].measure(
            fraction_of_dense(rows["SubspacePath"]["selected_30"], dense_split["selected"])))
    del model
    return metrics, checks, curves, notes


def _speed(cfg: Config, ctx: RunContext) -> tuple[dict, list, list[str]]:
    """Section 5: the two speed measurements."""
    from icml26.common.extras import extra_installed
    from icml26.papers.subspace_path import select_heads
    from icml26.papers.subspace_path.speed import group_mask, random_llama, time_pruning

    metrics, checks, notes = {}, [], []
    gen = ctx.torch_generator("speed")
    if cfg.speed:
        ctx.stage("speed: random Llama d=1024")
        model = random_llama(seed=ctx.seed_for("speed")).to(ctx.device)
        keep = select_heads(torch.rand(8, 16, generator=gen), target_prune_ratio=cfg.speed_ratio)
        ids = torch.randint(0, 1024, (1, cfg.speed_tokens), generator=gen).to(ctx.device)
        res = time_pruning("random_llama", model, keep, ids, repeats=cfg.speed_repeats)
        metrics["speed_random_llama"] = res.metrics()
        checks.append(CHECKS["speedup_random_llama"].measure(res.speedup))
        del model
    if cfg.smollm2_speed and extra_installed("pretrained"):
        from icml26.common.pretrained import load_pretrained_lm

        ctx.stage("speed: SmolLM2-135M")
        lm = load_pretrained_lm(ctx.device)
        layouts = len(lm.model.model.layers), lm.model.config.num_attention_heads
        ids = torch.randint(0, lm.model.config.vocab_size, (1, cfg.speed_tokens), generator=gen).to(ctx.device)
        keep = select_heads(torch.rand(*layouts, generator=gen), target_prune_ratio=cfg.speed_ratio)
        res = time_pruning("smollm2", lm.model, keep, ids, repeats=cfg.speed_repeats)
        metrics["speed_smollm2"] = res.metrics()
        checks.append(CHECKS["speedup_smollm2"].measure(
            res.speedup, note=f"{res.heads_removed} of {res.heads_total} heads at random (the method's masks are not "
                              f"group-aligned): key/value heads {res.kv_heads_dense} -> {res.kv_heads_pruned}"))
        grouped = time_pruning("smollm2_groups", lm.model, group_mask(lm.model, cfg.speed_ratio, gen), ids,
                               repeats=cfg.speed_repeats)
        metrics["speed_smollm2_whole_groups"] = grouped.metrics()
        notes.append(f"SmolLM2 speed-up with 30 % of heads removed: {res.speedup:.3f}x for a random head mask "
                     f"(key/value rows duplicated where groups are split), {grouped.speedup:.3f}x when whole GQA "
                     f"groups go; the paper reports 1.27x on LLaMA-2-13B.")
        del lm
    elif cfg.smollm2_speed:
        notes.append("SmolLM2 speed not measured: the pretrained extra is not installed.")
    return metrics, checks, notes


def run(config: Config, ctx: RunContext) -> Outcome:
    with torch_threads(min(torch.get_num_threads(), config.small_model_threads)):
        metrics, checks, curves, notes = _synthetic(config, ctx)
    # one thread for the timings: on a shared machine, other processes then slow both models alike
    # instead of turning the measurement into one of thread synchronisation
    with torch_threads(1):
        speed_metrics, speed_checks, speed_notes = _speed(config, ctx)
    metrics.update(speed_metrics)
    checks += speed_checks
    notes += speed_notes
    if config.smollm2_section:
        from icml26.papers.subspace_path.realtext import smollm2_section

        real_metrics, real_notes = smollm2_section(config, ctx)
        metrics.update(real_metrics)
        notes += real_notes
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
