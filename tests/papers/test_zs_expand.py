"""zs_expand: closed forms, invariances and hand computations for the expander (our interpretation).

Numbers from outside the code: an exactly linear semantics-to-weights map (recovered to 1e-6),
planted blobs (scikit-learn's ARI), scikit-learn's ``Ridge`` with sample weights, the eigenvalues
of a block-diagonal affinity, hand-computed accuracies and H, and sentence-transformers' own
MiniLM output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from icml26.papers.zs_expand import (
    BASELINES,
    METHOD,
    ClassifierExpander,
    GroupClusterer,
    GroupStructure,
    ICISExpander,
    SharedMLPExpander,
    WAvgExpander,
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
)
from icml26.papers.zs_expand.analysis import ratio


def _linear_world(seed: int = 0, d: int = 8, out: int = 5, groups: int = 3, per: int = 14):
    """Semantics in ``groups`` clusters and weights ``w = A s`` exactly."""
    g = np.random.default_rng(seed)
    centres = g.normal(size=(groups, d)) * 3
    s = np.concatenate([centres[k] + g.normal(size=(per, d)) for k in range(groups)])
    labels = np.repeat(np.arange(groups), per)
    a = g.normal(size=(d, out))
    return s, s @ a, labels, a


class _FakeEncoder:
    """Deterministic text -> vector: a hashed bag of words (each word its own random direction)."""

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim

    def encode(self, texts):
        out = []
        for t in texts:
            v = np.zeros(self.dim)
            for w in t.lower().replace(".", " ").split():
                v += np.random.default_rng(abs(hash(w)) % 2**32).normal(size=self.dim)
            out.append(v / max(np.linalg.norm(v), 1e-12))
        return np.asarray(out, dtype=np.float32)


# ---------------------------------------------------------------------------
# Stage 3: synthesis
# ---------------------------------------------------------------------------
def test_linear_identifiability_recovers_unseen_weights_and_refiners_stay_zero():
    s, w, labels, a = _linear_world()
    seen = np.ones(len(s), bool)
    seen[::7] = False  # 6 unseen classes spread over the groups
    structure = GroupStructure(labels=labels, n_groups=3, centroids=np.stack([s[labels == k].mean(0)
                                                                              for k in range(3)]))
    expander = ClassifierExpander(structure, "group", 0.0, coarse_alpha=1e-12, refiner_alpha=1e-3, norm_scale=False)
    expander.fit(torch.as_tensor(s[seen]), torch.as_tensor(w[seen]), all_semantics=torch.as_tensor(s))
    pred = expander.expand(torch.as_tensor(s[~seen])).numpy()
    np.testing.assert_allclose(pred, s[~seen] @ a, atol=1e-6)
    assert expander.refiner_norm() < 1e-6  # the residuals vanish, so the refiners learn nothing
    # the same holds through the default clusterer (groups discovered on all classes)
    auto = ClassifierExpander(GroupClusterer(), coarse_alpha=1e-12, invariance=0.0, norm_scale=False)
    auto.fit(s[seen], w[seen], all_semantics=s)
    np.testing.assert_allclose(auto.expand(s[~seen]).numpy(), s[~seen] @ a, atol=1e-6)


def test_refiners_fit_the_within_group_residual_when_the_coarse_map_cannot():
    # weights depend on the group through an offset f0 cannot express (it is not linear in s)
    g = np.random.default_rng(1)
    s, _, labels, a = _linear_world(1)
    offsets = g.normal(size=(3, a.shape[1])) * 5
    w = s @ a + offsets[labels]
    structure = GroupStructure(labels=labels, n_groups=3, centroids=np.stack([s[labels == k].mean(0)
                                                                              for k in range(3)]))
    seen = np.ones(len(s), bool)
    seen[::7] = False
    coarse = ClassifierExpander(structure, "none", 0.0, coarse_alpha=10.0, norm_scale=False).fit(
        s[seen], w[seen], all_semantics=s)
    refined = ClassifierExpander(structure, "group", 0.0, coarse_alpha=10.0, refiner_alpha=1e-6,
                                 norm_scale=False).fit(s[seen], w[seen], all_semantics=s)
    err = lambda e: np.abs(e.expand(s[~seen]).numpy() - w[~seen]).max()  # noqa: E731
    assert err(refined) < 0.05 * err(coarse)


def test_fit_ridge_matches_sklearn_ridge_with_sample_weights():
    from sklearn.linear_model import Ridge

    g = np.random.default_rng(2)
    x, y = g.normal(size=(20, 6)), g.normal(size=(20, 3))
    wts = g.uniform(0.1, 2.0, size=20)
    ours = fit_ridge(x, y, alpha=0.7, sample_weights=wts, relative=False)
    # ours minimises sum a_i r_i^2 + alpha |B|^2 with a normalised to 1; sklearn sum w_i r_i^2 + alpha' |B|^2
    ref = Ridge(alpha=0.7 * wts.sum(), fit_intercept=True).fit(x, y, sample_weight=wts)
    np.testing.assert_allclose(ours.weight.numpy(), ref.coef_.T, atol=1e-10)
    np.testing.assert_allclose(ours.bias.numpy(), ref.intercept_, atol=1e-10)


def test_invariance_penalty_equals_trace_form_of_nuisance_covariance():
    g = np.random.default_rng(3)
    views = torch.as_tensor(g.normal(size=(5, 2, 4, 6)))
    b = torch.as_tensor(g.normal(size=(6, 3)))
    weights = g.uniform(size=5)
    direct = invariance_penalty(views @ b, weights)
    trace = torch.trace(b.T @ nuisance_covariance(views, weights) @ b)
    assert float(direct) == pytest.approx(float(trace), rel=1e-10)


def test_invariance_drives_variance_across_nuisances_to_zero():
    # descriptions that differ only in nuisance words: s^(m,n) = base_(c,m) + delta_n
    g = np.random.default_rng(4)
    base = g.normal(size=(24, 2, 1, 16))
    delta = g.normal(size=(1, 1, 5, 16)) * 0.5
    views = torch.as_tensor(base + delta)
    w = torch.as_tensor(g.normal(size=(24, 7)))
    labels = np.repeat(np.arange(3), 8)
    structure = GroupStructure(labels=labels, n_groups=3, centroids=np.zeros((3, 16)))
    variances = []
    for lam in (0.0, 1.0, 100.0, 1e6):
        e = ClassifierExpander(structure, "group", lam, norm_scale=False).fit(views, w, all_semantics=views)
        per_view = torch.stack([torch.stack([e.expand(views[:, m, n], groups=labels) for n in range(5)], 1)
                                for m in range(2)], 1)
        variances.append(intervention_variance(per_view.numpy()))
    assert variances[0] > 1e-2
    assert all(b < a for a, b in zip(variances, variances[1:]))
    assert variances[-1] < 1e-8


def test_causal_semantics_is_invariant_to_permuting_nuisances():
    enc = _FakeEncoder()
    descriptions = [("a red bird", "it has red wings"), ("a blue fish", "it swims fast")]
    nuisances = ["in the rain.", "a pencil sketch.", "seen from above.", ""]
    v1 = encode_descriptions(descriptions, nuisances, enc)
    v2 = encode_descriptions(descriptions, nuisances[::-1], enc)
    assert v1.shape == (2, 2, 4, 32)
    np.testing.assert_allclose(v1[:, :, ::-1], v2)
    np.testing.assert_allclose(causal_semantics(v1).numpy(), causal_semantics(v2).numpy(), atol=1e-6)
    np.testing.assert_allclose(causal_semantics(v1).numpy(), v1.mean((1, 2)), atol=1e-6)


def test_group_balanced_loss_duplicating_a_group_leaves_other_groups_gradients_unchanged():
    g = np.random.default_rng(5)
    x = torch.as_tensor(g.normal(size=(9, 4)))
    y = torch.as_tensor(g.normal(size=(9, 2)))
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    dup = np.concatenate([np.arange(9), np.flatnonzero(groups == 2)])  # every class of group 2 twice

    def grads(idx, balanced):
        b = torch.zeros(4, 2, dtype=torch.float64, requires_grad=True)
        per_class = ((x[idx] @ b - y[idx]) ** 2).sum(1)
        loss = group_balanced_loss(per_class, groups[idx]) if balanced else per_class.mean()
        parts = []
        for k in range(3):  # each group's contribution to the gradient
            mask = torch.as_tensor(groups[idx] == k)
            wts = torch.as_tensor(group_balanced_weights(groups[idx])) if balanced else torch.full(
                (len(idx),), 1 / len(idx), dtype=torch.float64)
            parts.append(torch.autograd.grad((wts * per_class * mask).sum(), b, retain_graph=True)[0])
        total = torch.autograd.grad(loss, b)[0]
        return total, parts

    total, parts = grads(np.arange(9), True)
    total_d, parts_d = grads(dup, True)
    for k in (0, 1):
        torch.testing.assert_close(parts[k], parts_d[k], rtol=0, atol=1e-14)
    torch.testing.assert_close(total, total_d, rtol=0, atol=1e-14)
    # the plain mean is not balanced: the same duplication changes the other groups' share
    _, plain = grads(np.arange(9), False)
    _, plain_d = grads(dup, False)
    assert not torch.allclose(plain[0], plain_d[0])
    # and so the closed-form coarse map is unchanged by the duplication
    f = fit_ridge(x, y, alpha=0.1, sample_weights=group_balanced_weights(groups))
    f_d = fit_ridge(x[dup], y[dup], alpha=0.1, sample_weights=group_balanced_weights(groups[dup]))
    torch.testing.assert_close(f.weight, f_d.weight, rtol=0, atol=1e-12)


def test_group_balanced_weights_by_hand():
    np.testing.assert_allclose(group_balanced_weights([0, 0, 1]), [1 / 4, 1 / 4, 1 / 2])
    np.testing.assert_allclose(group_balanced_weights([3, 3, 3]), [1 / 3] * 3)


def test_cosine_loss_and_norm_scale_by_hand():
    pred = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    target = torch.tensor([[1.0, 1.0], [0.0, -1.0]])
    torch.testing.assert_close(cosine_loss(pred, target), torch.tensor([1 - 1 / math.sqrt(2), 2.0]))
    scaled = norm_scale(torch.tensor([[3.0, 4.0], [0.0, 1.0]]), torch.tensor([[6.0, 8.0], [0.0, 5.0]]))
    # mean norm (5 + 1)/2 = 3 -> the reference's (10 + 5)/2 = 7.5: every row times 2.5
    torch.testing.assert_close(scaled, torch.tensor([[7.5, 10.0], [0.0, 2.5]]))


def test_cosine_stage_keeps_an_exact_fit_and_lowers_the_cosine_loss():
    s, w, labels, a = _linear_world(6)
    exact = ClassifierExpander(None, "none", 0.0, coarse_alpha=1e-12, cosine_weight=1.0, cosine_steps=20,
                               norm_scale=False).fit(s, w)
    np.testing.assert_allclose(exact.expand(s).numpy(), w, atol=1e-6)
    g = np.random.default_rng(6)
    noisy = w * g.uniform(0.3, 3.0, size=(len(w), 1))  # row norms scrambled: MSE and cosine disagree
    closed = ClassifierExpander(None, "none", 0.0, coarse_alpha=1.0, norm_scale=False).fit(s, noisy)
    tuned = ClassifierExpander(None, "none", 0.0, coarse_alpha=1.0, cosine_weight=5.0, cosine_steps=50,
                               norm_scale=False).fit(s, noisy)
    t = torch.as_tensor(noisy)
    assert float(cosine_loss(tuned.expand(s), t).mean()) < float(cosine_loss(closed.expand(s), t).mean())


def _views_world(seed: int, offsets: bool):
    """Views (C, 2, 3, d) around linear-world semantics; weights linear in s̄, plus group offsets if asked."""
    g = np.random.default_rng(seed)
    s, w, labels, a = _linear_world(seed, d=6, per=5)
    views = s[:, None, None, :] + 0.3 * g.normal(size=(len(s), 2, 3, s.shape[1]))
    sbar = views.mean(axis=(1, 2))
    w = sbar @ a + (g.normal(size=(3, a.shape[1]))[labels] * 4 if offsets else 0) + 0.05 * g.normal(size=w.shape)
    return views, w, labels


def test_leave_one_class_out_selection_matches_brute_force_refits():
    views, w, labels = _views_world(7, offsets=True)
    structure = GroupStructure(labels=labels, n_groups=3, centroids=np.stack([views.mean(axis=(1, 2))[labels == k]
                                                                              .mean(0) for k in range(3)]))
    grid = (0.1, 3.0)
    e = ClassifierExpander(structure, "group", 0.5, alpha_grid=grid, norm_scale=False).fit(views, w)

    def brute(coarse: float, refiner: float, kind: str) -> float:
        errors = []
        for i in range(len(w)):
            keep = np.arange(len(w)) != i
            sub = GroupStructure(labels=labels[keep], n_groups=3, centroids=structure.centroids)
            f = ClassifierExpander(sub, kind, 0.5, coarse_alpha=coarse, refiner_alpha=refiner,
                                   norm_scale=False).fit(views[keep], w[keep])
            errors.append(float(((f.expand(views[i:i + 1], groups=labels[i:i + 1]).numpy() - w[i]) ** 2).sum()))
        return float(group_balanced_weights(labels) @ np.asarray(errors))

    for v in grid:
        assert e.selection_["coarse_alpha"][str(v)] == pytest.approx(brute(v, v, "none"), rel=1e-8)
    best = e.alphas_["coarse"]
    for v in grid:
        assert e.selection_["refiner_alpha"][str(v)] == pytest.approx(brute(best, v, "group"), rel=1e-8)
    # the offsets are invisible to f₀ (not linear in s̄), so held-out classes need the refiner
    assert e.alphas_["kind"] == "group"
    assert min(e.selection_["refiner_alpha"][str(v)] for v in grid) < 0.5 * e.selection_["refiner_alpha"]["none"]
    # and the final fit is the fixed-strength fit with the chosen strengths
    fixed = ClassifierExpander(structure, "group", 0.5, coarse_alpha=best, refiner_alpha=e.alphas_["refiner"],
                               norm_scale=False).fit(views, w)
    np.testing.assert_allclose(e.expand(views).numpy(), fixed.expand(views).numpy(), atol=1e-10)


def test_the_user_is_warned_when_the_selection_switches_the_refiners_off(caplog):
    """Without group offsets the weights are linear in s̄ plus class noise no refiner can predict, f₀ is all
    there is to learn, and the refiners are switched off: the user hears it (with offsets, as above, they stay
    on and nothing is said)."""
    import logging

    for offsets, warned in ((False, True), (True, False)):
        views, w, labels = _views_world(0, offsets=offsets)
        if not offsets:
            w = w + 3 * np.random.default_rng(3).normal(size=w.shape)
        structure = GroupStructure(labels=labels, n_groups=3,
                                   centroids=np.stack([views.mean(axis=(1, 2))[labels == k].mean(0) for k in range(3)]))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="icml26.papers.zs_expand.synthesis"):
            e = ClassifierExpander(structure, "group", 0.5, alpha_grid=(0.1, 3.0), norm_scale=False).fit(views, w)
        assert (e.alphas_["kind"] == "none") is warned
        assert any("switched the group refiners off" in r.getMessage() for r in caplog.records) is warned


def test_the_default_expander_discovers_the_groups_and_none_means_one():
    """ClassifierExpander() is the method (GroupClusterer's eigengap count), not the one-group shared map:
    on semantics in 4 well-separated clusters it finds 4 groups; clusterer=None keeps one."""
    s, w, labels, _ = _linear_world(1, d=8, groups=4, per=10)
    found = ClassifierExpander().fit(s, w)
    assert found.n_groups_ == 4 == GroupClusterer()(s).n_groups
    assert ClassifierExpander(None).fit(s, w).n_groups_ == 1
    with pytest.raises(ValueError, match="auto"):
        ClassifierExpander("kmeans")


def test_expander_rejects_bad_inputs():
    s, w, _, _ = _linear_world()
    with pytest.raises(ValueError, match="seen_weights"):
        ClassifierExpander().fit(s, w[:-1])
    bad = s.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ClassifierExpander().fit(bad, w)
    with pytest.raises(ValueError, match="more groups than classes"):
        ClassifierExpander(GroupClusterer(n_groups=len(s) + 1)).fit(s, w)
    with pytest.raises(ValueError, match="all_semantics must contain"):
        ClassifierExpander().fit(s[:10], w[:10], all_semantics=s[20:])
    with pytest.raises(RuntimeError, match="fit"):
        ClassifierExpander().expand(s)


# ---------------------------------------------------------------------------
# Stage 2: structure
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["agglomerative", "spectral"])
@pytest.mark.parametrize("criterion", ["eigengap", "silhouette"])
def test_planted_groups_are_recovered_with_their_number(method, criterion):
    g = np.random.default_rng(7)
    centres = g.normal(size=(4, 24))
    s = np.concatenate([c + 0.05 * g.normal(size=(7, 24)) for c in centres])
    truth = np.repeat(np.arange(4), 7)
    found = discover_groups(s, method=method, criterion=criterion, neighbours=5)
    assert found.n_groups == 4
    assert adjusted_rand_score(truth, found.labels) == 1.0


def test_eigengap_on_a_block_diagonal_affinity():
    # three disconnected cliques: the normalised Laplacian has eigenvalue 0 three times, then 1.5 / 1.25
    blocks = [np.ones((k, k)) - np.eye(k) for k in (3, 3, 5)]
    a = np.zeros((11, 11))
    i = 0
    for b in blocks:
        a[i:i + len(b), i:i + len(b)] = b
        i += len(b)
    k, gaps = eigengap_count(a, 2, 5)
    assert k == 3
    assert gaps[3] == pytest.approx(1.25)  # smallest non-zero eigenvalue: k/(k-1) for the 5-clique


# ---------------------------------------------------------------------------
# Injection and metrics
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_injection_keeps_seen_logits_bit_identical(dtype):
    torch.manual_seed(0)
    head = torch.nn.Linear(6, 4).to(dtype)
    x = torch.randn(10, 6, dtype=dtype)
    new = inject(head, torch.randn(3, 6, dtype=torch.float64), bias=torch.randn(3))
    assert torch.equal(new(x)[:, :4], head(x))
    assert torch.equal(new.weight[:4], head.weight) and torch.equal(new.bias[:4], head.bias)
    assert new.out_features == 7 and new.weight.dtype == dtype
    # default bias: the mean seen bias
    assert torch.allclose(inject(head, torch.zeros(2, 6)).bias[4:], head.bias.mean().expand(2))
    with pytest.raises(ValueError, match="in_features"):
        inject(head, torch.zeros(2, 5))


def test_gzsl_scores_hand_case():
    # seen {0, 1}, unseen {2}; class 0: 2/2 right, class 1: 1/2, class 2: 1/4
    labels = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    preds = np.array([0, 0, 1, 0, 2, 0, 1, 1])
    s, u, h = gzsl_scores(preds, labels, [0, 1], [2])
    assert s == pytest.approx(0.75) and u == pytest.approx(0.25)
    assert h == pytest.approx(2 * 0.75 * 0.25 / 1.0)
    np.testing.assert_allclose(per_class_accuracy(preds, labels, [2, 0]), [0.25, 1.0])
    assert harmonic_mean(0.0, 0.0) == 0.0 and math.isnan(harmonic_mean(math.nan, 0.5))
    with pytest.raises(ValueError, match="disjoint"):
        gzsl_scores(preds, labels, [0, 1], [1, 2])
    with pytest.raises(ValueError, match="neither seen nor unseen"):  # class 2's samples would be ignored
        gzsl_scores(preds, labels, [0], [1])


def test_restricted_predictions_and_ratio_by_hand():
    logits = np.array([[5.0, 1.0, 2.0], [0.0, 3.0, 1.0]])
    np.testing.assert_array_equal(restricted_predictions(logits, [1, 2], [10, 20]), [20, 10])
    assert ratio(1.0, 4.0) == 0.25 and math.isnan(ratio(1.0, 0.0))


def test_intervention_variance_by_hand():
    # one class, one source, two views: rows (1, 0) and (3, 0): Var = 1, mean |w|^2 = (1 + 9) / 2
    w = np.array([[[[1.0, 0.0], [3.0, 0.0]]]])
    assert intervention_variance(w) == pytest.approx(1.0 / 5.0)
    assert intervention_variance(np.ones((2, 1, 3, 4))) == 0.0


# ---------------------------------------------------------------------------
# Baselines
# ---------------------------------------------------------------------------
def test_wavg_at_low_temperature_copies_the_nearest_seen_row():
    s, w, _, _ = _linear_world(8)
    e = WAvgExpander(temperature=1e-4, norm_scale=False).fit(s[:30], w[:30])
    queries = s[:30][[3, 17]] + 1e-3
    np.testing.assert_allclose(e.expand(queries).numpy(), w[[3, 17]], atol=1e-8)


def test_baselines_are_drop_in_and_deterministic():
    s, w, _, _ = _linear_world(9)
    assert METHOD is ClassifierExpander and set(BASELINES) == {"wavg", "shared_mlp", "icis"}
    for cls, kw in ((SharedMLPExpander, dict(hidden=16, steps=20)), (ICISExpander, dict(latent=8, hidden=16, steps=20))):
        a = cls(seed=3, **kw).fit(s[:30], w[:30], all_semantics=s).expand(s[30:])
        b = cls(seed=3, **kw).fit(s[:30], w[:30], all_semantics=s).expand(s[30:])
        assert a.shape == (12, 5) and torch.equal(a, b)
    # ICIS-style training lowers its cross-reconstruction loss
    short = ICISExpander(latent=8, hidden=16, steps=1, seed=0).fit(s, w)
    long = ICISExpander(latent=8, hidden=16, steps=300, lr=1e-2, seed=0).fit(s, w)
    sw = torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(w, dtype=torch.float32)
    with torch.no_grad():
        assert cosine_loss(long.model.predict(sw[0]), sw[1]).mean() < cosine_loss(short.model.predict(sw[0]),
                                                                                   sw[1]).mean()


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------
def test_benchmark_partition_and_causal_features():
    b = granularity_benchmark(np.random.default_rng(0), noise=0.0, n_train=2, n_test=1)
    assert b.n_classes == 48 and len(b.seen) == 30 and len(b.similar) == 10 and len(b.distinct) == 8
    assert set(b.superclass[b.distinct]) == {5} and not set(b.superclass[b.seen]) & {5}
    assert len(set(b.seen) | set(b.similar) | set(b.distinct)) == 48
    # without noise every sample of a class is its mean, a function of the causal attributes only
    x0 = b.x_train[b.y_train == 0]
    np.testing.assert_array_equal(x0[0], x0[1])
    assert all(len(d) == 3 and all("creature" in t for t in d) for d in b.descriptions)


# ---------------------------------------------------------------------------
# The MiniLM wrapper (one encoder load for the file)
# ---------------------------------------------------------------------------
def test_minilm_unit_norm_deterministic_batch_independent_and_equal_to_sentence_transformers(minilm):
    texts = ["A photo of a creature with glossy feathers.", "The digit seven.", "A grainy night-time shot.", "x"]
    a = minilm.encode(texts)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a, minilm.encode(texts))
    np.testing.assert_allclose(minilm.encode(texts[::-1])[::-1], a, atol=1e-5)
    np.testing.assert_allclose(minilm.encode(texts, batch_size=1), a, atol=1e-5)
    views = encode_descriptions([texts[:2], texts[2:]], ["", "Seen at dusk."], minilm)
    np.testing.assert_allclose(views[0, 1, 0], a[1], atol=1e-5)
    st = pytest.importorskip("sentence_transformers")
    from icml26.common.encoder import minilm_path

    try:
        model = st.SentenceTransformer(str(minilm_path()), device="cpu")
    except Exception as exc:  # pragma: no cover - a packaging difference, not our code
        pytest.skip(f"sentence-transformers cannot load the wheel's folder: {exc}")
    np.testing.assert_allclose(model.encode(texts, normalize_embeddings=True), a, atol=1e-5)


def test_class_folds_partition_the_seen_classes():
    from icml26.papers.zs_expand.experiment import class_folds

    folds = class_folds(10, 3, np.random.default_rng(0))
    assert sorted(np.concatenate(folds).tolist()) == list(range(10)) and [len(f) for f in folds] == [4, 3, 3]
    with pytest.raises(ValueError, match="folds"):
        class_folds(3, 4, np.random.default_rng(0))


def test_fold_score_is_the_zsl_accuracy_of_held_out_seen_classes():
    """An oracle 'expander' that returns the true rows scores the accuracy of those rows; a constant one scores chance."""
    from icml26.papers.zs_expand.experiment import fold_score

    rng = np.random.default_rng(0)
    n, d = 6, 3
    rows = np.hstack([np.eye(n, d) * 5.0, np.zeros((n, 1))])
    views = torch.as_tensor(rng.normal(size=(n, 1, 1, 4)))
    seen = np.arange(10, 10 + n)
    y = np.repeat(seen, 5)
    x = np.repeat(np.eye(n, d) * 5.0, 5, axis=0)[:, :d] + 0.01 * rng.normal(size=(len(y), d))

    class Oracle:
        def fit(self, v, w, all_semantics=None):
            return self

        def expand(self, v):
            idx = [int(np.flatnonzero((views[:, 0, 0] == row[0, 0]).all(1))[0]) for row in v]
            return torch.as_tensor(rows[idx])

    folds = [np.array([0, 1, 2]), np.array([3, 4, 5])]
    score = fold_score(lambda p: Oracle(), {}, views, torch.as_tensor(rows), views, x, y, seen, folds, "zsl")
    # classes 0-2 have distinct directions (perfect); 3-5 have zero rows in 3 dims (ties: the first wins)
    assert score == pytest.approx((1.0 + 1 / 3) / 2)
    # the oracle's rows are exact: no row error
    assert fold_score(lambda p: Oracle(), {}, views, torch.as_tensor(rows), views, x, y, seen, folds) == 0.0

    class Half(Oracle):
        def expand(self, v):
            return 0.5 * super().expand(v)

    # every held-out row at half its length: error ‖w/2‖² per class over the mean ‖w‖² of all seen rows
    expected = -np.mean([(0.25 * (rows[f] ** 2).sum(1)).mean() for f in folds]) / (rows ** 2).sum(1).mean()
    assert fold_score(lambda p: Half(), {}, views, torch.as_tensor(rows), views, x, y, seen, folds) == \
        pytest.approx(expected)
    with pytest.raises(ValueError, match="metric"):
        fold_score(lambda p: Oracle(), {}, views, torch.as_tensor(rows), views, x, y, seen, folds, "auc")
