"""HAMU: hardness-aware multi-objective machine unlearning (HAMU-Q / HAMU-U).

Each unlearning step solves min g_r·δ s.t. g_f·δ ≥ B, ‖δ‖ ≤ R in closed form
(:func:`hamu_update`), layer-wise or globally inside :class:`HamuOptimizer`; :func:`unlearn`
runs HAMU or a baseline on any torch model, :func:`forget_split` builds forget sets of graded
hardness ρ. See ``README.md`` beside this file.

``BASELINES`` are update *directions* d(g_r, g_f) applied as θ ← θ − lr·d. There is no
``METHOD``: HAMU's step (:func:`hamu_update`) is a constrained problem that also needs the
bound B and the radius R and returns a :class:`HamuStep` δ applied as θ ← θ + δ, so the
baselines are not drop-in alternatives to it; :func:`unlearn` (``method=`` any name of
:data:`UNLEARN_METHODS`) is the interface they share.
"""

from .baselines import (
    BASELINES,
    finetune,
    gradient_ascent,
    graddiff,
    gru,
    kl_graddiff,
    neggrad_plus,
    pcgrad,
    scrub,
)
from .optimizer import HamuOptimizer, HamuStepLog, distribute_bound
from .solver import HamuStep, hamu_update, stopping_threshold
from .splits import forget_split
from .unlearn import UNLEARN_METHODS, UnlearnHistory, unlearn

__all__ = [
    "BASELINES",
    "HamuOptimizer",
    "HamuStep",
    "HamuStepLog",
    "UNLEARN_METHODS",
    "UnlearnHistory",
    "distribute_bound",
    "finetune",
    "forget_split",
    "gradient_ascent",
    "graddiff",
    "gru",
    "hamu_update",
    "kl_graddiff",
    "neggrad_plus",
    "pcgrad",
    "scrub",
    "stopping_threshold",
    "unlearn",
]
