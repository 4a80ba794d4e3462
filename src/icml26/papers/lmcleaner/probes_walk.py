"""The hostile-input walk's declarations for lmcleaner (``VALID``, ``NOT_WALKED``, ``ALLOWED``; imported by
``probes.py``): small valid calls on a softmax model trained for 8 recorded SGD steps, built afresh for
every call (a deep copy of one recorded run) so that no walked call sees another's edits.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from icml26.papers.lmcleaner import (
    DataPool,
    ExactHVP,
    NoiseSpec,
    TailCorrection,
    UnitCosts,
    random_basis,
)

_DT = torch.float64


def _probes():
    """probes.py, which imports this module at its end (so it is imported lazily here)."""
    from icml26.papers.lmcleaner import probes

    return probes


def _run():
    """(problem, recorder, θ_τ): a deep copy of the probes' one recorded run, so every call gets its own."""
    return copy.deepcopy(_probes()._recorded())


def _basis():
    # contiguous: the walk writes its NaN through a flat view, which QR's column-major output does not allow
    return random_basis(8, 2, dtype=_DT).contiguous()


def _residual():
    return torch.linspace(-0.1, 0.1, 8, dtype=_DT)


def _units():
    return UnitCosts(sgd_step=1e-3, hvp=2e-3, rebuild_step=1e-4, tail_hvp=1e-3)


def _with_run(make):
    """A VALID entry ``make(problem, recorder, θ_τ) -> (args, kwargs)`` on a fresh run."""
    return lambda: make(*_run())


def _baseline(**kwargs):
    """A baseline's valid call: delete sample 7 (used at step 1) at τ = 8."""
    return _with_run(lambda p, r, th: ((p, r, th, [7], 8), dict(kwargs)))


def _sym(v):
    """A fixed symmetric positive definite 4 × 4 operator."""
    a = torch.tensor([[2.0, 0.5, 0.0, 0.0], [0.5, 1.5, 0.2, 0.0], [0.0, 0.2, 1.0, 0.1], [0.0, 0.0, 0.1, 0.5]],
                     dtype=v.dtype)
    return a @ v


