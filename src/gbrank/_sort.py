"""A stable descending sort for the numba kernels, small enough to compile in a fraction of
a second (numba's generic ``np.argsort(kind="mergesort")`` and ``np.sort`` take seconds to
compile, and the kernels need only this one order)."""

from __future__ import annotations

import numpy as np
from numba import njit

# Runs of this length are insertion-sorted before the merges.
_RUN = 16


@njit(cache=True, inline="always")
def sort_desc(src, lo, n, key, idx, tkey, tidx):
    """Sort ``src[lo:lo + n]`` descending, equal values by index (a stable sort), in the
    caller's buffers ``key``, ``idx`` (the result's) and ``tkey``, ``tidx`` (the merges'), each
    at least ``n`` long; returns the sorted values and their local indices, two of the four
    buffers. ``src`` must hold no NaN.

    The keys move with their indices, so that comparisons read contiguous memory rather than
    gather through the indices.
    """
    for t in range(n):
        key[t] = src[lo + t]
        idx[t] = t
    for start in range(0, n, _RUN):
        for t in range(start + 1, min(start + _RUN, n)):
            k = key[t]
            x = idx[t]
            u = t
            while u > start and key[u - 1] < k:
                key[u] = key[u - 1]
                idx[u] = idx[u - 1]
                u -= 1
            key[u] = k
            idx[u] = x
    width = _RUN
    while width < n:
        for start in range(0, n, 2 * width):
            mid = min(start + width, n)
            end = min(start + 2 * width, n)
            x = start
            y = mid
            for t in range(start, end):
                # the right run's row goes first only if strictly larger: ties keep row order
                if x < mid and (y >= end or key[x] >= key[y]):
                    tkey[t] = key[x]
                    tidx[t] = idx[x]
                    x += 1
                else:
                    tkey[t] = key[y]
                    tidx[t] = idx[y]
                    y += 1
        key, tkey = tkey, key
        idx, tidx = tidx, idx
        width *= 2
    return key, idx


@njit(cache=True)
def order_desc(values):
    """Indices ordering ``values`` descending, equal values by index: a stable sort.

    ``values`` must hold no NaN.
    """
    n = values.shape[0]
    key = np.empty(n, dtype=np.float64)
    idx = np.empty(n, dtype=np.int64)
    tkey = np.empty(n, dtype=np.float64)
    tidx = np.empty(n, dtype=np.int64)
    return sort_desc(values, 0, n, key, idx, tkey, tidx)[1]
