"""Bad and extreme data through the engine paths (docs/reliability.md, second table).

``lgb.train(params={"objective": obj})``, ``LGBMRanker(objective=obj)`` and
``xgb.train(obj=obj)`` with every registered objective and example setting: an error naming
the problem, or a documented result.
"""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.groups import qid_to_sizes
from helpers import ENGINES, TINY_LGB_PARAMS, TINY_XGB_PARAMS, Spy, small_data, train_on
from objective_cases import case_data, ids, label_kind, objective_cases

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


def catalogue():
    """The cases of this file: every registered objective and example."""
    return list(objective_cases().values())


CASES = catalogue()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nan_features_are_missing_values(engine, case):
    X, y, sizes = case_data(case, small_data(seed=1))
    X[::4, 0] = np.nan
    X[1::5, 2] = np.nan
    _, pred = train_on(engine, case.build(), X, y, sizes)
    assert np.isfinite(pred).all()


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_infinite_features(case):
    X, y, sizes = case_data(case, small_data(seed=2))
    X[3, 1] = np.inf
    X[7, 1] = -np.inf
    # LightGBM bins +-inf with the extreme values
    for engine in ("lgb.train", "LGBMRanker"):
        assert np.isfinite(train_on(engine, case.build(), X, y, sizes)[1]).all()
    # XGBoost refuses them when building the DMatrix
    with pytest.raises(xgb.core.XGBoostError, match="Input data contains `inf`"):
        train_on("xgb.train", case.build(), X, y, sizes)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_nan_initial_scores(case):
    X, y, sizes = case_data(case, small_data(seed=3))
    init = np.zeros(len(y))
    init[int(sizes[0]) + 2] = np.nan
    where = rf"row {int(sizes[0]) + 2} \(query 1\)"
    with pytest.raises(ValueError, match=rf"y_pred contains NaN at {where}"):
        train_on("xgb.train", case.build(), X, y, sizes, init_score=init)
    # LightGBM replaces a NaN initial score by 0 when it builds the Dataset
    spy = Spy(case.build())
    lgb.train({**TINY_LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes, init_score=init), num_boost_round=1)
    assert spy.seen[0][0][int(sizes[0]) + 2] == 0.0


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_huge_initial_scores(engine, case):
    X, y, sizes = case_data(case, small_data(seed=4))
    init = np.where(np.arange(len(y)) % 2, 1e30, -1e30)
    spy = Spy(case.build())
    _, pred = train_on(engine, spy, X, y, sizes, init_score=init)
    assert np.abs(spy.seen[0][0]).min() > 0.99e30  # XGBoost keeps margins in float32
    for *_, grad, hess in spy.seen:
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
    assert np.isfinite(pred).all()


@pytest.mark.parametrize("engine, message", [
    ("lgb.train", r"query groups are required: pass group sizes"),
    ("LGBMRanker", r"Should set group for ranking task"),  # LightGBM's own check
    ("xgb.train", r"the DMatrix has no query groups: build it with qid= or group="),
])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_data_without_groups(engine, message, case):
    X, y, _ = case_data(case, small_data(seed=5))
    with pytest.raises(ValueError, match=message):
        train_on(engine, case.build(), X, y, None)


# the engines' own messages, as the oldest supported releases and today's word them
LGB_GROUP_SUM = r"Sum of query counts (\(\d+\) differs from the length of|is not same with) #data"


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, LGB_GROUP_SUM),
    ("LGBMRanker", lgb.basic.LightGBMError, LGB_GROUP_SUM),
    ("xgb.train", xgb.core.XGBoostError, r"Invalid query group structure"),
])
def test_engines_reject_groups_that_do_not_sum_to_the_rows(engine, error, message):
    X, y, sizes = small_data(seed=6)
    with pytest.raises(error, match=message):
        train_on(engine, gbrank.listmle(), X, y, np.append(sizes, 3))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_zero_size_group_in_an_engine(engine, case):
    X, y, sizes = case_data(case, small_data(seed=7))
    group = np.insert(sizes, 2, 0)
    with pytest.raises(ValueError, match=r"group\[2\] = 0 \(query 2 has no documents\)"):
        train_on(engine, case.build(), X, y, group)


