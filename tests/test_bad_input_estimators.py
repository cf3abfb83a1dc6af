"""Bad and extreme input to the estimators, gbrank.Ranker and gbrank.NDCGBoost
(docs/reliability.md): an error naming the problem and the caller's row, or a documented result.
"""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from helpers import at_row6, small_data

# --------------------------------------------------------------------------- gbrank.Ranker
RANKER_ENGINES = ["lightgbm", "xgboost"]


def ranker(engine, objective=None, **kwargs):
    params = {"min_data_in_leaf": 2} if engine == "lightgbm" else {}
    return gbrank.Ranker(objective if objective is not None else gbrank.listmle(), engine=engine,
                         n_estimators=3, n_jobs=1, random_state=0, params=params, **kwargs)


def interleaved_qid(sizes):
    """Query ids whose rows take turns (q0, q1, q2, q0, ...), and the grouped order of rows."""
    qid = np.repeat(np.arange(len(sizes)), sizes)
    position = np.arange(len(qid)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return qid, np.lexsort((qid, position))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_nan_features_are_missing_values(engine):
    X, y, sizes = small_data(seed=30)
    X[::3, 1] = np.nan
    model = ranker(engine).fit(X, y, group=sizes)
    assert np.isfinite(model.predict(X)).all()
    assert np.isfinite(model.predict(np.full((2, X.shape[1]), np.nan))).all()


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_refuses_infinite_features(engine):
    X, y, sizes = small_data(seed=31)
    X[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"Input X contains infinity"):
        ranker(engine).fit(X, y, group=sizes)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
@pytest.mark.parametrize(
    "fit, message",
    [(lambda m, X, y, g: m.fit(X, at_row6(y, -1), group=g), r"y must be non-negative; y\[6\] = -1 at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, y, group=g[:-1]), r"group sizes sum to \d+ but there are \d+ rows"),
     (lambda m, X, y, g: m.fit(X, y, group=np.insert(g, 1, 0)), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda m, X, y, g: m.fit(X, y), r"Ranker needs query groups: pass group="),
     (lambda m, X, y, g: m.fit(X, y, group=g, qid=np.repeat(np.arange(len(g)), g)), r"pass query groups once"),
     (lambda m, X, y, g: m.fit(X, y, qid=at_row6(np.repeat(np.arange(len(g)), g), np.nan)), r"qid contains .*nan.* at row 6; query ids must be finite"),
     (lambda m, X, y, g: m.fit(X[:0], y[:0], group=[]), r"Found array with 0 sample\(s\)"),
     (lambda m, X, y, g: m.fit(X[:1], y[:1], group=[1]), r"Found array with 1 sample\(s\).*minimum of 2"),
     (lambda m, X, y, g: m.fit(X, y[:-1], group=g), r"inconsistent numbers of samples"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=np.zeros(len(y))), r"sample_weight is zero for every row"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=at_row6(np.ones(len(y)), -1)), r"sample_weight must be non-negative; sample_weight\[6\] = -1"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=at_row6(np.ones(len(y)), np.nan)), r"sample_weight contains NaN at row 6"),
     (lambda m, X, y, g: m.fit(X, y, group=g, sample_weight=np.ones(len(y) - 1)), r"sample_weight has shape \(\d+,\) but there are \d+ rows")],
    ids=["negative-label", "group-sum", "zero-group", "no-groups", "groups-twice", "nan-qid", "empty", "one-row",
         "label-length", "zero-weights", "negative-weight", "nan-weight", "weight-length"],
)
def test_ranker_bad_input_is_named(engine, fit, message):
    X, y, _ = small_data(seed=32)
    sizes = np.array([4, 5, 6, 7])
    X, y = X[: sizes.sum()], y[: sizes.sum()]
    with pytest.raises(ValueError, match=message):
        fit(ranker(engine), X, y, sizes)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_nan_label_is_named(engine):
    X, y, sizes = small_data(seed=33)
    query = int(np.searchsorted(np.cumsum(sizes), 6, side="right"))
    with pytest.raises(ValueError, match=rf"y contains NaN at row 6 \(query {query}\)"):
        ranker(engine).fit(X, at_row6(y, np.nan), group=sizes)


