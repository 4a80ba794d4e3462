"""Layerwise learning rates from heavy-tailed self-regularization (LLR).

Paper: *Heavy-Tail Guided Layerwise Learning Rates* (LLR, ICML 2026, arXiv 2605.22297);
authors' code ``hed-ucas/Layer-wise-Learning-Rate`` (``olmo/LRUnbalance.py``).

Steps of :class:`LayerwiseLR`, once per training step ``t`` (``t = 0, 1, …``):

1. at ``t = 0, every, 2·every, …`` while ``t < active_fraction · total_steps``: fit the
   power-law exponent alpha of every hidden layer's ESD (:func:`~icml26.papers.llr.esd.esd_alpha`);
2. map alpha linearly onto ``[r_min, r_max]`` (the largest alpha, the least heavy-tailed
   and so least trained layer, gets ``r_max``); embeddings and the output head are not
   fitted and get ``r_max`` (``embed_policy="max"``, the authors' choice);
3. ramp every layer's multiplier linearly from its current value to the new target over
   ``ramp_steps`` steps;
4. after the active window the multipliers stay frozen;
5. inside every ``optimizer.step()`` each layer's parameter group runs at
   ``multiplier x`` the learning rate that the base schedule set, and the base value is
   restored afterwards, so any ``torch.optim`` optimizer and any scheduler keep working.

Every ``nn.Linear``, ``nn.Conv1d/2d/3d``, ``nn.Embedding`` and Hugging Face ``Conv1D`` is
one layer; its parameters need their own optimizer param group(s)
(:func:`layerwise_param_groups` builds them, in :mod:`.param_groups`; still importable from here).
Other parameters (norms) stay at the base rate.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Callable, Iterable, Literal, Mapping

import numpy as np
import torch
from torch import nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.llr.esd import AlphaFit, FitMethod, esd_alpha
from icml26.papers.llr.param_groups import _check_model, _owners, _substrings, find_layers, layerwise_param_groups

__all__ = [
    "LLRHistory",
    "LayerwiseLR",
    "find_layers",
    "layer_alphas",
    "layerwise_param_groups",
    "map_alphas",
]

log = logging.getLogger(__name__)

MapKind = Literal["linear", "rank"]
EmbedPolicy = Literal["max", "base"] | float


def map_alphas(
    alphas: np.ndarray,
    *,
    r_min: float,
    r_max: float,
    mapping: MapKind = "linear",
    alpha_positive: bool = True,
) -> np.ndarray:
    """Learning-rate multipliers of layers with exponents ``alphas``: ``(L,) -> (L,)``.

    ``"linear"`` (the authors' ``tb_linear_map``) interpolates alpha from
    ``[min alpha, max alpha]`` onto ``[r_min, r_max]``; ``"rank"`` spaces the multipliers
    evenly by the rank of alpha (ties share their mean rank). ``alpha_positive=False``
    reverses the map (the smallest alpha gets ``r_max``).

    Ties: when all alphas are equal every layer gets ``r_min`` ("no boost without
    evidence"); the authors' ``np.interp`` would return ``r_max`` for all.

    ``alphas`` may be a NumPy array, a list or a tensor; NaN or inf is a ``ValueError``, and
    so are multipliers that are not ``0 < r_min <= r_max`` (finite): a learning-rate
    multiplier must be positive.
    """
    if isinstance(alphas, torch.Tensor):
        alphas = alphas.detach().cpu().numpy()
    try:
        alphas = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"alphas must be numbers (an array or tensor), got {type(alphas).__name__}") from None
    if alphas.ndim != 1 or alphas.size == 0 or not np.all(np.isfinite(alphas)):
        raise ValueError(f"alphas must be a non-empty 1-D array of finite numbers, got {alphas!r}")
    r_min = check_real(r_min, "r_min", low=0.0, low_open=True)
    r_max = check_real(r_max, "r_max", low=0.0, low_open=True)
    if r_min > r_max:
        raise ValueError(f"r_min={r_min} exceeds r_max={r_max}; need 0 < r_min <= r_max")
    if mapping not in ("linear", "rank"):
        raise ValueError(f"mapping={mapping!r} must be 'linear' or 'rank'")
    low, high = alphas.min(), alphas.max()
    if high - low <= 1e-12 * max(1.0, abs(high)):
        return np.full_like(alphas, r_min)
    if mapping == "linear":
        # position_l = (alpha_l - alpha_min) / (alpha_max - alpha_min)
        position = (alphas - low) / (high - low)
    else:
        from scipy.stats import rankdata

        position = (rankdata(alphas) - 1.0) / (alphas.size - 1)
    if not alpha_positive:
        position = 1.0 - position
    # eta_l / eta = r_min + (r_max - r_min) * position_l
    return r_min + (r_max - r_min) * position


def layer_alphas(
    model: nn.Module,
    *,
    exclude: Iterable[str] = ("embed", "head"),
    method: FitMethod = "median",
    xmin_pos: int = 2,
    min_eigs: int = 50,
    group=None,
) -> dict[str, AlphaFit]:
    """Power-law fits of every hidden layer of ``model`` (embeddings and head left out).

    Layers whose ESD has fewer than ``min_eigs`` eigenvalues are left out (the authors'
    ``eigs_thresh``), and so are layers whose fit fails (e.g. a zero matrix, or one of rank
    below half its size: see :func:`~icml26.papers.llr.esd.esd`'s eigenvalue floor). A
    layer with NaN or inf weights is a ``ValueError`` naming it (training has diverged).

    Under ``torch.distributed`` (a process group active; ``group`` selects one) the layers are
    split round-robin across ranks: each rank fits its share and the fits are exchanged, so
    every rank returns the same dictionary. An FSDP2-sharded weight (a ``DTensor``) is
    all-gathered one layer at a time (every rank takes part in each gather; only the layer's
    owner keeps the full matrix long enough to fit it). DDP-replicated weights need no gather.
    """
    from icml26.common.distributed import all_gather_objects, gather_full, is_sharded, world

    _check_model(model)
    min_eigs = check_int(min_eigs, "min_eigs", low=0)
    xmin_pos = check_int(xmin_pos, "xmin_pos", low=1)
    rank, size = world(group)
    mine: dict[str, AlphaFit] = {}
    errors: list[str] = []
    candidates = [(name, module) for name, (module, excluded) in find_layers(model, exclude=exclude).items()
                  if not excluded and _n_eigs(module.weight) >= min_eigs]
    for index, (name, module) in enumerate(candidates):
        weight = module.weight
        owner = index % size
        if is_sharded(weight):
            weight = gather_full(weight.detach())  # a collective: every rank calls it for every layer
        if owner != rank:
            continue
        if not bool(torch.isfinite(weight).all()):
            # collected, then raised on every rank (a raise on one rank alone would leave the others waiting)
            errors.append(f"layer {name}: weight contains NaN or inf (has training diverged?); "
                          f"LLR cannot fit its spectrum")
            continue
        try:
            fit = esd_alpha(weight.detach(), method, xmin_pos=xmin_pos)
        except ValueError as exc:
            log.warning("LLR: layer %s not fitted (%s); it stays at the base rate", name, exc)
            continue
        if math.isfinite(fit.alpha):
            mine[name] = fit
    parts = all_gather_objects((mine, errors), group)
    errors = [e for _, errs in parts for e in errs]
    if errors:
        raise ValueError(errors[0])
    if size == 1:
        return mine
    merged: dict[str, AlphaFit] = {}
    for part, _ in parts:
        merged.update(part)
    return {name: merged[name] for name, _ in candidates if name in merged}  # model order on every rank


def _n_eigs(weight: torch.Tensor) -> int:
    slices = math.prod(weight.shape[2:]) if weight.ndim > 2 else 1
    return min(weight.shape[0], weight.shape[1]) * slices


@dataclasses.dataclass
class LLRHistory:
    """What :class:`LayerwiseLR` decided at each update (``NaN`` alpha: not fitted)."""

    steps: list[int] = dataclasses.field(default_factory=list)
    """Training steps at which alphas were fitted."""
    alpha: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    """Per layer, alpha at each update."""
    target: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    """Per layer, the multiplier ramped in from each update."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class _GroupRateHooks:
    """Scale each param group's ``lr`` by :meth:`group_multipliers` inside ``optimizer.step()``.

    Optimizer step hooks multiply the rates just before the update and restore the base schedule's
    values right after it, so ``param_group["lr"]`` outside the step is always the scheduler's.
    Shared by :class:`LayerwiseLR` and the fixed-multiplier controls.
    """

    _saved_lrs: list[float] | None
    _hooks: list

    def group_multipliers(self) -> list[float]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _attach(self, optimizer: torch.optim.Optimizer) -> None:
        self._saved_lrs = None
        self._hooks = [optimizer.register_step_pre_hook(self._scale),
                       optimizer.register_step_post_hook(self._restore)]

    def _scale(self, optimizer, args, kwargs) -> None:
        if self._saved_lrs is not None:  # a previous step raised before restoring
            self._restore(optimizer, args, kwargs)
        self._saved_lrs = [g["lr"] for g in optimizer.param_groups]
        for group, multiplier in zip(optimizer.param_groups, self.group_multipliers()):
            # eta_l = m_l * eta(t), eta(t) from the base schedule
            group["lr"] = group["lr"] * multiplier

    def _restore(self, optimizer, args, kwargs) -> None:
        if self._saved_lrs is not None:
            for group, lr in zip(optimizer.param_groups, self._saved_lrs):
                group["lr"] = lr
            self._saved_lrs = None

    def remove(self) -> None:
        """Detach from the optimizer: later steps use the base rates."""
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


class LayerwiseLR(_GroupRateHooks):
    """Heavy-tail guided layerwise learning-rate multipliers on top of any optimizer and scheduler.

    Call :meth:`step` once per training step, after ``optimizer.step()`` (like a
    scheduler). The multipliers act only inside ``optimizer.step()`` (through optimizer
    step hooks), so ``param_group["lr"]`` always shows the base schedule's value and
    schedulers that read it back are unaffected; :meth:`effective_lrs` gives the rates
    actually used.

    Args:
        model: the model whose layers are fitted.
        optimizer: any ``torch.optim.Optimizer`` whose param groups each hold parameters
            of at most one layer (:func:`layerwise_param_groups`); groups without layer
            parameters stay at the base rate.
        total_steps: training steps ``T`` of the run (sets the active window).
        r_min, r_max: multipliers of the most and the least heavy-tailed layer
            (shipped configs: 1 and 3).
        every: steps between two fits (shipped configs: 40).
        ramp_steps: steps over which a new multiplier is ramped in linearly (shipped: 20;
            ``0`` jumps at once).
        active_fraction: fits happen only at steps ``t < active_fraction * T`` (0.2).
        mapping: ``"linear"`` or ``"rank"`` (:func:`map_alphas`).
        exclude: name substrings of the head; embeddings are always excluded.
        embed_policy: multiplier of embeddings and head: ``"max"`` (``r_max``, the
            authors'), ``"base"`` (1) or a number.
        alpha_positive: larger alpha, larger rate (the paper); ``False`` reverses.
        normalize: ``"mean"`` divides all multipliers by their mean over layers, so
            the average layer keeps the base rate (our variant, not the paper's).
        method, xmin_pos: power-law fit (:func:`~icml26.papers.llr.esd.fit_power_law`).
        min_eigs: layers with fewer eigenvalues are not fitted and stay at the base rate.
        target_transform: applied to the fitted layers' ``{name: multiplier}`` before
            the embedding policy and normalisation (e.g. the shuffled control of
            :mod:`icml26.papers.llr.baselines`).
        group: the ``torch.distributed`` process group (default: the default group when one is
            initialised). Under DDP or FSDP2 every rank computes the same multipliers: the fits are
            split across ranks and exchanged (:func:`layer_alphas`). Construct it on every rank.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        total_steps: int,
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
        target_transform: Callable[[dict[str, float]], dict[str, float]] | None = None,
        group=None,
    ) -> None:
        _check_model(model)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        total_steps = check_int(total_steps, "total_steps", low=1)
        r_min = check_real(r_min, "r_min", low=0.0, low_open=True)
        r_max = check_real(r_max, "r_max", low=0.0, low_open=True)
        if r_min > r_max:
            raise ValueError(f"need 0 < r_min <= r_max, got r_min={r_min}, r_max={r_max}")
        every = check_int(every, "every", low=1)
        ramp_steps = check_int(ramp_steps, "ramp_steps", low=0)
        check_real(active_fraction, "active_fraction", low=0.0, high=1.0)
        xmin_pos = check_int(xmin_pos, "xmin_pos", low=1)
        min_eigs = check_int(min_eigs, "min_eigs", low=0)
        if mapping not in ("linear", "rank"):
            raise ValueError(f"mapping={mapping!r} must be 'linear' or 'rank'")
        if normalize not in (None, "mean"):
            raise ValueError(f"normalize={normalize!r} must be None or 'mean'")
        if isinstance(embed_policy, str) and embed_policy not in ("max", "base"):
            raise ValueError(f"embed_policy={embed_policy!r} must be 'max', 'base' or a positive number")
        if not isinstance(embed_policy, str):
            check_real(embed_policy, "embed_policy", low=0.0, low_open=True)
        self.model, self.optimizer = model, optimizer
        self.total_steps, self.r_min, self.r_max = total_steps, float(r_min), float(r_max)
        self.every, self.ramp_steps, self.active_fraction = every, ramp_steps, active_fraction
        self.mapping, self.embed_policy, self.alpha_positive = mapping, embed_policy, alpha_positive
        self.normalize, self.method, self.xmin_pos, self.min_eigs = normalize, method, xmin_pos, min_eigs
        self.exclude = _substrings(exclude)
        self.target_transform = target_transform
        self.group = group

        layers = find_layers(model, exclude=self.exclude)
        self._excluded = {name for name, (_, excluded) in layers.items() if excluded}
        self._group_layer = self._map_groups(optimizer, _owners(model, layers))
        self.layers: list[str] = list(dict.fromkeys(n for n in self._group_layer if n is not None))
        """Layers with a param group of their own, in model order."""
        if not self.layers:
            raise ValueError("no optimizer param group holds the parameters of a single layer; build the "
                             "optimizer from layerwise_param_groups(model)")

        self.history = LLRHistory()
        self._t = 0
        self._start = {name: 1.0 for name in self.layers}
        self._target = dict(self._start)
        self._ramp_from = 0
        self._current = dict(self._start)
        self._attach(optimizer)
        if self._is_update_step(0):
            self._update()
        self._current = self._multipliers_at(0)

    # -- set-up -------------------------------------------------------------------------
    @staticmethod
    def _map_groups(optimizer: torch.optim.Optimizer, owners: Mapping[int, str]) -> list[str | None]:
        """The layer each param group belongs to (``None``: no layer, base rate)."""
        group_layer: list[str | None] = []
        for index, group in enumerate(optimizer.param_groups):
            names = {owners.get(id(p)) for p in group["params"]}
            if len(names) > 1:
                shown = ", ".join(sorted(n or "<non-layer parameters>" for n in names))
                raise ValueError(f"param group {index} mixes parameters of {shown}; LLR needs one group per "
                                 f"layer: build the optimizer from layerwise_param_groups(model)")
            group_layer.append(next(iter(names)) if names else None)
        return group_layer

    # -- schedule -----------------------------------------------------------------------
    @property
    def active_steps(self) -> float:
        """Fits happen only at steps below this."""
        return self.active_fraction * self.total_steps

    @property
    def step_count(self) -> int:
        """Training steps taken (calls of :meth:`step`)."""
        return self._t

    def _is_update_step(self, t: int) -> bool:
        return t % self.every == 0 and t < self.active_steps

    def _multipliers_at(self, t: int) -> dict[str, float]:
        k = t - self._ramp_from
        if self.ramp_steps == 0 or k >= self.ramp_steps:
            return dict(self._target)
        # m(t0 + k) = m_before + (m_target - m_before) * k / n,  0 <= k <= n
        fraction = k / self.ramp_steps
        return {n: self._start[n] + (self._target[n] - self._start[n]) * fraction for n in self.layers}

    def _targets(self, fits: Mapping[str, AlphaFit]) -> dict[str, float]:
        fitted = [n for n in self.layers if n in fits]
        targets = {n: 1.0 for n in self.layers}
        if fitted:
            values = map_alphas(np.array([fits[n].alpha for n in fitted]), r_min=self.r_min, r_max=self.r_max,
                                mapping=self.mapping, alpha_positive=self.alpha_positive)
            mapped = dict(zip(fitted, values.tolist()))
            if self.target_transform is not None:
                mapped = dict(self.target_transform(mapped))
                if set(mapped) != set(fitted):
                    raise ValueError("target_transform must return a multiplier for exactly the layers it got")
            targets.update(mapped)
        embed = {"max": self.r_max, "base": 1.0}.get(self.embed_policy, self.embed_policy)  # type: ignore[arg-type]
        assigned = fitted + [n for n in self.layers if n in self._excluded]
        for name in self.layers:
            if name in self._excluded:
                targets[name] = float(embed)
        if self.normalize == "mean" and assigned:
            # m_l <- m_l / mean_k m_k over the layers LLR assigns (the average layer keeps the base rate)
            mean = float(np.mean([targets[n] for n in assigned]))
            targets.update({n: targets[n] / mean for n in assigned})
        return targets

    def _update(self) -> None:
        fits = layer_alphas(self.model, exclude=self.exclude, method=self.method, xmin_pos=self.xmin_pos,
                            min_eigs=self.min_eigs, group=self.group)
        targets = self._targets(fits)
        self._start = self._multipliers_at(self._t)
        self._target = targets
        self._ramp_from = self._t
        self.history.steps.append(self._t)
        for name in self.layers:
            fit = fits.get(name)
            self.history.alpha.setdefault(name, []).append(fit.alpha if fit else math.nan)
            self.history.target.setdefault(name, []).append(targets[name])
        log.debug("LLR step %d: targets %s", self._t, targets)

    def step(self) -> None:
        """Advance one training step; fit and retarget when due."""
        self._t += 1
        if self._is_update_step(self._t):
            self._update()
        self._current = self._multipliers_at(self._t)

    # -- applying -----------------------------------------------------------------------
    @property
    def multipliers(self) -> dict[str, float]:
        """The multiplier of each layer for the next ``optimizer.step()``."""
        return dict(self._current)

    def group_multipliers(self) -> list[float]:
        """The multiplier of each optimizer param group (1 for groups without a layer)."""
        return [1.0 if name is None else self._current[name] for name in self._group_layer]

    def effective_lrs(self) -> list[float]:
        """The learning rate each param group will use in the next ``optimizer.step()``."""
        return [g["lr"] * m for g, m in zip(self.optimizer.param_groups, self.group_multipliers())]

    def state_dict(self) -> dict:
        """Everything needed to resume (the model and optimizer are saved separately)."""
        return {"t": self._t, "start": dict(self._start), "target": dict(self._target),
                "ramp_from": self._ramp_from, "history": self.history.to_dict()}

    def load_state_dict(self, state: Mapping) -> None:
        if set(state["target"]) != set(self.layers):
            raise ValueError("the state's layers differ from this model's; was it saved from another model?")
        self._t, self._ramp_from = int(state["t"]), int(state["ramp_from"])
        self._start, self._target = dict(state["start"]), dict(state["target"])
        self.history = LLRHistory(**state["history"])
        self._current = self._multipliers_at(self._t)
