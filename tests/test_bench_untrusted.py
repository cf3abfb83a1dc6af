"""The harness on data and journals a user points it at (#31): tables never execute code and
never turn a key column into a feature, journals cut or damaged by a crash are repaired or
refused in one line, a resume never mixes data, file names never collide, and what cannot
work is said before anything trains."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from gbrank.bench import BenchConfig, TreeParams, parse_data, parse_methods, run_benchmark, write_report  # noqa: E402
from gbrank.bench import __main__ as cli  # noqa: E402
from gbrank.bench import checks  # noqa: E402
from gbrank.bench.journal import JOURNAL, read_journal  # noqa: E402
from gbrank.bench.plots import slugs  # noqa: E402
from gbrank.bench.run import plan_benchmark  # noqa: E402

N_QUERIES, DOCS = 12, 5
FAST = ["--folds", "3", "--rounds", "2", "--min-data-in-leaf", "1", "--progress", "off"]


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_QUERIES * DOCS
    return pd.DataFrame({"qid": np.repeat(np.arange(N_QUERIES), DOCS), "label": rng.integers(0, 3, n),
                         "f1": rng.random(n), "f2": rng.random(n)})


def _cli_error(argv, capsys) -> str:
    """The one-line error of a refused command line (exit status 2, no traceback)."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("gbrank: error: "), err
    return last


class _Payload:
    """A pickle that runs a command when it is read."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"echo ran > {self.marker}",))


# --------------------------------------------------------------------------- tables
def test_a_pickle_is_read_only_with_allow_pickle(tmp_path, capsys):
    marker = tmp_path / "ran"
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(_Payload(marker)))
    error = _cli_error(["--data", f"table:{tmp_path / 'evil.pkl'}", "--out", str(tmp_path / "r")], capsys)
    assert not marker.exists()
    assert "evil.pkl: a pickle can run any code when it is read, so it is read only with --allow-pickle" in error
    # the option reads a pickle the user made
    _frame().to_pickle(tmp_path / "mine.pkl")
    assert parse_data(f"table:{tmp_path / 'mine.pkl'}", folds=3, allow_pickle=True).fingerprint()["rows"] == 60
    assert "UNSAFE" in cli.build_parser().format_help()


@pytest.mark.parametrize("key", ["label", "qid"])
def test_a_header_naming_a_key_column_twice_is_refused(tmp_path, capsys, key):
    """#31: two label columns trained with pandas' ``label.1`` as a feature (NDCG@10 0.986)."""
    frame = _frame()
    frame["copy"] = frame[key]
    text = frame.to_csv(index=False).replace("copy", key, 1)
    (tmp_path / "dup.csv").write_text(text)
    error = _cli_error(["--data", f"table:{tmp_path / 'dup.csv'}", *FAST, "--out", str(tmp_path / "r")], capsys)
    assert f"dup.csv: the header names {key!r} more than once" in error


def test_a_key_column_renamed_by_pandas_is_refused_in_a_data_frame(tmp_path):
    frame = _frame()
    frame["label.1"] = frame["label"]
    with pytest.raises(ValueError, match=r"'label\.1' looks like a second 'label' column .* --drop label\.1"):
        parse_data(frame, folds=3)
    assert parse_data(frame, folds=3, drop=["label.1"]).fingerprint()["features"] == 2
    frame = _frame()
    frame.columns = ["qid", "label", "a", "a"]
    with pytest.raises(ValueError, match=r"the columns 'a' appear more than once"):
        parse_data(frame, folds=3)


