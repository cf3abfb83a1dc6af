"""Forked processes and threads work after gbrank's parallel kernels ran.

Numba fixes its threading layer once per process; GNU OpenMP, its default on Linux, kills a
forked child that runs a kernel after the parent did. gbrank asks for TBB (see
``gbrank._threading``). Each fork scenario runs in a fresh interpreter, so that the layer is
chosen from scratch there and a hang fails the test at the time limit instead of blocking the
run.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numba
import pytest

from helpers import installed_before

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 120  # seconds; the scenarios take a few seconds once the numba cache is warm

# Linux x86-64 has the tbb wheel as a dependency: there the layer must be TBB
TBB_EXPECTED = sys.platform.startswith("linux") and platform.machine() == "x86_64"
FORK = "fork" in __import__("multiprocessing").get_all_start_methods()

# Real parallel kernels (objectives on gbrank's thread pool and on numba's threading layer,
# and a metric; 500 queries of 40 rows: enough for every thread to take queries), summed up
# by work(). In the fork scenarios the parent runs them before anything forks and children
# run them again; the threads test runs them from several threads at once.
WORKLOAD = """
import numba
import numpy as np
import gbrank

rng = np.random.default_rng(0)
sizes = np.full(500, 40)
y = rng.integers(0, 4, sizes.sum()).astype(float)
s = rng.normal(size=sizes.sum())
objective = gbrank.listmle_topk(k=10)
pairwise = gbrank.lambdarank()
listnet = gbrank.listnet()

def work(_):
    grad, hess = objective.grad_hess(y, s, sizes)
    return (float(grad @ grad), float(hess.sum()), float(gbrank.metrics.ndcg(y, s, sizes, k=10)),
            float(pairwise.loss(y, s, sizes)), float(listnet.grad_hess(y, s, sizes)[0] @ s))
"""
PRELUDE = WORKLOAD + """
expected = work(0)
print("layer", numba.threading_layer(), "threads", numba.get_num_threads(), flush=True)
if numba.threading_layer() == "omp" and FORK_UNSAFE_OMP:
    raise SystemExit(0)
