"""`gbrank.ranker.Ranker`: both engines, pandas input, early stopping, scikit-learn checks, CV."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import sklearn
from packaging.version import Version
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

import gbrank
from gbrank.datasets import make_ranking, split_queries
from gbrank.metrics import ndcg
from gbrank.objectives import registry
from gbrank.ranker import Ranker
from objective_cases import spec_data

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

ENGINES = ["lightgbm", "xgboost"]
# parametrize_with_checks(expected_failed_checks=) and check_estimator(on_fail=) need
# scikit-learn 1.6, cross_val_score(params=) 1.4; the oldest supported release (1.3) runs the
# rest of this file.
NEW_SKLEARN = Version(sklearn.__version__) >= Version("1.6")
OLD_SKLEARN_SKIP = "the test uses an API of scikit-learn 1.6 or newer"
needs_new_sklearn = pytest.mark.skipif(not NEW_SKLEARN, reason=OLD_SKLEARN_SKIP)
# One thread each: the engines' thread pools spin on a machine shared with other jobs.
FAST = {"n_estimators": 20, "learning_rate": 0.3, "n_jobs": 1}


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=120, docs_per_query=20, n_features=10, noise=0.5, seed=3)


@pytest.fixture(scope="module")
def split(data):
    return split_queries(data, (0.6, 0.2, 0.2), seed=0)


def interleave(qid, seed=0):
    """A row order that interleaves the queries but keeps each query's rows in order."""
    perm = np.argsort(np.random.default_rng(seed).random(qid.size))
    shuffled = qid[perm]
    for q in np.unique(qid):
        at = np.flatnonzero(shuffled == q)
        perm[at] = np.sort(perm[at])
    return perm


def frame(data, qid_col="qid"):
    X = pd.DataFrame(data.X, columns=[f"feat{i}" for i in range(data.n_features)])
    X.insert(3, qid_col, data.qid)
    return X


# ----------------------------------------------------------------------------- training
@pytest.mark.parametrize("engine", ENGINES)
def test_custom_objective_is_exactly_the_engine_training(engine, data):
    obj = gbrank.listmle_topk(k=5, ties="input")
    model = Ranker(obj, engine=engine, n_estimators=20, n_jobs=1, learning_rate=0.2, max_depth=4).fit(data.X, data.y, group=data.group)
    if engine == "lightgbm":
        params = {"objective": obj, "learning_rate": 0.2, "max_depth": 4, "num_threads": 1, "verbosity": -1, "metric": "None"}
        ref = lgb.train(params, lgb.Dataset(data.X, data.y, group=data.group), num_boost_round=20)
        expected = ref.predict(data.X, raw_score=True)
        assert isinstance(model.booster_, lgb.Booster)
    else:
        # a custom objective starts from 0 in both engines (gbrank.engines.start_score)
        params = {"eta": 0.2, "max_depth": 4, "nthread": 1, "disable_default_eval_metric": 1, "base_score": 0.0}
        ref = xgb.train(params, xgb.DMatrix(data.X, data.y, group=data.group), num_boost_round=20, obj=obj)
        expected = ref.predict(xgb.DMatrix(data.X), output_margin=True)
        assert isinstance(model.booster_, xgb.Booster)
    np.testing.assert_array_equal(model.predict(data.X), expected)
    assert model.best_iteration_ == 20
    assert model.evals_result_ == {}


@pytest.mark.parametrize("engine", ENGINES)
def test_learns_and_scores_with_gbrank_ndcg(engine, split):
    train, _, test = split
    model = Ranker(gbrank.listmle_topk(k=10), engine=engine, score_at=5, **FAST)
    model.fit(train.X, train.y, group=train.group)
    scores = model.predict(test.X)
    assert scores.shape == (len(test),) and scores.dtype == np.float64
    assert model.score(test.X, test.y, group=test.group) == ndcg(test.y, scores, test.group, k=5)
    random = ndcg(test.y, np.random.default_rng(0).normal(size=len(test)), test.group, k=5)
    assert model.score(test.X, test.y, qid=test.qid) > random + 0.2


def factories() -> list[str]:
    """Every registered objective (its registry example's settings)."""
    return list(registry.names())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("factory", factories())
def test_every_gbrank_objective_trains_on_both_engines(engine, factory, split):
    objective = registry.get(factory).build()
    train, _, test = split
    train = spec_data(factory, train)
    model = Ranker(objective, engine=engine, **FAST).fit(train.X, train.y, group=train.group)
    random = ndcg(test.y, np.random.default_rng(0).normal(size=len(test)), test.group, k=10)
    assert model.score(test.X, test.y, group=test.group) > random + 0.2


