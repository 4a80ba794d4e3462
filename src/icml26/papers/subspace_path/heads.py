"""Attention-head removal on Hugging Face decoders (Llama, Qwen2, Qwen3, Mistral …).

Three ways to remove heads, which agree to float precision (tests):

* :func:`mask_heads` (a context manager): a forward pre-hook on every ``o_proj`` multiplies
  the columns of the removed heads by zero, so head ``h`` writes nothing into the residual
  stream. This is head removal; nothing else changes;
* zeroing the same ``o_proj`` weight columns (what the pre-hook is equivalent to);
* :func:`prune_heads`: structural removal. It slices ``q_proj`` rows and ``o_proj`` columns
  of the removed heads; under grouped-query attention it keeps the ``k/v_proj`` rows of the
  groups that still serve a query head. When every surviving group keeps the same number
  ``m`` of heads, ``num_key_value_groups`` becomes ``m``; otherwise every kept head gets its
  own copy of its group's ``k/v`` rows and ``num_key_value_groups = 1`` (exact, because a
  group's keys and values do not depend on which query head reads them).

:func:`mask_output_blocks` is the authors' masking, kept to document its defect: it zeroes
blocks of ``o_proj``'s *output* (residual-stream channels ``h·d_h … (h+1)·d_h``), which is
not head removal because ``o_proj`` mixes heads (brief §1.5).

:func:`scale_heads` is the general form of the pre-hook: a real-valued gate per head (or per
example and head), which the gradient-importance baseline differentiates.

A *keep mask* is a boolean ``(L, H)`` tensor (``True`` = keep) or, for a model whose
layers have different head counts (after :func:`prune_heads`), a list of ``L`` boolean
vectors.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator, Sequence

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, require_finite
from icml26.common.hf import decoder_blocks

__all__ = [
    "AttentionLayout",
    "attention_layout",
    "attention_modules",
    "count_heads",
    "mask_heads",
    "mask_output_blocks",
    "prune_heads",
    "scale_heads",
]


@dataclasses.dataclass(frozen=True)
class AttentionLayout:
    """Head counts of one attention module."""

    n_heads: int
    """Query heads ``H_ℓ``."""
    n_kv_heads: int
    """Key/value heads (``H_ℓ`` without grouped-query attention)."""
    head_dim: int
    """Width ``d_h`` of one head."""

    def __post_init__(self) -> None:
        for name in ("n_heads", "n_kv_heads", "head_dim"):
            check_int(getattr(self, name), name, low=1)

    @property
    def group_size(self) -> int:
        """Query heads per key/value head (``num_key_value_groups``), when uniform."""
        return self.n_heads // self.n_kv_heads


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The ``self_attn`` module of every decoder block (with ``q/k/v/o_proj`` linears)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module (a Hugging Face causal LM), got {type(model).__name__}")
    out = []
    for i, block in enumerate(decoder_blocks(model)):
        attn = getattr(block, "self_attn", None)
        if attn is None or not all(isinstance(getattr(attn, n, None), nn.Module)
                                   for n in ("q_proj", "k_proj", "v_proj", "o_proj")):
            raise ValueError(f"block {i} of {type(model).__name__} has no self_attn with q_proj/k_proj/v_proj/o_proj; "
                             "head removal supports Llama-style decoders (Llama, Qwen2, Qwen3, Mistral)")
        out.append(attn)
    return out


def _head_dim(attn: nn.Module) -> int:
    head_dim = getattr(attn, "head_dim", None)
    if not isinstance(head_dim, int) or head_dim < 1:
        raise ValueError(f"{type(attn).__name__} has no positive integer head_dim attribute")
    return head_dim


def _out_features(linear: nn.Module) -> int:
    return linear.out_features if isinstance(linear, nn.Linear) else int(linear.weight.shape[0])


def attention_layout(model: nn.Module) -> list[AttentionLayout]:
    """Head counts per layer, read from the weights (so they reflect :func:`prune_heads`)."""
    layouts = []
    for attn in attention_modules(model):
        head_dim = _head_dim(attn)
        layouts.append(AttentionLayout(n_heads=_out_features(attn.q_proj) // head_dim,
                                       n_kv_heads=_out_features(attn.k_proj) // head_dim, head_dim=head_dim))
    return layouts


def count_heads(model: nn.Module) -> int:
    """Total number of query heads of the model."""
    return sum(layout.n_heads for layout in attention_layout(model))


def _as_keep(model: nn.Module, keep, *, allow_empty: bool, name: str = "keep") -> list[Tensor]:
    """``keep`` as a list of ``L`` boolean CPU vectors matching the model's head counts."""
    layouts = attention_layout(model)
    if isinstance(keep, torch.Tensor) or hasattr(keep, "__array__"):
        keep_t = torch.as_tensor(keep)
        if keep_t.dtype != torch.bool:
            raise TypeError(f"{name} must be a boolean mask (True = keep), got dtype {keep_t.dtype}; "
                            "use mask > 0.5 or mask.bool()")
        counts = {lay.n_heads for lay in layouts}
        if len(counts) != 1:
            raise ValueError(f"{name}: the model's layers have different head counts {[lay.n_heads for lay in layouts]}; "
                             "pass a list of one boolean vector per layer")
        shape = (len(layouts), layouts[0].n_heads)
        if tuple(keep_t.shape) != shape:
            raise ValueError(f"{name} has shape {tuple(keep_t.shape)}, expected (layers, heads) = {shape}")
        rows = list(keep_t.detach().cpu())
    elif isinstance(keep, Sequence) and not isinstance(keep, (str, bytes)):
        if len(keep) != len(layouts):
            raise ValueError(f"{name} has {len(keep)} layers, the model has {len(layouts)}")
        rows = []
        for i, (row, lay) in enumerate(zip(keep, layouts)):
            row_t = torch.as_tensor(row)
            if row_t.dtype != torch.bool:
                raise TypeError(f"{name}[{i}] must be boolean (True = keep), got dtype {row_t.dtype}")
            if tuple(row_t.shape) != (lay.n_heads,):
                raise ValueError(f"{name}[{i}] has shape {tuple(row_t.shape)}, layer {i} has {lay.n_heads} heads")
            rows.append(row_t.detach().cpu())
    else:
        raise TypeError(f"{name} must be a boolean tensor (layers, heads) or a list of per-layer boolean vectors, "
                        f"got {type(keep).__name__}")
    if not allow_empty:
        empty = [i for i, row in enumerate(rows) if not bool(row.any())]
        if empty:
            raise ValueError(f"{name} removes every head of layer(s) {empty}; keep at least one head per layer "
                             "(compile_mask's floors do)")
    return rows


