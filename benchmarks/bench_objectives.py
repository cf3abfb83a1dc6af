"""Training speed of gbrank objectives against the engines' built-in rankers, side by side.

Generates one large dataset (default: 1.2M rows, 10k queries, 136 features), builds each
engine's dataset once, then trains every method with the same tree parameters and prints
total training time, objective time per iteration (gbrank objectives only), and ratios
against the built-ins, all measured in this one run.

    python benchmarks/bench_objectives.py                      # the full-size run
    python benchmarks/bench_objectives.py --queries 1000 --rounds 20 --methods lgb:rank_xendcg,lgb:listmle_topk

``lgb:lambdarank`` is LightGBM's built-in; ``lgb:gbrank_lambdarank(norm=True)`` is gbrank's
reproduction with the built-in's defaults. The LambdaLoss rows truncate at 30 like
the built-in, so the ratio compares the same number of pairs. Only those rows:

    python benchmarks/bench_objectives.py --methods "lgb:lambdarank,lgb:gbrank_lambdarank(norm=True),\
lgb:lambdaloss(truncation=30),lgb:lambdaloss(weighting=ndcg_loss2, truncation=30),\
lgb:lambdaloss(weighting=ndcg_loss1, truncation=30)"

``--sizes`` measures the ratio to the matching built-in over a range of sizes instead (rows
from 20k to 1.2M, 20 and 120 documents per query), in one process:

* LightGBM: ``lambdarank()`` and ``lambdaloss(truncation=30)`` against ``lambdarank``;
  ``listmle_topk``, ``listnet`` and ``cosine`` against ``rank_xendcg``;
* XGBoost: the same five against ``rank:ndcg``.

At each size the built-in and the gbrank objectives of a family train in turn (built-in,
each gbrank objective, built-in, ...), ``--repeats`` times, and the ratio is the median of
the per-turn ratios, so a drift of the machine's load between turns cancels. Each gbrank
objective is also timed alone, called as the engine calls it on the same data and scores,
and "inside / alone" is its median time per call inside training over that. A training with
fixed gradients from a Python function ("fixed") gives the engine's own cost of an iteration
with a custom objective. The load average (and ``OMP_WAIT_POLICY``) is printed with each size:
on a machine shared with other work the engines' spinning OpenMP threads make every figure
meaningless unless ``OMP_WAIT_POLICY=passive`` (see docs/benchmarks.md). It writes
``sizes.csv`` and ``sizes.png`` (ratio against rows) into ``--out``.

    python benchmarks/bench_objectives.py --sizes            # all sizes: about 10 minutes (see below)
    python benchmarks/bench_objectives.py --sizes --quick    # 40k and 120k rows only
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time
from pathlib import Path

import numpy as np

from gbrank.bench.methods import parse_methods
from gbrank.bench.timing import TimedObjective
from gbrank.datasets import make_ranking

DEFAULT_METHODS = (
    "lgb:rank_xendcg,lgb:lambdarank,lgb:listmle_topk,lgb:listmle,lgb:wlistmle,"
    "lgb:ranknet(truncation=30),lgb:wranknet(truncation=30),lgb:listnet,lgb:cosine,lgb:ndcg_boost,"
    "lgb:gbrank_lambdarank(norm=True),lgb:lambdaloss(truncation=30),lgb:lambdaloss(weighting=ndcg_loss2, truncation=30),"
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


# ----------------------------------------------------------------------------- --sizes

SIZES_ROWS = (20_000, 40_000, 120_000, 600_000, 1_200_000)
SIZES_DOCS = (20, 120)
QUICK_ROWS = (40_000, 120_000)
# (engine, built-in, gbrank objectives compared with it)
FAMILIES = (
    ("lightgbm", "lambdarank", ("lambdarank()", "lambdaloss(truncation=30)")),
    ("lightgbm", "rank_xendcg", ("listmle_topk", "listnet", "cosine")),
    ("xgboost", "rank:ndcg",
     ("lambdarank()", "lambdaloss(truncation=30)", "listmle_topk", "listnet", "cosine")),
)
FIXED = "fixed"


def _objective(name):
    """gbrank's objective of a ``--sizes`` row: the factory with its defaults, or as written."""
    import gbrank

    factory, _, arguments = name.partition("(")
    kwargs = {}
    for item in filter(None, (a.strip() for a in arguments.rstrip(")").split(","))):
        key, value = item.split("=")
        kwargs[key.strip()] = int(value)
    return getattr(gbrank, factory)(**kwargs)


class _Calls:
    """The objective as the engine calls it, timing each call and keeping the last scores."""

    def __init__(self, objective):
        self.objective = objective
        self.seconds = []
        self.last = None

    def __deepcopy__(self, memo):
        # lgb.train deep-copies its params: the copy must record here
        return self

    def __call__(self, preds, data):
        start = time.perf_counter()
        out = self.objective(preds, data)
        self.seconds.append(time.perf_counter() - start)
        self.last = preds
        return out


