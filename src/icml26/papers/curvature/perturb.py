"""Straightening a trajectory at its last point, and measuring the entropy change.

Steps (paper: "aligned" perturbations lower next-token entropy; mechanics inferred,
see the README):

1. run the model once, read ``x = hidden_states[layer]`` of every row ``(batch, T, d)``;
2. constant-velocity extrapolation of the last point:
   ``x^_t = x_{t-1} + (x_{t-1} - x_{t-2}) = 2 x_{t-1} - x_{t-2}``
   (or, with ``keep_step_length``, ``x_{t-1} + |x_t - x_{t-1}| v^_{t-2}``);
3. aligned perturbation ``x_t <- x_t + alpha (x^_t - x_t)`` (``alpha = 1`` makes the last
   angle 0; ``alpha < 0`` bends instead), or, with ``relative_to="state"``, a step of norm
   ``epsilon |x_t|`` toward ``x^_t``: ``x_t <- x_t + epsilon |x_t| (x^_t - x_t) / |x^_t - x_t|``
   (the size follows the state, not the distance to the extrapolation); the control
   is :func:`icml26.papers.curvature.baselines.misaligned`;
4. run the model again with ``hidden_states[layer]`` patched
   (:func:`~icml26.papers.curvature.hooks.patch_hidden_state`) and return
   ``Delta H_t = H_t(patched) - H_t(clean)`` at the last position ``t = T - 1``.

Only the last point is moved, so a causal model's earlier positions are unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
from typing import Literal

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.common.hf import cache_kwarg, output_cache
from icml26.papers.curvature.baselines import misaligned
from icml26.papers.curvature.entropy import next_token_entropy
from icml26.papers.curvature.geometry import extrapolation_target, turning_angles
from icml26.papers.curvature.hooks import num_layers, patch_hidden_state

__all__ = ["PerturbationResult", "PerturbationSweep", "perturb_and_measure", "perturbation_sweep", "straighten"]

log = logging.getLogger(__name__)
Kind = Literal["aligned", "misaligned"]
RelativeTo = Literal["target", "state"]



def _last_logits_only(model: nn.Module) -> dict[str, int]:
    """The keyword that makes ``model`` apply its LM head to the last position only: ``{"logits_to_keep": 1}``
    (transformers >= 4.50; ``num_logits_to_keep`` in 4.45-4.49), or ``{}`` for a model without one.

    Used where no logits are read at all (the cached path's prefix pass, whose hidden states and
    key-value cache do not depend on the head): SmolLM2's head is a fifth of its pass there. Not used
    where the last position's logits are read: a head applied to fewer rows is a differently shaped
    matrix product, whose float rounding may differ (it does for some shapes).
    """
    params = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return {name: 1}
    return {}


def _check_relative_to(relative_to: str) -> None:
    if relative_to not in ("target", "state"):
        raise ValueError(f"relative_to={relative_to!r} must be 'target' (alpha |x^_t - x_t|) or 'state' "
                         f"(epsilon |x_t|)")


def _unit(v: Tensor) -> Tensor:
    norm = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return torch.where(norm > 0, v / norm.clamp_min(torch.finfo(v.dtype).tiny), torch.zeros_like(v))


def straighten(hidden: Tensor, alpha: float, *, keep_step_length: bool = False,
               relative_to: RelativeTo = "target") -> Tensor:
    """Move the last point of each trajectory toward its constant-velocity extrapolation.

    Args:
        hidden: ``(..., T, d)`` trajectories (e.g. one layer's hidden states).
        alpha: with ``relative_to="target"``: ``x_t <- x_t + alpha (x^_t - x_t)`` (1 straightens
            fully, 0 changes nothing); with ``relative_to="state"`` it is ``epsilon``: a step of
            norm ``epsilon |x_t|`` toward ``x^_t`` (it overshoots ``x^_t`` when
            ``epsilon |x_t| > |x^_t - x_t|``; a point already on its extrapolation does not move).
        keep_step_length: see :func:`extrapolation_target`.
        relative_to: ``"target"`` or ``"state"`` (see ``alpha``).

    Returns:
        A copy of ``hidden`` with only the last point changed.
    """
    check_real(alpha, "alpha")
    _check_relative_to(relative_to)
    if not isinstance(hidden, Tensor):
        raise TypeError(f"hidden must be a torch.Tensor (..., T, d), got {type(hidden).__name__}")
    target = extrapolation_target(hidden, keep_step_length=keep_step_length)
    out = hidden.clone()
    last = hidden[..., -1, :]
    if relative_to == "target":
        # x_t <- x_t + alpha (x^_t - x_t)
        out[..., -1, :] = last + alpha * (target - last)
    else:
        # x_t <- x_t + epsilon |x_t| (x^_t - x_t) / |x^_t - x_t|
        x = last.float() if last.dtype not in (torch.float32, torch.float64) else last
        step = alpha * torch.linalg.vector_norm(x, dim=-1, keepdim=True) * _unit(target.to(x.dtype) - x)
        out[..., -1, :] = (x + step).to(hidden.dtype)
    return out


@dataclasses.dataclass
class PerturbationResult:
    """Entropies at the last position before and after one patched forward pass (all ``(batch,)``).

    ``delta_entropy`` is NaN for a row whose patched (or clean) logits are not finite.
    """

    entropy_clean: Tensor
    entropy_perturbed: Tensor
    shift_norm: Tensor
    """``|x_t' - x_t|``, the size of the perturbation."""
    angle_clean: Tensor
    """Last turning angle ``phi_{t-1}`` before the perturbation (radians)."""
    angle_perturbed: Tensor
    """Last turning angle after it."""

    @property
    def delta_entropy(self) -> Tensor:
        """``Delta H_t = H_t(perturbed) - H_t(clean)``."""
        return self.entropy_perturbed - self.entropy_clean


def _check_inputs(model, input_ids, layer) -> int:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
    if not isinstance(input_ids, Tensor) or input_ids.ndim != 2 or input_ids.shape[1] < 3 or input_ids.shape[0] < 1:
        raise ValueError("input_ids must be a (batch, T) tensor of token ids with batch >= 1 and T >= 3")
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise TypeError(f"input_ids must be integer token ids, got {input_ids.dtype}")
    layer = check_int(layer, "layer")
    n = num_layers(model)
    if not -(n + 1) <= layer <= n:
        raise ValueError(f"layer={layer} is out of range for a model with {n} blocks (0 .. {n})")
    if model.training:
        log.warning("perturbing a model in train mode; dropout makes Delta H noisy")
    return layer


@torch.no_grad()
def perturb_and_measure(
    model: nn.Module,
    input_ids: Tensor,
    layer: int,
    alpha: float,
    kind: Kind = "aligned",
    *,
    generator: torch.Generator | None = None,
    keep_step_length: bool = False,
    relative_to: RelativeTo = "target",
) -> PerturbationResult:
    """Perturb the last point of ``hidden_states[layer]`` and measure the entropy change.

    Args:
        model: a Hugging Face causal LM (call ``model.eval()`` first: dropout adds noise).
        input_ids: ``(batch, T)`` unpadded token ids, ``T >= 3``; the last position of each
            row is perturbed and measured.
        layer: ``0 .. L`` in the ``output_hidden_states`` convention (see :mod:`.hooks`; negative values
            count from ``L``).
        alpha: perturbation size as a fraction of ``|x^_t - x_t|`` (``relative_to="target"``) or
            of ``|x_t|`` (``relative_to="state"``, i.e. ``epsilon``).
        kind: ``"aligned"`` (:func:`straighten`) or ``"misaligned"`` (the norm-matched
            control orthogonal to the local trajectory plane).
        generator: random draws of the misaligned direction.
        keep_step_length: see :func:`extrapolation_target`.
        relative_to: what ``alpha`` scales (see :func:`straighten`).
    """
    if kind not in ("aligned", "misaligned"):
        raise ValueError(f"kind={kind!r} must be 'aligned' or 'misaligned'")
    _check_relative_to(relative_to)
    layer = _check_inputs(model, input_ids, layer)
    check_real(alpha, "alpha")
    device = next(model.parameters()).device
    input_ids = input_ids.to(device)
    clean = model(input_ids=input_ids, output_hidden_states=True)
    hidden = clean.hidden_states[layer]
    if kind == "aligned":
        patched = straighten(hidden, alpha, keep_step_length=keep_step_length, relative_to=relative_to)
    else:
        patched = misaligned(hidden, alpha, generator, keep_step_length=keep_step_length, relative_to=relative_to)
    with patch_hidden_state(model, layer, patched):
        logits = model(input_ids=input_ids).logits
    return PerturbationResult(
        entropy_clean=next_token_entropy(clean.logits[:, -1]),
        entropy_perturbed=next_token_entropy(logits[:, -1]),
        shift_norm=torch.linalg.vector_norm((patched - hidden)[:, -1].float(), dim=-1),
        angle_clean=turning_angles(hidden[:, -3:])[:, 0],
        angle_perturbed=turning_angles(patched[:, -3:])[:, 0],
    )


@dataclasses.dataclass
class PerturbationSweep:
    """``Delta H`` at the last position over a grid of state-relative sizes (:func:`perturbation_sweep`)."""

    epsilons: list[float]
    """The sizes ``epsilon`` (``|delta| = epsilon |x_t|``)."""
    aligned: Tensor
    """``(n_eps, batch)``: ``Delta H`` of the aligned step of each size."""
    misaligned: Tensor
    """``(n_eps, batch)``: ``Delta H`` of the misaligned step (one random direction per row, the same for
    every size, so each row traces one line through ``x_t``)."""
    state_norm: Tensor
    """``(batch,)``: ``|x_t|``."""
    target_distance: Tensor
    """``(batch,)``: ``|x^_t - x_t|`` (the aligned step overshoots ``x^_t`` when ``epsilon |x_t|`` exceeds it)."""


@torch.no_grad()
def perturbation_sweep(
    model: nn.Module,
    input_ids: Tensor,
    layer: int,
    epsilons,
    *,
    generator: torch.Generator | None = None,
    keep_step_length: bool = False,
    use_cache: bool = False,
) -> PerturbationSweep:
    """Aligned and misaligned steps of norm ``epsilon |x_t|`` at the last point, for every ``epsilon``.

    One clean forward pass, then ``2 len(epsilons)`` patched ones. The misaligned direction of
    each row is drawn once (the generator's state is reset for each size), so ``Delta H(epsilon)``
    is measured along one fixed direction per row and per arm, as the initial slope
    (:func:`~icml26.papers.curvature.analysis.initial_slope`) needs.

    Args:
        model, input_ids, layer: as :func:`perturb_and_measure`.
        epsilons: positive sizes, e.g. ``(0.01, 0.02, 0.05, 0.1)``.
        generator: draws of the misaligned directions.
        keep_step_length: see :func:`extrapolation_target`.
        use_cache: run the first ``T - 1`` tokens once and keep their keys and values; every
            patched pass then runs only the last token against that cache (a causal model's earlier
            positions do not depend on the last one). The same ``Delta H`` as ``False`` up to
            float rounding (tested), about ``T`` times less work per patched pass, which is what
            makes thousands of prefixes of a 135M-parameter model affordable on a CPU. Needs a
            Hugging Face model whose cache supports ``crop`` (``DynamicCache``).
    """
    try:
        eps = [float(e) for e in epsilons]
    except (TypeError, ValueError):
        raise TypeError(f"epsilons must be a sequence of numbers, got {epsilons!r}") from None
    if not eps or any(not (math.isfinite(e) and e > 0) for e in eps):
        raise ValueError(f"epsilons={epsilons!r} must be a non-empty sequence of positive finite sizes")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be True or False, got {use_cache!r}")
    layer = _check_inputs(model, input_ids, layer)
    device = next(model.parameters()).device
    input_ids = input_ids.to(device)
    hidden, clean_logits, patched_logits = _passes(model, input_ids, layer, use_cache)
    h_clean = next_token_entropy(clean_logits)
    state = generator.get_state() if generator is not None else None
    out: dict[str, list[Tensor]] = {"aligned": [], "misaligned": []}
    for e in eps:
        for kind in ("aligned", "misaligned"):
            if kind == "aligned":
                patched = straighten(hidden, e, keep_step_length=keep_step_length, relative_to="state")
            else:
                if generator is not None:
                    generator.set_state(state)
                patched = misaligned(hidden, e, generator, keep_step_length=keep_step_length, relative_to="state")
            out[kind].append(next_token_entropy(patched_logits(patched)) - h_clean)
    last = hidden[:, -1].float()
    target = extrapolation_target(hidden, keep_step_length=keep_step_length).float()
    return PerturbationSweep(epsilons=eps, aligned=torch.stack(out["aligned"]), misaligned=torch.stack(out["misaligned"]),
                             state_norm=torch.linalg.vector_norm(last, dim=-1),
                             target_distance=torch.linalg.vector_norm(target - last, dim=-1))


def _passes(model: nn.Module, input_ids: Tensor, layer: int, use_cache: bool):
    """``hidden_states[layer]``, the last position's clean logits, and a function giving the last
    position's logits with ``hidden_states[layer]`` patched: through the prefix's KV cache
    (:func:`_cached_passes`) or by full passes."""
    if use_cache:
        return _cached_passes(model, input_ids, layer)
    clean = model(input_ids=input_ids, output_hidden_states=True)

    def patched_logits(patched: Tensor) -> Tensor:
        with patch_hidden_state(model, layer, patched):
            return model(input_ids=input_ids).logits[:, -1]

    return clean.hidden_states[layer], clean.logits[:, -1], patched_logits


def _cached_passes(model: nn.Module, input_ids: Tensor, layer: int):
    """``hidden_states[layer]`` and the last position's logits of a clean pass over ``input_ids``, run as
    ``T - 1`` cached tokens plus the last one, and a function that reruns only the last token with its
    ``hidden_states[layer]`` patched (the cache is cropped back to ``T - 1`` after every pass). The prefix
    pass skips the LM head where the model allows (:func:`_last_logits_only`): nothing reads its logits. On a
    Llama-type model a patched pass runs only the blocks from ``layer`` up (:func:`_upper_blocks`): the blocks
    below it see the unpatched last token, as in the clean pass."""
    n_prefix = input_ids.shape[1] - 1
    head = model(input_ids=input_ids[:, :-1], output_hidden_states=True, use_cache=True,
                 **_last_logits_only(model))
    cache = output_cache(head)
    if cache is None or not hasattr(cache, "crop"):
        raise ValueError(f"use_cache=True needs a model that returns a croppable key-value cache (DynamicCache); "
                         f"{type(model).__name__} returned {type(cache).__name__}; use use_cache=False")
    last_ids = input_ids[:, -1:]
    kw = cache_kwarg(model)

    def crop() -> None:  # drop the last token's keys and values (a negative count: every transformers version)
        cache.crop(n_prefix - cache.get_seq_length())

    tail = model(input_ids=last_ids, **{kw: cache}, output_hidden_states=True, use_cache=True)
    crop()
    hidden = torch.cat([head.hidden_states[layer], tail.hidden_states[layer]], dim=1)
    upper = _upper_blocks(model, layer, cache)

    def patched_logits(patched: Tensor) -> Tensor:
        if upper is not None:
            return _logits_from_block(model, upper, patched[:, -1:], cache, kw, n_prefix)
        with patch_hidden_state(model, layer, patched[:, -1:]):
            logits = model(input_ids=last_ids, **{kw: cache}, use_cache=True).logits[:, -1]
        crop()
        return logits

    return hidden, tail.logits[:, -1], patched_logits


_PASSTHROUGH_EMBEDS = ("llama",)
"""``config.model_type`` of the models whose ``forward(inputs_embeds=x)`` feeds ``x`` to the first block
unchanged (no position embedding added, no scaling), so a block stack that starts at block ``l`` fed the
patched ``hidden_states[l]`` computes exactly what the full stack with a patch hook on block ``l`` does."""


def _upper_blocks(model: nn.Module, layer: int, cache):
    """Blocks ``layer .. L-1`` of ``model`` when the patched passes may start there (else ``None``).

    A patch at ``hidden_states[layer]`` of the last token leaves that token's blocks ``0 .. layer-1``
    unchanged, so rerunning them for every patch (what the hook path does) is wasted work: at SmolLM2's
    layer 22 of 30 it is most of each patched pass. Only for a Llama-type model (the patch enters as
    ``inputs_embeds``, see ``_PASSTHROUGH_EMBEDS``), an inner layer ``0 < layer < L``, and a cache whose
    per-layer entries can be cropped one by one (``cache.layers``).
    """
    n = num_layers(model)
    inner = getattr(model, "model", None)
    blocks = getattr(inner, "layers", None)
    if (getattr(model.config, "model_type", None) not in _PASSTHROUGH_EMBEDS or not 0 < layer < n
            or not isinstance(blocks, nn.ModuleList) or len(blocks) != n
            or len(getattr(cache, "layers", ())) != n or not all(hasattr(c, "crop") for c in cache.layers)):
        return None
    return nn.ModuleList(list(blocks)[layer:])


def _logits_from_block(model: nn.Module, upper: nn.ModuleList, patched_last: Tensor, cache, kw: str,
                       n_prefix: int) -> Tensor:
    """The last position's logits with ``hidden_states[layer]`` of the last token replaced by
    ``patched_last`` ``(batch, 1, d)``: the blocks ``upper`` (``layer .. L-1``) alone run, fed the patch as
    ``inputs_embeds``, against the prefix's cache (positions and mask come from the cache's first layer,
    which holds the prefix, as in a full pass); the upper layers' caches are cropped back to the prefix
    after it. The same numbers as the hook path (:func:`patch_hidden_state` on a full pass), bit for bit
    (tested): the same modules on the same inputs."""
    inner = model.model
    full = inner.layers
    embeds = patched_last.to(device=model.get_input_embeddings().weight.device,
                             dtype=model.get_input_embeddings().weight.dtype)
    inner.layers = upper
    try:
        logits = model(inputs_embeds=embeds, **{kw: cache}, use_cache=True).logits[:, -1]
    finally:
        inner.layers = full
        for entry in cache.layers:  # drop the last token's keys and values where a block ran
            if entry.get_seq_length() > n_prefix:
                entry.crop(n_prefix - entry.get_seq_length())
    return logits
