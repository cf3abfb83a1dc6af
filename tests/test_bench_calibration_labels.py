"""The harness on calibrated methods and on tables with several label columns (#33): log loss
and ECE for the methods whose scores are probabilities and none for the others; label_<name>
columns are labels (never features), checked as untrusted input, trained on by the
multi-label methods and scored per column."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from gbrank.bench import BenchConfig, TreeParams, parse_data, run_benchmark, write_report  # noqa: E402
from gbrank.bench import __main__ as cli  # noqa: E402
from gbrank.bench.run import plan_benchmark  # noqa: E402
from gbrank.groups import qid_to_sizes  # noqa: E402
from gbrank.metrics import ndcg  # noqa: E402
from gbrank.metrics.calibration import expected_calibration_error, log_loss  # noqa: E402

N_QUERIES, DOCS = 15, 6
CONFIG = BenchConfig(rounds=4, early_stopping=0, params=TreeParams(min_data_in_leaf=1))
FAST = ["--folds", "3", "--rounds", "2", "--min-data-in-leaf", "1", "--progress", "off"]
MULTI = "lgb:multi_label(objective=listnet, weights=[0.6, 0.3, 0.1])"


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_QUERIES * DOCS
    f1, f2 = rng.random(n), rng.random(n)
    return pd.DataFrame({
        "qid": np.repeat(np.arange(N_QUERIES), DOCS), "f1": f1, "f2": f2,
        "label": np.minimum(3, np.floor(4 * f1 + rng.random(n))),
        "label_click": (f2 + 0.3 * rng.random(n) > 0.6).astype(float),
        "label_purchase": (f1 * f2 > 0.3).astype(float),
    })


def _cli_error(argv, capsys) -> str:
    """The error of a command line refused before anything trains (exit status 2, no traceback)."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _groups(part: pd.DataFrame) -> np.ndarray:
    return qid_to_sizes(part["query"].to_numpy())


@pytest.fixture(scope="module")
def results():
    methods = ["lgb:listnet", "lgb:rcr", "lgb:weighted_logistic_softmax", "lgb:rcr(alpha=1.0, max_label=6)", MULTI,
               "xgb:multi_label(objective=lambdarank, aggregate=constrained, floors=[0.5, 0.5])"]
    return run_benchmark(_frame(), methods, folds=3, config=CONFIG, progress="off")


def test_label_columns_are_never_features():
    data = parse_data(_frame(), folds=3)
    fold = data.fold(0)
    assert data.label_names == fold.label_names == ("label", "label_click", "label_purchase")
    assert fold.train.n_features == 2
    frame = _frame()
    for part, labels in zip((fold.train, fold.valid, fold.test), fold.labels):
        # each part's label columns are those of its own rows
        np.testing.assert_array_equal(labels[:, 0], part.y)
        rows = frame.set_index(["f1", "f2"]).loc[list(map(tuple, part.X))]
        np.testing.assert_array_equal(labels[:, 1:], rows[["label_click", "label_purchase"]].to_numpy())


def test_one_label_keeps_the_data_as_it_was():
    frame = _frame().drop(columns=["label_click", "label_purchase"])
    data = parse_data(frame, folds=3)
    assert data.label_names == () and data.label_columns() is None and data.fold(0).labels == ()


def test_calibration_figures_only_for_probabilities(results):
    by_method = {}
    for run in results.runs:
        assert run["status"] == "ok", run
        by_method.setdefault(run["method"], []).append(run)
    for method in ("lgb:listnet", MULTI):
        assert all(r["logloss"] is None and r["ece"] is None for r in by_method[method])
    predictions = results.predictions
    for method, top in (("lgb:rcr", 3.0), ("lgb:weighted_logistic_softmax", 3.0), ("lgb:rcr(alpha=1.0, max_label=6)", 6.0)):
        for run in by_method[method]:
            part = predictions[(predictions["method"] == method) & (predictions["fold"] == run["fold"])]
            y, s = part["label"].to_numpy() / top, part["score"].to_numpy()
            assert run["logloss"] == pytest.approx(log_loss(y, s))
            assert run["ece"] == pytest.approx(expected_calibration_error(y, s))


def test_a_fold_without_the_top_grade_trains_with_the_data_sets_largest_label():
    # the top grade in one query only: every fold trains with label / 4, as its figures are
    # scored, and as lgb.cv and gbrank.dask give a fold or a worker the whole data's maximum
    frame = _frame()
    frame.loc[0, "label"] = 4.0
    methods = ["lgb:rcr", "lgb:rcr(max_label=4)", "xgb:rcr", "xgb:rcr(max_label=4)",
               "lgb:multi_label(objective=rcr, weights=[1.0, 0.0, 0.0])",
               "lgb:multi_label(objective=rcr, weights=[1.0, 0.0, 0.0], objective_args={'max_label': 4})"]
    results = run_benchmark(frame, methods, folds=3, config=CONFIG, progress="off")
    predictions = results.predictions
    scores = {m: predictions[predictions["method"] == m]["score"].to_numpy() for m in methods}
    for default, given in zip(methods[::2], methods[1::2]):
        np.testing.assert_array_equal(scores[default], scores[given])
    # the fold that tests query 0 trained without its grade 4
    assert predictions[predictions["method"] == "lgb:rcr"].groupby("fold")["label"].max().min() < 4.0
    assert (predictions[predictions["method"] == "lgb:rcr"]["label"] == 4.0).any()