"""


def run_python(code: str, env: dict | None = None) -> str:
    """Run ``code`` in a fresh interpreter; fail on error, abort or a hang."""
    # on numba's GNU OpenMP layer the children would die and the pool hang: stop before
    # forking, and let check_layer fail (TBB expected) or skip
    code = f"FORK_UNSAFE_OMP = {sys.platform.startswith('linux')}\n" + code
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), environ.get("PYTHONPATH")]))
    try:
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
            timeout=TIME_LIMIT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {TIME_LIMIT} s; output so far:\n{exc.stdout}\n{exc.stderr}")
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def check_layer(out: str) -> None:
    layer = out.split("layer ", 1)[1].split()[0]
    if TBB_EXPECTED:
        assert layer == "tbb", out
    elif layer == "omp" and sys.platform.startswith("linux"):
        pytest.skip("no TBB on this platform: numba's GNU OpenMP layer cannot fork")


needs_fork = pytest.mark.skipif(not FORK, reason="no fork start method on this platform")


# pools that fork the process after a parallel kernel ran: ``got`` must hold four results
FORKING_POOLS = {
    "multiprocessing-fork": """
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map(work, range(4))
    """,
    "joblib-multiprocessing": """
        from joblib import Parallel, delayed
        got = Parallel(n_jobs=2, backend="multiprocessing")(delayed(work)(i) for i in range(4))
    """,
}


@needs_fork
@pytest.mark.parametrize("pool", list(FORKING_POOLS))
def test_forking_pools_after_parallel_kernel(pool):
    out = run_python(PRELUDE + textwrap.dedent(FORKING_POOLS[pool]) + textwrap.dedent("""
        assert got == [expected] * 4, (got, expected)
        print("ok")
    """))
    check_layer(out)
    assert out.rstrip().endswith("ok")


@needs_fork
def test_cross_val_score_multiprocessing_backend_after_parallel_kernel():
    pytest.importorskip("lightgbm")
    out = run_python(PRELUDE + textwrap.dedent("""
        import pandas as pd
        from joblib import parallel_backend
        from sklearn.model_selection import GroupKFold, cross_val_score

        data = gbrank.datasets.make_ranking(n_queries=60, docs_per_query=20, n_features=8, seed=1)
        X = pd.DataFrame(data.X)
        X.columns = [f"f{i}" for i in range(X.shape[1])]
        X["qid"] = data.qid
        ranker = gbrank.Ranker(gbrank.listmle_topk(k=10), n_estimators=10, n_jobs=1, params={"verbose": -1})
        with parallel_backend("multiprocessing"):
            forked = cross_val_score(ranker, X, data.y, groups=X["qid"], cv=GroupKFold(3), n_jobs=2)
        serial = cross_val_score(ranker, X, data.y, groups=X["qid"], cv=GroupKFold(3), n_jobs=1)
        assert np.allclose(forked, serial), (forked, serial)
        assert np.all(forked > 0.3), forked
        print("ok")
    """))
    check_layer(out)
    assert out.rstrip().endswith("ok")


# the parent's training on one thread with a gbrank objective, then train_in_child(): the
# engine's built-in objective on two threads
SINGLE_THREADED = {
    "lightgbm": """
        import lightgbm as lgb

        lgb.train({"objective": gbrank.lambdarank(), "num_threads": 1, "verbose": -1},
                  lgb.Dataset(data.X, data.y, group=data.group), 5)

        def train_in_child():
            booster = lgb.train({"objective": "lambdarank", "num_threads": 2, "verbose": -1},
                                lgb.Dataset(data.X, data.y, group=data.group), 5)
            return float(booster.predict(data.X[:5]).sum())
    """,
    # two aliases of num_threads, which LightGBM resolves to one thread (the shortest, n_jobs)
    "lightgbm-aliases": """
        import lightgbm as lgb

        lgb.train({"objective": gbrank.lambdarank(), "nthread": 2, "n_jobs": 1, "verbose": -1},
                  lgb.Dataset(data.X, data.y, group=data.group), 5)

        def train_in_child():
            booster = lgb.train({"objective": "lambdarank", "num_threads": 2, "verbose": -1},
                                lgb.Dataset(data.X, data.y, group=data.group), 5)
            return float(booster.predict(data.X[:5]).sum())
    """,
    # the DMatrix is built on one thread too: built on XGBoost's default it starts OpenMP
    # threads itself, and the child hangs with XGBoost's built-in objective as well
    "xgboost": """
        import xgboost as xgb

        xgb.train({"nthread": 1, "base_score": 0.0}, xgb.DMatrix(data.X, data.y, group=data.group, nthread=1), 5,
                  obj=gbrank.lambdarank())

        def train_in_child():
            booster = xgb.train({"objective": "rank:ndcg", "nthread": 2},
                                xgb.DMatrix(data.X, data.y, group=data.group), 5)
            return float(booster.predict(xgb.DMatrix(data.X[:5])).sum())
    """,
}


# XGBoost 2.0 leaves the child hanging after a training with its built-in objective as well
# (seen on 2.0.0): nothing for gbrank to keep
XGBOOST_FORKS = pytest.mark.skipif(
    installed_before("xgboost", "2.1"), reason="XGBoost 2.0's own training on one thread leaves a forked child hanging"
)


@needs_fork
@pytest.mark.parametrize("engine", ["lightgbm", pytest.param("xgboost", marks=XGBOOST_FORKS)])
def test_a_single_threaded_training_leaves_a_fork_that_trains(engine):
    """gbrank starts no OpenMP threads of its own inside an engine's training: after
    ``lgb.train(num_threads=1)`` or ``xgb.train(nthread=1)`` with a gbrank objective, a
    forked child trains the engine on two threads as it would after the engine's built-in
    objective (GNU OpenMP hangs a child whose parent had started threads)."""
    pytest.importorskip(engine.split("-")[0])
    out = run_python(PRELUDE + textwrap.dedent("""
        import multiprocessing

        data = gbrank.datasets.make_ranking(n_queries=300, docs_per_query=60, n_features=8, seed=0)
    """) + textwrap.dedent(SINGLE_THREADED[engine]) + textwrap.dedent("""
        def child(_):
            return train_in_child()

        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map(child, range(2))
        assert got[0] == got[1], got
        print("ok")
    """))
    check_layer(out)
    assert out.rstrip().endswith("ok")


@pytest.mark.parametrize("how, layer", [("environment", "workqueue"), ("code", "workqueue"), ("environment", "tbb")])
def test_a_users_threading_layer_is_kept(how, layer):
    # workqueue: available everywhere, and never gbrank's own choice; tbb asked for by name
    # works although the wheel's library is off the loader's path
    if layer == "tbb" and not TBB_EXPECTED:
        pytest.skip("TBB is a dependency on Linux x86-64 only")
    choose = f"import numba\nnumba.config.THREADING_LAYER = {layer!r}\n" if how == "code" else ""
    env = {"NUMBA_THREADING_LAYER": layer} if how == "environment" else None
    out = run_python(choose + PRELUDE, env=env)
    assert f"layer {layer} " in out, out


def test_threads_share_objectives_and_metrics():
    """Concurrent kernel launches from several threads give the serial results."""
    namespace: dict = {}
    exec(WORKLOAD, namespace)
    work = namespace["work"]
    expected = work(0)
    results, errors = [], []

    def loop():
        try:
            for _ in range(5):
                results.append(work(0))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=TIME_LIMIT)
    assert not errors, errors
    assert len(results) == 20
    assert all(result == expected for result in results), (expected, results)
    if TBB_EXPECTED and os.environ.get("NUMBA_THREADING_LAYER") is None:
        assert numba.threading_layer() == "tbb"
