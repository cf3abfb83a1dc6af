"""Where numba caches gbrank's compiled kernels when it cannot cache them where it would.

Every kernel is compiled with ``cache=True``, and numba refuses to define such a function
(``cannot cache function ...: no locator available``) when none of its cache folders is
writable: ``NUMBA_CACHE_DIR`` unset, the ``__pycache__`` folders next to gbrank's modules
read-only (a read-only install) and no writable user cache folder (no writable home). gbrank
then points numba at a folder of the temporary directory, with one warning naming the fix.

:func:`ensure_cache` runs when ``gbrank`` is imported, before any kernel is defined. Its
common outcome costs no numba import: ``NUMBA_CACHE_DIR`` set, or gbrank's ``__pycache__``
writable (numba's first two choices). Only when both fail does it ask numba's own locators.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = ["ensure_cache"]

_PACKAGE = Path(__file__).resolve().parent


def ensure_cache() -> str | None:
    """Give numba a writable cache folder for gbrank's kernels where it has none.

    Returns
    -------
    str or None
        The folder chosen, or None when numba can cache on its own (nothing changed).
    """
    if os.environ.get("NUMBA_CACHE_DIR") or _numba_config_cache_dir():
        return None
    if _writable(_PACKAGE / "__pycache__") or _numba_can_cache():
        return None
    folder = _temporary_folder()
    if folder is None:
        warnings.warn(
            "numba cannot cache gbrank's compiled kernels: gbrank's folder is read-only and neither "
            "the user's cache folder nor the temporary directory is writable. Set NUMBA_CACHE_DIR "
            "to a writable folder.",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    # the environment, so that numba keeps it when it reloads its configuration and child
    # processes cache there too; numba's configuration, in case numba was imported already
    os.environ["NUMBA_CACHE_DIR"] = folder
    if "numba.core.config" in sys.modules:
        sys.modules["numba.core.config"].CACHE_DIR = folder
    warnings.warn(
        f"numba cannot cache gbrank's compiled kernels next to gbrank (a read-only install) nor in "
        f"the user's cache folder: they are cached in {folder} instead. Set NUMBA_CACHE_DIR to a "
        "writable folder to choose where.",
        RuntimeWarning,
        stacklevel=3,
    )
    return folder


def _numba_config_cache_dir() -> str:
    """The cache folder set in numba's configuration in code, if numba is imported."""
    config = sys.modules.get("numba.core.config")
    return getattr(config, "CACHE_DIR", "") if config is not None else ""


def _writable(folder: Path) -> bool:
    """Whether ``folder`` can be created and written, tested as numba tests a cache folder."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _probe() -> None:
    """A function of gbrank's package for numba's cache locators to place."""


def _numba_can_cache() -> bool:
    """Whether one of numba's cache locators accepts a function of gbrank's package."""
    from numba.core.caching import FunctionCache

    try:
        FunctionCache(_probe)
    except RuntimeError:
        return False
    return True


def _temporary_folder() -> str | None:
    """A cache folder in the temporary directory that only this user can write, or None.

    One per user (``gbrank-numba-cache-<uid>``), kept between runs, when it is this user's own
    and closed to others; a fresh one for this process otherwise.
    """
    try:
        root = tempfile.gettempdir()
    except OSError:
        return None
    uid = os.getuid() if hasattr(os, "getuid") else None
    shared = Path(root) / ("gbrank-numba-cache" if uid is None else f"gbrank-numba-cache-{uid}")
    try:
        shared.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(shared)
        # a folder another user could write would let them plant compiled code
        safe = stat.S_ISDIR(info.st_mode) and (uid is None or (info.st_uid == uid and not info.st_mode & 0o022))
        if safe and _writable(shared):
            return str(shared)
    except OSError:
        pass
    try:
        return tempfile.mkdtemp(prefix="gbrank-numba-cache-")
    except OSError:
        return None
