"""The numba threading layer gbrank's parallel kernels run on.

Numba picks its threading layer once per process, when the first parallel function is
compiled, loaded from cache or run. Left to itself on Linux it takes GNU OpenMP, which a
forked child cannot use: ``multiprocessing`` with the fork start method, joblib's
``multiprocessing`` backend, or ``cross_val_score(n_jobs=2)`` under it, die or hang as soon
as the child runs a kernel after the parent did. TBB is both fork-safe and safe for
concurrent callers from several threads, which gbrank needs (one objective object may serve
trainings running in several threads), so gbrank asks for it. numba's other fork-safe layer,
``workqueue``, aborts when two threads launch kernels at once.

On Linux x86-64 TBB is a dependency (the ``tbb`` wheel, which installs ``libtbb.so.12`` in the
environment's ``lib`` folder, outside the loader's search path: it is loaded here by its full
path so that numba finds it). Elsewhere no TBB wheel exists or fork is not the default start
method, and numba's own choice stands.

The choice is left alone when the user has made one: ``NUMBA_THREADING_LAYER`` in the
environment, ``numba.config.THREADING_LAYER`` set in code, or a parallel numba function run
before gbrank's first kernel (the layer is then fixed for the process).
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
import threading
from pathlib import Path

__all__ = ["configure_threading"]

_TBB_LIBRARY = "libtbb.so.12"
# numba's tbbpool needs TBB 2021.6 or later (TBB_INTERFACE_VERSION 12060)
_TBB_MIN_INTERFACE = 12060
_lock = threading.Lock()
_configured = False


def configure_threading() -> str | None:
    """Ask numba for the TBB threading layer, unless a layer is chosen already.

    Call it before any parallel kernel is compiled or run; further calls do nothing. Cheap:
    it imports numba's configuration (which every kernel module imports anyway) and, the
    first time, loads the TBB library. The library is loaded also when the user asked for
    TBB (``NUMBA_THREADING_LAYER=tbb`` or ``safe``), which numba alone could not find.

    Returns
    -------
    str or None
        ``"tbb"`` when gbrank chose TBB, otherwise None (the user's or numba's choice stands).
    """
    global _configured
    with _lock:
        if _configured:
            return None
        _configured = True
        from numba.core import config
        from numba.np.ufunc import parallel

        if parallel._is_initialized:
            return None
        requested = str(config.THREADING_LAYER).lower()
        if requested in ("omp", "workqueue") or not _load_tbb():
            return None
        if "NUMBA_THREADING_LAYER" in os.environ or requested != "default":
            return None
        config.THREADING_LAYER = "tbb"
        return "tbb"


def _load_tbb() -> bool:
    """Load the TBB runtime numba's ``tbbpool`` links against; False when absent."""
    if not sys.platform.startswith("linux"):
        return False
    for path in _tbb_candidates():
        try:
            # RTLD_GLOBAL: numba's own dlopen("libtbb.so.12") then finds it by its soname
            library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            version = library.TBB_runtime_interface_version()
        except (OSError, AttributeError):
            continue
        # an older TBB would make numba refuse every parallel kernel: keep numba's default
        return version >= _TBB_MIN_INTERFACE
    return False


def _tbb_candidates():
    """Paths where the ``tbb`` wheel may have put its library, cheapest lookups first."""
    seen = set()
    folders = [Path(sysconfig.get_path("data")) / "lib", Path(sys.prefix) / "lib"]
    for folder in folders:
        path = folder / _TBB_LIBRARY
        if path not in seen and path.exists():
            seen.add(path)
            yield path
    from importlib.metadata import PackageNotFoundError, files

    try:
        recorded = files("tbb") or []
    except PackageNotFoundError:
        recorded = []
    for entry in recorded:
        if entry.name == _TBB_LIBRARY:
            path = Path(entry.locate()).resolve()
            if path not in seen and path.exists():
                seen.add(path)
                yield path
    # a system TBB on the loader's path
    yield Path(_TBB_LIBRARY)
