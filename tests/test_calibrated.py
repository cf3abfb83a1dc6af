"""RCR (Bai et al. 2023) and the weighted logistic + softmax baseline, against a direct
implementation of the losses as written: per query, alpha * sigmoid cross-entropy plus
(1 - alpha) * softmax cross-entropy, over sigmoid probabilities (RCR) or raw scores."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.objectives.calibrated import RCR, WeightedLogisticSoftmax
from helpers import XGB_PARAMS, fd_gradient, fd_second, lgb_params, random_queries

FACTORIES = {"rcr": gbrank.rcr, "weighted_logistic_softmax": gbrank.weighted_logistic_softmax}


# --------------------------------------------------------------------------- references
def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def direct_query_loss(s, y, alpha, compatible):
    """The paper's per-query loss, term by term in plain Python."""
    point = sum(-t * math.log(sigmoid(x)) - (1 - t) * math.log(1 - sigmoid(x)) for x, t in zip(s, y))
    if compatible:  # softmax over log sigmoid(s): p_i = sigma(s_i) / sum_j sigma(s_j)
        weights = [sigmoid(x) for x in s]
    else:
        weights = [math.exp(x) for x in s]
    total = sum(weights)
    listwise = -sum(t * math.log(w / total) for w, t in zip(weights, y))
    return alpha * point + (1 - alpha) * listwise


def direct_loss(scores, targets, sizes, alpha, compatible):
    out, start = 0.0, 0
    for size in sizes:
        out += direct_query_loss(scores[start:start + size], targets[start:start + size], alpha, compatible)
        start += size
    return out


def cases(seed, n_queries=4):
    y, s, sizes = random_queries(seed, n_queries, max_docs=7, n_levels=4, scale=1.5)
    return y, s, sizes


# --------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("seed", range(4))
def test_loss_and_gradient_match_the_direct_formula(name, alpha, seed):
    y, s, sizes = cases(seed)
    compatible = name == "rcr"
    targets = y / max(y.max(), 1.0)  # max_label=None: the largest training label, at least 1
    obj = FACTORIES[name](alpha=alpha, hess_floor=0.0)
    assert obj.loss(y, s, sizes) == pytest.approx(direct_loss(s, targets, sizes, alpha, compatible), rel=1e-10)
    grad = obj.grad_hess(y, s, sizes)[0]
    fd = fd_gradient(lambda x: direct_loss(x, targets, sizes, alpha, compatible), s)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_the_baseline_hessian_is_the_exact_diagonal(seed):
    y, s, sizes = cases(seed)
    obj = gbrank.weighted_logistic_softmax(alpha=0.4, hess_floor=0.0)
    fd2 = fd_second(lambda x: direct_loss(x, y / y.max(), sizes, 0.4, False), s)
    np.testing.assert_allclose(obj.grad_hess(y, s, sizes)[1], fd2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.7])
@pytest.mark.parametrize("seed", range(6))
def test_the_rcr_hessian_is_positive_and_bounds_the_exact_diagonal(alpha, seed):
    y, s, sizes = cases(seed)
    obj = gbrank.rcr(alpha=alpha, hess_floor=0.0)
    hess = obj.grad_hess(y, s, sizes)[1]
    fd2 = fd_second(lambda x: direct_loss(x, y / y.max(), sizes, alpha, True), s)
    assert (hess >= 0).all()
    assert np.all(np.abs(fd2) <= hess + 1e-5)


def test_the_rcr_loss_is_not_convex_so_the_surrogate_is_needed():
    # one relevant document at a high score among irrelevant ones: the concave listwise
    # part wins, the exact diagonal is negative, the surrogate is not
    y, s = np.array([1.0, 0.0, 0.0]), np.array([0.0, 3.0, 3.0])
    fd2 = fd_second(lambda x: direct_loss(x, y, [3], 0.0, True), s)
    assert fd2.min() < -1e-3
    assert gbrank.rcr(alpha=0.0, hess_floor=0.0).grad_hess(y, s, [3])[1].min() > 0


# --------------------------------------------------------------------------- calibration
def test_rcr_is_stationary_at_the_true_probabilities_and_the_baseline_is_not():
    # targets in (0, 1) (max_label=1): at sigma(s) = y both RCR terms are minimal, whatever
    # alpha; the baseline's softmax of raw scores wants exp(s) proportional to y instead
    y = np.array([0.9, 0.5, 0.2, 0.05, 0.6, 0.3])
    s = np.log(y / (1 - y))
    for alpha in (0.1, 0.5, 0.9):
        grad = gbrank.rcr(alpha=alpha, max_label=1).grad_hess(y, s, [4, 2])[0]
        np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    assert np.abs(gbrank.weighted_logistic_softmax(alpha=0.5, max_label=1).grad_hess(y, s, [4, 2])[0]).max() > 0.05


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_not_shift_invariant_and_every_query_trains(name):
    cls = RCR if name == "rcr" else WeightedLogisticSoftmax
    assert cls.shift_invariant is False and cls.ignores_orderless_queries is False
    obj = FACTORIES[name]()
    y, s = np.array([1.0, 0.0, 0.0]), np.array([0.3, -0.2, 0.1])
    assert obj.loss(y, s, [3]) != pytest.approx(obj.loss(y, s + 2.0, [3]))
    # a query without a relevant document: the pointwise term still pulls its scores down
    grad = obj.grad_hess(np.zeros(3), s, [3])[0]
    assert (grad > 0).all()


