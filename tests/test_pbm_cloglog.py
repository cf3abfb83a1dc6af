"""gbrank.pbm_cloglog: the position-based model's likelihood of binary clicks (complementary
log-log link, each query's factor profiled), its propensity estimate and its workflows in
both engines. The contract every click objective shares is tested in test_clicks.py and
test_click_contract.py; the catalogues check it with 0/1 labels, and test_pbm_clicks.py its
estimate under Dask."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.objectives.clicks_cloglog import estimate_cloglog_propensity, saturated_positions
from gbrank.objectives.propensity import estimate_propensity
from helpers import fd_gradient

LGB = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 5}
XGB = {"max_depth": 3, "nthread": 1, "min_child_weight": 0.0, "eta": 0.3, "base_score": 0.0}


def direct_query_loss(c, s, theta):
    """min over the log factor u of sum_i (1 - c_i) lambda_i - c_i log(1 - exp(-lambda_i)),
    lambda_i = exp(u) theta_i exp(s_i), as the model writes it, minimised by scipy."""
    def nll(u):
        lam = np.exp(u) * theta * np.exp(s)
        return float(np.sum((1 - c) * lam - c * np.log(1.0 - np.exp(-lam))))
    return minimize_scalar(nll, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12}).fun


def direct_loss(clicks, scores, position, theta, sizes):
    total, start = 0.0, 0
    for n in sizes:
        c, s, p = clicks[start:start + n], scores[start:start + n], position[start:start + n]
        shown = p >= 1
        if 0 < c[shown].sum() < shown.sum():
            total += direct_query_loss(c[shown], s[shown], theta[p[shown] - 1])
        start += n
    return total


@pytest.fixture(scope="module")
def random_queries():
    rng = np.random.default_rng(5)
    sizes = np.array([5, 2, 7, 4, 1, 6, 3])
    n = sizes.sum()
    position = np.concatenate([rng.permutation(np.arange(1, k + 1)) for k in sizes])  # not in display order
    position[[1, 9, 12, 20]] = -1  # some rows never shown
    clicks = (rng.random(n) < 0.5).astype(float)
    clicks[position == -1] = 0.0
    clicks[5:7] = 0.0  # a query without clicks
    clicks[24:27] = 1.0  # a query with only clicks
    scores = rng.normal(size=n)
    theta = (1.0 / np.arange(1, 8)) ** 1.5
    return clicks, scores, position, theta, sizes


# =========================================================================== the loss
def test_gradient_and_hessian_match_finite_differences_of_a_direct_loss(random_queries):
    clicks, scores, position, theta, sizes = random_queries
    obj = gbrank.pbm_cloglog(propensity=theta, hess_floor=0.0)
    loss = lambda s: direct_loss(clicks, s, position, theta, sizes)
    assert obj.loss(clicks, scores, sizes, position=position) == pytest.approx(loss(scores), rel=1e-9)
    grad, hess = obj.grad_hess(clicks, scores, sizes, position=position)
    np.testing.assert_allclose(grad, fd_gradient(loss, scores), atol=1e-6)
    # the diagonal of the profiled loss's hessian, by second differences of the direct loss
    eps = 1e-3
    second = np.array([(loss(scores + eps * e) - 2 * loss(scores) + loss(scores - eps * e)) / eps**2
                       for e in np.eye(scores.size)])
    np.testing.assert_allclose(hess, second, atol=2e-5)
    assert (hess >= 0).all() and hess.max() > 0.05


def test_queries_with_all_or_no_clicks_and_rows_never_shown_get_nothing(random_queries):
    clicks, scores, position, theta, sizes = random_queries
    grad, hess = gbrank.pbm_cloglog(propensity=theta, hess_floor=0.0).grad_hess(clicks, scores, sizes,
                                                                                 position=position)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    for q in (1, 4, 5):  # no click; a single row; only clicks
        assert not grad[offsets[q]:offsets[q + 1]].any() and not hess[offsets[q]:offsets[q + 1]].any()
    assert not grad[position == -1].any() and not hess[position == -1].any()
    for a, b in zip(offsets[:-1], offsets[1:]):
        assert abs(grad[a:b].sum()) < 1e-9  # the profiled factor: a query's gradients sum to zero


@pytest.mark.parametrize("magnitude", [30.0, 300.0, 3000.0])
def test_extreme_scores_stay_finite(random_queries, magnitude):
    clicks, _, position, theta, sizes = random_queries
    scores = magnitude * np.where(np.arange(clicks.size) % 2 == 0, 1.0, -1.0)
    obj = gbrank.pbm_cloglog(propensity=theta)
    grad, hess = obj.grad_hess(clicks, scores, sizes, position=position)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert np.isfinite(obj.loss(clicks, scores, sizes, position=position))


def test_without_propensities_the_offsets_are_zero(random_queries):
    clicks, scores, position, _, sizes = random_queries
    naive = gbrank.pbm_cloglog(propensity=None).grad_hess(clicks, scores, sizes)
    flat = gbrank.pbm_cloglog(propensity=np.ones(7)).grad_hess(clicks, scores, sizes, position=np.where(
        position == -1, -1, 1))
    shown = position >= 1
    np.testing.assert_allclose(naive[0][~shown & (clicks == 0)].sum() * 0, 0.0)
    one = gbrank.pbm_cloglog(propensity=None).grad_hess(clicks[shown], scores[shown],
                                                        np.bincount(np.repeat(np.arange(sizes.size), sizes)[shown],
                                                                    minlength=sizes.size))
    np.testing.assert_allclose(flat[0][shown], one[0], atol=1e-12)
    np.testing.assert_allclose(flat[1][shown], one[1], atol=1e-12)


# =========================================================================== refusals
@pytest.mark.parametrize("kwargs, match", [
    ({"clip": 0.1}, "no inverse-propensity weights to clip"),
    ({"propensity_model": "monotone"}, "propensity_model='free'"),
    ({"propensity_model": "power"}, "use them with pbm_listnet"),
    ({"propensity": [1.0, 0.0]}, "propensity of position 2 is 0.0"),
    ({"warmup": -1}, "warmup"),
])
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gbrank.pbm_cloglog(**kwargs)


def test_click_counts_are_refused_naming_row_and_query():
    with pytest.raises(ValueError, match=r"binary clicks .*y_true\[5\] = 2 at row 5 \(query 1\)\. For click counts "
                                         r"use pbm_listnet"):
        gbrank.pbm_cloglog(propensity=None).grad_hess([1, 0, 0, 1, 0, 2], np.zeros(6), [3, 3])


def test_the_bootstrap_interval_is_refused_naming_why(natural):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, _ = natural
    obj = gbrank.pbm_cloglog(warmup=1, update_every=1)
    dtrain = gbrank.engines.lightgbm.dataset(X, clicks, group, position=pos, params=LGB)
    model = lgb.train({**LGB, "objective": obj}, dtrain, 3)
    with pytest.raises(ValueError, match="click-count model's estimate"):
        obj.binding(dtrain).propensity_interval(model.predict(X))


def test_cascade_targets_refuse_it():
    targets = gbrank.cascade_targets(np.array([[0, 1, 2], [0, 2, 1]]), np.array([[0, 1, 0], [1, 0, 0]]), 3)
    with pytest.raises(ValueError, match="with cascade targets"):
        gbrank.fit_clicks(np.zeros((3, 1)), targets, [3], objective=gbrank.pbm_cloglog(propensity=None))


def test_repr_and_pickle_keep_the_settings():
    obj = gbrank.pbm_cloglog(propensity=[1.0, 0.5], hess_floor=1e-4)
    assert repr(obj) == "pbm_cloglog(propensity=[1.0, 0.5], hess_floor=0.0001, hess_scale=1.0)"
    assert repr(pickle.loads(pickle.dumps(obj))) == repr(obj)


# =========================================================================== the estimate
def _cloglog_log(n_queries, theta, seed):
    """Clicks drawn from the model itself: lists of 10, each query's own factor."""
    rng = np.random.default_rng(seed)
    sizes = np.full(n_queries, theta.size)
    scores = rng.normal(size=sizes.sum())
    position = np.concatenate([rng.permutation(np.arange(1, theta.size + 1)) for _ in range(n_queries)])
    kappa = np.repeat(np.exp(rng.normal(0.5, 0.5, n_queries)), sizes)
    clicks = (rng.random(sizes.sum()) < -np.expm1(-kappa * theta[position - 1] * np.exp(scores))).astype(float)
    return scores, clicks, position, np.concatenate(([0], np.cumsum(sizes)))


