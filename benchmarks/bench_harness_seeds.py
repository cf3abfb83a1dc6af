"""How many seeds does the harness need before its ranking of methods stops depending on them?

Runs the harness's grid once with ``--seeds`` (default 0..5; the folds do not depend on the
seeds) and then compares the rankings of the methods by test NDCG@10 that disjoint sets of
those seeds give: every pair of single seeds, of disjoint 2-seed sets, of disjoint 3-seed sets.
Per set size it prints Kendall's tau between the two rankings, the number of method pairs
ordered differently and the largest gap (in the all-seed means) between two methods that swap,
how many seed sets find the same methods significantly different from the baseline (Holm),
whether the best method is the same, and the wall time one seed of this configuration costs,
all from this one run::

    python benchmarks/bench_harness_seeds.py                       # the default main job's data
    python benchmarks/bench_harness_seeds.py --folds 3 --seeds 0,1,2,3,4,5
"""

from __future__ import annotations

import argparse
import collections
import itertools
import time

import numpy as np
from scipy import stats

from gbrank.bench import BenchConfig, TreeParams, run_benchmark, significance


def ranking(per_query, seeds) -> list[str]:
    """Methods by mean test NDCG@10 over queries, each query's value averaged over ``seeds``."""
    part = per_query[per_query["seed"].isin(seeds)]
    by_query = part.groupby(["method", "fold", "query"], sort=False)["ndcg@10"].mean()
    means = by_query.groupby("method", sort=False).mean()
    return list(means.sort_values(ascending=False, kind="stable").index), means


def compare(a: list[str], b: list[str]) -> tuple[float, int]:
    """Kendall's tau of two rankings of the same methods and their number of discordant pairs."""
    position = {m: i for i, m in enumerate(b)}
    tau = stats.kendalltau(np.arange(len(a)), [position[m] for m in a]).statistic
    discordant = sum(position[x] > position[y] for x, y in itertools.combinations(a, 2))
    return float(tau), discordant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="synthetic")
    parser.add_argument("--methods", default="default")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--early-stopping", type=int, default=30)
    parser.add_argument("--learning-rate", type=float, default=TreeParams().learning_rate)
    parser.add_argument("--save", metavar="CSV", help="also write the per-query figures to this file")
    args = parser.parse_args()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    config = BenchConfig(rounds=args.rounds, early_stopping=args.early_stopping, seeds=seeds,
                         params=TreeParams(learning_rate=args.learning_rate))
    start = time.perf_counter()
    results = run_benchmark(args.data, args.methods, folds=args.folds, config=config, progress=False)
    wall = time.perf_counter() - start
    per_query = results.per_query
    if args.save:
        per_query.to_csv(args.save, index=False)
    n_methods = len({run["method"] for run in results.runs if run["status"] == "ok"})
    print(f"data {args.data}, {args.folds} folds, learning rate {args.learning_rate}, "
          f"{n_methods} methods, seeds {seeds}: {wall:.1f} s, {wall / len(seeds):.1f} s per seed")
    full, means = ranking(per_query, seeds)
    print(f"ranking over all {len(seeds)} seeds: " + ", ".join(f"{m} {means[m]:.4f}" for m in full))
    print("seeds per set | pairs of disjoint sets | mean Kendall tau | mean discordant pairs | largest gap "
          "of a swapped pair (all-seed means) | sets giving the most common significant set | same best method")
    for k in range(1, len(seeds) // 2 + 1):
        sets = [seeds[i : i + k] for i in range(0, len(seeds) - k + 1, k)]
        taus, discordant, same_best, gaps = [], [], [], [0.0]
        for a, b in itertools.combinations(sets, 2):
            ra, ma = ranking(per_query, a)
            rb, mb = ranking(per_query, b)
            tau, d = compare(ra, rb)
            taus.append(tau)
            discordant.append(d)
            same_best.append(ra[0] == rb[0])
            gaps += [abs(means[x] - means[y]) for x, y in itertools.combinations(ra, 2)
                     if (ma[x] - ma[y]) * (mb[x] - mb[y]) < 0]
        significant = collections.Counter(
            frozenset(s.loc[s["significant"], "method"])
            for s in (significance(per_query[per_query["seed"].isin(ss)], results.baseline) for ss in sets)
        )
        print(f"{k} | {len(taus)} | {np.mean(taus):.3f} | {np.mean(discordant):.1f} | {max(gaps):.4f} "
              f"| {significant.most_common(1)[0][1]}/{len(sets)} | {sum(same_best)}/{len(same_best)}")
    spread = per_query.groupby(["method", "seed"])["ndcg@10"].mean().groupby("method").std(ddof=1)
    print("std over seeds of each method's NDCG@10: "
          + ", ".join(f"{m} {spread[m]:.4f}" for m in full))


if __name__ == "__main__":
    main()
