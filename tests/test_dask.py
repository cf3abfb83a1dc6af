"""Distributed training on a two-worker Dask cluster: whole queries, same models, exact metrics."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import gbrank  # noqa: E402
from gbrank import dask as gdask  # noqa: E402
from gbrank.datasets import make_ranking, split_queries  # noqa: E402
from gbrank.groups import qid_to_sizes  # noqa: E402
from gbrank.metrics import make_metrics, ndcg  # noqa: E402
from gbrank.objectives.ranknet import ranknet  # noqa: E402
from gbrank.ranker import Ranker  # noqa: E402

N_FEATURES = 20
FEATURES = [f"f{i}" for i in range(N_FEATURES)]


@pytest.fixture(scope="module")
def client():
    # Threads in this process: quick to start, and objects recorded by the workers are
    # visible to the test.
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def data():
    full = make_ranking(n_queries=400, docs_per_query=30, n_features=N_FEATURES, seed=0)
    return split_queries(full, (0.7, 0.3), seed=1)


def to_pandas(data) -> pd.DataFrame:
    frame = pd.DataFrame(data.X, columns=FEATURES)
    frame["label"] = data.y
    frame["qid"] = data.qid
    return frame


@pytest.fixture(scope="module")
def train_frame(client, data):
    """The training rows, shuffled over three input partitions, then partitioned by query."""
    mixed = to_pandas(data[0]).sample(frac=1.0, random_state=0)
    return gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(mixed, npartitions=3, sort=False), npartitions=2))


@pytest.fixture(scope="module")
def test_frame(client, data):
    return gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(to_pandas(data[1]), npartitions=2)))


SEEN: list = []


class Recorder:
    """Wraps an objective; notes which worker trained on which query sizes."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, y_true, y_pred, weight=None, group=None):
        if hasattr(y_pred, "get_uint_info"):
            sizes = np.diff(y_pred.get_uint_info("group_ptr").astype(np.int64))
        else:
            sizes = np.asarray(group, dtype=np.int64)
        SEEN.append((distributed.get_worker().address, tuple(sizes.tolist())))
        return self.inner(y_true, y_pred, weight, group)


def assert_whole_queries_on_two_workers(seen, sizes):
    per_worker = dict(seen)
    assert len(per_worker) == 2, f"both workers should train, got {sorted(per_worker)}"
    trained = Counter(s for worker_sizes in per_worker.values() for s in worker_sizes)
    # a query cut by a partition or worker boundary would show up as two smaller ones
    assert trained == Counter(sizes.tolist())
    for worker, worker_sizes in per_worker.items():
        assert all(worker_sizes == s for w, s in seen if w == worker), "a worker's groups changed between rounds"


def local_arrays(frame):
    """What one machine sees: every partition's rows, concatenated."""
    local = frame.compute()
    return local[FEATURES].to_numpy(), local["label"].to_numpy(), local["qid"].to_numpy()


# ----------------------------------------------------------------------------- partitioning
def test_partition_queries_keeps_queries_whole_balanced_and_in_order(client, data):
    source = to_pandas(data[0]).sample(frac=1.0, random_state=0)
    parts = gdask.partition_queries(dd.from_pandas(source, npartitions=3, sort=False), npartitions=4).persist()
    locals_ = [p for p in dask.compute(*parts.to_delayed())]
    assert len(locals_) == 4
    table = gdask.check_partitions(parts)
    rows = table["rows"].to_numpy()
    assert rows.sum() == len(source) and table["queries"].sum() == data[0].n_queries
    assert np.abs(rows - rows.mean()).max() <= data[0].group.max()
    previous = -np.inf
    for part in locals_:
        qid = part["qid"].to_numpy()
        assert (np.diff(qid) >= 0).all() and qid[0] > previous
        previous = qid[-1]
    merged = pd.concat(locals_)
    pd.testing.assert_frame_equal(merged.sort_index(), source.sort_index())
    # rows of a query keep their input order
    for q, rows_of_q in merged.groupby("qid", sort=False):
        np.testing.assert_array_equal(rows_of_q.index, source.index[source["qid"] == q])


