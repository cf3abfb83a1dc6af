"""Click simulation (gbrank.datasets.simulate_clicks), the IPS softmax objective, and what the
click objectives share (positions, propensities, clipping), for both of them."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import gbrank
from gbrank.datasets import click_probability, make_ranking, simulate_clicks
from gbrank.objectives.propensity import estimate_propensity
from helpers import fd_gradient


def direct_loss(weights, scores, sizes):
    """-sum_i w_i log softmax(s)_i per query, written out with scipy's logsumexp."""
    from scipy.special import logsumexp

    total, start = 0.0, 0
    for n in sizes:
        s, w = scores[start:start + n], weights[start:start + n]
        if n >= 2:
            total += float(np.sum(w * (logsumexp(s) - s)))
        start += n
    return total


# =========================================================================== simulation
def test_click_rates_match_theta_times_relevance():
    y = np.array([2, 0, 1, 2, 0, 1, 0, 2], dtype=float)
    scores = np.array([8, 7, 6, 5, 4, 3, 2, 1], dtype=float)  # shown in row order
    n = 40_000
    log = simulate_clicks(y, [8], scores, sessions_per_query=n, top_k=8, eta=1.0, eps=0.1, seed=1)
    p = np.arange(1, 9)
    expected = (1.0 / p) * click_probability(y, eps=0.1)
    np.testing.assert_array_equal(log.position, p)
    rate = log.clicks / n
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(rate - expected) <= 4 * se)
    np.testing.assert_allclose(click_probability([0, 1, 2], eps=0.1), [0.1, 0.1 + 0.9 / 3, 1.0])


def test_top_k_cut_off_and_never_shown_rows():
    y = np.array([0, 1, 2, 1, 0], dtype=float)
    scores = np.array([1, 5, 4, 3, 2], dtype=float)
    log = simulate_clicks(y, [5], scores, sessions_per_query=2000, top_k=3, eps=1.0, seed=0)
    np.testing.assert_array_equal(log.position, [-1, 1, 2, 3, -1])
    assert log.clicks[[0, 4]].sum() == 0 and (log.clicks[1:4] > 0).all()
    np.testing.assert_array_equal(log.propensity, [0, 1, 0.5, 1 / 3, 0])


def test_seeds_reproduce_and_differ():
    d = make_ranking(50, 20, 8, seed=3)
    a = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=30, seed=7)
    b = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=30, seed=7)
    c = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=30, seed=8)
    np.testing.assert_array_equal(a.clicks, b.clicks)
    assert not np.array_equal(a.clicks, c.clicks)


def test_per_session_output_adds_up_to_the_counts():
    d = make_ranking(20, (15, 15), 5, seed=0)
    for policy in ("deterministic", "plackett_luce"):
        log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=25, top_k=5, policy=policy,
                              per_session=True, n_policy_samples=50, seed=2)
        assert log.session_rows.shape == (20 * 25, 5)
        counts = np.bincount(log.session_rows[log.session_clicks], minlength=d.y.size)
        np.testing.assert_array_equal(counts, log.clicks)
        # every session shows distinct rows of its own query
        start = np.concatenate(([0], np.cumsum(d.group)))[log.session_query]
        assert ((log.session_rows >= start[:, None]) & (log.session_rows < start[:, None] + 15)).all()


def test_cascade_clicks_at_most_once_per_session():
    d = make_ranking(10, 10, 5, seed=1)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=200, click_model="cascade", per_session=True)
    assert log.session_clicks.sum(axis=1).max() <= 1


@pytest.mark.parametrize("model, eta", [("cascade", 1.0), ("cascade_abandon", 1.0), ("cascade_abandon", 2.0)])
def test_cascade_click_rates_are_the_models(model, eta):
    """Position p is clicked with probability theta_p r_p prod_{j<p} (1 - r_j), theta_p =
    p^-eta for users who may leave without a click and 1 for those who do not; none past the
    fold."""
    from gbrank.datasets.clicks import click_probability

    y = np.array([1, 0, 2, 1, 3, 0, 4, 1])
    n = 200_000
    log = simulate_clicks(y, [8], -np.arange(8.0), sessions_per_query=n, top_k=8, click_model=model, eta=eta,
                          fold=6, per_session=True, seed=1)
    r = click_probability(y.astype(float), eps=0.1, max_label=4)
    reach = np.arange(1, 9) ** -eta if model == "cascade_abandon" else np.ones(8)
    expected = np.where(np.arange(8) < 6, reach * r * np.concatenate(([1.0], np.cumprod(1 - r)[:-1])), 0.0)
    np.testing.assert_allclose(log.clicks / n, expected, atol=4 * np.sqrt(0.25 / n))
    assert log.session_clicks.sum(axis=1).max() == 1


