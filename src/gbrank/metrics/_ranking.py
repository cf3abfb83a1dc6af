"""Order each query's documents by score under a tie policy (numba helpers).

Every metric kernel ranks the rows ``lo .. hi - 1`` of one query by descending score and reads
the values (gains, relevance, stop probabilities) of the first ``kk`` ranks. For a small
cut-off the ``kk`` best rows are found without sorting:

1. a lower bound of the ``kk``-th largest score: split the query into ``kk`` disjoint runs
   of rows; the smallest of the ``kk`` run maxima is at most the ``kk``-th largest score,
   because those maxima are ``kk`` distinct rows;
2. the rows scoring at least that bound are gathered, in input order, without branches
   (typically two or three times ``kk`` of them);
3. those candidates are inserted one by one into a buffer of the ``kk`` best, a row
   displacing the last kept one only if it ranks strictly better, so ties keep input order.

Rows left out in step 2 score below the ``kk``-th largest and could never be kept, so the
result is that of a stable sort. The cost is linear in the list length, with few
mispredicted branches, and allocates nothing. Cut-offs above ``INSERTION_MAX`` use a stable
merge sort of the whole list (:func:`gbrank._sort.order_desc`) instead.

Compiling is most of the cost of a metric's first call, so each kernel is compiled only with
the code its call needs. Two arguments select it by their numba type, which the compiler
resolves before it compiles anything: ``by_sort`` is None for the insertion path and True
for the sort, ``average`` is None unless tied blocks are averaged (:func:`kernel_options`
sets both). A plain integer flag would compile both branches into every kernel, and
``numba.literally`` costs milliseconds per call.

Kernels run a block of queries (:func:`gbrank._parallel.over_queries`) and allocate their
scratch buffers once per block rather than once per query.

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
    and walk the tied blocks with :func:`tie_block`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._sort import order_desc
from ..groups import sizes_to_qid

TIES_INPUT = 0
TIES_PESSIMISTIC = 1
TIES_AVERAGE = 2

TIES = {"input": TIES_INPUT, "pessimistic": TIES_PESSIMISTIC, "average": TIES_AVERAGE}

# Insertion costs up to kk moves per admitted row; past this cut-off a sort is cheaper.
INSERTION_MAX = 32
# Distinct values top_values looks for by plain passes before it falls back to insertion.
LEVELS = 3


def kernel_options(tie_code: int, kmax: int) -> tuple[bool | None, bool | None]:
    """The kernels' ``by_sort`` and ``average`` arguments for a tie policy and the longest
    prefix evaluated (see the module docstring)."""
    return (True if kmax > INSERTION_MAX else None, True if tie_code == TIES_AVERAGE else None)


@njit(cache=True, inline="always")
def scratch(kmax, longest):
    """One block's buffers for :func:`rank_top` and :func:`top_values`: the ranks, the kept
    values, the candidates."""
    return (
        np.empty(kmax, dtype=np.int64),
        np.empty(kmax, dtype=np.float64),
        np.empty(longest, dtype=np.int64),
    )


@njit(cache=True, inline="always")
def cutoff(k, lo, hi):
    """Ranks evaluated in query ``lo:hi``: ``k``, or the whole list (``k == 0`` or longer)."""
    n = hi - lo
    return n if k == 0 or k > n else k


@njit(cache=True, inline="always")
def count_above(values, lo, hi, threshold):
    """Rows of ``lo:hi`` whose value exceeds ``threshold`` (the relevant documents)."""
    count = 0
    for i in range(lo, hi):
        count += values[i] > threshold
    return count


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
def rank_top(scores, lo, hi, kk, buffers, by_sort):
    """The local indices (``0 .. n-1``) of the ``kk`` best-ranked rows of query ``lo:hi``,
    best first, tied scores in input order: ``order[:kk]`` of the returned ``order``.

    ``buffers`` comes from :func:`scratch`. Requires ``1 <= kk <= hi - lo``, and
    ``kk <= INSERTION_MAX`` unless ``by_sort`` is True.
    """
    order, kept, cand = buffers
    if by_sort is None:
        _top_input(scores, lo, hi, kk, order, kept, cand)
    else:
        ordered = order_desc(scores[lo:hi])
        for r in range(kk):
            order[r] = ordered[r]
    return order


@njit(cache=True, inline="always")
def top_values(values, lo, hi, kk, buffers, by_sort):
    """The ``kk`` largest of ``values[lo:hi]``, largest first: ``out[:kk]`` of the returned
    ``out`` (one of the ``buffers``).

    Gains usually take a few distinct values, so the largest value, then the largest below
    it, and so on, are found by branch-free passes (``LEVELS`` of them at most), each
    filling ``out`` with as many copies as occur; what remains is filled by insertion.
    """
    out = buffers[1]
    if by_sort is not None:
        ordered = order_desc(values[lo:hi])
        for r in range(kk):
            out[r] = values[lo + ordered[r]]
        return out
    filled = 0
    bound = np.inf
    # min(LEVELS, kk) passes are enough, and a trip count the compiler cannot know keeps
    # LLVM from unrolling the passes: a tenth less to compile per kernel
    for _ in range(min(LEVELS, kk)):
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
            return out
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
    return out


@njit(cache=True, inline="always")
def tie_block(scores, values, lo, hi, order, start, kk, threshold):
    """The block of tied scores that starts at rank ``start`` of query ``lo:hi`` (ranked in
    ``order[:kk]``): its end rank (exclusive, at most ``kk``), its size ``m``, the sum of its
    ``values`` and how many of them exceed ``threshold``.

    A block cut by the cut-off continues past the ranks that were kept; ``m`` and the sums
    then count every row of the query with that score, as the expectation over the orders
    of the block needs.
    """
    s = scores[lo + order[start]]
    end = start + 1
    while end < kk and scores[lo + order[end]] == s:
        end += 1
    m = 0
    total = 0.0
    above = 0
    if end == kk and kk < hi - lo:
        for i in range(lo, hi):
            if scores[i] == s:
                m += 1
                total += values[i]
                above += values[i] > threshold
    else:
        m = end - start
        for r in range(start, end):
            total += values[lo + order[r]]
            above += values[lo + order[r]] > threshold
    return end, m, total, above


def low_keys_first(keys, offsets, *arrays):
    """``arrays`` with each query's rows reordered by ``keys``, ascending and stable.

    Ranked with tied scores in input order, the reordered rows give the pessimistic order:
    score descending, then key ascending, then the original row order. A query's metric
    does not depend on the order of its rows otherwise.
    """
    rows = np.lexsort((keys, sizes_to_qid(np.diff(offsets))))
    return tuple(a[rows] for a in arrays)
