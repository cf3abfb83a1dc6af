r"""Precision at k and average precision at k of each query, and the kernel that runs them
over all queries (numba).

Both measures walk the ranking counting the relevant documents; average precision also sums
the precision at each of them. One walk serves both, so that a tie policy or a ranking path
is written once for the two: ``measure`` is :data:`PRECISION` or :data:`AVERAGE_PRECISION`.
It is None for precision, so that numba leaves average precision's sums out of precision's
code before compiling it, as it does the code of ``by_sort`` and ``average`` (see
:mod:`._ranking`); LLVM does not drop them, and they would cost precision a tenth of its
time on long lists.

``other_denominator`` is True for the second denominator of each measure: :math:`R` rather
than :math:`\min(R, k)` for average precision, :math:`\min(k, n)` rather than :math:`k` for
precision.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from ._ranking import count_above, cutoff, rank_top, scratch, tie_block

#: The kernel's ``measure`` argument for precision at k and for average precision at k.
PRECISION = None
AVERAGE_PRECISION = True


@njit(cache=True)
def _query(labels, scores, lo, hi, k, threshold, other_denominator, measure, fill, buffers, by_sort, average):
    kk = cutoff(k, lo, hi)
    n_rel = count_above(labels, lo, hi, threshold)
    if n_rel == 0:
        return fill
    order = rank_top(scores, lo, hi, kk, buffers, by_sort)
    hits = 0.0
    total = 0.0
    if average is None:
        for r in range(kk):
            if labels[lo + order[r]] > threshold:
                hits += 1.0
                if measure is not None:
                    total += hits / (r + 1.0)
    else:
        # Block at ranks s+1..s+m holding c relevant documents, h relevant before it: each
        # rank holds a relevant document with probability c / m, and
        # E[rel(s+t) * hits(s+t)] = c/m (h + 1) + (t - 1) c (c - 1) / (m (m - 1)).
        start = 0
        hits_before = 0
        while start < kk:
            end, m, _, c = tie_block(scores, labels, lo, hi, order, start, kk, threshold)
            hits += c * (end - start) / m
            if measure is not None and c > 0:
                p_rel = c / m
                p_pair = c * (c - 1) / (m * (m - 1)) if m > 1 else 0.0
                for t in range(1, end - start + 1):
                    total += (p_rel * (hits_before + 1) + (t - 1) * p_pair) / (start + t)
            hits_before += c
            start = end
    if measure is not None:
        return total / (n_rel if other_denominator else min(n_rel, kk))
    if k == 0:
        return hits / (hi - lo)
    return hits / (kk if other_denominator else k)


@njit(cache=True, nogil=True)
def _block(q0, q1, labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, other_denominator, measure,
           fill, out):
    buffers = scratch(kmax, longest)
    for q in range(q0, q1):
        out[q] = _query(labels, scores, offsets[q], offsets[q + 1], k, threshold, other_denominator, measure, fill,
                        buffers, by_sort, average)


def precision_kernel(labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, other_denominator,
                     measure, fill):
    """The measure of every query (float64, one per query)."""
    out = np.empty(offsets.size - 1)
    over_queries(_block, offsets, labels, scores, kmax, longest, by_sort, average, offsets, k, threshold,
                 other_denominator, measure, fill, out, min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return out
