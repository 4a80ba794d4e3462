"""Self-predictive representations (SPR; Schwarzer et al., ICLR 2021) for one streaming window.

As adapted to streaming RL by Nilaksh et al. 2026 (arXiv 2602.09396, code
chandar-lab/stream-rep-rl), with no augmentation and no replay. For the window
(o_{t−K}, …, o_t) and the actions a_{t−K}, …, a_{t−1} taken between them:

1. ẑ₀ = f_θ(o_{t−K})                       online encoder (the Q-network's trunk)
2. ẑ_k = h(ẑ_{k−1}, a_{t−K+k−1}),  k=1..K   transition model, rolled in latent space
3. ŷ_k = q(g(ẑ_k))                          online projection g, predictor q
4. y_k = g_ξ(f_ξ(o_{t−K+k}))                EMA target encoder and projection (no gradient)
5. L_SPR = (1/K) Σ_k −cos(ŷ_k, y_k)          ∈ [−1, 1]
6. ξ ← τ·ξ + (1−τ)·θ every environment step (τ = 0.99), ξ initialized as a copy of θ.

:class:`SPRWindow` keeps the last K+1 observations and the actions between them; it is
cleared at episode end. ``alignment="official"`` reproduces the stream-rep-rl off-by-one
(step k uses a_{t−K+k}, the action taken *at* the predicted state).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import math
from typing import Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.argcheck import check_int, check_real

from .networks import LayerNorm, init_streaming_

__all__ = ["SPRHead", "SPROutput", "SPRWindow", "TransitionModel", "spr_loss"]

Alignment = Literal["correct", "official"]
TargetInit = Literal["copy", "independent"]


def spr_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L = (1/K) Σ_k −cos(ŷ_k, y_k); the targets are detached (stop-gradient).

    Args:
        predictions: (K, D) online predictions ŷ_k.
        targets: (K, D) target projections y_k.

    Returns:
        A scalar in [−1, 1]; −1 when every prediction is a positive multiple of its target.
    """
    if predictions.shape != targets.shape or predictions.dim() != 2:
        raise ValueError(f"predictions {tuple(predictions.shape)} and targets {tuple(targets.shape)} "
                         "must both be (K, D)")
    return -F.cosine_similarity(predictions, targets.detach(), dim=-1, eps=1e-8).mean()