def test_per_label_ndcg_equals_recomputation(results):
    predictions = results.predictions
    assert results.datasets[0]["label_names"] == ["label", "label_click", "label_purchase"]
    for run in results.runs:
        part = predictions[(predictions["method"] == run["method"]) & (predictions["fold"] == run["fold"])]
        for column in ("label_click", "label_purchase"):
            expected = ndcg(part[column].to_numpy(), part["score"].to_numpy(), _groups(part), 10)
            assert run[f"ndcg@10:{column}"] == pytest.approx(expected)


def test_report_shows_blanks_not_numbers_for_ranking_scores(results, tmp_path):
    report = write_report(results, tmp_path / "r").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| method | NDCG@1"))
    assert "| log loss | ECE |" in header
    listnet = next(line for line in report.splitlines() if line.startswith("| lgb:listnet "))
    cells = [c.strip() for c in listnet.strip("|").split("|")]
    column = [c.strip() for c in header.strip("|").split("|")].index("log loss")
    assert cells[column] == cells[column + 1] == "—"
    assert "| method | label | label_click | label_purchase |" in report
    summary = pd.read_csv(tmp_path / "r" / "summary.csv").set_index("method")
    assert np.isnan(summary.loc["lgb:listnet", "logloss_mean"])
    assert summary.loc["lgb:rcr", "logloss_mean"] > 0
    assert "ndcg@10:label_click_mean" in summary.columns
    document = json.loads((tmp_path / "r" / "results.json").read_text())
    assert all(r["logloss"] is None for r in document["runs"] if r["method"] == "lgb:listnet")


def test_no_calibration_columns_without_probabilities(tmp_path):
    frame = _frame().drop(columns=["label_click", "label_purchase"])
    results = run_benchmark(frame, ["lgb:listnet"], folds=3, config=CONFIG, progress="off")
    report = write_report(results, tmp_path / "r").read_text()
    assert "log loss" not in report and "label_click" not in report


def test_multi_label_trains_on_every_column():
    """The objective sees the label columns of the training rows: its weights move the
    per-label figures (all weight on one label ranks best on it)."""
    frame = _frame()
    methods = ["lgb:multi_label(objective=listnet, weights=[1, 0, 0])",
               "lgb:multi_label(objective=listnet, weights=[0, 0, 1])"]
    results = run_benchmark(frame, methods, folds=3, config=BenchConfig(rounds=30, early_stopping=0,
                                                                        params=TreeParams(min_data_in_leaf=1)),
                            progress="off")
    mean = pd.DataFrame(results.runs).groupby("method")[["ndcg@10", "ndcg@10:label_purchase"]].mean()
    assert mean.loc[methods[0], "ndcg@10"] > mean.loc[methods[1], "ndcg@10"]
    assert mean.loc[methods[1], "ndcg@10:label_purchase"] > mean.loc[methods[0], "ndcg@10:label_purchase"]


# ----------------------------------------------------------------- untrusted input
@pytest.mark.parametrize("bad, what", [(-1.0, "the value -1"), (np.nan, "a missing or non-numeric value"),
                                       ("yes", "a missing or non-numeric value"), (np.inf, "the value inf")])
def test_a_bad_value_in_a_label_column_names_file_column_and_row(tmp_path, capsys, bad, what):
    frame = _frame()
    frame["label_click"] = frame["label_click"].astype(object)
    frame.loc[7, "label_click"] = bad
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    err = _cli_error(["--data", f"table:{path}", "--methods", MULTI, *FAST, "--out", str(tmp_path / "o")], capsys)
    assert f"{path}: label column 'label_click' has {what} (row 7)" in err


