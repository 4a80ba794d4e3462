"""ReViT's tiny modules for the module matrix and its hostile-input probes."""

from __future__ import annotations

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.revit import (
    FieldFitResult,
    NavierStokesData,
    PlainViT,
    ReViT,
    ReViT2d,
    ReViT3d,
    apply_rotation,
    basis_pyramid,
    c4_matrix,
    canonical_basis,
    fit,
    make_navier_stokes_pairs,
    random_c4_augment,
    rotate_field,
    rotated_mse,
    simulate_navier_stokes,
    velocity_from_vorticity,
    vorticity_from_velocity,
)
from icml26.papers.revit.layers import TentKernel

_SMALL = dict(patch=2, dim=16, heads=2, depths=(1, 1), window=2)


def _field(b: int = 2, n: int = 8, dims: int = 2, generator: torch.Generator | None = None) -> torch.Tensor:
    """One scalar + one vector field with a mean flow (well-defined frames)."""
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    x = torch.randn(b, 1 + dims, *([n] * dims), generator=g)
    x[:, 1] += 1.0
    return x


def _equivariance_error(model: torch.nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        y = model(x)
        return max(float((model(rotate_field(x, k, 1, 1)) - rotate_field(y, k, 1, 1)).abs().max()) for k in (1, 2, 3))


def _zero_velocity_model_error() -> float:
    torch.manual_seed(0)
    model = ReViT2d(1, 1, 1, 1, **_SMALL).double().eval()
    x = _field(generator=torch.Generator().manual_seed(1)).double()
    x[:, 1:] = 0.0  # no velocity anywhere: no direction exists
    return _equivariance_error(model, x)


def _nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[0] = float("nan")
    return x


def _zero_velocity_equivariance() -> float:
    x = _field().double()
    x[:, 1:] = 0.0
    model = ReViT2d(1, 1, 1, 1, **_SMALL).double().eval()
    with torch.no_grad():
        y = model(x)
        return max(float((model(rotate_field(x, k, 1, 1)) - rotate_field(y, k, 1, 1)).abs().max()) for k in (1, 2, 3))


MODULES = [
    ModuleCase("ReViT2d", build=lambda: ReViT2d(1, 1, 1, 1, **_SMALL), inputs=lambda g: (_field(generator=g),)),
    ModuleCase("ReViT", build=lambda: ReViT(1, 1, 1, 1, dims=2, **_SMALL), inputs=lambda g: (_field(generator=g),)),
    ModuleCase("ReViT3d", build=lambda: ReViT3d(1, 1, 1, 1, patch=2, dim=24, heads=2, depths=(1,), window=2),
               inputs=lambda g: (_field(b=1, n=4, dims=3, generator=g),)),
    ModuleCase("PlainViT", build=lambda: PlainViT(1, 1, 1, 1, grid_size=8, **_SMALL),
               inputs=lambda g: (_field(generator=g),)),
]

_ONES = torch.ones(1, 3, 8, 8)
_PAIRS = (_field(b=4), torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(2)))

