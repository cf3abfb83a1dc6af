"""gbrank is told what it needs, never infers it: a result never depends on how the engine was
called (wrappers around the objective, the metric, the training call or the callbacks; a
training inside another's callback), and copies share nothing."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

XGB = {"max_depth": 3, "eta": 0.3, "nthread": 1, "min_child_weight": 1e-3, "base_score": 0.0,
       "disable_default_eval_metric": 1}
LGB = {"learning_rate": 0.2, "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1,
       "deterministic": True, "metric": "None"}
DEPTHS = [0, 6, 12]


def wrapped(function, depth):
    """``function`` behind ``depth`` pass-through wrappers."""
    for _ in range(depth):
        function = (lambda inner: lambda *args, **kwargs: inner(*args, **kwargs))(function)
    return function


class WrappedCallback(xgb.callback.TrainingCallback):
    def __init__(self, inner, depth):
        self.after = wrapped(inner.after_iteration, depth)
        self.before_training = wrapped(inner.before_training, depth)
        self.after_training = wrapped(inner.after_training, depth)
        self.before_iteration = wrapped(inner.before_iteration, depth)

    def after_iteration(self, model, epoch, evals_log):
        return self.after(model, epoch, evals_log)


@pytest.fixture(scope="module")
def data():
    d = make_ranking(90, (6, 18), 6, seed=21)
    y = np.minimum(d.y, 2)
    y[d.qid == 5] = np.arange((d.qid == 5).sum()) % 5  # labels 3 and 4 in one query: fold maxima differ
    return d, y


def _xgb_cv(d, y, depth):
    objective = wrapped(gbrank.lambdarank(measure="err"), depth)
    result = wrapped(xgb.cv, depth)(XGB, xgb.DMatrix(d.X, y, qid=d.qid), num_boost_round=8, nfold=3, seed=0,
                                    obj=objective, custom_metric=wrapped(gbrank.metrics.xgboost_metric("ndcg@5"), depth),
                                    maximize=True, early_stopping_rounds=3)
    return result.to_numpy()


def test_xgb_cv_trains_the_same_folds_behind_any_number_of_wrappers(data):
    d, y = data
    runs = [_xgb_cv(d, y, depth) for depth in DEPTHS]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])


def test_xgb_train_inside_an_xgb_cv_callback_trains_as_alone(data):
    """A training started from inside xgb.cv's callback takes nothing of the outer one."""
    d, y = data
    small = np.minimum(y, 1)
    dsmall = xgb.DMatrix(d.X, small, qid=d.qid)
    inner = {}

    class TrainInside(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if epoch == 0:
                inner["booster"] = xgb.train(XGB, dsmall, 4, obj=gbrank.lambdarank(measure="err"))
            return False

    xgb.cv(XGB, xgb.DMatrix(d.X, y, qid=d.qid), num_boost_round=2, nfold=3, seed=0,
           obj=gbrank.lambdarank(measure="err"), callbacks=[TrainInside()])
    alone = xgb.train(XGB, dsmall, 4, obj=gbrank.lambdarank(measure="err"))
    np.testing.assert_array_equal(inner["booster"].predict(dsmall), alone.predict(dsmall))


@pytest.mark.parametrize("metric", ["ndcg@5", "err@5"])
def test_xgboost_early_stopping_maximises_behind_any_number_of_wrappers(data, metric):
    d, y = data
    train, valid = d.qid < 60, d.qid >= 60
    dtrain = xgb.DMatrix(d.X[train], y[train], qid=d.qid[train])
    dvalid = xgb.DMatrix(d.X[valid], y[valid], qid=d.qid[valid])
    results = []
    for depth in DEPTHS:
        history = {}
        booster = wrapped(xgb.train, depth)(
            {**XGB, "eta": 0.5}, dtrain, num_boost_round=40, obj=wrapped(gbrank.listmle(ties="input"), depth),
            evals=[(dvalid, "valid")], custom_metric=wrapped(gbrank.metrics.xgboost_metric(metric), depth),
            early_stopping_rounds=4, maximize=True, evals_result=history, verbose_eval=False,
            callbacks=[WrappedCallback(xgb.callback.EvaluationMonitor(period=100), depth)])
        curve = history["valid"][f"gbrank-{metric}"]
        assert booster.best_iteration == int(np.argmax(curve))
        results.append((booster.best_iteration, booster.predict(dvalid, iteration_range=(0, booster.best_iteration + 1))))
    for best, scores in results[1:]:
        assert best == results[0][0]
        np.testing.assert_array_equal(scores, results[0][1])


def test_lightgbm_trains_the_same_model_behind_any_number_of_wrappers(data):
    d, y = data
    train, valid = d.qid < 60, d.qid >= 60
    out = []
    for depth in DEPTHS:
        dtrain = lgb.Dataset(d.X[train], y[train], group=np.bincount(d.qid[train])[np.unique(d.qid[train])])
        dvalid = lgb.Dataset(d.X[valid], y[valid], group=np.bincount(d.qid[valid])[np.unique(d.qid[valid])],
                             reference=dtrain)
        booster = wrapped(lgb.train, depth)(
            {**LGB, "objective": wrapped(gbrank.lambdarank(measure="err"), depth)}, dtrain, 30,
            valid_sets=[dvalid], feval=wrapped(gbrank.metrics.lightgbm_feval("ndcg@5"), depth),
            callbacks=[wrapped(lgb.early_stopping(4, verbose=False), depth)])
        folds = gbrank.engines.query_folds(dtrain, nfold=3)
        cv = wrapped(lgb.cv, depth)({**LGB, "objective": wrapped(gbrank.listmle_topk(k=3), depth)},
                                    lgb.Dataset(d.X[train], y[train],
                                                group=np.bincount(d.qid[train])[np.unique(d.qid[train])]),
                                    num_boost_round=5, folds=folds, feval=gbrank.metrics.lightgbm_feval("ndcg@5"))
        out.append((booster.best_iteration, booster.predict(d.X, raw_score=True), cv["valid gbrank-ndcg@5-mean"]))
    for best, scores, curve in out[1:]:
        assert best == out[0][0]
        np.testing.assert_array_equal(scores, out[0][1])
        np.testing.assert_array_equal(curve, out[0][2])


def test_a_clone_fitted_on_other_data_leaves_the_original_estimate_alone():
    """Every GridSearchCV fold reports its own estimate, not the last fold's."""
    d = make_ranking(80, (8, 8), 6, seed=3)
    logs = [simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=60, top_k=8, eta=eta, seed=1) for eta in (0.5, 2.0)]
    original = gbrank.Ranker(gbrank.ips_listnet(warmup=2, update_every=2), n_estimators=10, n_jobs=1)
    original.fit(d.X, logs[0].clicks, group=d.group, position=logs[0].position)
    before = original.propensity_.copy()
    twin = clone(original).fit(d.X, logs[1].clicks, group=d.group, position=logs[1].position)
    np.testing.assert_array_equal(original.propensity_, before)
    assert np.abs(twin.propensity_ - before).max() > 0.05
    assert twin.objective_ is not original.objective_


def test_gbrank_reads_no_call_stack():
    package = Path(gbrank.__file__).parent
    found = [f"{path.relative_to(package)}:{i}" for path in sorted(package.rglob("*.py"))
             for i, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"_getframe|f_locals|f_back|inspect\.stack|inspect\.currentframe", line)]
    assert found == []
