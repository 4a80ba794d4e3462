"""``SubspacePathPruner``: fit offline on domain pools, compile a head mask per scenario.

>>> pruner = SubspacePathPruner(model, tokenizer=tok).fit({"email": email_texts, "xml": xml_texts, ...})
>>> keep = pruner.compile(first_prompt, target_prune_ratio=0.3)   # (L, H) bool, cached per input
>>> with mask_heads(model, keep):                                  # or prune_heads(copy, keep)
...     model.generate(...)

``fit`` (offline, brief §1.3):

1. one forward pass over every domain's inputs collects the mean-pooled post-attention
   residuals ``r_ℓ(x)`` and per-head outputs (:func:`collect_activations`);
2. layer-wise one-vs-rest probes with calibrated temperatures (:func:`fit_probes`);
3. domain axes ``u_{ℓ,k}``: the probes' unit rows (``axes="probe"``, default), the centred
   domain means of each layer's residuals (``"dbs"``, the DBS construction per layer), random
   unit vectors (``"random"``, an ablation), or a given ``(K, d)``/``(L, K, d)`` tensor;
4. importance ``I_{ℓ,h,k}`` (:func:`head_importance`) and the whitelist (:func:`whitelist_heads`).

``compile`` (online, brief §1.4): one forward pass over the first input gives ``p_{ℓ,k}``;
then :func:`compile_mask`. The mask is cached per (input, budget) and the same object is
returned for later turns.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.subspace_path.basis import domain_axes
from icml26.papers.subspace_path.capture import Batch, as_batch, collect_activations, head_writes
from icml26.papers.subspace_path.compile import breadth, compile_mask, similarity
from icml26.papers.subspace_path.heads import attention_layout
from icml26.papers.subspace_path.importance import (
    Whitelist,
    head_alignment,
    importance_from_alignment,
    whitelist_from_alignment,
)
from icml26.papers.subspace_path.linear_probes import DomainProbes, fit_probes

__all__ = ["ScenarioProfile", "SubspacePathPruner", "domain_pools"]


class ScenarioProfile:
    """What one forward pass over a first input tells the compiler."""

    def __init__(self, probabilities: Tensor) -> None:
        self.probabilities = probabilities
        """``(L, K)`` calibrated probe outputs ``p_{ℓ,k}``."""
        self.similarity = similarity(probabilities)
        """``(K,)`` ``s_k = max_ℓ p_{ℓ,k}``."""
        self.breadth = breadth(probabilities)
        """``c = H(q)/log K``."""

    def __repr__(self) -> str:
        sims = ", ".join(f"{v:.2f}" for v in self.similarity.tolist())
        return f"ScenarioProfile(similarity=[{sims}], breadth={self.breadth:.3f})"


def domain_pools(domain_data: Mapping[str, Any], *, tokenizer=None, max_length: int = 512) -> tuple[list[str], Batch, Tensor]:
    """Names, one padded :class:`Batch` of every domain's inputs, and their ``(N,)`` domain labels."""
    if not isinstance(domain_data, Mapping) or not domain_data:
        raise TypeError("domain_data must be a non-empty mapping {domain name: inputs}")
    names, batches = [], []
    for name, data in domain_data.items():
        batches.append(as_batch(data, name=f"domain_data[{name!r}]", tokenizer=tokenizer, max_length=max_length))
        names.append(str(name))
    width = max(b.input_ids.shape[1] for b in batches)
    ids, masks, labels = [], [], []
    for k, b in enumerate(batches):
        pad = width - b.input_ids.shape[1]
        ids.append(nn.functional.pad(b.input_ids, (0, pad)))
        masks.append(nn.functional.pad(b.attention_mask, (0, pad)))
        labels.append(torch.full((len(b),), k, dtype=torch.long))
    return names, Batch(torch.cat(ids), torch.cat(masks)), torch.cat(labels)