@pytest.mark.parametrize("objective, bad", [("listmle", -1.0), ("wlistmle", 40.0)])
def test_ranker_label_errors_name_the_callers_row(objective, bad):
    X, y, sizes = small_data(seed=34)
    qid, order = interleaved_qid(sizes)
    X, y, qid = X[order], y[order], qid[order]  # rows of the queries take turns
    y[7] = bad
    with pytest.raises(ValueError, match=r"\[7\] = .* at row 7\b"):
        ranker("lightgbm", getattr(gbrank, objective)()).fit(X, y, qid=qid)


@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_trains_the_same_model_for_any_row_order_of_the_queries(engine):
    X, y, sizes = small_data(seed=35)
    qid = np.concatenate([np.full(n, q) for q, n in enumerate(sizes)])
    grouped = ranker(engine).fit(X, y, qid=qid)
    _, order = interleaved_qid(sizes)
    shuffled = ranker(engine).fit(X[order], y[order], qid=qid[order])
    np.testing.assert_array_equal(shuffled.predict(X), grouped.predict(X))
    # contiguous but descending ids: queries are taken by ascending id
    descending = ranker(engine).fit(X, y, qid=qid.max() - qid)
    assert np.isfinite(descending.predict(X)).all()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_ranker_data_without_order_trains_a_constant_model(engine, labels):
    X, y, sizes = small_data(seed=36)
    if labels == "all-equal":
        y = np.full_like(y, 2.0)
    else:
        sizes = np.ones(len(y), dtype=int)
    pred = ranker(engine).fit(X, y, group=sizes).predict(X)
    assert np.isfinite(pred).all() and np.unique(pred).size == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_float32_and_float64_features_give_the_same_model(engine):
    X, y, sizes = small_data(seed=37)
    X32 = X.astype(np.float32)
    p32 = ranker(engine).fit(X32, y, group=sizes).predict(X32)
    p64 = ranker(engine).fit(X32.astype(np.float64), y, group=sizes).predict(X32.astype(np.float64))
    np.testing.assert_array_equal(p32, p64)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", RANKER_ENGINES)
def test_ranker_zero_weights_on_some_queries(engine):
    X, y, sizes = small_data(seed=38)
    weight = np.ones(len(y))
    weight[: sizes[0]] = 0.0
    assert np.isfinite(ranker(engine).fit(X, y, group=sizes, sample_weight=weight).predict(X)).all()


# --------------------------------------------------------------------------- gbrank.NDCGBoost
def ndcg_boost_model(**kwargs):
    return gbrank.NDCGBoost(n_estimators=3, **kwargs)


