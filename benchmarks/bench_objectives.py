"""Training speed of gbrank objectives against the engines' built-in rankers, side by side.

Generates one large dataset (default: 1.2M rows, 10k queries, 136 features), builds each
engine's dataset once, then trains every method with the same tree parameters and prints
total training time, objective time per iteration (gbrank objectives only), and ratios
against the built-ins, all measured in this one run.

    python benchmarks/bench_objectives.py                      # the full-size run
    python benchmarks/bench_objectives.py --queries 1000 --rounds 20 --methods lgb:rank_xendcg,lgb:listmle_topk

``lgb:lambdarank`` is LightGBM's built-in; ``lgb:lambdarank(norm=True)`` (any arguments) is
gbrank's reproduction with the built-in's defaults. The LambdaLoss rows truncate at 30 like
the built-in, so the ratio compares the same number of pairs. Only those rows:

    python benchmarks/bench_objectives.py --methods "lgb:lambdarank,lgb:lambdarank(norm=True),\
lgb:lambdaloss(truncation=30),lgb:lambdaloss(weighting=ndcg_loss2, truncation=30),\
lgb:lambdaloss(weighting=ndcg_loss1, truncation=30)"
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gbrank.bench.methods import parse_methods
from gbrank.bench.timing import TimedObjective
from gbrank.datasets import make_ranking

DEFAULT_METHODS = (
    "lgb:rank_xendcg,lgb:lambdarank,lgb:listmle_topk,lgb:listmle,lgb:wlistmle,"
    "lgb:ranknet(truncation=30),lgb:wranknet(truncation=30),lgb:listnet,lgb:cosine,lgb:ndcg_boost,"
    "lgb:lambdarank(norm=True),lgb:lambdaloss(truncation=30),lgb:lambdaloss(weighting=ndcg_loss2, truncation=30),"
    "lgb:lambdaloss(weighting=ndcg_loss1, truncation=30),"
    "xgb:rank:ndcg,xgb:listmle_topk"
)


def run_lightgbm(method, data, dtrain, args):
    import lightgbm as lgb

    params = {
        "num_leaves": 31,
        "learning_rate": 0.1,
        "min_data_in_leaf": 20,
        "num_threads": args.threads,
        "verbose": -1,
        "metric": "None",
        "seed": 0,
    }
    timed = None
    if method.builtin:
        params["objective"] = method.objective
    else:
        timed = TimedObjective(method.build())
        params["objective"] = timed
        # compile the kernels outside the timed region
        timed.objective.grad_hess(data.y, np.zeros(data.y.size), data.group)
    start = time.perf_counter()
    lgb.train(params, dtrain, num_boost_round=args.rounds)
    return time.perf_counter() - start, timed


def run_xgboost(method, data, dtrain, args):
    import xgboost as xgb

    params = {
        "tree_method": "hist",
        "max_depth": 6,
        "eta": 0.1,
        "nthread": args.threads,
        "seed": 0,
        "min_child_weight": 1e-3,
        "base_score": 0.0,
    }
    timed = None
    kwargs = {}
    if method.builtin:
        params["objective"] = method.objective
        params["eval_metric"] = "ndcg@10"
    else:
        timed = TimedObjective(method.build())
        kwargs["obj"] = timed
        timed.objective.grad_hess(data.y, np.zeros(data.y.size), data.group)
    start = time.perf_counter()
    xgb.train(params, dtrain, num_boost_round=args.rounds, **kwargs)
    return time.perf_counter() - start, timed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=120, help="mean documents per query")
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated engine:objective")
    args = parser.parse_args(argv)

    data = make_ranking(n_queries=args.queries, docs_per_query=args.docs, n_features=args.features, seed=0)
    print(f"data: {data.y.size:,} rows, {data.group.size:,} queries, {args.features} features; "
          f"{args.rounds} rounds, {args.threads} threads")
    methods = parse_methods(args.methods)
    dsets = {}
    if any(m.engine == "lightgbm" for m in methods):
        import lightgbm as lgb

        dsets["lightgbm"] = lgb.Dataset(data.X, data.y, group=data.group, params={"verbose": -1}, free_raw_data=False).construct()
    if any(m.engine == "xgboost" for m in methods):
        import xgboost as xgb

        dsets["xgboost"] = xgb.DMatrix(data.X, data.y, group=data.group, nthread=args.threads)

    rows = []
    for method in methods:
        runner = run_lightgbm if method.engine == "lightgbm" else run_xgboost
        seconds, timed = runner(method, data, dsets[method.engine], args)
        obj_ms = 1000 * timed.seconds / max(timed.calls, 1) if timed else float("nan")
        rows.append((method, seconds))
        share = f"{100 * timed.seconds / seconds:5.1f}%" if timed else "    -"
        print(f"  {method.name:<32} {seconds:8.2f} s  {1000 * seconds / args.rounds:8.1f} ms/iter  "
              f"objective {obj_ms:7.2f} ms/iter ({share})", flush=True)

    print("\nratios (training time, measured above):")
    builtins = [(m, s) for m, s in rows if m.builtin]
    for method, seconds in rows:
        if not method.builtin:
            for base, base_seconds in builtins:
                if base.engine == method.engine:
                    print(f"  {method.name} / {base.name} = {seconds / base_seconds:.3f}")


if __name__ == "__main__":
    main()