HOSTILE = [
    # the group action
    Probe("rotate_field k=1.5 is not a quarter-turn count", lambda: rotate_field(_ONES, 1.5, 1, 1),
          raises=TypeError, match="k"),
    Probe("rotate_field 3D k outside 0..23", lambda: rotate_field(torch.ones(1, 1, 2, 2, 2), 24, 1, 0, dims=3),
          match="k=24"),
    Probe("rotate_field dims=4", lambda: rotate_field(_ONES, 1, 1, 1, dims=4), match="dims"),
    Probe("rotate_field channel split does not match", lambda: rotate_field(_ONES, 1, 2, 1), match="n_scalar"),
    Probe("rotate_field negative n_vector", lambda: rotate_field(_ONES, 1, 5, -1), match="n_vector"),
    Probe("rotate_field on NumPy returns NumPy, rotated",
          lambda: rotate_field(np.arange(9.0).reshape(1, 1, 3, 3), 1, 1, 0),
          returns=lambda v: isinstance(v, np.ndarray) and v[0, 0, 0, 0] == 6.0,
          doc="NumPy in, NumPy out, same convention as for tensors"),
    Probe("rotate_field moves NaN, never invents it", lambda: rotate_field(_nan(_ONES), 1, 1, 1),
          returns=lambda v: int(torch.isnan(v).sum()) == 1, doc="values are permuted and sign-flipped only"),
    Probe("rotate_field on a string", lambda: rotate_field("field", 1, 1, 1), raises=TypeError, match="x must"),
    Probe("apply_rotation with a 45° rotation", lambda: apply_rotation(_ONES[:, 1:], torch.tensor([[0.7, -0.7],
                                                                                                  [0.7, 0.7]]), 0, 1),
          match="rotation"),
    Probe("apply_rotation with a 3x3 matrix on a 2D field",
          lambda: apply_rotation(_ONES, torch.eye(3, dtype=torch.int64), 1, 1), match="3D field|shape"),
    Probe("c4_matrix k=0.5", lambda: c4_matrix(0.5), raises=TypeError, match="k"),
    Probe("c4_matrix k=True", lambda: c4_matrix(True), raises=TypeError, match="k"),
    # frames
    Probe("canonical_basis with NaN velocity", lambda: canonical_basis(_nan(torch.ones(1, 2, 4, 4)), 2),
          match="u contains NaN"),
    Probe("canonical_basis patch=0", lambda: canonical_basis(torch.ones(1, 2, 4, 4), 0), match="patch"),
    Probe("canonical_basis patch not dividing the grid", lambda: canonical_basis(torch.ones(1, 2, 4, 4), 3),
          match="patch"),
    Probe("canonical_basis eps=-1", lambda: canonical_basis(torch.ones(1, 2, 4, 4), 2, eps=-1.0), match="eps"),
    Probe("canonical_basis integer field", lambda: canonical_basis(torch.ones(1, 2, 4, 4, dtype=torch.int64), 2),
          raises=TypeError, match="floating"),
    Probe("canonical_basis of u ≡ 0 gives zero frames", lambda: canonical_basis(torch.zeros(1, 2, 4, 4), 2),
          returns=lambda v: bool((v == 0).all()), doc="no direction exists: zero columns keep R·B = B(L_R u)"),
    Probe("basis_pyramid levels=0", lambda: basis_pyramid(torch.ones(1, 2, 4, 4), 2, 0), match="levels"),
    # models
    Probe("ReViT2d on an all-zero velocity stays equivariant", _zero_velocity_model_error,
          returns=lambda err: err <= 1e-12, doc="degenerate frames are zero, so equivariance is kept"),
    Probe("ReViT2d forward with NaN", lambda: ReViT2d(1, 1, 1, 1, **_SMALL)(_nan(_field())), match="NaN"),
    Probe("ReViT2d local_kernel='cubic'", lambda: ReViT2d(1, 1, 1, 1, local_kernel="cubic", **_SMALL),
          match="local_kernel"),
    Probe("TentKernel spacing=0", lambda: TentKernel(torch.zeros(4, 2), 0.0), match="spacing"),
    Probe("ReViT2d on an all-zero velocity: zero frames, equivariant, one warning",
          lambda: _zero_velocity_equivariance(), returns=lambda err: err <= 1e-12,
          doc="no direction exists, so the frames are zero (R·0 = 0): exactly equivariant; a warning is logged"),
    Probe("ReViT2d forward with the wrong channel count",
          lambda: ReViT2d(1, 1, 1, 1, **_SMALL)(torch.ones(1, 4, 8, 8)), match="expected a field"),
    Probe("ReViT2d forward on a grid that does not tile",
          lambda: ReViT2d(1, 1, 1, 1, **_SMALL)(torch.ones(1, 3, 6, 6)), match="token grid|divisible"),
    Probe("ReViT2d patch=1.5", lambda: ReViT2d(1, 1, 1, 1, patch=1.5), raises=TypeError, match="patch"),
    Probe("ReViT2d window=0", lambda: ReViT2d(1, 1, 1, 1, window=0), match="window"),
    Probe("ReViT2d depths=()", lambda: ReViT2d(1, 1, 1, 1, depths=()), match="depths"),
    Probe("ReViT2d without a vector input", lambda: ReViT2d(1, 0, 1, 0), match="n_vector_in"),
    Probe("ReViT2d vector_fraction=nan", lambda: ReViT2d(1, 1, 1, 1, vector_fraction=float("nan")),
          match="vector_fraction"),
    Probe("ReViT dims=4", lambda: ReViT(1, 1, 1, 1, dims=4), match="dims"),
    Probe("ReViT3d fed a 2D field", lambda: ReViT3d(1, 1, 1, 1, patch=2, dim=24, heads=2, depths=(1,))(_field()),
          match="expected a field"),
    Probe("PlainViT forward on another grid size",
          lambda: PlainViT(1, 1, 1, 1, grid_size=8, **_SMALL)(torch.ones(1, 3, 16, 16)), match="expected a field"),
    Probe("PlainViT grid_size=0", lambda: PlainViT(1, 1, 1, 1, grid_size=0, patch=2), match="grid_size"),
    Probe("PlainViT heads not dividing dim", lambda: PlainViT(1, 1, 1, 1, grid_size=8, dim=10, heads=3),
          match="heads"),
    # training and evaluation
    Probe("random_c4_augment with mismatched batches",
          lambda: random_c4_augment(torch.ones(4, 3, 8, 8), torch.ones(3, 2, 8, 8), 1, 1, 0, 1), match="inputs"),
    Probe("fit with NaN inputs", lambda: fit(ReViT2d(1, 1, 0, 1, **_SMALL), _nan(_PAIRS[0]), _PAIRS[1], steps=1),
          match="inputs contains NaN"),
    Probe("fit lr=nan", lambda: fit(ReViT2d(1, 1, 0, 1, **_SMALL), *_PAIRS, steps=1, lr=float("nan")), match="lr"),
    Probe("fit steps=0", lambda: fit(ReViT2d(1, 1, 0, 1, **_SMALL), *_PAIRS, steps=0), match="steps"),
    Probe("fit with no pairs", lambda: fit(ReViT2d(1, 1, 0, 1, **_SMALL), _PAIRS[0][:0], _PAIRS[1][:0], steps=1),
          match="empty"),
    Probe("fit augment on a model without a channel split",
          lambda: fit(torch.nn.Conv2d(3, 2, 1), *_PAIRS, steps=1, augment=True), match="channel split"),
    Probe("rotated_mse with no pairs",
          lambda: rotated_mse(ReViT2d(1, 1, 0, 1, **_SMALL), _PAIRS[0][:0], _PAIRS[1][:0], n_scalar_in=1,
                              n_vector_in=1, n_scalar_out=0, n_vector_out=1), match="empty"),
    Probe("rotated_mse rotations=(0.5,)",
          lambda: rotated_mse(ReViT2d(1, 1, 0, 1, **_SMALL), *_PAIRS, n_scalar_in=1, n_vector_in=1, n_scalar_out=0,
                              n_vector_out=1, rotations=(0.5,)), raises=TypeError, match="rotations"),
    Probe("FieldFitResult of zero seconds has NaN speed", lambda: FieldFitResult(losses=[1.0], seconds=0.0).steps_per_s,
          returns=lambda v: v != v, doc="steps/s is undefined without elapsed time: NaN"),
    # data
    Probe("simulate_navier_stokes nu=nan",
          lambda: simulate_navier_stokes(torch.zeros(1, 8, 8), torch.zeros(1, 2), nu=float("nan")), match="nu"),
    Probe("simulate_navier_stokes dt=0", lambda: simulate_navier_stokes(torch.zeros(1, 8, 8), torch.zeros(1, 2), dt=0),
          match="dt"),
    Probe("simulate_navier_stokes NaN vorticity",
          lambda: simulate_navier_stokes(_nan(torch.zeros(1, 8, 8)), torch.zeros(1, 2)), match="omega0"),
    Probe("simulate_navier_stokes non-square grid",
          lambda: simulate_navier_stokes(torch.zeros(1, 8, 6), torch.zeros(1, 2)), match="omega0"),
    Probe("make_navier_stokes_pairs odd grid", lambda: make_navier_stokes_pairs(1, 1, grid=9), match="grid"),
    Probe("make_navier_stokes_pairs trajectories=0", lambda: make_navier_stokes_pairs(0, 1), match="trajectories"),
    Probe("make_navier_stokes_pairs omega_std=inf",
          lambda: make_navier_stokes_pairs(1, 1, grid=8, omega_std=float("inf")), match="omega_std"),
    Probe("velocity_from_vorticity with a (B, 3) background",
          lambda: velocity_from_vorticity(torch.zeros(2, 8, 8), torch.zeros(2, 3)), match="background"),
    Probe("velocity_from_vorticity NaN spreads over the field",
          lambda: velocity_from_vorticity(_nan(torch.zeros(1, 8, 8, dtype=torch.float64)),
                                          torch.zeros(1, 2, dtype=torch.float64)),
          returns=lambda v: bool(torch.isnan(v).all()), doc="NaN in, NaN everywhere (a global inverse Laplacian)"),
    Probe("vorticity_from_velocity with three components",
          lambda: vorticity_from_velocity(torch.zeros(1, 3, 8, 8)), match="u must be"),
    Probe("NavierStokesData with unpaired targets",
          lambda: NavierStokesData(torch.zeros(4, 3, 8, 8), torch.zeros(3, 2, 8, 8)), match="targets"),
]


