"""Several label columns for one model: every aggregation mode against the objective run on
each label by hand, finite differences, the checks that keep the label columns aligned with
the engine's rows, and training in both engines."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.metrics import pareto_front, per_label_ndcg
from helpers import XGB_PARAMS, fd_gradient, lgb_params, random_queries

INNER = {"listnet": lambda **kw: gbrank.listnet(target="linear", **kw), "ranknet": gbrank.ranknet,
         "lambdarank": lambda **kw: gbrank.lambdarank(gain="linear", **kw)}


def two_labels(seed, n_queries=4):
    y, s, sizes = random_queries(seed, n_queries, min_docs=2, max_docs=8, n_levels=4)
    rng = np.random.default_rng(seed + 100)
    click = (rng.uniform(size=y.size) < 0.4).astype(float)
    return np.column_stack([y, click]), s, sizes


@pytest.mark.parametrize("name", sorted(INNER))
@pytest.mark.parametrize("seed", range(3))
def test_gradient_aggregation_is_the_weighted_sum_of_each_labels_gradients(name, seed):
    labels, s, sizes = two_labels(seed)
    obj = gbrank.multi_label(INNER[name](hess_scale=2.0, hess_floor=0.01), labels, weights=[3.0, 1.0], hess_floor=0.0)
    grad, hess = obj.grad_hess(labels[:, 0], s, sizes)
    # each label's hessian as the objective gives it, its own scale and floor applied
    (g0, h0), (g1, h1) = (INNER[name](hess_scale=2.0, hess_floor=0.01).grad_hess(labels[:, j], s, sizes)
                          for j in (0, 1))
    np.testing.assert_allclose(grad, 0.75 * g0 + 0.25 * g1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hess, 0.75 * h0 + 0.25 * h1, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("aggregate", ["gradient", "label"])
@pytest.mark.parametrize("seed", range(3))
def test_gradient_is_the_derivative_of_the_loss(aggregate, seed):
    labels, s, sizes = two_labels(seed)
    obj = gbrank.multi_label(gbrank.listnet(target="linear"), labels, aggregate=aggregate, weights=[0.6, 0.4])
    fd = fd_gradient(lambda x: obj.loss(labels[:, 0], x, sizes), s)
    np.testing.assert_allclose(obj.grad_hess(labels[:, 0], s, sizes)[0], fd, rtol=1e-6, atol=1e-7)


def test_label_aggregation_trains_on_the_mixed_labels():
    labels, s, sizes = two_labels(4)
    inner = gbrank.listnet(target="linear")
    obj = gbrank.multi_label(inner, labels, aggregate="label", weights=[0.25, 0.75])
    mixed = 0.25 * labels[:, 0] + 0.75 * labels[:, 1]
    np.testing.assert_allclose(obj.grad_hess(labels[:, 0], s, sizes)[0], inner.grad_hess(mixed, s, sizes)[0])
    # weights per query: query q mixes with its own row of weights
    per_query = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 3.0]])
    obj = gbrank.multi_label(inner, labels, aggregate="label", weights=per_query)
    w = np.repeat(per_query / per_query.sum(axis=1, keepdims=True), sizes, axis=0)
    mixed = (w * labels).sum(axis=1)
    np.testing.assert_allclose(obj.grad_hess(labels[:, 0], s, sizes)[0], inner.grad_hess(mixed, s, sizes)[0])


def test_stochastic_aggregation_draws_one_label_per_query_with_the_weights():
    labels, _, sizes = two_labels(5, n_queries=6)
    inner = gbrank.listnet(target="linear")
    obj = gbrank.multi_label(inner, labels, aggregate="stochastic", weights=[0.3, 0.7], seed=4)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    rng = np.random.default_rng(0)
    drawn = []
    for _ in range(300):
        s = rng.normal(size=labels.shape[0])
        grad = obj.grad_hess(labels[:, 0], s, sizes)[0]
        np.testing.assert_array_equal(grad, obj.grad_hess(labels[:, 0], s, sizes)[0])  # same scores, same draw
        each = [inner.grad_hess(labels[:, j], s, sizes)[0] for j in (0, 1)]
        for q in range(sizes.size):
            rows = slice(offsets[q], offsets[q + 1])
            matches = [np.allclose(grad[rows], g[rows], rtol=0, atol=1e-15) for g in each]
            assert any(matches)
            if matches[0] != matches[1]:
                drawn.append(matches[1])
    assert len(drawn) > 500
    assert np.mean(drawn) == pytest.approx(0.7, abs=0.05)


def test_constrained_weights_grow_only_below_the_floor():
    labels, s, sizes = two_labels(6)
    inner = gbrank.listnet(target="linear")
    g0, g1 = (inner.grad_hess(labels[:, j], s, sizes)[0] for j in (0, 1))
    achieved = per_label_ndcg(labels, s, sizes, k=10)[1]
    met = gbrank.multi_label(inner, labels, aggregate="constrained", floors=[achieved - 0.05])
    np.testing.assert_allclose(met.grad_hess(labels[:, 0], s, sizes)[0], g0)
    short = gbrank.multi_label(inner, labels, aggregate="constrained", floors=[achieved + 0.1], penalty=5.0)
    np.testing.assert_allclose(short.grad_hess(labels[:, 0], s, sizes)[0], g0 + 5.0 * 0.1 * g1, rtol=1e-9)



def test_constrained_weights_do_not_depend_on_the_row_order_of_tied_scores():
    # at the first iteration every score is tied: the floors' NDCG averages the ties
    labels, _, sizes = two_labels(8, n_queries=30)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    order = np.concatenate([offsets[q] + np.random.default_rng(q).permutation(size) for q, size in enumerate(sizes)])
    inner, zeros = gbrank.listnet(target="linear"), np.zeros(labels.shape[0])
    grads = []
    for rows in (np.arange(labels.shape[0]), order):
        obj = gbrank.multi_label(inner, labels[rows], aggregate="constrained", floors=[0.95], penalty=4.0)
        grads.append(obj.grad_hess(labels[rows, 0], zeros, sizes)[0][np.argsort(rows)])
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15)


def test_constrained_floors_take_the_gain_they_are_given():
    labels, s, sizes = two_labels(9)
    soft = labels * [1.0, 0.37]
    obj = gbrank.multi_label(gbrank.listnet(target="linear"), soft, aggregate="constrained", floors=[0.9])
    with pytest.raises(ValueError, match=r"labels\[\d+, 1\] is 0.37.*gain='linear'"):
        obj.grad_hess(soft[:, 0], s, sizes)
    linear = gbrank.multi_label(gbrank.listnet(target="linear"), soft, aggregate="constrained", floors=[1.0],
                                gain="linear", penalty=2.0)
    achieved = gbrank.metrics.ndcg(soft[:, 1], s, sizes, k=10, gain="linear", ties="average")
    g0, g1 = (gbrank.listnet(target="linear").grad_hess(soft[:, j], s, sizes)[0] for j in (0, 1))
    np.testing.assert_allclose(linear.grad_hess(soft[:, 0], s, sizes)[0], g0 + 2.0 * (1.0 - achieved) * g1,
                               rtol=1e-9)


def test_label_aggregation_applies_the_objectives_hessian_settings():
    labels, s, sizes = two_labels(10)
    inner = gbrank.listnet(target="linear", hess_scale=3.0)
    obj = gbrank.multi_label(inner, labels, aggregate="label", weights=[0.5, 0.5], hess_floor=0.0)
    np.testing.assert_allclose(obj.grad_hess(labels[:, 0], s, sizes)[1],
                               inner.grad_hess(labels @ [0.5, 0.5], s, sizes)[1], rtol=1e-12)


# --------------------------------------------------------------------------- refusals
def test_rows_that_are_not_the_label_columns_rows_are_refused():
    labels, s, sizes = two_labels(7)
    obj = gbrank.multi_label(gbrank.ranknet(), labels)
    with pytest.raises(ValueError, match=r"has 10 rows but the multi-label objective was given \d+ rows.*folds"):
        obj.grad_hess(labels[:10, 0], s[:10], [10])
    other = labels[:, 0].copy()
    other[3] += 1
    with pytest.raises(ValueError, match=r"training label at row 3 \(query 0\) is .* give the engine labels\[:, 0\]"):
        obj.grad_hess(other, s, sizes)


@pytest.mark.parametrize("kwargs, message", [
    ({"labels": np.zeros((5, 1))}, "at least two label columns"),
    ({"labels": np.zeros(5)}, "2-D array"),
    ({"weights": [1.0, -1.0]}, "non-negative"),
    ({"weights": [0.0, 0.0]}, "not all be zero"),
    ({"weights": [1.0, 1.0, 1.0]}, r"shape \(2,\)"),
    ({"aggregate": "constrained"}, "needs floors"),
    ({"aggregate": "constrained", "floors": [1.5]}, r"in \[0, 1\]"),
    ({"floors": [0.5]}, "floors are for aggregate='constrained'"),
    ({"aggregate": "mean"}, "aggregate must be one of"),
    ({"weights": np.ones((3, 2))}, "weights per query"),
    ({"aggregate": "constrained", "floors": [0.5], "gain": "log"}, "gain must be"),
    ({"seed": 2**70}, "seed"),
])
def test_bad_settings_are_named(kwargs, message):
    settings = {"labels": np.zeros((5, 2)), **kwargs}
    with pytest.raises(ValueError, match=message):
        gbrank.multi_label(gbrank.ranknet(), **settings)


def test_the_objective_must_be_a_gbrank_objective():
    with pytest.raises(TypeError, match="gbrank objective"):
        gbrank.multi_label("lambdarank", np.zeros((5, 2)))
    with pytest.raises(TypeError, match="ips_listnet learns from one click column and its display positions"):
        gbrank.multi_label(gbrank.ips_listnet(), np.zeros((5, 2)))


# --------------------------------------------------------------------------- engines
def engine_data(seed, n_queries=80, docs=12):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 6))
    relevance = np.clip(np.round(1.5 + X[:, 0] + 0.5 * rng.normal(size=n)), 0, 3)
    click = (rng.uniform(size=n) < 1 / (1 + np.exp(-(2 * X[:, 1] - 1)))).astype(float)
    return X, np.column_stack([relevance, click]), np.full(n_queries, docs)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_both_engines_train_on_both_labels(engine):
    X, labels, sizes = engine_data(0)
    Xt, lt, st = engine_data(1)
    results = {}
    for name, weights in (("first", [1.0, 0.0]), ("both", [0.5, 0.5]), ("second", [0.0, 1.0])):
        obj = gbrank.multi_label(gbrank.lambdarank(gain="linear"), labels, weights=weights)
        if engine == "lightgbm":
            lgb = pytest.importorskip("lightgbm")
            booster = lgb.train({**lgb_params(min_data_in_leaf=10), "objective": obj},
                                lgb.Dataset(X, labels[:, 0], group=sizes), num_boost_round=20)
            scores = booster.predict(Xt)
        else:
            xgb = pytest.importorskip("xgboost")
            booster = xgb.train(XGB_PARAMS, xgb.DMatrix(X, labels[:, 0], group=sizes), num_boost_round=20, obj=obj)
            scores = booster.predict(xgb.DMatrix(Xt), output_margin=True)
        results[name] = per_label_ndcg(lt, scores, st, k=10)
    # each single-label model is best on its own label; the mix is in between on both
    assert results["first"][0] > results["second"][0] + 0.05
    assert results["second"][1] > results["first"][1] + 0.05
    assert results["both"][0] > results["second"][0] and results["both"][1] > results["first"][1]


def test_lgb_cv_folds_are_refused_with_the_fix():
    lgb = pytest.importorskip("lightgbm")
    X, labels, sizes = engine_data(2, n_queries=30)
    obj = gbrank.multi_label(gbrank.ranknet(), labels)
    with pytest.raises(ValueError, match=r"cross-validate with a loop instead, over gbrank.engines.query_folds"):
        data = lgb.Dataset(X, labels[:, 0], group=sizes)
        lgb.cv({**lgb_params(), "objective": obj}, data, num_boost_round=2,
               folds=gbrank.engines.query_folds(data, nfold=3))


def test_xgb_cv_folds_are_refused_with_the_fix():
    xgb = pytest.importorskip("xgboost")
    X, labels, sizes = engine_data(3, n_queries=30)
    obj = gbrank.multi_label(gbrank.ranknet(), labels)
    with pytest.raises(ValueError, match=r"cross-validate with a loop instead, over gbrank.engines.query_folds"):
        xgb.cv(XGB_PARAMS, xgb.DMatrix(X, labels[:, 0], group=sizes), num_boost_round=2, nfold=3, obj=obj)


def test_the_cross_validation_loop_the_refusal_names_trains_every_fold():
    lgb = pytest.importorskip("lightgbm")
    X, labels, sizes = engine_data(4, n_queries=30)
    query = np.repeat(np.arange(sizes.size), sizes)
    scores = []
    for train_rows, test_rows in gbrank.engines.query_folds(sizes, nfold=3):
        fold_sizes = np.bincount(query[train_rows])[np.unique(query[train_rows])]
        obj = gbrank.multi_label(gbrank.ranknet(), labels[train_rows])
        booster = lgb.train({**lgb_params(), "objective": obj},
                            lgb.Dataset(X[train_rows], labels[train_rows, 0], group=fold_sizes), num_boost_round=5)
        test_sizes = np.bincount(query[test_rows])[np.unique(query[test_rows])]
        scores.append(per_label_ndcg(labels[test_rows], booster.predict(X[test_rows]), test_sizes, k=10))
    assert len(scores) == 3 and all(np.isfinite(s).all() for s in scores)


def test_pickles_and_settings_are_fixed():
    labels, s, sizes = two_labels(8)
    obj = gbrank.multi_label(gbrank.ranknet(), labels, aggregate="stochastic", weights=[0.5, 0.5], seed=3)
    clone = pickle.loads(pickle.dumps(obj))
    np.testing.assert_array_equal(obj.grad_hess(labels[:, 0], s, sizes)[0], clone.grad_hess(labels[:, 0], s, sizes)[0])
    with pytest.raises(AttributeError, match="fixed when it is built"):
        obj.weights = np.array([1.0, 0.0])
    assert obj.labels.flags.writeable is False


def test_copies_are_equal_and_find_the_binding_after_lgb_train():
    # lgb.train trains a deep copy of the objective: equal by its settings, inner objective
    # included, it finds the one binding the training made
    lgb = pytest.importorskip("lightgbm")
    X, labels, sizes = engine_data(0)
    obj = gbrank.multi_label(gbrank.lambdarank(), labels)
    for twin in (copy.deepcopy(obj), pickle.loads(pickle.dumps(obj)), gbrank.multi_label(gbrank.lambdarank(), labels)):
        assert twin.value_key == obj.value_key
    assert gbrank.multi_label(gbrank.listnet(), labels).value_key != obj.value_key
    dtrain = lgb.Dataset(X, labels[:, 0], group=sizes)
    for _ in range(2):
        lgb.train({**lgb_params(min_data_in_leaf=10), "objective": obj}, dtrain, num_boost_round=2)
    assert obj.binding(dtrain).n_rows == X.shape[0]


# --------------------------------------------------------------------------- reporting
def test_per_label_ndcg_and_the_pareto_front():
    labels, s, sizes = two_labels(9)
    values = per_label_ndcg(labels, s, sizes, k=5)
    assert values.tolist() == [gbrank.metrics.ndcg(labels[:, j], s, sizes, k=5) for j in (0, 1)]
    points = np.array([[0.5, 0.5], [0.6, 0.4], [0.4, 0.6], [0.45, 0.45], [0.6, 0.3]])
    assert pareto_front(points).tolist() == [True, True, True, False, False]


# --------------------------------------------------------------------------- Ranker
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_ranker_binds_the_columns_of_a_2d_y_in_its_row_order(engine):
    pytest.importorskip(engine)
    X, labels, sizes = engine_data(4, n_queries=40)
    qid = np.repeat(np.arange(sizes.size), sizes)
    order = np.random.default_rng(0).permutation(qid.size)  # rows of a query scattered
    objective = gbrank.multi_label(gbrank.lambdarank(gain="linear"), weights=[0.5, 0.5])
    model = gbrank.Ranker(objective, engine=engine, n_estimators=10, random_state=0)
    model.fit(X[order], labels[order], qid=qid[order])
    assert model.objective_.labels.shape == labels.shape and objective.labels is None
    # the same model as the bound objective trained on the grouped rows directly
    grouped = order[np.argsort(qid[order], kind="stable")]
    Xg, lg = X[grouped], labels[grouped]
    direct = gbrank.Ranker(gbrank.multi_label(gbrank.lambdarank(gain="linear"), lg, weights=[0.5, 0.5]),
                           engine=engine, n_estimators=10, random_state=0).fit(Xg, lg[:, 0], group=sizes)
    np.testing.assert_allclose(model.predict(X), direct.predict(X), rtol=1e-6)
    assert model.score(X, labels, group=sizes) == pytest.approx(direct.score(X, labels[:, 0], group=sizes))


def test_ranker_refuses_several_labels_for_a_one_label_objective():
    X, labels, sizes = engine_data(5, n_queries=10)
    with pytest.raises(ValueError, match=r"y has 2 label columns: .*gbrank.multi_label"):
        gbrank.Ranker(gbrank.ranknet(), n_estimators=2).fit(X, labels, group=sizes)
    unbound = gbrank.multi_label(gbrank.ranknet())
    with pytest.raises(ValueError, match="has no label columns"):
        unbound.grad_hess(labels[:, 0], np.zeros(labels.shape[0]), sizes)
    # a bad value in a later column is named at the caller's row, before the rows are grouped
    qid = np.repeat(np.arange(sizes.size), sizes)[::-1]
    bad = labels.copy()
    bad[3, 1] = -1.0
    with pytest.raises(ValueError, match=r"y\[:, 1\]\[3\] = -1 at row 3"):
        gbrank.Ranker(unbound, n_estimators=2).fit(X, bad, qid=qid)


@pytest.mark.parametrize("aggregate, make", [("gradient", lambda: gbrank.lambdarank(measure="err", hess_floor=0.0)),
                                             ("label", gbrank.rcr)])
def test_a_part_keeps_the_statistics_of_all_rows(aggregate, make):
    """What a Dask worker trains: some queries' rows, each label column's statistics (here the
    label maximum of ERR's gains and of RCR's targets) of all the rows."""
    rng = np.random.default_rng(5)
    sizes = np.array([6, 5, 7, 4])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    labels = np.column_stack([rng.integers(0, 3, sizes.sum()), rng.integers(0, 2, sizes.sum())]).astype(float)
    labels[offsets[2], :] = [4.0, 3.0]  # the largest labels lie in query 2, outside the part
    scores = rng.normal(size=sizes.sum())
    whole = gbrank.multi_label(make(), labels, aggregate=aggregate, weights=[0.6, 0.4])
    queries = np.array([3, 0])
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in queries])
    part = whole.part(queries, offsets)
    np.testing.assert_array_equal(part.labels, labels[rows])
    expected = whole.grad_hess(labels[:, 0], scores, sizes)[0][rows]
    np.testing.assert_allclose(part.grad_hess(labels[rows, 0], scores[rows], sizes[queries])[0], expected, rtol=1e-12)
    alone = gbrank.multi_label(make(), labels[rows], aggregate=aggregate, weights=[0.6, 0.4])
    assert not np.allclose(alone.grad_hess(labels[rows, 0], scores[rows], sizes[queries])[0], expected)
