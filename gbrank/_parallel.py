"""Run a compiled kernel over the queries of a dataset on several threads.

The kernels are numba functions compiled with ``nogil=True`` that take a block of queries
``[q0, q1)`` first; :func:`over_queries` splits the queries into blocks of about equal rows
and runs them on a pool of threads, which run in parallel since the kernels release the GIL.

Why not ``prange``: numba compiles a ``prange`` loop into a separate function, a wrapper for
it and the caller, and each links the per-query function it calls and optimises it again
whole. For the large per-query functions of the Plackett–Luce, ListNet and pairwise
objectives that was a third of the first call's compile time (1 s of a pairwise objective's
2.5 s); a plain loop over a block links it once. Kernels whose per-query work is small or
written in the loop itself (the metrics, RankCosine, the click softmax, NDCG_Boost) lose
little to the layers and keep ``prange`` on numba's threading layer (:mod:`gbrank._threading`).

The number of threads is at most numba's: ``numba.get_num_threads()`` in the calling thread
(``NUMBA_NUM_THREADS``, ``numba.set_num_threads``), so one setting governs every kernel. A
call takes fewer when it has too few rows to pay for them: handing a block to a pool thread
and waiting for it costs about 25 us (measured on 2 cores), and a thread is only taken for
every ``min_rows`` rows, about 50 us of a kernel's work, so that a small call runs in the
caller alone.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numba
import numpy as np

# Blocks per thread: enough that a thread which drew short queries takes another block
# while one with long queries is still busy, few enough that dispatch costs nothing.
BLOCKS_PER_THREAD = 4
# Rows per thread, at least: about 50 us of the listwise kernels' work (10-15 ns a row); the
# pairwise kernels, at about 100 ns a row, pass fewer.
MIN_ROWS_PER_THREAD = 4096

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        # a forked child inherits the pool object but not its threads
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=numba.config.NUMBA_NUM_THREADS, thread_name_prefix="gbrank")
            _pool_pid = os.getpid()
        return _pool


def blocks(offsets: np.ndarray, count: int) -> list[int]:
    """Query boundaries ``b`` (``b[0] = 0``, ``b[-1]`` the number of queries) splitting the
    queries into at most ``count`` contiguous blocks of about equal rows, none empty."""
    # cuts strictly inside (0, rows) fall on query boundaries 0 .. queries
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], count + 1)[1:-1])
    return sorted({0, offsets.size - 1, *cuts.tolist()})


def over_queries(kernel: Callable[..., Any], offsets: np.ndarray, *args: Any,
                 min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """Call ``kernel(q0, q1, *args)`` on blocks ``[q0, q1)`` that cover every query of the
    group ``offsets`` once, in parallel on up to ``numba.get_num_threads()`` threads, one
    for every ``min_rows`` rows (the calling thread alone below ``2 * min_rows``).

    The kernel must release the GIL (``nogil=True``) and write only to the rows and queries
    of its block. An exception raised by a block is raised here.
    """
    queries = offsets.size - 1
    rows = int(offsets[-1]) if offsets.size else 0
    threads = min(numba.get_num_threads(), queries, rows // max(min_rows, 1))
    if threads <= 1:
        kernel(0, queries, *args)
        return
    bounds = blocks(offsets, threads * BLOCKS_PER_THREAD)
    # one shared iterator: a zip's next() holds the GIL, so each block is taken once
    todo = zip(bounds[:-1], bounds[1:])

    def work() -> None:
        for q0, q1 in todo:
            kernel(q0, q1, *args)

    pool = _executor()
    # the calling thread is one of the workers
    futures = [pool.submit(work) for _ in range(threads - 1)]
    work()
    for future in futures:
        future.result()

