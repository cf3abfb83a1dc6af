"""gbrank metrics inside LightGBM and XGBoost, against the engines' built-in metrics.

The built-in ``ndcg@k`` and ``map@k`` (and XGBoost's ``pre@k``) are evaluated by the engines
on the same predictions as gbrank's callbacks, every iteration, on real LETOR data (skipped
when absent) and on synthetic data made here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gbrank.groups import qid_to_sizes
from gbrank.metrics import (
    EngineMetrics,
    lgbm_ranker_metric,
    lightgbm_feval,
    make_metrics,
    mean_average_precision,
    ndcg,
    precision_at_k,
    xgboost_metric,
)

KS = (1, 3, 5, 10)


def synthetic(seed: int, n_queries: int = 80):
    """Graded labels 0..3 from a nonlinear latent relevance, with queries without relevant
    documents and single-document queries among the first 50 (training) and the rest."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 40, n_queries)
    sizes[[q for q in (5, 55, 70) if q < n_queries]] = 1
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6))
    latent = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.3 * X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    labels = np.digitize(latent, np.quantile(latent, [0.5, 0.75, 0.9])).astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    for q in (2, 60, 75):
        if q < n_queries:
            labels[offsets[q] : offsets[q + 1]] = 0.0
    return X, labels, sizes


def split_train_valid(X, y, sizes, n_train_queries):
    cut = int(np.sum(sizes[:n_train_queries]))
    return (X[:cut], y[:cut], sizes[:n_train_queries]), (X[cut:], y[cut:], sizes[n_train_queries:])


def load_svmlight_split(path, n_features=None):
    from sklearn.datasets import load_svmlight_file

    X, y, qid = load_svmlight_file(str(path), query_id=True, n_features=n_features)
    return X.toarray(), y, qid_to_sizes(qid)


@pytest.fixture(scope="module")
def synthetic_data():
    X, y, sizes = synthetic(0)
    return split_train_valid(X, y, sizes, 50)


@pytest.fixture(scope="module")
def mq2008(letor_path):
    train = load_svmlight_split(letor_path("letor4_mq2008/Fold1/train.txt.gz"))
    valid = load_svmlight_split(
        letor_path("letor4_mq2008/Fold1/vali.txt.gz"), n_features=train[0].shape[1]
    )
    return train, valid


@pytest.fixture(scope="module")
def lightgbm_example(letor_path):
    from sklearn.datasets import load_svmlight_file

    out = []
    for split in ("train", "test"):
        X, y = load_svmlight_file(
            str(letor_path(f"lightgbm_lambdarank_example/rank.{split}.gz")), n_features=300
        )
        sizes = np.loadtxt(
            letor_path(f"lightgbm_lambdarank_example/rank.{split}.query.gz"), dtype=np.int64
        )
        out.append((X.toarray(), y, sizes))
    return tuple(out)


DATASETS = ["synthetic_data", "mq2008", "lightgbm_example"]


def builtin_names(kinds=("ndcg", "map")):
    return [f"{kind}@{k}" for kind in kinds for k in KS]


# ---------------------------------------------------------------------------------------
# LightGBM


@pytest.mark.parametrize("dataset", DATASETS)
def test_lightgbm_feval_equals_builtin_ndcg_and_map(dataset, request):
    lgb = pytest.importorskip("lightgbm")
    (Xt, yt, gt), (Xv, yv, gv) = request.getfixturevalue(dataset)
    metrics = make_metrics(builtin_names())
    params = {
        "objective": "lambdarank",
        "metric": ["ndcg", "map"],
        "eval_at": list(KS),
        "num_leaves": 15,
        "learning_rate": 0.2,
        "min_data_in_leaf": 5,
        "verbose": -1,
        "deterministic": True,
    }
    dtrain = lgb.Dataset(Xt, yt, group=gt)
    dvalid = lgb.Dataset(Xv, yv, group=gv, reference=dtrain)
    history = {}
    booster = lgb.train(
        params,
        dtrain,
        num_boost_round=8,
        valid_sets=[dvalid],
        valid_names=["valid"],
        feval=metrics.lightgbm,
        callbacks=[lgb.record_evaluation(history)],
        keep_training_booster=True,
    )
    valid = history["valid"]
    for name in builtin_names():
        assert len(valid[name]) == 8
        np.testing.assert_allclose(valid["gbrank-" + name], valid[name], rtol=0, atol=1e-6)
    # The trained model's predictions, evaluated by both outside training.
    preds = booster.predict(Xv)
    builtin = {r[1]: r[2] for r in booster.eval(dvalid, "valid")}
    for k in KS:
        assert ndcg(yv, preds, gv, k) == pytest.approx(builtin[f"ndcg@{k}"], abs=1e-6)
        assert mean_average_precision(yv, preds, gv, k) == pytest.approx(
            builtin[f"map@{k}"], abs=1e-6
        )
    # The metric is not constant, so the comparison above had something to compare.
    assert np.ptp(valid["ndcg@10"]) > 0 or np.ptp(valid["map@10"]) > 0


