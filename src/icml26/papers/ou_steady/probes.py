"""Hostile calls to the ou_steady API and what each must do (run by ``tests/test_hostile.py``).

The package exports no ``nn.Module``, so ``MODULES`` is empty.
"""

from __future__ import annotations

import numpy as np

from icml26.contract import Probe
from icml26.papers.ou_steady import (
    Intervention,
    OUEstimate,
    OUProcess,
    Regime,
    condensation_order,
    fit_lsq,
    fit_observational_lyapunov,
    fit_recursive,
    fit_strength,
    identifiability_nullity,
    moment_system,
    predict,
    random_scc_system,
    scale_aligned_error,
)

from icml26.papers.ou_steady.analysis import nullity_summary, oracle_choice  # noqa: E402

MODULES: list = []


def _setup():
    process, support, components = random_scc_system(np.random.default_rng(0), (2, 2))
    interventions = [None, Intervention(components[0][0]), Intervention(components[1][0])]
    regimes = [process.intervene(iv).regime() for iv in interventions]
    return process, support, interventions, regimes


def _fitted():
    process, support, interventions, regimes = _setup()
    return process, fit_lsq(regimes, interventions), regimes


_NAN = float("nan")

HOSTILE = [
    # Intervention
    Probe("Intervention: NaN strength", lambda: Intervention(0, "soft_drift", _NAN), match="strength"),
    Probe("Intervention: string strength", lambda: Intervention(0, "soft_drift", "1"), match="strength"),
    Probe("Intervention: unknown kind", lambda: Intervention(0, "hard"), match="kind"),
    Probe("Intervention: negative target", lambda: Intervention(-1), match="target"),
    Probe("Intervention: fractional target", lambda: Intervention(1.5), match="target"),
    Probe("Intervention: boolean target", lambda: Intervention(True), match="target"),
    Probe("Intervention: a knockout needs no strength", lambda: Intervention(0, "knockout"),
          returns=lambda iv: iv.strength is None and not iv.has_strength,
          doc="a knockout has no strength; one passed for it is stored as None"),
    # OUProcess
    Probe("OUProcess: non-Hurwitz drift", lambda: OUProcess(np.eye(2), np.zeros(2), np.ones(2)), match="Hurwitz"),
    Probe("OUProcess: NaN drift", lambda: OUProcess(np.full((2, 2), np.nan), np.zeros(2), np.ones(2)),
          match="finite"),
    Probe("OUProcess: empty drift", lambda: OUProcess(np.zeros((0, 0)), np.zeros(0), np.zeros(0)), match="drift"),
    Probe("OUProcess: non-square drift", lambda: OUProcess(-np.ones((2, 3)), np.zeros(2), np.ones(2)),
          match="drift"),
    Probe("OUProcess: text drift", lambda: OUProcess("B", np.zeros(1), np.ones(1)), match="drift"),
    Probe("OUProcess: negative diffusion", lambda: OUProcess(-np.eye(2), np.zeros(2), -np.ones(2)),
          match="diffusion"),
    Probe("OUProcess: const of the wrong length", lambda: OUProcess(-np.eye(2), np.zeros(3), np.ones(2)),
          match="const"),
    Probe("OUProcess.sample: zero samples", lambda: _setup()[0].sample(0, 0), match="n_samples"),
    Probe("OUProcess.sample: fractional count", lambda: _setup()[0].sample(2.5, 0), match="n_samples"),
    Probe("OUProcess.sample: rng=None", lambda: _setup()[0].sample(5, None), match="rng"),
    Probe("OUProcess.intervene: target out of range", lambda: _setup()[0].intervene(Intervention(9)),
          match="out of range"),
    Probe("OUProcess.intervene: not an Intervention", lambda: _setup()[0].intervene(3), match="intervention"),
    # Regime
    Probe("Regime: NaN mean", lambda: Regime(np.full(2, np.nan), np.eye(2)), match="finite"),
    Probe("Regime: empty", lambda: Regime(np.zeros(0), np.zeros((0, 0))), match="mean"),
    Probe("Regime: non-symmetric cov", lambda: Regime(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]])),
          match="symmetric"),
    Probe("Regime: indefinite cov", lambda: Regime(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]])),
          match="semi-definite"),
    Probe("Regime: cov of the wrong shape", lambda: Regime(np.zeros(2), np.eye(3)), match="cov"),
    Probe("Regime: one sample", lambda: Regime(np.zeros(2), np.eye(2), 1), match="n_samples"),
    Probe("Regime: fractional sample count", lambda: Regime(np.zeros(2), np.eye(2), 2.5), match="n_samples"),
    Probe("Regime.from_samples: 1-D samples", lambda: Regime.from_samples(np.zeros(5)), match="samples"),
    Probe("Regime.from_samples: NaN samples", lambda: Regime.from_samples(np.full((5, 2), np.nan)),
          match="finite"),
    # the moment system and the oracle
    Probe("moment_system: observational regime without its None",
          lambda: moment_system(_setup()[3], _setup()[2][1:]), match="None"),
    Probe("moment_system: not a Regime", lambda: moment_system([np.eye(2)], [None]), match="regimes"),
    Probe("moment_system: not an Intervention", lambda: moment_system(_setup()[3], [None, 0, 2]),
          match="interventions"),
    Probe("moment_system: support of the wrong shape",
          lambda: moment_system(_setup()[3], _setup()[2], np.ones((3, 3), bool)), match="support"),
    Probe("moment_system: knockout paired with an unclamped regime",
          lambda: moment_system(_setup()[3], [None, Intervention(0, "knockout"), Intervention(2)]),
          match="knockout"),
    Probe("identifiability_nullity: no regimes", lambda: identifiability_nullity([], []), match="regimes"),
    Probe("identifiability_nullity: negative rtol",
          lambda: identifiability_nullity(_setup()[3], _setup()[2], rtol=-1.0), match="rtol"),
    Probe("identifiability_nullity: NaN rtol",
          lambda: identifiability_nullity(_setup()[3], _setup()[2], rtol=_NAN), match="rtol"),
    # estimators
    Probe("fit_lsq: NaN l1", lambda: fit_lsq(_setup()[3], _setup()[2], l1=_NAN), match="l1"),
    Probe("fit_lsq: negative l1", lambda: fit_lsq(_setup()[3], _setup()[2], l1=-0.1), match="l1"),
    Probe("fit_lsq: max_iter 0", lambda: fit_lsq(_setup()[3], _setup()[2], max_iter=0), match="max_iter"),
    Probe("fit_lsq: NaN tol", lambda: fit_lsq(_setup()[3], _setup()[2], tol=_NAN), match="tol"),
    Probe("fit_lsq: observational only", lambda: fit_lsq(_setup()[3][:1], [None]), match="interventional"),
    Probe("fit_lsq: observational only with the support",
          lambda: fit_lsq(_setup()[3][:1], [None], support=_setup()[1]),
          returns=lambda est: isinstance(est, OUEstimate) and np.isfinite(est.drift).all(),
          doc="with a support the observational-only fit is allowed; it identifies the process only where "
              "identifiability_nullity says 1 (on the 3-3-2 systems of the reproduction, not on this dense 2-2 one)"),
    Probe("fit_recursive: refine not a bool",
          lambda: fit_recursive(_setup()[3], _setup()[2], _setup()[1], refine=1), raises=TypeError, match="refine"),
    Probe("nullity_summary: empty", lambda: nullity_summary([]), match="non-empty"),
    Probe("oracle_choice: empty", lambda: oracle_choice([]), match="non-empty"),
    Probe("oracle_choice: every error NaN", lambda: oracle_choice([_NAN, _NAN]), returns=lambda i: i == 0,
          doc="no finite error: the first grid value"),
    Probe("fit_recursive: support None", lambda: fit_recursive(_setup()[3], _setup()[2], None), match="support"),
    Probe("fit_recursive: NaN rank_rtol",
          lambda: fit_recursive(_setup()[3], _setup()[2], _setup()[1], rank_rtol=_NAN), match="rank_rtol"),
    Probe("fit_recursive: a component without intervention",
          lambda: fit_recursive(_setup()[3][:2], _setup()[2][:2], _setup()[1]), match="no intervention"),
    Probe("fit_observational_lyapunov: a list of regimes",
          lambda: fit_observational_lyapunov(_setup()[3]), match="regime"),
    Probe("fit_observational_lyapunov: NaN diffusion",
          lambda: fit_observational_lyapunov(_setup()[3][0], diffusion=np.full(4, np.nan)), match="diffusion"),
    Probe("fit_observational_lyapunov: NaN l1",
          lambda: fit_observational_lyapunov(_setup()[3][0], l1=_NAN), match="l1"),
    Probe("condensation_order: non-square support", lambda: condensation_order(np.ones((2, 3), bool)),
          match="support"),
    Probe("condensation_order: empty support", lambda: condensation_order(np.ones((0, 0), bool)), match="support"),
    Probe("random_scc_system: NaN skew", lambda: random_scc_system(0, (2, 2), skew=_NAN), match="skew"),
    Probe("random_scc_system: negative cross_edges", lambda: random_scc_system(0, (2, 2), cross_edges=-1),
          match="cross_edges"),
    Probe("random_scc_system: empty sizes", lambda: random_scc_system(0, ()), match="scc_sizes"),
    Probe("random_scc_system: fractional sizes", lambda: random_scc_system(0, (2.5, 2)), match="scc_sizes"),
    Probe("random_scc_system: text rng", lambda: random_scc_system("seed", (2, 2)), match="rng"),
    Probe("random_scc_system: margin 0", lambda: random_scc_system(0, (2, 2), margin=0.0), match="margin"),
    # using an estimate
    Probe("OUEstimate: inconsistent shapes", lambda: OUEstimate(np.zeros(3), np.zeros(3), np.zeros(3), (), "x"),
          match="drift"),
    Probe("predict: a process instead of an estimate", lambda: predict(_setup()[0], None), match="estimate"),
    Probe("OUEstimate: NaN drift", lambda: OUEstimate(np.full((4, 4), np.nan), np.zeros(4), np.ones(4), (), "x"),
          match="drift"),
    Probe("OUEstimate: text diffusion", lambda: OUEstimate(-np.eye(2), np.zeros(2), "d", (), "x"),
          raises=TypeError, match="diffusion"),
    Probe("predict: non-Hurwitz estimate", lambda: predict(OUEstimate(np.eye(2), np.zeros(2), np.ones(2), (), "x"),
                                                           None), match="Hurwitz"),
    Probe("fit_strength: a knockout", lambda: fit_strength(_fitted()[1], Intervention(0, "knockout"), _fitted()[2][1]),
          match="no strength"),
    Probe("fit_strength: None intervention", lambda: fit_strength(_fitted()[1], None, _fitted()[2][1]),
          match="intervention"),
    Probe("fit_strength: regime of another size",
          lambda: fit_strength(_fitted()[1], Intervention(0), Regime(np.zeros(2), np.eye(2))), match="nodes"),
    Probe("scale_aligned_error: nodes out of range", lambda: scale_aligned_error(_fitted()[1], _fitted()[0], nodes=[9]),
          match="nodes"),
    Probe("scale_aligned_error: empty nodes", lambda: scale_aligned_error(_fitted()[1], _fitted()[0], nodes=[]),
          match="nodes"),
    Probe("scale_aligned_error: unknown part", lambda: scale_aligned_error(_fitted()[1], _fitted()[0], part="B"),
          match="part"),
    Probe("scale_aligned_error: truth of another size",
          lambda: scale_aligned_error(_fitted()[1], OUProcess(-np.eye(2), np.zeros(2), np.ones(2))), match="nodes"),
]


