"""gbrank.pbm_listnet: the position-based model's likelihood on clicks (a softmax over the
scores offset by log propensity, the raw clicks as targets), and its workflows in both
engines. What every click objective shares (positions, the estimate's bookkeeping) is
tested for the IPS objectives in test_clicks.py and test_click_contract.py; here the same
contract is checked on this objective."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.objectives.clicks_cloglog import PBMCloglog
from gbrank.objectives.clicks_pbm import PBMListNet
from helpers import fd_gradient

LGB = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 5}
XGB = {"max_depth": 3, "nthread": 1, "min_child_weight": 0.0, "eta": 0.3, "base_score": 0.0}


def _positioned(X, clicks, group, position):
    """A LightGBM Dataset that keeps its position values (gbrank's builder)."""
    return gbrank.engines.lightgbm.dataset(X, clicks, group, position=position, params=LGB)


def direct_loss(clicks, scores, position, theta, sizes):
    """sum_i c_i (log sum_j theta_{p_j} e^{s_j} - s_i) over each query's shown rows, written
    out directly (no kernel, no softmax helper): the Poisson likelihood with the per-query
    scale profiled out, up to terms free of s."""
    total, start = 0.0, 0
    for n in sizes:
        c, s, p = clicks[start:start + n], scores[start:start + n], position[start:start + n]
        shown = p >= 1
        if shown.sum() >= 2:
            t = theta[p[shown] - 1]
            total += float(np.sum(c[shown] * (np.log(np.sum(t * np.exp(s[shown]))) - s[shown])))
        start += n
    return total


@pytest.fixture(scope="module")
def random_queries():
    rng = np.random.default_rng(3)
    sizes = np.array([5, 2, 7, 4, 1, 6])
    n = sizes.sum()
    position = np.concatenate([rng.permutation(np.arange(1, k + 1)) for k in sizes])  # not in display order
    position[[1, 9, 12, 20]] = -1  # some rows never shown
    clicks = rng.poisson(2.0, n).astype(float)
    clicks[position == -1] = 0.0
    clicks[5:7] = 0.0  # a query without clicks
    scores = rng.normal(size=n)
    theta = (1.0 / np.arange(1, 8)) ** 1.5
    return clicks, scores, position, theta, sizes


# =========================================================================== the loss
def test_gradient_and_hessian_match_finite_differences_of_a_direct_loss(random_queries):
    clicks, scores, position, theta, sizes = random_queries
    obj = gbrank.pbm_listnet(propensity=theta, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, scores, sizes, position=position)
    loss = lambda s: direct_loss(clicks, s, position, theta, sizes)
    # the objective's loss is the multinomial negative log-likelihood -sum_i c_i log pi_i: the
    # direct loss less sum_i c_i log theta_{p_i} (over the queries with two shown rows or more)
    query = np.repeat(np.arange(sizes.size), sizes)
    shown = position >= 1
    counted = shown & (np.bincount(query[shown], minlength=sizes.size) >= 2)[query]
    constant = np.sum(clicks[counted] * np.log(theta[position[counted] - 1]))
    assert obj.loss(clicks, scores, sizes, position=position) == pytest.approx(loss(scores) - constant, rel=1e-12)
    np.testing.assert_allclose(grad, fd_gradient(loss, scores), rtol=1e-6, atol=1e-6)
    # the hessian diagonal: finite differences of the gradient
    g = lambda s: obj.grad_hess(clicks, s, sizes, position=position)[0]
    h_fd = np.array([(g(scores + e)[i] - g(scores - e)[i]) / 2e-6 for i, e in enumerate(np.eye(scores.size) * 1e-6)])
    np.testing.assert_allclose(hess, h_fd, rtol=1e-5, atol=1e-6)
    # g = C pi - c over the shown rows, with pi the softmax of s + log theta
    start = 0
    for n in sizes:
        sl = slice(start, start + n)
        shown = position[sl] >= 1
        if shown.sum() >= 2 and clicks[sl].sum() > 0:
            z = scores[sl][shown] + np.log(theta[position[sl][shown] - 1])
            pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            c = clicks[sl][shown]
            np.testing.assert_allclose(grad[sl][shown], c.sum() * pi - c, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hess[sl][shown], c.sum() * pi * (1 - pi), rtol=1e-12, atol=1e-12)
        start += n


def test_rows_never_shown_and_queries_without_clicks_get_nothing(random_queries):
    clicks, scores, position, theta, sizes = random_queries
    obj = gbrank.pbm_listnet(propensity=theta, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, scores, sizes, position=position)
    unseen = position == -1
    assert (grad[unseen] == 0).all() and (hess[unseen] == 0).all()
    # the query without clicks (rows 5, 6) and the single-row query (row 18)
    assert (grad[5:7] == 0).all() and (hess[5:7] == 0).all() and grad[18] == 0
    # a query's gradients sum to zero
    np.testing.assert_allclose(np.add.reduceat(grad, np.concatenate(([0], np.cumsum(sizes)[:-1]))), 0, atol=1e-12)
    # dropping the unseen rows changes nothing for the others
    shown = ~unseen
    sub_sizes = np.add.reduceat(shown.astype(int), np.concatenate(([0], np.cumsum(sizes)[:-1])))
    g_sub, h_sub = gbrank.pbm_listnet(propensity=theta, hess_floor=0.0).grad_hess(
        clicks[shown], scores[shown], sub_sizes, position=position[shown])
    np.testing.assert_array_equal(grad[shown], g_sub)
    np.testing.assert_array_equal(hess[shown], h_sub)


def test_no_click_is_weighted_by_the_inverse_propensity():
    # a click at position 30 of theta = 1/p^2 counts one click, where IPS counts 900
    theta = 1.0 / np.arange(1, 31) ** 2
    clicks = np.zeros(30)
    clicks[29] = 1.0
    s, pos = np.zeros(30), np.arange(1, 31)
    g_pbm, _ = gbrank.pbm_listnet(propensity=theta).grad_hess(clicks, s, [30], position=pos)
    g_ips, _ = gbrank.ips_listnet(propensity=theta).grad_hess(clicks, s, [30], position=pos)
    assert g_pbm.sum() == pytest.approx(0, abs=1e-12) and np.abs(g_pbm).sum() <= 2.0
    assert g_ips[29] == pytest.approx(-900 * (1 - 1 / 30))


def test_the_true_relevance_is_a_stationary_point_in_expectation():
    # E[c_i] = N theta_p gamma_i: at s = log gamma the expected gradient is zero, whatever theta
    theta = np.array([1.0, 0.4, 0.2, 0.1, 0.05])
    gamma = np.array([0.2, 0.9, 0.5, 0.7, 0.1])
    pos = np.array([3, 1, 5, 2, 4])
    expected_clicks = 100 * theta[pos - 1] * gamma
    g, _ = gbrank.pbm_listnet(propensity=theta).grad_hess(expected_clicks, np.log(gamma), [5], position=pos)
    np.testing.assert_allclose(g, 0, atol=1e-10)


def test_without_propensities_it_is_the_naive_softmax_on_clicks(random_queries):
    clicks, scores, position, theta, sizes = random_queries
    ones = np.ones(theta.size)
    shown = position >= 1
    sub_sizes = np.add.reduceat(shown.astype(int), np.concatenate(([0], np.cumsum(sizes)[:-1])))
    a = gbrank.pbm_listnet(propensity=None).grad_hess(clicks[shown], scores[shown], sub_sizes)
    b = gbrank.pbm_listnet(propensity=ones).grad_hess(clicks[shown], scores[shown], sub_sizes, position=position[shown])
    c = gbrank.ips_listnet(propensity=None).grad_hess(clicks[shown], scores[shown], sub_sizes)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a[0], c[0])


