"""The workflow matrix: every way a LightGBM or XGBoost user trains, with every registered
objective, gives the right model or stops with an error that names the fix.

Each case is documented in docs/workflows.md. Data are tiny and rounds few: these tests
check plumbing (which scores, which rows, which rounds), the kernels are proven elsewhere.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score  # noqa: E402

import gbrank  # noqa: E402
from gbrank import engines  # noqa: E402
from gbrank.engines import xgboost as xgb_engine  # noqa: E402
from gbrank.datasets import make_ranking  # noqa: E402
from gbrank.metrics import make_metrics, ndcg, xgboost_metric  # noqa: E402
from gbrank.ndcg_boost_learner import NDCGBoost  # noqa: E402
from gbrank.objectives import registry  # noqa: E402
from gbrank.ranker import Ranker  # noqa: E402
from objective_cases import spec_data  # noqa: E402

NAMES = registry.names()
LGB = {
    "verbose": -1,
    "num_threads": 1,
    "min_data_in_leaf": 5,
    "num_leaves": 7,
    "learning_rate": 0.3,
    "deterministic": True,
    "force_row_wise": True,
    "metric": "None",
}
XGB = {"nthread": 1, "max_depth": 3, "eta": 0.3, "min_child_weight": 1e-3, "tree_method": "hist"}
ROUNDS = 5


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=30, docs_per_query=8, n_features=5, seed=3)


@pytest.fixture(scope="module")
def valid():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=5, seed=4)


def build(name):
    return registry.get(name).build()


def baseline(data) -> float:
    return ndcg(data.y, np.zeros(len(data)), data.group, k=5)


def learned(data, scores) -> float:
    return ndcg(data.y, scores, data.group, k=5)


def lgb_train(name, data, rounds=ROUNDS, params=None, **kwargs):
    data = spec_data(name, data)
    dtrain = lgb.Dataset(data.X, data.y, group=data.group, init_score=kwargs.pop("init_score", None))
    return lgb.train({**LGB, **(params or {}), "objective": build(name)}, dtrain, num_boost_round=rounds, **kwargs)


class Recorder:
    """A callable objective that remembers the scores and gradients of its first call."""

    def __init__(self, objective):
        self.objective = objective
        self.first = None

    def __deepcopy__(self, memo):
        # Ranker and lgb.train call a deep copy; record here
        return self

    def __call__(self, preds, data):
        grad, hess = self.objective(preds, data)
        if self.first is None:
            self.first = (np.array(preds, dtype=np.float64), grad.copy(), hess.copy())
        return grad, hess


# ----------------------------------------------------------------------------- LightGBM
@pytest.mark.parametrize("name", NAMES)
def test_lgb_train_and_lgbmranker_train_the_same_model(name, data):
    data = spec_data(name, data)
    booster = lgb_train(name, data)
    model = lgb.LGBMRanker(objective=build(name), n_estimators=ROUNDS, **{k: v for k, v in LGB.items() if k != "verbose"}, verbose=-1)
    model.fit(data.X, data.y, group=data.group)
    scores = booster.predict(data.X, raw_score=True)
    np.testing.assert_allclose(model.predict(data.X, raw_score=True), scores, rtol=0, atol=1e-12)
    assert learned(data, scores) > baseline(data)


@pytest.mark.parametrize("name", NAMES)
def test_lgb_cv_refuses_folds_that_cut_queries(name, data):
    data = spec_data(name, data)
    dtrain = lgb.Dataset(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match=r"query \d+ .*folds=gbrank\.engines\.query_folds"):
        lgb.cv({**LGB, "objective": build(name)}, dtrain, num_boost_round=2, nfold=3)


@pytest.mark.parametrize("name", NAMES)
def test_lgb_cv_with_query_folds(name, data):
    data = spec_data(name, data)
    dtrain = lgb.Dataset(data.X, data.y, group=data.group, free_raw_data=False)
    feval = make_metrics(["ndcg@5"]).lightgbm
    result = lgb.cv(
        {**LGB, "objective": build(name)}, dtrain, num_boost_round=ROUNDS, folds=engines.query_folds(dtrain, nfold=3), feval=feval
    )
    assert len(result["valid gbrank-ndcg@5-mean"]) == ROUNDS
    # GroupKFold splits are whole queries too
    folds = GroupKFold(n_splits=3).split(data.X, groups=data.qid)
    result = lgb.cv({**LGB, "objective": build(name)}, dtrain, num_boost_round=2, folds=folds, feval=feval)
    assert np.isfinite(result["valid gbrank-ndcg@5-mean"]).all()


def test_query_folds_keep_queries_whole(data):
    folds = engines.query_folds(data.group, nfold=4, seed=1)
    tested = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(tested), np.arange(len(data)))
    for train, test in folds:
        assert np.intersect1d(data.qid[train], data.qid[test]).size == 0
        assert train.size + test.size == len(data)
    with pytest.raises(ValueError, match="nfold"):
        engines.query_folds(data.group, nfold=1)


@pytest.mark.parametrize("name", NAMES)
def test_row_bagging_goss_and_dart_train_and_learn(name, data):
    data = spec_data(name, data)
    for params in (
        {"bagging_fraction": 0.5, "bagging_freq": 1, "seed": 1},
        {"data_sample_strategy": "goss", "top_rate": 0.3, "other_rate": 0.3},
        {"boosting": "dart", "drop_rate": 0.5, "seed": 1},
    ):
        booster = lgb_train(name, data, rounds=8, params=params)
        assert learned(data, booster.predict(data.X, raw_score=True)) > baseline(data), params


@pytest.mark.parametrize("name", NAMES)
def test_bagging_by_query_is_refused_where_the_objective_sees_the_parameters(name, data):
    """lgb.train, lgb.cv and gbrank.Ranker refuse it; LGBMRanker hands the objective arrays
    only, so there it cannot be seen (docs/workflows.md says so, and gbrank.Ranker is the
    way in)."""
    data = spec_data(name, data)
    params = {"bagging_fraction": 0.5, "bagging_freq": 1, "bagging_by_query": True}
    with pytest.raises(ValueError, match="bagging_by_query=False"):
        lgb_train(name, data, params=params)
    with pytest.raises(ValueError, match="bagging_by_query=False"):
        Ranker(build(name), n_estimators=2, params={"bagging_by_query": True}).fit(data.X, data.y, group=data.group)


def test_dart_gradients_see_the_dropped_model(data):
    """With every tree dropped, the scores the objective receives are 0 at every round."""
    seen = []

    def objective(preds, dataset):
        seen.append(np.abs(preds).max())
        return gbrank.listmle(ties="input")(preds, dataset)

    lgb.train({**LGB, "objective": objective, "boosting": "dart", "drop_rate": 1.0, "skip_drop": 0.0}, lgb.Dataset(data.X, data.y, group=data.group), 4)
    assert max(seen) < 1e-12
    seen.clear()
    lgb.train({**LGB, "objective": objective, "boosting": "dart", "drop_rate": 0.0, "skip_drop": 1.0}, lgb.Dataset(data.X, data.y, group=data.group), 4)
    assert seen[0] == 0 and seen[-1] > 0.01


@pytest.mark.parametrize("name", NAMES)
def test_init_model_and_init_score_continue_training(name, data):
    data = spec_data(name, data)
    first = lgb_train(name, data, rounds=3)
    start = first.predict(data.X, raw_score=True)
    straight = lgb_train(name, data, rounds=6).predict(data.X, raw_score=True)
    continued = lgb_train(name, data, rounds=3, init_model=first).predict(data.X, raw_score=True)
    on_top = lgb_train(name, data, rounds=3, init_score=start).predict(data.X, raw_score=True)
    np.testing.assert_allclose(continued, straight, atol=1e-9)
    np.testing.assert_allclose(start + on_top, straight, atol=1e-9)


# ----------------------------------------------------------------------------- XGBoost
@pytest.mark.parametrize("name", NAMES)
def test_xgb_model_and_base_margin_continue_training(name, data):
    data = spec_data(name, data)
    params = xgb_engine.params(build(name), XGB)
    X = xgb.DMatrix(data.X)

    def fit(rounds, **kwargs):
        dtrain = xgb.DMatrix(data.X, data.y, group=data.group, base_margin=kwargs.pop("base_margin", None))
        return xgb.train(params, dtrain, rounds, obj=build(name), **kwargs)

    first = fit(3)
    start = first.predict(X, output_margin=True)
    straight = fit(6).predict(X, output_margin=True)
    np.testing.assert_allclose(fit(3, xgb_model=first).predict(X, output_margin=True), straight, atol=1e-5)
    np.testing.assert_allclose(start + fit(3, base_margin=start).predict(X, output_margin=True), straight, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_xgb_train_dmatrix_and_quantile_dmatrix_agree(name, data):
    data = spec_data(name, data)
    params = xgb_engine.params(build(name), XGB)
    models = []
    for kind in (xgb.DMatrix, xgb.QuantileDMatrix):
        dtrain = kind(data.X, data.y, group=data.group)
        models.append(xgb.train(params, dtrain, ROUNDS, obj=build(name)).predict(xgb.DMatrix(data.X), output_margin=True))
    np.testing.assert_allclose(models[0], models[1], atol=1e-6)
    assert learned(data, models[0]) > baseline(data)


@pytest.mark.parametrize("name", NAMES)
def test_xgb_cv_keeps_queries_whole(name, data):
    data = spec_data(name, data)
    dtrain = xgb.DMatrix(data.X, data.y, group=data.group)
    seen = []

    def objective(preds, dmat):
        seen.append(engines.read(dmat).sizes)
        return build(name)(preds, dmat)

    result = xgb.cv(xgb_engine.params(build(name), XGB), dtrain, 2, nfold=3, obj=objective, custom_metric=xgboost_metric(["ndcg@5"]))
    assert len(result) == 2
    whole = set(data.group.tolist())
    assert all(set(sizes.tolist()) <= whole for sizes in seen) and sum(len(s) for s in seen[:3]) == 2 * data.n_queries
    with pytest.raises(xgb.core.XGBoostError):
        xgb.cv(XGB, dtrain, 2, folds=[(np.arange(0, 100), np.arange(100, 240))], obj=objective)


@pytest.mark.parametrize("name", NAMES)
def test_both_engines_start_from_the_same_score(name, data):
    """Ranker gives the objective the same first scores (0) and gradients in both engines."""
    data = spec_data(name, data)
    firsts = []
    for engine in ("lightgbm", "xgboost"):
        recorder = Recorder(build(name))
        Ranker(recorder, engine=engine, n_estimators=1).fit(data.X, data.y, group=data.group)
        firsts.append(recorder.first)
    (p_lgb, g_lgb, h_lgb), (p_xgb, g_xgb, h_xgb) = firsts
    assert np.all(p_lgb == 0) and np.all(p_xgb == 0)
    np.testing.assert_allclose(g_xgb, g_lgb, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(h_xgb, h_lgb, rtol=1e-6, atol=1e-12)


def test_cosine_on_xgboost_starts_from_zero_not_half(data):
    """RankCosine is not shift-invariant: from 0.5 it would train another model."""
    ranker = Ranker(gbrank.cosine(), engine="xgboost", n_estimators=3, n_jobs=1).fit(data.X, data.y, group=data.group)
    dtrain = xgb.DMatrix(data.X, data.y, group=data.group)
    params = {"eta": 0.1, "nthread": 1, "disable_default_eval_metric": 1}
    at_zero = xgb.train({**params, "base_score": 0.0}, dtrain, 3, obj=gbrank.cosine())
    at_half = xgb.train(params, dtrain, 3, obj=gbrank.cosine())
    X = xgb.DMatrix(data.X)
    np.testing.assert_array_equal(ranker.predict(data.X), at_zero.predict(X, output_margin=True))
    assert not np.allclose(at_half.predict(X, output_margin=True) - 0.5, at_zero.predict(X, output_margin=True))


# ----------------------------------------------------------------------------- early stopping
@pytest.mark.parametrize("how", ["maximize", "callback"])
def test_xgboost_early_stopping_maximises_the_gbrank_metric_alone(data, valid, how):
    """XGBoost guesses the direction from the name and would minimise gbrank's: told with
    maximize=True, or by the metrics' own callback, it maximises."""
    history = {}
    metrics = gbrank.metrics.make_metrics(["ndcg@10"])
    stopping = {"maximize": True, "early_stopping_rounds": 5} if how == "maximize" else {
        "callbacks": [metrics.xgboost_early_stopping(5)]}
    booster = xgb.train(
        {"eta": 0.5, "max_depth": 4, "nthread": 1, "min_child_weight": 1e-3},
        xgb.DMatrix(data.X, data.y, group=data.group),
        num_boost_round=60,
        obj=gbrank.listmle_topk(k=10),
        evals=[(xgb.DMatrix(valid.X, valid.y, group=valid.group), "valid")],
        custom_metric=metrics.xgboost,
        evals_result=history,
        verbose_eval=False,
        **stopping,
    )
    curve = history["valid"]["gbrank-ndcg@10"]
    assert booster.best_iteration == int(np.argmax(curve))  # the highest, not the lowest
    assert len(curve) == booster.best_iteration + 1 + 5


