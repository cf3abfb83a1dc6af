"""RankCosine against a direct implementation of Xia et al. (2008, eq. 10), with the smoothed norm."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from gbrank.metrics import ndcg
from gbrank.objectives.cosine import Cosine, cosine
from helpers import XGB_PARAMS, direct_psi, fd_diagonal, fd_gradient_by_query, lgb_params, mq2008, random_queries, synthetic


# --------------------------------------------------------------------------- references
def direct_query_loss(s, lab, eps=1.0, target="exp2", k=None):
    """1/2 (1 - <psi, s> / (|psi| sqrt(|s|^2 + n eps^2))), as written."""
    psi = direct_psi(lab, target, k)
    if psi.max() == psi.min():
        return 0.0
    dot = sum(p * x for p, x in zip(psi, s))
    norm_psi = math.sqrt(sum(p * p for p in psi))
    norm_s = math.sqrt(sum(x * x for x in s) + len(s) * eps * eps)
    return 0.5 * (1.0 - dot / (norm_psi * norm_s))


def direct_loss(scores, labels, sizes, **kw):
    total, start = 0.0, 0
    for size in sizes:
        total += direct_query_loss(scores[start : start + size], labels[start : start + size], **kw)
        start += size
    return total


def query_norms(scores, sizes, eps):
    """N = sqrt(|s|^2 + n eps^2) of each row's query."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.repeat(np.sqrt(np.add.reduceat(scores**2, starts) + sizes * eps**2), sizes)


# --------------------------------------------------------------------------- math
CASES = [
    ("exp2", {}, lambda: cosine()),
    ("linear_eps", {"target": "linear", "eps": 0.3}, lambda: cosine(target="linear", eps=0.3)),
    ("topk", {"k": 3}, lambda: cosine(target_k=3)),
    ("topk_linear", {"k": 1, "target": "linear", "eps": 2.0}, lambda: cosine(target_k=1, target="linear", eps=2.0)),
]


@pytest.mark.parametrize("name,kw,make", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_gradient_matches_finite_differences(name, kw, make, scale):
    rng = np.random.default_rng(0)
    labels, scores, sizes = random_queries(rng, 6, scale=scale)
    obj = make()
    assert obj.loss(labels, scores, sizes) == pytest.approx(direct_loss(scores, labels, sizes, **kw), rel=1e-12)
    num_g = fd_gradient_by_query(lambda s, lab: direct_query_loss(s, lab, **kw), scores, labels, sizes)
    np.testing.assert_allclose(obj.grad_hess(labels, scores, sizes)[0], num_g, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_surrogate_hessian_is_positive_and_bounds_the_exact_diagonal(eps):
    """h = 1 / (2 N^2) > 0 and |d2L/ds_i^2| <= 3 / N^2 = 6 h, while the exact diagonal
    takes both signs."""
    rng = np.random.default_rng(1)
    labels, scores, sizes = random_queries(rng, 10, min_docs=2)
    labels[: sizes[0]] = np.arange(sizes[0]) % 4  # query 0 informative for sure
    obj = cosine(eps=eps, hess_floor=0.0)
    grad, hess = obj.grad_hess(labels, scores, sizes)
    active = grad != 0
    norms = query_norms(scores, sizes, eps)
    np.testing.assert_allclose(hess[active], 0.5 / norms[active] ** 2, rtol=1e-13)
    assert hess[active].min() > 0
    exact = fd_diagonal(lambda s: obj.grad_hess(labels, s, sizes)[0], scores)
    assert np.all(np.abs(exact) <= 6.0 * hess + 1e-8)
    assert exact[active].min() < 0 < exact[active].max()


def test_training_starts_from_zero():
    """At s = 0 the loss is 1/2 and the gradient is -psi / (2 |psi| eps sqrt(n))."""
    labels = np.array([3.0, 0.0, 1.0, 2.0, 0.0])
    psi = 2.0**labels - 1.0
    for eps in (0.1, 1.0):
        obj = cosine(eps=eps)
        grad, hess = obj.grad_hess(labels, np.zeros(5), [5])
        np.testing.assert_allclose(grad, -psi / (2 * np.linalg.norm(psi) * eps * math.sqrt(5)), rtol=1e-14)
        np.testing.assert_allclose(hess, 1.0 / (2 * 5 * eps**2), rtol=1e-14)
        assert obj.loss(labels, np.zeros(5), [5]) == 0.5


def test_small_eps_recovers_the_papers_loss():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 4, size=20).astype(float)
    scores = rng.normal(size=20)
    psi = 2.0**labels - 1.0
    paper = 0.5 * (1 - psi @ scores / (np.linalg.norm(psi) * np.linalg.norm(scores)))
    assert cosine(eps=1e-8).loss(labels, scores, [20]) == pytest.approx(paper, rel=1e-12)
    assert abs(cosine(eps=1.0).loss(labels, scores, [20]) - paper) > 1e-3


def test_minimised_in_the_target_direction_and_not_shift_invariant():
    labels = np.array([3.0, 0.0, 1.0, 2.0])
    psi = 2.0**labels - 1.0
    obj = cosine(eps=1e-6)
    assert obj.loss(labels, 5.0 * psi, [4]) == pytest.approx(0.0, abs=1e-12)
    assert obj.loss(labels, -psi, [4]) == pytest.approx(1.0, abs=1e-12)
    assert obj.loss(labels, 5.0 * psi + 3.0, [4]) > 1e-3
    assert Cosine.shift_invariant is False


# --------------------------------------------------------------------------- identities
def test_permuting_rows_within_a_query_permutes_the_outputs():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, size=15).astype(float)
    scores = rng.normal(size=15)
    perm = rng.permutation(15)
    for obj in (cosine(), cosine(target_k=4, target="rank_quadratic")):
        g, h = obj.grad_hess(labels, scores, [15])
        gp, hp = obj.grad_hess(labels[perm], scores[perm], [15])
        np.testing.assert_allclose(gp, g[perm], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hp, h[perm], rtol=1e-12)


