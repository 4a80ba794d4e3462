"""Metrics of instruction-following embeddings, from raw arrays (pure, public, hand-tested).

Embeddings come as one array per instruction: ``embeddings[i, t]`` is text ``t`` embedded under
instruction ``i``; ``labels[i, t]`` is the class of text ``t`` under instruction ``i`` (for
AttrWorld: its value of the attribute instruction ``i`` asks for).

* :func:`instruction_nmi`: k-means (k = the number of classes) on each instruction's
  embeddings, NMI against its labels (after InBedder's NYTClusters);
* :func:`inst_sts_pairs` / :func:`inst_sts_spearman`: Spearman correlation between the cosine of
  two texts under an instruction and the gold "same class under this instruction" (after
  InBedder's Inst-STSb);
* :func:`instruction_sensitivity`: mean cosine between one text's embeddings under instructions
  about different things (lower: the embedding follows the instruction more);
* :func:`spearman_ceiling`: the largest Spearman a tie-free score can reach against binary gold.
"""

from __future__ import annotations

import numpy as np

from icml26.common.argcheck import check_int, check_real, require_finite

__all__ = [
    "inst_sts_pairs",
    "inst_sts_spearman",
    "instruction_nmi",
    "instruction_sensitivity",
    "kmeans_nmi",
    "spearman_ceiling",
]


def _stack(embeddings, labels=None) -> tuple[np.ndarray, np.ndarray | None]:
    e = np.asarray(embeddings, dtype=np.float64)
    if e.ndim != 3 or e.shape[0] < 1 or e.shape[1] < 2:
        raise ValueError(f"embeddings must be (instructions, texts >= 2, d), got shape {e.shape}")
    if not np.isfinite(e).all():
        raise ValueError("embeddings hold NaN or inf")
    if labels is None:
        return e, None
    y = np.asarray(labels)
    if y.shape != e.shape[:2]:
        raise ValueError(f"labels {y.shape} must be (instructions, texts) = {e.shape[:2]}")
    return e, y


def kmeans_nmi(embeddings, labels, *, n_clusters: int | None = None, seed: int = 0, n_init: int = 10) -> float:
    """NMI (arithmetic normalisation) between k-means clusters of ``embeddings`` ``(n, d)`` and ``labels`` ``(n,)``.

    ``n_clusters`` defaults to the number of distinct labels; k-means is scikit-learn's with
    ``random_state=seed`` (an integer in [0, 2³² − 1]) and ``n_init`` restarts (or ``"auto"``).
    """
    seed = check_int(seed, "seed", low=0, high=2**32 - 1)
    if n_init != "auto":
        n_init = check_int(n_init, "n_init", low=1)
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score

    x = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(labels).ravel()
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"embeddings {x.shape} must be (n >= 2, d) with one label per row ({y.shape[0]})")
    if not np.isfinite(x).all():
        raise ValueError("embeddings hold NaN or inf")
    k = len(np.unique(y)) if n_clusters is None else n_clusters
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= x.shape[0]:
        raise ValueError(f"n_clusters={k!r} must be an integer in 1..{x.shape[0]}")
    clusters = KMeans(n_clusters=int(k), n_init=n_init, random_state=seed).fit_predict(x)
    return float(normalized_mutual_info_score(y, clusters))


def instruction_nmi(embeddings, labels, *, seed: int = 0) -> np.ndarray:
    """Per-instruction k-means NMI: ``(I,)`` for embeddings ``(I, n, d)`` and labels ``(I, n)``."""
    seed = check_int(seed, "seed", low=0, high=2**32 - 1)
    e, y = _stack(embeddings, labels)
    return np.array([kmeans_nmi(e[i], y[i], seed=seed) for i in range(e.shape[0])])


