"""Reproduction of zs_expand (our interpretation) on a synthetic granularity benchmark.

1. **Synthetic benchmark**: 6 superclasses x 8 fine classes; causal attributes in a
   coarse and a fine block, rendered as words in three description sources x 6 nuisance
   sentences and embedded by all-MiniLM-L6-v2; features ``x = ReLU(A_c R1) R2 + eps`` from the
   causal attributes only; a multinomial logistic head on 30 seen classes; 18 unseen classes
   (10 "similar" siblings of seen classes, 8 "distinct" from a held-out superclass). Every arm gets
   the same views, the same seen rows ``[W | b]`` and ``all_semantics`` (equal information) and
   synthesises the unseen rows ``[w | b]``. Every arm is selected by the shared tuner with the same
   budget (``ARMS`` in claims.py: 8 configurations each) on the same validation task: the seen classes
   split into ``tune_folds`` class folds, each fold held out in turn as pseudo-unseen classes whose rows
   are synthesised from the others and scored by ZSL accuracy on their *training* images (no unseen or
   test data). Metrics: ZSL per-class accuracy (all, similar,
   distinct), GZSL S/U/H with the injected head, the variance of the synthesised weights across
   nuisance interventions, the discovered group count and its ARI with the superclasses, and the
   ceiling (a head trained on the unseen classes' own images).
2. **Real sanity section** (report only, :mod:`~icml26.papers.zs_expand.real`): Animal-MNIST plus
   upsampled digits, a tiny CNN on 14 seen classes, 6 unseen.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any

import numpy as np
import torch

from icml26.contract import Curve, Outcome, RunContext
from icml26.papers.zs_expand.analysis import intervention_variance, per_class_accuracy, ratio, restricted_predictions
from icml26.papers.zs_expand.baselines import ICISExpander, SharedMLPExpander, WAvgExpander
from icml26.papers.zs_expand.claims import ARMS as ARM_SPECS
from icml26.papers.zs_expand.claims import CHECKS
from icml26.papers.zs_expand.config import Config
from icml26.papers.zs_expand.data import granularity_benchmark
from icml26.papers.zs_expand.figures import plot
from icml26.papers.zs_expand.scoring import score_rows
from icml26.papers.zs_expand.semantics import encode_descriptions
from icml26.papers.zs_expand.structure import GroupClusterer
from icml26.papers.zs_expand.synthesis import ClassifierExpander

__all__ = ["ARMS", "CHECKS", "ArmScores", "Config", "class_folds", "fold_score", "STREAMS", "plot", "run", "score_rows"]

STREAMS: dict[str, str] = {
    "benchmark": "the granularity benchmark's draw",
    "head": "the seen classes' logistic heads",
    "mlp_init": "the shared-MLP baseline's initialisation",
    "icis_init": "ICIS's initialisation",
    "tune_folds": "the class folds of the shared tuning",
    "rounds": "the order in which the unseen classes arrive over the expansion rounds",
    "real_split": "the real section's split",
    "real_cnn": "the real section's CNN",
}
"""Named random streams (name -> what it draws; ``RunContext.rng``): the name is part of each
stream's entropy, so no two names share one. ``tune:<arm id>`` belongs to the shared tuner."""

log = logging.getLogger(__name__)


METHOD_ARM = "zs_expand"
ARMS = (METHOD_ARM, "zs_expand_no_invariance", "zs_expand_no_refiner", "zs_expand_oracle_groups", "shared_mlp",
        "icis", "ridge", "wavg")
"""The synthesising arms: the method, three controls of its mechanism, the four baselines."""


@dataclasses.dataclass
class ArmScores:
    """One arm's figures on one benchmark draw (accuracies as fractions)."""

    zsl: float
    zsl_similar: float
    zsl_distinct: float
    gzsl_seen: float
    gzsl_unseen: float
    gzsl_h: float
    variance: float
    per_class: list[float]


def _logistic_rows(x: np.ndarray, y: np.ndarray, classes: np.ndarray, c: float, seed: int) -> np.ndarray:
    """``[W | b]`` ``(len(classes), D+1)`` of a multinomial logistic regression on the given classes."""
    from sklearn.linear_model import LogisticRegression

    mask = np.isin(y, classes)
    model = LogisticRegression(C=c, max_iter=3000, random_state=seed).fit(x[mask], y[mask])
    order = np.searchsorted(model.classes_, classes)
    return np.hstack([model.coef_, model.intercept_[:, None]])[order]