VALID = {
    "BatchMeanFisherHVP": _with_run(lambda p, r, th: ((p,), {})),
    "DataPool": lambda: ((torch.arange(10), 3), {"epochs": 2, "generator": torch.Generator().manual_seed(0)}),
    "EmpiricalFisherHVP": _with_run(lambda p, r, th: ((p,), {})),
    "ExactHVP": _with_run(lambda p, r, th: ((p,), {})),
    "GaussNewtonHVP": _with_run(lambda p, r, th: ((p,), {})),
    "NoiseSpec": lambda: ((1.0, 1.0, 1e-5), {"mode": "subspace", "basis": _basis(), "beta": 0.1}),
    "OnlineUnlearner": _with_run(lambda p, r, th: ((p, r), {"hvp": ExactHVP(p), "window": 2,
                                                            "pool": DataPool(torch.arange(40), 5),
                                                            "noise": NoiseSpec(1.0, 1.0, 1e-5, basis=_basis())})),
    "ReplayRemover": _with_run(lambda p, r, th: ((p,), {})),
    "SupervisedProblem": lambda: ((nn.Linear(3, 2).double(), _probes()._ce, *(t.clone() for t in _probes()._data())),
                                  {"l2": 1e-3, "clip_norm": 1.0}),
    "TailCorrection": _with_run(lambda p, r, th: ((p, torch.arange(30, 40)), {"krylov_dim": 2,
                                                                              "cost_per_call": 1.0})),
    "TrajectoryRecorder": _with_run(lambda p, r, th: ((p.model,), {"checkpoint_every": 2, "problem": p})),
    "TruncatedRemover": _with_run(lambda p, r, th: ((ExactHVP(p), 2), {})),
    "UnitCosts": lambda: ((), {"sgd_step": 1e-3, "hvp": 2e-3, "rebuild_step": 1e-4, "tail_hvp": 1e-3}),
    "add_isotropic_noise": lambda: ((_residual(),), {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5,
                                                     "generator": torch.Generator().manual_seed(0)}),
    "add_subspace_noise": lambda: ((_residual(), _basis()), {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5,
                                                             "beta": 0.1,
                                                             "generator": torch.Generator().manual_seed(0)}),
    "concentration": lambda: ((_residual(), _basis(), 1.0), {}),
    "correction_path": _with_run(lambda p, r, th: ((r, th, 1, 8), {"windows": [1, 3], "hvp": ExactHVP(p),
                                                                   "damping": 0.01})),
    "effective_window": lambda: ((3, 1, 8), {}),
    "gaussian_delta": lambda: ((1.0, 0.5), {}),
    "gaussian_epsilon": lambda: ((1.0, 1e-5), {}),
    "gradient_ascent_unlearn": _baseline(steps=2, lr=0.1),
    "hessian_band_basis": _with_run(lambda p, r, th: ((p, th, torch.arange(30, 40)), {"lr": 1.0, "window": 1,
                                                                                      "lag": 1000, "max_dim": 2,
                                                                                      "num_iters": 8,
                                                                                      "seed": 0})),
    "hessian_basis": _with_run(lambda p, r, th: ((p, th, torch.arange(30, 40), 2), {"num_iters": 8, "seed": 0})),
    "hessian_flat_basis": _with_run(lambda p, r, th: ((p, th, torch.arange(30, 40), 2), {"num_iters": 8,
                                                                                         "seed": 0})),
    "isotropic_noise_scale": lambda: ((1.0, 1.0, 1e-5), {}),
    "krylov_expm_multiply": lambda: ((_sym, torch.ones(4, dtype=_DT), 0.5), {"krylov_dim": 3, "shift": 0.1}),
    "lanczos_top_eigenvectors": lambda: ((_sym, 4, 2), {"num_iters": 4, "seed": 0}),
    "lmcleaner_unlearn": _with_run(lambda p, r, th: ((p, r, th, [7], 8), {"window": 2, "hvp": ExactHVP(p),
                                                                          "damping": 0.01})),
    "mahalanobis_shift": lambda: ((_residual(), _basis(), 0.5, 2.0), {}),
    "make_hvp": _with_run(lambda p, r, th: ((p, "gauss_newton"), {})),
    "measure_unit_costs": _with_run(lambda p, r, th: ((p, r, th, 2, ExactHVP(p)),
                                                      {"tail": TailCorrection(p, torch.arange(30, 40), krylov_dim=2),
                                                       "repeats": 1, "rebuild_span": 2, "hvp_block": 2,
                                                       "step_block": 2})),
    "neggrad_plus_unlearn": _baseline(steps=2, lr=0.1, beta=0.5),
    "no_op": _baseline(),
    "predict_lmcleaner_seconds": lambda: ((_units(), [2, 3], [5, 6]), {"tail_calls": 4}),
    "predict_replay_seconds": lambda: ((_units(), 6, 1), {}),
    "predict_retrain_seconds": lambda: ((_units(), 8, 1), {}),
    "random_basis": lambda: ((8, 2), {"seed": 3}),
    "remaining_time": _with_run(lambda p, r, th: ((r, 1, 8, 2), {})),
    "replay_counterfactual": _baseline(),
    "retrain_from_scratch": _baseline(),
    "sample_subspace_noise": lambda: ((_basis(), 0.5, 2.0), {"num_samples": 3, "like": _residual(),
                                                             "generator": torch.Generator().manual_seed(0)}),
    "subspace_noise_scales": lambda: ((1.0, 1.0, 1e-5, 0.1), {}),
    "truncated_correction": _with_run(lambda p, r, th: ((r, th, 1, 8), {"window": 2, "hvp": ExactHVP(p),
                                                                        "damping": 0.01})),
}

NOT_WALKED = {
    "HVP": "a typing.Protocol (the interface of an HVP backend), not instantiable; the four backends and make_hvp "
           "are walked",
    "HVPKind": "a typing.Literal of the HVP backend names, not a function; make_hvp (walked) and HOSTILE "
               "'make_hvp: unknown kind' check the name",
    "PerSampleLoss": "a typing alias of the per-sample loss callable, not a function; SupervisedProblem (walked) "
                     "takes one",
    "Remover": "a typing.Protocol (the interface of a remover), not instantiable; TruncatedRemover, ReplayRemover "
               "and OnlineUnlearner(remover=...) are walked",
    "Certificate": "a plain (epsilon, delta) record that add_subspace_noise / add_isotropic_noise (walked) fill; "
                   "HOSTILE 'Certificate: a record' documents it",
    "Correction": "a result record filled by truncated_correction and correction_path (both walked)",
    "NoisyRelease": "a result record filled by add_subspace_noise / add_isotropic_noise (both walked)",
    "Removal": "a result record a remover returns (TruncatedRemover and ReplayRemover are walked); NaN parameters "
               "in one are refused when OnlineUnlearner writes them (HOSTILE 'TrajectoryRecorder.record_edit: "
               "NaN θ')",
    "ServedRequest": "a result record filled by OnlineUnlearner.serve (OnlineUnlearner is walked; the serving "
                     "loop by tests/papers/test_lmcleaner.py)",
    "StepRecord": "a record TrajectoryRecorder (walked) keeps per step; TrajectoryRecorder.step checks lr and the "
                  "batch ids (HOSTILE 'TrajectoryRecorder.step: NaN lr', '...: negative id')",
    "Unlearned": "a result record filled by lmcleaner_unlearn and the baselines (all walked)",
}

ALLOWED = {
    "sample_subspace_noise.like": "a template whose dtype and device the draws take (documented); its values "
                                  "are never read, so NaN in it changes nothing",
}