def test_a_frame_cut_mid_query_is_refused(client, data):
    cut = dd.from_pandas(to_pandas(data[0]), npartitions=3)
    with pytest.raises(ValueError, match=r"query \d+ has rows in partitions \d and \d"):
        gdask.check_partitions(cut)
    with pytest.raises(ValueError, match="partition_queries first"):
        gdask.train_lightgbm(client, cut, gbrank.listmle(), num_boost_round=1)
    scores = cut["f0"]
    with pytest.raises(ValueError, match="more than one partition"):
        gdask.evaluate(cut, scores)
    with pytest.raises(TypeError, match="must be integers"):
        gdask.partition_queries(cut.assign(qid=cut["qid"].astype(float)))


def holders(client, frame) -> list:
    """The workers holding each partition of a placed frame, in partition order."""
    futures = distributed.futures_of(frame)
    assert len(futures) == frame.npartitions
    held = client.who_has(futures)
    return [tuple(held[f.key]) for f in futures]


def test_place_partitions_holds_every_partition_on_its_worker(client, data):
    # the partitions come out of a shuffle, whose output tasks run where the shuffle puts them,
    # whatever restriction they are given; work stealing is on (Dask's default)
    mixed = dd.from_pandas(to_pandas(data[0]).sample(frac=1.0, random_state=2), npartitions=3, sort=False)
    parts = gdask.partition_queries(mixed, npartitions=4)
    expected = parts.compute()
    rows = gdask.layout.partition_rows(parts)
    workers = sorted(client.nthreads())
    for _ in range(20):
        placed = gdask.place_partitions(client, parts)
        held = holders(client, placed)
        assert all(len(h) == 1 for h in held), held
        per_worker = Counter(h[0] for h in held)
        assert sorted(per_worker) == workers
        load = {w: rows[[i for i, h in enumerate(held) if h[0] == w]].sum() for w in workers}
        assert abs(load[workers[0]] - load[workers[1]]) <= rows.max()
    pd.testing.assert_frame_equal(placed.compute(), expected)
    # The engines' view: both look a partition's worker up with client.who_has and run its
    # task there, restricted to it (a free task may be stolen by an idle worker, and a
    # machine under load makes that likely: that is Dask's choice, not a misplacement).
    futures = distributed.futures_of(placed)
    ran_on = client.gather([
        client.submit(lambda part: distributed.get_worker().address, f, workers=list(h), allow_other_workers=False,
                      pure=False)
        for f, h in zip(futures, held)
    ])
    assert ran_on == [h[0] for h in held]
    # and no partition was copied elsewhere on the way
    assert holders(client, placed) == held


def test_place_partitions_on_the_workers_named(client, data):
    workers = sorted(client.nthreads())
    parts = gdask.partition_queries(dd.from_pandas(to_pandas(data[0]), npartitions=2), npartitions=3)
    for worker in workers:
        assert holders(client, gdask.place_partitions(client, parts, workers=[worker])) == [(worker,)] * 3
    with pytest.raises(ValueError, match="no workers"):
        gdask.place_partitions(client, parts, workers=[])


def test_place_partitions_moves_a_partition_left_elsewhere(client, data, monkeypatch):
    parts = gdask.partition_queries(dd.from_pandas(to_pandas(data[0]), npartitions=2), npartitions=2)
    expected = parts.compute()
    who_has = client.who_has
    computed = []

    def computed_elsewhere(futures):
        # the partitions as first computed are on no worker of the cluster: all must move
        held = who_has(futures)
        if not computed:
            computed.extend(held)
        return {key: ["elsewhere"] if key in computed else workers for key, workers in held.items()}

    monkeypatch.setattr(client, "who_has", computed_elsewhere)
    placed = gdask.place_partitions(client, parts)
    monkeypatch.undo()
    assert computed and not set(computed) & {f.key for f in distributed.futures_of(placed)}
    held = holders(client, placed)
    assert sorted(h[0] for h in held) == sorted(client.nthreads())
    assert all(len(h) == 1 for h in held)
    pd.testing.assert_frame_equal(placed.compute(), expected)