def _builders(config: Config, ctx: RunContext, true_groups: np.ndarray) -> dict[str, Any]:
    """``arm -> build(params) -> expander``: ``params`` overrides the arm's config settings (the tuner's point)."""
    clusterer = GroupClusterer(method=config.cluster_method, criterion=config.criterion, neighbours=config.neighbours)

    def expander(grouping: Any, refiner: str, invariance: float):
        def build(p: dict[str, Any]) -> ClassifierExpander:
            alpha = p.get("refiner_alpha", config.refiner_alpha if refiner != "none" else "off")
            kind = "none" if alpha == "off" else refiner
            alpha = config.refiner_alpha if alpha == "off" else float(alpha)
            return ClassifierExpander(grouping, kind, invariance, coarse_alpha=float(p.get("coarse_alpha",
                                                                                           config.coarse_alpha)),
                                      refiner_alpha=alpha, group_alpha=alpha if "refiner_alpha" in p else config.group_alpha,
                                      cosine_weight=config.cosine_weight, cosine_steps=config.cosine_steps,
                                      alpha_grid=tuple(config.alpha_grid) or None)
        return build

    mlp_seed, icis_seed = ctx.seed_for("mlp_init"), ctx.seed_for("icis_init")
    return {
        METHOD_ARM: expander(clusterer, "group", config.invariance),
        "zs_expand_no_invariance": expander(clusterer, "group", 0.0),
        "zs_expand_no_refiner": expander(clusterer, "none", config.invariance),
        # the true superclasses of the clustered classes (seen, then unseen: the all_semantics order)
        "zs_expand_oracle_groups": expander(lambda _: true_groups, "group", config.invariance),
        "shared_mlp": lambda p: SharedMLPExpander(config.mlp_hidden, steps=config.mlp_steps,
                                                  lr=float(p.get("lr", config.mlp_lr)),
                                                  weight_decay=float(p.get("weight_decay", config.mlp_weight_decay)),
                                                  seed=mlp_seed),
        "icis": lambda p: ICISExpander(int(p.get("latent", config.icis_latent)), steps=config.icis_steps,
                                       lr=float(p.get("lr", config.icis_lr)), seed=icis_seed),
        # the plain class-balanced ridge: the method's f0 alone, one group, no invariance term
        "ridge": lambda p: ClassifierExpander(None, "none", 0.0, balance="class",
                                              coarse_alpha=float(p.get("coarse_alpha", config.coarse_alpha))),
        "wavg": lambda p: WAvgExpander(float(p.get("temperature", config.wavg_temperature))),
    }


