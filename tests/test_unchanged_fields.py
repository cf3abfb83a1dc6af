"""An objective called again on the same LightGBM training set skips its reads and checks
only while the Dataset holds the same field objects (gbrank.engines.unchanged_fields)."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
import gbrank.engines as engines

lgb = pytest.importorskip("lightgbm")

OBJECTIVES = [
    lambda: gbrank.listmle_topk(k=5),
    gbrank.listnet,
    gbrank.cosine,
    gbrank.lambdarank,
    lambda: gbrank.lambdaloss(truncation=10),
]


@pytest.fixture
def data():
    return gbrank.datasets.make_ranking(n_queries=60, docs_per_query=12, n_features=4, seed=3)


def _dataset(data, **fields):
    return lgb.Dataset(data.X, data.y, group=data.group, params={"verbose": -1}, **fields).construct()


def _expected(make, labels, scores, group, weight=None):
    return make().grad_hess(labels, scores, group, weight)


@pytest.mark.parametrize("make", OBJECTIVES)
def test_a_second_call_on_the_same_dataset_reads_nothing_again(make, data, monkeypatch):
    ds = _dataset(data)
    objective = make()
    scores = np.random.default_rng(0).normal(size=data.y.size)
    first = objective(scores, ds)
    monkeypatch.setattr(engines, "read", None)
    second = objective(scores + 1e-3, ds)
    expected = _expected(make, data.y, scores + 1e-3, data.group)
    for got, want in zip(second, expected):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(first[0], second[0])


@pytest.mark.parametrize("make", OBJECTIVES)
def test_replaced_labels_weights_and_groups_are_read_again(make, data):
    rng = np.random.default_rng(1)
    ds = _dataset(data)
    objective = make()
    scores = rng.normal(size=data.y.size)
    objective(scores, ds)

    labels = rng.integers(0, 5, data.y.size).astype(np.float64)
    ds.set_label(labels)
    for got, want in zip(objective(scores, ds), _expected(make, labels, scores, data.group)):
        np.testing.assert_array_equal(got, want)

    weights = rng.uniform(0.5, 2.0, data.y.size).astype(np.float32)  # as LightGBM keeps them
    ds.set_weight(weights)
    for got, want in zip(objective(scores, ds), _expected(make, labels, scores, data.group, weights)):
        np.testing.assert_array_equal(got, want)

    group = np.diff(np.r_[0:data.y.size:6, data.y.size])
    ds.set_group(group)
    for got, want in zip(objective(scores, ds), _expected(make, labels, scores, group, weights)):
        np.testing.assert_array_equal(got, want)


def test_parameters_are_checked_at_every_call(data):
    ds = _dataset(data)
    objective = gbrank.listnet()
    scores = np.zeros(data.y.size)
    objective(scores, ds)
    ds.params["bagging_by_query"] = True
    with pytest.raises(ValueError, match="bagging_by_query=False"):
        objective(scores, ds)


def test_scores_are_checked_at_every_call(data):
    ds = _dataset(data)
    objective = gbrank.listnet()
    scores = np.zeros(data.y.size)
    objective(scores, ds)
    scores[5] = np.nan
    with pytest.raises(ValueError, match="NaN at row 5"):
        objective(scores, ds)
    with pytest.raises(ValueError, match="rows"):
        objective(scores[:-1], ds)


def test_cv_folds_and_xgboost_have_no_cheap_check(data):
    ds = _dataset(data)
    assert engines.unchanged_fields(ds) is not None
    fold = ds.subset(np.arange(24)).construct()
    assert engines.unchanged_fields(fold) is None
    xgb = pytest.importorskip("xgboost")
    assert engines.unchanged_fields(xgb.DMatrix(data.X, data.y, group=data.group)) is None


def _train(how, objective, data, rounds=5):
    if how == "train":
        booster = lgb.train({"objective": objective, "verbose": -1, "num_threads": 2},
                            lgb.Dataset(data.X, data.y, group=data.group), rounds)
        return booster.predict(data.X)
    model = lgb.LGBMRanker(objective=objective, n_estimators=rounds, n_jobs=2, verbose=-1)
    return model.fit(data.X, data.y, group=data.group).predict(data.X)


@pytest.mark.parametrize("how", ["train", "ranker"])
@pytest.mark.parametrize("make", OBJECTIVES)
def test_a_training_checks_its_inputs_once_and_trains_the_same_model(how, make, data, monkeypatch):
    fast = _train(how, make(), data)
    calls = []
    cls = type(make())
    real = cls._training_inputs
    monkeypatch.setattr(cls, "_training_inputs", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    _train(how, make(), data)
    assert len(calls) == 1
    monkeypatch.setattr(cls, "_unchanged_fields", lambda self, data: None)
    calls.clear()
    slow = _train(how, make(), data)
    assert len(calls) == 5
    np.testing.assert_array_equal(fast, slow)
