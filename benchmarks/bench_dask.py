"""Distributed training throughput on Dask: gbrank objectives beside the engines' own.

Generates ranking data with ``gbrank.datasets.make_ranking``, partitions it by query
(``gbrank.dask.partition_queries``) and pins the partitions to the workers of a
``distributed.LocalCluster`` of 1 and then 2 worker processes (one thread each). On each
cluster, from the same placed partitions, it trains with ``gbrank.dask.train_lightgbm`` and
``gbrank.dask.train_xgboost`` both a gbrank objective (``listmle_topk(k=10)``) and the
engine's built-in ranking objective (LightGBM ``lambdarank``, XGBoost ``rank:ndcg``). Every
figure in the table comes from this one run:

* rows/s: training rows times boosting rounds, divided by the training seconds (the fastest
  of ``--repeat`` trainings; the time to partition and place the data is shown apart, once
  per cluster);
* speed-up: rows/s against the 1-worker run of the same engine and objective;
* NDCG@10 of the model on held-out queries, as a check that the runs learn the same thing.

The last lines print, per engine, gbrank's 1->2 worker speed-up beside the built-in's.
``--local`` adds the same models trained in this process without Dask (1 and 2 threads).

    python benchmarks/bench_dask.py                                  # 200k rows, 50 rounds
    python benchmarks/bench_dask.py --queries 500 --rounds 20        # a quick look
    python benchmarks/bench_dask.py --repeat 3                       # less noise
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


BUILTIN = {"lightgbm": "lambdarank", "xgboost": "rank:ndcg"}


def objectives(engine):
    return {"gbrank listmle_topk": gbrank.listmle_topk(k=10), f"built-in {BUILTIN[engine]}": BUILTIN[engine]}


def run_dask(n_workers, engines, train, test, args):
    """Rows ``(engine, objective, seconds, prepare, ndcg)`` for every engine and objective on one cluster."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from gbrank import dask as gdask

    rows = []
    with LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
    ) as cluster, Client(cluster) as client:
        start = time.perf_counter()
        # Rows arrive shuffled, in chunks already on the cluster (as if read from files).
        shuffled = frame(train).sample(frac=1.0, random_state=0)
        chunks = client.scatter([shuffled.iloc[at] for at in np.array_split(np.arange(len(shuffled)), 4)])
        source = dd.from_delayed(chunks, meta=shuffled.head(0), verify_meta=False)
        parts = gdask.partition_queries(source, npartitions=n_workers * args.parts_per_worker)
        parts = gdask.place_partitions(client, parts)
        prepare = time.perf_counter() - start
        for engine in engines:
            for name, objective in objectives(engine).items():
                best = np.inf
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    scores = train_on(gdask, client, parts, engine, objective, test, args)
                    best = min(best, time.perf_counter() - start)
                rows.append((engine, name, best, prepare, ndcg(test.y, scores, test.group, k=10)))
    return rows


def train_on(gdask, client, parts, engine, objective, test, args):
    """Train on the placed partitions; return the scores of the held-out rows."""
    if engine == "lightgbm":
        booster = gdask.train_lightgbm(
            client, parts, objective, num_boost_round=args.rounds, params={"num_leaves": args.leaves}, check=False
        )
        return booster.predict(test.X, raw_score=True)
    booster = gdask.train_xgboost(
        client,
        parts,
        objective,
        num_boost_round=args.rounds,
        params={"max_leaves": args.leaves, "grow_policy": "lossguide", "max_depth": 0, "eta": 0.1},
        check=False,
    )
    return booster.inplace_predict(test.X, predict_type="margin")


def run_local(engine, objective, threads, train, test, args):
    model = Ranker(objective, engine=engine, n_estimators=args.rounds, num_leaves=args.leaves, n_jobs=threads)
    start = time.perf_counter()
    model.fit(train.X, train.y, group=train.group)
    seconds = time.perf_counter() - start
    return seconds, model.score(test.X, test.y, group=test.group)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000, help="training queries (default 2000)")
    parser.add_argument("--docs", type=int, default=100, help="mean documents per query (default 100)")
    parser.add_argument("--features", type=int, default=50, help="features (default 50)")
    parser.add_argument("--rounds", type=int, default=50, help="boosting rounds (default 50)")
    parser.add_argument("--leaves", type=int, default=31, help="leaves per tree (default 31)")
    parser.add_argument("--parts-per-worker", type=int, default=2, help="partitions per worker (default 2)")
    parser.add_argument("--engines", default="lightgbm,xgboost", help="comma-separated engines")
    parser.add_argument("--repeat", type=int, default=1, help="trainings per setting; the fastest counts (default 1)")
    parser.add_argument("--local", action="store_true", help="also train without Dask, 1 and 2 threads")
    args = parser.parse_args(argv)
    engines = args.engines.split(",")

    n_test = max(1, args.queries // 4)
    full = make_ranking(n_queries=args.queries + n_test, docs_per_query=args.docs, n_features=args.features, seed=0)
    train, test = split_queries(full, (args.queries, n_test), seed=0)
    # compile the gbrank kernels outside the timed runs (the workers load numba's cache)
    gbrank.listmle_topk(k=10).grad_hess(train.y[:50], np.zeros(50), [50])
    print(
        f"train: {len(train):,} rows, {train.n_queries:,} queries, {train.n_features} features; "
        f"{args.rounds} rounds of {args.leaves}-leaf trees"
    )
    results = {}
    for n in (1, 2):
        for engine, name, seconds, prepare, score in run_dask(n, engines, train, test, args):
            results[(engine, name, f"dask, {n} worker(s)")] = (prepare, seconds, score)
    if args.local:
        for engine in engines:
            for name, objective in objectives(engine).items():
                for n in (1, 2):
                    seconds, score = run_local(engine, objective, n, train, test, args)
                    results[(engine, name, f"no dask, {n} thread(s)")] = (0.0, seconds, score)
    header = (
        f"{'engine':<9} {'objective':<24} {'setup':<20} {'prepare s':>9} {'train s':>8} {'rows/s':>12} "
        f"{'speed-up':>8} {'NDCG@10':>8}"
    )
    print(header)
    print("-" * len(header))
    speedups = {}
    for (engine, name, setup), (prepare, seconds, score) in results.items():
        rate = len(train) * args.rounds / seconds
        base_setup = setup.replace("2", "1")
        base = len(train) * args.rounds / results[(engine, name, base_setup)][1]
        speedups[(engine, name, setup)] = rate / base
        print(
            f"{engine:<9} {name:<24} {setup:<20} {prepare:>9.2f} {seconds:>8.2f} {rate:>12,.0f} "
            f"{rate / base:>8.2f} {score:>8.4f}",
            flush=True,
        )
    print()
    for engine in engines:
        ours, theirs = (speedups[(engine, name, "dask, 2 worker(s)")] for name in objectives(engine))
        print(
            f"{engine}: 1 -> 2 workers, gbrank {ours:.2f}x, built-in {BUILTIN[engine]} {theirs:.2f}x, "
            f"ratio {ours / theirs:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