@pytest.mark.parametrize(
    "fit, error, message",
    [(lambda m, X, y, g: m.fit(np.where(X > 1, np.nan, X), y, group=g), ValueError, r"Input X contains NaN"),
     (lambda m, X, y, g: m.fit(np.where(X > 1, np.inf, X), y, group=g), ValueError, r"Input X contains infinity"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, np.nan), group=g), ValueError, r"y_true contains NaN at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, -1), group=g), ValueError, r"y_true must be non-negative; y_true\[6\] = -1 at row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, 0.5), group=g), ValueError, r"must hold integers with gain='exp2'.*row 6 \(query 1\)"),
     (lambda m, X, y, g: m.fit(X, at_row6(y, 32), group=g), ValueError, r"y_true\[6\] = 32 at row 6 \(query 1\) exceeds the largest supported label 31"),
     (lambda m, X, y, g: m.fit(X, y), ValueError, r"pass exactly one of group= \(sizes\) or qid="),
     (lambda m, X, y, g: m.fit(X, y, group=g[:-1]), ValueError, r"group sizes sum to \d+ but there are \d+ rows"),
     (lambda m, X, y, g: m.fit(X, y, group=np.insert(g, 1, 0)), ValueError, r"group\[1\] = 0 \(query 1 has no documents\)"),
     (lambda m, X, y, g: m.fit(X, y, qid=np.arange(len(y)) % 2), ValueError, r"contiguous: qid 0 starts blocks at rows 0 and 2"),
     (lambda m, X, y, g: m.fit(X[:0], y[:0], group=[]), ValueError, r"Found array with 0 sample\(s\)"),
     (lambda m, X, y, g: m.fit(X, y[:-1], group=g), ValueError, r"y must be one-dimensional with \d+ entries"),
     (lambda m, X, y, g: m.fit(X, y, group=g).predict(np.full((2, X.shape[1]), np.nan)), ValueError, r"Input X contains NaN")],
    ids=["nan-feature", "inf-feature", "nan-label", "negative-label", "non-integer-label", "label-above-31",
         "no-groups", "group-sum", "zero-group", "non-contiguous-qid", "empty", "label-length", "nan-at-predict"],
)
def test_ndcg_boost_bad_input_is_named(fit, error, message):
    X, y, _ = small_data(seed=40)
    sizes = np.array([4, 5, 6, 7])
    X, y = X[: sizes.sum()], y[: sizes.sum()]
    with pytest.raises(error, match=message):
        fit(ndcg_boost_model(), X, y, sizes)


def test_ndcg_boost_non_numeric_labels():
    X, y, sizes = small_data(seed=41)
    with pytest.raises(TypeError, match=r"y_true must be numeric"):
        ndcg_boost_model().fit(X, np.array(["a"] * len(y)), group=sizes)


def test_ndcg_boost_unsorted_qid_is_the_group_sizes():
    X, y, sizes = small_data(seed=42)
    qid = np.repeat(np.arange(len(sizes))[::-1] * 7, sizes)  # contiguous, descending ids
    by_qid = ndcg_boost_model().fit(X, y, qid=qid)
    by_group = ndcg_boost_model().fit(X, y, group=sizes)
    np.testing.assert_array_equal(by_qid.predict(X), by_group.predict(X))


@pytest.mark.parametrize("labels", ["all-equal", "no-relevant", "single-document"])
def test_ndcg_boost_data_without_order_fits_no_stump(labels):
    X, y, sizes = small_data(seed=43)
    if labels == "all-equal":
        y = np.full_like(y, 2.0)
    elif labels == "no-relevant":
        y = np.zeros_like(y)
    else:
        sizes = np.ones(len(y), dtype=int)
    model = ndcg_boost_model().fit(X, y, group=sizes)
    assert model.n_estimators_ == 0
    np.testing.assert_array_equal(model.predict(X), 0.0)


def test_ndcg_boost_float32_huge_features_and_a_long_query():
    X, y, sizes = small_data(seed=44)
    X32 = X.astype(np.float32)
    a = ndcg_boost_model().fit(X32, y, group=sizes).predict(X32)
    np.testing.assert_array_equal(a, ndcg_boost_model().fit(X32.astype(np.float64), y, group=sizes).predict(X32))
    # stumps compare features with thresholds: any finite magnitude works
    huge = ndcg_boost_model().fit(X * 1e300, y, group=sizes)
    np.testing.assert_array_equal(huge.predict(X * 1e300), ndcg_boost_model().fit(X, y, group=sizes).predict(X))
    rng = np.random.default_rng(45)
    n = 10_000
    Xl = rng.normal(size=(n, 3))
    yl = np.clip(np.round(Xl[:, 0] + rng.normal(size=n) + 1), 0, 4)
    model = gbrank.NDCGBoost(n_estimators=2).fit(Xl, yl, group=[n])
    assert model.n_estimators_ == 2 and np.isfinite(model.predict(Xl)).all()
    assert model.history_["M"][-1] < model.initial_M_