def test_lightgbm_threshold_half_equals_default_on_integer_labels(synthetic_data):
    """LightGBM calls a document relevant when label > 0.5; for integer labels gbrank's
    default (label > 0) is the same."""
    _, (_, yv, gv) = synthetic_data
    preds = np.random.default_rng(1).normal(size=yv.size)
    assert mean_average_precision(
        yv, preds, gv, 5, relevance_threshold=0.5
    ) == mean_average_precision(yv, preds, gv, 5)


@pytest.mark.parametrize("dataset", ["synthetic_data", "mq2008"])
def test_lgbm_ranker_eval_metric_equals_builtin(dataset, request):
    lgb = pytest.importorskip("lightgbm")
    (Xt, yt, gt), (Xv, yv, gv) = request.getfixturevalue(dataset)
    model = lgb.LGBMRanker(
        n_estimators=6, num_leaves=15, learning_rate=0.2, min_child_samples=5, verbose=-1
    )
    import inspect

    if "eval_X" in inspect.signature(model.fit).parameters:
        eval_data = {"eval_X": (Xv,), "eval_y": (yv,)}
    else:
        eval_data = {"eval_set": [(Xv, yv)]}
    model.fit(
        Xt,
        yt,
        group=gt,
        eval_group=[gv],
        **eval_data,
        eval_at=[1, 3, 5],
        eval_metric=lgbm_ranker_metric(["ndcg@1", "ndcg@3", "ndcg@5"]),
    )
    result = model.evals_result_["valid_0"]
    for k in (1, 3, 5):
        assert len(result[f"gbrank-ndcg@{k}"]) == 6
        np.testing.assert_allclose(
            result[f"gbrank-ndcg@{k}"], result[f"ndcg@{k}"], rtol=0, atol=1e-6
        )


def test_lightgbm_early_stopping_maximizes(synthetic_data):
    lgb = pytest.importorskip("lightgbm")
    (Xt, yt, gt), (Xv, yv, gv) = synthetic_data
    history = {}
    booster = lgb.train(
        {
            "objective": "lambdarank",
            "metric": "None",
            "learning_rate": 0.5,
            "num_leaves": 31,
            "verbose": -1,
        },
        lgb.Dataset(Xt, yt, group=gt),
        num_boost_round=60,
        valid_sets=[lgb.Dataset(Xv, yv, group=gv)],
        valid_names=["valid"],
        feval=lightgbm_feval(["ndcg@3"]),
        callbacks=[lgb.early_stopping(3, verbose=False), lgb.record_evaluation(history)],
    )
    curve = history["valid"]["gbrank-ndcg@3"]
    assert np.ptp(curve) > 0
    assert booster.best_iteration == int(np.argmax(curve)) + 1
    assert booster.best_score["valid"]["gbrank-ndcg@3"] == max(curve)


# ---------------------------------------------------------------------------------------
# XGBoost


def parse_xgb_eval(text: str) -> dict[str, float]:
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"\t[^-\t]+-([^:\t]+):([-0-9.e+]+)", text)
    }


@pytest.mark.parametrize("dataset", DATASETS)
def test_xgboost_custom_metric_equals_builtin_ndcg(dataset, request):
    xgb = pytest.importorskip("xgboost")
    (Xt, yt, gt), (Xv, yv, gv) = request.getfixturevalue(dataset)
    specs = [f"ndcg@{k}" for k in KS]
    specs += [(f"ndcg@{k}", {"no_relevant": 0.0, "name": f"gbrank-ndcg@{k}-"}) for k in KS]
    metrics = make_metrics(specs)
    builtin = [f"ndcg@{k}" for k in KS] + [f"ndcg@{k}-" for k in KS]
    dtrain = xgb.DMatrix(Xt, yt, group=gt)
    dvalid = xgb.DMatrix(Xv, yv, group=gv)
    history = {}
    booster = xgb.train(
        {
            "objective": "rank:ndcg",
            "eval_metric": builtin,
            "max_depth": 4,
            "eta": 0.3,
            "nthread": 2,
        },
        dtrain,
        num_boost_round=8,
        evals=[(dvalid, "valid")],
        custom_metric=metrics.xgboost,
        evals_result=history,
    )
    valid = history["valid"]
    pairs = list(zip(builtin, metrics.names))
    for theirs, ours in pairs:
        assert len(valid[ours]) == 8
        # XGBoost prints custom metrics with 6 decimals.
        np.testing.assert_allclose(valid[ours], valid[theirs], rtol=0, atol=1e-6)
    # Full precision on the final model's predictions.
    preds = booster.predict(dvalid, output_margin=True)
    full = parse_xgb_eval(booster.eval(dvalid, "valid"))
    for (theirs, ours), (_, value) in zip(pairs, metrics.evaluate(yv, preds, gv)):
        assert value == pytest.approx(full[theirs], abs=1e-9), theirs


