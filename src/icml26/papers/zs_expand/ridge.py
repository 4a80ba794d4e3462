"""The closed-form generalised ridge that fits stage 3's linear maps (see :mod:`.synthesis`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from icml26.common.argcheck import as_tensor, check_real, require_finite

__all__ = ["LinearMap", "fit_ridge"]


@dataclasses.dataclass
class LinearMap:
    """``x ↦ x @ weight + bias`` with ``weight`` ``(d, k)`` and ``bias`` ``(k,)`` (float64)."""

    weight: torch.Tensor
    bias: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(self.weight.dtype) @ self.weight + self.bias

    @classmethod
    def zeros(cls, d: int, k: int, device: Any = "cpu") -> "LinearMap":
        return cls(torch.zeros(d, k, dtype=torch.float64, device=device),
                   torch.zeros(k, dtype=torch.float64, device=device))


def fit_ridge(inputs: Any, targets: Any, *, alpha: float, sample_weights: Any = None, penalty: Any = None,
              intercept: bool = True, relative: bool = True) -> LinearMap:
    """``argmin_(B,b) Σ_i a_i ‖x_iᵀB + b − y_i‖² + tr(Bᵀ P B) + α_eff ‖B‖²``, in closed form (float64).

    Args:
        inputs: ``(n, d)``; targets: ``(n, k)``.
        alpha: ridge strength ``α``; with ``relative`` (default) ``α_eff = α · tr(Σ_x)/d``, ``Σ_x`` the
            weighted covariance of the (centred) inputs, so that ``α`` means the same at every scale.
        sample_weights: ``(n,)`` non-negative ``a_i`` (normalised to sum 1; uniform by default).
        penalty: ``(d, d)`` symmetric PSD ``P`` (e.g. ``λ`` times :func:`nuisance_covariance`) or None.
        intercept: fit an unpenalised ``b`` (inputs and targets centred by their weighted means).
    """
    x = as_tensor(inputs, "inputs").double()
    y = as_tensor(targets, "targets").double().to(x.device)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"inputs {tuple(x.shape)} and targets {tuple(y.shape)} must be (n, d) and (n, k) "
                         "with the same n")
    if x.shape[0] == 0:
        raise ValueError("inputs has no rows")
    require_finite(x, "inputs")
    require_finite(y, "targets")
    alpha = check_real(alpha, "alpha", low=0.0)
    n, d = x.shape
    a = torch.full((n,), 1.0 / n, dtype=x.dtype, device=x.device) if sample_weights is None else \
        as_tensor(sample_weights, "sample_weights").double().to(x.device)
    if a.shape != (n,):
        raise ValueError(f"sample_weights must be ({n},) non-negative with a positive sum, got {tuple(a.shape)}")
    require_finite(a, "sample_weights")
    if bool((a < 0).any()) or float(a.sum()) <= 0:
        raise ValueError(f"sample_weights must be ({n},) non-negative with a positive sum")
    a = a / a.sum()
    if intercept:
        x_mean, y_mean = a @ x, a @ y
    else:
        x_mean = torch.zeros(d, dtype=x.dtype, device=x.device)
        y_mean = torch.zeros(y.shape[1], dtype=x.dtype, device=x.device)
    xc, yc = x - x_mean, y - y_mean
    gram = xc.T @ (a[:, None] * xc)
    scale = float(torch.trace(gram)) / d if relative else 1.0
    lhs = gram + alpha * max(scale, 1e-300) * torch.eye(d, dtype=x.dtype, device=x.device)
    if penalty is not None:
        p = as_tensor(penalty, "penalty").double().to(x.device)
        if p.shape != (d, d):
            raise ValueError(f"penalty must be ({d}, {d}), got {tuple(p.shape)}")
        require_finite(p, "penalty")
        lhs = lhs + (p + p.T) / 2
    # B = (X̃ᵀ A X̃ + P + α I)⁻¹ X̃ᵀ A Ỹ ;  b = ȳ − x̄ᵀ B
    weight = torch.linalg.lstsq(lhs, xc.T @ (a[:, None] * yc)).solution if alpha == 0 and penalty is None \
        else torch.linalg.solve(lhs, xc.T @ (a[:, None] * yc))
    weight = weight.contiguous()
    return LinearMap(weight, (y_mean - x_mean @ weight).contiguous())
