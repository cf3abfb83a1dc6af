"""ListMLE, top-k ListMLE, W-ListMLE and user weights against direct implementations."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.objectives.plackett_luce import PlackettLuce
from helpers import fd_diagonal, fd_gradient, fd_second, random_queries


# --------------------------------------------------------------------------- references
def label_order(labels):
    """A label-consistent permutation, ties in input order."""
    return np.argsort(-np.asarray(labels), kind="stable")


def pl_nll(scores, perm, weights):
    """sum_i w_i (log sum_{t>=i} exp(s_perm[t]) - s_perm[i]), written as the paper does."""
    total = 0.0
    for i in range(len(perm)):
        tail = scores[perm[i:]]
        m = tail.max()
        total += weights[i] * (m + np.log(np.sum(np.exp(tail - m))) - scores[perm[i]])
    return total


def direct_weights(kind, labels, **kw):
    n = len(labels)
    sorted_labels = np.sort(labels)[::-1]
    if kind == "listmle":
        return np.ones(n)
    if kind == "topk":
        return (np.arange(1, n + 1) <= kw["k"]).astype(float)
    if kind == "wlistmle":
        w = np.zeros(n)
        for s in range(1, n):  # the paper's s = 1 .. n-1
            d = 1.0 / np.log2(1.0 + s)
            if kw.get("cutoff") is not None and s > kw["cutoff"]:
                d = 0.0
            w[s - 1] = (2.0 ** sorted_labels[s - 1] - 1.0) * d
        return w
    if kind == "wlistmle_best":
        w = np.zeros(n)
        for s in range(1, n):
            higher = np.sum(sorted_labels > sorted_labels[s - 1])
            w[s - 1] = (2.0 ** sorted_labels[s - 1] - 1.0) / np.log2(2.0 + higher)
        return w
    raise AssertionError(kind)


def direct_loss(scores, labels, sizes, kind, **kw):
    total, start = 0.0, 0
    for size in sizes:
        s = scores[start : start + size]
        lab = labels[start : start + size]
        start += size
        if lab.max() == lab.min():
            continue
        total += pl_nll(s, label_order(lab), direct_weights(kind, lab, **kw))
    return total


CASES = [
    ("listmle", {}, lambda: gbrank.listmle(ties="input")),
    ("topk", {"k": 1}, lambda: gbrank.listmle_topk(k=1, ties="input")),
    ("topk", {"k": 3}, lambda: gbrank.listmle_topk(k=3, ties="input")),
    ("topk", {"k": 10}, lambda: gbrank.listmle_topk(k=10, ties="input")),
    ("wlistmle", {}, lambda: gbrank.wlistmle(ties="input")),
    ("wlistmle", {"cutoff": 4}, lambda: gbrank.wlistmle(k=4, ties="input")),
    ("wlistmle_best", {}, lambda: gbrank.wlistmle(discount_at="best_rank", ties="input")),
]


# --------------------------------------------------------------------------- math
@pytest.mark.parametrize("kind,kw,make", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale", [2.0, 150.0], ids=["linear-space", "log-space"])
def test_gradient_and_hessian_match_finite_differences(kind, kw, make, seed, scale):
    """Scores spread over more than 300 within a query take the kernel's log-space path."""
    rng = np.random.default_rng(seed)
    labels, scores, sizes = random_queries(rng, 6, scale=scale)
    obj = make()
    grad, hess = obj.grad_hess(labels, scores, sizes)
    assert obj.loss(labels, scores, sizes) == pytest.approx(direct_loss(scores, labels, sizes, kind, **kw), rel=1e-12)
    direct = lambda s: direct_loss(s, labels, sizes, kind, **kw)  # noqa: E731
    num_g = fd_gradient(direct, scores)
    # second differences of the summed loss of all queries (in the hundreds): a wider step
    # keeps their rounding noise, eps |f| / h**2, below the tolerance
    num_h = fd_second(direct, scores, step=1e-3)
    np.testing.assert_allclose(grad, num_g, atol=1e-6, rtol=1e-6)
    # the floor only lifts exact zeros (single-document and constant queries, last positions);
    # second differences of a loss in the thousands carry ~1e-5 of rounding noise
    np.testing.assert_allclose(hess, np.maximum(num_h, obj.hess_floor), atol=2e-5 * max(1.0, scale / 10), rtol=1e-4)
    # the diagonal of the derivative of the (verified) gradient, to tighter tolerance
    diag = fd_diagonal(lambda s: obj.grad_hess(labels, s, sizes)[0], scores)
    np.testing.assert_allclose(hess, np.maximum(diag, obj.hess_floor), atol=1e-6, rtol=1e-5)
    assert hess.min() >= obj.hess_floor


