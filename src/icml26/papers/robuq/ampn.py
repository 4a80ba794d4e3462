"""AMPN: activation-only mixed precision (weights stay ternary everywhere).

1. **Sensitivity** (:func:`layer_sensitivity`): for each quantized layer ``l`` and bit-width
   ``b`` in the options, ``Δ_l(b) = E‖ε_θ(x_t, t, y) − ε_θ^{(l→b)}(x_t, t, y)‖²``, the change of the
   noise prediction when only layer ``l``'s activations switch to ``b`` bits, averaged over
   calibration batches (mean over elements).
2. **Allocation** (:func:`allocate_bits`): minimise ``Σ_l Δ_l(b_l)`` subject to
   ``Σ_l w_l b_l <= B̄ · Σ_l w_l`` -- a multiple-choice knapsack, solved exactly by dynamic
   programming over the integer budget (``w_l = 1``: a plain layer average; ``w_l`` = the layer's
   MACs: a BOPs-weighted average).
3. QAT continues with the allocated bits (``quantize_dit(model, act_bits=allocation.as_dict())``).

The paper says only that AMPN allocates by dynamic programming (a third-party summary); the
sensitivity measure and the budget weighting are our reconstruction (brief §1.4).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from icml26.papers.robuq.quantize import quantized_layers

__all__ = ["Allocation", "Sensitivity", "allocate_bits", "layer_sensitivity"]

#: Real-valued weights are rounded up to multiples of ``min(w) / WEIGHT_RESOLUTION`` (integers are exact).
WEIGHT_RESOLUTION = 1000


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    """``delta[l, k] = Δ_{names[l]}(bit_options[k])``."""

    names: tuple[str, ...]
    bit_options: tuple[int, ...]
    delta: np.ndarray

    def __post_init__(self) -> None:
        delta = np.asarray(self.delta)
        if delta.shape != (len(self.names), len(self.bit_options)):
            raise ValueError(f"delta has shape {delta.shape}; it must be (len(names), len(bit_options)) = "
                             f"({len(self.names)}, {len(self.bit_options)})")
        if delta.dtype.kind not in "fiu":
            raise TypeError(f"delta must hold real numbers, got dtype {delta.dtype}")
        if not np.isfinite(delta).all():
            raise ValueError("delta holds NaN or inf (a layer output was not finite); measure the sensitivity again")

    def as_dict(self) -> dict[str, dict[int, float]]:
        return {n: {b: float(self.delta[i, k]) for k, b in enumerate(self.bit_options)}
                for i, n in enumerate(self.names)}


@dataclasses.dataclass(frozen=True)
class Allocation:
    """The DP's answer: ``bits[l]`` for layer ``names[l]``."""

    names: tuple[str, ...]
    bits: tuple[int, ...]
    objective: float
    """``Σ_l Δ_l(b_l)`` of the allocation."""
    average_bits: float
    """``Σ w_l b_l / Σ w_l`` (with the weights the budget used)."""
    budget: float
    """The average bit budget ``B̄``."""

    def as_dict(self) -> dict[str, int]:
        """``{name: bits}``, what :func:`~icml26.papers.robuq.quantize_dit` takes as ``act_bits``."""
        return dict(zip(self.names, self.bits))


def _output(out: Any) -> Tensor:
    if isinstance(out, Tensor):
        return out
    if hasattr(out, "sample"):
        return out.sample
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], Tensor):
        return out[0]
    raise TypeError(f"the model returned {type(out).__name__}; expected a tensor, a tuple or an object with .sample")


def _check_options(bit_options: Iterable[int]) -> tuple[int, ...]:
    if isinstance(bit_options, (str, bytes)) or not isinstance(bit_options, Iterable):
        raise TypeError(f"bit_options={bit_options!r} must be a sequence of ints, e.g. (1, 2, 3, 4)")
    options = tuple(bit_options)
    if not options:
        raise ValueError("bit_options is empty; give at least one bit-width")
    for b in options:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
            raise ValueError(f"bit_options={options}: every option must be an int >= 1")
    if len(set(options)) != len(options):
        raise ValueError(f"bit_options={options} has duplicates")
    return tuple(int(b) for b in options)