@pytest.mark.parametrize(
    ("engine", "name"), [("lightgbm", "lambdarank"), ("lightgbm", "rank_xendcg"), ("xgboost", "rank:ndcg"), ("xgboost", "rank:pairwise")]
)
def test_builtin_objectives_by_name(engine, name, split):
    train, _, test = split
    model = Ranker(name, engine=engine, **FAST).fit(train.X, train.y, qid=train.qid)
    assert model.objective_ == name
    assert model.score(test.X, test.y, qid=test.qid) > 0.5


def test_objective_names_and_types_are_checked(data):
    with pytest.raises(ValueError, match="not a ranking objective of xgboost"):
        Ranker("lambdarank", engine="xgboost").fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="not a ranking objective of lightgbm"):
        Ranker("regression").fit(data.X, data.y, group=data.group)
    with pytest.raises(TypeError, match="objective must be"):
        Ranker(objective=3).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="engine must be"):
        Ranker(engine="catboost").fit(data.X, data.y, group=data.group)


def test_default_objective_is_listmle_and_the_parameter_stays_untouched(data):
    model = Ranker(n_estimators=2, n_jobs=1).fit(data.X, data.y, group=data.group)
    assert model.objective is None and repr(model.objective_) == repr(gbrank.listmle())
    obj = gbrank.listmle_topk(k=3)
    model = Ranker(obj, engine="xgboost", n_estimators=2, n_jobs=1).fit(data.X, data.y, group=data.group)
    assert model.objective is obj and model.objective_ is not obj
    assert set(vars(obj)) == set(vars(gbrank.listmle_topk(k=3)))  # no state was added to the given one


@pytest.mark.parametrize("engine", ENGINES)
def test_feature_importances(engine, data):
    for kind in ("gain", "split"):
        # ties by score: split counts after 20 rounds move with the random tie draws, and the
        # test is about the importances, not the draws
        model = Ranker(gbrank.listmle(ties="score"), engine=engine, importance_type=kind, **FAST).fit(
            data.X, data.y, group=data.group)
        imp = model.feature_importances_
        assert imp.shape == (data.n_features,)
        assert imp.sum() == pytest.approx(1.0) and (imp >= 0).all()
        # make_ranking's first two columns here carry the signal, the last six are noise
        assert imp[:2].min() > imp[4:].max()
    if engine == "lightgbm":
        raw = model.booster_.feature_importance("split").astype(float)
    else:
        found = model.booster_.get_score(importance_type="weight")
        raw = np.array([found.get(f"f{i}", 0.0) for i in range(data.n_features)])
    np.testing.assert_allclose(model.feature_importances_, raw / raw.sum())


# ----------------------------------------------------------------------------- eval sets
@pytest.mark.parametrize("engine", ENGINES)
def test_eval_sets_record_gbrank_ndcg(engine, split):
    train, valid, _ = split
    model = Ranker(gbrank.listmle(ties="input"), engine=engine, **FAST)
    model.fit(train.X, train.y, group=train.group, eval_set=[(valid.X, valid.y)], eval_group=[valid.group], eval_at=(3, 10))
    history = model.evals_result_["valid_0"]
    assert list(history) == ["gbrank-ndcg@3", "gbrank-ndcg@10"]
    assert len(history["gbrank-ndcg@10"]) == 20
    final = model.predict(valid.X)
    # XGBoost writes custom metrics through "%f" (6 decimals) into its log
    assert history["gbrank-ndcg@10"][-1] == pytest.approx(ndcg(valid.y, final, valid.group, k=10), abs=1e-6)
    assert history["gbrank-ndcg@3"][-1] == pytest.approx(ndcg(valid.y, final, valid.group, k=3), abs=1e-6)