def test_abandonment_draws_nothing_for_the_other_click_models():
    # the abandonment draws come only with cascade_abandon: the other models' logs are as before
    d = make_ranking(10, 10, 5, seed=1)
    a = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, click_model="cascade", per_session=True, seed=4)
    b = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, click_model="cascade_abandon", eta=0.0,
                        per_session=True, seed=4)
    c = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, click_model="cascade_abandon", per_session=True,
                        seed=4)
    assert a.clicks.sum() > c.clicks.sum() > 0
    np.testing.assert_array_equal(a.session_rows, c.session_rows)
    assert b.clicks.sum() > 0  # eta 0: nobody leaves, but the draws are others


def test_plackett_luce_propensity_is_the_expected_examination():
    # two documents, top_k=1: P(first shown) = softmax, so rho = softmax(s) * theta_1
    log = simulate_clicks([1, 0], [2], [1.0, 0.0], top_k=1, policy="plackett_luce", n_policy_samples=20_000,
                          seed=0)
    p = np.exp(1) / (np.exp(1) + 1)
    np.testing.assert_allclose(log.propensity, [p, 1 - p], atol=0.02)
    assert log.position is None


def test_ips_weights_refuse_a_clicked_row_the_sampled_policy_never_showed():
    rng = np.random.default_rng(0)
    y, group = rng.integers(0, 3, size=50 * 60), np.full(50, 60)
    log = simulate_clicks(y, group, rng.normal(size=y.size), top_k=5, policy="plackett_luce", temperature=0.7,
                          n_policy_samples=5, sessions_per_query=20, seed=0)
    never = (log.clicks > 0) & (log.propensity == 0)
    assert never.any()
    with pytest.raises(ValueError, match=r"row \d+ was clicked but its estimated propensity is 0.*n_policy_samples"):
        log.ips_weights()
    clipped = log.ips_weights(clip=0.05)
    np.testing.assert_allclose(clipped, log.clicks / np.maximum(log.propensity, 0.05) * (log.clicks > 0))
    assert np.isfinite(clipped).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"y": [0.5, 1]}, "non-negative integers"),
    ({"scores": None}, "pass logging_scores, or X"),
    ({"top_k": 0}, "top_k"),
    ({"click_model": "dbn"}, "click_model"),
    ({"policy": "random"}, "policy"),
])
def test_simulation_refuses_bad_input(kwargs, match):
    args = {"y": [1, 0], "scores": [1.0, 0.0]}
    y = kwargs.pop("y", args["y"])
    scores = kwargs.pop("scores", args["scores"])
    with pytest.raises(ValueError, match=match):
        simulate_clicks(y, [2], scores, **kwargs)


# =========================================================================== the loss
@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    sizes = np.array([4, 3, 5])
    y = rng.integers(0, 3, sizes.sum()).astype(float)
    pos = np.concatenate([np.arange(1, n + 1) for n in sizes])
    scores = rng.normal(size=sizes.sum())
    return y, pos, scores, sizes


def test_gradient_and_hessian_match_finite_differences_of_a_direct_loss(tiny):
    y, pos, s, sizes = tiny
    theta = np.array([1.0, 0.6, 0.4, 0.3, 0.25])
    clicks = np.array([3, 0, 1, 2, 0, 4, 1, 2, 0, 0, 1, 5], dtype=float)
    obj = gbrank.ips_listnet(propensity=theta, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, s, sizes, position=pos)
    w = clicks / theta[pos - 1]
    f = lambda x: direct_loss(w, x, sizes)  # noqa: E731
    np.testing.assert_allclose(obj.loss(clicks, s, sizes, position=pos), f(s), rtol=1e-12)
    np.testing.assert_allclose(grad, fd_gradient(f, s), rtol=1e-6, atol=1e-7)
    h = 1e-4
    second = np.array([(f(s + e) - 2 * f(s) + f(s - e)) / h**2 for e in np.eye(s.size) * h])
    np.testing.assert_allclose(hess, second, rtol=1e-4, atol=1e-5)


