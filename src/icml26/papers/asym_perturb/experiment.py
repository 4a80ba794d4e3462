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
import math
import textwrap
import time
from typing import Any

import numpy as np
import torch

from icml26.papers.asym_perturb.games import (degenerate_game, random_game, sequence_form_game,
                                              solve_lp)
from icml26.papers.asym_perturb.solve import solve_efg, solve_matrix_game
from icml26.results import Outcome, check

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
EXACT = 1e-8      # "reach NashConv < 1e-8" (issue 4)
TARGET = 1e-6     # "iterations to 1e-6" (issue 4)
TAIL_START, TAIL_END = 1e-3, 1e-11  # the tail over which log NashConv is fitted by a line


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
    reference_period: int | None = None
    """Reference update every K iterations for both reference methods; None: adaptive rule."""
    baseline_reference_period: int = 20
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
    curve_points: int = 201
    """Points per NashConv curve written to the result."""

    def __post_init__(self) -> None:
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


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------
def tail_fit(curve: np.ndarray) -> tuple[float, float, int]:
    """Least-squares line through log10 NashConv over the tail of one run.

    The tail runs from the first iterate with NashConv ≤ 1e-3 to the first with
    NashConv ≤ 1e-11 (or the end). Returns ``(slope per iteration, R², points)``;
    NaNs when the run never enters the tail or the tail has fewer than 10 points.
    """
    hit = np.flatnonzero(curve <= TAIL_START)
    if hit.size == 0:
        return math.nan, math.nan, 0
    start = int(hit[0])
    done = np.flatnonzero(curve[start:] <= TAIL_END)
    end = start + int(done[0]) + 1 if done.size else curve.size
    if end - start < 10:
        return math.nan, math.nan, end - start
    t = np.arange(start, end, dtype=float)
    logs = np.log10(np.clip(curve[start:end], 1e-16, None))
    slope, intercept = np.polyfit(t, logs, 1)
    residual = logs - (slope * t + intercept)
    total = ((logs - logs.mean()) ** 2).sum()
    r2 = 1.0 - (residual ** 2).sum() / total if total > 0 else 1.0
    return float(slope), float(r2), end - start


def _iterations_to(nash_conv: np.ndarray, tol: float) -> np.ndarray:
    """(S,) first iteration with NashConv ≤ tol; the horizon + 1 where it never does."""
    hit = nash_conv <= tol
    return np.where(hit.any(-1), hit.argmax(-1), nash_conv.shape[-1])


