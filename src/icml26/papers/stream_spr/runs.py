"""stream_spr reproduction: one run (a game, a seed, an arm), picklable for worker processes.

:func:`run_one` trains one agent on MinAtar and returns a :class:`RunSummary` built with the
pure functions of :mod:`.analysis`; :func:`collect_probe_states` draws the fixed probe set
the effective ranks are measured on.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from .analysis import binned_means, last_fraction_return, return_curve, window_minimum

__all__ = ["ARMS", "AUTHORS", "RunSummary", "collect_probe_states", "run_one"]

#: Arm name → (agent, its SPR flags). The method first, then the baselines.
ARMS: dict[str, dict[str, Any]] = {
    "spr_orth2": {"spr": True, "orth": True, "orth2": True, "tunable": True},
    "spr_naive": {"spr": True, "orth": False, "orth2": False, "tunable": True},
    "spr_authors": {"spr": True, "orth": True, "orth2": True, "authors": True},
    "stream_q": {"spr": False},
}
"""``tunable``: its α_SPR is ``Config.spr_lr`` (or tuned over ``spr_lr_grid``). ``authors``: stream-rep-rl's
configuration (:data:`AUTHORS`), every other setting the run's."""

#: stream-rep-rl's choices where we default to the correct or consistent one (see spr_agent).
AUTHORS: dict[str, Any] = {"lr_preset": "official", "action_alignment": "official", "target_init": "independent",
                           "head_activation": "relu", "projection_eps": 1e-8}


def collect_probe_states(game: str, n: int, seed: int, sticky: float) -> np.ndarray:
    """``n`` raw observations visited by a uniformly random policy (resets included)."""
    from .wrappers import make_minatar

    env = make_minatar(game, sticky_action_prob=sticky)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    states = []
    while len(states) < n:
        states.append(np.asarray(obs, dtype=np.float32))
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(states)


@dataclasses.dataclass
class RunSummary:
    """One run's summary (a game, a seed, an arm), returned from a worker process."""

    game: str
    seed_index: int
    arm: str
    edges: list[int]
    return_last10: float
    episodes: int
    return_curve: list[float | None]
    srank_latent: int
    erank_latent: float
    srank_hidden: int
    erank_hidden: float
    spr_loss_curve: list[float]
    spr_loss_early_min: float
    spr_loss_last10: float
    spr_steps: int
    cos_before_curve: list[float]
    cos_after_curve: list[float]
    mean_abs_cos_before: float
    max_abs_cos_after: float
    nonfinite: int
    wall_s: float
    steps_per_s: float


def run_one(job: dict[str, Any]) -> RunSummary:
    """Train one agent and summarize it (runs in a worker process or in-process)."""
    from .agents import StreamQ, learn_loop
    from .rank import effective_rank
    from .spr_agent import StreamQSPR
    from .wrappers import RunningNorm, find_wrapper, make_minatar, stream_wrappers

    if job["threads"]:
        torch.set_num_threads(job["threads"])
    cfg = job["config"]  # the experiment's Config
    arm = ARMS[job["arm"]]
    total = job.get("total_steps") or cfg.total_steps  # a tuning run may be shorter
    env = stream_wrappers(make_minatar(job["game"], sticky_action_prob=cfg.sticky_action_prob), cfg.gamma)
    common = dict(gamma=cfg.gamma, lamda=cfg.lamda, kappa=cfg.kappa,
                  exploration_steps=max(1, int(cfg.exploration_fraction * total)), seed=job["seed"],
                  device=job["device"])
    if arm["spr"]:
        settings = dict(lr_preset=cfg.lr_preset, action_alignment=cfg.action_alignment, target_init=cfg.target_init,
                        head_activation="relu" if cfg.official_architecture else "layernorm_leaky_relu")
        if arm.get("authors"):
            settings.update(AUTHORS)
        else:
            settings["spr_lr"] = job.get("spr_lr", cfg.spr_lr)
        agent = StreamQSPR(env, orth=arm["orth"], orth2=arm["orth2"], spr_depth=cfg.spr_depth,
                           spr_weight=cfg.spr_weight, spr_tau=cfg.spr_tau, orth_beta=cfg.orth_beta,
                           **settings, **common)
    else:
        from .spr_agent import LR_PRESETS

        agent = StreamQ(env, lr=LR_PRESETS[cfg.lr_preset].rl, **common)

    bins = cfg.curve_points
    edges = np.linspace(0, total, bins + 1).astype(int)[1:]
    loss_sum, loss_n = np.zeros(bins), np.zeros(bins)
    cos_before, cos_after = np.zeros(bins), np.zeros(bins)
    cos_n = np.zeros(bins)
    stats = {"max_cos_after": 0.0, "nonfinite": 0}

    def on_step(info) -> None:
        b = min(int(info.step * bins // total), bins - 1)
        if not math.isfinite(info.td_error):
            stats["nonfinite"] += 1
        if info.spr_active:
            if not math.isfinite(info.spr_loss):
                stats["nonfinite"] += 1
            loss_sum[b] += info.spr_loss
            loss_n[b] += 1
            cos_before[b] += abs(info.cos_before)
            cos_after[b] += abs(info.cos_after)
            cos_n[b] += 1
            stats["max_cos_after"] = max(stats["max_cos_after"], abs(info.cos_after))

    record = learn_loop(agent.step, total, progress=job["progress"], desc=f"{job['arm']} {job['game']}",
                        callback=on_step, position=job["position"])

    # Effective rank on the fixed probe set, normalized with this agent's final statistics.
    norm = find_wrapper(env, RunningNorm)
    probe = np.stack([norm.normalize(s, update=False) for s in job["probe"]])
    with torch.no_grad():
        latent, hidden = agent.network.features(torch.as_tensor(probe, device=agent.device))
    rank_latent = effective_rank(latent, cfg.srank_delta)
    rank_hidden = effective_rank(hidden, cfg.srank_delta)
    params = [p for p in agent.network.parameters()]
    if arm["spr"]:
        params += list(agent.spr.parameters())
    stats["nonfinite"] += sum(int((~torch.isfinite(p)).sum()) for p in params)

    ends = np.array([e.end_step for e in record.episodes], dtype=float)
    rets = np.array([e.ret for e in record.episodes], dtype=float)
    loss_curve = binned_means(loss_sum, loss_n)
    return RunSummary(
        game=job["game"], seed_index=job["seed_index"], arm=job["arm"], edges=edges.tolist(),
        return_last10=last_fraction_return(ends, rets, total, 0.1), episodes=len(rets),
        return_curve=return_curve(ends, rets, edges),
        srank_latent=rank_latent.srank, erank_latent=rank_latent.erank,
        srank_hidden=rank_hidden.srank, erank_hidden=rank_hidden.erank,
        spr_loss_curve=loss_curve.tolist(),
        spr_loss_early_min=window_minimum(loss_curve, edges, cfg.loss_window),
        spr_loss_last10=float(np.nanmean(loss_curve[-max(1, bins // 10):])) if arm["spr"] else float("nan"),
        spr_steps=int(loss_n.sum()),
        cos_before_curve=binned_means(cos_before, cos_n).tolist(), cos_after_curve=binned_means(cos_after, cos_n).tolist(),
        mean_abs_cos_before=float(cos_before.sum() / max(cos_n.sum(), 1)),
        max_abs_cos_after=stats["max_cos_after"], nonfinite=stats["nonfinite"],
        wall_s=record.wall_time_s, steps_per_s=record.steps_per_s,
    )