def click_draws(y, sizes, logging, n_sessions, n_draws, **kwargs):
    """Clicks of ``n_draws`` independent logs of ``n_sessions`` sessions per query, shape
    (n_draws, n_rows), from one simulation of ``n_sessions * n_draws`` sessions."""
    log = simulate_clicks(y, sizes, logging, sessions_per_query=n_sessions * n_draws, per_session=True, **kwargs)
    draw = np.tile(np.repeat(np.arange(n_draws), n_sessions), len(sizes))
    shown = log.session_rows >= 0
    rows = log.session_rows[shown & log.session_clicks]
    which = np.broadcast_to(draw[:, None], log.session_rows.shape)[shown & log.session_clicks]
    counts = np.zeros((n_draws, len(y)))
    np.add.at(counts, (which, rows), 1)
    return counts, log


CLICK_OBJECTIVES = {
    "ips_listnet": gbrank.ips_listnet,
    "ips_ranknet": gbrank.ips_ranknet,
    "ips_ranknet_dcg": lambda **kw: gbrank.ips_ranknet(weighting="dcg", **kw),
}


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_ips_loss_averaged_over_click_draws_is_the_full_information_loss(tiny, name):
    y, pos, s, sizes = tiny
    eta, eps, n_sessions, n_draws = 1.0, 0.1, 20, 200
    make = CLICK_OBJECTIVES[name]
    # logging scores that show each query's rows in row order, as pos says
    logging = -pos.astype(float)
    counts, log = click_draws(y, sizes, logging, n_sessions, n_draws, top_k=5, eta=eta, eps=eps, seed=0)
    np.testing.assert_array_equal(log.position, pos)
    obj = make(propensity=(1.0 / np.arange(1, 6)) ** eta)
    losses = np.array([obj.loss(c, s, sizes, position=pos) for c in counts])
    grads = np.array([obj.grad_hess(c, s, sizes, position=pos)[0] for c in counts])
    # the full-information loss: every document's click probability, as if all were examined
    # (the same objective on those as already weighted labels: test_clicks_pairwise.py and the
    # finite-difference test above check it against direct implementations)
    truth = n_sessions * click_probability(y, eps=eps)
    naive = make(propensity=None)
    full = naive.loss(truth, s, sizes)
    if name == "ips_listnet":
        np.testing.assert_allclose(full, direct_loss(truth, s, sizes), rtol=1e-12)
    se = losses.std(ddof=1) / np.sqrt(n_draws)
    assert abs(losses.mean() - full) < 4 * se
    # and the naive loss is biased by much more than that
    assert abs(np.mean([naive.loss(c, s, sizes) for c in counts]) - full) > 20 * se
    full_grad = naive.grad_hess(truth, s, sizes)[0]
    assert np.all(np.abs(grads.mean(axis=0) - full_grad) < 4 * grads.std(axis=0, ddof=1) / np.sqrt(n_draws) + 1e-12)


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_clipping_trades_a_known_bias_for_less_variance(tiny, name):
    y, pos, s, sizes = tiny
    eps, n_sessions, n_draws, clip = 0.1, 20, 200, 0.4
    make = CLICK_OBJECTIVES[name]
    counts, _ = click_draws(y, sizes, -pos.astype(float), n_sessions, n_draws, top_k=5, eta=1.0, eps=eps, seed=3)
    theta = 1.0 / np.arange(1, 6)
    plain = make(propensity=theta)
    clipped = make(propensity=theta, clip=clip)
    # clipping is the unclipped loss at the propensities max(theta, clip)
    np.testing.assert_array_equal(clipped.grad_hess(counts[0], s, sizes, position=pos)[0],
                                  make(propensity=np.maximum(theta, clip)).grad_hess(counts[0], s, sizes, position=pos)[0])
    unbiased = np.array([plain.loss(c, s, sizes, position=pos) for c in counts])
    biased = np.array([clipped.loss(c, s, sizes, position=pos) for c in counts])
    assert biased.std() < 0.8 * unbiased.std()
    # in expectation, a document at a position with theta < clip counts theta / clip of its relevance
    gamma = click_probability(y, eps=eps)
    shrunk = n_sessions * gamma * np.minimum(1.0, theta[pos - 1] / clip)
    expected = make(propensity=None).loss(shrunk, s, sizes)
    full = make(propensity=None).loss(n_sessions * gamma, s, sizes)
    se = biased.std(ddof=1) / np.sqrt(n_draws)
    assert abs(biased.mean() - expected) < 4 * se
    assert abs(biased.mean() - full) > 10 * se


