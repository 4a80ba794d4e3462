"""User entry points: solve a matrix game or an OpenSpiel game with any of the methods.

``solve_matrix_game(A, method, eta=…, mu=…, iterations=…)`` takes a payoff matrix (or a
batch of them), ``solve_efg(game, method, …)`` an OpenSpiel game; both return a
:class:`GameSolution` with the last iterate (the average for CFR+), the NashConv of
every iterate, and the iteration counts. Methods:

==========================  ===================================================
``"asymmetric"``            AsymP-GDA, fixed σ, two paired one-sided instances
``"asymmetric_reference"``  parameter-free AsymP-GDA (σ ← x_t), one instance
``"symmetric"``             both players perturbed, fixed μ and σ
``"symmetric_reference"``   both perturbed, σ ← z_t (APGA's slingshot)
``"ogda"``                  optimistic GDA (DOGDA on a treeplex)
``"gda"``                   projected GDA
``"cfr_plus"``              CFR+ (average iterate)
==========================  ===================================================
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Literal

import numpy as np
import torch
from torch import Tensor

from icml26.papers.asym_perturb.asymp_gda import asymmetric, asymmetric_reference
from icml26.papers.asym_perturb.baselines import cfr_plus, gda, ogda, symmetric, symmetric_reference
from icml26.papers.asym_perturb.dynamics import Dynamics
from icml26.papers.asym_perturb.games import SequenceFormGame, sequence_form_game, strategy_spaces
from icml26.papers.asym_perturb.treeplex import Treeplex

__all__ = ["DYNAMICS", "EFG_MU", "EFG_STEP", "GameSolution", "Method", "efg_defaults", "solve_efg",
           "solve_matrix_game"]

Method = Literal["asymmetric", "asymmetric_reference", "symmetric", "symmetric_reference",
                 "ogda", "gda", "cfr_plus"]
DYNAMICS: dict[str, Callable[..., Dynamics]] = {
    "asymmetric": asymmetric,
    "asymmetric_reference": asymmetric_reference,
    "symmetric": symmetric,
    "symmetric_reference": symmetric_reference,
    "ogda": ogda,
    "gda": gda,
    "cfr_plus": cfr_plus,
}
"""Each method's dynamics function by name (``method=`` of the solvers). Renamed from
``METHODS`` (hamu's ``UNLEARN_METHODS`` is a tuple of names): one meaning per name."""
_REFERENCE_METHODS = ("asymmetric_reference", "symmetric_reference")
_PERTURBED = ("asymmetric", "symmetric") + _REFERENCE_METHODS


@dataclasses.dataclass
class GameSolution:
    """The outcome of :func:`solve_matrix_game` or :func:`solve_efg`.

    Shapes are for one game; a batch of B games adds a leading B to every tensor.

    Attributes:
        method: the method's name.
        x: (n,) x's last iterate (CFR+: average), sequence form.
        y: (m,) y's last iterate.
        best_y_value: (T+1,) max_{y'} x_tᵀAy' for every iterate t (x's exploitability
            is this minus v*).
        best_x_value: (T+1,) min_{x'} x'ᵀAy_t.
        evaluations_per_iteration: gradient evaluations per iteration (2 for
            ``"asymmetric"``'s two instances, else 1).
        reference_updates: how often the reference moved.
        game: the :class:`SequenceFormGame` for :func:`solve_efg`, else ``None``.
    """

    method: str
    x: Tensor
    y: Tensor
    best_y_value: Tensor
    best_x_value: Tensor
    evaluations_per_iteration: int
    reference_updates: Tensor
    game: SequenceFormGame | None = None

    @property
    def nash_conv(self) -> Tensor:
        """(T+1,) NashConv(x_t, y_t) of every iterate."""
        return self.best_y_value - self.best_x_value

    @property
    def iterations(self) -> int:
        return self.best_y_value.shape[-1] - 1

    def iterations_to(self, tol: float) -> int | Tensor:
        """First iteration t with NashConv ≤ ``tol`` (a finite number), or −1 where it never gets there.

        One game: a Python ``int``; a batch of B games: a (B,) int64 tensor.
        """
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not np.isfinite(tol):
            raise ValueError(f"tol={tol!r} must be a finite number")
        hit = self.nash_conv <= tol
        first = hit.to(torch.int64).argmax(dim=-1)
        first = torch.where(hit.any(dim=-1), first, torch.full_like(first, -1))
        return int(first) if first.dim() == 0 else first

    def duality_gaps(self, value: float | Tensor) -> tuple[Tensor, Tensor]:
        """(x-gap, y-gap) curves: max_{y'} x_tᵀAy' − v* and v* − min_{x'} x'ᵀAy_t (v* finite)."""
        value = torch.as_tensor(value, dtype=self.best_y_value.dtype,
                                device=self.best_y_value.device)
        if not torch.isfinite(value).all():
            raise ValueError(f"value={value!r} must be finite (the game's value v*, e.g. from solve_lp)")
        if value.dim() > 0:
            value = value.unsqueeze(-1)
        return self.best_y_value - value, value - self.best_x_value

    def policy(self):
        """The solution as an OpenSpiel ``TabularPolicy`` (for :func:`solve_efg` results)."""
        if self.game is None:
            raise ValueError("policy() needs a solution of solve_efg (an OpenSpiel game)")
        return self.game.to_policy(self.x, self.y)


def _finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a number")
    if not np.isfinite(value):
        raise ValueError(f"{name}={value!r} must be finite")
    return float(value)


def _check(method: str, eta: float, mu: float, iterations: int,
           reference_period: int | None, seed: int | None = None) -> Callable[..., Dynamics]:
    if method not in DYNAMICS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(DYNAMICS)}")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 0:
        raise ValueError(f"iterations={iterations!r} must be a non-negative integer")
    if method != "cfr_plus" and not _finite("eta", eta) > 0:
        raise ValueError(f"eta={eta} must be > 0 (the step size)")
    if method in _PERTURBED and not _finite("mu", mu) > 0:
        raise ValueError(f"mu={mu} must be > 0 for the perturbed method {method!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed={seed!r} must be an integer or None")
    if seed is not None and seed < 0:
        raise ValueError(f"seed={seed} must be an integer >= 0 or None")
    if reference_period is not None:
        if method not in _REFERENCE_METHODS:
            raise ValueError(f"reference_period applies to {' and '.join(_REFERENCE_METHODS)} "
                             f"only, not to {method!r}; leave it None")
        if isinstance(reference_period, bool) or not isinstance(reference_period, int) \
                or reference_period < 1:
            raise ValueError(f"reference_period={reference_period!r} must be an integer >= 1 "
                             "(or None for the adaptive rule)")
    return DYNAMICS[method]