@torch.no_grad()
def layer_sensitivity(model: nn.Module, calib: Sequence[tuple] | Callable[[nn.Module], Tensor],
                      bit_options: Sequence[int], *, layers: Sequence[str] | None = None,
                      progress: Callable | None = None) -> Sensitivity:
    """``Δ_l(b)`` for every quantized layer ``l`` and ``b`` in ``bit_options`` (see the module docstring).

    Args:
        model: a quantized model (:func:`~icml26.papers.robuq.quantize_dit`); its current bits are the
            reference ``ε_θ``.
        calib: calibration inputs, a sequence of argument tuples (``model(*args)``, e.g. ``(x_t, t, y)``),
            or a callable ``model -> output``.
        bit_options: the candidate bit-widths.
        layers: the layers to measure (default: all quantized ones).
        progress: wraps the layer loop (optional).
    """
    options = _check_options(bit_options)
    all_layers = quantized_layers(model)
    names = list(all_layers) if layers is None else list(layers)
    missing = [n for n in names if n not in all_layers or all_layers[n].quantizer is None]
    if not all_layers or missing:
        raise ValueError(f"layers {missing[:3] or '(none)'} are not activation-quantized layers of model; "
                         "call quantize_dit(model, act_bits=...) first")
    if callable(calib):
        run = calib
    else:
        batches = list(calib)
        if not batches:
            raise ValueError("calib is empty; pass at least one batch of model inputs")

        def run(m: nn.Module) -> list[Tensor]:  # type: ignore[misc]
            return [_output(m(*args)) for args in batches]

    was_training = model.training
    model.eval()
    reference = run(model)
    reference = reference if isinstance(reference, list) else [_output(reference)]
    delta = np.zeros((len(names), len(options)))
    iterator = progress(range(len(names))) if progress is not None else range(len(names))
    try:
        for i in iterator:
            quantizer = all_layers[names[i]].quantizer
            original = quantizer.bits  # type: ignore[union-attr]
            for k, b in enumerate(options):
                if b == original and not callable(calib):
                    # the reference itself (fixed batches, eval mode): the same forward pass, Δ = 0 exactly
                    delta[i, k] = 0.0
                    continue
                quantizer.bits = b  # type: ignore[union-attr]
                out = run(model)
                out = out if isinstance(out, list) else [_output(out)]
                # Δ_l(b) = E ‖ε_θ − ε_θ^{(l→b)}‖²  (mean over elements and batches)
                delta[i, k] = float(np.mean([(o - r).double().pow(2).mean().item() for o, r in zip(out, reference)]))
            quantizer.bits = original  # type: ignore[union-attr]
    finally:
        model.train(was_training)
    return Sensitivity(names=tuple(names), bit_options=options, delta=delta)


