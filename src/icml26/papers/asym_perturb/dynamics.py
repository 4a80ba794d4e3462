"""The shared engine: (optimistic) mirror descent–ascent on a perturbed bilinear game.

Every gradient method of this package (AsymP-GDA and its baselines) is one call of
:func:`perturbed_dynamics` with a different pair of perturbation strengths and a
different reference rule. On the perturbed game

    f_μ(x, y) = xᵀAy + μ_x·D_ψ(x, σ_x) − μ_y·D_ψ(y, σ_y)

with D_ψ the Bregman divergence of the dilated Euclidean regulariser ψ (½‖·‖² on a
simplex), one iteration is

1. the loss gradients g_x = A y_t + μ_x (∇ψ(x_t) − ∇ψ(σ_x)) and
   g_y = −Aᵀx_t + μ_y (∇ψ(y_t) − ∇ψ(σ_y));
2. the mirror step x_{t+1} = argmin_x ⟨η g_x, x⟩ + D_ψ(x, x_t) (on a simplex the
   projected step Π_Δ(x_t − η g_x)), and the same for y; with ``optimistic=True`` the
   two-sequence optimistic step of Wei et al. (2021) instead:
   x_t = argmin ⟨η g_{t−1}, x⟩ + D_ψ(x, x̂_t), x̂_{t+1} = argmin ⟨η g_t, x⟩ + D_ψ(x, x̂_t);
3. the reference rule: keep σ fixed (``reference=None``), move it to the current
   iterate every K steps (``reference=K``), or move it whenever the fixed-point
   residual ‖z_{t+1} − z_t‖ falls below a tolerance that halves after each move,
   starting from half the first step's residual (``reference="adaptive"``).

NashConv of the iterate is recorded at every step; it costs nothing extra because
A y_t and Aᵀx_t are the gradients. The engine records the two best-response values
max_{y'} x_tᵀAy' and min_{x'} x'ᵀAy_t separately, so that callers can pair the x of
one instance with the y of another (the asymmetric method's two instances).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from icml26.common.progress import progress
from icml26.papers.asym_perturb.treeplex import Treeplex

__all__ = ["Dynamics", "check_game", "check_reference_period", "check_unused", "perturbed_dynamics"]

log = logging.getLogger(__name__)
Reference = int | Literal["adaptive"] | None


@dataclasses.dataclass
class Dynamics:
    """What one run of :func:`perturbed_dynamics` leaves behind.

    Attributes:
        x: (B, n) last iterate of x, sequence form.
        y: (B, m) last iterate of y, sequence form.
        best_y_value: (B, T+1) max_{y'} x_tᵀAy' at every iterate t = 0..T.
        best_x_value: (B, T+1) min_{x'} x'ᵀAy_t at every iterate.
        reference_updates: (B,) how many times the reference moved.
        evaluations_per_step: gradient evaluations (one A y and one Aᵀx) per step:
            2 for the paired asymmetric instances, else 1.
    """

    x: Tensor
    y: Tensor
    best_y_value: Tensor
    best_x_value: Tensor
    reference_updates: Tensor
    evaluations_per_step: int = 1

    def __post_init__(self) -> None:
        if self.best_y_value.shape != self.best_x_value.shape:
            raise ValueError(f"best_y_value {tuple(self.best_y_value.shape)} and best_x_value "
                             f"{tuple(self.best_x_value.shape)} must have one shape (B, T+1)")

    @property
    def nash_conv(self) -> Tensor:
        """(B, T+1) NashConv of (x_t, y_t)."""
        return self.best_y_value - self.best_x_value


def _per_instance(value: float | Tensor, batch: int, like: Tensor, name: str = "eta and mu") -> Tensor:
    try:
        v = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name}={value!r} must be a number or a ({batch},) tensor") from None
    if v.dim() == 0:
        v = v.expand(batch)
    if v.shape != (batch,):
        raise ValueError(f"{name} must be numbers or have shape ({batch},), got {tuple(v.shape)}")
    if not torch.isfinite(v).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    if (v < 0).any():
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v.unsqueeze(-1)


def _check_mu(mu) -> None:
    """μ of a perturbed method: a finite number > 0, or a (B,) tensor of them (one per game)."""
    if isinstance(mu, Tensor):
        if mu.dim() != 1 or not mu.is_floating_point() or not torch.isfinite(mu).all() or not (mu > 0).all():
            raise ValueError("mu as a tensor must be (B,) finite floats > 0, one per game of the batch")
        return
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)) \
            or not 0 < mu < float("inf"):
        raise ValueError(f"mu={mu!r} must be a finite number > 0 (or a (B,) tensor of them) for a perturbed method")


def check_game(A: Tensor, X: Treeplex, Y: Treeplex, iterations: int,
               bx0: Tensor | None = None, by0: Tensor | None = None) -> None:
    """``ValueError``/``TypeError`` unless A is a finite (B, n, m) float tensor matching the
    polytopes X (size n) and Y (size m), ``iterations`` a non-negative integer and the initial
    behavioural strategies (B, n) / (B, m) when given. Every dynamics function calls it."""
    if not isinstance(A, Tensor):
        raise TypeError(f"A must be a (B, n, m) torch tensor (solve_matrix_game takes NumPy), got {type(A).__name__}")
    if A.dim() != 3:
        raise ValueError(f"A must be (B, n, m), got shape {tuple(A.shape)}")
    if not A.is_floating_point():
        raise TypeError(f"A must be a floating tensor (float64 for accuracy), got {A.dtype}")
    if not isinstance(X, Treeplex) or not isinstance(Y, Treeplex):
        raise TypeError(f"X and Y must be Treeplex objects (Treeplex.simplex(n) for a matrix game), "
                        f"got {type(X).__name__} and {type(Y).__name__}")
    batch, n, m = A.shape
    if (X.size, Y.size) != (n, m):
        raise ValueError(f"A is (B, {n}, {m}) but the polytopes have sizes {X.size}, {Y.size}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations={iterations!r} must be an integer >= 0")
    if not torch.isfinite(A).all():
        raise ValueError("A has NaN or infinite entries")
    for name, b, size in (("bx0", bx0, n), ("by0", by0, m)):
        if b is not None and (not isinstance(b, Tensor) or tuple(b.shape) != (batch, size)):
            raise ValueError(f"{name} must be a ({batch}, {size}) behavioural strategy tensor, "
                             f"got {tuple(getattr(b, 'shape', ()))}")
        if b is not None and not bool(torch.isfinite(b).all()):
            raise ValueError(f"{name} holds NaN or inf; pass behavioural strategies (or None for uniform)")


def check_reference_period(reference_period: int | None) -> None:
    """``ValueError`` naming ``reference_period`` unless it is ``None`` or an integer >= 1."""
    if reference_period is not None and (isinstance(reference_period, bool)
                                         or not isinstance(reference_period, (int, np.integer))
                                         or reference_period < 1):
        raise ValueError(f"reference_period={reference_period!r} must be an integer >= 1 "
                         "(or None for the adaptive rule)")


def check_unused(value, name: str) -> None:
    """An argument a method ignores (it keeps the common signature of the dynamics functions) must
    still be a finite number >= 0 or a tensor of them: NaN there is a caller's mistake."""
    try:
        v = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name}={value!r} must be a number or a tensor of numbers (it is unused here)") from None
    if isinstance(value, bool) or not bool(torch.isfinite(v).all()) or bool((v < 0).any()):
        raise ValueError(f"{name}={value!r} must be a finite number >= 0 (it is unused here)")


def perturbed_dynamics(
    A: Tensor,
    X: Treeplex,
    Y: Treeplex,
    *,
    eta: float | Tensor,
    mu_x: float | Tensor,
    mu_y: float | Tensor,
    iterations: int,
    reference: Reference = None,
    optimistic: bool = False,
    alternating: bool = False,
    bx0: Tensor | None = None,
    by0: Tensor | None = None,
    show_progress: bool | None = False,
    desc: str | None = None,
) -> Dynamics:
    """Run perturbed (optimistic) mirror descent–ascent on a batch of games.

    Args:
        A: (B, n, m) loss of x for each of B independent instances (float64 for
            accuracy below 1e-8).
        X, Y: the polytopes (their index tensors follow A's device).
        eta: step size η > 0, a number or (B,) per instance.
        mu_x, mu_y: perturbation strengths, numbers or (B,) per instance (0: none).
        iterations: number of steps T.
        reference: ``None`` (σ fixed at the initial point), an int K (σ ← current
            iterate every K steps), or ``"adaptive"`` (σ ← current iterate when the
            step's residual drops below a tolerance, which then halves; the first
            tolerance is half the first step's residual).
        optimistic: the optimistic two-sequence step instead of the plain one.
        alternating: update x first and let y respond to x_{t+1} (Gauss–Seidel)
            instead of the simultaneous (Jacobi) step; ignored when ``optimistic``.
        bx0, by0: (B, n), (B, m) initial behavioural strategies (default uniform);
            they are also the initial references σ.
        show_progress: progress bar (``None``: only on a terminal).
        desc: progress-bar label.
    """
    check_game(A, X, Y, iterations, bx0, by0)
    if isinstance(reference, bool) or not (
            reference is None or reference == "adaptive" or (isinstance(reference, int) and reference >= 1)):
        raise ValueError(f"reference={reference!r} must be None, a period >= 1, or 'adaptive'")
    batch, n, m = A.shape
    X, Y = X.to(A.device), Y.to(A.device)
    mux, muy = _per_instance(mu_x, batch, A, "mu_x"), _per_instance(mu_y, batch, A, "mu_y")
    eta = _per_instance(eta, batch, A, "eta")
    if not (eta > 0).all():
        raise ValueError("step sizes eta must be > 0")
    At = A.transpose(-1, -2)

    bx = X.uniform((batch,), dtype=A.dtype, device=A.device) if bx0 is None else bx0.to(A)
    by = Y.uniform((batch,), dtype=A.dtype, device=A.device) if by0 is None else by0.to(A)
    ref_x, ref_y = X.mirror_grad(bx).clone(), Y.mirror_grad(by).clone()  # ∇ψ(σ)
    best_y = torch.empty(batch, iterations + 1, dtype=A.dtype, device=A.device)
    best_x = torch.empty_like(best_y)
    updates = torch.zeros(batch, dtype=torch.long, device=A.device)
    tol = torch.full((batch,), float("inf"), dtype=A.dtype, device=A.device)
    hx, hy = bx, by  # optimistic state x̂_t, ŷ_t and their mirror gradients
    dhx, dhy = ref_x, ref_y

    def observe(t: int, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        ay = (A @ y.unsqueeze(-1)).squeeze(-1)      # (B, n): ∇_x xᵀAy
        atx = (At @ x.unsqueeze(-1)).squeeze(-1)    # (B, m): ∇_y xᵀAy
        best_x[:, t] = X.min_linear(ay)
        best_y[:, t] = -Y.min_linear(-atx)
        return ay, atx

    x, y = X.to_sequence(bx), Y.to_sequence(by)
    for t in progress(range(iterations), enabled=show_progress, desc=desc):
        ay, atx = observe(t, x, y)
        dx, dy = X.mirror_grad(bx), Y.mirror_grad(by)
        # g_x = A y + μ_x (∇ψ(x) − ∇ψ(σ_x));  g_y = −Aᵀx + μ_y (∇ψ(y) − ∇ψ(σ_y))
        gx = ay + mux * (dx - ref_x)
        gy = -atx + muy * (dy - ref_y)
        if optimistic:
            # x̂_{t+1} = argmin ⟨η g_t, x⟩ + D(x, x̂_t);  x_{t+1} = argmin ⟨η g_t, x⟩ + D(x, x̂_{t+1})
            hx, hy = X.prox(eta * gx - dhx), Y.prox(eta * gy - dhy)
            dhx, dhy = X.mirror_grad(hx), Y.mirror_grad(hy)
            bx_new, by_new = X.prox(eta * gx - dhx), Y.prox(eta * gy - dhy)
        elif alternating:
            bx_new = X.prox(eta * gx - dx)
            # y_{t+1} = argmin_y ⟨η(−Aᵀx_{t+1} + μ_y(∇ψ(y_t) − ∇ψ(σ_y))), y⟩ + D_ψ(y, y_t)
            atx_new = (At @ X.to_sequence(bx_new).unsqueeze(-1)).squeeze(-1)
            by_new = Y.prox(eta * (-atx_new + muy * (dy - ref_y)) - dy)
        else:
            # x_{t+1} = argmin_x ⟨η g_x, x⟩ + D_ψ(x, x_t) = prox(η g_x − ∇ψ(x_t))
            bx_new, by_new = X.prox(eta * gx - dx), Y.prox(eta * gy - dy)
        x_new, y_new = X.to_sequence(bx_new), Y.to_sequence(by_new)

        if reference is not None:
            if reference == "adaptive":
                residual = torch.sqrt((x_new - x).square().sum(-1) + (y_new - y).square().sum(-1))
                # ε_0 = half the first residual; move σ when ‖z_{t+1} − z_t‖ ≤ ε_k, then ε_{k+1} = ε_k/2
                tol = torch.where(torch.isinf(tol), residual / 2, tol)
                move = residual <= tol
                tol = torch.where(move, tol / 2, tol)
            elif (t + 1) % reference == 0:
                move = torch.ones(batch, dtype=torch.bool, device=A.device)
            else:
                move = None
            if move is not None and bool(move.any()):
                mv = move.unsqueeze(-1)
                ref_x = torch.where(mv, X.mirror_grad(bx_new), ref_x)
                ref_y = torch.where(mv, Y.mirror_grad(by_new), ref_y)
                updates += move.long()
        bx, by, x, y = bx_new, by_new, x_new, y_new
    observe(iterations, x, y)
    return Dynamics(x=x, y=y, best_y_value=best_y, best_x_value=best_x, reference_updates=updates)