def test_policy_aware_weights_are_unbiased_with_a_top_k_cut_off():
    y = np.array([2, 0, 1, 0, 2, 1], dtype=float)
    logging = np.array([0.5, 0.3, 0.2, 0.0, -0.2, -0.4])
    s = np.array([0.1, -0.3, 0.4, 0.0, 0.2, -0.1])
    n_sessions, n_draws = 30, 200
    counts, log = click_draws(y, [6], logging, n_sessions, n_draws, top_k=2, policy="plackett_luce",
                              n_policy_samples=50_000, seed=0)
    assert (log.propensity > 0).all()
    obj = gbrank.ips_listnet(propensity=None)
    losses = np.array([obj.loss(c / log.propensity, s, [6]) for c in counts])
    full = direct_loss(n_sessions * click_probability(y), s, [6])
    se = losses.std(ddof=1) / np.sqrt(n_draws)
    # the propensities are themselves sampled (50,000 rankings): allow their error too
    assert abs(losses.mean() - full) < 4 * se + 0.01 * full
    # the same clicks with the deterministic policy's cut-off miss documents 3..6 entirely
    det, _ = click_draws(y, [6], logging, n_sessions, 50, top_k=2, seed=1)
    assert det[:, 2:].sum() == 0


def test_propensity_estimator_recovers_theta_from_clicks_given_the_relevance():
    # scores that are exactly log relevance: the estimator must return theta
    d = make_ranking(400, (10, 10), 6, seed=5)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=400, top_k=10, eta=1.0, seed=1)
    offsets = np.concatenate(([0], np.cumsum(d.group)))
    theta = estimate_propensity(np.log(log.relevance), log.clicks.astype(float), log.position, offsets, 10)
    np.testing.assert_allclose(theta, log.theta, rtol=0.05)
    # a scale error in the scores (an under-fitted model) is absorbed by the fitted slope
    theta_flat = estimate_propensity(0.5 * np.log(log.relevance), log.clicks.astype(float), log.position, offsets, 10)
    np.testing.assert_allclose(theta_flat, log.theta, rtol=0.05)


