"""The layers LLR acts on (:func:`find_layers`) and the optimizer param groups it needs, one group
per layer (:func:`layerwise_param_groups`); :class:`~icml26.papers.llr.layerwise.LayerwiseLR` scales
those groups.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import torch
from torch import nn

from icml26.common.argcheck import check_real

__all__ = ["find_layers", "layerwise_param_groups"]

_TORCH_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)


def _is_layer(module: nn.Module) -> bool:
    if isinstance(module, _TORCH_LAYERS):
        return True
    # transformers' GPT-2 Conv1D: a linear layer whose weight is stored (in, out).
    weight = getattr(module, "weight", None)
    return type(module).__name__ == "Conv1D" and isinstance(weight, torch.Tensor) and weight.ndim == 2


def _is_excluded(name: str, module: nn.Module, exclude: Iterable[str]) -> bool:
    return isinstance(module, nn.Embedding) or any(part in name for part in exclude)


def find_layers(model: nn.Module, *, exclude: Iterable[str] = ("embed", "head")) -> dict[str, tuple[nn.Module, bool]]:
    """The layers LLR acts on: ``{module name: (module, excluded)}`` in ``named_modules`` order.

    ``excluded`` is true for embeddings (every ``nn.Embedding``) and for modules whose
    name contains one of ``exclude`` (the output head): they are not fitted. A single
    string is one substring (``exclude="head"``), not a set of letters.
    """
    exclude = _substrings(exclude)
    return {name: (m, _is_excluded(name, m, exclude)) for name, m in model.named_modules() if _is_layer(m)}


def _substrings(exclude: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(exclude, str):
        return (exclude,)
    try:
        out = tuple(exclude)
    except TypeError:
        raise TypeError(f"exclude={exclude!r} must be a tuple of name substrings, e.g. ('head',)") from None
    if not all(isinstance(e, str) for e in out):
        raise TypeError(f"exclude={exclude!r} must hold strings (module-name substrings)")
    return out


def _check_model(model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")


def _owners(model: nn.Module, layers: Mapping[str, tuple[nn.Module, bool]]) -> dict[int, str]:
    """``{id(parameter): layer name}``; a tied parameter belongs to the first layer that holds it."""
    owners: dict[int, str] = {}
    for name, (module, _) in layers.items():
        for p in module.parameters(recurse=False):
            owners.setdefault(id(p), name)
    return owners


def layerwise_param_groups(
    model: nn.Module,
    *,
    weight_decay: float = 0.0,
    exclude: Iterable[str] = ("embed", "head"),
    muon_lr: float | None = None,
) -> list[dict]:
    """Optimizer param groups with one group per layer, as LLR needs.

    Each layer's weight gets a group with ``weight_decay`` and its bias (if any) a group
    without; all remaining trainable parameters (norms) share one group without weight
    decay. Every group carries ``"name"`` (the layer's module name, or ``"others"``).

    Args:
        model: any ``nn.Module``.
        weight_decay: decoupled weight decay on layer weights.
        exclude: substrings of module names that mark the output head (see :func:`find_layers`).
        muon_lr: if given, mark the groups for :class:`~icml26.papers.llr.muon.Muon`: the
            weights of hidden (non-excluded) layers get ``use_muon=True`` and ``lr=muon_lr``;
            everything else ``use_muon=False`` and runs AdamW at the optimizer's ``lr``.
    """
    _check_model(model)
    check_real(weight_decay, "weight_decay", low=0.0)
    if muon_lr is not None:
        check_real(muon_lr, "muon_lr", low=0.0, low_open=True)
    layers = find_layers(model, exclude=exclude)
    owners = _owners(model, layers)
    seen: set[int] = set()
    groups: list[dict] = []
    for name, (module, excluded) in layers.items():
        for pname, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen or owners[id(p)] != name:
                continue
            seen.add(id(p))
            is_matrix = p.ndim >= 2
            group = {"params": [p], "name": name, "weight_decay": weight_decay if is_matrix else 0.0}
            if muon_lr is not None:
                group["use_muon"] = bool(is_matrix and not excluded)
                if group["use_muon"]:
                    group["lr"] = muon_lr
            groups.append(group)
    others = [p for p in model.parameters() if p.requires_grad and id(p) not in seen]
    if others:
        group = {"params": others, "name": "others", "weight_decay": 0.0}
        if muon_lr is not None:
            group["use_muon"] = False
        groups.append(group)
    return groups