def test_user_weights_equal_the_named_members():
    rng = np.random.default_rng(3)
    labels, scores, sizes = random_queries(rng, 5, scale=2.0)
    topk = gbrank.listmle_topk(k=4, ties="input").grad_hess(labels, scores, sizes)
    table = gbrank.plackett_luce([1, 1, 1, 1], ties="input").grad_hess(labels, scores, sizes)
    func = gbrank.plackett_luce(lambda lab: (np.arange(lab.size) < 4).astype(float), ties="input")
    for a, b in zip(topk, table):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(topk, func.grad_hess(labels, scores, sizes)):
        np.testing.assert_array_equal(a, b)


def test_full_listmle_gradient_sums_to_zero_per_query():
    rng = np.random.default_rng(4)
    labels, scores, sizes = random_queries(rng, 20, scale=2.0)
    for obj in (gbrank.listmle(), gbrank.listmle_topk(k=5), gbrank.wlistmle()):
        grad, _ = obj.grad_hess(labels, scores, sizes)
        sums = np.add.reduceat(grad, np.concatenate(([0], np.cumsum(sizes)[:-1])))
        np.testing.assert_allclose(sums, 0.0, atol=1e-10)


def test_topk_loss_is_the_marginal_likelihood_of_the_top_k_prefix():
    """Brute force: -log of the summed PL probability of every completion of the prefix."""
    rng = np.random.default_rng(5)
    for n, k in [(4, 1), (5, 2), (6, 3), (5, 5)]:
        labels = rng.permutation(n).astype(float)
        scores = rng.normal(size=n)
        prefix = tuple(label_order(labels)[:k])
        total = 0.0
        for perm in itertools.permutations(range(n)):
            if perm[:k] == prefix:
                total += np.exp(-pl_nll(scores, np.array(perm), np.ones(n)))
        loss = gbrank.listmle_topk(k=k, ties="input").loss(labels, scores, [n])
        assert loss == pytest.approx(-np.log(total), rel=1e-10)


def consistent_losses(labels, scores, weights):
    n = len(labels)
    out = []
    for perm in itertools.permutations(range(n)):
        if all(labels[perm[i]] >= labels[perm[i + 1]] for i in range(n - 1)):
            out.append(pl_nll(scores, np.array(perm), weights))
    return np.array(out)


@pytest.mark.parametrize("k", [None, 2])
def test_score_ties_pick_the_most_likely_consistent_permutation(k):
    rng = np.random.default_rng(6)
    labels = np.array([1.0, 0, 1, 0, 1, 0])
    for _ in range(5):
        scores = rng.normal(size=6)
        weights = np.ones(6) if k is None else (np.arange(1, 7) <= k).astype(float)
        obj = gbrank.listmle(ties="score") if k is None else gbrank.listmle_topk(k=k, ties="score")
        assert obj.loss(labels, scores, [6]) == pytest.approx(consistent_losses(labels, scores, weights).min())


def test_random_ties_use_a_consistent_permutation_fresh_per_score_vector():
    labels = np.array([1.0, 0, 1, 0, 1, 0])
    obj = gbrank.listmle(ties="random", seed=7)
    rng = np.random.default_rng(8)
    seen = set()
    for _ in range(30):
        scores = rng.normal(size=6)
        allowed = consistent_losses(labels, scores, np.ones(6))
        loss = obj.loss(labels, scores, [6])
        assert np.isclose(allowed, loss).any()
        seen.add(int(np.argmin(np.abs(allowed - loss))))
        # the same scores give the same permutation: gradient and loss agree run to run
        np.testing.assert_array_equal(obj.grad_hess(labels, scores, [6])[0], obj.grad_hess(labels, scores, [6])[0])
    assert len(seen) > 10  # 36 consistent permutations; random ties visit many of them


def test_random_ties_depend_on_the_seed():
    rng = np.random.default_rng(9)
    labels, scores, sizes = random_queries(rng, 10, n_levels=2, scale=2.0)
    g0 = gbrank.listmle(seed=0).grad_hess(labels, scores, sizes)[0]
    g0_again = gbrank.listmle(seed=0).grad_hess(labels, scores, sizes)[0]
    g1 = gbrank.listmle(seed=1).grad_hess(labels, scores, sizes)[0]
    np.testing.assert_array_equal(g0, g0_again)
    assert not np.array_equal(g0, g1)


