"""Reading a frozen decoder: pooled post-attention residuals and per-head residual writes.

For an input ``x`` (tokens ``t`` with attention mask ``m_t``) and layer ``ℓ``:

* the post-attention residual ``r_ℓ(x) = mean_t (h_pre + attn_out)_t``: the input of
  ``post_attention_layernorm``, read by a forward pre-hook on it (brief §1.3.1);
* head ``h``'s write ``w̃_{ℓ,h}(x) = W_O[:, h-block] · mean_t z_{h,t}``, where ``z_{h,t}`` is
  the head's output before ``o_proj`` (read by a forward pre-hook on ``o_proj``); mean-pooling
  over tokens commutes with the linear map, so the write of the pooled output is the pooled
  write (brief §1.3.3, pooling inferred).

Means run over the tokens with ``attention_mask == 1``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, require_finite
from icml26.common.hf import decoder_blocks
from icml26.papers.subspace_path.heads import attention_layout, attention_modules

__all__ = ["Activations", "Batch", "as_batch", "collect_activations", "head_writes"]


@dataclasses.dataclass
class Batch:
    """Token ids and their attention mask, right- or left-padded."""

    input_ids: Tensor
    """``(N, T)`` integer ids."""
    attention_mask: Tensor
    """``(N, T)`` with 1 on real tokens and 0 on padding; every row has at least one 1."""

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, index: Tensor | Sequence[int]) -> "Batch":
        """The rows ``index``."""
        index = torch.as_tensor(index, dtype=torch.long)
        return Batch(self.input_ids[index], self.attention_mask[index])


def as_batch(data: Any, *, name: str = "data", tokenizer=None, max_length: int = 512) -> Batch:
    """``data`` as a :class:`Batch`.

    Accepts a ``(N, T)`` or ``(T,)`` integer tensor (every token real), a mapping with
    ``input_ids`` (and optionally ``attention_mask``, e.g. a tokenizer's ``BatchEncoding``),
    a :class:`Batch`, or, with a ``tokenizer``, a string or a list of strings (padded,
    truncated to ``max_length`` tokens).
    """
    max_length = check_int(max_length, "max_length", low=1)
    if isinstance(data, Batch):
        ids, mask = data.input_ids, data.attention_mask
    elif isinstance(data, str) or (isinstance(data, (list, tuple)) and data and all(isinstance(s, str) for s in data)):
        if tokenizer is None:
            raise TypeError(f"{name} is text; pass tokenizer= to the pruner (or give token ids)")
        texts = [data] if isinstance(data, str) else list(data)
        if any(not s.strip() for s in texts):
            raise ValueError(f"{name} contains an empty string")
        if getattr(tokenizer, "pad_token_id", None) is None:
            tokenizer.pad_token = tokenizer.eos_token
        enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
        ids, mask = enc["input_ids"], enc["attention_mask"]
    elif isinstance(data, Mapping):
        if "input_ids" not in data:
            raise ValueError(f"{name} is a mapping without 'input_ids'")
        ids = torch.as_tensor(data["input_ids"])
        mask = data.get("attention_mask")
        mask = torch.ones_like(ids) if mask is None else torch.as_tensor(mask)
    elif isinstance(data, torch.Tensor):
        ids = data
        mask = torch.ones_like(ids)
    else:
        raise TypeError(f"{name} must be token ids (a tensor), a mapping with input_ids, or text with a tokenizer; "
                        f"got {type(data).__name__}")
    if ids.dim() == 1:
        ids, mask = ids.unsqueeze(0), mask.unsqueeze(0)
    if ids.dim() != 2 or ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"{name}: input_ids must be an integer tensor of shape (N, T), got {tuple(ids.shape)} "
                         f"{ids.dtype}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)})")
    if mask.shape != ids.shape:
        raise ValueError(f"{name}: attention_mask has shape {tuple(mask.shape)}, input_ids {tuple(ids.shape)}")
    if not bool((mask.sum(dim=1) > 0).all()):
        raise ValueError(f"{name}: a row has no real token (attention_mask all zero)")
    return Batch(ids.long(), mask.long())


@dataclasses.dataclass
class Activations:
    """Pooled activations of ``N`` inputs."""

    residuals: Tensor
    """``(N, L, d)`` mean-pooled post-attention residuals ``r_ℓ(x)``."""
    head_outputs: Tensor
    """``(N, L, H, d_h)`` mean-pooled per-head outputs before ``o_proj``."""


def _pool(x: Tensor, mask: Tensor) -> Tensor:
    """Masked mean over the token axis: ``(B, T, D), (B, T) -> (B, D)``."""
    m = mask.to(device=x.device, dtype=x.dtype).unsqueeze(-1)
    return (x * m).sum(dim=1) / m.sum(dim=1)


@torch.no_grad()
def collect_activations(model: nn.Module, data: Batch, *, batch_size: int = 32) -> Activations:
    """One forward pass per chunk of ``data`` with hooks; returns the pooled activations (float32, CPU).

    Args:
        model: a Llama-style Hugging Face decoder (frozen; it is not changed).
        data: the inputs (a :class:`Batch`; see :func:`as_batch`).
        batch_size: inputs per forward pass.
    """
    batch_size = check_int(batch_size, "batch_size", low=1)
    if not isinstance(data, Batch):
        raise TypeError(f"data must be a Batch (see as_batch), got {type(data).__name__}")
    layouts = attention_layout(model)
    if len({lay.n_heads for lay in layouts}) != 1:
        raise ValueError("the model's layers have different head counts (pruned); collect activations on the dense model")
    device = next(model.parameters()).device
    blocks = decoder_blocks(model)
    norms = []
    for i, block in enumerate(blocks):
        norm = getattr(block, "post_attention_layernorm", None)
        if norm is None:
            raise ValueError(f"block {i} has no post_attention_layernorm to read the post-attention residual from")
        norms.append(norm)
    store: dict[str, list] = {"res": [None] * len(blocks), "head": [None] * len(blocks)}
    mask_now: list[Tensor] = []

    def res_hook(layer):
        def hook(_module, args):
            store["res"][layer] = _pool(args[0].float(), mask_now[0])
        return hook

    def head_hook(layer, lay):
        def hook(_module, args):
            x = args[0].float()
            pooled = _pool(x, mask_now[0])
            store["head"][layer] = pooled.view(pooled.shape[0], lay.n_heads, lay.head_dim)
        return hook

    handles = [norm.register_forward_pre_hook(res_hook(i)) for i, norm in enumerate(norms)]
    handles += [attn.o_proj.register_forward_pre_hook(head_hook(i, lay))
                for i, (attn, lay) in enumerate(zip(attention_modules(model), layouts))]
    was_training = model.training
    model.eval()
    residuals, heads = [], []
    try:
        for start in range(0, len(data), batch_size):
            chunk = data.select(range(start, min(start + batch_size, len(data))))
            mask_now[:] = [chunk.attention_mask.to(device)]
            model(input_ids=chunk.input_ids.to(device), attention_mask=chunk.attention_mask.to(device))
            residuals.append(torch.stack(store["res"], dim=1).cpu())
            heads.append(torch.stack(store["head"], dim=1).cpu())
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return Activations(residuals=torch.cat(residuals), head_outputs=torch.cat(heads))


def head_writes(model: nn.Module, head_outputs: Tensor, *, layer: int | None = None) -> Tensor:
    """Residual-stream writes ``w̃_{ℓ,h} = W_O[:, h-block] z_h``.

    Args:
        model: the model the outputs came from.
        head_outputs: ``(N, L, H, d_h)`` pooled head outputs, or ``(N, H, d_h)`` of one ``layer``.
        layer: the layer of a 3-d ``head_outputs``.

    Returns:
        ``(N, L, H, d)``, or ``(N, H, d)`` for one layer. NaN or inf in ``head_outputs`` is refused.
    """
    layouts = attention_layout(model)
    modules = attention_modules(model)
    if not isinstance(head_outputs, torch.Tensor):
        raise TypeError(f"head_outputs must be a tensor (N, L, H, d_h), got {type(head_outputs).__name__}")
    require_finite(head_outputs, "head_outputs", hint="check the model's activations")
    if layer is not None:
        layer = check_int(layer, "layer", low=0, high=len(layouts) - 1)
        if head_outputs.dim() != 3:
            raise ValueError(f"with layer=, head_outputs must be (N, H, d_h), got {tuple(head_outputs.shape)}")
        lay = layouts[layer]
        w_o = modules[layer].o_proj.weight.detach().float().cpu()  # (d, H·d_h)
        blocks = w_o.view(w_o.shape[0], lay.n_heads, lay.head_dim)  # (d, H, d_h)
        # w̃_{ℓ,h}(x) = W_O[:, h-block] · z_h(x)
        return torch.einsum("dhk,nhk->nhd", blocks, head_outputs.to(torch.float32).cpu())
    if head_outputs.dim() != 4 or head_outputs.shape[1] != len(layouts):
        raise ValueError(f"head_outputs has shape {tuple(head_outputs.shape)}; expected (N, L={len(layouts)}, H, d_h)")
    return torch.stack([head_writes(model, head_outputs[:, i], layer=i) for i in range(len(layouts))], dim=1)
