"""Training an :class:`InstEmbModel`: AdamW on random batches of examples, with progress.

:func:`train_instemb` is the loop; :func:`fit_instemb` (the method as one call) wraps a
causal LM with K = 4 look-ahead tokens and MSE distillation, trains it and returns it with
DAAP pooling. Its siblings in :mod:`~icml26.papers.instemb.baselines` share its signature.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Sequence

import torch

from icml26.common.progress import progress
from icml26.papers.instemb.data import Example
from icml26.papers.instemb.model import InstEmbLoss, InstEmbModel

__all__ = ["TrainLog", "fit_instemb", "train_instemb"]


@dataclasses.dataclass
class TrainLog:
    """Per-step losses of :func:`train_instemb`."""

    total: list[float]
    contrastive: list[float]
    distill: list[float]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def train_instemb(model: InstEmbModel, data: Sequence[Example], steps: int, *, batch_size: int = 64,
                  lr: float = 3e-4, weight_decay: float = 0.0, grad_clip: float = 1.0,
                  generator: torch.Generator | None = None, show_progress: bool | None = None,
                  on_step: Callable[[int, InstEmbLoss], None] | None = None) -> TrainLog:
    """Train ``model`` in place on ``data`` for ``steps`` AdamW steps.

    Args:
        model: the wrapped model (:meth:`InstEmbModel.wrap`).
        data: the training examples; each step draws ``batch_size`` of them without
            replacement (all of them when there are fewer).
        steps: optimizer steps (>= 1).
        batch_size: examples per step (>= 2: in-batch negatives).
        lr: AdamW learning rate (constant; brief §4.2: 3e-4).
        weight_decay: AdamW weight decay.
        grad_clip: global gradient-norm clip (0: none).
        generator: the CPU generator batches are drawn from (default: seeded with 0).
        show_progress: progress bar / log lines (``None``: on a terminal only).
        on_step: called as ``on_step(step, parts)`` after each update (``step`` from 1).

    Returns:
        The :class:`TrainLog`; the model is left in eval mode.
    """
    if not isinstance(model, InstEmbModel):
        raise TypeError(f"model must be an InstEmbModel (InstEmbModel.wrap(...)), got {type(model).__name__}")
    data = list(data)
    if not data:
        raise ValueError("data is empty; give at least two Examples")
    if not all(isinstance(e, Example) for e in data):
        raise TypeError("data must hold icml26.papers.instemb.Example objects")
    for name, value, low in (("steps", steps, 1), ("batch_size", batch_size, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    for name, value in (("lr", lr), ("weight_decay", weight_decay), ("grad_clip", grad_clip)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}={value!r} must be a finite non-negative number")
    if lr == 0:
        raise ValueError("lr=0 would not train; give a positive learning rate")
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    params = model.trainable_parameters()
    if not params:
        raise ValueError("the model has no trainable parameter")
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    logs = TrainLog(total=[], contrastive=[], distill=[], seconds=0.0)
    start = time.perf_counter()
    model.train()
    bar = progress(range(steps), enabled=show_progress, desc="InstEmb training")
    take = min(batch_size, len(data))
    for step in bar:
        idx = torch.randperm(len(data), generator=generator)[:take].tolist()
        parts = model.loss([data[i] for i in idx], return_parts=True)
        optimizer.zero_grad(set_to_none=True)
        parts.total.backward()
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        logs.total.append(float(parts.total.detach()))
        logs.contrastive.append(float(parts.contrastive.detach()))
        logs.distill.append(float(parts.distill.detach()))
        if not math.isfinite(logs.total[-1]):
            raise FloatingPointError(f"InstEmb loss is {logs.total[-1]} at step {step + 1}; lower lr")
        if (step + 1) % 25 == 0:
            bar.set_postfix(loss=f"{logs.total[-1]:.3f}", dist=f"{logs.distill[-1]:.3f}")
        if on_step is not None:
            on_step(step + 1, parts)
    model.eval()
    logs.seconds = time.perf_counter() - start
    return logs


def fit_instemb(causal_lm: Any, data: Sequence[Example], steps: int, *, tokenizer: Any = None,
                num_lookahead: int = 4, distill: str = "mse", batch_size: int = 64, lr: float = 3e-4,
                generator: torch.Generator | None = None, show_progress: bool | None = None,
                **wrap_kwargs: Any) -> InstEmbModel:
    """InstEmb in one call: wrap ``causal_lm`` (trained in place), train it, return it with DAAP pooling.

    ``wrap_kwargs`` go to :meth:`InstEmbModel.wrap` (``train_last_blocks``, ``tau``, ``views`` …).
    """
    model = InstEmbModel.wrap(causal_lm, num_lookahead, tokenizer=tokenizer, distill=distill,
                              pooling="daap", **wrap_kwargs)
    train_instemb(model, data, steps, batch_size=batch_size, lr=lr, generator=generator,
                  show_progress=show_progress)
    return model
