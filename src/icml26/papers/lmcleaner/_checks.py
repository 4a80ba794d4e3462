"""Argument checks shared by the lmcleaner modules (clear errors naming the argument)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor


def number(name: str, value, *, low: float | None = None, strict: bool = False, high: float | None = None,
           high_strict: bool = False) -> float:
    """A finite real number (Python, NumPy or a one-element tensor) within the given bounds."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(f"{name} must be a number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a real number")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}={value} must be a finite number")
    if low is not None and (value <= low if strict else value < low):
        raise ValueError(f"{name}={value} must be {'>' if strict else '>='} {low:g}")
    if high is not None and (value >= high if high_strict else value > high):
        raise ValueError(f"{name}={value} must be {'<' if high_strict else '<='} {high:g}")
    return value


def integer(name: str, value, *, low: int = 0) -> int:
    """An integer ``>= low`` (bools and fractional numbers refused)."""
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r} must be an integer")
    if value < low:
        raise ValueError(f"{name}={value} must be an integer >= {low}")
    return int(value)


def sample_ids(name: str, ids) -> Tensor:
    """Sample ids as a 1-D CPU ``long`` tensor; negative ids (which would wrap around) refused."""
    raw = ids.detach().cpu() if isinstance(ids, Tensor) else torch.as_tensor(np.asarray(ids))
    if raw.numel() and (raw.is_floating_point() or raw.dtype == torch.bool):
        raise TypeError(f"{name} must hold integer sample ids, got dtype {raw.dtype}")
    out = raw.to(torch.long).reshape(-1)
    if out.numel() and int(out.min()) < 0:
        raise ValueError(f"{name} holds the negative id {int(out.min())}; sample ids are row indices >= 0")
    return out


def finite_vector(name: str, t, length: int | None = None) -> Tensor:
    """A 1-D floating tensor (of ``length`` entries when given) without NaN or inf."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch tensor (p,), got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {t.dtype}")
    flat = t.detach().reshape(-1)
    if length is not None and flat.numel() != length:
        raise ValueError(f"{name} must have {length} entries, got {flat.numel()}")
    if not bool(torch.isfinite(flat).all()):
        raise ValueError(f"{name} holds NaN or inf")
    return flat
