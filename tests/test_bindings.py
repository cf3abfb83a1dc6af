"""Training state belongs to a training set: one binding per live training set and objective
value (gbrank.engines.bindings), checked against the fields at every call, shared by
nothing else."""

from __future__ import annotations

import copy
import pickle

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
    return make().bind(labels, group, weight=weight).grad_hess(scores)


def _count_binds(monkeypatch, cls):
    calls = []
    real = cls.bind
    monkeypatch.setattr(cls, "bind", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    return calls


@pytest.mark.parametrize("make", OBJECTIVES)
def test_a_second_call_on_the_same_dataset_binds_nothing_again(make, data, monkeypatch):
    ds = _dataset(data)
    objective = make()
    scores = np.random.default_rng(0).normal(size=data.y.size)
    first = objective(scores, ds)
    calls = _count_binds(monkeypatch, type(objective))
    second = objective(scores + 1e-3, ds)
    assert calls == []
    for got, want in zip(second, _expected(make, data.y, scores + 1e-3, data.group)):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(first[0], second[0])
    assert objective.binding(ds) is engines.bindings.find(ds, objective)


@pytest.mark.parametrize("make", OBJECTIVES)
def test_replaced_labels_weights_and_groups_are_bound_again(make, data):
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


@pytest.mark.parametrize("make", OBJECTIVES)
def test_labels_and_weights_written_in_place_are_bound_again(make, data):
    """A callback that writes into ``train_set.get_label()`` changes what the objective sees,
    as it changes what a metric on the training set sees."""
    rng = np.random.default_rng(2)
    ds = _dataset(data)
    objective = make()
    scores = rng.normal(size=data.y.size)
    objective(scores, ds)
    labels = ds.get_label()
    labels[:] = rng.integers(0, 5, labels.size)
    for got, want in zip(objective(scores, ds), _expected(make, labels.copy(), scores, data.group)):
        np.testing.assert_array_equal(got, want)
    ds.set_weight(np.full(data.y.size, 0.5, dtype=np.float32))
    objective(scores, ds)
    weights = ds.get_weight()
    weights[:12] = 3.0
    for got, want in zip(objective(scores, ds), _expected(make, labels.copy(), scores, data.group, weights.copy())):
        np.testing.assert_array_equal(got, want)


def test_a_callback_that_rewrites_labels_trains_as_the_metric_sees(data):
    """End to end: the labels a callback writes into the training set reach the objective
    in the next round (the model equals one trained on the new labels from that round)."""
    new = np.where(data.y > 0, 0.0, 2.0)

    def rewrite(env):
        if env.iteration == 0:
            env.model.train_set.get_label()[:] = new

    ds = lgb.Dataset(data.X, data.y, group=data.group)
    rewritten = lgb.train({"objective": gbrank.listnet(), "verbose": -1}, ds, 4, callbacks=[rewrite])
    direct = lgb.train({"objective": gbrank.listnet(), "verbose": -1}, lgb.Dataset(data.X, data.y, group=data.group), 1)
    direct = lgb.train({"objective": gbrank.listnet(), "verbose": -1}, lgb.Dataset(data.X, new, group=data.group), 3,
                       init_model=direct)
    np.testing.assert_allclose(rewritten.predict(data.X, raw_score=True), direct.predict(data.X, raw_score=True),
                               rtol=1e-10, atol=1e-10)


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


def test_labels_lightgbm_rewrote_from_infinity_are_refused(data):
    """LightGBM stores an infinite label as 1e38: every objective refuses it, order-only
    ones too, as grad_hess refuses the infinite label itself."""
    labels = data.y.copy()
    labels[7] = np.inf
    with pytest.raises(ValueError, match="inf"):
        gbrank.listmle().grad_hess(labels, np.zeros(labels.size), data.group)
    for objective in (gbrank.listmle(), gbrank.listmle_topk(k=3), gbrank.wlistmle(), gbrank.listnet()):
        with pytest.raises(ValueError, match="stand-in for an infinite label"):
            lgb.train({"objective": objective, "verbose": -1}, lgb.Dataset(data.X, labels, group=data.group), 1)
    with pytest.raises(ValueError, match="finite"):
        engines.lightgbm.dataset(data.X, labels, data.group)


def test_folds_and_matrices_get_bindings_of_their_own(data):
    ds = _dataset(data)
    objective = gbrank.lambdarank()
    scores = np.zeros(data.y.size)
    objective(scores, ds)
    rows = int(np.sum(data.group[:3]))
    fold = ds.subset(np.arange(rows)).construct()
    objective(scores[:rows], fold)
    assert objective.binding(fold) is not objective.binding(ds)
    xgb = pytest.importorskip("xgboost")
    dmat = xgb.DMatrix(data.X, data.y, group=data.group)
    objective(scores, dmat)
    assert objective.binding(dmat).n_rows == data.y.size


def test_copies_share_nothing_and_find_the_binding_of_the_training_set(data):
    objective = gbrank.ips_listnet()
    clone = copy.deepcopy(objective)
    assert clone is not objective and repr(clone) == repr(objective)
    assert not {k for k, v in vars(objective).items() if v is not None and vars(clone)[k] is v and
                isinstance(v, (list, dict, set, np.ndarray)) and not (isinstance(v, np.ndarray) and not v.flags.writeable)}
    assert pickle.loads(pickle.dumps(objective)).value_key == objective.value_key
    with pytest.raises(LookupError, match="no binding"):
        objective.binding(_dataset(data))


def test_an_objective_keeps_no_state_of_its_own(data):
    """Two trainings on different data, one after the other or interleaved, each see only
    their own binding; the objective's attributes never change."""
    objective = gbrank.lambdarank()
    before = {k: copy.copy(v) for k, v in vars(objective).items()}
    a, b = _dataset(data), _dataset(gbrank.datasets.make_ranking(n_queries=30, docs_per_query=7, n_features=4, seed=9))
    objective(np.zeros(a.num_data()), a)
    objective(np.zeros(b.num_data()), b)
    assert objective.binding(a).n_rows == a.num_data() and objective.binding(b).n_rows == b.num_data()
    assert vars(objective).keys() == before.keys()


def _train(how, objective, data, rounds=5):
    if how == "train":
        booster = lgb.train({"objective": objective, "verbose": -1, "num_threads": 2},
                            lgb.Dataset(data.X, data.y, group=data.group), rounds)
        return booster.predict(data.X)
    model = lgb.LGBMRanker(objective=objective, n_estimators=rounds, n_jobs=2, verbose=-1)
    return model.fit(data.X, data.y, group=data.group).predict(data.X)


@pytest.mark.parametrize("how", ["train", "ranker"])
@pytest.mark.parametrize("make", OBJECTIVES)
def test_a_training_binds_once_and_trains_the_model_of_fresh_bindings(how, make, data, monkeypatch):
    kept = _train(how, make(), data)
    calls = _count_binds(monkeypatch, type(make()))
    _train(how, make(), data)
    assert len(calls) == 1
    monkeypatch.setattr(engines.bindings, "find", lambda owner, objective: None)
    calls.clear()
    fresh = _train(how, make(), data)
    assert len(calls) == 5
    np.testing.assert_array_equal(kept, fresh)