def test_permuting_rows_within_queries_permutes_the_outputs():
    rng = np.random.default_rng(10)
    labels = rng.permutation(12).astype(float)  # no ties: the target order is unique
    scores = rng.normal(size=12)
    perm = rng.permutation(12)
    for obj in (gbrank.listmle(), gbrank.listmle_topk(k=3), gbrank.wlistmle(gain="linear")):
        g, h = obj.grad_hess(labels, scores, [12])
        gp, hp = obj.grad_hess(labels[perm], scores[perm], [12])
        np.testing.assert_allclose(gp, g[perm], atol=1e-12)
        np.testing.assert_allclose(hp, h[perm], atol=1e-12)


def test_query_order_does_not_matter():
    rng = np.random.default_rng(11)
    labels, scores, sizes = random_queries(rng, 8, scale=2.0)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in range(7, -1, -1)])
    obj = gbrank.listmle_topk(k=5, ties="input")
    g, h = obj.grad_hess(labels, scores, sizes)
    g2, h2 = obj.grad_hess(labels[rows], scores[rows], sizes[::-1])
    np.testing.assert_array_equal(g2, g[rows])
    np.testing.assert_array_equal(h2, h[rows])


def test_all_equal_and_single_document_queries_get_zero_gradient():
    labels = np.array([2.0, 2, 2, 1, 0, 3])
    scores = np.array([0.3, -1.0, 2.0, 0.5, 0.1, 0.7])
    obj = gbrank.listmle()
    grad, hess = obj.grad_hess(labels, scores, [3, 2, 1])
    np.testing.assert_array_equal(grad[[0, 1, 2, 5]], 0.0)
    np.testing.assert_array_equal(hess[[0, 1, 2, 5]], obj.hess_floor)
    assert np.all(grad[3:5] != 0)
    kept = gbrank.listmle(ignore_all_equal=False).grad_hess(labels, scores, [3, 2, 1])[0]
    assert np.all(kept[:3] != 0) and kept[5] == 0.0


def test_weights_scale_and_floor():
    rng = np.random.default_rng(12)
    labels, scores, sizes = random_queries(rng, 4, scale=2.0)
    weight = rng.uniform(0, 2, size=labels.size)
    weight[0] = 0.0
    base = gbrank.listmle(ties="input", hess_floor=0.0)
    g, h = base.grad_hess(labels, scores, sizes)
    gw, hw = base.grad_hess(labels, scores, sizes, weight=weight)
    np.testing.assert_allclose(gw, g * weight)
    np.testing.assert_allclose(hw, h * weight)
    scaled = gbrank.listmle(ties="input", hess_floor=0.5, hess_scale=3.0)
    gs, hs = scaled.grad_hess(labels, scores, sizes)
    np.testing.assert_array_equal(gs, g)
    np.testing.assert_allclose(hs, np.maximum(3.0 * h, 0.5))


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("magnitude", [1e4, 1e30])
def test_extreme_scores_stay_finite(magnitude):
    rng = np.random.default_rng(13)
    labels, _, sizes = random_queries(rng, 10, scale=2.0)
    scores = rng.choice([-magnitude, magnitude, 0.0], size=labels.size)
    for obj in (gbrank.listmle(), gbrank.listmle_topk(k=3), gbrank.wlistmle()):
        grad, hess = obj.grad_hess(labels, scores, sizes)
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
        assert np.isfinite(obj.loss(labels, scores, sizes))
        assert hess.min() >= 0


def test_ten_thousand_document_query():
    rng = np.random.default_rng(14)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(scale=30.0, size=n)
    for obj in (gbrank.listmle(), gbrank.listmle_topk(k=10), gbrank.wlistmle()):
        grad, hess = obj.grad_hess(labels, scores, [n])
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
        assert abs(grad.sum()) < 1e-6 * n
    # against the direct formula on a long list with moderate scores
    small = rng.normal(size=n)
    obj = gbrank.listmle_topk(k=10, ties="input")
    assert obj.loss(labels, small, [n]) == pytest.approx(direct_loss(small, labels, [n], "topk", k=10), rel=1e-10)


def test_float32_input_is_promoted():
    rng = np.random.default_rng(15)
    labels, scores, sizes = random_queries(rng, 5, scale=2.0)
    obj = gbrank.listmle(ties="input")
    g64 = obj.grad_hess(labels, scores.astype(np.float32).astype(np.float64), sizes)[0]
    g32 = obj.grad_hess(labels.astype(np.float32), scores.astype(np.float32), sizes.astype(np.int32))[0]
    assert g32.dtype == np.float64
    np.testing.assert_array_equal(g32, g64)