def test_read_errors_name_the_file_and_the_fix(tmp_path, capsys):
    raw = gzip.compress(_frame().to_csv(index=False).encode())
    (tmp_path / "cut.csv.gz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "junk.parquet").write_bytes(b"not a parquet file")
    for name, what in (("cut.csv.gz", "EOFError"), ("empty.csv", "No columns to parse"),
                       ("junk.parquet", "parquet table")):
        error = _cli_error(["--data", f"table:{tmp_path / name}", "--out", str(tmp_path / "r")], capsys)
        assert f"{tmp_path / name}: cannot read it as a" in error and what in error
        assert "check that the file is complete" in error


def test_a_csv_is_read_by_its_header_whatever_a_line_ends_with(tmp_path, capsys):
    # a delimiter at each line's end made pandas take the first column for an index and
    # shift every column by one: the labels read as query ids, a feature as the labels
    frame = _frame()
    lines = frame.to_csv(index=False).splitlines()
    (tmp_path / "trailing.csv").write_text("\n".join([lines[0]] + [line + "," for line in lines[1:]]) + "\n")
    read = parse_data(f"table:{tmp_path / 'trailing.csv'}", folds=3)
    assert read.fingerprint()["sha256"] == parse_data(frame, folds=3).fingerprint()["sha256"]
    (tmp_path / "ragged.csv").write_text("\n".join([lines[0], lines[1] + ",7"] + lines[2:]) + "\n")
    error = _cli_error(["--data", f"table:{tmp_path / 'ragged.csv'}", "--out", str(tmp_path / "r")], capsys)
    assert "ragged.csv: cannot read it as a csv table" in error and "Length of header" in error


def test_labels_beyond_float32_are_refused_before_training(tmp_path):
    # both engines hold labels as float32: every run would fail
    frame = _frame()
    frame["label"] = frame["label"].astype(float)
    frame.loc[2, "label"] = 1e308
    with pytest.raises(ValueError, match=r"the label column 'label' of table goes up to 1e\+308, above 3.40282e\+38"):
        plan_benchmark(frame, ["lgb:listnet"], folds=3, config=CONFIG)


def test_labels_must_be_finite_and_not_negative(tmp_path):
    frame = _frame().astype({"label": float})
    frame.loc[7, "label"] = -1
    with pytest.raises(ValueError, match=r"label column 'label' has the value -1 \(row 7\)"):
        parse_data(frame, folds=3)
    frame.loc[7, "label"] = np.inf
    with pytest.raises(ValueError, match=r"has the value inf \(row 7\)"):
        parse_data(frame, folds=3)


def test_a_label_column_with_one_value_everywhere_is_refused():
    frame = _frame()
    frame["label_click"] = 0
    with pytest.raises(ValueError, match=r"label column 'label_click' holds 0 in every row: there is nothing to rank"):
        parse_data(frame, folds=3)
    frame = _frame().assign(label=2)
    with pytest.raises(ValueError, match=r"label column 'label' holds 2 in every row"):
        parse_data(frame, folds=3)


def test_query_ids_beyond_int64_are_numbered_not_wrapped():
    frame = _frame()
    frame["qid"] = frame["qid"].astype(np.uint64) * np.uint64(2**59) + np.uint64(2**63)
    data = parse_data(frame, folds=3)
    qids = np.concatenate([np.unique(fold.test.qid) for fold in data.folds()])
    np.testing.assert_array_equal(np.sort(qids), np.arange(N_QUERIES))


def test_features_and_drop_choose_the_columns(tmp_path, capsys):
    """#31: a ``doc_id`` column could only be removed by rewriting the file."""
    frame = _frame()
    frame["doc_id"] = [f"d{i}" for i in range(len(frame))]
    frame["noise"] = 1.0
    path = tmp_path / "docs.csv"
    frame.to_csv(path, index=False)
    error = _cli_error(["--data", f"table:{path}", "--out", str(tmp_path / "r")], capsys)
    assert "not numeric: ['doc_id']" in error and "--drop" in error
    assert parse_data(f"table:{path}", folds=3, drop=["doc_id"]).fingerprint()["features"] == 3
    kept = parse_data(f"table:{path}", folds=3, features=["f2", "f1"]).fold(0).test
    np.testing.assert_array_equal(kept.X[:, 0], frame.loc[frame["qid"].isin(kept.qid), "f2"].to_numpy())
    assert "did you mean 'doc_id'" in _cli_error(["--data", f"table:{path}", "--drop", "doc_ids"], capsys)
    assert "never a feature" in _cli_error(["--data", f"table:{path}", "--features", "f1,label"], capsys)
    assert "not both" in _cli_error(["--data", f"table:{path}", "--features", "f1", "--drop", "doc_id"], capsys)
    assert "no --data is one" in _cli_error(["--data", "synthetic:queries=9", "--drop", "doc_id"], capsys)
    out = tmp_path / "r"
    assert cli.main(["--data", f"table:{path}", "--drop", "doc_id", "--methods", "lgb:listmle", *FAST,
                     "--out", str(out)]) == 0


# --------------------------------------------------------------------------- journals
CONFIG = BenchConfig(rounds=2, seeds=(0,), params=TreeParams(min_data_in_leaf=1))
SYNTHETIC = "synthetic:queries=24,docs=5,features=3"


def test_a_cut_last_line_is_removed_before_the_next_write(tmp_path):
    """#31: the first resume appended straight after the half line; the second then failed
    with 'line N is not a journal line' and no finished run could be reused."""
    out = tmp_path / "r"
    run_benchmark(SYNTHETIC, "lgb:listmle,lgb:lambdarank", folds=3, config=CONFIG, progress="off", journal=out)
    text = (out / JOURNAL).read_text()
    (out / JOURNAL).write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])
    run_benchmark(SYNTHETIC, "lgb:listmle,lgb:lambdarank", folds=3, config=CONFIG, progress="off", journal=out,
                  resume=True)
    assert len(read_journal(out)[1]) == 6
    assert all(json.loads(line) for line in (out / JOURNAL).read_text().splitlines())
    again = run_benchmark(SYNTHETIC, "lgb:listmle,lgb:lambdarank", folds=3, config=CONFIG, progress="off",
                          journal=out, resume=True)
    assert len(again.runs) == 6 and len(read_journal(out)[1]) == 6