# The hostile-input walk (tests/test_hostile_walk.py): a small valid call of every export.
def _pairs() -> tuple[torch.Tensor, torch.Tensor]:
    return _field(b=4), torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(2))


def _omega() -> torch.Tensor:
    return torch.randn(1, 8, 8, generator=torch.Generator().manual_seed(3))


VALID = {
    "NavierStokesData": lambda: (_pairs(), {}),
    "PlainViT": lambda: ((1, 1, 1, 1), {"grid_size": 8, **_SMALL}),
    "ReViT": lambda: ((1, 1, 1, 1), {"dims": 2, **_SMALL}),
    "ReViT2d": lambda: ((1, 1, 1, 1), dict(_SMALL)),
    "ReViT3d": lambda: ((1, 1, 1, 1), {"patch": 2, "dim": 24, "heads": 2, "depths": (1,), "window": 2}),
    "apply_rotation": lambda: ((_field(b=1), c4_matrix(1), 1, 1), {}),
    "basis_pyramid": lambda: ((_field(b=1)[:, 1:], 2, 2), {}),
    "c4_matrix": lambda: ((1,), {}),
    "canonical_basis": lambda: ((_field(b=1)[:, 1:], 2), {}),
    "fit": lambda: ((ReViT2d(1, 1, 0, 1, **_SMALL), *_pairs()), {"steps": 1, "batch_size": 2}),
    "make_navier_stokes_pairs": lambda: ((1, 1), {"grid": 8, "substeps": 2}),
    "random_c4_augment": lambda: ((*_pairs(), 1, 1, 0, 1, torch.Generator().manual_seed(0)), {}),
    "rotate_field": lambda: ((_field(b=1), 1, 1, 1), {}),
    "rotated_mse": lambda: ((ReViT2d(1, 1, 0, 1, **_SMALL).eval(), *_pairs()),
                            {"n_scalar_in": 1, "n_vector_in": 1, "n_scalar_out": 0, "n_vector_out": 1}),
    "simulate_navier_stokes": lambda: ((_omega(), torch.zeros(1, 2)), {"substeps": 2, "snapshots": 2}),
    "velocity_from_vorticity": lambda: ((_omega(), torch.zeros(1, 2)), {}),
    "vorticity_from_velocity": lambda: ((_field(b=1)[:, 1:],), {}),
}

