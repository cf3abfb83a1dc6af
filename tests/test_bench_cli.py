"""The harness's command line: methods from the objective registry, name suggestions, one
LETOR fold as a split, the report directory checked before training, progress off a terminal."""

from __future__ import annotations

import io
import os
import re
import sys
import types
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")
pytest.importorskip("tqdm")

import gbrank  # noqa: E402
from gbrank.bench import BenchConfig, TreeParams, parse_methods, run_benchmark  # noqa: E402
from gbrank.bench import __main__ as cli  # noqa: E402
from gbrank.bench.methods import all_method_names, default_method_names, method_objective  # noqa: E402
from gbrank.datasets import make_ranking  # noqa: E402
from gbrank.objectives import registry  # noqa: E402

TINY = "synthetic:queries=24,docs=8,features=4,seed=3"


def _list_methods(capsys) -> list[str]:
    assert cli.main(["--list-methods"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return [line.split()[0] for line in lines if not line.startswith(("groups:", "multi-label:"))]


# --------------------------------------------------------------------------- the registry
def test_every_method_help_names_is_listed(capsys):
    listed = set(_list_methods(capsys))
    assert listed == set(all_method_names())
    help_text = cli.build_parser().format_help()
    named = {m.split("(")[0] for m in re.findall(r"\b(?:lgb|xgb|native):[A-Za-z_:]+[A-Za-z_]", help_text)}
    assert cli.main(["--list-methods"]) == 0
    multi = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("multi-label:"))
    assert "lgb:multi_label(" in multi and "xgb:multi_label(" in multi
    assert named and named <= listed | {"lgb:multi_label", "xgb:multi_label"}, named - listed
    for name in registry.names():
        assert re.search(rf"^\s+{method_objective(name)}\s", help_text, re.M), name
        assert f"lgb:{method_objective(name)}" in listed and f"xgb:{method_objective(name)}" in listed
    assert len(listed) == len(set(listed)) == len(all_method_names())


@pytest.mark.slow
def test_every_listed_method_runs():
    data = make_ranking(n_queries=16, docs_per_query=6, n_features=3, seed=1)
    config = BenchConfig(rounds=2, early_stopping=0, seeds=(0,), params=TreeParams(min_data_in_leaf=3))
    # "all" leaves the click objectives out of graded labels; named, they run on them, but
    # for those of 0/1 labels, which run on 0/1 labels and refuse graded ones, naming the fix
    clicks = [m for m in parse_methods("all") if m.family == "clicks"]
    binary = [m.name for m in clicks if registry.get(m.objective).labels == "binary"]
    graded = [m.name for m in clicks if m.name not in binary]
    results = run_benchmark(data, ["all", *graded], folds=2, config=config, progress="off")
    assert graded and binary
    assert sorted(s["method"] for s in results.skipped) == sorted(binary)
    assert all("takes 0/1 clicks" in s["reason"] and "pbm_listnet" in s["fix"] for s in results.skipped)
    assert {r["method"] for r in results.runs} == set(all_method_names()) - set(binary)
    failed = [(r["method"], r["error"]) for r in results.runs if r["status"] != "ok"]
    assert not failed
    clicked = replace(data, y=(data.y > 0).astype(float))
    results = run_benchmark(clicked, binary, folds=2, config=config, progress="off")
    assert {r["method"] for r in results.runs} == set(binary) and not results.skipped
    assert all(r["status"] == "ok" for r in results.runs)


def test_plackett_luce_builds_from_the_registry_example():
    spec = registry.get("plackett_luce")
    assert not spec.in_default_bench and "lgb:plackett_luce" not in default_method_names()
    objective = parse_methods("lgb:plackett_luce")[0].build(3)
    assert objective.seed == 3
    assert "position_weights=[1.0, 0.5, 0.25]" in repr(objective)
    assert repr(objective) == repr(gbrank.plackett_luce(**spec.examples[0], seed=3))
    given = parse_methods("xgb:plackett_luce(position_weights=[1.0, 1.0])")[0].build(0)
    assert "position_weights=[1.0, 1.0]" in repr(given)


def test_seed_goes_to_the_objectives_that_have_one():
    assert parse_methods("lgb:listmle")[0].build(7).seed == 7
    assert parse_methods("xgb:listnet")[0].build(7).seed == 7
    assert parse_methods("lgb:listmle(seed=2)")[0].build(7).seed == 2
    assert not hasattr(parse_methods("lgb:ranknet")[0].build(7), "seed")
    assert parse_methods("native:ndcgboost")[0].build(7).random_state == 7


@pytest.fixture
def toy_objective(monkeypatch):
    """Two objectives registered for a test only: one in the default bench, one not."""
    module = types.ModuleType("toy_objectives")
    module.toy_listmle = lambda **kwargs: gbrank.listmle(**kwargs)
    module.toy_topk = lambda k, **kwargs: gbrank.listmle_topk(k=k, **kwargs)
    monkeypatch.setitem(sys.modules, "toy_objectives", module)
    registry.register(registry.ObjectiveSpec("toy_listmle", "toy_objectives", "toy", "a toy ListMLE"))
    registry.register(registry.ObjectiveSpec("toy_topk", "toy_objectives", "toy", "a toy top-k",
                                             examples=({"k": 2},), in_default_bench=False))
    yield
    registry.unregister("toy_listmle")
    registry.unregister("toy_topk")


def test_a_registered_objective_appears_everywhere(toy_objective, capsys):
    help_text = cli.build_parser().format_help()
    assert "toy_listmle" in help_text and "toy: a toy top-k [default k=2]" in help_text
    listed = _list_methods(capsys)
    assert {"lgb:toy_listmle", "xgb:toy_listmle", "lgb:toy_topk", "xgb:toy_topk"} <= set(listed)
    assert "lgb:toy_listmle" in default_method_names() and "lgb:toy_topk" not in default_method_names()
    assert {"lgb:toy_topk", "xgb:toy_listmle"} <= {m.name for m in parse_methods("all")}
    method = parse_methods("lgb:toy_topk")[0]
    assert method.family == "toy" and "k=2" in repr(method.build(0))
    results = run_benchmark(TINY, "lgb:lambdarank,lgb:toy_topk", folds=3, config=BenchConfig(rounds=2, seeds=(0,)), progress="off")
    assert [r["status"] for r in results.runs] == ["ok"] * 6


# --------------------------------------------------------------------------- errors and suggestions
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--methods", "lgb:nonsense"], "unknown method 'lgb:nonsense'"),
        (["--methods", "catboost:yetirank"], "a method is <engine>:<objective>"),
        (["--methods", "lgb:rank_xendcg(k=3)"], "built-in objectives take no arguments"),
        (["--methods", "lgb:listmle_topk(kk=3)"], "lgb:listmle_topk(kk=3)"),
        (["--methods", "lgb:listmle_topk(k=0)"], "lgb:listmle_topk(k=0)"),
        (["--methods", "lgb:listmle_topk(3)"], "keyword arguments"),
        (["--folds", "1"], "at least 2 folds"),
        (["--folds", "two"], "expected a positive integer, got 'two'"),
        (["--rounds", "0"], "expected a positive integer, got 0"),
        (["--seeds", "a,b"], "comma-separated integers"),
        (["--seeds", "1,1"], "seeds must be distinct"),
        (["--data", "/no/such/path.txt"], "no such file or directory"),
        (["--data", "synthetic:queries"], "must be key=value"),
        (["--data", "synthetic:colour=3"], "make_ranking"),
        (["--baseline", "xgb:rank:ndcg", "--methods", "lgb:lambdarank"], "xgb:rank:ndcg is not among --methods"),
        (["--conventions", "trec"], "invalid choice: 'trec'"),
        (["--num-leaves", "1"], "--num-leaves: expected at least 2"),
        (["--methods", "lgb:listmle_topl"], "did you mean 'lgb:listmle_topk'?"),
        (["--methods", "lbg:lambdarank"], "did you mean 'lgb:lambdarank'?"),
        (["--methods", "xgb:rank:ndgc"], "did you mean 'xgb:rank:ndcg'?"),
        (["--methods", "defualt"], "did you mean 'default'?"),
        (["--methods", "native:ndcgbost"], "did you mean 'native:ndcgboost'?"),
        (["--baseline", "lgb:lambdarnk"], "did you mean 'lgb:lambdarank'?"),
        (["--data", "synthtic:queries=30"], "did you mean synthetic:queries=30?"),
        (["--data", "mine=synthtic:queries=30"], "did you mean mine=synthetic:queries=30?"),
        (["--data", "synthetic:queris=30"], "did you mean 'queries'?"),
        (["--data", "letr:somewhere"], "did you mean letor:somewhere?"),
        (["--data", "tabel:x.csv"], "did you mean table:x.csv?"),
    ],
)
def test_cli_errors_are_clear_and_typos_suggest_the_closest_name(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_misspelt_path_suggests_its_neighbour(tmp_path, capsys):
    (tmp_path / "ranking.csv").write_text("qid,label,f\n1,0,0.5\n")
    with pytest.raises(SystemExit):
        cli.main(["--data", f"table:{tmp_path / 'rankng.csv'}"])
    assert f"did you mean {tmp_path / 'ranking.csv'}?" in capsys.readouterr().err


# --------------------------------------------------------------------------- one LETOR fold
def _write_letor(path, data, qid_offset):
    lines = [
        f"{int(y)} qid:{int(q) + qid_offset} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x))
        for x, y, q in zip(data.X, data.y, data.qid)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_one_letor_fold_directory_is_one_split(tmp_path):
    fold = tmp_path / "MQ" / "Fold1"
    fold.mkdir(parents=True)
    parts = {}
    for i, split in enumerate(("train", "vali", "test")):
        parts[split] = make_ranking(n_queries=14, docs_per_query=(3, 8), n_features=4, n_levels=3, seed=i)
        _write_letor(fold / f"{split}.txt", parts[split], qid_offset=100 * i)
    out = tmp_path / "report"
    assert cli.main(["--data", f"letor:{fold}", "--methods", "lgb:lambdarank,lgb:listmle", "--rounds", "3",
                     "--out", str(out)]) == 0
    predictions = pd.read_csv(out / "predictions.csv.gz")
    assert set(predictions["fold"]) == {"Fold1"}
    # named after the data set, not the fold directory
    assert set(predictions["dataset"]) == {"MQ"}
    assert "## MQ" in (out / "report.md").read_text()
    test = parts["test"]
    run = predictions[(predictions["method"] == "lgb:listmle") & (predictions["seed"] == 0)]
    np.testing.assert_array_equal(run["qid"], test.qid + 200)
    np.testing.assert_array_equal(run["label"], test.y)
    assert "as one split" in (out / "report.md").read_text()


def _letor_dataset(root, n_folds=1):
    parts = {}
    for f in range(1, n_folds + 1):
        fold = root / f"Fold{f}"
        fold.mkdir(parents=True)
        for i, split in enumerate(("train", "vali", "test")):
            parts[f, split] = make_ranking(n_queries=6, docs_per_query=(3, 6), n_features=3, n_levels=3, seed=10 * f + i)
            _write_letor(fold / f"{split}.txt", parts[f, split], qid_offset=100 * i)
    return parts


def test_load_letor_fold_reads_a_fold_directory_as_the_command_line_does(tmp_path):
    from gbrank.bench import parse_data
    from gbrank.datasets import load_letor_fold

    parts = _letor_dataset(tmp_path / "MQ", n_folds=2)
    direct = load_letor_fold(tmp_path / "MQ" / "Fold2")
    numbered = load_letor_fold(tmp_path / "MQ", 2)
    bench = parse_data(f"letor:{tmp_path / 'MQ' / 'Fold2'}").fold(0)
    for i, split in enumerate(("train", "vali", "test")):
        np.testing.assert_array_equal(direct[i].y, parts[2, split].y)
        for other in (numbered[i], (bench.train, bench.valid, bench.test)[i]):
            np.testing.assert_array_equal(other.X, direct[i].X)
            np.testing.assert_array_equal(other.qid, direct[i].qid)


def test_load_letor_fold_errors_say_what_the_directory_holds(tmp_path):
    from gbrank.datasets import load_letor_fold

    _letor_dataset(tmp_path / "MQ", n_folds=2)
    with pytest.raises(FileNotFoundError, match=r"Fold1/Fold1: .*Fold1 is itself a fold directory; read it with "
                       r"load_letor_fold\(.*\) \(no fold=\)"):
        load_letor_fold(tmp_path / "MQ" / "Fold1", 1)
    with pytest.raises(ValueError, match=r"holds the folds Fold1, Fold2: choose one with fold="):
        load_letor_fold(tmp_path / "MQ")
    with pytest.raises(FileNotFoundError, match=r"no fold directory .*Fold3: it holds Fold1, Fold2"):
        load_letor_fold(tmp_path / "MQ", 3)
    with pytest.raises(FileNotFoundError, match=r"is neither a fold directory .* nor a dataset directory"):
        load_letor_fold(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such directory"):
        load_letor_fold(tmp_path / "nowhere")


def test_a_real_fold_directory_is_named_after_its_data_set(letor_path):
    from gbrank.bench import parse_data
    from gbrank.datasets import load_letor_fold

    fold = letor_path("letor4_mq2008/Fold1")
    data = parse_data(f"letor:{fold}")
    assert data.name == "letor4_mq2008" and data.fold(0).name == "Fold1"
    np.testing.assert_array_equal(load_letor_fold(fold).test.y, data.fold(0).test.y)


def test_a_directory_without_folds_or_files_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SystemExit):
        cli.main(["--data", f"letor:{tmp_path}"])
    assert "holds no Fold1, Fold2, ... directories" in capsys.readouterr().err


# --------------------------------------------------------------------------- --out
@pytest.fixture
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("training started before --out was checked")

    monkeypatch.setattr(cli, "run_benchmark", refuse)


def test_out_that_cannot_be_created_is_refused_before_training(tmp_path, capsys, no_training):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as info:
        cli.main(["--data", TINY, "--out", str(blocker / "report")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --out: cannot create the report directory {blocker / 'report'}" in err


def test_out_that_is_a_file_is_refused(tmp_path, capsys, no_training):
    target = tmp_path / "report"
    target.write_text("x")
    with pytest.raises(SystemExit):
        cli.main(["--data", TINY, "--out", str(target)])
    assert "exists and is not a directory" in capsys.readouterr().err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write into any directory")
def test_out_that_is_not_writable_is_refused(tmp_path, capsys, no_training):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(SystemExit):
            cli.main(["--data", TINY, "--out", str(locked / "report")])
    finally:
        locked.chmod(0o700)
    assert "argument --out: cannot create the report directory" in capsys.readouterr().err


def test_out_is_checked_by_the_real_check_when_writable(tmp_path):
    assert cli._check_out(tmp_path / "a" / "b", force=False) is None
    assert (tmp_path / "a" / "b").is_dir()


# --------------------------------------------------------------------------- progress
_LINE = re.compile(r"^gbrank\.bench \[(\d+)/(\d+)\] synthetic fold\d seed (\d) (\S+): NDCG@10 (\d\.\d{4}), "
                   r"train (\d+\.\d\d) s, run (\d+\.\d\d) s$")


def test_progress_lines_when_stderr_is_not_a_terminal(capsys):
    results = run_benchmark(TINY, "lgb:lambdarank,lgb:listmle", folds=3, config=BenchConfig(rounds=2, seeds=(0, 1)))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("gbrank.bench [")]
    assert len(lines) == len(results.runs) == 12
    by_run = {(r["fold"], r["seed"], r["method"]): r for r in results.runs}
    for i, line in enumerate(lines):
        match = _LINE.match(line)
        assert match, line
        assert int(match.group(1)) == i + 1 and int(match.group(2)) == 12
        fold = re.search(r"(fold\d)", line).group(1)
        run = by_run[(fold, int(match.group(3)), match.group(4))]
        assert float(match.group(5)) == pytest.approx(run["ndcg@10"], abs=5e-5)
        # "train" is the report's train s; "run" the whole run, which holds it
        assert float(match.group(6)) == pytest.approx(run["train_seconds"], abs=5e-3)
        assert float(match.group(7)) >= float(match.group(6))
    assert "%|" not in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run_benchmark(TINY, "lgb:lambdarank", folds=3, config=BenchConfig(rounds=2, seeds=(0,)))
    err = terminal.getvalue()
    assert "3/3" in err and "run" in err
    assert "gbrank.bench [" not in err


def test_progress_off_and_bad_modes(capsys):
    run_benchmark(TINY, "lgb:lambdarank", folds=3, config=BenchConfig(rounds=2, seeds=(0,)), progress="off")
    assert "gbrank.bench [" not in capsys.readouterr().err
    with pytest.raises(ValueError, match="progress must be one of"):
        run_benchmark(TINY, "lgb:lambdarank", folds=3, progress="loud")


def test_cli_progress_lines_in_a_pipe(tmp_path, capsys):
    assert cli.main(["--data", TINY, "--methods", "lgb:lambdarank", "--folds", "3", "--rounds", "2",
                     "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if _LINE.match(line)]) == 3 * len(cli.DEFAULT_SEEDS)


def test_an_interrupted_run_leaves_no_empty_report_directory(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_benchmark", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["--data", TINY, "--out", str(tmp_path / "report")])
    assert not (tmp_path / "report").exists()


def test_an_engine_qualified_built_in_name_is_the_engines_built_in_or_refused():
    """#31: ``xgb:lambdarank`` ran gbrank's LambdaRank without a word; an engine-qualified
    built-in name now means that engine's built-in, or is refused naming both spellings."""
    from gbrank.bench.methods import parse_method

    bare = parse_method("lgb:lambdarank")
    assert bare.builtin and bare.build() == "lambdarank"
    with pytest.raises(ValueError, match=re.escape("'xgb:lambdarank' is ambiguous")) as info:
        parse_method("xgb:lambdarank")
    assert "xgb:gbrank_lambdarank" in str(info.value) and "xgb:rank:ndcg" in str(info.value)
    with pytest.raises(ValueError, match=re.escape("write xgb:gbrank_lambdarank(measure=map)")):
        parse_method("xgb:lambdarank(measure=map)")
    with pytest.raises(ValueError, match=re.escape("built-in objectives take no arguments here; gbrank's lambdarank "
                                                   "is lgb:gbrank_lambdarank(measure=map)")):
        parse_method("lgb:lambdarank(measure=map)")


def test_an_ambiguous_method_is_a_one_line_cli_error(capsys, no_training):
    with pytest.raises(SystemExit) as info:
        cli.main(["--data", TINY, "--methods", "xgb:lambdarank"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --methods: method 'xgb:lambdarank' is ambiguous" in err and "Traceback" not in err


def test_gbrank_lambdarank_has_one_name_in_every_engine(capsys):
    from gbrank.bench.methods import parse_method

    for engine in ("lgb", "xgb"):
        method = parse_method(f"{engine}:gbrank_lambdarank")
        assert method.name == f"{engine}:gbrank_lambdarank" and not method.builtin
        assert repr(method.build()) == repr(gbrank.lambdarank())
    assert parse_method("lgb:gbrank_lambdarank(k=10)").name == "lgb:gbrank_lambdarank(k=10)"
    lines = [line for line in _full_list(capsys) if "gbrank_lambdarank" in line or "lgb:lambdarank" in line]
    assert [line.split()[0] for line in lines] == ["lgb:lambdarank", "lgb:gbrank_lambdarank", "xgb:gbrank_lambdarank"]
    assert "built-in" in lines[0] and "built-in" not in lines[1]
    with pytest.raises(ValueError, match="unknown method"):
        parse_method("lgb:gbrank_listmle")  # the prefix only where a built-in has the name


def _full_list(capsys) -> list[str]:
    assert cli.main(["--list-methods"]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    "typed, suggested",
    [
        ("lambdaloss", "lgb:lambdaloss"),
        ("listnett", "lgb:listnet"),
        ("xgb:lambdalos", "xgb:lambdaloss"),
        ("xbg:lambdalos", "xgb:lambdaloss"),
        ("xgb:listnett", "xgb:listnet"),
        ("native:ndcgbost", "native:ndcgboost"),
        ("gbrank_lambdarank", "lgb:gbrank_lambdarank"),
    ],
)
def test_suggestions_prefer_the_typed_engine_then_lgb(typed, suggested):
    from gbrank.bench.methods import parse_method

    with pytest.raises(ValueError, match=re.escape(f"(did you mean {suggested!r}?)")):
        parse_method(typed)


@pytest.mark.parametrize("typed", ["lgb:nonsense", "xgb:nonsense", "nonsense"])
def test_error_messages_list_no_name_twice(typed):
    from gbrank.bench.methods import parse_method

    with pytest.raises(ValueError) as info:
        parse_method(typed)
    listed = re.split(r",\s*", info.value.args[0].rsplit(": ", 1)[1])
    assert len(listed) == len(set(listed)) > 10, listed


# --------------------------------------------------------------------------- output a person reads
def test_single_panel_plot_titles_fit_the_figure(tmp_path, monkeypatch):
    from gbrank.bench import plots, write_report

    titles = []
    save = plots._save

    def measured(fig, path):
        renderer = fig.canvas.get_renderer()
        for title in [fig._suptitle, *(ax.title for ax in fig.axes)]:
            if title is not None and title.get_text():
                titles.append((title.get_text(), title.get_window_extent(renderer), fig.bbox))
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", measured)
    data = "a-data-set-with-a-long-name=" + TINY
    results = run_benchmark(data, "lgb:lambdarank,lgb:listmle", folds=3, config=BenchConfig(rounds=3), progress="off")
    write_report(results, tmp_path / "r")
    # the difference plot's title, and the figure and panel titles of NDCG@k and the curves
    assert len(titles) == 5
    for text, box, frame in titles:
        assert box.x0 >= frame.x0 and box.x1 <= frame.x1, text
    assert sum("\n" in text for text, _, _ in titles) >= 2


def test_the_command_line_prints_the_verdict_and_the_path_not_the_tables(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["--data", TINY, "--methods", "lgb:lambdarank,lgb:listmle", "--folds", "3", "--rounds", "2",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[0].startswith("synthetic: ") and "best" in printed[0] and "**" not in printed[0]
    assert printed[-1] == f"Report: {(out / 'report.md').resolve()}"
    assert len(printed) <= 4 and not any(line.startswith("|") for line in printed)
