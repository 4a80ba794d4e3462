"""Layer-wise contextual curvature against next-token entropy, for any HF causal LM.

Steps of :func:`layerwise_curvature_entropy` (paper: the correlation between the
curvature of the recent trajectory and the entropy of the next-token distribution peaks
in the middle layers, r ~ 0.15 for GPT-2 XL and Pythia-2.8B):

1. run the model on ``(batch, T)`` token ids with ``output_hidden_states=True``;
2. at every layer ``l = 0 .. L``, the causal contextual curvature ``kappa_l(t; W)`` of each
   row's trajectory (:func:`~icml26.papers.curvature.geometry.contextual_curvature`) and
   the mean turning angle (the straightening measure);
3. the entropy ``H_t`` of the logits at each position;
4. over all tokens with a defined ``kappa``: Pearson and Spearman correlations of
   ``kappa_l(t)`` with ``H_t`` per layer, and partial correlations controlling for the
   token's position ``t`` and the log unigram frequency of the token at ``t``.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.common.progress import progress
from icml26.papers.curvature.entropy import _entropy_and_log_prob
from icml26.papers.curvature.geometry import contextual_curvature, curvature_from_angles, turning_angles
from icml26.papers.curvature.hooks import num_layers
from icml26.papers.curvature.stats import partial_correlation, pearson, spearman

__all__ = ["CurvatureEntropyAnalysis", "layerwise_curvature_entropy", "unigram_log_frequency"]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class CurvatureEntropyAnalysis:
    """Per-token curvature and entropy, and per-layer statistics (layers ``0 .. L``)."""

    window: int
    """``W`` of ``kappa(t; W)``."""
    curvature: np.ndarray
    """``(L + 1, N)``: ``kappa_l(t)`` of each analysed token (NaN at undefined angles)."""
    entropy: np.ndarray
    """``(N,)``: ``H_t`` (nats)."""
    position: np.ndarray
    """``(N,)``: ``t`` within its row."""
    log_frequency: np.ndarray
    """``(N,)``: log unigram frequency of the token at ``t``."""
    mean_curvature: np.ndarray
    """``(L + 1,)``: mean turning angle (radians) over every vertex of every row."""
    pearson: np.ndarray
    """``(L + 1,)``: Pearson ``r(kappa_l, H)``."""
    spearman: np.ndarray
    """``(L + 1,)``: Spearman ``rho(kappa_l, H)``."""
    partial_pearson: np.ndarray
    """``(L + 1,)``: Pearson ``r`` controlling for position and log frequency."""
    partial_spearman: np.ndarray
    """``(L + 1,)``: Spearman ``rho`` controlling for position and log frequency (on ranks)."""
    n_tokens: np.ndarray
    """``(L + 1,)``: tokens entering each layer's correlations."""
    row: np.ndarray | None = None
    """``(N,)``: the row of ``input_ids`` each analysed token comes from (for a bootstrap over rows)."""
    mean_loss: float = float("nan")
    """Mean next-token cross-entropy (nats) of the model on ``input_ids`` (every unpadded position
    with an unpadded successor), from the same forward passes."""

    @property
    def num_layers(self) -> int:
        """``L``: the analysis covers ``hidden_states[0 .. L]``."""
        return len(self.mean_curvature) - 1

    def best_layer(self, statistic: str = "spearman") -> int:
        """The layer with the largest correlation of the named statistic."""
        if statistic not in ("pearson", "spearman", "partial_pearson", "partial_spearman"):
            raise ValueError(f"statistic={statistic!r} must be pearson, spearman, partial_pearson or partial_spearman")
        values = getattr(self, statistic)
        if not np.isfinite(values).any():
            raise ValueError(f"no layer has a finite {statistic}")
        return int(np.nanargmax(values))

    def summary(self) -> dict[str, list[float]]:
        """The per-layer statistics as plain lists (JSON-ready)."""
        names = ("mean_curvature", "pearson", "spearman", "partial_pearson", "partial_spearman", "n_tokens")
        return {name: [float(v) for v in getattr(self, name)] for name in names}


def unigram_log_frequency(ids: Tensor, vocab_size: int) -> Tensor:
    """Add-one smoothed log unigram frequency of every word: ``log((c_w + 1) / (N + V))``.

    Args:
        ids: token ids of any shape (e.g. the training stream).
        vocab_size: ``V``.

    Returns:
        ``(V,)`` float64.
    """
    vocab_size = check_int(vocab_size, "vocab_size", low=1)
    ids = torch.as_tensor(ids)
    if ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"ids must be integer token ids, got {ids.dtype}")
    ids = ids.reshape(-1).to("cpu", torch.int64)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}); got [{int(ids.min())}, {int(ids.max())}]")
    counts = torch.bincount(ids, minlength=vocab_size).to(torch.float64)
    return torch.log((counts + 1.0) / (counts.sum() + vocab_size))


