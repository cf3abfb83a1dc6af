"""The benchmark harness end to end on tiny data: report structure, and every number in it
recomputed from the saved test predictions with gbrank.metrics."""

from __future__ import annotations

import gzip
import json
import re
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")
pytest.importorskip("tqdm")

from scipy import stats  # noqa: E402

from gbrank.bench import Method, from_folds, parse_data, parse_methods, run_benchmark, write_report  # noqa: E402
from gbrank.bench.__main__ import main  # noqa: E402
from gbrank.bench.data import cv_folds  # noqa: E402
from gbrank.bench.methods import default_method_names  # noqa: E402
from gbrank.bench.report import TABLE_COLUMNS  # noqa: E402
from gbrank.bench.run import BenchConfig  # noqa: E402
from gbrank.datasets import make_ranking  # noqa: E402
from gbrank.metrics import mean_average_precision, ndcg, precision_at_k  # noqa: E402

TINY = "synthetic:queries=36,docs=9,features=5,seed=3"
METHODS = ["lgb:lambdarank", "lgb:listmle_topk(k=3)", "xgb:rank:ndcg", "xgb:listnet", "native:ndcgboost"]
SEEDS = (0, 1)
FOLDS = 3
NDCG_KS = range(1, 11)
P_KS = (1, 3, 5, 10)
RUN_KEYS = ["dataset", "fold", "seed", "method"]


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "report"
    status = main([
        "--data", TINY, "--methods", ",".join(METHODS), "--folds", str(FOLDS),
        "--rounds", "6", "--early-stopping", "3", "--seeds", ",".join(map(str, SEEDS)),
        "--threads", "1", "--min-data-in-leaf", "3", "--out", str(out),
    ])
    assert status == 0
    return out


@pytest.fixture(scope="module")
def predictions(report_dir):
    return pd.read_csv(report_dir / "predictions.csv.gz")


def _groups(frame: pd.DataFrame) -> np.ndarray:
    """Query sizes of one run's predictions: rows of a query are consecutive."""
    query = frame["query"].to_numpy()
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    assert np.unique(query[starts]).size == starts.size, "a query's rows are not contiguous"
    return np.diff(np.r_[starts, query.size])


def _recompute(predictions: pd.DataFrame, **conventions) -> pd.DataFrame:
    """Per-query figures straight from the predictions with gbrank.metrics (LightGBM
    conventions unless told)."""
    frames = []
    for key, run in predictions.groupby(RUN_KEYS, sort=False):
        y, s, g = run["label"].to_numpy(), run["score"].to_numpy(), _groups(run)
        frame = pd.DataFrame(dict(zip(RUN_KEYS, key)), index=range(g.size))
        frame["query"] = run["query"].to_numpy()[np.cumsum(g) - g]
        for k in NDCG_KS:
            frame[f"ndcg@{k}"] = ndcg(y, s, g, k, per_query=True, **conventions.get("ndcg", {}))
        frame["map@10"] = mean_average_precision(y, s, g, 10, per_query=True, **conventions.get("map", {}))
        for k in P_KS:
            frame[f"p@{k}"] = precision_at_k(y, s, g, k, per_query=True, **conventions.get("precision", {}))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- structure
def test_report_files(report_dir):
    for name in ["report.md", "summary.csv", "folds.csv", "runs.csv", "per_query.csv", "predictions.csv.gz",
                 "curves.csv", "significance.csv", "results.json", "ndcg10_difference-synthetic.png",
                 "ndcg_at_k-synthetic.png", "validation_ndcg-synthetic.png"]:
        path = report_dir / name
        assert path.is_file() and path.stat().st_size > 0, name
    for png in report_dir.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with gzip.open(report_dir / "predictions.csv.gz", "rt") as handle:
        assert handle.readline().strip() == "dataset,fold,seed,method,query,qid,label,score"


