"""Order each query's documents by score under a tie policy (numba helpers).

Every metric kernel ranks the rows ``lo .. hi - 1`` of one query by descending score and reads
the labels of the first ``kk`` ranks. For a small cut-off the ``kk`` best rows are found
without sorting:

1. a lower bound of the ``kk``-th largest score: split the query into ``kk`` disjoint runs
   of rows; the smallest of the ``kk`` run maxima is at most the ``kk``-th largest score,
   because those maxima are ``kk`` distinct rows;
2. the rows scoring at least that bound are gathered, in input order, without branches
   (typically two or three times ``kk`` of them);
3. those candidates are inserted one by one into a buffer of the ``kk`` best, a row
   displacing the last kept one only if it ranks strictly better, so ties keep input order.

Rows left out in step 2 score below the ``kk``-th largest and could never be kept, so the
result is that of a stable sort. The cost is linear in the list length, with few
mispredicted branches, and allocates nothing. Cut-offs above ``INSERTION_MAX`` fall back to
a stable merge sort of the whole list (:func:`gbrank._sort.order_desc`).

Kernels run queries in chunks of ``CHUNK`` so that the scratch buffers are allocated once per
chunk rather than once per query.

Tie policies (integer codes, so that the kernels stay free of strings):

``TIES_INPUT``
    Stable: tied documents keep their input row order (LightGBM, XGBoost).
``TIES_PESSIMISTIC``
    Within a block of tied scores the document with the lower key comes first, then input
    order; the key is the gain (NDCG, ERR) or the label (binary measures), so relevant
    documents go last. Done before the kernel: :func:`low_keys_first` reorders each query's
    rows by key, and the kernel ranks them in input order.
``TIES_AVERAGE``
    The expected value over all orders of each tied block. Kernels ask for the stable order
    and walk the tied blocks with :func:`tie_block_end` and :func:`tied_with`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._sort import order_desc

TIES_INPUT = 0
TIES_PESSIMISTIC = 1
TIES_AVERAGE = 2

TIES = {"input": TIES_INPUT, "pessimistic": TIES_PESSIMISTIC, "average": TIES_AVERAGE}

CHUNK = 64
# Insertion costs up to kk moves per admitted row; past this cut-off a sort is cheaper.
INSERTION_MAX = 32
# Distinct values top_values_desc looks for by plain passes before it falls back to insertion.
LEVELS = 3


@njit(cache=True, inline="always")
def _candidates(values, lo, hi, kk, cand):
    """Write the local indices of the rows of ``lo:hi`` that may be among the ``kk`` largest
    ``values`` into ``cand``, in input order, and return their number."""
    n = hi - lo
    if n < 4 * kk:
        for i in range(n):
            cand[i] = i
        return n
    step = n // kk
    bound = np.inf
    for g in range(kk):
        start = lo + g * step
        stop = hi if g == kk - 1 else start + step
        run_max = values[start]
        for i in range(start + 1, stop):
            run_max = max(run_max, values[i])
        bound = min(bound, run_max)
    c = 0
    for i in range(n):
        cand[c] = i
        c += values[lo + i] >= bound
    return c


@njit(cache=True, inline="always")
def _top_input(scores, lo, hi, kk, out, kept, cand):
    n_cand = _candidates(scores, lo, hi, kk, cand)
    # The running cut-off score kept[kk - 1] is held in a local so that a row that does not
    # make the cut costs one load and one comparison.
    size = 0
    worst = 0.0
    for j in range(n_cand):
        i = cand[j]
        s = scores[lo + i]
        if size == kk:
            if s <= worst:
                continue
            pos = kk - 1
        else:
            pos = size
            size += 1
        while pos > 0 and s > kept[pos - 1]:
            kept[pos] = kept[pos - 1]
            out[pos] = out[pos - 1]
            pos -= 1
        kept[pos] = s
        out[pos] = i
        worst = kept[kk - 1]


@njit(cache=True, inline="always")
def rank_top(scores, lo, hi, kk, out, kept, cand):
    """Write the local indices (``0 .. n-1``) of the ``kk`` best-ranked rows of query
    ``lo:hi`` into ``out[:kk]``, best first, tied scores in input order.

    Scratch: ``kept`` (float64) holds at least ``kk`` entries, ``cand`` (int64) at least
    ``hi - lo``. Requires ``1 <= kk <= hi - lo``.
    """
    if kk > INSERTION_MAX:
        order = order_desc(scores[lo:hi])
        for r in range(kk):
            out[r] = order[r]
    else:
        _top_input(scores, lo, hi, kk, out, kept, cand)


@njit(cache=True, inline="always")
def tie_block_end(scores, lo, order, start, stop):
    """End (exclusive, at most ``stop``) of the run of equal scores from rank ``start``."""
    s = scores[lo + order[start]]
    end = start + 1
    while end < stop and scores[lo + order[end]] == s:
        end += 1
    return end


@njit(cache=True, inline="always")
def tied_with(scores, values, lo, hi, s, threshold):
    """Over query ``lo:hi``, the number of rows scoring ``s``, the sum of their ``values``,
    and how many of them have ``values > threshold``.

    A tied block cut by the cut-off continues past the ranks that were kept; this gives its
    full size and content.
    """
    m = 0
    total = 0.0
    above = 0
    for i in range(lo, hi):
        if scores[i] == s:
            m += 1
            total += values[i]
            if values[i] > threshold:
                above += 1
    return m, total, above


@njit(cache=True, inline="always")
def top_values_desc(values, lo, hi, kk, out):
    """Write the ``kk`` largest of ``values[lo:hi]`` into ``out[:kk]``, in descending order.

    Gains usually take a few distinct values, so the largest value, then the largest below
    it, and so on, are found by branch-free passes (``LEVELS`` of them at most), each
    filling ``out`` with as many copies as occur; what remains is filled by insertion.
    """
    if kk > INSERTION_MAX:
        ordered = order_desc(values[lo:hi])
        for r in range(kk):
            out[r] = values[lo + ordered[r]]
        return
    filled = 0
    bound = np.inf
    for _ in range(LEVELS):
        level = -np.inf
        for i in range(lo, hi):
            v = values[i]
            level = max(level, v if v < bound else -np.inf)
        count = 0
        for i in range(lo, hi):
            count += values[i] == level
        for r in range(filled, min(kk, filled + count)):
            out[r] = level
        filled = min(kk, filled + count)
        if filled == kk:
            return
        bound = level
    # Insertion of the values below bound into out[filled:kk].
    size = filled
    worst = 0.0
    for i in range(lo, hi):
        v = values[i]
        if v >= bound:
            continue
        if size == kk:
            if v <= worst:
                continue
            pos = kk - 1
        else:
            pos = size
            size += 1
        while pos > filled and v > out[pos - 1]:
            out[pos] = out[pos - 1]
            pos -= 1
        out[pos] = v
        worst = out[kk - 1]


def low_keys_first(keys, offsets, *arrays):
    """``arrays`` with each query's rows reordered by ``keys``, ascending and stable.

    Ranked with tied scores in input order, the reordered rows give the pessimistic order:
    score descending, then key ascending, then the original row order. A query's metric
    does not depend on the order of its rows otherwise.
    """
    qid = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    rows = np.lexsort((keys, qid))
    return tuple(a[rows] for a in arrays)