# =========================================================================== settings
@pytest.mark.parametrize("kwargs", [{"clip": 0.1}, {"propensity": [1.0, 0.5], "clip": 0.3},
                                    {"propensity": None, "clip": 0.1}])
def test_clip_is_refused_naming_why(kwargs):
    with pytest.raises(ValueError, match="no inverse-propensity weights to clip"):
        gbrank.pbm_listnet(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"propensity": [1.0, 0.0]}, "position 2 is 0.0"),
    ({"propensity": "known"}, "propensity must be"),
    ({"update_every": 0}, "update_every"),
])
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gbrank.pbm_listnet(**kwargs)


@pytest.mark.parametrize("position, match", [
    (None, r"pbm_listnet\(propensity=\[...\]\) needs the display position"),
    ([1, 0, 2], r"position\[1\] = 0 at row 1 \(query 0\): positions are 1-based"),
    ([1, 2, 7], r"position\[2\] = 7 at row 2 \(query 0\) is past the 3 known propensities"),
    ([1, -1, 2], r"row 1 \(query 0\) has 2 clicks but position -1 \(never shown\)"),
])
def test_bad_positions_are_refused_naming_row_and_query(position, match):
    with pytest.raises(ValueError, match=match):
        gbrank.pbm_listnet(propensity=[1.0, 0.5, 0.3]).grad_hess([1.0, 2.0, 0.0], [0.0] * 3, [3], position=position)