def test_xgb_cv_early_stopping_maximises(data):
    dtrain = xgb.DMatrix(data.X, data.y, group=data.group)
    result = xgb.cv({**XGB, "eta": 1.0, "max_depth": 6}, dtrain, 60, nfold=3, obj=gbrank.listmle(ties="input"),
                    custom_metric=xgboost_metric("ndcg@5"), early_stopping_rounds=3, maximize=True)
    curve = result["test-gbrank-ndcg@5-mean"].to_numpy()
    assert int(np.argmax(curve)) == curve.size - 1  # xgb.cv keeps the rounds up to the best


def test_lightgbm_early_stopping_on_the_gbrank_metric_alone(data, valid):
    history = {}
    booster = lgb.train(
        {**LGB, "objective": gbrank.listmle_topk(k=10), "learning_rate": 0.5},
        lgb.Dataset(data.X, data.y, group=data.group),
        num_boost_round=60,
        valid_sets=[lgb.Dataset(valid.X, valid.y, group=valid.group)],
        valid_names=["valid"],
        feval=make_metrics(["ndcg@10"]).lightgbm,
        callbacks=[lgb.early_stopping(5, verbose=False), lgb.record_evaluation(history)],
    )
    curve = history["valid"]["gbrank-ndcg@10"]
    assert booster.best_iteration == int(np.argmax(curve)) + 1


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_front_ends_share_one_early_stopping_rule(engine, data, valid):
    """The first metric on the last eval set, in Ranker (both engines) and NDCGBoost."""
    evals = [(data.X, data.y), (valid.X, valid.y)]
    model = Ranker(gbrank.listmle(ties="input"), engine=engine, n_estimators=80, learning_rate=0.5).fit(
        data.X, data.y, group=data.group, eval_set=evals, eval_group=[data.group, valid.group], eval_at=(3, 10), early_stopping_rounds=4
    )
    watched = model.evals_result_["valid_1"]["gbrank-ndcg@3"]
    assert model.best_iteration_ == int(np.argmax(watched)) + 1
    assert len(watched) == model.best_iteration_ + 4
    boost = NDCGBoost(n_estimators=80).fit(
        data.X, data.y, group=data.group, eval_set=[(*evals[0], data.group), (*evals[1], valid.group)], eval_at=(3, 10), early_stopping_rounds=4
    )
    watched = boost.history_["valid_1_ndcg@3"]
    assert boost.best_iteration_ == int(np.argmax(watched)) + 1