def test_the_estimate_is_the_maximum_of_the_likelihood():
    """At the estimate, the direct loss (each query's factor minimised by scipy) is flat in
    every log propensity."""
    theta = 1.0 / np.arange(1, 7)
    scores, clicks, position, offsets = _cloglog_log(150, theta, seed=3)
    estimate = estimate_cloglog_propensity(scores, clicks, position, offsets, 6, n_rounds=300)
    sizes = np.diff(offsets)
    loss = lambda log_theta: direct_loss(clicks, scores, position, np.exp(log_theta), sizes)
    slope = fd_gradient(loss, np.log(estimate))
    assert np.abs(slope).max() < 1e-4
    moved = np.log(estimate) + np.array([0.0, 0.1, -0.1, 0.05, 0.0, -0.05])
    assert loss(moved) > loss(np.log(estimate)) + 1e-3


def test_a_position_clicked_in_every_query_is_left_out():
    """Saturated clicks at the top: the likelihood rises without end in theta_1. The position
    is left out, and the others are estimated relative to position 2, as without its rows."""
    theta = 1.0 / np.arange(1, 11)
    scores, clicks, position, offsets = _cloglog_log(2000, theta, seed=4)
    clicks[position == 1] = 1.0
    assert saturated_positions(clicks, position, offsets, 10).tolist() == [True] + [False] * 9
    estimate = estimate_cloglog_propensity(scores, clicks, position, offsets, 10, n_rounds=60)
    assert np.isnan(estimate[0]) and estimate[1] == 1.0
    np.testing.assert_allclose(estimate[1:], theta[1:] / theta[1], rtol=0.25)
    # the objective trains without the position's rows and says so
    binding = gbrank.pbm_cloglog().bind(clicks, np.diff(offsets), position=position)
    grad, _ = binding.grad_hess(scores)
    assert not grad[position == 1].any() and grad[position == 2].any()
    assert binding.left_out_.tolist() == [True] + [False] * 9 and not binding.unexamined_.any()


