"""The evidential (EDL) loss ConfSleepNet trains every view with (Sensoy et al., NeurIPS 2018).

For evidence ``e >= 0`` over ``K`` classes, ``alpha = e + 1``, ``S = sum alpha``,
``p = alpha / S`` and a one-hot target ``y``:

1. data term (the expected squared error under ``Dir(alpha)``):
   ``sum_k (y_k - p_k)^2 + p_k (1 - p_k) / (S + 1)``;
2. regulariser: ``KL(Dir(alpha~) || Dir(1))`` with ``alpha~ = y + (1 - y) * alpha`` (the
   evidence of the wrong classes, pulled towards "I don't know");
3. annealed: ``loss = data + lambda_t * KL``, ``lambda_t = min(1, epoch / annealing_epochs)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.common.argcheck import check_int, check_real

__all__ = ["edl_loss", "kl_to_uniform_dirichlet"]


def kl_to_uniform_dirichlet(alpha: Tensor) -> Tensor:
    """``KL(Dir(alpha) || Dir(1, ..., 1))`` per row, ``(...)`` from ``alpha: (..., K)``.

    ``alpha`` must be positive (``ValueError`` otherwise); NaN propagates.
    """
    if not isinstance(alpha, Tensor):
        raise TypeError(f"alpha must be a torch.Tensor, got {type(alpha).__name__}")
    if alpha.ndim < 1 or alpha.shape[-1] < 1 or not alpha.is_floating_point():
        raise ValueError(f"alpha must be a floating (..., K) tensor, got {tuple(alpha.shape)} {alpha.dtype}")
    if bool((alpha <= 0).any()):
        raise ValueError("alpha must be > 0 (Dirichlet parameters; alpha = evidence + 1)")
    k = alpha.shape[-1]
    strength = alpha.sum(-1)
    # KL = lnG(S) - sum lnG(alpha_k) - lnG(K) + sum (alpha_k - 1)(psi(alpha_k) - psi(S))
    log_norm = torch.lgamma(strength) - torch.lgamma(alpha).sum(-1) - torch.lgamma(alpha.new_tensor(float(k)))
    digamma_term = ((alpha - 1) * (torch.digamma(alpha) - torch.digamma(strength).unsqueeze(-1))).sum(-1)
    return log_norm + digamma_term


def edl_loss(evidence: Tensor, target: Tensor, epoch: int, *, annealing_epochs: int = 10,
             kl_weight: float | None = None, reduction: str = "mean") -> Tensor:
    """EDL mean-squared-error loss with the annealed KL regulariser.

    Args:
        evidence: ``(N, K)`` non-negative evidence (e.g. ``softplus(logits)``).
        target: ``(N,)`` class indices or ``(N, K)`` one-hot targets.
        epoch: the training epoch (0-based); sets ``lambda_t = min(1, epoch / annealing_epochs)``.
        annealing_epochs: epochs until the KL weight reaches 1 (10 in the authors' code).
        kl_weight: a fixed ``lambda`` instead of the annealing schedule.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (per-sample ``(N,)``).

    Negative evidence is a ``ValueError``; NaN evidence gives a NaN loss (a diverged
    network shows in the loss, as with any torch loss).
    """
    if not isinstance(evidence, Tensor) or not isinstance(target, Tensor):
        raise TypeError("evidence and target must be torch.Tensors")
    if evidence.ndim != 2:
        raise ValueError(f"evidence must be (N, K), got shape {tuple(evidence.shape)}")
    if not evidence.is_floating_point():
        raise TypeError(f"evidence must be floating point, got {evidence.dtype}")
    if bool((evidence < 0).any()):
        raise ValueError("evidence must be >= 0 (apply softplus/ReLU/exp to the logits)")
    epoch = check_int(epoch, "epoch", low=0)
    annealing_epochs = check_int(annealing_epochs, "annealing_epochs", low=1)
    if kl_weight is not None:
        check_real(kl_weight, "kl_weight", low=0.0)
    k = evidence.shape[-1]
    if target.ndim == 1:
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= k):
            raise ValueError(f"target labels must lie in 0..{k - 1}")
        y = F.one_hot(target.long(), k).to(evidence.dtype)
    elif target.shape == evidence.shape:
        y = target.to(evidence.dtype)
    else:
        raise ValueError(f"target must be (N,) labels or (N, K) one-hot; got {tuple(target.shape)} for "
                         f"evidence {tuple(evidence.shape)}")
    if annealing_epochs < 1:
        raise ValueError(f"annealing_epochs={annealing_epochs} must be >= 1")
    alpha = evidence + 1
    strength = alpha.sum(-1, keepdim=True)
    p = alpha / strength
    # sum_k (y_k - p_k)^2 + p_k (1 - p_k) / (S + 1)
    data = ((y - p) ** 2 + p * (1 - p) / (strength + 1)).sum(-1)
    # lambda_t = min(1, epoch / annealing_epochs)
    lam = min(1.0, epoch / annealing_epochs) if kl_weight is None else float(kl_weight)
    # alpha~ = y + (1 - y) alpha
    alpha_tilde = y + (1 - y) * alpha
    loss = data + lam * kl_to_uniform_dirichlet(alpha_tilde)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction={reduction!r} must be 'mean', 'sum' or 'none'")
