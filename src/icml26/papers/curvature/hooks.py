"""Finding and patching the residual-stream states of any Hugging Face causal LM.

Layer convention (the ``output_hidden_states`` one): for a model with ``L`` blocks,
``hidden_states[0]`` is the embedding output, ``hidden_states[l]`` for ``0 < l < L`` the
output of block ``l-1`` (= the input of block ``l``), and ``hidden_states[L]`` the output
of the final norm (the input of the LM head). :func:`patch_hidden_state` replaces
exactly that tensor inside a forward pass: for ``l < L`` through a forward pre-hook on
block ``l``, for ``l = L`` through a forward pre-hook on the output embedding.
"""

from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Iterator

from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.common.hf import decoder_blocks, num_layers  # re-exported here for compatibility

__all__ = ["decoder_blocks", "num_layers", "patch_hidden_state"]


def patch_hidden_state(
    model: nn.Module,
    layer: int,
    patch: Tensor | Callable[[Tensor], Tensor],
) -> ContextManager[None]:
    """Within the ``with`` block, forward passes use a replaced ``hidden_states[layer]``.

    The arguments are checked when this is called (not only on entering the ``with`` block).

    Args:
        model: a Hugging Face causal LM.
        layer: ``0 .. L`` (negative values count from ``L``), in the convention above.
        patch: the replacement ``(batch, T, d)``, or a function of the original state
            returning one of the same shape.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
    if not (callable(patch) or isinstance(patch, Tensor)):
        raise TypeError(f"patch must be a tensor or a function of the hidden state, got {type(patch).__name__}")
    n = num_layers(model)
    layer = check_int(layer, "layer")
    if not -(n + 1) <= layer <= n:
        raise ValueError(f"layer={layer} is out of range for a model with {n} blocks (0 .. {n})")
    layer = layer % (n + 1)
    if layer == n and (not hasattr(model, "get_output_embeddings") or model.get_output_embeddings() is None):
        raise ValueError(f"{type(model).__name__} has no output embedding to patch layer {n}")
    return _patched(model, layer, n, patch)


@contextlib.contextmanager
def _patched(model: nn.Module, layer: int, n: int, patch: Tensor | Callable[[Tensor], Tensor]) -> Iterator[None]:
    """:func:`patch_hidden_state` on checked arguments (``0 <= layer <= n``)."""
    replace = patch if callable(patch) else (lambda _h: patch)

    def apply(h: Tensor) -> Tensor:
        new = replace(h)
        if new.shape != h.shape:
            raise ValueError(f"the patch for layer {layer} has shape {tuple(new.shape)}, "
                             f"the hidden state has {tuple(h.shape)}")
        return new.to(device=h.device, dtype=h.dtype)

    if layer < n:
        def block_hook(_module, args, kwargs):
            if args:
                return (apply(args[0]), *args[1:]), kwargs
            kwargs = dict(kwargs)
            kwargs["hidden_states"] = apply(kwargs["hidden_states"])
            return args, kwargs

        handle = decoder_blocks(model)[layer].register_forward_pre_hook(block_hook, with_kwargs=True)
    else:
        head = model.get_output_embeddings()

        def head_hook(_module, args):
            return (apply(args[0]), *args[1:])

        handle = head.register_forward_pre_hook(head_hook)
    try:
        yield
    finally:
        handle.remove()
