"""Orthonormal Hadamard matrices and the fast Walsh-Hadamard transform.

RobuQ rotates every token ``x`` (a row vector of width ``d``) by an orthonormal Hadamard
matrix before quantizing it, ``x' = x H`` with ``H Hᵀ = I`` and entries ``±1/√d``. A linear
layer keeps its function when its weight is rotated the same way, ``W' = W H``, because

    x Wᵀ = x H Hᵀ Wᵀ = (x H)(W H)ᵀ.

Sizes:

* ``d = 2^k``: Sylvester's construction ``H_{2n} = [[H_n, H_n], [H_n, -H_n]]``; the product
  ``x H`` is the fast Walsh-Hadamard transform (:func:`fwht`), ``O(d log d)``.
* ``d = 2^k · m`` with a Paley order ``m`` (12, 20, 28, 36, 44, 60, …; DiT-XL's 1152 = 32·36
  and 4608 = 128·36): the Kronecker product ``H_{2^k} ⊗ H_m``; ``x H`` costs
  ``O(d log 2^k + d m)`` (an FWHT over one axis, a small matmul over the other).
* ``block=b``: a block-diagonal matrix with ``d / b`` copies of ``H_b`` (any ``d`` that ``b``
  divides); it rotates within groups of ``b`` channels only, so it mixes less.

Paley's constructions (Paley 1933): for a prime ``q ≡ 3 (mod 4)`` (Paley I) an order ``q + 1``
matrix, for a prime ``q ≡ 1 (mod 4)`` (Paley II) an order ``2(q + 1)`` matrix, both built
from the quadratic-residue character of GF(q). H_12 (q = 11) and H_20 (q = 19) are Paley I,
H_36 (q = 17) is Paley II.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import Tensor, nn

__all__ = [
    "HadamardLinear",
    "fwht",
    "hadamard",
    "hadamard_transform",
    "has_hadamard",
    "paley_hadamard",
    "rotate_linear",
    "sylvester_hadamard",
]

#: Largest Paley order tried when factoring a width (orders up to this are searched).
_MAX_PALEY = 256


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % p for p in range(2, int(math.isqrt(n)) + 1))


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _check_size(name: str, d: object) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"{name}={d!r} must be a positive int (a width)")
    if d < 1:
        raise ValueError(f"{name}={d} must be a positive width")
    return int(d)


@functools.lru_cache(maxsize=None)
def _sylvester(n: int) -> np.ndarray:
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def sylvester_hadamard(n: int) -> np.ndarray:
    """The unnormalised Sylvester Hadamard matrix of order ``n = 2^k`` (entries ±1), float64."""
    n = _check_size("n", n)
    if not _is_power_of_two(n):
        raise ValueError(f"n={n} must be a power of two for Sylvester's construction")
    return _sylvester(n).copy()


def _paley_order(q: int) -> int | None:
    if not _is_prime(q) or q == 2:
        return None
    return q + 1 if q % 4 == 3 else 2 * (q + 1)


@functools.lru_cache(maxsize=None)
def _paley(q: int) -> np.ndarray:
    # chi(a) = +1 for a non-zero quadratic residue mod q, -1 for a non-residue, 0 for a = 0
    residues = {(a * a) % q for a in range(1, q)}
    chi = np.array([0] + [1 if a in residues else -1 for a in range(1, q)], dtype=np.int64)
    # Jacobsthal matrix Q[i, j] = chi(j - i)
    idx = (np.arange(q)[None, :] - np.arange(q)[:, None]) % q
    jac = chi[idx].astype(np.float64)
    ones = np.ones((q, 1))
    if q % 4 == 3:
        # Paley I: S = [[0, 1ᵀ], [-1, Q]] is skew; H = I + S
        s = np.block([[np.zeros((1, 1)), ones.T], [-ones, jac]])
        return np.eye(q + 1) + s
    # Paley II: C = [[0, 1ᵀ], [1, Q]] is symmetric; replace 0 by [[1, -1], [-1, -1]] and
    # ±1 by ±[[1, 1], [1, -1]]
    c = np.block([[np.zeros((1, 1)), ones.T], [ones, jac]])
    zero_block = np.array([[1.0, -1.0], [-1.0, -1.0]])
    one_block = np.array([[1.0, 1.0], [1.0, -1.0]])
    return np.kron(c, one_block) + np.kron((c == 0).astype(np.float64), zero_block)


def paley_hadamard(q: int) -> np.ndarray:
    """The unnormalised Paley Hadamard matrix from the prime ``q`` (entries ±1), float64.

    Order ``q + 1`` for ``q ≡ 3 (mod 4)`` (Paley I, e.g. ``q = 11 -> 12``, ``19 -> 20``),
    ``2(q + 1)`` for ``q ≡ 1 (mod 4)`` (Paley II, e.g. ``q = 17 -> 36``).
    """
    q = _check_size("q", q)
    if _paley_order(q) is None:
        raise ValueError(f"q={q} must be an odd prime for Paley's construction")
    return _paley(q).copy()


@functools.lru_cache(maxsize=None)
def _paley_for_order(m: int) -> int | None:
    """The prime ``q`` whose Paley matrix has order ``m`` (Paley I preferred), or None."""
    if m - 1 >= 3 and _paley_order(m - 1) == m:
        return m - 1
    if m % 2 == 0 and _paley_order(m // 2 - 1) == m:
        return m // 2 - 1
    return None


@functools.lru_cache(maxsize=None)
def _factor(d: int) -> tuple[int, int] | None:
    """``(2^k, m)`` with ``d = 2^k · m`` and a Hadamard of order ``m`` (m = 1 for a power of two)."""
    if _is_power_of_two(d):
        return d, 1
    for m in range(4, min(d, _MAX_PALEY) + 1, 4):
        if d % m == 0 and _is_power_of_two(d // m) and _paley_for_order(m) is not None:
            return d // m, m
    return None


@functools.lru_cache(maxsize=None)
def _small_factor(m: int) -> np.ndarray:
    q = _paley_for_order(m)
    assert q is not None
    return _paley(q) / math.sqrt(m)


def has_hadamard(d: int, block: int | None = None) -> bool:
    """Whether :func:`hadamard` supports width ``d`` (with ``block``, if given).

    ``d`` and ``block`` must be positive ints (``TypeError`` / ``ValueError`` otherwise: a width of
    -1 is a mistake, not a width without a Hadamard matrix).
    """
    _check_size("d", d)
    if block is not None:
        _check_size("block", block)
    try:
        _resolve(d, block)
    except ValueError:
        return False
    return True


def _resolve(d: int, block: int | None) -> tuple[int, int, int]:
    """``(n_blocks, 2^k, m)``: the block-diagonal Kronecker structure of the rotation."""
    d = _check_size("d", d)
    if block is not None:
        block = _check_size("block", block)
        if d % block:
            raise ValueError(f"block={block} must divide the width d={d}")
        factor = _factor(block)
        if factor is None:
            raise ValueError(f"block={block} has no Hadamard matrix here; use a power of two or 2^k times "
                             "a Paley order (12, 20, 28, 36, 44, ...)")
        return d // block, factor[0], factor[1]
    factor = _factor(d)
    if factor is None:
        pow2 = d & -d
        raise ValueError(
            f"d={d} has no Hadamard matrix here (supported: 2^k, or 2^k times a Paley order such as 12, 20, "
            f"28, 36, 44); pass block= a divisor with one, e.g. block={pow2}")
    return 1, factor[0], factor[1]


def hadamard(d: int, *, block: int | None = None, normalized: bool = True,
             dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """An orthonormal Hadamard matrix ``H`` of order ``d`` (``H Hᵀ = I``), as a ``(d, d)`` tensor.

    Args:
        d: the width. A power of two gives Sylvester's matrix; ``2^k · m`` with a Paley order ``m``
            gives ``H_{2^k} ⊗ H_m``.
        block: if given, the block-diagonal matrix ``I_{d/block} ⊗ H_block`` instead.
        normalized: divide by ``√(order)`` so that ``H`` is orthonormal (default); ``False``
            gives the ±1 matrix (or ±1 blocks).
        dtype, device: of the returned tensor.

    Raises:
        ValueError: ``d`` (or ``block``) has no supported Hadamard matrix; the message suggests a block.
    """
    n_blocks, pow2, m = _resolve(d, block)
    h = _sylvester(pow2)
    if m > 1:
        h = np.kron(h, _paley(_paley_for_order(m)))  # type: ignore[arg-type]
    if normalized:
        h = h / math.sqrt(h.shape[0])
    if n_blocks > 1:
        h = np.kron(np.eye(n_blocks), h)
    return torch.as_tensor(h, dtype=dtype, device=device)


def fwht(x: Tensor, *, normalized: bool = True) -> Tensor:
    """The fast Walsh-Hadamard transform of the last axis: ``x @ H`` for Sylvester's ``H``.

    ``O(d log d)`` butterflies instead of a ``d × d`` matmul.

    Args:
        x: ``(..., d)`` with ``d`` a power of two; any floating dtype and device.
        normalized: with the ``1/√d`` factor (orthonormal ``H``, default).

    NaN or inf in a token spreads to every coordinate of that token (it is a sum over all of them).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (the width d)")
    d = x.shape[-1]
    if not _is_power_of_two(d):
        raise ValueError(f"x's last axis has width d={d}; fwht needs a power of two "
                         "(use hadamard_transform for 2^k·m widths or blocks)")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {x.dtype}")
    lead = x.shape[:-1]
    y = x.reshape(-1, d)
    h = 1
    while h < d:
        # butterfly on pairs (i, i + h) inside blocks of 2h: (a, b) -> (a + b, a - b)
        y = y.view(-1, d // (2 * h), 2, h)
        a, b = y[:, :, 0, :], y[:, :, 1, :]
        y = torch.stack((a + b, a - b), dim=2).view(-1, d)
        h *= 2
    if normalized:
        y = y / math.sqrt(d)
    return y.reshape(*lead, d)


#: Blocks up to this order are rotated by a cached dense matmul; larger ones by the FWHT.
DENSE_MAX = 512

_DENSE_CACHE: dict[tuple[int, torch.dtype, str], Tensor] = {}


def _dense(size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    key = (size, dtype, str(device))
    h = _DENSE_CACHE.get(key)
    if h is None:
        h = hadamard(size, dtype=torch.float64).to(dtype=dtype, device=device)
        _DENSE_CACHE[key] = h
    return h


def hadamard_transform(x: Tensor, *, block: int | None = None) -> Tensor:
    """``x @ hadamard(d, block=block)`` along the last axis, without forming the ``d × d`` matrix.

    Blocks of order up to :data:`DENSE_MAX` (512) are one cached dense matmul (in PyTorch faster
    than the butterflies' Python loop at these sizes); larger power-of-two orders use :func:`fwht`
    (``O(d log d)``), ``2^k · m`` orders an FWHT over the ``2^k`` axis and an ``m × m`` matmul.
    ``block`` reshapes to ``(..., d / block, block)`` first.

    Args:
        x: ``(..., d)`` floating tensor; the result has its shape, dtype and device.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (the width d)")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {x.dtype}")
    d = x.shape[-1]
    n_blocks, pow2, m = _resolve(d, block)
    lead = x.shape[:-1]
    size = pow2 * m
    if size <= DENSE_MAX:
        # small blocks: one (size × size) matmul beats the butterflies' Python loop in PyTorch
        h = _dense(size, x.dtype, x.device)
        return (x.reshape(*lead, n_blocks, size) @ h).reshape(*lead, d)
    y = x.reshape(*lead, n_blocks, pow2, m)
    if pow2 > 1:
        # (H_{2^k} ⊗ H_m): X ↦ H_{2^k}ᵀ X H_m on the (2^k, m) view of each block (H_{2^k} symmetric)
        y = fwht(y.transpose(-1, -2)).transpose(-1, -2)
    if m > 1:
        y = y @ torch.as_tensor(_small_factor(m), dtype=x.dtype, device=x.device)
    return y.reshape(*lead, d)


class HadamardLinear(nn.Module):
    """A linear layer computed in the rotated basis: ``y = (x H)(W H)ᵀ + b``, equal to ``x Wᵀ + b``.

    The stored ``weight`` is ``W H`` (``(out_features, in_features)``); the input is rotated online
    by :func:`hadamard_transform`. On its own the layer only changes the numerics; it is the
    place where RobuQ's activation quantizer sits (between the rotation and the matmul).

    Args:
        in_features, out_features, bias: as :class:`torch.nn.Linear`.
        block: block size of a block-diagonal rotation (default: the full width).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, block: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        in_features = _check_size("in_features", in_features)
        out_features = _check_size("out_features", out_features)
        try:
            _resolve(in_features, block)
        except ValueError as exc:
            raise ValueError(f"in_features={in_features}: {exc}") from None
        self.in_features, self.out_features, self.block = in_features, out_features, block
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    @classmethod
    def from_linear(cls, linear: nn.Linear, *, block: int | None = None) -> "HadamardLinear":
        """The rotated copy of ``linear``: weight ``W H``, the same bias, the same function."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        w = linear.weight
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, block=block,
                    device=w.device, dtype=w.dtype)
        with torch.no_grad():
            # W' = W H: rotate every row of W like a token
            layer.weight.copy_(hadamard_transform(w.detach(), block=block))
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        return layer

    def forward(self, x: Tensor) -> Tensor:
        return nn.functional.linear(hadamard_transform(x, block=self.block), self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, block={self.block}"


def rotate_linear(linear: nn.Linear, *, block: int | None = None) -> HadamardLinear:
    """:meth:`HadamardLinear.from_linear`: the function-preserving rotated copy of ``linear``."""
    return HadamardLinear.from_linear(linear, block=block)