def test_a_resume_refuses_other_data_under_a_name_a_resume_added(tmp_path, capsys):
    """#31: data set B, added in a resume, was never recorded; a later resume took other data
    under B's name and reported B's figures with the wrong seed."""
    out = tmp_path / "r"
    a = "A=synthetic:queries=12,docs=4,features=3,seed=1"
    options = ["--methods", "lgb:listmle", *FAST]
    assert cli.main(["--data", a, *options, "--out", str(out)]) == 0
    b2 = "B=synthetic:queries=12,docs=4,features=3,seed=2"
    assert cli.main(["--data", a, "--data", b2, *options, "--resume", str(out)]) == 0
    settings = read_journal(out)[0]
    assert set(settings["datasets"]) == {"A", "B"} and "sha256" in settings["datasets"]["B"]["fingerprint"]
    b3 = "B=synthetic:queries=12,docs=4,features=3,seed=3"
    error = _cli_error(["--data", a, "--data", b3, *options, "--resume", str(out)], capsys)
    assert "the data set 'B' is not the one its runs used" in error


def test_a_resume_refuses_a_table_whose_content_changed(tmp_path, capsys):
    path, out = tmp_path / "t.csv", tmp_path / "r"
    _frame().to_csv(path, index=False)
    options = ["--data", f"table:{path}", "--methods", "lgb:listmle", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    changed = _frame()
    changed.loc[3, "label"] = 2 if changed.loc[3, "label"] != 2 else 1
    changed.to_csv(path, index=False)
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert "the data set 't.csv' has changed since its runs were made" in error and "sha256" in error
    _frame().to_csv(path, index=False)
    assert cli.main([*options, "--resume", str(out)]) == 0


@pytest.mark.parametrize("edit", ["no datasets", "description only", "no fingerprint", "renamed"])
def test_a_resume_refuses_runs_whose_data_it_cannot_check(tmp_path, capsys, edit):
    """An edited settings line (no data sets, the description alone, no fingerprint, another
    name) passed the data check, and the runs of other data were reported as this data's."""
    path, out = tmp_path / "t.csv", tmp_path / "r"
    _frame().to_csv(path, index=False)
    options = ["--data", f"table:{path}", "--methods", "lgb:listmle", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    lines = (out / JOURNAL).read_text().splitlines()
    settings = json.loads(lines[0])
    entry = settings["settings"]["datasets"]["t.csv"]
    edited = {"no datasets": {}, "description only": {"t.csv": entry["description"]},
              "no fingerprint": {"t.csv": {"description": entry["description"]}}, "renamed": {"other": entry}}[edit]
    settings["settings"]["datasets"] = edited
    (out / JOURNAL).write_text("\n".join([json.dumps(settings), *lines[1:]]) + "\n")
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert "its runs on 't.csv' have no fingerprint of their data" in error


def test_a_report_directory_with_a_link_is_refused(tmp_path, capsys):
    # the harness would write through it to a file outside the directory
    out, victim = tmp_path / "r", tmp_path / "victim.txt"
    options = ["--data", SYNTHETIC, "--methods", "lgb:listmle", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    victim.write_text("keep")
    (out / "summary.csv").unlink()
    (out / "summary.csv").symlink_to(victim)
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert "summary.csv is a link or a special file" in error and victim.read_text() == "keep"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "runs.jsonl").symlink_to(victim)
    error = _cli_error([*options, "--out", str(fresh), "--force"], capsys)
    assert "runs.jsonl is a link or a special file" in error and victim.read_text() == "keep"


def test_a_journal_with_two_records_of_one_run_or_a_short_per_query_is_refused(tmp_path, capsys):
    out = tmp_path / "r"
    options = ["--data", SYNTHETIC, "--methods", "lgb:listmle", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    lines = (out / JOURNAL).read_text().splitlines()
    other = json.loads(lines[1])
    other["run"]["ndcg@10"] = 0.123456
    (out / JOURNAL).write_text("\n".join([*lines, json.dumps(other)]) + "\n")
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert f"lines 2 and {len(lines) + 1} hold different records of the same run" in error
    short = json.loads(lines[1])
    short["per_query"] = {name: values[:2] for name, values in short["per_query"].items()}
    (out / JOURNAL).write_text("\n".join([lines[0], json.dumps(short), *lines[2:]]) + "\n")
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert "line 2 is not a journal line (its per_query holds 2 queries, its run" in error


@pytest.mark.parametrize(
    "line, number, what",
    [
        ("{}", 2, "it has no run record"),
        ('{"run": {"dataset": "synthetic"}}', 2, "its run has no 'fold'"),
        ("not json", 2, "it has no run record"),
        ('{"settings": 1}', 1, "it is not the settings line"),
    ],
)
def test_a_malformed_journal_line_is_a_one_line_error(tmp_path, capsys, line, number, what):
    out = tmp_path / "r"
    options = ["--data", SYNTHETIC, "--methods", "lgb:listmle", *FAST]
    assert cli.main([*options, "--out", str(out)]) == 0
    lines = (out / JOURNAL).read_text().splitlines()
    lines[number - 1] = line
    (out / JOURNAL).write_text("\n".join(lines) + "\n")
    error = _cli_error([*options, "--resume", str(out)], capsys)
    assert f"runs.jsonl: line {number} is not a journal line ({what})" in error
    assert ("remove that line" if number > 1 else "run the benchmark anew") in error


# --------------------------------------------------------------------------- reports
def test_slugs_are_unique_per_report(tmp_path):
    """#31: data sets ``a`` and ``a_`` shared their plot files."""
    assert slugs(["a", "b c"]) == {"a": "a", "b c": "b_c"}
    pair = slugs(["a", "a_"])
    assert len(set(pair.values())) == 2 and all(re.fullmatch(r"a-[0-9a-f]{8}", s) for s in pair.values())
    results = run_benchmark(["a=synthetic:queries=12,docs=4,features=3,seed=1",
                             "a_=synthetic:queries=12,docs=4,features=3,seed=2"],
                            "lgb:lambdarank,lgb:listmle", folds=3, config=CONFIG, progress="off")
    write_report(results, tmp_path / "r")
    plots = json.loads((tmp_path / "r" / "results.json").read_text())["plots"]
    assert len(plots["a"]) == len(plots["a_"]) == 3 and not set(plots["a"]) & set(plots["a_"])
    report = (tmp_path / "r" / "report.md").read_text()
    for name in ("a", "a_"):
        for png in plots[name]:
            assert (tmp_path / "r" / png).is_file() and f"![{png}]({png})" in report


# --------------------------------------------------------------------------- before training
def test_quadratic_objectives_on_huge_queries_are_warned_about_with_the_estimate():
    """#31: one 50k-document query cost RankNet 5-7 s per call, and nothing warned."""
    ranknet, listmle = parse_methods("lgb:ranknet,lgb:listmle")
    assert checks.estimate_work(ranknet, np.array([1_000_000])) == 1e12
    assert checks.estimate_work(listmle, np.array([1_000_000])) is None
    capped = parse_methods("lgb:ranknet(truncation=30)")[0]
    assert checks.estimate_work(capped, np.array([1_000_000])) == 3e7
    assert checks.cost_warning(ranknet, "d", [np.full(500, 40)], rounds=300) is None
    warning = checks.cost_warning(ranknet, "d", [np.array([1_000_000, 10])], rounds=300)
    assert warning.startswith("lgb:ranknet on d: about 1e+12 pair terms per iteration")
    assert "the longest query has 1000000 documents" in warning and " h for 300 rounds" in warning
    assert "cap its pairs with lgb:ranknet(truncation=30)" in warning
    boost = parse_methods("lgb:ndcg_boost")[0]
    assert "no truncation setting" in checks.cost_warning(boost, "d", [np.array([100_000])], rounds=300)
    in_default = {m.name for m in parse_methods("default") if checks.estimate_work(m, np.array([1000])) == 1e6}
    assert len(in_default) >= 3


def test_the_cost_warning_comes_before_training(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(checks, "OBJECTIVE_BUDGET_SECONDS", 1e-6)
    plan = plan_benchmark(SYNTHETIC, "lgb:listmle,lgb:ranknet", folds=3, config=CONFIG)
    pairs = max(float(np.sum(sizes.astype(float) ** 2)) for sizes in plan.datasets[0].training_sizes())
    assert len(plan.warnings) == 1
    assert plan.warnings[0].startswith(f"lgb:ranknet on synthetic: about {pairs:.3g} pair terms per iteration")
    assert cli.main(["--data", SYNTHETIC, "--methods", "lgb:listmle,lgb:ranknet", *FAST, "--progress", "lines",
                     "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert err.index("gbrank.bench: warning: lgb:ranknet on synthetic") < err.index("gbrank.bench [1/")


def test_tuning_without_a_validation_part_is_refused_before_training(capsys, monkeypatch):
    """#31: ``--tune`` with ``--folds 2`` started, then failed every run."""
    pytest.importorskip("optuna")

    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(cli, "run_benchmark", refuse)
    error = _cli_error(["--data", SYNTHETIC, "--folds", "2", "--tune", "2"], capsys)
    assert "tuning chooses settings on each fold's validation part, and synthetic has none" in error
    assert "use 3 or more folds" in error


def test_all_means_the_methods_that_fit_the_labels():
    """#31: ``--methods all`` ran the click objectives on graded data."""
    graded = plan_benchmark(SYNTHETIC, "all", folds=3, config=CONFIG)
    left_out = {s["method"] for s in graded.skipped}
    clicks = {m.name for m in parse_methods("all") if m.family == "clicks"}
    assert clicks and left_out == clicks and not any(s["named"] for s in graded.skipped)
    assert not {m.name for m in graded.methods_for(graded.datasets[0])} & clicks
    frame = _frame()
    frame["label"] = (frame["label"] > 1).astype(int)
    binary = plan_benchmark(frame, "all", folds=3, config=CONFIG)
    assert not binary.skipped
    named = plan_benchmark(SYNTHETIC, "lgb:ips_listnet", folds=3, config=CONFIG)
    assert not named.skipped  # named on its own, it runs as its factory allows


def test_a_baseline_that_cannot_take_the_labels_is_refused_before_training(tmp_path, capsys):
    frame = _frame().astype({"label": float})
    frame["label"] /= 2
    frame.to_csv(tmp_path / "t.csv", index=False)
    error = _cli_error(["--data", f"table:{tmp_path / 't.csv'}", "--methods", "lgb:lambdarank,lgb:listmle",
                        "--baseline", "lgb:lambdarank", *FAST, "--out", str(tmp_path / "r")], capsys)
    assert "argument --baseline: lgb:lambdarank cannot run on t.csv" in error and not (tmp_path / "r").exists()
