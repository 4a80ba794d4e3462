"""Muon: momentum orthogonalised by Newton-Schulz, with AdamW for the other parameters.

The LLR paper (arXiv 2605.22297) reports runs with Muon; its released code ships a
Keller-Jordan-style ``MuonWithAuxAdam`` but never wires it in. This is that optimizer,
written so that :class:`~icml26.papers.llr.layerwise.LayerwiseLR` can scale its groups.

Steps of :meth:`Muon.step` for a group with ``use_muon=True`` (hidden weight matrices):

1. momentum ``B <- mu B + (1 - mu) G``; Nesterov look-ahead ``U = (1 - mu) G + mu B``;
2. orthogonalise: ``O = NS5(U)``, five steps of a quintic Newton-Schulz iteration that
   pushes every singular value of ``U / ||U||_F`` towards 1 (:func:`newton_schulz`);
3. ``W <- (1 - lr wd) W - lr sqrt(max(1, rows/cols)) O``.

Groups with ``use_muon=False`` (embeddings, head, norms, biases) take an AdamW step.
Convolution kernels are flattened to ``(out, in * k)`` for step 2.
"""

from __future__ import annotations

import math
from typing import Iterable

import torch

from icml26.common.argcheck import check_int, check_real

__all__ = ["Muon", "newton_schulz"]

# Coefficients of the quintic iteration (Keller Jordan's Muon): they maximise the slope at 0.
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(update: torch.Tensor, *, steps: int = 5, eps: float = 1e-7,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Approximately orthogonalise a matrix: ``U S V^T -> U S' V^T`` with ``S'`` near 1.

    Args:
        update: ``(rows, cols)`` or a batch ``(..., rows, cols)``.
        steps: Newton-Schulz iterations.
        eps: guards the Frobenius normalisation of a zero matrix.
        dtype: compute dtype (``torch.bfloat16`` is faster on GPUs and is what Keller
            Jordan's Muon uses; singular values then land in roughly ``[0.7, 1.2]``).

    Returns:
        A tensor of ``update``'s shape and dtype. NaN or inf in ``update`` gives NaN (the
        Frobenius normalisation spreads it over the matrix); a zero matrix gives zeros.
    """
    if not isinstance(update, torch.Tensor):
        raise TypeError(f"update must be a torch.Tensor, got {type(update).__name__}")
    if update.ndim < 2:
        raise ValueError(f"newton_schulz needs a matrix, got shape {tuple(update.shape)}")
    if not update.is_floating_point():
        raise TypeError(f"update must be a floating-point matrix, got {update.dtype}")
    steps = check_int(steps, "steps", low=0)
    check_real(eps, "eps", low=0.0, low_open=True)
    a, b, c = _NS_COEFFICIENTS
    x = update.to(dtype)
    transposed = x.size(-2) > x.size(-1)
    if transposed:  # iterate on the smaller Gram matrix
        x = x.mT
    # X_0 = G / ||G||_F, so that every singular value is at most 1
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        gram = x @ x.mT
        # X <- a X + (b A + c A^2) X,  A = X X^T: on singular values, s <- a s + b s^3 + c s^5
        x = a * x + (b * gram + c * gram @ gram) @ x
    if transposed:
        x = x.mT
    return x.to(update.dtype)


class Muon(torch.optim.Optimizer):
    """Muon for hidden weight matrices and AdamW for the rest, in one optimizer.

    Every param group must say ``use_muon`` (True or False);
    :func:`~icml26.papers.llr.layerwise.layerwise_param_groups` with ``muon_lr`` builds
    such groups, one per layer, so that LLR can scale each layer.

    Args:
        params: param groups with a ``use_muon`` key (and optionally their own ``lr``).
        lr: default learning rate (groups without their own ``lr``).
        momentum: Muon's momentum ``mu``.
        nesterov: use the Nesterov look-ahead.
        ns_steps: Newton-Schulz iterations.
        weight_decay: decoupled weight decay (both kinds of group).
        betas, eps: AdamW's, for ``use_muon=False`` groups.
    """

    def __init__(self, params: Iterable[dict], *, lr: float = 0.02, momentum: float = 0.95,
                 nesterov: bool = True, ns_steps: int = 5, weight_decay: float = 0.0,
                 betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8) -> None:
        check_real(lr, "lr", low=0.0, low_open=True)
        check_real(momentum, "momentum", low=0.0, high=1.0, high_open=True)
        check_int(ns_steps, "ns_steps", low=1)
        check_real(weight_decay, "weight_decay", low=0.0)
        check_real(eps, "eps", low=0.0, low_open=True)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas={betas!r} must be a pair (beta1, beta2)")
        for beta in betas:
            check_real(beta, "betas", low=0.0, high=1.0, high_open=True)
        groups = list(params)
        for index, group in enumerate(groups):
            if not isinstance(group, dict) or "use_muon" not in group:
                raise ValueError(f"param group {index} has no 'use_muon' key; build the groups with "
                                 f"layerwise_param_groups(model, muon_lr=...)")
            if group["use_muon"] and any(p.ndim < 2 for p in group["params"]):
                raise ValueError(f"param group {index} ({group.get('name', '?')}) has use_muon=True but holds "
                                 f"a vector; Muon updates matrices only (put vectors in an AdamW group)")
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, ns_steps=ns_steps,
                        weight_decay=weight_decay, betas=betas, eps=eps)
        super().__init__(groups, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["use_muon"]:
                self._muon_step(group)
            else:
                self._adamw_step(group)
        return loss

    def _muon_step(self, group: dict) -> None:
        lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)
            buf = state["momentum_buffer"]
            # B <- mu B + (1 - mu) G
            buf.lerp_(p.grad, 1.0 - mu)
            # U = (1 - mu) G + mu B  (Nesterov) or U = B
            update = p.grad.lerp(buf, mu) if group["nesterov"] else buf.clone()
            matrix = update.reshape(update.shape[0], -1)
            orthogonal = newton_schulz(matrix, steps=group["ns_steps"])
            # the sqrt(max(1, rows/cols)) scale keeps the update's RMS comparable across shapes
            scale = math.sqrt(max(1.0, matrix.shape[0] / matrix.shape[1]))
            p.mul_(1.0 - lr * wd)
            p.add_(orthogonal.reshape(p.shape), alpha=-lr * scale)

    def _adamw_step(self, group: dict) -> None:
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if "step" not in state:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
            m, v, t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            m.lerp_(p.grad, 1.0 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
            # W <- (1 - lr wd) W - lr * m_hat / (sqrt(v_hat) + eps)
            denom = (v / (1.0 - beta2 ** t)).sqrt_().add_(eps)
            p.mul_(1.0 - lr * wd)
            p.addcdiv_(m, denom, value=-lr / (1.0 - beta1 ** t))