def test_empty_input():
    grad, hess = gbrank.listmle().grad_hess(np.zeros(0), np.zeros(0), np.zeros(0, dtype=int))
    assert grad.shape == hess.shape == (0,)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "labels,scores,group,message",
    [
        ([1, 0, 2], [0.1, np.nan, 0.3], [3], "NaN at row 1 \\(query 0\\)"),
        ([1, 0, 2], [0.1, np.inf, 0.3], [3], "inf at row 1"),
        ([1, 0, 2], [0.1, 0.2, 0.3], [2], "sum to 2 but there are 3 rows"),
        ([1, 0, 2], [0.1, 0.2, 0.3], [3, 0], "group sizes must be positive"),
        ([1, 0, 2], [0.1, 0.2], [3], "y_pred has 2 rows but the labels have 3"),
        ([1, -1, 2], [0.1, 0.2, 0.3], [3], "non-negative"),
        ([1, np.nan, 2], [0.1, 0.2, 0.3], [3], "labels must be finite"),
        ([1, 0, 2], [0.1, 0.2, 0.3], None, "query groups are required"),
    ],
)
def test_bad_input_raises_a_clear_error(labels, scores, group, message):
    with pytest.raises(ValueError, match=message):
        gbrank.listmle().grad_hess(np.array(labels, dtype=float), np.array(scores), group)


def test_gain_rules_apply_to_wlistmle_labels():
    scores = np.zeros(3)
    with pytest.raises(ValueError, match="integers with gain='exp2'"):
        gbrank.wlistmle().grad_hess(np.array([1.5, 0, 2]), scores, [3])
    with pytest.raises(ValueError, match="exceeds the largest supported label 31"):
        gbrank.wlistmle().grad_hess(np.array([40.0, 0, 2]), scores, [3])
    grad, _ = gbrank.wlistmle(gain="linear").grad_hess(np.array([40.0, 0, 2.5]), np.arange(3.0), [3])
    assert np.isfinite(grad).all()
    # ListMLE needs only the order of the labels
    assert np.isfinite(gbrank.listmle().grad_hess(np.array([1.5, 0, 40]), scores, [3])[0]).all()


@pytest.mark.parametrize(
    "factory,kwargs,message",
    [
        (gbrank.listmle_topk, {"k": 0}, "k must be an integer >= 1, got 0"),
        (gbrank.listmle, {"ties": "best"}, "ties must be one of"),
        (gbrank.listmle, {"seed": -1}, "seed must be an integer >= 0, got -1"),
        (gbrank.listmle, {"hess_floor": -1.0}, "hess_floor"),
        (gbrank.listmle, {"hess_scale": 0.0}, "hess_scale"),
        (gbrank.wlistmle, {"k": 0}, "k must be an integer >= 1 or None"),
        (gbrank.wlistmle, {"discount": "cosine"}, "discount must be"),
        (gbrank.wlistmle, {"discount_at": "first"}, "discount_at"),
        (gbrank.plackett_luce, {"position_weights": [1.0, -1.0]}, "non-negative"),
    ],
)
def test_bad_parameters_raise(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


# --------------------------------------------------------------------------- protocol
def test_position_weights_are_kept_as_given_at_construction():
    weights = [1.0, 0.5, 0.25]
    obj = gbrank.plackett_luce(weights)
    weights.append(9.0)
    assert repr(obj).startswith("plackett_luce(position_weights=[1.0, 0.5, 0.25], ")
    assert pickle.loads(pickle.dumps(obj)).value_key == obj.value_key


def test_repr_pickle_and_cache():
    obj = gbrank.listmle_topk(k=5, seed=3)
    assert repr(obj).startswith("listmle_topk(k=5, ties='random', seed=3")
    rng = np.random.default_rng(16)
    labels, scores, sizes = random_queries(rng, 5, scale=2.0)
    g = obj.grad_hess(labels, scores, sizes)[0]
    clone = pickle.loads(pickle.dumps(obj))
    assert isinstance(clone, PlackettLuce) and repr(clone) == repr(obj)
    np.testing.assert_array_equal(clone.grad_hess(labels, scores, sizes)[0], g)
    # a second dataset with one object: the cache is keyed on the data, not on the call order
    labels2, scores2, sizes2 = random_queries(rng, 5, scale=2.0)
    g2 = obj.grad_hess(labels2, scores2, sizes2)[0]
    np.testing.assert_array_equal(obj.grad_hess(labels, scores, sizes)[0], g)
    np.testing.assert_array_equal(gbrank.listmle_topk(k=5, seed=3).grad_hess(labels2, scores2, sizes2)[0], g2)