class _Fixed:
    """Gradients computed once: what an iteration costs the engine with any custom objective."""

    def __init__(self, grad, hess):
        self.grad, self.hess = grad, hess

    def __deepcopy__(self, memo):
        return self

    def __call__(self, preds, data):
        return self.grad, self.hess


def _train_lightgbm(objective, dtrain, rounds, threads):
    """Seconds per iteration, from the end of the first iteration to the end of the last
    (Booster construction and the first tree left out)."""
    import lightgbm as lgb

    ends = []
    params = {"objective": objective, "num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20,
              "num_threads": threads, "verbose": -1, "metric": "None", "seed": 0}
    lgb.train(params, dtrain, num_boost_round=rounds, callbacks=[lambda env: ends.append(time.perf_counter())])
    return (ends[-1] - ends[0]) / (len(ends) - 1)


def _train_xgboost(objective, dtrain, rounds, threads):
    import xgboost as xgb

    class Ends(xgb.callback.TrainingCallback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def after_iteration(self, model, epoch, evals_log):
            self.ends.append(time.perf_counter())
            return False

    params = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "nthread": threads, "seed": 0,
              "min_child_weight": 1e-3, "disable_default_eval_metric": 1}
    kwargs = {}
    if isinstance(objective, str):
        params["objective"] = objective
    else:
        params["base_score"] = 0.0
        kwargs["obj"] = objective
    ends = Ends()
    xgb.train(params, dtrain, num_boost_round=rounds, callbacks=[ends], **kwargs)
    return (ends.ends[-1] - ends.ends[0]) / (len(ends.ends) - 1)


