"""LMCleaner: certified online unlearning via truncated influence propagation.

Deleting the mini-batch used at step t_z of an SGD run means removing its update
u[t_z] and the update's effect on later steps. LMCleaner propagates u[t_z] through
at most K later steps with Hessian-vector products (v ← v − η_s·H[s]·v), subtracts
the result from the current parameters, θ̂ = θ[τ] − v, and adds calibrated
(subspace-aware) noise for an (ε, δ) certificate.

Public API:

* :class:`SupervisedProblem`: model + per-sample loss + data by sample id, evaluated
  functionally at any flat θ.
* :class:`TrajectoryRecorder`: records an SGD loop (updates or sparse checkpoints).
* HVP backends :class:`ExactHVP`, :class:`GaussNewtonHVP`, :class:`EmpiricalFisherHVP`,
  :class:`BatchMeanFisherHVP`, and :func:`make_hvp`.
* :func:`truncated_correction`, :func:`correction_path`, :func:`effective_window`; our tail
  extension :class:`TailCorrection` (``tail=``, off by default) with :func:`krylov_expm_multiply`
  and :func:`remaining_time`.
* Cost: :class:`UnitCosts`, :func:`measure_unit_costs` and the per-request model
  :func:`predict_lmcleaner_seconds`, :func:`predict_retrain_seconds`, :func:`predict_replay_seconds`.
* Noise and certificates: :func:`subspace_noise_scales`, :func:`add_subspace_noise`,
  :func:`sample_subspace_noise`, :func:`isotropic_noise_scale`, :func:`add_isotropic_noise`, :func:`random_basis`,
  :func:`hessian_basis`, :func:`hessian_band_basis`, :func:`hessian_flat_basis`, :func:`lanczos_top_eigenvectors`, :func:`gaussian_delta`,
  :func:`gaussian_epsilon`, :func:`mahalanobis_shift`, :func:`concentration`.
* :class:`RDPAccountant`: the privacy ledger across requests.
* :class:`OnlineUnlearner` and :class:`DataPool`: serving deletion requests during training,
  with a pluggable remover (:class:`TruncatedRemover`, LMCleaner, by default;
  :class:`ReplayRemover`, exact replay).
* Baselines sharing the positional signature ``(problem, recorder, params_now, forget_ids,
  now_step)``: :func:`lmcleaner_unlearn` (the method), :func:`retrain_from_scratch`,
  :func:`replay_counterfactual`, :func:`gradient_ascent_unlearn`, :func:`neggrad_plus_unlearn`,
  :func:`no_op` (``BASELINES``). There is no ``METHOD``: the method needs ``window`` and ``hvp``
  and the ascent baselines a step budget and a learning rate, so their required keywords differ.

The ascent baselines are ``gradient_ascent_unlearn`` and ``neggrad_plus_unlearn``, not
``gradient_ascent`` and ``neggrad_plus``: they are procedures here, while hamu's functions of
those names are directions (one meaning per name).
"""

from typing import Callable

from .accountant import DEFAULT_ORDERS, RDPAccountant
from .baselines import (
    Unlearned,
    gradient_ascent_unlearn,
    lmcleaner_unlearn,
    neggrad_plus_unlearn,
    no_op,
    replay_counterfactual,
    retrain_from_scratch,
)
from .hvp import HVP, BatchMeanFisherHVP, EmpiricalFisherHVP, ExactHVP, GaussNewtonHVP, HVPKind, make_hvp
from .privacy import (
    Certificate,
    NoisyRelease,
    add_isotropic_noise,
    add_subspace_noise,
    concentration,
    gaussian_delta,
    gaussian_epsilon,
    hessian_band_basis,
    hessian_basis,
    hessian_flat_basis,
    isotropic_noise_scale,
    lanczos_top_eigenvectors,
    mahalanobis_shift,
    random_basis,
    sample_subspace_noise,
    subspace_noise_scales,
)
from .problem import PerSampleLoss, SupervisedProblem
from .cost import UnitCosts, measure_unit_costs, predict_lmcleaner_seconds, predict_replay_seconds, predict_retrain_seconds
from .propagation import Correction, correction_path, effective_window, remaining_time, truncated_correction
from .tail import TailCorrection, krylov_expm_multiply
from .trajectory import StepRecord, TrajectoryRecorder
from .unlearner import (
    DataPool,
    NoiseSpec,
    OnlineUnlearner,
    Removal,
    Remover,
    ReplayRemover,
    ServedRequest,
    TruncatedRemover,
)

BASELINES: dict[str, Callable] = {
    "retrain": retrain_from_scratch,
    "replay": replay_counterfactual,
    "gradient_ascent": gradient_ascent_unlearn,
    "neggrad_plus": neggrad_plus_unlearn,
    "no_op": no_op,
}
"""The paper's baselines by name; they share lmcleaner_unlearn's positional arguments."""

__all__ = [
    "BASELINES",
    "BatchMeanFisherHVP",
    "Certificate",
    "Correction",
    "DEFAULT_ORDERS",
    "DataPool",
    "EmpiricalFisherHVP",
    "ExactHVP",
    "GaussNewtonHVP",
    "HVP",
    "HVPKind",
    "NoiseSpec",
    "NoisyRelease",
    "OnlineUnlearner",
    "PerSampleLoss",
    "RDPAccountant",
    "Removal",
    "Remover",
    "ReplayRemover",
    "ServedRequest",
    "StepRecord",
    "SupervisedProblem",
    "TailCorrection",
    "TrajectoryRecorder",
    "TruncatedRemover",
    "UnitCosts",
    "Unlearned",
    "add_isotropic_noise",
    "add_subspace_noise",
    "concentration",
    "correction_path",
    "effective_window",
    "gaussian_delta",
    "gaussian_epsilon",
    "gradient_ascent_unlearn",
    "hessian_band_basis",
    "hessian_basis",
    "hessian_flat_basis",
    "isotropic_noise_scale",
    "krylov_expm_multiply",
    "lanczos_top_eigenvectors",
    "lmcleaner_unlearn",
    "mahalanobis_shift",
    "make_hvp",
    "measure_unit_costs",
    "neggrad_plus_unlearn",
    "no_op",
    "predict_lmcleaner_seconds",
    "predict_replay_seconds",
    "predict_retrain_seconds",
    "random_basis",
    "remaining_time",
    "replay_counterfactual",
    "retrain_from_scratch",
    "sample_subspace_noise",
    "subspace_noise_scales",
    "truncated_correction",
]