class SubspacePathPruner:
    """Scenario-specific head masks from probe-measured domain subspaces.

    Args:
        model: a frozen Llama-style Hugging Face decoder (Llama, Qwen2, Qwen3, Mistral); never modified.
        tokenizer: optional; lets ``fit`` and ``compile`` take text.
        axes: ``"probe"`` (default), ``"dbs"``, ``"random"`` or a ``(K, d)`` / ``(L, K, d)`` tensor.
        alpha: whitelist significance level (paper: 0.001).
        whitelist_max_fraction: cap on the whitelist's share of the heads (``None`` = no cap).
        whitelist_share: whitelist exactly this share of the heads, strongest per-domain test first,
            instead of those below ``alpha`` (:func:`whitelist_heads`; ``None``: by ``alpha``) [ours].
        importance: ``"alignment"`` (the paper's squared cosine of each head's write with the
            domain axis) or ``"magnitude"`` (the squared projection itself, ``E[(uᵀw̃)²]``: heads that
            write little along the axis score little) [ours]. The whitelist's test always uses the
            alignment.
        use_whitelist: ``False`` = the "w/o whitelist" ablation (empty whitelist).
        floors: ``(min heads per layer, min fraction per layer, min fraction overall)``.
        probe_epochs, probe_lr, probe_batch_size: probe training (authors: 10–20, 1e-3, 32).
        batch_size: inputs per forward pass.
        max_length: truncation for text inputs (authors: 512).
        seed: the probe split/order and the random axes.
        eps: ``ε`` of the importance.
        strength: the authors' ``η`` used by :meth:`compile` when no budget is given.
        use_multi_domain_mixing: ``False`` = the "w/o multi-domain mixing" ablation: only the
            most similar domain counts (its similarity kept, the others set to 0).

    Attributes (after :meth:`fit`): ``domains``, ``probes``, ``axes_``, ``importance``
    ``(L, H, K)``, ``whitelist`` (:class:`Whitelist`), ``alignment`` ``(N, L, H, K)``, ``labels``.
    """

    def __init__(self, model: nn.Module, *, tokenizer=None, axes: str | Tensor = "probe", alpha: float = 1e-3,
                 whitelist_max_fraction: float | None = None, whitelist_share: float | None = None,
                 importance: str = "alignment", use_whitelist: bool = True,
                 floors=(1, 0.1, 0.05), probe_epochs: int = 15, probe_lr: float = 1e-3,
                 probe_batch_size: int = 32, batch_size: int = 32, max_length: int = 512, seed: int = 0,
                 eps: float = 1e-8, strength: float = 1.0, use_multi_domain_mixing: bool = True) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
        layouts = attention_layout(model)
        if len({lay.n_heads for lay in layouts}) != 1:
            raise ValueError("model has layers with different head counts (already pruned); fit on the dense model")
        if isinstance(axes, str) and axes not in ("probe", "dbs", "random"):
            raise ValueError(f"axes={axes!r} must be 'probe', 'dbs', 'random' or a (K, d) / (L, K, d) tensor")
        if not isinstance(axes, (str, torch.Tensor)):
            raise TypeError("axes must be 'probe', 'dbs', 'random' or a tensor")
        self.model = model
        self.tokenizer = tokenizer
        self.axes = axes
        self.alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True)
        self.whitelist_max_fraction = (None if whitelist_max_fraction is None else
                                       check_real(whitelist_max_fraction, "whitelist_max_fraction", low=0.0, high=1.0))
        self.whitelist_share = (None if whitelist_share is None else
                                check_real(whitelist_share, "whitelist_share", low=0.0, high=1.0))
        if importance not in ("alignment", "magnitude"):
            raise ValueError(f"importance={importance!r} must be 'alignment' or 'magnitude'")
        self.importance_kind = importance
        self.use_whitelist = bool(use_whitelist)
        self.floors = tuple(floors)
        self.probe_epochs = check_int(probe_epochs, "probe_epochs", low=1)
        self.probe_lr = check_real(probe_lr, "probe_lr", low=0.0, low_open=True)
        self.probe_batch_size = check_int(probe_batch_size, "probe_batch_size", low=1)
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        self.max_length = check_int(max_length, "max_length", low=1)
        self.seed = check_int(seed, "seed", low=0)
        self.eps = check_real(eps, "eps", low=0.0, low_open=True)
        self.strength = check_real(strength, "strength", low=0.0)
        self.use_multi_domain_mixing = bool(use_multi_domain_mixing)
        self.n_layers = len(layouts)
        self.n_heads = layouts[0].n_heads
        self.group_size = layouts[0].group_size  # query heads per key/value head (1 without GQA)
        self.domains: list[str] | None = None
        self.probes: DomainProbes | None = None
        self._cache: dict[tuple, Tensor] = {}

    # -- offline -----------------------------------------------------------------------------
    def fit(self, domain_data: Mapping[str, Any]) -> "SubspacePathPruner":
        """Probes, axes, importance and whitelist from ``{domain: inputs}`` (at least 2 domains).

        Inputs of a domain: a ``(N, T)`` id tensor, a mapping with ``input_ids`` and
        ``attention_mask`` (a ``labels`` entry is ignored), or a list of strings (with a
        tokenizer). Input-only pools: the first prompts of that domain's scenarios.
        """
        names, batch, labels = domain_pools(domain_data, tokenizer=self.tokenizer, max_length=self.max_length)
        if len(names) < 2:
            raise ValueError("fit needs at least 2 domains (one-vs-rest probes have nothing to separate otherwise)")
        acts = collect_activations(self.model, batch, batch_size=self.batch_size)
        generator = torch.Generator().manual_seed(self.seed)
        self.probes = fit_probes(acts.residuals, labels, n_domains=len(names), epochs=self.probe_epochs,
                                 lr=self.probe_lr, batch_size=self.probe_batch_size, generator=generator)
        self.domains = names
        self.labels = labels
        self.axes_ = self._axes(acts.residuals, labels, len(names))
        # alignment per layer (the (N, L, H, d) writes of a large model need not exist at once)
        self.alignment = torch.cat([
            head_alignment(head_writes(self.model, acts.head_outputs[:, layer], layer=layer).unsqueeze(1),
                           self.axes_[layer:layer + 1], eps=self.eps)
            for layer in range(self.n_layers)], dim=1)
        if self.importance_kind == "magnitude":
            self.importance = importance_from_alignment(torch.cat([
                head_alignment(head_writes(self.model, acts.head_outputs[:, layer], layer=layer).unsqueeze(1),
                               self.axes_[layer:layer + 1], eps=self.eps, normalize=False)
                for layer in range(self.n_layers)], dim=1), labels)
        else:
            self.importance = importance_from_alignment(self.alignment, labels)
        if self.use_whitelist:
            self.whitelist = whitelist_from_alignment(self.alignment, labels, alpha=self.alpha,
                                                      max_fraction=self.whitelist_max_fraction,
                                                      share=self.whitelist_share)
        else:
            empty = torch.zeros(self.n_layers, self.n_heads, dtype=torch.bool)
            self.whitelist = Whitelist(mask=empty, p_values=torch.ones(self.n_layers, self.n_heads), alpha=self.alpha)
        self._cache = {}
        return self

    def _axes(self, residuals: Tensor, labels: Tensor, k: int) -> Tensor:
        d = residuals.shape[-1]
        if isinstance(self.axes, torch.Tensor):
            axes = self.axes.detach().float().cpu()
            if axes.dim() == 2:
                axes = axes.unsqueeze(0).expand(self.n_layers, -1, -1)
            if tuple(axes.shape) != (self.n_layers, k, d):
                raise ValueError(f"axes has shape {tuple(self.axes.shape)}; expected (K={k}, d={d}) or "
                                 f"(L={self.n_layers}, K={k}, d={d})")
            return axes / axes.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        if self.axes == "probe":
            return self.probes.axes()
        if self.axes == "dbs":
            return torch.stack([domain_axes([residuals[labels == j, layer] for j in range(k)]).float()
                                for layer in range(self.n_layers)])
        g = torch.Generator().manual_seed(self.seed + 1)
        axes = torch.randn(self.n_layers, k, d, generator=g)
        return axes / axes.norm(dim=-1, keepdim=True)

    def _fitted(self) -> None:
        if self.probes is None:
            raise RuntimeError("call fit(domain_data) before compile()")

    # -- online ------------------------------------------------------------------------------
    def profile(self, first_input: Any) -> ScenarioProfile:
        """Probe outputs, similarity and breadth of a first input (one forward pass)."""
        self._fitted()
        batch = as_batch(first_input, name="first_input", tokenizer=self.tokenizer, max_length=self.max_length)
        acts = collect_activations(self.model, batch, batch_size=self.batch_size)
        with torch.no_grad():
            p = self.probes.probabilities(acts.residuals.mean(dim=0, keepdim=True))[0]
        return ScenarioProfile(p)

    def compile(self, first_input: Any, *, target_prune_ratio: float | None = None,
                strength: float | None = None, whole_groups: bool = False) -> Tensor:
        """The scenario's ``(L, H)`` boolean keep-mask from its first input.

        Args:
            first_input: the scenario description or first prompt (ids, a mapping, or text
                with a tokenizer); several rows are pooled into one profile.
            target_prune_ratio: remove exactly ``round(ratio·L·H)`` heads (``[0, 1)``).
            strength: the authors' ``η`` instead (larger keeps more). At most one of the two;
                with neither, the pruner's ``strength``.
            whole_groups: GQA-aware: select whole key/value groups (a group's importance is the sum
                of its query heads', it is whitelisted when any of its heads is, the floors and the
                budget count groups), so :func:`~icml26.papers.subspace_path.prune_heads` can drop
                their key/value rows instead of copying them per kept head [ours]. Without GQA it
                changes nothing.

        Returns:
            The mask (CPU). Compiling the same input with the same budget again returns the
            identical object (the authors' per-session cache).
        """
        self._fitted()
        if target_prune_ratio is None and strength is None:
            strength = self.strength
        batch = as_batch(first_input, name="first_input", tokenizer=self.tokenizer, max_length=self.max_length)
        digest = hashlib.sha256(batch.input_ids.cpu().numpy().tobytes()
                                + batch.attention_mask.cpu().numpy().tobytes()
                                + str(tuple(batch.input_ids.shape)).encode()).hexdigest()
        key = (digest, target_prune_ratio, strength, bool(whole_groups))
        if key in self._cache:
            return self._cache[key]
        prof = self.profile(batch)
        sims = prof.similarity
        if not self.use_multi_domain_mixing:
            top = int(sims.argmax())
            sims = torch.zeros_like(sims).index_fill_(0, torch.tensor([top]), float(sims[top]))
        size = self.group_size if whole_groups else 1
        if size > 1:  # one entry per key/value group: query heads h // size share group h
            importance = self.importance.reshape(self.n_layers, -1, size, self.importance.shape[-1]).sum(2)
            whitelist = self.whitelist.mask.reshape(self.n_layers, -1, size).any(-1)
        else:
            importance, whitelist = self.importance, self.whitelist.mask
        keep = compile_mask(sims, prof.breadth, importance, whitelist,
                            target_prune_ratio=target_prune_ratio, strength=strength, floors=self.floors)
        if size > 1:
            keep = keep.repeat_interleave(size, dim=1)
        self._cache[key] = keep
        self.last_profile = prof
        return keep