def test_xgboost_rejects_unsorted_qid():
    X, y, sizes = small_data(seed=8)
    qid = np.repeat(np.arange(len(sizes))[::-1], sizes)
    with pytest.raises(xgb.core.XGBoostError, match="`qid` must be sorted"):
        xgb.train(TINY_XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), num_boost_round=1, obj=gbrank.listmle())
    # the same rows with their sizes train: LightGBM and gbrank take queries in any order
    train_on("xgb.train", gbrank.listmle(), X, y, qid_to_sizes(qid))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_negative_label_in_an_engine(engine, case):
    X, y, sizes = case_data(case, small_data(seed=9))
    y[int(sizes[0]) + 1] = -1
    with pytest.raises(ValueError, match=rf"y_true must be non-negative; y_true\[{int(sizes[0]) + 1}\] = -1 at row {int(sizes[0]) + 1} \(query 1\)"):
        train_on(engine, case.build(), X, y, sizes)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_label_above_the_gain_table_in_an_engine(engine, case):
    X, y, sizes = case_data(case, small_data(seed=10))
    row = int(sizes[0]) + 1
    y[row] = 40
    if label_kind(case) == "exp2":
        with pytest.raises(ValueError, match=rf"y_true\[{row}\] = 40 at row {row} \(query 1\) exceeds the largest supported label 31"):
            train_on(engine, case.build(), X, y, sizes)
    elif label_kind(case) == "binary":
        with pytest.raises(ValueError, match=rf"binary .*y_true\[{row}\] = 40 at row {row} \(query 1\)"):
            train_on(engine, case.build(), X, y, sizes)
    else:
        assert np.isfinite(train_on(engine, case.build(), X, y, sizes)[1]).all()


def test_nan_label_in_an_engine():
    X, y, sizes = small_data(seed=11)
    y[5] = np.nan
    with pytest.raises(xgb.core.XGBoostError, match="Label contains NaN"):
        train_on("xgb.train", gbrank.listmle(), X, y, sizes)
    # LightGBM replaces a NaN label by 0 when it builds the Dataset: gbrank sees a 0
    spy = Spy(gbrank.listmle())
    lgb.train({**TINY_LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes), num_boost_round=1)
    assert spy.seen[0][1][5] == 0.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
@pytest.mark.parametrize("labels", ["all-equal", "single-document"])
def test_data_without_order_trains_a_constant_model(engine, case, labels):
    X, y, sizes = case_data(case, small_data(seed=12))
    if labels == "all-equal":
        y = np.ones_like(y)
    else:
        sizes = np.ones(len(y), dtype=int)
    obj = case.build()
    _, pred = train_on(engine, obj, X, y, sizes)
    assert np.isfinite(pred).all()
    # a single document has no order; only a loss that reads absolute scores learns from it
    if obj.ignores_orderless_queries or (labels == "single-document" and obj.shift_invariant):
        assert np.unique(pred).size == 1


