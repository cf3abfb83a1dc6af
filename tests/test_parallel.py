"""gbrank._parallel: block kernels run over every query once, on numba's number of threads."""

from __future__ import annotations

import threading

import numba
import numpy as np
import pytest
from numba import njit

import gbrank
from gbrank._parallel import blocks, over_queries


@njit(nogil=True)
def _query_sums(q0, q1, values, offsets, out, seen):
    for q in range(q0, q1):
        seen[q] += 1
        total = 0.0
        for row in range(offsets[q], offsets[q + 1]):
            total += values[row]
        out[q] = total


@njit(nogil=True)
def _fails_on(q0, q1, bad):
    for q in range(q0, q1):
        if q == bad:
            raise ValueError("query failed")


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@pytest.mark.parametrize("sizes", [[5], [3, 0, 4], [1] * 7, [200, 1, 1, 1, 1, 1, 1, 1], list(range(50))])
@pytest.mark.parametrize("count", [1, 2, 3, 8, 100])
def test_blocks_cover_every_query_once_in_order(sizes, count):
    offsets = _offsets(sizes)
    bounds = blocks(offsets, count)
    assert bounds[0] == 0 and bounds[-1] == len(sizes)
    assert all(a < b for a, b in zip(bounds[:-1], bounds[1:]))
    assert len(bounds) - 1 <= count


def test_blocks_balance_rows():
    sizes = np.random.default_rng(0).integers(1, 50, 4000)
    offsets = _offsets(sizes)
    bounds = blocks(offsets, 8)
    rows = np.diff(offsets[bounds])
    assert len(rows) == 8
    assert rows.max() - rows.min() <= 2 * sizes.max()


@pytest.mark.parametrize("threads", [1, 2])
def test_every_query_runs_once(threads):
    sizes = np.random.default_rng(1).integers(0, 30, 333)
    offsets = _offsets(sizes)
    values = np.random.default_rng(2).normal(size=offsets[-1])
    out = np.full(sizes.size, np.nan)
    seen = np.zeros(sizes.size, dtype=np.int64)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        over_queries(_query_sums, offsets, values, offsets, out, seen, min_rows=1)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(seen, 1)
    np.testing.assert_allclose(out, np.add.reduceat(values, offsets[:-1]) * (sizes > 0))


def test_one_thread_is_one_call_in_the_caller():
    calls = []

    def kernel(q0, q1):
        calls.append((q0, q1, threading.current_thread()))

    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        over_queries(kernel, _offsets([3, 4, 5]))
    finally:
        numba.set_num_threads(previous)
    assert calls == [(0, 3, threading.current_thread())]


def test_no_more_threads_than_numba_allows():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    running = []
    peak = []
    lock = threading.Lock()

    def kernel(q0, q1):
        with lock:
            running.append(1)
            peak.append(len(running))
        threading.Event().wait(0.01)
        with lock:
            running.pop()

    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        over_queries(kernel, _offsets([2] * 40), min_rows=1)
    finally:
        numba.set_num_threads(previous)
    assert max(peak) <= 2


@pytest.mark.parametrize("sizes, min_rows, expected", [
    ([3, 4, 5], 1, 2),          # a thread per row allowed: numba's 2
    ([3, 4, 5], 7, 1),          # 12 rows, 7 per thread: the caller alone
    ([3, 4, 5], 6, 2),
    ([3, 4, 5], 100, 1),
    ([3000] * 4, None, 2),      # the default, 4096 rows per thread
    ([1000] * 4, None, 1),
])
def test_threads_come_from_the_rows(sizes, min_rows, expected):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    threads = set()
    lock = threading.Lock()

    def kernel(q0, q1):
        with lock:
            threads.add(threading.current_thread())
        # long enough that a second thread, when there is one, takes a block
        threading.Event().wait(0.01)

    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        extra = {} if min_rows is None else {"min_rows": min_rows}
        over_queries(kernel, _offsets(sizes), **extra)
    finally:
        numba.set_num_threads(previous)
    assert len(threads) == expected
    if expected == 1:
        assert threads == {threading.current_thread()}


def test_a_failing_block_raises_in_the_caller():
    with pytest.raises(ValueError, match="query failed"):
        over_queries(_fails_on, _offsets([2] * 50), 37, min_rows=1)


