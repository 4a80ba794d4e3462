"""Argument checks for the papers' public functions: clear errors that name the argument.

Every public function of a paper either rejects bad input with a ``ValueError`` /
``TypeError`` that names the argument and what to change, or documents what it does with
it. These helpers keep those messages uniform:

* :func:`as_tensor`: NumPy arrays, lists and tensors in, a floating ``torch.Tensor`` out
  (``TypeError`` naming the argument for anything else);
* :func:`require_finite`: ``ValueError`` when a tensor/array holds NaN or ±inf;
* :func:`check_int`: an integer (``bool`` and floats such as ``1.5`` refused) within bounds;
* :func:`check_real`: a finite real number within (open or closed) bounds.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np
import torch

__all__ = ["as_tensor", "check_int", "check_real", "require_finite"]


def as_tensor(x: Any, name: str, *, dtype: torch.dtype | None = None, floating: bool = True) -> torch.Tensor:
    """``x`` (a tensor, NumPy array, list or number) as a tensor; ``TypeError`` naming ``name`` otherwise.

    Tensors keep their device and dtype (cast to ``dtype`` when given); NumPy input becomes
    a CPU tensor. With ``floating`` (default) an integer or boolean input is cast to the
    default float dtype (or ``dtype``).
    """
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, (np.ndarray, np.generic, list, tuple, numbers.Number)) and not isinstance(x, (str, bytes)):
        try:
            t = torch.as_tensor(np.asarray(x))
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must be numeric (a tensor or NumPy array), got {type(x).__name__}") from None
    else:
        raise TypeError(f"{name} must be a torch.Tensor or a NumPy array, got {type(x).__name__}")
    if t.is_complex():
        raise TypeError(f"{name} must be real, got a {t.dtype} tensor")
    if dtype is not None:
        t = t.to(dtype)
    elif floating and not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t


def require_finite(x: Any, name: str, *, hint: str = "") -> None:
    """``ValueError`` naming ``name`` when ``x`` (tensor or array) holds NaN or ±inf."""
    if isinstance(x, torch.Tensor):
        bad = x.is_floating_point() and not bool(torch.isfinite(x).all())
    else:
        arr = np.asarray(x)
        bad = arr.dtype.kind in "fc" and not bool(np.isfinite(arr).all())
    if bad:
        raise ValueError(f"{name} contains NaN or inf" + (f"; {hint}" if hint else ""))


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int``; ``TypeError`` for non-integers (``1.5``, ``True``), ``ValueError`` out of bounds."""
    if isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be an integer, not a boolean")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}={value!r} must be an integer") from None
    if low is not None and out < low or high is not None and out > high:
        rng = f"in [{low}, {high}]" if low is not None and high is not None else (
            f">= {low}" if low is not None else f"<= {high}")
        raise ValueError(f"{name}={out} is out of range: it must be {rng}")
    return out


def check_real(value: Any, name: str, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a finite ``float`` within bounds (``low_open``/``high_open`` exclude the bound).

    ``TypeError`` for non-numbers (and booleans), ``ValueError`` for NaN, ±inf or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)) and not (
            isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex()):
        raise TypeError(f"{name}={value!r} must be a real number")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name}={out} must be a finite number")
    below = low is not None and (out <= low if low_open else out < low)
    above = high is not None and (out >= high if high_open else out > high)
    if below or above:
        lo = "" if low is not None and low_open else "="
        hi = "" if high is not None and high_open else "="
        parts = ([f">{lo} {low}"] if low is not None else []) + ([f"<{hi} {high}"] if high is not None else [])
        raise ValueError(f"{name}={out} is out of range: it must be {' and '.join(parts)}")
    return out