def test_repr_and_pickle_keep_the_settings():
    obj = gbrank.pbm_listnet(propensity=[1.0, 0.5], hess_scale=2.0)
    assert repr(obj) == "pbm_listnet(propensity=[1.0, 0.5], hess_floor=1e-06, hess_scale=2.0)"
    assert repr(pickle.loads(pickle.dumps(obj))) == repr(obj)
    assert repr(gbrank.pbm_listnet(warmup=3)) == (
        "pbm_listnet(propensity='estimate', warmup=3, update_every=5, hess_floor=1e-06, hess_scale=1.0)")


# =========================================================================== engines
@pytest.fixture(scope="module")
def natural():
    """A click log with the rows in their natural (document) order; the positions beside them."""
    d = make_ranking(80, (12, 12), 8, seed=4)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=60, top_k=10, eta=1.5, seed=1)  # 2 rows unseen
    return d.X, log.clicks.astype(float), d.group, log.position.astype(np.int64), log


def _display_order(group, pos):
    """Each query's rows by position, the rows never shown last."""
    query = np.repeat(np.arange(group.size), group)
    return np.lexsort((np.where(pos > 0, pos, 10**6), query))


@pytest.mark.parametrize("propensity", ["known", "estimate"])
def test_lightgbm_natural_order_trains_as_display_order(natural, propensity):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = natural
    order = _display_order(group, pos)
    assert not np.array_equal(order, np.arange(order.size))
    make = lambda: gbrank.pbm_listnet(log.theta if propensity == "known" else "estimate", warmup=2, update_every=2)
    natural_model = lgb.train({**LGB, "objective": make()}, _positioned(X, clicks, group, pos), 10)
    display = lgb.train({**LGB, "objective": gbrank.engines.with_position(make(), pos[order])},
                        lgb.Dataset(X[order], clicks[order], group=group), 10)
    np.testing.assert_allclose(natural_model.predict(X), display.predict(X), rtol=1e-10, atol=1e-10)
    # and as the positions passed explicitly
    obj = make()
    explicit = lgb.train({**LGB, "objective": lambda p, _: obj.grad_hess(clicks, p, group, position=pos)},
                         lgb.Dataset(X, clicks, group=group), 10)
    np.testing.assert_allclose(natural_model.predict(X), explicit.predict(X), rtol=1e-10, atol=1e-12)


def test_lightgbm_without_positions_names_the_fix(natural):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, _, _ = natural
    with pytest.raises(ValueError, match=r"got none: bind them with gbrank.engines.with_position"):
        lgb.train({**LGB, "objective": gbrank.pbm_listnet()}, lgb.Dataset(X, clicks, group=group), 1)