def summarize(nash_conv: np.ndarray, evaluations_per_iteration: int) -> dict[str, float]:
    """Per-method figures over seeds from (S, T+1) NashConv curves."""
    horizon = nash_conv.shape[-1] - 1
    iters = _iterations_to(nash_conv, TARGET)
    fits = [tail_fit(c) for c in nash_conv]
    slopes = np.array([f[0] for f in fits])
    r2 = np.array([f[1] for f in fits])
    fitted = ~np.isnan(r2)
    final = nash_conv[:, -1]
    half = nash_conv[:, horizon // 2]
    return {
        "frac_below_1e-8": float((final < EXACT).mean()),
        "median_final_nashconv": float(np.median(final)),
        "median_iters_to_1e-6": float(np.median(iters)),
        "median_grad_evals_to_1e-6": float(np.median(iters) * evaluations_per_iteration),
        "frac_reaching_1e-6": float((iters <= horizon).mean()),
        "median_final_over_half": float(np.median(final / np.maximum(half, 1e-300))),
        "median_tail_r2": float(np.median(r2[fitted])) if fitted.any() else 0.0,
        "median_tail_rate": float(10 ** np.median(slopes[fitted])) if fitted.any() else 1.0,
        "frac_with_tail": float(fitted.mean()),
    }


def _curve(nash_conv_by_method: dict[str, np.ndarray], points: int, title: str) -> dict[str, Any]:
    horizon = next(iter(nash_conv_by_method.values())).shape[-1] - 1
    idx = np.unique(np.linspace(0, horizon, points).round().astype(int))
    series, lower, upper = {}, {}, {}
    for method, nc in nash_conv_by_method.items():
        clipped = np.clip(nc[:, idx], 1e-16, None)
        q = np.quantile(clipped, [0.25, 0.5, 0.75], axis=0)
        lower[method], series[method], upper[method] = q[0], q[1], q[2]
    return {"x": idx, "series": series, "lower": lower, "upper": upper, "xlabel": "iteration",
            "ylabel": "NashConv of the last iterate (median, IQR)", "title": title, "logy": True}


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------
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


def _pair_halves(A: torch.Tensor, sol) -> dict[str, float]:
    """Which half of the fixed-σ pair is exact: NashConv = x-gap + y-gap, where the x-gap
    (max_{y'} xᵀAy' − v*) belongs to the x-perturbed instance and the y-gap (v* − min_{x'}
    x'ᵀAy) to the y-perturbed one; each half is exact only if μ is below that player's
    threshold (μ̄_x, μ̄_y differ per game). v* per seed from the LP."""
    value = np.array([solve_lp(a)[0] for a in A.cpu()])
    x_gap = sol.best_y_value[:, -1].cpu().numpy() - value
    y_gap = value - sol.best_x_value[:, -1].cpu().numpy()
    return {"frac_x_half_below_1e-8": float((x_gap < EXACT).mean()),
            "frac_y_half_below_1e-8": float((y_gap < EXACT).mean()),
            "median_final_x_gap": float(np.median(x_gap)),
            "median_final_y_gap": float(np.median(y_gap))}


def _matrix_family(A: torch.Tensor, config: Config, ctx,
                   seconds: dict[str, float]) -> tuple[dict, dict, dict]:
    stats, curves, iters = {}, {}, {}
    for arm in MATRIX_ARMS:
        start = time.perf_counter()
        sol = solve_matrix_game(A.to(ctx.device), iterations=config.iterations,
                                show_progress=ctx.show_progress,
                                **_arm_settings(arm, config, efg=False))
        nc = sol.nash_conv.cpu().numpy()
        stats[arm] = summarize(nc, sol.evaluations_per_iteration)
        if MATRIX_ARMS[arm] == "asymmetric":
            stats[arm].update(_pair_halves(A, sol))
        seconds[arm] = round(time.perf_counter() - start, 2)
        curves[arm] = nc
        iters[arm] = _iterations_to(nc, TARGET)
    return stats, curves, iters


def _efg(game: str, config: Config, ctx, seconds: dict[str, float]) -> tuple[dict, dict]:
    stats, curves = {}, {}
    sfg = sequence_form_game(game)
    for arm in EFG_ARMS:
        start = time.perf_counter()
        sol = solve_efg(sfg, iterations=config.efg_iterations,
                        device=ctx.device, show_progress=ctx.show_progress,
                        **_arm_settings(arm, config, efg=True))
        nc = sol.nash_conv.cpu().numpy()
        slope, r2, _ = tail_fit(nc)
        stats[arm] = {
            "final_nashconv": float(nc[-1]),
            "iters_to_1e-6": float(_iterations_to(nc[None], TARGET)[0]),
            "value_p0": float(sol.game.value_for_player0(sol.x, sol.y)),
            "tail_r2": 0.0 if math.isnan(r2) else r2,
        }
        seconds[arm] = round(time.perf_counter() - start, 2)
        curves[arm] = nc[None]
    return stats, curves


def run(config: Config, ctx) -> Outcome:
    # The games are tiny: one thread is ~30× faster than two on a busy 2-core machine
    # (OpenMP synchronisation per small op), so the run uses one and restores the count.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ctx.provenance["asym_perturb_torch_threads"] = 1
    try:
        return _run(config, ctx)
    finally:
        torch.set_num_threads(threads)


def _run(config: Config, ctx) -> Outcome:
    generator = torch.Generator().manual_seed(int(ctx.rng(0).integers(2**31)))
    families = {
        "random": random_game(generator, config.random_size, batch=config.seeds),
        "degenerate": degenerate_game(generator, config.degenerate_base,
                                      config.degenerate_duplicates, batch=config.seeds),
    }
    metrics: dict[str, dict[str, float]] = {m: {} for m in MATRIX_ARMS | EFG_ARMS}
    curves: dict[str, Any] = {}
    checks = []
    notes = []
    n_deg = config.degenerate_base + config.degenerate_duplicates
    shapes = {"random": f"{config.random_size}×{config.random_size}",
              "degenerate": f"{n_deg}×{n_deg}"}
    for fam, A in families.items():
        seconds = ctx.provenance.setdefault("asym_perturb_seconds", {}).setdefault(fam, {})
        stats, nc, iters = _matrix_family(A, config, ctx, seconds)
        for method, values in stats.items():
            metrics[method].update({f"{fam}_{k}": v for k, v in values.items()})
        curves[f"nashconv_{fam}"] = _curve(
            nc, config.curve_points,
            f"{shapes[fam]} {fam} games, {config.seeds} seeds (η={config.eta}, μ={config.mu}, "
            f"fixed-σ μ={config.mu_fixed}; small_mu: μ={config.small_mu}, η={config.small_mu_eta}, "
            "alternating)")
        curves[f"iterations_{fam}"] = {
            "x": list(range(config.seeds)), "series": {m: iters[m].astype(float) for m in iters},
            "xlabel": "seed", "ylabel": f"iterations to NashConv ≤ 1e-6 ({config.iterations + 1}: never)",
            "title": f"{fam}: iterations to 1e-6 per seed", "logy": True}
        horizon = config.iterations
        for method in ("asymmetric_reference", "asymmetric"):
            checks.append(check(f"{fam}: {method} NashConv < 1e-8 at T={horizon} (fraction of seeds)",
                                stats[method]["frac_below_1e-8"], ">=", 0.9))
        # the strongest anchored symmetric baseline: adaptive rule or the authors' fixed period
        best_symmetric = min(stats[a]["median_iters_to_1e-6"] for a in SYMMETRIC_REFERENCE_ARMS)
        for method in ("asymmetric_reference", "asymmetric"):
            checks.append(check(
                f"{fam}: median iterations to 1e-6, best symmetric_reference / {method}",
                best_symmetric / stats[method]["median_iters_to_1e-6"], ">=", 2.0,
                note="an unreached target counts as T+1, so the ratio is then a lower bound"))
        checks.append(check(f"{fam}: symmetric (fixed μ) median final NashConv (plateau level)",
                            stats["symmetric"]["median_final_nashconv"], ">", 1e-4))
        checks.append(check(f"{fam}: symmetric NashConv(T)/NashConv(T/2), median (flat = plateau)",
                            stats["symmetric"]["median_final_over_half"], ">=", 0.5))
        checks.append(check(f"{fam}: asymmetric_reference tail fit of log NashConv, median R²",
                            stats["asymmetric_reference"]["median_tail_r2"], ">", 0.9))

    for game in config.efg_games:
        short = game.replace("_poker", "")
        seconds = ctx.provenance.setdefault("asym_perturb_seconds", {}).setdefault(short, {})
        stats, nc = _efg(game, config, ctx, seconds)
        for method, values in stats.items():
            metrics[method].update({f"{short}_{k}": v for k, v in values.items()})
        curves[f"nashconv_{short}"] = _curve(
            nc, config.curve_points,
            f"{short.capitalize()} poker, sequence form (η={config.efg_eta}, μ={config.efg_mu}, "
            f"fixed-σ μ={config.efg_mu_fixed}); CFR+: average")
        if short == "kuhn":
            for method in ("asymmetric_reference", "asymmetric"):
                checks.append(check(f"kuhn: {method} NashConv at T={config.efg_iterations}",
                                    stats[method]["final_nashconv"], "<", 1e-6))
            checks.append(check("kuhn: asymmetric_reference value for player 0 minus (−1/18)",
                                stats["asymmetric_reference"]["value_p0"] - KUHN_VALUE, "abs<=", 1e-6))
    metrics = {m: v for m, v in metrics.items() if v}

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
    ctx.provenance["asym_perturb_games"] = {**shapes, "efg": list(config.efg_games)}
    return Outcome(metrics=metrics, checks=checks, curves=curves, notes=notes)


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------
_COLORS = {"asymmetric_reference": "#d62728", "asymmetric": "#ff7f0e",
           "asymmetric_small_mu": "#e377c2", "symmetric_reference": "#1f77b4", "symmetric_reference_k": "#8c564b",
           "symmetric": "#17becf", "ogda": "#2ca02c",
           "gda": "#7f7f7f", "cfr_plus": "#9467bd"}


def plot(data: dict) -> dict:
    """NashConv panels (median and IQR per method) and per-seed iterations to 1e-6."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    figures = {}
    panels = [k for k in data["curves"] if k.startswith("nashconv_")]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), layout="constrained",
                             squeeze=False)
    for ax, key in zip(axes[0], panels):
        curve = data["curves"][key]
        x = np.asarray(curve["x"], dtype=float)
        for method, ys in curve["series"].items():
            color = _COLORS.get(method)
            ys = np.array([np.nan if v is None else v for v in ys], dtype=float)
            ax.plot(x, ys, color=color, lw=1.8 if method.startswith("asym") else 1.2, label=method)
            lo = np.array([np.nan if v is None else v for v in curve["lower"][method]], dtype=float)
            hi = np.array([np.nan if v is None else v for v in curve["upper"][method]], dtype=float)
            ax.fill_between(x, lo, hi, color=color, alpha=0.15, lw=0)
        ax.set_yscale("log")
        ax.set_ylim(1e-16, 10)
        ax.axhline(EXACT, color="k", ls=":", lw=0.8)
        ax.set_xlabel(curve["xlabel"])
        ax.set_ylabel(curve["ylabel"])
        ax.set_title("\n".join(textwrap.wrap(curve["title"], 60)), fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower left")
    figures["nashconv.png"] = fig

    strips = [k for k in data["curves"] if k.startswith("iterations_")]
    if strips:
        fig, axes = plt.subplots(1, len(strips), figsize=(5.2 * len(strips), 3.8),
                                 layout="constrained", squeeze=False)
        horizon = data["config"]["iterations"]
        for ax, key in zip(axes[0], strips):
            curve = data["curves"][key]
            for i, (method, ys) in enumerate(curve["series"].items()):
                ys = np.array([np.nan if v is None else v for v in ys], dtype=float)
                jitter = np.linspace(-0.25, 0.25, len(ys))
                ax.scatter(i + jitter, ys, s=12, color=_COLORS.get(method), alpha=0.8)
                ax.hlines(np.median(ys), i - 0.35, i + 0.35, color="k", lw=1.5)
            ax.axhline(horizon + 1, color="k", ls=":", lw=0.8)
            ax.set_xticks(range(len(curve["series"])))
            ax.set_xticklabels(list(curve["series"]), rotation=30, ha="right", fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel(curve["ylabel"], fontsize=8)
            ax.set_title(curve["title"] + " (bar: median)", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
        figures["iterations.png"] = fig
    return figures
