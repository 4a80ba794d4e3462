"""A Rényi-DP ledger for a sequence of certified deletions.

Every served deletion releases parameters through a Gaussian mechanism whose
worst-case (Mahalanobis) shift is μ_i (see :mod:`.privacy`). The Rényi divergence
of order α between N(0, I) and N(m, I) with ‖m‖ = μ is

    RDP_i(α) = α·μ_i²/2                                   (Mironov 2017, Prop. 7),

and Rényi DP composes additively, also adaptively: RDP(α) = Σ_i α·μ_i²/2. It is
converted to (ε, δ) either by

* ``"classic"`` (Mironov 2017, Prop. 3): ε = min_α RDP(α) + ln(1/δ)/(α − 1), or
* ``"improved"`` (Balle et al. 2020, Thm. 21; what Opacus uses):
  ε = min_α RDP(α) + ln((α − 1)/α) − (ln δ + ln α)/(α − 1).

Why not the draft's formula: the draft composes with ε_total = Σε_i +
√(2·ln(1/δ′)·Σε_i²), which adds the linear term Σε_i to an advanced-composition
term and so grows as O(M), contradicting its own O(√M) claim; RDP gives
ε = O(√M) directly. Because Gaussian mechanisms compose exactly into one Gaussian
with μ = √(Σμ_i²), :meth:`RDPAccountant.exact_epsilon` also reports the tight ε
from Balle & Wang's curve; the RDP ε is an upper bound on it.
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import numpy as np

from ._checks import integer, number
from .privacy import gaussian_epsilon

__all__ = ["DEFAULT_ORDERS", "RDPAccountant"]

#: Rényi orders α: Opacus's default grid, extended to large orders for tiny μ.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(12, 64)]
    + [64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 2048.0, 4096.0]
)


class RDPAccountant:
    """Accumulates α·μ²/2 over Gaussian releases and converts to (ε, δ).

    Args:
        orders: Rényi orders α > 1 at which RDP is tracked.
    """

    def __init__(self, orders: Sequence[float] = DEFAULT_ORDERS) -> None:
        try:
            self.orders = np.asarray(orders, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"orders must be numbers > 1, got {orders!r}") from None
        if self.orders.ndim != 1 or self.orders.size == 0 or not np.all(np.isfinite(self.orders)) \
                or np.any(self.orders <= 1.0):
            raise ValueError("orders must be a non-empty list of numbers > 1")
        self.rdp = np.zeros_like(self.orders)
        self.mus: list[float] = []

    def add_gaussian(self, mu: float, count: int = 1) -> None:
        """Record ``count`` releases of a Gaussian mechanism with shift μ = Δ/σ."""
        mu = number("mu", mu, low=0.0, strict=True)
        count = integer("count", count, low=1)
        # RDP(α) += count · α μ² / 2
        self.rdp = self.rdp + count * self.orders * mu**2 / 2.0
        self.mus.extend([float(mu)] * count)

    @property
    def releases(self) -> int:
        """How many releases were recorded."""
        return len(self.mus)

    def epsilon(self, delta: float, conversion: Literal["improved", "classic"] = "improved") -> tuple[float, float]:
        """(ε, best α) spent so far at δ ∈ (0, 1); (0, NaN) before any release."""
        delta = number("delta", delta, low=0.0, strict=True, high=1.0, high_strict=True)
        if conversion not in ("improved", "classic"):
            raise ValueError(f"conversion={conversion!r} must be 'improved' or 'classic'")
        if not self.mus:
            return 0.0, float("nan")
        a = self.orders
        if conversion == "classic":
            # ε = RDP(α) + ln(1/δ)/(α − 1)
            eps = self.rdp + math.log(1.0 / delta) / (a - 1.0)
        elif conversion == "improved":
            # ε = RDP(α) + ln((α−1)/α) − (ln δ + ln α)/(α − 1)
            eps = self.rdp + np.log((a - 1.0) / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
        else:
            raise ValueError(f"conversion={conversion!r} must be 'improved' or 'classic'")
        i = int(np.argmin(eps))
        return max(0.0, float(eps[i])), float(a[i])

    def exact_epsilon(self, delta: float) -> float:
        """The tight ε of the composed Gaussian mechanism, μ = √(Σμ_i²), from the exact curve."""
        number("delta", delta, low=0.0, strict=True, high=1.0, high_strict=True)
        if not self.mus:
            return 0.0
        return gaussian_epsilon(math.sqrt(sum(m * m for m in self.mus)), delta)