def test_place_partitions_keeps_the_groups_and_moves_the_fewest_rows():
    from types import SimpleNamespace

    from gbrank.dask.layout import _relabel

    futures = [SimpleNamespace(key=k) for k in "xyz"]
    # groups {x} (5 rows) and {y, z} (3 + 2): the scheduler left x on b, y and z on a
    held = {"x": ["b"], "y": ["a"], "z": ["a", "c"]}
    assert _relabel(["a", "b", "b"], [5, 3, 2], held, futures, ["a", "b"]) == ["b", "a", "a"]
    # a holder outside the workers counts for nothing; each group keeps a worker of its own
    held = {"x": ["c"], "y": ["c"], "z": ["b"]}
    assert _relabel(["a", "b", "b"], [5, 3, 2], held, futures, ["a", "b"]) == ["a", "b", "b"]
    # three workers: x stays on c, y (3 rows) moves to a, where z is
    held = {"x": ["c"], "y": ["c"], "z": ["a"]}
    assert _relabel(["a", "b", "b"], [5, 3, 2], held, futures, ["a", "b", "c"]) == ["c", "a", "a"]


def test_place_partitions_refuses_to_leave_a_partition_elsewhere(client, data, monkeypatch):
    parts = gdask.partition_queries(dd.from_pandas(to_pandas(data[0]), npartitions=2), npartitions=2)
    monkeypatch.setattr(client, "who_has", lambda futures: {f.key: ["elsewhere"] for f in futures})
    with pytest.raises(RuntimeError, match=r"partition 0 is held by \['elsewhere'\], not by its worker"):
        gdask.place_partitions(client, parts)


def test_place_partitions_spreads_rows_over_workers(client, train_frame):
    held = holders(client, train_frame)
    assert sorted(h[0] for h in held) == sorted(client.nthreads())


def test_from_arrays_and_query_sizes(client, data):
    train = data[0]
    X = da.from_array(train.X, chunks=(700, N_FEATURES))
    frame = gdask.from_arrays(X, da.from_array(train.y, chunks=500), da.from_array(train.qid, chunks=900))
    assert list(frame.columns) == FEATURES + ["label", "qid"]
    pd.testing.assert_frame_equal(frame.compute(), to_pandas(train))
    parts = gdask.partition_queries(frame, npartitions=3).persist()
    sizes = dask.compute(*gdask.query_sizes(parts).to_delayed())
    qids = dask.compute(*parts["qid"].to_delayed())
    for s, q in zip(sizes, qids):
        np.testing.assert_array_equal(s.to_numpy(), qid_to_sizes(q.to_numpy()))


# ----------------------------------------------------------------------------- training
LGB_PARAMS = {"num_leaves": 15, "learning_rate": 0.1}


def test_lightgbm_trains_on_whole_queries_like_one_machine(client, data, train_frame):
    objective = gbrank.listmle_topk(k=10, ties="input")
    SEEN.clear()
    booster = gdask.train_lightgbm(client, train_frame, Recorder(objective), num_boost_round=50, params=LGB_PARAMS)
    assert_whole_queries_on_two_workers(SEEN, data[0].group)
    X, y, qid = local_arrays(train_frame)
    single = Ranker(objective, num_leaves=15, learning_rate=0.1, n_estimators=50, n_jobs=1).fit(X, y, qid=qid)
    test = data[1]
    distributed_ndcg = ndcg(test.y, booster.predict(test.X), test.group, k=10)
    assert distributed_ndcg == pytest.approx(single.score(test.X, test.y, group=test.group), abs=0.01)
    assert distributed_ndcg > 0.7