def test_saturation_is_repeated_until_nothing_changes():
    # four queries, each with clicked and unclicked rows; position 1 is clicked in all of them
    clicks = np.array([1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1.0])
    position = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3])
    offsets = np.array([0, 3, 6, 9, 12])
    assert saturated_positions(clicks, position, offsets, 3).tolist() == [True, False, False]
    # without position 1 the first query (position 3 unclicked) has no click left and stops
    # telling: position 3 is then clicked in every query that tells
    clicks = np.array([1, 0, 1, 0, 1, 1, 1, 0.0])
    position = np.array([1, 3, 1, 2, 3, 1, 3, 2])
    offsets = np.array([0, 2, 5, 8])
    assert saturated_positions(clicks, position, offsets, 3).tolist() == [True, False, True]


def test_the_estimate_is_closer_to_its_model_than_the_click_count_estimate():
    """Clicks drawn from the model, scores the truth: the count model reads the saturation as
    flat position bias. With each query's factor profiled the estimate is biased on short lists
    (too steep; an incidental-parameter bias), less on longer ones."""
    theta = 1.0 / np.arange(1, 31)
    scores, clicks, position, offsets = _cloglog_log(1500, theta, seed=1)
    estimate = estimate_cloglog_propensity(scores, clicks, position, offsets, 30, n_rounds=60)
    counts = estimate_propensity(scores, clicks, position, offsets, 30, fit_slope=False)
    error = lambda t: np.abs(np.log(t[:10] / theta[:10]))
    assert error(estimate).max() < 0.3 and error(estimate).mean() < 0.12
    assert error(counts).mean() > 2 * error(estimate).mean()
    # from a start at the answer it stays there
    again = estimate_cloglog_propensity(scores, clicks, position, offsets, 30, start=estimate, n_rounds=5)
    np.testing.assert_allclose(again, estimate, rtol=1e-3)