def test_eval_sets_take_the_dataset_parameters_of_the_training_set(split):
    # LightGBM refuses a validation Dataset built with other min_data_in_leaf than training's
    train, valid, _ = split
    model = Ranker(gbrank.listnet(), engine="lightgbm", n_estimators=3, params={"min_data_in_leaf": 5})
    model.fit(train.X, train.y, group=train.group, eval_set=[(valid.X, valid.y)], eval_group=[valid.group])
    assert len(model.evals_result_["valid_0"]["gbrank-ndcg@10"]) == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_early_stopping_watches_the_first_cutoff_on_the_last_eval_set(engine, split):
    train, valid, _ = split
    model = Ranker(gbrank.listmle(ties="input"), engine=engine, learning_rate=0.3, n_estimators=200, n_jobs=1)
    model.fit(
        train.X,
        train.y,
        group=train.group,
        eval_set=[(train.X, train.y), (valid.X, valid.y)],
        eval_group=[train.group, valid.group],
        eval_at=(5, 1),
        early_stopping_rounds=5,
    )
    watched = np.asarray(model.evals_result_["valid_1"]["gbrank-ndcg@5"])
    assert watched.size < 200, "training should stop before 200 rounds"
    best = int(np.argmax(watched)) + 1
    assert model.best_iteration_ == best
    assert watched.size == best + 5
    assert model.evals_result_["valid_0"]["gbrank-ndcg@5"][-1] > watched.max()  # the train set kept improving
    if engine == "lightgbm":
        expected = model.booster_.predict(valid.X, num_iteration=best, raw_score=True)
    else:
        expected = model.booster_.predict(xgb.DMatrix(valid.X), iteration_range=(0, best), output_margin=True)
    np.testing.assert_allclose(model.predict(valid.X), expected, rtol=1e-6)
    assert model.score(valid.X, valid.y, group=valid.group) == ndcg(valid.y, model.predict(valid.X), valid.group, k=10)


def test_early_stopping_needs_an_eval_set(data):
    with pytest.raises(ValueError, match="needs an eval_set"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group, early_stopping_rounds=3)
    with pytest.raises(ValueError, match="without an eval_set"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group, eval_qid=[data.qid])
    with pytest.raises(ValueError, match="2 entries for 1 eval sets"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group, eval_set=[(data.X, data.y)], eval_qid=[data.qid, data.qid])


# ----------------------------------------------------------------------------- pandas and qid
@pytest.mark.parametrize("engine", ENGINES)
def test_dataframe_with_interleaved_queries_trains_the_same_model(engine, data):
    X = frame(data)
    perm = interleave(data.qid)
    grouped = Ranker(engine=engine, random_state=0, **FAST).fit(X, data.y)
    mixed = Ranker(engine=engine, random_state=0, **FAST).fit(X.iloc[perm], data.y[perm])
    # predictions come back in the caller's row order
    np.testing.assert_array_equal(mixed.predict(X.iloc[perm]), grouped.predict(X)[perm])
    assert mixed.score(X.iloc[perm], data.y[perm]) == grouped.score(X, data.y)
    assert list(mixed.feature_names_in_) == [f"feat{i}" for i in range(data.n_features)]
    assert mixed.n_features_in_ == data.n_features
    # the qid column is optional at predict time and never a feature
    np.testing.assert_array_equal(mixed.predict(X.drop(columns="qid")), mixed.predict(X))
    # a qid array in any order gives the same model as the column
    by_array = Ranker(engine=engine, random_state=0, **FAST).fit(data.X[perm], data.y[perm], qid=data.qid[perm])
    np.testing.assert_array_equal(by_array.predict(data.X), grouped.predict(X))


def test_qid_column_name_is_configurable(data):
    X = frame(data, qid_col="query")
    model = Ranker(qid_col="query", **FAST).fit(X, data.y)
    assert "query" not in model.feature_names_in_
    assert model.score(X, data.y) == model.score(X.drop(columns="query"), data.y, qid=data.qid)
    with pytest.raises(ValueError, match="Ranker needs query groups"):
        Ranker(**FAST).fit(X.drop(columns="query"), data.y)
    # with qid_col=None the column is a feature and groups must come separately
    model = Ranker(qid_col=None, **FAST).fit(X, data.y, qid=data.qid)
    assert "query" in model.feature_names_in_


def test_string_query_ids(data):
    X = frame(data)
    X["qid"] = np.char.add("q", data.qid.astype(str))
    model = Ranker(**FAST).fit(X, data.y)
    assert model.score(X, data.y) > 0.5


# ----------------------------------------------------------------------------- bad input
def test_groups_are_required_and_given_once(data):
    with pytest.raises(ValueError, match=r"Ranker needs query groups: pass group=\[n1, n2, ...\]"):
        Ranker(**FAST).fit(data.X, data.y)
    with pytest.raises(ValueError, match="not both"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group, qid=data.qid)
    with pytest.raises(ValueError, match="given twice"):
        Ranker(**FAST).fit(frame(data), data.y, qid=data.qid)
    with pytest.raises(ValueError, match="group sizes sum to"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group[:-1])
    with pytest.raises(ValueError, match="qid has 3 entries"):
        Ranker(**FAST).fit(data.X, data.y, qid=data.qid[:3])
    model = Ranker(**FAST).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="Ranker needs query groups"):
        model.score(data.X, data.y)