def _table(sensitivity: Any, options: tuple[int, ...]) -> tuple[tuple[str, ...], np.ndarray]:
    if isinstance(sensitivity, Sensitivity):
        absent = [b for b in options if b not in sensitivity.bit_options]
        if absent:
            raise ValueError(f"bit_options {absent} were not measured (sensitivity has {sensitivity.bit_options})")
        cols = [sensitivity.bit_options.index(b) for b in options]
        return sensitivity.names, np.asarray(sensitivity.delta, dtype=np.float64)[:, cols]
    if isinstance(sensitivity, Mapping):
        names = tuple(sensitivity)
        rows = []
        for n in names:
            row = sensitivity[n]
            if not isinstance(row, Mapping) or any(b not in row for b in options):
                raise ValueError(f"sensitivity[{n!r}] must map every option of {options} to a number")
            rows.append([float(row[b]) for b in options])
        table = np.asarray(rows, dtype=np.float64).reshape(len(names), len(options))
        return names, table
    table = np.asarray(sensitivity, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != len(options):
        raise ValueError(f"sensitivity has shape {table.shape}; expected (layers, {len(options)}) for bit_options "
                         f"{options}")
    return tuple(str(i) for i in range(table.shape[0])), table


def _integer_weights(weights: np.ndarray) -> np.ndarray:
    if np.all(weights == np.round(weights)):
        ints = weights.astype(np.int64)
        return ints // np.gcd.reduce(ints)
    unit = weights.min() / WEIGHT_RESOLUTION
    # rounded up: an allocation within the integer budget is within the real one
    return np.ceil(weights / unit - 1e-9).astype(np.int64)


def allocate_bits(sensitivity: Sensitivity | Mapping[str, Mapping[int, float]] | np.ndarray,
                  bit_options: Sequence[int], avg_bits: float,
                  weights: Sequence[float] | Mapping[str, float] | None = None, *,
                  max_cells: int = 10_000_000) -> Allocation:
    """The allocation minimising ``Σ_l Δ_l(b_l)`` with ``Σ_l w_l b_l <= avg_bits · Σ_l w_l``, exactly.

    Dynamic programming over the integer budget (``O(layers · options · budget)``): exact for
    integer weights (layer count, MACs); real weights are first rounded up to multiples of
    ``min(w)/1000``, which keeps the real budget. When the table would exceed ``max_cells``
    entries (weights spanning many orders of magnitude, e.g. raw MACs), the integer weights are
    divided by the smallest factor ``f`` that fits and rounded up: the allocation still meets the
    budget, and it is optimal for a budget at most ``f · (b_max − b_min) · layers`` weight units
    (of the rounded weights) below the given one.

    Args:
        sensitivity: a :class:`Sensitivity`, ``{name: {bits: Δ}}`` or a ``(layers, options)`` array.
        bit_options: the candidate bit-widths (columns of the table, in order for an array).
        avg_bits: the budget ``B̄`` (at least the smallest option).
        weights: ``w_l`` per layer (sequence in layer order or ``{name: w}``), positive; ``None``: 1 each.

    Raises:
        ValueError: a budget below the smallest option, NaN/negative weights, a malformed table.
    """
    options = _check_options(bit_options)
    if isinstance(avg_bits, bool) or not isinstance(avg_bits, (int, float, np.number)) or not math.isfinite(avg_bits):
        raise ValueError(f"avg_bits={avg_bits!r} must be a finite number")
    if avg_bits < min(options):
        raise ValueError(f"avg_bits={avg_bits} is below the smallest option {min(options)}: no allocation fits; "
                         "raise avg_bits or add a smaller bit-width to bit_options")
    names, table = _table(sensitivity, options)
    if table.shape[0] == 0:
        raise ValueError("sensitivity has no layers")
    if not np.all(np.isfinite(table)):
        raise ValueError("sensitivity holds NaN or inf; measure it again (a layer output was not finite)")
    if weights is None:
        w = np.ones(len(names))
    elif isinstance(weights, Mapping):
        absent = [n for n in names if n not in weights]
        if absent:
            raise ValueError(f"weights has no entry for layers {absent[:3]}")
        w = np.asarray([float(weights[n]) for n in names])
    else:
        w = np.asarray(list(weights), dtype=np.float64)
        if w.shape != (len(names),):
            raise ValueError(f"weights has {w.size} entries for {len(names)} layers")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be positive and finite (1 per layer, or each layer's MACs)")
    if isinstance(max_cells, bool) or not isinstance(max_cells, (int, np.integer)) or max_cells < 1:
        raise ValueError(f"max_cells={max_cells!r} must be a positive integer")
    wi = _integer_weights(w)
    order = np.argsort(options, kind="stable")
    opts = np.asarray(options)[order]
    table = table[:, order]
    b_min = int(opts[0])
    spare = Fraction(avg_bits).limit_denominator(10**9) - b_min
    # budget in integer units above the all-minimum allocation: Σ w_l (b_l − b_min) <= B̄·Σw − b_min·Σw
    total = int(wi.sum())
    capacity = min(math.floor(spare * total), total * int(opts[-1] - b_min))
    factor = 1
    if (capacity + 1) * len(names) > max_cells:
        # coarser units: w_l / f rounded up (so an allocation within the scaled budget is within the real one)
        factor = -(-(capacity + 1) * len(names) // int(max_cells))
        scaled = -(-wi // factor)
        capacity = min(math.floor(spare * Fraction(total, factor)), int(scaled.sum()) * int(opts[-1] - b_min))
        if (capacity + 1) * len(names) > max_cells:  # the rounding up cannot add more than one unit per layer
            capacity = max_cells // len(names) - 1
        wi = scaled
    inf = np.inf
    best = np.full(capacity + 1, inf)
    best[0] = 0.0
    choice = np.zeros((len(names), capacity + 1), dtype=np.int64)
    for layer in range(len(names)):
        new = np.full(capacity + 1, inf)
        pick = np.zeros(capacity + 1, dtype=np.int64)
        for k, b in enumerate(opts):
            cost = int(wi[layer]) * int(b - b_min)
            if cost > capacity:
                continue
            # dp_l[c] = min_k dp_{l-1}[c − cost_k] + Δ_l(b_k)
            cand = np.full(capacity + 1, inf)
            cand[cost:] = best[:capacity + 1 - cost] + table[layer, k]
            better = cand < new
            new[better], pick[better] = cand[better], k
        best, choice[layer] = new, pick
    end = int(np.argmin(best))  # the cheapest cost among the minimisers
    picks = []
    c = end
    for layer in range(len(names) - 1, -1, -1):
        k = int(choice[layer, c])
        picks.append(k)
        c -= int(wi[layer]) * int(opts[k] - b_min)
    picks.reverse()
    bits = tuple(int(opts[k]) for k in picks)
    objective = float(sum(table[i, k] for i, k in enumerate(picks)))
    average = float(np.dot(w, bits) / w.sum())
    return Allocation(names=names, bits=bits, objective=objective, average_bits=average, budget=float(avg_bits))