# ----------------------------------------------------------------------------- labels
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_one_label_policy_fit_score_eval_set(engine, data):
    """Labels fit accepts are evaluated too: y / 4 with the linear gain, stated in gain_."""
    y = data.y / 4
    model = Ranker(engine=engine, n_estimators=5).fit(
        data.X, y, group=data.group, eval_set=[(data.X, y)], eval_group=[data.group], early_stopping_rounds=3
    )
    assert model.gain_ == "linear"
    assert model.score(data.X, y, group=data.group) == pytest.approx(ndcg(y, model.predict(data.X), data.group, k=10, gain="linear"))
    assert Ranker(engine=engine, n_estimators=2).fit(data.X, data.y, group=data.group).gain_ == "exp2"
    integer = Ranker(engine=engine, n_estimators=2).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="gain='linear'"):
        integer.score(data.X, y, group=data.group)


def test_grid_search_gets_real_scores_with_fractional_labels(data):
    X = pd.DataFrame(data.X, columns=[f"f{i}" for i in range(data.n_features)]).assign(qid=data.qid)
    search = GridSearchCV(Ranker(n_estimators=4), {"learning_rate": [0.05, 0.5]}, cv=GroupKFold(n_splits=3))
    search.fit(X, data.y / 4, groups=data.qid)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and scores[0] != scores[1]


