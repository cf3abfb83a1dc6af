"""gbrank.engines.predict: raw scores of either engine's booster, as every front-end reads them."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from gbrank import engines  # noqa: E402
from gbrank.datasets import make_ranking  # noqa: E402
from gbrank.objectives import listmle  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=30, docs_per_query=10, n_features=4, seed=2)


def test_lightgbm_scores_are_raw_and_cut_at_rounds(data):
    dtrain = engines.lightgbm.dataset(data.X, data.y, data.group, params={"verbose": -1})
    booster, _ = engines.lightgbm.train({"verbose": -1, "num_leaves": 4}, dtrain, listmle(), num_boost_round=6)
    scores = engines.predict(booster, data.X)
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(scores, booster.predict(data.X, raw_score=True))
    three = engines.predict(booster, data.X, 3)
    np.testing.assert_array_equal(three, booster.predict(data.X, num_iteration=3, raw_score=True))
    assert not np.array_equal(three, scores)


def test_xgboost_scores_are_margins_from_arrays_and_matrices(data):
    dtrain = engines.xgboost.dmatrix(data.X, data.y, data.group)
    booster, _ = engines.xgboost.train({"max_depth": 2}, dtrain, listmle(), num_boost_round=6)
    scores = engines.predict(booster, data.X)
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(scores, booster.predict(xgb.DMatrix(data.X), output_margin=True))
    np.testing.assert_array_equal(engines.predict(booster, xgb.DMatrix(data.X)), scores)
    three = engines.predict(booster, data.X, 3)
    np.testing.assert_array_equal(three, engines.predict(booster, xgb.DMatrix(data.X), 3))
    np.testing.assert_array_equal(
        three, booster.predict(xgb.DMatrix(data.X), iteration_range=(0, 3), output_margin=True)
    )
    assert not np.array_equal(three, scores)


def test_anything_else_is_refused(data):
    with pytest.raises(TypeError, match="expected a lightgbm.Booster or an xgboost.Booster, got ndarray"):
        engines.predict(np.zeros(3), data.X)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("rounds", [0, -1, 7, 2.0, True])
def test_rounds_outside_those_trained_are_refused(data, engine, rounds):
    # the engines read them each their own way: all rounds, none, or an error
    if engine == "lightgbm":
        dtrain = engines.lightgbm.dataset(data.X, data.y, data.group, params={"verbose": -1})
        booster, _ = engines.lightgbm.train({"verbose": -1, "num_leaves": 4}, dtrain, listmle(), num_boost_round=6)
    else:
        booster, _ = engines.xgboost.train({"max_depth": 2}, engines.xgboost.dmatrix(data.X, data.y, data.group),
                                           listmle(), num_boost_round=6)
    with pytest.raises(ValueError, match=r"rounds must be an integer in 1 \.\. 6 \(the rounds trained\)"):
        engines.predict(booster, data.X, rounds)


def test_the_builders_check_what_they_are_given(data):
    short = np.r_[data.group[:-1], 1]
    n = len(data.y)
    with pytest.raises(ValueError, match=f"group sizes sum to {short.sum()} but there are {n} rows"):
        engines.xgboost.dmatrix(data.X, data.y, short)
    with pytest.raises(ValueError, match=f"weight has 3 values but there are {n} rows"):
        engines.xgboost.dmatrix(data.X, data.y, data.group, weight=np.ones(3))
    labels = data.y.astype(object)
    labels[4] = None
    with pytest.raises(ValueError, match=r"label 4 is nan: labels must be finite \(LightGBM would store it as 0\)"):
        engines.lightgbm.dataset(data.X, labels, data.group)