@pytest.mark.parametrize("dataset", DATASETS)
def test_xgboost_custom_metric_equals_builtin_map_and_pre(dataset, request):
    """XGBoost's map and pre need binary labels: binarize at label > 0. XGBoost's "map"
    without a cut-off stops at rank 32 (its default truncation), so it is gbrank's map@32."""
    xgb = pytest.importorskip("xgboost")
    (Xt, yt, gt), (Xv, yv, gv) = request.getfixturevalue(dataset)
    yt, yv = (yt > 0).astype(np.float64), (yv > 0).astype(np.float64)
    specs = [f"map@{k}" for k in KS] + [
        "map@32",
        ("map@5", {"no_relevant": 0.0, "name": "gbrank-map@5-"}),
    ]
    specs += [(f"precision@{k}", {"divide_by": "min_kn", "no_relevant": 0.0}) for k in KS]
    builtin = [f"map@{k}" for k in KS] + ["map", "map@5-"] + [f"pre@{k}" for k in KS]
    metrics = make_metrics(specs)
    dvalid = xgb.DMatrix(Xv, yv, group=gv)
    history = {}
    booster = xgb.train(
        {"objective": "rank:map", "eval_metric": builtin, "max_depth": 4, "eta": 0.3, "nthread": 2},
        xgb.DMatrix(Xt, yt, group=gt),
        num_boost_round=8,
        evals=[(dvalid, "valid")],
        custom_metric=metrics.xgboost,
        evals_result=history,
    )
    for theirs, ours in zip(builtin, metrics.names):
        np.testing.assert_allclose(
            history["valid"][ours], history["valid"][theirs], rtol=0, atol=1e-6
        )
    preds = booster.predict(dvalid, output_margin=True)
    full = parse_xgb_eval(booster.eval(dvalid, "valid"))
    for theirs, (_, value) in zip(builtin, metrics.evaluate(yv, preds, gv)):
        assert value == pytest.approx(full[theirs], abs=1e-9), theirs


def test_xgboost_pre_at_k_convention(synthetic_data):
    """XGBoost divides pre@k by min(k, n) and gives 0 to a query without relevant documents."""
    _, (_, yv, gv) = synthetic_data
    preds = np.random.default_rng(2).permutation(yv.size).astype(np.float32)
    shrink = precision_at_k(yv, preds, gv, 10, divide_by="min_kn", no_relevant=0.0)
    assert shrink > precision_at_k(yv, preds, gv, 10, no_relevant=0.0)


def _train_xgboost(synthetic_data, **kwargs):
    """100 rounds of XGBoost's pairwise objective, evaluated on the validation set; returns
    the booster and the evaluation history."""
    import xgboost as xgb

    (Xt, yt, gt), (Xv, yv, gv) = synthetic_data
    history = {}
    params = {
        "objective": "rank:pairwise",
        "eta": 1.0,
        "max_depth": 6,
        "nthread": 2,
        "disable_default_eval_metric": 1,
    }
    booster = xgb.train(
        params,
        xgb.DMatrix(Xt, yt, group=gt),
        num_boost_round=100,
        evals=[(xgb.DMatrix(Xv, yv, group=gv), "valid")],
        evals_result=history,
        **kwargs,
    )
    return booster, history


def test_xgboost_early_stopping_callback_maximizes(synthetic_data):
    pytest.importorskip("xgboost")
    # gbrank's rule: the first metric of the list on the last eval set
    metrics = make_metrics(["ndcg@3", "map@3"])
    callback = metrics.xgboost_early_stopping(3)
    assert callback.maximize is True and callback.metric_name == "gbrank-ndcg@3"
    booster, history = _train_xgboost(
        synthetic_data, custom_metric=metrics.xgboost, callbacks=[callback]
    )
    curve = history["valid"]["gbrank-ndcg@3"]
    assert np.ptp(curve) > 0
    assert booster.best_iteration == int(np.argmax(curve))
    assert booster.best_score == pytest.approx(max(curve))