def scale_heads(model: nn.Module, scale: Tensor) -> contextlib.AbstractContextManager[None]:
    """Within the block, head ``h`` of layer ``ℓ`` writes ``scale[..., ℓ, h]`` times its output.

    A forward pre-hook on each ``o_proj`` multiplies the input columns of head ``h``
    (``h·d_h … (h+1)·d_h``) by its gate; gradients flow to ``scale``. The arguments are
    checked when it is called, before the block is entered.

    Args:
        model: a Llama-style Hugging Face decoder whose layers all have ``H`` heads.
        scale: ``(L, H)`` gates shared by the batch, or ``(B, L, H)`` one row per example
            (``B`` must equal the batch size of every forward pass in the block). Finite
            real values (NaN or inf is refused: it would reach every output).
    """
    layouts = attention_layout(model)
    if not isinstance(scale, torch.Tensor) or not scale.is_floating_point():
        raise TypeError("scale must be a floating torch.Tensor of shape (L, H) or (B, L, H)")
    shape = (len(layouts), layouts[0].n_heads)
    if len({lay.n_heads for lay in layouts}) != 1 or tuple(scale.shape[-2:]) != shape or scale.dim() not in (2, 3):
        raise ValueError(f"scale has shape {tuple(scale.shape)}; expected (L, H) = {shape} or (B, L, H)")
    require_finite(scale.detach(), "scale", hint="pass finite gates (1 keeps a head, 0 removes it)")
    return _scaled(model, scale, layouts)