# =========================================================================== inputs
@pytest.mark.parametrize("position, match", [
    (None, "needs the display position of every row"),
    ([1, 0, 2], r"position\[1\] = 0 at row 1 \(query 0\): positions are 1-based"),
    ([1, 2, 7], r"position\[2\] = 7 at row 2 \(query 0\) is past the 3 known propensities"),
    ([1, -1, 2], r"row 1 \(query 0\) has 2 clicks but position -1 \(never shown\)"),
    ([1, -3, 2], "positions are 1-based"),
    ([1.0, 2.5, 3.0], r"position\[1\] = 2.5 at row 1 \(query 0\) is not an integer"),
    ([1, 2], "position has shape"),
])
@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_bad_positions_are_refused_naming_row_and_query(position, match, name):
    obj = CLICK_OBJECTIVES[name](propensity=[1.0, 0.5, 0.3])
    with pytest.raises((ValueError, TypeError), match=match):
        obj.grad_hess([1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [3], position=position)


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_estimate_mode_needs_positions_but_weighted_labels_do_not(name):
    make = CLICK_OBJECTIVES[name]
    with pytest.raises(ValueError, match=r"ips_\w+\(propensity=estimate\) needs the display position"):
        make().grad_hess([1.0, 0.0], [0.0, 0.0], [2])
    grad, _ = make(propensity=None).grad_hess([1.0, 0.0], [0.0, 0.0], [2])
    # softmax: W pi - w; pairwise: one pair, -rho / ln 2 at equal scores
    np.testing.assert_allclose(grad, [-0.5, 0.5] if name == "ips_listnet" else [-0.5 / np.log(2), 0.5 / np.log(2)])


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_an_estimate_over_calls_with_labels_that_are_not_an_array_is_warned_about(name):
    # nothing is kept between calls for a list: the estimate would restart at every call
    objective = CLICK_OBJECTIVES[name]()
    labels, sizes, position = np.array([3.0, 1.0, 0.0, 2.0, 0.0, 1.0]), [3, 3], np.array([1, 2, 3, 1, 2, 3])
    with pytest.warns(UserWarning, match="not a numpy array: nothing is kept between calls"):
        objective.grad_hess(list(labels), np.zeros(6), sizes, position=position)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        objective.grad_hess(labels, np.zeros(6), sizes, position=position)
        CLICK_OBJECTIVES[name](propensity=[1.0, 0.5, 0.3]).grad_hess(list(labels), np.zeros(6), sizes,
                                                                    position=position)


@pytest.mark.parametrize("kwargs, match", [
    ({"propensity": [1.0, 0.0]}, "position 2 is 0.0"),
    ({"propensity": "known"}, "propensity must be"),
    ({"propensity": []}, "non-empty"),
    ({"update_every": 0}, "update_every"),
    ({"clip": 0.0}, "clip must be a finite number > 0"),
    ({"clip": np.nan}, "clip must be a finite number > 0"),
    ({"propensity": None, "clip": 0.1}, "propensity=None uses none"),
])
@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_bad_settings_are_refused(kwargs, match, name):
    with pytest.raises(ValueError, match=match):
        CLICK_OBJECTIVES[name](**kwargs)


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_negative_clicks_are_refused(name):
    with pytest.raises(ValueError, match="non-negative"):
        CLICK_OBJECTIVES[name](propensity=[1.0]).grad_hess([-1.0, 0.0], [0.0, 0.0], [2], position=[1, 1])


# =========================================================================== engines
@pytest.fixture(scope="module")
def click_data():
    d = make_ranking(150, (12, 12), 10, seed=2)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=100, top_k=12, eta=1.0, seed=0)
    query = np.repeat(np.arange(d.group.size), d.group)
    order = np.lexsort((log.position, query))  # every query's rows in display order
    return d.X[order], log.clicks[order].astype(float), d.group, log.position[order], log


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_lightgbm_takes_the_positions_it_is_told(click_data, name):
    lgb = pytest.importorskip("lightgbm")
    from gbrank.engines import lightgbm as engine
    from gbrank.engines import with_position

    X, clicks, group, pos, log = click_data
    params = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0}
    obj = CLICK_OBJECTIVES[name](propensity=log.theta)
    via_dataset = lgb.train({**params, "objective": obj}, engine.dataset(X, clicks, group, position=pos, params=params), 5)
    explicit = lgb.train(
        {**params, "objective": lambda p, _: obj.grad_hess(clicks, p, group, position=pos)},
        lgb.Dataset(X, clicks, group=group), 5,
    )
    np.testing.assert_allclose(via_dataset.predict(X), explicit.predict(X))
    with pytest.raises(ValueError, match=r"got none: bind them with gbrank.engines.with_position"):
        lgb.train({**params, "objective": obj}, lgb.Dataset(X, clicks, group=group), 1)
    with pytest.raises(ValueError, match="folds=gbrank.engines.query_folds"):
        lgb.cv({**params, "objective": with_position(obj, pos), "metric": "None"}, lgb.Dataset(X, clicks, group=group),
               num_boost_round=1, nfold=2, stratified=False)
    # rows in any order within their queries: the positions travel with the rows
    shuffled = pos.copy()
    shuffled[[0, 1]] = shuffled[[1, 0]]
    swapped = lgb.train({**params, "objective": with_position(obj, shuffled)}, lgb.Dataset(X, clicks, group=group), 5)
    explicit = lgb.train(
        {**params, "objective": lambda p, _: obj.grad_hess(clicks, p, group, position=shuffled)},
        lgb.Dataset(X, clicks, group=group), 5,
    )
    np.testing.assert_allclose(swapped.predict(X), explicit.predict(X))


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_xgboost_takes_the_row_order_as_the_position(click_data, name):
    xgb = pytest.importorskip("xgboost")
    X, clicks, group, pos, log = click_data
    qid = np.repeat(np.arange(group.size), group)
    obj = CLICK_OBJECTIVES[name](propensity=log.theta)
    dtrain = xgb.DMatrix(X, clicks, qid=qid)
    booster = xgb.train({"max_depth": 3, "nthread": 1, "min_child_weight": 0.0}, dtrain, 3, obj=obj)
    grad, hess = obj(np.zeros(clicks.size), dtrain)
    np.testing.assert_array_equal(grad, obj.grad_hess(clicks, np.zeros(clicks.size), group, position=pos)[0])
    assert np.isfinite(booster.predict(dtrain)).all()
    # xgb.cv's folds are whole queries with their rows in order
    cv = xgb.cv({"max_depth": 3, "nthread": 1, "min_child_weight": 0.0, "eval_metric": "rmse"}, dtrain, 2,
                nfold=2, obj=obj)
    assert len(cv) == 2
    # ... but a fold keeps no link to its DMatrix: an array of positions cannot reach its rows
    with pytest.raises(ValueError, match=r"positions for training data of \d+ rows.*xgb.cv fold.*query_folds"):
        xgb.cv({"max_depth": 3, "nthread": 1, "eval_metric": "rmse"}, dtrain, 2, nfold=2,
               obj=gbrank.engines.with_position(obj, pos))