def test_xgboost_trains_on_whole_queries_like_one_machine(client, data, train_frame, test_frame):
    objective = gbrank.listmle_topk(k=10, ties="input")
    SEEN.clear()
    history: dict = {}
    booster = gdask.train_xgboost(
        client,
        train_frame,
        Recorder(objective),
        num_boost_round=50,
        params={"max_depth": 6, "eta": 0.1},
        evals=[(test_frame, "test")],
        metrics=["ndcg@10", "map@5"],
        evals_result=history,
    )
    assert_whole_queries_on_two_workers(SEEN, data[0].group)
    X, y, qid = local_arrays(train_frame)
    single = Ranker(objective, engine="xgboost", max_depth=6, learning_rate=0.1, n_estimators=50, n_jobs=1)
    single.fit(X, y, qid=qid)
    test = data[1]
    distributed_ndcg = ndcg(test.y, booster.inplace_predict(test.X), test.group, k=10)
    assert distributed_ndcg == pytest.approx(single.score(test.X, test.y, group=test.group), abs=0.01)
    # the exact distributed metric in XGBoost's history is the metric of the final model
    exact = gdask.evaluate(test_frame, gdask.predict(booster, test_frame), ["ndcg@10", "map@5"])
    assert history["test"]["gbrank-ndcg@10"][-1] == pytest.approx(exact["ndcg@10"], abs=1e-6)  # "%f" in XGBoost's log
    assert history["test"]["gbrank-map@5"][-1] == pytest.approx(exact["map@5"], abs=1e-6)
    assert exact["ndcg@10"] == pytest.approx(distributed_ndcg, rel=1e-12)


def test_filtered_frames_with_empty_and_uneven_partitions_train(client, data):
    """A filter after partitioning leaves empty and uneven partitions; both engines train."""
    parts = gdask.partition_queries(dd.from_pandas(to_pandas(data[0]), npartitions=2), npartitions=4)
    cut = int(np.quantile(data[0].qid, 0.6))
    filtered = parts[parts["qid"] >= cut]
    table = gdask.check_partitions(filtered)
    assert (table["rows"] == 0).sum() >= 1 and table["rows"].nunique() > 1
    first_rows = np.cumsum(data[0].group) - data[0].group
    kept = data[0].subset(data[0].qid[first_rows] >= cut)
    objective = gbrank.listmle(ties="input")
    for train in (gdask.train_lightgbm, gdask.train_xgboost):
        SEEN.clear()
        params = {"min_data_in_leaf": 5, "verbosity": -1} if train is gdask.train_lightgbm else {"eta": 0.3}
        booster = train(client, filtered, Recorder(objective), num_boost_round=5, params=params)
        trained = Counter(s for _, sizes in set(SEEN) for s in sizes)
        assert trained == Counter(kept.group.tolist())
        scores = booster.predict(kept.X) if train is gdask.train_lightgbm else booster.inplace_predict(kept.X)
        assert ndcg(kept.y, scores, kept.group, k=10) > ndcg(kept.y, np.zeros(len(kept)), kept.group, k=10)


def test_bagging_by_query_is_refused(client, train_frame):
    params = {"bagging_fraction": 0.5, "bagging_freq": 1, "bagging_by_query": True}
    with pytest.raises(ValueError, match="bagging_by_query=False"):
        gdask.train_lightgbm(client, train_frame, gbrank.listmle(), num_boost_round=2, params=params)


def test_params_that_set_the_rounds_are_refused(client, train_frame):
    # LightGBM would take num_trees over num_boost_round without a word
    with pytest.raises(ValueError, match=r"params may not set \['num_trees'\]: pass num_boost_round="):
        gdask.train_lightgbm(client, train_frame, gbrank.listmle(), num_boost_round=2, params={"num_trees": 5})
    with pytest.raises(ValueError, match=r"params may not set \['n_estimators'\]: pass num_boost_round="):
        gdask.train_xgboost(client, train_frame, gbrank.listmle(), num_boost_round=2, params={"n_estimators": 5})


