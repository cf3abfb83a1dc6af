"""Reciprocal rank of the first relevant document and its mean over queries, MRR@k."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from ._common import NoRelevant, binary_metric, by_query, check_binary, shared_doc
from ._ranking import count_above, cutoff, rank_top, scratch, tie_block

__all__ = ["mean_reciprocal_rank", "mrr"]


@njit(cache=True)
def _rr_query(labels, scores, lo, hi, k, threshold, fill, buffers, by_sort, average):
    kk = cutoff(k, lo, hi)
    if count_above(labels, lo, hi, threshold) == 0:
        return fill
    order = rank_top(scores, lo, hi, kk, buffers, by_sort)
    if average is None:
        for r in range(kk):
            if labels[lo + order[r]] > threshold:
                return 1.0 / (r + 1)
        return 0.0
    # In the first block (ranks s+1..s+m) that holds c > 0 relevant documents, the first
    # of them sits at block position t with P(t) = C(m - t, c - 1) / C(m, c).
    start = 0
    while start < kk:
        end, m, _, c = tie_block(scores, labels, lo, hi, order, start, kk, threshold)
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


@njit(cache=True, nogil=True)
def _rr_block(q0, q1, labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, fill, out):
    buffers = scratch(kmax, longest)
    for q in range(q0, q1):
        out[q] = _rr_query(labels, scores, offsets[q], offsets[q + 1], k, threshold, fill, buffers, by_sort, average)


def _rr_kernel(labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, fill):
    out = np.empty(offsets.size - 1)
    over_queries(_rr_block, offsets, labels, scores, kmax, longest, by_sort, average, offsets, k, threshold, fill,
                 out, min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return out


def _check_options(k, *, ties="input", no_relevant=1.0, relevance_threshold=0.0):
    """Fail on a bad setting before any data is read."""
    return check_binary(k, ties, no_relevant, relevance_threshold)


@shared_doc("mean_reciprocal_rank", mean=0.75, per_query=[0.5, 1.0])
def mean_reciprocal_rank(y_true, y_pred, group=None, k: int | None = None, *, qid=None, ties: str = "input",
                         no_relevant: NoRelevant = 1.0, relevance_threshold: float = 0.0, per_query: bool = False):
    r"""Mean reciprocal rank at ``k`` (MRR@k).

    For one query ranked by descending score, with :math:`r^*` the rank of the first
    relevant document (``label > relevance_threshold``),

    .. math::

        \mathrm{RR@k} = \begin{cases} 1 / r^* & r^* \le k \\ 0 & \text{otherwise,}\end{cases}

    and MRR@k is its mean over queries (trec_eval's ``recip_rank`` for ``k=None``).

    Parameters
    ----------
    %(binary_inputs)s
    no_relevant : float or "exclude", default=1.0
        Value of a query without relevant documents: ``1.0`` (LightGBM's convention for its
        ranking metrics), ``0.0`` (trec_eval), or ``"exclude"`` (left out of the mean; NaN
        with ``per_query=True``; a mean over no query is NaN with a ``RuntimeWarning``).
    relevance_threshold : float, default=0.0
        Relevant means ``label > relevance_threshold``.
    %(per_query_returns)s

    %(example)s
    """
    y_true, y_pred, group = by_query(y_true, y_pred, group, qid)
    options = _check_options(k, ties=ties, no_relevant=no_relevant, relevance_threshold=relevance_threshold)
    return binary_metric(_rr_kernel, y_true, y_pred, group, options, per_query)


mrr = mean_reciprocal_rank