@contextlib.contextmanager
def _scaled(model: nn.Module, scale: Tensor, layouts: list[AttentionLayout]) -> Iterator[None]:
    handles = []
    for layer, (attn, lay) in enumerate(zip(attention_modules(model), layouts)):
        def hook(_module, args, layer=layer, head_dim=lay.head_dim):
            x = args[0]
            gate = scale[..., layer, :].to(device=x.device, dtype=x.dtype).repeat_interleave(head_dim, dim=-1)
            if gate.dim() == 2:  # (B, H·d_h) -> broadcast over the token axes
                if gate.shape[0] != x.shape[0]:
                    raise ValueError(f"scale has {gate.shape[0]} rows but the batch has {x.shape[0]} examples")
                gate = gate.view(gate.shape[0], *([1] * (x.dim() - 2)), gate.shape[-1])
            return (x * gate, *args[1:])

        handles.append(attn.o_proj.register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def mask_heads(model: nn.Module, keep, *, allow_empty_layers: bool = False) -> contextlib.AbstractContextManager[None]:
    """Within the block, the heads with ``keep == False`` are removed (write nothing).

    Implemented as a forward pre-hook on every ``o_proj`` that zeroes the removed heads'
    input columns, which equals zeroing ``W_O[:, h-block]`` and equals :func:`prune_heads`
    (not the authors' output-block masking, see :func:`mask_output_blocks`).

    Args:
        model: a Llama-style Hugging Face decoder.
        keep: boolean ``(L, H)`` (``True`` = keep), or a list of per-layer boolean vectors.
        allow_empty_layers: allow a layer with every head removed (its attention then adds
            nothing); refused by default because :func:`prune_heads` cannot build it.

    The mask is checked when it is called, before the block is entered.
    """
    return _masked(model, _as_keep(model, keep, allow_empty=allow_empty_layers))


@contextlib.contextmanager
def _masked(model: nn.Module, rows: list[Tensor]) -> Iterator[None]:
    handles = []
    for attn, row, lay in zip(attention_modules(model), rows, attention_layout(model)):
        if bool(row.all()):
            continue
        columns = row.repeat_interleave(lay.head_dim)

        def hook(_module, args, columns=columns):
            x = args[0]
            return (x * columns.to(device=x.device, dtype=x.dtype), *args[1:])

        handles.append(attn.o_proj.register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def mask_output_blocks(model: nn.Module, keep) -> contextlib.AbstractContextManager[None]:
    """The authors' masking (``BaseModel`` in their code), for comparison only: **not head removal**.

    A forward hook on ``self_attn`` reshapes the attention *output* (after ``o_proj``,
    the hidden dimension ``d``) into ``(H, d/H)`` blocks and zeroes block ``h`` when head
    ``h`` is removed. Since ``o_proj`` mixes all heads into every output channel, this
    zeroes residual-stream channels, not heads (brief §1.5, defect 1). Requires
    ``d`` divisible by ``H``. The mask is checked when it is called.
    """
    return _output_masked(model, _as_keep(model, keep, allow_empty=True))


@contextlib.contextmanager
def _output_masked(model: nn.Module, rows: list[Tensor]) -> Iterator[None]:
    handles = []
    for attn, row in zip(attention_modules(model), rows):
        def hook(_module, _args, output, row=row):
            out = output[0] if isinstance(output, tuple) else output
            d = out.shape[-1]
            if d % row.numel():
                raise ValueError(f"hidden size {d} is not divisible by {row.numel()} heads")
            block = row.to(out.device, out.dtype).repeat_interleave(d // row.numel())
            out = out * block
            return (out, *output[1:]) if isinstance(output, tuple) else out

        handles.append(attn.register_forward_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _slice_linear(linear: nn.Linear, index: Tensor, dim: int) -> nn.Linear:
    """A new ``nn.Linear`` keeping rows (``dim=0``, outputs) or columns (``dim=1``, inputs) ``index``."""
    weight = linear.weight.detach().index_select(dim, index.to(linear.weight.device))
    bias = linear.bias
    if bias is not None and dim == 0:
        bias = bias.detach().index_select(0, index.to(bias.device))
    new = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None,
                    device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        new.weight.copy_(weight)
        if bias is not None:
            new.bias.copy_(bias.detach())
    new.weight.requires_grad_(linear.weight.requires_grad)
    return new


def _rows_of(heads: Sequence[int], head_dim: int) -> Tensor:
    """Row indices ``h·d_h … (h+1)·d_h`` of the given heads, in order."""
    if not heads:
        return torch.zeros(0, dtype=torch.long)
    return (torch.as_tensor(list(heads)).unsqueeze(1) * head_dim + torch.arange(head_dim)).reshape(-1)


@torch.no_grad()
def prune_heads(model: nn.Module, keep) -> nn.Module:
    """Remove the heads with ``keep == False`` from the weights, **in place**; return ``model``.

    Per layer: ``q_proj`` keeps the rows of the kept heads, ``o_proj`` their columns.
    Key/value heads: let ``m_g`` be the number of kept query heads of group ``g``. If every
    group with ``m_g > 0`` has the same ``m`` (whole groups removed, or no GQA), ``k/v_proj``
    keep the rows of those groups and ``num_key_value_groups = m``; otherwise each kept head
    gets a copy of its group's ``k/v`` rows and ``num_key_value_groups = 1``. The function of
    the model equals :func:`mask_heads` with the same mask (to float rounding). Copy the model
    first (``copy.deepcopy``) to keep the dense one.

    Args:
        model: a Llama-style Hugging Face decoder (Llama, Qwen2, Qwen3, Mistral).
        keep: boolean ``(L, H)`` (``True`` = keep), at least one head per layer, or a list
            of per-layer boolean vectors.
    """
    rows = _as_keep(model, keep, allow_empty=False)
    for attn, row, lay in zip(attention_modules(model), rows, attention_layout(model)):
        if bool(row.all()):
            continue
        if lay.n_heads % lay.n_kv_heads:
            raise ValueError(f"{lay.n_heads} query heads do not split into {lay.n_kv_heads} key/value groups")
        group_size = lay.n_heads // lay.n_kv_heads
        current = int(getattr(attn, "num_key_value_groups", group_size))
        if current != group_size:
            raise ValueError("this layer was pruned into per-head key/value copies already; prune the dense model once "
                             "with the combined mask instead")
        kept = [h for h in range(lay.n_heads) if bool(row[h])]
        per_group = {}
        for h in kept:
            per_group.setdefault(h // group_size, []).append(h)
        sizes = {len(v) for v in per_group.values()}
        if len(sizes) == 1:
            kv_heads = sorted(per_group)  # whole groups (or uniform partial groups): one k/v head per group
            groups = sizes.pop()
        else:
            kv_heads = [h // group_size for h in kept]  # one copy of its group's k/v per kept head
            groups = 1
        q_index = _rows_of(kept, lay.head_dim)
        kv_index = _rows_of(kv_heads, lay.head_dim)
        attn.q_proj = _slice_linear(attn.q_proj, q_index, 0)
        attn.k_proj = _slice_linear(attn.k_proj, kv_index, 0)
        attn.v_proj = _slice_linear(attn.v_proj, kv_index, 0)
        attn.o_proj = _slice_linear(attn.o_proj, q_index, 1)
        attn.num_key_value_groups = groups
        for name, value in (("num_heads", len(kept)), ("num_key_value_heads", len(kv_heads))):
            if hasattr(attn, name):
                setattr(attn, name, value)
    _record_kept(model, rows)
    return model


KEPT_HEADS = "subspace_path_kept_heads"
"""The config attribute :func:`prune_heads` records: per layer, the kept heads' indices in the dense model."""


def _record_kept(model: nn.Module, rows: list[Tensor]) -> None:
    """Store the kept heads (indices into the dense model, composed with an earlier pruning) in the model's
    config, so that ``save_pretrained`` writes them and :func:`~icml26.papers.subspace_path.load_pruned`
    can rebuild the shapes."""
    config = getattr(model, "config", None)
    if config is None:
        return
    before = getattr(config, KEPT_HEADS, None)
    now = []
    for i, row in enumerate(rows):
        current = before[i] if before is not None else list(range(len(row)))
        now.append([int(current[h]) for h in range(len(row)) if bool(row[h])])
    setattr(config, KEPT_HEADS, now)
