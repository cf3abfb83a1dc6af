"""The harness's NDCG gain (``--gain``): Ranker's label policy per data set, stated in the
report, used by the evaluation and by every method that has a gain; tables with labels above
31 or fractional labels give full reports."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

import gbrank  # noqa: E402
from gbrank.bench import BenchConfig, parse_methods, run_benchmark, write_report  # noqa: E402
from gbrank.bench.__main__ import main  # noqa: E402
from gbrank.bench.train import LabelGain  # noqa: E402
from gbrank.metrics import ndcg  # noqa: E402

METHODS = ["lgb:lambdarank", "lgb:rank_xendcg", "xgb:rank:ndcg", "lgb:listmle", "lgb:wlistmle", "xgb:listnet",
           "native:ndcgboost"]
N_QUERIES, DOCS = 24, 8


def _table(path, labels_of) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_QUERIES * DOCS, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["qid"] = np.repeat(np.arange(N_QUERIES), DOCS)
    frame["label"] = labels_of(X, rng)
    frame.to_csv(path, index=False)
    return frame


def ratings(X, rng):
    """Integer ratings 0..100 that follow the first feature."""
    return np.clip(np.round(50 + 30 * X[:, 0] + 10 * rng.normal(size=len(X))), 0, 100)


def grades(X, rng):
    """Fractional graded scores in [0, 3]."""
    return np.round(np.clip(1.5 + X[:, 0] + 0.3 * rng.normal(size=len(X)), 0, 3), 2)


def _run(tmp_path, labels_of, *extra):
    _table(tmp_path / "data.csv", labels_of)
    out = tmp_path / "report"
    status = main(["--data", f"t=table:{tmp_path / 'data.csv'}", "--methods", ",".join(METHODS), "--folds", "3",
                   "--rounds", "4", "--min-data-in-leaf", "3", "--out", str(out), *extra])
    return status, out


def _recomputed_ndcg10(out, gain):
    predictions = pd.read_csv(out / "predictions.csv.gz")
    per_query = pd.read_csv(out / "per_query.csv")
    for key, run in predictions.groupby(["fold", "seed", "method"], sort=False):
        sizes = run.groupby("query", sort=False).size().to_numpy()
        got = per_query.set_index(["fold", "seed", "method"]).loc[key, "ndcg@10"].to_numpy()
        want = ndcg(run["label"].to_numpy(), run["score"].to_numpy(), sizes, 10, per_query=True, gain=gain)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_ratings_0_to_100_give_a_full_report_with_the_linear_gain(tmp_path, capsys):
    status, out = _run(tmp_path, ratings)
    assert status == 0, capsys.readouterr().err[-3000:]
    runs = pd.read_csv(out / "runs.csv")
    assert (runs["status"] == "ok").all() and set(runs["method"]) == set(METHODS)
    text = (out / "report.md").read_text()
    assert "- Gain (`--gain auto`): t: NDCG gain l (the label) (auto: labels up to 100, above 31)" in text
    assert "## Not run" not in text
    document = json.loads((out / "results.json").read_text())
    assert document["datasets"][0]["gain"] == "linear" and document["config"]["gain"] == "auto"
    _recomputed_ndcg10(out, "linear")


def test_fractional_labels_give_a_full_report_and_name_what_cannot_run(tmp_path, capsys):
    """#31: LightGBM's built-ins on fractional labels printed a traceback per fold; they are
    refused before training, one line each naming the method, the data set, the reason and the fix."""
    status, out = _run(tmp_path, grades)
    assert status == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    refusals = [line for line in err.splitlines() if line.startswith("gbrank.bench: refused: ")]
    assert [line.split()[2] for line in refusals] == ["lgb:lambdarank", "lgb:rank_xendcg"]
    for line in refusals:
        assert " on t: " in line and "fractional labels" in line and "run a gbrank objective or xgb:rank:ndcg" in line
    runs = pd.read_csv(out / "runs.csv")
    assert (runs["status"] == "ok").all() and set(runs["method"]) == set(METHODS) - {"lgb:lambdarank", "lgb:rank_xendcg"}
    text = (out / "report.md").read_text()
    assert "t: NDCG gain l (the label) (auto: fractional labels)" in text
    assert "- lgb:lambdarank on t: refused: LightGBM's built-in lambdarank indexes its gain table" in text
    # the default baseline could not run: the first method that ran on every data set is compared with
    assert "against the baseline **xgb:rank:ndcg**" in text and "| xgb:rank:ndcg (baseline) |" in text
    assert "gbrank.bench: the baseline is xgb:rank:ndcg: lgb:lambdarank did not run" in err
    assert len(pd.read_csv(out / "significance.csv")) == len(METHODS) - 3
    assert json.loads((out / "results.json").read_text())["skipped"][0]["named"] is True
    _recomputed_ndcg10(out, "linear")


def test_a_group_leaves_out_the_methods_that_do_not_fit_the_labels(tmp_path, capsys):
    _table(tmp_path / "data.csv", grades)
    out = tmp_path / "report"
    status = main(["--data", f"t=table:{tmp_path / 'data.csv'}", "--methods", "builtins", "--folds", "3",
                   "--rounds", "2", "--min-data-in-leaf", "3", "--out", str(out)])
    assert status == 0
    assert "lgb:lambdarank (from builtins) is left out on t: " in capsys.readouterr().err
    assert set(pd.read_csv(out / "runs.csv")["method"]) == {"xgb:rank:ndcg", "xgb:rank:pairwise"}


def test_the_exp2_gain_on_ratings_is_refused_before_training(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        _run(tmp_path, ratings, "--gain", "exp2")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--gain exp2 (2^l-1) needs integer labels 0..31, and the label column 'label' of t holds labels up to " in err
    assert "use --gain linear" in err and not (tmp_path / "report").exists()


def test_write_report_with_only_failed_runs(tmp_path, monkeypatch, capsys):
    """No KeyError: 'dataset' when nothing ran; a failure is one line without --debug."""
    from gbrank.bench import run as run_module

    def broken(*args, **kwargs):
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(run_module, "fit_method", broken)
    data = gbrank.datasets.make_ranking(n_queries=9, docs_per_query=4, n_features=2, seed=0)
    results = run_benchmark(data, "lgb:lambdarank", folds=3, config=BenchConfig(rounds=2), progress="off")
    assert [r["status"] for r in results.runs] == ["failed"] * 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("RuntimeError: the engine broke (--debug shows the traceback)") == 3
    text = write_report(results, tmp_path / "r").read_text()
    assert "lgb:lambdarank on data fold1 seed 0: failed" in text
    run_benchmark(data, "lgb:lambdarank", folds=3, config=BenchConfig(rounds=2), progress="off", debug=True)
    assert capsys.readouterr().err.count("Traceback") == 3


def test_labels_above_the_gain_table_bound_are_refused_for_lightgbm_built_ins(tmp_path, capsys):
    """#31: one label of 1e9 made the harness build a 1e9-entry label_gain (killed by the OOM
    killer); it is refused in one line before training, naming the column and the fix."""
    from gbrank.bench.checks import LABEL_TABLE_MAX

    frame = _table(tmp_path / "data.csv", ratings)
    frame.loc[5, "label"] = 1e9
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "report"
    status = main(["--data", f"t=table:{tmp_path / 'data.csv'}", "--methods", "lgb:lambdarank,xgb:rank:ndcg",
                   "--folds", "3", "--rounds", "2", "--min-data-in-leaf", "3", "--out", str(out)])
    assert status == 1
    err = capsys.readouterr().err
    assert (f"refused: lgb:lambdarank on t: LightGBM's built-in lambdarank indexes its gain table (label_gain) by "
            f"the label, and the label column 'label' goes up to 1e+09, above {LABEL_TABLE_MAX}") in err
    assert "--gain linear" in err and "Traceback" not in err
    assert set(pd.read_csv(out / "runs.csv")["method"]) == {"xgb:rank:ndcg"}
    with pytest.raises(ValueError, match="above"):
        LabelGain.of("auto", np.array([0.0, 1e9])).lightgbm("lambdarank")


def test_auto_is_the_ranker_label_policy():
    data = gbrank.datasets.make_ranking(n_queries=12, docs_per_query=5, n_features=2, seed=0)
    frame = pd.DataFrame(data.X, columns=["a", "b"]).assign(qid=data.qid)
    for labels in (data.y, data.y * 40, data.y / 4, data.y * 10):
        ranker = gbrank.Ranker(gbrank.listmle(), n_estimators=1).fit(frame, labels)
        assert LabelGain.of("auto", labels).gain == ranker.gain_
    assert LabelGain.of("exp2", data.y * 40).gain == "exp2"


def test_methods_take_the_gain_unless_their_name_sets_one():
    def built(name, gain):
        return repr(parse_methods(name)[0].build(0, gain=gain))

    assert "gain='linear'" in built("lgb:wlistmle", "linear")
    assert "target='linear'" in built("xgb:listnet", "linear")
    assert "target='rank_log'" in built("xgb:listnet(target=rank_log)", "linear")
    assert "gain='exp2'" in built("lgb:gbrank_lambdarank(gain=exp2)", "linear")
    assert parse_methods("native:ndcgboost")[0].build(0, gain="linear").gain == "linear"
    ratings_gain = LabelGain.of("auto", np.array([0.0, 3.0, 100.0]))
    assert ratings_gain.lightgbm("lambdarank") == {"label_gain": [float(i) for i in range(101)]}
    assert ratings_gain.xgboost("rank:ndcg") == {"ndcg_exp_gain": False}
    assert ratings_gain.xgboost("rank:pairwise") == {}
    assert LabelGain.of("auto", np.array([0.0, 3.0])).lightgbm("lambdarank") == {}
    with pytest.raises(ValueError, match="fractional"):
        LabelGain.of("auto", np.array([0.5, 3.0])).lightgbm("lambdarank")


def test_gain_choices(capsys):
    with pytest.raises(SystemExit):
        main(["--gain", "log"])
    assert "invalid choice: 'log'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="gain must be one of auto, exp2, linear"):
        BenchConfig(gain="log")
