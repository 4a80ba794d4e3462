"""The functional view of a supervised model that LMCleaner works on.

LMCleaner (certified online unlearning by truncated influence propagation) needs
three things from a user's training set-up: the parameters as one flat vector θ
(shape ``(p,)``), the mini-batch objective at any θ, and the data by sample id.
:class:`SupervisedProblem` wraps a ``torch.nn.Module``, a per-sample loss and the
training tensors, and evaluates everything through ``torch.func.functional_call``,
so the model itself is never modified unless :meth:`SupervisedProblem.set_flat_params`
is called.

The objective of a mini-batch S at θ is

    L_S(θ) = (1/|S|) Σ_{i∈S} ℓ(f(x_i; θ), y_i) + (λ/2)·‖θ‖²,

which is what ``torch.optim.SGD(..., weight_decay=λ)`` minimises.

With ``clip_norm = C`` (per-sample gradient clipping, as in DP-SGD) the training step is
instead θ ← θ − η·(mean_i clip_C(∇ℓ_i(θ)) + λθ) with clip_C(g) = g·min(1, C/‖g‖): every
batch's loss part of the update then has norm at most η·C, a *public* bound on what deleting
one batch removes (the certificate's Δ̄ = η·C when λ = 0).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

__all__ = ["PerSampleLoss", "SupervisedProblem"]


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a real number")
    if not math.isfinite(value):
        raise ValueError(f"{name}={value} must be a finite number")
    return float(value)

#: ``loss(outputs (B, ...), targets (B, ...)) -> per-sample losses (B,)``.
PerSampleLoss = Callable[[Tensor, Tensor], Tensor]


@dataclasses.dataclass(eq=False)
class SupervisedProblem:
    """A model, a per-sample loss and a training set indexed by sample id.

    Attributes:
        model: any ``nn.Module``; its parameters with ``requires_grad`` form θ, in
            ``named_parameters()`` order. Buffers are read from the model as they are.
        loss: per-sample loss, e.g.
            ``lambda out, y: F.cross_entropy(out, y, reduction="none")``.
        inputs: ``(N, ...)`` training inputs; sample id ``i`` is row ``i`` (finite when floating).
        targets: ``(N, ...)`` training targets (finite when floating).
        l2: weight decay λ ≥ 0 (the objective adds λ/2·‖θ‖²); must equal the
            optimizer's ``weight_decay``.
        clip_norm: ``None`` (plain SGD) or C > 0: :meth:`gradient` (and so :meth:`sgd_step`,
            replay and retraining) clips every per-sample loss gradient to norm C before the
            mean; train with the same rule (write :meth:`gradient` into ``.grad``). The exact
            HVP backend then propagates with the Jacobian of this clipped update.
    """

    model: nn.Module
    loss: PerSampleLoss
    inputs: Tensor
    targets: Tensor
    l2: float = 0.0
    clip_norm: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(self.model).__name__}")
        if not callable(self.loss):
            raise TypeError("loss must be a callable (outputs, targets) -> per-sample losses")
        for name in ("inputs", "targets"):
            value = getattr(self, name)
            if not isinstance(value, Tensor):
                if isinstance(value, np.ndarray):
                    setattr(self, name, torch.from_numpy(value))
                else:
                    raise TypeError(f"{name} must be a torch tensor (or a NumPy array), got {type(value).__name__}")
        if self.inputs.dim() == 0 or self.targets.dim() == 0:
            raise ValueError("inputs and targets need a leading sample dimension (N, ...)")
        for name in ("inputs", "targets"):
            value = getattr(self, name)
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"{name} holds NaN or inf; every loss and gradient on those rows would be NaN: "
                                 "clean or drop those samples first")
        self.l2 = _number("l2", self.l2)
        if self.inputs.shape[0] != self.targets.shape[0]:
            raise ValueError(
                f"inputs has {self.inputs.shape[0]} rows but targets has {self.targets.shape[0]}; "
                "row i of both must be sample i"
            )
        if self.l2 < 0:
            raise ValueError(f"l2={self.l2} must be non-negative")
        if self.clip_norm is not None:
            self.clip_norm = _number("clip_norm", self.clip_norm)
            if self.clip_norm <= 0:
                raise ValueError(f"clip_norm={self.clip_norm} must be positive (or None: no clipping)")
        self._names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        if not self._names:
            raise ValueError("the model has no parameter with requires_grad=True")
        params = dict(self.model.named_parameters())
        self._first = params[self._names[0]]  # its dtype follows module.double() / .to()
        self._shapes = [params[n].shape for n in self._names]
        self._numels = [params[n].numel() for n in self._names]

    # -- parameters -------------------------------------------------------
    @property
    def num_params(self) -> int:
        """p, the length of the flat parameter vector."""
        return sum(self._numels)

    def flat_params(self) -> Tensor:
        """The model's current θ as a detached copy, shape ``(p,)``."""
        params = dict(self.model.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self._names]).clone()

    @torch.no_grad()
    def set_flat_params(self, theta: Tensor) -> None:
        """Write θ ``(p,)`` into the model's parameters in place (NaN or inf is refused)."""
        self._check(theta)
        if not bool(torch.isfinite(theta).all()):
            raise ValueError("theta holds NaN or inf; the model's parameters were not changed")
        params = dict(self.model.named_parameters())
        for name, piece in zip(self._names, torch.split(theta, self._numels)):
            params[name].copy_(piece.view_as(params[name]))

    def unflatten(self, theta: Tensor) -> dict[str, Tensor]:
        """θ ``(p,)`` as ``{name: tensor}`` views with the model's shapes."""
        self._check(theta)
        pieces = torch.split(theta, self._numels)
        return {n: piece.view(shape) for n, piece, shape in zip(self._names, pieces, self._shapes)}

    def _check(self, theta: Tensor) -> None:
        if not isinstance(theta, Tensor):
            raise TypeError(f"theta must be a torch tensor ({self.num_params},), got {type(theta).__name__}")
        if theta.ndim != 1 or theta.numel() != self.num_params:
            raise ValueError(f"θ must have shape ({self.num_params},), got {tuple(theta.shape)}")
        dtype = self._first.dtype
        if theta.dtype != dtype:
            raise ValueError(f"theta has dtype {theta.dtype} but the model's parameters are {dtype}; "
                             f"pass theta.to({dtype})")

    # -- data -------------------------------------------------------------
    def batch(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        """Inputs and targets of the samples ``ids`` (a 1-D integer tensor of row indices 0 … N−1)."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.inputs.shape[0]):
            raise ValueError(f"sample ids must lie in 0..{self.inputs.shape[0] - 1}, got "
                             f"{int(ids.min())}..{int(ids.max())} (a negative id would wrap around)")
        ids = ids.to(self.inputs.device)
        return self.inputs[ids], self.targets[ids]

    # -- evaluation -------------------------------------------------------
    def forward(self, theta: Tensor, inputs: Tensor) -> Tensor:
        """Model outputs f(x; θ) for a batch of inputs, without touching the model."""
        buffers = dict(self.model.named_buffers())
        return functional_call(self.model, {**self.unflatten(theta), **buffers}, (inputs,))

    def per_sample_losses(self, theta: Tensor, ids: Tensor) -> Tensor:
        """ℓ(f(x_i; θ), y_i) for each i in ``ids``: shape ``(B,)``."""
        x, y = self.batch(ids)
        return self.loss(self.forward(theta, x), y)

    def objective(self, theta: Tensor, ids: Tensor) -> Tensor:
        """The mini-batch objective L_S(θ), a scalar."""
        # L_S(θ) = mean_i ℓ(f(x_i; θ), y_i) + λ/2 ‖θ‖²
        value = self.per_sample_losses(theta, ids).mean()
        if self.l2:
            value = value + 0.5 * self.l2 * theta.pow(2).sum()
        return value

    def per_sample_gradients(self, theta: Tensor, ids: Tensor) -> Tensor:
        """g_i = ∇ℓ(f(x_i; θ), y_i) for each sample of ``ids``: ``(B, p)`` (no weight decay, no clipping)."""
        x, y = self.batch(ids)

        def one(th: Tensor, xi: Tensor, yi: Tensor) -> Tensor:
            return self.loss(self.forward(th, xi.unsqueeze(0)), yi.unsqueeze(0)).sum()

        return vmap(grad(one), in_dims=(None, 0, 0))(theta.detach(), x, y)

    def clipped_gradient(self, theta: Tensor, ids: Tensor) -> Tensor:
        """mean_i clip_C(∇ℓ_i(θ)) + λθ with C = ``clip_norm`` (differentiable in θ), shape ``(p,)``."""
        if self.clip_norm is None:
            raise ValueError("clip_norm is None: this problem does not clip; use gradient()")
        x, y = self.batch(ids)

        def one(th: Tensor, xi: Tensor, yi: Tensor) -> Tensor:
            g = grad(lambda t: self.loss(self.forward(t, xi.unsqueeze(0)), yi.unsqueeze(0)).sum())(th)
            # clip_C(g) = g · min(1, C/‖g‖)
            return g * torch.clamp(self.clip_norm / g.norm().clamp_min(1e-300), max=1.0)

        out = vmap(one, in_dims=(None, 0, 0))(theta, x, y).mean(0)
        return out + self.l2 * theta if self.l2 else out

    def gradient(self, theta: Tensor, ids: Tensor) -> Tensor:
        """∇L_S(θ) (with ``clip_norm``: the clipped update direction), shape ``(p,)``."""
        if self.clip_norm is not None:
            return self.clipped_gradient(theta.detach(), ids)
        # plain reverse mode (torch.autograd): the same numbers as torch.func.grad, ~2x faster on small
        # models, where the per-call overhead dominates
        with torch.enable_grad():
            th = theta.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self.objective(th, ids), th, allow_unused=True)
        return torch.zeros_like(th) if g is None else g

    def sgd_step(self, theta: Tensor, ids: Tensor, lr: float) -> Tensor:
        """One plain SGD step, θ − η·∇L_S(θ) (what ``torch.optim.SGD`` does); η finite and >= 0."""
        if not (isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr) and lr >= 0):
            raise ValueError(f"lr={lr!r} must be a finite number >= 0")
        return theta - lr * self.gradient(theta, ids)
