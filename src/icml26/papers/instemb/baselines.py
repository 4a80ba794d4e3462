"""The paper's baselines, with :func:`~icml26.papers.instemb.training.fit_instemb`'s signature.

Each takes ``(causal_lm, data, steps, *, tokenizer=…)`` and returns an :class:`InstEmbModel`
whose default pooling is the baseline's, so ``.encode(texts, instruction)`` compares them
on equal terms:

* :func:`input_last`: the (SFT) model's last-token (``<eos>``) state, untrained here
  (``data`` and ``steps`` are ignored): the paper's "InputLast" row;
* :func:`contrastive_last_token`: K = 0, λ = 0, the same contrastive loss and views, last-token
  pooling: the "w/o distillation" ablation;
* :func:`instemb_last_token`: InstEmb trained exactly as the method, read out at ``h_eos`` only:
  the "w/o DAAP" ablation.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from icml26.common.argcheck import check_int
from icml26.papers.instemb.data import Example
from icml26.papers.instemb.model import InstEmbModel
from icml26.papers.instemb.training import train_instemb

__all__ = ["contrastive_last_token", "input_last", "instemb_last_token"]


def input_last(causal_lm: Any, data: Sequence[Example], steps: int, *, tokenizer: Any = None,
               **wrap_kwargs: Any) -> InstEmbModel:
    """InputLast: an encode-only wrapper reading the last input token's state (no training).

    ``data`` and ``steps`` are not used; ``steps`` is still checked (an integer >= 0), so that a
    bad value passed to every drop-in alike is refused here too.
    """
    check_int(steps, "steps", low=0)
    return InstEmbModel.wrap(causal_lm, 0, tokenizer=tokenizer, with_teacher=False, distill_weight=0.0,
                             pooling="eos", **wrap_kwargs)


def contrastive_last_token(causal_lm: Any, data: Sequence[Example], steps: int, *, tokenizer: Any = None,
                           batch_size: int = 64, lr: float = 3e-4, generator: torch.Generator | None = None,
                           show_progress: bool | None = None, **wrap_kwargs: Any) -> InstEmbModel:
    """Contrastive-only training (K = 0, λ = 0) with last-token pooling ("w/o distillation")."""
    model = InstEmbModel.wrap(causal_lm, 0, tokenizer=tokenizer, distill_weight=0.0, pooling="eos", **wrap_kwargs)
    train_instemb(model, data, steps, batch_size=batch_size, lr=lr, generator=generator, show_progress=show_progress)
    return model


def instemb_last_token(causal_lm: Any, data: Sequence[Example], steps: int, *, tokenizer: Any = None,
                       num_lookahead: int = 4, distill: str = "mse", batch_size: int = 64, lr: float = 3e-4,
                       generator: torch.Generator | None = None, show_progress: bool | None = None,
                       **wrap_kwargs: Any) -> InstEmbModel:
    """InstEmb training with last-token pooling ("w/o DAAP")."""
    model = InstEmbModel.wrap(causal_lm, num_lookahead, tokenizer=tokenizer, distill=distill, pooling="eos",
                              **wrap_kwargs)
    train_instemb(model, data, steps, batch_size=batch_size, lr=lr, generator=generator, show_progress=show_progress)
    return model
