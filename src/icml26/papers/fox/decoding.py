"""Two streams of one model inside Hugging Face ``generate()``: Fox's decoding.

* :class:`DualStreamLogitsProcessor` (the pattern of PAI's ``CFGLogits``): a ``LogitsProcessor``
  that owns the second stream — its prompt, its KV cache, its intervention — and at every step
  runs that stream on the tokens generated so far, then returns ``combine(l_o, l_i)``. It goes
  **first** in the processor list, so temperature / top-p act on the fused logits.
* :func:`fox_generate` (``model, inputs, FoxConfig``): the observational stream is vanilla; the
  interventional stream runs :class:`~icml26.papers.fox.interventions.FoxIntervention` (probe +
  saturation on the top-k heads of layers [L/16, L/2)); the fusion is
  :func:`~icml26.papers.fox.fusion.conflict_gated_fusion`.

Cache modes: ``"cached"`` (each stream keeps a KV cache; every position is intervened on once,
when it is the last query row) and ``"recompute"`` (no cache: each step re-runs the whole
sequence, intervening on every row ≥ prompt_length − 1 with its own statistics). Both give the
same stream (tested). ``"last_row"``: no cache, only the current last row intervened (the
authors' ``use_cache=False`` path; equal to the others for one generated token, as in POPE).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.extras import require
from icml26.common.hf import cache_kwarg, output_cache
from icml26.papers.fox.attention import (
    FoxIntervention,
    _check_num_layers,
    active_intervention,
    image_token_id,
    key_sets,
    use_fox_attention,
)
from icml26.papers.fox.fusion import conflict_gated_fusion, js_divergence
from icml26.papers.fox.head_probe import SCORES
from icml26.papers.fox.saturation import SATURATION_MODES

__all__ = [
    "CACHE_MODES",
    "DecodeOutput",
    "DecodingConfig",
    "DualStreamLogitsProcessor",
    "FoxConfig",
    "default_fox_layers",
    "fox_generate",
    "fox_logits_processor",
    "num_decoder_layers",
]

CACHE_MODES = ("cached", "recompute", "last_row")


def num_decoder_layers(model: nn.Module) -> int:
    """Number of decoder layers of a (vision-)language model's text model."""
    config = getattr(model, "config", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = getattr(text, "num_hidden_layers", None)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"{type(model).__name__} has no text config with num_hidden_layers")
    return n


def default_fox_layers(n_layers: int) -> tuple[int, ...]:
    """Layers ``[⌈L/16⌉, ⌈L/2⌉)``: 2..15 of LLaVA-1.5's 32 [authors' code], {1} of 4, 1..3 of 8."""
    n_layers = check_int(n_layers, "n_layers", low=1)
    return tuple(range(math.ceil(n_layers / 16), max(math.ceil(n_layers / 2), math.ceil(n_layers / 16) + 1)))


@dataclasses.dataclass
class DecodingConfig:
    """How every plug-in decodes (shared by :class:`FoxConfig` and the baselines' configs)."""

    max_new_tokens: int = 64
    """Tokens to generate."""
    do_sample: bool = False
    """Sample (the authors: top-p 0.9, temperature 1) instead of greedy (ours by default: comparable,
    deterministic runs; the issue decodes every arm greedily)."""
    top_p: float = 0.9
    """Nucleus mass when sampling [authors' code]."""
    temperature: float = 1.0
    """Sampling temperature [authors' code]."""
    cache_mode: str = "cached"
    """``"cached"``, ``"recompute"`` or ``"last_row"`` (see the module docstring)."""
    seed: int | None = None
    """Seed of the sampling RNG (forked: the global RNG is left untouched); ``None`` uses the global one."""
    eos_token_id: int | None = None
    """Stop token (default: the model's generation config)."""
    pad_token_id: int | None = None
    """Padding of finished rows (default: the model's generation config, else the EOS token)."""

    def __post_init__(self) -> None:
        self.max_new_tokens = check_int(self.max_new_tokens, "max_new_tokens", low=1)
        if not isinstance(self.do_sample, bool):
            raise TypeError(f"do_sample={self.do_sample!r} must be a bool")
        self.top_p = check_real(self.top_p, "top_p", low=0.0, high=1.0, low_open=True)
        self.temperature = check_real(self.temperature, "temperature", low=0.0, low_open=True)
        if self.cache_mode not in CACHE_MODES:
            raise ValueError(f"cache_mode={self.cache_mode!r} must be one of {CACHE_MODES}")
        for name in ("seed", "eos_token_id", "pad_token_id"):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), name, low=0)


