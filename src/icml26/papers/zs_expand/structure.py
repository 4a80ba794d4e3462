"""Stage 2: latent class-structure discovery (our interpretation).

No paper text or code is public; this is our reading of the abstract's second stage (brief §1):
cluster all classes (seen and unseen: transductive, semantics only) on the cosine geometry of
``s̄`` and choose the number of groups ``G`` from the data, so that similar classes share a
group and distinct classes land in different ones.

* Affinity: ``K_ij = exp(-d_ij² / (σ_i σ_j))`` with the cosine distance ``d_ij = 1 - cos(s̄_i, s̄_j)``
  and the self-tuning local scale ``σ_i`` = distance to the ``k``-th nearest neighbour
  (Zelnik-Manor & Perona, 2004).
* ``criterion="eigengap"``: the eigenvalues ``λ_1 <= λ_2 <= …`` of the normalised Laplacian
  ``L = I - D^(-1/2) K D^(-1/2)``; ``G = argmax_k (λ_(k+1) - λ_k)`` over the allowed range.
* ``criterion="silhouette"``: ``G`` maximising the mean silhouette (cosine) of the clustering.
* ``method="agglomerative"`` (average linkage on cosine distance) or ``"spectral"`` (on ``K``),
  both from scikit-learn.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Literal

import numpy as np

from icml26.common.argcheck import as_tensor, check_int, require_finite

__all__ = ["GroupClusterer", "GroupStructure", "discover_groups", "eigengap_count", "self_tuning_affinity",
           "silhouette_count"]

Method = Literal["agglomerative", "spectral"]
Criterion = Literal["eigengap", "silhouette"]


@dataclasses.dataclass(frozen=True)
class GroupStructure:
    """The discovered groups.

    Attributes:
        labels: ``(C,)`` int64 group of each class, ``0 .. n_groups-1``.
        n_groups: ``G``.
        centroids: ``(G, d)`` float64 mean ``s̄`` of each group.
        scores: the criterion per candidate ``G`` (eigengap or silhouette), empty when ``G`` was given.
    """

    labels: np.ndarray
    n_groups: int
    centroids: np.ndarray
    scores: dict[int, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        n_groups = check_int(self.n_groups, "n_groups", low=1)
        labels = np.asarray(self.labels)
        if labels.ndim != 1 or (labels.size and labels.dtype.kind not in "iu"):
            raise TypeError(f"labels must be a 1-D array of integer group labels, got shape {labels.shape} "
                            f"dtype {labels.dtype}")
        if labels.size and (labels.min() < 0 or labels.max() >= n_groups):
            raise ValueError(f"labels must lie in [0, n_groups={n_groups})")
        centroids = as_tensor(self.centroids, "centroids")
        if centroids.ndim != 2 or centroids.shape[0] != n_groups:
            raise ValueError(f"centroids must be (n_groups={n_groups}, d), got shape {tuple(centroids.shape)}")
        require_finite(centroids, "centroids")


def _semantics_array(semantics: Any, name: str = "semantics") -> np.ndarray:
    t = as_tensor(semantics, name)
    if t.ndim != 2:
        raise ValueError(f"{name} must be (C, d), got shape {tuple(t.shape)}; average views with causal_semantics")
    require_finite(t, name, hint="NaN embeddings cannot be clustered")
    x = t.detach().cpu().double().numpy()
    if len(x) < 2:
        raise ValueError(f"{name} has {len(x)} class(es); clustering needs at least 2")
    if (np.linalg.norm(x, axis=1) == 0).any():
        raise ValueError(f"{name} has an all-zero row: its cosine similarity is undefined")
    return x


def _cosine_distance(x: np.ndarray) -> np.ndarray:
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.clip(1.0 - u @ u.T, 0.0, 2.0)


def self_tuning_affinity(semantics: Any, neighbours: int = 7) -> np.ndarray:
    """``K_ij = exp(-d_ij² / (σ_i σ_j))`` on cosine distances, ``σ_i`` the distance to the
    ``neighbours``-th nearest other class (capped at ``C - 1``); zero diagonal. ``(C, C)`` float64."""
    x = _semantics_array(semantics)
    neighbours = check_int(neighbours, "neighbours", low=1)
    d = _cosine_distance(x)
    k = min(neighbours, len(x) - 1)
    sigma = np.sort(d, axis=1)[:, k]  # column 0 is the class itself
    sigma = np.maximum(sigma, 1e-12)
    affinity = np.exp(-d ** 2 / np.outer(sigma, sigma))
    np.fill_diagonal(affinity, 0.0)
    return affinity


def eigengap_count(affinity: Any, min_groups: int = 2, max_groups: int = 10) -> tuple[int, dict[int, float]]:
    """``G = argmax_k (λ_(k+1) - λ_k)`` for ``k`` in ``[min_groups, max_groups]``, with ``λ`` the
    ascending eigenvalues of the normalised Laplacian of ``affinity`` ``(C, C)`` (symmetric, >= 0).

    Returns ``(G, {k: gap})``. Ties go to the smaller ``k``.
    """
    a = as_tensor(affinity, "affinity").detach().cpu().double().numpy()
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"affinity must be a square (C, C) matrix, got shape {a.shape}")
    require_finite(a, "affinity")
    if (a < 0).any() or not np.allclose(a, a.T):
        raise ValueError("affinity must be symmetric with non-negative entries")
    n = len(a)
    min_groups = check_int(min_groups, "min_groups", low=1)
    max_groups = check_int(max_groups, "max_groups", low=min_groups)
    if max_groups >= n:
        raise ValueError(f"max_groups={max_groups} must be below the number of classes ({n}): more groups than "
                         "classes leave no gap to measure")
    degree = a.sum(1)
    inv = np.where(degree > 0, 1.0 / np.sqrt(np.maximum(degree, 1e-300)), 0.0)
    laplacian = np.eye(n) - inv[:, None] * a * inv[None, :]
    eig = np.sort(np.linalg.eigvalsh((laplacian + laplacian.T) / 2))
    gaps = {k: float(eig[k] - eig[k - 1]) for k in range(min_groups, max_groups + 1)}
    best = max(gaps, key=lambda k: (gaps[k], -k))
    return best, gaps


def _cluster(x: np.ndarray, n_groups: int, method: Method, affinity: np.ndarray, random_state: int) -> np.ndarray:
    from sklearn.cluster import AgglomerativeClustering, SpectralClustering

    if n_groups == 1:
        return np.zeros(len(x), dtype=np.int64)
    if method == "agglomerative":
        model = AgglomerativeClustering(n_clusters=n_groups, metric="cosine", linkage="average")
        labels = model.fit_predict(x)
    else:
        model = SpectralClustering(n_clusters=n_groups, affinity="precomputed", random_state=random_state,
                                   assign_labels="cluster_qr")
        with warnings.catch_warnings():  # well-separated groups make a disconnected graph: expected here
            warnings.filterwarnings("ignore", message="Graph is not fully connected")
            labels = model.fit_predict(affinity + np.eye(len(x)))
    # canonical labels: numbered in order of first appearance
    _, first = np.unique(labels, return_index=True)
    order = {old: new for new, old in enumerate(labels[np.sort(first)])}
    return np.asarray([order[v] for v in labels], dtype=np.int64)


def silhouette_count(semantics: Any, min_groups: int = 2, max_groups: int = 10, *,
                     method: Method = "agglomerative", neighbours: int = 7,
                     random_state: int = 0) -> tuple[int, dict[int, float]]:
    """``G`` maximising the mean cosine silhouette of the ``method`` clustering, ``G`` in
    ``[min_groups, max_groups]`` (both >= 2 and below ``C``). Returns ``(G, {k: silhouette})``."""
    from sklearn.metrics import silhouette_score

    x = _semantics_array(semantics)
    if method not in ("agglomerative", "spectral"):
        raise ValueError(f"method={method!r} must be 'agglomerative' or 'spectral'")
    random_state = check_int(random_state, "random_state", low=0)
    min_groups = check_int(min_groups, "min_groups", low=2)
    max_groups = check_int(max_groups, "max_groups", low=min_groups)
    if max_groups >= len(x):
        raise ValueError(f"max_groups={max_groups} must be below the number of classes ({len(x)})")
    affinity = self_tuning_affinity(x, neighbours)
    d = _cosine_distance(x)
    scores = {}
    for k in range(min_groups, max_groups + 1):
        labels = _cluster(x, k, method, affinity, random_state)
        scores[k] = float(silhouette_score(d, labels, metric="precomputed")) if len(set(labels)) > 1 else -1.0
    best = max(scores, key=lambda k: (scores[k], -k))
    return best, scores


def discover_groups(semantics: Any, *, n_groups: int | None = None, method: Method = "agglomerative",
                    criterion: Criterion = "eigengap", min_groups: int = 2, max_groups: int | None = None,
                    neighbours: int = 7, random_state: int = 0) -> GroupStructure:
    """Cluster classes on ``cos(s̄)`` and choose their number (our interpretation of stage 2).

    Args:
        semantics: ``(C, d)`` class semantics ``s̄`` (average views first with
            :func:`~icml26.papers.zs_expand.semantics.causal_semantics`).
        n_groups: a fixed ``G`` (skips the selection); at most ``C``.
        method: ``"agglomerative"`` (average linkage, cosine) or ``"spectral"``.
        criterion: ``"eigengap"`` or ``"silhouette"`` when ``n_groups`` is None.
        min_groups, max_groups: the candidate range (default ``max_groups = min(10, C - 1)``).
        neighbours: the ``k`` of the self-tuning scale.
        random_state: seeds spectral clustering's label assignment.

    ``ValueError`` for more groups than classes, a NaN embedding, or an unknown method/criterion.
    """
    x = _semantics_array(semantics)
    if method not in ("agglomerative", "spectral"):
        raise ValueError(f"method={method!r} must be 'agglomerative' or 'spectral'")
    if criterion not in ("eigengap", "silhouette"):
        raise ValueError(f"criterion={criterion!r} must be 'eigengap' or 'silhouette'")
    random_state = check_int(random_state, "random_state", low=0)
    affinity = self_tuning_affinity(x, neighbours)
    scores: dict[int, float] = {}
    if n_groups is not None:
        n_groups = check_int(n_groups, "n_groups", low=1)
        if n_groups > len(x):
            raise ValueError(f"n_groups={n_groups} is more groups than classes ({len(x)}); lower it")
    else:
        max_groups = min(10, len(x) - 1) if max_groups is None else check_int(max_groups, "max_groups", low=1)
        if max_groups >= len(x):
            raise ValueError(f"max_groups={max_groups} must be below the number of classes ({len(x)}): more groups "
                             "than classes")
        if criterion == "eigengap":
            n_groups, scores = eigengap_count(affinity, min_groups, max_groups)
        else:
            n_groups, scores = silhouette_count(x, min_groups, max_groups, method=method, neighbours=neighbours,
                                                random_state=random_state)
    labels = _cluster(x, n_groups, method, affinity, random_state)
    centroids = np.stack([x[labels == g].mean(0) for g in range(n_groups)])
    return GroupStructure(labels=labels, n_groups=int(n_groups), centroids=centroids, scores=scores)


@dataclasses.dataclass(frozen=True)
class GroupClusterer:
    """A configured :func:`discover_groups`, the default ``clusterer`` of the expander.

    Calling it on ``(C, d)`` semantics returns a :class:`GroupStructure`.
    """

    method: Method = "agglomerative"
    criterion: Criterion = "eigengap"
    n_groups: int | None = None
    min_groups: int = 2
    max_groups: int | None = None
    neighbours: int = 7
    random_state: int = 0

    def __post_init__(self) -> None:
        if self.method not in ("agglomerative", "spectral"):
            raise ValueError(f"method={self.method!r} must be 'agglomerative' or 'spectral'")
        if self.criterion not in ("eigengap", "silhouette"):
            raise ValueError(f"criterion={self.criterion!r} must be 'eigengap' or 'silhouette'")
        if self.n_groups is not None:
            check_int(self.n_groups, "n_groups", low=1)
        check_int(self.min_groups, "min_groups", low=1)
        if self.max_groups is not None:
            check_int(self.max_groups, "max_groups", low=1)
        check_int(self.neighbours, "neighbours", low=1)
        check_int(self.random_state, "random_state", low=0)

    def __call__(self, semantics: Any) -> GroupStructure:
        return discover_groups(semantics, n_groups=self.n_groups, method=self.method, criterion=self.criterion,
                               min_groups=self.min_groups, max_groups=self.max_groups, neighbours=self.neighbours,
                               random_state=self.random_state)