def test_xgboost_with_position_equals_the_explicit_gradients(natural):
    xgb = pytest.importorskip("xgboost")
    X, clicks, group, pos, log = natural
    qid = np.repeat(np.arange(group.size), group)
    dtrain = xgb.DMatrix(X, clicks, qid=qid)
    booster = xgb.train(XGB, dtrain, 5, obj=gbrank.engines.with_position(gbrank.pbm_listnet(log.theta), pos))
    obj = gbrank.pbm_listnet(log.theta)
    explicit = xgb.train(XGB, dtrain, 5, obj=lambda p, d: obj.grad_hess(clicks, p, group, position=pos))
    np.testing.assert_allclose(booster.predict(dtrain), explicit.predict(dtrain), rtol=1e-10, atol=1e-12)
    # in display order, XGBoost's row-order convention gives the same model
    order = _display_order(group, pos)
    shown_first = np.where(pos[order] > 0, pos[order], -1)
    assert (shown_first == np.concatenate([np.where(np.arange(1, n + 1) <= 10, np.arange(1, n + 1), -1)
                                           for n in group])).all()
    by_rows = xgb.train(XGB, xgb.DMatrix(X[order], clicks[order], qid=qid), 5,
                        obj=gbrank.engines.with_position(gbrank.pbm_listnet(log.theta), shown_first))
    np.testing.assert_allclose(by_rows.predict(xgb.DMatrix(X)), booster.predict(xgb.DMatrix(X)),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_ranker_with_a_position_column(natural, engine):
    pd = pytest.importorskip("pandas")
    pytest.importorskip(engine)
    X, clicks, group, pos, _ = natural
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["qid"] = np.repeat(np.arange(group.size), group)
    frame["position"] = pos
    settings = {"engine": engine, "n_estimators": 4, "learning_rate": 0.2, "max_depth": 3, "n_jobs": 1}
    model = gbrank.Ranker(gbrank.pbm_listnet(warmup=1, update_every=1), **settings)
    model.fit(frame.drop(columns="position"), clicks, position=frame["position"])
    assert np.isfinite(model.propensity_[:5]).all()
    # the rows of each query reversed: the positions travel with them
    order = np.lexsort((-np.arange(pos.size), frame["qid"].to_numpy()))
    other = gbrank.Ranker(gbrank.pbm_listnet(warmup=1, update_every=1), **settings)
    other.fit(frame.drop(columns="position").iloc[order].reset_index(drop=True), clicks[order],
              position=frame["position"].iloc[order].reset_index(drop=True))
    features = frame.drop(columns=["position", "qid"])
    np.testing.assert_allclose(other.predict(features), model.predict(features), rtol=1e-6, atol=1e-9)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(features), model.predict(features))


# =========================================================================== the estimate
def test_estimated_propensity_moves_and_a_second_training_repeats_the_first(natural):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, log = natural
    obj = gbrank.pbm_listnet(warmup=2, update_every=2)
    with pytest.raises(AttributeError, match="propensity_"):
        _ = obj.propensity_
    params = {**LGB, "objective": obj, "learning_rate": 0.2}
    first_set = _positioned(X, clicks, group, pos)
    first = lgb.train(params, first_set, 12)
    theta_first = obj.binding(first_set).propensity_
    assert theta_first.shape == (10,) and theta_first[0] == 1.0
    assert np.all(np.diff(theta_first[:6]) < 0)  # the estimate decays with the position
    # it moved from the start (each position's click rate within its queries)
    start = gbrank.pbm_listnet(warmup=100).bind(clicks, group, position=pos)
    start.grad_hess(np.zeros(clicks.size))
    assert np.abs(theta_first - start.propensity_).max() > 1e-3
    # ... towards the truth, as ips_listnet's estimate does on the same data
    ips = gbrank.ips_listnet(warmup=2, update_every=2)
    ips_set = _positioned(X, clicks, group, pos)
    lgb.train({**params, "objective": ips}, ips_set, 12)
    error = lambda t: np.abs(t[:6] / log.theta[:6] - 1).max()
    assert error(theta_first) < error(start.propensity_)
    assert error(theta_first) < 2 * error(ips.binding(ips_set).propensity_) + 0.05
    second_set = _positioned(X, clicks, group, pos)
    second = lgb.train(params, second_set, 12)
    np.testing.assert_array_equal(obj.binding(second_set).propensity_, theta_first)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    # the estimate belongs to each training set: copies of the objective find it, share nothing
    np.testing.assert_array_equal(copy.deepcopy(obj).binding(first_set).propensity_, theta_first)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(obj)).binding(first_set).propensity_, theta_first)
    with pytest.raises(AttributeError, match="binding"):
        _ = obj.propensity_


def test_the_estimate_starts_flat_where_asked_and_leaves_the_start_as_the_model_learns(natural):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, _ = natural
    rates = gbrank.pbm_listnet(warmup=100).bind(clicks, group, position=pos)
    rates.grad_hess(np.zeros(clicks.size))
    flat = gbrank.pbm_listnet(warmup=100, start="flat").bind(clicks, group, position=pos)
    flat.grad_hess(np.zeros(clicks.size))
    np.testing.assert_array_equal(flat.propensity_, np.ones(10))
    assert np.all(np.diff(rates.propensity_[:6]) < 0)
    # the same loss and estimator otherwise: from flat, the estimate decays once re-fitted
    obj = gbrank.pbm_listnet(warmup=2, update_every=2, start="flat")
    train_set = _positioned(X, clicks, group, pos)
    lgb.train({**LGB, "objective": obj, "learning_rate": 0.2}, train_set, 12)
    theta = obj.binding(train_set).propensity_
    assert theta[0] == 1.0 and np.all(np.diff(theta[:6]) < 0)
    assert repr(obj).startswith("pbm_listnet(propensity='estimate', warmup=2, update_every=2, start='flat'")
    assert "start" not in repr(gbrank.pbm_listnet())
    assert obj != gbrank.pbm_listnet(warmup=2, update_every=2)
    with pytest.raises(ValueError, match="start must be 'click_rate' or 'flat'"):
        gbrank.pbm_listnet(start="rates")


