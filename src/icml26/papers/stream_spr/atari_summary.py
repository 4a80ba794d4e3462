"""The summary of an Atari sweep (:mod:`.atari_runs`): scores, human-normalised IQMs, verdicts, figures.

``summary.json`` holds, per game and arm, the raw score of every seed with its t interval and the
mean human-normalised score; per arm, the IQM of the human-normalised scores over every
(seed, game) with its stratified-bootstrap interval; for SPR+orth² against each baseline, the IQM
difference with its interval and the per-game paired (same seed) differences. A comparison is
"method ahead" / "baseline ahead" when the IQM difference's interval excludes 0, "tied" otherwise.
``summary.md`` is its tables, generated from the same dict (:func:`summary_markdown`), which the paper
README links. Written with the figures as one unit (:func:`icml26.atomic.write_together`). Not named
``result.json``: it is not a run of the reproduction's contract (no claim block), so the report and the
results' validation leave it alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from icml26.atomic import write_together
from icml26.common.stats import paired_interval, t_interval
from icml26.render import render_with

from .atari_scores import REFERENCE_SCORES, human_normalized, iqm_difference, iqm_interval, score_table

__all__ = ["summarize", "summary_markdown"]

METHOD = "spr_orth2"
LABELS = {"spr_orth2": "SPR+orth²", "spr_naive": "naive SPR", "stream_q": "Stream Q(λ)"}
COLORS = {"spr_orth2": "tab:red", "spr_naive": "tab:orange", "stream_q": "tab:blue"}


def _verdict(low: float, high: float) -> str:
    return "method ahead" if low > 0 else "baseline ahead" if high < 0 else "tied"


def summarize(sweep: Any, out: str | Path) -> dict[str, Any]:
    """Read every run of ``sweep`` (an :class:`~.atari_runs.AtariSweep`) in ``out``; write and return the summary.

    Every (game, arm, seed) must have its run file (each names the step-size preset it used).
    """
    out = Path(out)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    missing = []
    for game in sweep.games:
        for arm in sweep.arms:
            for seed in sweep.seeds:
                path = out / "runs" / game / arm / f"seed{seed}.json"
                if not path.exists():
                    missing.append(str(path))
                    continue
                runs.setdefault(game, {}).setdefault(arm, []).append(json.loads(path.read_text()))
    if missing:
        raise FileNotFoundError(f"{len(missing)} runs are missing (first: {missing[0]}); run the sweep first")
    unscored = [f"{r['game']}/{r['arm']}/seed{r['seed']}" for arms in runs.values() for rs in arms.values()
                for r in rs if r["score"] is None or not np.isfinite(r["score"])]
    if unscored:
        raise ValueError(f"runs that finished no game have no score: {', '.join(unscored)}; use more steps")
    per_game: dict[str, Any] = {}
    for game in sweep.games:
        per_game[game] = {}
        for arm in sweep.arms:
            scores = [r["score"] for r in runs[game][arm]]
            per_game[game][arm] = {
                "seeds": list(sweep.seeds), "scores": scores, "score": t_interval(scores).as_dict(),
                "human_normalized": [human_normalized(game, s) for s in scores],
                "lr_preset": sorted({r["lr_preset"] for r in runs[game][arm]}),
                "steps_per_s": float(np.mean([r["steps_per_s"] for r in runs[game][arm]])),
                "games_played": [r["games_played"] for r in runs[game][arm]]}
    tables = {arm: score_table({g: per_game[g][arm]["scores"] for g in sweep.games}, sweep.games)
              for arm in sweep.arms}
    overall = {arm: {"iqm_hns": iqm_interval(tables[arm]).as_dict(),
                     "mean_hns": float(tables[arm].mean())} for arm in sweep.arms}
    comparisons = {}
    for base in (a for a in sweep.arms if a != METHOD):
        diff = iqm_difference(tables[METHOD], tables[base])
        comparisons[f"{METHOD} - {base}"] = {
            "iqm_hns_difference": diff.as_dict(), "verdict": _verdict(diff.low, diff.high),
            "per_game_paired_score_difference": {
                g: paired_interval(per_game[g][METHOD]["scores"], per_game[g][base]["scores"]).as_dict()
                for g in sweep.games}}
    result = {
        "suite": "atari", "games": list(sweep.games), "arms": list(sweep.arms), "seeds": list(sweep.seeds),
        "settings": {**sweep.run_settings(), "tune_game": sweep.tune_game, "tune_steps": sweep.tune_steps,
                     "lr_preset_default": sweep.lr_preset},
        "score_definition": "mean raw whole-game return of the games ending in the last 10% of steps",
        "reference_scores": {g: dict(zip(("random", "human"), REFERENCE_SCORES[g])) for g in sweep.games},
        "reference_source": "random and human scores of Mnih et al. 2015 / Badia et al. 2020 as used by "
                            "DQN Zoo and rliable (Agarwal et al. 2021)",
        "per_game": per_game, "overall": overall, "comparisons": comparisons,
        "curves": {g: {arm: {"edges": runs[g][arm][0]["curve_edges"],
                             "mean": _mean_curve([r["return_curve"] for r in runs[g][arm]])}
                       for arm in sweep.arms} for g in sweep.games},
    }
    figures = render_with(_plot, result)
    write_together(out, {**figures, "summary.md": summary_markdown(result).encode(),
                         "summary.json": (json.dumps(result, indent=2) + "\n").encode()}, last="summary.json")
    return result


def _ci(d: dict[str, Any], fmt: str = ".3g") -> str:
    return f"{d['mean' if 'mean' in d else 'point']:{fmt}} [{d['ci_low']:{fmt}}, {d['ci_high']:{fmt}}]"


def summary_markdown(result: dict[str, Any]) -> str:
    """The summary's tables as Markdown (generated; numbers as in ``summary.json``)."""
    arms, games = result["arms"], result["games"]
    settings = result["settings"]
    lines = [f"_Generated by `atari_runs` from `summary.json`: {len(result['seeds'])} seeds {result['seeds']}, "
             f"{settings['steps']:,} agent steps a run, presets tuned on {settings['tune_game'] or 'none'}; "
             "95 % t intervals over seeds, IQM intervals by stratified bootstrap; do not edit._", "",
             "| game | " + " | ".join(LABELS.get(a, a) for a in arms) + " |",
             "|---|" + "---|" * len(arms)]
    for g in games:
        lines.append(f"| {g} | " + " | ".join(_ci(result["per_game"][g][a]["score"]) for a in arms) + " |")
    lines.append("| IQM human-normalised | " + " | ".join(_ci(result["overall"][a]["iqm_hns"]) for a in arms) + " |")
    lines.append("| steps/s (mean over games) | " + " | ".join(
        f"{np.mean([result['per_game'][g][a]['steps_per_s'] for g in games]):.0f}" for a in arms) + " |")
    lines.append("| step-size preset | " + " | ".join(
        ", ".join(sorted({p for g in games for p in result["per_game"][g][a]["lr_preset"]})) for a in arms) + " |")
    lines += ["", "| comparison | IQM difference (human-normalised) | verdict | "
              + " | ".join(f"{g}: paired score difference" for g in games) + " |",
              "|---|---|---|" + "---|" * len(games)]
    for name, c in result["comparisons"].items():
        method, base = (LABELS.get(x, x) for x in name.split(" - "))
        lines.append(f"| {method} − {base} | {_ci(c['iqm_hns_difference'])} | {c['verdict']} | "
                     + " | ".join(_ci(c["per_game_paired_score_difference"][g]) for g in games) + " |")
    return "\n".join(lines) + "\n"


