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

