"""Bad and extreme inputs to the metrics and their engine callbacks (docs/reliability.md).

An error naming the problem and where it is (row and query), or a documented result.
"""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank import metrics
from helpers import TINY_LGB_PARAMS, TINY_XGB_PARAMS, G, S, Y, at_row6, small_data

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

METRICS = {
    "ndcg": metrics.ndcg,
    "map": metrics.mean_average_precision,
    "mrr": metrics.mrr,
    "precision": metrics.precision_at_k,
    "err": metrics.err,
}
GAIN_METRICS = {"ndcg", "err"}  # labels are integers 0..31 (exp2 gain, ERR's stop probability)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(
    "call, message",
    [(lambda f: f(Y, at_row6(S, np.nan), G), r"y_pred contains NaN at row 6 \(query 1\)"),
     (lambda f: f(Y, at_row6(S, -np.inf), G), r"y_pred contains -inf at row 6 \(query 1\)"),
     (lambda f: f(at_row6(Y, -1), S, G), r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (lambda f: f(at_row6(Y, np.nan), S, G), r"y_true contains NaN at row 6 \(query 1\)"),
     (lambda f: f(np.zeros(0), np.zeros(0), []), r"empty input: y_true has no rows"),
     (lambda f: f(Y, S, [4, 4]), r"group sizes sum to 8 but there are 9 rows"),
     (lambda f: f(Y, S, [4, 0, 5]), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda f: f(Y, S, None), r"query groups are required"),
     (lambda f: f(Y, S[:8], G), r"y_pred has 8 rows but the labels have 9")],
    ids=["nan-score", "inf-score", "negative-label", "nan-label", "empty", "group-sum", "zero-group",
         "no-group", "length"],
)
def test_metric_bad_input_is_named(metric, call, message):
    with pytest.raises(ValueError, match=message):
        call(METRICS[metric])


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("bad", [0.5, 32.0])
def test_metric_labels_outside_the_gain_table(metric, bad):
    f = METRICS[metric]
    if metric in GAIN_METRICS:
        with pytest.raises(ValueError, match=r"y_true.*row 6 \(query 1\)"):
            f(at_row6(Y, bad), S, G)
    else:
        # binary measures: relevant means label > relevance_threshold (0)
        assert f(at_row6(Y, bad), S, G) == f(at_row6(Y, 1.0), S, G)


@pytest.mark.parametrize("metric", METRICS)
def test_metric_non_numeric_labels(metric):
    with pytest.raises(TypeError, match=r"y_true must be numeric"):
        METRICS[metric](np.array(list("abcdefghi")), S, G)


@pytest.mark.parametrize("metric", METRICS)
def test_metric_queries_without_relevant_documents(metric):
    f = METRICS[metric]
    np.testing.assert_array_equal(f(np.zeros(9), S, G, per_query=True), [1.0, 1.0])
    np.testing.assert_array_equal(f(np.zeros(9), S, G, per_query=True, no_relevant=0.0), [0.0, 0.0])
    with pytest.warns(RuntimeWarning, match="no query has a relevant document"):
        assert np.isnan(f(np.zeros(9), S, G, no_relevant="exclude"))


@pytest.mark.parametrize("metric", ["ndcg", "map", "mrr", "precision"])
def test_metric_all_equal_and_single_document_queries(metric):
    f = METRICS[metric]
    # every order is ideal when all labels are equal, and for a single document
    np.testing.assert_array_equal(f(np.full(9, 2.0), S, G, per_query=True), [1.0, 1.0])
    assert f(Y, S, [1] * 9) == 1.0


@pytest.mark.parametrize("metric", METRICS)
def test_metric_extreme_scores_keep_the_ranking(metric):
    f = METRICS[metric]
    rng = np.random.default_rng(22)
    n = 10_000
    y = rng.integers(0, 5, size=n).astype(float)
    ranks = rng.permutation(n).astype(float)
    group = [n // 2, n // 2]
    expected = f(y, ranks, group, 10)
    for scale in (1e4, 1e30, 1e300):
        assert f(y, (ranks - n / 2) * scale, group, 10) == expected


@pytest.mark.parametrize("metric", METRICS)
def test_metric_float32_scores_give_the_float64_result(metric):
    s32 = np.random.default_rng(23).normal(size=9).astype(np.float32)
    f = METRICS[metric]
    assert f(Y.astype(np.float32), s32, G) == f(Y, s32.astype(np.float64), G)


def test_metric_callbacks_on_data_without_groups():
    X, y, sizes = small_data(seed=24)
    m = metrics.make_metrics(["ndcg@5"])
    with pytest.raises(ValueError, match=r"query groups are required"):
        lgb.train({**TINY_LGB_PARAMS, "objective": gbrank.listmle()}, lgb.Dataset(X, y, group=sizes),
                  num_boost_round=1, valid_sets=[lgb.Dataset(X, y)], feval=m.lightgbm)
    with pytest.raises(ValueError, match=r"the DMatrix has no query groups"):
        xgb.train(TINY_XGB_PARAMS, xgb.DMatrix(X, y, group=sizes), num_boost_round=1, obj=gbrank.listmle(),
                  evals=[(xgb.DMatrix(X, y), "valid")], custom_metric=m.xgboost)
