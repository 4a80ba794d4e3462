"""Controls for LLR (arXiv 2605.22297): the same rate budget without the heavy-tail signal.

*Uniform* training is the optimizer without
:class:`~icml26.papers.llr.layerwise.LayerwiseLR`; :func:`uniform_layerwise_lr` is the same as a
drop-in with LLR's signature (every multiplier 1), and with ``multiplier=m`` the *rate-matched*
uniform control: every parameter at ``m`` times the base rate, e.g. ``m`` = LLR's
parameter-weighted mean multiplier (:func:`~icml26.papers.llr.analysis.parameter_weighted_mean`).

The *shuffled* control (ours, proposed in the brief) keeps LLR's schedule and its multipliers
but moves them to other layers with one fixed random permutation. By default the permutation
stays **within matrix kinds** (layers with the same name pattern and shape, e.g. every block's
``mlp.up_proj``), and moves every layer of a kind with two or more members (a derangement), so
each kind keeps its multipliers and the parameter-weighted mean rate is unchanged: only the
placement of the spectral signal among same-shaped layers differs. ``within_kind=False``
permutes across all fitted layers (the earlier control, which also moves rate between kinds of
different sizes).

:class:`StaticLayerwiseLR` holds fixed multipliers per layer (no spectral fit), e.g. the
*kind-static* control: every layer of a kind at that kind's mean LLR multiplier
(:func:`~icml26.papers.llr.analysis.kind_means`).

Two controls need nothing from a training run (a practitioner can apply them without LLR):

* :func:`embed_head_layerwise_lr`: uniform AdamW except the embeddings and head, which run at
  ``multiplier`` (LLR's ``r_max``) times the rate: LLR's embedding rule without any fit;
* :func:`kind_static_step0_lr`: LLR's first assignment (the fit of the initial weights, where
  alpha reflects only each matrix's aspect ratio) averaged per matrix kind and then held: no
  refit ever sees a trained weight.
"""

from __future__ import annotations

import re
from typing import Iterable, Literal, Mapping

import numpy as np
import torch

from icml26.common.argcheck import check_int, check_real
from icml26.papers.llr.analysis import kind_means
from icml26.papers.llr.esd import FitMethod
from icml26.papers.llr.layerwise import (
    EmbedPolicy,
    LayerwiseLR,
    LLRHistory,
    MapKind,
    _GroupRateHooks,
    _owners,
    _substrings,
    find_layers,
)

__all__ = ["KindMeans", "ShuffledMultipliers", "StaticLayerwiseLR", "embed_head_layerwise_lr",
           "kind_static_step0_lr", "layer_kinds", "matrix_kind", "shuffled_layerwise_lr", "uniform_layerwise_lr"]

_INDEX = re.compile(r"(?<=\.)\d+(?=\.)|^\d+(?=\.)|(?<=\.)\d+$|^\d+$")


def matrix_kind(name: str) -> str:
    """The kind of a layer: its module name with block indices replaced by ``*``.

    ``"model.layers.2.mlp.up_proj"`` -> ``"model.layers.*.mlp.up_proj"``; ``"0"`` -> ``"*"``.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a module name (str), got {type(name).__name__}")
    return _INDEX.sub("*", name)


def layer_kinds(model: torch.nn.Module, *, exclude: Iterable[str] = ("embed", "head")) -> dict[str, str]:
    """``{layer: kind}`` for every layer :func:`~icml26.papers.llr.layerwise.find_layers` finds.

    The kind is :func:`matrix_kind` plus the weight's shape (``"model.layers.*.mlp.up_proj
    (256, 96)"``), so layers of one kind always hold the same number of parameters.
    """
    return {name: f"{matrix_kind(name)} {tuple(module.weight.shape)}"
            for name, (module, _) in find_layers(model, exclude=exclude).items()}


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` with no fixed point (identity for ``n < 2``)."""
    if n < 2:
        return np.arange(n)
    while True:
        order = rng.permutation(n)
        if not np.any(order == np.arange(n)):
            return order