def _mean_curve(curves: list[list[float | None]]) -> list[float | None]:
    table = np.array([[np.nan if v is None else v for v in c] for c in curves], dtype=float)
    seen = np.isfinite(table).any(axis=0)
    means = np.full(table.shape[1], np.nan)
    means[seen] = np.nanmean(table[:, seen], axis=0)
    return [float(m) if np.isfinite(m) else None for m in means]


def _plot(result: dict[str, Any]) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    figures = {}
    for game, arms in result["curves"].items():
        fig, ax = plt.subplots(figsize=(6.0, 4.0))
        for arm, curve in arms.items():
            y = [np.nan if v is None else v for v in curve["mean"]]
            ax.plot(curve["edges"], y, label=LABELS.get(arm, arm), color=COLORS.get(arm))
        ax.set_xlabel("agent steps")
        ax.set_ylabel("game return (last 20 games)")
        ax.set_title(f"{game}: mean over {len(result['seeds'])} seeds")
        ax.grid(True, alpha=0.3)
        ax.legend()
        figures[f"learning_curve_{game}.png"] = fig
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    arms = list(result["overall"])
    for i, arm in enumerate(arms):
        iqm = result["overall"][arm]["iqm_hns"]
        ax.errorbar([iqm["point"]], [i], xerr=[[iqm["point"] - iqm["ci_low"]], [iqm["ci_high"] - iqm["point"]]],
                    fmt="o", color=COLORS.get(arm), capsize=4)
    ax.set_yticks(range(len(arms)), [LABELS.get(a, a) for a in arms])
    ax.set_xlabel("IQM human-normalised score (95% stratified bootstrap)")
    ax.set_title(f"Atari, {len(result['games'])} games x {len(result['seeds'])} seeds")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    figures["iqm.png"] = fig
    return figures