def test_positions_without_clicks_are_estimated_as_nothing():
    theta = 1.0 / np.arange(1, 11)
    scores, clicks, position, offsets = _cloglog_log(300, theta, seed=2)
    clicks[position == 4] = 0.0
    estimate = estimate_cloglog_propensity(scores, clicks, position, offsets, 12)
    assert np.isnan(estimate[[3, 10, 11]]).all() and np.isfinite(np.delete(estimate, [3, 10, 11])).all()


# =========================================================================== engines
@pytest.fixture(scope="module")
def natural():
    """A binary click log (clicked in any of 20 sessions), rows in their natural order."""
    d = make_ranking(80, (12, 12), 8, seed=4)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=20, top_k=10, eta=1.0, aggregate="binary", seed=1)
    return d.X, log.clicks.astype(float), d.group, log.position.astype(np.int64), log


@pytest.mark.parametrize("propensity", ["known", "estimate"])
def test_lightgbm_positioned_dataset_equals_the_explicit_gradients(natural, propensity):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = natural
    make = lambda: gbrank.pbm_cloglog(log.theta if propensity == "known" else "estimate", warmup=2, update_every=2)
    model = lgb.train({**LGB, "objective": make()},
                      gbrank.engines.lightgbm.dataset(X, clicks, group, position=pos, params=LGB), 10)
    obj = make()
    explicit = lgb.train({**LGB, "objective": lambda p, _: obj.grad_hess(clicks, p, group, position=pos)},
                         lgb.Dataset(X, clicks, group=group), 10)
    np.testing.assert_allclose(model.predict(X), explicit.predict(X), rtol=1e-10, atol=1e-12)


def test_xgboost_with_position_equals_the_explicit_gradients(natural):
    xgb = pytest.importorskip("xgboost")
    X, clicks, group, pos, _ = natural
    dtrain = xgb.DMatrix(X, clicks, qid=np.repeat(np.arange(group.size), group))
    make = lambda: gbrank.pbm_cloglog(warmup=2, update_every=2)
    booster = xgb.train(XGB, dtrain, 8, obj=gbrank.engines.with_position(make(), pos))
    obj = make()
    explicit = xgb.train(XGB, dtrain, 8, obj=lambda p, d: obj.grad_hess(clicks, p, group, position=pos))
    np.testing.assert_allclose(booster.predict(dtrain), explicit.predict(dtrain), rtol=1e-10, atol=1e-12)


def test_the_estimate_moves_and_a_second_training_repeats_the_first(natural):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = natural
    obj = gbrank.pbm_cloglog(warmup=2, update_every=2)
    params = {**LGB, "objective": obj, "learning_rate": 0.2}
    first_set = gbrank.engines.lightgbm.dataset(X, clicks, group, position=pos, params=LGB)
    first = lgb.train(params, first_set, 12)
    theta = obj.binding(first_set).propensity_
    assert theta.shape == (10,) and theta[0] == 1.0 and np.all(np.diff(theta[:5]) < 0)
    start = gbrank.pbm_cloglog(warmup=100).bind(clicks, group, position=pos)
    start.grad_hess(np.zeros(clicks.size))
    assert np.abs(theta - start.propensity_).max() > 1e-3
    second_set = gbrank.engines.lightgbm.dataset(X, clicks, group, position=pos, params=LGB)
    second = lgb.train(params, second_set, 12)
    np.testing.assert_array_equal(obj.binding(second_set).propensity_, theta)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    np.testing.assert_array_equal(copy.deepcopy(obj).binding(first_set).propensity_, theta)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_ranker_with_a_position_column_and_pickle(natural, engine):
    pd = pytest.importorskip("pandas")
    pytest.importorskip(engine)
    X, clicks, group, pos, _ = natural
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["qid"] = np.repeat(np.arange(group.size), group)
    model = gbrank.Ranker(gbrank.pbm_cloglog(warmup=1, update_every=1), engine=engine, n_estimators=4,
                          learning_rate=0.2, max_depth=3, n_jobs=1)
    model.fit(frame, clicks, position=pos)
    assert np.isfinite(model.propensity_[:5]).all() and model.propensity_[0] == 1.0
    assert model.left_out_.shape == model.propensity_.shape and (model.propensity_[model.left_out_] == 1.0).all()
    features = frame.drop(columns="qid")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(features), model.predict(features))
