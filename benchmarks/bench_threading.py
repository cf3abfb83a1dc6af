"""Kernel speed on numba's threading layers: TBB (gbrank's choice) against GNU OpenMP.

Numba fixes its threading layer once per process, so each layer runs in its own fresh
process; the processes alternate (omp, tbb, omp, tbb, ...) ``--rounds`` times so that both
see the same machine load, and the best time of each kernel over all its calls is compared.

Timed: one ``grad_hess`` call of every registered objective (its first example; per-dataset
preparation cached, as in training from the second iteration on) and one call of every
metric at k=10, on a small and a large generated dataset.

    python benchmarks/bench_threading.py                 # default sizes
    python benchmarks/bench_threading.py --rounds 5 --repeat 20
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

LAYERS = ("omp", "tbb")
SIZES = {"small": (200, 20), "large": (2000, 100)}  # queries, documents per query


def measure(repeat: int, only: set[str]) -> dict:
    """Best seconds per (size, kernel) in this process."""
    import numba
    import numpy as np

    import gbrank
    from gbrank.objectives import registry

    metrics = {
        "ndcg@10": lambda y, s, g: gbrank.metrics.ndcg(y, s, g, k=10),
        "map@10": lambda y, s, g: gbrank.metrics.mean_average_precision(y, s, g, k=10),
        "mrr": lambda y, s, g: gbrank.metrics.mean_reciprocal_rank(y, s, g),
        "precision@10": lambda y, s, g: gbrank.metrics.precision_at_k(y, s, g, k=10),
        "err@10": lambda y, s, g: gbrank.metrics.err(y, s, g, k=10),
    }
    best = {}
    for size, (queries, docs) in SIZES.items():
        data = gbrank.datasets.make_ranking(n_queries=queries, docs_per_query=docs, n_features=4, seed=0)
        y, g = data.y, data.group
        scores = np.random.default_rng(1).normal(size=y.size)
        kernels = {}
        for name, spec in registry.specs().items():
            objective = spec.build()
            labels = (y > 0).astype(y.dtype) if spec.labels == "binary" else y  # 0/1 clicks
            kernels[name] = lambda objective=objective, labels=labels: objective.grad_hess(labels, scores, g)
        for name, metric in metrics.items():
            kernels[name] = lambda metric=metric: metric(y, scores, g)
        for name, kernel in kernels.items():
            if only and name not in only:
                continue
            kernel()  # compile or load from cache, prepare
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                kernel()
                times.append(time.perf_counter() - start)
            best[f"{size}|{name}"] = min(times)
    return {"layer": numba.threading_layer(), "threads": numba.get_num_threads(), "best": best}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per layer, alternating")
    parser.add_argument("--repeat", type=int, default=10, help="timed calls per kernel and process")
    parser.add_argument("--kernels", default="", help="comma-separated objective or metric names (default: all)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.repeat, set(filter(None, args.kernels.split(","))))))
        return 0

    best = {layer: {} for layer in LAYERS}
    threads = None
    for _ in range(args.rounds):
        for layer in LAYERS:
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--repeat", str(args.repeat), "--kernels", args.kernels],
                env={**os.environ, "NUMBA_THREADING_LAYER": layer},
                capture_output=True, text=True, check=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            if result["layer"] != layer:
                raise SystemExit(f"asked for {layer}, numba ran on {result['layer']}")
            threads = result["threads"]
            for key, seconds in result["best"].items():
                best[layer][key] = min(seconds, best[layer].get(key, float("inf")))

    print(f"best of {args.rounds} x {args.repeat} calls per kernel, {threads} threads, "
          f"{os.cpu_count()} cores; sizes: " + ", ".join(f"{k} = {q} queries x {d} docs" for k, (q, d) in SIZES.items()))
    print(f"{'size':6} {'kernel':14} {'omp ms':>9} {'tbb ms':>9} {'tbb/omp':>8}")
    ratios = []
    for key in best["omp"]:
        size, name = key.split("|")
        omp, tbb = best["omp"][key], best["tbb"][key]
        ratios.append(tbb / omp)
        print(f"{size:6} {name:14} {omp * 1e3:9.3f} {tbb * 1e3:9.3f} {tbb / omp:8.2f}")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean tbb/omp: {geo:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
