"""Reproduction: last-iterate NashConv of asymmetric vs symmetric perturbation and others.

Games: U(−1, 1) random matrix games, a degenerate family (duplicated rows and columns:
non-unique equilibria), and Kuhn poker (and Leduc at full scale) in sequence form.
Every method runs from the uniform strategy with the same step size; the reference
methods (asymmetric and symmetric) share μ and the reference rule, and the fixed-σ
methods (asymmetric and symmetric) share their μ, so each pair differs only in who
is perturbed. A second anchored symmetric arm, ``symmetric_reference_k``, is APGA with
the authors' fixed slingshot period, so that the asymmetric method is measured
against the better of the two. On matrix games a diagnostic arm, ``asymmetric_small_mu``,
runs the fixed-σ pair at a μ below both players' thresholds, with the alternating steps
and larger η that so small a μ needs (it is the only arm with another step rule); for
both fixed-σ pairs the x and y halves' gaps are reported separately (v* from the LP).
Metrics per arm: the fraction of seeds with NashConv < 1e-8 at the horizon, the median
number of iterations to 1e-6, the median final NashConv, and a straight-line fit of
log10 NashConv over the tail (linear rate).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from icml26.common.config import validate_numbers
from icml26.contract import Outcome, RunContext
from icml26.papers.asym_perturb.analysis import (
    TARGET,
    half_gaps,
    iterations_to,
    quantile_bands,
    speedup,
    summarize,
    tail_fit,
)
from icml26.papers.asym_perturb.claims import CHECKS
from icml26.papers.asym_perturb.figures import plot
from icml26.papers.asym_perturb.games import degenerate_game, random_game, sequence_form_game, solve_lp
from icml26.papers.asym_perturb.solve import solve_efg, solve_matrix_game

__all__ = ["CHECKS", "EFG_ARMS", "MATRIX_ARMS", "STREAMS", "ArmRun", "Config", "GameResult", "plot", "run"]

# arm name → method; the "_k" arm is APGA with the authors' fixed slingshot period; the
# "_small_mu" arm (matrix games only) is the fixed-σ pair at a μ below both players'
# thresholds, with the alternating steps and the larger η that such a small μ needs
MATRIX_ARMS = {"asymmetric_reference": "asymmetric_reference", "asymmetric": "asymmetric",
               "asymmetric_small_mu": "asymmetric",
               "symmetric_reference": "symmetric_reference",
               "symmetric_reference_k": "symmetric_reference", "symmetric": "symmetric",
               "ogda": "ogda", "gda": "gda"}
EFG_ARMS = {**{a: m for a, m in MATRIX_ARMS.items() if a != "asymmetric_small_mu"},
            "cfr_plus": "cfr_plus"}
FIXED_MU_METHODS = ("asymmetric", "symmetric")
SYMMETRIC_REFERENCE_ARMS = ("symmetric_reference", "symmetric_reference_k")
KUHN_VALUE = -1.0 / 18.0  # player 0's value of Kuhn poker (OpenSpiel's cfr_test)

#: Named random streams (name -> the integer offset of the earlier bare-offset API, so numbers stay).
STREAMS = {"games": 0}
"""``games``: the seed of the torch generator that draws every matrix game."""


@dataclasses.dataclass
class Config:
    """Settings of the asym_perturb reproduction (defaults: the full scale)."""

    seeds: int = 50
    """Random games per matrix family (the authors' APGA experiments use 50 trials)."""
    random_size: int = 50
    """Actions per player of the U(−1, 1) random games (50 in the authors' APGA code)."""
    degenerate_base: int = 25
    """Size of the random core of a degenerate game (brief: 30×30 degenerate games)."""
    degenerate_duplicates: int = 5
    """Rows and columns of the core copied once more (non-unique equilibria)."""
    iterations: int = 100_000
    """Iterations per matrix game."""
    eta: float = 0.05
    """Step size η of every gradient method (the authors' APGA learning rate)."""
    mu: float = 1.0
    """μ of the reference methods (the authors' APGA perturbation strength)."""
    mu_fixed: float = 0.3
    """μ of the fixed-reference methods. The brief's pilot value, at which *x* was exact on its
    7×7 degenerate game; the pair is exact only if μ is below both players' thresholds μ̄_x
    and μ̄_y, which differ per game (μ̄_y < 0.1 on the test's degenerate game)."""
    small_mu: float = 0.03
    """μ of arm asymmetric_small_mu (fixed σ, matrix games): below both players' thresholds on
    19 of the 20 quick games of each family (by the QP of the tests); 0.3 is on 5–10 of 20."""
    small_mu_eta: float = 0.4
    """Step size of arm asymmetric_small_mu, with alternating steps: simultaneous GDA at η = 0.05
    does not converge at μ = 0.03 (it needs η ≲ μ/‖A‖²), alternating GDA is stable at η = 0.4."""
    reference_period: int | None = dataclasses.field(default=None, metadata={"min": 1})
    """Reference update every K iterations for both reference methods; None: adaptive rule."""
    baseline_reference_period: int = dataclasses.field(default=20, metadata={"min": 1})
    """Arm symmetric_reference_k: APGA with this fixed slingshot period (20 in the authors' code)."""
    alternating: bool = False
    """Gauss–Seidel steps (y answers x_{t+1}) instead of simultaneous ones (ours, not the paper's)."""
    efg_games: tuple[str, ...] = ("kuhn_poker", "leduc_poker")
    """OpenSpiel games solved in sequence form (Kuhn and Leduc, the authors' usual EFGs)."""
    efg_iterations: int = 100_000
    """Iterations per extensive-form game."""
    efg_eta: float = 0.3
    """Step size η on the extensive-form games (Kuhn's sequence-form payoffs are small: ≤ 1/3)."""
    efg_mu: float = 1.0
    """μ of the reference methods on the extensive-form games (as for matrix games)."""
    efg_mu_fixed: float = 0.05
    """μ of the fixed-reference methods on EFGs; picked on Kuhn itself from 0.001–0.1 (μ̄ < 0.1 there)."""
    curve_points: int = dataclasses.field(default=201, metadata={"min": 2})
    """Points per NashConv curve written to the result."""

    def __post_init__(self) -> None:
        validate_numbers(self)
        for name in ("seeds", "random_size", "degenerate_base", "iterations", "efg_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if not 0 <= self.degenerate_duplicates <= self.degenerate_base:
            raise ValueError(f"degenerate_duplicates={self.degenerate_duplicates} must be in "
                             f"0..degenerate_base={self.degenerate_base}")
        for name in ("eta", "mu", "mu_fixed", "small_mu", "small_mu_eta", "efg_eta", "efg_mu",
                     "efg_mu_fixed"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} must be > 0")
        if self.reference_period is not None and self.reference_period < 1:
            raise ValueError(f"reference_period={self.reference_period} must be >= 1 or None")
        if self.baseline_reference_period < 1:
            raise ValueError(f"baseline_reference_period={self.baseline_reference_period} must be >= 1")
        if self.curve_points < 2:
            raise ValueError(f"curve_points={self.curve_points} must be >= 2")
        unknown = [g for g in self.efg_games if g not in ("kuhn_poker", "leduc_poker")]
        if unknown:
            raise ValueError(f"efg_games {unknown} are not supported here; use kuhn_poker and/or "
                             "leduc_poker (the library's solve_efg takes any zero-sum game)")

    @classmethod
    def quick(cls) -> "Config":
        """The CPU reproduction of issue 4: 20 seeds, 2·10⁴ iterations, Kuhn with 10⁴."""
        return cls(seeds=20, random_size=10, degenerate_base=5, degenerate_duplicates=2,
                   iterations=20_000, efg_games=("kuhn_poker",), efg_iterations=10_000)

    @classmethod
    def tiny(cls) -> "Config":
        """The contract-suite setting (seconds)."""
        return cls(seeds=3, random_size=4, degenerate_base=3, degenerate_duplicates=1,
                   iterations=300, efg_games=("kuhn_poker",), efg_iterations=60, curve_points=21)


@dataclasses.dataclass(frozen=True)
class ArmRun:
    """One arm on one game family: its summary figures, NashConv curves and timing."""

    arm: str
    stats: dict[str, float]
    nash_conv: np.ndarray
    """(S, T+1) NashConv of the last iterate (CFR+: the average)."""
    seconds: float


@dataclasses.dataclass(frozen=True)
class GameResult:
    """Every arm on one family of games (a matrix family over seeds, or one extensive-form game)."""

    family: str
    arms: tuple[ArmRun, ...]

    def arm(self, name: str) -> ArmRun:
        return next(a for a in self.arms if a.arm == name)

    def stats(self, name: str) -> dict[str, float]:
        return self.arm(name).stats


def _arm_settings(arm: str, config: Config, *, efg: bool) -> dict[str, Any]:
    method = MATRIX_ARMS.get(arm) or EFG_ARMS[arm]
    if arm == "asymmetric_small_mu":
        return dict(method=method, eta=config.small_mu_eta, mu=config.small_mu,
                    reference_period=None, alternating=True)
    if method in FIXED_MU_METHODS:
        mu = config.efg_mu_fixed if efg else config.mu_fixed
    else:
        mu = config.efg_mu if efg else config.mu
    period = None
    if arm == "symmetric_reference_k":
        period = config.baseline_reference_period
    elif method.endswith("_reference"):
        period = config.reference_period
    return dict(method=method, eta=config.efg_eta if efg else config.eta, mu=mu,
                reference_period=period, alternating=config.alternating)


def _matrix_family(family: str, A: torch.Tensor, config: Config, ctx: RunContext) -> GameResult:
    runs = []
    for arm in MATRIX_ARMS:
        start = time.perf_counter()
        sol = solve_matrix_game(A.to(ctx.device), iterations=config.iterations,
                                show_progress=ctx.show_progress,
                                **_arm_settings(arm, config, efg=False))
        nc = sol.nash_conv.cpu().numpy()
        stats = summarize(nc, sol.evaluations_per_iteration)
        if MATRIX_ARMS[arm] == "asymmetric":
            # which half of the fixed-σ pair is exact (v* per seed from the LP)
            values = np.array([solve_lp(a)[0] for a in A.cpu()])
            stats.update(half_gaps(values, sol.best_y_value[:, -1].cpu().numpy(),
                                   sol.best_x_value[:, -1].cpu().numpy()))
        runs.append(ArmRun(arm, stats, nc, round(time.perf_counter() - start, 2)))
    return GameResult(family, tuple(runs))


def _efg(game: str, config: Config, ctx: RunContext) -> GameResult:
    runs = []
    sfg = sequence_form_game(game)
    for arm in EFG_ARMS:
        start = time.perf_counter()
        sol = solve_efg(sfg, iterations=config.efg_iterations,
                        device=ctx.device, show_progress=ctx.show_progress,
                        **_arm_settings(arm, config, efg=True))
        nc = sol.nash_conv.cpu().numpy()
        slope, r2, _ = tail_fit(nc)
        stats = {
            "final_nashconv": float(nc[-1]),
            "iters_to_1e-6": float(iterations_to(nc[None], TARGET)[0]),
            "value_p0": float(sol.game.value_for_player0(sol.x, sol.y)),
            "tail_r2": 0.0 if np.isnan(r2) else r2,
        }
        runs.append(ArmRun(arm, stats, nc[None], round(time.perf_counter() - start, 2)))
    return GameResult(game.replace("_poker", ""), tuple(runs))


def _curve(result: GameResult, points: int, title: str) -> dict[str, Any]:
    series, lower, upper, x = {}, {}, {}, None
    for run in result.arms:
        x, lower[run.arm], series[run.arm], upper[run.arm] = quantile_bands(run.nash_conv, points)
    return {"x": x, "series": series, "lower": lower, "upper": upper, "xlabel": "iteration",
            "ylabel": "NashConv of the last iterate (median, IQR)", "title": title, "logy": True}


def run(config: Config, ctx: RunContext) -> Outcome:
    # The games are tiny: one thread is ~30× faster than two on a busy 2-core machine
    # (OpenMP synchronisation per small op), so the run uses one and restores the count.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ctx.provenance["asym_perturb_torch_threads"] = 1
    try:
        return _run(config, ctx)
    finally:
        torch.set_num_threads(threads)


def _matrix_checks(fam: str, result: GameResult) -> list:
    stats = result.stats
    # the strongest anchored symmetric baseline: adaptive rule or the authors' fixed period
    best_symmetric = [stats(a)["median_iters_to_1e-6"] for a in SYMMETRIC_REFERENCE_ARMS]
    lower_bound = "an unreached target counts as T+1, so the ratio is then a lower bound"
    return [
        CHECKS[f"{fam}_asymref_exact"].measure(stats("asymmetric_reference")["frac_below_1e-8"]),
        CHECKS[f"{fam}_asym_exact"].measure(stats("asymmetric")["frac_below_1e-8"]),
        CHECKS[f"{fam}_asymref_speedup"].measure(
            speedup(best_symmetric, stats("asymmetric_reference")["median_iters_to_1e-6"]), note=lower_bound),
        CHECKS[f"{fam}_asym_speedup"].measure(
            speedup(best_symmetric, stats("asymmetric")["median_iters_to_1e-6"]), note=lower_bound),
        CHECKS[f"{fam}_symmetric_plateau"].measure(stats("symmetric")["median_final_nashconv"]),
        CHECKS[f"{fam}_symmetric_flat"].measure(stats("symmetric")["median_final_over_half"]),
        CHECKS[f"{fam}_asymref_linear_tail"].measure(stats("asymmetric_reference")["median_tail_r2"]),
    ]


def _run(config: Config, ctx: RunContext) -> Outcome:
    generator = torch.Generator().manual_seed(int(ctx.rng("games").integers(2**31)))
    families = {
        "random": random_game(generator, config.random_size, batch=config.seeds),
        "degenerate": degenerate_game(generator, config.degenerate_base,
                                      config.degenerate_duplicates, batch=config.seeds),
    }
    metrics: dict[str, dict[str, float]] = {m: {} for m in MATRIX_ARMS | EFG_ARMS}
    curves: dict[str, Any] = {}
    checks = []
    n_deg = config.degenerate_base + config.degenerate_duplicates
    shapes = {"random": f"{config.random_size}×{config.random_size}",
              "degenerate": f"{n_deg}×{n_deg}"}
    seconds = ctx.provenance.setdefault("asym_perturb_seconds", {})
    for fam, A in families.items():
        result = _matrix_family(fam, A, config, ctx)
        seconds[fam] = {r.arm: r.seconds for r in result.arms}
        for r in result.arms:
            metrics[r.arm].update({f"{fam}_{k}": v for k, v in r.stats.items()})
        curves[f"nashconv_{fam}"] = _curve(
            result, config.curve_points,
            f"{shapes[fam]} {fam} games, {config.seeds} seeds (η={config.eta}, μ={config.mu}, "
            f"fixed-σ μ={config.mu_fixed}; small_mu: μ={config.small_mu}, η={config.small_mu_eta}, "
            "alternating)")
        curves[f"iterations_{fam}"] = {
            "x": list(range(config.seeds)),
            "series": {r.arm: iterations_to(r.nash_conv, TARGET).astype(float) for r in result.arms},
            "xlabel": "seed", "ylabel": f"iterations to NashConv ≤ 1e-6 ({config.iterations + 1}: never)",
            "title": f"{fam}: iterations to 1e-6 per seed", "logy": True}
        checks += _matrix_checks(fam, result)

    for game in config.efg_games:
        result = _efg(game, config, ctx)
        short = result.family
        seconds[short] = {r.arm: r.seconds for r in result.arms}
        for r in result.arms:
            metrics[r.arm].update({f"{short}_{k}": v for k, v in r.stats.items()})
        curves[f"nashconv_{short}"] = _curve(
            result, config.curve_points,
            f"{short.capitalize()} poker, sequence form (η={config.efg_eta}, μ={config.efg_mu}, "
            f"fixed-σ μ={config.efg_mu_fixed}); CFR+: average")
        if short == "kuhn":
            checks += [
                CHECKS["kuhn_asymref_exact"].measure(result.stats("asymmetric_reference")["final_nashconv"]),
                CHECKS["kuhn_asym_exact"].measure(result.stats("asymmetric")["final_nashconv"]),
                CHECKS["kuhn_value"].measure(result.stats("asymmetric_reference")["value_p0"] - KUHN_VALUE),
            ]
    metrics = {m: v for m, v in metrics.items() if v}
    ctx.provenance["asym_perturb_games"] = {**shapes, "efg": list(config.efg_games)}
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=_notes(config, metrics, families))


def _notes(config: Config, metrics: dict[str, dict[str, float]], families) -> list[str]:
    notes = []
    for fam in families:
        sym = min(metrics[a][f"{fam}_median_iters_to_1e-6"] for a in SYMMETRIC_REFERENCE_ARMS)
        for method in ("asymmetric_reference", "asymmetric"):
            mine = metrics[method][f"{fam}_median_iters_to_1e-6"]
            if mine > config.iterations:
                notes.append(f"{fam}: {method} did not reach 1e-6 on the median seed within "
                             f"{config.iterations} iterations.")
        asym = metrics["asymmetric"]
        if asym[f"{fam}_frac_below_1e-8"] < 0.9:
            notes.append(
                f"{fam}: the fixed-σ pair (μ={config.mu_fixed}) is below 1e-8 on "
                f"{asym[f'{fam}_frac_below_1e-8']:.2f} of seeds; its x half (x-perturbed instance) "
                f"on {asym[f'{fam}_frac_x_half_below_1e-8']:.2f}, its y half (y-perturbed "
                f"instance) on {asym[f'{fam}_frac_y_half_below_1e-8']:.2f} (median final gaps "
                f"{asym[f'{fam}_median_final_x_gap']:.1e} and {asym[f'{fam}_median_final_y_gap']:.1e}). "
                "A half is exact only when μ is below that player's threshold μ̄ (game dependent, "
                "and not the same for x and y).")
        small = metrics["asymmetric_small_mu"]
        notes.append(
            f"{fam}: the fixed-σ pair below both thresholds (arm asymmetric_small_mu: μ={config.small_mu}, "
            f"alternating steps, η={config.small_mu_eta}; a different step rule from the other arms, "
            f"so its iteration counts are not comparable) is below 1e-8 on "
            f"{small[f'{fam}_frac_below_1e-8']:.2f} of seeds (x half {small[f'{fam}_frac_x_half_below_1e-8']:.2f}, "
            f"y half {small[f'{fam}_frac_y_half_below_1e-8']:.2f}), median iterations to 1e-6 "
            f"{small[f'{fam}_median_iters_to_1e-6']:.0f}.")
        notes.append(f"{fam}: median iterations to 1e-6 — best symmetric_reference {sym:.0f}, "
                     f"asymmetric_reference {metrics['asymmetric_reference'][f'{fam}_median_iters_to_1e-6']:.0f} "
                     f"(asymmetric: {metrics['asymmetric'][f'{fam}_median_iters_to_1e-6']:.0f} "
                     "iterations, each 2 gradient evaluations).")
    return notes
