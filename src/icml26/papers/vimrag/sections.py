"""The two sections of the VimRAG reproduction, each returning a dataclass: :func:`budget` (A, the
token budget over multi-hop digit questions) and :func:`credit` (B, GGPO against GRPO on the
search task)."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from icml26.common.data import load_digits_split
from icml26.contract import RunContext
from icml26.papers.vimrag.config import Config
from icml26.papers.vimrag.digits_task import POLICIES, DigitReader, sample_episode, solve
from icml26.papers.vimrag.search_task import SearchTask, TrainCurve, train

__all__ = ["METHODS", "SWEEP_POLICIES", "Budget", "Credit", "budget", "credit"]


@dataclasses.dataclass(frozen=True)
class Budget:
    """(A): accuracy and critical density per allocator and budget, and the unstructured control."""

    reader: DigitReader
    n_train: int
    """Digits the reader was fit on."""
    n_test: int
    """Held-out digits (the episodes' image pool)."""
    policies: list[str]
    """Every allocator, the oracle last."""
    accuracy: dict[str, np.ndarray]
    """Policy -> answer accuracy per ``config.budgets`` entry."""
    density: dict[str, np.ndarray]
    """Policy -> share of read tokens on pivotal items per budget."""
    control: dict[str, float]
    """Policy -> accuracy at the 40 % budget on unstructured graphs (0 without control episodes)."""
    seconds: float
    sweep: dict[str, dict[float, dict[str, float]]] = dataclasses.field(default_factory=dict)
    """``"noise"`` / ``"structure"`` -> level -> policy -> accuracy at 40 % (:data:`SWEEP_POLICIES`)."""


SWEEP_POLICIES = ("graph_modulated", "priority_only", "uniform")


def _sweep(config: Config, ctx: RunContext, reader: DigitReader, pool: int) -> dict[str, dict[float, dict[str, float]]]:
    """Accuracy at 40 % of :data:`SWEEP_POLICIES` while one knob moves: the relevance noise (structured graphs)
    and how informative the structure is (``structure``, at ``config.relevance_noise``)."""
    out: dict[str, dict[float, dict[str, float]]] = {"noise": {}, "structure": {}}
    points = [("noise", x, dict(relevance_noise=x)) for x in config.sweep_noise]
    points += [("structure", x, dict(relevance_noise=config.relevance_noise, structure=x))
               for x in config.sweep_structure]
    for i, (knob, x, kw) in enumerate(points):
        rng = ctx.rng("sweep", i)
        acc = dict.fromkeys(SWEEP_POLICIES, 0.0)
        for _ in range(config.sweep_episodes):
            ep = sample_episode(rng, pool, relevance_gap=config.relevance_gap, dead_follow=config.dead_follow, **kw)
            for p in SWEEP_POLICIES:
                acc[p] += solve(ep, reader, p, 0.4)[0] / config.sweep_episodes
        out[knob][x] = acc
    return out


def budget(config: Config, ctx: RunContext) -> Budget:
    """The reader on a digits split, then ``config.episodes`` structured episodes solved by every allocator
    at every budget, then ``config.control_episodes`` unstructured ones at 40 %, then the 40 % sweeps."""
    ctx.stage("(A) reader")
    split = load_digits_split(test_fraction=0.5, seed=ctx.seed_for("reader"), standardize=False)
    to_img = lambda x: (x / 16.0).reshape(-1, 8, 8)  # noqa: E731
    reader = DigitReader.train(to_img(split.x_train), split.y_train, to_img(split.x_test), split.y_test,
                               seed=ctx.seed_for("reader", 1))
    policies = list(POLICIES) + ["oracle"]
    gen_kw = dict(relevance_gap=config.relevance_gap, relevance_noise=config.relevance_noise,
                  dead_follow=config.dead_follow)
    pool = len(split.y_test)
    start = time.perf_counter()
    correct = {p: np.zeros(len(config.budgets)) for p in policies}
    density = {p: np.zeros(len(config.budgets)) for p in policies}
    rng = ctx.rng("episodes")
    for _ in ctx.progress(range(config.episodes), desc="(A) episodes"):
        ep = sample_episode(rng, pool, structured=True, **gen_kw)
        for p in policies:
            for j, frac in enumerate(config.budgets):
                ok, dens, _ = solve(ep, reader, p, frac)
                correct[p][j] += ok
                density[p][j] += dens
    acc = {p: correct[p] / config.episodes for p in policies}
    dens = {p: density[p] / config.episodes for p in policies}
    control = {p: 0.0 for p in policies}
    if config.control_episodes:
        rng = ctx.rng("control")
        for _ in range(config.control_episodes):
            ep = sample_episode(rng, pool, structured=False, **gen_kw)
            for p in policies:
                control[p] += solve(ep, reader, p, 0.4)[0] / config.control_episodes
    sweep = _sweep(config, ctx, reader, pool) if config.sweep_episodes else {}
    return Budget(reader=reader, n_train=len(split.y_train), n_test=len(split.y_test), policies=policies,
                  accuracy=acc, density=dens, control=control, seconds=time.perf_counter() - start, sweep=sweep)


METHODS: dict[str, tuple[str, str]] = {
    "ggpo": ("ggpo", "sequence"),
    "ggpo_dropped": ("ggpo", "generated"),
    "grpo": ("grpo", "sequence"),
}
"""Arm -> (``train``'s method, ``ggpo_loss``'s reduction): GGPO renormalised over its kept steps, GGPO with
the masked terms dropped and GRPO's per-rollout weights kept (the method as described), and GRPO."""


@dataclasses.dataclass(frozen=True)
class Credit:
    """(B): the training curves of every :data:`METHODS` arm per replicate, at the main and the extra learning
    rates."""

    runs: dict[str, list[TrainCurve]]
    """Arm -> one curve per replicate at ``config.lr``."""
    by_lr: list[tuple[float, dict[str, list[TrainCurve]]]]
    """Per ``config.extra_lrs`` entry: the learning rate, and arm -> one curve per replicate."""
    seconds: float


def credit(config: Config, ctx: RunContext) -> Credit:
    """Every :data:`METHODS` arm on the same question stream per replicate (``search`` stream, index =
    replicate), at ``config.lr`` and at every ``config.extra_lrs`` entry; the task's reward carries
    ``config.redundant_penalty`` per redundant search."""
    ctx.stage("(B) GGPO vs GRPO")
    task = SearchTask(documents=config.documents, values=config.documents, horizon=config.horizon,
                      features=config.features, redundant_penalty=config.redundant_penalty)
    start = time.perf_counter()

    def at(lr: float, rep: int) -> dict[str, TrainCurve]:
        return {arm: train(task, method, iterations=config.iterations, questions=config.questions,
                           group=config.group, lr=lr, clip=config.clip, reduction=reduction,
                           gen=ctx.torch_generator("search", rep))
                for arm, (method, reduction) in METHODS.items()}

    per_lr = {lr: [at(lr, rep) for rep in ctx.progress(range(config.replicates), desc=f"(B) lr {lr:g}")]
              for lr in (config.lr, *config.extra_lrs)}
    regroup = lambda reps: {arm: [r[arm] for r in reps] for arm in METHODS}  # noqa: E731
    return Credit(runs=regroup(per_lr[config.lr]), by_lr=[(lr, regroup(per_lr[lr])) for lr in config.extra_lrs],
                  seconds=time.perf_counter() - start)