def _alone(calls, dtrain, times=5):
    """Median seconds of the objective called alone on the last scores it saw in training."""
    preds = calls.last.copy()
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        calls.objective(preds, dtrain)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def _auto_rounds(rows):
    # a few seconds per training at every size; at least 5 iterations
    return int(min(60, max(5, 3_000_000 // rows)))


def _measure_size(rows, docs, args, engines):
    data = make_ranking(n_queries=max(rows // docs, 1), docs_per_query=docs, n_features=args.features,
                        seed=0, dtype=np.float32)
    n = data.y.size
    rounds = args.rounds or _auto_rounds(n)
    load = os.getloadavg()
    print(f"\n{n:,} rows, {data.group.size:,} queries of about {docs} documents, {args.features} features; "
          f"{rounds} rounds, {args.threads} threads, {args.repeats} turns; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}", flush=True)
    dsets = {}
    if "lightgbm" in engines:
        import lightgbm as lgb

        dsets["lightgbm"] = lgb.Dataset(data.X, data.y, group=data.group, params={"verbose": -1},
                                        free_raw_data=False).construct()
    if "xgboost" in engines:
        import xgboost as xgb

        dsets["xgboost"] = xgb.DMatrix(data.X, data.y, group=data.group, nthread=args.threads)
    train = {"lightgbm": _train_lightgbm, "xgboost": _train_xgboost}
    out = []
    for engine, builtin, names in FAMILIES:
        if engine not in engines:
            continue
        dtrain = dsets[engine]
        calls = {name: _Calls(_objective(name)) for name in names}
        rng = np.random.default_rng(0)
        for name, c in calls.items():
            # compile and prepare outside the timed trainings
            c.objective(rng.normal(size=n).astype(np.float32 if engine == "xgboost" else np.float64), dtrain)
        fixed = None
        if builtin != "rank_xendcg":
            grad, hess = calls[names[0]].objective(rng.normal(size=n), dtrain)
            fixed = _Fixed(grad, hess)
        times = {name: [] for name in (builtin, *names, *([FIXED] if fixed else []))}
        for _ in range(args.repeats):
            # interleaved: the built-in, then each gbrank objective, in every turn
            times[builtin].append(train[engine](builtin, dtrain, rounds, args.threads))
            for name, c in calls.items():
                times[name].append(train[engine](c, dtrain, rounds, args.threads))
            if fixed:
                times[FIXED].append(train[engine](fixed, dtrain, rounds, args.threads))
        base = statistics.median(times[builtin])
        fixed_ms = 1000 * statistics.median(times[FIXED]) if fixed else float("nan")
        label = {"lightgbm": "lgb", "xgboost": "xgb"}[engine]
        print(f"  {label}:{builtin:<30} {1000 * base:9.2f} ms/iter" +
              (f"   (fixed gradients: {fixed_ms:.2f} ms/iter)" if fixed else ""), flush=True)
        for name, c in calls.items():
            ratios = [t / b for t, b in zip(times[name], times[builtin])]
            inside = statistics.median(c.seconds)
            alone = _alone(c, dtrain)
            row = {
                "engine": engine, "rows": n, "queries": data.group.size, "docs": docs, "rounds": rounds,
                "builtin": builtin, "method": name, "builtin_ms": 1000 * base,
                "method_ms": 1000 * statistics.median(times[name]), "ratio": statistics.median(ratios),
                "ratio_min": min(ratios), "ratio_max": max(ratios), "inside_ms": 1000 * inside,
                "alone_ms": 1000 * alone, "inside_over_alone": inside / alone, "fixed_ms": fixed_ms,
                "load1": os.getloadavg()[0],
            }
            out.append(row)
            print(f"  {label}:{name:<30} {row['method_ms']:9.2f} ms/iter   ratio {row['ratio']:.3f} "
                  f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f})   objective {row['inside_ms']:7.2f} ms inside, "
                  f"{row['alone_ms']:7.2f} ms alone, inside/alone {row['inside_over_alone']:.2f}", flush=True)
    return out


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = sorted({r["engine"] for r in rows})
    fig, axes = plt.subplots(1, len(engines), figsize=(6.5 * len(engines), 4.5), squeeze=False)
    for ax, engine in zip(axes[0], engines):
        mine = [r for r in rows if r["engine"] == engine]
        for (name, builtin), marker in zip(sorted({(r["method"], r["builtin"]) for r in mine}), "osD^vx<>"):
            for docs, style in ((120, "-"), (20, "--")):
                points = sorted((r["rows"], r["ratio"]) for r in mine
                                if r["method"] == name and r["docs"] == docs)
                if points:
                    ax.plot(*zip(*points), style, marker=marker,
                            label=f"{name} / {builtin}, {docs} docs/query")
        for level in (1.0, 1.05, 1.10):
            ax.axhline(level, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel("time per iteration / built-in's")
        ax.set_title({"lightgbm": "LightGBM", "xgboost": "XGBoost"}[engine])
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _thousands(rows):
    return f"{rows / 1000:.0f}k" if rows >= 10_000 else f"{rows / 1000:.1f}k"


def run_sizes(args):
    rows_list = QUICK_ROWS if args.quick else SIZES_ROWS
    if args.rows:
        rows_list = tuple(int(r) for r in args.rows.split(","))
    engines = {"lgb": ("lightgbm",), "xgb": ("xgboost",), "both": ("lightgbm", "xgboost")}[args.engines]
    start = time.perf_counter()
    rows = []
    for docs in SIZES_DOCS:
        for n in rows_list:
            begun = time.perf_counter()
            rows += _measure_size(n, docs, args, engines)
            print(f"  ({time.perf_counter() - begun:.0f} s for this size)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sizes.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _plot(rows, out / "sizes.png")
    print(f"\nratio to the built-in (median of {args.repeats} interleaved turns):")
    sizes = sorted({(r["docs"], r["rows"]) for r in rows})
    print(f"  {'method':<42}" + "".join(f"{f'{_thousands(n)}/{d}':>12}" for d, n in sizes))
    for key in dict.fromkeys((r["engine"], r["method"], r["builtin"]) for r in rows):
        got = {(r["docs"], r["rows"]): r["ratio"] for r in rows if (r["engine"], r["method"], r["builtin"]) == key}
        label = f"{'lgb' if key[0] == 'lightgbm' else 'xgb'}:{key[1]} / {key[2]}"
        print(f"  {label:<42}" + "".join(f"{got[s]:>12.3f}" if s in got else f"{'':>12}" for s in sizes))
    print(f"\nwrote {out / 'sizes.csv'} and {out / 'sizes.png'}; {time.perf_counter() - start:.0f} s in all")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=120, help="mean documents per query")
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--rounds", type=int, default=None,
                        help="boosting rounds (default 100; with --sizes, from 60 at 20k rows to 5 at 1.2M)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated engine:objective")
    parser.add_argument("--sizes", action="store_true", help="ratios to the built-ins over sizes (see above)")
    parser.add_argument("--quick", action="store_true", help="with --sizes: 40k and 120k rows only")
    parser.add_argument("--rows", default=None, help="with --sizes: comma-separated row counts instead")
    parser.add_argument("--repeats", type=int, default=3, help="with --sizes: interleaved turns per size")
    parser.add_argument("--engines", choices=("lgb", "xgb", "both"), default="both", help="with --sizes")
    parser.add_argument("--out", default="bench-sizes", help="with --sizes: folder of sizes.csv and sizes.png")
    args = parser.parse_args(argv)
    if args.sizes:
        run_sizes(args)
        return
    args.rounds = args.rounds or 100

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
