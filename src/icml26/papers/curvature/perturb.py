"""Straightening a trajectory at its last point, and measuring the entropy change.

Steps (paper: "aligned" perturbations lower next-token entropy; mechanics inferred,
see the README):

1. run the model once, read ``x = hidden_states[layer]`` of every row ``(batch, T, d)``;
2. constant-velocity extrapolation of the last point:
   ``x^_t = x_{t-1} + (x_{t-1} - x_{t-2}) = 2 x_{t-1} - x_{t-2}``
   (or, with ``keep_step_length``, ``x_{t-1} + |x_t - x_{t-1}| v^_{t-2}``);
3. aligned perturbation ``x_t <- x_t + alpha (x^_t - x_t)`` (``alpha = 1`` makes the last
   angle 0; ``alpha < 0`` bends instead); the control is
   :func:`icml26.papers.curvature.baselines.misaligned`;
4. run the model again with ``hidden_states[layer]`` patched
   (:func:`~icml26.papers.curvature.hooks.patch_hidden_state`) and return
   ``Delta H_t = H_t(patched) - H_t(clean)`` at the last position ``t = T - 1``.

Only the last point is moved, so a causal model's earlier positions are unchanged.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int, check_real
from icml26.papers.curvature.baselines import misaligned
from icml26.papers.curvature.entropy import next_token_entropy
from icml26.papers.curvature.geometry import extrapolation_target, turning_angles
from icml26.papers.curvature.hooks import num_layers, patch_hidden_state

__all__ = ["PerturbationResult", "perturb_and_measure", "straighten"]

log = logging.getLogger(__name__)
Kind = Literal["aligned", "misaligned"]


def straighten(hidden: Tensor, alpha: float, *, keep_step_length: bool = False) -> Tensor:
    """Move the last point of each trajectory toward its constant-velocity extrapolation.

    Args:
        hidden: ``(..., T, d)`` trajectories (e.g. one layer's hidden states).
        alpha: ``x_t <- x_t + alpha (x^_t - x_t)``; 1 straightens fully, 0 changes nothing.
        keep_step_length: see :func:`extrapolation_target`.

    Returns:
        A copy of ``hidden`` with only the last point changed.
    """
    check_real(alpha, "alpha")
    if not isinstance(hidden, Tensor):
        raise TypeError(f"hidden must be a torch.Tensor (..., T, d), got {type(hidden).__name__}")
    target = extrapolation_target(hidden, keep_step_length=keep_step_length)
    out = hidden.clone()
    last = hidden[..., -1, :]
    # x_t <- x_t + alpha (x^_t - x_t)
    out[..., -1, :] = last + alpha * (target - last)
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
) -> PerturbationResult:
    """Perturb the last point of ``hidden_states[layer]`` and measure the entropy change.

    Args:
        model: a Hugging Face causal LM (call ``model.eval()`` first: dropout adds noise).
        input_ids: ``(batch, T)`` unpadded token ids, ``T >= 3``; the last position of each
            row is perturbed and measured.
        layer: ``0 .. L`` in the ``output_hidden_states`` convention (see :mod:`.hooks`).
        alpha: perturbation size as a fraction of ``|x^_t - x_t|``.
        kind: ``"aligned"`` (:func:`straighten`) or ``"misaligned"`` (the norm-matched
            control orthogonal to the local trajectory plane).
        generator: random draws of the misaligned direction.
        keep_step_length: see :func:`extrapolation_target`.
    """
    if kind not in ("aligned", "misaligned"):
        raise ValueError(f"kind={kind!r} must be 'aligned' or 'misaligned'")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Hugging Face causal LM (nn.Module), got {type(model).__name__}")
    if not isinstance(input_ids, Tensor) or input_ids.ndim != 2 or input_ids.shape[1] < 3 or input_ids.shape[0] < 1:
        raise ValueError("input_ids must be a (batch, T) tensor of token ids with batch >= 1 and T >= 3")
    if input_ids.is_floating_point() or input_ids.is_complex():
        raise TypeError(f"input_ids must be integer token ids, got {input_ids.dtype}")
    layer = check_int(layer, "layer")
    check_real(alpha, "alpha")
    n = num_layers(model)
    if not -(n + 1) <= layer <= n:
        raise ValueError(f"layer={layer} is out of range for a model with {n} blocks (0 .. {n})")
    if model.training:
        log.warning("perturb_and_measure on a model in train mode; dropout makes Delta H noisy")
    device = next(model.parameters()).device
    input_ids = input_ids.to(device)
    clean = model(input_ids=input_ids, output_hidden_states=True)
    hidden = clean.hidden_states[layer]
    if kind == "aligned":
        patched = straighten(hidden, alpha, keep_step_length=keep_step_length)
    else:
        patched = misaligned(hidden, alpha, generator, keep_step_length=keep_step_length)
    with patch_hidden_state(model, layer, patched):
        logits = model(input_ids=input_ids).logits
    return PerturbationResult(
        entropy_clean=next_token_entropy(clean.logits[:, -1]),
        entropy_perturbed=next_token_entropy(logits[:, -1]),
        shift_norm=torch.linalg.vector_norm((patched - hidden)[:, -1].float(), dim=-1),
        angle_clean=turning_angles(hidden[:, -3:])[:, 0],
        angle_perturbed=turning_angles(patched[:, -3:])[:, 0],
    )