def test_no_queries():
    seen = []
    over_queries(lambda q0, q1: seen.append((q0, q1)), _offsets([]))
    assert seen == [(0, 0)]


@pytest.mark.parametrize("make", [gbrank.lambdarank, gbrank.ranknet, gbrank.listmle, gbrank.lambdaloss])
def test_objectives_do_not_depend_on_the_thread_count(make):
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, 300)
    y = rng.integers(0, 5, sizes.sum()).astype(float)
    s = rng.normal(size=sizes.sum())
    objective = make()
    previous = numba.get_num_threads()
    results = []
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            results.append((*objective.grad_hess(y, s, sizes), objective.loss(y, s, sizes)))
    finally:
        numba.set_num_threads(previous)
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            np.testing.assert_array_equal(a, b)



def _takes_the_pool(engine, threads, monkeypatch) -> bool:
    """Whether one call of a compiled kernel inside ``engine_threads(engine, threads)`` took
    the pool (rather than the engine's team); every query runs once either way."""
    import gbrank._parallel as parallel

    taken = []
    real = parallel._executor
    monkeypatch.setattr(parallel, "_executor", lambda: (taken.append(1), real())[1])
    sizes = np.random.default_rng(5).integers(0, 30, 400)
    offsets = _offsets(sizes)
    values = np.random.default_rng(6).normal(size=offsets[-1])
    out = np.full(sizes.size, np.nan)
    seen = np.zeros(sizes.size, dtype=np.int64)
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        with parallel.engine_threads(engine, threads):
            over_queries(_query_sums, offsets, values, offsets, out, seen, min_rows=1)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(seen, 1)
    np.testing.assert_allclose(out, np.add.reduceat(values, offsets[:-1]) * (sizes > 0))
    return bool(taken)


def _needs_a_team(engine):
    from gbrank._parallel import _engine_gomp

    pytest.importorskip(engine)
    if numba.config.NUMBA_NUM_THREADS < 2 or _engine_gomp(engine) is None:
        pytest.skip("one thread only, or the engine does not run on GNU OpenMP here")


@pytest.mark.parametrize("threads", [None, 2, 8])
def test_engine_threads_run_every_block_on_the_engines_openmp_team(threads, monkeypatch):
    _needs_a_team("lightgbm")
    assert not _takes_the_pool("lightgbm", threads, monkeypatch)


def test_an_engine_training_on_one_thread_keeps_the_pool(monkeypatch):
    # a team call would start an OpenMP thread the engine never started (fork-unsafe)
    _needs_a_team("lightgbm")
    assert _takes_the_pool("lightgbm", 1, monkeypatch)


def test_the_team_switch_keeps_the_pool(monkeypatch):
    _needs_a_team("lightgbm")
    import gbrank._parallel as parallel

    monkeypatch.setenv(parallel.TEAM_SWITCH, "0")
    assert _takes_the_pool("lightgbm", 2, monkeypatch)


def test_engine_threads_raise_a_failing_block_in_the_caller():
    _needs_a_team("lightgbm")
    from gbrank._parallel import engine_threads

    with engine_threads("lightgbm", 2), pytest.raises(ValueError, match="query failed"):
        over_queries(_fails_on, _offsets([2] * 50), 37, min_rows=1)


def test_engine_threads_of_an_engine_not_loaded_use_the_pool():
    from gbrank._parallel import _engine_gomp, engine_threads

    assert _engine_gomp("not_an_engine") is None
    seen = np.zeros(40, dtype=np.int64)
    with engine_threads("not_an_engine", 2):
        over_queries(_query_sums, _offsets([2] * 40), np.ones(80), _offsets([2] * 40), np.zeros(40), seen,
                     min_rows=1)
    np.testing.assert_array_equal(seen, 1)


THREAD_PARAMS = [
    ({}, None), ({"num_threads": 3}, 3), ({"nthread": 1}, 1), ({"n_jobs": 2}, 2), ({"num_threads": 0}, None),
    ({"num_threads": -1}, None), ({"num_threads": None, "nthreads": 4}, 4),
    # several aliases: LightGBM keeps the main name, else the shortest alias, then the first by name
    ({"nthread": 2, "n_jobs": 1}, 1), ({"num_thread": 3, "nthreads": 2}, 2), ({"num_threads": 2, "n_jobs": 1}, 2),
    ({"nthreads": 1, "num_thread": 2}, 1), ({"nthread": "2", "num_thread": 3}, 2),
]


