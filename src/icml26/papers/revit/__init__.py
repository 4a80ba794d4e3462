"""ReViT: rotation-equivariant vision transformers for neural PDE solvers.

Wei, List, Thuerey, ICML 2026. Public API:

* :func:`rotate_field`, :func:`apply_rotation`, :func:`octahedral_group`: the exact
  symmetry groups (C4 in 2D, the 24 proper cube rotations in 3D) acting on
  scalar + vector fields.
* :class:`ReViT2d`, :class:`ReViT3d` (:class:`ReViT`): the equivariant model.
* :func:`canonical_basis`, :func:`basis_pyramid`: per-patch canonical frames.
* :class:`PlainViT`, :func:`random_c4_augment`: the baselines.
* :func:`make_navier_stokes_pairs`, :func:`simulate_navier_stokes`: an exactly
  C4-equivariant 2D Navier–Stokes generator.
* :func:`fit`, :func:`rotated_mse`, :class:`FieldFitResult`: training and per-rotation evaluation.

``BASELINES`` holds the paper's baselines (a plain ViT, random C4 augmentation). There is no
``METHOD``: :class:`PlainViT` needs the grid size for its absolute positions and the
augmentation is a training-time transform, so neither is a drop-in for :class:`ReViT2d`'s
signature (see the README).
"""

from typing import Callable

from icml26.papers.revit.baselines import PlainViT, random_c4_augment
from icml26.papers.revit.frames import basis_pyramid, canonical_basis
from icml26.papers.revit.group import (
    apply_rotation,
    c4_matrix,
    octahedral_group,
    reflections_3d,
    rotate_field,
)
from icml26.papers.revit.model import ReViT, ReViT2d, ReViT3d
from icml26.papers.revit.navier_stokes import (
    NavierStokesData,
    make_navier_stokes_pairs,
    simulate_navier_stokes,
    velocity_from_vorticity,
    vorticity_from_velocity,
)
from icml26.papers.revit.training import FieldFitResult, fit, rotated_mse

BASELINES: dict[str, Callable] = {"plain_vit": PlainViT, "c4_augment": random_c4_augment}
"""The paper's baselines: a plain Swin-style ViT of equal size, and the random C4 augmentation
used to train it as "ViT + aug" (``fit(..., augment=True)``)."""

__all__ = [
    "BASELINES",
    "FieldFitResult",
    "NavierStokesData",
    "PlainViT",
    "ReViT",
    "ReViT2d",
    "ReViT3d",
    "apply_rotation",
    "basis_pyramid",
    "c4_matrix",
    "canonical_basis",
    "fit",
    "make_navier_stokes_pairs",
    "octahedral_group",
    "random_c4_augment",
    "reflections_3d",
    "rotate_field",
    "rotated_mse",
    "simulate_navier_stokes",
    "velocity_from_vorticity",
    "vorticity_from_velocity",
]