class TransitionModel(nn.Module):
    """h(z, a): the latent one step ahead.

    Image latents (batch, C, H, W): concatenate the one-hot action broadcast over H×W,
    then 2 × (Conv 3×3, stride 1, SAME → LN → LeakyReLU), C channels out.
    Vector latents (batch, d): concatenate the one-hot action, then
    2 × (Linear → LN → LeakyReLU), d features out.
    """

    def __init__(self, latent_shape: Sequence[int], n_actions: int, *, hidden: int | None = None) -> None:
        super().__init__()
        self.latent_shape = tuple(check_int(s, "latent_shape", low=1) for s in latent_shape)
        self.n_actions = check_int(n_actions, "n_actions")
        if n_actions < 1:
            raise ValueError(f"n_actions={n_actions} must be at least 1")
        if hidden is not None:
            check_int(hidden, "hidden", low=1)
        if len(self.latent_shape) == 3:
            c = self.latent_shape[0]
            h = hidden or c
            self.body = nn.Sequential(
                nn.Conv2d(c + n_actions, h, 3, 1, padding=1), LayerNorm(), nn.LeakyReLU(),
                nn.Conv2d(h, c, 3, 1, padding=1), LayerNorm(), nn.LeakyReLU())
        elif len(self.latent_shape) == 1:
            d = self.latent_shape[0]
            h = hidden or d
            self.body = nn.Sequential(
                nn.Linear(d + n_actions, h), LayerNorm(), nn.LeakyReLU(),
                nn.Linear(h, d), LayerNorm(), nn.LeakyReLU())
        else:
            raise ValueError(f"latents must be (C, H, W) or (d,), got {self.latent_shape}")

    def forward(self, z: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """z: (batch, *latent_shape); actions: (batch,) integers → (batch, *latent_shape)."""
        return self.step_onehot(z, self.one_hot(actions, z.dtype))

    def one_hot(self, actions: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The checked one-hot rows ``(batch, n_actions)`` of integer ``actions`` (batch,)."""
        if not isinstance(actions, torch.Tensor) or actions.is_floating_point() or actions.is_complex():
            raise TypeError("actions must be an integer tensor (batch,)")
        if actions.numel() and (int(actions.min()) < 0 or int(actions.max()) >= self.n_actions):
            raise ValueError(f"actions must lie in 0 .. {self.n_actions - 1}, got {actions.tolist()}")
        return F.one_hot(actions.long(), self.n_actions).to(dtype)

    def step_onehot(self, z: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` from the actions' one-hot rows (:meth:`one_hot`), so that a rollout checks
        and encodes its K actions once rather than once per step (the same values)."""
        if z.dim() == 4:
            onehot = onehot[:, :, None, None].expand(-1, -1, z.shape[2], z.shape[3])
        return self.body(torch.cat([z, onehot], dim=1))


@dataclasses.dataclass
class SPROutput:
    loss: torch.Tensor
    """L_SPR, a scalar with its graph."""
    predictions: torch.Tensor
    """(K, D) ŷ_k."""
    targets: torch.Tensor
    """(K, D) y_k (no graph)."""


class SPRHead(nn.Module):
    """Transition model, projection, predictor and the EMA targets of SPR.

    The online encoder is *not* owned: it is passed to :meth:`forward` and
    :meth:`update_targets`, so the same encoder serves the RL head and SPR.

    Args:
        encoder: the online encoder f_θ; its target f_ξ starts as a copy.
        latent_shape: the encoder's output shape without the batch dimension.
        n_actions: |A|.
        projection_dim: width of the projection and predictor (MinAtar: 128).
        transition_hidden: width of the transition model's first layer (default: the
            latent's channels / features, 16 on MinAtar).
        target_init: ``"copy"`` (SPR, the default) or ``"independent"`` (stream-rep-rl
            draws the targets from their own random init).
        sparsity: sparse initialization of the heads (0.9, as in stream-rep-rl).
        generator: CPU generator for the initialization.
        transition, projection, predictor: replace the default modules (any
            ``nn.Module`` with matching shapes, e.g. ``nn.Identity()``).
    """

    def __init__(self, encoder: nn.Module, latent_shape: Sequence[int], n_actions: int, *,
                 projection_dim: int = 128, transition_hidden: int | None = None,
                 target_init: TargetInit = "copy", sparsity: float = 0.9,
                 generator: torch.Generator | None = None, transition: nn.Module | None = None,
                 projection: nn.Module | None = None, predictor: nn.Module | None = None) -> None:
        super().__init__()
        if target_init not in ("copy", "independent"):
            raise ValueError(f"target_init={target_init!r} must be 'copy' or 'independent'")
        if not isinstance(encoder, nn.Module):
            raise TypeError(f"encoder must be an nn.Module, got {type(encoder).__name__}")
        check_int(projection_dim, "projection_dim", low=1)
        if transition_hidden is not None:
            check_int(transition_hidden, "transition_hidden", low=1)
        check_real(sparsity, "sparsity", low=0.0, high=1.0)
        latent_shape = tuple(int(s) for s in latent_shape)
        if transition is None:
            transition = init_streaming_(TransitionModel(latent_shape, n_actions, hidden=transition_hidden),
                                         sparsity, generator=generator)
        if projection is None:
            projection = init_streaming_(nn.Sequential(nn.Flatten(), nn.Linear(math.prod(latent_shape),
                                                                                projection_dim)),
                                         sparsity, generator=generator)
        if predictor is None:
            predictor = init_streaming_(nn.Linear(projection_dim, projection_dim), sparsity, generator=generator)
        self.transition, self.projection, self.predictor = transition, projection, predictor
        self.target_encoder = copy.deepcopy(encoder)
        self.target_projection = copy.deepcopy(projection)
        if target_init == "independent":
            init_streaming_(self.target_encoder, sparsity, generator=generator)
            init_streaming_(self.target_projection, sparsity, generator=generator)
        for p in list(self.target_encoder.parameters()) + list(self.target_projection.parameters()):
            p.requires_grad_(False)
        self._pairs: tuple[nn.Module, list[torch.Tensor], list[torch.Tensor]] | None = None
        device = next((p.device for p in encoder.parameters()), None)
        if device is not None:
            self.to(device)

    def groups(self) -> dict[str, list[nn.Parameter]]:
        """The trainable SPR parameter groups (each gets its own orth momentum)."""
        return {"transition": list(self.transition.parameters()),
                "projection": list(self.projection.parameters()),
                "predictor": list(self.predictor.parameters())}

    def forward(self, encoder: nn.Module, observations: torch.Tensor, actions: torch.Tensor) -> SPROutput:
        """L_SPR for one window.

        Args:
            encoder: the online encoder f_θ.
            observations: (K+1, *obs_shape), o_{t−K} … o_t.
            actions: (K,) integers; entry k−1 drives the step from ẑ_{k−1} to ẑ_k.
        """
        depth = actions.shape[0]
        if observations.shape[0] != depth + 1 or depth < 1:
            raise ValueError(f"a window of K={depth} actions needs K+1 observations, got {observations.shape[0]}")
        z = encoder(observations[:1])
        rolled = []
        if isinstance(self.transition, TransitionModel):
            onehots = self.transition.one_hot(actions, z.dtype)  # the K actions checked and encoded once
            for k in range(depth):
                # ẑ_k = h(ẑ_{k−1}, a_{t−K+k−1})
                z = self.transition.step_onehot(z, onehots[k:k + 1])
                rolled.append(z)
        else:
            for k in range(depth):
                z = self.transition(z, actions[k:k + 1])
                rolled.append(z)
        # ŷ_k = q(g(ẑ_k)), the K projections batched (the same loss as one by one)
        predictions = self.predictor(self.projection(torch.cat(rolled)))
        with torch.no_grad():
            # y_k = g_ξ(f_ξ(o_{t−K+k}))
            targets = self.target_projection(self.target_encoder(observations[1:]))
        return SPROutput(spr_loss(predictions, targets), predictions, targets)

    @torch.no_grad()
    def update_targets(self, encoder: nn.Module, tau: float) -> None:
        """ξ ← τ·ξ + (1−τ)·θ for the target encoder and the target projection."""
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau={tau} must lie in [0, 1]")
        if self._pairs is None or self._pairs[0] is not encoder:  # parameter lists, built once
            targets = list(self.target_encoder.parameters()) + list(self.target_projection.parameters())
            online = list(encoder.parameters()) + list(self.projection.parameters())
            if [t.shape for t in targets] != [o.shape for o in online]:
                raise ValueError("the encoder passed does not match the target encoder's parameters")
            self._pairs = (encoder, targets, online)
        _, targets, online = self._pairs
        if targets:
            # ξ ← τ ξ + (1 − τ) θ
            torch._foreach_lerp_(targets, online, 1.0 - tau)


class SPRWindow:
    """The last K+1 observations of the current episode and the actions taken after each.

    ``push(o_t, a_t)`` once per step, before the update; :meth:`batch` returns
    (o_{t−K} … o_t) and the K actions between them: a_{t−K} … a_{t−1} with
    ``alignment="correct"``, a_{t−K+1} … a_t with ``"official"`` (stream-rep-rl's off-by-one).
    """

    def __init__(self, depth: int, alignment: Alignment = "correct") -> None:
        if check_int(depth, "depth") < 1:
            raise ValueError(f"depth={depth} (K) must be at least 1")
        if alignment not in ("correct", "official"):
            raise ValueError(f"alignment={alignment!r} must be 'correct' or 'official'")
        self.depth = depth
        self.alignment = alignment
        self._obs: collections.deque[torch.Tensor] = collections.deque(maxlen=depth + 1)
        self._actions: collections.deque[int] = collections.deque(maxlen=depth + 1)

    def push(self, obs: torch.Tensor, action: int) -> None:
        """Add o_t (shape ``obs_shape``, no batch dimension) and the action a_t taken at it."""
        if not isinstance(obs, torch.Tensor):
            raise TypeError(f"obs must be a torch.Tensor, got {type(obs).__name__}")
        check_int(action, "action", low=0)
        self._obs.append(obs)
        self._actions.append(int(action))

    def clear(self) -> None:
        self._obs.clear()
        self._actions.clear()

    def __len__(self) -> int:
        return len(self._obs)

    @property
    def full(self) -> bool:
        return len(self._obs) == self.depth + 1

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(observations (K+1, *obs), actions (K,)) for :meth:`SPRHead.forward`."""
        if not self.full:
            raise ValueError(f"the window holds {len(self._obs)} of {self.depth + 1} observations")
        actions = list(self._actions)
        chosen = actions[:-1] if self.alignment == "correct" else actions[1:]
        obs = torch.stack(list(self._obs))
        return obs, torch.tensor(chosen, dtype=torch.long, device=obs.device)
