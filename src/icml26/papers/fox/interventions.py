"""The interventions that :func:`~icml26.papers.fox.attention.fox_attention_forward` applies, and the
key sets of a prompt they act on.

An intervention is an object with ``edit_scores(layer, scores, mask)`` and ``edit_probs(layer,
probs)`` (:class:`~icml26.papers.fox.attention.AttentionIntervention`), made current by
:func:`~icml26.papers.fox.attention.active_intervention`: :class:`FoxIntervention` (probe +
saturation), :class:`PAIIntervention` (image logits ``s + α|s|``), :class:`SIDIntervention` (keep the
least-attended image tokens), :class:`HeadAblation` (zero one head's output; for the mechanism check),
:class:`HeadSaturation` (saturate heads chosen by the caller, not by the probe: the saturation effect of a
head or a set of heads).
Which query rows they act on (``rows``) is described in :mod:`.attention`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch
from torch import nn

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite
from icml26.papers.fox.head_probe import SCORES, _probe, _select, num_risky_heads
from icml26.papers.fox.saturation import SATURATION_MODES, saturate_logits

__all__ = [
    "FoxIntervention",
    "HeadAblation",
    "HeadSaturation",
    "KeySets",
    "PAIIntervention",
    "ProbeRecord",
    "SIDIntervention",
    "image_token_id",
    "key_sets",
    "sid_keep_mask",
]

Rows = Literal["from_prompt", "last"]


# ---------------------------------------------------------------------------
# The key sets of a prompt
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class KeySets:
    """Which prompt positions are image keys and which are "system" keys, per sample.

    Attributes:
        visual: ``(B, P)`` boolean, the image tokens ``V``.
        system: ``(B, P)`` boolean, the non-padding keys before each sample's first image token.
        prompt_length: ``P``, the (padded) prompt length; generated tokens follow it.
    """

    visual: torch.Tensor
    system: torch.Tensor
    prompt_length: int

    @property
    def batch_size(self) -> int:
        return int(self.visual.shape[0])

    def masks(self, n_keys: int, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(visual, system)`` over ``n_keys ≥ P`` keys (generated keys are neither)."""
        if batch != self.batch_size:
            raise ValueError(f"the attention has batch {batch} but the prompt had {self.batch_size} rows; "
                             "beam search and num_return_sequences > 1 are not supported")
        if n_keys < self.prompt_length:
            raise ValueError(f"the attention sees {n_keys} keys, fewer than the prompt's {self.prompt_length}; "
                             "the intervention must be built from this forward's prompt")
        pad = n_keys - self.prompt_length
        if pad == 0:
            return self.visual, self.system
        zeros = self.visual.new_zeros(batch, pad)
        return torch.cat([self.visual, zeros], 1), torch.cat([self.system, zeros], 1)

    def first_row(self, q_len: int, n_keys: int, rows: Rows = "from_prompt") -> int | None:
        """The first query row (index within this forward) to intervene on, or ``None``."""
        offset = n_keys - q_len  # absolute index of query row 0
        first = max(0, self.prompt_length - 1 - offset)
        if rows == "last":
            first = max(first, q_len - 1)
        return first if first < q_len else None

    def to(self, device: torch.device | str) -> "KeySets":
        return KeySets(self.visual.to(device), self.system.to(device), self.prompt_length)