def test_queries_without_a_preferred_order_get_zero_gradient():
    labels = np.array([2.0, 2, 2, 0, 0, 1, 0, 3])
    scores = np.array([0.3, -1.0, 2.0, 0.5, 0.1, 0.7, 0.2, 1.0])
    sizes = [3, 2, 2, 1]
    obj = cosine()
    grad, hess = obj.grad_hess(labels, scores, sizes)
    np.testing.assert_array_equal(grad[[0, 1, 2, 3, 4, 7]], 0.0)
    np.testing.assert_array_equal(hess[[0, 1, 2, 3, 4, 7]], obj.hess_floor)
    assert np.all(grad[5:7] != 0)
    # kept: constant non-zero targets (the all-2 query, the single document); a zero target
    # (the all-0 query) has no direction and stays out
    kept = cosine(ignore_all_equal=False).grad_hess(labels, scores, sizes)[0]
    assert np.all(kept[[0, 1, 2, 7]] != 0)
    np.testing.assert_array_equal(kept[3:5], 0.0)


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("magnitude", [1e4, 1e200])
def test_extreme_scores_stay_finite(magnitude):
    rng = np.random.default_rng(4)
    labels, _, sizes = random_queries(rng, 10)
    scores = rng.choice([-magnitude, magnitude, 0.0], size=labels.size)
    for obj in (cosine(), cosine(target_k=3, target="rank_exp")):
        grad, hess = obj.grad_hess(labels, scores, sizes)
        assert np.isfinite(grad).all() and np.isfinite(hess).all() and hess.min() > 0
        loss = obj.loss(labels, scores, sizes)
        assert np.isfinite(loss) and 0 <= loss <= len(sizes)


@pytest.mark.parametrize("target", ["exp2", "rank_exp", "rank_quadratic"])
def test_ten_thousand_document_query(target):
    rng = np.random.default_rng(5)
    n = 10_000
    labels = rng.integers(0, 5, size=n).astype(float)
    scores = rng.normal(scale=30.0, size=n)
    scores[:2] = [1e4, -1e4]
    obj = cosine(target=target)
    grad, hess = obj.grad_hess(labels, scores, [n])
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and hess.min() > 0
    assert np.isfinite(obj.loss(labels, scores, [n]))
    if target == "exp2":
        assert obj.loss(labels, scores, [n]) == pytest.approx(direct_query_loss(scores, labels), rel=1e-10)


# --------------------------------------------------------------------------- bad input
# (bad scores, groups and labels, and float32 input: the registry-driven catalogue in
# test_bad_input_objectives.py, for every registered objective)
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"target_k": 0}, "target_k must be an integer >= 1 or None, got 0"),
        ({"target": "cosine"}, "target must be one of"),
        ({"eps": 0.0}, "eps must be a finite number > 0"),
        ({"eps": np.inf}, "eps must be a finite number > 0"),
        ({"hess_floor": -1.0}, "hess_floor"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cosine(**kwargs)


# --------------------------------------------------------------------------- protocol
def test_repr_and_pickle():
    obj = cosine(target_k=10, target="linear", eps=0.5)
    assert repr(obj) == (
        "cosine(target='linear', target_k=10, eps=0.5, ignore_all_equal=True, hess_floor=1e-06, hess_scale=1.0)"
    )
    rng = np.random.default_rng(7)
    labels, scores, sizes = random_queries(rng, 5)
    clone = pickle.loads(pickle.dumps(obj))
    assert isinstance(clone, Cosine) and repr(clone) == repr(obj)
    np.testing.assert_array_equal(clone.grad_hess(labels, scores, sizes)[0], obj.grad_hess(labels, scores, sizes)[0])


# --------------------------------------------------------------------------- engines
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

@pytest.mark.parametrize("make", [cosine, lambda: cosine(target_k=10, target="linear")], ids=["exp2", "top10_linear"])
@pytest.mark.parametrize("data", ["synthetic", "mq2008"])
def test_training_decreases_the_loss_and_improves_heldout_ndcg(make, data):
    (X, y, sizes), (Xt, yt, st) = (synthetic(4, 80), synthetic(5, 40)) if data == "synthetic" else mq2008()
    obj = make()
    rounds = 10
    baseline = ndcg(yt, np.zeros(yt.size), st, k=10)

    booster = lgb.train(lgb_params(objective=obj), lgb.Dataset(X, y, group=sizes), num_boost_round=rounds)
    losses = [obj.loss(y, booster.predict(X, num_iteration=i, raw_score=True), sizes) for i in range(1, rounds + 1)]
    start = obj.loss(y, np.zeros(y.size), sizes)
    # each round lowers the training loss (the surrogate hessian gives damped Newton steps)
    assert np.all(np.diff([start, *losses]) < 0)
    assert ndcg(yt, booster.predict(Xt), st, k=10) > baseline + 0.1

    bst = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, group=sizes), num_boost_round=rounds, obj=obj)
    dtrain = xgb.DMatrix(X)
    xgb_losses = [obj.loss(y, bst.predict(dtrain, iteration_range=(0, i), output_margin=True), sizes) for i in range(1, rounds + 1)]
    assert np.all(np.diff([start, *xgb_losses]) < 0)
    assert ndcg(yt, bst.predict(xgb.DMatrix(Xt)), st, k=10) > baseline + 0.1
