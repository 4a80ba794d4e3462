"""zs_expand: granularity-aware adaptive classifier expansion via zero-shot learning.

*Granularity-Aware Adaptive Classifier Expansion via Zero-Shot Learning* (ICML 2026 poster;
no paper text, code or numbers are public). **Every component here is our interpretation of the
abstract's three stages** and of the paper's lineage (ICIS, CEMIL; see ``README.md``):

1. multi-source semantics under nuisance interventions, averaged into ``s̄_c``
   (:func:`encode_descriptions`, :func:`causal_semantics`);
2. transductive group discovery on ``cos(s̄)`` with an eigengap / silhouette group count
   (:func:`discover_groups`, :class:`GroupClusterer`);
3. granularity-aware synthesis ``ŵ_c = f₀(s̄_c) + f_g(s̄_c − μ_g)`` with group-balanced losses, an
   invariance penalty, a cosine loss and ICIS's norm-scale heuristic (:class:`ClassifierExpander`),
   then :func:`inject` into the trained head.

Quick use on your own head and class descriptions::

    from icml26.common.encoder import get_encoder
    from icml26.papers.zs_expand import ClassifierExpander, encode_descriptions, inject
    views = encode_descriptions(descriptions, nuisances, get_encoder())     # (C, M, N, 384)
    expander = ClassifierExpander().fit(views[seen], head.weight, all_semantics=views)
    new_head = inject(head, expander.expand(views[unseen]))

``METHOD`` is :class:`ClassifierExpander`; ``BASELINES`` holds drop-in alternatives with the same
``fit(seen_semantics, seen_weights, all_semantics=None)`` / ``expand(unseen_semantics)`` calls.
"""

from typing import Callable

from icml26.papers.zs_expand.analysis import (
    gzsl_scores,
    harmonic_mean,
    intervention_variance,
    per_class_accuracy,
    restricted_predictions,
)
from icml26.papers.zs_expand.baselines import (
    ICISExpander,
    JointAutoencoder,
    SharedMLP,
    SharedMLPExpander,
    WAvgExpander,
)
from icml26.papers.zs_expand.data import GranularityBenchmark, granularity_benchmark
from icml26.papers.zs_expand.head import inject
from icml26.papers.zs_expand.semantics import as_views, causal_semantics, encode_descriptions
from icml26.papers.zs_expand.structure import (
    GroupClusterer,
    GroupStructure,
    discover_groups,
    eigengap_count,
    self_tuning_affinity,
    silhouette_count,
)
from icml26.papers.zs_expand.synthesis import (
    ClassifierExpander,
    LinearMap,
    cosine_loss,
    fit_ridge,
    group_balanced_loss,
    group_balanced_weights,
    invariance_penalty,
    norm_scale,
    nuisance_covariance,
)

# METHOD is an alias of a name already in __all__, so it is not listed there itself.
METHOD: Callable = ClassifierExpander
"""The paper's expander (our interpretation)."""
BASELINES: dict[str, Callable] = {
    "wavg": WAvgExpander,
    "shared_mlp": SharedMLPExpander,
    "icis": ICISExpander,
}
"""Drop-in alternatives to :data:`METHOD`: ``cls(**options).fit(seen_semantics, seen_weights,
all_semantics=None).expand(unseen_semantics)``."""

__all__ = [
    "BASELINES",
    "ClassifierExpander",
    "GranularityBenchmark",
    "GroupClusterer",
    "GroupStructure",
    "ICISExpander",
    "JointAutoencoder",
    "LinearMap",
    "SharedMLP",
    "SharedMLPExpander",
    "WAvgExpander",
    "as_views",
    "causal_semantics",
    "cosine_loss",
    "discover_groups",
    "eigengap_count",
    "encode_descriptions",
    "fit_ridge",
    "granularity_benchmark",
    "group_balanced_loss",
    "group_balanced_weights",
    "gzsl_scores",
    "harmonic_mean",
    "inject",
    "intervention_variance",
    "invariance_penalty",
    "norm_scale",
    "nuisance_covariance",
    "per_class_accuracy",
    "restricted_predictions",
    "self_tuning_affinity",
    "silhouette_count",
]
