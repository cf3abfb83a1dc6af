"""A stable descending sort for the numba kernels, small enough to compile in a fraction of
a second (numba's generic ``np.argsort(kind="mergesort")`` and ``np.sort`` take seconds to
compile, and the kernels need only this one order)."""

from __future__ import annotations

import numpy as np
from numba import njit

# Runs of this length are insertion-sorted before the merges.
_RUN = 16


@njit(cache=True)
def order_desc(values):
    """Indices ordering ``values`` descending, equal values by index: a stable sort.

    ``values`` must hold no NaN.
    """
    n = values.shape[0]
    idx = np.arange(n)
    for start in range(0, n, _RUN):
        stop = min(start + _RUN, n)
        for i in range(start + 1, stop):
            v = idx[i]
            j = i
            while j > start and values[v] > values[idx[j - 1]]:
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = v
    if n <= _RUN:
        return idx
    src = idx
    dst = np.empty(n, dtype=np.int64)
    width = _RUN
    while width < n:
        for start in range(0, n, 2 * width):
            mid = min(start + width, n)
            stop = min(start + 2 * width, n)
            i = start
            j = mid
            t = start
            while i < mid and j < stop:
                # the right run's row goes first only if strictly before: ties keep row order
                if values[src[j]] > values[src[i]]:
                    dst[t] = src[j]
                    j += 1
                else:
                    dst[t] = src[i]
                    i += 1
                t += 1
            while i < mid:
                dst[t] = src[i]
                i += 1
                t += 1
            while j < stop:
                dst[t] = src[j]
                j += 1
                t += 1
        src, dst = dst, src
        width *= 2
    return src