def test_xgboost_objective_reads_the_rows_its_worker_resorted(client, data, train_frame):
    # Whole queries per partition but rows interleaved: XGBoost sorts each worker's rows by
    # qid, so an objective holding arrays from the client would see the wrong rows.
    objective = ranknet()
    mixed = gdask.place_partitions(client, train_frame.map_partitions(lambda part: part.sample(frac=1.0, random_state=1)))
    with pytest.raises(ValueError, match="must be contiguous"):
        gdask.check_partitions(mixed)
    SEEN.clear()
    booster = gdask.train_xgboost(client, mixed, Recorder(objective), num_boost_round=30, params={"eta": 0.2}, check=False)
    assert_whole_queries_on_two_workers(SEEN, data[0].group)
    reference = gdask.train_xgboost(client, train_frame, objective, num_boost_round=30, params={"eta": 0.2})
    test = data[1]
    assert ndcg(test.y, booster.inplace_predict(test.X), test.group, k=10) == pytest.approx(
        ndcg(test.y, reference.inplace_predict(test.X), test.group, k=10), abs=0.01
    )


def test_xgboost_early_stopping_on_the_exact_metric(client, train_frame, test_frame):
    history: dict = {}
    booster = gdask.train_xgboost(
        client,
        train_frame,
        gbrank.listmle(ties="input"),
        num_boost_round=300,
        params={"eta": 0.5},
        evals=[(test_frame, "test")],
        early_stopping_rounds=3,
        evals_result=history,
    )
    watched = history["test"]["gbrank-ndcg@10"]
    assert len(watched) < 300
    assert booster.best_iteration == int(np.argmax(watched)) and len(watched) == booster.best_iteration + 4


def test_engine_objective_names(client, data, train_frame):
    test = data[1]
    booster = gdask.train_lightgbm(client, train_frame, "lambdarank", num_boost_round=20)
    assert ndcg(test.y, booster.predict(test.X), test.group, k=10) > 0.7
    booster = gdask.train_xgboost(client, train_frame, "rank:ndcg", num_boost_round=20)
    assert ndcg(test.y, booster.inplace_predict(test.X), test.group, k=10) > 0.7


@pytest.mark.parametrize("train, name", [("train_lightgbm", "regression"), ("train_xgboost", "reg:squarederror")])
def test_an_objective_name_that_is_not_a_ranking_objective_is_refused(client, train_frame, train, name):
    with pytest.raises(ValueError, match="is not a ranking objective"):
        getattr(gdask, train)(client, train_frame, name, num_boost_round=2)


# ----------------------------------------------------------------------------- exact metrics
def test_evaluate_equals_one_machine_on_the_same_predictions(client, data, test_frame):
    model = Ranker(engine="lightgbm", n_estimators=20, n_jobs=1).fit(data[0].X, data[0].y, group=data[0].group)
    scores = gdask.predict(model.booster_, test_frame, FEATURES)
    local = test_frame.compute()
    local_scores = model.booster_.predict(local[FEATURES].to_numpy(), raw_score=True)
    sizes = qid_to_sizes(local["qid"].to_numpy())
    specs = ["ndcg@10", "map@5", "mrr"]
    per_query = gdask.evaluate(test_frame, scores, specs, per_query=True)
    np.testing.assert_array_equal(per_query.index, np.unique(local["qid"]))
    single = make_metrics(specs, prefix="")
    for spec in single.metrics:
        values = spec.func(local["label"].to_numpy(), local_scores, sizes, spec.k, **spec.options, per_query=True)
        np.testing.assert_array_equal(per_query[spec.name].to_numpy(), values)
    means = gdask.evaluate(test_frame, scores, specs)
    for name, value in single.evaluate(local["label"].to_numpy(), local_scores, sizes):
        assert means[name] == pytest.approx(value, rel=1e-12)
    # conventions pass through; excluded queries count in neither sum
    excluded = gdask.evaluate(test_frame, scores, "ndcg@10", no_relevant="exclude")
    expected = ndcg(local["label"].to_numpy(), local_scores, sizes, k=10, no_relevant="exclude")
    assert excluded["ndcg@10"] == pytest.approx(expected, rel=1e-12)


