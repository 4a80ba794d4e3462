"""The baselines Fox is compared with, as the same plug-ins: ``generate(model, inputs, config)``.

* :func:`vanilla_generate`: one stream, no intervention (greedy by default, like every plug-in).
* :func:`vcd_generate` (VCD, ``DAMO-NLP-SG/VCD``): the second stream sees the image after forward
  diffusion to step t = 500 (T = 1000, ``β_t = sigmoid(linspace(−6, 6))·(5e-3 − 1e-5) + 1e-5``,
  ``x_t = √ᾱ_t·x₀ + √(1 − ᾱ_t)·ε``); ``z = (1+α)l − α·l_cd``, α = 1, β = 0.1.
* :func:`sid_generate` (SID, ``huofushuo/SID``): the second stream keeps only the ``keep``
  image tokens least attended by the last query (head mean) in layer ``agg_layer − 1``, masking the
  others from layer ``agg_layer`` on, recomputed every step; ``z = 2l − l_cd``, β = 0.1.
* :func:`pai_generate` (PAI, ``LALBJ/PAI``): the main stream amplifies image attention logits
  ``s + α|s|`` (α = 0.2, layers [L/16, L)); a text-only second stream gives classifier-free
  guidance ``γ(log p − log p_u) + log p_u`` (γ = 1.1), β = 0.1.

Defaults are the authors' LLaVA-1.5 settings; the layer and token counts scale with the model.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import torch
from torch import nn

from icml26.common.argcheck import as_tensor, check_int, check_real, require_finite
from icml26.papers.fox.attention import (
    PAIIntervention,
    SIDIntervention,
    _check_num_layers,
    image_token_id,
    key_sets,
)
from icml26.papers.fox.decoding import (
    DecodeOutput,
    DecodingConfig,
    DualStreamLogitsProcessor,
    _prompt,
    num_decoder_layers,
    run_generate,
)
from icml26.papers.fox.fusion import cfg_combine, vcd_combine

__all__ = [
    "PAIConfig",
    "SIDConfig",
    "VCDConfig",
    "diffusion_alphas_cumprod",
    "diffusion_noise",
    "pai_generate",
    "sid_generate",
    "text_only_inputs",
    "vanilla_generate",
    "vcd_generate",
]


# ---------------------------------------------------------------------------
# vanilla
# ---------------------------------------------------------------------------
def vanilla_generate(model: nn.Module, inputs: Mapping[str, Any], config: DecodingConfig | None = None) -> DecodeOutput:
    """Plain decoding, through the same driver (eager attention on the decoder, no intervention)."""
    config = DecodingConfig() if config is None else config
    if not isinstance(config, DecodingConfig):
        raise TypeError(f"config must be a DecodingConfig, got {type(config).__name__}")
    return run_generate(model, inputs, config)


# ---------------------------------------------------------------------------
# VCD
# ---------------------------------------------------------------------------
def diffusion_alphas_cumprod(steps: int = 1000) -> torch.Tensor:
    """``ᾱ_t = Π_{s≤t}(1 − β_s)``, ``β = sigmoid(linspace(−6, 6, T))·(5e-3 − 1e-5) + 1e-5`` (VCD), float64."""
    steps = check_int(steps, "steps", low=1)
    betas = torch.sigmoid(torch.linspace(-6, 6, steps, dtype=torch.float64)) * (5e-3 - 1e-5) + 1e-5
    return torch.cumprod(1.0 - betas, 0)


def diffusion_noise(pixel_values: torch.Tensor, t: int = 500, *, steps: int = 1000,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """VCD's distorted image: ``x_t = √ᾱ_t·x₀ + √(1 − ᾱ_t)·ε``, ``ε ~ N(0, I)`` (0-based ``t``, as VCD indexes).

    Args:
        pixel_values: the processed image tensor (any shape: LLaVA's ``(B, 3, H, W)`` or Qwen2-VL's
            flattened patches); the noise is elementwise.
        t: diffusion step in ``[0, steps)`` (500).
        steps: T (1000).
        generator: a CPU ``torch.Generator`` for the noise (the output follows the input's device).
    """
    x = as_tensor(pixel_values, "pixel_values")
    require_finite(x, "pixel_values", hint="pass the processed image of the prompt")
    steps = check_int(steps, "steps", low=1)
    t = check_int(t, "t", low=0, high=steps - 1)
    a = float(diffusion_alphas_cumprod(steps)[t])
    eps = torch.randn(x.shape, generator=generator, dtype=torch.float32).to(device=x.device, dtype=x.dtype)
    # x_t = sqrt(ᾱ_t) x_0 + sqrt(1 − ᾱ_t) ε
    return math.sqrt(a) * x + math.sqrt(1.0 - a) * eps


@dataclasses.dataclass
class VCDConfig(DecodingConfig):
    """VCD's settings (the authors' scripts)."""

    noise_step: int = 500
    """Diffusion step t of the distorted image (of 1000)."""
    alpha: float = 1.0
    """Contrast strength α (the scripts: 1; the function default: 0.5)."""
    beta: float = 0.1
    """Plausibility β."""
    noise_seed: int = 0
    """Seed of the diffusion noise."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.noise_step = check_int(self.noise_step, "noise_step", low=0, high=999)
        self.alpha = check_real(self.alpha, "alpha", low=0.0)
        self.beta = check_real(self.beta, "beta", low=0.0, high=1.0)
        self.noise_seed = check_int(self.noise_seed, "noise_seed", low=0)