@dataclasses.dataclass
class FoxConfig(DecodingConfig):
    """Fox's settings (defaults: the authors' LLaVA-1.5 values)."""

    layers: tuple[int, ...] | None = None
    """Probed decoder layers; ``None``: [⌈L/16⌉, ⌈L/2⌉) (2..15 of 32). ``()``: no layer, the null
    intervention (stream I = stream O)."""
    rho: float = 0.35
    """Head fraction ρ in (0, 1]: ``k = max(1, min(round(ρH), ⌊H/2⌋))`` (0.40 for InstructBLIP)."""
    score: str = "sys_entropy"
    """Risk score: ``"sys_entropy"`` (``m_sys·H_vis``, LLaVA) or ``"entropy"`` (``H_vis``)."""
    shift: float = 1e4
    """Saturation shift P."""
    saturation: str = "fp16"
    """``"fp16"``, ``"grid"`` or ``"literal"`` (see :func:`~icml26.papers.fox.saturate_logits`)."""
    grid: float | None = None
    """Bin width of ``saturation="grid"`` (default: the fp16 spacing at ``shift``, 8)."""
    tau: float = 0.15
    """JS threshold τ (nats)."""
    alpha: float = 2.0
    """α_JS: the interventional weight when the streams agree (JS < τ)."""
    beta: float = 0.1
    """Plausibility β on the observational logits."""
    mask_before_argmax: bool = True
    """Apply the plausibility mask in greedy decoding too (``False``: the authors' greedy path)."""
    image_token_id: int | None = None
    """Image placeholder id (default: the model config's ``image_token_id`` / ``image_token_index``)."""
    record: bool = False
    """Keep the probe's per-layer statistics (:attr:`DecodeOutput.records`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.layers is not None:
            self.layers = tuple(check_int(v, "layers", low=0) for v in self.layers)
        self.rho = check_real(self.rho, "rho", low=0.0, high=1.0, low_open=True)
        if self.score not in SCORES:
            raise ValueError(f"score={self.score!r} must be one of {SCORES}")
        self.shift = check_real(self.shift, "shift", low=0.0, low_open=True)
        if self.saturation not in SATURATION_MODES:
            raise ValueError(f"saturation={self.saturation!r} must be one of {SATURATION_MODES}")
        if self.grid is not None:
            self.grid = check_real(self.grid, "grid", low=0.0, low_open=True)
        self.tau = check_real(self.tau, "tau", low=0.0)
        self.alpha = check_real(self.alpha, "alpha")
        self.beta = check_real(self.beta, "beta", low=0.0, high=1.0)
        if self.image_token_id is not None:
            check_int(self.image_token_id, "image_token_id", low=0)

    def resolve_layers(self, model: nn.Module) -> tuple[int, ...]:
        """The probed layers for ``model`` (validated against its depth)."""
        n = num_decoder_layers(model)
        layers = default_fox_layers(n) if self.layers is None else self.layers
        _check_num_layers(frozenset(layers), n)
        return tuple(layers)


@dataclasses.dataclass
class DecodeOutput:
    """What the plug-ins return.

    Attributes:
        sequences: ``(B, P + T)`` prompt and generated tokens (finished rows padded).
        prompt_length: ``P``.
        js: ``(B, T)`` JS divergence (nats) between the two streams at each step (dual-stream
            methods; ``None`` for vanilla).
        records: the probe's records (Fox with ``record=True``), else ``None``.
    """

    sequences: torch.Tensor
    prompt_length: int
    js: torch.Tensor | None = None
    records: list | None = None

    @property
    def new_tokens(self) -> torch.Tensor:
        """``(B, T)`` the generated tokens."""
        return self.sequences[:, self.prompt_length:]


# ---------------------------------------------------------------------------
# The second stream
# ---------------------------------------------------------------------------
def _prompt(inputs: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs must be a mapping (the processor's output: input_ids, pixel_values …), "
                        f"got {type(inputs).__name__}")
    ids = inputs.get("input_ids")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point():
        raise ValueError("inputs['input_ids'] must be a (batch, length) integer tensor")
    mask = inputs.get("attention_mask")
    if mask is None:
        mask = torch.ones_like(ids)
    elif mask.shape != ids.shape:
        raise ValueError(f"inputs['attention_mask'] {tuple(mask.shape)} must match input_ids {tuple(ids.shape)}")
    extras = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    return ids, mask, extras


def _rope_holders(model: nn.Module) -> list[nn.Module]:
    """Submodules that keep multimodal RoPE state between calls (Qwen2-VL's ``rope_deltas``)."""
    return [m for m in (model, getattr(model, "model", None)) if m is not None and hasattr(m, "rope_deltas")]


class DualStreamLogitsProcessor:
    """A ``LogitsProcessor`` that runs a second stream of the same model and fuses the two.

    At each call it brings its stream up to date with the tokens generated so far (its own KV
    cache in ``"cached"`` mode; the whole sequence again otherwise), under ``intervention``,
    and returns ``combine(scores, l_i)``. The per-step JS divergence between the streams is
    kept in :attr:`js`.

    Args:
        model: the Hugging Face model (the same object that ``generate`` runs).
        stream_inputs: the second stream's prompt: ``input_ids`` ``(B, P₂)``, optional
            ``attention_mask`` and model inputs (``pixel_values``, ``image_grid_thw``,
            ``mm_token_type_ids`` …). It may differ from the main prompt (PAI: text only).
        combine: ``combine(l_o, l_i) -> z``, both ``(B, V)``.
        prompt_length: the **main** stream's prompt length (tokens after it are generated).
        intervention: the attention intervention of the second stream (``None``: plain).
        cache_mode: ``"cached"``, ``"recompute"`` or ``"last_row"``.
    """

    def __init__(self, model: nn.Module, stream_inputs: Mapping[str, Any],
                 combine: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], *, prompt_length: int,
                 intervention: Any = None, cache_mode: str = "cached") -> None:
        if cache_mode not in CACHE_MODES:
            raise ValueError(f"cache_mode={cache_mode!r} must be one of {CACHE_MODES}")
        if not callable(combine):
            raise TypeError("combine must be callable: combine(l_o, l_i) -> fused logits")
        self.model = model
        self.ids, self.mask, self.extras = _prompt(stream_inputs)
        self.combine = combine
        self.prompt_length = check_int(prompt_length, "prompt_length", low=1)
        self.intervention = intervention
        self.cache_mode = cache_mode
        self.js: list[torch.Tensor] = []
        self._cache: Any = None
        self._seen = 0
        self._rope: dict[int, Any] = {}
        self._cache_kw = cache_kwarg(model)

    @contextlib.contextmanager
    def _own_rope_state(self) -> Iterator[None]:
        holders = _rope_holders(self.model)
        saved = {id(h): h.rope_deltas for h in holders}
        for h in holders:
            h.rope_deltas = self._rope.get(id(h))
        try:
            yield
        finally:
            for h in holders:
                self._rope[id(h)] = h.rope_deltas
                h.rope_deltas = saved[id(h)]

    def _positions(self, ids: torch.Tensor, mask: torch.Tensor, extras: dict[str, Any]) -> torch.Tensor | None:
        prepare = getattr(self.model, "_prepare_position_ids_for_generation", None)
        if prepare is None:
            return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
        kwargs = {"input_ids": ids, "attention_mask": mask}
        kwargs.update({k: v for k, v in extras.items() if k != "pixel_values"})
        if "mm_token_type_ids" in kwargs and kwargs["mm_token_type_ids"].shape[1] < ids.shape[1]:
            grow = ids.shape[1] - kwargs["mm_token_type_ids"].shape[1]
            kwargs["mm_token_type_ids"] = torch.cat(
                [kwargs["mm_token_type_ids"], kwargs["mm_token_type_ids"].new_zeros(ids.shape[0], grow)], 1)
        return prepare(ids, kwargs)

    def stream_logits(self, generated: torch.Tensor) -> torch.Tensor:
        """The second stream's last-position logits ``(B, V)`` after ``generated`` ``(B, T)`` tokens."""
        if generated.shape[0] != self.ids.shape[0]:
            raise ValueError(f"generate runs {generated.shape[0]} rows but the stream prompt has {self.ids.shape[0]}; "
                             "beam search and num_return_sequences > 1 are not supported")
        ids = torch.cat([self.ids, generated.to(self.ids.device)], 1)
        mask = torch.cat([self.mask, self.mask.new_ones(generated.shape)], 1)
        extras = dict(self.extras)
        with torch.no_grad(), active_intervention(self.intervention), self._own_rope_state():
            positions = self._positions(ids, mask, extras)
            if self.cache_mode != "cached":
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False,
                                 **extras)
            elif self._cache is None:
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                                 **extras)
            else:
                todo = ids[:, self.ids.shape[1] + self._seen:]
                kwargs = {self._cache_kw: self._cache}
                out = self.model(input_ids=todo, attention_mask=mask, position_ids=positions[..., -todo.shape[1]:],
                                 use_cache=True, **kwargs)
        if self.cache_mode == "cached":
            self._cache = output_cache(out)
            self._seen = generated.shape[1]
        return out.logits[:, -1, :].float()

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        generated = input_ids[:, self.prompt_length:]
        l_i = self.stream_logits(generated).to(scores.device)
        l_o = scores.float()
        self.js.append(js_divergence(l_o, l_i).detach().cpu())
        return self.combine(l_o, l_i)


