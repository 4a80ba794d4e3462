"""The reproduction's sections: the shared tuning protocol, a family of matrix games, an EFG.

**Tuning protocol, one for every tuned arm.** Each arm's free parameters are
chosen on ``tuning_games`` held-out games per family (drawn from their own stream, never the
evaluation games), over the same grid: η ∈ ``eta_grid`` × step rule ∈ {simultaneous,
alternating} × (for the reference methods) μ ∈ ``mu_grid``, by :func:`~.analysis.pick_setting`
(fewest median iterations to 1e-6 within ``tuning_iterations``). The fixed-σ arms take their μ
per game from the thresholds instead (½·min(μ̄_x, μ̄_y), :func:`~.thresholds.perturbation_thresholds`)
and tune η and the step rule the same way; ``symmetric`` (fixed μ) reuses the ``asymmetric``
arm's μ and step, so the pair differs only in who is perturbed. OGDA tunes η; plain GDA keeps
``eta`` (it cycles at any η).

**Extensive-form games.** The reference methods are tuned the same way on held-out games of
the same shape, never on Kuhn or Leduc themselves: ``efg_tuning_games`` Kuhn variants
(:func:`~.games.payoff_variants`: Kuhn's tree and chance, leaf payoffs resized), over step sizes
η = c_η/‖A‖₂, μ = c_μ·‖A‖₂ (c_η ∈ ``efg_eta_grid``, c_μ ∈ ``efg_mu_grid``) and both step rules.
Scaled by the payoff norm, the chosen (c_η, c_μ, step rule) applies to Kuhn and to Leduc
unchanged. The other gradient arms keep :func:`~.solve.efg_defaults`' rule.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from icml26.papers.asym_perturb.analysis import (
    EFG_TARGET,
    TARGET,
    fixed_mu_per_game,
    half_gaps,
    iterations_to,
    pick_setting,
    summarize,
    tail_fit,
)
from icml26.papers.asym_perturb.games import SequenceFormGame, payoff_variants, solve_lp, strategy_spaces
from icml26.papers.asym_perturb.solve import DYNAMICS, efg_defaults
from icml26.papers.asym_perturb.thresholds import perturbation_thresholds

if TYPE_CHECKING:  # config.py imports MATRIX_ARMS from here
    from icml26.papers.asym_perturb.config import Config

__all__ = ["ArmRun", "GameResult", "ScaledSetting", "Setting", "efg_game", "matrix_family", "thresholds_of",
           "tune_efg"]

#: arm → (method, fixed reference period or None for the adaptive rule); the method first
MATRIX_ARMS: dict[str, tuple[str, int | None]] = {
    "asymmetric_reference": ("asymmetric_reference", None),
    "asymmetric": ("asymmetric", None),
    "symmetric_reference": ("symmetric_reference", None),
    "symmetric_reference_k": ("symmetric_reference", 20),
    "symmetric": ("symmetric", None),
    "ogda": ("ogda", None),
    "gda": ("gda", None),
}
REFERENCE_ARMS = ("asymmetric_reference", "symmetric_reference", "symmetric_reference_k")
SYMMETRIC_REFERENCE_ARMS = ("symmetric_reference", "symmetric_reference_k")
FIXED_SIGMA_ARMS = ("asymmetric", "symmetric")


@dataclasses.dataclass(frozen=True)
class Setting:
    """An arm's parameters: step size, μ (``None``: per game, from the thresholds), step rule."""

    eta: float
    mu: float | None
    alternating: bool

    def as_metrics(self, prefix: str, mu_games: np.ndarray | None = None) -> dict[str, float]:
        mu = self.mu if self.mu is not None else (float(np.median(mu_games)) if mu_games is not None else 0.0)
        return {f"{prefix}_eta": self.eta, f"{prefix}_mu": mu, f"{prefix}_alternating": float(self.alternating)}


@dataclasses.dataclass(frozen=True)
class ScaledSetting:
    """An extensive-form setting relative to the payoff norm: η = eta_scale/‖A‖₂, μ = mu_scale·‖A‖₂."""

    eta_scale: float
    mu_scale: float
    alternating: bool

    def for_game(self, A: torch.Tensor) -> Setting:
        """The absolute (η, μ) on the game ``A`` (n, m)."""
        norm = float(torch.linalg.matrix_norm(A.cpu().to(torch.float64), 2))
        return Setting(self.eta_scale / norm, self.mu_scale * norm, self.alternating)


@dataclasses.dataclass(frozen=True)
class ArmRun:
    """One arm on one family (or one EFG): summary figures, (S, T+1) NashConv curves, timing."""

    arm: str
    stats: dict[str, float]
    nash_conv: np.ndarray
    seconds: float
    setting: Setting | None = None


