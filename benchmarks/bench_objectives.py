"""Training speed of gbrank objectives against the engines' built-in rankers, side by side.

Generates one large dataset (default: 1.2M rows, 10k queries, 136 features), builds each
engine's dataset once, then trains every method with the same tree parameters and prints
total training time, objective time per iteration (gbrank objectives only), and ratios
against the built-ins, all measured in this one run.

    python benchmarks/bench_objectives.py                      # the full-size run
    python benchmarks/bench_objectives.py --queries 1000 --rounds 20 --methods lgb:rank_xendcg,lgb:listmle_topk
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import gbrank
from gbrank.datasets import make_ranking

OBJECTIVES = {
    "listmle": lambda: gbrank.listmle(),
    "listmle_topk": lambda: gbrank.listmle_topk(k=10),
    "wlistmle": lambda: gbrank.wlistmle(),
    "ranknet": lambda: gbrank.ranknet(truncation=30),
    "wranknet": lambda: gbrank.wranknet(truncation=30),
    "listnet": lambda: gbrank.listnet(),
    "cosine": lambda: gbrank.cosine(),
    "ndcg_boost": lambda: gbrank.ndcg_boost(),
}
LGB_BUILTIN = ("lambdarank", "rank_xendcg")
XGB_BUILTIN = ("rank:ndcg", "rank:pairwise")
DEFAULT_METHODS = (
    "lgb:rank_xendcg,lgb:lambdarank,lgb:listmle_topk,lgb:listmle,lgb:wlistmle,"
    "lgb:ranknet,lgb:wranknet,lgb:listnet,lgb:cosine,lgb:ndcg_boost,"
    "xgb:rank:ndcg,xgb:listmle_topk"
)


class Timed:
    """Calls an objective and adds up the seconds spent in it."""

    def __init__(self, objective):
        self.objective = objective
        self.seconds = 0.0
        self.calls = 0

    def __deepcopy__(self, memo):
        # lgb.train deep-copies its params; keep counting in this object
        return self

    def __call__(self, preds, data):
        start = time.perf_counter()
        out = self.objective(preds, data)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def run_lightgbm(name, data, dtrain, args):
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
    if name in LGB_BUILTIN:
        params["objective"] = name
    else:
        timed = Timed(OBJECTIVES[name]())
        params["objective"] = timed
        # compile the kernels outside the timed region
        timed.objective.grad_hess(data.y, np.zeros(data.y.size), data.group)
    start = time.perf_counter()
    lgb.train(params, dtrain, num_boost_round=args.rounds)
    return time.perf_counter() - start, timed


def run_xgboost(name, data, dtrain, args):
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
    if name in XGB_BUILTIN:
        params["objective"] = name
        params["eval_metric"] = "ndcg@10"
    else:
        timed = Timed(OBJECTIVES[name]())
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
    methods = [m.split(":", 1) for m in args.methods.split(",")]
    dsets = {}
    if any(engine == "lgb" for engine, _ in methods):
        import lightgbm as lgb

        dsets["lgb"] = lgb.Dataset(data.X, data.y, group=data.group, params={"verbose": -1}, free_raw_data=False).construct()
    if any(engine == "xgb" for engine, _ in methods):
        import xgboost as xgb

        dsets["xgb"] = xgb.DMatrix(data.X, data.y, group=data.group, nthread=args.threads)

    rows = []
    for engine, name in methods:
        runner = run_lightgbm if engine == "lgb" else run_xgboost
        seconds, timed = runner(name, data, dsets[engine], args)
        obj_ms = 1000 * timed.seconds / max(timed.calls, 1) if timed else float("nan")
        rows.append((engine, name, seconds, obj_ms))
        share = f"{100 * timed.seconds / seconds:5.1f}%" if timed else "    -"
        print(f"  {engine}:{name:<14} {seconds:8.2f} s  {1000 * seconds / args.rounds:8.1f} ms/iter  "
              f"objective {obj_ms:7.2f} ms/iter ({share})", flush=True)

    def total(engine, name):
        return next((s for e, n, s, _ in rows if e == engine and n == name), None)

    print("\nratios (training time, measured above):")
    for engine, name, seconds, _ in rows:
        if engine == "lgb" and name not in LGB_BUILTIN:
            for base in LGB_BUILTIN:
                if total("lgb", base):
                    print(f"  lgb:{name} / lgb:{base} = {seconds / total('lgb', base):.3f}")
        if engine == "xgb" and name not in XGB_BUILTIN:
            for base in XGB_BUILTIN:
                if total("xgb", base):
                    print(f"  xgb:{name} / xgb:{base} = {seconds / total('xgb', base):.3f}")


if __name__ == "__main__":
    main()