def test_features_may_not_name_a_label_column(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _frame().to_csv(path, index=False)
    err = _cli_error(["--data", f"table:{path}", "--features", "f1,label_click", "--methods", "lgb:listnet", *FAST,
                      "--out", str(tmp_path / "o")], capsys)
    assert "--features names 'label_click', a label column" in err


def test_drop_leaves_a_label_column_out():
    data = parse_data(_frame(), folds=3, drop=["label_purchase"])
    assert data.label_names == ("label", "label_click")
    assert data.fold(0).train.n_features == 2


def test_a_multi_label_method_on_one_label_is_refused(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _frame().drop(columns=["label_click", "label_purchase"]).to_csv(path, index=False)
    out = tmp_path / "o"
    assert cli.main(["--data", f"table:{path}", "--methods", f"lgb:listnet,{MULTI}", *FAST, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"refused: {MULTI} on t.csv: a multi-label method trains on several label columns" in err
    assert "label_click" in err


def test_weights_that_do_not_match_the_columns_are_refused_before_training():
    plan = plan_benchmark(_frame(), ["lgb:listnet", "lgb:multi_label(objective=listnet, weights=[0.5, 0.5])",
                                     "lgb:multi_label(objective=listnet, aggregate=constrained, floors=[0.5])"],
                          folds=3, config=CONFIG)
    refused = {s["method"]: s["reason"] for s in plan.refused}
    assert len(refused) == 2
    assert all("do not fit the 3 label columns (label, label_click, label_purchase)" in r for r in refused.values())
    assert [m.name for m in plan.methods_for(plan.datasets[0])] == ["lgb:listnet"]


def test_a_report_where_every_multi_label_run_was_refused_lists_them(tmp_path):
    results = run_benchmark(_frame(), ["lgb:multi_label(objective=listnet, weights=[1, 2])"], folds=3, config=CONFIG,
                            progress="off")
    report = write_report(results, tmp_path / "r").read_text()
    assert "weights must have shape (3,)" in report and "| method | label | label_click" not in report


def test_labels_a_method_cannot_take_are_refused_before_training():
    frame = _frame()
    frame["label_click"] = frame["label_click"] * 0.37  # click rates
    linear = "objective_args={'target': 'linear'}, aggregate=constrained, floors=[0.5, 0.5]"
    methods = ["lgb:multi_label(objective=lambdarank)",
               "lgb:multi_label(objective=lambdarank, objective_args={'gain': 'linear'})",
               f"lgb:multi_label(objective=listnet, {linear})",
               f"lgb:multi_label(objective=listnet, {linear}, gain=linear)", "lgb:rcr(max_label=2)", "lgb:rcr"]
    plan = plan_benchmark(frame, methods, folds=3, config=CONFIG)
    refused = {s["method"]: s["reason"] for s in plan.refused}
    assert "label column 1: y_true must hold integers with gain='exp2'" in refused[methods[0]]
    assert "the floors' NDCG@k with gain='exp2'" in refused[f"lgb:multi_label(objective=listnet, {linear})"]
    assert "goes up to 3, above max_label=2" in refused["lgb:rcr(max_label=2)"]
    assert len(refused) == 3 and len(plan.methods_for(plan.datasets[0])) == 3


def test_exp2_gain_on_a_fractional_label_column_is_refused():
    frame = _frame()
    frame["label_purchase"] = frame["label_purchase"] * 0.5
    with pytest.raises(ValueError, match="'label_purchase' of table holds fractional labels"):
        plan_benchmark(frame, ["lgb:listnet"], folds=3, config=BenchConfig(gain="exp2"))
    plan = plan_benchmark(frame, ["lgb:listnet"], folds=3, config=CONFIG)
    assert plan.label_gains["table"] == {"label_click": "exp2", "label_purchase": "linear"}


def test_fingerprint_sees_the_label_columns():
    frame = _frame()
    changed = frame.copy()
    changed.loc[0, "label_click"] = 1 - changed.loc[0, "label_click"]
    assert parse_data(frame).fingerprint() != parse_data(changed).fingerprint()


@pytest.mark.parametrize("spec, message", [
    ("lgb:multi_label", "objective= must name a gbrank objective, and it names none"),
    ("lgb:multi_label(objective=nope)", "'nope' is not one"),
    ("lgb:multi_label(objective=listnet, alpha=1)", "multi_label takes no setting 'alpha'"),
    ("lgb:multi_label(objective=listnet, objective_args=3)", "objective_args must be a dict"),
])
def test_malformed_multi_label_names(tmp_path, capsys, spec, message):
    err = _cli_error(["--data", "synthetic:queries=12,docs=5", "--methods", spec, *FAST, "--out", str(tmp_path / "o")],
                     capsys)
    assert message in err


@pytest.mark.parametrize("figure, value", [("ndcg@10:label_click", "x"), ("logloss", "nan"),
                                           ("ndcg@10:label_click", 1.5), ("logloss", -0.1), ("ece", 2.0)])
def test_a_journal_with_a_bad_new_figure_is_refused_on_resume(tmp_path, capsys, figure, value):
    path, out = tmp_path / "t.csv", tmp_path / "r"
    _frame().to_csv(path, index=False)
    options = ["--data", f"table:{path}", "--methods", "lgb:rcr", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    capsys.readouterr()
    journal = out / "runs.jsonl"
    lines = journal.read_text().splitlines()
    document = json.loads(lines[1])
    document["run"][figure] = value
    lines[1] = json.dumps(document)
    journal.write_text("\n".join(lines) + "\n")
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert f"runs.jsonl: line 2 is not a journal line (its run's {figure} is not a number" in error