class ExactAndNaive(gdask.DistributedMetrics):
    """Reports the exact metric and each worker's own mean (which XGBoost then averages)."""

    local: dict = {}

    def __call__(self, preds, dmat):
        exact = super().__call__(preds, dmat)
        sizes = np.diff(dmat.get_uint_info("group_ptr").astype(np.int64))
        partial = self.partial(dmat.get_label(), preds, sizes)
        ExactAndNaive.local[distributed.get_worker().address] = partial
        return exact + [("naive-" + name, float(s / c)) for name, s, c in zip(self.names, *partial)]


def test_xgboost_averages_workers_unweighted_the_distributed_metric_does_not(client):
    # Equal rows per worker, but one holds 10x more (short) queries: the mean over queries
    # differs from the mean of the two workers' means.
    full = make_ranking(n_queries=400, docs_per_query=(3, 60), n_features=N_FEATURES, seed=5)
    short = full.subset(np.flatnonzero(full.group <= 8))
    long = full.subset(np.flatnonzero(full.group >= 50))
    long = long.subset(np.arange(np.searchsorted(np.cumsum(long.group), len(short)) + 1))
    halves = [to_pandas(short), to_pandas(long)]
    frame = gdask.place_partitions(client, dd.from_delayed([dask.delayed(h) for h in halves], meta=halves[0].head(0)))
    assert len({w[0] for w in client.who_has(frame).values()}) == 2
    dtrain = xgb.dask.DaskDMatrix(client, frame[FEATURES], frame["label"], qid=frame["qid"])
    ExactAndNaive.local.clear()
    out = xgb.dask.train(
        client,
        {"eta": 0.3, "disable_default_eval_metric": 1},
        dtrain,
        num_boost_round=5,
        obj=gbrank.listmle(),
        evals=[(dtrain, "train")],
        custom_metric=ExactAndNaive(make_metrics("ndcg@10")),
    )
    history = out["history"]["train"]
    exact = gdask.evaluate(frame, gdask.predict(out["booster"], frame), "ndcg@10")["ndcg@10"]
    assert history["gbrank-ndcg@10"][-1] == pytest.approx(exact, abs=1e-6)
    worker_means = [s[0] / c[0] for s, c in ExactAndNaive.local.values()]
    assert len(worker_means) == 2
    assert history["naive-gbrank-ndcg@10"][-1] == pytest.approx(np.mean(worker_means), abs=1e-6)
    assert abs(history["naive-gbrank-ndcg@10"][-1] - exact) > 1e-3


def test_distributed_metrics_on_one_machine_are_the_plain_metrics(data):
    test = data[1]
    dmat = xgb.DMatrix(test.X, test.y, qid=test.qid)
    preds = np.random.default_rng(0).normal(size=len(test)).astype(np.float32)
    got = gdask.distributed_metrics(["ndcg@10", "map@5"])(preds, dmat)
    expected = make_metrics(["ndcg@10", "map@5"]).xgboost(preds, dmat)
    assert [name for name, _ in got] == [name for name, _ in expected]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-12)
    empty = gdask.distributed_metrics("ndcg@10")(np.zeros(0, np.float32), xgb.DMatrix(np.empty((0, 3))))
    assert np.isnan(empty[0][1])


