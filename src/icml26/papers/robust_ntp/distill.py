"""Distilling a (robustified) next-token model into a tiny causal transformer.

The fallback of the robustified model is exponentially rare on the model's own samples,
so a student trained only on them would never see it. Training histories are therefore a
mixture (our protocol; the paper's is not public):

* samples of the original model D;
* ε-greedy games against the teacher (ε ~ U(0, ½)): the adversary the student must
  resist, with enough noise for the histories to differ;
* "imitate then switch" games: D's tokens up to a random round, then the greedy
  adversary against the teacher (these cross the regret threshold at any time);

and the loss at every position is the KL divergence from the teacher's conditional,
KL(teacher(·|h) ‖ student(·|h)), i.e. a cross-entropy with soft targets.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.config import validate_numbers
from icml26.common.progress import progress
from icml26.common.schedule import warmup_cosine
from icml26.papers.robust_ntp.adversaries import EpsilonGreedy, ImitateThenSwitch, play
from icml26.papers.robust_ntp.learner import _count, _generator, _real, _tokens, check_loss
from icml26.papers.robust_ntp.models import (
    NextTokenModel,
    TorchNextTokenModel,
    _check_model,
    conditionals,
    sample_sequences,
)

__all__ = ["DistillConfig", "TinyCausalTransformer", "distill", "training_histories"]

log = logging.getLogger(__name__)


class TinyCausalTransformer(nn.Module):
    """A small pre-norm causal transformer over K tokens plus a BOS token (id K).

    ``forward(input_ids: (batch, length)) -> logits (batch, length, K)``: integer ids in
    0 … K (K is BOS), length at most ``max_len + 1``; logits in the module's dtype.
    """

    def __init__(self, n_tokens: int, max_len: int, *, d_model: int = 64, n_layers: int = 2, n_heads: int = 4):
        super().__init__()
        n_tokens, max_len = _count("n_tokens", n_tokens, 1), _count("max_len", max_len, 1)
        d_model, n_layers, n_heads = _count("d_model", d_model, 1), _count("n_layers", n_layers, 1), \
            _count("n_heads", n_heads, 1)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_tokens = n_tokens
        self.max_len = max_len
        self.embed = nn.Embedding(n_tokens + 1, d_model)
        self.position = nn.Embedding(max_len + 1, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_tokens)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (torch.int64, torch.int32) \
                or input_ids.ndim != 2:
            raise TypeError("input_ids must be a (batch, length) tensor of int64/int32 token ids, got "
                            f"{getattr(input_ids, 'dtype', type(input_ids).__name__)} "
                            f"{tuple(getattr(input_ids, 'shape', ()))}")
        if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) > self.n_tokens):
            raise ValueError(f"input_ids must lie in 0..{self.n_tokens} (token ids, {self.n_tokens} = BOS)")
        length = input_ids.shape[1]
        if length > self.max_len + 1:
            raise ValueError(f"sequence of {length} ids exceeds max_len + 1 = {self.max_len + 1}")
        pos = torch.arange(length, device=input_ids.device)
        x = self.embed(input_ids) + self.position(pos)[None]
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=input_ids.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.head(self.norm(x))


@dataclasses.dataclass(frozen=True)
class DistillConfig:
    """Student size and training schedule (defaults: the quick reproduction's)."""

    horizon: int = 128
    """Sequence length T the student is trained and evaluated on."""
    n_sequences: int = 6000
    """Training histories (a third of each kind)."""
    d_model: int = 64
    """Student width."""
    n_layers: int = 2
    """Student depth."""
    n_heads: int = 4
    """Attention heads."""
    steps: int = 1500
    """Optimiser steps."""
    batch_size: int = 64
    """Sequences per step."""
    lr: float = 3e-3
    """Peak AdamW learning rate (cosine decay)."""

    def __post_init__(self) -> None:
        for name in ("horizon", "n_sequences", "d_model", "n_layers", "n_heads", "steps", "batch_size"):
            check_int(getattr(self, name), name, low=1)
        check_real(self.lr, "lr", low=0.0, low_open=True)
        validate_numbers(self)
        if self.n_sequences < 3:
            raise ValueError(f"n_sequences={self.n_sequences} must be at least 3 (a third of each kind)")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")


def training_histories(model: NextTokenModel, teacher: NextTokenModel, loss: np.ndarray, beta: float,
                       cfg: DistillConfig, rng: np.random.Generator) -> np.ndarray:
    """``(n_sequences, horizon)`` histories: D samples, ε-greedy and imitate-then-switch games."""
    _check_model(model)
    _check_model(teacher, "teacher")
    loss, beta, rng = check_loss(loss), _real("beta", beta, low=0.0), _generator(rng)
    if not isinstance(cfg, DistillConfig):
        raise TypeError(f"cfg must be a DistillConfig, got {type(cfg).__name__}")
    third = cfg.n_sequences // 3
    d_samples = sample_sequences(model, cfg.n_sequences - 2 * third, cfg.horizon, rng)
    noisy = [play(teacher, EpsilonGreedy(float(rng.uniform(0, 0.5))), cfg.horizon, loss, beta, rng).tokens
             for _ in range(third)]
    switch = [play(teacher, ImitateThenSwitch(model, int(rng.integers(cfg.horizon))), cfg.horizon, loss, beta,
                   rng).tokens for _ in range(third)]
    return np.concatenate([d_samples, np.stack(noisy), np.stack(switch)])


def distill(
    teacher: NextTokenModel,
    histories: np.ndarray,
    cfg: DistillConfig,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    show_progress: bool | None = None,
) -> TorchNextTokenModel:
    """Train a :class:`TinyCausalTransformer` to match ``teacher``'s conditionals on ``histories``.

    ``histories``: ``(n, T)`` token ids with n ≥ 1 and T ≤ ``cfg.horizon``; ``seed`` ≥ 0 seeds the
    student's initialisation and its batches.
    """
    _check_model(teacher, "teacher")
    if not isinstance(cfg, DistillConfig):
        raise TypeError(f"cfg must be a DistillConfig, got {type(cfg).__name__}")
    seed = check_int(seed, "seed", low=0)
    histories = _tokens("histories", histories, teacher.n_tokens)
    if histories.ndim != 2 or histories.shape[0] < 1 or not 1 <= histories.shape[1] <= cfg.horizon:
        raise ValueError(f"histories must be (n >= 1, T <= cfg.horizon = {cfg.horizon}) tokens, got {histories.shape}")
    k = teacher.n_tokens
    targets = np.stack([conditionals(teacher, h)[:-1] for h in histories])  # (N, T, K)
    ids = np.concatenate([np.full((len(histories), 1), k), histories[:, :-1]], axis=1)  # BOS-shifted inputs
    ids_t = torch.as_tensor(ids, dtype=torch.long)
    targets_t = torch.as_tensor(targets, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        student = TinyCausalTransformer(k, cfg.horizon, d_model=cfg.d_model, n_layers=cfg.n_layers,
                                        n_heads=cfg.n_heads).to(device)
    opt = torch.optim.AdamW(student.parameters(), lr=cfg.lr, weight_decay=0.01)
    student.train()
    for step in progress(range(cfg.steps), enabled=show_progress, desc="distill"):
        lr = warmup_cosine(step, cfg.steps, peak=cfg.lr)
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, len(ids_t), (cfg.batch_size,), generator=g)
        logits = student(ids_t[idx].to(device))
        # KL(teacher ‖ student) up to the teacher's entropy: −Σ p log q
        loss = -(targets_t[idx].to(device) * torch.log_softmax(logits, dim=-1)).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    log.info("distillation loss %.4f", loss.item())
    return TorchNextTokenModel(student, k, device=device)