def vcd_generate(model: nn.Module, inputs: Mapping[str, Any], config: VCDConfig | None = None) -> DecodeOutput:
    """Visual contrastive decoding against the diffusion-noised image."""
    config = VCDConfig() if config is None else config
    if not isinstance(config, VCDConfig):
        raise TypeError(f"config must be a VCDConfig, got {type(config).__name__}")
    ids, _, extras = _prompt(inputs)
    if "pixel_values" not in extras:
        raise ValueError("inputs has no pixel_values; VCD contrasts against a noised copy of the image")
    generator = torch.Generator().manual_seed(config.noise_seed)
    noised = dict(inputs, pixel_values=diffusion_noise(extras["pixel_values"], config.noise_step, generator=generator))

    def combine(l_o: torch.Tensor, l_cd: torch.Tensor) -> torch.Tensor:
        return vcd_combine(l_o, l_cd, alpha=config.alpha, beta=config.beta)

    processor = DualStreamLogitsProcessor(model, noised, combine, prompt_length=int(ids.shape[1]),
                                          cache_mode=config.cache_mode)
    return run_generate(model, inputs, config, processor=processor)


# ---------------------------------------------------------------------------
# SID
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class SIDConfig(DecodingConfig):
    """SID's settings (LLaVA-1.5: AGG layer 2, keep 100 of 576 image tokens, α = 1, β = 0.1)."""

    agg_layer: int | None = None
    """First pruned layer; ``None``: ``max(1, ⌈L/16⌉)`` (2 of 32)."""
    keep: int | None = None
    """Image tokens kept; ``None``: ``max(1, round(keep_fraction·|V|))``."""
    keep_fraction: float = 100 / 576
    """Kept fraction when ``keep`` is ``None`` (100/576)."""
    alpha: float = 1.0
    """Contrast strength (``z = 2l − l_cd``)."""
    beta: float = 0.1
    """Plausibility β."""
    image_token_id: int | None = None
    """Image placeholder id (default: from the model config)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.agg_layer is not None:
            self.agg_layer = check_int(self.agg_layer, "agg_layer", low=1)
        if self.keep is not None:
            self.keep = check_int(self.keep, "keep", low=1)
        self.keep_fraction = check_real(self.keep_fraction, "keep_fraction", low=0.0, high=1.0, low_open=True)
        self.alpha = check_real(self.alpha, "alpha", low=0.0)
        self.beta = check_real(self.beta, "beta", low=0.0, high=1.0)


def sid_generate(model: nn.Module, inputs: Mapping[str, Any], config: SIDConfig | None = None) -> DecodeOutput:
    """Self-introspective decoding: contrast against the stream that sees only the least-attended image tokens."""
    config = SIDConfig() if config is None else config
    if not isinstance(config, SIDConfig):
        raise TypeError(f"config must be a SIDConfig, got {type(config).__name__}")
    ids, mask, _ = _prompt(inputs)
    token = config.image_token_id if config.image_token_id is not None else image_token_id(model)
    keys = key_sets(ids, token, mask)
    n_layers = num_decoder_layers(model)
    agg = config.agg_layer if config.agg_layer is not None else max(1, math.ceil(n_layers / 16))
    if agg >= n_layers:
        raise ValueError(f"agg_layer={agg} is out of range for a decoder with {n_layers} layers (1..{n_layers - 1})")
    n_visual = int(keys.visual.sum(1).min())
    keep = config.keep if config.keep is not None else max(1, round(config.keep_fraction * n_visual))
    intervention = SIDIntervention(keys=keys, agg_layer=agg, keep=keep)

    def combine(l_o: torch.Tensor, l_cd: torch.Tensor) -> torch.Tensor:
        return vcd_combine(l_o, l_cd, alpha=config.alpha, beta=config.beta)

    processor = DualStreamLogitsProcessor(model, inputs, combine, prompt_length=int(ids.shape[1]),
                                          intervention=intervention, cache_mode=config.cache_mode)
    return run_generate(model, inputs, config, processor=processor)


# ---------------------------------------------------------------------------
# PAI
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class PAIConfig(DecodingConfig):
    """PAI's settings (LLaVA-1.5: layers [2, 32), α = 0.2, γ = 1.1, β = 0.1)."""

    layers: tuple[int, ...] | None = None
    """Amplified layers; ``None``: [⌈L/16⌉, L)."""
    alpha: float = 0.2
    """Attention amplification α (image logits ``s + α|s|``)."""
    gamma: float = 1.1
    """CFG strength γ against the text-only stream."""
    beta: float = 0.1
    """Plausibility β."""
    image_token_id: int | None = None
    """Image placeholder id (default: from the model config)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.layers is not None:
            self.layers = tuple(check_int(v, "layers", low=0) for v in self.layers)
        self.alpha = check_real(self.alpha, "alpha", low=0.0)
        self.gamma = check_real(self.gamma, "gamma")
        self.beta = check_real(self.beta, "beta", low=0.0, high=1.0)


def text_only_inputs(model: nn.Module, inputs: Mapping[str, Any], image_token: int | None = None) -> dict[str, Any]:
    """The prompt without its image: image placeholders (and Qwen2-VL's vision start/end markers)
    removed per row, rows left-padded to a common length; no pixel inputs."""
    ids, mask, _ = _prompt(inputs)
    token = check_int(image_token, "image_token", low=0) if image_token is not None else image_token_id(model)
    drop = {token}
    for name in ("vision_start_token_id", "vision_end_token_id"):
        value = getattr(model.config, name, None)
        if isinstance(value, int):
            drop.add(value)
    keep = mask.bool() & ~torch.isin(ids, torch.tensor(sorted(drop), device=ids.device))
    rows = [ids[b][keep[b]] for b in range(ids.shape[0])]
    width = max(int(r.numel()) for r in rows)
    if width == 0:
        raise ValueError("the prompt has no text besides the image; PAI's unconditional stream needs some text")
    pad = getattr(model.generation_config, "pad_token_id", None) or 0
    out_ids = ids.new_full((ids.shape[0], width), int(pad if not isinstance(pad, list) else pad[0]))
    out_mask = mask.new_zeros((ids.shape[0], width))
    for b, r in enumerate(rows):
        out_ids[b, width - r.numel():] = r
        out_mask[b, width - r.numel():] = 1
    return {"input_ids": out_ids, "attention_mask": out_mask}


def pai_generate(model: nn.Module, inputs: Mapping[str, Any], config: PAIConfig | None = None) -> DecodeOutput:
    """Pay attention to the image: amplified image attention + CFG against the text-only prompt."""
    config = PAIConfig() if config is None else config
    if not isinstance(config, PAIConfig):
        raise TypeError(f"config must be a PAIConfig, got {type(config).__name__}")
    ids, mask, _ = _prompt(inputs)
    token = config.image_token_id if config.image_token_id is not None else image_token_id(model)
    keys = key_sets(ids, token, mask)
    n_layers = num_decoder_layers(model)
    layers = tuple(range(math.ceil(n_layers / 16), n_layers)) if config.layers is None else config.layers
    _check_num_layers(frozenset(layers), n_layers)
    amplify = PAIIntervention(keys=keys, layers=frozenset(layers), alpha=config.alpha)

    def combine(l_o: torch.Tensor, l_u: torch.Tensor) -> torch.Tensor:
        return cfg_combine(l_o, l_u, gamma=config.gamma, beta=config.beta)

    processor = DualStreamLogitsProcessor(model, text_only_inputs(model, inputs, token), combine,
                                          prompt_length=int(ids.shape[1]), cache_mode=config.cache_mode)
    return run_generate(model, inputs, config, processor=processor, intervention=amplify)