# ---------------------------------------------------------------------------
# Running generate with plug-ins
# ---------------------------------------------------------------------------
def _generation_kwargs(model: nn.Module, config: DecodingConfig) -> dict[str, Any]:
    gen = getattr(model, "generation_config", None)
    eos = config.eos_token_id if config.eos_token_id is not None else getattr(gen, "eos_token_id", None)
    pad = config.pad_token_id if config.pad_token_id is not None else getattr(gen, "pad_token_id", None)
    if pad is None:
        pad = eos if not isinstance(eos, list) else eos[0]
    kwargs: dict[str, Any] = {"max_new_tokens": config.max_new_tokens, "do_sample": config.do_sample,
                              "use_cache": config.cache_mode == "cached", "eos_token_id": eos,
                              "pad_token_id": pad, "num_beams": 1}
    if config.do_sample:
        kwargs.update(top_p=config.top_p, temperature=config.temperature, top_k=0)
    else:
        kwargs.update(top_p=None, temperature=None, top_k=None)
    return kwargs


def run_generate(model: nn.Module, inputs: Mapping[str, Any], config: DecodingConfig, *,
                 processor: DualStreamLogitsProcessor | None = None, intervention: Any = None,
                 records: list | None = None) -> DecodeOutput:
    """``model.generate(**inputs)`` with Fox's attention on the decoder, ``intervention`` on the main
    stream and ``processor`` first in the logits-processor list (the shared driver of every plug-in)."""
    transformers = require("transformers", "lm")
    ids, _, _ = _prompt(inputs)
    processors = transformers.LogitsProcessorList([processor] if processor is not None else [])
    kwargs = _generation_kwargs(model, config)
    seeded = contextlib.nullcontext() if config.seed is None else torch.random.fork_rng(
        devices=[ids.device] if ids.device.type == "cuda" else [])
    with seeded, torch.no_grad(), use_fox_attention(model), active_intervention(intervention):
        if config.seed is not None:
            torch.manual_seed(config.seed)
        sequences = model.generate(**inputs, logits_processor=processors, **kwargs)
    js = torch.stack(processor.js, 1) if processor is not None and processor.js else None
    return DecodeOutput(sequences=sequences, prompt_length=int(ids.shape[1]), js=js, records=records)


