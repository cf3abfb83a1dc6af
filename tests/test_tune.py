"""``--tune``: nested (test queries never steer the search), reproducible, pruned from the
engines' callbacks, the chosen settings are the ones the reported model trained with, and a
missing Optuna is named with the extra that installs it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from gbrank.bench import BenchConfig, parse_methods, run_benchmark  # noqa: E402
from gbrank.bench.__main__ import main  # noqa: E402
from gbrank.bench.data import Fold, cv_folds  # noqa: E402
from gbrank.bench.evaluate import CONVENTIONS, ndcg_at  # noqa: E402
from gbrank.bench.methods import _SEARCH_SPACES  # noqa: E402
from gbrank.bench.train import FoldCache, TreeParams  # noqa: E402
from gbrank.datasets import RankingData, make_ranking  # noqa: E402
from gbrank.objectives import registry  # noqa: E402

HINT = 'pip install "gbrank[tune]"'
TINY = "synthetic:queries=36,docs=9,features=5,seed=3"
METRIC = ndcg_at(10, CONVENTIONS["lightgbm"])


@pytest.fixture(scope="module")
def fold() -> Fold:
    data = make_ranking(n_queries=60, docs_per_query=10, n_features=5, seed=1)
    return cv_folds(data, 3)[0]


def _tune(method: str, fold: Fold, *, trials: int = 8, seed: int = 0, rounds: int = 40, early_stopping: int = 10):
    pytest.importorskip("optuna")
    from gbrank.bench.tune import tune_method

    return tune_method(parse_methods([method])[0], FoldCache(fold, TreeParams(), 1), trials=trials, seconds=None,
                       rounds=rounds, early_stopping=early_stopping, seed=seed, metric=METRIC, metric_name="ndcg@10")


def _relabel(part: RankingData, seed: int) -> RankingData:
    """The same rows with the labels shuffled across the whole part."""
    return RankingData(part.X, np.random.default_rng(seed).permutation(part.y), group=part.group)


# ------------------------------------------------------------------ nested
@pytest.mark.parametrize("method", ["lgb:lambdarank", "xgb:rank:ndcg", "lgb:listmle_topk", "native:ndcgboost"])
def test_test_labels_do_not_influence_the_search(method, fold):
    tuned = _tune(method, fold)
    shuffled = replace(fold, test=_relabel(fold.test, 5))
    assert not np.array_equal(shuffled.test.y, fold.test.y)
    again = _tune(method, shuffled)
    assert again.params == tuned.params
    assert [t["value"] for t in again.trials] == [t["value"] for t in tuned.trials]
    np.testing.assert_array_equal(again.fit.test_scores, tuned.fit.test_scores)


def test_validation_labels_do_steer_the_search(fold):
    # the converse: the comparison above can fail, the search reads the validation part
    tuned = _tune("lgb:lambdarank", fold)
    again = _tune("lgb:lambdarank", replace(fold, valid=_relabel(fold.valid, 5)))
    assert [t["value"] for t in again.trials] != [t["value"] for t in tuned.trials]


# ------------------------------------------------------------------ reproducible
def _tuned_benchmark(seed: int):
    methods = "lgb:lambdarank,xgb:listmle_topk,native:ndcgboost"
    config = BenchConfig(rounds=20, early_stopping=5, seeds=(seed,), tune=6, params=TreeParams(min_data_in_leaf=3))
    return run_benchmark(TINY, methods, folds=3, config=config, progress="off")


def test_same_seed_same_trials_and_report(tmp_path):
    pytest.importorskip("optuna")
    from gbrank.bench import write_report

    first, second, other = _tuned_benchmark(0), _tuned_benchmark(0), _tuned_benchmark(1)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in first.tuning]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in second.tuning]
    pd.testing.assert_frame_equal(first.per_query, second.per_query)
    pd.testing.assert_frame_equal(first.predictions, second.predictions)
    assert [r["params"] for r in other.tuning] != [r["params"] for r in first.tuning]
    write_report(first, tmp_path / "a")
    write_report(second, tmp_path / "b")
    assert (tmp_path / "a" / "tuning.csv").read_bytes() == (tmp_path / "b" / "tuning.csv").read_bytes()
    for name in ("summary.csv", "significance.csv"):
        a, b = pd.read_csv(tmp_path / "a" / name), pd.read_csv(tmp_path / "b" / name)
        quality = [c for c in a.columns if "seconds" not in c and "ms_per_iter" not in c]
        pd.testing.assert_frame_equal(a[quality], b[quality])


def test_a_resumed_tuned_benchmark_keeps_each_runs_search(tmp_path):
    """The journal holds each run's search, so a resumed report tunes nothing again and
    reports the same searches as the uninterrupted one."""
    config = BenchConfig(rounds=15, early_stopping=5, seeds=(0,), tune=3, params=TreeParams(min_data_in_leaf=3))
    first = run_benchmark(TINY, "lgb:listmle_topk", folds=3, config=config, progress="off", journal=tmp_path)
    resumed = run_benchmark(TINY, "lgb:listmle_topk", folds=3, config=config, progress="off", journal=tmp_path,
                            resume=True)
    assert len(first.tuning) == 3
    assert resumed.tuning == json.loads(json.dumps(first.tuning))
    pd.testing.assert_frame_equal(first.predictions, resumed.predictions)


# ------------------------------------------------------------------ pruning
@pytest.mark.parametrize("method", ["lgb:rank_xendcg", "xgb:rank:ndcg", "lgb:ranknet", "xgb:listmle_topk"])
def test_median_pruner_stops_trials_from_the_engine_callbacks(method, fold):
    from gbrank.bench.tune import PRUNER_STARTUP_TRIALS, PRUNER_WARMUP_STEPS

    rounds = 30
    tuned = _tune(method, fold, trials=20, rounds=rounds, early_stopping=0)
    pruned = [t for t in tuned.trials if t["state"] == "pruned"]
    complete = [t for t in tuned.trials if t["state"] == "complete"]
    assert pruned, "no trial was pruned"
    assert all(t["trial"] > PRUNER_STARTUP_TRIALS for t in pruned)
    # stopped during training, after the warm-up, by the callback's report of an iteration
    assert all(PRUNER_WARMUP_STEPS <= t["last_reported"] < rounds for t in pruned)
    assert all(t["value"] is None for t in pruned)
    # without early stopping a trial that is not pruned reports every iteration
    assert complete and all(t["last_reported"] == rounds for t in complete)
    assert tuned.n_pruned == len(pruned)


def test_native_trials_are_never_pruned(fold):
    tuned = _tune("native:ndcgboost", fold, trials=10, early_stopping=0)
    assert {t["state"] for t in tuned.trials} == {"complete"}


# ------------------------------------------------------------------ the chosen settings are used
def _lightgbm_scores(fold: Fold, params: dict, objective, rounds: int, *, seed: int = 0) -> np.ndarray:
    from gbrank.engines import lightgbm as engine

    given = {
        "learning_rate": params["learning_rate"], "num_leaves": params["num_leaves"],
        "min_data_in_leaf": params["min_data_in_leaf"], "lambda_l2": params["l2"],
        "feature_fraction": params["feature_fraction"], "min_sum_hessian_in_leaf": 1e-3, "max_bin": 255,
        "num_threads": 1, "seed": seed, "deterministic": True, "force_row_wise": True, "verbose": -1,
        **{k: v for k, v in params.items() if k.startswith("lambdarank_")},
    }
    if isinstance(objective, str):
        given["objective_seed"] = seed
    dtrain = engine.dataset(fold.train.X, fold.train.y, fold.train.group,
                            params={"max_bin": 255, "min_data_in_leaf": 1, "verbose": -1})
    booster, _ = engine.train(given, dtrain, objective, num_boost_round=rounds)
    return engine.predict(booster, fold.test.X)


def _xgboost_scores(fold: Fold, params: dict, objective, rounds: int, *, seed: int = 0) -> np.ndarray:
    from gbrank.engines import xgboost as engine

    given = {
        "tree_method": "hist", "grow_policy": "lossguide", "max_depth": 0, "max_leaves": params["num_leaves"],
        "eta": params["learning_rate"], "min_child_weight": params["min_child_weight"], "lambda": params["l2"],
        "colsample_bytree": params["feature_fraction"], "max_bin": 255, "nthread": 1, "seed": seed,
        **{k: v for k, v in params.items() if k.startswith("lambdarank_")},
    }
    dtrain = engine.dmatrix(fold.train.X, fold.train.y, fold.train.group, nthread=1)
    booster, _ = engine.train(given, dtrain, objective, num_boost_round=rounds)
    return engine.predict(booster, fold.test.X)


@pytest.mark.parametrize("method, engine, knob, other", [
    ("lgb:lambdarank", "lightgbm", "lambdarank_truncation_level", 2),
    ("xgb:rank:ndcg", "xgboost", "lambdarank_num_pair_per_sample", 1),
])
def test_the_reported_model_is_trained_with_the_chosen_builtin_settings(method, engine, knob, other, fold):
    tuned = _tune(method, fold)
    objective = parse_methods([method])[0].objective
    retrain = _lightgbm_scores if engine == "lightgbm" else _xgboost_scores
    scores = retrain(fold, tuned.params, objective, tuned.fit.best_iteration)
    np.testing.assert_allclose(tuned.fit.test_scores, scores, rtol=1e-10, atol=1e-12)
    # and the engine reads the knob: another value gives another model
    changed = retrain(fold, {**tuned.params, knob: other}, objective, tuned.fit.best_iteration)
    assert not np.allclose(changed, scores)


@pytest.mark.parametrize("method", ["lgb:lambdaloss", "xgb:ranknet"])
def test_the_reported_model_is_trained_with_the_chosen_objective_settings(method, fold):
    import gbrank

    parsed = parse_methods([method])[0]
    tuned = _tune(method, fold)
    own = {k.name: tuned.params[k.name] for k in parsed.search_space()}
    assert own, "the objective searched none of its own settings"
    objective = getattr(gbrank, parsed.objective)(**own)
    retrain = _lightgbm_scores if parsed.engine == "lightgbm" else _xgboost_scores
    scores = retrain(fold, tuned.params, objective, tuned.fit.best_iteration)
    np.testing.assert_allclose(tuned.fit.test_scores, scores, rtol=1e-10, atol=1e-12)


def test_native_searches_only_its_own_settings(fold):
    from gbrank import NDCGBoost

    tuned = _tune("native:ndcgboost", fold)
    assert set(tuned.params) == {"max_alpha", "sample"}
    model = NDCGBoost(n_estimators=40, random_state=0, **tuned.params)
    model.fit(fold.train.X, fold.train.y, group=fold.train.group, eval_set=[tuple(fold.valid)],
              early_stopping_rounds=10)
    np.testing.assert_allclose(tuned.fit.test_scores, model.predict(fold.test.X), rtol=1e-12)


def test_a_setting_fixed_in_the_name_is_not_searched(fold):
    tuned = _tune("lgb:listmle_topk(k=3)", fold, trials=3)
    assert "k" not in tuned.params and "learning_rate" in tuned.params
    assert "k" in _tune("lgb:listmle_topk", fold, trials=3).params


# ------------------------------------------------------------------ declared search spaces
def _knob_values(knob) -> list:
    if knob.choices is not None:
        return list(knob.choices)
    return [int(knob.low), int(knob.high)] if knob.integer else [knob.low, knob.high]


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.get(n).search_space])
def test_every_declared_objective_setting_is_read_by_its_factory(name):
    # each value builds, and every two values of a setting give other gradients: a misspelt
    # or ignored setting fails here
    rng = np.random.default_rng(0)
    sizes = np.array([25, 45, 12])  # one query longer than every truncation
    y = rng.integers(0, 4, sizes.sum()).astype(np.float64)
    scores = rng.normal(size=sizes.sum())
    spec = registry.get(name)
    for knob in spec.search_space:
        grads = [spec.build(**{knob.name: value}).grad_hess(y, scores, sizes)[0] for value in _knob_values(knob)]
        for i in range(len(grads)):
            for j in range(i):
                assert not np.allclose(grads[i], grads[j]), (knob.name, _knob_values(knob)[i], _knob_values(knob)[j])


@pytest.mark.parametrize("method", ["lgb:lambdarank", "xgb:rank:ndcg", "xgb:rank:pairwise", "native:ndcgboost"])
def test_every_declared_builtin_and_native_setting_is_read(method, fold):
    from gbrank import NDCGBoost

    parsed = parse_methods([method])[0]
    base = {"learning_rate": 0.3, "num_leaves": 8, "min_data_in_leaf": 1, "min_child_weight": 1e-3, "l2": 1.0,
            "feature_fraction": 1.0}

    def scores(knob, value):
        if parsed.engine == "native":
            model = NDCGBoost(n_estimators=20, random_state=0, **{knob.name: value})
            return model.fit(fold.train.X, fold.train.y, group=fold.train.group).predict(fold.test.X)
        retrain = _lightgbm_scores if parsed.engine == "lightgbm" else _xgboost_scores
        return retrain(fold, {**base, knob.name: value}, parsed.objective, 10)

    for knob in _SEARCH_SPACES[parsed.objective]:
        low, high = _knob_values(knob)[:2]
        assert not np.allclose(scores(knob, low), scores(knob, high)), (method, knob.name)


# ------------------------------------------------------------------ harness and report
def test_cli_tune_writes_the_tuning_report(tmp_path):
    pytest.importorskip("optuna")
    out = tmp_path / "report"
    status = main(["--data", TINY, "--methods", "lgb:lambdarank,xgb:rank:ndcg", "--folds", "3", "--rounds", "10",
                   "--early-stopping", "3", "--min-data-in-leaf", "3", "--tune", "3", "--progress", "off",
                   "--out", str(out)])
    assert status == 0
    report = (out / "report.md").read_text()
    assert "## Tuning" in report and "Chosen settings on synthetic" in report and "tuning-synthetic.png" in report
    assert (out / "tuning-synthetic.png").stat().st_size > 0
    trials = pd.read_csv(out / "tuning.csv")
    assert len(trials) == 3 * 2 * 3
    assert (trials.groupby(["fold", "method"])["best_so_far"].apply(lambda s: s.is_monotonic_increasing)).all()
    runs = pd.read_csv(out / "runs.csv")
    assert {"tune_seconds", "tune_trials", "tune_pruned", "tune_best_valid"} <= set(runs.columns)
    document = json.loads((out / "results.json").read_text())
    assert document["config"]["tune"] == 3 and len(document["tuning"]) == 6
    chosen = {(r["fold"], r["method"]): r["params"] for r in document["tuning"]}
    assert all("learning_rate" in p for p in chosen.values())


def test_tune_seconds_bounds_the_search():
    pytest.importorskip("optuna")
    config = BenchConfig(rounds=10, early_stopping=3, tune_seconds=0.5, params=TreeParams(min_data_in_leaf=3))
    results = run_benchmark(TINY, "lgb:lambdarank", folds=3, config=config, progress="off")
    assert all(r["status"] == "ok" for r in results.runs)
    assert all(len(r["trials"]) >= 1 and r["seconds"] < 0.5 + 5.0 for r in results.tuning)


def test_progress_lines_show_the_trials(capsys):
    pytest.importorskip("optuna")
    config = BenchConfig(rounds=5, early_stopping=2, tune=2, params=TreeParams(min_data_in_leaf=3))
    run_benchmark(TINY, "xgb:rank:ndcg", folds=3, config=config, progress="lines")
    err = capsys.readouterr().err
    assert err.count("xgb:rank:ndcg: trial 1/2 validation") == 3
    assert err.count("xgb:rank:ndcg: trial 2/2") == 3 and err.count("xgb:rank:ndcg: NDCG@10") == 3


# ------------------------------------------------------------------ without Optuna
def test_missing_optuna_is_named_with_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optuna", None)
    from gbrank.bench.tune import import_optuna

    with pytest.raises(ImportError, match=HINT.replace("[", r"\[").replace("]", r"\]")):
        import_optuna()
    with pytest.raises(ImportError, match="gbrank\\[tune\\]"):
        run_benchmark(TINY, "lgb:lambdarank", folds=3, config=BenchConfig(tune=2), progress="off")
    with pytest.raises(SystemExit) as exit_:
        main(["--data", TINY, "--methods", "lgb:lambdarank", "--tune", "2"])
    assert exit_.value.code == 2
    assert HINT in capsys.readouterr().err


def test_the_untuned_harness_never_imports_optuna(tmp_path):
    code = (
        "import sys\n"
        "from gbrank.bench.__main__ import main\n"
        f"main(['--data', {TINY!r}, '--methods', 'lgb:lambdarank', '--folds', '3', '--rounds', '3', "
        f"'--progress', 'off', '--out', {str(tmp_path / 'r')!r}])\n"
        "print('optuna' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_cache_refuses_parameters_that_would_need_new_datasets(fold):
    cache = FoldCache(fold, TreeParams(), 1)
    assert cache.with_params(TreeParams(num_leaves=7)).params.num_leaves == 7
    with pytest.raises(ValueError, match="max_bin"):
        cache.with_params(TreeParams(max_bin=63))


def test_config_refuses_a_negative_budget():
    with pytest.raises(ValueError, match="tune must be"):
        BenchConfig(tune=-1)
    with pytest.raises(ValueError, match="tune_seconds must be"):
        BenchConfig(tune_seconds=0)