@pytest.mark.parametrize("params, expected", THREAD_PARAMS)
def test_lightgbm_training_threads_read_every_alias(params, expected):
    from gbrank.engines.lightgbm import training_threads

    assert training_threads(params) == expected


@pytest.mark.parametrize("params, expected", [case for case in THREAD_PARAMS
                                              if sum(value is not None for value in case[0].values()) > 1])
def test_thread_aliases_resolve_as_lightgbm_resolves_them(params, expected):
    """LightGBM's own log says which value it kept: gbrank's resolution agrees."""
    lgb = pytest.importorskip("lightgbm")
    import re

    class Log:
        lines: list[str] = []

        def info(self, message):
            self.lines.append(message)

        warning = info

    log = Log()
    lgb.register_logger(log)
    try:
        lgb.train({**params, "objective": "regression", "verbose": 1}, lgb.Dataset(np.random.rand(50, 2), np.random.rand(50)), 1)
    finally:
        lgb.register_logger(__import__("logging").getLogger("lightgbm"))
    kept = [int(m) for line in log.lines for m in re.findall(r"Current value: num_threads=(-?\d+)", line)]
    assert kept, log.lines
    assert (kept[-1] if kept[-1] > 0 else None) == expected


@pytest.mark.parametrize("threads", [1, 2])
def test_an_objective_inside_lightgbm_training_runs_on_as_many_threads_as_it(threads, monkeypatch):
    lgb = pytest.importorskip("lightgbm")
    import gbrank._parallel as parallel

    _needs_a_team("lightgbm")
    calls = []
    real = parallel._run_on_team
    monkeypatch.setattr(parallel, "_run_on_team", lambda p, kernel, bounds, args, n: (
        calls.append(n), real(p, kernel, bounds, args, n))[1])
    data = gbrank.datasets.make_ranking(n_queries=300, docs_per_query=30, n_features=5, seed=0)
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        lgb.train({"objective": gbrank.lambdarank(), "num_threads": threads, "verbose": -1},
                  lgb.Dataset(data.X, data.y, group=data.group), 3)
        # LGBMRanker hands the objective arrays, not its parameters: the pool runs its calls
        lgb.LGBMRanker(objective=gbrank.lambdarank(), n_estimators=3, n_jobs=threads, verbose=-1).fit(
            data.X, data.y, group=data.group)
    finally:
        numba.set_num_threads(previous)
    assert calls == ([2] * 3 if threads == 2 else []), calls


@njit(nogil=True)
def _every_kind(q0, q1, offsets, values, counts, flags, frozen, flag, step, scale, nothing, out, seen):
    for q in range(q0, q1):
        seen[q] += 1
        total = 0.0
        for row in range(offsets[q], offsets[q + 1]):
            total += values[row] * scale + counts[row] + flags[row] + frozen[row]
        out[q] = total + step + (1.0 if flag else 0.0) + (0.0 if nothing is None else 1.0)


def _every_kind_arguments(sizes, rng):
    offsets = _offsets(sizes)
    n = int(offsets[-1])
    frozen = rng.normal(size=n).astype(np.float32)
    frozen.flags.writeable = False
    return (offsets, rng.normal(size=n), rng.integers(0, 9, n).astype(np.int32), rng.integers(0, 2, n).astype(np.uint8),
            frozen, True, 7, 0.25, None)


def test_a_numba_kernel_runs_compiled_on_the_team_with_every_kind_of_argument(monkeypatch):
    """Arrays of every dtype the frame carries (one read-only), bool, int, float and None
    reach the kernel as they are; every query runs once; Python never runs a block."""
    _needs_a_team("lightgbm")
    import gbrank._parallel as parallel

    monkeypatch.setattr(parallel, "_executor", None)  # no block runs on the pool
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 40, 500)
    args = _every_kind_arguments(sizes, rng)
    expected, once = np.zeros(sizes.size), np.zeros(sizes.size, dtype=np.int64)
    _every_kind(0, sizes.size, *args, expected, once)
    out, seen = np.full(sizes.size, np.nan), np.zeros(sizes.size, dtype=np.int64)
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        with gbrank._parallel.engine_threads("lightgbm", 2):
            over_queries(_every_kind, args[0], *args, out, seen, min_rows=1)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(seen, 1)
    np.testing.assert_array_equal(out, expected)


