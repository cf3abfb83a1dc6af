"""Distributed training of a gbrank objective on a local Dask cluster.

A listwise loss couples the documents of a query, so every query must sit whole in one
partition: ``gbrank.dask.partition_queries`` moves the rows there, ``place_partitions`` pins
the partitions to the workers, and the engines train data-parallel. ``gbrank.dask.evaluate``
computes NDCG over all queries exactly, whatever the partitioning.

    python examples/dask_local_cluster.py

Needs the dask extra: ``pip install "gbrank[dask]"``.
"""

import logging

import dask.dataframe as dd
import pandas as pd
from distributed import Client, LocalCluster

import gbrank
from gbrank import dask as gdask
from gbrank.datasets import make_ranking, split_queries


def frame(part):
    df = pd.DataFrame(part.X, columns=[f"f{j}" for j in range(part.n_features)])
    df["label"] = part.y
    df["qid"] = part.qid
    return df


def main():
    data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
    train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)

    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster, Client(cluster) as client:
        # The rows arrive shuffled over four partitions, as if read from files.
        rows = frame(train).sample(frac=1.0, random_state=0)
        source = dd.from_pandas(rows, npartitions=4, sort=False)
        train_df = gdask.place_partitions(client, gdask.partition_queries(source, npartitions=2))
        valid_df = gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(frame(valid), npartitions=2)))
        test_df = gdask.partition_queries(dd.from_pandas(frame(test), npartitions=2))

        booster = gdask.train_xgboost(
            client,
            train_df,
            gbrank.listmle_topk(k=10),
            num_boost_round=300,
            params={"eta": 0.1, "max_depth": 4, "min_child_weight": 1e-3},
            evals=[(valid_df, "valid")],
            metrics="ndcg@10",
            early_stopping_rounds=30,
        )
        scores = gdask.predict(booster, test_df)
        value = gdask.evaluate(test_df, scores, "ndcg@10")["ndcg@10"]
        print(f"{'XGBoost on Dask':<18} test NDCG@10 = {value:.4f}   (best round {booster.best_iteration + 1})")

        booster = gdask.train_lightgbm(
            client,
            train_df,
            gbrank.listmle_topk(k=10),
            num_boost_round=60,
            params={"learning_rate": 0.1, "num_leaves": 15},
        )
        scores = gdask.predict(booster, test_df)
        value = gdask.evaluate(test_df, scores, "ndcg@10")["ndcg@10"]
        print(f"{'LightGBM on Dask':<18} test NDCG@10 = {value:.4f}")


if __name__ == "__main__":
    main()