def test_err_without_max_label_takes_the_largest_label_of_all_the_data():
    # the top grade in one query: each partition's own maximum would rescale the other's ERR
    frame = pd.DataFrame({"qid": [1, 1, 1, 2, 2, 2], "label": [4, 0, 1, 1, 0, 0],
                          "score": [0.1, 0.9, 0.5, 0.9, 0.1, 0.5]})
    one_machine = gbrank.metrics.err(frame.label, frame.score, [3, 3])
    with dask.config.set(scheduler="synchronous"):
        got = gdask.evaluate(dd.from_pandas(frame, npartitions=2, sort=False), "score", ["err", "err@2"])
    assert got["err"] == pytest.approx(one_machine, rel=1e-12)
    assert got["err@2"] == pytest.approx(gbrank.metrics.err(frame.label, frame.score, [3, 3], k=2), rel=1e-12)
    metric = gdask.distributed_metrics("err")
    halves = [metric.partial(frame.label[rows].to_numpy(), frame.score[rows].to_numpy(), [3], label_max=4)
              for rows in (slice(0, 3), slice(3, 6))]
    sums = sum(halves)
    assert sums[0, 0] / sums[1, 0] == pytest.approx(one_machine, rel=1e-12)
    with pytest.raises(ValueError, match="logloss is a mean over rows"):
        gdask.distributed_metrics(["ndcg@10", "logloss"])


# ----------------------------------------------------------------------------- frames read from files
SOURCES = ["parquet", "parquet-arrow", "csv", "from_pandas", "repartitioned"]


def as_read(frame: pd.DataFrame, kind: str, folder, *, whole_queries: bool = False) -> "dd.DataFrame":
    """``frame`` as a user's pipeline gets it: read back from several files (Dask fuses the
    reads of files when few columns are selected), or cut by Dask. With ``whole_queries``
    every file holds whole queries (``frame``'s rows grouped by query)."""
    if kind in ("parquet", "parquet-arrow", "csv"):
        folder.mkdir()
        if whole_queries:
            starts = np.flatnonzero(np.r_[True, frame["qid"].to_numpy()[1:] != frame["qid"].to_numpy()[:-1]])
            cuts = [starts[q[0]] for q in np.array_split(np.arange(starts.size), 5)[1:]]
            files = np.split(np.arange(len(frame)), cuts)
        else:
            files = np.array_split(np.arange(len(frame)), 5)
        for i, rows in enumerate(files):
            part = frame.iloc[rows].reset_index(drop=True)
            if kind == "csv":
                part.to_csv(folder / f"part-{i}.csv", index=False)
            else:
                part.to_parquet(folder / f"part-{i}.parquet")
        if kind == "csv":
            # Dask cuts a file into blocks of bytes, wherever its queries end, unless told not to
            return dd.read_csv(str(folder / "*.csv"), blocksize=None if whole_queries else 200_000)
        return dd.read_parquet(str(folder), filesystem="arrow" if kind == "parquet-arrow" else "fsspec")
    if kind == "from_pandas":
        return dd.from_pandas(frame.reset_index(drop=True), npartitions=4, sort=False)
    return dd.from_pandas(frame.reset_index(drop=True), npartitions=3, sort=False).repartition(npartitions=5)


def fused(df) -> bool:
    """Whether Dask reads the query ids in other partitions than the whole frame."""
    return len(df["qid"].to_delayed()) != len(df.to_delayed())


