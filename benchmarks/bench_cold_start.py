"""Cold-start costs: importing gbrank, the first call of each objective and metric, and the
main job with an empty numba cache against the same job with a warm one.

Every figure is taken in a fresh Python process with its own, empty ``NUMBA_CACHE_DIR``, so
that nothing compiled by an earlier measurement (or an earlier session) is reused. Wall times
are the figures; the process's CPU time is printed next to them, because on a loaded machine
the wall time of compiling grows with the load while its CPU time does not:

* ``import gbrank``: the import alone (interpreter start-up excluded), best of ``--repeat``
  fresh processes; the heavy libraries it pulled in are listed.
* first call: after ``import gbrank``, building the objective (the registry's first example
  of every registered objective) and its first LightGBM-shaped call
  ``obj.grad_hess(y, s, group)`` (float32 labels, float64 scores, int32 group sizes, as
  ``Dataset.get_label()``/``get_group()`` give them) on small data; for the metrics, the
  first call of each of ndcg, map, mrr, precision and err at ``k=10``. This is what a user
  waits for the first time they use one objective or metric.
* main job: ``python -m gbrank.bench --out DIR`` (its default arguments) run twice with the
  same fresh cache directory, the first time cold (everything compiled) and the second warm
  (everything loaded from the cache); wall times of the whole command and their ratio.

Targets: import <= 0.3 s, every first call <= 3 s, main job cold <= 1.3x warm.

    python benchmarks/bench_cold_start.py                   # everything (~5-10 minutes)
    python benchmarks/bench_cold_start.py --skip-main       # import and first calls only
    python benchmarks/bench_cold_start.py --main-args="--rounds 50 --folds 2"   # a quicker main job
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

IMPORT_TARGET = 0.3
FIRST_CALL_TARGET = 3.0
MAIN_RATIO_TARGET = 1.3
HEAVY = ("numba", "sklearn", "pandas", "lightgbm", "xgboost", "scipy", "matplotlib")
METRICS = {
    "ndcg": "ndcg",
    "map": "mean_average_precision",
    "mrr": "mean_reciprocal_rank",
    "precision": "precision_at_k",
    "err": "err",
}

_IMPORT = f"""
import json, sys, time
t, c = time.perf_counter(), time.process_time()
import gbrank
seconds, cpu = time.perf_counter() - t, time.process_time() - c
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"seconds": seconds, "cpu": cpu, "heavy": heavy}}))
"""

_DATA = """
import json, time
import numpy as np
import gbrank
rng = np.random.default_rng(0)
group = np.full(30, 20, dtype=np.int32)
y = rng.integers(0, 5, group.sum()).astype(np.float32)
s = rng.normal(size=group.sum())
t, c = time.perf_counter(), time.process_time()
"""

_OBJECTIVE = _DATA + """
from gbrank.objectives import registry
spec = registry.get({name!r})
obj = spec.build()
if spec.labels == "binary":  # an objective of 0/1 clicks
    y = (y > 0).astype(np.float32)
grad, hess = obj.grad_hess(y, s, group)
seconds, cpu = time.perf_counter() - t, time.process_time() - c
assert np.isfinite(grad).all() and np.isfinite(hess).all()
print(json.dumps({{"seconds": seconds, "cpu": cpu}}))
"""

_METRIC = _DATA + """
value = getattr(gbrank.metrics, {func!r})(y, s, group, 10)
seconds, cpu = time.perf_counter() - t, time.process_time() - c
assert 0.0 <= value <= 1.0
print(json.dumps({{"seconds": seconds, "cpu": cpu}}))
"""


def _fresh_env(cache_dir: str) -> dict:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = cache_dir
    return env


def _run_code(code: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="gbrank-numba-") as cache:
        out = subprocess.run(
            [sys.executable, "-c", code], env=_fresh_env(cache), capture_output=True, text=True
        )
    if out.returncode != 0:
        raise RuntimeError(f"measurement failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


def measure_import(repeat: int) -> None:
    runs = [_run_code(_IMPORT) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    heavy = sorted({m for r in runs for m in r["heavy"]})
    print(f"import gbrank: {best['seconds']:6.2f} s (cpu {best['cpu']:5.2f} s; best of {repeat})   "
          f"target {IMPORT_TARGET:.1f} s   {_verdict(best['seconds'], IMPORT_TARGET)}")
    print(f"  heavy libraries imported: {', '.join(heavy) if heavy else 'none'}")


def measure_first_calls(objectives: list[str], metrics: list[str]) -> None:
    print(f"first call, empty numba cache (target {FIRST_CALL_TARGET:.1f} s each):")
    runs = [("objective", name, _OBJECTIVE.format(name=name)) for name in objectives]
    runs += [("metric", name, _METRIC.format(func=METRICS[name])) for name in metrics]
    for kind, name, code in runs:
        got = _run_code(code)
        print(f"  {kind:<9} {name:<14} {got['seconds']:6.2f} s (cpu {got['cpu']:5.2f} s)   "
              f"{_verdict(got['seconds'], FIRST_CALL_TARGET)}", flush=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_main(extra: list[str], cache: str, out: str) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "gbrank.bench", *extra, "--out", out]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, env=_fresh_env(cache), capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{done.stderr[-4000:]}")
    return seconds, cpu


def measure_main(extra: list[str]) -> None:
    shown = shlex.join(["python", "-m", "gbrank.bench", *extra, "--out", "DIR"])
    print(f"main job: {shown}", flush=True)
    with tempfile.TemporaryDirectory(prefix="gbrank-numba-") as cache, \
            tempfile.TemporaryDirectory(prefix="gbrank-report-") as reports:
        cold, cold_cpu = _timed_main(extra, cache, os.path.join(reports, "cold"))
        print(f"  cold (empty numba cache):            {cold:7.1f} s (cpu {cold_cpu:7.1f} s)", flush=True)
        warm, warm_cpu = _timed_main(extra, cache, os.path.join(reports, "warm"))
        print(f"  warm (cache filled by the cold run): {warm:7.1f} s (cpu {warm_cpu:7.1f} s)")
    ratio = cold / warm
    print(f"  cold / warm = {ratio:.2f} (cpu {cold_cpu / warm_cpu:.2f})   target {MAIN_RATIO_TARGET:.1f}   "
          f"{_verdict(ratio, MAIN_RATIO_TARGET)}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes timing the import (best is kept)")
    parser.add_argument("--objectives", default=None,
                        help="comma-separated registered objectives (default: every registered one)")
    parser.add_argument("--metrics", default=",".join(METRICS),
                        help=f"comma-separated metrics among {', '.join(METRICS)} (default: all)")
    parser.add_argument("--skip-first-calls", action="store_true", help="skip the first-call figures")
    parser.add_argument("--skip-main", action="store_true", help="skip the main job (its two runs take minutes)")
    parser.add_argument("--main-args", default="",
                        help="extra arguments of the main job, e.g. '--rounds 50 --folds 2' for a quick check "
                             "(default: none, the default job)")
    args = parser.parse_args(argv)

    measure_import(args.repeat)
    if not args.skip_first_calls:
        if args.objectives is None:
            from gbrank.objectives import registry

            objectives = list(registry.names())
        else:
            objectives = [name for name in args.objectives.split(",") if name]
        metrics = [name for name in args.metrics.split(",") if name]
        unknown = [name for name in metrics if name not in METRICS]
        if unknown:
            parser.error(f"unknown metrics {unknown}; choose among {', '.join(METRICS)}")
        measure_first_calls(objectives, metrics)
    if not args.skip_main:
        measure_main(shlex.split(args.main_args))


if __name__ == "__main__":
    main()
