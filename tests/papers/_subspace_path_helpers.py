"""Shared helpers of the SubspacePath tests: tiny Llama and Qwen2 models, token ids, a zeroed copy."""

from __future__ import annotations

import pytest
import torch


transformers = pytest.importorskip("transformers")


def _llama(heads: int = 8, kv: int | None = None, layers: int = 2, seed: int = 0):
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=layers,
                                   num_attention_heads=heads, num_key_value_heads=kv or heads,
                                   max_position_embeddings=64)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval()


def _qwen(cls_name: str, seed: int = 0):
    cls = getattr(transformers, cls_name)
    cfg = cls(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=8,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=64)
    torch.manual_seed(seed)
    return getattr(transformers, cls_name.replace("Config", "ForCausalLM"))(cfg).eval()


def _ids(n=3, t=10, seed=0):
    return torch.randint(0, 64, (n, t), generator=torch.Generator().manual_seed(seed))