NOT_WALKED = {
    "FieldFitResult": "a result record filled by fit (walked); HOSTILE probes its steps_per_s",
}

_MOVED = ("documented: the group action permutes values and flips signs, never computes with them, so a NaN is "
          "moved like any other value (HOSTILE 'rotate_field moves NaN, never invents it'); a check would cost a "
          "device sync per batch in fit(augment=True)")
_ANY_TURN = "documented: any integer number of quarter turns, taken mod 4 (k=-1 is a clockwise quarter turn)"
_SPECTRAL = ("documented: NaN in, NaN everywhere (a global spectral operator), HOSTILE 'velocity_from_vorticity "
             "NaN spreads over the field'; an all-NaN field cannot pass for a valid one")

ALLOWED = {
    "apply_rotation.x:nan": _MOVED,
    "rotate_field.x:nan": _MOVED,
    "random_c4_augment.inputs:nan": _MOVED,
    "random_c4_augment.targets:nan": _MOVED,
    "rotate_field.k:negative": _ANY_TURN,
    "c4_matrix.k:negative": _ANY_TURN,
    "velocity_from_vorticity.omega:nan": _SPECTRAL,
    "velocity_from_vorticity.background:nan": "documented: a NaN background component is added to every pixel of "
                                              "that component; an all-NaN component cannot pass for a valid one",
    "vorticity_from_velocity.u:nan": _SPECTRAL,
}
