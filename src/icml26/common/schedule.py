"""The learning-rate schedule the papers' training loops share: linear warm-up, then cosine decay.

.. math::

    \\eta(s) = \\begin{cases}
      \\eta_{\\max} \\, (s + 1) / W & s < W \\\\
      \\eta_{\\max} \\big(f + (1 - f)\\, \\tfrac12 (1 + \\cos \\pi p)\\big),
      \\quad p = \\min\\big(1, \\tfrac{s - W}{\\max(1, S - W)}\\big) & s \\ge W
    \\end{cases}

with ``W`` warm-up steps, ``S`` total steps and ``f`` the final rate as a fraction of the peak.
``peak=1`` gives the multiplier a ``torch.optim.lr_scheduler.LambdaLR`` takes.
"""

from __future__ import annotations

import math

__all__ = ["warmup_cosine"]


def warmup_cosine(step: int, total: int, *, warmup: int = 0, floor: float = 0.0, peak: float = 1.0) -> float:
    """The learning rate (or, with ``peak=1``, the multiplier) at 0-based ``step`` of ``total``.

    ``warmup`` steps rise linearly to ``peak`` (the first step already at ``peak / warmup``);
    the rest decay along a half cosine to ``floor · peak`` at ``step = total`` and stay there.
    """
    if warmup < 0 or total < 0 or step < 0:
        raise ValueError(f"step={step}, total={total} and warmup={warmup} must be >= 0")
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor={floor} must be a fraction of the peak in [0, 1]")
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor + (1.0 - floor) * (0.5 * (1.0 + math.cos(math.pi * progress))))