def _regimes():
    return _setup()[3]


def _interventions():
    return _setup()[2]


VALID = {
    "Intervention": lambda: ((0,), {"kind": "soft_drift", "strength": 1.5}),
    "OUEstimate": lambda: ((-np.eye(2), np.zeros(2), np.ones(2), (1.0,), "lsq"), {}),
    "OUProcess": lambda: ((-np.eye(2), np.zeros(2), np.ones(2)), {}),
    "Regime": lambda: ((np.zeros(2), np.eye(2), 10), {}),
    "condensation_order": lambda: ((_setup()[1],), {}),
    "fit_lsq": lambda: ((_regimes(), _interventions()), {"l1": 1e-4, "max_iter": 50, "tol": 1e-9}),
    "fit_observational_lyapunov": lambda: ((_regimes()[0],), {"diffusion": np.ones(4), "l1": 1e-4,
                                                              "max_iter": 50, "tol": 1e-9}),
    "fit_recursive": lambda: ((_regimes(), _interventions(), _setup()[1]), {"rank_rtol": 1e-10}),
    "fit_strength": lambda: ((_fitted()[1], Intervention(0), _fitted()[2][1]), {}),
    "identifiability_nullity": lambda: ((_regimes(), _interventions()), {"rtol": 1e-9}),
    "moment_system": lambda: ((_regimes(), _interventions()), {}),
    "predict": lambda: ((_fitted()[1], Intervention(0)), {}),
    "random_scc_system": lambda: ((0, (2, 2)), {"cross_edges": 1, "skew": 2.0, "symmetric": 0.3,
                                                "cross_scale": 1.0, "margin": 0.5}),
    "scale_aligned_error": lambda: ((_fitted()[1], _fitted()[0]), {"nodes": [0, 1]}),
}
