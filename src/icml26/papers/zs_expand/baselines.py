"""Baselines the expander is compared with, each with the expander's call:
``.fit(seen_semantics, seen_weights, all_semantics=None)`` and ``.expand(unseen_semantics)``.

All take the same semantic tensors (views are averaged into ``s̄`` with
:func:`~icml26.papers.zs_expand.semantics.causal_semantics`) and the same seen rows, and apply
the same norm-scale heuristic on expansion: equal information. Re-implemented small from the
image-free ZSL lineage (ICIS, Christensen et al., ICCV 2023, ``ExplainableML/ImageFreeZSL``);
that the paper compares with these is our inference (no paper text is public).

* :class:`WAvgExpander` (ConSE / VGSE-WAvg style): ``ŵ_u = Σ_s softmax_s(cos(s̄_u, s̄_s)/T) w_s``.
* :class:`SharedMLPExpander` (Sub.Reg.-like): one MLP ``s̄ ↦ w`` shared by all classes, trained with
  a cosine loss plus ICIS's subspace-projection term (distance to the span of the seen rows).
* :class:`ICISExpander`: ICIS's joint autoencoder (a semantic and a weight autoencoder with a
  shared latent space; self- and cross-reconstruction, cosine criterion), predicting ``D_w(E_s(s̄))``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite
from icml26.papers.zs_expand.semantics import as_views
from icml26.papers.zs_expand.synthesis import cosine_loss, norm_scale

__all__ = ["ICISExpander", "JointAutoencoder", "SharedMLP", "SharedMLPExpander", "WAvgExpander"]


def _seen_pair(seen_semantics: Any, seen_weights: Any) -> tuple[torch.Tensor, torch.Tensor, torch.dtype]:
    sbar = as_views(seen_semantics, "seen_semantics").mean(dim=(1, 2))
    w = as_tensor(seen_weights, "seen_weights")
    if w.ndim != 2:
        raise ValueError(f"seen_weights must be (S, D), got shape {tuple(w.shape)}")
    if w.shape[0] != sbar.shape[0]:
        raise ValueError(f"seen_semantics has {sbar.shape[0]} classes but seen_weights has {w.shape[0]} rows; give "
                         "one weight row per seen class, in the same order")
    require_finite(w, "seen_weights")
    return sbar, w.to(sbar.device), w.dtype


class _Expander:
    """Shared plumbing: input checks, the norm-scale heuristic, device and dtype of the output."""

    norm_scale: bool
    scale_factor: float
    _seen: torch.Tensor
    _dtype: torch.dtype

    def _finish(self, out: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        if self.norm_scale:
            out = norm_scale(out, self._seen.to(out.dtype), self.scale_factor)
        return out.detach().to(device=like.device, dtype=self._dtype)

    def _unseen(self, unseen_semantics: Any) -> torch.Tensor:
        if not hasattr(self, "_seen"):
            raise RuntimeError("call fit(seen_semantics, seen_weights) before expand")
        sbar = as_views(unseen_semantics, "unseen_semantics").mean(dim=(1, 2))
        if sbar.shape[1] != self._width:
            raise ValueError(f"unseen_semantics has width {sbar.shape[1]}; the expander was fitted on {self._width}")
        return sbar


class WAvgExpander(_Expander):
    """ConSE / WAvg: ``ŵ_u = Σ_s softmax_s(cos(s̄_u, s̄_s) / T) w_s`` (optionally over the ``top_k`` most similar).

    Args:
        temperature: ``T`` of the softmax over cosine similarities.
        top_k: keep only the ``top_k`` most similar seen classes (None: all).
        norm_scale, scale_factor: ICIS's norm-scale heuristic on expansion (as the expander).
    """

    def __init__(self, temperature: float = 0.1, top_k: int | None = None, *, norm_scale: bool = True,
                 scale_factor: float = 1.0) -> None:
        self.temperature = check_real(temperature, "temperature", low=0.0, low_open=True)
        self.top_k = None if top_k is None else check_int(top_k, "top_k", low=1)
        self.norm_scale = bool(norm_scale)
        self.scale_factor = check_real(scale_factor, "scale_factor", low=0.0, low_open=True)

    def fit(self, seen_semantics: Any, seen_weights: Any, all_semantics: Any = None) -> "WAvgExpander":
        """Store the seen ``s̄`` and rows (``all_semantics`` is not used)."""
        sbar, w, self._dtype = _seen_pair(seen_semantics, seen_weights)
        self._sbar, self._seen, self._width = sbar.double(), w.double(), sbar.shape[1]
        return self

    def expand(self, unseen_semantics: Any) -> torch.Tensor:
        """``(U, D)`` similarity-weighted averages of the seen rows."""
        u = self._unseen(unseen_semantics).double().to(self._sbar.device)
        sim = nn.functional.normalize(u, dim=1) @ nn.functional.normalize(self._sbar, dim=1).T
        if self.top_k is not None and self.top_k < sim.shape[1]:
            kth = sim.topk(self.top_k, dim=1).values[:, -1:]
            sim = sim.masked_fill(sim < kth, float("-inf"))
        out = torch.softmax(sim / self.temperature, dim=1) @ self._seen
        return self._finish(out, u)


class SharedMLP(nn.Module):
    """``s̄ ↦ ŵ``: ``Linear(d, hidden) → LeakyReLU(0.2) → Dropout → Linear(hidden, D)`` (ICIS's MLP regressor shape)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 256, dropout: float = 0.0) -> None:
        super().__init__()
        in_dim, out_dim = check_int(in_dim, "in_dim", low=1), check_int(out_dim, "out_dim", low=1)
        hidden = check_int(hidden, "hidden", low=1)
        dropout = check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.LeakyReLU(0.2), nn.Dropout(dropout),
                                 nn.Linear(hidden, out_dim))

    def forward(self, semantics: torch.Tensor) -> torch.Tensor:
        """``semantics`` ``(n, d)`` → ``(n, D)``."""
        if not isinstance(semantics, torch.Tensor):
            raise TypeError(f"semantics must be a torch.Tensor, got {type(semantics).__name__}")
        if semantics.shape[-1] != self.net[0].in_features:
            raise ValueError(f"semantics has width {semantics.shape[-1]}, expected {self.net[0].in_features}")
        return self.net(semantics)


