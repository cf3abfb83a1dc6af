"""benchmarks/bench_clicks.py --worlds: the family of click worlds and the table it writes (its
shape and columns, not its figures)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from gbrank.datasets import simulate_clicks
from helpers import benchmark_script


@pytest.fixture(scope="module")
def bench():
    return benchmark_script("bench_clicks")


def test_every_world_builds_its_data_and_click_log(bench):
    names = [w.name for w in bench.WORLDS + bench.BINARY_WORLDS + bench.LOGGER_WORLDS]
    assert len(set(names)) == len(names)
    assert all(w.aggregate == "binary" for w in bench.BINARY_WORLDS)
    assert all(w.logging_fraction > 0.002 for w in bench.LOGGER_WORLDS)
    assert all("logger fitted on" in bench.describe(w) for w in bench.LOGGER_WORLDS)
    assert not any("logger fitted on" in bench.describe(w) for w in bench.WORLDS)
    for world in bench.WORLDS + bench.BINARY_WORLDS + bench.LOGGER_WORLDS:
        train, test = bench.world_data(world, 20, seed=1)
        if world.lengths == "fixed":
            assert (train.group == 30).all()
        else:
            assert 2 <= train.group.min() and train.group.max() <= 111
        top_k = world.top_k or int(train.group.max())
        log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=world.sessions, top_k=top_k,
                              eta=world.eta, click_model=world.click_model, fold=world.fold,
                              click_noise=world.click_noise, aggregate=world.aggregate, policy=world.policy,
                              n_policy_samples=5, per_session=bench.keeps_sessions(world), seed=1)
        params = {"verbose": -1}
        d = bench.click_train(world, train, log, params=params, rounds=5, max_rounds=20, threads=1, seed=1)
        assert d.X.shape[0] == d.clicks.size == d.position.size == d.group.sum() == d.order.size == d.rank.size
        assert d.query.size == d.group.size
        # the engines' rows are in display order: ranks 1, 2, ... within every group
        start = np.repeat(np.cumsum(d.group) - d.group, d.group)
        np.testing.assert_array_equal(d.rank, np.arange(d.rank.size) - start + 1)
        if world.aggregate == "binary" or bench.rows_per_session(world):
            assert set(np.unique(d.clicks)) <= {0.0, 1.0}
        if bench.rows_per_session(world):
            # a row per document shown in each session, every session a list of its own
            assert d.group.size == log.session_query.size and d.sessions is None and (d.position >= 1).all()
        assert world.name and bench.describe(world)


def test_the_unshown_family_holds_rows_never_shown_and_agrees_with_the_other_families(bench):
    others = {w.name: w for w in bench.WORLDS + bench.BINARY_WORLDS + bench.LOGGER_WORLDS}
    names = [w.name for w in bench.UNSHOWN_WORLDS]
    assert len(set(names)) == len(names)
    for world in bench.UNSHOWN_WORLDS:
        assert world.top_k is not None and world.policy == "deterministic" and world.aggregate == "count"
        assert others.get(world.name, world) == world  # a name means one world in every family
    assert {w.logging_fraction > 0.002 for w in bench.UNSHOWN_WORLDS} == {True, False}


def test_the_cascade_family_keeps_its_sessions_and_agrees_with_the_other_families(bench, tmp_path):
    pytest.importorskip("lightgbm")
    others = {w.name: w for w in bench.WORLDS + bench.UNSHOWN_WORLDS}
    for world in bench.CASCADE_WORLDS:
        assert world.click_model in ("cascade", "cascade_abandon") and bench.keeps_sessions(world)
        assert others.get(world.name, world) == world
    assert {w.click_model for w in bench.CASCADE_WORLDS} == {"cascade", "cascade_abandon"}
    bench.main(["--cascade-worlds", "--queries", "40", "--rounds", "3", "--max-rounds", "8", "--seeds", "0",
                "--world-names", "abandon-top10", "--out", str(tmp_path)])
    results = pd.read_csv(tmp_path / "results.csv")
    assert sorted(results["method"]) == sorted(["ceiling", "naive", *bench.CASCADE_WORLD_METHODS])
    assert results["error"].isna().all() and results["ndcg@10"].between(0, 1).all()
    assert "| abandon-top10 | 1 |" in (tmp_path / "results.inc").read_text()  # the NDCG@10 table


def test_the_ndcg_table_counts_the_seeds_ahead(bench):
    results = pd.DataFrame({"world": "top10", "seed": [0, 0, 0, 0, 1, 1, 1, 1],
                            "method": ["ceiling", "naive", "fit_clicks", "lgb-position"] * 2,
                            "ndcg@10": [0.7, 0.5, 0.66, 0.6, 0.8, 0.6, 0.62, 0.64]})
    table = bench.ndcg_table(results, bench.UNSHOWN_WORLDS)
    assert "| top10 | 2 | 0.7500 | 0.5500 (0) | 0.6400 (1) | 0.6200 |" in table
    assert "logger1-top10" not in table


def test_long_tail_lengths_have_a_long_tail(bench):
    world = next(w for w in bench.WORLDS if w.lengths == "long-tail")
    train, test = bench.world_data(world, 2000, seed=0)
    sizes = np.concatenate([train.group, test.group])
    assert sizes.min() == 2 and sizes.max() == 111
    # skewed to the right: the mean well above the median, and one list in fifty or more past 60
    assert np.median(sizes) <= 15 and sizes.mean() > 1.3 * np.median(sizes) and (sizes >= 60).mean() > 0.02


def test_held_out_keeps_every_session_of_a_query_on_one_side(bench):
    group = np.array([2, 2, 3, 1, 2, 2])
    query = np.array([0, 0, 1, 1, 5, 5])
    groups, rows = bench.held_out(group, query=query)
    assert groups.tolist() == [True, True, False, False, True, True]
    assert rows.tolist() == [True] * 4 + [False] * 4 + [True] * 4


def test_recommended_gives_fit_clicks_one_list_per_query(bench, monkeypatch):
    # a stochastic policy's log has a list per session; fit_clicks must get each query's
    # sessions as one list, or it holds out sessions whose documents it trained on
    world = next(w for w in bench.WORLDS if w.policy == "plackett_luce")
    train, _ = bench.world_data(world, 20, seed=1)
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=world.sessions, top_k=world.top_k,
                          policy=world.policy, n_policy_samples=5, per_session=True, seed=1)
    d = bench.click_train(world, train, log, params={"verbose": -1}, rounds=5, max_rounds=20, threads=1, seed=1)
    assert d.group.size > np.unique(d.query).size  # several sessions per query
    seen = {}

    class Fit:
        best_rounds = 1

        def predict(self, X):
            return np.zeros(len(X))

    def fit_clicks(X, clicks, group=None, *, qid=None, **kwargs):
        seen.update(group=group, qid=qid)
        return Fit()

    monkeypatch.setattr(bench.gbrank, "fit_clicks", fit_clicks)
    bench.recommended()(d)
    assert seen["group"] is None
    lists = np.flatnonzero(np.diff(seen["qid"])) + 1
    assert lists.size + 1 == np.unique(d.query).size  # one run of rows per query
    np.testing.assert_array_equal(seen["qid"], np.repeat(d.query, d.group))


def test_quick_worlds_table_has_a_row_per_world_and_a_column_per_method(bench, tmp_path):
    pytest.importorskip("lightgbm")
    pytest.importorskip("xgboost")
    names = ["fixed30", "cascade-top10", "plackett-luce-top10"]
    bench.main(["--worlds", "--quick", "--queries", "30", "--rounds", "3", "--max-rounds", "16", "--seeds", "0", "1",
                "--world-names", *names, "--out", str(tmp_path)])
    results = pd.read_csv(tmp_path / "results.csv")
    methods = ["ceiling", "naive", *bench.WORLD_METHODS]
    assert {"world", "seed", "method", "ndcg@10", "gap_closed", "rounds", "seconds", "error"} <= set(results.columns)
    assert len(results) == len(names) * 2 * len(methods)
    assert sorted(results["method"].unique()) == sorted(methods)
    # the cascade targets need the sessions, which only the cascade world keeps
    blank = (results["method"] == "fit_clicks(cascade)") & (results["world"] != "cascade-top10")
    assert (results.loc[blank, "error"] == bench.NOT_APPLICABLE).all() and results.loc[blank, "ndcg@10"].isna().all()
    assert results.loc[~blank, "error"].isna().all(), results.loc[results["error"].notna(), ["method", "error"]]
    assert results.loc[~blank, "ndcg@10"].between(0, 1).all()

    lines = (tmp_path / "results.inc").read_text().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head == ["world", "naive → ceiling", *bench.WORLD_METHODS]
    body = lines[2:2 + len(names)]
    assert [line.split("|")[1].strip() for line in body] == names
    for line in body:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(head)
        assert re.fullmatch(r"0\.\d{3} → [01]\.\d{3}", cells[1])
        # mean over the seeds [their range]
        cascade = head.index("fit_clicks(cascade)")
        assert all(re.fullmatch(r"-?\d+% \[-?\d+, -?\d+\]|no gap", c) for i, c in enumerate(cells[2:], 2)
                   if i != cascade), cells
        assert (cells[cascade] == "—") == (cells[0] != "cascade-top10"), cells
    # the second table: each world's settings and the rounds each early-stopped method chose
    second = lines[2 + len(names) + 1:]
    stopped = [m for m in bench.WORLD_METHODS if m.endswith("-es")]
    assert [c.strip() for c in second[0].strip("|").split("|")] == ["world", "settings",
                                                                      *(f"{m}: rounds" for m in stopped)]
    assert [line.split("|")[1].strip() for line in second[2:]] == names
    assert all(re.fullmatch(r"\d+/\d+", c.strip()) for line in second[2:] for c in line.strip("|").split("|")[2:])


def test_binary_worlds_table_compares_the_default_on_0_1_clicks(bench, tmp_path):
    pytest.importorskip("lightgbm")
    names = ["binary-3", "binary-top10"]
    bench.main(["--binary-worlds", "--quick", "--queries", "30", "--rounds", "3", "--max-rounds", "12", "--seeds", "0",
                "--world-names", *names, "--out", str(tmp_path)])
    results = pd.read_csv(tmp_path / "results.csv")
    assert sorted(results["method"].unique()) == sorted(["ceiling", "naive", *bench.BINARY_WORLD_METHODS])
    assert results["error"].isna().all(), results.loc[results["error"].notna(), ["method", "error"]]
    lines = (tmp_path / "results.inc").read_text().splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == ["world", "naive → ceiling",
                                                                     *bench.BINARY_WORLD_METHODS]
    second = lines[2 + len(names) + 1:]
    assert [c.strip() for c in second[0].strip("|").split("|")] == ["world", "settings"]
    assert second[1] == "|---|---|"
    assert [len(line.strip("|").split("|")) for line in second[2:]] == [2, 2]
    with pytest.raises(SystemExit, match="unknown worlds"):
        bench.main(["--binary-worlds", "--world-names", "fixed30"])


def test_one_entry_adds_a_method_to_every_world(bench):
    pytest.importorskip("lightgbm")
    world = bench.World("tiny", sessions=5)

    def constant(d):
        return (lambda X: np.zeros(X.shape[0])), 0

    def broken(d):
        raise RuntimeError("no model")

    results = bench.worlds_grid([world], [0], n_queries=20, rounds=2, max_rounds=16, threads=1,
                                methods={"constant": constant, "broken": broken})
    assert list(results["method"]) == ["ceiling", "naive", "constant", "broken"]
    # a method that fails is a row with its error and no figures, and the grid goes on
    failed = results[results["method"] == "broken"].iloc[0]
    assert failed["error"] == "RuntimeError: no model" and np.isnan(failed["ndcg@10"])
    table = bench.worlds_table(results, [world])
    assert table.splitlines()[0].split("|")[3:5] == [" constant ", " broken "]
    assert table.splitlines()[2].rstrip().endswith("| failed |")


def test_letor_worlds_click_a_folds_real_queries(bench, letor_root):
    pytest.importorskip("lightgbm")
    world = next(w for w in bench.WORLDS if w.name == "top10")
    train, test = bench.world_data(world, 0, 2, letor="mq2008")
    fold = bench.load("mq2008", 2, 0)
    np.testing.assert_array_equal(train.group, fold[0].group)
    np.testing.assert_array_equal(test.y, fold[1].y)
    # one world, one fold, two methods: the run's rows and figures are the fold's
    rows = bench.run_world(world, 2, n_queries=0, rounds=2, max_rounds=3, threads=1, letor="mq2008",
                           methods={"lgb-position": bench.lgb_position_fixed})
    assert [r["method"] for r in rows] == ["ceiling", "naive", "lgb-position"]
    assert all(0 <= r["ndcg@10"] <= 1 and r["error"] == "" for r in rows)
    # the table names the dataset's lists, not the generated ones
    assert bench.describe(world, "mq2008").startswith("mq2008 lists, top 10 shown")
    assert bench.describe(world).startswith("30 docs, top 10 shown")


def test_letor_worlds_refuse_missing_data(bench, monkeypatch):
    monkeypatch.setattr(bench, "load", lambda name, fold, seed: None)
    with pytest.raises(SystemExit, match="--letor mq2008: the LETOR data were not found"):
        bench.world_data(bench.WORLDS[0], 0, 1, letor="mq2008")