# ----------------------------------------------------------------------------- sklearn, pickling
@pytest.mark.parametrize("name", NAMES)
def test_clone_and_pickle(name, data):
    data = spec_data(name, data)
    model = Ranker(build(name), n_estimators=3).fit(data.X, data.y, group=data.group)
    again = clone(model).fit(data.X, data.y, group=data.group)
    np.testing.assert_array_equal(again.predict(data.X), model.predict(data.X))
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(data.X), model.predict(data.X))
    objective = pickle.loads(pickle.dumps(model.objective_))
    scores = np.linspace(-1, 1, len(data))
    for got, want in zip(objective.grad_hess(data.y, scores, data.group), model.objective_.grad_hess(data.y, scores, data.group)):
        np.testing.assert_array_equal(got, want)


def test_cross_val_score_with_group_kfold_under_loky(data):
    X = pd.DataFrame(data.X, columns=[f"f{i}" for i in range(data.n_features)]).assign(qid=data.qid)
    scores = cross_val_score(Ranker(gbrank.listmle_topk(k=5), n_estimators=4), X, data.y, groups=data.qid, cv=GroupKFold(n_splits=3), n_jobs=2)
    serial = cross_val_score(Ranker(gbrank.listmle_topk(k=5), n_estimators=4), X, data.y, groups=data.qid, cv=GroupKFold(n_splits=3))
    np.testing.assert_allclose(scores, serial)


