"""Distributed training throughput on Dask: rows per second with 1 and 2 workers.

Generates ranking data with ``gbrank.datasets.make_ranking``, partitions it by query
(``gbrank.dask.partition_queries``), pins the partitions to the workers and trains a gbrank
objective with ``gbrank.dask.train_lightgbm`` and ``gbrank.dask.train_xgboost`` on a
``distributed.LocalCluster`` of 1 and of 2 worker processes (one thread each). For reference
it also trains the same model in this process without Dask, with 1 and 2 threads. Every
figure in the table comes from this one run:

* rows/s: training rows times boosting rounds, divided by the training seconds (the time to
  partition and place the data is shown apart);
* speed-up: rows/s against the 1-worker (or 1-thread) run of the same engine;
* NDCG@10 of the model on held-out queries, as a check that the runs learn the same thing.

    python benchmarks/bench_dask.py                                  # 200k rows, 50 rounds
    python benchmarks/bench_dask.py --queries 500 --rounds 20        # a quick look
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import gbrank
from gbrank.datasets import make_ranking, split_queries
from gbrank.metrics import ndcg
from gbrank.ranker import Ranker


def frame(data) -> pd.DataFrame:
    out = pd.DataFrame(data.X, columns=[f"f{i}" for i in range(data.n_features)])
    out["label"] = data.y
    out["qid"] = data.qid
    return out


def run_dask(engine, n_workers, train, test, args):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from gbrank import dask as gdask

    objective = gbrank.listmle_topk(k=10)
    with LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
    ) as cluster, Client(cluster) as client:
        start = time.perf_counter()
        # Rows arrive shuffled, in chunks already on the cluster (as if read from files).
        rows = frame(train).sample(frac=1.0, random_state=0)
        chunks = client.scatter([rows.iloc[at] for at in np.array_split(np.arange(len(rows)), 4)])
        source = dd.from_delayed(chunks, meta=rows.head(0), verify_meta=False)
        parts = gdask.partition_queries(source, npartitions=n_workers * args.parts_per_worker)
        parts = gdask.place_partitions(client, parts)
        prepare = time.perf_counter() - start
        start = time.perf_counter()
        if engine == "lightgbm":
            booster = gdask.train_lightgbm(
                client, parts, objective, num_boost_round=args.rounds, params={"num_leaves": args.leaves}, check=False
            )
            scores = booster.predict(test.X)
        else:
            booster = gdask.train_xgboost(
                client,
                parts,
                objective,
                num_boost_round=args.rounds,
                params={"max_leaves": args.leaves, "eta": 0.1},
                check=False,
            )
            scores = booster.inplace_predict(test.X)
        seconds = time.perf_counter() - start
    return seconds, prepare, ndcg(test.y, scores, test.group, k=10)


def run_local(engine, threads, train, test, args):
    model = Ranker(
        gbrank.listmle_topk(k=10), engine=engine, n_estimators=args.rounds, num_leaves=args.leaves, n_jobs=threads
    )
    start = time.perf_counter()
    model.fit(train.X, train.y, group=train.group)
    seconds = time.perf_counter() - start
    return seconds, 0.0, model.score(test.X, test.y, group=test.group)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000, help="training queries (default 2000)")
    parser.add_argument("--docs", type=int, default=100, help="mean documents per query (default 100)")
    parser.add_argument("--features", type=int, default=50, help="features (default 50)")
    parser.add_argument("--rounds", type=int, default=50, help="boosting rounds (default 50)")
    parser.add_argument("--leaves", type=int, default=31, help="leaves per tree (default 31)")
    parser.add_argument("--parts-per-worker", type=int, default=2, help="partitions per worker (default 2)")
    parser.add_argument("--engines", default="lightgbm,xgboost", help="comma-separated engines")
    args = parser.parse_args(argv)

    n_test = max(1, args.queries // 4)
    full = make_ranking(n_queries=args.queries + n_test, docs_per_query=args.docs, n_features=args.features, seed=0)
    train, test = split_queries(full, (args.queries, n_test), seed=0)
    print(
        f"train: {len(train):,} rows, {train.n_queries:,} queries, {train.n_features} features; "
        f"{args.rounds} rounds of {args.leaves}-leaf trees; objective listmle_topk(k=10)"
    )
    header = f"{'engine':<9} {'setup':<22} {'prepare s':>9} {'train s':>8} {'rows/s':>12} {'speed-up':>8} {'NDCG@10':>8}"
    print(header)
    print("-" * len(header))
    for engine in args.engines.split(","):
        for label, runner in (("dask, {} worker(s)", run_dask), ("no dask, {} thread(s)", run_local)):
            base = None
            for n in (1, 2):
                seconds, prepare, score = runner(engine, n, train, test, args)
                rate = len(train) * args.rounds / seconds
                base = base or rate
                print(
                    f"{engine:<9} {label.format(n):<22} {prepare:>9.2f} {seconds:>8.2f} {rate:>12,.0f} "
                    f"{rate / base:>8.2f} {score:>8.4f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
