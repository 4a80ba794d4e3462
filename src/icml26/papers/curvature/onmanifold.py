"""On-manifold controls of the perturbation study: steps of one size in many directions, each with the
change of the last turning angle it causes, so that the entropy change can be read against the angle
change at a fixed step size.

The aligned step (:func:`~icml26.papers.curvature.perturb.straighten`) changes more than the angle: it
also shortens or lengthens the last step and moves the state along the trajectory. These controls
separate the two. At the last state ``x_t`` of a trajectory (``v_{t-2} = x_{t-1} - x_{t-2}``,
``v_{t-1} = x_t - x_{t-1}``), every direction ``d`` is a unit vector and every step is
``x_t <- x_t + epsilon |x_t| d`` (the size of the aligned step of the same ``epsilon``):

1. ``aligned``: toward the constant-velocity extrapolation, ``d ∝ v_{t-2} - v_{t-1}``;
2. ``rotation``: the aligned direction with its component along ``v_{t-1}`` removed: it turns the
   last step toward ``v_{t-2}`` and keeps its length to first order, so it changes the angle only;
3. ``toward_previous``: ``d = -v_{t-1} / |v_{t-1}|``: it shortens the last step and leaves the angle
   exactly unchanged (while ``epsilon |x_t| < |v_{t-1}|``): curvature-neutral;
4. ``shrink``: ``d = -x_t / |x_t|`` (the state's norm falls);
5. ``misaligned``: the off-plane control of :func:`~icml26.papers.curvature.baselines.misaligned`;
6. ``span_1 .. span_K``: isotropic random directions in ``span{x_{t-2}, x_{t-1}, x_t}``, the
   subspace the aligned, rotation, toward-previous and shrink steps all lie in;
7. ``pc_straightest`` / ``pc_curviest``: the precursor code's best-of-N rule: ``N`` random unit
   directions in the span of the top principal components of the layer's states, the one whose step
   (of the smallest size) leaves the smallest / the largest last angle.

:func:`onmanifold_sweep` measures ``Delta H_t`` and ``Delta phi_{t-1}`` for every direction and size;
:func:`~icml26.papers.curvature.analysis.entropy_per_angle` then regresses each prefix's entropy
slopes on its angle slopes over the random span directions.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor, nn

from icml26.common.argcheck import check_int
from icml26.papers.curvature.baselines import misaligned
from icml26.papers.curvature.entropy import next_token_entropy
from icml26.papers.curvature.geometry import turning_angles
from icml26.papers.curvature.perturb import _check_inputs, _passes

__all__ = ["NAMED_DIRECTIONS", "OnManifoldSweep", "onmanifold_directions", "onmanifold_sweep", "top_components"]

NAMED_DIRECTIONS = ("aligned", "rotation", "toward_previous", "shrink", "misaligned", "pc_straightest",
                    "pc_curviest")
"""The directions every sweep measures besides the ``span_k`` ones (in this order)."""


def _unit(v: Tensor) -> Tensor:
    norm = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return torch.where(norm > 0, v / norm.clamp_min(torch.finfo(v.dtype).tiny), torch.zeros_like(v))


def _last_angle(last3: Tensor) -> Tensor:
    """``phi_{t-1}`` of ``(..., 3, d)`` points."""
    return turning_angles(last3)[..., 0]


def top_components(states: Tensor, k: int) -> Tensor:
    """The top ``k`` principal directions ``(k, d)`` of ``states (n, d)`` (centred; right singular vectors)."""
    k = check_int(k, "k", low=1)
    if not isinstance(states, Tensor) or states.ndim != 2 or states.shape[0] < 2:
        raise ValueError("states must be an (n, d) tensor with n >= 2")
    x = states.double()
    _, _, vh = torch.linalg.svd(x - x.mean(0), full_matrices=False)
    return vh[: min(k, vh.shape[0])].to(states.dtype)


def onmanifold_directions(hidden: Tensor, *, n_random: int, generator: torch.Generator | None = None,
                          components: Tensor | None = None, pc_draws: int = 16,
                          select_epsilon: float = 0.01) -> tuple[list[str], Tensor]:
    """The unit directions of the study at the last point of each trajectory.

    Args:
        hidden: ``(batch, T, d)`` trajectories, ``T >= 3``, ``d >= 3``.
        n_random: ``K``, isotropic random directions in ``span{x_{t-2}, x_{t-1}, x_t}``.
        generator: the random draws (misaligned, span and principal-component directions).
        components: ``(k, d)`` orthonormal principal directions for the best-of-N rule; ``None``:
            the top 10 of the batch's own states (every position of every row).
        pc_draws: ``N`` of the best-of-N rule.
        select_epsilon: the step size (``epsilon |x_t|``) at which the best-of-N rule compares angles.

    Returns:
        ``(names, directions)`` with ``directions`` ``(batch, len(names), d)`` in ``hidden``'s float dtype.
    """
    n_random = check_int(n_random, "n_random", low=0)
    pc_draws = check_int(pc_draws, "pc_draws", low=1)
    x = hidden if hidden.dtype in (torch.float32, torch.float64) else hidden.float()
    if x.ndim != 3 or x.shape[1] < 3 or x.shape[2] < 3:
        raise ValueError(f"hidden has shape {tuple(hidden.shape)}; it must be (batch, T >= 3, d >= 3)")
    prev2, prev, last = x[:, -3], x[:, -2], x[:, -1]
    v_before, v_last = prev - prev2, last - prev  # v_{t-2}, v_{t-1}
    aligned = _unit(v_before - v_last)  # (x^_t - x_t) / |x^_t - x_t|
    e_last = _unit(v_last)
    rotation = _unit(aligned - (aligned * e_last).sum(-1, keepdim=True) * e_last)
    draw_device = generator.device if generator is not None else x.device
    # the off-plane control, as the misaligned arm draws it (a step of epsilon = 1, divided by |x_t|)
    off = misaligned(x, 1.0, generator, relative_to="state")[:, -1] - last
    dirs = {"aligned": aligned, "rotation": rotation, "toward_previous": -e_last, "shrink": -_unit(last),
            "misaligned": _unit(off)}
    # best of N in the principal subspace: the step that leaves the smallest / largest last angle
    basis = top_components(x.reshape(-1, x.shape[-1]), 10) if components is None else components.to(x)
    coef = torch.randn((x.shape[0], pc_draws, basis.shape[0]), generator=generator, dtype=x.dtype,
                       device=draw_device).to(x.device)
    cand = _unit(coef @ basis)  # (batch, N, d)
    moved = last[:, None] + select_epsilon * torch.linalg.vector_norm(last, dim=-1)[:, None, None] * cand
    pts = torch.stack([prev2[:, None].expand_as(moved), prev[:, None].expand_as(moved), moved], dim=-2)
    phi = torch.nan_to_num(_last_angle(pts), nan=float("inf"))  # (batch, N)
    rows = torch.arange(x.shape[0], device=x.device)
    dirs["pc_straightest"] = cand[rows, phi.argmin(1)]
    dirs["pc_curviest"] = cand[rows, torch.where(torch.isinf(phi), -phi, phi).argmax(1)]
    # isotropic in span{x_{t-2}, x_{t-1}, x_t}: Gaussian coefficients on an orthonormal basis of it
    q, _ = torch.linalg.qr(torch.stack([prev2, prev, last], dim=-1).double())  # (batch, d, 3)
    g = torch.randn((x.shape[0], 3, n_random), generator=generator, dtype=torch.float64,
                    device=draw_device).to(x.device)
    span = _unit((q @ g).transpose(1, 2)).to(x.dtype)  # (batch, K, d)
    names = [*NAMED_DIRECTIONS, *(f"span_{k + 1}" for k in range(n_random))]
    return names, torch.cat([torch.stack([dirs[n] for n in NAMED_DIRECTIONS], dim=1), span], dim=1)


@dataclasses.dataclass
class OnManifoldSweep:
    """``Delta H_t`` and ``Delta phi_{t-1}`` of steps ``epsilon |x_t| d`` for every direction ``d`` and size."""

    names: list[str]
    epsilons: list[float]
    delta_entropy: Tensor
    """``(directions, sizes, batch)`` nats."""
    delta_angle: Tensor
    """``(directions, sizes, batch)`` radians (``phi_{t-1}`` after the step minus before)."""
    angle: Tensor
    """``(batch,)`` the clean last angle ``phi_{t-1}``."""
    previous_passed: Tensor
    """``(batch,)`` bool: the largest ``toward_previous`` step passes ``x_{t-1}`` (the angle is then not
    preserved at that size)."""


@torch.no_grad()
def onmanifold_sweep(model: nn.Module, input_ids: Tensor, layer: int, epsilons, *, n_random: int = 8,
                     generator: torch.Generator | None = None, components: Tensor | None = None,
                     pc_draws: int = 16, use_cache: bool = True) -> OnManifoldSweep:
    """Every direction of :func:`onmanifold_directions` at every size, at ``hidden_states[layer]``'s last
    point: one clean pass and ``len(directions) * len(epsilons)`` patched ones (the last token only,
    against the prefix's key-value cache, with ``use_cache``).

    Args:
        model, input_ids, layer: as :func:`~icml26.papers.curvature.perturb.perturbation_sweep`.
        epsilons: positive sizes; the step is ``epsilon |x_t|``; the best-of-N rule selects at the smallest.
        n_random, generator, components, pc_draws: see :func:`onmanifold_directions`.
        use_cache: see :func:`~icml26.papers.curvature.perturb.perturbation_sweep` (the same numbers up
            to float rounding).
    """
    try:
        eps = [float(e) for e in epsilons]
    except (TypeError, ValueError):
        raise TypeError(f"epsilons must be a sequence of numbers, got {epsilons!r}") from None
    if not eps or any(not (e > 0 and e < float("inf")) for e in eps):
        raise ValueError(f"epsilons={epsilons!r} must be a non-empty sequence of positive finite sizes")
    layer = _check_inputs(model, input_ids, layer)
    input_ids = input_ids.to(next(model.parameters()).device)
    hidden, clean_logits, patched_logits = _passes(model, input_ids, layer, use_cache)
    names, dirs = onmanifold_directions(hidden, n_random=n_random, generator=generator, components=components,
                                        pc_draws=pc_draws, select_epsilon=min(eps))
    x = hidden.float() if hidden.dtype not in (torch.float32, torch.float64) else hidden
    last = x[:, -1]
    norm = torch.linalg.vector_norm(last, dim=-1, keepdim=True)
    phi0 = _last_angle(x[:, -3:])
    h0 = next_token_entropy(clean_logits)
    dh = torch.empty(len(names), len(eps), x.shape[0])
    dphi = torch.empty_like(dh)
    for i in range(len(names)):
        for j, e in enumerate(eps):
            # x_t <- x_t + epsilon |x_t| d
            moved = last + e * norm * dirs[:, i]
            patched = x.clone()
            patched[:, -1] = moved
            dh[i, j] = (next_token_entropy(patched_logits(patched.to(hidden.dtype))) - h0).float().cpu()
            dphi[i, j] = (_last_angle(patched[:, -3:]) - phi0).float().cpu()
    step = torch.linalg.vector_norm(last - x[:, -2], dim=-1)
    return OnManifoldSweep(names=names, epsilons=eps, delta_entropy=dh, delta_angle=dphi, angle=phi0.float().cpu(),
                           previous_passed=(max(eps) * norm[:, 0] > step).cpu())
