"""DDPM training and DDIM sampling for ε-prediction DiTs (the setting RobuQ quantizes).

* Forward process (Ho et al. 2020): ``x_t = √ᾱ_t x_0 + √(1 - ᾱ_t) ε`` with a 1000-step linear β
  schedule from 1e-4 to 0.02, ``ᾱ_t = Π_{s<=t} (1 - β_s)``.
* Loss: ``‖ε - ε_θ(x_t, t, y)‖²`` with ``t`` uniform, labels dropped to the null class with
  probability ``label_dropout`` (for classifier-free guidance); optionally plus
  ``λ‖ε_θ - ε_teacher‖²`` (distillation from the full-precision model during QAT).
* DDIM (Song et al. 2021), η = 0: on the sub-sequence ``τ_i = i·⌊T/S⌋``,
  ``x̂_0 = (x_τ - √(1-ᾱ_τ) ε̂)/√ᾱ_τ`` and ``x_prev = √ᾱ_prev x̂_0 + √(1-ᾱ_prev) ε̂``; guidance
  ``ε̂ = ε_u + w(ε_c - ε_u)``.

:func:`predict_eps` calls a :class:`~icml26.papers.robuq.TinyDiT` or a
``diffusers.DiTTransformer2DModel`` the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real, require_finite
from icml26.common.config import validate_numbers
from icml26.common.schedule import warmup_cosine

__all__ = [
    "FORWARD_CHUNK",
    "LinearSchedule",
    "add_noise",
    "ddim_sample",
    "diffusion_loss",
    "ema_decay_at",
    "eps_mse",
    "predict_eps",
    "predict_eps_chunked",
    "train_denoiser",
]


@dataclasses.dataclass(frozen=True)
class LinearSchedule:
    """DDPM's linear β schedule (DiT's ``diffusion/``: 1000 steps, 1e-4 to 0.02)."""

    steps: int = 1000
    """Diffusion steps ``T``."""
    beta_start: float = 1e-4
    """``β_1``."""
    beta_end: float = 0.02
    """``β_T``."""

    def __post_init__(self) -> None:
        check_int(self.steps, "steps", low=2)
        check_real(self.beta_start, "beta_start", low=0.0, low_open=True)
        check_real(self.beta_end, "beta_end", high=1.0, high_open=True)
        validate_numbers(self)
        if not 0.0 < self.beta_start <= self.beta_end < 1.0:
            raise ValueError(f"need 0 < beta_start={self.beta_start} <= beta_end={self.beta_end} < 1")

    def alphas_cumprod(self, device: torch.device | str | None = None) -> Tensor:
        """``ᾱ_t`` for ``t = 0 … T-1``, float64."""
        betas = torch.linspace(self.beta_start, self.beta_end, self.steps, dtype=torch.float64, device=device)
        return torch.cumprod(1.0 - betas, dim=0)


def add_noise(schedule: LinearSchedule, x0: Tensor, eps: Tensor, t: Tensor) -> Tensor:
    """``x_t = √ᾱ_t x_0 + √(1-ᾱ_t) ε``; ``x0``, ``eps`` ``(B, …)``, ``t`` ``(B,)`` integer steps."""
    if x0.shape != eps.shape or t.shape != x0.shape[:1]:
        raise ValueError(f"x0 {tuple(x0.shape)}, eps {tuple(eps.shape)} and t {tuple(t.shape)} disagree")
    abar = schedule.alphas_cumprod(x0.device)[t].to(x0.dtype).view(-1, *([1] * (x0.ndim - 1)))
    return abar.sqrt() * x0 + (1.0 - abar).sqrt() * eps


def predict_eps(model: nn.Module, x: Tensor, t: Tensor, y: Tensor) -> Tensor:
    """``ε_θ(x, t, y)`` from a TinyDiT (``model(x, t, y)``) or a ``diffusers`` DiT (``.sample``)."""
    if hasattr(model, "transformer_blocks") and hasattr(model, "pos_embed"):
        out = model(x, timestep=t, class_labels=y)
        return out.sample if hasattr(out, "sample") else out[0]
    return model(x, t, y)


#: Rows per forward pass in :func:`eps_mse` and :func:`ddim_sample` (larger batches go through the
#: network in chunks of this many). A DiT computes every sample on its own (attention within a sample,
#: per-token norms and activation quantizers), so chunking gives the same bits (the tests check it);
#: on one CPU thread chunks whose activations stay in cache run the 1,000-row guided DDIM batch of the
#: reproduction about 1.5-2x faster.
FORWARD_CHUNK = 256


def predict_eps_chunked(model: nn.Module, x: Tensor, t: Tensor, y: Tensor, chunk: int | None = None) -> Tensor:
    """:func:`predict_eps` on ``chunk`` rows at a time (default :data:`FORWARD_CHUNK`), concatenated.

    For models that compute every row on its own (a DiT): the result is then :func:`predict_eps`'s.
    """
    chunk = FORWARD_CHUNK if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"chunk={chunk} must be at least 1")
    if x.shape[0] <= chunk:
        return predict_eps(model, x, t, y)
    return torch.cat([predict_eps(model, x[i:i + chunk], t[i:i + chunk], y[i:i + chunk])
                      for i in range(0, x.shape[0], chunk)])


def diffusion_loss(model: nn.Module, x0: Tensor, y: Tensor, schedule: LinearSchedule, *,
                   generator: torch.Generator, teacher: nn.Module | None = None,
                   distill_weight: float = 0.0) -> Tensor:
    """One stochastic ε-prediction loss on ``x0`` ``(B, C, H, W)`` with labels ``y`` ``(B,)``.

    ``t`` and ``ε`` are drawn from ``generator`` (CPU) and moved to ``x0``'s device. ``x0`` is not checked
    for NaN here (a device sync on every training step); :func:`train_denoiser` checks its images once.
    """
    check_real(distill_weight, "distill_weight", low=0.0)
    b = x0.shape[0]
    t = torch.randint(0, schedule.steps, (b,), generator=generator).to(x0.device)
    eps = torch.randn(x0.shape, generator=generator, dtype=x0.dtype).to(x0.device)
    x_t = add_noise(schedule, x0, eps, t)
    pred = predict_eps(model, x_t, t, y)
    # L = ‖ε − ε_θ(x_t, t, y)‖²  (+ λ‖ε_θ − ε_teacher‖²)
    loss = (pred - eps).pow(2).mean()
    if teacher is not None and distill_weight > 0:
        with torch.no_grad():
            target = predict_eps(teacher, x_t, t, y)
        loss = loss + distill_weight * (pred - target).pow(2).mean()
    return loss


def ema_decay_at(step: int, decay: float, warmup: float = 10.0) -> float:
    """The EMA decay at update ``step`` (0-based): ``min(decay, step / (step + warmup))``.

    The warm-up keeps the average over roughly the last tenth of the iterates early in training
    (timm/diffusers use the same ``(1 + t) / (10 + t)`` rule, shifted here by one so that the first
    update copies the parameters): without it a decay of 0.999 leaves 0.999^T of the initial weights
    in the average after T steps (22 % at T = 1500).
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step={step!r} must be a non-negative int")
    check_real(decay, "decay", low=0.0, high=1.0, high_open=True)
    check_real(warmup, "warmup", low=0.0, low_open=True)
    return min(float(decay), step / (step + warmup))