# --------------------------------------------------------------------------- labels
def test_graded_labels_are_divided_by_the_largest_training_label_or_max_label():
    y, s, sizes = np.array([4.0, 2.0, 0.0, 1.0]), np.array([0.2, -0.1, 0.4, 0.0]), [4]
    default = gbrank.rcr().grad_hess(y, s, sizes)[0]
    np.testing.assert_array_equal(default, gbrank.rcr(max_label=4).grad_hess(y, s, sizes)[0])
    np.testing.assert_array_equal(default, gbrank.rcr(max_label=1).grad_hess(y / 4, s, sizes)[0])
    halved = gbrank.rcr(max_label=8).grad_hess(y, s, sizes)[0]
    np.testing.assert_array_equal(halved, gbrank.rcr(max_label=1).grad_hess(y / 8, s, sizes)[0])
    # binary labels stay as they are, and a query set of zeros gets zero targets
    b = np.array([1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(gbrank.rcr().grad_hess(b, s, sizes)[0], gbrank.rcr(max_label=1).grad_hess(b, s, sizes)[0])
    assert np.isfinite(gbrank.rcr().grad_hess(np.zeros(4), s, sizes)[0]).all()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_labels_within_0_and_1_are_probabilities_as_given(name):
    # click rates whose largest is 0.4: scaled by it, every target (and prediction) would be
    # 2.5 times too large, and the calibration metrics, which read them as is, would not show it
    y, sizes = np.array([0.1, 0.4, 0.2, 0.0, 0.3]), [3, 2]
    s = np.log(np.clip(y, 1e-3, None) / (1 - np.clip(y, 1e-3, None)))
    default = FACTORIES[name]().grad_hess(y, s, sizes)[0]
    np.testing.assert_array_equal(default, FACTORIES[name](max_label=1).grad_hess(y, s, sizes)[0])
    if name == "rcr":  # at sigma(s) = y both of RCR's terms are minimal
        assert np.abs(default[:3]).max() < 1e-12


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_label_above_max_label_is_named_with_the_fix(name):
    with pytest.raises(ValueError, match=r"y_true\[5\] = 3 at row 5 \(query 1\).*raise max_label"):
        FACTORIES[name](max_label=1).grad_hess([0, 1, 0, 1, 0, 3], np.zeros(6), [3, 3])


@pytest.mark.parametrize("alpha, error", [(-0.1, "alpha"), (1.5, r"alpha must lie in \[0, 1\]"), ("x", "alpha")])
def test_bad_alpha_is_refused(alpha, error):
    with pytest.raises((ValueError, TypeError), match=error):
        gbrank.rcr(alpha=alpha)
    with pytest.raises((ValueError, TypeError), match=error):
        gbrank.weighted_logistic_softmax(alpha=alpha)


def test_bad_max_label_is_refused():
    with pytest.raises(ValueError, match="max_label"):
        gbrank.rcr(max_label=0)


# --------------------------------------------------------------------------- engines
def click_data(seed, n_queries=150, docs=12):
    """Features and clicks drawn with a known probability sigma(x . w + query offset)."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 5))
    offset = np.repeat(rng.normal(scale=0.7, size=n_queries), docs)
    p = 1.0 / (1.0 + np.exp(-(X @ np.array([1.2, -0.8, 0.5, 0.0, 0.0]) - 1.0 + offset)))
    return X, (rng.uniform(size=n) < p).astype(float), np.full(n_queries, docs), p


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_training_gives_calibrated_probabilities_in_both_engines(engine):
    X, y, sizes, _ = click_data(0)
    Xt, yt, _, pt = click_data(1)
    obj = gbrank.rcr(alpha=0.5)
    if engine == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        booster = lgb.train({**lgb_params(min_data_in_leaf=20), "objective": obj, "learning_rate": 0.1},
                            lgb.Dataset(X, y, group=sizes), num_boost_round=60)
        scores = booster.predict(Xt)
    else:
        xgb = pytest.importorskip("xgboost")
        params = {**XGB_PARAMS, **gbrank.engines.xgboost.params(obj), "eta": 0.1, "max_depth": 3}
        booster = xgb.train(params, xgb.DMatrix(X, y, group=sizes), num_boost_round=60, obj=obj)
        scores = booster.predict(xgb.DMatrix(Xt), output_margin=True)
    prob = 1.0 / (1.0 + np.exp(-scores))
    # the mean probability matches the click rate, and the probabilities track the truth
    assert abs(prob.mean() - yt.mean()) < 0.03
    assert np.corrcoef(prob, pt)[0, 1] > 0.8


def test_pickles_and_repr():
    obj = gbrank.rcr(alpha=0.25, max_label=4)
    assert repr(obj) == "rcr(alpha=0.25, max_label=4.0, hess_floor=1e-06, hess_scale=1.0)"
    clone = pickle.loads(pickle.dumps(obj))
    y, s, sizes = cases(3)
    for a, b in zip(obj.grad_hess(y, s, sizes), clone.grad_hess(y, s, sizes)):
        np.testing.assert_array_equal(a, b)