def test_arguments_the_frame_cannot_carry_go_to_the_pool(monkeypatch):
    """A two-dimensional array cannot travel to the team: the pool runs the blocks, with the
    same result."""
    _needs_a_team("lightgbm")
    import gbrank._parallel as parallel

    taken = []
    real = parallel._executor
    monkeypatch.setattr(parallel, "_executor", lambda: (taken.append(1), real())[1])
    sizes = [3] * 40
    offsets = _offsets(sizes)
    values = np.arange(120, dtype=np.float64).reshape(120, 1)[:, 0:1]
    out, seen = np.zeros(40), np.zeros(40, dtype=np.int64)
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        with gbrank._parallel.engine_threads("lightgbm", 2):
            over_queries(_column_sums, offsets, values, offsets, out, seen, min_rows=1)
    finally:
        numba.set_num_threads(previous)
    assert taken == [1]
    np.testing.assert_array_equal(seen, 1)
    np.testing.assert_array_equal(out, np.add.reduceat(values[:, 0], offsets[:-1]))


@njit(nogil=True)
def _column_sums(q0, q1, values, offsets, out, seen):
    for q in range(q0, q1):
        seen[q] += 1
        for row in range(offsets[q], offsets[q + 1]):
            out[q] += values[row, 0]


def test_compiled_entries_are_told_apart_by_kernel_and_closure():
    """Kernels of one factory differ by their closure; the entry of each is its own."""
    from gbrank._team import _stamp
    from gbrank.objectives._pairwise import _KERNELS

    stamps = {_stamp(kernel) for kernel in _KERNELS.values()}
    assert len(stamps) == len(_KERNELS)
    assert _stamp(_query_sums) != _stamp(_fails_on)


_FIRST_COMPILE = """
import sys, numba, numpy as np, gbrank
rng = np.random.default_rng(4)
sizes = rng.integers(1, 60, 300)
y, s = rng.integers(0, 5, sizes.sum()).astype(float), rng.normal(size=sizes.sum())
numba.set_num_threads(1)
getattr(gbrank, sys.argv[1])().grad_hess(y, s, sizes)
"""

_BOTH_ON_THE_TEAM = """
import lightgbm, numba, numpy as np, gbrank
for name in ("lambdarank", "ranknet"):
    exec(open(__file__.replace("both.py", "first.py")).read().replace("sys.argv[1]", repr(name)))
data = gbrank.datasets.make_ranking(n_queries=600, docs_per_query=25, n_features=2, seed=4)
scores = np.random.default_rng(5).normal(size=data.y.size)
objective = gbrank.lambdarank()
alone = objective.grad_hess(data.y, scores, data.group)
numba.set_num_threads(2)
with gbrank._parallel.engine_threads("lightgbm", 2):
    team = objective.grad_hess(data.y, scores, data.group)
print(float(np.abs(team[0] - alone[0]).max()))
"""


def test_kernels_compiled_first_in_two_processes_keep_apart_in_a_third(tmp_path):
    """Two pairwise families, each compiled first in a process of its own (a user who trained
    ranknet, then lambdarank), read from the disk cache into one process: the engine team's
    entry of one must run its own family's code, not the other's (their compiled code once
    shared a symbol name, and the team computed RankNet's gradients for LambdaRank)."""
    import os
    import subprocess
    import sys

    _needs_a_team("lightgbm")
    first, both = tmp_path / "first.py", tmp_path / "both.py"
    first.write_text(_FIRST_COMPILE)
    both.write_text(_BOTH_ON_THE_TEAM)
    source = os.path.dirname(os.path.dirname(gbrank.__file__))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    for name in ("ranknet", "lambdarank"):
        subprocess.run([sys.executable, str(first), name], env=env, check=True, timeout=600)
    done = subprocess.run([sys.executable, str(both)], env=env, check=True, timeout=600, capture_output=True,
                          text=True)
    assert float(done.stdout.split()[-1]) == 0.0


