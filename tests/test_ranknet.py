"""RankNet and W-RankNet against direct implementations of Chen et al. (2009)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.objectives.ranknet import RankNet, ranknet, wranknet
from helpers import fd_diagonal, fd_gradient, fd_gradient_by_query, mq2008, query_sums, random_queries, synthetic, train_both


# --------------------------------------------------------------------------- references
def phi(z, sigma=1.0):
    """The paper's phi(z) = log2(1 + exp(-sigma z)), phi(0) = 1."""
    return math.log2(1.0 + math.exp(-sigma * z))


def best_rank_discount(label, labels, discount, cutoff):
    """D(1 + sum_{k > l} n_k), counting the query's documents of every higher label."""
    r = 1 + sum(int(np.sum(labels == k)) for k in np.unique(labels) if k > label)
    if cutoff is not None and r > cutoff:
        return 0.0
    return 1.0 / math.log2(1.0 + r) if discount == "log2" else 1.0 / r


def direct_query_loss(s, lab, sigma=1.0, weighted=None, pairs=None):
    """Chen et al. section 2.1 / 4, over a label-consistent permutation y:

    sum_{s=1}^{n-1} beta(s) sum_{i=s+1}^{n} a(y(i), y(s)) phi(f(y(s)) - f(y(i))),
    with beta = 1 (RankNet) or G(l(y(s))) D(1 + sum_{k > l(y(s))} n_k) (W-RankNet), and
    a(i, j) = 1 when the labels differ. ``pairs`` restricts the sum to a set of (i, j).
    """
    y = np.argsort(-lab, kind="stable")
    n = len(lab)
    total = 0.0
    for pos in range(n - 1):
        top = y[pos]
        beta = 1.0
        if weighted is not None:
            gain, discount, cutoff = weighted
            g = 2.0 ** lab[top] - 1.0 if gain == "exp2" else lab[top]
            beta = g * best_rank_discount(lab[top], lab, discount, cutoff)
        for i in range(pos + 1, n):
            other = y[i]
            if lab[other] == lab[top]:
                continue
            if pairs is not None and frozenset((top, other)) not in pairs:
                continue
            total += beta * phi(s[top] - s[other], sigma)
    return total


def top_pairs(s, truncation):
    """Pairs with at least one document among the top T (fewer than T strictly higher)."""
    n = len(s)
    in_top = [np.sum(s > s[i]) < truncation for i in range(n)]
    return {frozenset((i, j)) for i in range(n) for j in range(i + 1, n) if in_top[i] or in_top[j]}


def direct_loss(scores, labels, sizes, truncation=None, **kw):
    total, start = 0.0, 0
    for size in sizes:
        s, lab = scores[start : start + size], labels[start : start + size]
        start += size
        pairs = None if truncation is None else top_pairs(s, truncation)
        total += direct_query_loss(s, lab, pairs=pairs, **kw)
    return total


CASES = [
    ("ranknet", lambda: ranknet(), {}),
    ("ranknet_sigma", lambda: ranknet(sigma=2.5), {"sigma": 2.5}),
    ("wranknet", lambda: wranknet(), {"weighted": ("exp2", "log2", None)}),
    ("wranknet_cutoff", lambda: wranknet(k=3), {"weighted": ("exp2", "log2", 3)}),
    ("wranknet_linear_zipf", lambda: wranknet(gain="linear", discount="zipf", sigma=0.5),
     {"weighted": ("linear", "zipf", None), "sigma": 0.5}),
]


