"""Run a compiled kernel over the queries of a dataset on several threads.

The kernels are numba functions compiled with ``nogil=True`` that take a block of queries
``[q0, q1)`` first; :func:`over_queries` splits the queries into blocks of about equal rows
and runs them on a pool of threads, which run in parallel since the kernels release the GIL.

Why not ``prange``: numba compiles a ``prange`` loop into a separate function, a wrapper for
it and the caller, and each links the per-query function it calls and optimises it again
whole. For the large per-query functions of the Plackett–Luce, ListNet and pairwise
objectives that was a third of the first call's compile time (1 s of a pairwise objective's
2.5 s); a plain loop over a block links it once. Every kernel of gbrank runs through
:func:`over_queries`, the metrics' and NDCG_Boost's included (a metric kernel allocates its
scratch buffers once per block).

Inside LightGBM's training the blocks go to LightGBM's own OpenMP threads instead
(:func:`engine_threads`). The engines run their loops on GNU OpenMP, whose threads keep
spinning on a core for a while after each parallel region; the objective is called right
after one, so a pool thread of ours would share the cores with a spinning engine thread,
and a call took 1.5-2.2 times as long as the same call alone. The engine's team is awake
and takes the blocks at once: handed to it through libgomp's ``GOMP_parallel`` (of the
library the engine loaded, never one loaded here), as a compiled function that runs the
numba kernel's blocks with no Python in between (:mod:`gbrank._team`). The team is never
larger than the one LightGBM trains with (its ``num_threads``, resolved from the Dataset's
parameters as LightGBM resolves them), and a training on one thread keeps the pool: GNU
OpenMP hangs a child forked after its parent started OpenMP threads, so gbrank must never
start threads the engine would not have started itself.

So a kernel's blocks run in one of two ways: on the pool, or compiled on LightGBM's team.
``GBRANK_ENGINE_TEAM=0`` in the environment turns the team off (every block then runs on
the pool), with the same results bit for bit: each block writes only its own rows.
A kernel the team cannot take (not compiled, or an argument that cannot travel in a frame,
see :mod:`gbrank._team`) runs on the pool. XGBoost gives an objective no thread count, so
its calls run on the pool.

The number of threads is at most numba's: ``numba.get_num_threads()`` in the calling thread
(``NUMBA_NUM_THREADS``, ``numba.set_num_threads``), so one setting governs every kernel. A
call takes fewer when it has too few rows to pay for them: handing a block to a pool thread
and waiting for it costs about 25 us (measured on 2 cores), and a thread is only taken for
every ``min_rows`` rows, about 50 us of a kernel's work, so that a small call runs in the
caller alone.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np

from ._team import run as _run_on_team

# Blocks per thread: enough that a thread which drew short queries takes another block
# while one with long queries is still busy, few enough that dispatch costs nothing.
BLOCKS_PER_THREAD = 4
# Rows per thread, at least: about 50 us of the listwise kernels' work (10-15 ns a row); the
# pairwise kernels, at about 100 ns a row, pass fewer.
MIN_ROWS_PER_THREAD = 4096
# The same for kernels of a few ns a row (RankCosine, the click softmax): a thread pays for
# its hand-over on four times the rows.
MIN_ROWS_PER_THREAD_LIGHT = 4 * MIN_ROWS_PER_THREAD

_lock = threading.Lock()
# (offsets, count, block bounds) of the latest calls, newest first (_bounds)
_recent_bounds: list[tuple[np.ndarray, int, np.ndarray]] = []
_RECENT_BOUNDS = 8
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None
# the engine whose training the current thread is in, and its thread count (engine_threads)
_local = threading.local()
# engine -> its libgomp's GOMP_parallel and omp_get_max_threads, or None; looked up once per process
_gomp: dict[str, Any] = {}
_gomp_pid: int | None = None
_GOMP_SONAME = "libgomp.so.1"
# Engines whose team takes the blocks (when the engine says how many threads it trains with).
TEAM_ENGINES = ("lightgbm",)
#: The environment variable that turns the engine's team off (``"0"``).
TEAM_SWITCH = "GBRANK_ENGINE_TEAM"


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        # a forked child inherits the pool object but not its threads
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=numba.config.NUMBA_NUM_THREADS, thread_name_prefix="gbrank")
            _pool_pid = os.getpid()
        return _pool


class engine_threads:
    """Run the kernels called in this block on ``engine``'s OpenMP threads, for an engine of
    ``TEAM_ENGINES`` that has loaded GNU OpenMP; otherwise, or with None, on the pool.

    ``threads``: how many the engine trains with (None: its OpenMP runtime's default). The
    team takes at most that many; with one, the blocks go to the pool, as no OpenMP thread
    of the engine's has started that a team call could reuse.
    """

    # a class rather than a generator: it is entered at every objective call
    __slots__ = ("engine", "previous")

    def __init__(self, engine: str | None, threads: int | None = None) -> None:
        self.engine = (engine, threads) if engine else None

    def __enter__(self) -> None:
        self.previous = getattr(_local, "engine", None)
        _local.engine = self.engine

    def __exit__(self, *exc: Any) -> None:
        _local.engine = self.previous


def _gomp_sonames(module: Any, engine: str) -> list[str]:
    """The name the engine's library asked the loader for: a copy its wheel bundles (in
    ``<engine>.libs``, named by its soname), else the system's ``libgomp.so.1``.

    By name, not by path: the loader shares one copy between every library that asks for
    that soname (XGBoost's bundled copy is the same as scikit-learn's, and whichever was
    loaded first runs both).
    """
    bundle = Path(module.__file__).resolve().parent.parent / f"{engine}.libs"
    bundled = sorted(p.name for p in bundle.glob("libgomp*")) if bundle.is_dir() else []
    return bundled or [_GOMP_SONAME]


def _engine_gomp(engine: str) -> tuple[Any, Any] | None:
    """``GOMP_parallel`` and ``omp_get_max_threads`` of the libgomp ``engine`` runs on, if
    loaded; None otherwise.

    A wheel may bundle its own copy (XGBoost's, in ``xgboost.libs``); LightGBM's links the
    system's. The library is only looked up among those already loaded (``RTLD_NOLOAD``), so
    gbrank never loads an OpenMP runtime of its own.
    """
    global _gomp_pid
    with _lock:
        if _gomp_pid != os.getpid():
            _gomp.clear()
            _gomp_pid = os.getpid()
        if engine in _gomp:
            return _gomp[engine]
        found = None
        module = sys.modules.get(engine)
        if engine in TEAM_ENGINES and module is not None and sys.platform.startswith("linux"):
            for soname in _gomp_sonames(module, engine):
                try:
                    library = ctypes.CDLL(soname, mode=os.RTLD_NOLOAD)
                    parallel, max_threads = library.GOMP_parallel, library.omp_get_max_threads
                except (OSError, AttributeError):
                    continue
                parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
                parallel.restype = None
                max_threads.argtypes = []
                max_threads.restype = ctypes.c_int
                found = parallel, max_threads
                break
        _gomp[engine] = found
        return found


def blocks(offsets: np.ndarray, count: int) -> list[int]:
    """Query boundaries ``b`` (``b[0] = 0``, ``b[-1]`` the number of queries) splitting the
    queries into at most ``count`` contiguous blocks of about equal rows, none empty."""
    # cuts strictly inside (0, rows) fall on query boundaries 0 .. queries
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], count + 1)[1:-1])
    return sorted({0, offsets.size - 1, *cuts.tolist()})


def _bounds(offsets: np.ndarray, count: int) -> np.ndarray:
    """:func:`blocks` as int64, kept for the few latest ``offsets`` arrays (a training set's
    state hands the same one to every call; holding it keeps its identity from being reused)."""
    with _lock:
        for cached, cached_count, bounds in _recent_bounds:
            if cached is offsets and cached_count == count:
                return bounds
    bounds = np.array(blocks(offsets, count), dtype=np.int64)
    with _lock:
        _recent_bounds.insert(0, (offsets, count, bounds))
        del _recent_bounds[_RECENT_BOUNDS:]
    return bounds


def over_queries(kernel: Callable[..., Any], offsets: np.ndarray, *args: Any,
                 min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """Call ``kernel(q0, q1, *args)`` on blocks ``[q0, q1)`` that cover every query of the
    group ``offsets`` once, in parallel on up to ``numba.get_num_threads()`` threads, one
    for every ``min_rows`` rows (the calling thread alone below ``2 * min_rows``).

    The kernel must release the GIL (``nogil=True``) and write only to the rows and queries
    of its block. An exception raised by a block is raised here. Inside LightGBM's training
    (:func:`engine_threads`) a numba kernel whose arguments are one-dimensional contiguous
    arrays (float64, float32, int64, int32, uint8, bool), bools, ints, floats or None runs
    compiled on the engine's team (:mod:`gbrank._team`); any other runs on the pool.
    """
    queries = offsets.size - 1
    rows = int(offsets[-1]) if offsets.size else 0
    threads = min(numba.get_num_threads(), queries, rows // max(min_rows, 1))
    if threads <= 1:
        kernel(0, queries, *args)
        return
    bounds = _bounds(offsets, threads * BLOCKS_PER_THREAD)
    # one shared iterator: a zip's next() holds the GIL, so each block is taken once
    todo = zip(bounds[:-1], bounds[1:])

    def work() -> None:
        for q0, q1 in todo:
            kernel(q0, q1, *args)

    parallel, team = _team()
    if team > 1 and _run_on_team(parallel, kernel, bounds, args, min(threads, team)):
        return
    pool = _executor()
    # the calling thread is one of the workers
    futures = [pool.submit(work) for _ in range(threads - 1)]
    work()
    for future in futures:
        future.result()


def _team() -> tuple[Any, int]:
    """The engine's ``GOMP_parallel`` and how many threads a call may take of its team (0:
    no team) in the current thread's :func:`engine_threads` block."""
    engine, threads = getattr(_local, "engine", None) or (None, None)
    if engine is None or os.environ.get(TEAM_SWITCH, "1") == "0":
        return None, 0
    gomp = _engine_gomp(engine)
    if gomp is None:
        return None, 0
    parallel, max_threads = gomp
    # never more than the OpenMP setting the engine left in this thread (LightGBM sets it to
    # the num_threads it trains with), also where the objective is not told the count
    limit = int(max_threads())
    return parallel, min(int(threads), limit) if threads else limit