def test_bad_labels_weights_and_params(data):
    y = data.y.copy()
    y[7] = -1
    with pytest.raises(ValueError, match=r"y must be non-negative; y\[7\] = -1"):
        Ranker(**FAST).fit(data.X, y, group=data.group)
    y[7] = np.nan
    with pytest.raises(ValueError, match=r"y contains NaN at row 7 \(query 0\)"):
        Ranker(**FAST).fit(data.X, y, group=data.group)
    with pytest.raises(ValueError, match="zero for every row"):
        Ranker(**FAST).fit(data.X, data.y, group=data.group, sample_weight=np.zeros(len(data)))
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        Ranker(**FAST).fit(data.X[:1], data.y[:1], group=[1])
    with pytest.raises(ValueError, match=r"params may not set \['objective'\]"):
        Ranker(params={"objective": "lambdarank"}).fit(data.X, data.y, group=data.group)
    # LightGBM would take any alias of num_iterations over n_estimators, without a word
    with pytest.raises(ValueError, match=r"params may not set \['num_trees'\]: use objective=, n_estimators="):
        Ranker(n_estimators=10, params={"num_trees": 3}).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match=r"params may not set \['loss', 'metrics'\]"):
        Ranker(params={"loss": "regression", "metrics": "ndcg"}).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="n_estimators must be a positive integer"):
        Ranker(n_estimators=0).fit(data.X, data.y, group=data.group)
    with pytest.raises(ValueError, match="score_at must be a positive integer"):
        Ranker(score_at=0).fit(data.X, data.y, group=data.group)
    X = data.X.copy()
    X[3, 2] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        Ranker(**FAST).fit(X, data.y, group=data.group)


def test_xgboost_weights_are_per_query_lightgbm_per_row(data):
    per_query = np.repeat(np.linspace(0.5, 2.0, data.n_queries), data.group)
    model = Ranker(engine="xgboost", **FAST).fit(data.X, data.y, group=data.group, sample_weight=per_query)
    ref = Ranker(engine="xgboost", **FAST).fit(data.X, data.y, group=data.group)
    assert not np.array_equal(model.predict(data.X), ref.predict(data.X))
    per_row = np.linspace(0.5, 2.0, len(data))
    with pytest.raises(ValueError, match="rows of a query must share one weight"):
        Ranker(engine="xgboost", **FAST).fit(data.X, data.y, group=data.group, sample_weight=per_row)
    Ranker(engine="lightgbm", **FAST).fit(data.X, data.y, group=data.group, sample_weight=per_row)
    # with interleaved query ids the error names the caller's rows, not the grouped ones
    qid = np.array([200, 100] * 4)
    weight = np.ones(8)
    weight[7] = 3.0
    with pytest.raises(ValueError, match="but rows 1 and 7 of one query have 1 and 3"):
        Ranker(engine="xgboost", **FAST).fit(data.X[:8], np.arange(8) % 3, qid=qid, sample_weight=weight)


def test_lightgbm_without_a_usable_feature_says_so():
    X = np.random.default_rng(0).random((12, 2))
    y = np.array([0, 1, 2] * 4, dtype=float)
    with pytest.raises(ValueError, match="no feature it can split on in 12 rows"):
        Ranker(**FAST).fit(X, y, group=[4, 4, 4])
    Ranker(params={"min_data_in_leaf": 1, "min_data_in_bin": 1}, **FAST).fit(X, y, group=[4, 4, 4])


@pytest.mark.parametrize("engine", ENGINES)
def test_float32_and_missing_features(engine, data):
    X = data.X.astype(np.float32)
    X[::7, 1] = np.nan
    model = Ranker(engine=engine, **FAST).fit(X, data.y, group=data.group)
    assert np.isfinite(model.predict(X)).all()


# ----------------------------------------------------------------------------- sklearn API
def test_clone_params_and_pickle(data):
    obj = gbrank.listmle_topk(k=5)
    model = Ranker(obj, engine="xgboost", n_estimators=5, n_jobs=1, params={"max_bin": 64})
    twin = clone(model)
    assert twin.get_params()["objective"] is not obj
    assert repr(twin.get_params()["objective"]) == repr(obj)
    assert twin.get_params()["params"] == {"max_bin": 64}
    twin.set_params(engine="lightgbm", objective=gbrank.listmle(), params=None)
    assert twin.engine == "lightgbm" and model.engine == "xgboost"
    model.fit(data.X, data.y, group=data.group)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(data.X), model.predict(data.X))
    # set_params after fit does not confuse predict: the booster knows its engine
    model.set_params(engine="lightgbm")
    np.testing.assert_array_equal(model.predict(data.X), restored.predict(data.X))