def _train(module: nn.Module, loss_fn, steps: int, lr: float, weight_decay: float) -> None:
    optimizer = torch.optim.Adam(module.parameters(), lr=lr, betas=(0.5, 0.999), weight_decay=weight_decay)
    module.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
    module.eval()


class SharedMLPExpander(_Expander):
    """Sub.Reg.-like: a :class:`SharedMLP` trained full-batch with Adam on
    ``mean_c (1 − cos(ŵ_c, w_c)) + subspace_weight · mean_c ‖ŵ_c − Π ŵ_c‖`` (``Π``: projection on the
    span of the seen rows, ICIS's ``subspace_proj``), without any invariance term.

    Args:
        hidden, dropout: the MLP's width and dropout.
        steps, lr, weight_decay: Adam (betas 0.5, 0.999 as ICIS), full batch.
        subspace_weight: weight of the subspace-projection term (ICIS: 0.001; 0 disables it).
        seed: seeds the initialisation (a private ``torch.Generator``).
        norm_scale, scale_factor: ICIS's norm-scale heuristic on expansion.
    """

    def __init__(self, hidden: int = 256, *, dropout: float = 0.0, steps: int = 1000, lr: float = 1e-3,
                 weight_decay: float = 1e-4, subspace_weight: float = 1e-3, seed: int = 0, norm_scale: bool = True,
                 scale_factor: float = 1.0) -> None:
        self.hidden = check_int(hidden, "hidden", low=1)
        self.dropout = check_real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.steps = check_int(steps, "steps", low=1)
        self.lr = check_real(lr, "lr", low=0.0, low_open=True)
        self.weight_decay = check_real(weight_decay, "weight_decay", low=0.0)
        self.subspace_weight = check_real(subspace_weight, "subspace_weight", low=0.0)
        self.seed = check_int(seed, "seed", low=0)
        self.norm_scale = bool(norm_scale)
        self.scale_factor = check_real(scale_factor, "scale_factor", low=0.0, low_open=True)

    def fit(self, seen_semantics: Any, seen_weights: Any, all_semantics: Any = None) -> "SharedMLPExpander":
        """Train the MLP on the seen ``(s̄_c, w_c)`` (``all_semantics`` is not used)."""
        sbar, w, self._dtype = _seen_pair(seen_semantics, seen_weights)
        sbar, w = sbar.float(), w.float()
        self._seen, self._width = w, sbar.shape[1]
        generator = torch.Generator().manual_seed(self.seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
            self.model = SharedMLP(sbar.shape[1], w.shape[1], self.hidden, self.dropout).to(sbar.device)
            q, _ = torch.linalg.qr(w.T)  # (D, S): an orthonormal basis of the seen rows' span

            def loss_fn() -> torch.Tensor:
                pred = self.model(sbar)
                loss = cosine_loss(pred, w).mean()
                if self.subspace_weight > 0:
                    loss = loss + self.subspace_weight * (pred - pred @ q @ q.T).norm(dim=1).mean()
                return loss

            _train(self.model, loss_fn, self.steps, self.lr, self.weight_decay)
        return self

    def expand(self, unseen_semantics: Any) -> torch.Tensor:
        """``(U, D)`` MLP predictions (norm-scaled)."""
        u = self._unseen(unseen_semantics)
        with torch.no_grad():
            out = self.model(u.float().to(next(self.model.parameters()).device))
        return self._finish(out, u)


class JointAutoencoder(nn.Module):
    """ICIS's joint autoencoder: ``E_s, D_s`` on semantics and ``E_w, D_w`` on weights, one latent space.

    Each encoder is ``Linear → ReLU``; each decoder ``Linear(latent, hidden) → ReLU → Linear(hidden, out)``
    (ICIS ``AUTOENCODER`` with ``num_layers=3``). ``forward(s, w)`` returns
    ``(s_from_s, s_from_w, w_from_w, w_from_s)``; :meth:`predict` is ``D_w(E_s(s))``.
    """

    def __init__(self, semantic_dim: int, weight_dim: int, latent: int = 128, hidden: int = 256) -> None:
        super().__init__()
        semantic_dim, weight_dim = check_int(semantic_dim, "semantic_dim", low=1), check_int(weight_dim, "weight_dim",
                                                                                            low=1)
        latent, hidden = check_int(latent, "latent", low=1), check_int(hidden, "hidden", low=1)
        self.enc_s = nn.Sequential(nn.Linear(semantic_dim, latent), nn.ReLU())
        self.enc_w = nn.Sequential(nn.Linear(weight_dim, latent), nn.ReLU())
        self.dec_s = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, semantic_dim))
        self.dec_w = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, weight_dim))

    def forward(self, semantics: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``semantics`` ``(n, d)`` and ``weights`` ``(n, D)`` → the four reconstructions."""
        s, w = semantics, weights
        if not isinstance(s, torch.Tensor) or not isinstance(w, torch.Tensor):
            raise TypeError("JointAutoencoder takes two tensors: semantics (n, d) and weights (n, D)")
        if s.shape[0] != w.shape[0]:
            raise ValueError(f"semantics ({s.shape[0]}) and weights ({w.shape[0]}) must have the same rows")
        z_s, z_w = self.enc_s(s), self.enc_w(w)
        return self.dec_s(z_s), self.dec_s(z_w), self.dec_w(z_w), self.dec_w(z_s)

    def predict(self, semantics: torch.Tensor) -> torch.Tensor:
        """``D_w(E_s(s))``: weights ``(n, D)`` from semantics ``(n, d)``."""
        return self.dec_w(self.enc_s(semantics))


class ICISExpander(_Expander):
    """ICIS-style (Christensen et al., 2023): a :class:`JointAutoencoder` trained full-batch with Adam on
    ``ℓ(s←s) + ℓ(s←w) + ℓ(w←w) + ℓ(w←s)``, ``ℓ`` the cosine criterion; with ``all_semantics`` and
    ``include_unseen`` the unseen classes' semantics join the ``s←s`` term (ICIS's ``include_unseen``).

    Args:
        latent, hidden: autoencoder sizes.
        steps, lr, weight_decay: Adam (betas 0.5, 0.999 as ICIS), full batch.
        include_unseen: use ``all_semantics`` in the semantic reconstruction.
        seed: seeds the initialisation.
        norm_scale, scale_factor: the norm-scale heuristic on expansion.
    """

    def __init__(self, latent: int = 128, hidden: int = 256, *, steps: int = 1000, lr: float = 1e-3,
                 weight_decay: float = 0.0, include_unseen: bool = True, seed: int = 0, norm_scale: bool = True,
                 scale_factor: float = 1.0) -> None:
        self.latent = check_int(latent, "latent", low=1)
        self.hidden = check_int(hidden, "hidden", low=1)
        self.steps = check_int(steps, "steps", low=1)
        self.lr = check_real(lr, "lr", low=0.0, low_open=True)
        self.weight_decay = check_real(weight_decay, "weight_decay", low=0.0)
        self.include_unseen = bool(include_unseen)
        self.seed = check_int(seed, "seed", low=0)
        self.norm_scale = bool(norm_scale)
        self.scale_factor = check_real(scale_factor, "scale_factor", low=0.0, low_open=True)

    def fit(self, seen_semantics: Any, seen_weights: Any, all_semantics: Any = None) -> "ICISExpander":
        """Train the joint autoencoder on the seen pairs (and ``all_semantics`` for ``s←s``)."""
        sbar, w, self._dtype = _seen_pair(seen_semantics, seen_weights)
        sbar, w = sbar.float(), w.float()
        self._seen, self._width = w, sbar.shape[1]
        extra = sbar
        if all_semantics is not None and self.include_unseen:
            extra = as_views(all_semantics, "all_semantics").mean(dim=(1, 2)).float().to(sbar.device)
            if extra.shape[1] != sbar.shape[1]:
                raise ValueError(f"all_semantics has width {extra.shape[1]} but seen_semantics {sbar.shape[1]}")
        generator = torch.Generator().manual_seed(self.seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
            self.model = JointAutoencoder(sbar.shape[1], w.shape[1], self.latent, self.hidden).to(sbar.device)

            def loss_fn() -> torch.Tensor:
                s_s, s_w, w_w, w_s = self.model(sbar, w)
                return (cosine_loss(self.model.dec_s(self.model.enc_s(extra)), extra).mean()
                        + cosine_loss(s_w, sbar).mean() + cosine_loss(w_w, w).mean() + cosine_loss(w_s, w).mean())

            _train(self.model, loss_fn, self.steps, self.lr, self.weight_decay)
        return self

    def expand(self, unseen_semantics: Any) -> torch.Tensor:
        """``(U, D)`` predictions ``D_w(E_s(s̄_u))`` (norm-scaled)."""
        u = self._unseen(unseen_semantics)
        with torch.no_grad():
            out = self.model.predict(u.float().to(next(self.model.parameters()).device))
        return self._finish(out, u)