def train_denoiser(model: nn.Module, images: Tensor, labels: Tensor, *, schedule: LinearSchedule, steps: int,
                   batch_size: int, lr: float, generator: torch.Generator, null_label: int | None = None,
                   label_dropout: float = 0.1, warmup: int = 0, weight_decay: float = 0.0,
                   grad_clip: float = 1.0, teacher: nn.Module | None = None, distill_weight: float = 0.0,
                   ema_decay: float = 0.0, progress: Callable | None = None) -> list[float]:
    """Train ``model`` in place with AdamW (linear warm-up, cosine decay to 0); return the loss per step.

    Args:
        images: ``(N, C, H, W)`` in ``[-1, 1]``; labels ``(N,)``; both on the model's device.
        null_label: the unconditional label (``label_dropout`` of the batch gets it); None: no dropout.
        teacher, distill_weight: optional distillation target (e.g. the FP model during QAT).
        ema_decay: if positive, keep an exponential moving average of the parameters
            (``θ̄ ← d_t θ̄ + (1 − d_t) θ``, DiT's sampling weights) with the warm-up
            ``d_t = min(d, t / (t + 10))`` (:func:`ema_decay_at`; the first update copies θ, so the random
            initialisation keeps no weight), and load it into ``model`` at the end.
        progress: wraps ``range(steps)`` (e.g. a progress bar), optional.

    ``grad_clip=0`` turns clipping off. Non-finite ``images`` are a ``ValueError``.
    """
    check_int(steps, "steps", low=1)
    check_int(batch_size, "batch_size", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    if null_label is not None:
        check_int(null_label, "null_label", low=0)
    check_real(label_dropout, "label_dropout", low=0.0, high=1.0, high_open=True)
    check_int(warmup, "warmup", low=0)
    check_real(weight_decay, "weight_decay", low=0.0)
    check_real(grad_clip, "grad_clip", low=0.0)
    check_real(distill_weight, "distill_weight", low=0.0)
    check_real(ema_decay, "ema_decay", low=0.0, high=1.0, high_open=True)
    require_finite(images, "images", hint="a NaN or inf image turns every weight into NaN")
    params = [p for p in model.parameters() if p.requires_grad]
    # foreach: the same update as the per-tensor loop, bit for bit (tested), with fewer Python-level ops
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)

    def lr_at(step: int) -> float:
        return warmup_cosine(step, steps, warmup=warmup)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    ema = [p.detach().clone() for p in params] if ema_decay > 0 else None
    updates = 0
    model.train()
    losses: list[float] = []
    n = images.shape[0]
    iterator = progress(range(steps)) if progress is not None else range(steps)
    for _ in iterator:
        idx = torch.randint(0, n, (batch_size,), generator=generator).to(images.device)
        x0, y = images[idx], labels[idx]
        if null_label is not None and label_dropout > 0:
            drop = (torch.rand(batch_size, generator=generator) < label_dropout).to(images.device)
            y = torch.where(drop, torch.full_like(y, null_label), y)
        loss = diffusion_loss(model, x0, y, schedule, generator=generator, teacher=teacher,
                              distill_weight=distill_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip > 0:
            nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        sched.step()
        if ema is not None:
            with torch.no_grad():
                # θ̄ ← d_t θ̄ + (1 − d_t) θ, d_t = min(d, t/(t+10)): d_0 = 0 copies the first iterate
                torch._foreach_lerp_(ema, [p.detach() for p in params], 1.0 - ema_decay_at(updates, ema_decay))
            updates += 1
        losses.append(float(loss.detach()))
    if ema is not None:
        with torch.no_grad():
            for p, avg in zip(params, ema):
                p.copy_(avg)
    model.eval()
    return losses


@torch.no_grad()
def eps_mse(model: nn.Module, images: Tensor, labels: Tensor, schedule: LinearSchedule, timesteps: Sequence[int],
            *, generator: torch.Generator, batch_size: int = 512) -> list[float]:
    """Held-out ``E‖ε − ε_θ(x_t, t, y)‖²`` (mean over pixels and images) at each of ``timesteps``.

    The noise is drawn once per timestep from ``generator``: the same seed gives every model
    the same ``(x_t, ε)`` pairs. The squared errors are summed per ``batch_size`` images; the
    network sees at most :data:`FORWARD_CHUNK` of them at a time. Non-finite ``images`` are a ``ValueError``.
    """
    check_int(batch_size, "batch_size", low=1)
    timesteps = [check_int(t_value, "timesteps", low=0, high=schedule.steps - 1) for t_value in timesteps]
    require_finite(images, "images", hint="the held-out error of a NaN image is NaN")
    model.eval()
    out = []
    for t_value in timesteps:
        eps_all = torch.randn(images.shape, generator=generator, dtype=images.dtype).to(images.device)
        total = 0.0
        for start in range(0, images.shape[0], batch_size):
            x0, eps = images[start:start + batch_size], eps_all[start:start + batch_size]
            t = torch.full((x0.shape[0],), int(t_value), dtype=torch.long, device=images.device)
            pred = predict_eps_chunked(model, add_noise(schedule, x0, eps, t), t, labels[start:start + batch_size])
            total += float((pred - eps).pow(2).sum())
        out.append(total / images.numel())
    return out


@torch.no_grad()
def ddim_sample(model: nn.Module, labels: Tensor, shape: tuple[int, ...], schedule: LinearSchedule, *,
                generator: torch.Generator, steps: int = 50, guidance: float = 1.0, null_label: int | None = None,
                clip_x0: bool = True, dtype: torch.dtype = torch.float32) -> Tensor:
    """Deterministic DDIM (η = 0) samples ``(B, *shape)`` for ``labels`` ``(B,)``.

    Args:
        shape: one sample's shape, e.g. ``(1, 8, 8)``.
        steps: DDIM steps ``S`` (``τ_i = i·⌊T/S⌋``).
        guidance: classifier-free guidance weight ``w`` (1: conditional only; needs ``null_label`` otherwise).
        clip_x0: clip ``x̂_0`` to ``[-1, 1]`` (data range) at every step.

    The network sees at most :data:`FORWARD_CHUNK` rows (of the ``2B`` guided ones) at a time.
    """
    check_int(steps, "steps", low=1, high=schedule.steps)
    check_real(guidance, "guidance")
    if null_label is not None:
        check_int(null_label, "null_label", low=0)
    if guidance != 1.0 and null_label is None:
        raise ValueError(f"guidance={guidance} needs null_label (the unconditional class)")
    device = labels.device
    abar = schedule.alphas_cumprod(device)
    stride = schedule.steps // steps
    taus = list(range(0, steps * stride, stride))[::-1]
    x = torch.randn((labels.shape[0], *shape), generator=generator, dtype=dtype).to(device)
    model.eval()
    for i, tau in enumerate(taus):
        t = torch.full((labels.shape[0],), tau, dtype=torch.long, device=device)
        if guidance == 1.0:
            eps = predict_eps_chunked(model, x, t, labels)
        else:
            both = predict_eps_chunked(model, torch.cat([x, x]), torch.cat([t, t]),
                                       torch.cat([labels, torch.full_like(labels, null_label)]))
            cond, uncond = both.chunk(2)
            # ε̂ = ε_u + w (ε_c − ε_u)
            eps = uncond + guidance * (cond - uncond)
        a_t = abar[tau].to(dtype)
        a_prev = abar[taus[i + 1]].to(dtype) if i + 1 < len(taus) else torch.ones((), dtype=dtype, device=device)
        # x̂_0 = (x_τ − √(1−ᾱ_τ) ε̂) / √ᾱ_τ
        x0 = (x - (1 - a_t).sqrt() * eps) / a_t.sqrt()
        if clip_x0:
            x0 = x0.clamp(-1.0, 1.0)
            eps = (x - a_t.sqrt() * x0) / (1 - a_t).sqrt()
        # x_prev = √ᾱ_prev x̂_0 + √(1−ᾱ_prev) ε̂
        x = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
    return x
