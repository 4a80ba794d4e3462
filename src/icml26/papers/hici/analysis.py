"""Pure functions from raw arrays to the reproduction's metrics and check values (each hand-tested).

* :func:`accuracy`: fraction of argmax predictions equal to the labels;
* :func:`loglog_slope`: least-squares slope of log(time) on log(N) (1: linear, 2: quadratic);
* :func:`round_slopes`: that slope within each interleaved timing round, over the sizes from ``fit_from``;
* :func:`hici_parameter_count`: the closed form of HiCI's parameters per layer;
* :func:`parameter_overhead`: HiCI's share of base + HiCI parameters;
* :func:`chunked_ceiling`: the best accuracy any model can reach on marked-segment topic retrieval
  when the query sees only its own segment.
"""

from __future__ import annotations


import numpy as np

from icml26.common.argcheck import check_int

__all__ = ["accuracy", "chunked_ceiling", "hici_parameter_count", "loglog_slope", "parameter_overhead",
           "round_slopes"]


def accuracy(predictions, labels) -> float:
    """Mean of ``predictions == labels`` (1-D arrays of equal, non-zero length)."""
    p, y = np.asarray(predictions), np.asarray(labels)
    if p.ndim != 1 or p.shape != y.shape or p.size == 0:
        raise ValueError(f"predictions and labels must be non-empty 1-D arrays of one length; got {p.shape}, {y.shape}")
    return float(np.mean(p == y))


def loglog_slope(sizes, times) -> float:
    """Least-squares slope ``b`` of ``log t = a + b log N``.

    Args:
        sizes: N values (positive, at least two distinct).
        times: positive times, one per size.
    """
    n, t = np.asarray(sizes, dtype=float), np.asarray(times, dtype=float)
    if n.ndim != 1 or n.shape != t.shape or n.size < 2:
        raise ValueError("sizes and times must be 1-D arrays of one length >= 2")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(t)) and np.all(n > 0) and np.all(t > 0)):
        raise ValueError("sizes and times must be positive and finite")
    x, y = np.log(n), np.log(t)
    if np.ptp(x) == 0:
        raise ValueError("sizes must hold at least two distinct values")
    # b = cov(x, y) / var(x)
    xc = x - x.mean()
    return float(np.sum(xc * (y - y.mean())) / np.sum(xc * xc))


def round_slopes(sizes, samples, fit_from: int = 0) -> np.ndarray:
    """Per timing round r, :func:`loglog_slope` of ``samples[:, r]`` over the sizes ``>= fit_from``.

    When every round times all sizes moments apart (``time_attention_blocks(interleave_sizes=True)``),
    load that comes and goes between rounds shifts a round's times together and leaves its slope
    nearly unchanged; the median over rounds is then the load-robust slope.

    Args:
        sizes: N values, one per row of ``samples``.
        samples: ``(sizes, rounds)`` positive times (round r's time at each size in column r).
        fit_from: the smallest N in the fit (0: all); at least two distinct sizes must remain.

    Returns:
        ``(rounds,)`` slopes.
    """
    n, t = np.asarray(sizes, dtype=float), np.asarray(samples, dtype=float)
    check_int(fit_from, "fit_from", low=0)
    if t.ndim != 2 or n.ndim != 1 or t.shape[0] != n.size or t.shape[1] < 1:
        raise ValueError(f"samples must have shape (len(sizes), rounds >= 1); got {t.shape} for {n.size} sizes")
    for name, values in (("sizes", n), ("samples", t)):
        if not (np.all(np.isfinite(values)) and np.all(values > 0)):
            raise ValueError(f"{name} must be positive and finite")
    keep = n >= fit_from
    if np.unique(n[keep]).size < 2:
        raise ValueError(f"fit_from={fit_from} leaves fewer than two distinct sizes of {n.tolist()}")
    return np.array([loglog_slope(n[keep], t[keep, r]) for r in range(t.shape[1])])


def hici_parameter_count(d: int, num_slots: int, num_global: int, bottleneck: int, stat_dim: int) -> int:
    """HiCI parameters per layer: ``M d + 3 d B + B d`` (local) + ``d s + 2 s + s c + 2 c + K c + 4 c^2 + c d + 1``.

    With ``num_slots = 0`` there is no local module, with ``num_global = 0`` no global one.
    """
    for name, value in (("d", d), ("num_slots", num_slots), ("num_global", num_global), ("bottleneck", bottleneck),
                        ("stat_dim", stat_dim)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name}={value!r} must be a non-negative integer")
    m, k, b, s, c = num_slots, num_global, bottleneck, stat_dim, bottleneck
    local = m * d + 3 * d * b + b * d if m > 0 else 0
    glob = d * s + 2 * s + s * c + 2 * c + k * c + 4 * c * c + c * d + 1 if k > 0 else 0
    return int(local + glob)


def parameter_overhead(hici_params: int, base_params: int) -> float:
    """``hici / (base + hici)``, the share the paper reports ("~4-5 %")."""
    check_int(hici_params, "hici_params", low=0)
    check_int(base_params, "base_params", low=1)
    return hici_params / (base_params + hici_params)


def chunked_ceiling(num_segments: int, num_topics: int) -> float:
    """Best expected accuracy when the query sees only its own (last) segment.

    The mark is in the query's segment with probability 1/S (then the topic is identifiable: 1);
    otherwise the marked segment's topic is independent of everything visible: 1/T.
    """
    check_int(num_segments, "num_segments", low=1)
    check_int(num_topics, "num_topics", low=1)
    p_own = 1.0 / num_segments
    return p_own + (1.0 - p_own) / num_topics
