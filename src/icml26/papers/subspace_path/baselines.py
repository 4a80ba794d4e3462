"""Baselines at the same head budget, with the same selection and the same removal code.

Each is a drop-in for :class:`SubspacePathPruner`: ``Pruner(model).fit(domain_data)
.compile(first_input, target_prune_ratio=r) -> (L, H) keep-mask``, built on
:func:`select_heads` (the method's floors, no whitelist) and applied with
:func:`mask_heads` / :func:`prune_heads`. Their scores come from pooled calibration data of
every domain the method is fitted on (equal information); only the oracle uses the
scenario's domain labels.

* :class:`GlobalGradientPruner`: Michel et al. (2019), ``I_h = E_x |∂L(x)/∂m_h|`` for a gate
  ``m_h = 1`` on each head's output — the strongest structured baseline at this scale (brief
  §4.4). Michel et al. also normalise the scores within each layer (ℓ2); that is optional
  (``normalize_layers``) and off by default: with one global budget it forces every layer to
  give up heads alike, which on our six-skill Llama (where the first two layers carry the
  skills) cut exact match at 30 % removal from about 0.74 to 0.10 (pilot) [ours];
* :class:`WandaSPPruner`: the structured Wanda score of a head,
  ``Σ_{j ∈ h-block} Σ_i |W_O[i, j]| · ‖X_j‖₂`` over the calibration tokens;
* :class:`RandomPruner`: uniformly random heads (seeded);
* :class:`DomainOraclePruner`: Michel importance per domain, from the labelled data of the
  scenario's own domain(s) (an upper bound, it is told the domains).

Calibration data per domain is a mapping with ``input_ids``, ``attention_mask`` and
``labels`` (Hugging Face convention: ``labels`` aligned with ``input_ids``, ``-100`` ignored,
shifted inside) or a plain id tensor (next-token loss on every token).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.subspace_path.capture import Batch, as_batch
from icml26.papers.subspace_path.compile import _floors, _ratio, select_heads
from icml26.papers.subspace_path.heads import attention_layout, attention_modules, scale_heads

__all__ = [
    "DomainOraclePruner",
    "GlobalGradientPruner",
    "RandomPruner",
    "WandaSPPruner",
    "gradient_head_importance",
    "labelled_batch",
    "wanda_sp_scores",
]


def labelled_batch(data: Any, *, name: str = "data", tokenizer=None, max_length: int = 512) -> tuple[Batch, Tensor]:
    """``(Batch, labels)``: ``labels`` ``(N, T)`` from ``data["labels"]``, else the ids with padding as ``-100``."""
    batch = as_batch(data, name=name, tokenizer=tokenizer, max_length=max_length)
    labels = data.get("labels") if isinstance(data, Mapping) else None
    if labels is None:
        labels = batch.input_ids.masked_fill(batch.attention_mask == 0, -100)
    else:
        labels = torch.as_tensor(labels).long()
        if labels.dim() == 1:
            labels = labels.unsqueeze(0)
        if labels.shape != batch.input_ids.shape:
            raise ValueError(f"{name}: labels has shape {tuple(labels.shape)}, input_ids {tuple(batch.input_ids.shape)}")
    if not bool((labels[:, 1:] != -100).any(dim=1).all()):
        raise ValueError(f"{name}: a row has no label token after the first position (nothing to predict)")
    return batch, labels


def _per_example_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean next-token cross-entropy per example: ``(B, T, V), (B, T) -> (B,)``."""
    target = labels[:, 1:]
    ce = nn.functional.cross_entropy(logits[:, :-1].float().transpose(1, 2), target, ignore_index=-100,
                                     reduction="none")  # (B, T-1)
    valid = (target != -100).to(ce.dtype)
    return (ce * valid).sum(dim=1) / valid.sum(dim=1)


def gradient_head_importance(model: nn.Module, batch: Batch, labels: Tensor, *, batch_size: int = 16,
                             normalize_layers: bool = True) -> Tensor:
    """Michel et al. (2019): ``I_{ℓ,h} = E_x |∂L(x)/∂m_{ℓ,h}|`` at ``m = 1``: ``(L, H)``.

    One gate per example and head (:func:`scale_heads` with a ``(B, L, H)`` gate) gives every
    example's gradient from one backward pass; the model's parameters get no gradient.

    Args:
        model: a Llama-style decoder; batch: the inputs; labels: ``(N, T)`` (``-100`` ignored).
        batch_size: examples per backward pass.
        normalize_layers: divide each layer's scores by their ℓ2 norm (Michel et al. §4.2).
    """
    batch_size = check_int(batch_size, "batch_size", low=1)
    layouts = attention_layout(model)
    n_layers, n_heads = len(layouts), layouts[0].n_heads
    device = next(model.parameters()).device
    total = torch.zeros(n_layers, n_heads, dtype=torch.float64)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(batch), batch_size):
            idx = list(range(start, min(start + batch_size, len(batch))))
            chunk = batch.select(idx)
            gate = torch.ones(len(idx), n_layers, n_heads, device=device, requires_grad=True)
            with scale_heads(model, gate):
                logits = model(input_ids=chunk.input_ids.to(device),
                               attention_mask=chunk.attention_mask.to(device)).logits
            loss = _per_example_loss(logits, labels[idx].to(device)).sum()
            (grad,) = torch.autograd.grad(loss, gate)
            total += grad.detach().abs().double().sum(dim=0).cpu()
    finally:
        model.train(was_training)
    scores = total / len(batch)
    if normalize_layers:
        scores = scores / scores.norm(dim=1, keepdim=True).clamp_min(1e-20)
    return scores.float()