def test_lgbmranker_without_positions_names_the_fix(click_data):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = click_data
    with pytest.raises(ValueError, match="LGBMRanker passes no positions"):
        lgb.LGBMRanker(objective=gbrank.ips_listnet(propensity=log.theta), n_estimators=1, verbose=-1).fit(
            X, np.minimum(clicks, 30), group=group)


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_estimated_propensity_is_exposed_and_a_second_training_repeats_the_first(click_data, name):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = click_data
    obj = CLICK_OBJECTIVES[name](warmup=2, update_every=2)
    with pytest.raises(AttributeError, match="propensity_"):
        obj.propensity_
    params = {"objective": obj, "learning_rate": 0.2, "num_leaves": 7, "verbose": -1, "num_threads": 1}
    positioned = {**params, "objective": gbrank.engines.with_position(obj, pos)}
    first_set = lgb.Dataset(X, clicks, group=group)
    first = lgb.train(positioned, first_set, 12)
    theta_first = obj.binding(first_set).propensity_
    assert theta_first.shape == (12,) and theta_first[0] == 1.0
    assert np.all(np.diff(theta_first[:6]) < 0)  # the estimate decays with the position
    second_set = lgb.Dataset(X, clicks, group=group)
    second = lgb.train(positioned, second_set, 12)
    np.testing.assert_array_equal(obj.binding(second_set).propensity_, theta_first)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    # the estimate is the training set's: an equal objective (lgb.train trains a deep copy),
    # a copy or a pickle of this one finds it there, and none of them holds it
    np.testing.assert_array_equal(copy.deepcopy(obj).binding(first_set).propensity_, theta_first)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(obj)).binding(first_set).propensity_, theta_first)
    with pytest.raises(AttributeError, match="binding"):
        obj.propensity_
    expected = {
        "ips_listnet": "ips_listnet(propensity='estimate', ",
        "ips_ranknet": "ips_ranknet(propensity='estimate', weighting='constant', sigma=1.0, ",
        "ips_ranknet_dcg": "ips_ranknet(propensity='estimate', weighting='dcg', sigma=1.0, ",
    }[name]
    assert repr(obj) == expected + "warmup=2, update_every=2, hess_floor=1e-06, hess_scale=1.0)"


@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_rows_never_shown_take_no_part_in_the_loss(name):
    make = CLICK_OBJECTIVES[name]
    theta = [1.0, 0.5, 0.25]
    clicks = np.array([3.0, 0.0, 1.0, 2.0, 0.0, 0.0, 1.0])
    pos = np.array([1, -1, 2, 3, -1, 1, 2])
    s = np.array([0.3, 5.0, -0.2, 0.1, -3.0, 0.4, 0.0])
    sizes = [5, 2]
    obj = make(propensity=theta, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, s, sizes, position=pos)
    assert grad[1] == grad[4] == hess[1] == hess[4] == 0.0
    shown = pos >= 1
    sub = make(propensity=theta, hess_floor=0.0)
    g_sub, h_sub = sub.grad_hess(clicks[shown], s[shown], [3, 2], position=pos[shown])
    np.testing.assert_array_equal(grad[shown], g_sub)
    np.testing.assert_array_equal(hess[shown], h_sub)
    assert obj.loss(clicks, s, sizes, position=pos) == sub.loss(clicks[shown], s[shown], [3, 2], position=pos[shown])
    # a query with no row shown contributes nothing
    g, _ = obj.grad_hess([0.0, 0.0, 1.0], [1.0, 2.0, 0.0], [2, 1], position=[-1, -1, 1])
    np.testing.assert_array_equal(g, 0.0)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("name", CLICK_OBJECTIVES)
