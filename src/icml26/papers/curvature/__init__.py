"""Contextual curvature of LLM representation trajectories and next-token entropy.

King, Fedorenko, Hosseini, ICML 2026 (arXiv 2604.23985). Measure the curvature of a
causal LM's hidden-state trajectories layer by layer (:func:`turning_angles`,
:func:`contextual_curvature`, :func:`layerwise_curvature_entropy`), perturb one layer's
state toward or away from a straight continuation (:func:`straighten`,
:func:`misaligned`, :func:`perturb_and_measure`), and straighten trajectories during
training (:func:`curvature_regularizer`, :class:`CurvatureLoss`). Works on any Hugging
Face causal LM; see README.md.

``METHOD`` is the aligned perturbation :func:`straighten`; ``BASELINES`` holds its control,
:func:`misaligned` (norm-matched, orthogonal to the local trajectory plane), with the same
``(hidden, alpha)`` arguments.
"""

from typing import Callable

from icml26.papers.curvature.layerwise import (
    CurvatureEntropyAnalysis,
    layerwise_curvature_entropy,
    unigram_log_frequency,
)
from icml26.papers.curvature.baselines import misaligned
from icml26.papers.curvature.entropy import next_token_entropy
from icml26.papers.curvature.geometry import (
    contextual_curvature,
    extrapolation_target,
    mean_curvature,
    turning_angles,
)
from icml26.papers.curvature.hooks import decoder_blocks, num_layers, patch_hidden_state
from icml26.papers.curvature.perturb import (
    PerturbationResult,
    PerturbationSweep,
    perturb_and_measure,
    perturbation_sweep,
    straighten,
)
from icml26.papers.curvature.regularizer import CurvatureLoss, curvature_regularizer
from icml26.papers.curvature.stats import PairedTest, paired_test, partial_correlation, pearson, spearman

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD: Callable = straighten
"""The aligned perturbation of the paper's causal test."""
BASELINES: dict[str, Callable] = {"misaligned": misaligned}
"""The control: a drop-in for :data:`METHOD` (same ``hidden, alpha``)."""

__all__ = [
    "BASELINES",
    "CurvatureEntropyAnalysis",
    "CurvatureLoss",
    "PairedTest",
    "PerturbationResult",
    "PerturbationSweep",
    "contextual_curvature",
    "curvature_regularizer",
    "decoder_blocks",
    "extrapolation_target",
    "layerwise_curvature_entropy",
    "mean_curvature",
    "misaligned",
    "next_token_entropy",
    "num_layers",
    "paired_test",
    "partial_correlation",
    "patch_hidden_state",
    "pearson",
    "perturb_and_measure",
    "perturbation_sweep",
    "spearman",
    "straighten",
    "turning_angles",
    "unigram_log_frequency",
]