class ShuffledMultipliers:
    """A ``target_transform`` that permutes multipliers across layers with one fixed permutation.

    The permutation is drawn once, on the first call, over the layer names in sorted
    order, and reused at every update, so a layer keeps its (wrong) partner throughout.

    Args:
        seed: seeds the permutation.
        groups: ``{layer: group}``; when given, layers are permuted only within their group,
            and every group of two or more layers is deranged (no layer keeps its own
            multiplier). Without it, one permutation over all layers (fixed points allowed).
    """

    def __init__(self, seed: int, groups: Mapping[str, str] | None = None) -> None:
        self.seed = check_int(seed, "seed", low=0)
        if groups is not None and not isinstance(groups, Mapping):
            raise TypeError(f"groups must be a mapping {{layer: group}}, got {type(groups).__name__}")
        self.groups = dict(groups) if groups is not None else None
        self.permutation: dict[str, str] | None = None
        """``{layer: layer whose multiplier it receives}``, fixed after the first call."""

    def _draw(self, names: list[str]) -> dict[str, str]:
        rng = np.random.default_rng(self.seed)
        if self.groups is None:
            order = rng.permutation(len(names))
            return {name: names[j] for name, j in zip(names, order)}
        missing = [n for n in names if n not in self.groups]
        if missing:
            raise ValueError(f"groups has no entry for layer(s) {', '.join(missing)}")
        permutation: dict[str, str] = {}
        for group in sorted({self.groups[n] for n in names}):
            members = [n for n in names if self.groups[n] == group]
            order = _derangement(len(members), rng)
            permutation.update({name: members[j] for name, j in zip(members, order)})
        return permutation

    def __call__(self, multipliers: dict[str, float]) -> dict[str, float]:
        if not isinstance(multipliers, dict):
            raise TypeError(f"multipliers must be a dict {{layer: multiplier}}, got {type(multipliers).__name__}")
        names = sorted(multipliers)
        if self.permutation is None or set(self.permutation) != set(names):
            self.permutation = self._draw(names)
        return {name: multipliers[self.permutation[name]] for name in names}


def shuffled_layerwise_lr(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    total_steps: int,
    seed: int = 0,
    within_kind: bool = True,
    r_min: float = 1.0,
    r_max: float = 3.0,
    every: int = 40,
    ramp_steps: int = 20,
    active_fraction: float = 0.2,
    mapping: MapKind = "linear",
    exclude: Iterable[str] = ("embed", "head"),
    embed_policy: EmbedPolicy = "max",
    alpha_positive: bool = True,
    normalize: Literal["mean"] | None = None,
    method: FitMethod = "median",
    xmin_pos: int = 2,
    min_eigs: int = 50,
) -> LayerwiseLR:
    """:class:`LayerwiseLR` with its multipliers permuted across the fitted layers.

    A drop-in for :class:`LayerwiseLR` (same arguments) plus the permutation's ``seed`` and
    ``within_kind`` (default: permute only among layers of one kind, :func:`layer_kinds`, which
    preserves every kind's multipliers and the parameter-weighted mean rate). Embeddings and
    head keep their policy (``r_max`` by default).
    """
    if not isinstance(within_kind, bool):
        raise TypeError(f"within_kind must be True or False, got {within_kind!r}")
    groups = layer_kinds(model, exclude=_substrings(exclude)) if within_kind else None
    return LayerwiseLR(model, optimizer, total_steps=total_steps, r_min=r_min, r_max=r_max, every=every,
                       ramp_steps=ramp_steps, active_fraction=active_fraction, mapping=mapping, exclude=exclude,
                       embed_policy=embed_policy, alpha_positive=alpha_positive, normalize=normalize,
                       method=method, xmin_pos=xmin_pos, min_eigs=min_eigs,
                       target_transform=ShuffledMultipliers(seed, groups))