def test_xgboost_maximize_flag_works_with_the_names(synthetic_data):
    """The alternative to the callback: xgb.train(..., maximize=True)."""
    pytest.importorskip("xgboost")
    booster, history = _train_xgboost(
        synthetic_data,
        custom_metric=xgboost_metric(["mrr", "err@5"]),
        early_stopping_rounds=3,
        maximize=True,
    )
    curve = history["valid"]["gbrank-err@5"]
    assert np.ptp(curve) > 0
    assert booster.best_iteration == int(np.argmax(curve))


def test_xgboost_groups_come_from_the_dmatrix():
    xgb = pytest.importorskip("xgboost")
    X, y, sizes = synthetic(4, n_queries=10)
    qid = np.repeat(np.arange(sizes.size), sizes)
    preds = np.random.default_rng(0).normal(size=y.size).astype(np.float32)
    metrics = make_metrics(["ndcg@5"])
    by_qid = metrics.xgboost(preds, xgb.DMatrix(X, y, qid=qid))
    by_group = metrics.xgboost(preds, xgb.DMatrix(X, y, group=sizes))
    assert by_qid == by_group == [("gbrank-ndcg@5", ndcg(y, preds, sizes, 5))]
    with pytest.raises(ValueError, match="the DMatrix has no query groups"):
        metrics.xgboost(preds, xgb.DMatrix(X, y))
    # XGBRanker calls eval_metric(y_true, y_pred): no groups reach it
    with pytest.raises(TypeError, match="XGBRanker calls eval_metric.*xgb.train"):
        xgb.XGBRanker(n_estimators=1, eval_metric=metrics.xgboost).fit(X, y, qid=qid, eval_set=[(X, y)],
                                                                      eval_qid=[qid])


def test_lightgbm_feval_refuses_folds_that_cut_queries():
    # lgb.cv keeps queries whole only for lambdarank and rank_xendcg
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes = synthetic(5, n_queries=20)
    metrics = make_metrics(["ndcg@5"])
    params = {"objective": "binary", "metric": "None", "verbose": -1, "num_threads": 1}
    with pytest.raises(ValueError, match=r"keeps \d+ of the \d+ rows of query.*a ranking metric needs whole queries"):
        lgb.cv(params, lgb.Dataset(X, (y > 0).astype(float), group=sizes), 2, nfold=3, feval=metrics.lightgbm)
    # a mean over rows needs none; whole-query folds pass
    lgb.cv(params, lgb.Dataset(X, (y > 0).astype(float), group=sizes), 2, nfold=3,
           feval=make_metrics([("logloss", {"probability": True})]).lightgbm)
    folds = lgb.cv({**params, "objective": "lambdarank"}, lgb.Dataset(X, y, group=sizes), 2, nfold=3,
                   feval=metrics.lightgbm)
    assert len(folds["valid gbrank-ndcg@5-mean"]) == 2


# ---------------------------------------------------------------------------------------
# make_metrics


def test_make_metrics_names_aliases_and_values():
    metrics = make_metrics(
        ["ndcg@10", "map@5", "mrr", "p@3", "pre@4", "precision", "recip_rank@2", "err@10", "NDCG"]
    )
    assert isinstance(metrics, EngineMetrics)
    assert metrics.names == (
        "gbrank-ndcg@10",
        "gbrank-map@5",
        "gbrank-mrr",
        "gbrank-precision@3",
        "gbrank-precision@4",
        "gbrank-precision",
        "gbrank-mrr@2",
        "gbrank-err@10",
        "gbrank-ndcg",
    )
    assert metrics.higher_is_better is True
    X, y, sizes = synthetic(1, n_queries=20)
    preds = np.random.default_rng(0).normal(size=y.size)
    values = dict(metrics.evaluate(y, preds, sizes))
    assert values["gbrank-ndcg@10"] == ndcg(y, preds, sizes, 10)
    assert values["gbrank-map@5"] == mean_average_precision(y, preds, sizes, 5)
    assert values["gbrank-precision@3"] == precision_at_k(y, preds, sizes, 3)


