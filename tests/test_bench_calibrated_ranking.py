"""benchmarks/calibrated_ranking.py: the calibration part over folds, and for two labels the
category-scale data, the per-query normalised hand mix, the front gaps with the one-label
ends and one --pareto-seeds run."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest
from helpers import benchmark_script

from gbrank.metrics import log_loss, per_label_ndcg


def _script():
    return benchmark_script("calibrated_ranking")


def test_category_scale_multiplies_the_second_label_in_one_category_only():
    bench = _script()
    plain = bench.two_labels(3, 40)
    scaled = bench.two_labels(3, 40, scale=10.0)
    for (X, labels, group), (Xs, ls, gs) in zip(plain, scaled):
        np.testing.assert_array_equal(gs, group)
        np.testing.assert_array_equal(Xs[:, :-1], X)
        category = Xs[:, -1]
        # the category is a query-level feature
        offsets = np.r_[0, np.cumsum(group)]
        assert all(np.unique(category[a:b]).size == 1 for a, b in itertools.pairwise(offsets))
        assert set(np.unique(category)) <= {0.0, 1.0}
        np.testing.assert_array_equal(ls[:, 0], labels[:, 0])
        np.testing.assert_array_equal(ls[:, 1], labels[:, 1] * np.where(category == 1, 10.0, 1.0))
    assert 0 < np.mean(scaled[0][0][:, -1]) < 1


def test_scale_changes_no_label_ndcg_but_does_change_the_mixed_label():
    bench = _script()
    (_, plain, group), *_ = bench.two_labels(5, 60)
    (_, scaled, _), *_ = bench.two_labels(5, 60, scale=10.0)
    scores = np.random.default_rng(0).normal(size=group.sum())
    # NDCG with the linear gain, per label and query, does not see the scale ...
    np.testing.assert_allclose(per_label_ndcg(plain, scores, group, k=10, gain="linear"),
                               per_label_ndcg(scaled, scores, group, k=10, gain="linear"), rtol=1e-12)
    # ... a mixed label does, and dividing each label by its query maximum removes it again
    w = np.array([0.5, 0.5])
    assert not np.allclose(plain @ w, scaled @ w)
    np.testing.assert_allclose(bench.per_query_max(plain, group), bench.per_query_max(scaled, group))


def test_per_query_max_divides_each_column_by_its_query_maximum_and_keeps_zero_queries():
    bench = _script()
    labels = np.array([[2.0, 0.0], [4.0, 0.0], [0.0, 3.0], [1.0, 6.0], [0.0, 0.0]])
    group = np.array([2, 3])
    expected = np.array([[0.5, 0.0], [1.0, 0.0], [0.0, 0.5], [1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(bench.per_query_max(labels, group), expected)


def test_front_gaps_count_the_one_label_ends_for_both_fronts():
    bench = _script()
    points = pd.DataFrame([
        ("gradient", 0.5, 0.65, 0.65),
        ("label", 0.5, 0.55, 0.58),
        ("one-label", 0.0, 0.40, 0.80),
        ("one-label", 1.0, 0.80, 0.40),
    ], columns=["mode", "setting", "ndcg_label1", "ndcg_label2"])
    gaps = bench.front_gaps(points, "gradient", "label", [0.1, 0.5, 0.9])
    # towards the ends both fronts take a one-label model: level; at t = 0.5 the gradient point
    # (0.65) leads the hand mix's best, which is an end (0.6), not its own point (0.565)
    np.testing.assert_allclose(gaps, [0.0, 0.05, 0.0], atol=1e-12)


def test_pareto_seeds_run_prints_every_hand_mix_and_writes_points_and_figure(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    pytest.importorskip("matplotlib")
    bench = _script()
    bench.main(["--pareto-seeds", "1", "--queries", "40", "--weights", "2", "--threads", "1",
                "--category-scale", "4", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    for hand in ("label", "label-max"):
        assert f"| gradient | {hand} | 0.33 |" in out
    stem = "multi-label-seeds-linear-intercept-1-scale4"
    points = pd.read_csv(tmp_path / f"{stem}.csv")
    counts = points["mode"].value_counts().to_dict()
    assert counts == {"label": 2, "label-max": 2, "stochastic": 2, "gradient": 2, "one-label": 2, "constrained": 2}
    assert points[["ndcg_label1", "ndcg_label2"]].apply(lambda c: c.between(0, 1)).all().all()
    assert (tmp_path / f"{stem}.png").stat().st_size > 0


def test_category_scale_is_refused_outside_pareto_seeds():
    bench = _script()
    with pytest.raises(SystemExit):
        bench.main(["--category-scale", "4"])


def test_calibration_folds_report_every_fold_and_pool_the_test_queries(capsys):
    pytest.importorskip("lightgbm")
    bench = _script()
    bench.main(["--calibration-folds", "1", "2", "--datasets", "generated", "--queries", "40"])
    out = capsys.readouterr().out
    for fold in (1, 2):
        assert re.search(rf"^\| generated \| {fold} \| (lambdarank|softmax) \| 0.5 \| [+-]\d", out, re.MULTILINE)
    # pooled over the folds: each fold's 8 test queries
    _, _, per_query = bench.calibration_part(["generated"], [0.5], 40, fold=2)
    assert per_query[("generated", "rcr(0.5)")].size == 8
    pooled = re.search(r"^\| generated \| rcr\(0\.5\) \| best ranking \| (\S+) \|", out, re.MULTILINE)
    assert pooled is not None and np.isfinite(float(pooled.group(1)))


def test_calibration_folds_run_in_xgboost(capsys):
    pytest.importorskip("xgboost")
    bench = _script()
    bench.main(["--calibration-folds", "1", "--datasets", "generated", "--queries", "40", "--engine", "xgboost"])
    out = capsys.readouterr().out
    assert re.search(r"^\| generated \| 1 \| (lambdarank|softmax) \| 0.5 \| [+-]\d", out, re.MULTILINE)


def test_xgboost_logistic_model_stops_on_its_own_log_loss():
    # XGBoost hands a custom metric probabilities under binary:logistic: read as logits, the
    # log loss would fall with every round and never stop the training
    pytest.importorskip("xgboost")
    bench = _script()
    (train, valid, test), _ = bench.generated(0, 100)
    predict, rounds = bench.train("binary", train, valid, "logloss", engine="xgboost")
    assert rounds < bench.MAX_ROUNDS
    constant = np.full(test.y.size, np.log(train.y.mean() / (1 - train.y.mean())))
    assert log_loss(test.y, predict(test.X)) < log_loss(test.y, constant)
    # the same rounds as XGBoost's own early stopping on its log loss
    import xgboost as xgb
    booster = xgb.train({**bench.XGB_PARAMS, "objective": "binary:logistic", "eval_metric": "logloss",
                         "disable_default_eval_metric": 0},
                        xgb.DMatrix(train.X, train.y), bench.MAX_ROUNDS,
                        evals=[(xgb.DMatrix(valid.X, valid.y), "valid")],
                        early_stopping_rounds=bench.PATIENCE, verbose_eval=False)
    assert rounds == booster.best_iteration + 1


def test_engine_is_refused_outside_calibration_folds():
    bench = _script()
    with pytest.raises(SystemExit):
        bench.main(["--engine", "xgboost"])


def test_the_folds_of_generated_data_are_seeds():
    bench = _script()
    (first, *_), _ = bench.generated(0, 40)
    (again, *_), _ = next(bench.datasets(["generated"], 40, fold=1))[1:]
    (second, *_), _ = next(bench.datasets(["generated"], 40, fold=2))[1:]
    np.testing.assert_array_equal(first.X, again.X)
    assert not np.array_equal(first.X, second.X)