# --------------------------------------------------------------------------- math
@pytest.mark.parametrize("name,make,kw", CASES, ids=[c[0] for c in CASES])
def test_gradient_and_hessian_match_finite_differences(name, make, kw):
    rng = np.random.default_rng(0)
    labels, scores, sizes = random_queries(rng, 5, scale=2.0)
    obj = make()
    grad, hess = obj.grad_hess(labels, scores, sizes)
    assert obj.loss(labels, scores, sizes) == pytest.approx(direct_loss(scores, labels, sizes, **kw), rel=1e-12)
    num_g = fd_gradient_by_query(lambda s, lab: direct_query_loss(s, lab, **kw), scores, labels, sizes)
    np.testing.assert_allclose(grad, num_g, atol=1e-6, rtol=1e-6)
    # the exact diagonal hessian: finite differences of the (proven) gradient; the floor
    # lifts only the rows that are in no pair
    num_h = fd_diagonal(lambda s: obj.grad_hess(labels, s, sizes)[0], scores)
    np.testing.assert_allclose(hess, np.maximum(num_h, obj.hess_floor), atol=1e-6, rtol=1e-6)


def test_sigma_and_the_log2_constant():
    """phi(0) = 1: a single tied pair costs exactly 1, and its gradient is -sigma / (2 ln 2)."""
    for sigma in (0.5, 1.0, 3.0):
        obj = ranknet(sigma=sigma, hess_floor=0.0)
        assert obj.loss([1.0, 0.0], [0.0, 0.0], [2]) == pytest.approx(1.0, rel=1e-15)
        grad, hess = obj.grad_hess([1.0, 0.0], [0.0, 0.0], [2])
        np.testing.assert_allclose(grad, [-sigma / (2 * math.log(2)), sigma / (2 * math.log(2))], rtol=1e-15)
        np.testing.assert_allclose(hess, sigma**2 / (4 * math.log(2)), rtol=1e-15)


@pytest.mark.parametrize("make", [ranknet, wranknet, lambda: ranknet(truncation=3)])
def test_gradient_sums_to_zero_per_query(make):
    rng = np.random.default_rng(1)
    labels, scores, sizes = random_queries(rng, 30, scale=2.0)
    grad, _ = make().grad_hess(labels, scores, sizes)
    np.testing.assert_allclose(query_sums(grad, sizes), 0.0, atol=1e-10)


def test_wranknet_weights_follow_the_best_rank_of_the_higher_label():
    # labels 2, 1, 1, 0: the label-1 documents can at best hold position 2
    labels = np.array([2.0, 1.0, 1.0, 0.0])
    scores = np.zeros(4)
    loss = wranknet().loss(labels, scores, [4])
    # pairs from the label-2 doc: 3 x G(2) D(1); from each label-1 doc: 1 x G(1) D(2)
    assert loss == pytest.approx(3 * 3.0 * 1.0 + 2 * 1.0 / math.log2(3.0), rel=1e-14)
    assert wranknet(k=1).loss(labels, scores, [4]) == pytest.approx(9.0, rel=1e-14)


# --------------------------------------------------------------------------- truncation
@pytest.mark.parametrize("truncation", [1, 3, 8])
@pytest.mark.parametrize("weighted", [False, True])
def test_truncated_gradient_matches_the_direct_truncated_loss(truncation, weighted):
    rng = np.random.default_rng(2 + truncation)
    labels, scores, sizes = random_queries(rng, 5, max_docs=30, scale=2.0)
    kw = {"weighted": ("exp2", "log2", None)} if weighted else {}
    obj = wranknet(truncation=truncation) if weighted else ranknet(truncation=truncation)
    assert obj.loss(labels, scores, sizes) == pytest.approx(
        direct_loss(scores, labels, sizes, truncation=truncation, **kw), rel=1e-12
    )
    # the pair set is fixed in a neighbourhood of distinct scores: differentiate with it
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    num_g = np.concatenate([
        fd_gradient(lambda s: direct_query_loss(s, labels[a:b], pairs=top_pairs(scores[a:b], truncation), **kw), scores[a:b])
        for a, b in zip(offsets[:-1], offsets[1:])
    ])
    np.testing.assert_allclose(obj.grad_hess(labels, scores, sizes)[0], num_g, atol=1e-6, rtol=1e-6)


