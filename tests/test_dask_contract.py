"""Statistics of the whole data on a two-worker Dask cluster: the label maximum of ERR and the
propensity estimate are those of one machine; XGBoost gets every query's rows in display order."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import gbrank  # noqa: E402
from gbrank import dask as gdask  # noqa: E402
from gbrank.datasets import make_ranking, simulate_clicks  # noqa: E402
from gbrank.objectives.clicks import IPSListNet  # noqa: E402
from gbrank.objectives.lambdarank import LambdaRank  # noqa: E402
from gbrank.objectives.propensity import estimate_propensity  # noqa: E402

XGB = {"max_depth": 3, "eta": 0.3, "min_child_weight": 0.0, "tree_method": "hist", "nthread": 1}
RECORD: list = []


@pytest.fixture(scope="module")
def client():
    # threads in this process: what the workers record is visible here; Dask's default
    # scheduling (work stealing on), as a user has it
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


def frame_of(X, y, qid, **columns) -> pd.DataFrame:
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["label"] = y
    frame["qid"] = qid
    for name, values in columns.items():
        frame[name] = values
    return frame


def placed(client, frame):
    return gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(frame, npartitions=2, sort=False),
                                                                  npartitions=2))


def held_by(client, df) -> list:
    """The worker holding each partition of a placed frame, in partition order: two
    partitions, each on its own worker."""
    futures = distributed.futures_of(df)
    held = client.who_has(futures)
    owners = [worker for f in futures for worker in held[f.key]]
    assert len(futures) == 2 and len(owners) == 2 and len(set(owners)) == 2, held
    return owners


def _worker():
    try:
        return distributed.get_worker().address
    except ValueError:  # one machine
        return None


class RecordingERR(LambdaRank):
    """ERR LambdaRank that notes, on whichever worker, its labels, sizes and gradients."""

    def _bound_gradients(self, binding, scores, init_score=None):
        out = super()._bound_gradients(binding, scores, init_score)
        RECORD.append((np.array(binding.labels), np.array(scores), np.diff(binding.offsets), out[0].copy(),
                       distributed.get_worker().address))
        return out


def recording_clicks():
    return RecordingClicks("estimate", clip=None, warmup=1, update_every=1, hess_floor=1e-6, hess_scale=1.0)


class RecordingClicks(IPSListNet):
    """IPS softmax loss that notes, on whichever worker, its propensity estimate."""

    def _bound_gradients(self, binding, scores, init_score=None):
        out = super()._bound_gradients(binding, scores, init_score)
        RECORD.append((binding.propensity_, binding.n_rows, _worker()))
        return out


@pytest.mark.parametrize("engine", ["xgboost", "lightgbm"])
def test_err_gradients_use_the_whole_frames_label_maximum(client, engine):
    d = make_ranking(400, 20, 20, seed=3)
    y = np.minimum(d.y, 4)
    # the first half of the queries (one partition) tops out at 2, the other at 4
    low = d.qid < 200
    y[low] = np.minimum(y[low], 2)
    y[~low & (np.arange(y.size) % 10 == 0)] = 4
    whole = gbrank.lambdarank(measure="err", max_label=4, hess_floor=0.0)
    df = placed(client, frame_of(d.X, y, d.qid))
    RECORD.clear()
    objective = RecordingERR("err", hess_floor=0.0)
    if engine == "xgboost":
        gdask.train_xgboost(client, df, objective, num_boost_round=1, params=XGB)
    else:
        gdask.train_lightgbm(client, df, objective, num_boost_round=1,
                             params={"num_leaves": 4, "min_data_in_leaf": 5})
    local_maxima = {}
    for labels, preds, sizes, grad, worker in RECORD:
        if labels.size == 0:
            continue
        local_maxima[worker] = float(labels.max())
        # one machine: every query's gradient with the label maximum of all the data
        np.testing.assert_allclose(grad, whole.grad_hess(labels, preds, sizes)[0], rtol=1e-12, atol=1e-15)
    # each half of the queries on the worker place_partitions put it on
    first, second = held_by(client, df)
    assert local_maxima == {first: 2.0, second: 4.0}
    assert gbrank.lambdarank(measure="err").grad_hess(y, np.zeros(y.size), d.group)[0] == pytest.approx(
        whole.grad_hess(y, np.zeros(y.size), d.group)[0])


def test_propensities_are_estimated_over_all_workers(client):
    d = make_ranking(400, 10, 20, seed=8)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=80, top_k=10, eta=1.0, seed=4)
    rounds = 4
    df = placed(client, frame_of(d.X, log.clicks.astype(float), d.qid, position=log.position))
    RECORD.clear()
    gdask.train_xgboost(client, df, recording_clicks(), position_col="position",
                        num_boost_round=rounds, params=XGB)
    last_round = [r for r in RECORD[-2:] if r[1]]
    # the last round's gradients: one call on each worker that place_partitions gave rows
    assert sorted(worker for _, _, worker in last_round) == sorted(held_by(client, df))
    distributed_estimates = [estimate for estimate, _, _ in last_round]
    # one machine, the same rows in the same order (partition_queries sorts by query id)
    local = recording_clicks()
    RECORD.clear()
    xgb.train({**XGB, "base_score": 0.0}, xgb.DMatrix(d.X, log.clicks.astype(float), qid=d.qid), rounds,
              obj=gbrank.engines.with_position(local, log.position))
    for estimate in distributed_estimates:
        np.testing.assert_allclose(estimate, RECORD[-1][0], rtol=1e-5)
    # per worker, the estimate would differ: half of the queries alone
    half = d.qid < 200
    sizes = np.bincount(d.qid[half])
    alone = estimate_propensity(np.zeros(half.sum()), log.clicks[half].astype(float), log.position[half],
                                np.concatenate(([0], np.cumsum(sizes))), 10)
    whole = estimate_propensity(np.zeros(d.y.size), log.clicks.astype(float), log.position,
                                np.concatenate(([0], np.cumsum(d.group))), 10)
    assert np.abs(alone - whole).max() > 1e-3


def test_estimate_propensity_sums_over_workers_as_one_machine():
    d = make_ranking(80, 10, 5, seed=9)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=8, eta=1.5, seed=5)
    scores = np.random.default_rng(0).normal(size=d.y.size)
    offsets = np.concatenate(([0], np.cumsum(d.group)))
    whole = estimate_propensity(scores, log.clicks.astype(float), log.position, offsets, 8)
    barrier = threading.Barrier(2)
    sums: dict = {}
    lock = threading.Lock()

    def reduce(values):
        # an allreduce between two threads
        key = threading.get_ident()
        with lock:
            sums.setdefault("parts", {})[key] = values.copy()
        barrier.wait()
        total = sum(sums["parts"].values())
        barrier.wait()
        return total

    out = {}

    def worker(name, rows):
        query_offsets = offsets[rows] - offsets[rows[0]]
        lo, hi = offsets[rows[0]], offsets[rows[-1]]
        out[name] = estimate_propensity(scores[lo:hi], log.clicks[lo:hi].astype(float), log.position[lo:hi],
                                        query_offsets, 8, reduce=reduce)

    threads = [threading.Thread(target=worker, args=(n, r)) for n, r in (("a", np.arange(0, 31)), ("b", np.arange(30, 81)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(out["a"], whole, rtol=1e-10)
    np.testing.assert_allclose(out["b"], whole, rtol=1e-10)


def test_xgboost_refuses_frames_it_would_reorder(client):
    d = make_ranking(40, 8, 4, seed=2)
    frame = frame_of(d.X, d.y, d.qid)
    descending = frame.iloc[np.lexsort((np.arange(len(frame)), -d.qid))]
    # whole queries in each partition, their ids descending
    halves = [descending[descending.qid >= 20], descending[descending.qid < 20]]
    df = dd.concat([dd.from_pandas(half, npartitions=1, sort=False) for half in halves])
    assert (gdask.check_partitions(df)["queries"] == 20).all()
    with pytest.raises(ValueError, match=r"comes after query .*partition_queries"):
        gdask.train_xgboost(client, df, gbrank.listnet(), num_boost_round=1, params=XGB)
    gdask.train_xgboost(client, placed(client, descending), gbrank.listnet(), num_boost_round=1, params=XGB)


def test_click_objectives_name_the_position_column(client):
    d = make_ranking(30, 8, 4, seed=1)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=20, top_k=8, seed=1)
    df = placed(client, frame_of(d.X, log.clicks.astype(float), d.qid, position=log.position))
    with pytest.raises(ValueError, match=r"position_col='position'"):
        gdask.train_xgboost(client, df, gbrank.ips_listnet(), num_boost_round=1, params=XGB)
    with pytest.raises(ValueError, match="train_xgboost"):
        gdask.train_lightgbm(client, df, gbrank.ips_listnet(), num_boost_round=1, features=["f0", "f1", "f2", "f3"])


def test_an_empty_worker_joins_the_propensity_estimate(client):
    d = make_ranking(80, 10, 6, seed=11)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=60, top_k=10, eta=1.0, seed=6)
    full = placed(client, frame_of(d.X, log.clicks.astype(float), d.qid, position=log.position))
    kept = full[full["qid"] >= 40]  # the first partition, on one worker, is left empty
    assert (gdask.check_partitions(kept)["rows"] == 0).sum() == 1
    RECORD.clear()
    gdask.train_xgboost(client, kept, recording_clicks(), position_col="position",
                        num_boost_round=3, params=XGB)
    distributed_estimate = RECORD[-1][0]
    rows = d.qid >= 40
    RECORD.clear()
    xgb.train({**XGB, "base_score": 0.0}, xgb.DMatrix(d.X[rows], log.clicks[rows].astype(float), qid=d.qid[rows]), 3,
              obj=gbrank.engines.with_position(recording_clicks(), log.position[rows]))
    np.testing.assert_allclose(distributed_estimate, RECORD[-1][0], rtol=1e-5)


def test_placement_asks_the_scheduler_for_its_workers_when_its_identity_fails(client, monkeypatch):
    # Client.scheduler_info falls back, when its fetch fails (as under load), to a cached
    # identity without the workers: placement read "no workers" there
    async def no_reply(*args, **kwargs):
        raise OSError("no reply")

    monkeypatch.setattr(client.scheduler, "identity", no_reply, raising=False)
    assert not client.scheduler_info()["workers"]
    d = make_ranking(40, 6, 4, seed=2)
    df = placed(client, frame_of(d.X, d.y, d.qid))
    assert sorted(held_by(client, df)) == sorted(client.nthreads())