def test_make_metrics_routes_conventions():
    X, y, sizes = synthetic(2, n_queries=20)
    preds = np.random.default_rng(0).normal(size=y.size)
    metrics = make_metrics(
        ["ndcg@5", "map@5", ("map@3", {"denominator": "R"})],
        prefix="",
        gain="linear",
        no_relevant=0.0,
        ties="pessimistic",
    )
    values = metrics.evaluate(y, preds, sizes)
    assert [name for name, _ in values] == ["ndcg@5", "map@5", "map@3"]
    assert values[0][1] == ndcg(
        y, preds, sizes, 5, gain="linear", no_relevant=0.0, ties="pessimistic"
    )
    assert values[1][1] == mean_average_precision(
        y, preds, sizes, 5, no_relevant=0.0, ties="pessimistic"
    )
    assert values[2][1] == mean_average_precision(
        y, preds, sizes, 3, denominator="R", no_relevant=0.0, ties="pessimistic"
    )


def test_lightgbm_adapters_return_higher_is_better_tuples():
    X, y, sizes = synthetic(3, n_queries=10)
    preds = np.random.default_rng(0).normal(size=y.size)
    out = make_metrics(["ndcg@3", "mrr"]).lgbm_ranker(y, preds, None, sizes)
    assert out == [
        ("gbrank-ndcg@3", ndcg(y, preds, sizes, 3), True),
        ("gbrank-mrr", pytest.approx(out[1][1]), True),
    ]
    import inspect

    # LightGBM's sklearn wrapper dispatches on the number of parameters.
    assert len(inspect.signature(make_metrics("ndcg").lgbm_ranker).parameters) == 4
    assert len(inspect.signature(make_metrics("ndcg").lightgbm).parameters) == 2


def test_weights_are_reported_as_ignored():
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes = synthetic(3, n_queries=10)
    data = lgb.Dataset(X, y, group=sizes, weight=np.linspace(0.5, 2.0, y.size)).construct()
    with pytest.warns(UserWarning, match="ignore them"):
        make_metrics("ndcg@3").lightgbm(np.zeros(y.size), data)
    xgb = pytest.importorskip("xgboost")
    dmat = xgb.DMatrix(X, y, group=sizes, weight=np.linspace(0.5, 2.0, sizes.size))
    with pytest.warns(UserWarning, match="ignore them"):
        make_metrics("ndcg@3").xgboost(np.zeros(y.size, dtype=np.float32), dmat)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (
            lambda: make_metrics(["ndcg@10", "ndcg@10"]),
            ValueError,
            r"unique; repeated: \['gbrank-ndcg@10'\]",
        ),
        (lambda: make_metrics(["ndcg@x"]), ValueError, "unknown metric spec 'ndcg@x'"),
        (lambda: make_metrics(["auc"]), ValueError, "unknown metric spec 'auc'"),
        (lambda: make_metrics(["ndcg@0"]), ValueError, "k must be a positive integer"),
        (lambda: make_metrics([]), ValueError, "at least one metric"),
        (
            lambda: make_metrics(["ndcg"], gian="linear"),
            TypeError,
            r"unknown metric conventions \['gian'\]",
        ),
        (
            lambda: make_metrics(["map@5"], gain="linear"),
            TypeError,
            r"conventions \['gain'\] are taken by none",
        ),
        (lambda: make_metrics([("map@5", {"gain": "linear"})]), TypeError, "does not take"),
        (lambda: make_metrics(["ndcg"], ties="bogus"), ValueError, "ties must be"),
        (lambda: make_metrics(["err@5"], ties="average"), NotImplementedError, "ERR"),
        (lambda: make_metrics(["ndcg"], discount=-2.0), ValueError, "beta > 0"),
        (lambda: make_metrics(["ndcg"], prefix="gb:"), ValueError, r"free of ':'.*\['gb:ndcg'\]"),
        (lambda: make_metrics([("ndcg", {"name": "a:b"})]), ValueError, "free of ':'"),
        (lambda: make_metrics([42]), TypeError, "must be a string"),
    ],
)
def test_make_metrics_rejects_bad_specs_before_training(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_engine_metrics_pickle_for_distributed_workers():
    import pickle

    metrics = make_metrics(["ndcg@3", ("map@2", {"denominator": "R"})], ties="pessimistic")
    X, y, sizes = synthetic(5, n_queries=10)
    preds = np.random.default_rng(0).normal(size=y.size)
    clone = pickle.loads(pickle.dumps(metrics))
    assert clone.names == metrics.names
    assert clone.evaluate(y, preds, sizes) == metrics.evaluate(y, preds, sizes)
    feval = pickle.loads(pickle.dumps(metrics.lgbm_ranker))
    assert feval(y, preds, None, sizes) == metrics.lgbm_ranker(y, preds, None, sizes)
