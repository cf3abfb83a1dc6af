"""Speed of the position-based click likelihoods, side by side, over sizes.

For lists of 30 and 100 documents with simulated 0/1 clicks and known propensities
``1/p``, it times:

* one call alone (best of five), ``pbm_cloglog`` against ``pbm_listnet``;
* one LightGBM round inside training (20 rounds, one thread, 15 leaves), both of them and
  LightGBM's own ``lambdarank`` on the same clicks.

It prints the ratios and the machine's load average before and after:

    python benchmarks/bench_click_speed.py                      # 30k, 300k (two list lengths), 900k rows
    python benchmarks/bench_click_speed.py --sizes 1000x30 3000x100
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import gbrank

ROUNDS = 20
PARAMS = {"num_threads": 1, "verbose": -1, "num_leaves": 15}


def clicks_of(n_queries: int, length: int, seed: int = 0):
    """Features, 0/1 clicks (any of three sessions under the position-based model), sizes and
    positions of ``n_queries`` lists of ``length`` documents."""
    rng = np.random.default_rng(seed)
    sizes = np.full(n_queries, length)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 10))
    position = np.tile(np.arange(1, length + 1), n_queries)
    relevance = 1.0 / (1.0 + np.exp(-X[:, 0]))
    clicks = (rng.random(n) < -np.expm1(-3.0 * relevance / position)).astype(np.float64)
    return X, clicks, sizes, position


def best_call(binding, scores, repeat: int = 5) -> float:
    binding.grad_hess(scores)  # compile or load, and prepare
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        binding.grad_hess(scores)
        times.append(time.perf_counter() - start)
    return min(times)


def per_round(params: dict, X, labels, sizes) -> float:
    import lightgbm as lgb

    start = time.perf_counter()
    lgb.train(params, lgb.Dataset(X, labels, group=sizes), ROUNDS)
    return (time.perf_counter() - start) / ROUNDS


def measure(n_queries: int, length: int) -> dict:
    X, clicks, sizes, position = clicks_of(n_queries, length)
    scores = np.random.default_rng(1).normal(size=clicks.size)
    theta = 1.0 / np.arange(1, length + 1)
    row = {"rows": clicks.size, "length": length}
    for name, factory in (("pbm_listnet", gbrank.pbm_listnet), ("pbm_cloglog", gbrank.pbm_cloglog)):
        row[f"{name} alone"] = best_call(factory(propensity=theta).bind(clicks, sizes, position=position), scores)
        objective = gbrank.engines.with_position(factory(propensity=theta), position)
        row[f"{name} round"] = per_round({**PARAMS, "objective": objective}, X, clicks, sizes)
    row["lambdarank round"] = per_round({**PARAMS, "objective": "lambdarank"}, X, clicks.astype(np.int64), sizes)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1000x30", "10000x30", "3000x100", "30000x30"],
                        help="QUERIESxLENGTH, one per size")
    args = parser.parse_args(argv)
    print("load average (1, 5, 15 min) at the start: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print("| rows | list | alone: cloglog / listnet ms | ratio | round ms: cloglog / listnet / lambdarank |")
    print("|---:|---:|---|---:|---|")
    for size in args.sizes:
        n_queries, length = (int(v) for v in size.split("x"))
        r = measure(n_queries, length)
        ratio = r["pbm_cloglog alone"] / r["pbm_listnet alone"]
        print(f"| {r['rows']:,} | {length} | {1e3 * r['pbm_cloglog alone']:.2f} / {1e3 * r['pbm_listnet alone']:.2f} "
              f"| {ratio:.1f} | {1e3 * r['pbm_cloglog round']:.1f} / {1e3 * r['pbm_listnet round']:.1f} / "
              f"{1e3 * r['lambdarank round']:.1f} |", flush=True)
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
