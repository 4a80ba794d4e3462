"""AsymP-GDA / AsymP-DGDA: perturb only one player (Abe, Sakamoto, Ariu, Iwasaki, ICML 2026).

The asymmetrically perturbed game is

    f_μ(x, y) = xᵀAy + μ·D_ψ(x, σ)        (only the minimiser x is perturbed)

with reference strategy σ and D_ψ the Euclidean distance ½‖x − σ‖² on a simplex, the
dilated Euclidean Bregman divergence on a treeplex. The paper's coincidence result:
for μ below a game-dependent threshold μ̄ the x-part of the perturbed equilibrium *is*
an equilibrium strategy of the original game (the one nearest σ, proj_{X*}(σ)); its
y-part in general is not (checked in ``tests/papers/test_asym_perturb.py``).

Two algorithms are built on it:

1. :func:`asymmetric` (AsymP-GDA with a fixed σ): run projected GDA on f_μ; the
   x-iterate converges linearly to proj_{X*}(σ). To get *both* equilibrium
   strategies we run a mirrored instance that perturbs only y (−μ·D_ψ(y, σ_y)) and
   pair x of the first instance with y of the second (any x* ∈ X* and y* ∈ Y* form an
   equilibrium of a zero-sum game). The pair is exact only if μ is below *both*
   players' thresholds: μ̄_x (for the first instance) and μ̄_y (for the mirrored one)
   differ per game, and on a degenerate game μ̄_y may be far below μ̄_x. The pairing is
   our construction; it costs two gradient evaluations per step.
2. :func:`asymmetric_reference` (the parameter-free variant, our reading): perturb
   only x, and move σ to the current x every K steps, or (``reference_period=None``)
   whenever the step's residual falls below a tolerance that halves after each
   move. The outer loop is a proximal-point method on g(x) = max_y xᵀAy, which is
   polyhedral, so it needs no small μ; at its fixed point σ = x* the optimality
   conditions make y an equilibrium strategy too, so one instance gives both.

Each step is simultaneous projected (mirror) GDA, as in the authors' earlier code;
``alternating=True`` lets y respond to x_{t+1} instead.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icml26.papers.asym_perturb.dynamics import (
    Dynamics,
    _check_mu,
    _per_instance,
    check_game,
    check_reference_period,
    perturbed_dynamics,
)
from icml26.papers.asym_perturb.treeplex import Treeplex

__all__ = ["asymmetric", "asymmetric_reference"]


def asymmetric(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float | Tensor = 0.05, mu: float | Tensor = 1.0,
               iterations: int = 10_000,
               reference_period: int | None = None, alternating: bool = False,
               bx0: Tensor | None = None, by0: Tensor | None = None,
               show_progress: bool | None = False) -> Dynamics:
    """AsymP-GDA with a fixed reference: two instances, each perturbing one player, paired.

    Args:
        A: (B, n, m) loss of x for B games.
        X, Y: the polytopes.
        eta: step size η, a number or (B,) per game.
        mu: perturbation strength μ, a number or (B,) per game; the pair is exact only for
            μ ≤ min(μ̄_x, μ̄_y), both game dependent (above μ̄_y only the x half is exact, and
            vice versa); :func:`~.thresholds.perturbation_thresholds` computes them.
        iterations: steps T (each step advances both instances).
        reference_period: must be ``None`` (the reference is the fixed initial point).
        alternating: Gauss–Seidel instead of simultaneous steps.
        bx0, by0: (B, n), (B, m) initial behavioural strategies = references σ
            (default uniform).
        show_progress: progress bar.

    Returns:
        :class:`Dynamics` of the pair (x from the x-perturbed instance, y from the
        y-perturbed one), with ``evaluations_per_step = 2``.
    """
    if reference_period is not None:
        raise ValueError("asymmetric keeps its reference fixed; use asymmetric_reference for "
                         "reference updates")
    _check_mu(mu)
    check_game(A, X, Y, iterations, bx0, by0)
    B = A.shape[0]
    zeros = torch.zeros(B, dtype=A.dtype, device=A.device)
    mus = (mu.to(A) if isinstance(mu, Tensor) else torch.full((B,), float(mu), dtype=A.dtype)).to(A.device)
    if mus.shape != (B,):
        raise ValueError(f"mu must be a number or have shape ({B},), got {tuple(mus.shape)}")
    etas = _per_instance(eta, B, A, "eta")[:, 0]
    both = lambda t: None if t is None else torch.cat([t, t])  # noqa: E731
    # instance 1 perturbs x only (μ_x = μ, μ_y = 0); instance 2 perturbs y only
    run = perturbed_dynamics(torch.cat([A, A]), X, Y, eta=torch.cat([etas, etas]), mu_x=torch.cat([mus, zeros]),
                             mu_y=torch.cat([zeros, mus]), iterations=iterations,
                             alternating=alternating, bx0=both(bx0), by0=both(by0),
                             show_progress=show_progress, desc="asymmetric")
    return Dynamics(x=run.x[:B], y=run.y[B:], best_y_value=run.best_y_value[:B],
                    best_x_value=run.best_x_value[B:],
                    reference_updates=torch.zeros(B, dtype=torch.long, device=A.device),
                    evaluations_per_step=2)


def asymmetric_reference(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float | Tensor = 0.05, mu: float | Tensor = 1.0,
                         iterations: int = 10_000, reference_period: int | None = None,
                         alternating: bool = False, bx0: Tensor | None = None,
                         by0: Tensor | None = None,
                         show_progress: bool | None = False) -> Dynamics:
    """Parameter-free AsymP-GDA: perturb x only and move its reference to the iterate.

    Args:
        A: (B, n, m) loss of x for B games.
        X, Y: the polytopes.
        eta: step size η, a number or (B,) per game.
        mu: perturbation strength μ, a number or (B,) per game (any μ > 0 converges; it
            sets the inner rate).
        iterations: steps T.
        reference_period: move σ every K steps, or ``None`` for the adaptive rule
            (move when ‖z_{t+1} − z_t‖ ≤ ε, then ε ← ε/2; ε_0 = half the first residual).
        alternating: Gauss–Seidel instead of simultaneous steps.
        bx0, by0: initial behavioural strategies (default uniform); σ starts at bx0.
        show_progress: progress bar.
    """
    _check_mu(mu)
    check_reference_period(reference_period)
    return perturbed_dynamics(A, X, Y, eta=eta, mu_x=mu, mu_y=0.0, iterations=iterations,
                              reference="adaptive" if reference_period is None else reference_period,
                              alternating=alternating, bx0=bx0, by0=by0,
                              show_progress=show_progress, desc="asymmetric_reference")