@pytest.mark.parametrize("kind", SOURCES)
def test_partition_and_place_frames_read_from_files(client, data, kind, tmp_path):
    source = to_pandas(data[0]).sample(frac=1.0, random_state=3)
    df = as_read(source, kind, tmp_path / "train")
    if kind.startswith("parquet"):
        assert fused(df), "the case of the bug: Dask reads one column of the files in fewer partitions"
    placed = gdask.place_partitions(client, gdask.partition_queries(df, npartitions=3))
    assert sorted({h[0] for h in holders(client, placed)}) == sorted(client.nthreads())
    table = gdask.check_partitions(placed, ascending=True)
    assert table["queries"].sum() == data[0].n_queries
    # every query whole, queries ascending, the rows of a query in input order (the frame's
    # order as Dask reads it: files in name order, or by their index statistics)
    expected = df.compute().sort_values("qid", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(expected.sort_values(FEATURES).reset_index(drop=True),
                                  source.sort_values(FEATURES).reset_index(drop=True), check_dtype=False)
    pd.testing.assert_frame_equal(placed.compute().reset_index(drop=True), expected, check_dtype=False)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_train_predict_and_evaluate_on_frames_read_from_files(client, data, kind, tmp_path):
    """The files hold whole queries, so both engines train on them as read, and the
    recipe's predict and evaluate score them."""
    train = as_read(to_pandas(data[0]), kind, tmp_path / "train", whole_queries=True)
    test = as_read(to_pandas(data[1]), kind, tmp_path / "test", whole_queries=True)
    objective = gbrank.listmle(ties="input")
    for trainer in (gdask.train_lightgbm, gdask.train_xgboost):
        SEEN.clear()
        booster = trainer(client, train, Recorder(objective), num_boost_round=5)
        trained = Counter(s for _, sizes in set(SEEN) for s in sizes)
        assert trained == Counter(data[0].group.tolist()), "a query was cut, or rows went missing"
    scores = gdask.predict(booster, test)
    got = gdask.evaluate(test, scores, ["ndcg@10", "map@5"])
    local = booster.inplace_predict(data[1].X)
    assert got["ndcg@10"] == pytest.approx(ndcg(data[1].y, local, data[1].group, k=10), rel=1e-12)
    np.testing.assert_allclose(scores.compute().to_numpy(), local, rtol=1e-6)
    by_column = gdask.evaluate(test.assign(score=scores), "score", "ndcg@10")
    assert by_column["ndcg@10"] == pytest.approx(got["ndcg@10"], rel=1e-12)


def test_scores_of_another_frame_are_refused_with_the_fix(client, data, tmp_path):
    test = as_read(to_pandas(data[1]), "parquet", tmp_path / "test", whole_queries=True)
    other = dd.from_pandas(to_pandas(data[1]).head(len(data[1]) // 2), npartitions=test.npartitions, sort=False)
    with pytest.raises(ValueError, match=r"rows but \d+ scores: compute the scores from this frame"):
        gdask.evaluate(test, other["f0"])


def test_predict_uses_the_best_round_of_an_early_stopped_xgboost_model(client, train_frame, test_frame, data):
    history: dict = {}
    booster = gdask.train_xgboost(client, train_frame, gbrank.listmle(ties="input"), num_boost_round=300,
                                  params={"eta": 0.5}, evals=[(test_frame, "test")], early_stopping_rounds=3,
                                  evals_result=history)
    best = booster.best_iteration + 1
    assert best < booster.num_boosted_rounds()
    scores = gdask.predict(booster, test_frame).compute().to_numpy()
    local = test_frame.compute()[FEATURES].to_numpy()
    np.testing.assert_allclose(scores, booster.inplace_predict(local, iteration_range=(0, best)), rtol=1e-6)
    assert not np.allclose(scores, booster.inplace_predict(local), rtol=1e-6)
    # the model is scored as early stopping scored it
    value = gdask.evaluate(test_frame, gdask.predict(booster, test_frame), "ndcg@10")["ndcg@10"]
    assert value == pytest.approx(max(history["test"]["gbrank-ndcg@10"]), abs=1e-6)
    every = gdask.predict(booster, test_frame, rounds=booster.num_boosted_rounds()).compute().to_numpy()
    np.testing.assert_allclose(every, booster.inplace_predict(local), rtol=1e-6)


def test_categorical_features_are_refused_with_the_fix(client, train_frame):
    frame = train_frame.assign(f0=train_frame["f0"].round(1).astype("category"))
    for call in (lambda: gdask.train_lightgbm(client, frame, gbrank.listmle(), num_boost_round=1),
                 lambda: gdask.train_xgboost(client, frame, gbrank.listmle(), num_boost_round=1)):
        with pytest.raises(TypeError, match=r"numeric features; \['f0'\] hold category values.*cat\.codes.*Ranker"):
            call()
    booster = gdask.train_xgboost(client, train_frame, gbrank.listmle(), num_boost_round=1)
    with pytest.raises(TypeError, match="numeric features"):
        gdask.predict(booster, frame)