def class_folds(n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``k`` disjoint folds of ``range(n)`` of near-equal size, in a random order (each at least one class)."""
    if not 2 <= k <= n:
        raise ValueError(f"k={k} folds need 2 <= k <= n={n}")
    return [np.sort(f) for f in np.array_split(rng.permutation(n), k)]


def fold_score(build: Any, params: dict[str, Any], views: torch.Tensor, seen_w: torch.Tensor,
               all_semantics: torch.Tensor, x: np.ndarray, y: np.ndarray, seen: np.ndarray,
               folds: list[np.ndarray], metric: str = "row_error") -> float:
    """The tuner's validation score of one arm's ``params`` (higher is better): each fold of seen classes is
    held out in turn, synthesised from the other seen classes' rows, and scored, then the folds averaged.

    ``metric="row_error"``: minus the mean relative squared error ``‖ŵ_c − w_c‖² / mean_c ‖w_c‖²`` of the
    held-out rows (the expander's own leave-one-class-out criterion, which also judges the rows' norms and
    biases that GZSL depends on); ``"zsl"``: the ZSL per-class accuracy of the held-out rows on those classes'
    training images ``(x, y)``. Seen classes only: no unseen or test data."""
    if metric not in ("row_error", "zsl"):
        raise ValueError(f"metric={metric!r} must be 'row_error' or 'zsl'")
    d = x.shape[1]
    target = seen_w.double().cpu().numpy()
    scale = float((target ** 2).sum(1).mean())
    scores = []
    for held in folds:
        keep = np.setdiff1d(np.arange(len(seen)), held)
        expander = build(params).fit(views[keep], seen_w[keep], all_semantics=all_semantics)
        rows = expander.expand(views[held]).double().cpu().numpy()
        if metric == "row_error":
            scores.append(-float(((rows - target[held]) ** 2).sum(1).mean()) / scale)
            continue
        mask = np.isin(y, seen[held])
        preds = restricted_predictions(x[mask] @ rows[:, :d].T + rows[:, d], np.arange(len(held)), seen[held])
        scores.append(float(per_class_accuracy(preds, y[mask], seen[held]).mean()))
    return float(np.mean(scores))


def run(config: Config, ctx: RunContext) -> Outcome:
    from sklearn.metrics import adjusted_rand_score

    from icml26.common.encoder import get_encoder

    start = time.perf_counter()
    bench = granularity_benchmark(ctx.rng("benchmark"), n_groups=config.n_groups, per_group=config.per_group,
                                  similar_per_group=config.similar_per_group, n_train=config.n_train,
                                  n_test=config.n_test, feature_dim=config.feature_dim,
                                  fine_scale=config.fine_scale, noise=config.noise, named=config.named)
    ctx.stage("encoding descriptions with all-MiniLM-L6-v2")
    t0 = time.perf_counter()
    encoder = get_encoder("cuda" if ctx.device.type == "cuda" else "cpu")
    views = encode_descriptions(bench.descriptions, bench.nuisances[:config.n_nuisances], encoder)
    ctx.provenance["encode_seconds"] = round(time.perf_counter() - t0, 2)
    ctx.stage("the seen-class head, then every expansion arm tuned and scored")
    seen, unseen = bench.seen, bench.unseen
    order = np.concatenate([seen, unseen])  # the all_semantics order
    views_t = torch.as_tensor(views, device=ctx.device)
    seen_rows = _logistic_rows(bench.x_train, bench.y_train, seen, config.head_c, ctx.seed_for("head"))
    head = torch.nn.Linear(bench.x_train.shape[1], len(seen), dtype=torch.float64)
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(seen_rows[:, :-1]))
        head.bias.copy_(torch.as_tensor(seen_rows[:, -1]))
    seen_w = torch.as_tensor(seen_rows, device=ctx.device)
    args = (bench.x_test, bench.y_test, seen, unseen, bench.similar, bench.distinct)

    arms: dict[str, ArmScores] = {}
    extras: dict[str, Any] = {}
    tuned: dict[str, dict[str, Any]] = {}
    folds = class_folds(len(seen), config.tune_folds, ctx.rng("tune_folds"))
    for name, build in ctx.progress(list(_builders(config, ctx, bench.superclass[order]).items()), desc="arms"):
        params: dict[str, Any] = {}
        if config.tune:
            params = ctx.tune(ARM_SPECS[name], lambda p, b=build: fold_score(
                b, p, views_t[seen], seen_w, views_t[order], bench.x_train, bench.y_train, seen, folds,
                config.tune_metric), maximize=True)
            tuned[name] = params
        expander = build(params)
        expander.fit(views_t[seen], seen_w, all_semantics=views_t[order])
        rows = expander.expand(views_t[unseen]).double().cpu().numpy()
        per_view = torch.stack([torch.stack([expander.expand(views_t[unseen][:, m, n])
                                             for n in range(views.shape[2])], 1) for m in range(views.shape[1])], 1)
        variance = intervention_variance(per_view.cpu().numpy()) if views.shape[2] > 1 else math.nan
        arms[name] = ArmScores(variance=variance, **score_rows(rows, head, *args))
        if isinstance(expander, ClassifierExpander) and name == METHOD_ARM:
            labels = expander.structure_.labels
            extras.update({"n_groups": expander.n_groups_,
                           "ari": float(adjusted_rand_score(bench.superclass[order], labels)),
                           "scores": {str(k): v for k, v in expander.structure_.scores.items()}})
        if isinstance(expander, ClassifierExpander):
            chosen = expander.alphas_
            extras.setdefault("alphas", {})[name] = chosen
            if expander.selection_:
                ctx.provenance.setdefault("zs_expand_loo_errors", {})[name] = expander.selection_
    extras["tuned"] = tuned
    if config.rounds > 1:
        ctx.stage(f"continuous expansion over {config.rounds} rounds")
        extras["rounds"] = _rounds(config, ctx, bench, views_t, seen_w, head, tuned)
    # ceiling: rows of a head trained on the unseen classes' own images (not a zero-shot method)
    ceiling_rows = _logistic_rows(bench.x_train, bench.y_train, unseen, config.head_c, ctx.seed_for("head"))
    ceiling = score_rows(ceiling_rows, head, *args)
    synth_seconds = time.perf_counter() - start

    real_section = None
    if config.real:
        from icml26.papers.zs_expand.real import real_section as run_real

        real_section = run_real(config, ctx, encoder)
    return _outcome(config, ctx, arms, ceiling, extras, real_section, synth_seconds)


def _rounds(config: Config, ctx: RunContext, bench: Any, views_t: torch.Tensor, seen_w: torch.Tensor,
            head: torch.nn.Linear, tuned: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Continuous expansion: the unseen classes arrive in ``config.rounds`` rounds (a random order); in round r every
    arm, with its tuned settings, synthesises the rows of every class so far from the seen rows (the grouping sees
    the seen classes and the classes so far), and the head holds the seen classes and those rows.

    Returns ``{"classes": [|U_≤r|], arm: {"gzsl_h": [...], "zsl": [...]}}``."""
    seen = bench.seen
    arrival = ctx.rng("rounds").permutation(bench.unseen)
    chunks = np.array_split(arrival, config.rounds)
    out: dict[str, Any] = {"classes": []}
    for r in range(config.rounds):
        so_far = np.concatenate(chunks[:r + 1])
        order = np.concatenate([seen, so_far])
        out["classes"].append(int(len(so_far)))
        for name, build in _builders(config, ctx, bench.superclass[order]).items():
            expander = build(tuned.get(name, {})).fit(views_t[seen], seen_w, all_semantics=views_t[order])
            rows = expander.expand(views_t[so_far]).double().cpu().numpy()
            scores = score_rows(rows, head, bench.x_test, bench.y_test, seen, so_far,
                                np.intersect1d(so_far, bench.similar), np.intersect1d(so_far, bench.distinct))
            entry = out.setdefault(name, {"gzsl_h": [], "zsl": []})
            entry["gzsl_h"].append(scores["gzsl_h"])
            entry["zsl"].append(scores["zsl"])
    return out


def _outcome(config: Config, ctx: RunContext, arms: dict[str, ArmScores], ceiling: dict[str, Any],
             extras: dict[str, Any], real_section: Any, synth_seconds: float) -> Outcome:
    metrics: dict[str, dict[str, float]] = {}
    for name, s in arms.items():
        metrics[name] = {k: v for k, v in dataclasses.asdict(s).items() if k != "per_class"}
    metrics[METHOD_ARM].update(n_groups=float(extras["n_groups"]), ari=extras["ari"])
    for name, chosen in extras["alphas"].items():  # what the shared tuner chose
        metrics[name].update(coarse_alpha=float(chosen["coarse"]), refiner_used=float(chosen["kind"] != "none"))
    ctx.provenance["zs_expand_chosen_alphas"] = extras["alphas"]
    metrics["ceiling_own_images"] = {k: v for k, v in ceiling.items() if k != "per_class"}
    me, mlp, icis = arms[METHOD_ARM], arms["shared_mlp"], arms["icis"]
    refiner_on = extras["alphas"][METHOD_ARM]["kind"] != "none"
    checks = [
        CHECKS["zsl_gain_vs_shared_mlp"].measure(100 * (me.zsl - mlp.zsl)),
        CHECKS["similar_gain_vs_shared_mlp"].measure(100 * (me.zsl_similar - mlp.zsl_similar)),
        CHECKS["gzsl_h_gain_vs_icis"].measure(100 * (me.gzsl_h - icis.gzsl_h)),
        CHECKS["variance_ratio_vs_shared_mlp"].measure(ratio(me.variance, mlp.variance)),
        CHECKS["interference_similar_gain_vs_ridge"].measure(100 * (me.zsl_similar - arms["ridge"].zsl_similar)),
        CHECKS["refiner_similar_gain"].measure(
            100 * (me.zsl_similar - arms["zs_expand_no_refiner"].zsl_similar),
            note="refiners " + ("on" if refiner_on else "switched off by the selection")),
    ]
    rounds = extras.get("rounds")
    if rounds is not None:
        gap = np.mean(rounds[METHOD_ARM]["gzsl_h"]) - np.mean(rounds["shared_mlp"]["gzsl_h"])
        checks.append(CHECKS["rounds_h_gain_vs_shared_mlp"].measure(100 * float(gap)))
        for name in arms:
            metrics[name]["rounds_mean_gzsl_h"] = float(np.mean(rounds[name]["gzsl_h"]))
    names = list(arms) + ["ceiling_own_images"]
    curves: dict[str, Any] = {
        "zsl": Curve(x=["all", "similar", "distinct"],
                     series={n: [metrics[n]["zsl"], metrics[n]["zsl_similar"], metrics[n]["zsl_distinct"]]
                             for n in names},
                     xlabel="unseen subset", ylabel="ZSL per-class accuracy", title="ZSL accuracy by subset"),
        "gzsl": Curve(x=["S", "U", "H"],
                      series={n: [metrics[n]["gzsl_seen"], metrics[n]["gzsl_unseen"], metrics[n]["gzsl_h"]]
                              for n in names},
                      xlabel="GZSL figure", ylabel="per-class accuracy", title="GZSL with the injected head"),
        "variance": Curve(x=list(arms), series={"relative variance": [arms[n].variance for n in arms]},
                          xlabel="arm", ylabel="Var_n[w] / mean |w|^2",
                          title="weight variance across nuisance interventions"),
        **({"rounds": Curve(x=rounds["classes"], series={n: rounds[n]["gzsl_h"] for n in arms},
                            xlabel="unseen classes so far", ylabel="GZSL H",
                            title=f"continuous expansion over {len(rounds['classes'])} rounds")}
           if rounds is not None else {}),
        "group_count": Curve(x=[int(k) for k in extras["scores"]], series={"eigengap": list(extras["scores"].values())},
                             xlabel="number of groups G", ylabel=f"{config.criterion} score",
                             title=f"group count (chosen {extras['n_groups']}, ARI {extras['ari']:.2f})"),
    }
    notes = [
        f"Synthetic benchmark ({config.n_groups}x{config.per_group} classes, {config.n_nuisances} nuisances): "
        f"ZSL all/similar/distinct = {me.zsl:.3f}/{me.zsl_similar:.3f}/{me.zsl_distinct:.3f} for the expander, "
        f"{mlp.zsl:.3f}/{mlp.zsl_similar:.3f}/{mlp.zsl_distinct:.3f} for the shared MLP, ceiling (a head trained on "
        f"the unseen classes' own images) {ceiling['zsl']:.3f}/{ceiling['zsl_similar']:.3f}/"
        f"{ceiling['zsl_distinct']:.3f}. GZSL H: expander {me.gzsl_h:.3f}, ICIS {icis.gzsl_h:.3f}. Groups found: "
        f"{extras['n_groups']} (ARI with the superclasses {extras['ari']:.2f}). Synthetic section "
        f"{synth_seconds:.0f} s.",
        "Expander strengths used: " + "; ".join(
            f"{n}: coarse {c['coarse']:g}, refiner " + (f"{c['kind']} {c['refiner']:g}" if c["kind"] != "none" else "off")
            for n, c in extras["alphas"].items()) + ".",
    ]
    if extras["tuned"]:
        criterion = ("relative squared error of the held-out seen classes' synthesised rows"
                     if config.tune_metric == "row_error" else "ZSL accuracy of held-out seen classes on their "
                     "training images")
        notes.append(f"Every arm selected by the shared tuner on {config.tune_folds} class folds of the seen classes "
                     f"({criterion}; the same budget for every arm, ARMS in claims.py): " + "; ".join(
                         f"{n} {', '.join(f'{k}={v}' for k, v in p.items())}" for n, p in extras["tuned"].items()) + ".")
    if not refiner_on:
        log.warning("zs_expand: the tuner switched the method's refiners off on this draw")
        notes.append("The tuner switched the method's refiners off on this draw: the expander is its coarse map.")
    if ceiling["zsl"] - mlp.zsl < 0.05:
        notes.append(f"Bar infeasible on this draw: the shared MLP ({mlp.zsl:.3f}) is within 5 points of the "
                     f"ceiling ({ceiling['zsl']:.3f}).")
    if real_section is not None:
        metrics.update(real_section.metrics)
        curves.update(real_section.curves)
        notes.extend(real_section.notes)
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)
