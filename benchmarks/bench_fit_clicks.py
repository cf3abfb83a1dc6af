"""gbrank.fit_clicks with each click objective on variable-length lists: the share of the gap closed.

Generated data with 2 to 111 documents per query (``make_ranking(docs_per_query=(2, 111))``),
clicks simulated by ``gbrank.datasets.simulate_clicks`` (position-based model, eta = 1, a weak
logging ranker fitted on one query, as in ``bench_clicks.py``), every document shown (``all-shown``) or the top 10 (``top10``). For each
click objective with estimated propensities, ``gbrank.fit_clicks`` chooses the rounds on
held-out clicks (no relevance labels) and refits; the table gives the share of the
naive-to-ceiling NDCG@10 gap (test queries, true labels) it closes, and, for reference, the
same objective's held-out fit (80% of the queries) cut at fixed 50, 100 and 300 rounds and at
the best round in hindsight (``oracle``, which needs labels). ``naive``: the softmax loss on
raw clicks (unit propensities); ``ceiling``: the softmax loss on the true click
probabilities; both 100 rounds.

    python benchmarks/bench_fit_clicks.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks, split_queries
from gbrank.metrics import ndcg

OBJECTIVES = {"ips_listnet": gbrank.ips_listnet, "ips_ranknet": gbrank.ips_ranknet, "pbm_listnet": gbrank.pbm_listnet}
FIXED = (50, 100, 300)


def run(setting: str, seed: int, *, sessions: int, max_rounds: int, threads: int,
        logging_fraction: float) -> list[dict]:
    import lightgbm as lgb

    data = make_ranking(800, (2, 111), 40, noise=1.0, seed=seed)
    train, test = split_queries(data, (0.7, 0.3), seed=seed)
    top_k = int(train.group.max()) if setting == "all-shown" else 10
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=sessions, top_k=top_k, eta=1.0,
                          logging_fraction=logging_fraction, seed=seed)
    params = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1,
              "num_threads": threads, "seed": seed}
    clicks = log.clicks.astype(np.float64)

    def score(predict) -> float:
        return float(ndcg(test.y, predict(test.X), test.group, k=10))

    def fixed(objective, labels, rounds):
        bound = gbrank.engines.with_position(objective, log.position) if objective.reads_position else objective
        booster = lgb.train({**params, "objective": bound}, lgb.Dataset(train.X, labels, group=train.group), rounds)
        return score(booster.predict)

    naive = fixed(gbrank.ips_listnet(propensity=np.ones(top_k)), clicks, 100)
    ceiling = fixed(gbrank.ips_listnet(propensity=None), log.relevance * sessions, 100)
    rows = []
    for name, factory in OBJECTIVES.items():
        start = time.perf_counter()
        fit = gbrank.fit_clicks(train.X, clicks, train.group, position=log.position, objective=factory(),
                                params=params, max_rounds=max_rounds, seed=seed)
        seconds = time.perf_counter() - start
        held = gbrank.fit_clicks(train.X, clicks, train.group, position=log.position, objective=factory(),
                                 params=params, max_rounds=max_rounds, seed=seed, refit=False)
        curve = [score(lambda X, k=k, held=held: held.booster.predict(X, num_iteration=k)) for k in range(1, max_rounds + 1)]
        entry = {"setting": setting, "seed": seed, "objective": name, "naive": naive, "ceiling": ceiling,
                 "fit_clicks": score(fit.predict), "best_rounds": fit.best_rounds, "seconds": seconds,
                 "oracle": max(curve), "oracle_rounds": int(np.argmax(curve)) + 1,
                 "theta_error_1_10": float(np.max(np.abs(fit.propensity_[:10] / log.theta[:10] - 1)))}
        entry.update({f"held_{k}": curve[k - 1] for k in FIXED if k <= max_rounds})
        rows.append(entry)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in entry.items()}, flush=True)
    return rows


def table(results: pd.DataFrame) -> str:
    columns = ["fit_clicks", *[c for c in results.columns if c.startswith("held_")], "oracle"]
    gap = results["ceiling"] - results["naive"]
    closed = results[columns].sub(results["naive"], axis=0).div(gap, axis=0) * 100
    closed = pd.concat([results[["setting", "objective", "seed", "best_rounds"]], closed], axis=1)
    lines = ["| setting | objective | fit_clicks: gap closed | rounds chosen | "
             + " | ".join(f"{c.replace('held_', 'held-out fit, ')}" for c in columns[1:]) + " |",
             "|---|---|---:|---:|" + "---:|" * (len(columns) - 1)]
    for (setting, objective), part in closed.groupby(["setting", "objective"], sort=False):
        def cell(values):
            return f"{values.mean():.0f}% [{values.min():.0f}, {values.max():.0f}]"
        rounds = "/".join(str(int(r)) for r in part.sort_values("seed")["best_rounds"])
        lines.append(f"| {setting} | {objective} | {cell(part['fit_clicks'])} | {rounds} | "
                     + " | ".join(cell(part[c]) for c in columns[1:]) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=["all-shown", "top10"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--sessions", type=int, default=50, help="sessions per training query")
    parser.add_argument("--logging-fraction", type=float, default=0.002,
                        help="share of the training queries the weak logging ranker is fitted on (at least one), "
                             "as in bench_clicks.py")
    parser.add_argument("--max-rounds", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the results as CSV here")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    rows = [row for setting in args.settings for seed in args.seeds
            for row in run(setting, seed, sessions=args.sessions, max_rounds=args.max_rounds, threads=args.threads,
                       logging_fraction=args.logging_fraction)]
    results = pd.DataFrame(rows)
    print(f"load average (1, 5, 15 min) at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; at the end: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(table(results))
    if args.out:
        results.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
