"""zs_expand's tiny modules for the module matrix and its hostile-input probes."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.zs_expand import (
    ClassifierExpander,
    GroupClusterer,
    GroupStructure,
    ICISExpander,
    JointAutoencoder,
    SharedMLP,
    SharedMLPExpander,
    WAvgExpander,
    as_views,
    causal_semantics,
    cosine_loss,
    discover_groups,
    eigengap_count,
    encode_descriptions,
    fit_ridge,
    granularity_benchmark,
    group_balanced_loss,
    group_balanced_weights,
    gzsl_scores,
    harmonic_mean,
    inject,
    intervention_variance,
    invariance_penalty,
    norm_scale,
    nuisance_covariance,
    per_class_accuracy,
    restricted_predictions,
    self_tuning_affinity,
    silhouette_count,
)

_G = np.random.default_rng(0)
_S = _G.normal(size=(12, 6))
_W = _G.normal(size=(12, 4))
_VIEWS = _G.normal(size=(12, 2, 3, 6))


def _zero_row(x: np.ndarray) -> np.ndarray:
    x = np.array(x, copy=True)
    x[0] = 0
    return x


def _nan(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flat[1] = np.nan
    return a


class _Encoder:
    def __init__(self, out: np.ndarray) -> None:
        self.out = out

    def encode(self, texts):
        return np.resize(self.out, (len(texts), self.out.shape[-1]))


def _fitted() -> ClassifierExpander:
    return ClassifierExpander(None, invariance=0.0).fit(_S, _W)


def _icis_pair(g: torch.Generator) -> tuple:
    return (torch.randn(3, 6, generator=g), torch.randn(3, 4, generator=g))


MODULES = [
    ModuleCase("SharedMLP", build=lambda: SharedMLP(6, 4, hidden=8), inputs=lambda g: (torch.randn(3, 6, generator=g),)),
    ModuleCase("JointAutoencoder", build=lambda: JointAutoencoder(6, 4, latent=5, hidden=7), inputs=_icis_pair),
]

HOSTILE = [
    # the bad inputs: mismatched counts, more groups than classes, NaN embeddings
    Probe("fit with mismatched class counts", lambda: ClassifierExpander().fit(_S, _W[:-1]), match="seen_weights"),
    Probe("fit with NaN embeddings", lambda: ClassifierExpander().fit(_nan(_S), _W), match="NaN"),
    Probe("fit with an all-zero seen row", lambda: ClassifierExpander(None).fit(_zero_row(_S), _W, all_semantics=_S),
          match="all-zero"),
    Probe("fit with NaN weights", lambda: ClassifierExpander().fit(_S, _nan(_W)), match="seen_weights"),
    Probe("fit with more groups than classes", lambda: ClassifierExpander(GroupClusterer(n_groups=13)).fit(_S, _W),
          match="more groups than classes"),
    Probe("discover_groups with more groups than classes", lambda: discover_groups(_S, n_groups=20),
          match="more groups than classes"),
    Probe("discover_groups max_groups >= classes", lambda: discover_groups(_S, max_groups=12), match="max_groups"),
    Probe("discover_groups with NaN", lambda: discover_groups(_nan(_S)), match="NaN"),
    Probe("discover_groups method='kmeans'", lambda: discover_groups(_S, method="kmeans"), match="method"),
    Probe("discover_groups criterion='gap'", lambda: discover_groups(_S, criterion="gap"), match="criterion"),
    Probe("discover_groups of views", lambda: discover_groups(_VIEWS), match="causal_semantics"),
    Probe("discover_groups with a zero row", lambda: discover_groups(np.vstack([_S, np.zeros(6)])),
          match="all-zero"),
    Probe("discover_groups of one class", lambda: discover_groups(_S[:1]), match="at least 2"),
    Probe("GroupClusterer n_groups=1.5", lambda: GroupClusterer(n_groups=1.5), raises=TypeError, match="n_groups"),
    Probe("GroupClusterer method='dbscan'", lambda: GroupClusterer(method="dbscan"), match="method"),
    Probe("eigengap_count of an asymmetric affinity", lambda: eigengap_count(np.triu(np.ones((5, 5)))),
          match="symmetric"),
    Probe("eigengap_count of a non-square affinity", lambda: eigengap_count(np.ones((3, 4))), match="square"),
    Probe("eigengap_count max_groups too large", lambda: eigengap_count(np.ones((4, 4)) - np.eye(4), 2, 4),
          match="max_groups"),
    Probe("silhouette_count min_groups=1", lambda: silhouette_count(_S, 1, 3), match="min_groups"),
    Probe("self_tuning_affinity neighbours=0", lambda: self_tuning_affinity(_S, 0), match="neighbours"),
    Probe("fit with all_semantics missing the seen classes",
          lambda: ClassifierExpander().fit(_S[:6], _W[:6], all_semantics=_S[6:]), match="all_semantics"),
    Probe("fit with a clusterer returning the wrong count", lambda: ClassifierExpander(lambda s: [0, 1]).fit(_S, _W),
          match="groups|labels"),
    Probe("fit with float labels from the clusterer",
          lambda: ClassifierExpander(lambda s: np.full(len(s), 0.5)).fit(_S, _W), raises=TypeError, match="integer"),
    Probe("fit with 1-D weights", lambda: ClassifierExpander().fit(_S, _W[:, 0]), match="seen_weights"),
    Probe("fit with 5-D semantics", lambda: ClassifierExpander().fit(_VIEWS[..., None], _W), match="semantics"),
    Probe("fit with string semantics", lambda: ClassifierExpander().fit("cat", _W), raises=TypeError,
          match="seen_semantics"),
    Probe("expand before fit", lambda: ClassifierExpander().expand(_S), raises=RuntimeError, match="fit"),
    Probe("expand with the wrong width", lambda: _fitted().expand(_S[:, :5]), match="width"),
    Probe("expand with NaN", lambda: _fitted().expand(_nan(_S)), match="NaN"),
    Probe("expand with an unknown group", lambda: _fitted().expand(_S[:2], groups=[0, 7]), match="groups"),
    Probe("ClassifierExpander refiner='deep'", lambda: ClassifierExpander(refiner="deep"), match="refiner"),
    Probe("ClassifierExpander invariance=-1", lambda: ClassifierExpander(invariance=-1.0), match="invariance"),
    Probe("ClassifierExpander coarse_alpha=nan", lambda: ClassifierExpander(coarse_alpha=math.nan),
          match="coarse_alpha"),
    Probe("ClassifierExpander cosine_steps=2.5", lambda: ClassifierExpander(cosine_steps=2.5), raises=TypeError,
          match="cosine_steps"),
    Probe("ClassifierExpander clusterer='kmeans'", lambda: ClassifierExpander(clusterer="kmeans"),
          match="clusterer='kmeans'"),
    Probe("ClassifierExpander balance='sample'", lambda: ClassifierExpander(balance="sample"), match="balance"),
    Probe("ClassifierExpander alpha_grid='loo'", lambda: ClassifierExpander(alpha_grid="loo"), raises=TypeError,
          match="alpha_grid"),
    Probe("ClassifierExpander alpha_grid=(-1,)", lambda: ClassifierExpander(alpha_grid=(-1.0,)), match="alpha_grid"),
    Probe("alpha_grid with 2 seen classes", lambda: ClassifierExpander(None, invariance=0.0, alpha_grid=(1.0,)).fit(
        _S[:2], _W[:2]), match="alpha_grid"),
    Probe("expander output follows the seen weights' dtype",
          lambda: ClassifierExpander(None, invariance=0.0).fit(_S, torch.as_tensor(_W, dtype=torch.float32)).expand(_S),
          returns=lambda v: v.dtype == torch.float32 and bool(torch.isfinite(v).all()),
          doc="float32 seen weights give float32 rows (computed in float64)"),
    # stage 1
    Probe("encode_descriptions with mismatched counts",
          lambda: encode_descriptions([("a", "b"), ("c",)], [""], _Encoder(np.ones((1, 3)))), match="mismatched"),
    Probe("encode_descriptions with NaN embeddings",
          lambda: encode_descriptions(["a", "b"], ["x"], _Encoder(np.full((1, 3), np.nan))), match="NaN"),
    Probe("encode_descriptions without nuisances", lambda: encode_descriptions(["a"], [], _Encoder(np.ones((1, 3)))),
          match="nuisances"),
    Probe("encode_descriptions of one string", lambda: encode_descriptions("a cat", [""], _Encoder(np.ones((1, 3)))),
          raises=TypeError, match="descriptions"),
    Probe("encode_descriptions with a non-encoder", lambda: encode_descriptions(["a"], [""], object()),
          raises=TypeError, match="encoder"),
    Probe("encode_descriptions with a bad template",
          lambda: encode_descriptions(["a"], [""], _Encoder(np.ones((1, 3))), template="{description}"),
          match="template"),
    Probe("encode_descriptions with an encoder returning too few rows",
          lambda: encode_descriptions(["a", "b"], ["", "x"], type("E", (), {"encode": lambda self, t: np.ones((1, 3))})()),
          match="expected"),
    Probe("causal_semantics with NaN", lambda: causal_semantics(_nan(_VIEWS)), match="NaN"),
    Probe("causal_semantics of an empty view axis", lambda: causal_semantics(np.zeros((3, 0, 2, 4))), match="empty"),
    Probe("as_views of a scalar", lambda: as_views(3.0), match="semantics"),
    # stage 3 pieces
    Probe("fit_ridge alpha=-1", lambda: fit_ridge(_S, _W, alpha=-1.0), match="alpha"),
    Probe("fit_ridge with mismatched rows", lambda: fit_ridge(_S, _W[:3], alpha=1.0), match="same n"),
    Probe("fit_ridge with negative sample weights", lambda: fit_ridge(_S, _W, alpha=1.0, sample_weights=-np.ones(12)),
          match="sample_weights"),
    Probe("fit_ridge with a wrong penalty shape", lambda: fit_ridge(_S, _W, alpha=1.0, penalty=np.eye(3)),
          match="penalty"),
    Probe("group_balanced_weights of float labels", lambda: group_balanced_weights([0.5, 1.0]), raises=TypeError,
          match="integer"),
    Probe("group_balanced_loss of a 2-D loss", lambda: group_balanced_loss(torch.ones(2, 2), [0, 1]),
          raises=TypeError, match="per_class_loss"),
    Probe("group_balanced_loss with too few groups", lambda: group_balanced_loss(torch.ones(3), [0, 1]),
          match="groups"),
    Probe("group_balanced_loss propagates NaN", lambda: group_balanced_loss(torch.tensor([1.0, math.nan]), [0, 1]),
          returns=lambda v: bool(torch.isnan(v)), doc="NaN in a class loss makes the loss NaN"),
    Probe("cosine_loss with mismatched shapes", lambda: cosine_loss(torch.ones(2, 3), torch.ones(3, 3)),
          match="pred"),
    Probe("cosine_loss of a zero row is 1", lambda: cosine_loss(torch.zeros(1, 3), torch.ones(1, 3)),
          returns=lambda v: bool(torch.allclose(v, torch.ones(1))), doc="a zero prediction has cosine 0: loss 1"),
    Probe("invariance_penalty of a 3-D tensor", lambda: invariance_penalty(torch.ones(2, 3, 4)), raises=TypeError,
          match="view_predictions"),
    Probe("nuisance_covariance with wrong weights", lambda: nuisance_covariance(_VIEWS, np.ones(3)),
          match="sample_weights"),
    Probe("norm_scale factor=0", lambda: norm_scale(torch.ones(2, 3), torch.ones(2, 3), 0.0), match="factor"),
    Probe("norm_scale width mismatch", lambda: norm_scale(torch.ones(2, 3), torch.ones(2, 4)), match="weights"),
    Probe("norm_scale of zero rows", lambda: norm_scale(torch.zeros(2, 3), torch.ones(2, 3)),
          returns=lambda v: bool((v == 0).all()), doc="all-zero rows are returned unchanged"),
    # injection
    Probe("inject into a non-Linear", lambda: inject(torch.nn.Conv1d(2, 2, 1), torch.zeros(1, 2)), raises=TypeError,
          match="head"),
    Probe("inject rows of the wrong width", lambda: inject(torch.nn.Linear(4, 2), torch.zeros(1, 3)),
          match="in_features"),
    Probe("inject NaN rows", lambda: inject(torch.nn.Linear(4, 2), torch.full((1, 4), math.nan)), match="NaN"),
    Probe("inject a bias into a head without one", lambda: inject(torch.nn.Linear(4, 2, bias=False), torch.zeros(1, 4),
                                                                   bias=torch.zeros(1)), match="bias"),
    Probe("inject a bias of the wrong length", lambda: inject(torch.nn.Linear(4, 2), torch.zeros(2, 4),
                                                              bias=torch.zeros(3)), match="bias"),
    # baselines
    Probe("WAvgExpander temperature=0", lambda: WAvgExpander(0.0), match="temperature"),
    Probe("WAvgExpander top_k=0", lambda: WAvgExpander(top_k=0), match="top_k"),
    Probe("WAvgExpander expand before fit", lambda: WAvgExpander().expand(_S), raises=RuntimeError, match="fit"),
    Probe("SharedMLPExpander with mismatched counts", lambda: SharedMLPExpander(steps=1).fit(_S, _W[:5]),
          match="seen_weights"),
    Probe("SharedMLPExpander steps=0", lambda: SharedMLPExpander(steps=0), match="steps"),
    Probe("SharedMLPExpander with NaN embeddings", lambda: SharedMLPExpander(steps=1).fit(_nan(_S), _W), match="NaN"),
    Probe("SharedMLPExpander expand with the wrong width",
          lambda: SharedMLPExpander(hidden=4, steps=1).fit(_S, _W).expand(_S[:, :3]), match="width"),
    Probe("ICISExpander lr=0", lambda: ICISExpander(lr=0.0), match="lr"),
    Probe("ICISExpander all_semantics of another width",
          lambda: ICISExpander(latent=3, hidden=4, steps=1).fit(_S, _W, all_semantics=_S[:, :4]), match="width"),
    Probe("SharedMLP on NumPy", lambda: SharedMLP(6, 4)(np.zeros((1, 6))), raises=TypeError, match="Tensor"),
    Probe("SharedMLP dropout=1", lambda: SharedMLP(6, 4, dropout=1.0), match="dropout"),
    Probe("JointAutoencoder with NumPy weights", lambda: JointAutoencoder(6, 4)(torch.ones(2, 6), np.ones((2, 4))),
          raises=TypeError, match="two tensors"),
    # metrics
    Probe("gzsl_scores with overlapping splits", lambda: gzsl_scores([0, 1], [0, 1], [0, 1], [1]), match="disjoint"),
    Probe("gzsl_scores with an empty unseen split", lambda: gzsl_scores([0, 1], [0, 1], [0, 1], []),
          match="at least one"),
    Probe("gzsl_scores with labels of neither split", lambda: gzsl_scores([0, 1, 2], [0, 1, 2], [0], [1]),
          match="neither seen nor unseen"),
    Probe("gzsl_scores with float labels", lambda: gzsl_scores([0, 1], [0.0, 1.0], [0], [1]), raises=TypeError,
          match="labels"),
    Probe("per_class_accuracy of a class without samples", lambda: per_class_accuracy([0], [0], [0, 5]),
          match="no sample"),
    Probe("per_class_accuracy with mismatched lengths", lambda: per_class_accuracy([0, 1], [0], [0]),
          match="same length"),
    Probe("harmonic_mean of a negative accuracy", lambda: harmonic_mean(-0.1, 0.5), match="non-negative"),
    Probe("harmonic_mean propagates NaN", lambda: harmonic_mean(math.nan, 0.5), returns=math.isnan,
          doc="NaN in, NaN out"),
    Probe("restricted_predictions with out-of-range columns", lambda: restricted_predictions(np.ones((2, 3)), [0, 3]),
          match="columns"),
    Probe("intervention_variance with one view", lambda: intervention_variance(np.ones((2, 1, 1, 3))),
          match="at least 2"),
    Probe("intervention_variance of zeros", lambda: intervention_variance(np.zeros((2, 1, 2, 3))), match="all zero"),
    Probe("intervention_variance with NaN", lambda: intervention_variance(_nan(np.ones((2, 1, 2, 3)))), match="NaN"),
    # data
    Probe("granularity_benchmark with a seed", lambda: granularity_benchmark(0), raises=TypeError, match="rng"),
    Probe("granularity_benchmark per_group=30", lambda: granularity_benchmark(np.random.default_rng(0), per_group=30),
          match="per_group"),
    Probe("granularity_benchmark noise=-1", lambda: granularity_benchmark(np.random.default_rng(0), noise=-1.0),
          match="noise"),
    Probe("granularity_benchmark named='yes'", lambda: granularity_benchmark(np.random.default_rng(0), named="yes"),
          raises=TypeError, match="named"),
    Probe("GroupStructure is a frozen record",
          lambda: GroupStructure(np.zeros(2, dtype=np.int64), 1, np.zeros((1, 3))).__setattr__("n_groups", 2),
          raises=AttributeError),
]


# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
def _s() -> np.ndarray:
    return _S.copy()


def _views() -> np.ndarray:
    return _VIEWS.copy()


def _groups12() -> np.ndarray:
    return np.repeat(np.arange(4), 3)


VALID = {
    "ClassifierExpander": lambda: ((None, "group", 1.0), {"group_alpha": 0.05, "cosine_weight": 0.1,
                                                          "cosine_steps": 2, "alpha_grid": (0.1, 1.0)}),
    "GroupClusterer": lambda: ((), {"n_groups": 3, "max_groups": 5}),
    "GroupStructure": lambda: ((np.array([0, 1, 1]), 2, np.ones((2, 3))), {"scores": {2: 0.5}}),
    "JointAutoencoder": lambda: ((6, 4), {"latent": 5, "hidden": 7}),
    "SharedMLP": lambda: ((6, 4), {"hidden": 8, "dropout": 0.1}),
    "WAvgExpander": lambda: ((0.1, 3), {"scale_factor": 1.0}),
    "as_views": lambda: ((_views(),), {}),
    "causal_semantics": lambda: ((_views(),), {}),
    "cosine_loss": lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {}),
    "discover_groups": lambda: ((_s(),), {"max_groups": 5}),
    "eigengap_count": lambda: ((self_tuning_affinity(_s()), 2, 5), {}),
    "encode_descriptions": lambda: ((["a cat", "a dog"], ["", "at night"], _Encoder(np.ones((1, 3)))),
                                    {"batch_size": 2}),
    "fit_ridge": lambda: ((_s(), _W.copy()), {"alpha": 0.1, "sample_weights": np.ones(12), "penalty": np.eye(6)}),
    "granularity_benchmark": lambda: ((np.random.default_rng(0),),
                                      {"n_groups": 3, "per_group": 3, "similar_per_group": 1, "n_train": 2,
                                       "n_test": 2, "feature_dim": 4, "hidden_dim": 5}),
    "group_balanced_loss": lambda: ((torch.rand(12), _groups12()), {}),
    "group_balanced_weights": lambda: ((_groups12(),), {}),
    "gzsl_scores": lambda: (([0, 1, 2, 2], [0, 1, 2, 1], [0, 1], [2]), {}),
    "harmonic_mean": lambda: ((0.5, 0.25), {}),
    "inject": lambda: ((torch.nn.Linear(4, 2), torch.randn(3, 4)), {"bias": torch.zeros(3)}),
    "intervention_variance": lambda: ((_views(),), {}),
    "invariance_penalty": lambda: ((torch.randn(12, 2, 3, 4),), {"sample_weights": np.ones(12)}),
    "norm_scale": lambda: ((torch.randn(3, 4), torch.randn(5, 4)), {"factor": 0.5}),
    "nuisance_covariance": lambda: ((_views(),), {"sample_weights": np.ones(12)}),
    "per_class_accuracy": lambda: (([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2]), {}),
    "restricted_predictions": lambda: ((np.random.default_rng(0).normal(size=(4, 3)), [0, 2]), {}),
    "self_tuning_affinity": lambda: ((_s(),), {"neighbours": 3}),
    "silhouette_count": lambda: ((_s(), 2, 4), {"neighbours": 3}),
}
NOT_WALKED = {
    "GranularityBenchmark": "a plain record of one synthetic draw that granularity_benchmark fills; "
                            "granularity_benchmark is walked (and the 'granularity_benchmark ...' HOSTILE probes)",
    "LinearMap": "the fitted map (weight, bias) that fit_ridge returns and the expander's L-BFGS stage updates in "
                 "place; fit_ridge is walked and refuses NaN inputs, targets, sample_weights and penalty",
}
ALLOWED = {
    "cosine_loss.pred:nan": "a training loss on the hot path (every L-BFGS closure of ClassifierExpander's cosine "
                            "stage, every step of the SharedMLP / ICIS baselines): NaN propagates into the loss as "
                            "with any torch loss, and a finiteness check would cost a device sync per step",
    "cosine_loss.target:nan": "as cosine_loss.pred: a hot-path training loss, NaN propagates into the loss",
    "group_balanced_loss.per_class_loss:nan": "NaN propagates by documented design (HOSTILE 'group_balanced_loss "
                                              "propagates NaN'): a weighted sum of per-class losses on the training "
                                              "path, as any torch loss",
    "invariance_penalty.view_predictions:nan": "a training penalty on the hot path (every L-BFGS closure of "
                                               "ClassifierExpander's cosine stage): NaN propagates into the loss, "
                                               "and a finiteness check would cost a device sync per step",
    "harmonic_mean.seen:nan": "NaN (an accuracy that was not measured) gives NaN by documented design (HOSTILE "
                              "'harmonic_mean propagates NaN'); inf and non-numbers are refused",
    "harmonic_mean.unseen:nan": "as harmonic_mean.seen: an accuracy not measured gives an H not measured",
}
