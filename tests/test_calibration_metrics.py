"""Calibration metrics (log loss, expected calibration error, reliability diagram) against
independent references, and their direction in both engines' early stopping."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.metrics import (calibration_bins, expected_calibration_error, lightgbm_feval, log_loss, make_metrics,
                            reliability_diagram, xgboost_metric)

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


def expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def direct_ece(y, s, n_bins):
    """Bins [b/B, (b+1)/B), the last one closed, row by row."""
    p = expit(np.asarray(s, dtype=float))
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        rows = [i for i in range(p.size) if lo <= p[i] < hi or (b == n_bins - 1 and p[i] == 1.0)]
        if rows:
            total += len(rows) / p.size * abs(np.mean(np.asarray(y, dtype=float)[rows]) - np.mean(p[rows]))
    return total


@pytest.mark.parametrize("seed", range(5))
def test_log_loss_equals_sklearn_on_binary_labels(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200).astype(float)
    s = rng.normal(scale=2.0, size=200)
    assert log_loss(y, s) == pytest.approx(metrics.log_loss(y, expit(s)), rel=1e-12)


def test_log_loss_of_graded_labels_is_the_soft_target_cross_entropy():
    y, s = np.array([4.0, 0.0, 2.0, 1.0, 3.0]), np.array([1.0, -2.0, 0.3, 0.0, 5.0])
    t = y / 4
    direct = np.mean(-t * np.log(expit(s)) - (1 - t) * np.log(1 - expit(s)))
    assert log_loss(y, s, max_label=4) == pytest.approx(direct, rel=1e-12)


def test_log_loss_needs_no_clipping_at_large_scores():
    assert log_loss([1, 0], [800.0, -800.0]) == 0.0
    assert log_loss([0, 1], [800.0, -800.0]) == pytest.approx(800.0)


@pytest.mark.parametrize("n_bins", [1, 5, 10, 15])
@pytest.mark.parametrize("seed", range(4))
def test_ece_equals_a_direct_computation(seed, n_bins):
    rng = np.random.default_rng(seed)
    s = rng.normal(scale=2.0, size=300)
    y = (rng.uniform(size=300) < expit(0.7 * s + 0.3)).astype(float)
    assert expected_calibration_error(y, s, n_bins=n_bins) == pytest.approx(direct_ece(y, s, n_bins), abs=1e-12)


def test_ece_bins_and_conventions():
    # probability exactly 1 falls in the last bin; empty bins count zero; a perfectly
    # calibrated set scores 0
    bins = calibration_bins([1, 0, 1], [800.0, 0.0, 0.0], n_bins=4)
    assert bins.count.tolist() == [0, 0, 2, 1] and np.isnan(bins.predicted[0])
    s = np.zeros(10)
    assert expected_calibration_error([1, 0] * 5, s) == 0.0
    assert expected_calibration_error([1] * 10, s) == pytest.approx(0.5)


def test_graded_labels_need_max_label():
    with pytest.raises(ValueError, match=r"y_true\[4\] = 3 at row 4 \(query 1\) exceeds .*pass max_label="):
        log_loss([0, 1, 0, 1, 3, 0], np.zeros(6), [3, 3])
    with pytest.raises(ValueError, match="max_label must be a positive number"):
        expected_calibration_error([0, 1], [0.0, 0.0], max_label=0)
    with pytest.raises(ValueError, match=r"y_pred contains NaN at row 1"):
        log_loss([0, 1], [0.0, np.nan])


def test_make_metrics_takes_calibration_specs():
    metrics = make_metrics(["ndcg@3", "logloss", ("ece", {"n_bins": 5})])
    assert metrics.names == ("gbrank-ndcg@3", "gbrank-logloss", "gbrank-ece")
    assert [m.higher_is_better for m in metrics.metrics] == [True, False, False]
    assert metrics.higher_is_better is False
    y, s = [1, 0, 1, 0], [2.0, -1.0, 0.0, 0.5]
    values = dict(metrics.evaluate(y, s, [4]))
    assert values["gbrank-logloss"] == log_loss(y, s)
    assert values["gbrank-ece"] == expected_calibration_error(y, s, n_bins=5)
    with pytest.raises(ValueError, match="takes no cut-off; write 'logloss'"):
        make_metrics("logloss@5")
    with pytest.raises(ValueError, match="n_bins"):
        make_metrics("ece", n_bins=0)


def test_lightgbm_feval_says_lower_is_better():
    data = lgb.Dataset(np.arange(4.0).reshape(-1, 1), label=[1, 0, 1, 0], group=[4], params={"verbose": -1}).construct()
    out = lightgbm_feval(["ndcg@3", "logloss"])(np.array([0.5, 1.0, -0.5, 0.2]), data)
    assert [(name, higher) for name, _, higher in out] == [("gbrank-ndcg@3", True), ("gbrank-logloss", False)]


# --------------------------------------------------------------------------- early stopping
def click_data(seed, n_queries=60, docs=10):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 4))
    y = (rng.uniform(size=n) < expit(X[:, 0] - 0.5)).astype(float)
    return X, y, np.full(n_queries, docs)


@pytest.fixture(scope="module")
def splits():
    return click_data(0), click_data(1)


def xgb_train(splits, metric, rounds=80, **kwargs):
    (X, y, g), (Xv, yv, gv) = splits
    obj = gbrank.rcr()
    history = {}
    booster = xgb.train(
        {"eta": 0.8, "max_depth": 6, "nthread": 1, "min_child_weight": 1e-3, "base_score": 0.0},
        xgb.DMatrix(X, y, group=g), num_boost_round=rounds, obj=obj,
        evals=[(xgb.DMatrix(Xv, yv, group=gv), "valid")], custom_metric=metric, evals_result=history,
        verbose_eval=False, **kwargs,
    )
    return booster, history["valid"]


def test_xgboost_early_stopping_minimises_log_loss(splits):
    booster, curves = xgb_train(splits, xgboost_metric(["ndcg@5", "logloss"]), early_stopping_rounds=5)
    curve = curves["gbrank-logloss"]  # the last metric, which XGBoost watches
    assert booster.best_iteration == int(np.argmin(curve))  # the lowest, not the highest
    assert int(np.argmin(curve)) != int(np.argmax(curve))
    assert len(curve) == booster.best_iteration + 1 + 5


def test_xgboost_early_stopping_callback_follows_the_first_metric(splits):
    metrics = make_metrics(["ece", "ndcg@5"])
    booster, curves = xgb_train(splits, metrics.xgboost, callbacks=[metrics.xgboost_early_stopping(5)])
    curve = curves["gbrank-ece"]
    assert booster.best_iteration == int(np.argmin(curve))
    # the ranking metric after a calibration one is maximised when it is watched and XGBoost
    # is told so (it would minimise the name)
    booster, curves = xgb_train(splits, xgboost_metric(["logloss", "ndcg@5"]), early_stopping_rounds=5, maximize=True)
    assert booster.best_iteration == int(np.argmax(curves["gbrank-ndcg@5"]))


def test_lightgbm_early_stopping_minimises_log_loss(splits):
    (X, y, g), (Xv, yv, gv) = splits
    history = {}
    booster = lgb.train(
        {"objective": gbrank.rcr(), "metric": "None", "verbosity": -1, "learning_rate": 0.8, "num_leaves": 31,
         "min_data_in_leaf": 2, "num_threads": 1},
        lgb.Dataset(X, y, group=g), num_boost_round=80,
        valid_sets=[lgb.Dataset(Xv, yv, group=gv)], valid_names=["valid"],
        feval=make_metrics(["logloss"]).lightgbm,
        callbacks=[lgb.early_stopping(5, verbose=False), lgb.record_evaluation(history)],
    )
    curve = history["valid"]["gbrank-logloss"]
    assert booster.best_iteration == int(np.argmin(curve)) + 1
    assert int(np.argmin(curve)) != int(np.argmax(curve))


def test_gbranks_own_early_stopping_minimises_the_calibration_metrics(splits):
    # gbrank.engines' adapters and LightGBM callback, not only the engines' own callbacks
    from gbrank.engines import lightgbm as gl
    from gbrank.engines import xgboost as gx

    (X, y, g), (Xv, yv, gv) = splits
    for spec in ("logloss", "ece", "ndcg@5"):
        metrics = make_metrics([spec])
        name = metrics.names[0]
        best_of = np.argmax if metrics.higher_is_better else np.argmin
        dtrain = gl.dataset(X, y, g)
        params = {"verbosity": -1, "learning_rate": 0.8, "num_threads": 1}
        history = {}
        booster, best = gl.train(params, dtrain, gbrank.rcr(), num_boost_round=80,
                                 valid=[gl.dataset(Xv, yv, gv, reference=dtrain)], valid_names=["valid"],
                                 feval=metrics.lightgbm, metric_names=metrics.names, early_stopping_rounds=5,
                                 evals_result=history)
        curve = history["valid"][name]
        assert best == booster.best_iteration == int(best_of(curve)) + 1
        assert len(curve) == best + 5
        history = {}
        booster = lgb.train({**params, "objective": gbrank.rcr(), "metric": "None"}, dtrain, num_boost_round=80,
                            valid_sets=[gl.dataset(Xv, yv, gv, reference=dtrain)], valid_names=["valid"],
                            feval=metrics.lightgbm,
                            callbacks=[gl.EarlyStopping(5, "valid", name), lgb.record_evaluation(history)])
        assert booster.best_iteration == int(best_of(history["valid"][name])) + 1
        history = {}
        booster, best = gx.train({"nthread": 1, "eta": 0.8}, gx.dmatrix(X, y, g), gbrank.rcr(), num_boost_round=80,
                                 evals=[(gx.dmatrix(Xv, yv, gv), "valid")], custom_metric=metrics.xgboost,
                                 metric_names=metrics.names, early_stopping_rounds=5, evals_result=history)
        curve = history["valid"][name]
        assert best == int(best_of(curve)) + 1
        # told otherwise, it does otherwise
        flipped, _ = gx.train({"nthread": 1, "eta": 0.8}, gx.dmatrix(X, y, g), gbrank.rcr(), num_boost_round=80,
                              evals=[(gx.dmatrix(Xv, yv, gv), "valid")], custom_metric=metrics.xgboost,
                              metric_names=metrics.names, early_stopping_rounds=5,
                              maximize=not metrics.higher_is_better)
        assert flipped.best_iteration != booster.best_iteration


# --------------------------------------------------------------------------- probabilities
@pytest.mark.parametrize("seed", range(3))
def test_probabilities_give_the_raw_scores_figures(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    s = rng.normal(scale=2.0, size=300)
    y = (rng.uniform(size=300) < expit(0.7 * s)).astype(float)
    q = expit(s)
    assert log_loss(y, q, probability=True) == pytest.approx(metrics.log_loss(y, q), rel=1e-10)
    assert log_loss(y, q, probability=True) == pytest.approx(log_loss(y, s), rel=1e-10)
    assert expected_calibration_error(y, q, probability=True) == pytest.approx(direct_ece(y, s, 10), abs=1e-12)
    # read as raw scores, the same probabilities give another figure
    assert abs(log_loss(y, q) - log_loss(y, s)) > 0.05


def test_probabilities_of_zero_and_one_are_clipped_as_lightgbm_does():
    assert log_loss([0, 1], [1.0, 0.0], probability=True) == pytest.approx(-np.log(1e-15), rel=1e-4)
    assert log_loss([1, 0], [1.0, 0.0], probability=True) == pytest.approx(0.0, abs=1e-14)


def test_a_value_outside_zero_one_is_refused_as_a_probability():
    with pytest.raises(ValueError, match=r"row 1 is 1\.5.*probability=False"):
        log_loss([1, 0], [0.5, 1.5], probability=True)
    with pytest.raises(ValueError, match="row 0"):
        expected_calibration_error([1, 0], [-0.1, 0.5], probability=True)
    with pytest.raises(TypeError, match="probability"):
        log_loss([1, 0], [0.5, 0.5], probability="yes")
    with pytest.raises(TypeError, match="probability"):
        make_metrics([("logloss", {"probability": 1})])


def test_engines_built_in_logistic_objectives_match_their_own_log_loss(splits):
    # both engines hand a callback probabilities under their built-in logistic objective
    (X, y, g), _ = splits
    metrics = make_metrics([("logloss", {"probability": True}), ("ece", {"probability": True})])
    history = {}
    booster = xgb.train({"objective": "binary:logistic", "eval_metric": "logloss", "nthread": 1},
                        xgb.DMatrix(X, y, group=g), 5, evals=[(xgb.DMatrix(X, y, group=g), "train")],
                        custom_metric=metrics.xgboost, evals_result=history, verbose_eval=False)
    curves = history["train"]
    np.testing.assert_allclose(curves["gbrank-logloss"], curves["logloss"], rtol=1e-5)
    margin = booster.predict(xgb.DMatrix(X), output_margin=True)
    assert curves["gbrank-ece"][-1] == pytest.approx(expected_calibration_error(y, margin), abs=1e-5)
    history = {}
    lgb.train({"objective": "binary", "metric": "binary_logloss", "verbosity": -1, "num_threads": 1},
              lgb.Dataset(X, y, group=g), 5, valid_sets=[lgb.Dataset(X, y, group=g)], valid_names=["train"],
              feval=metrics.lightgbm, callbacks=[lgb.record_evaluation(history)])
    np.testing.assert_allclose(history["train"]["gbrank-logloss"], history["train"]["binary_logloss"], rtol=1e-10)



def test_xgboost_calibration_callbacks_need_no_query_groups(splits):
    # a binary:logistic model's DMatrix has none; the ranking metrics still require them
    (X, y, _), _ = splits
    metrics = make_metrics([("logloss", {"probability": True}), ("ece", {"probability": True})])
    params = {"objective": "binary:logistic", "eval_metric": "logloss", "nthread": 1}
    history = {}
    xgb.train(params, xgb.DMatrix(X, y), 5, evals=[(xgb.DMatrix(X, y), "train")], custom_metric=metrics.xgboost,
              evals_result=history, verbose_eval=False)
    np.testing.assert_allclose(history["train"]["gbrank-logloss"], history["train"]["logloss"], rtol=1e-5)
    folds = xgb.cv(params, xgb.DMatrix(X, y), 5, nfold=3, custom_metric=metrics.xgboost, seed=0)
    np.testing.assert_allclose(folds["test-gbrank-logloss-mean"], folds["test-logloss-mean"], rtol=1e-5)
    with pytest.raises(ValueError, match="no query groups"):
        xgb.train(params, xgb.DMatrix(X, y), 1, evals=[(xgb.DMatrix(X, y), "train")],
                  custom_metric=make_metrics(["logloss", "ndcg@5"]).xgboost, verbose_eval=False)


# --------------------------------------------------------------------------- the plot
def test_reliability_diagram_draws_the_bins():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    rng = np.random.default_rng(0)
    s = rng.normal(size=500)
    y = (rng.uniform(size=500) < expit(s)).astype(float)
    ax = reliability_diagram(y, s, n_bins=5, label="rcr")
    curve = ax.lines[1]
    bins = calibration_bins(y, s, n_bins=5)
    np.testing.assert_allclose(curve.get_xdata(), bins.predicted[bins.count > 0])
    np.testing.assert_allclose(curve.get_ydata(), bins.observed[bins.count > 0])
    assert "rcr (ECE " in ax.get_legend().get_texts()[0].get_text()
    matplotlib.pyplot.close(ax.figure)