def test_the_estimate_holds_the_slope_at_one():
    from gbrank.objectives.propensity import estimate_propensity

    rng = np.random.default_rng(0)
    sizes = np.full(200, 6)
    gamma = rng.uniform(0.05, 1.0, sizes.sum())
    position = np.concatenate([rng.permutation(6) + 1 for _ in sizes])
    theta = 1.0 / np.arange(1, 7)
    clicks = 1000 * theta[position - 1] * gamma  # expected clicks: no noise
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    # scores on the log-relevance scale: both recover theta
    for fit_slope in (True, False):
        got = estimate_propensity(np.log(gamma), clicks, position, offsets, 6, fit_slope=fit_slope, n_rounds=200)
        np.testing.assert_allclose(got, theta, rtol=1e-6)
    # scores on twice that scale: the slope absorbs it, held at 1 it cannot
    free = estimate_propensity(2 * np.log(gamma), clicks, position, offsets, 6, n_rounds=200)
    held = estimate_propensity(2 * np.log(gamma), clicks, position, offsets, 6, fit_slope=False, n_rounds=200)
    np.testing.assert_allclose(free, theta, rtol=1e-4)
    assert np.abs(held / theta - 1).max() > 1e-3
    # pbm_listnet's estimate holds it, the IPS losses' fit it
    assert gbrank.pbm_listnet()._fits_slope is False and gbrank.ips_listnet()._fits_slope is True


# =========================================================================== Dask
_RECORD: list = []


class _Records:
    """A click loss noting, on whichever worker, its propensity estimate (module level: Dask
    may serialise the objective, and the copy must still write here)."""

    def _bound_gradients(self, binding, scores, init_score=None):
        out = super()._bound_gradients(binding, scores, init_score)
        _RECORD.append((binding.propensity_, binding.n_rows))
        return out


class _RecordingPBM(_Records, PBMListNet):
    pass


class _RecordingCloglog(_Records, PBMCloglog):
    pass


@pytest.mark.parametrize("recording, binary", [(_RecordingPBM, False), (_RecordingCloglog, True)],
                         ids=["pbm_listnet", "pbm_cloglog"])
def test_dask_estimate_sums_over_the_workers_as_one_machine(recording, binary):
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    xgb = pytest.importorskip("xgboost")
    import dask.dataframe as dd
    import pandas as pd

    from gbrank import dask as gdask

    make = lambda: recording("estimate", clip=None, warmup=1, update_every=1, hess_floor=1e-6, hess_scale=1.0)
    _RECORD.clear()
    d = make_ranking(400, 10, 20, seed=8)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=80, top_k=10, eta=2.0, seed=4)
    clicks = (log.clicks > 0).astype(float) if binary else log.clicks.astype(float)
    frame = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(d.X.shape[1])])
    frame["label"], frame["qid"], frame["position"] = clicks, d.qid, log.position
    params = {"max_depth": 3, "eta": 0.3, "min_child_weight": 0.0, "tree_method": "hist", "nthread": 1}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        df = gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(frame, npartitions=2, sort=False),
                                                                    npartitions=2))
        gdask.train_xgboost(client, df, make(), position_col="position", num_boost_round=4, params=params)
    on_workers = [estimate for estimate, n in _RECORD[-2:] if n]
    assert len(on_workers) == 2
    _RECORD.clear()
    xgb.train({**params, "base_score": 0.0}, xgb.DMatrix(d.X, clicks, qid=d.qid), 4,
              obj=gbrank.engines.with_position(make(), log.position))
    for estimate in on_workers:
        np.testing.assert_allclose(estimate, _RECORD[-1][0], rtol=1e-5)