def _solve(A: Tensor, X: Treeplex, Y: Treeplex, method: str, *, eta: float, mu: float,
           iterations: int, reference_period: int | None, alternating: bool,
           x0: Tensor | None, y0: Tensor | None, seed: int | None,
           show_progress: bool | None, game: SequenceFormGame | None = None) -> GameSolution:
    fn = _check(method, eta, mu, iterations, reference_period, seed)
    single = A.dim() == 2
    A3 = A.unsqueeze(0) if single else A
    B = A3.shape[0]
    if seed is not None:
        generator = torch.Generator().manual_seed(seed)
        if x0 is None:
            x0 = X.to_sequence(X.random(generator, (B,), dtype=A.dtype).to(A.device))
        if y0 is None:
            y0 = Y.to_sequence(Y.random(generator, (B,), dtype=A.dtype).to(A.device))

    def initial(z0: Tensor | None, space: Treeplex, name: str) -> Tensor | None:
        if z0 is None:
            return None
        try:
            z0 = torch.as_tensor(z0 if isinstance(z0, Tensor) else np.asarray(z0, dtype=np.float64),
                                 dtype=A.dtype, device=A.device)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a tensor or an array of numbers") from None
        if z0.shape not in ((space.size,), (B, space.size)):
            raise ValueError(f"{name} must have shape ({space.size},) or ({B}, {space.size}), got {tuple(z0.shape)}")
        if not torch.isfinite(z0).all():
            raise ValueError(f"{name} holds NaN or inf; pass a probability vector / sequence-form strategy")
        z0 = z0.expand(B, space.size) if z0.dim() == 1 else z0
        E, e = space.constraints(A.dtype)
        residual = (z0 @ E.to(A.device).T - e.to(A.device)).abs().max()
        if (z0 < 0).any() or residual > 1e-9:
            raise ValueError(f"{name} is not a strategy of its polytope (constraint residual "
                             f"{float(residual):.1e}); pass a probability vector / sequence-form "
                             "strategy")
        return space.to_behavioural(z0)

    run = fn(A3, X, Y, eta=eta, mu=mu, iterations=iterations, reference_period=reference_period,
             alternating=alternating, bx0=initial(x0, X, "x0"), by0=initial(y0, Y, "y0"),
             show_progress=show_progress)
    pick = (lambda t: t[0]) if single else (lambda t: t)
    return GameSolution(method=method, x=pick(run.x), y=pick(run.y),
                        best_y_value=pick(run.best_y_value), best_x_value=pick(run.best_x_value),
                        evaluations_per_iteration=run.evaluations_per_step,
                        reference_updates=pick(run.reference_updates), game=game)


