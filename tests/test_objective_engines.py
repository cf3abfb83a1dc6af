"""The objective protocol in LightGBM and XGBoost: what the engines pass and what they get."""

from __future__ import annotations

import inspect
import pickle
import threading

import numpy as np
import pytest

import gbrank
from gbrank.metrics import ndcg
from helpers import XGB_PARAMS, lgb_params, synthetic

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

LGB_PARAMS = lgb_params(min_data_in_leaf=5)


def toy_data(seed=0, n_queries=60):
    return synthetic(seed, n_queries, max_docs=29)


class Recorder:
    """Wraps an objective and keeps what the engine passed and what came back."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def __deepcopy__(self, memo):
        # the engines deep-copy their parameters; keep recording here
        return self

    def __call__(self, y_true, y_pred, weight=None, group=None):
        out = self.inner(y_true, y_pred, weight, group)
        self.calls.append(out)
        return out


def test_lgb_train_passes_the_dataset_and_matches_grad_hess():
    X, y, sizes = toy_data()
    weight = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    dtrain = lgb.Dataset(X, y, group=sizes, weight=weight, free_raw_data=False)
    obj = gbrank.listmle_topk(k=5, ties="input")
    booster = lgb.train({**LGB_PARAMS, "objective": obj}, dtrain, num_boost_round=3)
    preds = booster.predict(X, raw_score=True)
    grad, hess = obj(preds, dtrain)
    # LightGBM stores weights as float32
    g_ref, h_ref = obj.grad_hess(y, preds, sizes, weight.astype(np.float32))
    np.testing.assert_array_equal(grad, g_ref)
    np.testing.assert_array_equal(hess, h_ref)
    assert grad.dtype == hess.dtype == np.float64


def test_xgboost_dmatrix_weights_are_per_query():
    X, y, sizes = toy_data()
    qweight = np.random.default_rng(2).uniform(0.5, 2.0, size=sizes.size)
    dtrain = xgb.DMatrix(X, y, group=sizes, weight=qweight)
    obj = gbrank.listmle(ties="input")
    preds = np.random.default_rng(3).normal(size=y.size).astype(np.float32)
    grad, hess = obj(preds, dtrain)
    g_ref, h_ref = obj.grad_hess(y, preds.astype(np.float64), sizes, np.repeat(qweight, sizes))
    np.testing.assert_allclose(grad, g_ref, rtol=1e-6)
    np.testing.assert_allclose(hess, h_ref, rtol=1e-6)


def test_engines_without_groups_get_a_clear_error():
    X, y, _ = toy_data()
    with pytest.raises(ValueError, match="query groups are required"):
        lgb.train({**LGB_PARAMS, "objective": gbrank.listmle()}, lgb.Dataset(X, y), num_boost_round=1)
    with pytest.raises(ValueError, match="DMatrix has no query groups"):
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y), num_boost_round=1, obj=gbrank.listmle())


def test_lgbm_ranker_counts_four_parameters():
    assert len(inspect.signature(gbrank.listmle()).parameters) == 4
    X, y, sizes = toy_data()
    rec = Recorder(gbrank.listmle_topk(k=10))
    ranker = lgb.LGBMRanker(objective=rec, n_estimators=5, verbose=-1, metric="None", n_jobs=2)
    ranker.fit(X, y, group=sizes)
    assert len(rec.calls) == 5
    assert np.isfinite(ranker.predict(X)).all()


@pytest.mark.parametrize("factory", [gbrank.listmle, lambda: gbrank.listmle_topk(k=10), gbrank.wlistmle])
def test_training_improves_heldout_ndcg_in_both_engines(factory):
    X, y, sizes = toy_data(seed=4, n_queries=120)
    Xt, yt, st = toy_data(seed=5, n_queries=60)
    baseline = ndcg(yt, np.zeros(yt.size), st, k=10)

    booster = lgb.train({**LGB_PARAMS, "objective": factory()}, lgb.Dataset(X, y, group=sizes), num_boost_round=30)
    lgb_score = ndcg(yt, booster.predict(Xt), st, k=10)

    bst = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, group=sizes), num_boost_round=30, obj=factory())
    xgb_score = ndcg(yt, bst.predict(xgb.DMatrix(Xt)), st, k=10)
    assert lgb_score > baseline + 0.1
    assert xgb_score > baseline + 0.1


def test_same_seed_same_model_and_reuse_across_trainings():
    X, y, sizes = toy_data(seed=6)
    obj = gbrank.listmle(seed=11)

    def train(objective):
        return lgb.train({**LGB_PARAMS, "objective": objective}, lgb.Dataset(X, y, group=sizes), num_boost_round=10).model_to_string()

    first = train(obj)
    assert train(obj) == first  # reused object: same model
    assert train(gbrank.listmle(seed=11)) == first
    assert train(gbrank.listmle(seed=12)) != first


def test_one_objective_in_two_threads_gives_the_sequential_models():
    X, y, sizes = toy_data(seed=7)
    X2, y2, sizes2 = toy_data(seed=8)
    obj = gbrank.listmle_topk(k=5)
    params = {**LGB_PARAMS, "objective": obj, "num_threads": 1}

    def train(data):
        return lgb.train(params, lgb.Dataset(data[0], data[1], group=data[2]), num_boost_round=8).model_to_string()

    sequential = [train((X, y, sizes)), train((X2, y2, sizes2))]
    results = [None, None]

    def run(i, data):
        results[i] = train(data)

    threads = [threading.Thread(target=run, args=(0, (X, y, sizes))), threading.Thread(target=run, args=(1, (X2, y2, sizes2)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == sequential


def test_pickled_objective_trains_identically():
    X, y, sizes = toy_data(seed=9)
    obj = gbrank.wlistmle(k=10)
    clone = pickle.loads(pickle.dumps(obj))
    models = [
        lgb.train({**LGB_PARAMS, "objective": o}, lgb.Dataset(X, y, group=sizes), num_boost_round=5).model_to_string()
        for o in (obj, clone)
    ]
    assert models[0] == models[1]
