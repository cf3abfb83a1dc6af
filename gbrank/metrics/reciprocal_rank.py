"""Reciprocal rank of the first relevant document and its mean over queries, MRR@k."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._validation import check_labels
from ._common import (
    NoRelevant,
    check_inputs,
    check_k,
    check_no_relevant,
    check_threshold,
    check_ties,
    cutoff_length,
    longest_group,
    reduce_queries,
)
from ._ranking import (
    CHUNK,
    TIES_AVERAGE,
    TIES_INPUT,
    TIES_PESSIMISTIC,
    low_keys_first,
    rank_top,
    tie_block_end,
    tied_with,
)

__all__ = ["mean_reciprocal_rank", "mrr"]


@njit(cache=True)
def _rr_query(labels, scores, lo, hi, k, threshold, ties, fill, order, kept, cand):
    n = hi - lo
    kk = n if k == 0 or k > n else k
    n_rel = 0
    for i in range(lo, hi):
        if labels[i] > threshold:
            n_rel += 1
    if n_rel == 0:
        return fill
    rank_top(scores, lo, hi, kk, order, kept, cand)
    if ties != TIES_AVERAGE:
        for r in range(kk):
            if labels[lo + order[r]] > threshold:
                return 1.0 / (r + 1)
        return 0.0
    # In the first block (ranks s+1..s+m) that holds c > 0 relevant documents, the first
    # of them sits at block position t with P(t) = C(m - t, c - 1) / C(m, c).
    start = 0
    while start < kk:
        end = tie_block_end(scores, lo, order, start, kk)
        if end == kk and kk < n:
            m, _, c = tied_with(scores, labels, lo, hi, scores[lo + order[start]], threshold)
        else:
            m = end - start
            c = 0
            for r in range(start, end):
                if labels[lo + order[r]] > threshold:
                    c += 1
        if c > 0:
            last = min(m - c + 1, end - start)
            value = 0.0
            p = c / m
            for t in range(1, last + 1):
                value += p / (start + t)
                if t < last:
                    p *= (m - t - c + 1) / (m - t)
            return value
        start = end
    return 0.0


@njit(parallel=True, cache=True)
def _rr_kernel(labels, scores, offsets, k, kmax, threshold, ties, fill, longest):
    n_queries = offsets.size - 1
    out = np.empty(n_queries, dtype=np.float64)
    for chunk in prange((n_queries + CHUNK - 1) // CHUNK):
        order = np.empty(kmax, dtype=np.int64)
        cand = np.empty(longest, dtype=np.int64)
        kept = np.empty(kmax, dtype=np.float64)
        for q in range(chunk * CHUNK, min(n_queries, (chunk + 1) * CHUNK)):
            out[q] = _rr_query(
                labels,
                scores,
                offsets[q],
                offsets[q + 1],
                k,
                threshold,
                ties,
                fill,
                order,
                kept,
                cand,
            )
    return out


def _check_options(k, *, ties="input", no_relevant=1.0, relevance_threshold=0.0):
    """Fail on a bad setting before any data is read."""
    return (
        check_k(k),
        check_ties(ties),
        check_no_relevant(no_relevant),
        check_threshold(relevance_threshold),
    )


def mean_reciprocal_rank(
    y_true,
    y_pred,
    group,
    k: int | None = None,
    *,
    ties: str = "input",
    no_relevant: NoRelevant = 1.0,
    relevance_threshold: float = 0.0,
    per_query: bool = False,
):
    r"""Mean reciprocal rank at ``k`` (MRR@k).

    For one query ranked by descending score, with :math:`r^*` the rank of the first
    relevant document (``label > relevance_threshold``),

    .. math::

        \mathrm{RR@k} = \begin{cases} 1 / r^* & r^* \le k \\ 0 & \text{otherwise,}\end{cases}

    and MRR@k is its mean over queries (trec_eval's ``recip_rank`` for ``k=None``).

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Labels, finite and non-negative.
    y_pred : array-like of shape (n_rows,)
        Scores, finite; float32 is accepted.
    group : array-like of shape (n_queries,)
        Group sizes.
    k : int or None, default=None
        Cut-off; ``None`` evaluates the whole list.
    ties : {"input", "pessimistic", "average"}, default="input"
        ``"input"``: stable, input row order. ``"pessimistic"``: lower labels first within a
        tied block. ``"average"``: the exact expectation over all orders of every tied block.
    no_relevant : float or "exclude", default=1.0
        Value of a query without relevant documents: ``1.0`` (LightGBM's convention for its
        ranking metrics), ``0.0`` (trec_eval), or ``"exclude"`` (left out of the mean; NaN
        with ``per_query=True``; a mean over no query is NaN with a ``RuntimeWarning``).
    relevance_threshold : float, default=0.0
        Relevant means ``label > relevance_threshold``.
    per_query : bool, default=False
        Return the per-query values instead of their mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
    """
    k, tie_code, fill, threshold = _check_options(
        k, ties=ties, no_relevant=no_relevant, relevance_threshold=relevance_threshold
    )
    scores, offsets, _ = check_inputs(y_true, y_pred, group)
    labels = check_labels(y_true, offsets=offsets)
    kmax = cutoff_length(offsets, k)
    if tie_code == TIES_PESSIMISTIC:
        labels, scores = low_keys_first(labels, offsets, labels, scores)
        tie_code = TIES_INPUT
    values = _rr_kernel(
        labels, scores, offsets, k, kmax, threshold, tie_code, fill, longest_group(offsets)
    )
    return reduce_queries(values, fill, per_query)


mrr = mean_reciprocal_rank