def test_markdown_table(report_dir):
    text = (report_dir / "report.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("| method | NDCG@1 | NDCG@3")]
    assert len(lines) == 1
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == TABLE_COLUMNS
    table = text.split(lines[0])[1].split("\n\n")[0].strip().splitlines()[1:]
    names = [row.strip("|").split("|")[0].strip() for row in table]
    assert names == [parse_methods([m])[0].name + (" (baseline)" if m == "lgb:lambdarank" else "") for m in METHODS]
    assert "![ndcg_at_k-synthetic.png](ndcg_at_k-synthetic.png)" in text
    assert "paired t-test" in text and "Wilcoxon" in text and "Holm" in text
    assert text.split("\n## ")[1].startswith("Verdict"), "the report must open with its verdict"


def test_json_and_csv_schema(report_dir, predictions):
    doc = json.loads((report_dir / "results.json").read_text())
    assert {"config", "versions", "datasets", "methods", "baseline", "runs", "summary", "significance"} <= set(doc)
    assert doc["baseline"] == "lgb:lambdarank"
    assert doc["config"]["seeds"] == list(SEEDS) and doc["config"]["folds"] == FOLDS
    assert [m["name"] for m in doc["methods"]] == [parse_methods([m])[0].name for m in METHODS]
    assert len(doc["runs"]) == FOLDS * len(SEEDS) * len(METHODS)
    for run in doc["runs"]:
        assert run["status"] == "ok"
        assert {"train_seconds", "objective_ms_per_iter", "n_iterations", "best_iteration", "valid_curve",
                "ndcg@10", "map@10"} <= set(run)
        assert 1 <= run["best_iteration"] <= run["n_iterations"] <= 6
        assert len(run["valid_curve"]) == run["n_iterations"]
        builtin = run["method"] in ("lgb:lambdarank", "xgb:rank:ndcg", "native:ndcgboost")
        assert (run["objective_ms_per_iter"] is None) == builtin
    per_query = pd.read_csv(report_dir / "per_query.csv")
    expected = ["dataset", "fold", "seed", "method", "query", "qid", "n_docs",
                *[f"ndcg@{k}" for k in NDCG_KS], "map@10", *[f"p@{k}" for k in P_KS]]
    assert list(per_query.columns) == expected
    assert len(per_query) == 36 * len(SEEDS) * len(METHODS)
    assert len(predictions) == per_query["n_docs"].sum()
    summary = pd.read_csv(report_dir / "summary.csv")
    assert {"ndcg@10_mean", "ndcg@10_std", "map@10_mean", "train_seconds_mean", "objective_ms_per_iter_mean",
            "best_iteration_mean", "n_folds"} <= set(summary.columns)
    curves = pd.read_csv(report_dir / "curves.csv")
    assert len(curves) == sum(len(r["valid_curve"]) for r in doc["runs"])


# --------------------------------------------------------------------------- the numbers
def test_per_query_figures_equal_recomputation(report_dir, predictions):
    recomputed = _recompute(predictions)
    stored = pd.read_csv(report_dir / "per_query.csv")
    merged = stored.merge(recomputed, on=RUN_KEYS + ["query"], suffixes=("", "_re"), validate="one_to_one")
    assert len(merged) == len(stored) == len(recomputed)
    for column in recomputed.columns.difference(RUN_KEYS + ["query"]):
        np.testing.assert_allclose(merged[column], merged[f"{column}_re"], rtol=0, atol=1e-12, err_msg=column)


def test_run_fold_and_summary_figures_equal_recomputation(report_dir, predictions):
    recomputed = _recompute(predictions)
    figures = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map@10"]
    run_means = recomputed.groupby(RUN_KEYS)[figures].mean()
    runs = pd.read_csv(report_dir / "runs.csv").set_index(RUN_KEYS)
    np.testing.assert_allclose(runs.loc[run_means.index, figures], run_means, rtol=0, atol=1e-12)

    fold_means = run_means.groupby(["dataset", "method", "fold"]).mean()
    summary = pd.read_csv(report_dir / "summary.csv").set_index(["dataset", "method"])
    doc = json.loads((report_dir / "results.json").read_text())
    from_json = {(r["dataset"], r["method"]): r for r in doc["summary"]}
    table = (report_dir / "report.md").read_text()
    for (dataset, method), folds in fold_means.groupby(["dataset", "method"]):
        assert len(folds) == FOLDS
        cells = []
        for figure in figures:
            mean, std = folds[figure].mean(), folds[figure].std(ddof=1)
            assert summary.loc[(dataset, method), f"{figure}_mean"] == pytest.approx(mean, abs=1e-12)
            assert summary.loc[(dataset, method), f"{figure}_std"] == pytest.approx(std, abs=1e-12)
            assert from_json[(dataset, method)][f"{figure}_mean"] == pytest.approx(mean, abs=1e-12)
            cells.append(f"{mean:.4f} ± {std:.4f}")
        row = next(line for line in table.splitlines() if line.startswith(f"| {method} "))
        shown = [c.strip().strip("*") for c in row.strip("|").split("|")[1:6]]
        assert shown == cells


def _holm_by_definition(p):
    """Holm's adjusted p-values straight from the definition: for the i-th smallest,
    max over j <= i of min(1, (m - j + 1) p_(j))."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p)
    m = p.size
    out = np.empty(m)
    for i in range(m):
        out[order[i]] = max(min(1.0, (m - j) * p[order[j]]) for j in range(i + 1))
    return out


def test_significance_equals_recomputation(report_dir, predictions):
    recomputed = _recompute(predictions)
    # a query's value is averaged over the seeds first: n is the number of queries, not runs
    per_query = recomputed.groupby(["method", "fold", "query"])["ndcg@10"].mean().unstack("method")
    stored = pd.read_csv(report_dir / "significance.csv").set_index("method")
    assert set(stored.index) == {parse_methods([m])[0].name for m in METHODS} - {"lgb:lambdarank"}
    base = per_query["lgb:lambdarank"].to_numpy()
    t_p, w_p = [], []
    for method, row in stored.iterrows():
        other = per_query[method].to_numpy()
        d = other - base
        assert row["n_queries"] == 36
        assert row["mean_diff"] == pytest.approx(np.mean(d), abs=1e-12)
        assert row["method_mean"] == pytest.approx(np.mean(other), abs=1e-12)
        if np.any(other != base):
            assert row["t_pvalue"] == pytest.approx(stats.ttest_rel(other, base).pvalue, rel=1e-9)
            assert row["wilcoxon_pvalue"] == pytest.approx(stats.wilcoxon(other, base).pvalue, rel=1e-9)
            half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
            assert row["ci_low"] == pytest.approx(d.mean() - half, abs=1e-12)
            assert row["ci_high"] == pytest.approx(d.mean() + half, abs=1e-12)
            # the interval is the t-test's: it excludes 0 exactly when p < 0.05
            assert (row["ci_low"] > 0 or row["ci_high"] < 0) == (row["t_pvalue"] < 0.05)
        t_p.append(row["t_pvalue"])
        w_p.append(row["wilcoxon_pvalue"])
    np.testing.assert_allclose(stored["t_pvalue_holm"], _holm_by_definition(t_p), rtol=1e-12)
    np.testing.assert_allclose(stored["wilcoxon_pvalue_holm"], _holm_by_definition(w_p), rtol=1e-12)
    assert (stored["significant"] == (stored["t_pvalue_holm"] < 0.05)).all()


def test_verdict_names_the_best_method_with_its_interval(report_dir):
    text = (report_dir / "report.md").read_text()
    verdict = text.split("## Verdict")[1].split("\n## ")[0]
    stored = pd.read_csv(report_dir / "significance.csv")
    top = stored.loc[stored["mean_diff"].idxmax()]
    if top["mean_diff"] > 0:
        assert f"the best method is **{top['method']}**" in verdict
        assert f"95% CI {top['ci_low']:+.4f} to {top['ci_high']:+.4f}" in verdict
        assert ("not significant" in verdict) == (not top["significant"])
    else:
        assert "the baseline **lgb:lambdarank** has the best test NDCG@10" in verdict
    assert f"Holm's correction over the {len(stored)} methods" in verdict
    assert "averaged over the 2 seeds" in verdict


def test_best_iteration_is_the_best_validation_score(report_dir):
    doc = json.loads((report_dir / "results.json").read_text())
    for run in doc["runs"]:
        curve = np.array(run["valid_curve"])
        assert curve[run["best_iteration"] - 1] == pytest.approx(curve.max(), abs=1e-12)


# --------------------------------------------------------------------------- data specs
def _write_letor(path, data, qid_offset=0):
    lines = []
    for row, (x, y, q) in enumerate(zip(data.X, data.y, data.qid)):
        feats = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x))
        lines.append(f"{int(y)} qid:{int(q) + qid_offset} {feats} #docid = {row}")
    path.write_text("\n".join(lines) + "\n")


def test_letor_folds_with_letor_conventions(tmp_path):
    root = tmp_path / "letor"
    for fold in (1, 2):
        (root / f"Fold{fold}").mkdir(parents=True)
        for i, split in enumerate(("train", "vali", "test")):
            part = make_ranking(n_queries=12, docs_per_query=(3, 9), n_features=4, n_levels=3, seed=10 * fold + i)
            _write_letor(root / f"Fold{fold}" / f"{split}.txt", part, qid_offset=100 * i)
    out = tmp_path / "report"
    assert main(["--data", f"tiny={root}", "--folds", "2", "--methods", "lgb:lambdarank,lgb:wlistmle",
                 "--rounds", "4", "--conventions", "letor", "--out", str(out), "--threads", "1"]) == 0
    predictions = pd.read_csv(out / "predictions.csv.gz")
    assert sorted(predictions["fold"].unique()) == ["Fold1", "Fold2"]
    stored = pd.read_csv(out / "per_query.csv")
    # LETOR's Eval-Score: gain 2^l - 1, discount 1 at ranks 1-2 and 1/log2(r) after, 0 without relevant documents
    for key, run in predictions.groupby(RUN_KEYS, sort=False):
        mine = stored[(stored[RUN_KEYS] == pd.Series(dict(zip(RUN_KEYS, key)))).all(axis=1)]
        for q, (_, docs) in enumerate(run.groupby("query", sort=False)):
            labels = docs["label"].to_numpy()[np.argsort(-docs["score"].to_numpy(), kind="stable")]
            ideal = np.sort(labels)[::-1]
            for k in (1, 3, 10):
                disc = np.array([1.0 if r <= 2 else 1 / np.log2(r) for r in range(1, min(k, labels.size) + 1)])
                best = np.sum((2 ** ideal[: disc.size] - 1) * disc)
                value = np.sum((2 ** labels[: disc.size] - 1) * disc) / best if best > 0 else 0.0
                assert mine[f"ndcg@{k}"].iloc[q] == pytest.approx(value, abs=1e-12)


def test_table_input_with_scattered_qids(tmp_path):
    data = make_ranking(n_queries=24, docs_per_query=(4, 8), n_features=3, seed=5)
    frame = pd.DataFrame(data.X, columns=["f1", "f2", "f3"])
    frame["relevance"] = data.y
    frame["query_id"] = data.qid * 7 + 3
    frame = frame.sample(frac=1.0, random_state=0)
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    bench = parse_data(f"mine={path}", folds=3, qid_col="query_id", label_col="relevance")
    assert bench.name == "mine"
    tested = np.concatenate([f.test.qid[np.cumsum(f.test.group) - 1] for f in bench.folds()])
    assert sorted(tested) == sorted(data.qid[np.cumsum(data.group) - 1] * 7 + 3)
    results = run_benchmark(bench, "lgb:lambdarank", folds=3, config=BenchConfig(rounds=3, threads=1, seeds=(0,)), progress=False)
    assert [r["status"] for r in results.runs] == ["ok"] * 3
    assert results.per_query["n_docs"].sum() == len(data)


@pytest.mark.parametrize("missing", [np.nan, None])
def test_table_input_refuses_rows_without_a_qid(tmp_path, missing):
    """A missing qid is not a query of its own: refused, naming the rows, as Ranker does."""
    data = make_ranking(n_queries=6, docs_per_query=5, n_features=2, seed=1)
    frame = pd.DataFrame(data.X, columns=["f1", "f2"])
    frame["label"] = data.y
    frame["qid"] = pd.Series(data.qid, dtype=object if missing is None else np.float64)
    frame.loc[[4, 17], "qid"] = missing
    with pytest.raises(ValueError, match=r"'qid' is missing at 2 rows \(rows 4, 17\)"):
        parse_data(frame, folds=3)
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"rows 4, 17"):
        parse_data(f"table:{path}", folds=3)


def test_cv_folds_rotate_validation():
    data = make_ranking(n_queries=20, docs_per_query=5, n_features=2, seed=1)
    folds = cv_folds(data, 4)
    first = lambda part: set(part.qid[np.cumsum(part.group) - 1])  # noqa: E731
    tests = [first(f.test) for f in folds]
    assert set().union(*tests) == set(range(20)) and sum(map(len, tests)) == 20
    for i, fold in enumerate(folds):
        assert first(fold.valid) == tests[(i + 1) % 4]
        assert first(fold.train) == set(range(20)) - tests[i] - tests[(i + 1) % 4]
    assert all(f.valid is None for f in cv_folds(data, 2))


# --------------------------------------------------------------------------- methods
def test_method_names():
    assert parse_methods("lgb:listnet(k=2, target=rank_log),xgb:rank:ndcg")[0].kwargs == {"k": 2, "target": "rank_log"}
    assert [m.name for m in parse_methods("xgb:rank:ndcg,lgb:listmle_topk( k = 3 )")] == [
        "xgb:rank:ndcg", "lgb:listmle_topk(k=3)"]
    assert [m.name for m in parse_methods(["default"])] == list(default_method_names())
    assert len(parse_methods("all")) > len(default_method_names())


def test_default_methods_are_all_available():
    for method in parse_methods("all"):
        assert method.unavailable_reason() is None, method.name
        assert method.build(0) is not None


def test_unavailable_methods_are_reported_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    future = Method(name="lgb:future_loss", engine="lightgbm", objective="future_loss", builtin=False)
    data = from_folds("tiny", cv_folds(make_ranking(n_queries=15, docs_per_query=6, n_features=3), 3))
    results = run_benchmark(data, ["lgb:lambdarank", "xgb:rank:ndcg", future],
                            config=BenchConfig(rounds=2, threads=1), progress=False)
    available = {m["name"]: m["available"] for m in results.methods}
    assert available == {"lgb:lambdarank": True, "xgb:rank:ndcg": False, "lgb:future_loss": False}
    assert {r["method"] for r in results.runs} == {"lgb:lambdarank"}
    text = write_report(results, tmp_path / "r").read_text()
    assert "xgb:rank:ndcg: unavailable: xgboost is not installed" in text
    assert "lgb:future_loss: unavailable: gbrank.future_loss is not available" in text


# --------------------------------------------------------------------------- CLI errors
def test_cli_refuses_a_non_empty_out(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(SystemExit):
        main(["--data", TINY, "--out", str(tmp_path)])
    assert "is not an empty directory" in capsys.readouterr().err


def test_letor_folds_must_exist(tmp_path, capsys):
    (tmp_path / "Fold1").mkdir()
    with pytest.raises(SystemExit):
        main(["--data", f"letor:{tmp_path}", "--folds", "3"])
    assert re.search(r"has 1 fold directories, fewer than the 3 asked for", capsys.readouterr().err)
