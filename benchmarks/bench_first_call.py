"""First-call time of objectives with an empty numba cache: what a new user waits for once.

Each objective runs in a fresh process with its own empty ``NUMBA_CACHE_DIR``; the script
prints the wall time of the first ``grad_hess`` call (compilation included) and the CPU time
of that process (on a loaded machine the CPU time is the steadier figure: numba compiles on
one thread), then the time of a second call in a new process reading that cache.

    python benchmarks/bench_first_call.py
    python benchmarks/bench_first_call.py "gbrank.ranknet()" "gbrank.lambdaloss('ndcg_loss1')"
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

DEFAULT = ("gbrank.ranknet()", "gbrank.wranknet()", "gbrank.lambdarank()", "gbrank.lambdarank('err')",
           "gbrank.lambdaloss()", "gbrank.lambdaloss('ndcg_loss1')")

CHILD = """
import time, numpy as np, gbrank
obj = {expr}
y = np.array([2.0, 1.0, 0.0, 1.0, 0.0, 3.0, 0.0]); s = np.linspace(-1.0, 1.0, 7)
wall, cpu = time.perf_counter(), time.process_time()
obj.grad_hess(y, s, [4, 3])
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def first_call(expr: str, cache: str) -> tuple[float, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", CHILD.format(expr=expr)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("objectives", nargs="*", default=DEFAULT, help="Python expressions building objectives")
    args = parser.parse_args(argv)
    print(f"{'objective':<36} {'cold wall':>10} {'cold CPU':>10} {'cached wall':>12}")
    for expr in args.objectives:
        with tempfile.TemporaryDirectory() as cache:
            wall, cpu = first_call(expr, cache)
            cached, _ = first_call(expr, cache)
        print(f"{expr:<36} {wall:9.2f}s {cpu:9.2f}s {cached:11.2f}s", flush=True)


if __name__ == "__main__":
    main()