@pytest.mark.parametrize("nthread", [2, 1, None])
def test_an_objective_inside_xgboost_training_runs_on_the_pool(nthread, monkeypatch):
    """XGBoost gives an objective no thread count (gbrank reads nothing else of its
    training), so its calls run on gbrank's pool, in ``xgb.train`` and ``xgb.cv`` alike."""
    xgb = pytest.importorskip("xgboost")
    import gbrank._parallel as parallel

    calls = []
    real = parallel._run_on_team
    monkeypatch.setattr(parallel, "_run_on_team", lambda *args: (calls.append(1), real(*args))[1])
    data = gbrank.datasets.make_ranking(n_queries=300, docs_per_query=30, n_features=5, seed=0)
    params = {"base_score": 0.0} if nthread is None else {"base_score": 0.0, "nthread": nthread}
    xgb.train(params, xgb.DMatrix(data.X, data.y, group=data.group), 3, obj=gbrank.lambdarank())
    xgb.cv(params, xgb.DMatrix(data.X, data.y, group=data.group), 2, nfold=2, obj=gbrank.lambdarank())
    assert calls == []


TEAM_CASES = {
    "listmle_topk": lambda: gbrank.listmle_topk(k=10),
    "listnet": gbrank.listnet,
    "listnet_k3": lambda: gbrank.listnet(k=3),
    "cosine": gbrank.cosine,
    "ranknet": gbrank.ranknet,
    "lambdarank": gbrank.lambdarank,
    "lambdarank_map": lambda: gbrank.lambdarank("map"),
    "lambdaloss": gbrank.lambdaloss,
    "ips_listnet": lambda: gbrank.ips_listnet(propensity=None),
}


@pytest.mark.parametrize("name", sorted(TEAM_CASES))
def test_objectives_on_the_engines_team_match_one_thread_bit_for_bit(name, monkeypatch):
    """Every kernel family's compiled entry (enough rows for the cheap kernels to take a
    second thread) gives the one-thread gradients exactly."""
    _needs_a_team("lightgbm")
    import gbrank._parallel as parallel

    calls = []
    real = parallel._run_on_team
    monkeypatch.setattr(parallel, "_run_on_team", lambda *args: (calls.append(1), real(*args))[1])
    data = gbrank.datasets.make_ranking(n_queries=1500, docs_per_query=25, n_features=2, seed=4)
    scores = np.random.default_rng(5).normal(size=data.y.size)
    objective = TEAM_CASES[name]()
    labels, extra = data.y, {}
    if getattr(objective, "uses_position", False):
        labels = (np.random.default_rng(6).random(data.y.size) < 0.3).astype(np.float64)
        extra = {"position": np.concatenate([np.arange(1, size + 1) for size in data.group])}
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        alone = objective.grad_hess(labels, scores, data.group, **extra)
        numba.set_num_threads(2)
        with gbrank._parallel.engine_threads("lightgbm", 2):
            team = objective.grad_hess(labels, scores, data.group, **extra)
    finally:
        numba.set_num_threads(previous)
    assert calls
    for a, b in zip(alone, team):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["lambdarank", "listmle_topk", "listnet"])
def test_the_team_switched_off_trains_the_same_model_bit_for_bit(name, monkeypatch):
    """``GBRANK_ENGINE_TEAM=0`` runs every block on the pool, and LightGBM trains the same
    model as on its team."""
    lgb = pytest.importorskip("lightgbm")
    _needs_a_team("lightgbm")
    import gbrank._parallel as parallel

    data = gbrank.datasets.make_ranking(n_queries=1500, docs_per_query=25, n_features=4, seed=4)
    params = {"objective": TEAM_CASES[name](), "num_threads": 2, "verbose": -1, "deterministic": True}
    calls = []
    real = parallel._run_on_team
    monkeypatch.setattr(parallel, "_run_on_team", lambda *args: (calls.append(1), real(*args))[1])
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        on_team = lgb.train(params, lgb.Dataset(data.X, data.y, group=data.group), 4).predict(data.X, raw_score=True)
        assert calls
        calls.clear()
        monkeypatch.setenv(parallel.TEAM_SWITCH, "0")
        on_pool = lgb.train(params, lgb.Dataset(data.X, data.y, group=data.group), 4).predict(data.X, raw_score=True)
    finally:
        numba.set_num_threads(previous)
    assert calls == []
    np.testing.assert_array_equal(on_team, on_pool)