def image_token_id(model: nn.Module) -> int:
    """The image placeholder token id of a LLaVA / Qwen2-VL style model's config."""
    config = getattr(model, "config", None)
    for name in ("image_token_id", "image_token_index"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    raise ValueError(f"{type(model).__name__}.config has no image_token_id / image_token_index; pass "
                     "image_token_id= explicitly (the id of the image placeholder token in input_ids)")


def key_sets(input_ids: torch.Tensor, image_token: int, attention_mask: torch.Tensor | None = None) -> KeySets:
    """The :class:`KeySets` of a prompt: ``V = {input_ids == image_token}``, system = before the first one.

    Raises:
        ValueError: a sample without image tokens (nothing to probe), or without any key before
            its first image token (``m_sys`` undefined: put BOS / a system prompt first).
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.is_floating_point():
        raise TypeError("input_ids must be a (batch, length) integer tensor")
    image_token = check_int(image_token, "image_token", low=0)
    visual = input_ids == image_token
    if not bool(visual.any(1).all()):
        missing = (~visual.any(1)).nonzero().flatten().tolist()
        raise ValueError(f"input_ids has no image token (id {image_token}) in row(s) {missing}; Fox probes the "
                         "attention to image tokens: pass a prompt with its image placeholders expanded")
    valid = torch.ones_like(visual) if attention_mask is None else attention_mask.to(torch.bool)
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(f"attention_mask {tuple(attention_mask.shape)} must match input_ids {tuple(input_ids.shape)}")
    before_first = visual.long().cumsum(1) == 0
    system = before_first & valid
    if not bool(system.any(1).all()):
        raise ValueError("a prompt has no token before its first image token, so m_sys is undefined; start the "
                         "prompt with BOS or a system message (or use score='entropy')")
    return KeySets(visual=visual, system=system, prompt_length=int(input_ids.shape[1]))


# ---------------------------------------------------------------------------
# Interventions
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ProbeRecord:
    """What :class:`FoxIntervention` saw at one layer for one forward (when ``record=True``).

    Attributes:
        layer: decoder layer index.
        positions: ``(R,)`` absolute positions of the intervened query rows.
        m_sys, m_vis, h_vis, score: ``(B, R, H)`` probe statistics (CPU, float32).
        selected: ``(B, R, H)`` boolean, the saturated heads.
    """

    layer: int
    positions: torch.Tensor
    m_sys: torch.Tensor
    m_vis: torch.Tensor
    h_vis: torch.Tensor
    score: torch.Tensor
    selected: torch.Tensor


def _check_layers(layers, name: str = "layers") -> frozenset[int]:
    try:
        items = list(layers)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of decoder layer indices, got {type(layers).__name__}") from None
    return frozenset(check_int(v, name, low=0) for v in items)


@dataclasses.dataclass
class FoxIntervention:
    """Fox's interventional stream: probe every head on the intervened rows, saturate the top-k.

    Attributes:
        keys: the prompt's :class:`KeySets`.
        layers: decoder layers probed ([L/16, L/2) by default in :class:`~icml26.papers.fox.FoxConfig`).
        rho: head fraction ρ in (0, 1].
        score: ``"sys_entropy"`` or ``"entropy"``.
        shift, saturation, grid: arguments of :func:`~icml26.papers.fox.saturate_logits`.
        rows: ``"from_prompt"`` (every row ≥ P−1: cached = recompute) or ``"last"``.
        record: keep a :class:`ProbeRecord` per layer and forward in ``records``.
    """

    keys: KeySets
    layers: frozenset[int]
    rho: float = 0.35
    score: str = "sys_entropy"
    shift: float = 1e4
    saturation: str = "fp16"
    grid: float | None = None
    rows: Rows = "from_prompt"
    record: bool = False
    records: list[ProbeRecord] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.layers = _check_layers(self.layers)
        self.rho = check_real(self.rho, "rho", low=0.0, high=1.0, low_open=True)
        if self.score not in SCORES:
            raise ValueError(f"score={self.score!r} must be one of {SCORES}")
        if self.saturation not in SATURATION_MODES:
            raise ValueError(f"saturation={self.saturation!r} must be one of {SATURATION_MODES}")
        if self.rows not in ("from_prompt", "last"):
            raise ValueError(f"rows={self.rows!r} must be 'from_prompt' or 'last'")
        saturate_logits(torch.zeros(1, 2), shift=self.shift, mode=self.saturation, grid=self.grid)  # validates

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if layer not in self.layers:
            return scores
        batch, heads, q_len, n_keys = scores.shape
        first = self.keys.first_row(q_len, n_keys, self.rows)
        if first is None:
            return scores
        rows = scores[:, :, first:, :]
        logits = rows.float()
        if mask is not None:
            logits = logits + mask[:, :, first:, :n_keys].float()
        # A = softmax(S + mask) in fp32, probed on every intervened row: (B, H, R, K) -> (B, R, H)
        attn = torch.softmax(logits, dim=-1).transpose(1, 2)
        visual, system = self.keys.masks(n_keys, batch)
        stats = _probe(attn, visual[:, None, None, :].to(attn.dtype), system[:, None, None, :].to(attn.dtype),
                       self.score)
        chosen = _select(stats.score, num_risky_heads(heads, self.rho))  # (B, R, H)
        saturated = saturate_logits(rows, shift=self.shift, mode=self.saturation, grid=self.grid)
        edited = torch.where(chosen.transpose(1, 2).unsqueeze(-1), saturated, rows)
        if self.record:
            positions = torch.arange(n_keys - q_len + first, n_keys)
            self.records.append(ProbeRecord(layer, positions, *(t.detach().float().cpu() for t in (
                stats.m_sys, stats.m_vis, stats.h_vis, stats.score)), chosen.cpu()))
        return torch.cat([scores[:, :, :first, :], edited], dim=2)

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        return probs


@dataclasses.dataclass
class PAIIntervention:
    """PAI's attention amplification: on the intervened rows, image-key logits ``s ← s + α|s|``.

    Attributes:
        keys: the prompt's :class:`KeySets`.
        layers: decoder layers ([2, 32) for LLaVA-1.5: [L/16, L)).
        alpha: α (0.2).
        rows: as in :class:`FoxIntervention`.
    """

    keys: KeySets
    layers: frozenset[int]
    alpha: float = 0.2
    rows: Rows = "from_prompt"

    def __post_init__(self) -> None:
        self.layers = _check_layers(self.layers)
        self.alpha = check_real(self.alpha, "alpha", low=0.0)

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if layer not in self.layers:
            return scores
        batch, _, q_len, n_keys = scores.shape
        first = self.keys.first_row(q_len, n_keys, self.rows)
        if first is None:
            return scores
        visual, _ = self.keys.masks(n_keys, batch)
        rows = scores[:, :, first:, :]
        # s <- s + α|s| on the image keys
        edited = rows + self.alpha * rows.abs() * visual[:, None, None, :].to(rows.dtype)
        return torch.cat([scores[:, :, :first, :], edited], dim=2)

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        return probs


@dataclasses.dataclass
class SIDIntervention:
    """SID's contrastive stream: from layer ``agg_layer`` on, only the ``keep`` image tokens that the
    last query row attended to **least** in layer ``agg_layer − 1`` (head average) stay visible.

    Recomputed at every forward (every decoding step with a cache). ``kept`` holds the last
    kept set, ``(B, K)`` boolean.

    Attributes:
        keys: the prompt's :class:`KeySets`.
        agg_layer: first pruned layer (2 for LLaVA-1.5, reading layer 1's attention); ≥ 1.
        keep: number of image tokens kept (100 of 576 for LLaVA-1.5).
    """

    keys: KeySets
    agg_layer: int = 2
    keep: int = 100
    kept: torch.Tensor | None = None

    def __post_init__(self) -> None:
        self.agg_layer = check_int(self.agg_layer, "agg_layer", low=1)
        self.keep = check_int(self.keep, "keep", low=1)

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        if layer == self.agg_layer - 1:
            batch, _, _, n_keys = probs.shape
            visual, _ = self.keys.masks(n_keys, batch)
            self.kept = _keep_mask(probs[:, :, -1, :].float().mean(1), visual, self.keep)
        return probs

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if layer < self.agg_layer or self.kept is None:
            return scores
        batch, _, _, n_keys = scores.shape
        visual, _ = self.keys.masks(n_keys, batch)
        dropped = visual & ~self.kept[:, :n_keys]
        return scores.masked_fill(dropped[:, None, None, :], float("-inf"))


def sid_keep_mask(attention: torch.Tensor, visual: torch.Tensor, keep: int) -> torch.Tensor:
    """Boolean ``(B, K)``: the ``keep`` image keys with the **least** attention (all of them if fewer).

    Args:
        attention: ``(B, K)`` attention of the last query row (head-averaged).
        visual: ``(B, K)`` boolean image-key mask.
        keep: how many image keys to keep. Ties go to the earlier key.

    Raises:
        ValueError: NaN or infinite attention (a NaN would be ranked arbitrarily), shapes that
            differ, ``keep < 1``.
        TypeError: a ``visual`` mask that is not boolean.
    """
    attention = as_tensor(attention, "attention")
    require_finite(attention, "attention", hint="pass the head-averaged attention probabilities of the last row")
    if not isinstance(visual, torch.Tensor) or visual.dtype != torch.bool:
        raise TypeError(f"visual must be a boolean tensor (the image keys), got "
                        f"{visual.dtype if isinstance(visual, torch.Tensor) else type(visual).__name__}")
    keep = check_int(keep, "keep", low=1)
    if attention.dim() != 2 or attention.shape != visual.shape:
        raise ValueError(f"attention {tuple(attention.shape)} and visual {tuple(visual.shape)} must match, (B, K)")
    return _keep_mask(attention, visual, keep)


def _keep_mask(attention: torch.Tensor, visual: torch.Tensor, keep: int) -> torch.Tensor:
    """:func:`sid_keep_mask` on validated input (per layer and step inside the attention)."""
    masked = attention.float().masked_fill(~visual, float("inf"))
    k = min(keep, attention.shape[-1])
    order = torch.sort(masked, dim=-1, stable=True).indices[:, :k]
    kept = torch.zeros_like(visual).scatter_(1, order, True)
    return kept & visual


@dataclasses.dataclass
class HeadAblation:
    """Zero the output of one head (``layer``, ``head``) on the intervened rows (a mediator probe).

    Attributes:
        keys: the prompt's :class:`KeySets`.
        layer, head: the head to ablate.
        rows: as in :class:`FoxIntervention`.
    """

    keys: KeySets
    layer: int
    head: int
    rows: Rows = "from_prompt"

    def __post_init__(self) -> None:
        self.layer = check_int(self.layer, "layer", low=0)
        self.head = check_int(self.head, "head", low=0)

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return scores

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        if layer != self.layer:
            return probs
        _, heads, q_len, n_keys = probs.shape
        if self.head >= heads:
            raise ValueError(f"head={self.head} is out of range for a layer with {heads} heads")
        first = self.keys.first_row(q_len, n_keys, self.rows)
        if first is None:
            return probs
        out = probs.clone()
        out[:, self.head, first:, :] = 0.0
        return out


@dataclasses.dataclass
class HeadSaturation:
    """Saturate the logits of heads chosen by the caller on the intervened rows, exactly as
    :class:`FoxIntervention` saturates the heads its probe selects (:func:`saturate_logits` before the
    mask). It measures what Fox's operation does to a given head or set of heads, which an ablation
    (:class:`HeadAblation`, the head's output zeroed) does not: a head whose top 8-wide logit bin holds
    its routing keeps it under saturation.

    Attributes:
        keys: the prompt's :class:`KeySets`.
        heads: ``{layer: chosen}``; ``chosen`` is an iterable of head indices (the same for every
            sample) or a ``(B, H)`` boolean tensor (per sample, e.g. a random draw of k heads).
        shift, saturation, grid: arguments of :func:`~icml26.papers.fox.saturate_logits`.
        rows: as in :class:`FoxIntervention`.
    """

    keys: KeySets
    heads: dict
    shift: float = 1e4
    saturation: str = "fp16"
    grid: float | None = None
    rows: Rows = "from_prompt"

    def __post_init__(self) -> None:
        if not isinstance(self.heads, dict):
            raise TypeError(f"heads must be a dict {{layer: head indices or a (B, H) boolean tensor}}, got "
                            f"{type(self.heads).__name__}")
        chosen: dict[int, torch.Tensor | frozenset[int]] = {}
        for layer, value in self.heads.items():
            layer = check_int(layer, "heads (layer)", low=0)
            if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
                if value.dim() != 2 or value.shape[0] != self.keys.batch_size:
                    raise ValueError(f"heads[{layer}] has shape {tuple(value.shape)}; a per-sample mask must be "
                                     f"(batch={self.keys.batch_size}, heads)")
                chosen[layer] = value
            else:
                chosen[layer] = _check_layers(value, "heads (head indices)")
        self.heads = chosen
        if self.saturation not in SATURATION_MODES:
            raise ValueError(f"saturation={self.saturation!r} must be one of {SATURATION_MODES}")
        if self.rows not in ("from_prompt", "last"):
            raise ValueError(f"rows={self.rows!r} must be 'from_prompt' or 'last'")
        saturate_logits(torch.zeros(1, 2), shift=self.shift, mode=self.saturation, grid=self.grid)  # validates

    def _mask(self, layer: int, batch: int, heads: int, device: torch.device) -> torch.Tensor:
        """``(B, H)`` boolean: the heads of ``layer`` to saturate for each sample."""
        value = self.heads[layer]
        if isinstance(value, torch.Tensor):
            if value.shape != (batch, heads):
                raise ValueError(f"heads[{layer}] has shape {tuple(value.shape)} but the layer has batch {batch} "
                                 f"and {heads} heads")
            return value.to(device)
        if value and max(value) >= heads:
            raise ValueError(f"heads[{layer}] = {sorted(value)} names a head outside the layer's {heads} heads")
        out = torch.zeros(batch, heads, dtype=torch.bool, device=device)
        out[:, sorted(value)] = True
        return out

    def edit_scores(self, layer: int, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if layer not in self.heads:
            return scores
        batch, heads, q_len, n_keys = scores.shape
        first = self.keys.first_row(q_len, n_keys, self.rows)
        if first is None:
            return scores
        chosen = self._mask(layer, batch, heads, scores.device)
        rows = scores[:, :, first:, :]
        saturated = saturate_logits(rows, shift=self.shift, mode=self.saturation, grid=self.grid)
        edited = torch.where(chosen[:, :, None, None], saturated, rows)
        return torch.cat([scores[:, :, :first, :], edited], dim=2)

    def edit_probs(self, layer: int, probs: torch.Tensor) -> torch.Tensor:
        return probs
