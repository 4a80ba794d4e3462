"""Tiny vision-language models of the real Hugging Face classes, built from configs (no download).

* :func:`build_tiny_llava`: ``LlavaForConditionalGeneration`` with a CLIP vision tower
  (64-d × 2 layers, patch 8 on 32×32 images → 16 image tokens) and a Llama decoder
  (128-d, 4 layers, 8 heads): the reproduction's model, trained on ShapeScenes.
* :func:`build_tiny_qwen2vl`: ``Qwen2VLForConditionalGeneration`` of the same size (for the tests:
  the plumbing must work on M-RoPE models that need ``mm_token_type_ids``).
* :func:`scene_inputs`: ShapeScenes prompts as model inputs (image placeholders expanded).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from icml26.common.argcheck import check_int, check_real
from icml26.common.extras import require
from icml26.papers.fox.scenes import PREFIX, ShapeVocab

__all__ = [
    "IMAGE_MEAN",
    "IMAGE_STD",
    "TinyVLMConfig",
    "build_tiny_llava",
    "build_tiny_qwen2vl",
    "caption_prompt",
    "pixel_values",
    "question_prompt",
    "scene_inputs",
]

IMAGE_MEAN, IMAGE_STD = 0.5, 0.25


@dataclasses.dataclass(frozen=True)
class TinyVLMConfig:
    """Sizes of the tiny LLaVA (as specified: CLIP 64-d × 2, patch 8; Llama 128-d, 4 layers, 8 heads)."""

    vision_hidden: int = 64
    """CLIP width."""
    vision_layers: int = 2
    """CLIP layers."""
    vision_heads: int = 4
    """CLIP heads."""
    image_size: int = 32
    """Image side (pixels)."""
    patch_size: int = 8
    """Patch side: (32/8)² = 16 image tokens."""
    hidden: int = 128
    """Decoder width."""
    layers: int = 4
    """Decoder layers."""
    heads: int = 8
    """Decoder attention heads."""
    kv_heads: int = 8
    """Decoder key/value heads."""
    intermediate: int = 256
    """Decoder MLP width."""
    text_layers: tuple[int, ...] | None = None
    """Decoder layers in which a text token after the image may attend to earlier text (in the others it
    sees the prompt up to the end of the image block and itself: :func:`~.attention.route_text_attention`).
    ``None``: every layer (a plain Llama decoder)."""
    logit_cap: float | None = None
    """Soft cap ``c`` of the scaled attention logits in ``cap_layers`` (``c·tanh(s/c)``:
    :func:`~.attention.cap_attention_logits`). ``None``: uncapped (a plain Llama decoder)."""
    cap_layers: tuple[int, ...] | None = None
    """Decoder layers whose logits ``logit_cap`` caps; ``None``: every layer. Needs ``logit_cap``."""

    _LAYER_LISTS = ("text_layers", "cap_layers")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name not in (*self._LAYER_LISTS, "logit_cap"):
                check_int(getattr(self, f.name), f.name, low=1)
        for name in self._LAYER_LISTS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, (str, bytes)):
                raise TypeError(f"{name} must be a sequence of layer indices or None")
            object.__setattr__(self, name, tuple(check_int(v, name, low=0) for v in value))
            bad = [v for v in getattr(self, name) if v >= self.layers]
            if bad:
                raise ValueError(f"{name} {bad} are out of range for {self.layers} decoder layers")
        if self.logit_cap is not None:
            object.__setattr__(self, "logit_cap", check_real(self.logit_cap, "logit_cap", low=0.0, low_open=True))
        elif self.cap_layers is not None:
            raise ValueError(f"cap_layers={self.cap_layers} needs logit_cap (the cap); set logit_cap or leave "
                             "cap_layers None")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size={self.image_size} must be a multiple of patch_size={self.patch_size}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError("hidden must be divisible by heads, and heads by kv_heads")

    @property
    def n_image_tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def build_tiny_llava(config: TinyVLMConfig = TinyVLMConfig(), vocab: ShapeVocab | None = None, *, seed: int = 0):
    """A randomly initialised ``LlavaForConditionalGeneration`` (eval mode, float32, CPU)."""
    transformers = require("transformers", "lm")
    vocab = vocab or ShapeVocab()
    vision = transformers.CLIPVisionConfig(
        hidden_size=config.vision_hidden, intermediate_size=2 * config.vision_hidden,
        num_hidden_layers=config.vision_layers, num_attention_heads=config.vision_heads,
        image_size=config.image_size, patch_size=config.patch_size)
    text = transformers.LlamaConfig(
        hidden_size=config.hidden, intermediate_size=config.intermediate, num_hidden_layers=config.layers,
        num_attention_heads=config.heads, num_key_value_heads=config.kv_heads, vocab_size=len(vocab),
        max_position_embeddings=128, pad_token_id=vocab[vocab.PAD], bos_token_id=vocab[vocab.BOS],
        eos_token_id=vocab[vocab.EOS], tie_word_embeddings=False)
    llava = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_id=vocab[vocab.IMAGE],
                                     vision_feature_layer=-1, vision_feature_select_strategy="default",
                                     projector_hidden_act="gelu")
    torch.manual_seed(seed)
    model = transformers.LlavaForConditionalGeneration(llava)
    model.generation_config.pad_token_id = vocab[vocab.PAD]
    model.generation_config.eos_token_id = vocab[vocab.EOS]
    model.generation_config.bos_token_id = vocab[vocab.BOS]
    if config.text_layers is not None:
        from icml26.papers.fox.attention import route_text_attention

        route_text_attention(model, text_start=len(PREFIX) + config.n_image_tokens, text_layers=config.text_layers)
    if config.logit_cap is not None:
        from icml26.papers.fox.attention import cap_attention_logits

        cap_attention_logits(model, cap=config.logit_cap, layers=config.cap_layers)
    return model.eval()


def build_tiny_qwen2vl(vocab_size: int = 64, *, seed: int = 0, layers: int = 4):
    """A randomly initialised ``Qwen2VLForConditionalGeneration`` (vision 64-d × 2, patch 8, merge 2;
    text 128-d, ``layers`` layers, 8 heads / 4 kv-heads). Token ids: 0 pad, 1 BOS, 2 EOS, 3 image,
    4 video, 5 vision start, 6 vision end."""
    transformers = require("transformers", "lm")
    config = transformers.Qwen2VLConfig(
        vision_config=dict(depth=2, embed_dim=64, hidden_size=128, num_heads=4, patch_size=8,
                           spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
        text_config=dict(vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=layers,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256,
                         rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4},
                         bos_token_id=1, eos_token_id=2, pad_token_id=0),
        image_token_id=3, video_token_id=4, vision_start_token_id=5, vision_end_token_id=6)
    torch.manual_seed(seed)
    model = transformers.Qwen2VLForConditionalGeneration(config)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 2
    return model.eval()


def pixel_values(images: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Images ``(N, 3, H, W)`` in [0, 1] -> normalised float32 pixel values ``(x − 0.5)/0.25``."""
    x = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    if x.dim() != 4 or x.shape[1] != 3:
        raise ValueError(f"images must be (N, 3, H, W), got {tuple(x.shape)}")
    return (x - IMAGE_MEAN) / IMAGE_STD


def caption_prompt(n_image_tokens: int = 16) -> list[str]:
    """``<s> look at : <image>×n describe :``"""
    return [*PREFIX, *[ShapeVocab.IMAGE] * n_image_tokens, "describe", ":"]


def question_prompt(shape: str, n_image_tokens: int = 16) -> list[str]:
    """``<s> look at : <image>×n is there a <shape> ?``"""
    return [*PREFIX, *[ShapeVocab.IMAGE] * n_image_tokens, "is", "there", "a", shape, "?"]


def scene_inputs(prompts: Sequence[Sequence[str]], images: np.ndarray | torch.Tensor, vocab: ShapeVocab | None = None,
                 device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Model inputs for prompts of one length: ``input_ids``, ``attention_mask``, ``pixel_values``."""
    vocab = vocab or ShapeVocab()
    lengths = {len(p) for p in prompts}
    if len(lengths) != 1:
        raise ValueError(f"prompts must have one length (got {sorted(lengths)}); batch them by length")
    ids = torch.tensor([vocab.encode(p) for p in prompts], dtype=torch.long, device=device)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": pixel_values(images).to(device)}
