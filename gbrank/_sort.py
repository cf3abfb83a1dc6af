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
    # The keys move with their indices, so that comparisons read contiguous memory rather
    # than gather through the indices.
    key = np.empty(n, dtype=np.float64)
    idx = np.empty(n, dtype=np.int64)
    for start in range(0, n, _RUN):
        stop = min(start + _RUN, n)
        for i in range(start, stop):
            v = values[i]
            j = i
            while j > start and v > key[j - 1]:
                key[j] = key[j - 1]
                idx[j] = idx[j - 1]
                j -= 1
            key[j] = v
            idx[j] = i
    if n <= _RUN:
        return idx
    dst_key = np.empty(n, dtype=np.float64)
    dst_idx = np.empty(n, dtype=np.int64)
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
                if key[j] > key[i]:
                    dst_key[t] = key[j]
                    dst_idx[t] = idx[j]
                    j += 1
                else:
                    dst_key[t] = key[i]
                    dst_idx[t] = idx[i]
                    i += 1
                t += 1
            while i < mid:
                dst_key[t] = key[i]
                dst_idx[t] = idx[i]
                i += 1
                t += 1
            while j < stop:
                dst_key[t] = key[j]
                dst_idx[t] = idx[j]
                j += 1
                t += 1
        key, dst_key = dst_key, key
        idx, dst_idx = dst_idx, idx
        width *= 2
    return idx
