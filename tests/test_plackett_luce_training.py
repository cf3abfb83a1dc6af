"""The Plackett–Luce objectives learn: real LETOR folds and the generated data."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.datasets import load_letor_fold, make_ranking, split_queries
from gbrank.metrics import lightgbm_feval, ndcg

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

pytestmark = pytest.mark.slow
LGB = {"learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1, "num_threads": 2, "metric": "None", "seed": 0}


def fit_lightgbm(objective, train, valid, rounds=300):
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dtrain)
    return lgb.train(
        {**LGB, "objective": objective},
        dtrain,
        rounds,
        valid_sets=[dvalid],
        feval=lightgbm_feval(["ndcg@10"]),
        callbacks=[lgb.early_stopping(30, verbose=False)],
    )


@pytest.fixture(scope="module")
def mq2008_fold1(letor_path):
    return load_letor_fold(letor_path("letor4_mq2008"), 1)


@pytest.mark.parametrize("factory", [gbrank.listmle, lambda: gbrank.listmle_topk(k=10), gbrank.wlistmle])
def test_real_data_heldout_ndcg_improves(mq2008_fold1, factory):
    fold = mq2008_fold1
    booster = fit_lightgbm(factory(), fold.train, fold.vali, rounds=150)
    learned = ndcg(fold.test.y, booster.predict(fold.test.X, num_iteration=booster.best_iteration), fold.test.group, k=10)
    rng = np.random.default_rng(0)
    chance = np.mean([ndcg(fold.test.y, rng.normal(size=fold.test.y.size), fold.test.group, k=10) for _ in range(5)])
    # the first feature alone (a standard LETOR relevance feature) is a fair weak ranker
    single_feature = ndcg(fold.test.y, fold.test.X[:, 0], fold.test.group, k=10)
    assert learned > chance + 0.1
    assert learned > single_feature

    bst = xgb.train(
        {"eta": 0.05, "max_depth": 4, "min_child_weight": 1e-3, "nthread": 2, "seed": 0},
        xgb.DMatrix(fold.train.X, fold.train.y, group=fold.train.group),
        num_boost_round=100,
        obj=factory(),
    )
    xgb_learned = ndcg(fold.test.y, bst.predict(xgb.DMatrix(fold.test.X)), fold.test.group, k=10)
    assert xgb_learned > chance + 0.1


def test_topk_listmle_matches_lambdarank_on_generated_data():
    """The objectives issue's bar: within 0.01 NDCG@10 of built-in lambdarank."""
    data = make_ranking(n_queries=1500, docs_per_query=60, n_features=40, seed=1)
    train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)
    scores = {}
    for name, objective in [("lambdarank", "lambdarank"), ("listmle_topk", gbrank.listmle_topk(k=10))]:
        booster = fit_lightgbm(objective, train, valid, rounds=500)
        scores[name] = ndcg(test.y, booster.predict(test.X, num_iteration=booster.best_iteration), test.group, k=10)
    assert scores["listmle_topk"] > scores["lambdarank"] - 0.01, scores
