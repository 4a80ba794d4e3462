"""Baselines for asymmetric perturbation, with the same signature as its methods.

* :func:`symmetric`: both players perturbed with a fixed μ (f_μ = xᵀAy + μD(x, σ_x)
  − μD(y, σ_y)); converges linearly, but to the perturbed game's equilibrium, which
  is O(μ) away from the original one: NashConv plateaus.
* :func:`symmetric_reference`: the same with the reference ("slingshot") moved to the
  current iterate every K steps or by the adaptive rule (APGA, Abe et al. ICLR 2025,
  CyberAgentAILab/boosting-perturbed-ga); converges to an exact equilibrium.
* :func:`ogda`: optimistic GDA in the two-sequence form of Wei, Lee, Zhang & Luo
  (ICLR 2021), x_t = Π(x̂_t − ηg_{t−1}), x̂_{t+1} = Π(x̂_t − ηg_t); with the dilated
  prox it is DOGDA (Lee, Kroer & Luo 2021). Linear last-iterate rate on polytopes.
* :func:`gda`: plain projected GDA; its last iterate cycles or drifts.
* :func:`cfr_plus`: CFR+ (Tammelin 2014: regret matching+, alternating updates,
  linear averaging) on the sequence-form matrices; the *average* iterate converges
  at roughly O(1/T). Matches OpenSpiel's ``CFRPlusSolver`` to machine precision.

All take A of shape (B, n, m) and return a :class:`~.dynamics.Dynamics`. Their defaults
(η = 0.05, μ = 1, 10⁴ iterations) are :func:`~.solve.solve_matrix_game`'s, so that each is
a drop-in alternative to :func:`~.asymp_gda.asymmetric_reference` (``BASELINES``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from icml26.common.progress import progress
from icml26.papers.asym_perturb.dynamics import (
    Dynamics,
    _check_mu,
    check_game,
    check_reference_period,
    check_unused,
    perturbed_dynamics,
)
from icml26.papers.asym_perturb.treeplex import Treeplex

__all__ = ["cfr_plus", "gda", "ogda", "symmetric", "symmetric_reference"]


def symmetric(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float | Tensor = 0.05, mu: float | Tensor = 1.0,
              iterations: int = 10_000,
              reference_period: int | None = None, alternating: bool = False,
              bx0: Tensor | None = None, by0: Tensor | None = None,
              show_progress: bool | None = False) -> Dynamics:
    """Both players perturbed with a fixed μ and a fixed reference (the initial point)."""
    if reference_period is not None:
        raise ValueError("symmetric keeps its reference fixed; use symmetric_reference for "
                         "reference updates")
    _check_mu(mu)
    return perturbed_dynamics(A, X, Y, eta=eta, mu_x=mu, mu_y=mu, iterations=iterations,
                              alternating=alternating, bx0=bx0, by0=by0,
                              show_progress=show_progress, desc="symmetric")


def symmetric_reference(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float | Tensor = 0.05, mu: float | Tensor = 1.0,
                        iterations: int = 10_000, reference_period: int | None = None,
                        alternating: bool = False, bx0: Tensor | None = None,
                        by0: Tensor | None = None,
                        show_progress: bool | None = False) -> Dynamics:
    """Both players perturbed; both references move to the iterate (APGA's slingshot).

    ``reference_period=None`` uses the same adaptive rule as
    :func:`~.asymp_gda.asymmetric_reference`, so the two differ only in who is perturbed.
    """
    _check_mu(mu)
    check_reference_period(reference_period)
    return perturbed_dynamics(A, X, Y, eta=eta, mu_x=mu, mu_y=mu, iterations=iterations,
                              reference="adaptive" if reference_period is None else reference_period,
                              alternating=alternating, bx0=bx0, by0=by0,
                              show_progress=show_progress, desc="symmetric_reference")


def ogda(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float = 0.05, mu: float = 0.0, iterations: int = 10_000,
         reference_period: int | None = None, alternating: bool = False,
         bx0: Tensor | None = None, by0: Tensor | None = None,
         show_progress: bool | None = False) -> Dynamics:
    """Optimistic (mirror) GDA; ``mu`` (a finite number >= 0), ``reference_period`` and ``alternating`` are
    unused."""
    check_unused(mu, "mu")
    return perturbed_dynamics(A, X, Y, eta=eta, mu_x=0.0, mu_y=0.0, iterations=iterations,
                              optimistic=True, bx0=bx0, by0=by0, show_progress=show_progress,
                              desc="ogda")


def gda(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float = 0.05, mu: float = 0.0, iterations: int = 10_000,
        reference_period: int | None = None, alternating: bool = False,
        bx0: Tensor | None = None, by0: Tensor | None = None,
        show_progress: bool | None = False) -> Dynamics:
    """Plain projected (mirror) GDA; ``mu`` (a finite number >= 0) and ``reference_period`` are unused."""
    check_unused(mu, "mu")
    return perturbed_dynamics(A, X, Y, eta=eta, mu_x=0.0, mu_y=0.0, iterations=iterations,
                              alternating=alternating, bx0=bx0, by0=by0,
                              show_progress=show_progress, desc="gda")


# ---------------------------------------------------------------------------
# CFR+
# ---------------------------------------------------------------------------
def _instant_regrets(space: Treeplex, b: Tensor, loss: Tensor) -> Tensor:
    """Counterfactual regrets of a minimiser with behaviour ``b`` against ``loss``.

    Bottom-up, q_{J,a} = loss_{J,a} + Σ_{J'∈C(J,a)} V_{J'} is the counterfactual loss
    of action a and V_J = Σ_a b_J(a) q_{J,a}; the regret of a is V_J − q_{J,a}.
    """
    c = loss.clone()
    regrets = torch.zeros_like(loss)
    for g in reversed(space.groups):
        q = c[..., g.actions]
        value = (b[..., g.actions] * q).sum(-1)
        regrets[..., g.actions] = value.unsqueeze(-1) - q
        if g.parents is not None:
            c.index_add_(-1, g.parents, value)
    return regrets


def _regret_matching(space: Treeplex, regrets: Tensor) -> Tensor:
    """Behaviour proportional to positive regrets per infoset (uniform if none)."""
    b = torch.ones_like(regrets)
    for g in space.groups:
        r = regrets[..., g.actions].clamp_min(0.0)
        total = r.sum(-1, keepdim=True)
        b[..., g.actions] = torch.where(total > 0, r / total.clamp_min(1e-300),
                                        torch.full_like(r, 1.0 / g.actions.shape[1]))
    return b


def cfr_plus(A: Tensor, X: Treeplex, Y: Treeplex, *, eta: float = 0.0, mu: float = 0.0,
             iterations: int = 10_000, reference_period: int | None = None, alternating: bool = False,
             bx0: Tensor | None = None, by0: Tensor | None = None,
             show_progress: bool | None = False) -> Dynamics:
    """CFR+ on the sequence form; records NashConv of the linearly weighted *average*.

    Iteration t: update x's regrets against y_t (R ← max(R + r, 0)) and play regret
    matching; then y's against x_{t+1}; accumulate x̄ += t·x_t, ȳ += t·y_t (the
    strategies that were played at iteration t, as OpenSpiel does). ``eta``, ``mu``,
    ``reference_period`` and ``alternating`` are unused (CFR+ is step-size free and
    always alternates); ``eta`` and ``mu`` must still be finite numbers >= 0.
    """
    check_unused(eta, "eta")
    check_unused(mu, "mu")
    check_game(A, X, Y, iterations, bx0, by0)
    B = A.shape[0]
    X, Y = X.to(A.device), Y.to(A.device)
    At = A.transpose(-1, -2)
    bx = X.uniform((B,), dtype=A.dtype, device=A.device) if bx0 is None else bx0.to(A)
    by = Y.uniform((B,), dtype=A.dtype, device=A.device) if by0 is None else by0.to(A)
    rx = torch.zeros_like(bx)
    ry = torch.zeros_like(by)
    sum_x, sum_y = torch.zeros_like(bx), torch.zeros_like(by)
    best_y = torch.empty(B, iterations + 1, dtype=A.dtype, device=A.device)
    best_x = torch.empty_like(best_y)

    def observe(t: int, x: Tensor, y: Tensor) -> None:
        best_x[:, t] = X.min_linear((A @ y.unsqueeze(-1)).squeeze(-1))
        best_y[:, t] = -Y.min_linear(-(At @ x.unsqueeze(-1)).squeeze(-1))

    x, y = X.to_sequence(bx), Y.to_sequence(by)
    observe(0, x, y)
    for t in progress(range(1, iterations + 1), enabled=show_progress, desc="cfr_plus"):
        sum_x += t * x
        rx = (rx + _instant_regrets(X, bx, (A @ y.unsqueeze(-1)).squeeze(-1))).clamp_min(0.0)
        bx = _regret_matching(X, rx)
        x_next = X.to_sequence(bx)
        sum_y += t * y
        ry = (ry + _instant_regrets(Y, by, -(At @ x_next.unsqueeze(-1)).squeeze(-1))).clamp_min(0.0)
        by = _regret_matching(Y, ry)
        x, y = x_next, Y.to_sequence(by)
        weight = t * (t + 1) / 2
        observe(t, sum_x / weight, sum_y / weight)
    weight = max(iterations * (iterations + 1) / 2, 1)
    avg_x = sum_x / weight if iterations else x
    avg_y = sum_y / weight if iterations else y
    return Dynamics(x=avg_x, y=avg_y, best_y_value=best_y, best_x_value=best_x,
                    reference_updates=torch.zeros(B, dtype=torch.long, device=A.device))