def solve_matrix_game(A: Tensor | np.ndarray, method: Method = "asymmetric_reference", *,
                      eta: float = 0.05, mu: float = 1.0, iterations: int = 10_000,
                      reference_period: int | None = None, alternating: bool = False,
                      x0: Tensor | None = None, y0: Tensor | None = None,
                      seed: int | None = None, device: torch.device | str | None = None,
                      show_progress: bool | None = None) -> GameSolution:
    """Solve min_{x∈Δ_n} max_{y∈Δ_m} xᵀAy by the chosen last-iterate method.

    Args:
        A: (n, m) loss of the row player x (= payoff of the column player y), or a
            batch (B, n, m) solved in parallel. Computed in float64.
        method: one of :data:`DYNAMICS` (default: the parameter-free asymmetric method).
        eta: step size η (default 0.05, the authors' APGA learning rate).
        mu: perturbation strength μ (default 1.0, the authors' APGA value). For
            ``"asymmetric"`` exactness needs μ below both players' (game-dependent)
            thresholds; ``"symmetric"`` is in general biased by O(μ) for any μ.
        iterations: number of iterations T.
        reference_period: for the ``*_reference`` methods, move the reference every K
            iterations; ``None`` uses the adaptive rule.
        alternating: Gauss–Seidel steps (y answers x_{t+1}) instead of simultaneous.
        x0, y0: initial strategies (default uniform); also the initial references σ.
        seed: draw the initial strategies not given at random from this seed
            (``None``: start from the uniform strategies).
        device: where to compute (default: A's device, CPU for NumPy input).
        show_progress: progress bar (default: only on a terminal).

    Returns:
        A :class:`GameSolution`.
    """
    try:
        A_t = torch.as_tensor(A if isinstance(A, Tensor) else np.asarray(A, dtype=np.float64), dtype=torch.float64)
    except (TypeError, ValueError):
        raise TypeError(f"A must be a tensor or an array of numbers, got {type(A).__name__}") from None
    if device is not None:
        A_t = A_t.to(device)
    elif isinstance(A, Tensor):
        A_t = A_t.to(A.device)
    if A_t.dim() not in (2, 3) or 0 in A_t.shape:
        raise ValueError(f"A must be a non-empty (n, m) or (B, n, m) matrix, got {tuple(A_t.shape)}")
    if not torch.isfinite(A_t).all():
        raise ValueError("A has non-finite entries")
    X, Y = strategy_spaces(A_t)
    return _solve(A_t, X, Y, method, eta=eta, mu=mu, iterations=iterations,
                  reference_period=reference_period, alternating=alternating, x0=x0, y0=y0,
                  seed=seed, show_progress=show_progress)