def _rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(np.asarray(X))


def _blocks(n, size=5):
    return np.array([min(size, n - start) for start in range(0, n, size)])


class BlockRanker(Ranker):
    """`Ranker` with one query per block of five rows when the caller gives no groups.

    scikit-learn's estimator checks call ``fit(X, y)`` and ``score(X, y)`` without query
    groups; this lets them exercise the real ``fit``, ``predict`` and ``score``.
    """

    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, **kwargs):
        if group is None and qid is None:
            group = _blocks(_rows(X))
        return super().fit(X, y, group=group, qid=qid, sample_weight=sample_weight, **kwargs)

    def score(self, X, y, group=None, qid=None):
        if group is None and qid is None:
            group = _blocks(_rows(X))
        return super().score(X, y, group=group, qid=qid)


def expected_failures(estimator):
    """The scikit-learn checks that do not apply to a ranker, and why."""
    failures = {
        "check_sample_weight_equivalence_on_dense_data": (
            "ranking losses are not sums over rows: repeating a document changes its query's "
            "list (and the check's row removal/repetition shifts the five-row query blocks)"
        ),
    }
    if estimator.engine == "xgboost":
        failures["check_sample_weights_not_overwritten"] = (
            "XGBoost weights whole queries; the check's weights differ within a query and are "
            "rejected with a ValueError"
        )
        failures["check_sample_weight_equivalence_on_dense_data"] += "; XGBoost also rejects per-row weights"
    return failures


# LightGBM drops features that cannot be split with its default min_data_in_leaf=20 on the
# checks' tiny data sets; the checks are about the API, so allow small leaves.
TINY = {"min_data_in_leaf": 1, "min_data_in_bin": 1}


if NEW_SKLEARN:
    estimator_checks = parametrize_with_checks(
        [
            BlockRanker(engine="lightgbm", n_estimators=5, n_jobs=1, params=TINY),
            BlockRanker(engine="xgboost", n_estimators=5, n_jobs=1),
        ],
        expected_failed_checks=expected_failures,
        xfail_strict=True,
    )
else:
    estimator_checks = pytest.mark.skip(reason=OLD_SKLEARN_SKIP)


@estimator_checks
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@needs_new_sklearn
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_without_groups_every_fitting_check_fails_for_want_of_groups():
    results = check_estimator(Ranker(n_estimators=5, n_jobs=1, params=TINY), on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert failed, "the checks fit without groups; the bare Ranker must refuse"
    for result in failed:
        chain, exc = [], result["exception"]
        while exc is not None:
            chain.append(str(exc))
            exc = exc.__cause__ or exc.__context__
        assert any("needs query groups" in text for text in chain), (result["check_name"], chain[0][:200])
    assert {"check_estimator_cloneable", "check_get_params_invariance", "check_set_params", "check_estimators_unfitted"} <= passed


# ----------------------------------------------------------------------------- cross-validation
def _manual_cv(data, n_splits=3):
    scores = []
    for train, test in GroupKFold(n_splits).split(data.X, data.y, groups=data.qid):
        model = Ranker(**FAST).fit(data.X[train], data.y[train], qid=data.qid[train])
        scores.append(model.score(data.X[test], data.y[test], qid=data.qid[test]))
    return np.array(scores)


def test_group_kfold_with_the_qid_column(data):
    X = frame(data)
    scores = cross_val_score(Ranker(**FAST), X, data.y, groups=X["qid"], cv=GroupKFold(3), error_score="raise")
    np.testing.assert_array_equal(scores, _manual_cv(data))


@needs_new_sklearn
def test_group_kfold_with_metadata_routing(data):
    with sklearn.config_context(enable_metadata_routing=True):
        model = Ranker(**FAST).set_fit_request(qid=True).set_score_request(qid=True)
        scores = cross_val_score(
            model, data.X, data.y, cv=GroupKFold(3), params={"qid": data.qid, "groups": data.qid}, error_score="raise"
        )
    np.testing.assert_array_equal(scores, _manual_cv(data))


@needs_new_sklearn
def test_group_kfold_without_routing_cannot_score(data):
    # fit receives the fold's qid through params, score receives nothing: a clear error
    with pytest.raises(ValueError, match="Ranker needs query groups"):
        cross_val_score(
            Ranker(**FAST), data.X, data.y, groups=data.qid, cv=GroupKFold(3), params={"qid": data.qid}, error_score="raise"
        )
