"""An early-stopped model predicts the way it was scored: with its best round, in
``Ranker.predict``, in the booster it returns (saved and loaded in a fresh process), and in
the benchmark harness. (``gbrank.dask.predict``: tests/test_dask.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, split_queries
from gbrank.ranker import Ranker


@pytest.fixture(scope="module")
def splits():
    data = make_ranking(n_queries=160, docs_per_query=15, n_features=8, noise=2.0, seed=3)
    return split_queries(data, (0.5, 0.25, 0.25), seed=0)


def early_stopped(engine, splits) -> Ranker:
    train, valid, _ = splits
    model = Ranker(engine=engine, n_estimators=300, learning_rate=0.5, n_jobs=1, random_state=0)
    model.fit(train.X, train.y, group=train.group, eval_set=[(valid.X, valid.y)], eval_group=[valid.group],
              early_stopping_rounds=5)
    trained = len(model.evals_result_["valid_0"]["gbrank-ndcg@10"])
    assert model.best_iteration_ < trained < 300, "the model must stop early, past its best round"
    return model


LOAD = {
    "lightgbm": "import lightgbm as lgb; model = lgb.Booster(model_file=path); "
                "scores = model.predict(X, raw_score=True)",
    "xgboost": "import xgboost as xgb; model = xgb.Booster(model_file=path); "
               "scores = model.predict(xgb.DMatrix(X), output_margin=True)",
}


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_the_saved_booster_predicts_as_ranker_predict_in_a_fresh_process(engine, splits, tmp_path):
    pytest.importorskip(engine)
    model = early_stopped(engine, splits)
    test = splits[2]
    path = tmp_path / ("model.txt" if engine == "lightgbm" else "model.json")
    model.booster_.save_model(str(path))
    np.save(tmp_path / "X.npy", test.X)
    code = textwrap.dedent(f"""
        import numpy as np
        path, X = {str(path)!r}, np.load({str(tmp_path / "X.npy")!r})
        {LOAD[engine]}
        np.save({str(tmp_path / "scores.npy")!r}, np.asarray(scores, dtype=np.float64))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    loaded = np.load(tmp_path / "scores.npy")
    expected = model.predict(test.X)
    np.testing.assert_allclose(loaded, expected, rtol=1e-6, atol=1e-9)
    assert gbrank.metrics.ndcg(test.y, loaded, test.group, k=10) == pytest.approx(
        model.score(test.X, test.y, group=test.group), abs=1e-9)


def test_the_xgboost_booster_holds_the_best_rounds_and_says_which(splits):
    pytest.importorskip("xgboost")
    model = early_stopped("xgboost", splits)
    booster = model.booster_
    assert booster.num_boosted_rounds() == model.best_iteration_
    assert booster.best_iteration + 1 == model.best_iteration_
    watched = model.evals_result_["valid_0"]["gbrank-ndcg@10"]
    assert float(booster.attr("best_score")) == pytest.approx(max(watched), abs=1e-6)
    # the booster's own predict, with XGBoost's default of every round, is Ranker.predict
    import xgboost as xgb

    test = splits[2]
    np.testing.assert_allclose(booster.predict(xgb.DMatrix(test.X), output_margin=True), model.predict(test.X),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["xgb:listmle", "lgb:listmle"])
def test_the_harness_scores_the_test_part_with_the_best_round(name, splits, monkeypatch):
    from gbrank.bench.data import Fold
    from gbrank.bench.methods import parse_method
    from gbrank.bench.train import FoldCache, TreeParams, fit_method
    from gbrank.engines import lightgbm as lgb_engine
    from gbrank.engines import predict
    from gbrank.engines import xgboost as xgb_engine

    engine = xgb_engine if name.startswith("xgb") else lgb_engine
    pytest.importorskip("xgboost" if name.startswith("xgb") else "lightgbm")
    trained = []
    train = engine.train

    def keep(*args, **kwargs):
        out = train(*args, **kwargs)
        trained.append(out)
        return out

    monkeypatch.setattr(engine, "train", keep)
    fold = Fold("fold", *splits)
    cache = FoldCache(fold, TreeParams(learning_rate=0.5, min_data_in_leaf=3), threads=1)
    metric = gbrank.metrics.make_metrics("ndcg@10").metrics[0]
    result = fit_method(parse_method(name), cache, rounds=300, early_stopping=5, seed=0,
                        metric=metric, metric_name="ndcg@10")
    (booster, best), = trained
    assert result.best_iteration == best < result.n_iterations
    test = splits[2]
    np.testing.assert_allclose(result.test_scores, predict(booster, test.X, best), rtol=1e-6)
    if name.startswith("xgb"):
        # XGBoost's booster keeps every round: the harness must not score with them all
        assert not np.allclose(result.test_scores, predict(booster, test.X), rtol=1e-6)