@pytest.mark.filterwarnings("ignore:.*Empty dataset:UserWarning")
@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, r"Check failed: \(num_data\) > \(0\)"),
    ("LGBMRanker", ValueError, r"0 sample\(s\)"),
    ("xgb.train", ValueError, r"the DMatrix has no rows"),
])
def test_empty_dataset_in_an_engine(engine, error, message):
    X, y, _ = small_data(seed=13)
    with pytest.raises(error, match=message):
        train_on(engine, gbrank.listmle(), X[:0], y[:0], np.zeros(0, dtype=int))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_zero_weights_in_an_engine(engine, case):
    X, y, sizes = case_data(case, small_data(seed=14))
    weight = np.ones(len(y))
    weight[: sizes[0] + sizes[1]] = 0.0  # the first two queries
    if engine == "LGBMRanker":  # calls objective(y_true, y_pred, weight, group): nothing to spy on
        assert np.isfinite(train_on(engine, case.build(), X, y, sizes, weight=weight)[1]).all()
        return
    spy = Spy(case.build())
    _, pred = train_on(engine, spy, X, y, sizes, weight=weight)
    assert np.isfinite(pred).all()
    for *_, grad, hess in spy.seen:  # what the engine received
        np.testing.assert_array_equal(grad[weight == 0], 0.0)
        np.testing.assert_array_equal(hess[weight == 0], 0.0)
        assert np.abs(grad[weight > 0]).max() > 0


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
def test_all_zero_weights_train_a_constant_model(engine):
    X, y, sizes = small_data(seed=15)
    _, pred = train_on(engine, gbrank.listmle(), X, y, sizes, weight=np.zeros(len(y)))
    assert np.isfinite(pred).all() and np.unique(pred).size == 1


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", ValueError, r"weight must be non-negative; weight\[0\] = -1"),
    ("LGBMRanker", ValueError, r"weight must be non-negative; weight\[0\] = -1"),
    ("xgb.train", xgb.core.XGBoostError, r"Weights must be positive values"),  # XGBoost's own check
])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_negative_weights_in_an_engine(engine, error, message, case):
    X, y, sizes = case_data(case, small_data(seed=16))
    weight = np.ones(len(y))
    weight[: sizes[0]] = -1.0
    with pytest.raises(error, match=message):
        train_on(engine, case.build(), X, y, sizes, weight=weight)


def test_nan_weight_in_an_engine():
    X, y, sizes = small_data(seed=17)
    weight = np.full(len(y), 2.0)
    weight[: sizes[0]] = np.nan  # the first query
    with pytest.raises(xgb.core.XGBoostError, match="Weights must be positive values"):
        train_on("xgb.train", gbrank.listmle(), X, y, sizes, weight=weight)
    # LightGBM replaces a NaN weight by 0 when it builds the Dataset: the row is silenced
    spy = Spy(gbrank.listmle())
    lgb.train({**TINY_LGB_PARAMS, "objective": spy}, lgb.Dataset(X, y, group=sizes, weight=weight), num_boost_round=1)
    np.testing.assert_array_equal(spy.seen[0][2][: sizes[0]], 0.0)


@pytest.mark.parametrize("engine, error, message", [
    ("lgb.train", lgb.basic.LightGBMError, r"Length of labels? (differs from the length of|is not same with) #data"),
    ("LGBMRanker", ValueError, r"inconsistent numbers of samples"),
    ("xgb.train", xgb.core.XGBoostError, r"Invalid size for `label`|Incorrect size for labels"),
])
def test_engines_reject_labels_of_the_wrong_length(engine, error, message):
    X, y, sizes = small_data(seed=18)
    with pytest.raises(error, match=message):
        train_on(engine, gbrank.listmle(), X, y[:-1], sizes)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_objective_reused_across_trainings(engine, case):
    A = case_data(case, small_data(seed=19))
    B = case_data(case, small_data(seed=20, n_queries=4))
    obj = case.build()
    first = train_on(engine, obj, *A)[0]
    other = train_on(engine, obj, *B)[0]
    assert train_on(engine, obj, *A)[0] == first  # the cached state of B does not leak into A
    assert train_on(engine, case.build(), *B)[0] == other
    assert other != first


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_float32_and_float64_features_train_the_same_model(engine, case):
    X, y, sizes = case_data(case, small_data(seed=21))
    X32 = X.astype(np.float32)
    m32 = train_on(engine, case.build(), X32, y.astype(np.float32), sizes)[0]
    m64 = train_on(engine, case.build(), X32.astype(np.float64), y, sizes)[0]
    assert m32 == m64
