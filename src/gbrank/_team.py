"""Run a numba kernel's blocks on an engine's OpenMP team with no Python in between.

:func:`gbrank._parallel.over_queries` hands the blocks of a call inside LightGBM's training
to LightGBM's own OpenMP threads through libgomp's ``GOMP_parallel``. Called with a Python
function, every thread of the team has to take the GIL to start it, one after the other;
right after the engine's tree growing that hand-over alone took 0.25-0.30 ms (an empty
kernel on 40k rows, 2 threads: 288 us inside training against 54 us in a loop of calls),
while a compiled function handed over the same way took 8 us. So a numba kernel is handed
over compiled: :func:`_entry` builds, once per kernel and kind of arguments, a C function
(numba ``cfunc``) that each thread of the team enters with the address of a *frame*, a
table of int64 words holding the kernel's arguments, and that takes blocks from a shared
counter (an atomic add) until none is left.

Frame layout: ``[next block, blocks, address of the block bounds, failed block, arguments]``,
an argument taking two words: an array its address and length, a scalar its value (a float
by its bits), None nothing. A block that raises stops the call: its index is kept and the
caller runs that block again in Python, which raises the kernel's own exception there.

The entries are cached on disk like the kernels (``cache=True``). Their source is generated,
so the name of each says what it was generated from: the kernel (module, name, closure) and
the size and time of the kernel's source file, as numba's own cache does for a kernel, so
that an edited kernel never runs a stale entry.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import threading
from typing import Any

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, types
from numba.core import cgutils
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

__all__ = ["run"]

_lock = threading.Lock()
# (kernel, argument kinds) -> its compiled entry
_entries: dict[tuple[Any, tuple[str, ...]], Any] = {}
_HEADER = 4  # next block, blocks, bounds, failed block
_DTYPES = {np.dtype(t): t.__name__ for t in (np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_)}


@intrinsic
def _pointer(typingctx, address):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(types.int64), codegen


@intrinsic
def _take(typingctx, address):
    """Add 1 to the int64 at ``address`` atomically; the value before."""

    def codegen(context, builder, signature, args):
        word = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", word, ir.Constant(ir.IntType(64), 1), "monotonic")

    return types.int64(types.int64), codegen


@intrinsic
def _read_only(typingctx, array):
    """The same array typed read-only, as numba types a read-only array passed from Python,
    so that the kernel runs the version compiled for it instead of compiling another."""

    def codegen(context, builder, signature, args):
        if context.enable_nrt:
            context.nrt.incref(builder, signature.args[0], args[0])
        return args[0]

    return array.copy(readonly=True)(array), codegen


def _framed(args: tuple) -> tuple[tuple[str, ...], list[int]] | None:
    """The kinds of ``args`` (how each travels in the frame) and their frame words; None
    when one cannot travel (the caller then hands the blocks over in Python)."""
    kinds = []
    words = []
    for value in args:
        if value is None:
            kinds.append("none")
            words += (0, 0)
        elif isinstance(value, np.ndarray):
            if value.ndim != 1 or not value.flags.c_contiguous or value.dtype not in _DTYPES:
                return None
            kinds.append(_DTYPES[value.dtype] if value.flags.writeable else _DTYPES[value.dtype] + ":ro")
            words += (value.ctypes.data, value.size)
        # numba types these as boolean, int64 and float64, as it does in a call from Python
        elif type(value) in (bool, np.bool_):
            kinds.append("bool")
            words += (int(value), 0)
        elif type(value) in (int, np.int64):
            kinds.append("int")
            words += (int(value), 0)
        elif type(value) in (float, np.float64):
            kinds.append("float")
            words += (int(np.float64(value).view(np.int64)), 0)
        else:
            return None
    return tuple(kinds), words


def _stamp(kernel: CPUDispatcher) -> str:
    """What the entry's code depends on: the kernel's name, closure and source file."""
    func = kernel.py_func
    path = inspect.getsourcefile(func) or ""
    stat = os.stat(path) if path and os.path.exists(path) else None
    cells = tuple(repr(cell.cell_contents) for cell in func.__closure__ or ())
    key = (func.__module__, func.__qualname__, cells, path, stat and (stat.st_mtime_ns, stat.st_size))
    return hashlib.sha1(repr(key).encode()).hexdigest()[:16]


def _source(name: str, kinds: tuple[str, ...]) -> str:
    lines = [
        f"def {name}(address):",
        f"    frame = carray(_pointer(address), {_HEADER + 2 * len(kinds)}, np.int64)",
        "    bounds = carray(_pointer(frame[2]), frame[1] + 1, np.int64)",
    ]
    names = []
    for i, kind in enumerate(kinds):
        word = _HEADER + 2 * i
        if kind == "none":
            names.append("None")
            continue
        names.append(f"a{i}")
        if kind == "bool":
            lines.append(f"    a{i} = frame[{word}] != 0")
        elif kind == "int":
            lines.append(f"    a{i} = frame[{word}]")
        elif kind == "float":
            lines.append(f"    a{i} = frame[{word}:{word + 1}].view(np.float64)[0]")
        else:
            dtype, *readonly = kind.split(":")
            lines.append(f"    a{i} = carray(_pointer(frame[{word}]), frame[{word + 1}], np.{dtype})")
            if readonly:
                lines.append(f"    a{i} = _read_only(a{i})")
    lines += [
        "    while True:",
        "        block = _take(address)",
        "        if block >= frame[1]:",
        "            return",
        "        try:",
        f"            kernel(bounds[block], bounds[block + 1], {', '.join(names)})",
        "        except Exception:",
        "            frame[3] = block",
        "            frame[0] = frame[1]",
        "            return",
    ]
    return "\n".join(lines) + "\n"


def _entry(kernel: CPUDispatcher, kinds: tuple[str, ...]) -> Any:
    """The compiled entry of ``kernel`` for arguments of ``kinds``."""
    key = (kernel, kinds)
    found = _entries.get(key)
    if found is not None:
        return found
    with _lock:
        if key not in _entries:
            digest = hashlib.sha1(repr((_stamp(kernel), kinds)).encode()).hexdigest()[:16]
            name = f"_team_{kernel.py_func.__name__}_{digest}"
            namespace = {"__name__": __name__, "carray": carray, "np": np, "kernel": kernel,
                         "_pointer": _pointer, "_take": _take, "_read_only": _read_only}
            exec(compile(_source(name, kinds), __file__, "exec"), namespace)
            _entries[key] = cfunc(types.void(types.int64), nopython=True, cache=True)(namespace[name])
        return _entries[key]


def run(parallel: Any, kernel: Any, bounds: np.ndarray, args: tuple, threads: int) -> bool:
    """Run ``kernel(q0, q1, *args)`` over the blocks ``bounds`` on ``threads`` threads of an
    OpenMP team (``parallel``: its ``GOMP_parallel``; ``bounds`` int64) through the kernel's compiled entry;
    a block that failed is run again here, to raise its exception. False, and nothing run,
    when ``kernel`` is not a numba kernel or an argument cannot travel in a frame."""
    framed = _framed(args) if isinstance(kernel, CPUDispatcher) else None
    if framed is None:
        return False
    kinds, words = framed
    compiled = _entry(kernel, kinds)
    frame = np.array([0, len(bounds) - 1, bounds.ctypes.data, -1, *words], dtype=np.int64)
    parallel(compiled.address, frame.ctypes.data, threads, 0)
    failed = int(frame[3])
    if failed >= 0:
        kernel(bounds[failed], bounds[failed + 1], *args)
        raise RuntimeError(f"queries {bounds[failed]} to {bounds[failed + 1]} failed on the team but not when run again")
    return True