def test_truncation_keeps_pairs_whose_lower_label_document_is_on_top():
    """As LightGBM: an irrelevant document ranked first still meets the relevant ones below."""
    labels = np.array([0.0, 0.0, 1.0, 1.0])
    scores = np.array([3.0, -1.0, 1.0, 2.0])  # ranking: row 0, 3, 2, 1
    loss = ranknet(truncation=1).loss(labels, scores, [4])
    assert loss == pytest.approx(phi(1.0 - 3.0) + phi(2.0 - 3.0), rel=1e-14)
    grad = ranknet(truncation=1).grad_hess(labels, scores, [4])[0]
    assert grad[1] == 0.0 and grad[0] > 0 and grad[2] < 0 and grad[3] < 0


def test_truncation_at_or_beyond_the_list_and_with_tied_scores_keeps_every_pair():
    rng = np.random.default_rng(6)
    labels, scores, sizes = random_queries(rng, 6, max_docs=20, scale=2.0)
    full = ranknet().grad_hess(labels, scores, sizes)
    for out in (ranknet(truncation=20).grad_hess(labels, scores, sizes), ranknet(truncation=50).grad_hess(labels, scores, sizes)):
        np.testing.assert_allclose(out[0], full[0], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out[1], full[1], rtol=1e-13, atol=1e-15)
    # where boosting starts every score ties with the T-th: all documents are in the top T
    zeros = np.zeros_like(scores)
    np.testing.assert_array_equal(
        ranknet(truncation=2).grad_hess(labels, zeros, sizes)[0], ranknet().grad_hess(labels, zeros, sizes)[0]
    )


# --------------------------------------------------------------------------- identities
@pytest.mark.parametrize("make", [ranknet, wranknet, lambda: ranknet(truncation=4)])
def test_permuting_rows_within_a_query_permutes_the_outputs(make):
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 4, size=15).astype(float)
    scores = rng.normal(size=15)
    perm = rng.permutation(15)
    g, h = make().grad_hess(labels, scores, [15])
    gp, hp = make().grad_hess(labels[perm], scores[perm], [15])
    np.testing.assert_allclose(gp, g[perm], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hp, h[perm], rtol=1e-12, atol=1e-14)


def test_queries_without_pairs_get_zero_gradient():
    labels = np.array([2.0, 2, 2, 1, 0, 3])
    scores = np.array([0.3, -1.0, 2.0, 0.5, 0.1, 0.7])
    obj = wranknet()
    grad, hess = obj.grad_hess(labels, scores, [3, 2, 1])
    np.testing.assert_array_equal(grad[[0, 1, 2, 5]], 0.0)
    np.testing.assert_array_equal(hess[[0, 1, 2, 5]], obj.hess_floor)
    assert np.all(grad[3:5] != 0)


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("make", [ranknet, wranknet, lambda: ranknet(sigma=5.0, truncation=3)])
def test_extreme_scores_stay_finite(make):
    rng = np.random.default_rng(8)
    labels, _, sizes = random_queries(rng, 10, scale=2.0)
    scores = rng.choice([-1e4, 1e4, 0.0], size=labels.size)
    obj = make()
    grad, hess = obj.grad_hess(labels, scores, sizes)
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and hess.min() >= 0
    loss = obj.loss(labels, scores, sizes)
    assert np.isfinite(loss)
    # a misordered pair 2e4 apart costs 2e4 / ln 2 (times sigma)
    assert ranknet().loss([1.0, 0.0], [-1e4, 1e4], [2]) == pytest.approx(2e4 / math.log(2), rel=1e-12)


def test_ten_thousand_document_query():
    rng = np.random.default_rng(9)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(scale=30.0, size=n)
    # every one of the 4e7 pairs (the loss, which adds a log per pair, is checked truncated)
    for obj in (ranknet(), wranknet(truncation=30)):
        grad, hess = obj.grad_hess(labels, scores, [n])
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
        assert abs(grad.sum()) < 1e-9 * np.abs(grad).sum()
    assert np.isfinite(wranknet(truncation=30).loss(labels, scores, [n]))


