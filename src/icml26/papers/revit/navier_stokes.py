"""2D periodic incompressible Navier–Stokes data for ReViT's reproduction (exactly C4-equivariant).

Vorticity form on the torus ``[0, 2π)²`` with a uniform background flow ``U₀``:

    ∂t ω + (u · ∇) ω = ν Δω,     u = U₀ + (∂y ψ, −∂x ψ),     −Δψ = ω.

Steps (brief §4.1 [measured pilot settings]):

1. Pseudo-spectral derivatives with integer wavenumbers; the Nyquist mode gets no
   derivative (it is not rotation-symmetric).
2. 2/3 dealiasing with a **square** mask ``|kx|, |ky| < N/3``: symmetric under
   ``(kx, ky) → (−ky, kx)`` and free of the Nyquist mode, so the discrete solver commutes
   exactly with rotations by 90°. (A mask that is one-sided or keeps the Nyquist mode
   would not; a circular mask of radius N/3 would also do.)
3. Heun (RK2) time steps.
4. Random initial vorticity: complex Gaussian modes with ``4 ≤ |k|² ≤ 36``, scaled to
   standard deviation ``omega_std``; ``U₀`` of magnitude ``background_speed`` at a random angle.

Everything runs in torch on the inputs' device and dtype (float64 recommended).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from icml26.common.argcheck import check_int, check_real, require_finite

__all__ = [
    "NavierStokesData",
    "make_navier_stokes_pairs",
    "random_background_flow",
    "random_vorticity",
    "simulate_navier_stokes",
    "velocity_from_vorticity",
    "vorticity_from_velocity",
]


def _wavenumbers(n: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """``kx, ky`` on the ``(N, N)`` FFT grid (axis -2 = y, -1 = x) and the square dealiasing mask."""
    k = torch.fft.fftfreq(n, d=1.0 / n).to(dtype=dtype, device=device)
    ky, kx = torch.meshgrid(k, k, indexing="ij")
    # Square 2/3 rule: keep |kx| < N/3 and |ky| < N/3.
    mask = (kx.abs() < n / 3) & (ky.abs() < n / 3)
    return kx, ky, mask


def _derivative(k: Tensor, n: int) -> Tensor:
    """``i k`` with the Nyquist wavenumber zeroed."""
    kd = torch.where(k.abs() == n // 2, torch.zeros_like(k), k) if n % 2 == 0 else k
    return 1j * kd


def velocity_from_vorticity(omega: Tensor, background: Tensor) -> Tensor:
    """``u = U₀ + (∂y ψ, −∂x ψ)`` with ``−Δψ = ω``.

    Args:
        omega: ``(B, N, N)`` vorticity.
        background: ``(B, 2)`` uniform flow ``U₀`` (x, y).

    Returns:
        ``(B, 2, N, N)`` velocity (components x, y). NaN in ``omega`` spreads over the whole
        field (the inverse Laplacian is global); a NaN ``background`` component is added to every
        pixel of that component.
    """
    if not isinstance(omega, Tensor) or not isinstance(background, Tensor):
        raise TypeError("omega and background must be torch.Tensors")
    if omega.ndim != 3 or omega.shape[-1] != omega.shape[-2] or not omega.is_floating_point():
        raise ValueError(f"omega must be a floating (B, N, N) vorticity, got {tuple(omega.shape)} {omega.dtype}")
    if background.shape != (omega.shape[0], 2):
        raise ValueError(f"background must be (B, 2) = ({omega.shape[0]}, 2), got {tuple(background.shape)}")
    n = omega.shape[-1]
    kx, ky, _ = _wavenumbers(n, omega.dtype, omega.device)
    k2 = kx**2 + ky**2
    w_hat = torch.fft.fft2(omega)
    # ψ̂ = ω̂ / |k|², zero mean
    psi_hat = torch.where(k2 > 0, w_hat / torch.where(k2 > 0, k2, torch.ones_like(k2)), torch.zeros_like(w_hat))
    u = torch.fft.ifft2(_derivative(ky, n) * psi_hat).real
    v = torch.fft.ifft2(-_derivative(kx, n) * psi_hat).real
    return torch.stack([u, v], dim=1) + background[:, :, None, None]


def vorticity_from_velocity(u: Tensor) -> Tensor:
    """Spectral ``ω = ∂x v − ∂y u`` of a periodic ``(B, 2, N, N)`` velocity field → ``(B, N, N)``.

    NaN in ``u`` spreads over the whole field (spectral derivatives are global).
    """
    if not isinstance(u, Tensor):
        raise TypeError(f"u must be a torch.Tensor, got {type(u).__name__}")
    if u.ndim != 4 or u.shape[1] != 2 or u.shape[-1] != u.shape[-2] or not u.is_floating_point():
        raise ValueError(f"u must be a floating (B, 2, N, N) velocity field, got {tuple(u.shape)} {u.dtype}")
    n = u.shape[-1]
    kx, ky, _ = _wavenumbers(n, u.dtype, u.device)
    return torch.fft.ifft2(_derivative(kx, n) * torch.fft.fft2(u[:, 1])
                           - _derivative(ky, n) * torch.fft.fft2(u[:, 0])).real


def _rhs(w_hat: Tensor, background: Tensor, nu: float, kx: Tensor, ky: Tensor, mask: Tensor) -> Tensor:
    n = w_hat.shape[-1]
    k2 = kx**2 + ky**2
    dx, dy = _derivative(kx, n), _derivative(ky, n)
    psi_hat = w_hat / torch.where(k2 > 0, k2, torch.ones_like(k2))
    psi_hat = torch.where(k2 > 0, psi_hat, torch.zeros_like(psi_hat))
    u = torch.fft.ifft2(dy * psi_hat).real + background[:, 0, None, None]
    v = torch.fft.ifft2(-dx * psi_hat).real + background[:, 1, None, None]
    wx = torch.fft.ifft2(dx * w_hat).real
    wy = torch.fft.ifft2(dy * w_hat).real
    # ∂t ω̂ = −mask · FFT(u ∂x ω + v ∂y ω) − ν |k|² ω̂
    advection = torch.fft.fft2(u * wx + v * wy)
    return -advection * mask - nu * k2 * w_hat


def simulate_navier_stokes(omega0: Tensor, background: Tensor, *, nu: float = 2e-3, dt: float = 0.01,
                           substeps: int = 20, snapshots: int = 9) -> tuple[Tensor, Tensor]:
    """Integrate and record ``snapshots`` states ``substeps·dt`` apart (the first is ``omega0``, dealiased).

    Args:
        omega0: ``(B, N, N)`` initial vorticity (axis -2 = y, -1 = x).
        background: ``(B, 2)`` uniform background velocity ``U₀``.
        nu: kinematic viscosity ``ν``.
        dt: time step of the Heun scheme.
        substeps: steps between recorded snapshots.
        snapshots: number of recorded states.

    Returns:
        ``(vorticity (B, S, N, N), velocity (B, S, 2, N, N))``.
    """
    if not isinstance(omega0, Tensor) or not isinstance(background, Tensor):
        raise TypeError("omega0 and background must be torch.Tensors")
    if omega0.ndim != 3 or omega0.shape[-1] != omega0.shape[-2] or not omega0.is_floating_point():
        raise ValueError(f"omega0 must be a floating (B, N, N) vorticity, got {tuple(omega0.shape)} {omega0.dtype}")
    if background.shape != (omega0.shape[0], 2):
        raise ValueError(f"background must be (B, 2) = ({omega0.shape[0]}, 2), got {tuple(background.shape)}")
    check_real(nu, "nu", low=0.0)
    check_real(dt, "dt", low=0.0, low_open=True)
    check_int(substeps, "substeps", low=1)
    check_int(snapshots, "snapshots", low=1)
    require_finite(omega0, "omega0")
    require_finite(background, "background")
    background = background.to(omega0.dtype)
    n = omega0.shape[-1]
    kx, ky, mask = _wavenumbers(n, omega0.dtype, omega0.device)
    w_hat = torch.fft.fft2(omega0) * mask
    omegas, velocities = [], []
    for s in range(snapshots):
        if s:
            for _ in range(substeps):
                # Heun: ŵ* = ŵ + dt f(ŵ);  ŵ' = ŵ + dt/2 (f(ŵ) + f(ŵ*))
                f0 = _rhs(w_hat, background, nu, kx, ky, mask)
                f1 = _rhs(w_hat + dt * f0, background, nu, kx, ky, mask)
                w_hat = w_hat + 0.5 * dt * (f0 + f1)
        omega = torch.fft.ifft2(w_hat).real
        omegas.append(omega)
        velocities.append(velocity_from_vorticity(omega, background))
    return torch.stack(omegas, 1), torch.stack(velocities, 1)


def random_vorticity(batch: int, n: int, *, generator: torch.Generator | None = None, k2_min: float = 4.0,
                     k2_max: float = 36.0, std: float = 3.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """Band-limited random vorticity ``(batch, n, n)`` with modes ``k2_min ≤ |k|² ≤ k2_max``, std ``std``."""
    kx, ky, _ = _wavenumbers(n, dtype, torch.device("cpu"))
    band = ((kx**2 + ky**2) >= k2_min) & ((kx**2 + ky**2) <= k2_max)
    re = torch.randn(batch, n, n, generator=generator, dtype=dtype)
    im = torch.randn(batch, n, n, generator=generator, dtype=dtype)
    omega = torch.fft.ifft2(torch.complex(re, im) * band).real
    omega = omega - omega.mean(dim=(-1, -2), keepdim=True)
    return omega * (std / omega.std(dim=(-1, -2), keepdim=True))


def random_background_flow(batch: int, *, speed: float = 1.0, angle_center: float = 0.0,
                           angle_spread: float = 0.4, generator: torch.Generator | None = None,
                           dtype: torch.dtype = torch.float64) -> Tensor:
    """``(batch, 2)`` uniform flows of magnitude ``speed`` at angles ``center ± spread`` (uniform)."""
    angle = angle_center + angle_spread * (2 * torch.rand(batch, generator=generator, dtype=dtype) - 1)
    return speed * torch.stack([torch.cos(angle), torch.sin(angle)], dim=-1)


@dataclasses.dataclass
class NavierStokesData:
    """One-step prediction pairs.

    Attributes:
        inputs: ``(P, 1 + 2, N, N)`` float32: vorticity (scalar) then velocity (x, y) at ``t``.
        targets: ``(P, 2, N, N)`` float32: velocity at ``t + substeps·dt``.

    The channel splits are non-negative integers that match the tensors, and both tensors are finite
    (``ValueError`` / ``TypeError`` naming the field otherwise).
    """

    inputs: Tensor
    targets: Tensor

    n_scalar_in: int = 1
    n_vector_in: int = 1
    n_scalar_out: int = 0
    n_vector_out: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.inputs, Tensor) or not isinstance(self.targets, Tensor):
            raise TypeError("inputs and targets must be torch.Tensors")
        for name in ("n_scalar_in", "n_vector_in", "n_scalar_out", "n_vector_out"):
            check_int(getattr(self, name), name, low=0)
        c_in = self.n_scalar_in + 2 * self.n_vector_in
        c_out = self.n_scalar_out + 2 * self.n_vector_out
        if self.inputs.ndim != 4 or self.inputs.shape[1] != c_in:
            raise ValueError(f"inputs must be (P, {c_in}, N, N), got {tuple(self.inputs.shape)}")
        if self.targets.shape != (self.inputs.shape[0], c_out, *self.inputs.shape[2:]):
            raise ValueError(f"targets must be (P, {c_out}, N, N) with the inputs' P and N, "
                             f"got {tuple(self.targets.shape)}")
        require_finite(self.inputs, "inputs", hint="a training pair with NaN or inf turns every weight into NaN")
        require_finite(self.targets, "targets", hint="a training pair with NaN or inf turns every weight into NaN")


def make_navier_stokes_pairs(trajectories: int, pairs_per_trajectory: int, *, grid: int = 32,
                             generator: torch.Generator | None = None, nu: float = 2e-3, dt: float = 0.01,
                             substeps: int = 20, burn_in: int = 1, background_speed: float = 1.0,
                             angle_spread: float = 0.4, omega_std: float = 3.0,
                             device: torch.device | str | None = None) -> NavierStokesData:
    """Simulate trajectories (float64) and cut them into consecutive (input, target) pairs.

    The background flow's angle is drawn from ``±angle_spread`` around +x: an
    orientation-biased data set (the reproduction tests it at all four rotations).
    ``burn_in`` snapshots are discarded first.
    """
    check_int(trajectories, "trajectories", low=1)
    check_int(pairs_per_trajectory, "pairs_per_trajectory", low=1)
    check_int(burn_in, "burn_in", low=0)
    if check_int(grid, "grid", low=8) % 2:
        raise ValueError(f"grid={grid} must be an even size ≥ 8")
    for name, value in (("background_speed", background_speed), ("omega_std", omega_std)):
        check_real(value, name, low=0.0)
    check_real(angle_spread, "angle_spread", low=0.0)
    omega0 = random_vorticity(trajectories, grid, generator=generator, std=omega_std)
    background = random_background_flow(trajectories, speed=background_speed, angle_spread=angle_spread,
                                        generator=generator)
    device = torch.device(device) if device is not None else torch.device("cpu")
    omega, velocity = simulate_navier_stokes(omega0.to(device), background.to(device), nu=nu, dt=dt,
                                             substeps=substeps, snapshots=burn_in + pairs_per_trajectory + 1)
    omega, velocity = omega[:, burn_in:], velocity[:, burn_in:]
    inputs = torch.cat([omega[:, :-1, None], velocity[:, :-1]], dim=2).flatten(0, 1)
    targets = velocity[:, 1:].flatten(0, 1)
    if not (torch.isfinite(inputs).all() and torch.isfinite(targets).all()):
        raise ValueError("the simulation blew up; lower dt or omega_std, or raise nu")
    return NavierStokesData(inputs=inputs.float(), targets=targets.float())