# ----------------------------------------------------------------------------- positions
def test_positions_reach_lightgbm_and_objectives_that_read_them(data):
    position = np.concatenate([np.arange(1, n + 1) for n in data.group])
    model = Ranker("lambdarank", n_estimators=2, params={"lambdarank_position_bias_regularization": 0.1})
    model.fit(data.X, data.y, group=data.group, position=position)
    with pytest.raises(ValueError, match="uses_position"):
        Ranker(gbrank.listmle(), n_estimators=2).fit(data.X, data.y, group=data.group, position=position)
    with pytest.raises(ValueError, match="uses_position"):
        Ranker(gbrank.listmle(), engine="xgboost", n_estimators=2).fit(data.X, data.y, group=data.group, position=position)

    seen = []

    class PositionTarget:
        """Toy loss 1/2 (s - y / position)^2 of another package that reads the positions."""

        uses_position = True

        def __call__(self, preds, data):
            raise AssertionError("the positions reach it through grad_hess")

        def grad_hess(self, y_true, y_pred, group, weight=None, position=None):
            seen.append(np.array(position))
            return np.asarray(y_pred, dtype=np.float64) - np.asarray(y_true) / position, np.ones(len(y_pred))

    for engine in ("lightgbm", "xgboost"):
        seen.clear()
        Ranker(PositionTarget(), engine=engine, n_estimators=2).fit(data.X, data.y, group=data.group, position=position)
        assert len(seen) == 2
        np.testing.assert_array_equal(seen[0], position)
    # LightGBM keeps only ids of the distinct positions once it constructs the Dataset (before
    # it calls the objective): the values come from gbrank's Dataset builder, whatever the row
    # order (here each query's reversed), or from with_position
    reversed_position = np.concatenate([np.arange(n, 0, -1) for n in data.group])
    built = engines.lightgbm.dataset(data.X, data.y, data.group, position=reversed_position, params=LGB)
    np.testing.assert_array_equal(engines.read(built, position=True).position, reversed_position)
    clicks = (data.y > 1).astype(float)
    lgb.train({**LGB, "objective": gbrank.ips_listnet()}, engines.lightgbm.dataset(
        data.X, clicks, data.group, position=reversed_position, params=LGB), 1)
    # a Dataset whose positions gbrank was not given is refused, constructed or not, every time
    for _ in range(2):
        for dataset in (lgb.Dataset(data.X, clicks, group=data.group, position=reversed_position),
                        lgb.Dataset(data.X, clicks, group=data.group, position=reversed_position, params=LGB).construct()):
            with pytest.raises(ValueError, match="with_position"):
                lgb.train({**LGB, "objective": gbrank.ips_listnet()}, dataset, 1)
    dtrain = lgb.Dataset(data.X, data.y, group=data.group, position=position)
    seen.clear()
    lgb.train({**LGB, "objective": engines.with_position(PositionTarget(), position)}, dtrain, 1)
    np.testing.assert_array_equal(seen[0], position)
    seen.clear()
    xgb.train(XGB, xgb.DMatrix(data.X, data.y, group=data.group), 1, obj=engines.with_position(PositionTarget(), position))
    np.testing.assert_array_equal(seen[0], position)
    with pytest.raises(ValueError, match="uses_position"):
        engines.with_position(gbrank.listmle(), position)
    with pytest.raises(ValueError, match="1-based"):
        Ranker(PositionTarget(), n_estimators=2).fit(data.X, data.y, group=data.group, position=position - 1)