#: The documented rule of :func:`solve_efg`: η = EFG_STEP / ‖A‖₂, μ = EFG_MU · ‖A‖₂.
EFG_STEP = 1.5
EFG_MU = 0.01


def efg_defaults(A: Tensor | np.ndarray) -> tuple[float, float]:
    """``(eta, mu)`` of the rule :func:`solve_efg` uses when they are not given.

    η = 1.5 / ‖A‖₂ and μ = 0.01 · ‖A‖₂ (spectral norm of the sequence-form payoff): both
    scale with the payoffs, so a game with payoffs ×c gets the same iterates. Chosen on Kuhn
    and Leduc poker (README, "Leduc poker"); Kuhn: η = 2.27, μ = 0.0066; Leduc: η = 3.0,
    μ = 0.005.
    """
    A_t = torch.as_tensor(A if isinstance(A, Tensor) else np.asarray(A, dtype=np.float64), dtype=torch.float64)
    if A_t.dim() != 2 or not torch.isfinite(A_t).all():
        raise ValueError("A must be one finite (n, m) matrix")
    norm = float(torch.linalg.matrix_norm(A_t.cpu(), 2))
    if norm == 0.0:
        raise ValueError("A is zero: every strategy is an equilibrium, there is nothing to scale by")
    return EFG_STEP / norm, EFG_MU * norm


def solve_efg(game: Any, method: Method = "asymmetric_reference", *, eta: float | None = None,
              mu: float | None = None, iterations: int = 10_000, reference_period: int | None = None,
              alternating: bool = True, seed: int | None = None,
              device: torch.device | str | None = None,
              show_progress: bool | None = None) -> GameSolution:
    """Solve a two-player zero-sum OpenSpiel game in sequence form (AsymP-DGDA & co.).

    Player 0 is x and minimises xᵀAy with A = −payoff[0] (see :mod:`.games`); the
    prox is the dilated Euclidean one, computed bottom-up over infosets.

    The defaults are a rule that works on Kuhn and Leduc poker: η = 1.5/‖A‖₂,
    μ = 0.01·‖A‖₂ (:func:`efg_defaults`), alternating steps, the adaptive reference rule.
    The matrix-game defaults (η = 0.05, μ = 1, simultaneous steps) leave Leduc at NashConv
    1.64 after 3,000 iterations: μ = 1 is twice ‖A‖₂ = 0.5, so each reference (proximal-point)
    step barely moves; η = 0.05–0.3 leaves the deep infosets, whose counterfactual gradients
    carry chance and opponent reach (entries of A ≤ 0.11), nearly still; and the larger η they
    need makes simultaneous steps unstable, because the y-player is not perturbed (Leduc,
    1,500 iterations at η = 3, μ = 0.005, adaptive reference: simultaneous 0.51, alternating
    2.6e-3; the README's "Extensive-form defaults" has the one-factor ablation).

    Args:
        game: a ``pyspiel.Game``, a game name (``"kuhn_poker"``), or a
            :class:`SequenceFormGame`.
        method, reference_period, seed: as in :func:`solve_matrix_game`.
        eta, mu: step size and perturbation (default: :func:`efg_defaults`).
        iterations: steps T.
        alternating: Gauss–Seidel steps (default ``True`` here, see above).
        device: where to compute (default CPU).
        show_progress: progress bar.

    Returns:
        A :class:`GameSolution` whose ``game`` is the sequence form; ``solution.policy()``
        gives an OpenSpiel ``TabularPolicy``.
    """
    sfg = game if isinstance(game, SequenceFormGame) else sequence_form_game(game)
    if eta is None or mu is None:
        rule_eta, rule_mu = efg_defaults(sfg.A)
        eta = rule_eta if eta is None else eta
        mu = rule_mu if mu is None else mu
    A = sfg.A if device is None else sfg.A.to(device)
    return _solve(A, sfg.X, sfg.Y, method, eta=eta, mu=mu, iterations=iterations,
                  reference_period=reference_period, alternating=alternating, x0=None, y0=None,
                  seed=seed, show_progress=show_progress, game=sfg)
