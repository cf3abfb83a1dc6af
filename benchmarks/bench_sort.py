"""Speed of the kernels' stable descending sort, ``gbrank._sort.order_desc``, against numba's
``np.argsort(-values, kind="mergesort")``, which the metric kernels used for cut-offs above
32 and whole lists before the sort of their own (it takes seconds longer to compile).

Both sort every list of the same generated data (list lengths around ``--size``, scores with
ties) inside one compiled loop, alternately, ``--repeat`` times; the best times and their
ratio are printed. Target: ``order_desc`` no slower than the mergesort (ratio <= 1.0).

    python benchmarks/bench_sort.py [--lists 20000] [--size 120] [--repeat 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from gbrank._sort import order_desc


@njit
def _sort_all_gbrank(values, offsets):
    total = 0
    for q in range(offsets.size - 1):
        total += order_desc(values[offsets[q] : offsets[q + 1]])[0]
    return total


@njit
def _sort_all_mergesort(values, offsets):
    total = 0
    for q in range(offsets.size - 1):
        total += np.argsort(-values[offsets[q] : offsets[q + 1]], kind="mergesort")[0]
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=120, help="mean list length")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    sizes = rng.integers(args.size // 2, args.size * 3 // 2 + 1, args.lists)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # a few hundred distinct values: ties occur, as with tree ensembles' scores
    values = rng.integers(0, 500, offsets[-1]).astype(np.float64)

    runs = {"order_desc": _sort_all_gbrank, "numba mergesort": _sort_all_mergesort}
    results = {name: fn(values, offsets) for name, fn in runs.items()}
    if len(set(results.values())) != 1:
        raise SystemExit(f"the sorts disagree: {results}")
    best = {name: np.inf for name in runs}
    for _ in range(args.repeat):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn(values, offsets)
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{args.lists:,} lists of {sizes.min()}..{sizes.max()} scores, best of {args.repeat}")
    for name, seconds in best.items():
        print(f"  {name:<16} {seconds * 1e3:8.2f} ms")
    ratio = best["order_desc"] / best["numba mergesort"]
    ok = ratio <= 1.0
    print(f"{'PASS' if ok else 'FAIL'}  order_desc / numba mergesort: ratio {ratio:.2f} (target <= 1.0)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