@torch.no_grad()
def wanda_sp_scores(model: nn.Module, batch: Batch, *, batch_size: int = 32) -> Tensor:
    """Structured Wanda head scores ``Σ_{j∈h} Σ_i |W_O[i,j]| · ‖X_j‖₂``: ``(L, H)``.

    ``X_j`` is column ``j`` of ``o_proj``'s input over every real token of ``batch``.
    """
    batch_size = check_int(batch_size, "batch_size", low=1)
    layouts = attention_layout(model)
    modules = attention_modules(model)
    device = next(model.parameters()).device
    sumsq = [torch.zeros(lay.n_heads * lay.head_dim, dtype=torch.float64) for lay in layouts]
    mask_now: list[Tensor] = []

    def hook(layer):
        def fn(_module, args):
            x = args[0].double() * mask_now[0].unsqueeze(-1)
            sumsq[layer] += x.pow(2).sum(dim=(0, 1)).cpu()
        return fn

    handles = [m.o_proj.register_forward_pre_hook(hook(i)) for i, m in enumerate(modules)]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(batch), batch_size):
            chunk = batch.select(range(start, min(start + batch_size, len(batch))))
            mask = chunk.attention_mask.to(device)
            mask_now[:] = [mask.double()]
            model(input_ids=chunk.input_ids.to(device), attention_mask=mask)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    rows = []
    for m, lay, ss in zip(modules, layouts, sumsq):
        col = m.o_proj.weight.detach().abs().double().sum(dim=0).cpu() * ss.sqrt()  # (H·d_h,)
        rows.append(col.view(lay.n_heads, lay.head_dim).sum(dim=1))
    return torch.stack(rows).float()


def _pooled(domain_data: Mapping[str, Any], tokenizer, max_length: int) -> tuple[list[str], list[tuple[Batch, Tensor]]]:
    if not isinstance(domain_data, Mapping) or not domain_data:
        raise TypeError("domain_data must be a non-empty mapping {domain name: calibration data}")
    names, parts = [], []
    for name, data in domain_data.items():
        parts.append(labelled_batch(data, name=f"domain_data[{name!r}]", tokenizer=tokenizer, max_length=max_length))
        names.append(str(name))
    return names, parts


def _concat(parts: Sequence[tuple[Batch, Tensor]]) -> tuple[Batch, Tensor]:
    width = max(b.input_ids.shape[1] for b, _ in parts)
    ids = torch.cat([nn.functional.pad(b.input_ids, (0, width - b.input_ids.shape[1])) for b, _ in parts])
    mask = torch.cat([nn.functional.pad(b.attention_mask, (0, width - b.attention_mask.shape[1])) for b, _ in parts])
    labels = torch.cat([nn.functional.pad(lab, (0, width - lab.shape[1]), value=-100) for _, lab in parts])
    return Batch(ids, mask), labels