# --------------------------------------------------------------------------- bad input
# (bad scores, groups and labels, and float32 input: the registry-driven catalogue in
# test_bad_input_objectives.py, for every registered objective)
def test_label_rules_of_the_gain():
    scores = np.zeros(3)
    with pytest.raises(ValueError, match="integers with gain='exp2'"):
        wranknet().grad_hess(np.array([1.5, 0, 2]), scores, [3])
    with pytest.raises(ValueError, match="exceeds the largest supported label 31"):
        wranknet().grad_hess(np.array([40.0, 0, 2]), scores, [3])
    # RankNet needs only the order of the labels, and linear gains take any label >= 0
    assert np.isfinite(ranknet().grad_hess(np.array([1.5, 0, 40]), scores, [3])[0]).all()
    assert np.isfinite(wranknet(gain="linear").grad_hess(np.array([1.5, 0, 40]), scores, [3])[0]).all()


@pytest.mark.parametrize(
    "factory,kwargs,message",
    [
        (ranknet, {"sigma": 0.0}, "sigma must be a finite number > 0"),
        (ranknet, {"sigma": np.nan}, "sigma must be a finite number > 0"),
        (ranknet, {"truncation": 0}, "truncation must be an integer >= 1 or None, got 0"),
        (ranknet, {"truncation": 2.5}, "truncation must be an integer >= 1 or None, got 2.5"),
        (wranknet, {"k": 0}, "k must be an integer >= 1 or None, got 0"),
        (wranknet, {"gain": "log"}, "gain must be"),
        (wranknet, {"discount": "cosine"}, "discount must be"),
        (ranknet, {"hess_floor": -1.0}, "hess_floor"),
    ],
)
def test_bad_parameters_raise(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


# --------------------------------------------------------------------------- protocol
def test_top_level_factories():
    for _ in range(2):  # the second access must not find the submodule instead
        assert gbrank.ranknet is ranknet and gbrank.wranknet is wranknet
        assert gbrank.objectives.ranknet is ranknet


def test_repr_and_pickle():
    obj = wranknet(k=10, truncation=20)
    assert repr(obj) == (
        "wranknet(gain='exp2', discount='log2', k=10, sigma=1.0, truncation=20, hess_floor=1e-06, hess_scale=1.0)"
    )
    assert repr(ranknet(sigma=2.0)) == "ranknet(sigma=2.0, truncation=None, hess_floor=1e-06, hess_scale=1.0)"
    rng = np.random.default_rng(11)
    labels, scores, sizes = random_queries(rng, 5, scale=2.0)
    clone = pickle.loads(pickle.dumps(obj))
    assert isinstance(clone, RankNet) and repr(clone) == repr(obj)
    np.testing.assert_array_equal(clone.grad_hess(labels, scores, sizes)[0], obj.grad_hess(labels, scores, sizes)[0])


# --------------------------------------------------------------------------- engines
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

@pytest.mark.parametrize("make", [ranknet, wranknet, lambda: ranknet(truncation=10)], ids=["ranknet", "wranknet", "truncated"])
def test_training_improves_heldout_ndcg_on_synthetic_data(make):
    baseline, lgb_score, xgb_score = train_both(make, synthetic(4, 80), synthetic(5, 40), rounds=10)
    assert lgb_score > baseline + 0.1
    assert xgb_score > baseline + 0.1


@pytest.mark.parametrize("make", [ranknet, wranknet], ids=["ranknet", "wranknet"])
def test_training_improves_heldout_ndcg_on_mq2008(make):
    baseline, lgb_score, xgb_score = train_both(make, *mq2008(), rounds=10)
    # zero scores give 0.653 on Fold1/test (queries without relevant documents count 1)
    assert lgb_score > baseline + 0.1
    assert xgb_score > baseline + 0.1


def test_lgbm_ranker_accepts_the_objective():
    X, y, sizes = synthetic(12, 40)
    ranker = lgb.LGBMRanker(objective=wranknet(), n_estimators=5, verbose=-1, metric="None", n_jobs=2)
    ranker.fit(X, y, group=sizes)
    assert np.isfinite(ranker.predict(X)).all()
