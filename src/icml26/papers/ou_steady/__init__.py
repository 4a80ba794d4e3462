"""ou_steady: identify an Ornstein–Uhlenbeck process from steady-state snapshots.

"One Intervention per Component is Enough: Towards Identifiability in Linear Stochastic
Dynamics from Steady State" (ICML 2026). Observational and interventional stationary
moments give linear equations in the drift B, constant c and diffusion d; one
covariance-changing intervention per strongly connected component of the drift graph
identifies them up to one global scale.

Usage::

    from icml26.papers.ou_steady import Intervention, Regime, fit_lsq, predict
    regimes = [Regime.from_samples(x_obs)] + [Regime.from_samples(x) for x in x_int]
    interventions = [None] + [Intervention(target=i) for i in targets]
    est = fit_lsq(regimes, interventions, l1=1e-4)

``BASELINES`` holds the observational-only estimator. There is no ``METHOD``: the baseline is
not a drop-in alternative to ``fit_lsq`` (it takes the one observational ``Regime``, not the
list of regimes and interventions).
"""

from typing import Callable

from icml26.papers.ou_steady.baselines import fit_observational_lyapunov
from icml26.papers.ou_steady.equations import identifiability_nullity, moment_system
from icml26.papers.ou_steady.estimators import (
    OUEstimate,
    condensation_order,
    fit_lsq,
    fit_recursive,
    fit_strength,
    predict,
    scale_aligned_error,
)
from icml26.papers.ou_steady.process import (
    INTERVENTION_KINDS,
    Intervention,
    OUProcess,
    Regime,
    random_scc_system,
)

BASELINES: dict[str, Callable] = {"observational_lyapunov": fit_observational_lyapunov}
"""The paper's baseline: observational-only Lyapunov least squares with D = I assumed."""

__all__ = [
    "BASELINES",
    "INTERVENTION_KINDS",
    "Intervention",
    "OUEstimate",
    "OUProcess",
    "Regime",
    "condensation_order",
    "fit_lsq",
    "fit_observational_lyapunov",
    "fit_recursive",
    "fit_strength",
    "identifiability_nullity",
    "moment_system",
    "predict",
    "random_scc_system",
    "scale_aligned_error",
]