class StaticLayerwiseLR(_GroupRateHooks):
    """Fixed per-layer learning-rate multipliers on top of any optimizer and scheduler (no spectral fit).

    The same mechanics as :class:`LayerwiseLR` (optimizer step hooks scale each layer's param
    group inside ``optimizer.step()``; call :meth:`step` once per training step), but the
    multipliers are given, not fitted: from 1 at step 0 they are ramped linearly to their values
    over ``ramp_steps`` steps (as LLR ramps in its first fit) and then held.

    Args:
        model: the model whose layers the multipliers name.
        optimizer: param groups with at most one layer each (:func:`layerwise_param_groups`).
        total_steps: training steps of the run (for :class:`LayerwiseLR`'s signature).
        multipliers: ``{layer name: multiplier}`` (positive); layers not named get ``default``.
        default: multiplier of the layers ``multipliers`` does not name.
        others: multiplier of the param groups that hold no layer (norms): 1 keeps them at the
            base rate, as LLR does; the rate-matched uniform control scales them too.
        ramp_steps: steps of the initial ramp (0: the values from the first step).
        exclude: name substrings of the head (see :func:`find_layers`).
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, total_steps: int,
                 multipliers: Mapping[str, float] | None = None, default: float = 1.0, others: float = 1.0,
                 ramp_steps: int = 0, exclude: Iterable[str] = ("embed", "head")) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self.total_steps = check_int(total_steps, "total_steps", low=1)
        self.ramp_steps = check_int(ramp_steps, "ramp_steps", low=0)
        default = check_real(default, "default", low=0.0, low_open=True)
        self.others = check_real(others, "others", low=0.0, low_open=True)
        multipliers = {} if multipliers is None else multipliers
        if not isinstance(multipliers, Mapping):
            raise TypeError(f"multipliers must be a mapping {{layer: multiplier}}, got {type(multipliers).__name__}")
        layers = find_layers(model, exclude=_substrings(exclude))
        unknown = sorted(set(multipliers) - set(layers))
        if unknown:
            raise ValueError(f"multipliers names layer(s) the model does not have: {', '.join(unknown)}")
        for name, value in multipliers.items():
            check_real(value, f"multipliers[{name!r}]", low=0.0, low_open=True)
        self.model, self.optimizer = model, optimizer
        self._group_layer = LayerwiseLR._map_groups(optimizer, _owners(model, layers))
        self.layers: list[str] = list(dict.fromkeys(n for n in self._group_layer if n is not None))
        self.targets = {n: float(multipliers.get(n, default)) for n in self.layers}
        """The multiplier of each layer after the ramp."""
        self.history = LLRHistory()
        """Empty: nothing is fitted (kept for :class:`LayerwiseLR`'s interface)."""
        self._t = 0
        self._attach(optimizer)

    def _fraction(self) -> float:
        return 1.0 if self.ramp_steps == 0 else min(1.0, self._t / self.ramp_steps)

    @property
    def multipliers(self) -> dict[str, float]:
        """The multiplier of each layer for the next ``optimizer.step()``."""
        f = self._fraction()
        # m(t) = 1 + (m - 1) * min(1, t / ramp_steps)
        return {n: 1.0 + (m - 1.0) * f for n, m in self.targets.items()}

    def group_multipliers(self) -> list[float]:
        """The multiplier of each optimizer param group (``others`` for groups without a layer)."""
        current, f = self.multipliers, self._fraction()
        other = 1.0 + (self.others - 1.0) * f
        return [other if name is None else current[name] for name in self._group_layer]

    def effective_lrs(self) -> list[float]:
        """The learning rate each param group will use in the next ``optimizer.step()``."""
        return [g["lr"] * m for g, m in zip(self.optimizer.param_groups, self.group_multipliers())]

    def step(self) -> None:
        """Advance one training step."""
        self._t += 1

    @property
    def step_count(self) -> int:
        return self._t


def uniform_layerwise_lr(model: torch.nn.Module, optimizer: torch.optim.Optimizer, *,
                         total_steps: int, multiplier: float = 1.0, ramp_steps: int = 0):
    """The uniform baseline as a drop-in for :class:`LayerwiseLR`: every parameter at ``multiplier`` x the rate.

    With ``multiplier=1`` (default) this is :class:`LayerwiseLR` with ``r_min = r_max = 1``,
    embeddings at the base rate and no spectral fits, so training is bit-identical to the
    optimizer alone (tested). Another ``multiplier`` gives the rate-matched uniform control: a
    :class:`StaticLayerwiseLR` scaling every param group, norms included, ramped in over
    ``ramp_steps``.
    """
    multiplier = check_real(multiplier, "multiplier", low=0.0, low_open=True)
    ramp_steps = check_int(ramp_steps, "ramp_steps", low=0)
    if multiplier == 1.0:
        return LayerwiseLR(model, optimizer, total_steps=total_steps, r_min=1.0, r_max=1.0, active_fraction=0.0,
                           embed_policy="base")
    return StaticLayerwiseLR(model, optimizer, total_steps=total_steps, default=multiplier, others=multiplier,
                             ramp_steps=ramp_steps, exclude=())


def embed_head_layerwise_lr(model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, total_steps: int,
                            multiplier: float = 3.0, ramp_steps: int = 0,
                            exclude: Iterable[str] = ("embed", "head")) -> StaticLayerwiseLR:
    """Uniform training except the embeddings and output head, which run at ``multiplier`` x the rate.

    LLR does not fit embeddings and head and gives them ``r_max`` (the authors' rule); this control
    keeps that rule and drops everything else, so every hidden matrix and the norms stay at the
    base rate. A tied embedding/head is one param group and gets the multiplier once. The
    multiplier is ramped in from 1 over ``ramp_steps`` (as LLR ramps in its first assignment).

    Args:
        model, optimizer, total_steps: as for :class:`LayerwiseLR` (one param group per layer).
        multiplier: the embeddings' and head's multiplier (LLR's ``r_max``; shipped configs: 3).
        ramp_steps: steps of the initial ramp (0: the multiplier from the first step).
        exclude: name substrings of the head (every ``nn.Embedding`` counts as well).
    """
    multiplier = check_real(multiplier, "multiplier", low=0.0, low_open=True)
    excluded = [name for name, (_, is_excluded) in find_layers(model, exclude=_substrings(exclude)).items()
                if is_excluded]
    if not excluded:
        raise ValueError("the model has no embedding or head layer (no nn.Embedding and no module name containing "
                         f"one of {tuple(_substrings(exclude))}); pass exclude= naming its head")
    return StaticLayerwiseLR(model, optimizer, total_steps=total_steps, multipliers={n: multiplier for n in excluded},
                             ramp_steps=ramp_steps, exclude=exclude)


class KindMeans:
    """A ``target_transform`` that replaces each layer's multiplier by its matrix kind's mean.

    Args:
        kinds: ``{layer: kind}`` (e.g. :func:`layer_kinds`); see
            :func:`~icml26.papers.llr.analysis.kind_means`.
    """

    def __init__(self, kinds: Mapping[str, str]) -> None:
        if not isinstance(kinds, Mapping):
            raise TypeError(f"kinds must be a mapping {{layer: kind}}, got {type(kinds).__name__}")
        self.kinds = dict(kinds)

    def __call__(self, multipliers: dict[str, float]) -> dict[str, float]:
        return kind_means(multipliers, self.kinds)


def kind_static_step0_lr(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    total_steps: int,
    r_min: float = 1.0,
    r_max: float = 3.0,
    ramp_steps: int = 20,
    mapping: MapKind = "linear",
    exclude: Iterable[str] = ("embed", "head"),
    embed_policy: EmbedPolicy = "max",
    method: FitMethod = "median",
    xmin_pos: int = 2,
    min_eigs: int = 50,
) -> LayerwiseLR:
    """LLR's first assignment, averaged per matrix kind and held for the whole run (no refit).

    :class:`LayerwiseLR` fits at step 0, i.e. on the initial weights, where the ESD of an iid
    matrix depends only on its aspect ratio; this control maps that fit onto ``[r_min, r_max]``
    as LLR does, replaces each layer's multiplier by its kind's mean (:class:`KindMeans` over
    :func:`layer_kinds`), ramps it in over ``ramp_steps`` and never fits again (``every`` is the
    whole run). Embeddings and head follow ``embed_policy`` (``r_max`` by default, as in LLR).
    A drop-in for :class:`LayerwiseLR` (same required arguments).
    """
    total_steps = check_int(total_steps, "total_steps", low=1)
    kinds = layer_kinds(model, exclude=_substrings(exclude))
    # every = total_steps and a full active window: the only fit is the one at step 0
    return LayerwiseLR(model, optimizer, total_steps=total_steps, r_min=r_min, r_max=r_max, every=total_steps,
                       ramp_steps=ramp_steps, active_fraction=1.0, mapping=mapping, exclude=exclude,
                       embed_policy=embed_policy, method=method, xmin_pos=xmin_pos, min_eigs=min_eigs,
                       target_transform=KindMeans(kinds))