class _ScorePruner:
    """Shared shape of the global baselines: ``fit`` computes ``scores`` ``(L, H)``; ``compile`` selects."""

    def __init__(self, model: nn.Module, *, tokenizer=None, floors=(1, 0.1, 0.05), batch_size: int = 16,
                 max_length: int = 512) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
        attention_layout(model)
        self.model = model
        self.tokenizer = tokenizer
        self.floors = _floors(floors)
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        self.max_length = check_int(max_length, "max_length", low=1)
        self.scores: Tensor | None = None
        self._cache: dict[float, Tensor] = {}

    def fit(self, domain_data: Mapping[str, Any]) -> "_ScorePruner":
        names, parts = _pooled(domain_data, self.tokenizer, self.max_length)
        self.domains = names
        self.scores = self._score(*_concat(parts))
        self._cache = {}
        return self

    def _score(self, batch: Batch, labels: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def compile(self, first_input: Any = None, *, target_prune_ratio: float) -> Tensor:
        """The ``(L, H)`` keep-mask at the budget (``first_input`` is not used: a global mask)."""
        if self.scores is None:
            raise RuntimeError("call fit(domain_data) before compile()")
        ratio = _ratio(target_prune_ratio)
        if ratio not in self._cache:
            self._cache[ratio] = select_heads(self.scores, target_prune_ratio=ratio, floors=self.floors)
        return self._cache[ratio]


class GlobalGradientPruner(_ScorePruner):
    """Michel et al. (2019) head importance on the pooled calibration data of every domain.

    Args:
        model: a Llama-style decoder; tokenizer, floors, batch_size, max_length: as in
            :class:`SubspacePathPruner`; normalize_layers: per-layer ℓ2 normalisation (off).
    """

    def __init__(self, model: nn.Module, *, normalize_layers: bool = False, tokenizer=None, floors=(1, 0.1, 0.05),
                 batch_size: int = 16, max_length: int = 512) -> None:
        super().__init__(model, tokenizer=tokenizer, floors=floors, batch_size=batch_size, max_length=max_length)
        self.normalize_layers = bool(normalize_layers)

    def _score(self, batch: Batch, labels: Tensor) -> Tensor:
        return gradient_head_importance(self.model, batch, labels, batch_size=self.batch_size,
                                        normalize_layers=self.normalize_layers)


class WandaSPPruner(_ScorePruner):
    """Structured Wanda (``|W|·‖X‖`` summed over a head's ``o_proj`` input columns) on pooled data."""

    def __init__(self, model: nn.Module, *, tokenizer=None, floors=(1, 0.1, 0.05), batch_size: int = 16,
                 max_length: int = 512) -> None:
        super().__init__(model, tokenizer=tokenizer, floors=floors, batch_size=batch_size, max_length=max_length)

    def _score(self, batch: Batch, labels: Tensor) -> Tensor:
        return wanda_sp_scores(self.model, batch, batch_size=self.batch_size)


class RandomPruner(_ScorePruner):
    """Uniformly random heads (``seed`` fixes them), with the method's floors."""

    def __init__(self, model: nn.Module, *, seed: int = 0, floors=(1, 0.1, 0.05)) -> None:
        super().__init__(model, floors=floors)
        self.seed = check_int(seed, "seed", low=0)

    def fit(self, domain_data: Mapping[str, Any] | None = None) -> "RandomPruner":
        """Draw the scores (``domain_data`` is not used)."""
        layouts = attention_layout(self.model)
        g = torch.Generator().manual_seed(self.seed)
        self.scores = torch.rand(len(layouts), layouts[0].n_heads, generator=g)
        self._cache = {}
        return self


class DomainOraclePruner(_ScorePruner):
    """Per-domain Michel importance, told the scenario's domains (an upper bound).

    ``fit`` scores every domain separately; ``compile(first_input, target_prune_ratio=r,
    domains=[...])`` keeps the top heads of the sum of the named domains' scores (each
    normalised to sum 1).
    """

    def __init__(self, model: nn.Module, *, normalize_layers: bool = False, tokenizer=None, floors=(1, 0.1, 0.05),
                 batch_size: int = 16, max_length: int = 512) -> None:
        super().__init__(model, tokenizer=tokenizer, floors=floors, batch_size=batch_size, max_length=max_length)
        self.normalize_layers = bool(normalize_layers)

    def fit(self, domain_data: Mapping[str, Any]) -> "DomainOraclePruner":
        names, parts = _pooled(domain_data, self.tokenizer, self.max_length)
        self.domains = names
        self.domain_scores = {name: gradient_head_importance(self.model, b, lab, batch_size=self.batch_size,
                                                             normalize_layers=self.normalize_layers)
                              for name, (b, lab) in zip(names, parts)}
        self.scores = torch.stack(list(self.domain_scores.values())).mean(dim=0)
        self._cache = {}
        return self

    def compile(self, first_input: Any = None, *, target_prune_ratio: float,
                domains: Sequence[str] | None = None) -> Tensor:
        """The mask for the named ``domains`` (the scenario's true ones; ``first_input`` unused)."""
        if self.scores is None:
            raise RuntimeError("call fit(domain_data) before compile()")
        if domains is None or isinstance(domains, str) or not domains:
            raise ValueError("the oracle needs domains=[...]: the scenario's true domain names")
        unknown = [d for d in domains if d not in self.domain_scores]
        if unknown:
            raise ValueError(f"unknown domains {unknown}; fitted on {self.domains}")
        scores = sum(self.domain_scores[d] / self.domain_scores[d].sum().clamp_min(1e-20) for d in domains)
        return select_heads(scores, target_prune_ratio=target_prune_ratio, floors=self.floors)
