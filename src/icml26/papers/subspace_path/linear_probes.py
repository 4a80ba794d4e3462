"""Layer-wise domain probes (PSP offline, brief §1.3.1–2) [authors' code].

For each layer ``ℓ`` a linear map ``R^d -> R^K`` is trained with one-vs-rest binary
cross-entropy on mean-pooled post-attention residuals ``r_ℓ(x)``; sigmoid outputs allow a
mixture of domains (several near 1). Each layer's logits are then divided by a
temperature ``τ_ℓ`` fitted on held-out inputs:

    p_{ℓ,k}(x) = σ( (w_{ℓ,k} · (r_ℓ(x) − μ_ℓ) / s_ℓ + b_{ℓ,k}) / τ_ℓ )

``μ_ℓ`` and ``s_ℓ`` (the mean and the RMS norm of the centred training residuals) only
condition the optimisation; the direction the probe reads in the residual stream is the row
``w_{ℓ,k} / s_ℓ``, and its unit vector is the domain axis ``u_{ℓ,k}`` (:meth:`DomainProbes.axes`).

Training follows the authors: Adam at ``lr = 1e-3``, batches of 32, 10–20 epochs. The
authors fit separate temperatures for their single/OOD/cross regimes; we fit one per layer
(on held-out single-domain inputs) [ours].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real

__all__ = ["DomainProbes", "fit_probes"]


class DomainProbes(nn.Module):
    """``L`` linear probes ``R^d -> R^K`` with per-layer centring, scale and temperature.

    Args:
        n_layers: ``L``.
        d_model: ``d``, the residual width.
        n_domains: ``K``.
    """

    def __init__(self, n_layers: int, d_model: int, n_domains: int) -> None:
        super().__init__()
        n_layers = check_int(n_layers, "n_layers", low=1)
        d_model = check_int(d_model, "d_model", low=1)
        n_domains = check_int(n_domains, "n_domains", low=1)
        self.weight = nn.Parameter(torch.zeros(n_layers, n_domains, d_model))
        self.bias = nn.Parameter(torch.zeros(n_layers, n_domains))
        self.register_buffer("center", torch.zeros(n_layers, d_model))
        self.register_buffer("scale", torch.ones(n_layers))
        self.register_buffer("log_temperature", torch.zeros(n_layers))

    @property
    def n_layers(self) -> int:
        return int(self.weight.shape[0])

    @property
    def n_domains(self) -> int:
        return int(self.weight.shape[1])

    @property
    def temperature(self) -> Tensor:
        """``τ_ℓ``: ``(L,)``."""
        return self.log_temperature.exp()

    def _check(self, residuals: Tensor) -> None:
        if not isinstance(residuals, torch.Tensor) or residuals.dim() != 3 or residuals.shape[1:] != (
                self.n_layers, self.weight.shape[2]):
            shape = tuple(residuals.shape) if isinstance(residuals, torch.Tensor) else type(residuals).__name__
            raise ValueError(f"residuals has shape {shape}; expected (N, L={self.n_layers}, d={self.weight.shape[2]})")

    def raw_logits(self, residuals: Tensor) -> Tensor:
        """Uncalibrated logits: ``(N, L, d) -> (N, L, K)``."""
        self._check(residuals)
        x = (residuals.to(self.weight.dtype) - self.center) / self.scale[:, None]
        return torch.einsum("nld,lkd->nlk", x, self.weight) + self.bias

    def forward(self, residuals: Tensor) -> Tensor:
        """Temperature-calibrated logits ``(N, L, K)``; NaN in the residuals propagates."""
        return self.raw_logits(residuals) / self.temperature[:, None]

    def probabilities(self, residuals: Tensor) -> Tensor:
        """``p_{ℓ,k}(x)``: sigmoid of the calibrated logits, ``(N, L, K)``."""
        return torch.sigmoid(self(residuals))

    def axes(self) -> Tensor:
        """Unit domain axes in the residual stream ``u_{ℓ,k} = w_{ℓ,k} / ‖w_{ℓ,k}‖``: ``(L, K, d)``.

        (The per-layer scalar ``s_ℓ`` does not change the direction.) A zero row stays zero.
        """
        w = self.weight.detach()
        return w / w.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _targets(labels: Tensor, n_domains: int) -> Tensor:
    if labels.dim() == 1:
        if labels.dtype.is_floating_point:
            raise TypeError("labels of shape (N,) must be integer domain indices")
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= n_domains):
            raise ValueError(f"labels must lie in [0, {n_domains}); got {int(labels.min())} .. {int(labels.max())}")
        return nn.functional.one_hot(labels.long(), n_domains).float()
    if labels.dim() == 2 and labels.shape[1] == n_domains:
        t = labels.float()
        if not bool(((t >= 0) & (t <= 1)).all()):
            raise ValueError("labels: multi-label targets must lie in [0, 1] (without NaN)")
        return t
    raise ValueError(f"labels must be (N,) domain indices or (N, K={n_domains}) multi-label targets, "
                     f"got shape {tuple(labels.shape)}")


def fit_probes(
    residuals: Tensor,
    labels: Tensor,
    *,
    n_domains: int | None = None,
    epochs: int = 15,
    lr: float = 1e-3,
    batch_size: int = 32,
    validation_fraction: float = 0.2,
    calibrate: bool = True,
    generator: torch.Generator | None = None,
) -> DomainProbes:
    """Train one-vs-rest domain probes on every layer and calibrate their temperatures.

    Args:
        residuals: ``(N, L, d)`` pooled post-attention residuals (:func:`collect_activations`).
        labels: ``(N,)`` domain indices in ``[0, K)``, or ``(N, K)`` multi-label targets in ``[0, 1]``.
        n_domains: ``K`` (default: ``labels.max() + 1`` or ``labels.shape[1]``).
        epochs: passes over the training split (authors: 10–20).
        lr: Adam learning rate (authors: 1e-3).
        batch_size: inputs per step (authors: 32).
        validation_fraction: share of the inputs held out to fit the temperatures; 0 skips
            calibration (``τ = 1``).
        calibrate: fit ``τ_ℓ`` minimising held-out BCE over a log grid ``[0.01, 100]``.
        generator: the split and batch order (default: seed 0).

    Returns:
        The trained :class:`DomainProbes` (CPU, float32, eval mode).
    """
    if not isinstance(residuals, torch.Tensor) or residuals.dim() != 3:
        raise ValueError("residuals must be a tensor of shape (N, L, d)")
    if not isinstance(labels, torch.Tensor):
        labels = torch.as_tensor(labels)
    if labels.shape[0] != residuals.shape[0]:
        raise ValueError(f"labels has {labels.shape[0]} rows, residuals {residuals.shape[0]}")
    if not bool(torch.isfinite(residuals).all()):
        raise ValueError("residuals contain NaN or inf; check the model's activations")
    if n_domains is None:
        n_domains = int(labels.shape[1]) if labels.dim() == 2 else int(labels.max()) + 1
    n_domains = check_int(n_domains, "n_domains", low=1)
    epochs = check_int(epochs, "epochs", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    validation_fraction = check_real(validation_fraction, "validation_fraction", low=0.0, high=1.0, high_open=True)
    targets = _targets(labels, n_domains)
    n, n_layers, d = residuals.shape
    if n < 2:
        raise ValueError(f"fit_probes needs at least 2 inputs, got {n}")
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    x = residuals.detach().float().cpu()
    targets = targets.cpu()
    order = torch.randperm(n, generator=generator)
    n_val = int(round(validation_fraction * n)) if calibrate else 0
    n_val = min(n_val, n - 1)
    val_idx, train_idx = order[:n_val], order[n_val:]

    probes = DomainProbes(n_layers, d, n_domains)
    with torch.no_grad():
        center = x[train_idx].mean(dim=0)
        probes.center.copy_(center)
        rms = (x[train_idx] - center).pow(2).sum(-1).mean(0).sqrt()  # (L,)
        probes.scale.copy_(rms.clamp_min(1e-6))
    optimizer = torch.optim.Adam(probes.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    probes.train()
    for _ in range(epochs):
        perm = train_idx[torch.randperm(train_idx.numel(), generator=generator)]
        for start in range(0, perm.numel(), batch_size):
            idx = perm[start:start + batch_size]
            logits = probes.raw_logits(x[idx])  # (B, L, K)
            loss = loss_fn(logits, targets[idx].unsqueeze(1).expand_as(logits))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    probes.eval()
    if n_val > 0:
        with torch.no_grad():
            logits = probes.raw_logits(x[val_idx])  # (V, L, K)
            tgt = targets[val_idx].unsqueeze(1).expand_as(logits)
            grid = torch.linspace(math.log(0.01), math.log(100.0), 161)
            best = torch.zeros(n_layers)
            best_loss = torch.full((n_layers,), math.inf)
            for log_tau in grid:
                loss = nn.functional.binary_cross_entropy_with_logits(logits / log_tau.exp(), tgt,
                                                                      reduction="none").mean(dim=(0, 2))
                better = loss < best_loss
                best = torch.where(better, log_tau, best)
                best_loss = torch.where(better, loss, best_loss)
            probes.log_temperature.copy_(best)
    return probes