def fox_logits_processor(model: nn.Module, inputs: Mapping[str, Any], config: FoxConfig | None = None
                         ) -> DualStreamLogitsProcessor:
    """Fox's :class:`DualStreamLogitsProcessor` for ``inputs``, to pass to your own ``generate`` call.

    Run that call inside :func:`~icml26.papers.fox.use_fox_attention` (the interventional stream
    needs the Fox attention function on the decoder); :func:`fox_generate` does both.
    """
    config = FoxConfig() if config is None else config
    if not isinstance(config, FoxConfig):
        raise TypeError(f"config must be a FoxConfig, got {type(config).__name__}")
    ids, mask, _ = _prompt(inputs)
    token = config.image_token_id if config.image_token_id is not None else image_token_id(model)
    keys = key_sets(ids, token, mask)
    intervention = FoxIntervention(keys=keys, layers=frozenset(config.resolve_layers(model)), rho=config.rho,
                                   score=config.score, shift=config.shift, saturation=config.saturation,
                                   grid=config.grid, rows="last" if config.cache_mode == "last_row" else "from_prompt",
                                   record=config.record)
    mask_fused = config.mask_before_argmax or config.do_sample

    def combine(l_o: torch.Tensor, l_i: torch.Tensor) -> torch.Tensor:
        return conflict_gated_fusion(l_o, l_i, tau=config.tau, alpha=config.alpha, beta=config.beta,
                                     mask=mask_fused)

    return DualStreamLogitsProcessor(model, inputs, combine, prompt_length=int(ids.shape[1]),
                                     intervention=intervention, cache_mode=config.cache_mode)


def fox_generate(model: nn.Module, inputs: Mapping[str, Any], config: FoxConfig | None = None) -> DecodeOutput:
    """Generate with Fox: vanilla stream O, intervened stream I, conflict-gated fusion.

    Args:
        model: a Hugging Face vision-language model whose decoder uses ``AttentionInterface``
            (``LlavaForConditionalGeneration``, ``Qwen2VLForConditionalGeneration`` …), in eval mode.
        inputs: the processor's output for a batch of prompts: ``input_ids`` ``(B, P)`` with the image
            placeholders expanded, ``attention_mask``, ``pixel_values`` and whatever else the
            model takes (``image_sizes``, ``image_grid_thw``, ``mm_token_type_ids`` for Qwen2-VL).
        config: :class:`FoxConfig` (default: the authors' LLaVA-1.5 settings, greedy).

    Returns:
        :class:`DecodeOutput` (sequences, per-step JS, probe records when ``config.record``).

    Raises:
        ValueError: a prompt without image tokens, ρ ∉ (0, 1], a layer out of range.
    """
    config = FoxConfig() if config is None else config
    processor = fox_logits_processor(model, inputs, config)
    records = processor.intervention.records if config.record else None
    return run_generate(model, inputs, config, processor=processor, records=records)