def inst_sts_pairs(labels, n_pairs: int, rng: np.random.Generator, *, match_fraction: float = 0.5) -> np.ndarray:
    """Random Inst-STS pairs: ``(n_pairs, 4)`` int rows ``(instruction, text_i, text_j, gold)``.

    ``gold = 1`` iff the two texts share their class under the instruction. A share
    ``match_fraction`` of the pairs is drawn among matching pairs, the rest among
    non-matching ones (uniform instruction, then a uniform pair of distinct texts).
    """
    y = np.asarray(labels)
    if y.ndim != 2 or y.shape[1] < 2:
        raise ValueError(f"labels must be (instructions, texts >= 2), got shape {y.shape}")
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, (int, np.integer)) or n_pairs < 1:
        raise ValueError(f"n_pairs={n_pairs!r} must be a positive integer")
    match_fraction = check_real(match_fraction, "match_fraction", low=0.0, high=1.0)
    n_match = int(round(match_fraction * n_pairs))
    rows = []
    for want in [1] * n_match + [0] * (n_pairs - n_match):
        for _ in range(10_000):
            ins = int(rng.integers(y.shape[0]))
            i, j = (int(v) for v in rng.choice(y.shape[1], size=2, replace=False))
            if int(y[ins, i] == y[ins, j]) == want:
                rows.append((ins, i, j, want))
                break
        else:
            raise ValueError(f"found no {'matching' if want else 'non-matching'} pair in 10000 draws; "
                             "the labels leave none")
    return np.asarray(rows, dtype=np.int64)


def inst_sts_spearman(embeddings, pairs) -> float:
    """Spearman ρ between ``cos(e[ins, i], e[ins, j])`` and ``gold`` over ``pairs`` (from :func:`inst_sts_pairs`)."""
    from scipy.stats import spearmanr

    e, _ = _stack(embeddings)
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 4 or p.shape[0] < 2:
        raise ValueError(f"pairs must be (n >= 2, 4) rows (instruction, i, j, gold), got shape {p.shape}")
    a, b = e[p[:, 0], p[:, 1]], e[p[:, 0], p[:, 2]]
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)).clip(1e-12)
    if np.ptp(p[:, 3]) == 0 or np.ptp(cos) == 0:
        raise ValueError("Spearman is undefined: the gold labels or the cosines are constant")
    return float(spearmanr(cos, p[:, 3]).statistic)


def instruction_sensitivity(embeddings, groups) -> float:
    """Mean cosine between a text's embeddings under instructions of different groups.

    Args:
        embeddings: ``(I, n, d)``.
        groups: ``(I,)`` what each instruction asks about (e.g. the attribute); only
            instruction pairs with different groups are compared.

    Returns:
        ``mean over texts t and instruction pairs (i, j) with groups[i] != groups[j] of
        cos(e[i, t], e[j, t])`` (lower: more instruction-sensitive).
    """
    e, _ = _stack(embeddings)
    g = np.asarray(groups)
    if g.shape != (e.shape[0],):
        raise ValueError(f"groups must give one group per instruction ({e.shape[0]}), got shape {g.shape}")
    u = e / np.linalg.norm(e, axis=-1, keepdims=True).clip(1e-12)
    values = [(u[i] * u[j]).sum(-1).mean() for i in range(len(g)) for j in range(i + 1, len(g)) if g[i] != g[j]]
    if not values:
        raise ValueError("groups are all equal: no pair of instructions about different things")
    return float(np.mean(values))


def spearman_ceiling(gold) -> float:
    """The Spearman ρ of a tie-free score that ranks every positive above every negative.

    For binary gold with a share ``p`` of positives (n large) this is ``sqrt(3 p (1 - p))``,
    0.866 at ``p = 1/2``: the most a continuous cosine can reach against binary Inst-STS gold.
    """
    from scipy.stats import spearmanr

    y = np.asarray(gold, dtype=np.float64).ravel()
    require_finite(y, "gold")
    if y.size < 2 or np.ptp(y) == 0:
        raise ValueError("gold must hold at least two different values")
    order = np.argsort(y, kind="stable")
    perfect = np.empty_like(y)
    perfect[order] = np.arange(y.size)
    return float(spearmanr(perfect, y).statistic)