@dataclasses.dataclass(frozen=True)
class GameResult:
    """Every arm on one family of games (or one EFG), with the thresholds of the matrix games."""

    family: str
    arms: tuple[ArmRun, ...]
    mu_bar_x: np.ndarray | None = None
    mu_bar_y: np.ndarray | None = None
    mu_games: np.ndarray | None = None
    """μ of the fixed-σ arms on each evaluation game."""

    def arm(self, name: str) -> ArmRun:
        return next(a for a in self.arms if a.arm == name)

    def stats(self, name: str) -> dict[str, float]:
        return self.arm(name).stats


def thresholds_of(A: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(μ̄_x, μ̄_y) of every game of a (B, n, m) batch, from uniform references."""
    th = [perturbation_thresholds(a) for a in A.cpu()]
    return np.array([t.mu_x for t in th]), np.array([t.mu_y for t in th])


def _call(arm: str, A: torch.Tensor, eta, mu, alternating: bool, iterations: int, progress=None):
    method, period = MATRIX_ARMS[arm]
    X, Y = strategy_spaces(A)
    kw: dict[str, Any] = dict(eta=eta, iterations=iterations, alternating=alternating, show_progress=progress)
    if method in ("asymmetric", "symmetric", "asymmetric_reference", "symmetric_reference"):
        kw["mu"] = mu
    if method.endswith("_reference"):
        kw["reference_period"] = period
    return DYNAMICS[method](A, X, Y, **kw)


def tune(arm: str, A: torch.Tensor, mu_games: np.ndarray, config: Config) -> Setting:
    """The arm's setting by the shared protocol on the held-out games ``A`` (G, n, m)."""
    G = A.shape[0]
    steps = (False,) if arm == "ogda" else (False, True)
    mus = tuple(config.mu_grid) if arm in REFERENCE_ARMS else (None,)
    candidates, iters, finals = [], [], []
    for alternating in steps:
        grid = list(itertools.product(config.eta_grid, mus))
        K = len(grid)
        eta = torch.tensor([e for e, _ in grid for _ in range(G)], dtype=A.dtype)
        if arm in FIXED_SIGMA_ARMS:
            mu = torch.as_tensor(np.tile(mu_games, K), dtype=A.dtype)
        else:
            mu = torch.tensor([(m or 0.0) for _, m in grid for _ in range(G)], dtype=A.dtype)
            mu = mu if arm in REFERENCE_ARMS else 0.0
        run = _call(arm, A.repeat(K, 1, 1), eta, mu, alternating, config.tuning_iterations)
        nc = run.nash_conv.cpu().numpy().reshape(K, G, -1)
        iters.append(iterations_to(nc.reshape(K * G, -1), TARGET).reshape(K, G))
        finals.append(nc[..., -1])
        candidates += [Setting(float(e), m, alternating) for e, m in grid]
    best = pick_setting(np.concatenate(iters), np.concatenate(finals))
    return candidates[best]


def tune_efg(arm: str, sfg: SequenceFormGame, generator: torch.Generator, config: Config) -> ScaledSetting:
    """A reference arm's (c_η, c_μ, step rule) on ``efg_tuning_games`` payoff variants of ``sfg``
    (drawn from ``generator``), by :func:`~.analysis.pick_setting` within ``efg_tuning_iterations``."""
    method, period = MATRIX_ARMS[arm]
    A = payoff_variants(sfg.A, generator, config.efg_tuning_games)
    G = A.shape[0]
    norms = torch.linalg.matrix_norm(A, 2)
    grid = list(itertools.product(config.efg_eta_grid, config.efg_mu_grid))
    K = len(grid)
    eta = torch.cat([e / norms for e, _ in grid])
    mu = torch.cat([m * norms for _, m in grid])
    candidates, iters, finals = [], [], []
    for alternating in (False, True):
        run = DYNAMICS[method](A.repeat(K, 1, 1), sfg.X, sfg.Y, eta=eta, mu=mu, iterations=config.efg_tuning_iterations,
                               alternating=alternating, reference_period=period)
        nc = run.nash_conv.cpu().numpy().reshape(K, G, -1)
        iters.append(iterations_to(nc.reshape(K * G, -1), TARGET).reshape(K, G))
        finals.append(nc[..., -1])
        candidates += [ScaledSetting(float(e), float(m), alternating) for e, m in grid]
    return candidates[pick_setting(np.concatenate(iters), np.concatenate(finals))]


def matrix_family(family: str, A: torch.Tensor, A_tune: torch.Tensor, config: Config, ctx) -> GameResult:
    """Tune every arm on ``A_tune``, then run it on the evaluation games ``A`` (S, n, m)."""
    ctx.stage(f"{family}: thresholds of {A.shape[0] + A_tune.shape[0]} games")
    mu_x, mu_y = thresholds_of(A)
    tune_x, tune_y = thresholds_of(A_tune)
    mu_games = fixed_mu_per_game(mu_x, mu_y, config.threshold_fraction, config.mu_cap)
    mu_tune = fixed_mu_per_game(tune_x, tune_y, config.threshold_fraction, config.mu_cap)
    settings: dict[str, Setting] = {}
    for arm in ("asymmetric_reference", "symmetric_reference", "symmetric_reference_k", "asymmetric", "ogda"):
        ctx.stage(f"{family}: tuning {arm} on {A_tune.shape[0]} held-out games")
        settings[arm] = tune(arm, A_tune, mu_tune, config)
    settings["symmetric"] = settings["asymmetric"]
    settings["gda"] = Setting(config.eta, None, False)
    ctx.stage(f"{family}: {len(MATRIX_ARMS)} arms × {config.iterations} iterations on {A.shape[0]} games")
    values = np.array([solve_lp(a)[0] for a in A.cpu()])
    runs = []
    for arm in MATRIX_ARMS:
        s = settings[arm]
        mu = torch.as_tensor(mu_games, dtype=A.dtype) if arm in FIXED_SIGMA_ARMS else s.mu
        start = time.perf_counter()
        sol = _call(arm, A.to(ctx.device), s.eta, mu, s.alternating, config.iterations, ctx.show_progress)
        nc = sol.nash_conv.cpu().numpy()
        stats = summarize(nc, sol.evaluations_per_step)
        stats.update(s.as_metrics("tuned", mu_games if arm in FIXED_SIGMA_ARMS else None))
        if arm == "asymmetric":
            stats.update(half_gaps(values, sol.best_y_value[:, -1].cpu().numpy(),
                                   sol.best_x_value[:, -1].cpu().numpy()))
        runs.append(ArmRun(arm, stats, nc, round(time.perf_counter() - start, 2), s))
    return GameResult(family, tuple(runs), mu_x, mu_y, mu_games)


def efg_game(sfg: SequenceFormGame, arms: tuple[str, ...], iterations: int, ctx,
             tuned: dict[str, ScaledSetting] | None = None) -> GameResult:
    """Every arm on one sequence-form game: the arms in ``tuned`` with their held-out setting, the
    other gradient arms with :func:`~.solve.efg_defaults` and alternating steps (reference arms:
    adaptive, ``symmetric_reference_k`` every 20 steps); CFR+ reports its average."""
    tuned = tuned or {}
    rule_eta, rule_mu = efg_defaults(sfg.A)
    runs = []
    for arm in arms:
        method, period = MATRIX_ARMS.get(arm, ("cfr_plus", None))
        setting = tuned[arm].for_game(sfg.A) if arm in tuned else Setting(rule_eta, rule_mu, True)
        kw: dict[str, Any] = dict(eta=setting.eta, iterations=iterations, alternating=setting.alternating,
                                  show_progress=ctx.show_progress)
        if method in ("asymmetric", "symmetric", "asymmetric_reference", "symmetric_reference"):
            kw["mu"] = setting.mu
        if method.endswith("_reference"):
            kw["reference_period"] = period
        A = sfg.A.to(ctx.device)[None]
        start = time.perf_counter()
        sol = DYNAMICS[method](A, sfg.X, sfg.Y, **kw)
        seconds = time.perf_counter() - start
        nc = sol.nash_conv.cpu().numpy()
        _, r2, _ = tail_fit(nc[0])
        stats = {
            "final_nashconv": float(nc[0, -1]),
            "iters_to_1e-6": float(iterations_to(nc, TARGET)[0]),
            "iters_to_1e-3": float(iterations_to(nc, EFG_TARGET)[0]),
            "value_p0": float(sfg.value_for_player0(sol.x[0], sol.y[0])),
            "tail_r2": 0.0 if np.isnan(r2) else r2,
        }
        if arm in tuned:
            stats.update({"tuned_eta_scale": tuned[arm].eta_scale, "tuned_mu_scale": tuned[arm].mu_scale,
                          "tuned_alternating": float(tuned[arm].alternating)})
        # wall time varies between runs of one seed: provenance and notes, never a metric
        runs.append(ArmRun(arm, stats, nc, round(seconds, 2), None if method == "cfr_plus" else setting))
    return GameResult(sfg.game.get_type().short_name.replace("_poker", ""), tuple(runs))