def _vocab_size(model: nn.Module) -> int:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return int(config.vocab_size)


def _check_mask(attention_mask: Tensor | None, input_ids: Tensor) -> Tensor:
    if attention_mask is None:
        return torch.ones_like(input_ids, dtype=torch.bool)
    if attention_mask.shape != input_ids.shape:
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, input_ids {tuple(input_ids.shape)}")
    mask = attention_mask.to(torch.bool)
    # Right padding only: once a row's mask is 0 it stays 0.
    if (mask[:, 1:] & ~mask[:, :-1]).any():
        raise ValueError("attention_mask must be right-padded (ones, then zeros); tokenize with padding_side='right'")
    return mask


def _check_layers(layers, n_layers: int) -> frozenset[int]:
    if layers is None:
        return frozenset(range(n_layers + 1))
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
        raise TypeError(f"layers must be a sequence of hidden_states indices or None, got {layers!r}")
    out = [check_int(layer, "layers") for layer in layers]
    if not out or any(not 0 <= layer <= n_layers for layer in out):
        raise ValueError(f"layers={layers!r} must be a non-empty sequence of indices in 0 .. {n_layers}")
    return frozenset(out)


@torch.no_grad()
def layerwise_curvature_entropy(
    model: nn.Module,
    input_ids: Tensor,
    window: int = 3,
    *,
    attention_mask: Tensor | None = None,
    token_log_frequency: Tensor | None = None,
    batch_size: int = 16,
    eps: float = 1e-8,
    show_progress: bool | None = None,
    group=None,
    layers=None,
) -> CurvatureEntropyAnalysis:
    """Curvature-entropy statistics at every layer of a Hugging Face causal LM.

    Under ``torch.distributed`` (a process group active; ``group`` selects one), call it on
    every rank with the same ``input_ids``: the batches are dealt round-robin across ranks, each
    rank runs its share, and the per-batch results are gathered and merged in batch order, so
    every rank returns exactly what one process would (the same batches, summed in the same order).

    Args:
        model: any causal LM that returns ``hidden_states`` (call ``model.eval()`` first).
        input_ids: ``(batch, T)`` token ids (held-out text).
        window: ``W`` of ``kappa(t; W)``; tokens at ``t < W + 1`` are not analysed.
        attention_mask: ``(batch, T)`` right-padded mask; padded positions are skipped.
        token_log_frequency: ``(vocab,)`` log unigram frequencies for the partial-correlation
            control (e.g. :func:`unigram_log_frequency` of the training data); default:
            estimated from ``input_ids`` itself.
        batch_size: rows per forward pass.
        eps: zero-length threshold of the turning angles.
        show_progress: progress bar (default: only on a terminal).
        group: the process group to shard the corpus over (default: the default group, if any).
        layers: the ``hidden_states`` indices (``0 .. L``) to analyse; ``None`` (default): every layer.
            The others keep their place in every per-layer array, as NaN (their angles are not computed:
            on a deep model most of the analysis' time is the angles of every layer).
    """
    from icml26.common.distributed import all_gather_objects, world

    if not isinstance(input_ids, Tensor) or input_ids.ndim != 2:
        raise ValueError("input_ids must be a (batch, T) tensor of token ids")
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise TypeError(f"input_ids must be integer token ids, got {input_ids.dtype}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
    check_int(batch_size, "batch_size", low=1)
    check_int(window, "window", low=1)
    mask = _check_mask(attention_mask, input_ids)
    if model.training:
        log.warning("layerwise_curvature_entropy on a model in train mode; dropout perturbs the states")
    n_layers = num_layers(model)
    selected = _check_layers(layers, n_layers)
    device = next(model.parameters()).device
    if token_log_frequency is None:
        token_log_frequency = unigram_log_frequency(input_ids[mask], _vocab_size(model))
    log_freq = token_log_frequency.to("cpu", torch.float64)

    T = input_ids.shape[1]
    position = torch.arange(T).expand_as(input_ids)
    keep_all = mask & (position >= window + 1)
    rank, size = world(group)
    starts = list(range(0, input_ids.shape[0], batch_size))
    # per batch: (kappa per layer, entropy, position, log frequency, angle sums, angle counts)
    batches: dict[int, tuple] = {}
    for start in progress(starts[rank::size], enabled=show_progress, desc="curvature vs entropy"):
        ids = input_ids[start : start + batch_size]
        m = mask[start : start + batch_size]
        keep = keep_all[start : start + batch_size]
        out = model(input_ids=ids.to(device), attention_mask=m.to(device, torch.long),
                    output_hidden_states=True)
        if out.hidden_states is None or len(out.hidden_states) != n_layers + 1:
            raise ValueError(f"the model returned {len(out.hidden_states or ())} hidden states, "
                             f"expected num_hidden_layers + 1 = {n_layers + 1}")
        keep_dev = keep.to(device)
        vertex_ok = (m[:, :-2] & m[:, 1:-1] & m[:, 2:]).to(device) if T >= 3 else None
        kappa_rows, angle_sum, angle_count = [], np.zeros(n_layers + 1), np.zeros(n_layers + 1)
        for layer, hidden in enumerate(out.hidden_states):
            if layer not in selected:
                kappa_rows.append(np.full(int(keep.sum()), np.nan))
                continue
            # the angles once, for kappa and for the mean curvature (contextual_curvature computes the same)
            angles = turning_angles(hidden, eps=eps) if T >= 3 else None
            kappa = contextual_curvature(hidden, window, eps=eps) if angles is None else \
                curvature_from_angles(angles, window)
            kappa_rows.append(kappa[keep_dev].double().cpu().numpy())
            if vertex_ok is not None:
                ok = vertex_ok & torch.isfinite(angles)
                angle_sum[layer] = float(angles[ok].double().sum())
                angle_count[layer] = float(ok.sum())
        # the entropy at every position and -log p(next token) from one log-softmax of each row
        logits = out.logits if out.logits.dtype in (torch.float32, torch.float64) else out.logits.float()
        next_ids = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -1)], dim=1)
        entropy_all, log_prob = _entropy_and_log_prob(logits.contiguous(), next_ids)
        pair = (m[:, :-1] & m[:, 1:]).to(device)
        nll = -log_prob[:, :-1]
        rows = torch.arange(start, start + ids.shape[0])[:, None].expand_as(ids)
        batches[start] = (kappa_rows, entropy_all[keep_dev].double().cpu().numpy(),
                          position[start : start + batch_size][keep].numpy(),
                          log_freq[ids[keep].cpu()].numpy(), angle_sum, angle_count,
                          rows[keep].numpy(), float(nll[pair].double().sum()), float(pair.sum()))
    if size > 1:
        merged: dict[int, tuple] = {}
        for part in all_gather_objects(batches, group):
            merged.update(part)
        batches = merged
    ordered = [batches[s] for s in starts]
    curvature = np.stack([np.concatenate([b[0][layer] for b in ordered]) for layer in range(n_layers + 1)])
    entropy = np.concatenate([b[1] for b in ordered])
    pos = np.concatenate([b[2] for b in ordered]).astype(np.float64)
    freq = np.concatenate([b[3] for b in ordered])
    row = np.concatenate([b[6] for b in ordered])
    nll_count = sum(b[8] for b in ordered)
    mean_loss = sum(b[7] for b in ordered) / nll_count if nll_count else float("nan")
    angle_sum = torch.zeros(n_layers + 1, dtype=torch.float64)
    angle_count = torch.zeros(n_layers + 1, dtype=torch.float64)
    for b in ordered:  # the same order of additions as one process
        angle_sum += torch.from_numpy(b[4])
        angle_count += torch.from_numpy(b[5])
    if entropy.size < 3:
        raise ValueError(f"only {entropy.size} tokens have a defined kappa(t; W={window}); "
                         f"pass longer rows (T > W + 1) or more of them")
    covariates = np.column_stack([pos, freq])
    stats = {name: np.full(n_layers + 1, np.nan) for name in
             ("pearson", "spearman", "partial_pearson", "partial_spearman", "n_tokens")}
    for layer in range(n_layers + 1):
        k = curvature[layer]
        ok = np.isfinite(k) & np.isfinite(entropy)
        stats["n_tokens"][layer] = ok.sum()
        if ok.sum() < 3:
            continue
        stats["pearson"][layer] = pearson(k[ok], entropy[ok])
        stats["spearman"][layer] = spearman(k[ok], entropy[ok])
        stats["partial_pearson"][layer] = partial_correlation(k[ok], entropy[ok], covariates[ok], "pearson")
        stats["partial_spearman"][layer] = partial_correlation(k[ok], entropy[ok], covariates[ok], "spearman")
    mean_curv = (angle_sum / angle_count.clamp_min(1)).numpy()
    mean_curv[angle_count.numpy() == 0] = np.nan
    return CurvatureEntropyAnalysis(window=window, curvature=curvature, entropy=entropy, position=pos,
                                    log_frequency=freq, mean_curvature=mean_curv, row=row, mean_loss=mean_loss,
                                    **stats)