def test_ranker_passes_the_positions_to_the_objective(click_data, name, engine):
    pytest.importorskip(engine)
    X, clicks, group, pos, log = click_data  # each query's rows in display order
    settings = dict(engine=engine, n_estimators=3, learning_rate=0.2, max_depth=3, n_jobs=1)
    make = CLICK_OBJECTIVES[name]
    model = gbrank.Ranker(make(propensity=log.theta), **settings).fit(X, clicks, group=group, position=pos)
    if name != "ips_ranknet_dcg":
        # rows of each query in reverse display order: the positions travel with the rows
        # (the DCG weights at the first iteration, where all scores tie, follow the row order)
        order = np.lexsort((-pos, np.repeat(np.arange(group.size), group)))
        reversed_rows = gbrank.Ranker(make(propensity=log.theta), **settings).fit(
            X[order], clicks[order], group=group, position=pos[order])
        np.testing.assert_allclose(reversed_rows.predict(X), model.predict(X), rtol=1e-6, atol=1e-9)
    if engine == "lightgbm":
        with pytest.raises(ValueError, match="got none: bind them with gbrank.engines.with_position"):
            gbrank.Ranker(make(propensity=log.theta), **settings).fit(X, clicks, group=group)
    else:
        # without position=, XGBoost's convention, with a warning: the row order within a query
        with pytest.warns(UserWarning, match="row order"):
            by_rows = gbrank.Ranker(make(propensity=log.theta), **settings).fit(X, clicks, group=group)
        np.testing.assert_array_equal(by_rows.predict(X), model.predict(X))


@pytest.mark.parametrize("factory", [gbrank.ips_listnet, gbrank.ips_ranknet, gbrank.pbm_listnet])
@pytest.mark.parametrize("curve", ["free", "monotone"])
def test_a_position_nobody_clicked_counts_as_never_shown(factory, curve):
    # rows below a fold: shown and logged with their positions, never examined, never clicked.
    # Counted as examined they would be pushed down as irrelevant; the estimate finds no
    # examination there, so they take no part, exactly as rows never shown.
    d = make_ranking(40, (12, 12), 5, seed=2)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=30, top_k=12, fold=8, seed=1)
    below = log.position > 8
    assert below.any() and log.clicks[below].sum() == 0
    hidden = np.where(below, -1, log.position)
    scores = np.random.default_rng(0).normal(size=d.y.size)
    obj = factory(propensity_model=curve)
    g, h = obj.grad_hess(log.clicks, scores, d.group, position=log.position)
    g_hidden, h_hidden = obj.grad_hess(log.clicks, scores, d.group, position=hidden)
    np.testing.assert_allclose(g, g_hidden, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h, h_hidden, rtol=1e-12, atol=1e-15)
    assert not g[below].any()
    assert obj.loss(log.clicks, scores, d.group, position=log.position) == pytest.approx(
        obj.loss(log.clicks, scores, d.group, position=hidden), rel=1e-12)
    # known propensities say what is examined: the rows there still count
    known = factory(propensity=np.r_[1 / np.arange(1, 9), np.full(4, 0.05)])
    g_known, _ = known.grad_hess(log.clicks, scores, d.group, position=log.position)
    assert g_known[below].any()


def test_a_clickless_position_with_few_rows_takes_the_estimate_above_it():
    # one long list among short ones: its deep positions have a row each and no click, which
    # says nothing of their examination (about one click expected there if examined)
    rng = np.random.default_rng(3)
    sizes = np.r_[np.full(30, 8), 12]
    position = np.concatenate([np.arange(1, s + 1) for s in sizes])
    clicks = np.where(position <= 8, rng.poisson(8.0 / position), 0).astype(np.float64)
    assert clicks[position == 8].sum() / 31 < 3
    scores = rng.normal(size=position.size)
    for factory in (gbrank.ips_listnet, gbrank.pbm_listnet):
        obj = factory()
        g, _ = obj.grad_hess(clicks, scores, sizes, position=position)
        assert g[position > 8].all(), "the deep rows take part"
        binding = obj.bind(clicks, sizes, position=position)
        binding.grad_hess(scores)
        theta = binding.propensity_
        np.testing.assert_allclose(theta[8:], theta[7])
